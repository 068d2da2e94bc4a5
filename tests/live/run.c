/* `jethost run` end to end against a real nats-server: the template plugin
 * acks 1,000 messages once each, in order; SIGTERM while a message is in the
 * handler acks it and leaves the rest; the embedded server handles a
 * published message and leaves no process behind. */
#include "harness.h"
#include "ack_subject.h"
#include "msg_payload.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <sys/stat.h>
#include <string.h>

static char *config_for(const char *url, const char *plugin, const char *extra)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    return g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\n\n"
                           "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\n%s",
                           url, state, plugin, extra);
}

static void test_thousand_acked_in_order(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_publish_n(js, "orders.new", 1000);

    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin, "option.log_every = 1\nbatch = 10\n");
    g_autofree char *conf = jet_test_write_file("thousand.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "thousand.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);

    JetTestFloorWait fw = { js, "ORDERS", "billing", 1000 };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 60000));
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);

    /* The template logged every message: each seq once, in stream order. */
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    guint64 expect = 1;
    for (char **l = lines; *l != NULL; l++) {
        const char *p = strstr(*l, "orders.new seq ");
        if (p == NULL)
            continue;
        guint64 seq = g_ascii_strtoull(p + strlen("orders.new seq "), NULL, 10);
        g_assert_cmpuint(seq, ==, expect);
        g_assert_nonnull(strstr(p, "delivery 1"));
        expect++;
    }
    g_assert_cmpuint(expect, ==, 1001);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "billing");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 1000);
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    jet_test_js_close(nc, js);
}

/* Minor page faults of a process so far (/proc/PID/stat, field 10). */
static guint64 minor_faults(GSubprocess *proc)
{
    const char *pid = g_subprocess_get_identifier(proc);
    g_assert_nonnull(pid);   /* still running */
    g_autofree char *path = g_strdup_printf("/proc/%s/stat", pid);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    const char *p = strrchr(text, ')');   /* the name may hold spaces */
    g_assert_nonnull(p);
    g_auto(GStrv) f = g_strsplit(p + 2, " ", -1);
    g_assert_cmpuint(g_strv_length(f), >, 8);
    return g_ascii_strtoull(f[7], NULL, 10);   /* field 10: state is field 3 */
}

/* Large messages reuse the heap's pages: glibc's default trims the heap
 * whenever a batch of them is freed, so every page of the next batch was
 * faulted in again (up to 244 faults a 1 MB message, a third of the CPU).
 * Counted once the first batches ran, so start-up is not in it.  (A live
 * test: the sanitizer build, whose allocator is not glibc's, runs none.) */
static void test_large_messages_keep_pages(void)
{
    enum { N = 96, WARM = 16, SIZE = 1000 * 1000 };
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    g_autofree char *body = g_malloc0(SIZE);
    for (guint i = 0; i < WARM; i++)
        g_assert_cmpint(js_Publish(NULL, js, "orders.big", body, SIZE, NULL, NULL), ==, NATS_OK);

    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin, "batch = 10\n");
    g_autofree char *conf = jet_test_write_file("large.conf", text);
    g_unsetenv("GLIBC_TUNABLES");   /* an operator's malloc tunables would win over the host's */
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "large.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    JetTestFloorWait fw = { js, "ORDERS", "billing", WARM };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 60000));
    /* Idle now: what follows is counted from here. */
    guint64 warm = minor_faults(host);
    for (guint i = WARM; i < N; i++)
        g_assert_cmpint(js_Publish(NULL, js, "orders.big", body, SIZE, NULL, NULL), ==, NATS_OK);
    fw.floor = N;
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 60000));
    guint64 faults = minor_faults(host) - warm;
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
    guint64 pages = (guint64)(N - WARM) * SIZE / 4096;
    g_test_message("%" G_GUINT64_FORMAT " minor page faults while %u messages of %u bytes ran (%" G_GUINT64_FORMAT
                   " pages of payload; %" G_GUINT64_FORMAT " faults before)", faults, N - WARM, SIZE, pages, warm);
    g_assert_cmpuint(faults, <, pages / 8);
    jet_test_js_close(nc, js);
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

static gboolean log_says_draining(gpointer data)
{
    g_autofree char *text = NULL;
    return g_file_get_contents(data, &text, NULL, NULL) && strstr(text, "event=draining") != NULL;
}

/* Every "-NAK" the host sends on the consumer's ack subjects, by stream seq. */
typedef struct {
    GMutex lock;
    GArray *seqs;      /* guint64, in the order seen */
    guint other;       /* NAKs with a body other than a plain "-NAK" */
} NakSpy;

static void nak_spy_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    NakSpy *spy = closure;
    (void)nc;
    (void)sub;
    gsize len = 0;
    const char *body = jet_msg_payload(m, &len);
    JetAckMeta meta;
    if (len >= 4 && memcmp(body, "-NAK", 4) == 0 && jet_ack_subject_parse(natsMsg_GetSubject(m), &meta)) {
        g_mutex_lock(&spy->lock);
        if (len == 4)
            g_array_append_val(spy->seqs, meta.stream_seq);
        else
            spy->other++;
        g_mutex_unlock(&spy->lock);
    }
    natsMsg_Destroy(m);
}

static gboolean naks_seen(gpointer data)
{
    NakSpy *spy = data;
    g_mutex_lock(&spy->lock);
    gboolean ok = spy->seqs->len + spy->other >= 3;
    g_mutex_unlock(&spy->lock);
    return ok;
}

