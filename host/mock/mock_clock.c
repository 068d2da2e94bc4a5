/* The mock's clock: what every settlement and the plugin read as now,
 * moved only by the test (include/jethost/mock.h, jet_mock_clock_set_ns). */
#include "mock_private.h"

gint64 jet__mock_clock(gpointer data)
{
    jet_mock *m = data;
    g_mutex_lock(&m->lock);
    gint64 now = m->clock_ns;
    g_mutex_unlock(&m->lock);
    return now;
}

void jet_mock_clock_set_ns(jet_mock *m, int64_t unix_ns)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    m->clock_ns = unix_ns;
    g_mutex_unlock(&m->lock);
}

void jet_mock_clock_advance_ms(jet_mock *m, uint64_t ms)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    guint64 step = ms > (guint64)G_MAXINT64 / 1000000 ? (guint64)G_MAXINT64 : ms * 1000000;
    m->clock_ns = m->clock_ns > G_MAXINT64 - (gint64)step ? G_MAXINT64 : m->clock_ns + (gint64)step;
    g_mutex_unlock(&m->lock);
}

int64_t jet_mock_clock_ns(const jet_mock *m)
{
    g_return_val_if_fail(m != NULL, 0);
    return jet__mock_clock((gpointer)m);
}
