/* The shipped plugins (paced, retry, exec) through the mock host
 * (include/jethost/mock.h), loaded by path like the daemon loads them: each
 * delivery is settled by the daemon's own decision code, so these tests check
 * what the host would do with each plugin's answer, not only the answer. */
#include "harness.h"

#include <jethost/mock.h>
#include <jethost/plugin.h>

#include <glib.h>
#include <string.h>

/* Loads a private copy of the built plugin NAME, with options as
 * name, value, ..., NULL, and starts it.  Violations abort (the default):
 * a plugin that breaks a rule fails the test. */
static jet_mock *start_plugin(const char *name, ...) G_GNUC_NULL_TERMINATED;

static jet_mock *start_plugin(const char *name, ...)
{
    g_autofree char *path = jet_test_plugin_copy(name);
    char err[512];
    jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
    if (m == NULL)
        g_error("load %s: %s", path, err);
    va_list ap;
    va_start(ap, name);
    for (const char *k = va_arg(ap, const char *); k != NULL; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        g_assert_cmpint(jet_mock_set_option(m, k, v), ==, JET_MOCK_OK);
    }
    va_end(ap);
    /* Binding NAME on stream ORDERS; a short ladder and three attempts:
     * the numbers below follow from them. */
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "100ms, 200ms"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "max_attempts", "3"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "max_postpone_delay", "10s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_binding(m, name, "ORDERS", name), ==, JET_MOCK_OK);
    int rc = jet_mock_start(m);
    if (rc != JET_MOCK_OK)
        g_error("start %s: %s: %s", name, jet_mock_strerror(rc), jet_mock_error(m));
    return m;
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (haystack == NULL || strstr(haystack, needle) == NULL)
        g_error("expected '%s' in: %s", needle, haystack != NULL ? haystack : "(null)");
}

/* Delivers b and checks the delivery was handled and broke no rule. */
static void deliver(jet_mock *m, jet_mock_msg *b, jet_mock_settlement *s)
{
    g_assert_cmpint(jet_mock_deliver(m, b, s), ==, JET_MOCK_OK);
    g_assert_true(s->handled);
    g_assert_null(s->violation);
    g_assert_false(s->plugin_error);
    /* A reason may carry a command's garbage: keep the TAP comment ASCII. */
    g_autofree char *reason = g_strescape(s->reason, NULL);
    g_test_message("seq %" G_GUINT64_FORMAT " delivery %u: %s (delay %" G_GUINT64_FORMAT " ms, cause %s, reason '%s')",
                   s->stream_seq, s->deliveries, s->action_name, s->delay_ms, s->cause, reason);
}

/* Redelivers b after s, moving the clock by the NAK delay. */
static void redeliver(jet_mock *m, jet_mock_msg *b, const jet_mock_settlement *s)
{
    g_assert_cmpint(jet_mock_msg_redeliver(b, s), ==, JET_MOCK_OK);
    jet_mock_clock_advance_ms(m, s->delay_ms);
}

/* ------------------------------------------------------------------------ */
/* paced                                                                    */
/* ------------------------------------------------------------------------ */

static char *read_all(const char *path)
{
    g_autoptr(GError) err = NULL;
    char *text = NULL;
    g_file_get_contents(path, &text, NULL, &err);
    g_assert_no_error(err);
    return text;
}

static void test_paced_writes_and_acks(void)
{
    g_autofree char *path = g_build_filename(jet_test_private_dir(), "mock-paced.jsonl", NULL);
    jet_mock *m = start_plugin("paced", "path", path, "fsync", "always", NULL);

    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    jet_mock_msg_set_text(b, "{\"id\":7}");
    jet_mock_msg_add_header(b, "Trace", "a");
    jet_mock_msg_add_header(b, "Region", "eu");
    jet_mock_msg_add_header(b, "Trace", "b");
    jet_mock_msg_set_seq(b, 42, 40);
    jet_mock_msg_set_deliveries(b, 2);
    jet_mock_msg_set_enqueued_ns(b, G_GINT64_CONSTANT(1714564800000000007));
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpstr(s.outcome, ==, "acked");
    g_assert_false(s.is_failure);
    g_assert_cmpstr(s.reason, ==, "");
    jet_mock_msg_free(b);

    /* A binary payload, no headers, an unknown enqueue time. */
    b = jet_mock_msg_new(m, "orders.bin");
    jet_mock_msg_set_data(b, "\x00\xff", 2);
    jet_mock_msg_clear_enqueued(b);
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    jet_mock_msg_free(b);

    g_autofree char *text = read_all(path);
    g_assert_cmpstr(text, ==,
                    "{\"subject\":\"orders.new\",\"stream\":\"ORDERS\",\"stream_seq\":42,\"deliveries\":2,"
                    "\"enqueued\":\"2024-05-01T12:00:00.000000007Z\","
                    "\"headers\":{\"Trace\":[\"a\",\"b\"],\"Region\":[\"eu\"]},\"payload\":\"{\\\"id\\\":7}\"}\n"
                    "{\"subject\":\"orders.bin\",\"stream\":\"ORDERS\",\"stream_seq\":2,\"deliveries\":1,"
                    "\"enqueued\":null,\"headers\":{},\"payload_b64\":\"AP8=\"}\n");
    jet_mock_free(m);
}

