/* Exclusive bindings (docs/exclusive.md) under `jethost run`: two hosts on
 * one config against a real nats-server.
 *
 *   one-handles      only the claim's holder handles; the other stands by
 *   kill-takeover    SIGKILL the holder: the standby handles new messages
 *                    within claim_ttl + one pull window (measured)
 *   term-handover    SIGTERM the holder: it releases its claim after its
 *                    drain, and the standby handles within ~1 s of its exit
 *
 * Each host runs the shipped `paced` plugin appending to a file of its own,
 * so what a host handled is the lines of its file. */
#include "harness.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#define TTL_MS 2000
#define HEARTBEAT_MS 500
#define STANDBY_POLL_MS 250

typedef struct {
    GSubprocess *proc;
    char *errlog;
    char *out;       /* paced's file */
} Host;

static char *config_for(const char *url, const char *out)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *plugin = jet_test_plugin_copy("paced");
    return g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n"
                           "[binding audit]\nplugin = %s\nstream = ORDERS\nconsumer = audit\n"
                           "subjects = orders.>\n"
                           "ack_wait = 2s\nexpires = 1s\nidle_heartbeat = 500ms\nfloor_age = 0\n"
                           "exclusive = true\nclaim_ttl = %ums\nclaim_heartbeat = %ums\n"
                           "option.path = %s\noption.rate = 0\n",
                           url, state, plugin, TTL_MS, HEARTBEAT_MS, out);
}

static void host_start(Host *h, const char *url, const char *name)
{
    g_autofree char *outname = g_strdup_printf("%s.jsonl", name);
    h->out = g_build_filename(jet_test_private_dir(), outname, NULL);
    g_autofree char *text = config_for(url, h->out);
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    g_autofree char *errfile = g_strdup_printf("%s.stderr", name);
    h->errlog = g_build_filename(jet_test_private_dir(), errfile, NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    h->proc = jet_test_jethost_spawn(h->errlog, args);
}

static void host_clear(Host *h)
{
    g_clear_object(&h->proc);
    g_clear_pointer(&h->errlog, g_free);
    g_clear_pointer(&h->out, g_free);
}

static guint file_lines(const char *path, const char *needle)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    return jet_test_count_lines(text, needle);
}

typedef struct {
    const char *path, *needle;
    guint n;
} LinesWait;

static gboolean lines_reached(gpointer data)
{
    LinesWait *w = data;
    return file_lines(w->path, w->needle) >= w->n;
}

static void wait_lines(const char *path, const char *needle, guint n, guint timeout_ms, const char *errlog)
{
    LinesWait w = { path, needle, n };
    if (!jet_test_wait_until(lines_reached, &w, timeout_ms)) {
        g_autofree char *log = NULL;
        g_file_get_contents(errlog, &log, NULL, NULL);
        g_error("%s: fewer than %u lines with '%s' after %u ms; log:\n%s", path, n, needle, timeout_ms,
                log != NULL ? log : "");
    }
}

/* Host A holds the claim, host B stands by (a handshake on their logs). */
static void start_pair(JetTestServer *srv, const char *test, Host *a, Host *b)
{
    /* Files of their own per test: the private directory is the process's. */
    g_autofree char *na = g_strdup_printf("%s-a", test), *nb = g_strdup_printf("%s-b", test);
    host_start(a, jet_test_server_url(srv), na);
    wait_lines(a->errlog, "event=claimed", 1, 20000, a->errlog);
    host_start(b, jet_test_server_url(srv), nb);
    wait_lines(b->errlog, "event=standing-by", 1, 20000, b->errlog);
}

static void publish(jsCtx *js, guint n);

/* A holds, B stands by, and A has handled five messages. */
static void pair_handling(JetTestServer *srv, jsCtx *js, const char *test, Host *a, Host *b)
{
    start_pair(srv, test, a, b);
    publish(js, 5);
    wait_lines(a->out, "\"stream_seq\"", 5, 20000, a->errlog);
}

static void publish(jsCtx *js, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *body = g_strdup_printf("m%u", i);
        jsErrCode jerr = 0;
        natsStatus s = js_Publish(NULL, js, "orders.x", body, (int)strlen(body), NULL, &jerr);
        if (s != NATS_OK)
            g_error("publish: %s (%s, err %d)", natsStatus_GetText(s), nats_GetLastError(NULL), (int)jerr);
    }
}

