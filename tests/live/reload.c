/* SIGHUP reloads `jethost run`'s config against a real nats-server: an
 * unchanged binding is never touched (no NAK on the wire, handled straight
 * through), a changed one drains and restarts, a new one starts, a removed
 * one drains and its plugin's fini() runs; an invalid config changes
 * nothing; SIGHUPs in a row are safe; SIGTERM during a reload drains. */
#include "harness.h"
#include "ack_subject.h"
#include "msg_payload.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <utime.h>

/* Every NAK (any body) the host sends on one consumer's ack subjects. */
typedef struct {
    GMutex lock;
    guint naks;
} NakSpy;

static void nak_spy_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    NakSpy *spy = closure;
    (void)nc;
    (void)sub;
    gsize len = 0;
    const char *body = jet_msg_payload(m, &len);
    if (len >= 4 && memcmp(body, "-NAK", 4) == 0) {
        g_mutex_lock(&spy->lock);
        spy->naks++;
        g_mutex_unlock(&spy->lock);
    }
    natsMsg_Destroy(m);
}

static natsSubscription *nak_spy_start(natsConnection *nc, const char *subject, NakSpy *spy)
{
    natsSubscription *sub = NULL;
    g_mutex_init(&spy->lock);
    g_assert_cmpint(natsConnection_Subscribe(&sub, nc, subject, nak_spy_msg, spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
    return sub;
}

static guint nak_spy_end(natsConnection *nc, natsSubscription *sub, NakSpy *spy)
{
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_Drain(sub), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_WaitForDrainCompletion(sub, 10000), ==, NATS_OK);
    natsSubscription_Destroy(sub);
    guint n = spy->naks;
    g_mutex_clear(&spy->lock);
    return n;
}

static char *gate_dir(const char *name)
{
    char *dir = g_build_filename(jet_test_private_dir(), name, NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    return dir;
}

static guint count_lines(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    guint n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

static guint handled(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    return count_lines(path);
}

typedef struct {
    const char *path;
    const char *needle;
    guint n;
} LogWait;

static gboolean log_has(gpointer data)
{
    LogWait *w = data;
    g_autofree char *text = NULL;
    return g_file_get_contents(w->path, &text, NULL, NULL) && jet_test_count_lines(text, w->needle) >= w->n;
}

static void wait_log(const char *errlog, const char *needle, guint n)
{
    LogWait w = { errlog, needle, n };
    if (!jet_test_wait_until(log_has, &w, 30000)) {
        g_autofree char *text = NULL;
        g_file_get_contents(errlog, &text, NULL, NULL);
        g_test_message("log:\n%s", text);
        g_assert_true(!"log line never came");
    }
}

static gboolean keep_started(gpointer data)
{
    LogWait *w = data;
    return handled(w->path) >= w->n;
}

static void wait_floor(jsCtx *js, const char *stream, const char *consumer, guint64 floor)
{
    JetTestFloorWait fw = { js, stream, consumer, floor };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 30000));
}

/* Each seq of handled.log handled once, at its first delivery: nothing was
 * released or redelivered. */
static void assert_each_once(const char *dir, guint n)
{
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = jet_test_read_text(path);
    g_autofree guint *seen = g_new0(guint, n + 1);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        char *end = NULL;
        guint64 seq = g_ascii_strtoull(*l, &end, 10);
        g_assert_cmpuint(seq, >=, 1);
        g_assert_cmpuint(seq, <=, n);
        g_assert_cmpuint(g_ascii_strtoull(end, NULL, 10), ==, 1);
        seen[seq]++;
    }
    for (guint s = 1; s <= n; s++)
        g_assert_cmpuint(seen[s], ==, 1);
}

static char *host_group(const char *url)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    return g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\n\n", url, state);
}

static char *binding_group(const char *name, const char *stream, const char *plugin, const char *dir,
                           const char *extra)
{
    return g_strdup_printf("[binding %s]\nplugin = %s\nstream = %s\nconsumer = %s\noption.dir = %s\n%s\n", name,
                           plugin, stream, name, dir, extra);
}

