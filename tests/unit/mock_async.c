/* Pending deliveries on the mock host (docs/async.md): handle() returns
 * JET_PENDING, the plugin completes from another thread (its reason, its
 * publishes), jet_mock_settle_completed() settles each as handle()'s
 * verdict, in completion order; one not completed within handler_timeout
 * on the mock clock is hung and its late completion settled as late;
 * a completion during handle(); the misuses (completed twice, a call after
 * the completion, JET_PENDING without max_in_flight); a stop with some
 * pending.  No server. */
#include <jethost/mock.h>

#include "harness.h"

#include <glib/gstdio.h>

#include <string.h>

static const jet_host_api *ah;

/* What handle() does, by payload: "pend" keeps it, "early" completes it
 * (ACK) inside handle() and returns JET_PENDING, "both" completes it and
 * returns JET_ACK itself. */
#define KEEP_MAX 8
static jet_msg *kept[KEEP_MAX];
static size_t n_kept;

static int a_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    (void)c;
    (void)err;
    (void)err_len;
    *state = NULL;
    return 0;
}

static int a_handle(void *state, jet_msg *m)
{
    (void)state;
    size_t len = 0;
    const char *data = ah->msg_data(m, &len);
    if (len == 5 && memcmp(data, "early", 5) == 0) {
        g_assert_cmpint(ah->msg_complete(m, JET_ACK), ==, JET_OK);
        return JET_PENDING;
    }
    if (len == 4 && memcmp(data, "both", 4) == 0) {
        g_assert_cmpint(ah->msg_complete(m, JET_ACK), ==, JET_OK);
        return JET_ACK;
    }
    g_assert_cmpuint(n_kept, <, KEEP_MAX);
    kept[n_kept++] = m;
    return JET_PENDING;
}

static const jet_plugin async_plugin = {
    JET_PLUGIN_HEADER,
    .name = "asyncfx",
    .version = "1",
    .init = a_init,
    .handle = a_handle,
};

static const jet_plugin *async_entry(const jet_host_api *h)
{
    ah = h;
    return &async_plugin;
}

static jet_mock *started(const char *max_in_flight)
{
    n_kept = 0;
    char err[256];
    jet_mock *m = jet_mock_new_static(async_entry, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    if (max_in_flight != NULL)
        g_assert_cmpint(jet_mock_set_policy(m, "max_in_flight", max_in_flight), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "1s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "handler_timeout", "30s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    return m;
}

static int deliver_text(jet_mock *m, const char *payload, jet_mock_settlement *s)
{
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    jet_mock_msg_set_text(b, payload);
    int rc = jet_mock_deliver(m, b, s);
    jet_mock_msg_free(b);   /* the mock keeps its own copy of a pending one */
    return rc;
}

/* What the plugin's I/O thread does when the answer comes. */
typedef struct {
    jet_msg *m;
    int verdict;
    const char *reason;
    const char *publish_to;
    int rc;
} Completion;

static gpointer complete_thread(gpointer data)
{
    Completion *c = data;
    if (c->reason != NULL)
        ah->msg_set_reason(c->m, c->reason);
    if (c->publish_to != NULL)
        ah->msg_publish(c->m, c->publish_to, NULL, "x", 1);
    c->rc = ah->msg_complete(c->m, c->verdict);
    return NULL;
}

static int complete_elsewhere(jet_msg *m, int verdict, const char *reason, const char *publish_to)
{
    Completion c = { m, verdict, reason, publish_to, 0 };
    g_thread_join(g_thread_new("io", complete_thread, &c));
    return c.rc;
}

static void test_complete_later(void)
{
    jet_mock *m = started("10");
    jet_mock_settlement s;
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_PENDING);
    g_assert_cmpstr(s.outcome, ==, "pending");
    g_assert_cmpint(s.verdict, ==, JET_PENDING);
    g_assert_cmpuint(jet_mock_pending(m), ==, 1);
    /* Nothing completed yet. */
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_ESTATE);
    g_assert_nonnull(strstr(jet_mock_error(m), "none of the 1 pending"));

    g_assert_cmpint(complete_elsewhere(kept[0], JET_ACK, NULL, "out.1"), ==, JET_OK);
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpstr(s.outcome, ==, "acked");
    g_assert_cmpuint(s.n_publishes, ==, 1);
    g_assert_cmpstr(s.publishes[0].subject, ==, "out.1");
    g_assert_cmpuint(jet_mock_pending(m), ==, 0);
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);

    /* A retry from the completion, with its reason, through the ladder;
     * two pending settled in the order they were completed. */
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(jet_mock_pending(m), ==, 2);
    g_assert_cmpint(complete_elsewhere(kept[2], JET_RETRY, "the API answered 503", NULL), ==, JET_OK);
    g_assert_cmpint(complete_elsewhere(kept[1], JET_ACK, NULL, NULL), ==, JET_OK);
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 3);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_cmpuint(s.delay_ms, ==, 1000);
    g_assert_cmpstr(s.reason, ==, "the API answered 503");
    g_assert_true(s.is_failure);
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 2);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
    jet_mock_free(m);
}

