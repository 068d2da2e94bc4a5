/* The exclusive claim's fence on the hand-out path (docs/exclusive.md,
 * "The fence").
 *
 * The claim thread alone cannot fence a holder that pauses: woken, every
 * thread runs at once, and a worker would start a handler before the claim
 * thread has noticed that its claim may be gone.  So each worker reads the
 * fence itself, by the monotonic clock, right before a handler would start. */
#include "engine_private.h"

/* How often a fenced worker looks again: the claim thread decides within
 * one of its own steps, so this only bounds the wake-up. */
#define FENCE_STEP_US (10 * 1000)

void jet_engine_set_fence(JetEngine *e, const gint64 *until_us)
{
    e->fence = until_us;
}

gboolean jet__fence_closed(JetEngine *e)
{
    if (e->fence == NULL)
        return FALSE;
    gint64 until = __atomic_load_n(e->fence, __ATOMIC_ACQUIRE);
    gint64 now = now_us();
    if (now < until) {
        g_atomic_int_set(&e->fence_logged, 0);
        return FALSE;
    }
    if (g_atomic_int_compare_and_exchange(&e->fence_logged, 0, 1))
        jet_log(JET_LOG_WARNING, e->b->name, "claim-fenced",
                "the claim's fence passed %" G_GINT64_FORMAT " ms ago (no renewal confirmed for claim_ttl - "
                "claim_heartbeat; this host paused, or could not reach the server): no handler starts until a "
                "renewal gets through or the binding stops; what it holds is then released unhandled",
                (now - until) / 1000);
    return TRUE;
}

gboolean jet__fence_wait(JetEngine *e)
{
    while (jet__fence_closed(e)) {
        if (g_atomic_int_get(&e->stopping))
            return FALSE;
        g_usleep(FENCE_STEP_US);
    }
    return TRUE;
}