/* handled.log's delivery count for each stream seq, at its last line. */
static guint *last_deliveries(const char *path, guint n)
{
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    guint *d = g_new0(guint, n + 1);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        char *end = NULL;
        guint64 seq = g_ascii_strtoull(*l, &end, 10);
        g_assert_cmpuint(seq, >=, 1);
        g_assert_cmpuint(seq, <=, n);
        d[seq] = (guint)g_ascii_strtoull(end, NULL, 10);
    }
    return d;
}

static void test_sigterm_mid_stream(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_publish_n(js, "orders.new", 100);
    NakSpy spy = { .seqs = g_array_new(FALSE, FALSE, sizeof(guint64)) };
    g_mutex_init(&spy.lock);
    natsSubscription *naks = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&naks, nc, "$JS.ACK.ORDERS.billing.>", nak_spy_msg, &spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);

    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "gate", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *extra = g_strdup_printf("batch = 10\noption.dir = %s\noption.block_seq = 37\n", dir);
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin, extra);
    g_autofree char *conf = jet_test_write_file("sigterm.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "sigterm.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);

    /* Message 37 is in the handler: stop the host, then let it finish. */
    g_autofree char *inflight = g_build_filename(dir, "inflight-37", NULL);
    g_assert_true(jet_test_wait_file(inflight, 30000));
    g_subprocess_send_signal(host, SIGTERM);
    /* The host says it is draining before the handler is let go. */
    g_assert_true(jet_test_wait_until(log_says_draining, errlog, 20000));
    g_autofree char *go = g_build_filename(dir, "go-37", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);

    g_autofree char *handled = g_build_filename(dir, "handled.log", NULL);
    g_assert_cmpuint(count_lines(handled), ==, 37);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "billing");
    g_test_message("after drain: floor %" G_GUINT64_FORMAT ", ack pending %" G_GINT64_FORMAT ", pending %" G_GUINT64_FORMAT,
                   ci->AckFloor.Stream, ci->NumAckPending, ci->NumPending);
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 37);
    /* 38..40 came with 37's pull and were released at once, not left for AckWait. */
    g_assert_cmpint(ci->NumAckPending, ==, 3);
    jsConsumerInfo_Destroy(ci);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "released 3,"));
    /* Released means a plain NAK of each, on the wire, from the drain. */
    g_assert_true(jet_test_wait_until(naks_seen, &spy, 10000));
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
    g_mutex_lock(&spy.lock);
    g_assert_cmpuint(spy.other, ==, 0);
    g_assert_cmpuint(spy.seqs->len, ==, 3);
    for (guint i = 0; i < 3; i++)
        g_assert_cmpuint(g_array_index(spy.seqs, guint64, i), ==, 38 + i);
    g_mutex_unlock(&spy.lock);

    /* The released messages and the rest are all handled after a restart. */
    g_autofree char *extra2 = g_strdup_printf("batch = 10\noption.dir = %s\n", dir);
    g_autofree char *text2 = config_for(jet_test_server_url(srv), plugin, extra2);
    g_autofree char *conf2 = jet_test_write_file("sigterm2.conf", text2);
    const char *args2[] = { "run", "-c", conf2, NULL };
    g_autoptr(GSubprocess) host2 = jet_test_jethost_spawn(errlog, args2);
    /* Well within AckWait (30 s): the released messages were not waiting for it. */
    JetTestFloorWait fw = { js, "ORDERS", "billing", 100 };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 15000));
    g_subprocess_send_signal(host2, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host2, 20000), ==, 0);
    g_assert_cmpuint(count_lines(handled), ==, 100);
    /* The released ones came back at their second delivery; the rest were
     * delivered once. */
    g_autofree guint *d = last_deliveries(handled, 100);
    for (guint seq = 1; seq <= 100; seq++)
        g_assert_cmpuint(d[seq], ==, seq >= 38 && seq <= 40 ? 2 : 1);
    /* No callback may outlive the spy's state. */
    g_assert_cmpint(natsSubscription_Drain(naks), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_WaitForDrainCompletion(naks, 10000), ==, NATS_OK);
    natsSubscription_Destroy(naks);
    g_array_unref(spy.seqs);
    g_mutex_clear(&spy.lock);
    jet_test_js_close(nc, js);
}