/* Pending past handler_timeout on the mock clock: hung, still pending;
 * its late completion is settled (outcome "late"), as the daemon settles
 * a hung handler's return.  One completed in time and settled after the
 * clock moved on is not late. */
static void test_late(void)
{
    jet_mock *m = started("10");
    jet_mock_settlement s;
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(complete_elsewhere(kept[1], JET_ACK, NULL, NULL), ==, JET_OK);
    jet_mock_clock_advance_ms(m, 30000);   /* at the limit: not past it */
    jet_mock_clock_advance_ms(m, 1);
    g_assert_cmpuint(jet_mock_pending(m), ==, 2);
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 2);
    g_assert_cmpstr(s.outcome, ==, "acked");   /* completed before the limit */
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_ESTATE);
    g_assert_cmpint(complete_elsewhere(kept[0], JET_RETRY, "too late anyway", NULL), ==, JET_OK);
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 1);
    g_assert_cmpstr(s.outcome, ==, "late");
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_cmpstr(s.reason, ==, "too late anyway");
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
    g_assert_cmpuint(jet_mock_pending(m), ==, 0);
    jet_mock_free(m);
}

static void test_early(void)
{
    jet_mock *m = started("10");
    jet_mock_settlement s;
    g_assert_cmpint(deliver_text(m, "early", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);   /* settled at once */
    g_assert_cmpuint(jet_mock_pending(m), ==, 0);
    /* Completed, then a verdict of its own: the verdict is settled, the
     * completion a violation. */
    g_assert_cmpint(deliver_text(m, "both", &s), ==, JET_MOCK_VIOLATION);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpstr(s.violation, ==, "verdict");
    jet_mock_free(m);
}

static void test_misuse(void)
{
    jet_mock *m = started("10");
    jet_mock_settlement s;
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(complete_elsewhere(kept[0], JET_ACK, NULL, NULL), ==, JET_OK);
    /* A second completion, and a call after the first: refused, violations. */
    size_t before = jet_mock_violation_count(m);
    g_assert_cmpint(ah->msg_complete(kept[0], JET_ACK), ==, JET_ESTATE);
    g_assert_null(ah->msg_subject(kept[0]));
    g_assert_cmpuint(jet_mock_violation_count(m), ==, before + 2);
    g_assert_cmpstr(jet_mock_violation_rule(m, before), ==, "use-after-handle");
    g_assert_cmpint(jet_mock_settle_completed(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    /* Not a verdict. */
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(ah->msg_complete(kept[1], 7), ==, JET_EINVAL);
    g_assert_cmpint(ah->msg_complete(kept[1], JET_PENDING), ==, JET_EINVAL);
    jet_mock_free(m);

    /* Without max_in_flight JET_PENDING is a plugin error. */
    m = started(NULL);
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_VIOLATION);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_true(s.plugin_error);
    g_assert_cmpstr(s.reason, ==, "plugin error: handle() returned JET_PENDING on a binding without max_in_flight "
                                  "(docs/async.md)");
    g_assert_cmpuint(jet_mock_pending(m), ==, 0);
    jet_mock_free(m);
}

/* A stop settles what is pending, given up; the plugin's completion after
 * it is refused quietly. */
static void test_stop(void)
{
    jet_mock *m = started("10");
    jet_mock_settlement s;
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(deliver_text(m, "pend", &s), ==, JET_MOCK_OK);
    g_assert_cmpint(complete_elsewhere(kept[0], JET_ACK, NULL, NULL), ==, JET_OK);
    g_assert_cmpint(jet_mock_stop(m), ==, JET_MOCK_OK);
    g_assert_cmpuint(jet_mock_pending(m), ==, 0);
    g_assert_cmpint(complete_elsewhere(kept[1], JET_ACK, NULL, NULL), ==, JET_ESTATE);
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
    jet_mock_free(m);
}

/* DIR/async.log holds n lines: fx_gate completed n deliveries. */
typedef struct {
    const char *path;
    guint n;
} AsyncLog;

static gboolean completed_n(gpointer data)
{
    const AsyncLog *a = data;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(a->path, &text, NULL, NULL))
        return FALSE;
    guint lines = 0;
    for (const char *c = text; *c != '\0'; c++)
        lines += *c == '\n';
    return lines >= a->n;
}

/* `jethost mock` with max_in_flight: two deliveries go pending (one line
 * each, action "pending"); once the plugin's own thread has completed them,
 * an {"event": "settle_completed"} line prints their settlements, in the
 * order completed. The plugin completes nothing before both pending lines
 * are read (async_hold): a completion that came while handle() still ran
 * would settle at once, as /mock-async/early shows. */
static void test_cli_settle_completed(void)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "cli-async", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *dir_opt = g_strdup_printf("dir=%s", dir);
    g_autofree char *cli = g_build_filename(g_getenv("JET_BUILDDIR"), "tests", "mock-cli", NULL);
    const char *argv[] = { cli,       "mock",       "--plugin", plugin,          "--option",  dir_opt,
                           "--option", "async=1ms", "--option", "async_hold=true", "--option", "seq_verdicts=2=reject",
                           "--policy", "max_in_flight=4", "--quiet", NULL };
    g_autoptr(GError) e = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
                                                 &e);
    g_assert_no_error(e);
    GOutputStream *in = g_subprocess_get_stdin_pipe(p);
    g_autoptr(GDataInputStream) out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(p));
    static const char deliveries[] = "{\"subject\": \"orders.new\", \"data\": \"a\"}\n"
                                     "{\"subject\": \"orders.new\", \"data\": \"b\"}\n";
    g_assert_true(g_output_stream_write_all(in, deliveries, strlen(deliveries), NULL, NULL, &e));
    g_assert_true(g_output_stream_flush(in, NULL, &e));
    char *lines[5] = { NULL };
    for (guint i = 0; i < 2; i++) {
        lines[i] = g_data_input_stream_read_line_utf8(out, NULL, NULL, &e);
        g_assert_no_error(e);
        g_assert_nonnull(lines[i]);
        g_test_message("stdout: %s", lines[i]);
        g_assert_nonnull(strstr(lines[i], "\"action\":\"pending\""));
        g_assert_nonnull(strstr(lines[i], "\"outcome\":\"pending\""));
    }
    g_autofree char *go = g_build_filename(dir, "async-go", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, &e));
    g_autofree char *log = g_build_filename(dir, "async.log", NULL);
    AsyncLog al = { log, 2 };
    g_assert_true(jet_test_wait_until(completed_n, &al, 20000));
    /* The first event settles both; the second has nothing left to settle. */
    static const char settle[] = "{\"event\": \"settle_completed\"}\n{\"event\": \"settle_completed\"}\n";
    g_assert_true(g_output_stream_write_all(in, settle, strlen(settle), NULL, NULL, &e));
    g_assert_true(g_output_stream_close(in, NULL, &e));
    guint n = 2;
    for (char *l; n < G_N_ELEMENTS(lines) && (l = g_data_input_stream_read_line_utf8(out, NULL, NULL, &e)) != NULL;)
        lines[n++] = l;
    g_assert_no_error(e);
    g_assert_true(g_subprocess_wait_check(p, NULL, &e));
    g_assert_no_error(e);
    for (guint i = 2; i < n; i++)
        g_test_message("stdout: %s", lines[i]);
    g_assert_cmpuint(n, ==, 4);
    g_assert_nonnull(strstr(lines[2], "\"stream_seq\":1,"));
    g_assert_nonnull(strstr(lines[2], "\"outcome\":\"acked\""));
    g_assert_nonnull(strstr(lines[3], "\"stream_seq\":2,"));
    g_assert_nonnull(strstr(lines[3], "\"cause\":\"rejected\""));
    for (guint i = 0; i < n; i++)
        g_free(lines[i]);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mock-async/complete-later", test_complete_later);
    g_test_add_func("/mock-async/late", test_late);
    g_test_add_func("/mock-async/early", test_early);
    g_test_add_func("/mock-async/misuse", test_misuse);
    g_test_add_func("/mock-async/stop", test_stop);
    g_test_add_func("/mock-async/cli-settle-completed", test_cli_settle_completed);
    return g_test_run();
}
