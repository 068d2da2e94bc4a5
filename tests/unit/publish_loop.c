/* jet_publish_loops over configs of several bindings: a forward into its
 * own stream, a cycle of two and of three, what breaks a loop (a filter, a
 * stream that captures nothing of it, allow_loop), and the server's
 * subjects before the config's. */
#include "publish_loop.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#define HOST "[host]\nserver = nats://127.0.0.1:4222\n"

/* A durable binding NAME on STREAM: the forward plugin with template
 * FORWARD (or none when NULL), then EXTRA lines as written. */
static char *binding(const char *name, const char *stream, const char *forward, const char *extra)
{
    return g_strdup_printf("[binding %s]\nplugin = %s\nstream = %s\nconsumer = %s\n%s%s%s%s", name,
                           forward != NULL ? "forward" : "noop", stream, name,
                           forward != NULL ? "option.subject = " : "", forward != NULL ? forward : "",
                           forward != NULL ? "\n" : "", extra != NULL ? extra : "");
}

static JetConfig *load(const char *bindings)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *dir = g_dir_make_tmp("publish_loop-XXXXXX", &err);
    g_assert_no_error(err);
    g_autofree char *path = g_build_filename(dir, "jethost.conf", NULL);
    g_autofree char *text = g_strconcat(HOST, bindings, NULL);
    g_assert_true(g_file_set_contents(path, text, -1, &err));
    JetConfig *cfg = jet_config_load(path, NULL, &err);
    g_assert_no_error(err);
    g_assert_nonnull(cfg);
    g_unlink(path);
    g_rmdir(dir);
    return cfg;
}

/* The loops of the config, each message logged. */
static GPtrArray *loops_of(const char *bindings, JetStreamSubjectsFn server, void *data)
{
    g_autoptr(JetConfig) cfg = load(bindings);
    GPtrArray *loops = jet_publish_loops(cfg, server, data);
    for (guint i = 0; i < loops->len; i++) {
        const JetPublishLoop *l = g_ptr_array_index(loops, i);
        g_test_message("loop on %s: %s", l->binding, l->message);
    }
    return loops;
}

static void assert_mentions(const JetPublishLoop *l, const char *const *parts)
{
    for (gsize i = 0; parts[i] != NULL; i++)
        if (strstr(l->message, parts[i]) == NULL)
            g_error("'%s' not in: %s", parts[i], l->message);
}

static void test_self_feed(void)
{
    g_autofree char *a = binding("enrich", "ORDERS", "orders.enriched", "subjects = orders.>\n");
    g_autoptr(GPtrArray) loops = loops_of(a, NULL, NULL);
    g_assert_cmpuint(loops->len, ==, 1);
    const JetPublishLoop *l = g_ptr_array_index(loops, 0);
    g_assert_cmpstr(l->binding, ==, "enrich");
    static const char *const parts[] = { "binding enrich publishes orders.enriched into stream ORDERS",
                                         "(subjects orders.>)", "which binding enrich consumes",
                                         "allow_loop", NULL };
    assert_mentions(l, parts);
}

/* The template's placeholders as wildcards: {token:N} one token, {subject}
 * and {header:NAME} the rest. */
