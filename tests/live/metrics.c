/* /metrics, /healthz and /readyz of a `jethost run`: exact counters after a
 * known run, the page as promtool reads it, a real Prometheus scraping it,
 * and readiness following a consumer that goes away and comes back. */
#include "harness.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <signal.h>
#include <string.h>

#define N_MSGS 20

typedef struct {
    SoupSession *session;
    char *base;                /* http://ADDR:PORT */
} Http;

/* GET base + path: the status, the body in *body (caller frees). */
static guint http_get(Http *h, const char *path, char **body)
{
    g_autofree char *url = g_strconcat(h->base, path, NULL);
    g_autoptr(SoupMessage) msg = soup_message_new("GET", url);
    g_autoptr(GError) err = NULL;
    g_autoptr(GBytes) bytes = soup_session_send_and_read(h->session, msg, NULL, &err);
    g_assert_no_error(err);
    if (body != NULL) {
        gsize len = 0;
        const char *data = g_bytes_get_data(bytes, &len);
        *body = g_strndup(data != NULL ? data : "", len);
    }
    return soup_message_get_status(msg);
}

/* The value of the sample `series` (name and labels exactly as printed),
 * -1 when the page has no such line. */
static double sample(const char *page, const char *series)
{
    g_autofree char *needle = g_strconcat("\n", series, " ", NULL);
    const char *p = strstr(page, needle);
    if (p == NULL)
        return -1;
    return g_ascii_strtod(p + strlen(needle), NULL);
}

typedef struct {
    Http *h;
    const char *series;
    double want;
} SampleWait;

static gboolean sample_is(gpointer data)
{
    SampleWait *w = data;
    g_autofree char *page = NULL;
    if (http_get(w->h, "/metrics", &page) != 200)
        return FALSE;
    return sample(page, w->series) == w->want;
}

static gboolean sample_at_least(gpointer data)
{
    SampleWait *w = data;
    g_autofree char *page = NULL;
    if (http_get(w->h, "/metrics", &page) != 200)
        return FALSE;
    return sample(page, w->series) >= w->want;
}

typedef struct {
    Http *h;
    guint status;
    char *body;
} ReadyWait;

static gboolean ready_is(gpointer data)
{
    ReadyWait *w = data;
    g_free(w->body);
    w->body = NULL;
    return http_get(w->h, "/readyz", &w->body) == w->status;
}

typedef struct {
    const char *path;
    const char *needle;
    char *found;               /* the text after needle up to the end of the token */
    const char *stop;          /* characters that end it */
} LogWait;

static gboolean log_has(gpointer data)
{
    LogWait *w = data;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(w->path, &text, NULL, NULL))
        return FALSE;
    const char *p = strstr(text, w->needle);
    if (p == NULL)
        return FALSE;
    p += strlen(w->needle);
    w->found = g_strndup(p, strcspn(p, w->stop));
    return TRUE;
}

/* Runs argv with stdin from in (may be NULL): exit status, output in *out. */
static int run_tool(const char *const *argv, const char *in, char **out)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                          G_SUBPROCESS_FLAGS_STDERR_MERGE, &err);
    g_assert_no_error(err);
    g_assert_true(g_subprocess_communicate_utf8(p, in, NULL, out, NULL, &err));
    g_assert_no_error(err);
    return g_subprocess_get_exit_status(p);
}

static void create_audit_consumer(jsCtx *js)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "audit";
    cc.AckPolicy = js_AckExplicit;
    cc.DeliverPolicy = js_DeliverAll;
    cc.AckWait = (int64_t)30 * 1000000000;
    cc.MaxDeliver = 10;
    cc.MaxAckPending = 1000;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    g_assert_cmpint(js_AddConsumer(&ci, js, "ORDERS", &cc, NULL, &jerr), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);
}

/* nats-server 2.9 may fail a delete while it writes the consumer's state
 * ("directory not empty"): asked again, it completes it. */
static void delete_consumer(jsCtx *js, const char *name)
{
    gint64 until = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    for (;;) {
        jsErrCode jerr = 0;
        natsStatus s = js_DeleteConsumer(js, "ORDERS", name, NULL, &jerr);
        if (s == NATS_OK || (jerr == JSConsumerNotFoundErr && g_get_monotonic_time() < until))
            return;
        if (g_get_monotonic_time() > until)
            g_error("delete %s: %s (%d) %s", name, natsStatus_GetText(s), (int)jerr, nats_GetLastError(NULL));
        g_test_message("delete %s: %s (%d), again", name, natsStatus_GetText(s), (int)jerr);
    }
}

