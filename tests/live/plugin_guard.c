/* The plugin guard (host/core/plugin_guard.h): a plugin that ends or clones the
 * process from inside handle().
 *
 * Against a real nats-server, `jethost run` with fx_gate:
 * - exit(0) in handle() on stream seq K: the host exits 4, not 0, with one
 *   plugin-exit line naming the binding, the plugin and K; the next host
 *   handles K as a suspect (alone) and finishes the stream;
 * - fork() in handle() on stream seq K, both processes returning ACK: the
 *   child exits at once (a zombie of the host or gone, never a second
 *   consumer), the parent logs plugin-forked, every message is handled and
 *   acked once, SIGTERM still drains with 0;
 * - the shipped exec plugin (posix_spawn per message) runs under the guard
 *   without a single plugin-forked line, even at debug level.
 * In a subprocess of this test, without a server: the lines' exact form,
 * exit() on a plugin's own thread while a handler runs, exit() on the host's
 * thread or with no handler running (not reported), exit() in a forked child
 * (its own business), and the once-per-binding warning. */
#include "harness.h"
#include "log.h"
#include "plugin_guard.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HB "idle_heartbeat = 500ms\nexpires = 2s\n"

typedef struct {
    jsCtx *js;
    guint64 floor;
} FloorWait;

static gboolean floor_reached(gpointer data)
{
    FloorWait *fw = data;
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, fw->js, "ORDERS", "c", NULL, NULL) != NATS_OK)
        return FALSE;
    gboolean ok = ci->AckFloor.Stream >= fw->floor && ci->NumAckPending == 0 && ci->NumPending == 0;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

static GSubprocess *spawn_host(const char *url, const char *plugin, const char *name, const char *extra,
                               char **errlog)
{
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nname = %s\n\n[binding t]\nplugin = %s\nstream = ORDERS\nconsumer = c\n"
        "subjects = orders.>\nack_wait = 2s\n" HB "%s",
        url, name, plugin, extra);
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    g_autofree char *errfile = g_strdup_printf("%s.stderr", name);
    *errlog = g_build_filename(jet_test_private_dir(), errfile, NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    return jet_test_jethost_spawn(*errlog, args);
}

static char *read_text(const char *path)
{
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

/* The one line of text holding needle (asserted to be exactly one). */
static char *the_line(const char *text, const char *needle)
{
    g_assert_cmpuint(jet_test_count_lines(text, needle), ==, 1);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL; l++)
        if (strstr(*l, needle) != NULL)
            return g_strdup(*l);
    return NULL;
}

/* fx_gate's handled.log: how often each stream seq was handled, and at
 * which deliveries (seq -> GArray of guint). */
static GHashTable *handled(const char *dir, guint *lines)
{
    GHashTable *t = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    *lines = 0;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return t;
    g_auto(GStrv) ls = g_strsplit(text, "\n", -1);
    for (char **l = ls; *l != NULL && **l; l++) {
        char *end = NULL;
        guint64 seq = g_ascii_strtoull(*l, &end, 10);
        guint deliveries = (guint)g_ascii_strtoull(end, NULL, 10);
        GArray *a = g_hash_table_lookup(t, GSIZE_TO_POINTER(seq));
        if (a == NULL) {
            a = g_array_new(FALSE, FALSE, sizeof(guint));
            g_hash_table_insert(t, GSIZE_TO_POINTER(seq), a);
        }
        g_array_append_val(a, deliveries);
        (*lines)++;
    }
    return t;
}