static void test_template_placeholders(void)
{
    static const struct {
        const char *tmpl, *subjects;
        guint loops;
    } cases[] = {
        { "orders.{token:2}", "orders.>", 1 },      { "audit.{token:2}", "orders.>", 0 },
        { "x.{subject}", "x.a.b", 1 },              { "x.{header:Region}.y", "x.eu", 1 },
        { "{token:1}.new", "orders.new", 1 },       { "{token:1}.new", "orders.new.x", 0 },
        { "a.pre{token:2}post", "a.*", 1 },         { "a.{token:2}", "a.b.c", 0 },
        { "orders.enriched", "orders.new, orders.paid", 0 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *extra = g_strdup_printf("subjects = %s\n", cases[i].subjects);
        g_autofree char *a = binding("fwd", "S", cases[i].tmpl, extra);
        g_test_message("template %s, stream subjects %s", cases[i].tmpl, cases[i].subjects);
        g_autoptr(GPtrArray) loops = loops_of(a, NULL, NULL);
        g_assert_cmpuint(loops->len, ==, cases[i].loops);
    }
}

/* A consumer that filters out the forwards is not fed by them. */
static void test_filter_breaks_it(void)
{
    g_autofree char *a = binding("enrich", "ORDERS", "orders.enriched",
                                 "subjects = orders.>\nfilter_subject = orders.new\n");
    g_autoptr(GPtrArray) loops = loops_of(a, NULL, NULL);
    g_assert_cmpuint(loops->len, ==, 0);
}

static void test_cycle_of_two(void)
{
    g_autofree char *a = binding("a", "S1", "two.x", "subjects = one.>\n");
    g_autofree char *b = binding("b", "S2", NULL, "subjects = two.>\npublish_streams = S1\n");
    g_autofree char *text = g_strconcat(a, b, NULL);
    g_autoptr(GPtrArray) loops = loops_of(text, NULL, NULL);
    g_assert_cmpuint(loops->len, ==, 1);
    const JetPublishLoop *l = g_ptr_array_index(loops, 0);
    g_assert_cmpstr(l->binding, ==, "a");
    static const char *const parts[] = { "binding a publishes two.x into stream S2 (subjects two.>), which binding b",
                                         "binding b publishes one.> into stream S1 (subjects one.>), which binding a",
                                         "one of them", NULL };
    assert_mentions(l, parts);
}

/* Three bindings round, and a fourth fed by the cycle but not in it. */
static void test_cycle_of_three(void)
{
    g_autofree char *a = binding("a", "S1", "two.x", "subjects = one.>\n");
    g_autofree char *b = binding("b", "S2", "three.{token:2}", "subjects = two.>\n");
    g_autofree char *c = binding("c", "S3", "one.back", "subjects = three.*\n");
    g_autofree char *d = binding("d", "S4", "sink.{subject}", "subjects = side.>\n");
    g_autofree char *e = binding("e", "S2", NULL, "manage = bind\n");   /* fed, publishes nothing */
    g_autofree char *text = g_strconcat(a, b, c, d, e, NULL);
    g_autoptr(GPtrArray) loops = loops_of(text, NULL, NULL);
    g_assert_cmpuint(loops->len, ==, 1);
    static const char *const parts[] = { "binding a publishes two.x", "which binding b consumes",
                                         "binding b publishes three.*", "which binding c consumes",
                                         "binding c publishes one.back", "which binding a consumes", NULL };
    assert_mentions(g_ptr_array_index(loops, 0), parts);
}

/* allow_loop on one binding of a cycle accepts the cycle; on a binding
 * that feeds itself, accepts it. */
static void test_allow_loop(void)
{
    g_autofree char *self = binding("enrich", "ORDERS", "orders.enriched", "subjects = orders.>\nallow_loop = true\n");
    g_autoptr(GPtrArray) none = loops_of(self, NULL, NULL);
    g_assert_cmpuint(none->len, ==, 0);
    g_autofree char *a = binding("a", "S1", "two.x", "subjects = one.>\n");
    g_autofree char *b = binding("b", "S2", "one.y", "subjects = two.>\nallow_loop = true\n");
    g_autofree char *text = g_strconcat(a, b, NULL);
    g_autoptr(GPtrArray) loops = loops_of(text, NULL, NULL);
    g_assert_cmpuint(loops->len, ==, 0);
}

/* Streams the config does not create are the server's to tell. */
static char **server_streams(const char *stream, void *data)
{
    (void)data;
    if (strcmp(stream, "ORDERS") == 0)
        return g_strsplit("orders.>", ",", -1);
    if (strcmp(stream, "SINK") == 0)
        return g_strsplit("orders.enriched,sink.>", ",", -1);
    return NULL;
}

static void test_server_subjects(void)
{
    /* Without the server, a bound stream's subjects are not known. */
    g_autofree char *a = binding("enrich", "ORDERS", "orders.enriched", "manage = bind\n");
    g_autoptr(GPtrArray) offline = loops_of(a, NULL, NULL);
    g_assert_cmpuint(offline->len, ==, 0);
    g_autoptr(GPtrArray) online = loops_of(a, server_streams, NULL);
    g_assert_cmpuint(online->len, ==, 1);
    /* The server's subjects win over those the config would create it with. */
    g_autofree char *b = binding("enrich", "ORDERS", "orders.enriched", "subjects = other.>\n");
    g_autoptr(GPtrArray) existing = loops_of(b, server_streams, NULL);
    g_assert_cmpuint(existing->len, ==, 1);
    /* publish_streams' subjects, as the server has them. */
    g_autofree char *c = binding("c", "ORDERS", NULL, "manage = bind\npublish_streams = SINK\n");
    g_autoptr(GPtrArray) via = loops_of(c, server_streams, NULL);
    g_assert_cmpuint(via->len, ==, 1);
    static const char *const parts[] = { "binding c publishes orders.enriched into stream ORDERS", NULL };
    assert_mentions(g_ptr_array_index(via, 0), parts);
}

static void test_targets(void)
{
    g_autofree char *a = binding("a", "S1", "x.{token:3}.{header:H}.z", "subjects = one.>\npublish_streams = S1\n");
    g_autoptr(JetConfig) cfg = load(a);
    g_auto(GStrv) t = jet_publish_targets(cfg, g_ptr_array_index(cfg->bindings, 0), NULL, NULL);
    g_assert_cmpuint(g_strv_length(t), ==, 2);
    g_assert_cmpstr(t[0], ==, "x.*.>");
    g_assert_cmpstr(t[1], ==, "one.>");
    /* Another plugin's option.subject is its own business. */
    g_autofree char *b = g_strdup_printf("[binding b]\nplugin = /opt/p/enrich.so\nstream = S\nconsumer = b\n"
                                         "option.subject = S.x\nsubjects = S.>\n");
    g_autoptr(JetConfig) cfg2 = load(b);
    g_auto(GStrv) t2 = jet_publish_targets(cfg2, g_ptr_array_index(cfg2->bindings, 0), NULL, NULL);
    g_assert_cmpuint(g_strv_length(t2), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/publish_loop/self-feed", test_self_feed);
    g_test_add_func("/publish_loop/template-placeholders", test_template_placeholders);
    g_test_add_func("/publish_loop/filter-breaks-it", test_filter_breaks_it);
    g_test_add_func("/publish_loop/cycle-of-two", test_cycle_of_two);
    g_test_add_func("/publish_loop/cycle-of-three", test_cycle_of_three);
    g_test_add_func("/publish_loop/allow-loop", test_allow_loop);
    g_test_add_func("/publish_loop/server-subjects", test_server_subjects);
    g_test_add_func("/publish_loop/targets", test_targets);
    return g_test_run();
}
