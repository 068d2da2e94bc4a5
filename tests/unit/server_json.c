/* What the host reads from the server's JSON, fed what a broken or hostile
 * server could send (host/io/js_api.c, host/io/consumer_setup.c): times in
 * every shape, a consumer config with members missing, of the wrong type,
 * or not an object at all, a stream info that names no leader.  Each gives
 * a clear answer and never a crash.
 * No server: the readers take parsed JSON. */
#include "consumer_put.h"
#include "consumer_setup.h"
#include "errors.h"
#include "js_api.h"
#include "stream_info.h"

#include <string.h>

#define NS G_GINT64_CONSTANT(1000000000)

static void test_time_shapes(void)
{
    /* 2026-12-06T20:00:00Z */
    const gint64 base = G_GINT64_CONSTANT(1796587200) * NS;
    g_assert_cmpint(jet_js_api_time_ns("2026-12-06T20:00:00Z"), ==, base);
    g_assert_cmpint(jet_js_api_time_ns("2026-12-06T20:00:00.5Z"), ==, base + 500000000);
    /* Leading zeros of the fraction count (nats.c drops them when it writes). */
    g_assert_cmpint(jet_js_api_time_ns("2026-12-06T20:00:00.046914512Z"), ==, base + 46914512);
    g_assert_cmpint(jet_js_api_time_ns("2026-12-06T20:00:00.000000001Z"), ==, base + 1);
    /* More than nanoseconds: the rest is cut, as Go would never write it. */
    g_assert_cmpint(jet_js_api_time_ns("2026-12-06T20:00:00.1234567891234Z"), ==, base + 123456789);
    /* An offset moves the instant, not the fraction. */
    g_assert_cmpint(jet_js_api_time_ns("2026-12-06T21:00:00.25+01:00"), ==, base + 250000000);
    /* Not a time, or not after 1970 (Go's zero time): 0. */
    const char *zero[] = { NULL, "", "0", "now", "2026-12-06", "2026-13-01T00:00:00Z", "2026-12-06T25:00:00Z",
                           "0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z",
                           "2026-12-06T20:00:00", "2026-12-06T20:00:00.Z", "\xff\xfe", "9999999999-01-01T00:00:00Z" };
    for (guint i = 0; i < G_N_ELEMENTS(zero); i++) {
        g_test_message("time %u", i);
        gint64 t = jet_js_api_time_ns(zero[i]);
        /* A text GLib reads leniently may still give a time: never a
         * negative or overflowed one. */
        g_assert_cmpint(t, >=, 0);
        if (i < 10)
            g_assert_cmpint(t, ==, 0);
    }
    /* Unix ns in a gint64 end in April 2262: later is no time the host can
     * hold (0), not an overflowed one. */
    g_assert_cmpint(jet_js_api_time_ns("2262-01-01T00:00:00.999999999Z"), >, base);
    g_assert_cmpint(jet_js_api_time_ns("2263-01-01T00:00:00Z"), ==, 0);
    g_assert_cmpint(jet_js_api_time_ns("9999-12-31T23:59:59.999999999Z"), ==, 0);
}

/* Random bytes and mangled times: an answer, never a crash or a negative
 * time.  The seed is g_test's (printed; --seed repeats it). */
static void test_time_random(void)
{
    const char *good = "2026-12-06T20:00:00.046914512Z";
    char buf[64];
    for (guint i = 0; i < 20000; i++) {
        gsize len = (gsize)g_test_rand_int_range(0, (gint32)sizeof buf);
        if (i % 2 == 0) {
            for (gsize k = 0; k < len; k++)
                buf[k] = (char)g_test_rand_int_range(1, 256);
        } else {
            len = strlen(good);
            memcpy(buf, good, len);
            for (int k = g_test_rand_int_range(1, 4); k > 0; k--)
                buf[g_test_rand_int_range(0, (gint32)len)] = (char)g_test_rand_int_range(1, 256);
        }
        buf[len] = '\0';
        g_assert_cmpint(jet_js_api_time_ns(buf), >=, 0);
    }
}

static JsonObject *parse(const char *text)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_data(p, text, -1, NULL));
    JsonNode *root = json_parser_get_root(p);
    return JSON_NODE_HOLDS_OBJECT(root) ? json_object_ref(json_node_get_object(root)) : NULL;
}

static void binding(JetBindingConfig *b)
{
    memset(b, 0, sizeof *b);
    b->name = (char *)"t";
    b->stream = (char *)"ORDERS";
    b->consumer = (char *)"c";
}

/* A consumer config: fits, or is refused as a config error that names the
 * binding and what does not fit; a member of the wrong type is as good as
 * absent, never read as something else. */
