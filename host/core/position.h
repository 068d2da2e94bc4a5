/* An ordered binding on the server: its consumers' names, and its position
 * record (docs/ordered.md, "Checkpoints"): where it is in its stream, and
 * which message was in the handler when it was written, so that a host
 * killed by a message knows it at its next start.  Kept in the host's KV
 * bucket whenever the binding keeps the ledger; with checkpoint = kv a
 * restarted host also resumes after the position.
 *
 * Written before a message is handed to the plugin, and with `in` 0 once
 * nothing waits to be handled or at a clean stop:
 *   {"v":1,"pos":41,"in":42,"s":1,"life":1733000000000000000}
 *   {"v":1,"pos":41,"in":42,"n":100,"s":0,"life":1733000000000000000}
 * pos: the last stream seq handled (0: none); in: the one going to the
 * handler now (0: none); n: how many messages the record covers, from `in`
 * on (absent: 1, `in` alone; more: a span mark, written once per span
 * without checkpoint = kv, which names no single message, docs/ordered.md
 * "Span marks"); s: how many hosts died with `in` in the handler before
 * this one (its strikes); life: the stream's creation time (unix ns; absent
 * in records of older hosts), so that a record of a stream since deleted
 * and re-created under the same name is never taken for this one's. */
#ifndef JET_POSITION_H
#define JET_POSITION_H

#include <glib.h>

#define JET_POSITION_VERSION 1
/* A record is refused unread past this many bytes (it needs under 100). */
#define JET_POSITION_MAX_BYTES 512
/* The most messages one span mark may cover (a binding's batch is at most
 * this); a record that says more is refused. */
#define JET_POSITION_MAX_SPAN 10000

typedef struct {
    guint64 pos;
    guint64 in;
    guint32 strikes;
    gint64 life;               /* the stream's creation time; 0: not known */
    guint32 n;                 /* messages covered from `in` on: 1 (or 0, read as 1) a precise mark,
                                  more a span mark */
} JetPosition;

/* The name of an ordered binding's consumer number serial of this run:
 * jethost_ord_<binding>_<run id, 8 hex digits>_<serial>, the binding's name
 * cut to keep the whole within the server's 255 bytes (the run id keeps it
 * unique).  A new string. */
char *jet_ordered_consumer_name(const char *binding, guint32 run_id, guint serial);

/* The key in the bucket: "ordered.<binding, encoded as a ledger key token>"
 * (two tokens: never a ledger record's key, which has three). */
char *jet_position_key(const char *binding);

/* Compact JSON (a new string); *len (may be NULL) gets its length. */
char *jet_position_to_json(const JetPosition *p, gsize *len);

/* Parses what to_json wrote; unknown keys are ignored.  FALSE with an error
 * for anything else: more than JET_POSITION_MAX_BYTES, a NUL, not JSON (or
 * not UTF-8), not an object, another version, a count that is not an
 * integer in range, `in` at or below `pos` but not 0, an `n` of 0 or past
 * JET_POSITION_MAX_SPAN, an `n` past 1 with `in` 0 or with strikes. */
gboolean jet_position_from_json(const char *data, gsize len, JetPosition *out, GError **error);

/* What a host starting from the checkpoint p does with the message it
 * finds in the handler: *crashed the stream seq that was in the handler of
 * a host that did not finish it (0: none), *strikes the deaths it has caused
 * counting that one.  A span mark names no message: nothing is struck. */
void jet_position_crashed(const JetPosition *p, guint64 *crashed, guint32 *strikes);

/* Whether the stream now (created at life_now, its last sequence last_now)
 * is another life of the stream name than the one a binding reached pos in
 * (created at life_then): the creation times differ (0: not known, never
 * differs), or the sequences fell back below pos (G_MAXUINT64: last not
 * known).  A stream deleted and created again starts its sequences at 1
 * (docs/ordered.md, "A stream's new life"). */
gboolean jet_position_other_life(gint64 life_then, guint64 pos, gint64 life_now, guint64 last_now);

/* Whether jet_position_other_life says so by the sequences alone: they
 * fell back below pos while the creation times agree (or one is not
 * known).  Either a store lost, or a moment's answer of a cluster node
 * that is still catching up: worth asking again before starting over
 * (docs/ordered.md, "A stream's new life"). */
gboolean jet_position_fell_back(gint64 life_then, guint64 pos, gint64 life_now, guint64 last_now);

/* What a host starting from the record p does (docs/ordered.md,
 * "Checkpoints"), given life, the stream's creation time now (0: not
 * known), and resume, whether the binding resumes from its position
 * (checkpoint = kv). */
typedef struct {
    gboolean other_life;       /* p is of another life of the stream: nothing in it applies */
    guint64 resume_after;      /* start after this stream seq (0: at `deliver`) */
    guint64 crashed;           /* strike this stream seq when it comes (0: none) */
    guint32 strikes;           /* ...with this many strikes */
    /* A span mark: a host died with one of the careful_n messages handled
     * from stream seq careful_from on in its handler, which one unknown;
     * they are handled with a precise mark each (0: none). */
    guint64 careful_from;
    guint32 careful_n;
} JetPositionStart;
void jet_position_start(const JetPosition *p, gint64 life, gboolean resume, JetPositionStart *out);

#endif