static gboolean server_on_store(const char *store)
{
    g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
    const char *n;
    while ((n = g_dir_read_name(proc)) != NULL) {
        if (!g_ascii_isdigit(n[0]))
            continue;
        g_autofree char *path = g_strdup_printf("/proc/%s/cmdline", n);
        g_autofree char *cmd = NULL;
        gsize len = 0;
        if (!g_file_get_contents(path, &cmd, &len, NULL))
            continue;
        for (gsize i = 0; i < len; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        if (strstr(cmd, "nats-server") != NULL && strstr(cmd, store) != NULL)
            return TRUE;
    }
    return FALSE;
}

static void test_embedded(void)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "embedded-state", NULL);
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "embedded", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = embedded\nstate_dir = %s\n\n"
        "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\nsubjects = orders.>\n"
        "option.dir = %s\noption.block_seq = 2\n", state, plugin, dir);
    g_autofree char *conf = jet_test_write_file("embedded.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "embedded.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_group(errlog, args);

    g_autofree char *url_file = g_build_filename(state, "nats", "url", NULL);
    g_assert_true(jet_test_wait_file(url_file, 30000));
    g_assert_true(server_on_store(state));
    /* The stream is created by the binding; publish once it exists. */
    int rc = -1;
    for (int i = 0; i < 100 && rc != 0; i++) {
        const char *pub[] = { "pub", "-c", conf, "orders.new", "--data", "hello", NULL };
        g_autoptr(GSubprocess) p = jet_test_jethost_spawn(NULL, pub);
        rc = jet_test_jethost_wait(p, 20000);
        if (rc != 0)
            g_usleep(100000);
    }
    g_assert_cmpint(rc, ==, 0);
    g_autofree char *handled = g_build_filename(dir, "handled.log", NULL);
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while (count_lines(handled) < 1 && g_get_monotonic_time() < deadline)
        g_usleep(20000);
    g_assert_cmpuint(count_lines(handled), ==, 1);

    /* Ctrl-C in the terminal while seq 2 is in its handler: SIGINT to the
     * whole foreground group.  The embedded server has a group of its own:
     * it is stopped by jethost after the drain, never killed in the middle
     * of it (and restarted).  The drain is held for up to 3 s, long enough
     * for a server that got the signal to go. */
    const char *pub2[] = { "pub", "-c", conf, "orders.new", "--data", "two", NULL };
    g_autoptr(GSubprocess) p2 = jet_test_jethost_spawn(NULL, pub2);
    g_assert_cmpint(jet_test_jethost_wait(p2, 20000), ==, 0);
    g_autofree char *inflight = g_build_filename(dir, "inflight-2", NULL);
    g_assert_true(jet_test_wait_file(inflight, 20000));
    pid_t pid = (pid_t)g_ascii_strtoll(g_subprocess_get_identifier(host), NULL, 10);
    g_assert_cmpint(kill(-pid, SIGINT), ==, 0);
    for (int i = 0; i < 300; i++) {
        g_autofree char *sofar = NULL;
        if (g_file_get_contents(errlog, &sofar, NULL, NULL) && strstr(sofar, "event=embedded-died") != NULL)
            break;
        g_usleep(10000);
    }
    g_autofree char *go = g_build_filename(dir, "go-2", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
    g_assert_false(server_on_store(state));
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_cmpuint(jet_test_count_lines(log, "event=embedded-died"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "level=error"), ==, 0);
}

/* A handler that does not finish within drain_timeout: the host exits 1 and
 * the message is left unacknowledged, for redelivery. */
static void test_drain_timeout(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_publish_n(js, "orders.new", 3);
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "drain-timeout", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *extra = g_strdup_printf("option.dir = %s\noption.block_seq = 1\n", dir);
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin, extra);
    g_autofree char *full = g_strconcat(text, "", NULL);
    /* drain_timeout belongs to [host]: put it right after the server line. */
    g_autofree char *with_timeout = NULL;
    {
        const char *at = strstr(full, "\n\n[binding");
        g_assert_nonnull(at);
        with_timeout = g_strdup_printf("%.*s\ndrain_timeout = 1s%s", (int)(at - full), full, at);
    }
    g_autofree char *conf = jet_test_write_file("drain-timeout.conf", with_timeout);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "drain-timeout.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    g_autofree char *inflight = g_build_filename(dir, "inflight-1", NULL);
    g_assert_true(jet_test_wait_file(inflight, 30000));
    gint64 t0 = g_get_monotonic_time();
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 1);
    gint64 ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("exited %" G_GINT64_FORMAT " ms after SIGTERM", ms);
    g_assert_cmpint(ms, >=, 900);
    g_assert_cmpint(ms, <, 10000);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "billing");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 0);
    jsConsumerInfo_Destroy(ci);
    jet_test_js_close(nc, js);
}

/* Credentials: user and password from a private file, a token from one; a
 * secret file others can read is refused; no secret ever reaches the log. */
static void run_with_auth(const char *const *server_args, const char *host_keys, const char *secret,
                          int expect_rc)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start_args(server_args);
    g_autofree char *plain = g_strdup(jet_test_server_url(srv));
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "auth", NULL);
    g_mkdir(dir, 0700);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nstate_dir = %s\n%s\n[binding orders]\nplugin = %s\nstream = ORDERS\n"
        "consumer = billing\nsubjects = orders.>\noption.dir = %s\n",
        plain, state, host_keys, plugin, dir);
    g_autofree char *conf = jet_test_write_file("auth.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "auth.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    if (expect_rc == 0) {
        /* It connected and bound: the stream exists, created by the binding. */
        gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
        gboolean bound = FALSE;
        while (!bound && g_get_monotonic_time() < deadline) {
            g_autofree char *log = NULL;
            bound = g_file_get_contents(errlog, &log, NULL, NULL) && strstr(log, "event=subscribed") != NULL;
            if (!bound)
                g_usleep(20000);
        }
        g_assert_true(bound);
        g_subprocess_send_signal(host, SIGTERM);
    }
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, expect_rc);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_null(strstr(log, secret));
    g_unlink(errlog);
}

