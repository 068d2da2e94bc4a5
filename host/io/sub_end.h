/* Ending a subscription without a crash on every nats.c the host runs on.
 *
 * nats.c before 3.7.0 looks an incoming message's subscription up and then
 * uses it without holding a reference: freed in that instant, it is used
 * after free by the connection's reading thread (a crash of `jethost dlq`
 * seen with a pull's batch still arriving when the read stopped; upstream
 * commit "Crash processing inbound message for destroyed subscription").
 * So a subscription is unsubscribed, then the connection makes a round
 * trip to the server: the server took the unsubscribe before the ping, so
 * every message for it came before the pong, and the reading thread, which
 * handles them in order, is done with each by then.  Only then is it
 * freed (docs/architecture.md, "nats.c versions"). */
#ifndef JET_SUB_END_H
#define JET_SUB_END_H

#include <glib.h>
#include <nats/nats.h>

/* Unsubscribes sub (it may be already) and waits out the reading thread.
 * TRUE: sub may now be destroyed.  FALSE: the connection is down or the
 * round trip failed, and a message for sub may still be in the reading
 * thread's hands: the caller leaves sub undestroyed (a small leak, never a
 * crash).  With nats.c 3.7.0 or later, TRUE at once. */
gboolean jet_sub_end(natsConnection *nc, natsSubscription *sub);

/* jet_sub_end, then natsSubscription_Destroy when it may.  NULL: nothing. */
void jet_sub_end_destroy(natsConnection *nc, natsSubscription *sub);

#endif
