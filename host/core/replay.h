/* `jethost dlq replay`, the part that needs no server: what the replay of a dead-letter record carries
 * (docs/dead-letters.md, "jethost dlq").  dlq_cli.c asks the server the
 * rest: does a stream capture the target?  Which subjects and names are
 * acceptable is names.h's. */
#ifndef JET_REPLAY_H
#define JET_REPLAY_H

#include <glib.h>

/* Set on every replayed message: <dlq stream>:<dlq seq>. */
#define JET_HDR_REPLAY_OF "Jethost-Replay-Of"
/* Its Nats-Msg-Id: jethost-replay:<dlq stream>:<dlq seq>:<life>[:again-<ns>]
 * (jet_replay_msg_id). */
#define JET_REPLAY_MSG_ID_PREFIX "jethost-replay:"

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