static void test_credentials(void)
{
    g_autofree char *pw = jet_test_write_file("pw.secret", "s3cret-pw\n");
    g_assert_cmpint(chmod(pw, 0600), ==, 0);
    g_autofree char *tok = jet_test_write_file("tok.secret", "t0ken-abc\n");
    g_assert_cmpint(chmod(tok, 0600), ==, 0);
    const char *user_args[] = { "--user", "svc", "--pass", "s3cret-pw", NULL };
    const char *token_args[] = { "--auth", "t0ken-abc", NULL };

    g_autofree char *user_keys = g_strdup_printf("user = svc\npassword_file = %s\n", pw);
    run_with_auth(user_args, user_keys, "s3cret-pw", 0);
    g_autofree char *token_keys = g_strdup_printf("token_file = %s\n", tok);
    run_with_auth(token_args, token_keys, "t0ken-abc", 0);
    /* Wrong password: the first connect gives up (exit 1), the password is not logged. */
    g_autofree char *wrong = jet_test_write_file("wrong.secret", "not-it\n");
    g_assert_cmpint(chmod(wrong, 0600), ==, 0);
    g_autofree char *wrong_keys = g_strdup_printf("user = svc\npassword_file = %s\n", wrong);
    run_with_auth(user_args, wrong_keys, "not-it", 1);
    /* A password file the group can read is refused before anything runs. */
    g_assert_cmpint(chmod(pw, 0640), ==, 0);
    run_with_auth(user_args, user_keys, "s3cret-pw", 3);
}

/* Two jethost processes on one consumer, two workers each: every message
 * handled exactly once, and each process takes a fair share. */
typedef struct {
    jsCtx *js;
    gint64 waiting;
} WaitingPulls;

static gboolean pulls_waiting(gpointer data)
{
    WaitingPulls *wp = data;
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, wp->js, "ORDERS", "billing", NULL, NULL) != NATS_OK)
        return FALSE;
    gboolean ok = ci->NumWaiting >= wp->waiting;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

static GHashTable *read_handled(const char *dir, guint *count)
{
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    *count = 0;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return seen;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        guint64 seq = g_ascii_strtoull(*l, NULL, 10);
        g_hash_table_add(seen, GSIZE_TO_POINTER(seq));
        (*count)++;
    }
    return seen;
}

static void test_two_hosts(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    GSubprocess *hosts[2];
    char *dirs[2];
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("two-%d", i);
        dirs[i] = g_build_filename(jet_test_private_dir(), name, NULL);
        g_assert_cmpint(g_mkdir(dirs[i], 0700), ==, 0);
        g_autofree char *extra = g_strdup_printf("workers = 2\nbatch = 10\noption.dir = %s\n", dirs[i]);
        g_autofree char *text = config_for(jet_test_server_url(srv), plugin, extra);
        g_autofree char *file = g_strdup_printf("two-%d.conf", i);
        g_autofree char *conf = jet_test_write_file(file, text);
        g_autofree char *errfile = g_strdup_printf("two-%d.stderr", i);
        g_autofree char *errlog = g_build_filename(jet_test_private_dir(), errfile, NULL);
        const char *args[] = { "run", "-c", conf, NULL };
        hosts[i] = jet_test_jethost_spawn(errlog, args);
    }
    /* Publish only once all four workers have a pull waiting. */
    WaitingPulls wp = { js, 4 };
    g_assert_true(jet_test_wait_until(pulls_waiting, &wp, 30000));
    jet_test_publish_n(js, "orders.new", 10000);
    JetTestFloorWait fw = { js, "ORDERS", "billing", 10000 };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 120000));
    for (int i = 0; i < 2; i++) {
        g_subprocess_send_signal(hosts[i], SIGTERM);
        g_assert_cmpint(jet_test_jethost_wait(hosts[i], 20000), ==, 0);
        g_object_unref(hosts[i]);
    }
    guint n[2];
    g_autoptr(GHashTable) a = read_handled(dirs[0], &n[0]);
    g_autoptr(GHashTable) b = read_handled(dirs[1], &n[1]);
    g_test_message("host 0 handled %u, host 1 handled %u", n[0], n[1]);
    g_assert_cmpuint(n[0] + n[1], ==, 10000);
    g_assert_cmpuint(g_hash_table_size(a) + g_hash_table_size(b), ==, 10000);
    for (guint64 s = 1; s <= 10000; s++)
        g_assert_true(g_hash_table_contains(a, GSIZE_TO_POINTER(s)) != g_hash_table_contains(b, GSIZE_TO_POINTER(s)));
    g_assert_cmpuint(n[0], >=, 2000);
    g_assert_cmpuint(n[1], >=, 2000);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "billing");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    g_free(dirs[0]);
    g_free(dirs[1]);
    jet_test_js_close(nc, js);
}

/* Any binding that cannot start stops the host at start-up, naming it. */
static void test_failing_binding_exits(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    g_autofree char *plugin = jet_test_plugin_copy("template");
    /* manage = bind on a consumer that does not exist. */
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin, "manage = bind\n");
    g_autofree char *conf = jet_test_write_file("bind-missing.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "bind-missing.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    g_assert_cmpint(jet_test_jethost_wait(host, 30000), ==, 1);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "binding orders: consumer ORDERS/billing does not exist"));

    /* A plugin whose init fails: exit 3, the binding and the plugin's words named. */
    g_autofree char *fx = jet_test_plugin_copy("fx_ok");
    g_autofree char *text2 = config_for(jet_test_server_url(srv), fx, "option.fail_init = true\n");
    g_autofree char *conf2 = jet_test_write_file("init-fails.conf", text2);
    const char *args2[] = { "run", "-c", conf2, NULL };
    g_autoptr(GSubprocess) host2 = jet_test_jethost_spawn(errlog, args2);
    g_assert_cmpint(jet_test_jethost_wait(host2, 30000), ==, 3);
    g_free(log);
    log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "binding orders"));
    g_assert_nonnull(strstr(log, "init failed: fixture asked to fail"));
    jet_test_js_close(nc, js);
}

