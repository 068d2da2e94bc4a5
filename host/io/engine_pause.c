/* The breaker's pause: after an enforcing breaker captured a message, the
 * consumer rests for breaker_pause (docs/floor-monitor.md, "The pause"). */
#include "engine_private.h"

#include "consumer_pause.h"
#include "conn.h"
#include "log.h"
#include "provenance.h"

void jet__breaker_pause(JetEngine *e)
{
    guint64 pause_ms = e->b->breaker_pause_ms;
    if (pause_ms == 0)
        return;
    natsConnection *nc = jet_conn_nats(e->conn);
    g_autoptr(GError) err = NULL;
    gint64 until_ns = 0;
    if (jet_consumer_pause_supported(nc)) {
        if (jet_consumer_pause(nc, e->b->stream, e->b->consumer, pause_ms, &until_ns, &err)) {
            g_autofree char *until = jet_time_format_ns(until_ns);
            jet_log(JET_LOG_WARNING, e->b->name, "breaker-paused",
                    "consumer %s/%s paused by the server until %s (breaker_pause %" G_GUINT64_FORMAT
                    " ms): no host receives anything before then", e->b->stream, e->b->consumer, until, pause_ms);
            return;
        }
    }
    g_autofree char *until = jet_time_format_ns(g_get_real_time() * 1000 + (gint64)pause_ms * 1000000);
    /* What the server cannot do for every host, this host does for itself. */
    __atomic_store_n(&e->paused_until_us, now_us() + (gint64)pause_ms * 1000, __ATOMIC_RELAXED);
    jet_log(JET_LOG_WARNING, e->b->name, "breaker-paused",
            "this host pulls nothing on %s/%s until %s (breaker_pause %" G_GUINT64_FORMAT " ms); other hosts "
            "go on: %s", e->b->stream, e->b->consumer, until, pause_ms,
            err != NULL ? err->message : "the server has no consumer pause (before nats-server 2.11)");
}

gboolean jet__pulls_paused(JetEngine *e)
{
    gint64 until = __atomic_load_n(&e->paused_until_us, __ATOMIC_RELAXED);
    if (until == 0)
        return FALSE;
    if (now_us() < until)
        return TRUE;
    /* One worker logs the end. */
    if (__atomic_compare_exchange_n(&e->paused_until_us, &until, 0, FALSE, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        jet_log(JET_LOG_INFO, e->b->name, "breaker-resumed", "breaker_pause over: pulling again");
    return FALSE;
}