static void test_paced_write_error_retries(void)
{
    /* /dev/full fails every write (ENOSPC): the host retries on the ladder. */
    jet_mock *m = start_plugin("paced", "path", "/dev/full", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    jet_mock_msg_set_text(b, "x");
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_true(s.is_failure);
    g_assert_cmpuint(s.failure_number, ==, 1);
    g_assert_cmpuint(s.delay_ms, ==, 100);
    assert_contains(s.reason, "write /dev/full");
    assert_contains(s.reason, "(ENOSPC)");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* ------------------------------------------------------------------------ */
/* retry                                                                    */
/* ------------------------------------------------------------------------ */

static jet_mock_msg *fault_msg(jet_mock *m, const char *fault)
{
    jet_mock_msg *b = jet_mock_msg_new(m, "rehearsal");
    jet_mock_msg_set_text(b, "x");
    if (fault != NULL)
        jet_mock_msg_add_header(b, "Jethost-Fault", fault);
    return b;
}

static void test_retry_fail_n(void)
{
    jet_mock *m = start_plugin("retry", NULL);
    jet_mock_msg *b = fault_msg(m, "fail=2");
    jet_mock_settlement s;

    /* Failure 1 on rung 1, failure 2 on rung 2, then the ack: the ledger
     * (msg_failures) walks with jet_mock_msg_redeliver. */
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_true(s.is_failure);
    g_assert_cmpuint(s.failure_number, ==, 1);
    g_assert_cmpuint(s.delay_ms, ==, 100);
    g_assert_cmpstr(s.reason, ==, "fault injection: fail");
    redeliver(m, b, &s);

    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_cmpuint(s.failure_number, ==, 2);
    g_assert_cmpuint(s.deliveries, ==, 2);
    g_assert_cmpuint(s.delay_ms, ==, 200);
    redeliver(m, b, &s);

    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s.deliveries, ==, 3);
    g_assert_false(s.is_failure);
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_ESTATE);

    /* Every decision was logged. */
    g_assert_cmpuint(jet_mock_log_contains(m, "header 'fail=2' -> RETRY (failure 1 of 2)"), ==, 1);
    g_assert_cmpuint(jet_mock_log_contains(m, "header 'fail=2' -> RETRY (failure 2 of 2)"), ==, 1);
    g_assert_cmpuint(jet_mock_log_contains(m, "seq 1 delivery 3 failures 2: header 'fail=2' -> ACK (after 2 failures)"), ==, 1);
    jet_mock_msg_free(b);

    /* fail (always) walks the whole ladder: exhausted at max_attempts. */
    b = fault_msg(m, "fail");
    for (uint32_t k = 1; k <= 2; k++) {
        deliver(m, b, &s);
        g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
        g_assert_cmpuint(s.failure_number, ==, k);
        redeliver(m, b, &s);
    }
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "exhausted");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Cause"), ==, "exhausted");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Failures"), ==, "3");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_retry_reject(void)
{
    jet_mock *m = start_plugin("retry", NULL);
    jet_mock_msg *b = fault_msg(m, "reject;reason=bad id");
    jet_mock_msg_add_header(b, "Order", "7");
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "rejected");
    g_assert_cmpstr(s.outcome, ==, "dead-lettered");
    g_assert_cmpstr(s.reason, ==, "bad id");
    g_assert_cmpstr(s.dlq_subject, ==, "jethost.dlq.retry");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Cause"), ==, "rejected");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Reason"), ==, "bad id");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Origin-Seq"), ==, "1");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Plugin"), ==, "retry");
    /* The fault header travels renamed; the others as they were. */
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Orig-Jethost-Fault"), ==, "reject;reason=bad id");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Order"), ==, "7");
    jet_mock_msg_free(b);

    /* Without a reason, the default; bad grammar is rejected naming the header. */
    b = fault_msg(m, "reject");
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.reason, ==, "fault injection: reject");
    jet_mock_msg_free(b);
    b = fault_msg(m, "explode=1");
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "rejected");
    g_assert_cmpstr(s.reason, ==, "Jethost-Fault: unknown fault 'explode' in 'explode=1'");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_retry_postpone_times(void)
{
    jet_mock *m = start_plugin("retry", NULL);
    jet_mock_msg *b = fault_msg(m, "postpone=1s;times=1");
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_POSTPONE);
    g_assert_cmpuint(s.delay_ms, ==, 1000);
    g_assert_false(s.is_failure);   /* within the horizon: no attempt spent */
    g_assert_cmpstr(s.outcome, ==, "postponed");
    g_assert_cmpstr(s.reason, ==, "fault injection: postpone");
    redeliver(m, b, &s);
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s.deliveries, ==, 2);
    g_assert_cmpuint(jet_mock_log_contains(m, "-> POSTPONE 1000 ms (postpone 1 of 1)"), ==, 1);
    g_assert_cmpuint(jet_mock_log_contains(m, "-> ACK (after 1 postpones)"), ==, 1);
    jet_mock_msg_free(b);

    /* No header: the default option decides; unset, an ACK. */
    b = fault_msg(m, NULL);
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    jet_mock_msg_free(b);
    jet_mock_free(m);

    m = start_plugin("retry", "default", "postpone=2s", NULL);
    b = fault_msg(m, NULL);
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_POSTPONE);
    g_assert_cmpuint(s.delay_ms, ==, 2000);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_retry_abort(void)
{
    if (g_test_subprocess()) {
        jet_mock *m = start_plugin("retry", NULL);
        jet_mock_set_log_echo(m, 1);
        jet_mock_msg *b = fault_msg(m, "abort");
        jet_mock_settlement s;
        jet_mock_deliver(m, b, &s);
        g_print("not reached");   /* stdout must stay empty */
        return;
    }
    g_test_trap_subprocess(NULL, 10 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stdout("");
    g_test_trap_assert_stderr("*seq 1 delivery 1: header 'abort' -> abort()*");
}

/* ------------------------------------------------------------------------ */
/* exec                                                                     */
/* ------------------------------------------------------------------------ */

/* One delivery of a message through a shell command. */
static void exec_sh(const char *script, const char *timeout, jet_mock_settlement *s, jet_mock **keep)
{
    jet_mock *m = start_plugin("exec", "command", script, "shell", "true", "timeout", timeout, NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    jet_mock_msg_set_text(b, "payload");
    deliver(m, b, s);
    jet_mock_msg_free(b);
    *keep = m;   /* the settlement's strings live until the mock is freed */
}

static void test_exec_exit_0_acks(void)
{
    jet_mock *m;
    jet_mock_settlement s;
    /* The payload arrives on stdin. */
    exec_sh("test \"$(cat)\" = payload", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpint(s.verdict, ==, JET_ACK);
    jet_mock_free(m);
    exec_sh("test \"$(cat)\" = other", "10s", &s, &m);
    g_assert_cmpint(s.action, !=, JET_MOCK_ACK);
    jet_mock_free(m);
}

static void test_exec_exit_75_retries(void)
{
    jet_mock *m;
    jet_mock_settlement s;
    exec_sh("echo 'database busy' >&2; exit 75", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_true(s.is_failure);
    g_assert_cmpuint(s.failure_number, ==, 1);
    g_assert_cmpuint(s.delay_ms, ==, 100);
    g_assert_cmpstr(s.reason, ==, "database busy");
    jet_mock_free(m);
    exec_sh("exit 75", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_cmpstr(s.reason, ==, "exit 75 (EX_TEMPFAIL)");
    jet_mock_free(m);
}

static void test_exec_exit_76_postpones(void)
{
    jet_mock *m;
    jet_mock_settlement s;
    exec_sh("echo 2s; echo 'warehouse closed' >&2; exit 76", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_POSTPONE);
    g_assert_false(s.is_failure);
    g_assert_cmpuint(s.delay_ms, ==, 2000);
    g_assert_cmpstr(s.reason, ==, "warehouse closed");
    jet_mock_free(m);
    exec_sh("echo 1500; exit 76", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_POSTPONE);
    g_assert_cmpuint(s.delay_ms, ==, 1500);
    jet_mock_free(m);
}

static void test_exec_garbage_delay_retries(void)
{
    static const char *const scripts[] = {
        "echo 'soon please'; exit 76",
        "exit 76",
        "echo 0; exit 76",
        "head -c 3000 /dev/urandom; exit 76",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(scripts); i++) {
        jet_mock *m;
        jet_mock_settlement s;
        exec_sh(scripts[i], "10s", &s, &m);
        g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
        g_assert_true(s.is_failure);
        assert_contains(s.reason, "exit 76 (postpone) with a bad delay on stdout");
        if (i == 0)
            assert_contains(s.reason, "'soon please'");
        jet_mock_free(m);
    }
    /* A long line of UTF-8 text is quoted cut on a character boundary. */
    jet_mock *m;
    jet_mock_settlement s;
    exec_sh("printf 'x'; for i in 1 2 3 4 5 6 7 8; do printf '\303\251\303\251\303\251\303\251\303\251'; done;"
            " echo; exit 76", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    assert_contains(s.reason, "with a bad delay on stdout: 'x\xc3\xa9");
    g_assert_true(g_utf8_validate(s.reason, -1, NULL));
    jet_mock_free(m);
}

static void test_exec_other_exit_rejects(void)
{
    jet_mock *m;
    jet_mock_settlement s;
    exec_sh("echo 'no such customer' >&2; echo 'second line' >&2; exit 3", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "rejected");
    g_assert_cmpstr(s.reason, ==, "no such customer");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Reason"), ==, "no such customer");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Plugin"), ==, "exec");
    jet_mock_free(m);
    exec_sh("exit 1", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.reason, ==, "exit 1");
    jet_mock_free(m);
    exec_sh("kill -SEGV $$", "10s", &s, &m);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.reason, ==, "killed by SIGSEGV (11)");
    jet_mock_free(m);
}

static void test_exec_timeout_retries(void)
{
    jet_mock *m;
    jet_mock_settlement s;
    gint64 t0 = g_get_monotonic_time();
    exec_sh("echo started >&2; sleep 10", "300ms", &s, &m);
    gint64 took = g_get_monotonic_time() - t0;
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_true(s.is_failure);
    g_assert_cmpstr(s.reason, ==, "timeout");
    g_assert_cmpint(took, >=, 300000);
    g_assert_cmpint(took, <, 5000000);
    jet_mock_free(m);
}

/* A delay beyond the binding's max_postpone_delay: the mock reports the
 * rule and settles it as the daemon would, as a failure. */
static void test_exec_postpone_over_cap(void)
{
    g_autofree char *path = jet_test_plugin_copy("exec");
    char err[512];
    jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    jet_mock_set_option(m, "command", "echo 1m; exit 76");
    jet_mock_set_option(m, "shell", "true");
    g_assert_cmpint(jet_mock_set_policy(m, "max_postpone_delay", "10s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_VIOLATION);
    g_assert_cmpstr(s.violation, ==, "postpone-cap");
    g_assert_cmpint(s.verdict, ==, JET_POSTPONE);
    g_assert_true(s.is_failure);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/plugins-mock/paced/writes-and-acks", test_paced_writes_and_acks);
    g_test_add_func("/plugins-mock/paced/write-error-retries", test_paced_write_error_retries);
    g_test_add_func("/plugins-mock/retry/fail-n", test_retry_fail_n);
    g_test_add_func("/plugins-mock/retry/reject", test_retry_reject);
    g_test_add_func("/plugins-mock/retry/postpone-times", test_retry_postpone_times);
    g_test_add_func("/plugins-mock/retry/abort", test_retry_abort);
    g_test_add_func("/plugins-mock/exec/exit-0-acks", test_exec_exit_0_acks);
    g_test_add_func("/plugins-mock/exec/exit-75-retries", test_exec_exit_75_retries);
    g_test_add_func("/plugins-mock/exec/exit-76-postpones", test_exec_exit_76_postpones);
    g_test_add_func("/plugins-mock/exec/garbage-delay-retries", test_exec_garbage_delay_retries);
    g_test_add_func("/plugins-mock/exec/other-exit-rejects", test_exec_other_exit_rejects);
    g_test_add_func("/plugins-mock/exec/timeout-retries", test_exec_timeout_retries);
    g_test_add_func("/plugins-mock/exec/postpone-over-cap", test_exec_postpone_over_cap);
    return g_test_run();
}