/* A DLQ stream the server refuses for a moment at start-up (here one that
 * does not cover the DLQ subject, until it is deleted; in a real run one
 * being deleted and re-created by someone else, err 10049 or 10058): a
 * managed binding asks again, and runs once the server allows it. */
static void test_dlq_stream_refused_for_a_moment(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_stream_create(js, "JETHOST_DLQ", "elsewhere.dlq");
    jet_test_publish_n(js, "orders.new", 3);
    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin, "");
    g_autofree char *conf = jet_test_write_file("dlq-moment.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "dlq-moment.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    g_assert_true(jet_test_wait_log(errlog, "dlq-stream-retry", 20000));
    g_assert_cmpint(js_DeleteStream(js, "JETHOST_DLQ", NULL, NULL), ==, NATS_OK);
    JetTestFloorWait fw = { js, "ORDERS", "billing", 3 };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 30000));
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "does not capture dlq_subject"));
    g_assert_nonnull(strstr(log, "created DLQ stream JETHOST_DLQ"));
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
    jet_test_js_close(nc, js);
}

/* ORDERS (orders.>) keeping messages for minutes, made or updated. */
static void stream_max_age(jsCtx *js, int64_t minutes, gboolean update)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "ORDERS";
    const char *subjects[] = { "orders.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.MaxAge = minutes * 60 * 1000000000LL;
    jsStreamInfo *si = NULL;
    g_assert_cmpint(update ? js_UpdateStream(&si, js, &sc, NULL, NULL) : js_AddStream(&si, js, &sc, NULL, NULL), ==,
                    NATS_OK);
    jsStreamInfo_Destroy(si);
}

/* Live schedule: a stream that would expire messages still being retried. */
static void test_schedule_live(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    stream_max_age(js, 10, FALSE);

    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin,
                                       "rungs = 5m, 5m, 5m\nmax_attempts = 4\npostpone_horizon = 0\n");
    g_autofree char *conf = jet_test_write_file("schedule.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "schedule.stderr", NULL);

    /* Without a server the config alone is fine... */
    const char *check[] = { "check", "-c", conf, NULL };
    g_autoptr(GSubprocess) c0 = jet_test_jethost_spawn(errlog, check);
    g_assert_cmpint(jet_test_jethost_wait(c0, 20000), ==, 0);
    /* ...against the stream it is not, and run refuses to start. */
    const char *check_live[] = { "check", "-c", conf, "--server", jet_test_server_url(srv), NULL };
    g_autoptr(GSubprocess) c1 = jet_test_jethost_spawn(errlog, check_live);
    g_assert_cmpint(jet_test_jethost_wait(c1, 20000), ==, 3);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "stream-max-age-short"));
    const char *run[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) r1 = jet_test_jethost_spawn(errlog, run);
    g_assert_cmpint(jet_test_jethost_wait(r1, 20000), ==, 3);

    /* Fix max_age: both pass. */
    stream_max_age(js, 60, TRUE);
    g_autoptr(GSubprocess) c2 = jet_test_jethost_spawn(errlog, check_live);
    g_assert_cmpint(jet_test_jethost_wait(c2, 20000), ==, 0);
    jet_test_js_close(nc, js);
}

/* The same for an ordered binding: run judges the stream as check --server
 * does, whatever the binding's kind (the stream's max_age was once taken
 * as unlimited for ordered bindings at run). */
static void test_schedule_live_ordered(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    stream_max_age(js, 10, FALSE);

    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state-ordered", NULL);
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nstate_dir = %s\n\n[binding orders]\nplugin = %s\nkind = ordered\nstream = ORDERS\n"
        "rungs = 5m, 5m, 5m\nmax_attempts = 4\npostpone_horizon = 0\n",
        jet_test_server_url(srv), state, plugin);
    g_autofree char *conf = jet_test_write_file("schedule-ordered.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "schedule-ordered.stderr", NULL);
    const char *check_live[] = { "check", "-c", conf, "--server", jet_test_server_url(srv), NULL };
    g_autoptr(GSubprocess) c1 = jet_test_jethost_spawn(errlog, check_live);
    g_assert_cmpint(jet_test_jethost_wait(c1, 20000), ==, 3);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "stream-max-age-short"));
    const char *run[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) r1 = jet_test_jethost_spawn(errlog, run);
    int rc = jet_test_jethost_wait(r1, 20000);
    g_autofree char *runlog = NULL;
    g_assert_true(g_file_get_contents(errlog, &runlog, NULL, NULL));
    if (rc != 3)
        g_test_message("%s", runlog);
    g_assert_cmpint(rc, ==, 3);
    g_assert_nonnull(strstr(runlog, "stream-max-age-short"));

    /* Fix max_age: run starts (and stops on SIGTERM). */
    stream_max_age(js, 60, TRUE);
    g_autoptr(GSubprocess) r2 = jet_test_jethost_spawn(errlog, run);
    g_assert_true(jet_test_wait_log(errlog, "event=running", 20000));
    jet_test_jethost_stop(r2, errlog);
    jet_test_js_close(nc, js);
}

/* `jethost ARGS...`: its exit status, its stdout (returned) and its stderr. */
static char *jethost_output(const char *const *args, int *status, char **err_out)
{
    char *out = NULL;
    *status = jet_test_jethost_run(args, &out, err_out);
    return out;
}

/* A durable pull consumer made by the operator, with what jethost refuses
 * (a server BackOff) or not. */