/* A real Prometheus scrapes the host until its query API shows the target
 * up and a jethost counter above 0. */
static void prometheus_scrapes(const char *target)
{
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "prometheus", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *yml = g_strdup_printf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                           "scrape_configs:\n  - job_name: jethost\n    static_configs:\n"
                                           "      - targets: ['%s']\n", target);
    g_autofree char *conf = g_build_filename(dir, "prometheus.yml", NULL);
    g_assert_true(g_file_set_contents(conf, yml, -1, NULL));
    g_autofree char *data = g_build_filename(dir, "data", NULL);
    g_autofree char *log = g_build_filename(dir, "prometheus.log", NULL);
    g_autofree char *a_conf = g_strconcat("--config.file=", conf, NULL);
    g_autofree char *a_data = g_strconcat("--storage.tsdb.path=", data, NULL);
    const char *argv[] = { "prometheus", a_conf, a_data, "--web.listen-address=127.0.0.1:0", NULL };
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
    g_subprocess_launcher_set_stderr_file_path(l, log);
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) prom = g_subprocess_launcher_spawnv(l, argv, &err);
    g_assert_no_error(err);

    /* Port 0 is honoured and the port taken is logged: nothing guessed. */
    g_autofree char *address = jet_test_prometheus_address(log, 20000);
    g_assert_nonnull(address);
    g_autofree char *base = g_strconcat("http://", address, NULL);
    g_test_message("prometheus at %s", base);

    g_autoptr(SoupSession) session = soup_session_new();
    Http ph = { session, base };
    const char *queries[] = { "up", "jethost_messages_acked_total", "jethost_plugin_handled_total" };
    for (gsize q = 0; q < G_N_ELEMENTS(queries); q++) {
        g_autofree char *path = g_strconcat("/api/v1/query?query=", queries[q], NULL);
        gboolean ok = FALSE;
        gint64 until = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
        while (!ok && g_get_monotonic_time() < until) {
            g_autofree char *body = NULL;
            if (http_get(&ph, path, &body) == 200) {
                g_autoptr(JsonParser) jp = json_parser_new();
                g_assert_true(json_parser_load_from_data(jp, body, -1, NULL));
                JsonObject *o = json_node_get_object(json_parser_get_root(jp));
                JsonArray *res = json_object_get_array_member(json_object_get_object_member(o, "data"), "result");
                for (guint i = 0; i < json_array_get_length(res) && !ok; i++) {
                    JsonObject *r = json_array_get_object_element(res, i);
                    JsonArray *v = json_object_get_array_member(r, "value");
                    double val = g_ascii_strtod(json_array_get_string_element(v, 1), NULL);
                    ok = q == 0 ? val == 1 : val > 0;
                    if (ok)
                        g_test_message("prometheus: %s = %s", queries[q], json_array_get_string_element(v, 1));
                }
            }
            if (!ok)
                g_usleep(100000);   /* polling the query API, not waiting for a result */
        }
        if (!ok) {
            g_autofree char *text = jet_test_read_text(log);
            g_error("prometheus never showed %s; its log:\n%s", queries[q], text);
        }
    }
    g_subprocess_force_exit(prom);
    g_assert_true(g_subprocess_wait(prom, NULL, NULL));
}

