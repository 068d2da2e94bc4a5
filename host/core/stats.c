#include "stats.h"

#include <stddef.h>

G_STATIC_ASSERT(sizeof(JetStats) % sizeof(guint64) == 0);

void jet_stats_raise(guint64 *mark, guint64 v)
{
    guint64 cur = __atomic_load_n(mark, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(mark, &cur, v, TRUE, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* Handlers and latencies span a millisecond to a minute: wide enough for a
 * slow plugin, fine enough to see a fast one. */
const guint64 jet_stats_bounds_us[JET_STATS_BOUNDS] = {
    1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000, 30000000, 60000000,
};

guint jet_stats_bucket(guint64 us)
{
    guint lo = 0, hi = JET_STATS_BOUNDS;
    while (lo < hi) {
        guint mid = (lo + hi) / 2;
        if (jet_stats_bounds_us[mid] >= us)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void jet_stats_merge(JetStats *into, const JetStats *from)
{
    guint64 *to = (guint64 *)into;
    const guint64 *src = (const guint64 *)from;
    const gsize max_held = offsetof(JetStats, max_held) / sizeof(guint64);
    const gsize floor = offsetof(JetStats, observed_floor) / sizeof(guint64);
    for (gsize i = 0; i < sizeof(JetStats) / sizeof(guint64); i++) {
        guint64 v = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
        if (i == floor)
            continue;
        if (i == max_held)
            to[i] = MAX(to[i], v);
        else
            to[i] += v;
    }
}