static void operator_consumer(jsCtx *js, const char *name, gboolean backoff)
{
    static const int64_t bo[] = { 1000000000LL, 2000000000LL };
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = name;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = 1000000000LL;
    cc.MaxDeliver = 10;
    if (backoff) {
        cc.BackOff = (int64_t *)bo;
        cc.BackOffLen = 2;
    }
    jsConsumerInfo *ci = NULL;
    g_assert_cmpint(js_AddConsumer(&ci, js, "ORDERS", &cc, NULL, NULL), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);
}

/* `run` goes through every binding before it exits, and names each one
 * that failed with its reason: here two plugins that cannot start. */
static void test_reports_every_binding(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    g_autofree char *fx = jet_test_plugin_copy("fx_ok");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nstate_dir = %s\n\n"
        "[binding a]\nplugin = /nonexistent/plugins/a.so\nstream = ORDERS\nconsumer = a\n\n"
        "[binding b]\nplugin = %s\nstream = ORDERS\nconsumer = b\n\n"
        "[binding c]\nplugin = %s\nstream = ORDERS\nconsumer = c\noption.fail_init = true\n",
        jet_test_server_url(srv), state, fx, fx);
    g_autofree char *conf = jet_test_write_file("every.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "every.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    g_assert_cmpint(jet_test_jethost_wait(host, 30000), ==, 3);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_test_message("%s", log);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=a event=failed"), ==, 1);
    g_assert_nonnull(strstr(log, "/nonexistent/plugins/a.so: no such file"));
    g_assert_cmpuint(jet_test_count_lines(log, "binding=b event=failed"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=c event=failed"), ==, 1);
    g_assert_nonnull(strstr(log, "init failed: fixture asked to fail"));
    g_assert_cmpuint(jet_test_count_lines(log, "event=not-started"), ==, 1);
    g_assert_nonnull(strstr(log, "2 of 3 bindings cannot start: a (plugin), c (plugin); exiting "
                                 "with code 3 (a config error)"));
    g_assert_null(strstr(log, "event=running"));
}

/* Many bindings in one host: more than any fixed table of the host would
 * hold (each binding registers with the shared connection), every one
 * runs, handles its messages and drains. */
#define MANY_BINDINGS 40
static void test_many_bindings(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_publish_n(js, "orders.new", 20);
    g_autofree char *fx = jet_test_plugin_copy("fx_ok");
    g_autoptr(GString) text = g_string_new(NULL);
    g_string_append_printf(text, "[host]\nserver = %s\n", jet_test_server_url(srv));
    for (int i = 0; i < MANY_BINDINGS; i++)
        g_string_append_printf(text, "\n[binding b%d]\nplugin = %s\nstream = ORDERS\nconsumer = c%d\n", i, fx, i);
    g_autofree char *conf = jet_test_write_file("many.conf", text->str);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "many.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    for (int i = 0; i < MANY_BINDINGS; i++) {
        g_autofree char *consumer = g_strdup_printf("c%d", i);
        JetTestFloorWait w = { js, "ORDERS", consumer, 20 };
        if (!jet_test_wait_until(jet_test_floor_reached, &w, 60000)) {
            g_autofree char *log = jet_test_read_text(errlog);
            g_error("binding b%d did not reach the end:\n%s", i, log);
        }
    }
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 30000), ==, 0);
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "level=error"), ==, 0);
    g_assert_nonnull(strstr(log, "handled 800: acked 800"));
    /* Every binding set up before any pulls: the last safety net stood
     * before the first engine subscribed. */
    const char *first_sub = strstr(log, "event=subscribed");
    const char *last_watch = g_strrstr(log, "event=advisory-watch");
    g_assert_nonnull(first_sub);
    g_assert_nonnull(last_watch);
    g_assert_cmpuint(jet_test_count_lines(log, "event=advisory-watch"), ==, MANY_BINDINGS);
    g_assert_true(last_watch < first_sub);
    jet_test_js_close(nc, js);
}

