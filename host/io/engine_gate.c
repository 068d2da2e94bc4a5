/* The engine's isolation gate, careful mode and hung handlers: what every
 * kind of binding (engine_driver.h) shares around a handler's run
 * (docs/engine.md, "Careful pulls" and "A hung handler";
 * docs/retries.md, "What crashes cost"). */
#include "engine_private.h"
#include "log.h"
#include "stats.h"

/* --- the isolation gate, with hung handlers taken out of it ------------------ */

/* The items this thread has in the gate: more than one while it hands a
 * batch to the plugin. */
static _Thread_local guint in_gate_here;

void jet__gate_enter(JetEngine *e, Item *it, gboolean alone)
{
    if (!alone && in_gate_here > 0)
        jet_isolation_join(&e->isolation);
    else
        jet_isolation_enter(&e->isolation, alone);
    in_gate_here++;
    g_mutex_lock(&e->lease_lock);
    it->alone = alone;
    it->in_gate = TRUE;
    g_mutex_unlock(&e->lease_lock);
}

gboolean jet__gate_left_for_it(JetEngine *e, Item *it)
{
    g_mutex_lock(&e->lease_lock);
    gboolean left = it->hung;
    gboolean elsewhere = it->gate_elsewhere;
    it->in_gate = FALSE;
    g_mutex_unlock(&e->lease_lock);
    if (!elsewhere)
        in_gate_here--;
    return left;
}

void jet__gate_hand_over(JetEngine *e, Item *it, gboolean away)
{
    if (away)
        in_gate_here--;
    else
        in_gate_here++;
    g_mutex_lock(&e->lease_lock);
    it->gate_elsewhere = away;
    g_mutex_unlock(&e->lease_lock);
}

/* --- careful mode ----------------------------------------------------------- */

/* How long after a suspect (or a start) messages held at a death can still
 * come back: they are redelivered once their AckWait runs out. */
gint64 jet__careful_span_us(JetEngine *e)
{
    return 2 * MAX(e->facts.ack_wait_ms, 300) * 1000;
}

