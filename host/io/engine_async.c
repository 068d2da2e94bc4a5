/* Pending deliveries (docs/async.md): a plugin's handle() returns
 * JET_PENDING and completes the delivery later with msg_complete(), from
 * any thread, while its worker takes the next message; up to the
 * binding's max_in_flight at once.  A completion is settled on the
 * binding's completion thread by the very executor steps a handle()'s
 * verdict goes through; the worker never waits for one but at the bound,
 * or for a suspect, which is handled alone and so waits for its own.
 *
 * A pending delivery stays in the host's hold: the lease keeper extends
 * its lease, and past handler_timeout treats it as a hung handler: its
 * lease stops (the server delivers it again after AckWait), and the host
 * keeps it, its handle and its place until the plugin completes it: a
 * late completion is settled as a hung handler's return is (acked or
 * captured, never released or recorded), and what the plugin reads
 * through it stays valid until then. */
#include "engine_private.h"
#include "nats_raw.h"
#include "hdr_block.h"
#include "lane_key.h"
#include "log.h"
#include "stats.h"

#include <string.h>

typedef struct JetPending {
    JetEngine *e;
    Item *it;
    JetDelivery d;
    char stream[JET_NAME_BUF], consumer[JET_NAME_BUF];
    JetHdrParse hdrs;
    char *malformed;
    JetMsgAsync async;
    jet_msg *lent;              /* the plugin's handle, kept while pending */
    JetExecutorPending *xp;     /* the executor's half */
    /* Its worker waits for the completion: a suspect (handled alone), or
     * one lent without a handle (every slot taken: m itself must not
     * outlive the wait).  handed_back: the completion came (async_lock). */
    gboolean waited;
    gboolean handed_back;
    gboolean hung_place;        /* counted in e->pending_hung_now (under the lease lock) */
} JetPending;

static void pending_free(JetPending *p)
{
    jet_hdr_parse_clear(&p->hdrs);
    g_free(p->malformed);
    g_free(p);
}

/* --- completions ------------------------------------------------------------ */

/* From msg_complete() on the plugin's thread (the handle pinned): the
 * delivery is the host's again.  Nothing of p is touched after it is
 * handed over. */
static void on_completed(JetMsgAsync *a, jet_msg *h)
{
    JetPending *p = a->data;
    JetEngine *e = p->e;
    jet_msg_end_lend(h);   /* no call through it from now on; the completer waits for those in progress */
    if (p->waited) {
        g_mutex_lock(&e->async_lock);
        p->handed_back = TRUE;
        g_cond_broadcast(&e->async_cond);
        g_mutex_unlock(&e->async_lock);
    } else {
        g_async_queue_push(e->completions, p);
    }
}

/* A second msg_complete() of one delivery. */
static void on_refused(JetMsgAsync *a)
{
    JetPending *p = a->data;
    JET_STAT_ADD(&p->e->shared_stats, completions_refused, 1);
    jet_log(JET_LOG_ERROR, p->e->b->name, "completion-refused",
            "stream seq %" G_GUINT64_FORMAT ": msg_complete() called again on a delivery already completed: "
            "refused (docs/async.md)", p->d.stream_seq);
}

static void place_free(JetEngine *e)
{
    g_mutex_lock(&e->async_lock);
    g_atomic_int_dec_and_test(&e->in_flight);
    g_cond_broadcast(&e->async_cond);
    g_mutex_unlock(&e->async_lock);
}

/* Settles a completed pending delivery; any thread but a
 * plugin's. */
static void conclude(JetPending *p)
{
    JetEngine *e = p->e;
    jet_msg_unlend_kept(p->lent);   /* waits for the plugin's calls in progress */
    gint st = g_atomic_int_get(&p->async.state);
    JetExecuted done;
    g_mutex_lock(&e->lease_lock);
    if (p->hung_place)
        g_atomic_int_add(&e->pending_hung_now, -1);
    g_mutex_unlock(&e->lease_lock);
    jet_executor_complete(e->executor, p->xp, JET_MSG_ASYNC_VERDICT(st), NULL, &done);
    jet__settled(e, &p->d, &done);
    Item *it = p->it;
    jet_nats_msg_free(it->msg);
    g_free(it);
    pending_free(p);
    place_free(e);
}

static gpointer completer_main(gpointer data)
{
    JetEngine *e = data;
    for (;;) {
        JetPending *p = g_async_queue_timeout_pop(e->completions, 100 * 1000);
        if (p != NULL) {
            conclude(p);
            continue;
        }
        /* Quits once the workers are joined (stopping, none taking) and
         * nothing is pending. */
        g_mutex_lock(&e->async_lock);
        gboolean quit = e->completer_quit && g_atomic_int_get(&e->in_flight) == 0;
        g_mutex_unlock(&e->async_lock);
        if (quit)
            return NULL;
    }
}