/* Threads of process PID whose name is NAME, or ends in SUFFIX. */
static guint threads_named(const char *pid, const char *name, const char *suffix)
{
    g_autofree char *dir = g_build_filename("/proc", pid, "task", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    guint n = 0;
    const char *tid;
    while ((tid = g_dir_read_name(d)) != NULL) {
        g_autofree char *path = g_build_filename(dir, tid, "comm", NULL);
        g_autofree char *comm = NULL;
        if (!g_file_get_contents(path, &comm, NULL, NULL))
            continue;   /* the thread ended */
        g_strchomp(comm);
        n += (name != NULL && strcmp(comm, name) == 0) || (suffix != NULL && g_str_has_suffix(comm, suffix));
    }
    return n;
}

/* One thread keeps every binding's leases, another reads every binding's
 * consumer (docs/engine.md, "Lease"): four bindings, each with a handler
 * held past AckWait at the same time, and a second worker each with a pull
 * waiting that would take the held message back were its lease let go. */
#define KEPT_BINDINGS 4
static void test_bindings_share_keeper(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_publish_n(js, "orders.new", 2);
    g_autofree char *fx = jet_test_plugin_copy("fx_gate");
    g_autoptr(GString) text = g_string_new(NULL);
    g_string_append_printf(text, "[host]\nserver = %s\n", jet_test_server_url(srv));
    char *dirs[KEPT_BINDINGS];
    for (int i = 0; i < KEPT_BINDINGS; i++) {
        g_autofree char *name = g_strdup_printf("kept-%d", i);
        dirs[i] = g_build_filename(jet_test_private_dir(), name, NULL);
        g_assert_cmpint(g_mkdir(dirs[i], 0700), ==, 0);
        g_string_append_printf(text, "\n[binding b%d]\nplugin = %s\nstream = ORDERS\nconsumer = c%d\nworkers = 2\n"
                               "batch = 1\nack_wait = 2s\noption.dir = %s\noption.block_seq = 1\n", i, fx, i, dirs[i]);
    }
    g_autofree char *conf = jet_test_write_file("kept.conf", text->str);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "kept.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    for (int i = 0; i < KEPT_BINDINGS; i++) {
        g_autofree char *inflight = g_build_filename(dirs[i], "inflight-1", NULL);
        g_assert_true(jet_test_wait_file(inflight, 30000));
    }
    /* 2.5 x AckWait with every binding's message 1 in its handler. */
    g_usleep(5 * G_USEC_PER_SEC);
    const char *pid = g_subprocess_get_identifier(host);
    g_assert_nonnull(pid);
    g_assert_cmpuint(threads_named(pid, "jet-lease", NULL), ==, 1);
    g_assert_cmpuint(threads_named(pid, "jet-observe", NULL), ==, 1);
    g_assert_cmpuint(threads_named(pid, NULL, "-lease"), ==, 1);   /* jet-lease itself */
    for (int i = 0; i < KEPT_BINDINGS; i++) {
        g_autofree char *go = g_build_filename(dirs[i], "go-1", NULL);
        g_assert_true(g_file_set_contents(go, "", 0, NULL));
    }
    for (int i = 0; i < KEPT_BINDINGS; i++) {
        g_autofree char *consumer = g_strdup_printf("c%d", i);
        JetTestFloorWait w = { js, "ORDERS", consumer, 2 };
        g_assert_true(jet_test_wait_until(jet_test_floor_reached, &w, 30000));
        jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", consumer);
        g_assert_cmpint(ci->NumRedelivered, ==, 0);
        jsConsumerInfo_Destroy(ci);
        g_autofree char *handled = g_build_filename(dirs[i], "handled.log", NULL);
        g_assert_cmpuint(count_lines(handled), ==, 2);
        g_free(dirs[i]);
    }
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 30000), ==, 0);
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "level=error"), ==, 0);
    jet_test_js_close(nc, js);
}

/* What `check -s` calls a config error, `run` does too, at once: a
 * consumer with a server BackOff, a push consumer, a schedule the stream
 * cannot keep, unlimited attempts on a stream that expires messages (unless
 * accepted); every binding named, exit 3, no retries. */