static void test_mixed(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "KEEP", "keep.>");
    jet_test_stream_create(js, "CHG", "chg.>");
    jet_test_stream_create(js, "NEW", "new.>");
    jet_test_stream_create(js, "GONE", "gone.>");
    NakSpy spy = { 0 };
    natsSubscription *naks = nak_spy_start(nc, "$JS.ACK.KEEP.keep.>", &spy);

    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *dkeep = gate_dir("keep"), *dchg = gate_dir("chg"), *dnew = gate_dir("new"),
                    *dgone = gate_dir("gone");
    g_autofree char *dropins = gate_dir("conf.d");
    g_autofree char *host = host_group(jet_test_server_url(srv));
    /* keep is slow enough to be mid-stream when the reload comes. */
    g_autofree char *keep = binding_group("keep", "KEEP", plugin, dkeep, "batch = 10\noption.sleep = 20ms\n");
    g_autofree char *chg1 = binding_group("chg", "CHG", plugin, dchg, "batch = 10\n");
    g_autofree char *gone = binding_group("gone", "GONE", plugin, dgone, "option.fini_marker = true\n");
    g_autofree char *text1 = g_strconcat(host, keep, chg1, gone, NULL);
    g_autofree char *conf = jet_test_write_file("mixed.conf", text1);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "mixed.stderr", NULL);
    const char *args[] = { "run", "-c", conf, "-d", dropins, NULL };
    g_autoptr(GSubprocess) proc = jet_test_jethost_spawn(errlog, args);

    jet_test_publish_n(js, "keep.x", 300);
    jet_test_publish_n(js, "chg.x", 20);
    jet_test_publish_n(js, "gone.x", 20);
    wait_floor(js, "CHG", "chg", 20);
    wait_floor(js, "GONE", "gone", 20);
    LogWait some = { dkeep, NULL, 20 };
    g_assert_true(jet_test_wait_until(keep_started, &some, 30000));

    /* One reload: keep as it was, chg changed, gone removed, new added in a
     * drop-in. */
    g_autofree char *chg2 = binding_group("chg", "CHG", plugin, dchg, "batch = 5\noption.sleep = 1ms\n");
    g_autofree char *text2 = g_strconcat(host, keep, chg2, NULL);
    g_assert_true(g_file_set_contents(conf, text2, -1, NULL));
    g_autofree char *added = binding_group("new", "NEW", plugin, dnew, "");
    g_autofree char *dropin = g_build_filename(dropins, "new.conf", NULL);
    g_assert_true(g_file_set_contents(dropin, added, -1, NULL));
    guint before = handled(dkeep);
    gint64 t0 = g_get_monotonic_time();
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "unchanged 1, restarted 1, started 1, stopped 1, failed 0", 1);
    g_test_message("reload took %" G_GINT64_FORMAT " ms; keep had handled %u of 300 at SIGHUP",
                   (g_get_monotonic_time() - t0) / 1000, before);
    g_assert_cmpuint(before, <, 300);   /* the reload came mid-stream */
    g_autofree char *fini = g_build_filename(dgone, "fini", NULL);
    g_assert_true(g_file_test(fini, G_FILE_TEST_EXISTS));
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=chg event=restarting"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=gone event=removing"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=gone event=stopped"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=keep event=stopped"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=keep event=restarting"), ==, 0);

    jet_test_publish_n(js, "chg.x", 20);
    jet_test_publish_n(js, "new.x", 20);
    jet_test_publish_n(js, "gone.x", 20);
    wait_floor(js, "CHG", "chg", 40);
    wait_floor(js, "NEW", "new", 20);
    wait_floor(js, "KEEP", "keep", 300);
    g_assert_cmpuint(handled(dchg), ==, 40);
    g_assert_cmpuint(handled(dnew), ==, 20);
    /* gone handles nothing more: its 20 new messages wait on the server. */
    g_usleep(500 * 1000);
    g_assert_cmpuint(handled(dgone), ==, 20);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "GONE", "gone");
    g_assert_cmpuint(ci->NumPending, ==, 20);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    jsConsumerInfo_Destroy(ci);

    /* SIGHUPs in a row, nothing changed (the kernel may merge them into
     * one): reloads that touch nothing. */
    jet_test_publish_n(js, "keep.x", 50);
    g_subprocess_send_signal(proc, SIGHUP);
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "unchanged 3, restarted 0, started 0, stopped 0, failed 0", 1);
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "unchanged 3, restarted 0, started 0, stopped 0, failed 0", 2);
    wait_floor(js, "KEEP", "keep", 350);
    assert_each_once(dkeep, 350);

    jet_test_jethost_stop(proc, errlog);
    g_free(log);
    log = jet_test_read_text(errlog);
    g_assert_nonnull(strstr(log, "event=exit msg=\"drained; exiting: handled "));
    g_assert_nonnull(strstr(log, ", dead-lettered 0 (and 0 captured"));
    /* The unchanged binding never released a message: no NAK on the wire. */
    g_assert_cmpuint(nak_spy_end(nc, naks, &spy), ==, 0);
    jet_test_js_close(nc, js);
}

