/* retry.so through the core, without a server: every item of the fault
 * grammar, the counts it reads, bad grammar, the default option, abort and
 * the decision log. */
#include "plugin_drive.h"

#include <stdlib.h>

static JetPlugin *retry;

#define FAULT "Jethost-Fault"

/* One delivery of a message whose header is `fault` (NULL: none), with the
 * host's counts as given. */
static int decide(JetInstance *inst, const char *fault, uint32_t deliveries, uint32_t failures,
                  uint32_t postpones, jet_msg *m)
{
    drive_msg_init(m, "rehearsal", "x", 1);
    m->deliveries = deliveries;
    m->failures = failures;
    m->postpones = postpones;
    if (fault != NULL)
        drive_msg_header(m, FAULT, fault);
    int v = drive_handle(inst, m);
    drive_msg_clear(m);
    return v;
}

static void test_no_fault_acks(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, NULL);
    jet_msg m;
    g_assert_cmpint(decide(inst, NULL, 1, 0, 0, &m), ==, JET_ACK);
    g_assert_cmpint(decide(inst, "ack", 5, 2, 2, &m), ==, JET_ACK);
    g_assert_cmpint(decide(inst, " ack ; ", 1, 0, 0, &m), ==, JET_ACK);
    g_assert_cmpuint(jet_instance_descriptor(inst)->flags & JET_PLUGIN_THREAD_SAFE, !=, 0);
}

static void test_fail_n_then_succeed(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, NULL);
    jet_msg m;
    /* The host's ledger count of earlier failures decides, not deliveries:
     * a redelivery after a postpone is not a failure. */
    for (uint32_t f = 0; f < 3; f++) {
        g_assert_cmpint(decide(inst, "fail=3", f + 5, f, 4, &m), ==, JET_RETRY);
        g_assert_cmpstr(m.reason, ==, "fault injection: fail");
    }
    g_assert_cmpint(decide(inst, "fail=3", 4, 3, 0, &m), ==, JET_ACK);
    g_assert_cmpint(decide(inst, "fail=3", 9, 7, 0, &m), ==, JET_ACK);
    g_assert_cmpint(decide(inst, "fail=0", 1, 0, 0, &m), ==, JET_RETRY);   /* 0: always */
    g_assert_cmpint(decide(inst, "fail", 50, 49, 0, &m), ==, JET_RETRY);   /* always */
    g_assert_cmpint(decide(inst, "fail=1;reason=db down", 1, 0, 0, &m), ==, JET_RETRY);
    g_assert_cmpstr(m.reason, ==, "db down");
}

static void test_fail_counts_deliveries(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, "count", "deliveries", NULL);
    jet_msg m;
    g_assert_cmpint(decide(inst, "fail=2", 1, 0, 0, &m), ==, JET_RETRY);
    g_assert_cmpint(decide(inst, "fail=2", 2, 0, 0, &m), ==, JET_RETRY);
    g_assert_cmpint(decide(inst, "fail=2", 3, 0, 0, &m), ==, JET_ACK);
    g_assert_cmpint(decide(inst, "fail=2", 0, 0, 0, &m), ==, JET_RETRY);   /* never below zero */
}

static void test_postpone_times(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, NULL);
    jet_msg m;
    for (uint32_t p = 0; p < 2; p++) {
        g_assert_cmpint(decide(inst, "postpone=2s;times=2", p + 1, 0, p, &m), ==, JET_POSTPONE);
        g_assert_true(m.has_delay);
        g_assert_cmpuint(m.delay_ms, ==, 2000);
    }
    g_assert_cmpint(decide(inst, "postpone=2s;times=2", 3, 0, 2, &m), ==, JET_ACK);
    g_assert_false(m.has_delay);
    /* Without times: every delivery (the binding's horizon ends it). */
    g_assert_cmpint(decide(inst, "postpone=250ms", 40, 0, 39, &m), ==, JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, 250);
    g_assert_cmpint(decide(inst, "times=1 ; postpone=1m", 1, 0, 0, &m), ==, JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, 60000);
}

static gint64 fake_now;

static gint64 fake_clock(gpointer data)
{
    (void)data;
    return fake_now;
}

