#define _GNU_SOURCE
#include "harness.h"
#include "embedded.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <nats/nats.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *private_dir;
static guint copy_counter;

static void remove_tree(const char *path)
{
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    if (d != NULL) {
        const char *n;
        while ((n = g_dir_read_name(d)) != NULL) {
            g_autofree char *p = g_build_filename(path, n, NULL);
            if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
                remove_tree(p);
            else
                g_unlink(p);
        }
    }
    g_rmdir(path);
}

static void remove_private_dir(void)
{
    if (private_dir != NULL)
        remove_tree(private_dir);
}

const char *jet_test_private_dir(void)
{
    if (private_dir == NULL) {
        GError *err = NULL;
        private_dir = g_dir_make_tmp("jethost-test-XXXXXX", &err);
        g_assert_no_error(err);
        g_assert_cmpint(chmod(private_dir, 0700), ==, 0);
        atexit(remove_private_dir);
    }
    return private_dir;
}

static const char *builddir(void)
{
    const char *b = g_getenv("JET_BUILDDIR");
    if (b == NULL)
        g_error("JET_BUILDDIR is not set: run the tests through `make check`");
    return b;
}

char *jet_test_plugin_built(const char *name)
{
    g_autofree char *file = g_strconcat(name, ".so", NULL);
    const char *subdir = g_str_has_prefix(name, "fx_") ? "tests/fixtures" : NULL;
    if (subdir == NULL)
        return g_build_filename(builddir(), "plugins", name, ".libs", file, NULL);
    return g_build_filename(builddir(), subdir, ".libs", file, NULL);
}

char *jet_test_plugin_copy(const char *name)
{
    g_autofree char *src = jet_test_plugin_built(name);
    g_autofree char *contents = NULL;
    gsize len = 0;
    GError *err = NULL;
    g_file_get_contents(src, &contents, &len, &err);
    g_assert_no_error(err);
    g_autofree char *file = g_strdup_printf("%s-%u.so", name, ++copy_counter);
    char *dst = g_build_filename(jet_test_private_dir(), file, NULL);
    g_file_set_contents_full(dst, contents, (gssize)len, G_FILE_SET_CONTENTS_NONE, 0644, &err);
    g_assert_no_error(err);
    g_assert_cmpint(chmod(dst, 0644), ==, 0);
    return dst;
}

char *jet_test_jethost_path(void)
{
    return g_build_filename(builddir(), "host", "jethost", NULL);
}

/* --- nats-server --- */

struct JetTestServer {
    char *dir;        /* ports files and store */
    char *url;
    int port;
    GSubprocess *proc;
    gboolean running;
    char **extra;     /* more arguments, kept for restarts */
    char *api;        /* the JetStream API prefix the readiness check asks */
    gboolean plain;   /* up once it takes a connection; JetStream not asked */
};

static void die_with_parent(gpointer data)
{
    (void)data;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static const char *server_binary(void)
{
    const char *b = g_getenv("NATS_SERVER");
    return b != NULL && *b ? b : "nats-server";
}

static char *read_ports_url(const char *dir, GPid pid)
{
    g_autofree char *id = g_strdup_printf("%d", (int)pid);
    return jet_nats_ports_url(dir, id);
}

static gboolean server_answers(const char *url, const char *api, gboolean plain)
{
    natsConnection *nc = NULL;
    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url);
    natsOptions_SetTimeout(o, 500);
    natsOptions_SetAllowReconnect(o, false);
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    /* A server that requires credentials (or TLS) answers by refusing ours:
     * it is up. */
    if (s == NATS_CONNECTION_AUTH_FAILED || s == NATS_SECURE_CONNECTION_REQUIRED || s == NATS_SSL_ERROR ||
        (s != NATS_OK && g_strrstr(nats_GetLastError(NULL) != NULL ? nats_GetLastError(NULL) : "", "uthorization")))
        return TRUE;
    if (s != NATS_OK)
        return FALSE;
    if (plain) {
        natsConnection_Destroy(nc);
        return TRUE;
    }
    /* JetStream answers too: $JS.API.INFO (or the domain's). */
    natsMsg *reply = NULL;
    g_autofree char *info = g_strdup_printf("%s.INFO", api != NULL ? api : "$JS.API");
    s = natsConnection_RequestString(&reply, nc, info, "", 1000);
    natsMsg_Destroy(reply);
    natsConnection_Destroy(nc);
    return s == NATS_OK;
}

