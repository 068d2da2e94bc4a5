#include "config.h"
#include "metrics_text.h"
#include "settle.h"

#include <glib.h>
#include <locale.h>
#include <stddef.h>
#include <string.h>

static char *escaped_label(const char *v)
{
    GString *s = g_string_new(NULL);
    jet_metrics_escape_label(s, v);
    return g_string_free(s, FALSE);
}

static void test_escape(void)
{
    static const struct { const char *in, *label, *help; } cases[] = {
        { "", "", "" },
        { "plain", "plain", "plain" },
        { "a\\b", "a\\\\b", "a\\\\b" },
        { "say \"hi\"", "say \\\"hi\\\"", "say \"hi\"" },
        { "two\nlines", "two\\nlines", "two\\nlines" },
        { "\\\"\n", "\\\\\\\"\\n", "\\\\\"\\n" },
        { "tab\there", "tab\there", "tab\there" },   /* only the three are escaped */
        { "ünïcödé", "ünïcödé", "ünïcödé" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *l = escaped_label(cases[i].in);
        g_assert_cmpstr(l, ==, cases[i].label);
        GString *h = g_string_new(NULL);
        jet_metrics_escape_help(h, cases[i].in);
        g_assert_cmpstr(h->str, ==, cases[i].help);
        g_string_free(h, TRUE);
    }
}

static void test_family_and_samples(void)
{
    g_autoptr(GString) s = g_string_new(NULL);
    jet_metrics_family(s, "x_total", "counter", "Help with \\ and\nnewline.");
    JetMetricLabel l[2] = { { "binding", "b\"1" }, { "cause", "rejected" } };
    jet_metrics_sample_u64(s, "x_total", l, 2, G_MAXUINT64);
    jet_metrics_sample_u64(s, "x_total", NULL, 0, 0);
    jet_metrics_sample_double(s, "g", l, 1, 0.1);
    jet_metrics_sample_double(s, "g", NULL, 0, 1.0 / 0.0);
    jet_metrics_sample_double(s, "g", NULL, 0, 2.5e-7);
    jet_metrics_sample_double(s, "g", NULL, 0, 1234567.0);
    /* The shortest text that reads back as the same double: 17 digits
     * where 15 would print another number, 16 where 16 are enough. */
    volatile double tenth = 0.1, fifth = 0.2, one = 1.0, three = 3.0;
    jet_metrics_sample_double(s, "g", NULL, 0, tenth + fifth);
    jet_metrics_sample_double(s, "g", NULL, 0, one / three);
    g_assert_cmpstr(s->str, ==,
                    "# HELP x_total Help with \\\\ and\\nnewline.\n"
                    "# TYPE x_total counter\n"
                    "x_total{binding=\"b\\\"1\",cause=\"rejected\"} 18446744073709551615\n"
                    "x_total 0\n"
                    "g{binding=\"b\\\"1\"} 0.1\n"
                    "g +Inf\n"
                    "g 2.5e-07\n"
                    "g 1234567\n"
                    "g 0.30000000000000004\n"
                    "g 0.3333333333333333\n");
}

static void test_locale(void)
{
    /* A comma as the decimal separator must never reach the page. */
    const char *old = setlocale(LC_NUMERIC, NULL);
    g_autofree char *saved = g_strdup(old);
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") == NULL && setlocale(LC_NUMERIC, "fr_FR.UTF-8") == NULL) {
        g_test_message("no comma locale installed: checking in C only");
    }
    g_autoptr(GString) s = g_string_new(NULL);
    jet_metrics_sample_double(s, "g", NULL, 0, 0.5);
    setlocale(LC_NUMERIC, saved);
    g_assert_cmpstr(s->str, ==, "g 0.5\n");
}

