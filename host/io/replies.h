/* Requests whose answer goes straight to the thread that waits for it.
 *
 * nats.c's natsConnection_Request and js_PublishMsg take every answer on one
 * subscription the connection shares, which a thread of nats.c's own reads
 * and hands to the caller: the socket's reader wakes that thread, which
 * wakes the caller, two thread switches an answer.  Here each thread that
 * asks has an inbox of its own, read with natsSubscription_NextMsg by the
 * thread itself, so the reader wakes the caller directly.  On the capture
 * path (a pub-ack, then a confirmed ack, for every message dead-lettered)
 * that is two switches fewer a message (docs/performance.md, "Answers
 * without nats.c's relay").
 *
 * A thread's inbox is made on its first request on a connection and ended
 * when the thread ends (or, once the connection is closed, at the thread's
 * next request on any); the main thread's is never ended.  One request at
 * a time per thread, as a blocking call is anyway.  A request sent that
 * got no answer (a timeout, "no responders", any error) leaves its inbox
 * behind and the next takes a new one: an answer that comes late goes to
 * an inbox nobody reads any more, never to the wrong request.
 *
 * The gain assumes the connection sends at once (SendAsap, conn.h): with
 * nats.c's flusher a request would wait for it. */
#ifndef JET_REPLIES_H
#define JET_REPLIES_H

#include <glib.h>
#include <nats/nats.h>

typedef struct JetReplies JetReplies;

/* This thread's inbox on nc (borrowed: valid until its next call), made
 * on the first call; call it before each request: after a failed one it
 * takes a new inbox.  NULL with nats.c's status in *s (may be NULL) when no
 * inbox can be subscribed. */
JetReplies *jet_replies_here(natsConnection *nc, natsStatus *s);

/* The reply subject for this thread's next request on r (borrowed, valid
 * until the next call): a new one each call. */
const char *jet_replies_subject(JetReplies *r);

/* Publishes m, built with the reply subject jet_replies_subject gave last
 * (nats_raw.h, jet_nats_msg_new_raw_reply); on an error the inbox is left
 * behind, as by a failed wait (part of m may have gone out). */
natsStatus jet_replies_publish(JetReplies *r, natsMsg *m);

/* Waits up to timeout_ms for the answer to the subject jet_replies_subject
 * gave last, in *reply (natsMsg_Destroy or jet_replies_free_later).
 * NATS_NO_RESPONDERS when the server said nothing listens on the request's
 * subject, NATS_TIMEOUT, or nats.c's error; on any of them the inbox is
 * left behind, and jet_replies_here takes a new one. */
natsStatus jet_replies_wait(JetReplies *r, gint64 timeout_ms, natsMsg **reply);

/* natsConnection_Request through this thread's inbox: data (len bytes) to
 * subject, the answer in *reply.  Falls back to natsConnection_Request when
 * no inbox can be made. */
natsStatus jet_replies_request(natsConnection *nc, const char *subject, const void *data, int len,
                               gint64 timeout_ms, natsMsg **reply);

/* natsMsg_Destroy(m), soon: m is kept with this thread's inbox on nc and
 * destroyed with the next ones (at once when the thread has none there, or
 * m's payload is over 4 KiB).
 * nats.c's own thread frees every message and is woken for each; freed
 * together they wake it once. */
void jet_replies_free_later(natsConnection *nc, natsMsg *m);

#endif