static void server_spawn(JetTestServer *s)
{
    g_autofree char *store = g_build_filename(s->dir, "store", NULL);
    g_autofree char *port = s->port > 0 ? g_strdup_printf("%d", s->port) : g_strdup("-1");
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (char *)server_binary());
    g_ptr_array_add(argv, "-js");
    g_ptr_array_add(argv, "-a");
    g_ptr_array_add(argv, "127.0.0.1");
    g_ptr_array_add(argv, "-p");
    g_ptr_array_add(argv, port);
    g_ptr_array_add(argv, "--ports_file_dir");
    g_ptr_array_add(argv, s->dir);
    g_ptr_array_add(argv, "-sd");
    g_ptr_array_add(argv, store);
    for (char **a = s->extra; a != NULL && *a != NULL; a++)
        g_ptr_array_add(argv, *a);
    g_ptr_array_add(argv, NULL);

    g_autoptr(GSubprocessLauncher) l =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
    g_subprocess_launcher_set_child_setup(l, die_with_parent, NULL, NULL);
    GError *err = NULL;
    s->proc = g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, &err);
    g_ptr_array_free(argv, TRUE);
    if (s->proc == NULL)
        g_error("cannot start %s: %s (install the nats-server package)", server_binary(), err->message);
    GPid pid = (GPid)atoi(g_subprocess_get_identifier(s->proc));

    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < deadline) {
        if (s->url == NULL)
            s->url = read_ports_url(s->dir, pid);
        if (s->url != NULL && server_answers(s->url, s->api, s->plain)) {
            s->running = TRUE;
            if (s->port <= 0) {
                const char *colon = strrchr(s->url, ':');
                s->port = colon != NULL ? atoi(colon + 1) : 0;
            }
            return;
        }
        if (g_subprocess_get_identifier(s->proc) == NULL)   /* it exited */
            break;
        g_usleep(20000);
    }
    g_error("nats-server did not answer within 20 s (dir %s)", s->dir);
}

JetTestServer *jet_test_server_start_args(const char *const *extra)
{
    return jet_test_server_start_api(extra, NULL);
}

JetTestServer *jet_test_server_start_api(const char *const *extra, const char *api_prefix)
{
    JetTestServer *s = g_new0(JetTestServer, 1);
    s->extra = g_strdupv((char **)extra);
    s->api = g_strdup(api_prefix);
    GError *err = NULL;
    s->dir = g_dir_make_tmp("jethost-nats-XXXXXX", &err);
    g_assert_no_error(err);
    server_spawn(s);
    g_test_message("nats-server at %s (store %s)", s->url, s->dir);
    return s;
}

JetTestServer *jet_test_server_start_plain(const char *const *extra)
{
    JetTestServer *s = g_new0(JetTestServer, 1);
    s->extra = g_strdupv((char **)extra);
    s->plain = TRUE;
    GError *err = NULL;
    s->dir = g_dir_make_tmp("jethost-nats-XXXXXX", &err);
    g_assert_no_error(err);
    server_spawn(s);
    g_test_message("nats-server at %s (store %s)", s->url, s->dir);
    return s;
}

void jet_test_server_set_args(JetTestServer *s, const char *const *extra)
{
    g_strfreev(s->extra);
    s->extra = g_strdupv((char **)extra);
}

const char *jet_test_server_dir(const JetTestServer *s) { return s->dir; }

JetTestServer *jet_test_server_start(void)
{
    return jet_test_server_start_args(NULL);
}

const char *jet_test_server_url(const JetTestServer *s) { return s->url; }
int jet_test_server_port(const JetTestServer *s) { return s->port; }

guint jet_test_server_version(void)
{
    const char *argv[] = { server_binary(), "--version", NULL };
    g_autofree char *out = NULL;
    g_autoptr(GError) error = NULL;
    gint status = 0;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                      &out, NULL, &status, &error))
        g_error("%s --version: %s", argv[0], error->message);
    /* "nats-server: v2.15.1" */
    const char *v = out != NULL ? strstr(out, ": v") : NULL;
    guint major = 0, minor = 0, patch = 0;
    if (v == NULL || sscanf(v + 3, "%u.%u.%u", &major, &minor, &patch) != 3)
        g_error("%s --version said %s: no version", argv[0], out != NULL ? out : "nothing");
    return major * 10000 + minor * 100 + patch;
}