static void test_consumer_config_shapes(void)
{
    JetBindingConfig b;
    binding(&b);
    static const struct {
        const char *json;
        gboolean fits;
        const char *why;
    } cases[] = {
        { "{\"ack_policy\":\"explicit\"}", TRUE, NULL },
        { "{\"ack_policy\":\"explicit\",\"backoff\":[]}", TRUE, NULL },
        { "{\"ack_policy\":\"explicit\",\"backoff\":\"1s\"}", TRUE, NULL },
        { "{\"ack_policy\":\"explicit\",\"backoff\":{\"a\":1}}", TRUE, NULL },
        { "{\"ack_policy\":\"explicit\",\"deliver_subject\":\"\"}", TRUE, NULL },
        { "{\"ack_policy\":\"explicit\",\"deliver_subject\":7}", TRUE, NULL },
        { "{\"ack_policy\":\"explicit\",\"backoff\":[1000000000]}", FALSE, "BackOff" },
        { "{\"ack_policy\":\"explicit\",\"deliver_subject\":\"push.here\"}", FALSE, "push consumer" },
        { "{\"ack_policy\":\"none\"}", FALSE, "explicit acks" },
        { "{\"ack_policy\":\"all\"}", FALSE, "explicit acks" },
        { "{\"ack_policy\":1}", FALSE, "explicit acks" },
        { "{\"ack_policy\":null}", FALSE, "explicit acks" },
        { "{\"ack_policy\":[\"explicit\"]}", FALSE, "explicit acks" },
        { "{}", FALSE, "explicit acks" },
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_test_message("config %u: %s", i, cases[i].json);
        g_autoptr(JsonObject) c = parse(cases[i].json);
        g_autoptr(GError) err = NULL;
        gboolean fits = jet_consumer_check_fits(&b, c, &err);
        g_assert_cmpint(fits, ==, cases[i].fits);
        if (fits) {
            g_assert_no_error(err);
            continue;
        }
        g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
        g_assert_nonnull(strstr(err->message, "binding t: consumer ORDERS/c"));
        g_assert_nonnull(strstr(err->message, cases[i].why));
    }
    /* No config at all (a reply without one): refused, not read. */
    g_autoptr(GError) err = NULL;
    g_assert_false(jet_consumer_check_fits(&b, NULL, &err));
    g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
}

/* The "config" member of an info: an object, or nothing. */
static void test_info_config(void)
{
    g_assert_null(jet_consumer_info_config(NULL));
    const char *none[] = { "{}", "{\"config\":null}", "{\"config\":1}", "{\"config\":\"x\"}", "{\"config\":[]}" };
    for (guint i = 0; i < G_N_ELEMENTS(none); i++) {
        g_autoptr(JsonObject) info = parse(none[i]);
        g_assert_null(jet_consumer_info_config(info));
    }
    g_autoptr(JsonObject) info = parse("{\"config\":{\"ack_policy\":\"explicit\"}}");
    JsonObject *c = jet_consumer_info_config(info);
    g_assert_nonnull(c);
    g_assert_cmpstr(json_object_get_string_member(c, "ack_policy"), ==, "explicit");
}

/* Times in a reply, by member: absent, of the wrong type, or a time. */
static void test_time_member(void)
{
    g_assert_cmpint(jet_js_api_time_member(NULL, "created"), ==, 0);
    g_autoptr(JsonObject) o = parse("{\"a\":1,\"b\":null,\"c\":{},\"d\":\"2026-12-06T20:00:00.5Z\",\"e\":true}");
    const char *zero[] = { "a", "b", "c", "e", "missing" };
    for (guint i = 0; i < G_N_ELEMENTS(zero); i++)
        g_assert_cmpint(jet_js_api_time_member(o, zero[i]), ==, 0);
    g_assert_cmpint(jet_js_api_time_member(o, "d"), ==, G_GINT64_CONSTANT(1796587200) * NS + 500000000);
}

/* A stream info's cluster info: a leader named (a cluster's leader, or a
 * single server naming itself), none (a member's own answer during an
 * election: NULL or empty), the leader named among the replicas (a member
 * answering for the leader: they list every member but the one that
 * answers), or no cluster info at all (an older server). */
static void test_stream_info_leader(void)
{
    char leader[] = "n1", empty[] = "", n2[] = "n2", n3[] = "n3";
    jsPeerInfo p2 = { .Name = n2 }, p3 = { .Name = n3 }, p1 = { .Name = leader };
    jsPeerInfo *from_leader[] = { &p2, &p3 }, *from_member[] = { &p1, &p3 };
    jsClusterInfo ci = { 0 };
    jsStreamInfo si = { 0 };
    g_assert_false(jet_stream_info_from_member(NULL));
    g_assert_false(jet_stream_info_from_member(&si));
    si.Cluster = &ci;
    ci.Leader = leader;
    g_assert_false(jet_stream_info_from_member(&si));
    ci.Replicas = from_leader;
    ci.ReplicasLen = 2;
    g_assert_false(jet_stream_info_from_member(&si));
    ci.Replicas = from_member;
    g_assert_true(jet_stream_info_from_member(&si));
    ci.ReplicasLen = 0;
    ci.Leader = empty;
    g_assert_true(jet_stream_info_from_member(&si));
    ci.Leader = NULL;
    g_assert_true(jet_stream_info_from_member(&si));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/server-json/time-shapes", test_time_shapes);
    g_test_add_func("/server-json/time-random", test_time_random);
    g_test_add_func("/server-json/time-member", test_time_member);
    g_test_add_func("/server-json/consumer-config", test_consumer_config_shapes);
    g_test_add_func("/server-json/info-config", test_info_config);
    g_test_add_func("/server-json/stream-info-leader", test_stream_info_leader);
    return g_test_run();
}
