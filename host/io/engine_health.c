/* What an engine reports: its counters and its health (engine.h), read
 * by the ops listener, the stop log and the binding itself. */
#include "engine_private.h"
#include "stats.h"

#include <string.h>

void jet_engine_stats(JetEngine *e, JetEngineStats *out)
{
    memset(out, 0, sizeof *out);
    jet_stats_merge(out, &e->shared_stats);
    for (guint i = 0; i < e->n_workers; i++)
        jet_stats_merge(out, &e->workers[i].stats);
    out->observed_floor = __atomic_load_n(&e->observed_floor, __ATOMIC_RELAXED);
}

void jet_engine_health(JetEngine *e, JetEngineHealth *out)
{
    memset(out, 0, sizeof *out);
    out->started = g_atomic_int_get(&e->started) != 0;
    out->recovering = g_atomic_int_get(&e->recovering) != 0 || g_atomic_int_get(&e->consumer_missing) != 0;
    out->num_pending = __atomic_load_n(&e->num_pending, __ATOMIC_RELAXED);
    out->num_ack_pending = __atomic_load_n(&e->num_ack_pending, __ATOMIC_RELAXED);
    gint64 paused_until = __atomic_load_n(&e->paused_until_us, __ATOMIC_RELAXED);
    /* At least 1 until a worker has seen the time and pulls again. */
    out->pulls_paused_ms = paused_until > 0 ? MAX((paused_until - now_us()) / 1000, 1) : 0;
    for (guint i = 0; i < e->n_workers; i++)
        out->hung_workers += g_atomic_int_get(&e->workers[i].hung) ? 1 : 0;
    gint64 oldest = G_MAXINT64;
    g_mutex_lock(&e->lease_lock);
    GHashTableIter iter;
    gpointer key;
    g_hash_table_iter_init(&iter, e->held);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        const Item *it = key;
        if (it->handler_since_us > 0) {
            out->in_handlers++;
        } else {
            out->buffered++;
            oldest = MIN(oldest, it->arrived_us);
        }
    }
    g_mutex_unlock(&e->lease_lock);
    if (out->buffered > 0) {
        gint64 since = MAX(oldest, __atomic_load_n(&e->progress_us, __ATOMIC_RELAXED));
        out->idle_holding_ms = MAX(now_us() - since, 0) / 1000;
    }
}