GPid jet_test_server_pid(const JetTestServer *s)
{
    return s->proc != NULL ? (GPid)atoi(g_subprocess_get_identifier(s->proc)) : 0;
}

static void server_reap(JetTestServer *s)
{
    if (s->proc == NULL)
        return;
    g_subprocess_wait(s->proc, NULL, NULL);
    g_clear_object(&s->proc);
    s->running = FALSE;
    /* The next start writes a new ports file; the URL stays (same port). */
}

void jet_test_server_stop(JetTestServer *s)
{
    if (s->proc == NULL)
        return;
    g_subprocess_send_signal(s->proc, SIGTERM);
    server_reap(s);
}

void jet_test_server_kill(JetTestServer *s)
{
    if (s->proc == NULL)
        return;
    g_subprocess_force_exit(s->proc);
    server_reap(s);
}

static gboolean process_stopped(gpointer data)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", GPOINTER_TO_INT(data));
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return FALSE;
    const char *p = strrchr(text, ')');   /* the state follows the command name */
    return p != NULL && p[1] == ' ' && p[2] == 'T';
}

void jet_test_server_pause(JetTestServer *s)
{
    g_assert_nonnull(s->proc);
    g_subprocess_send_signal(s->proc, SIGSTOP);
    /* SIGSTOP is asynchronous: wait until every thread is stopped. */
    g_assert_true(jet_test_wait_until(process_stopped, GINT_TO_POINTER(jet_test_server_pid(s)), 5000));
}

void jet_test_server_resume(JetTestServer *s)
{
    g_assert_nonnull(s->proc);
    g_subprocess_send_signal(s->proc, SIGCONT);
}

void jet_test_server_restart(JetTestServer *s)
{
    g_assert_null(s->proc);
    server_spawn(s);
}

void jet_test_server_wipe_store(JetTestServer *s)
{
    g_assert_null(s->proc);
    g_autofree char *store = g_build_filename(s->dir, "store", NULL);
    remove_tree(store);
}

void jet_test_server_free(JetTestServer *s)
{
    if (s == NULL)
        return;
    if (s->proc != NULL) {
        g_subprocess_send_signal(s->proc, SIGCONT);
        jet_test_server_stop(s);
    }
    remove_tree(s->dir);
    g_free(s->dir);
    g_free(s->url);
    g_strfreev(s->extra);
    g_free(s->api);
    g_free(s);
}

gboolean jet_test_wait_until(gboolean (*cond)(gpointer), gpointer data, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    for (;;) {
        if (cond(data))
            return TRUE;
        if (g_get_monotonic_time() >= deadline)
            return FALSE;
        g_usleep(10000);
    }
}

/* --- JetStream helpers --- */

/* An asynchronous publish the server refused (no responders while a
 * stream's leader is elected, a restart) is reported only to the
 * context's error handler: without one it was lost unseen, and a test
 * waited for a message never stored.  The handler keeps a copy;
 * jet_test_publish_wait publishes it again until it is stored. */
static GMutex refused_lock;
static GPtrArray *refused;   /* of natsMsg*, owned */

static void on_publish_refused(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)closure;
    natsMsg *copy = NULL;
    if (natsMsg_Create(&copy, natsMsg_GetSubject(pae->Msg), NULL, natsMsg_GetData(pae->Msg),
                       natsMsg_GetDataLength(pae->Msg)) != NATS_OK)
        g_error("cannot copy a refused publish");
    const char **keys = NULL;
    int n = 0;
    if (natsMsgHeader_Keys(pae->Msg, &keys, &n) == NATS_OK) {
        for (int i = 0; i < n; i++) {
            const char **values = NULL;
            int nv = 0;
            if (natsMsgHeader_Values(pae->Msg, keys[i], &values, &nv) == NATS_OK) {
                for (int j = 0; j < nv; j++)
                    natsMsgHeader_Add(copy, keys[i], values[j]);
                free((void *)values);
            }
        }
        free((void *)keys);
    }
    g_mutex_lock(&refused_lock);
    if (refused == NULL)
        refused = g_ptr_array_new();
    g_ptr_array_add(refused, copy);
    g_mutex_unlock(&refused_lock);
}

