/* A worker's inbox: the subscription its pulls answer on, and the wake-up
 * a stop or a reconnect sends it (docs/engine.md). */
#include "engine_private.h"

void jet__worker_inbox(Worker *w)
{
    JetEngine *e = w->eng;
    char *inbox = NULL;
    natsInbox_Create((natsInbox **)&inbox);
    w->inbox = g_strdup(inbox);
    natsInbox_Destroy((natsInbox *)inbox);
    g_autofree char *subject = g_strdup_printf("%s.*", w->inbox);
    w->wake_subject = g_strdup_printf("%s.0", w->inbox);
    /* Synchronous: the worker takes each message itself, without a hop
     * through a delivery thread (one thread wake-up less per message). */
    natsStatus s = natsConnection_SubscribeSync(&w->sub, jet_conn_nats(e->conn), subject);
    if (s == NATS_OK)
        /* Unlimited: boundedness comes from the pull, never from a drop. */
        s = natsSubscription_SetPendingLimits(w->sub, -1, -1);
    if (s != NATS_OK)
        g_error("binding %s: cannot subscribe to its inbox: %s", e->b->name, natsStatus_GetText(s));
}

/* Wakes a worker waiting for its inbox (a reconnect, a stop): a message to
 * <inbox>.0, which answers no pull.  Without a connection the worker's own
 * wait step (TAKE_STEP_US) is the bound. */
void jet__wake_worker(Worker *w)
{
    if (w->wake_subject != NULL)
        natsConnection_Publish(jet_conn_nats(w->eng->conn), w->wake_subject, NULL, 0);
}