static void careful_extend(JetEngine *e, gint64 until_us)
{
    gint64 cur = __atomic_load_n(&e->careful_until_us, __ATOMIC_RELAXED);
    while (cur < until_us &&
           !__atomic_compare_exchange_n(&e->careful_until_us, &cur, until_us, FALSE, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
}

gboolean jet__careful(JetEngine *e)
{
    if (g_atomic_int_get(&e->suspects_running) > 0)
        return TRUE;
    gint64 until = __atomic_load_n(&e->careful_until_us, __ATOMIC_RELAXED);
    gint64 start_until = __atomic_load_n(&e->start_careful_until_us, __ATOMIC_RELAXED);
    if (until == 0 && start_until == 0)
        return FALSE;   /* the usual case, asked at every take: no clock read */
    gint64 now = now_us();
    if (now < until)
        return TRUE;
    /* A window that has passed is forgotten (a suspect extending it
     * meanwhile wins the exchange, and the window stands). */
    if (until != 0)
        __atomic_compare_exchange_n(&e->careful_until_us, &until, 0, FALSE, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    if (start_until != 0 && now >= start_until) {
        __atomic_store_n(&e->start_careful_until_us, 0, __ATOMIC_RELAXED);
        return FALSE;
    }
    return start_until != 0 && __atomic_load_n(&e->observed_floor, __ATOMIC_RELAXED) < e->start_careful_floor;
}

/* The one worker that pulls in careful mode: the first not hung. */
guint jet__careful_worker(JetEngine *e)
{
    if (e->driver->first_routes)
        return 0;   /* the router is the only one that pulls */
    for (guint i = 0; i < e->n_workers; i++)
        if (!g_atomic_int_get(&e->workers[i].hung))
            return i;
    return 0;
}

void jet__suspect_begin(JetEngine *e)
{
    if (!jet__careful(e))
        jet_log(JET_LOG_WARNING, e->b->name, "careful",
                "a suspect: pulling one message at a time on one worker until it is settled and %" G_GINT64_FORMAT
                " ms have passed with none, so no other message is held if it ends the host",
                jet__careful_span_us(e) / 1000);
    g_atomic_int_inc(&e->suspects_running);
}

void jet__suspect_end(JetEngine *e)
{
    careful_extend(e, now_us() + jet__careful_span_us(e));
    g_atomic_int_add(&e->suspects_running, -1);
}

/* --- hung handlers ---------------------------------------------------------- */

/* A handler past handler_timeout (under the lease lock): its lease stops
 * (the delivery is stale: it may still be acked or captured when the
 * handler returns, never released or recorded), it leaves the isolation
 * gate so that nothing waits behind it, its worker's waiting messages are
 * released, and it is reported at once and then periodically. */
void jet__handler_hung(JetEngine *e, Item *it, gint64 now, gint64 limit_us)
{
    gint64 elapsed_ms = (now - it->handler_since_us) / 1000;
    if (!it->stale) {
        it->stale = TRUE;
        it->hung_logged_us = now;
        if (it->in_gate && !it->hung) {
            /* Out of the gate on its behalf, so nothing waits behind it; its
             * worker, should it ever return, must not leave again. */
            it->hung = TRUE;
            jet_isolation_leave(&e->isolation, it->alone);
        }
        if (it->worker < e->n_workers && !it->hung_counted) {
            it->hung_counted = TRUE;   /* counted until its handler returns */
            g_atomic_int_inc(&e->workers[it->worker].hung);
        }
        JET_STAT_ADD(&e->shared_stats, lease_lapsed, 1);
        JET_STAT_ADD(&e->shared_stats, hung_handlers, 1);
        jet_log_fields(JET_LOG_ERROR, e->b->name, "handler-hung",
                       &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, it->stream_seq), 1,
                "stream seq %" G_GUINT64_FORMAT ": the handler has run for %" G_GINT64_FORMAT " ms, past "
                "handler_timeout %" G_GUINT64_FORMAT " ms: its lease stops (the server delivers it again after "
                "AckWait), worker %u is out until it returns, and what waits for that worker is released",
                it->stream_seq, elapsed_ms, e->b->handler_timeout_ms, it->worker);
        return;
    }
    jet__hung_still(e, it, now, limit_us);
}

void jet__hung_still(JetEngine *e, Item *it, gint64 now, gint64 limit_us)
{
    gint64 repeat_us = CLAMP(limit_us, G_USEC_PER_SEC, 60 * G_USEC_PER_SEC);
    if (now - it->hung_logged_us >= repeat_us) {
        it->hung_logged_us = now;
        jet_log_fields(JET_LOG_ERROR, e->b->name, "handler-hung",
                       &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, it->stream_seq), 1,
                "stream seq %" G_GUINT64_FORMAT ": the handler is still running after %" G_GINT64_FORMAT " ms (worker %u)",
                it->stream_seq, (now - it->handler_since_us) / 1000, it->worker);
    }
}

/* Every worker hung (or one, with exit_on_any_hung): the binding can do
 * nothing more, or the operator wants no hung handler kept; tell the host,
 * once (under the lease lock). */
void jet__every_worker_hung(JetEngine *e)
{
    if (e->hung_fired || e->hung_hook == NULL)
        return;
    guint hung = 0;
    guint first = e->driver->first_routes ? 1 : 0;   /* a lane router runs no handler */
    for (guint i = first; i < e->n_workers; i++)
        hung += g_atomic_int_get(&e->workers[i].hung) ? 1 : 0;
    if (hung == 0 || (hung < e->n_workers - first && !e->b->exit_on_any_hung))
        return;
    e->hung_fired = TRUE;
    e->hung_hook(e, e->b->name, hung, e->hung_hook_data);
}