static jsCtx *js_context(natsConnection *nc)
{
    jsOptions o;
    jsOptions_Init(&o);
    o.PublishAsync.ErrHandler = on_publish_refused;
    jsCtx *js = NULL;
    g_assert_cmpint(natsConnection_JetStream(&js, nc, &o), ==, NATS_OK);
    return js;
}

jsCtx *jet_test_js_context(natsConnection *nc)
{
    return js_context(nc);
}

jsCtx *jet_test_js_open(const char *url, natsConnection **nc)
{
    natsOptions *o = NULL;
    g_assert_cmpint(natsOptions_Create(&o), ==, NATS_OK);
    natsOptions_SetURL(o, url);
    natsOptions_SetSendAsap(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 100);
    natsStatus s = natsConnection_Connect(nc, o);
    natsOptions_Destroy(o);
    g_assert_cmpint(s, ==, NATS_OK);
    return js_context(*nc);
}

void jet_test_js_close(natsConnection *nc, jsCtx *js)
{
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

void jet_test_js_setup(JetTestJs *fx, gconstpointer data)
{
    (void)data;
    fx->srv = jet_test_server_start();
    fx->url = jet_test_server_url(fx->srv);
    fx->js = jet_test_js_open(fx->url, &fx->nc);
}

void jet_test_js_teardown(JetTestJs *fx, gconstpointer data)
{
    (void)data;
    jet_test_js_close(fx->nc, fx->js);
    jet_test_server_free(fx->srv);
}

void jet_test_stream_create(jsCtx *js, const char *name, const char *subject)
{
    jet_test_stream_create_rollup(js, name, subject, FALSE);
}

void jet_test_stream_create_rollup(jsCtx *js, const char *name, const char *subject, gboolean rollup)
{
    jet_test_stream_create_full(js, name, subject, rollup, 0, 0);
}

void jet_test_stream_create_full(jsCtx *js, const char *name, const char *subject, gboolean rollup,
                                 gint64 duplicate_window_ms, gint32 max_msg_size)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name;
    const char *subjects[] = { subject };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.AllowRollup = rollup;
    sc.Duplicates = duplicate_window_ms * G_GINT64_CONSTANT(1000000);
    if (max_msg_size > 0)
        sc.MaxMsgSize = max_msg_size;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddStream(&si, js, &sc, NULL, &jerr);
    if (s != NATS_OK)
        g_error("create stream %s: %s (err %d)", name, natsStatus_GetText(s), (int)jerr);
    jsStreamInfo_Destroy(si);
}

guint64 jet_test_stream_msgs(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, js, stream, NULL, NULL) != NATS_OK)
        return 0;
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

gint64 jet_test_stream_created(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, stream, NULL, NULL), ==, NATS_OK);
    gint64 c = si->Created;
    jsStreamInfo_Destroy(si);
    return c;
}

gboolean jet_test_floor_reached(gpointer floor_wait)
{
    JetTestFloorWait *fw = floor_wait;
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, fw->js, fw->stream, fw->consumer, NULL, NULL) != NATS_OK)
        return FALSE;
    gboolean ok = ci->AckFloor.Stream >= fw->floor && ci->NumAckPending == 0 && ci->NumPending == 0;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

gboolean jet_test_stream_has(gpointer stream_wait)
{
    JetTestStreamWait *w = stream_wait;
    return jet_test_stream_msgs(w->js, w->stream) >= w->want;
}

natsMsg *jet_test_stream_get(jsCtx *js, const char *stream, guint64 seq)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetMsg(&m, js, stream, seq, NULL, &jerr);
    if (s != NATS_OK)
        g_error("get %s:%" G_GUINT64_FORMAT ": %s (err %d)", stream, seq, natsStatus_GetText(s), (int)jerr);
    return m;
}

const char *jet_test_msg_header(natsMsg *m, const char *name)
{
    const char *v = NULL;
    return natsMsgHeader_Get(m, name, &v) == NATS_OK ? v : NULL;
}

