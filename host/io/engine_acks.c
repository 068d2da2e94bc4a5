/* Settling on the wire for the bindings that ack: acks and NAKs sent, acks
 * of messages that have others behind them sent together (docs/engine.md,
 * "Acks sent together"), and a delivery's hold given up. */
#include "engine_private.h"
#include "log.h"
#include "stats.h"

#include <stdio.h>

/* Messages that wait, not yet taken: moved aside or still in the
 * subscription (statuses included). */
guint jet__waiting_msgs(Worker *w)
{
    if (w->sub == NULL)
        return w->eng->driver->ready != NULL ? w->eng->driver->ready(w->eng) : 0;   /* a runner */
    int pending = 0;
    if (natsSubscription_GetPending(w->sub, &pending, NULL) != NATS_OK || pending < 0)
        pending = 0;
    return (guint)g_atomic_int_get(&w->n_moved) + (guint)pending;
}

/* Messages the worker's pulls still owe it. */
guint jet__owed(const Worker *w)
{
    guint n = 0;
    for (guint i = 0; i < MAX_PULLS; i++)
        if (w->pulls[i].active)
            n += w->pulls[i].batch - w->pulls[i].received;
    return n;
}

/* --- settling ------------------------------------------------------------ */

void jet__publish_ack(JetEngine *e, const char *reply, const char *body)
{
    natsStatus s = natsConnection_PublishString(jet_conn_nats(e->conn), reply, body);
    if (s != NATS_OK)
        jet_log(JET_LOG_WARNING, e->b->name, "settle-failed",
                "could not send %s to %s: %s (the server will redeliver after AckWait)", body, reply,
                natsStatus_GetText(s));
}

void jet__publish_nak_delay(JetEngine *e, const char *reply, guint64 delay_ms)
{
    char body[64];
    snprintf(body, sizeof body, "-NAK {\"delay\": %" G_GUINT64_FORMAT "}", delay_ms * G_GUINT64_CONSTANT(1000000));
    jet__publish_ack(e, reply, body);
}

gboolean jet__handler_uncount(JetEngine *e, Item *it)
{
    if (!it->hung_counted)
        return FALSE;
    it->hung_counted = FALSE;
    g_atomic_int_add(&e->workers[it->worker].hung, -1);
    return TRUE;
}

void jet__handler_returned_log(JetEngine *e, Item *it)
{
    gint64 ran_us = it->handler_since_us > 0 ? now_us() - it->handler_since_us : 0;
    gboolean free_again = g_atomic_int_get(&e->workers[it->worker].hung) == 0;
    jet_log(JET_LOG_WARNING, e->b->name, "handler-returned",
            "stream seq %" G_GUINT64_FORMAT ": the hung handler returned after %" G_GINT64_FORMAT " ms; worker %u %s",
            it->stream_seq, ran_us / 1000, it->worker,
            free_again ? "takes messages again" : "still has another handler past handler_timeout");
}

gboolean jet__release_hold(JetEngine *e, Item *it)
{
    g_mutex_lock(&e->lease_lock);
    g_hash_table_remove(e->held, it);
    gboolean stale = it->stale;
    gboolean returned = jet__handler_uncount(e, it);
    g_mutex_unlock(&e->lease_lock);
    if (returned)
        jet__handler_returned_log(e, it);
    return stale;
}

/* --- acks, sent together -------------------------------------------------- */

/* Sends the acks that wait, in the order they were decided. */
void jet__acks_flush(Worker *w)
{
    g_mutex_lock(&w->ack_lock);
    if (w->n_acks > 0)
        JET_STAT_ADD(&w->stats, acks_grouped, w->n_acks);
    gboolean burst = w->n_acks > 1;
    if (burst)
        jet_conn_burst_begin(w->eng->conn);
    for (guint i = 0; i < w->n_acks; i++) {
        jet__publish_ack(w->eng, w->acks[i], "+ACK");
        g_free(w->acks[i]);
        w->acks[i] = NULL;
    }
    if (burst)
        jet_conn_burst_end(w->eng->conn);
    w->n_acks = 0;
    g_mutex_unlock(&w->ack_lock);
}

/* Sends them if the oldest has waited `after_us`.  Returns how long until
 * they are due (µs, > 0) when some wait, else 0. */
gint64 jet__acks_due_after(Worker *w, gint64 after_us)
{
    g_mutex_lock(&w->ack_lock);
    gboolean some = w->n_acks > 0;
    gint64 left = some ? w->acks_since_us + after_us - now_us() : 0;
    g_mutex_unlock(&w->ack_lock);
    if (some && left <= 0)
        jet__acks_flush(w);
    return MAX(left, 0);
}

void jet__acks_due(Worker *w)
{
    jet__acks_due_after(w, ACK_COALESCE_US);
}


void jet__ack_soon(JetEngine *e, Item *it)
{
    Worker *w = &e->workers[it->worker];
    const char *reply = natsMsg_GetReply(it->msg);
    /* handler_since_us is written by this thread only (the keeper reads it). */
    gint64 handler_us = it->handler_since_us > 0 ? now_us() - it->handler_since_us : 0;
    if (handler_us >= ACK_COALESCE_US || (jet__waiting_msgs(w) == 0 && jet__owed(w) == 0)) {
        /* A handler that took its time gains nothing from waiting; with
         * nothing behind it and nothing more owed by the server, there is
         * nothing to wait for: this ack and any before it go now. */
        jet__acks_flush(w);
        if (e->driver->ack_with_pull == NULL || !e->driver->ack_with_pull(w, reply))
            jet__publish_ack(e, reply, "+ACK");
        return;
    }
    g_mutex_lock(&w->ack_lock);
    if (w->n_acks == 0)
        w->acks_since_us = now_us();
    w->acks[w->n_acks++] = g_strdup(reply);
    gboolean full = w->n_acks == ACK_BATCH_MAX;
    g_mutex_unlock(&w->ack_lock);
    if (full)
        jet__acks_flush(w);
}