static char *gate_dir(const char *name)
{
    char *dir = g_build_filename(jet_test_private_dir(), name, NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    return dir;
}

/* ========================================================================== */

static void test_exit_in_handle(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    const guint n = 20;
    const guint64 k = 7;
    jet_test_publish_n(js, "orders.new", n);
    g_autofree char *dir = gate_dir("exit");
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");

    g_autofree char *extra = g_strdup_printf("batch = 5\noption.dir = %s\noption.exit_seq = %" G_GUINT64_FORMAT "\n",
                                             dir, k);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host(jet_test_server_url(srv), plugin, "exit-1", extra, &errlog);
    /* Not 0: a supervisor's Restart=on-failure restarts it. */
    g_assert_cmpint(jet_test_jethost_wait(host, 60000), ==, 4);
    g_autofree char *log = read_text(errlog);
    g_autofree char *line = the_line(log, "event=plugin-exit");
    g_test_message("%s", line);
    g_assert_nonnull(strstr(line, "level=error binding=t event=plugin-exit"));
    g_assert_nonnull(strstr(line, "plugin fx_gate called exit() in handle() on stream seq 7;"));
    g_assert_nonnull(strstr(line, "status 4"));
    g_assert_null(strstr(log, "event=exit"));   /* not a drain */
    guint lines = 0;
    g_autoptr(GHashTable) h1 = handled(dir, &lines);
    g_assert_cmpuint(lines, ==, k);

    /* The next host: seq 7 was in hand, so its next delivery is unexplained,
     * a suspect handled alone, and the stream is finished. */
    g_autofree char *extra2 = g_strdup_printf("batch = 5\noption.dir = %s\n", dir);
    g_autofree char *errlog2 = NULL;
    g_autoptr(GSubprocess) host2 = spawn_host(jet_test_server_url(srv), plugin, "exit-2", extra2, &errlog2);
    FloorWait fw = { js, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    g_subprocess_send_signal(host2, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host2, 20000), ==, 0);
    g_autofree char *log2 = read_text(errlog2);
    g_autofree char *suspect = the_line(log2, "event=suspect seq=7 delivery=2 msg=\"stream seq 7 ");
    g_test_message("%s", suspect);
    g_assert_nonnull(strstr(suspect, "stream seq 7 (delivery 2): 1 deliveries unexplained"));
    g_assert_cmpuint(jet_test_count_lines(log2, "event=plugin-exit"), ==, 0);

    g_autoptr(GHashTable) h2 = handled(dir, &lines);
    g_assert_cmpuint(g_hash_table_size(h2), ==, n);
    GArray *seven = g_hash_table_lookup(h2, GSIZE_TO_POINTER(k));
    g_assert_nonnull(seven);
    g_assert_cmpuint(seven->len, ==, 2);
    g_assert_cmpuint(g_array_index(seven, guint, 0), ==, 1);
    g_assert_cmpuint(g_array_index(seven, guint, 1), ==, 2);
    jet_test_js_close(nc, js);
}

/* /proc/PID/stat: gone, or a zombie (exited, not yet reaped by the host). */
static gboolean process_ended(gpointer data)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", GPOINTER_TO_INT(data));
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return TRUE;
    const char *p = strrchr(text, ')');   /* the state follows the command name */
    return p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static void test_fork_in_handle(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    const guint n = 20;
    jet_test_publish_n(js, "orders.new", n);
    g_autofree char *dir = gate_dir("fork");
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *extra = g_strdup_printf("batch = 5\noption.dir = %s\noption.fork_seq = 5\n", dir);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host(jet_test_server_url(srv), plugin, "fork", extra, &errlog);

    g_autofree char *pid_file = g_build_filename(dir, "fork-child-5", NULL);
    g_assert_true(jet_test_wait_file(pid_file, 30000));
    g_autofree char *pid_text = read_text(pid_file);
    int child = atoi(pid_text);
    g_assert_cmpint(child, >, 1);
    /* A child that lived on would be a second consumer on the host's
     * connection: end it before failing, it outlives this test. */
    gboolean ended = jet_test_wait_until(process_ended, GINT_TO_POINTER(child), 20000);
    if (!ended)
        kill(child, SIGKILL);
    g_assert_true(ended);

    FloorWait fw = { js, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    g_assert_nonnull(g_subprocess_get_identifier(host));   /* still running */
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);

    guint lines = 0;
    g_autoptr(GHashTable) h = handled(dir, &lines);
    g_assert_cmpuint(lines, ==, n);
    g_assert_cmpuint(g_hash_table_size(h), ==, n);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "c");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, n);
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);

    g_autofree char *log = read_text(errlog);
    g_autofree char *forked = the_line(log, "event=plugin-forked");
    g_test_message("%s", forked);
    g_assert_nonnull(strstr(forked, "level=warning binding=t event=plugin-forked"));
    g_assert_nonnull(strstr(forked, "plugin fx_gate called fork() in handle() on stream seq 5:"));
    g_autofree char *returned = the_line(log, "event=plugin-fork-returned");
    g_test_message("%s", returned);
    g_autofree char *who = g_strdup_printf("level=error binding=t event=plugin-fork-returned msg=\"pid %d: ", child);
    g_assert_nonnull(strstr(returned, who));
    g_assert_nonnull(strstr(returned, "plugin fx_gate in handle() (stream seq 5)"));
    /* One drain, by the parent. */
    g_assert_cmpuint(jet_test_count_lines(log, "event=exit "), ==, 1);
    jet_test_js_close(nc, js);
}

