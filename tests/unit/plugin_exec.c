/* exec.so through the core, without a server: one test per mapped exit
 * status, the time limit, a garbage postpone delay, the environment, command
 * splitting, and a large payload through stdin. */
#include "plugin_drive.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static JetPlugin *exec_plugin;

/* Runs one message through a shell command; returns the verdict. */
static int run_sh(const char *script, jet_msg *m, const void *payload, size_t len)
{
    g_autoptr(JetInstance) inst = drive_start(exec_plugin, "command", script, "shell", "true",
                                              "timeout", "10s", NULL);
    drive_msg_init(m, "orders.new", payload, len);
    return drive_handle(inst, m);
}

static void test_exit_0_acks(void)
{
    g_autoptr(JetInstance) inst = drive_start(exec_plugin, "command", "true", NULL);
    jet_msg m;
    drive_msg_init(&m, "s", "x", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
    g_assert_false(m.has_reason);
    g_assert_cmpuint(jet_instance_descriptor(inst)->flags & JET_PLUGIN_THREAD_SAFE, !=, 0);
}

static void test_exit_75_retries(void)
{
    jet_msg m;
    g_assert_cmpint(run_sh("echo 'database busy' >&2; exit 75", &m, "x", 1), ==, JET_RETRY);
    g_assert_cmpstr(m.reason, ==, "database busy");
    g_assert_cmpint(run_sh("exit 75", &m, "x", 1), ==, JET_RETRY);
    g_assert_cmpstr(m.reason, ==, "exit 75 (EX_TEMPFAIL)");
}

static void test_exit_76_postpones(void)
{
    jet_msg m;
    g_assert_cmpint(run_sh("echo 30s; exit 76", &m, "x", 1), ==, JET_POSTPONE);
    g_assert_true(m.has_delay);
    g_assert_cmpuint(m.delay_ms, ==, 30000);
    g_assert_cmpint(run_sh("printf '1500\\r\\nignored\\n'; exit 76", &m, "x", 1), ==, JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, 1500);
    g_assert_cmpint(run_sh("echo ' 2m '; echo 'not yet' >&2; exit 76", &m, "x", 1), ==, JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, 120000);
    g_assert_cmpstr(m.reason, ==, "not yet");
}

static void test_exit_76_garbage_delay_retries(void)
{
    static const char *const scripts[] = {
        "echo 'soon please'; exit 76",
        "exit 76",                       /* no stdout at all */
        "echo 0; exit 76",               /* not positive */
        "echo 10parsecs; exit 76",
        "head -c 5000 /dev/urandom; exit 76",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(scripts); i++) {
        jet_msg m;
        g_assert_cmpint(run_sh(scripts[i], &m, "x", 1), ==, JET_RETRY);
        g_test_message("%s -> %s", scripts[i], m.reason);
        g_assert_false(m.has_delay);
        g_assert_false(m.reason_too_long);
        drive_assert_contains(m.reason, "exit 76 (postpone) with a bad delay on stdout");
    }
    jet_msg m;
    run_sh("echo 'soon please'; exit 76", &m, "x", 1);
    drive_assert_contains(m.reason, "'soon please'");
}

static void test_other_exit_rejects(void)
{
    jet_msg m;
    g_assert_cmpint(run_sh("echo 'no such customer' >&2; echo second >&2; exit 3", &m, "x", 1), ==,
                    JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "no such customer");
    g_assert_cmpint(run_sh("exit 1", &m, "x", 1), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "exit 1");
    /* Truncated to the reason limit. */
    g_assert_cmpint(run_sh("head -c 1000 /dev/zero | tr '\\0' e >&2; exit 2", &m, "x", 1), ==, JET_REJECT);
    g_assert_false(m.reason_too_long);
    g_assert_cmpuint(strlen(m.reason), ==, JET_REASON_MAX);
}

static void test_signal_rejects(void)
{
    jet_msg m;
    g_assert_cmpint(run_sh("kill -SEGV $$", &m, "x", 1), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "killed by SIGSEGV (11)");
    g_assert_cmpint(run_sh("echo 'crashing' >&2; kill -KILL $$", &m, "x", 1), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "crashing");
}

static gboolean pid_gone(gpointer data)
{
    pid_t pid = GPOINTER_TO_INT(data);
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return TRUE;
    /* Reparented and killed, waiting for its new parent to reap it. */
    g_autofree char *stat_path = g_strdup_printf("/proc/%d/stat", (int)pid);
    g_autofree char *stat = NULL;
    if (!g_file_get_contents(stat_path, &stat, NULL, NULL))
        return TRUE;
    const char *close = strrchr(stat, ')');
    return close != NULL && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

static void test_timeout_kills_the_group(void)
{
    /* Without a shell: sleep 10, a 200 ms limit. */
    g_autoptr(JetInstance) inst = drive_start(exec_plugin, "command", "sleep 10", "timeout", "200ms", NULL);
    jet_msg m;
    drive_msg_init(&m, "s", "x", 1);
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_RETRY);
    gint64 took = g_get_monotonic_time() - t0;
    g_assert_cmpstr(m.reason, ==, "timeout");
    g_assert_cmpint(took, >=, 200000);
    g_assert_cmpint(took, <, 8000000);   /* not the sleep's 10 s, on a busy machine too */

    /* A shell that started a grandchild: both die, the child is reaped. */
    g_autofree char *pids = g_build_filename(jet_test_private_dir(), "pids", NULL);
    g_autofree char *script = g_strdup_printf("sleep 10 & echo $$ $! > '%s'; wait", pids);
    g_autoptr(JetInstance) sh = drive_start(exec_plugin, "command", script, "shell", "true",
                                            "timeout", "300ms", NULL);
    t0 = g_get_monotonic_time();
    g_assert_cmpint(drive_handle(sh, &m), ==, JET_RETRY);
    g_assert_cmpstr(m.reason, ==, "timeout");
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 8000000);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(pids, &text, NULL, NULL));
    int child = 0, grandchild = 0;
    g_assert_cmpint(sscanf(text, "%d %d", &child, &grandchild), ==, 2);
    g_assert_cmpint(kill(child, 0), ==, -1);   /* killed and reaped: no zombie left */
    g_assert_cmpint(errno, ==, ESRCH);
    g_assert_true(jet_test_wait_until(pid_gone, GINT_TO_POINTER(grandchild), 8000));
}