static void test_postpone_until(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, NULL);
    jet_instance_set_clock(inst, fake_clock, NULL);
    jet_msg m;
    /* 2030-01-01T00:00:00Z is 1893456000 s after the epoch. */
    const gint64 t = G_GINT64_CONSTANT(1893456000) * G_GINT64_CONSTANT(1000000000);

    fake_now = t - G_GINT64_CONSTANT(90) * 1000000000 - 1;   /* 90 s and 1 ns before */
    g_assert_cmpint(decide(inst, "postpone_until=2030-01-01T00:00:00Z", 1, 0, 0, &m), ==, JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, 90001);   /* rounded up: never early */
    /* The same instant with an offset and a fraction. */
    g_assert_cmpint(decide(inst, "postpone_until=2030-01-01T01:30:00.5+01:30", 1, 0, 0, &m), ==,
                    JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, 90501);
    /* With postpone=D, steps of at most D. */
    g_assert_cmpint(decide(inst, "postpone_until=2030-01-01T00:00:00Z;postpone=30s", 1, 0, 0, &m),
                    ==, JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, 30000);

    fake_now = t;
    g_assert_cmpint(decide(inst, "postpone_until=2030-01-01T00:00:00Z", 4, 0, 3, &m), ==, JET_ACK);
    fake_now = t + 1;
    g_assert_cmpint(decide(inst, "postpone_until=2029-12-31t23:59:59z", 4, 0, 3, &m), ==, JET_ACK);

    /* The last whole second unix nanoseconds hold, seen from the earliest
     * clock: the distance is beyond int64_t, and is still exact. */
    fake_now = G_MININT64;
    g_assert_cmpint(decide(inst, "postpone_until=2262-04-11T23:47:16Z", 1, 0, 0, &m), ==, JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, G_GUINT64_CONSTANT(18446744072855));
    fake_now = t;
    g_assert_cmpint(decide(inst, "postpone_until=2262-04-11T23:47:16.854775807Z", 1, 0, 0, &m), ==,
                    JET_POSTPONE);
    g_assert_cmpuint(m.delay_ms, ==, G_GUINT64_CONSTANT(7329916036855));
}

static void test_reject(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, NULL);
    jet_msg m;
    g_assert_cmpint(decide(inst, "reject", 1, 0, 0, &m), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "fault injection: reject");
    g_assert_cmpint(decide(inst, "reject;reason=bad order = 7", 1, 0, 0, &m), ==, JET_REJECT);
    g_assert_cmpstr(m.reason, ==, "bad order = 7");
}

static void test_sleep_and_hang(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, NULL);
    jet_msg m;
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(decide(inst, "sleep=200ms", 1, 0, 0, &m), ==, JET_ACK);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 200000);

    t0 = g_get_monotonic_time();
    g_assert_cmpint(decide(inst, "sleep=100ms;fail=1", 1, 0, 0, &m), ==, JET_RETRY);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 100000);

    t0 = g_get_monotonic_time();
    g_assert_cmpint(decide(inst, "hang=200ms", 1, 0, 0, &m), ==, JET_ACK);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 200000);

    /* A stopping host cuts a sleep short, never a hang. */
    jet_instance_set_stopping(inst);
    t0 = g_get_monotonic_time();
    g_assert_cmpint(decide(inst, "sleep=10s", 1, 0, 0, &m), ==, JET_ACK);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5000000);   /* not the 10 s */
    t0 = g_get_monotonic_time();
    g_assert_cmpint(decide(inst, "hang=300ms", 1, 0, 0, &m), ==, JET_ACK);
    g_assert_cmpint(g_get_monotonic_time() - t0, >=, 300000);
}

static void test_bad_grammar_rejects(void)
{
    static const struct {
        const char *fault, *needle;
    } bad[] = {
        { "explode=1", "unknown fault 'explode' in 'explode=1'" },
        { "fail=x", "fail: 'x' is not a count" },
        { "fail=-1", "fail: '-1'" },
        { "postpone=10", "postpone: '10' is not a positive duration" },
        { "postpone=0", "postpone: '0'" },
        { "postpone", "postpone: ''" },
        { "postpone=5 parsecs", "'5 parsecs'" },
        { "postpone_until=tomorrow", "postpone_until: 'tomorrow' is not an RFC 3339 time" },
        { "postpone_until=2030-02-30T00:00:00Z", "'2030-02-30T00:00:00Z'" },
        /* Past what int64_t nanoseconds hold: refused, not wrapped into the past. */
        { "postpone_until=2263-01-01T00:00:00Z", "'2263-01-01T00:00:00Z' is out of range" },
        { "postpone_until=2262-04-11T23:47:16.854775808Z", "is out of range" },
        { "postpone_until=9999-12-31T23:59:59Z", "is out of range" },
        { "postpone_until=1600-01-01T00:00:00Z", "is out of range" },
        { "postpone_until=0000-01-01T00:00:00+23:59", "is out of range" },
        { "times=2", "times goes with postpone=D only" },
        { "fail=2;times=2", "times goes with postpone=D only" },
        { "reject;fail=2", "more than one verdict in 'reject;fail=2'" },
        { "postpone=1s;reject", "postpone cannot be combined" },
        { "sleep=fast", "sleep: 'fast' is not a duration" },
        { "hang=1s;hang=2s", "'hang' given twice" },
        { "abort=now", "'abort=now' takes no value" },
        { "", "empty fault item in ''" },
        { "fail=1;;", "empty fault item" },
        { "ack;reason=why", "reason goes with a verdict" },
    };
    g_autoptr(JetInstance) inst = drive_start(retry, NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        jet_msg m;
        g_assert_cmpint(decide(inst, bad[i].fault, 1, 0, 0, &m), ==, JET_REJECT);
        g_test_message("%s -> %s", bad[i].fault, m.reason);
        g_assert_true(g_str_has_prefix(m.reason, FAULT ": "));
        g_assert_false(m.reason_too_long);
        drive_assert_contains(m.reason, bad[i].needle);
    }
    /* A very long header still fits the reason limit. */
    g_autofree char *longtext = g_strnfill(1000, 'z');
    jet_msg m;
    g_assert_cmpint(decide(inst, longtext, 1, 0, 0, &m), ==, JET_REJECT);
    g_assert_false(m.reason_too_long);
}