static void test_server_config_errors(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "ORDERS";
    const char *subjects[] = { "orders.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.MaxAge = (int64_t)2 * 3600 * 1000000000LL;   /* enough for the defaults */
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_AddStream(&si, js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si);
    operator_consumer(js, "backoff", TRUE);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "push";
    cc.DeliverSubject = "deliver.push";
    cc.AckPolicy = js_AckExplicit;
    jsConsumerInfo *ci = NULL;
    g_assert_cmpint(js_AddConsumer(&ci, js, "ORDERS", &cc, NULL, NULL), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);

    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nstate_dir = %s\n\n"
        "[binding a]\nplugin = %s\nstream = ORDERS\nconsumer = backoff\nmanage = bind\n\n"
        "[binding b]\nplugin = %s\nstream = ORDERS\nconsumer = push\n\n"
        "[binding c]\nplugin = %s\nstream = ORDERS\nconsumer = c\n"
        "rungs = 1h\nmax_attempts = 4\npostpone_horizon = 0\n\n"
        "[binding d]\nplugin = %s\nstream = ORDERS\nconsumer = d\n\n"
        "[binding e]\nplugin = %s\nstream = ORDERS\nconsumer = e\nmax_attempts = 0\n\n"
        "[binding f]\nplugin = %s\nstream = ORDERS\nconsumer = f\nmax_attempts = 0\n"
        "accept_expiry = true\n",
        jet_test_server_url(srv), state, plugin, plugin, plugin, plugin, plugin, plugin);
    g_autofree char *conf = jet_test_write_file("server-config.conf", text);

    /* check -s: one report, every failing binding named in the summary. */
    const char *check[] = { "check", "-c", conf, "-s", jet_test_server_url(srv), NULL };
    int status = -1;
    g_autofree char *err = NULL;
    g_autofree char *out = jethost_output(check, &status, &err);
    g_test_message("check:\n%s", out);
    g_assert_cmpint(status, ==, 3);
    g_assert_nonnull(strstr(out, "binding a: error: binding a: consumer ORDERS/backoff has a "
                                 "server BackOff"));
    g_assert_nonnull(strstr(out, "binding b: error: binding b: consumer ORDERS/push is a push "
                                 "consumer"));
    g_assert_nonnull(strstr(out, "error   stream-max-age-short"));
    g_assert_nonnull(strstr(out, "FAILED: 4 of 6 bindings: a (consumer, schedule: server-backoff), "
                                 "b (consumer), c (schedule: stream-max-age-short), "
                                 "e (schedule: unlimited-expiry)"));

    /* run: the same three, at once (no retries), exit 3. */
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "server-config.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    g_assert_cmpint(jet_test_jethost_wait(host, 30000), ==, 3);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_test_message("run:\n%s", log);
    g_assert_cmpuint(jet_test_count_lines(log, "event=resubscribing"), ==, 0);
    g_assert_nonnull(strstr(log, "consumer ORDERS/backoff has a server BackOff"));
    g_assert_nonnull(strstr(log, "consumer ORDERS/push is a push consumer"));
    g_assert_nonnull(strstr(log, "binding=c event=schedule msg=\"stream-max-age-short"));
    g_assert_nonnull(strstr(log, "4 of 6 bindings cannot start: a (consumer does not fit), "
                                 "b (consumer does not fit), c (schedule: stream-max-age-short), "
                                 "e (schedule: unlimited-expiry); exiting with code 3 (a config "
                                 "error)"));
    g_assert_cmpuint(jet_test_count_lines(log, "binding=d event=failed"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=f event=failed"), ==, 0);
    g_assert_null(strstr(log, "event=running"));
    jet_test_js_close(nc, js);
}

/* The ledger's record traffic as a daemon makes it: every PUT and DEL on
 * the bucket's subjects, with the revision a DEL is bound to. */
typedef struct {
    GMutex lock;
    guint puts;
    GPtrArray *dels;   /* the DEL's key, or "<key> unbound" when it carried no revision */
} LedgerSpy;

static void ledger_spy_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    LedgerSpy *spy = closure;
    const char *op = NULL, *expect = NULL;
    gboolean del = natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && g_strcmp0(op, "DEL") == 0;
    natsMsgHeader_Get(m, "Nats-Expected-Last-Subject-Sequence", &expect);
    g_mutex_lock(&spy->lock);
    if (del)
        g_ptr_array_add(spy->dels, g_strdup_printf("%s%s", natsMsg_GetSubject(m), expect != NULL ? "" : " unbound"));
    else
        spy->puts++;
    g_mutex_unlock(&spy->lock);
    natsMsg_Destroy(m);
}

static gboolean ledger_dels_seen(gpointer data)
{
    LedgerSpy *spy = data;
    g_mutex_lock(&spy->lock);
    gboolean ok = spy->dels->len >= 20;
    g_mutex_unlock(&spy->lock);
    return ok;
}

/* Twenty messages that fail once and then succeed: each record written
 * once, and deleted once after the ack without the worker waiting, bound
 * to the revision written (docs/retries.md, "Forgetting without waiting"). */
static void test_retried_records_forgotten(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    LedgerSpy spy = { .dels = g_ptr_array_new_with_free_func(g_free) };
    g_mutex_init(&spy.lock);
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&sub, nc, "$KV.jethost_ledger.>", ledger_spy_msg, &spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
    jet_test_publish_n(js, "orders.new", 20);

    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "forgotten", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *extra = g_strdup_printf("batch = 10\nrungs = 50ms\noption.dir = %s\noption.script = retry,ack\n", dir);
    g_autofree char *text = config_for(jet_test_server_url(srv), plugin, extra);
    g_autofree char *conf = jet_test_write_file("forgotten.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "forgotten.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);

    JetTestFloorWait fw = { js, "ORDERS", "billing", 20 };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 60000));
    g_assert_true(jet_test_wait_until(ledger_dels_seen, &spy, 10000));
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);

    g_mutex_lock(&spy.lock);
    g_assert_cmpuint(spy.puts, ==, 20);
    g_assert_cmpuint(spy.dels->len, ==, 20);
    for (guint i = 0; i < spy.dels->len; i++)
        g_assert_null(strstr(g_ptr_array_index(spy.dels, i), "unbound"));
    g_mutex_unlock(&spy.lock);
    /* Every one landed: the bucket holds no record. */
    kvStore *kv = NULL;
    g_assert_cmpint(js_KeyValue(&kv, js, "jethost_ledger"), ==, NATS_OK);
    kvKeysList keys = { 0 };
    natsStatus ks = kvStore_Keys(&keys, kv, NULL);
    g_assert_true(ks == NATS_NOT_FOUND || (ks == NATS_OK && keys.Count == 0));
    kvKeysList_Destroy(&keys);
    kvStore_Destroy(kv);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_null(strstr(log, "event=ledger-forget"));

    natsSubscription_Destroy(sub);
    g_ptr_array_unref(spy.dels);
    g_mutex_clear(&spy.lock);
    jet_test_js_close(nc, js);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/run/thousand-acked-in-order", test_thousand_acked_in_order);
    g_test_add_func("/run/sigterm-mid-stream", test_sigterm_mid_stream);
    g_test_add_func("/run/large-messages-keep-pages", test_large_messages_keep_pages);
    g_test_add_func("/run/embedded", test_embedded);
    g_test_add_func("/run/two-hosts", test_two_hosts);
    g_test_add_func("/run/drain-timeout", test_drain_timeout);
    g_test_add_func("/run/credentials", test_credentials);
    g_test_add_func("/run/schedule-live", test_schedule_live);
    g_test_add_func("/run/schedule-live-ordered", test_schedule_live_ordered);
    g_test_add_func("/run/failing-binding-exits", test_failing_binding_exits);
    g_test_add_func("/run/dlq-stream-refused-for-a-moment", test_dlq_stream_refused_for_a_moment);
    g_test_add_func("/run/reports-every-binding", test_reports_every_binding);
    g_test_add_func("/run/server-config-errors", test_server_config_errors);
    g_test_add_func("/run/many-bindings", test_many_bindings);
    g_test_add_func("/run/bindings-share-keeper", test_bindings_share_keeper);
    g_test_add_func("/run/retried-records-forgotten", test_retried_records_forgotten);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