void jet_test_wait_late_in_second(void)
{
    while (g_get_real_time() % G_USEC_PER_SEC < 900000)
        g_usleep(2000);
}

guint64 jet_test_start_early_in_second(jsCtx *js, const char *stream, guint64 n, char **text)
{
    g_autofree gint64 *us = g_new0(gint64, n + 1);
    for (guint64 seq = 1; seq <= n; seq++) {
        natsMsg *m = NULL;
        g_assert_cmpint(js_GetMsg(&m, js, stream, seq, NULL, NULL), ==, NATS_OK);
        us[seq] = natsMsg_GetTime(m) / 1000;
        natsMsg_Destroy(m);
    }
    guint64 from = 0;
    for (guint64 seq = 2; seq <= n && from == 0; seq++)
        if (us[seq] % G_USEC_PER_SEC >= 10000 && us[seq] % G_USEC_PER_SEC < 100000)
            from = seq;
    g_assert_cmpuint(from, >, 1);
    gint64 t_us = us[from];
    while (from > 1 && us[from - 1] >= t_us)
        from--;
    g_autoptr(GDateTime) base = g_date_time_new_from_unix_utc(t_us / G_USEC_PER_SEC);
    g_autoptr(GDateTime) dt = g_date_time_add(base, t_us % G_USEC_PER_SEC);
    *text = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S.%fZ");
    g_test_message("start %s: stream seq %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " on", *text, from, n);
    return from;
}

void jet_test_publish_n(jsCtx *js, const char *subject, guint n)
{
    for (guint i = 1; i <= n; i++) {
        char data[32];
        int len = snprintf(data, sizeof data, "msg-%u", i);
        g_assert_cmpint(js_PublishAsync(js, subject, data, len, NULL), ==, NATS_OK);
    }
    jet_test_publish_wait(js);
}

gint64 jet_test_publish_wait(jsCtx *js)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 30000;
    g_assert_cmpint(js_PublishAsyncComplete(js, &po), ==, NATS_OK);
    natsMsgList pending = { 0 };
    g_assert_cmpint(js_PublishAsyncGetPendingList(&pending, js), ==, NATS_NOT_FOUND);
    /* What was refused goes again, one at a time, until stored. */
    g_mutex_lock(&refused_lock);
    GPtrArray *again = refused;
    refused = NULL;
    g_mutex_unlock(&refused_lock);
    if (again == NULL)
        return 0;
    g_test_message("%u publish(es) refused by the server: sending them again", again->len);
    /* A cluster node that lost its store answers "no responders" until its
     * routes and the stream's group are back: under a loaded machine that
     * took over 30 s once (a clean-clone run), so the test's own publisher
     * waits as long as a cell may take (90 s) and says when it was long. */
    for (guint i = 0; i < again->len; i++) {
        natsMsg *m = g_ptr_array_index(again, i);
        gint64 began = g_get_monotonic_time(), until = began + 90 * G_USEC_PER_SEC;
        natsStatus st;
        jsErrCode jerr = 0;
        while ((st = js_PublishMsg(NULL, js, m, &po, &jerr)) != NATS_OK && g_get_monotonic_time() < until)
            g_usleep(100 * 1000);
        if (st != NATS_OK)
            g_error("a refused publish to %s was refused again for 90 s: %s (%d)", natsMsg_GetSubject(m),
                    natsStatus_GetText(st), (int)jerr);
        gint64 took_ms = (g_get_monotonic_time() - began) / 1000;
        if (took_ms > 10000)
            g_test_message("a refused publish to %s was stored after %" G_GINT64_FORMAT " ms", natsMsg_GetSubject(m),
                           took_ms);
        natsMsg_Destroy(m);
    }
    g_ptr_array_unref(again);
    return g_get_monotonic_time();
}

jsConsumerInfo *jet_test_consumer_info(jsCtx *js, const char *stream, const char *consumer)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetConsumerInfo(&ci, js, stream, consumer, NULL, &jerr);
    if (s != NATS_OK)
        g_error("consumer info %s/%s: %s (err %d)", stream, consumer, natsStatus_GetText(s), (int)jerr);
    return ci;
}