static void test_invalid_changes_nothing(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "KEEP", "keep.>");
    NakSpy spy = { 0 };
    natsSubscription *naks = nak_spy_start(nc, "$JS.ACK.KEEP.keep.>", &spy);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *dkeep = gate_dir("inv-keep");
    g_autofree char *host = host_group(jet_test_server_url(srv));
    g_autofree char *keep = binding_group("keep", "KEEP", plugin, dkeep, "option.sleep = 10ms\n");
    g_autofree char *text = g_strconcat(host, keep, NULL);
    g_autofree char *conf = jet_test_write_file("invalid.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "invalid.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) proc = jet_test_jethost_spawn(errlog, args);
    jet_test_publish_n(js, "keep.x", 200);
    /* Before its handler is in place a SIGHUP ends the process, as any. */
    wait_log(errlog, "event=running", 1);

    struct {
        const char *text;
        const char *why;
    } bad[] = {
        { "bogus = 1\n", "bogus: unknown key" },
        { "option.sleep = soon\n", "[binding keep]" },
        { "option.nope = 1\n", "nope" },
        { "max_time_to_dead_letter = 1s\n", "max-time-exceeded" },
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *broken = binding_group("keep", "KEEP", plugin, dkeep, bad[i].text);
        g_autofree char *t = g_strconcat(host, broken, NULL);
        g_assert_true(g_file_set_contents(conf, t, -1, NULL));
        g_subprocess_send_signal(proc, SIGHUP);
        wait_log(errlog, "event=reload-refused", i + 1);
        g_autofree char *log = jet_test_read_text(errlog);
        g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
        const char *last = NULL;
        for (char **l = lines; *l != NULL; l++)
            if (strstr(*l, "event=reload-refused") != NULL)
                last = *l;
        g_test_message("%s", last);
        g_assert_nonnull(strstr(last, conf));
        g_assert_nonnull(strstr(last, bad[i].why));
    }
    /* [host] that needs another connection: refused, saying restart. */
    g_autofree char *other = g_strdup_printf("[host]\nserver = nats://127.0.0.1:1\n\n%s", keep);
    g_assert_true(g_file_set_contents(conf, other, -1, NULL));
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "event=reload-refused", G_N_ELEMENTS(bad) + 1);
    wait_log(errlog, "[host] server changed: a running host cannot apply it, restart", 1);
    /* The plugin file rewritten in place: the loaded code cannot be
     * replaced, so nothing is, and the line says to restart. */
    g_assert_true(g_file_set_contents(conf, text, -1, NULL));
    struct utimbuf times = { 1000000000, 1000000000 };
    g_assert_cmpint(g_utime(plugin, &times), ==, 0);
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "event=reload-refused", G_N_ELEMENTS(bad) + 2);
    wait_log(errlog, "changed on disk since it was loaded: a loaded plugin cannot be replaced, restart", 1);

    wait_floor(js, "KEEP", "keep", 200);
    assert_each_once(dkeep, 200);
    jet_test_jethost_stop(proc, errlog);
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "event=reloaded"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "event=restarting"), ==, 0);
    g_assert_cmpuint(nak_spy_end(nc, naks, &spy), ==, 0);
    jet_test_js_close(nc, js);
}