static void test_exec_plugin_unaffected(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    const guint n = 20;
    jet_test_publish_n(js, "orders.new", n);
    g_autofree char *plugin = jet_test_plugin_copy("exec");
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host(jet_test_server_url(srv), plugin, "exec",
                                             "workers = 2\noption.command = cat\n", &errlog);
    FloorWait fw = { js, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
    g_autofree char *log = read_text(errlog);
    /* At debug level (main()): not even the quiet form of plugin-forked. */
    g_assert_cmpuint(jet_test_count_lines(log, "level=debug"), >, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "event=plugin-fork"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "event=plugin-exit"), ==, 0);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "c");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, n);
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    jet_test_js_close(nc, js);
}

/* --- in a subprocess of this test: no server ------------------------------- */

/* A handler calls exit(): on a worker thread, as in the daemon. */
static gpointer handler_exits(gpointer data)
{
    static gint noted;
    (void)data;
    jet_guard_enter("b", "p \"q\"", 9, &noted);
    exit(0);
}

static void test_exit_own_thread(void)
{
    if (g_test_subprocess()) {
        jet_guard_install();
        g_thread_join(g_thread_new("worker", handler_exits, NULL));
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("ts=*Z level=error binding=b event=plugin-exit msg=\"plugin p \\\"q\\\" called "
                              "exit() in handle() on stream seq 9; ending the process with status 4 *\"\n");
}

typedef struct {
    GMutex lock;
    GCond cond;
    gboolean in_handle;
} Held;

static gpointer hold_in_handle(gpointer data)
{
    Held *h = data;
    static gint noted;
    jet_guard_enter("b2", "p2", 11, &noted);
    g_mutex_lock(&h->lock);
    h->in_handle = TRUE;
    g_cond_broadcast(&h->cond);
    for (;;)   /* until the process ends */
        g_cond_wait(&h->cond, &h->lock);
    return NULL;
}

static void wait_in_handle(Held *h)
{
    g_thread_unref(g_thread_new("handler", hold_in_handle, h));
    g_mutex_lock(&h->lock);
    while (!h->in_handle)
        g_cond_wait(&h->cond, &h->lock);
    g_mutex_unlock(&h->lock);
}

static gpointer plugin_thread_exits(gpointer data)
{
    (void)data;
    exit(0);
}

/* A plugin's own thread calls exit() while a handler runs. */
static void test_exit_other_thread(void)
{
    if (g_test_subprocess()) {
        static Held h;
        jet_guard_install();
        wait_in_handle(&h);
        g_thread_join(g_thread_new("plugin's own", plugin_thread_exits, NULL));
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*level=error binding=b2 event=plugin-exit msg=\"exit() was called on a plugin's "
                              "own thread while plugin p2 handled stream seq 11; *");
}

/* The host's own thread (main() returning) while a handler runs: the
 * host's decision and status, not a plugin's. */
static void test_exit_host_thread(void)
{
    if (g_test_subprocess()) {
        static Held h;
        jet_guard_install();
        wait_in_handle(&h);
        exit(0);
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr_unmatched("*plugin-exit*");
}

static void test_exit_no_handler(void)
{
    if (g_test_subprocess()) {
        static gint noted;
        jet_guard_install();
        jet_guard_enter("b", "p", 3, &noted);
        jet_guard_leave();
        exit(0);
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr_unmatched("*plugin-exit*");
}

/* A log line's ts=. */
static GDateTime *line_time(const char *line)
{
    g_assert_true(g_str_has_prefix(line, "ts="));
    g_autofree char *ts = g_strndup(line + 3, strcspn(line + 3, " "));
    return g_date_time_new_from_iso8601(ts, NULL);
}

/* One fork in a "handler": the child comes back through leave() and
 * exits 4; returns its pid. */
static pid_t fork_in_handle(const char *binding, guint64 seq, gint *noted)
{
    jet_guard_enter(binding, "forky", seq, noted);
    pid_t child = fork();
    g_assert_cmpint(child, >=, 0);
    jet_guard_leave();   /* the child does not return from here */
    int status = 0;
    g_assert_cmpint(waitpid(child, &status, 0), ==, child);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 4);
    return child;
}

static void test_fork_lines(void)
{
    if (g_test_subprocess()) {
        static gint noted_a, noted_b, noted_c;
        jet_guard_install();
        jet_log_set_level(JET_LOG_DEBUG);
        /* A child that ends itself with exit(), as it should, is not the host
         * ending: its status stands and nothing is reported.  First, before
         * this process has a private directory its atexit would remove. */
        jet_guard_enter("c", "forky", 20, &noted_c);
        pid_t exits = fork();
        if (exits == 0)
            exit(0);
        jet_guard_leave();
        int status = -1;
        g_assert_cmpint(waitpid(exits, &status, 0), ==, exits);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);

        jet_test_stderr_begin("fork-lines.stderr");
        pid_t first = fork_in_handle("a", 21, &noted_a);
        fork_in_handle("a", 22, &noted_a);
        fork_in_handle("b", 23, &noted_b);
        /* Outside handle(): not the guard's business. */
        pid_t quiet = fork();
        if (quiet == 0)
            _exit(0);
        g_assert_cmpint(waitpid(quiet, NULL, 0), ==, quiet);
        g_autofree char *log = jet_test_stderr_end();

        g_assert_cmpuint(jet_test_count_lines(log, "event=plugin-forked"), ==, 3);
        g_assert_cmpuint(jet_test_count_lines(log, "level=warning binding=a event=plugin-forked"), ==, 1);
        g_assert_cmpuint(jet_test_count_lines(log, "level=debug binding=a event=plugin-forked"), ==, 1);
        g_assert_cmpuint(jet_test_count_lines(log, "level=warning binding=b event=plugin-forked"), ==, 1);
        g_assert_cmpuint(jet_test_count_lines(log, "on stream seq 21: "), ==, 1);
        g_assert_cmpuint(jet_test_count_lines(log, "event=plugin-fork-returned"), ==, 3);
        /* The child's line, written without malloc or stdio, has the
         * form of every other line. */
        g_autofree char *pattern = g_strdup_printf(
            "^ts=\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z level=error binding=a "
            "event=plugin-fork-returned msg=\"pid %d: a process forked by plugin forky in handle\\(\\) "
            "\\(stream seq 21\\) returned into the host; it exits 4 now, touching nothing of the host's\"$",
            (int)first);
        g_autoptr(GRegex) re = g_regex_new(pattern, G_REGEX_MULTILINE, 0, NULL);
        g_assert_nonnull(re);
        g_assert_true(g_regex_match(re, log, 0, NULL));
        /* Its timestamp (its own date arithmetic: gmtime_r is not
         * async-signal-safe) agrees with jet_log's on the parent's line,
         * written at about the same time (before or after it). */
        g_autofree char *warned = the_line(log, "on stream seq 21: ");
        g_autofree char *child_pid = g_strdup_printf("msg=\"pid %d: ", (int)first);
        g_autofree char *returned = the_line(log, child_pid);
        g_autoptr(GDateTime) t_warned = line_time(warned);
        g_autoptr(GDateTime) t_returned = line_time(returned);
        g_assert_nonnull(t_warned);
        g_assert_nonnull(t_returned);
        GTimeSpan gap = g_date_time_difference(t_returned, t_warned);
        g_assert_cmpint(ABS(gap), <, 60 * G_TIME_SPAN_SECOND);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr_unmatched("*plugin-exit*");
}

int main(int argc, char **argv)
{
    /* Every jethost this test starts logs at debug level (exec-plugin-unaffected
     * counts the quiet form of plugin-forked too); set while single-threaded. */
    g_setenv("JETHOST_LOG_LEVEL", "debug", TRUE);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/plugin-guard/exit/own-thread", test_exit_own_thread);
    g_test_add_func("/plugin-guard/exit/other-thread", test_exit_other_thread);
    g_test_add_func("/plugin-guard/exit/host-thread", test_exit_host_thread);
    g_test_add_func("/plugin-guard/exit/no-handler", test_exit_no_handler);
    g_test_add_func("/plugin-guard/fork/lines", test_fork_lines);
    g_test_add_func("/plugin-guard/exit-in-handle", test_exit_in_handle);
    g_test_add_func("/plugin-guard/fork-in-handle", test_fork_in_handle);
    g_test_add_func("/plugin-guard/exec-plugin-unaffected", test_exec_plugin_unaffected);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
