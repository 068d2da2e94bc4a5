#include "duration.h"

#include <glib.h>

static void test_parse(void)
{
    static const struct { const char *text; guint64 ms; } good[] = {
        { "0", 0 }, { "1ms", 1 }, { "250ms", 250 }, { "30s", 30000 }, { "5m", 300000 },
        { "1h", 3600000 }, { "2d", 172800000 }, { " 7s ", 7000 }, { "0s", 0 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
        guint64 ms = 12345;
        g_autoptr(GError) err = NULL;
        g_assert_true(jet_duration_parse_ms(good[i].text, &ms, &err));
        g_assert_no_error(err);
        g_assert_cmpuint(ms, ==, good[i].ms);
    }
    static const char *bad[] = { "", "s", "10", "-1s", "1.5s", "10 parsecs", "1sec", "ms",
                                 "99999999999999999999ms", "18446744073709551615d" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        guint64 ms = 0;
        g_autoptr(GError) err = NULL;
        g_assert_false(jet_duration_parse_ms(bad[i], &ms, &err));
        g_assert_nonnull(err);
        g_test_message("'%s': %s", bad[i], err->message);
    }
}

static void test_format(void)
{
    static const struct { guint64 ms; const char *text; } cases[] = {
        { 0, "0" }, { 1, "1ms" }, { 1500, "1500ms" }, { 30000, "30s" }, { 300000, "5m" },
        { 3600000, "1h" }, { 90000, "90s" }, { 86400000, "1d" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *t = jet_duration_format_ms(cases[i].ms);
        g_assert_cmpstr(t, ==, cases[i].text);
        guint64 back = 0;
        g_assert_true(jet_duration_parse_ms(t, &back, NULL));
        g_assert_cmpuint(back, ==, cases[i].ms);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/duration/parse", test_parse);
    g_test_add_func("/duration/format", test_format);
    return g_test_run();
}