char *jet_test_write_file(const char *name, const char *text)
{
    char *path = g_build_filename(jet_test_private_dir(), name, NULL);
    GError *err = NULL;
    g_file_set_contents(path, text, -1, &err);
    g_assert_no_error(err);
    return path;
}

char *jet_test_read_text(const char *path)
{
    char *text = NULL;
    GError *err = NULL;
    g_file_get_contents(path, &text, NULL, &err);
    g_assert_no_error(err);
    return text;
}

gboolean jet_test_read_lines(const char *path, char **text)
{
    if (!g_file_get_contents(path, text, NULL, NULL))
        return FALSE;
    char *last_nl = strrchr(*text, '\n');
    if (last_nl != NULL)
        last_nl[1] = '\0';
    else
        (*text)[0] = '\0';
    return TRUE;
}

GSubprocess *jet_test_jethost_spawn_config(const char *name, const char *text, char **errlog)
{
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    g_autofree char *errfile = g_strdup_printf("%s.stderr", name);
    *errlog = g_build_filename(jet_test_private_dir(), errfile, NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    return jet_test_jethost_spawn(*errlog, args);
}

void jet_test_jethost_stop(GSubprocess *p, const char *errlog)
{
    g_subprocess_send_signal(p, SIGTERM);
    int rc = jet_test_jethost_wait(p, 20000);
    if (rc != 0) {
        g_autofree char *log = NULL;
        g_file_get_contents(errlog, &log, NULL, NULL);
        g_error("jethost exited with %d:\n%s", rc, log != NULL ? log : "");
    }
}

/* A terminal's foreground job: a process group of its own, which Ctrl-C
 * signals as a whole. */
static void own_group(gpointer data)
{
    die_with_parent(data);
    setpgid(0, 0);
}

static GSubprocess *spawn_with(const char *stderr_path, const char *const *args, GSpawnChildSetupFunc setup);

GSubprocess *jet_test_jethost_spawn_group(const char *stderr_path, const char *const *args)
{
    return spawn_with(stderr_path, args, own_group);
}

GSubprocess *jet_test_jethost_spawn(const char *stderr_path, const char *const *args)
{
    return spawn_with(stderr_path, args, die_with_parent);
}

static GSubprocess *spawn_with(const char *stderr_path, const char *const *args, GSpawnChildSetupFunc setup)
{
    g_autofree char *bin = jet_test_jethost_path();
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    for (const char *const *a = args; *a != NULL; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
    if (stderr_path != NULL)
        g_subprocess_launcher_set_stderr_file_path(l, stderr_path);
    g_subprocess_launcher_set_child_setup(l, setup, NULL, NULL);
    GError *err = NULL;
    GSubprocess *p = g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, &err);
    g_ptr_array_free(argv, TRUE);
    g_assert_no_error(err);
    return p;
}

int jet_test_jethost_wait(GSubprocess *p, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    while (g_subprocess_get_identifier(p) != NULL) {
        if (g_get_monotonic_time() > deadline) {
            g_subprocess_force_exit(p);
            g_error("jethost did not exit within %u ms", timeout_ms);
        }
        g_usleep(10000);
    }
    g_subprocess_wait(p, NULL, NULL);
    if (g_subprocess_get_if_signaled(p))
        return 128 + g_subprocess_get_term_sig(p);
    return g_subprocess_get_exit_status(p);
}

static gboolean file_exists(gpointer data)
{
    return g_file_test((const char *)data, G_FILE_TEST_EXISTS);
}

gboolean jet_test_wait_file(const char *path, guint timeout_ms)
{
    return jet_test_wait_until(file_exists, (gpointer)path, timeout_ms);
}

typedef struct {
    const char *path, *needle;
} LogWait;

static gboolean log_has(gpointer data)
{
    const LogWait *w = data;
    g_autofree char *text = NULL;
    return g_file_get_contents(w->path, &text, NULL, NULL) && strstr(text, w->needle) != NULL;
}

gboolean jet_test_wait_log(const char *path, const char *needle, guint timeout_ms)
{
    LogWait w = { path, needle };
    return jet_test_wait_until(log_has, &w, timeout_ms);
}

typedef struct {
    const char *path;
    char *address;
} PromWait;

/* 2.x: msg="Listening on" address=127.0.0.1:9090; 3.x puts fields between
 * (component=web): the address is the line's address= field. */
static gboolean prometheus_listening(gpointer data)
{
    PromWait *w = data;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(w->path, &text, NULL, NULL))
        return FALSE;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL; l++) {
        const char *a = strstr(*l, " address=");
        if (strstr(*l, "msg=\"Listening on\"") == NULL || a == NULL)
            continue;
        a += strlen(" address=");
        w->address = g_strndup(a, strcspn(a, " "));
        return TRUE;
    }
    return FALSE;
}