void jet__async_start(JetEngine *e)
{
    if (e->b->max_in_flight == 0 || e->completer != NULL)
        return;
    e->handle_pending = jet__handle_async;
    e->completions = g_async_queue_new();
    e->completer = g_thread_new("jet-complete", completer_main, e);
}

void jet__async_join(JetEngine *e)
{
    if (e->completer == NULL)
        return;
    gint n = g_atomic_int_get(&e->in_flight);
    if (n > 0)
        jet_log(JET_LOG_INFO, e->b->name, "drain-pending",
                "waiting for %d pending deliveries to be completed (one past handler_timeout %" G_GUINT64_FORMAT
                " ms is hung, and the drain waits for it as for a hung handler)", n, e->b->handler_timeout_ms);
    g_mutex_lock(&e->async_lock);
    e->completer_quit = TRUE;
    g_mutex_unlock(&e->async_lock);
    g_thread_join(e->completer);
    e->completer = NULL;
    g_async_queue_unref(e->completions);
    e->completions = NULL;
}

/* --- the worker's side -------------------------------------------------------- */

gboolean jet__async_admit(JetEngine *e)
{
    g_mutex_lock(&e->async_lock);
    while (g_atomic_int_get(&e->in_flight) >= (gint)e->b->max_in_flight && !g_atomic_int_get(&e->stopping)) {
        gint64 until = g_get_monotonic_time() + 100 * 1000;
        g_cond_wait_until(&e->async_cond, &e->async_lock, until);
    }
    gboolean ok = g_atomic_int_get(&e->in_flight) < (gint)e->b->max_in_flight;
    if (ok)
        g_atomic_int_inc(&e->in_flight);   /* its place, given back when it is settled */
    g_mutex_unlock(&e->async_lock);
    return ok;
}

gboolean jet__deliver_async(JetEngine *e, Item *it, const JetAckMeta *meta)
{
    JetPending *p = g_new0(JetPending, 1);
    p->e = e;
    p->it = it;
    jet__delivery_init(e, &p->d, it, meta, p->stream, p->consumer);
    p->malformed = jet__read_headers(e, it->msg, meta->stream_seq, &p->hdrs);
    p->d.hdrs = &p->hdrs;
    p->d.malformed = p->malformed;
    p->async.completed = on_completed;
    p->async.refused = on_refused;
    p->async.data = p;
    it->pending = p;
    p->xp = jet_executor_pending_new(e->executor, &p->d);
    JetExecuted done;
    if (jet_executor_run_async(e->executor, p->xp, &done))
        return TRUE;   /* p and it are its completion's now */
    jet__progress(e);
    jet__settled(e, &p->d, &done);
    it->pending = NULL;
    pending_free(p);
    place_free(e);
    return FALSE;
}

int jet__handle_async(JetEngine *e, Item *it, jet_msg *m, const JetMsgOwner *owner)
{
    JetPending *p = it->pending;
    m->async = &p->async;
    /* A suspect runs alone: nothing else of the binding may be in a
     * handler until it is settled, so its worker waits for it. */
    jet_msg *lent = jet_msg_lend(m, owner);
    g_mutex_lock(&e->lease_lock);
    /* With no handle m itself is lent: it must not outlive this call. */
    p->waited = it->alone || lent == m;
    g_mutex_unlock(&e->lease_lock);
    int verdict = jet_instance_handle(e->inst, lent);
    const gint in_handle = JET_MSG_ASYNC_IN_HANDLE;
    if (verdict == JET_PENDING && p->waited) {
        if (g_atomic_int_compare_and_exchange(&p->async.state, in_handle, JET_MSG_ASYNC_PENDING)) {
            g_mutex_lock(&e->async_lock);
            while (!p->handed_back)
                g_cond_wait(&e->async_cond, &e->async_lock);
            g_mutex_unlock(&e->async_lock);
            jet_msg_unlend(lent);
            return JET_MSG_ASYNC_VERDICT(g_atomic_int_get(&p->async.state));
        }
    } else if (verdict == JET_PENDING) {
        /* Kept: the handle outlives this call, the gate entry this
         * thread, and the worker goes on (a handler that ran past
         * handler_timeout and returned frees its worker now).  All of it
         * before the delivery is pending: from then on a completion may
         * settle and free it. */
        jet_msg_keep(lent);
        p->lent = lent;
        jet__gate_hand_over(e, it, TRUE);
        g_mutex_lock(&e->lease_lock);
        it->off_worker = TRUE;
        gboolean returned = jet__handler_uncount(e, it);
        g_mutex_unlock(&e->lease_lock);
        if (returned)
            jet__handler_returned_log(e, it);
        if (g_atomic_int_compare_and_exchange(&p->async.state, in_handle, JET_MSG_ASYNC_PENDING))
            return JET_PENDING;
        /* Completed during handle(): settled here after all. */
        jet__gate_hand_over(e, it, FALSE);
        g_mutex_lock(&e->lease_lock);
        it->off_worker = FALSE;
        g_mutex_unlock(&e->lease_lock);
        gint st = g_atomic_int_get(&p->async.state);
        jet_msg_unlend_kept(lent);
        p->lent = NULL;
        return JET_MSG_ASYNC_VERDICT(st);
    }
    /* The lend ends first: a completion racing this return is then
     * either in the state read below or refused as a stale call. */
    jet_msg_unlend(lent);
    gint st = g_atomic_int_get(&p->async.state);
    if (JET_MSG_ASYNC_PHASE(st) == JET_MSG_ASYNC_EARLY) {
        if (verdict == JET_PENDING)
            return JET_MSG_ASYNC_VERDICT(st);   /* completed before handle() returned */
        JET_STAT_ADD(&e->shared_stats, completions_refused, 1);
        jet_log(JET_LOG_ERROR, e->b->name, "completion-refused",
                "stream seq %" G_GUINT64_FORMAT ": msg_complete() called during a handle() that then returned "
                "verdict %d itself: the completion is ignored, the verdict settled (docs/async.md)",
                it->stream_seq, verdict);
    }
    return verdict;
}

