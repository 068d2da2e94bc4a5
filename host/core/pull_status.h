/* The pull status table: what each status message the server sends to a
 * pull request means for the engine (docs/engine.md lists what 2.9.10
 * sends).  Pure; tested on its own so a server upgrade that changes a text
 * fails loudly.
 *
 * Reading a status off a natsMsg (checked against nats.c v3.4.1 src/msg.c
 * _liftHeaders, src/js.c _checkMsg, src/sub.c natsSub_nextMsg, and server
 * v2.9.10 consumer.go, and against the wire bytes of a live 2.9.10):
 *
 *  - On the wire a status is an HMSG with NO reply subject and NO payload,
 *    only a header block whose first line carries it:
 *      "NATS/1.0 409 Consumer Deleted\r\n\r\n"
 *    408 Request Timeout, 408 Interest Expired, 409 Message Size Exceeds
 *    MaxBytes and 409 Server Shutdown add Nats-Pending-Messages /
 *    Nats-Pending-Bytes (what the pull still had unfilled, not the stream
 *    backlog); 100 Idle Heartbeat adds Nats-Last-Consumer / Nats-Last-Stream.
 *  - nats.c turns that first line into two pseudo-headers, on the first
 *    natsMsgHeader_Get (a lazy lift that can fail with NATS_PROTOCOL_ERROR):
 *      "Status"      the 3-character code as a STRING ("409"), never more;
 *      "Description" the rest of the line, trimmed of white space; ABSENT
 *                    (natsMsgHeader_Get returns NATS_NOT_FOUND and sets the
 *                    value to NULL) when the line has no text, e.g.
 *                    "NATS/1.0 503".  Pass that NULL on as description.
 *    Header keys are matched exactly (case-sensitive hash): "Status",
 *    "Description".
 *  - So a message on the pull inbox is a status when
 *      natsMsg_GetReply(m) == NULL && natsMsg_GetDataLength(m) == 0 &&
 *      natsMsgHeader_Get(m, "Status", &v) == NATS_OK
 *    (nats.c itself only checks the last two; every JetStream delivery has a
 *    $JS.ACK reply, so checking the reply as well keeps a stored user message
 *    with an empty body and its own "Status" header from being taken for
 *    one).  Then jet_pull_status_parse_line(v, &code), natsMsgHeader_Get(m,
 *    "Description", &d), jet_pull_status_classify(code, d, received).
 *  - natsMsg_IsNoResponders(m) is just "data length 0 and Status starts with
 *    503".  On a SYNC subscription natsSubscription_NextMsg already
 *    intercepts such a message: it destroys it and returns
 *    NATS_NO_RESPONDERS (nats.c >= 2.4.1), so the engine sees a return code,
 *    not a message, and should treat it as JET_PULL_UNKNOWN.  On an async
 *    subscription the message reaches the callback and classify says
 *    UNKNOWN (503 has no row).  On 2.9.10 a pull to a missing consumer or
 *    stream gets silence, not 503 (probe t7): the JetStream API always has a
 *    subscriber, so 503 would mean something odder (JetStream off for the
 *    account, say; not probed).
 *  - Never call natsMsg_Ack & co. on these messages (see docs/engine.md). */
#ifndef JET_PULL_STATUS_H
#define JET_PULL_STATUS_H

#include <glib.h>

typedef enum {
    JET_PULL_HEARTBEAT = 0,    /* 100 Idle Heartbeat: the pull is alive */
    JET_PULL_END,              /* the pull is over; re-pull (404, 408 Request Timeout, ...) */
    JET_PULL_END_GUARDED,      /* over early for a server-side reason; re-pull after the guard delay */
    JET_PULL_END_TOO_LARGE,    /* 409 Message Size Exceeds MaxBytes with nothing received:
                                  the next message is larger than the budget; fetch it alone without one */
    JET_PULL_CONSUMER_GONE,    /* 409 Consumer Deleted: re-create (managed) or wait (bind) */
    JET_PULL_INVALID,          /* the request is invalid for this consumer: fail the binding loudly */
    JET_PULL_UNKNOWN,          /* a status not in the table: end the pull, guard, log it */
} JetPullStatusKind;

/* Classifies a status by code and description (the "Status" and
 * "Description" headers).  received: messages this pull delivered so far.
 * description may be NULL (no Description header); it is matched without
 * regard to ASCII case. */
JetPullStatusKind jet_pull_status_classify(int code, const char *description, guint received);

/* The same, and *note (when note is not NULL) is set to a static sentence
 * saying what the status means, for the log line; for an unknown status it
 * says so. */
JetPullStatusKind jet_pull_status_lookup(int code, const char *description, guint received,
                                         const char **note);

/* "heartbeat", "end", "end-guarded", "end-too-large", "consumer-gone",
 * "invalid", "unknown"; "?" for a value outside the enum.  Static. */
const char *jet_pull_status_name(JetPullStatusKind kind);

/* Parses the value of nats.c's "Status" header (see above: exactly three
 * ASCII digits, "409") into *code.  FALSE, *code untouched, for anything
 * else (NULL, "", "40", "4o9", "4090", " 409"). */
gboolean jet_pull_status_parse_line(const char *status_header, int *code);

#endif