static void test_metrics(void)
{
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    create_audit_consumer(js);
    jet_test_publish_n(js, "orders.new", N_MSGS);

    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "gate", NULL);
    g_autofree char *dir2 = g_build_filename(jet_test_private_dir(), "gate2", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_assert_cmpint(g_mkdir(dir2, 0700), ==, 0);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    /* Two bindings on one stream: orders (managed) rejects seqs 3 and 7;
     * audit (bound to the test's consumer) acks everything. */
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nstate_dir = %s\nmetrics_listen = 127.0.0.1:0\n\n"
        "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\nbatch = 5\nexpires = 1s\n"
        "idle_heartbeat = 250ms\nfloor_age = 1h\noption.dir = %s\noption.seq_verdicts = 3=reject,7=reject\n\n"
        "[binding audit]\nplugin = %s\nstream = ORDERS\nconsumer = audit\nmanage = bind\nexpires = 1s\n"
        "idle_heartbeat = 250ms\nack_wait = 30s\nmax_deliver = 10\nmax_ack_pending = 1000\noption.dir = %s\n",
        jet_test_server_url(srv), state, plugin, dir, plugin, dir2);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_config("metrics", text, &errlog);

    LogWait lw = { errlog, "event=metrics-listening msg=\"serving /metrics, /healthz and /readyz at ", NULL, "\"" };
    g_assert_true(jet_test_wait_until(log_has, &lw, 20000));
    g_autoptr(SoupSession) session = soup_session_new();
    Http h = { session, lw.found };
    g_test_message("jethost at %s", h.base);

    /* The known run: N_MSGS handled, two rejected and captured. */
    JetTestFloorWait fw = { js, "ORDERS", "billing", N_MSGS };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 20000));
    SampleWait sw = { &h, "jethost_messages_acked_total{binding=\"orders\"}", N_MSGS - 2 };
    g_assert_true(jet_test_wait_until(sample_is, &sw, 5000));
    SampleWait sw2 = { &h, "jethost_messages_acked_total{binding=\"audit\"}", N_MSGS };
    g_assert_true(jet_test_wait_until(sample_is, &sw2, 20000));
    /* The gauges come from the lease keeper's next read of consumer info. */
    SampleWait sw3 = { &h, "jethost_ack_floor{binding=\"orders\"}", N_MSGS };
    g_assert_true(jet_test_wait_until(sample_is, &sw3, 10000));
    SampleWait sw4 = { &h, "jethost_consumer_num_ack_pending{binding=\"orders\"}", 0 };
    g_assert_true(jet_test_wait_until(sample_is, &sw4, 10000));

    g_autofree char *page = NULL;
    g_assert_cmpuint(http_get(&h, "/metrics", &page), ==, 200);
    g_test_message("%s", page);
    static const struct { const char *series; double value; } exact[] = {
        { "jethost_messages_handled_total{binding=\"orders\"}", N_MSGS },
        { "jethost_messages_acked_total{binding=\"orders\"}", N_MSGS - 2 },
        { "jethost_messages_dead_lettered_total{binding=\"orders\",cause=\"rejected\"}", 2 },
        { "jethost_messages_dead_lettered_total{binding=\"orders\",cause=\"exhausted\"}", 0 },
        { "jethost_messages_dead_lettered_total{binding=\"orders\",cause=\"max-deliveries\"}", 0 },
        { "jethost_messages_retried_total{binding=\"orders\"}", 0 },
        { "jethost_messages_postponed_total{binding=\"orders\"}", 0 },
        { "jethost_messages_released_total{binding=\"orders\"}", 0 },
        { "jethost_messages_stranded_total{binding=\"orders\"}", 0 },
        { "jethost_messages_uncertain_total{binding=\"orders\"}", 0 },
        { "jethost_crash_strikes_total{binding=\"orders\"}", 0 },
        { "jethost_consumer_recreations_total{binding=\"orders\"}", 0 },
        { "jethost_messages_in_handlers{binding=\"orders\"}", 0 },
        { "jethost_messages_buffered{binding=\"orders\"}", 0 },
        { "jethost_consumer_num_pending{binding=\"orders\"}", 0 },
        { "jethost_floor_stalled{binding=\"orders\"}", 0 },
        { "jethost_floor_stall_seconds{binding=\"orders\"}", 0 },
        { "jethost_binding_ready{binding=\"orders\"}", 1 },
        { "jethost_binding_standby{binding=\"orders\"}", 0 },
        { "jethost_handler_seconds_count{binding=\"orders\"}", N_MSGS },
        { "jethost_handler_seconds_bucket{binding=\"orders\",le=\"+Inf\"}", N_MSGS },
        { "jethost_publish_to_handle_seconds_count{binding=\"orders\"}", N_MSGS },
        { "jethost_messages_handled_total{binding=\"audit\"}", N_MSGS },
        { "jethost_messages_dead_lettered_total{binding=\"audit\",cause=\"rejected\"}", 0 },
        { "jethost_reconnects_total", 0 },
        /* fx_gate's own metrics (docs/plugin-metrics.md): one worker, so
         * the last seq it saw is the last of the stream. */
        { "jethost_plugin_handled_total{binding=\"orders\"}", N_MSGS },
        { "jethost_plugin_handled_total{binding=\"audit\"}", N_MSGS },
        { "jethost_plugin_last_seq{binding=\"orders\"}", N_MSGS },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(exact); i++) {
        double v = sample(page, exact[i].series);
        if (v != exact[i].value)
            g_error("%s: %g, want %g", exact[i].series, v, exact[i].value);
    }
    g_assert_cmpfloat(sample(page, "jethost_pulls_total{binding=\"orders\"}"), >=, N_MSGS / 5);

    /* The exposition as Prometheus's own linter reads it. */
    g_autofree char *lint = NULL;
    const char *promtool[] = { "promtool", "check", "metrics", NULL };
    int rc = run_tool(promtool, page, &lint);
    if (rc != 0)
        g_error("promtool check metrics: exit %d:\n%s", rc, lint);

    g_autofree char *body = NULL;
    g_assert_cmpuint(http_get(&h, "/healthz", &body), ==, 200);
    g_assert_cmpstr(body, ==, "ok\n");
    ReadyWait rw = { &h, 200, NULL };
    g_assert_true(jet_test_wait_until(ready_is, &rw, 5000));
    g_assert_cmpuint(http_get(&h, "/nothing", NULL), ==, 404);

    prometheus_scrapes(h.base + strlen("http://"));

    /* A bound consumer deleted: not ready, naming it and why, until the
     * operator puts it back. */
    delete_consumer(js, "audit");
    rw.status = 503;
    g_assert_true(jet_test_wait_until(ready_is, &rw, 10000));
    g_test_message("readyz: %s", rw.body);
    g_autoptr(JsonParser) jp = json_parser_new();
    g_assert_true(json_parser_load_from_data(jp, rw.body, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(jp));
    g_assert_false(json_object_get_boolean_member(o, "ready"));
    JsonArray *nb = json_object_get_array_member(o, "bindings");
    g_assert_cmpuint(json_array_get_length(nb), ==, 1);
    JsonObject *b0 = json_array_get_object_element(nb, 0);
    g_assert_cmpstr(json_object_get_string_member(b0, "binding"), ==, "audit");
    g_assert_cmpstr(json_object_get_string_member(b0, "reason"), ==, "consumer being re-created");
    g_assert_cmpuint(http_get(&h, "/healthz", NULL), ==, 200);   /* alive all the same */
    create_audit_consumer(js);
    rw.status = 200;
    g_assert_true(jet_test_wait_until(ready_is, &rw, 15000));

    /* A managed consumer deleted: the host re-creates it and counts it. */
    delete_consumer(js, "billing");
    SampleWait sw5 = { &h, "jethost_consumer_recreations_total{binding=\"orders\"}", 1 };
    g_assert_true(jet_test_wait_until(sample_at_least, &sw5, 15000));
    g_assert_true(jet_test_wait_until(ready_is, &rw, 15000));
    g_free(rw.body);

    jet_test_jethost_stop(host, errlog);
    g_free(lw.found);
    jet_test_js_close(nc, js);
    g_test_message("took %.1f s", (double)(g_get_monotonic_time() - t0) / 1e6);
}