static void test_default_option(void)
{
    g_autoptr(JetInstance) inst = drive_start(retry, "default", "fail=1", "header", "X-Fault", NULL);
    jet_msg m;
    drive_msg_init(&m, "d", "x", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_RETRY);
    m.failures = 1;
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
    /* The configured header overrides the default; the usual name is not read. */
    m.failures = 0;
    drive_msg_header(&m, "X-Fault", "reject");
    drive_msg_header(&m, FAULT, "ack");
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_REJECT);
    drive_msg_clear(&m);

    static const struct {
        const char *key, *value, *needle;
    } bad[] = {
        { "default", "fail=many", "option.default: fail: 'many' is not a count" },
        { "default", "bogus", "option.default: unknown fault 'bogus'" },
        { "count", "attempts", "option.count: 'attempts' is not failures or deliveries" },
        { "header", "Bad Header", "option.header: 'Bad Header' is not a header name" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *msg = drive_start_error(retry, bad[i].key, bad[i].value, NULL);
        drive_assert_contains(msg, bad[i].needle);
    }
}

static void test_abort(void)
{
    if (g_test_subprocess()) {
        g_autoptr(JetInstance) inst = drive_start(retry, NULL);
        jet_msg m;
        decide(inst, "abort", 1, 0, 0, &m);
        return;   /* not reached */
    }
    g_test_trap_subprocess(NULL, 10 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*header 'abort' -> abort()*");
}

static void test_decisions_logged(void)
{
    if (g_test_subprocess()) {
        g_autoptr(JetInstance) inst = drive_start(retry, NULL);
        jet_msg m;
        decide(inst, "fail=2", 1, 0, 0, &m);
        decide(inst, "fail=2", 3, 2, 0, &m);
        decide(inst, "postpone=2s;times=1", 1, 0, 0, &m);
        decide(inst, "nonsense", 1, 0, 0, &m);
        decide(inst, NULL, 1, 0, 0, &m);
        return;
    }
    g_test_trap_subprocess(NULL, 10 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stdout("");
    g_test_trap_assert_stderr("*level=info*seq 1 delivery 1 failures 0: header 'fail=2' -> RETRY (failure 1 of 2)*"
                              "seq 1 delivery 3 failures 2: header 'fail=2' -> ACK (after 2 failures)*"
                              "header 'postpone=2s;times=1' -> POSTPONE 2000 ms (postpone 1 of 1)*"
                              "bad fault header -> REJECT: " FAULT ": unknown fault 'nonsense'*"
                              "no fault -> ACK*");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    /* The decision log is checked at info, whatever the caller's level. */
    g_setenv("JETHOST_LOG_LEVEL", "info", TRUE);
    retry = drive_plugin("retry");
    g_test_add_func("/retry/no-fault-acks", test_no_fault_acks);
    g_test_add_func("/retry/fail-n-then-succeed", test_fail_n_then_succeed);
    g_test_add_func("/retry/fail-counts-deliveries", test_fail_counts_deliveries);
    g_test_add_func("/retry/postpone-times", test_postpone_times);
    g_test_add_func("/retry/postpone-until", test_postpone_until);
    g_test_add_func("/retry/reject", test_reject);
    g_test_add_func("/retry/sleep-and-hang", test_sleep_and_hang);
    g_test_add_func("/retry/bad-grammar-rejects", test_bad_grammar_rejects);
    g_test_add_func("/retry/default-option", test_default_option);
    g_test_add_func("/retry/abort", test_abort);
    g_test_add_func("/retry/decisions-logged", test_decisions_logged);
    return g_test_run();
}
