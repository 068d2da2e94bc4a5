/* `jethost dlq replay`, the part that needs no server: which subjects may be
 * published to, and what the replay of a dead-letter record carries
 * (docs/dead-letters.md, "jethost dlq").  dlq_cli.c asks the server the
 * rest: does a stream capture the target? */
#ifndef JET_REPLAY_H
#define JET_REPLAY_H

#include <glib.h>

/* Set on every replayed message: <dlq stream>:<dlq seq>. */
#define JET_HDR_REPLAY_OF "Jethost-Replay-Of"
/* Its Nats-Msg-Id: jethost-replay:<dlq stream>:<dlq seq>:<life>[:again-<ns>]
 * (jet_replay_msg_id). */
#define JET_REPLAY_MSG_ID_PREFIX "jethost-replay:"

/* NULL when subject is one jethost publishes to (by `dlq replay` and
 * `pub`); otherwise a static reason for refusing it.  Refused: NULL or
 * empty, not UTF-8, any whitespace or control character, '*' or '>'
 * anywhere (a wildcard, or a literal almost always meant as one), an empty
 * token (leading, trailing or doubled '.'), and the server's own namespaces
 * in any letter case: $JS., $JSC., $KV., $O., $SYS., $NRG., $MQTT., _INBOX.
 * (publishing there is an API call or a reply, never an application
 * message). */
const char *jet_subject_refusal(const char *subject);
/* The same rules, with the server's namespaces allowed when allow_reserved
 * (a binding with publish_reserved = true: docs/forwarding.md). */
const char *jet_subject_check(const char *subject, gboolean allow_reserved);

/* NULL when name can be a JetStream stream name, else a static reason:
 * printable ASCII without '.', '*', '>', '/', '\\', at most 255 bytes.  A
 * name read from a record goes into an API subject, so it is checked
 * first. */
const char *jet_stream_name_refusal(const char *name);

/* Whether one of the stream subject patterns (n of them) matches subject
 * (jet_subject_matches). */
gboolean jet_replay_captured_by(const char *const *patterns, gsize n, const char *subject);

/* The Nats-Msg-Id of a replay: jethost-replay:<dlq stream>:<dlq seq>, then
 * ":<life_ns>" when life_ns > 0 (the DLQ stream's creation time: a stream
 * deleted and re-created numbers its records from 1 again), then
 * ":again-<again_ns>" when again_ns > 0.  Without again_ns the id is the
 * record's own, so replaying a record twice within the target stream's
 * duplicate window publishes it once (an interrupted bulk replay resumed
 * from an earlier point re-sends nothing); again_ns (the time of this
 * replay) makes a deliberate second replay a new message.  Caller frees. */
char *jet_replay_msg_id(const char *dlq_stream, guint64 dlq_seq, gint64 life_ns, gint64 again_ns);

/* The headers of the replay of record dlq_stream:dlq_seq, name and value
 * alternating (g_ptr_array_unref), from the record's own headers (name and
 * value alternating in block order, as jet_hdr_parse gives them):
 *
 *   1. Nats-Msg-Id: msg_id (jet_replay_msg_id), first, so nats-server
 *      (which reads the first occurrence of a name in the block) reads
 *      this one;
 *   2. the original's headers in the record's order: Jethost-Orig-* under
 *      their restored names, other names as they are; empty values kept;
 *   3. Jethost-Replay-Of: <dlq stream>:<dlq seq>.
 *
 * Left out: every header whose (restored) name starts with Nats- in any
 * case (server instructions such as Rollup, Expected-*, Msg-Id, TTL: not
 * application data), the record's provenance (any other Jethost-* name),
 * and an earlier Jethost-Replay-Of or Jethost-Replayed-From. */
GPtrArray *jet_replay_headers(const GPtrArray *record_headers, const char *dlq_stream, guint64 dlq_seq,
                              const char *msg_id);

#endif