static void test_histogram(void)
{
    g_autoptr(GString) s = g_string_new(NULL);
    const double bounds[] = { 0.005, 0.25, 1 };
    const guint64 counts[] = { 2, 0, 3, 1 };
    JetMetricLabel l = { "binding", "orders" };
    jet_metrics_histogram(s, "h_seconds", &l, 1, bounds, 3, counts, 4.5);
    g_assert_cmpstr(s->str, ==,
                    "h_seconds_bucket{binding=\"orders\",le=\"0.005\"} 2\n"
                    "h_seconds_bucket{binding=\"orders\",le=\"0.25\"} 2\n"
                    "h_seconds_bucket{binding=\"orders\",le=\"1\"} 5\n"
                    "h_seconds_bucket{binding=\"orders\",le=\"+Inf\"} 6\n"
                    "h_seconds_sum{binding=\"orders\"} 4.5\n"
                    "h_seconds_count{binding=\"orders\"} 6\n");
    g_string_truncate(s, 0);
    const guint64 zero[] = { 0, 0 };
    jet_metrics_histogram(s, "h", NULL, 0, bounds, 1, zero, 0);
    g_assert_cmpstr(s->str, ==, "h_bucket{le=\"0.005\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
}

static void test_buckets(void)
{
    /* le is inclusive: a value equal to a bound counts in that bound. */
    g_assert_cmpuint(jet_stats_bucket(0), ==, 0);
    g_assert_cmpuint(jet_stats_bucket(1000), ==, 0);
    g_assert_cmpuint(jet_stats_bucket(1001), ==, 1);
    for (guint i = 0; i < JET_STATS_BOUNDS; i++) {
        g_assert_cmpuint(jet_stats_bucket(jet_stats_bounds_us[i]), ==, i);
        g_assert_cmpuint(jet_stats_bucket(jet_stats_bounds_us[i] + 1), ==, i + 1);
        if (i > 0)
            g_assert_cmpuint(jet_stats_bounds_us[i], >, jet_stats_bounds_us[i - 1]);
    }
    g_assert_cmpuint(jet_stats_bucket(G_MAXUINT64), ==, JET_STATS_BOUNDS);

    JetStats a = { 0 }, b = { 0 };
    JET_STAT_OBSERVE(&a, handler_us, 3000);
    JET_STAT_OBSERVE(&b, handler_us, 3000);
    JET_STAT_OBSERVE(&b, latency_us, 90000000);
    JET_STAT_ADD(&b, dead_lettered_cause[JET_CAUSE_REJECTED], 2);
    jet_stats_merge(&a, &b);
    g_assert_cmpuint(a.handler_us[2], ==, 2);
    g_assert_cmpuint(a.handler_us_sum, ==, 6000);
    g_assert_cmpuint(a.latency_us[JET_STATS_BOUNDS], ==, 1);
    g_assert_cmpuint(a.dead_lettered_cause[JET_CAUSE_REJECTED], ==, 2);
    g_assert_cmpuint(a.latency_us_sum, ==, 90000000);
}

/* Every member merges, the last one too: counters add, max_held takes the
 * larger, observed_floor stays the reading it was. */
static void test_merge_every_member(void)
{
    JetStats a, b;
    guint64 *pa = (guint64 *)&a, *pb = (guint64 *)&b;
    const gsize n = sizeof(JetStats) / sizeof(guint64);
    for (gsize i = 0; i < n; i++) {
        pa[i] = 1;
        pb[i] = 2;
    }
    jet_stats_merge(&a, &b);
    const gsize held = offsetof(JetStats, max_held) / sizeof(guint64);
    const gsize floor = offsetof(JetStats, observed_floor) / sizeof(guint64);
    for (gsize i = 0; i < n; i++) {
        guint64 want = i == held ? 2 : i == floor ? 1 : 3;
        if (pa[i] != want)
            g_error("member %zu of %zu: %" G_GUINT64_FORMAT ", not %" G_GUINT64_FORMAT, i, n, pa[i], want);
    }
}

static JetMetricsBinding ready_binding(const char *name)
{
    JetMetricsBinding b = { .name = name, .started = TRUE, .num_pending = -1, .num_ack_pending = -1 };
    return b;
}

static void test_readiness(void)
{
    JetMetricsBinding b = ready_binding("a");
    g_assert_null(jet_metrics_not_ready(&b));
    b.started = FALSE;
    g_assert_cmpstr(jet_metrics_not_ready(&b), ==, "not started yet");
    b.standby = TRUE;   /* standing by is an exclusive binding's job */
    g_assert_null(jet_metrics_not_ready(&b));
    b = ready_binding("a");
    b.recovering = TRUE;
    g_assert_cmpstr(jet_metrics_not_ready(&b), ==, "consumer being re-created");
    b = ready_binding("a");
    b.hung_workers = 1;
    g_assert_cmpstr(jet_metrics_not_ready(&b), ==, "a handler hung past handler_timeout");
    b = ready_binding("a");
    b.floor_stalled = TRUE;
    g_assert_cmpstr(jet_metrics_not_ready(&b), ==, "ack floor stalled past floor_age");
    /* Holding work and doing none is named even while another host moves the floor. */
    b = ready_binding("a");
    b.idle_holding = TRUE;
    g_assert_cmpstr(jet_metrics_not_ready(&b), ==, "holds messages and has handled none for floor_age");
    b.floor_stalled = TRUE;
    g_assert_cmpstr(jet_metrics_not_ready(&b), ==, "holds messages and has handled none for floor_age");
}

/* The whole page: every family once, HELP before TYPE before samples, every
 * sample under its family, every line well formed. */
static void test_render(void)
{
    JetMetricsBinding b[2] = { ready_binding("orders"), ready_binding("we\"ird\\name\n") };
    b[0].stats.messages = 7;
    b[0].stats.acked = 5;
    b[0].stats.dead_lettered = 2;
    b[0].stats.dead_lettered_cause[JET_CAUSE_REJECTED] = 2;
    b[0].max_deliveries_captured = 3;
    b[0].stats.resubscribes = 1;
    b[0].stats.observed_floor = 42;
    b[0].num_pending = 9;
    b[0].num_ack_pending = 4;
    b[0].has_floor_monitor = TRUE;
    b[0].floor_stall_seconds = 1.5;
    b[0].in_handlers = 1;
    JET_STAT_OBSERVE(&b[0].stats, handler_us, 2000);
    b[1].standby = TRUE;
    b[1].started = FALSE;
    JetMetricsHost host = { .reconnects = 3 };
    g_autoptr(GString) s = g_string_new(NULL);
    jet_metrics_render(s, &host, b, 2);
    const char *page = s->str;
    g_test_message("%s", page);

    static const char *want[] = {
        "jethost_reconnects_total 3\n",
        "jethost_messages_handled_total{binding=\"orders\"} 7\n",
        "jethost_messages_acked_total{binding=\"orders\"} 5\n",
        "jethost_messages_dead_lettered_total{binding=\"orders\",cause=\"rejected\"} 2\n",
        "jethost_messages_dead_lettered_total{binding=\"orders\",cause=\"max-deliveries\"} 3\n",
        "jethost_messages_dead_lettered_total{binding=\"orders\",cause=\"poison\"} 0\n",
        "jethost_consumer_recreations_total{binding=\"orders\"} 1\n",
        "jethost_ack_floor{binding=\"orders\"} 42\n",
        "jethost_consumer_num_pending{binding=\"orders\"} 9\n",
        "jethost_consumer_num_ack_pending{binding=\"orders\"} 4\n",
        "jethost_floor_stall_seconds{binding=\"orders\"} 1.5\n",
        "jethost_floor_stalled{binding=\"orders\"} 0\n",
        "jethost_messages_in_handlers{binding=\"orders\"} 1\n",
        "jethost_binding_ready{binding=\"orders\"} 1\n",
        "jethost_binding_standby{binding=\"we\\\"ird\\\\name\\n\"} 1\n",
        "jethost_binding_ready{binding=\"we\\\"ird\\\\name\\n\"} 1\n",
        "jethost_handler_seconds_bucket{binding=\"orders\",le=\"0.001\"} 0\n",
        "jethost_handler_seconds_bucket{binding=\"orders\",le=\"0.0025\"} 1\n",
        "jethost_handler_seconds_bucket{binding=\"orders\",le=\"+Inf\"} 1\n",
        "jethost_handler_seconds_sum{binding=\"orders\"} 0.002\n",
        "jethost_handler_seconds_count{binding=\"orders\"} 1\n",
        "jethost_publish_to_handle_seconds_count{binding=\"orders\"} 0\n",
        "# TYPE jethost_handler_seconds histogram\n",
        "# TYPE jethost_ack_floor gauge\n",
        "# TYPE jethost_messages_acked_total counter\n",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(want); i++)
        if (strstr(page, want[i]) == NULL)
            g_error("missing: %s", want[i]);
    /* Not measured: absent, never a made-up zero. */
    g_assert_null(strstr(page, "jethost_consumer_num_pending{binding=\"we"));
    g_assert_null(strstr(page, "jethost_floor_stalled{binding=\"we"));

    g_auto(GStrv) lines = g_strsplit(page, "\n", -1);
    GHashTable *typed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    char *family = NULL;
    const char *type = NULL;
    for (guint i = 0; lines[i] != NULL && lines[i][0] != '\0'; i++) {
        const char *ln = lines[i];
        if (g_str_has_prefix(ln, "# HELP ")) {
            g_autofree char *name = g_strndup(ln + 7, strcspn(ln + 7, " "));
            g_assert_false(g_hash_table_contains(typed, name));   /* each family once */
            g_assert_true(g_str_has_prefix(lines[i + 1], "# TYPE "));
            g_free(family);
            family = g_strdup(name);
            continue;
        }
        if (g_str_has_prefix(ln, "# TYPE ")) {
            g_assert_true(g_str_has_prefix(ln + 7, family));
            type = ln + 7 + strlen(family) + 1;
            g_assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                          strcmp(type, "histogram") == 0);
            g_hash_table_insert(typed, g_strdup(family), g_strdup(type));
            continue;
        }
        g_assert_nonnull(family);
        g_assert_true(g_str_has_prefix(ln, family));
        const char *rest = ln + strlen(family);
        if (strcmp(type, "histogram") == 0)
            g_assert_true(g_str_has_prefix(rest, "_bucket{") || g_str_has_prefix(rest, "_sum") ||
                          g_str_has_prefix(rest, "_count"));
        else
            g_assert_true(*rest == ' ' || *rest == '{');
        if (strcmp(type, "counter") == 0)
            g_assert_true(g_str_has_suffix(family, "_total"));
        const char *sp = strrchr(ln, ' ');
        g_assert_nonnull(sp);
        char *end = NULL;
        g_ascii_strtod(sp + 1, &end);
        g_assert_true(*end == '\0' || strcmp(sp + 1, "+Inf") == 0);
    }
    g_free(family);
    g_assert_cmpuint(g_hash_table_size(typed), >=, 25);
    g_hash_table_unref(typed);
}

