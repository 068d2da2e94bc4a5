#include "stats.h"

#include <stddef.h>

G_STATIC_ASSERT(sizeof(JetStats) % sizeof(guint64) == 0);

void jet_stats_raise(guint64 *mark, guint64 v)
{
    guint64 cur = __atomic_load_n(mark, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(mark, &cur, v, TRUE, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
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