static void test_sigterm_during_reload(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "CHG", "chg.>");
    jet_test_publish_n(js, "chg.x", 20);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *dir = gate_dir("term");
    g_autofree char *host = host_group(jet_test_server_url(srv));
    g_autofree char *chg1 = binding_group("chg", "CHG", plugin, dir, "batch = 10\noption.block_seq = 5\n");
    g_autofree char *text = g_strconcat(host, chg1, NULL);
    g_autofree char *conf = jet_test_write_file("term.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "term.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) proc = jet_test_jethost_spawn(errlog, args);

    /* Message 5 is in the handler: the reload's drain of chg waits for it. */
    g_autofree char *inflight = g_build_filename(dir, "inflight-5", NULL);
    g_assert_true(jet_test_wait_file(inflight, 30000));
    g_autofree char *chg2 = binding_group("chg", "CHG", plugin, dir, "batch = 5\noption.block_seq = 5\n");
    g_autofree char *text2 = g_strconcat(host, chg2, NULL);
    g_assert_true(g_file_set_contents(conf, text2, -1, NULL));
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "binding=chg event=restarting", 1);
    /* Another SIGHUP while that reload drains: queued, not run alongside. */
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "event=reload-queued", 1);
    g_subprocess_send_signal(proc, SIGTERM);
    wait_log(errlog, "event=draining", 1);
    g_autofree char *go = g_build_filename(dir, "go-5", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    g_assert_cmpint(jet_test_jethost_wait(proc, 20000), ==, 0);

    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "event=reloaded"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=chg event=stopped"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=chg event=started"), ==, 0);
    g_assert_nonnull(strstr(log, "released 5,"));
    g_assert_cmpuint(handled(dir), ==, 5);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "CHG", "chg");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 5);
    jsConsumerInfo_Destroy(ci);
    jet_test_js_close(nc, js);
}

/* A reload that restarts a binding mid-stream is no crash: what the old
 * engine released comes back explained (its releases are recorded), so
 * the new one handles it normally: no suspect, no careful mode, each
 * message once. */
static void test_restart_mid_stream(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "CHG", "chg.>");
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *dchg = gate_dir("restart");
    g_autofree char *host = host_group(jet_test_server_url(srv));
    g_autofree char *chg1 = binding_group("chg", "CHG", plugin, dchg, "batch = 10\nworkers = 2\noption.sleep = 20ms\n");
    g_autofree char *text1 = g_strconcat(host, chg1, NULL);
    g_autofree char *conf = jet_test_write_file("restart.conf", text1);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "restart.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) proc = jet_test_jethost_spawn(errlog, args);
    jet_test_publish_n(js, "chg.x", 200);
    LogWait some = { dchg, NULL, 30 };
    g_assert_true(jet_test_wait_until(keep_started, &some, 30000));
    g_autofree char *chg2 = binding_group("chg", "CHG", plugin, dchg, "batch = 10\nworkers = 2\noption.sleep = 5ms\n");
    g_autofree char *text2 = g_strconcat(host, chg2, NULL);
    g_assert_true(g_file_set_contents(conf, text2, -1, NULL));
    guint before = handled(dchg);
    g_subprocess_send_signal(proc, SIGHUP);
    wait_log(errlog, "unchanged 0, restarted 1, started 0, stopped 0, failed 0", 1);
    wait_floor(js, "CHG", "chg", 200);
    jet_test_jethost_stop(proc, errlog);
    g_assert_cmpuint(before, <, 200);
    /* Each once; what the reload released comes back as a second delivery. */
    g_autofree char *path = g_build_filename(dchg, "handled.log", NULL);
    g_autofree char *text = jet_test_read_text(path);
    g_autofree guint *seen = g_new0(guint, 201);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        guint64 seq = g_ascii_strtoull(*l, NULL, 10);
        g_assert_cmpuint(seq, >=, 1);
        g_assert_cmpuint(seq, <=, 200);
        seen[seq]++;
    }
    for (guint i = 1; i <= 200; i++)
        g_assert_cmpuint(seen[i], ==, 1);
    g_autofree char *log = jet_test_read_text(errlog);
    g_test_message("handled %u of 200 at SIGHUP", before);
    /* The new engine found what the old one released, and knew it. */
    g_assert_cmpuint(jet_test_count_lines(log, "binding=chg event=restart-released"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=chg event=suspect"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=chg event=careful"), ==, 0);
    jet_test_js_close(nc, js);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/reload/mixed", test_mixed);
    g_test_add_func("/reload/invalid-changes-nothing", test_invalid_changes_nothing);
    g_test_add_func("/reload/sigterm-during-reload", test_sigterm_during_reload);
    g_test_add_func("/reload/restart-mid-stream", test_restart_mid_stream);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