/* The plugins' metrics: a family per name, a counter's with _total once,
 * a series per binding, a gauge below zero, one name declared with two
 * types as two families, and two declarations that would make one family
 * of two types (a counter x and a gauge x_total) kept to the first's. */
static guint count_lines_with(const char *text, const char *needle)
{
    guint n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_plugin_metrics(void)
{
    JetMetricsPlugin a[] = {
        { .name = "enriched", .help = g_strdup("orders enriched"), .counter = TRUE, .value = 7 },
        { .name = "queue_depth", .help = g_strdup("its queue"), .counter = FALSE, .value = -3 },
        { .name = "sent_total", .help = g_strdup("already with _total"), .counter = TRUE, .value = 1 },
    };
    JetMetricsPlugin b[] = {
        { .name = "enriched", .help = g_strdup("another plugin's words"), .counter = TRUE, .value = 9 },
        { .name = "queue_depth", .help = g_strdup("a counter here"), .counter = TRUE, .value = 5 },
        { .name = "enriched_total", .help = g_strdup("a gauge of that family's name"), .counter = FALSE, .value = 4 },
    };
    JetMetricsBinding bs[2] = {
        { .name = "orders", .num_pending = -1, .num_ack_pending = -1, .plugin = a, .n_plugin = 3 },
        { .name = "audit", .num_pending = -1, .num_ack_pending = -1, .plugin = b, .n_plugin = 3 },
    };
    JetMetricsHost host = { 0 };
    g_autoptr(GString) out = g_string_new(NULL);
    jet_metrics_render(out, &host, bs, 2);
    const char *page = out->str;
    g_assert_nonnull(strstr(page, "# HELP jethost_plugin_enriched_total The plugin's: orders enriched\n"
                                  "# TYPE jethost_plugin_enriched_total counter\n"
                                  "jethost_plugin_enriched_total{binding=\"orders\"} 7\n"
                                  "jethost_plugin_enriched_total{binding=\"audit\"} 9\n"));
    g_assert_nonnull(strstr(page, "# TYPE jethost_plugin_queue_depth gauge\n"
                                  "jethost_plugin_queue_depth{binding=\"orders\"} -3\n"));
    g_assert_null(strstr(page, "jethost_plugin_queue_depth{binding=\"audit\"}"));
    g_assert_nonnull(strstr(page, "# TYPE jethost_plugin_queue_depth_total counter\n"
                                  "jethost_plugin_queue_depth_total{binding=\"audit\"} 5\n"));
    /* One TYPE line per family, and the gauge that would join a counter's
     * family left out. */
    g_assert_cmpuint(count_lines_with(page, "# TYPE jethost_plugin_enriched_total "), ==, 1);
    g_assert_null(strstr(page, "jethost_plugin_enriched_total{binding=\"audit\"} 4"));
    g_assert_nonnull(strstr(page, "# TYPE jethost_plugin_sent_total counter\n"
                                  "jethost_plugin_sent_total{binding=\"orders\"} 1\n"));
    g_assert_null(strstr(page, "sent_total_total"));
    /* The clear function frees what the collection copied. */
    JetMetricsBinding owned = { .plugin = g_new0(JetMetricsPlugin, 1), .n_plugin = 1 };
    owned.plugin[0].help = g_strdup("x");
    jet_metrics_binding_clear(&owned);
    g_assert_null(owned.plugin);
    g_assert_cmpuint(owned.n_plugin, ==, 0);
    for (gsize i = 0; i < G_N_ELEMENTS(a); i++)
        g_free(a[i].help);
    for (gsize i = 0; i < G_N_ELEMENTS(b); i++)
        g_free(b[i].help);
}

static void test_listen_parse(void)
{
    static const struct { const char *text; const char *addr; guint port; } good[] = {
        { "127.0.0.1:9464", "127.0.0.1", 9464 }, { "0.0.0.0:0", "0.0.0.0", 0 },
        { "[::1]:65535", "::1", 65535 }, { "[::]:80", "::", 80 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autofree char *addr = NULL;
        guint16 port = 1;
        g_assert_true(jet_config_listen_parse(good[i].text, &addr, &port));
        g_assert_cmpstr(addr, ==, good[i].addr);
        g_assert_cmpuint(port, ==, good[i].port);
    }
    static const char *bad[] = { "", ":9464", "9464", "localhost:9464", "127.0.0.1", "127.0.0.1:",
                                 "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:x", "::1:80", "[::1:80",
                                 "[]:80", "1.2.3:80" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_test_message("%s", bad[i]);
        g_assert_false(jet_config_listen_parse(bad[i], NULL, NULL));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/metrics-text/escape", test_escape);
    g_test_add_func("/metrics-text/family-and-samples", test_family_and_samples);
    g_test_add_func("/metrics-text/locale", test_locale);
    g_test_add_func("/metrics-text/histogram", test_histogram);
    g_test_add_func("/metrics-text/buckets", test_buckets);
    g_test_add_func("/metrics-text/merge-every-member", test_merge_every_member);
    g_test_add_func("/metrics-text/readiness", test_readiness);
    g_test_add_func("/metrics-text/render", test_render);
    g_test_add_func("/metrics-text/plugin-metrics", test_plugin_metrics);
    g_test_add_func("/metrics-text/listen-parse", test_listen_parse);
    return g_test_run();
}