char *jet_test_prometheus_address(const char *log, guint timeout_ms)
{
    PromWait w = { log, NULL };
    jet_test_wait_until(prometheus_listening, &w, timeout_ms);
    return w.address;
}

/* --- stderr capture --- */

static int saved_stderr = -1;
static char *stderr_path;

void jet_test_stderr_begin(const char *name)
{
    g_assert_cmpint(saved_stderr, ==, -1);
    fflush(stderr);
    g_free(stderr_path);
    stderr_path = g_build_filename(jet_test_private_dir(), name, NULL);
    int fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    g_assert_cmpint(fd, >=, 0);
    saved_stderr = dup(2);
    g_assert_cmpint(saved_stderr, >=, 0);
    g_assert_cmpint(dup2(fd, 2), ==, 2);
    close(fd);
}

char *jet_test_stderr_end(void)
{
    g_assert_cmpint(saved_stderr, >=, 0);
    fflush(stderr);
    g_assert_cmpint(dup2(saved_stderr, 2), ==, 2);
    close(saved_stderr);
    saved_stderr = -1;
    char *text = NULL;
    g_assert_true(g_file_get_contents(stderr_path, &text, NULL, NULL));
    return text;
}

guint jet_test_count_lines(const char *text, const char *needle)
{
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(text != NULL ? text : "", "\n", -1);
    for (char **l = lines; *l != NULL; l++)
        n += strstr(*l, needle) != NULL;
    return n;
}

int jet_test_jethost_run(const char *const *args, char **out, char **err_text)
{
    g_autofree char *bin = jet_test_jethost_path();
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    for (const char *const *a = args; *a != NULL; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv((const char *const *)argv->pdata,
                                                 G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &err);
    g_assert_no_error(err);
    char *o = NULL, *e = NULL;
    g_assert_true(g_subprocess_communicate_utf8(p, NULL, NULL, &o, &e, &err));
    g_assert_no_error(err);
    if (out != NULL)
        *out = o;
    else
        g_free(o);
    if (err_text != NULL)
        *err_text = e;
    else
        g_free(e);
    if (g_subprocess_get_if_signaled(p))
        return 128 + g_subprocess_get_term_sig(p);   /* a crash names its signal */
    return g_subprocess_get_exit_status(p);
}

int jet_test_mock_cli(const char *input, char **out, char **err, ...)
{
    g_autofree char *cli = g_build_filename(g_getenv("JET_BUILDDIR"), "tests", "mock-cli", NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, cli);
    g_ptr_array_add(argv, "mock");
    va_list ap;
    va_start(ap, err);
    for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(argv, (char *)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GError) e = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv((const char *const *)argv->pdata,
                                                 G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                                 G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                 G_SUBPROCESS_FLAGS_STDERR_PIPE, &e);
    g_assert_no_error(e);
    g_subprocess_communicate_utf8(p, input, NULL, out, err, &e);
    g_assert_no_error(e);
    g_test_message("stdout: %s\nstderr: %s", *out, *err);
    return g_subprocess_get_exit_status(p);
}

gboolean jet_test_read_handlings(const char *path, guint host, GArray *out)
{
    g_autofree char *text = NULL;
    if (!jet_test_read_lines(path, &text))
        return FALSE;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        unsigned long long seq = 0;
        long long end = 0, start = 0;
        JetTestHandling x = { .host = host };
        g_assert_cmpint(sscanf(*l, "%llu %u %*s %lld %*u %*u %c %lld", &seq, &x.deliveries, &end, &x.verdict, &start),
                        ==, 5);
        x.seq = seq;
        x.start_ns = start;
        x.end_ns = end;
        g_array_append_val(out, x);
    }
    return TRUE;
}