/* The sample alert rules in the docs load as Prometheus loads them. */
static void test_alert_rules(void)
{
    g_autofree char *rules = g_build_filename(JET_TEST_SRCDIR, "docs", "examples", "jethost-alerts.yml", NULL);
    g_autofree char *out = NULL;
    const char *argv[] = { "promtool", "check", "rules", rules, NULL };
    int rc = run_tool(argv, NULL, &out);
    g_test_message("%s", out);
    g_assert_cmpint(rc, ==, 0);
}

static void test_bad_listen(void)
{
    /* A listener that cannot bind fails the host before anything is pulled. */
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    g_autoptr(GSocket) s = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(lo, 0);
    g_assert_true(g_socket_bind(s, any, FALSE, NULL));
    g_assert_true(g_socket_listen(s, NULL));
    g_autoptr(GSocketAddress) bound = g_socket_get_local_address(s, NULL);
    guint16 port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
    g_autofree char *plugin = jet_test_plugin_copy("fx_ok");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state-bad", NULL);
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\nmetrics_listen = 127.0.0.1:%u\n\n"
                                            "[binding b]\nplugin = %s\nstream = S\nconsumer = c\nsubjects = s.>\n",
                                            jet_test_server_url(srv), state, port, plugin);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_config("badlisten", text, &errlog);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 1);
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_nonnull(strstr(log, "metrics_listen 127.0.0.1:"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/metrics/run", test_metrics);
    g_test_add_func("/metrics/alert-rules", test_alert_rules);
    g_test_add_func("/metrics/bad-listen", test_bad_listen);
    return g_test_run();
}