static void test_env_vars(void)
{
    jet_msg m;
    g_assert_cmpint(run_sh("echo $JETHOST_STREAM_SEQ >&2; exit 3", &m, "x", 1), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "1");

    g_autoptr(JetInstance) inst = drive_start(
        exec_plugin, "command",
        "printf '%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s' \"$JETHOST_SUBJECT\" \"$JETHOST_STREAM\" "
        "\"$JETHOST_STREAM_SEQ\" \"$JETHOST_DELIVERIES\" \"$JETHOST_FAILURES\" \"$JETHOST_POSTPONES\" "
        "\"$JETHOST_ENQUEUED_NS\" \"$JETHOST_HDR_TRACE_ID\" \"$JETHOST_HDR_X_MULTI\" "
        "\"${JETHOST_SPOOF-unset}\" \"$JETHOST_BINDING\" | tr '\\n' '+' >&2; exit 3",
        "shell", "true", NULL);
    g_setenv("JETHOST_SPOOF", "inherited", TRUE);   /* never passed on */
    drive_msg_init(&m, "orders.eu", "x", 1);
    m.stream_seq = 42;
    m.deliveries = 4;
    m.failures = 2;
    m.postpones = 1;
    m.has_enqueued = TRUE;
    m.enqueued_ns = G_GINT64_CONSTANT(1714564800000000007);
    drive_msg_header(&m, "Trace-Id", "abc");
    drive_msg_header(&m, "x-multi", "1");
    drive_msg_header(&m, "X-Multi", "2");
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_REJECT);
    drive_msg_clear(&m);
    g_unsetenv("JETHOST_SPOOF");
    g_assert_cmpstr(m.reason, ==, "orders.eu|ORDERS|42|4|2|1|1714564800000000007|abc|1+2|unset|b");

    /* Unknown enqueue time: the variable is unset. */
    g_assert_cmpint(run_sh("echo ${JETHOST_ENQUEUED_NS-unset} >&2; exit 3", &m, "x", 1), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "unset");
}

static void test_inherit_env(void)
{
    g_setenv("JET_TEST_MARK", "from-host", TRUE);
    jet_msg m;
    g_assert_cmpint(run_sh("echo ${JET_TEST_MARK-unset} >&2; exit 3", &m, "x", 1), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "from-host");
    g_autoptr(JetInstance) inst = drive_start(exec_plugin, "command", "echo ${JET_TEST_MARK-unset} >&2; exit 3",
                                              "shell", "true", "inherit_env", "false", NULL);
    drive_msg_init(&m, "s", "x", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "unset");
    g_unsetenv("JET_TEST_MARK");
}