static void stop_host(Host *h)
{
    g_subprocess_send_signal(h->proc, SIGTERM);
    int rc = jet_test_jethost_wait(h->proc, 20000);
    if (rc != 0) {
        g_autofree char *log = NULL;
        g_file_get_contents(h->errlog, &log, NULL, NULL);
        g_error("jethost exited with %d:\n%s", rc, log != NULL ? log : "");
    }
}

static void test_one_handles(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    start_pair(srv, "one", &a, &b);
    publish(js, 30);
    wait_lines(a.out, "\"stream_seq\"", 30, 20000, a.errlog);
    /* B saw the claim renewed all along: it never pulled. */
    g_usleep(2 * TTL_MS * 1000);   /* long enough for a wrongful takeover to show */
    g_assert_cmpuint(file_lines(a.out, "\"stream_seq\""), ==, 30);
    g_assert_cmpuint(file_lines(b.out, "\"stream_seq\""), ==, 0);
    g_assert_cmpuint(file_lines(b.errlog, "event=taken-over"), ==, 0);
    g_assert_cmpuint(file_lines(b.errlog, "event=subscribed"), ==, 0);
    stop_host(&b);
    stop_host(&a);
    g_assert_cmpuint(file_lines(a.errlog, "event=claims-stopped"), ==, 1);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

static void test_kill_takeover(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    pair_handling(srv, js, "kill", &a, &b);

    gint64 t0 = g_get_monotonic_time();
    g_subprocess_send_signal(a.proc, SIGKILL);
    publish(js, 5);
    wait_lines(b.out, "\"stream_seq\"", 1, 20000, b.errlog);
    gint64 first_ms = (g_get_monotonic_time() - t0) / 1000;
    wait_lines(b.out, "\"stream_seq\"", 5, 20000, b.errlog);
    g_test_message("SIGKILL of the holder to the standby's first handled message: %" G_GINT64_FORMAT
                   " ms (claim_ttl %u ms, claim_heartbeat %u ms)", first_ms, TTL_MS, HEARTBEAT_MS);
    g_printerr("# kill-takeover: %" G_GINT64_FORMAT " ms\n", first_ms);
    /* Never before claim_ttl - heartbeat (A's last renewal was at most a
     * heartbeat before the kill); within claim_ttl + a standby poll + one
     * pull window (the engine's start and first pull: 1.5 s is generous). */
    g_assert_cmpint(first_ms, >=, TTL_MS - HEARTBEAT_MS);
    g_assert_cmpint(first_ms, <=, TTL_MS + STANDBY_POLL_MS + 1500);
    g_assert_cmpuint(file_lines(b.errlog, "event=taken-over"), ==, 1);
    g_assert_cmpint(jet_test_jethost_wait(a.proc, 5000), !=, 0);
    stop_host(&b);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

static void test_term_handover(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    pair_handling(srv, js, "term", &a, &b);

    gint64 t0 = g_get_monotonic_time();
    stop_host(&a);
    gint64 exited_ms = (g_get_monotonic_time() - t0) / 1000;
    g_assert_cmpuint(file_lines(a.errlog, "event=claim-released"), ==, 1);
    gint64 t1 = g_get_monotonic_time();
    publish(js, 5);
    wait_lines(b.out, "\"stream_seq\"", 5, 20000, b.errlog);
    gint64 handed_ms = (g_get_monotonic_time() - t1) / 1000;
    g_printerr("# term-handover: holder exited %" G_GINT64_FORMAT " ms after SIGTERM; standby handled all 5 "
               "%" G_GINT64_FORMAT " ms after that\n", exited_ms, handed_ms);
    /* Released, not expired: B claims at its next read (250 ms), then pulls. */
    g_assert_cmpint(handed_ms, <=, 1000 + STANDBY_POLL_MS);
    g_assert_cmpuint(file_lines(b.errlog, "event=claimed"), ==, 1);
    g_assert_cmpuint(file_lines(b.errlog, "event=taken-over"), ==, 0);
    g_assert_cmpuint(file_lines(a.out, "\"stream_seq\""), ==, 5);
    stop_host(&b);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/exclusive/one-handles", test_one_handles);
    g_test_add_func("/exclusive/kill-takeover", test_kill_takeover);
    g_test_add_func("/exclusive/term-handover", test_term_handover);
    return g_test_run();
}