JetAsyncPast jet__async_past_limit(JetEngine *e, Item *it, gint64 now, gint64 limit_us)
{
    JetPending *p = it->pending;
    gint phase = JET_MSG_ASYNC_PHASE(g_atomic_int_get(&p->async.state));
    if (phase == JET_MSG_ASYNC_IN_HANDLE || phase == JET_MSG_ASYNC_EARLY)
        /* handle() itself still runs (a hung handler), or has returned
         * JET_PENDING and its worker is handing the delivery over. */
        return it->off_worker ? JET_ASYNC_SETTLING : JET_ASYNC_IN_HANDLER;
    if (phase != JET_MSG_ASYNC_PENDING)
        return JET_ASYNC_SETTLING;     /* completed: its lease goes on until it is settled */
    if (p->waited)
        return JET_ASYNC_IN_HANDLER;   /* its worker waits for it: as hung as the handler it stands for */
    gint64 pending_ms = (now - it->handler_since_us) / 1000;
    if (!it->stale) {
        it->stale = TRUE;   /* its lease stops: the server delivers it again after AckWait */
        it->hung_logged_us = now;
        /* Out of the isolation gate on its behalf, as a hung handler: a
         * suspect (its own redelivery, maybe) must not wait for it. */
        if (it->in_gate && !it->hung) {
            it->hung = TRUE;
            jet_isolation_leave(&e->isolation, it->alone);
        }
        p->hung_place = TRUE;
        g_atomic_int_inc(&e->pending_hung_now);
        JET_STAT_ADD(&e->shared_stats, lease_lapsed, 1);
        JET_STAT_ADD(&e->shared_stats, pending_hung, 1);
        jet_log_fields(JET_LOG_ERROR, e->b->name, "pending-hung", &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, it->stream_seq), 1,
                       "stream seq %" G_GUINT64_FORMAT ": pending for %" G_GINT64_FORMAT " ms, past handler_timeout %"
                       G_GUINT64_FORMAT " ms: its lease stops (the server delivers it again after AckWait); its "
                       "completion, when it comes, is acked or captured, never released (docs/async.md)",
                       it->stream_seq, pending_ms, e->b->handler_timeout_ms);
    } else if (now - it->hung_logged_us >= CLAMP(limit_us, G_USEC_PER_SEC, 60 * G_USEC_PER_SEC)) {
        it->hung_logged_us = now;
        jet_log_fields(JET_LOG_ERROR, e->b->name, "pending-hung", &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, it->stream_seq), 1,
                       "stream seq %" G_GUINT64_FORMAT ": still pending after %" G_GINT64_FORMAT " ms",
                       it->stream_seq, pending_ms);
    }
    return JET_ASYNC_HUNG;
}

void jet__async_every_place_hung(JetEngine *e)
{
    if (e->b->max_in_flight == 0 || e->hung_fired || e->hung_hook == NULL)
        return;
    gint hung = g_atomic_int_get(&e->pending_hung_now);
    if (hung == 0 || (hung < (gint)e->b->max_in_flight && !e->b->exit_on_any_hung))
        return;
    jet_log(JET_LOG_ERROR, e->b->name, "pending-all-hung",
            "%d pending deliveries past handler_timeout hold %s of max_in_flight (%u): the binding %s", hung,
            hung < (gint)e->b->max_in_flight ? "places" : "every place", e->b->max_in_flight,
            hung < (gint)e->b->max_in_flight ? "has one hung (exit_on_any_hung)" : "can take nothing more");
    e->hung_fired = TRUE;
    e->hung_hook(e, e->b->name, (guint)hung, e->hung_hook_data);
}