static void test_no_shell_splitting(void)
{
    /* Quotes group words; nothing is expanded by the split itself. */
    g_autoptr(JetInstance) inst = drive_start(
        exec_plugin, "command",
        "/bin/sh -c 'printf \"%s|\" \"$0\" \"$@\" >&2; exit 3' \"a b\" 'c d' e\\ f '$HOME' \"q\\\"q\" ''",
        NULL);
    jet_msg m;
    drive_msg_init(&m, "s", "x", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "a b|c d|e f|$HOME|q\"q||");

    static const struct {
        const char *command, *needle;
    } bad[] = {
        { "echo 'open", "option.command: unterminated '" },
        { "echo \"open", "option.command: unterminated \"" },
        { "echo \\", "trailing \\" },
        { "   ", "option.command is empty" },
        { "no-such-program-jethost --x", "'no-such-program-jethost' is not found in PATH" },
        { "/nonexistent/prog", "/nonexistent/prog is not executable" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *msg = drive_start_error(exec_plugin, "command", bad[i].command, NULL);
        drive_assert_contains(msg, bad[i].needle);
    }
    g_autofree char *msg = drive_start_error(exec_plugin, "command", "true", "timeout", "0", NULL);
    drive_assert_contains(msg, "option.timeout must be positive");
    g_autofree char *msg2 = drive_start_error(exec_plugin, NULL);
    drive_assert_contains(msg2, "option.command: plugin exec requires it");
}

static void test_large_payload(void)
{
    const size_t len = 1024 * 1024;
    g_autofree unsigned char *payload = g_malloc(len);
    for (size_t i = 0; i < len; i++)
        payload[i] = (unsigned char)(i * 7 + 3);
    jet_msg m;
    /* All of stdin arrives. */
    g_assert_cmpint(run_sh("wc -c | tr -d ' ' >&2; exit 3", &m, payload, len), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "1048576");
    /* The command echoes it all back while it reads: stdout is drained while
     * stdin is fed, so neither blocks. */
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(JetInstance) cat = drive_start(exec_plugin, "command", "cat", "timeout", "5s", NULL);
    drive_msg_init(&m, "s", payload, len);
    g_assert_cmpint(drive_handle(cat, &m), ==, JET_ACK);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 4000000);
    /* And on stderr too, before an exit 3. */
    g_assert_cmpint(run_sh("cat >&2; exit 3", &m, payload, len), ==, JET_REJECT);
    /* A command that reads nothing: the host is not killed by SIGPIPE. */
    g_autoptr(JetInstance) t = drive_start(exec_plugin, "command", "true", NULL);
    drive_msg_init(&m, "s", payload, len);
    g_assert_cmpint(drive_handle(t, &m), ==, JET_ACK);
}

struct runner {
    JetInstance *inst;
    int id;
    int ok;
};

static gpointer run_many(gpointer data)
{
    struct runner *r = data;
    for (int i = 0; i < 10; i++) {
        g_autofree char *payload = g_strdup_printf("%d-%d", r->id, i);
        jet_msg m;
        drive_msg_init(&m, "s", payload, strlen(payload));
        if (drive_handle(r->inst, &m) == JET_REJECT && strcmp(m.reason, payload) == 0)
            r->ok++;
    }
    return NULL;
}

static void test_threads(void)
{
    /* Several workers at once: each sees its own stdin and stderr. */
    g_autoptr(JetInstance) inst = drive_start(exec_plugin, "command", "cat >&2; exit 3", "shell", "true", NULL);
    struct runner r[4];
    GThread *t[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (struct runner){ inst, i, 0 };
        t[i] = g_thread_new("r", run_many, &r[i]);
    }
    for (int i = 0; i < 4; i++) {
        g_thread_join(t[i]);
        g_assert_cmpint(r[i].ok, ==, 10);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    exec_plugin = drive_plugin("exec");
    g_test_add_func("/exec/exit-0-acks", test_exit_0_acks);
    g_test_add_func("/exec/exit-75-retries", test_exit_75_retries);
    g_test_add_func("/exec/exit-76-postpones", test_exit_76_postpones);
    g_test_add_func("/exec/exit-76-garbage-delay-retries", test_exit_76_garbage_delay_retries);
    g_test_add_func("/exec/other-exit-rejects", test_other_exit_rejects);
    g_test_add_func("/exec/signal-rejects", test_signal_rejects);
    g_test_add_func("/exec/timeout-kills-the-group", test_timeout_kills_the_group);
    g_test_add_func("/exec/env-vars", test_env_vars);
    g_test_add_func("/exec/inherit-env", test_inherit_env);
    g_test_add_func("/exec/no-shell-splitting", test_no_shell_splitting);
    g_test_add_func("/exec/large-payload", test_large_payload);
    g_test_add_func("/exec/threads", test_threads);
    return g_test_run();
}
