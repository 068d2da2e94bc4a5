/* Start times handed to nats.c (host/core/start_time.c): never with a
 * sub-second part, since nats.c's encoder drops its leading zeros.  No
 * server. */
#include "start_time.h"

#define S G_GINT64_CONSTANT(1000000000)

static void test_whole_second(void)
{
    /* 2026-12-04T02:09:34.046914512Z: nats.c would send 34.46914512. */
    const gint64 t = G_GINT64_CONSTANT(1796350174) * S;
    g_assert_cmpint(jet_start_time_whole_second(t + 46914512), ==, t);
    g_assert_cmpint(jet_start_time_whole_second(t + 1), ==, t);
    g_assert_cmpint(jet_start_time_whole_second(t + 999999999), ==, t);
    g_assert_cmpint(jet_start_time_whole_second(t), ==, t);
    g_assert_cmpint(jet_start_time_whole_second(t - 1), ==, t - S);
    /* Within the epoch's first second: no start time (from the beginning). */
    g_assert_cmpint(jet_start_time_whole_second(1), ==, 0);
    g_assert_cmpint(jet_start_time_whole_second(S - 1), ==, 0);
    g_assert_cmpint(jet_start_time_whole_second(S), ==, S);
    g_assert_cmpint(jet_start_time_whole_second(0), ==, 0);
    g_assert_cmpint(jet_start_time_whole_second(-5), ==, 0);
}

static void test_before(void)
{
    const gint64 start = G_GINT64_CONSTANT(1796350174) * S + 46914512;
    g_assert_true(jet_start_time_before(start, start - 1));
    g_assert_true(jet_start_time_before(start, jet_start_time_whole_second(start)));
    g_assert_false(jet_start_time_before(start, start));
    g_assert_false(jet_start_time_before(start, start + 1));
    g_assert_false(jet_start_time_before(0, 5));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/start_time/whole-second", test_whole_second);
    g_test_add_func("/start_time/before", test_before);
    return g_test_run();
}
