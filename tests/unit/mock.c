/* The mock host (include/jethost/mock.h, host/mock/mock.c, host/cmd/mock_cli.c).
 *
 * Each strict rule has a test here that fails when the rule is removed from
 * the mock; settlements are compared with the daemon's decision function
 * called directly; the clock drives ctx_now_ns() and postpone horizons. */
#include "harness.h"
#include "settle.h"

#include <jethost/mock.h>
#include <jethost/plugin.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <glib.h>
#include <string.h>

#define T0_NS   G_GINT64_CONSTANT(1704067200000000000)   /* the mock's start clock */
#define MS_NS   G_GINT64_CONSTANT(1000000)

/* --- a plugin linked into this test (jet_mock_new_static) ----------------- */

static const jet_host_api *st_host;

static const jet_option st_options[] = {
    { .name = "greeting", .type = JET_OPT_STRING, .default_value = "hello", .help = "logged at init" },
    { .name = NULL }
};

static int st_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    st_host->ctx_log(c, JET_LOG_INFO, "init: %s from %s", st_host->ctx_option(c, "greeting"),
                     st_host->ctx_name(c));
    *state = c;
    return 0;
}

/* Logs the clock and the stop flag; answers the header "verdict". */
static int st_handle(void *state, jet_msg *m)
{
    jet_ctx *c = state;
    st_host->ctx_log(c, JET_LOG_DEBUG, "now=%lld stopping=%d", (long long)st_host->ctx_now_ns(c),
                     st_host->ctx_stopping(c));
    const char *v = st_host->msg_header(m, "verdict");
    if (v != NULL && strcmp(v, "retry") == 0)
        return JET_RETRY;
    return JET_ACK;
}

static const jet_plugin st_plugin = {
    JET_PLUGIN_HEADER,
    .name = "linked",
    .version = "9.9.9",
    .options = st_options,
    .init = st_init,
    .handle = st_handle,
};

static const jet_plugin *st_entry(const jet_host_api *h)
{
    st_host = h;
    return &st_plugin;
}

static const jet_plugin st_newer = {
    .struct_size = sizeof(jet_plugin),
    .abi_major = JET_ABI_MAJOR,
    .abi_minor = JET_ABI_MINOR + 1,
    .name = "newer",
    .version = "1",
    .init = st_init,
    .handle = st_handle,
};

static const jet_plugin *st_newer_entry(const jet_host_api *h)
{
    (void)h;
    return &st_newer;
}

/* --- helpers ---------------------------------------------------------------- */

/* A mock of a fixture plugin copied to the private directory, in record
 * mode, with options "k=v" (NULL-terminated); started unless start is FALSE. */
static jet_mock *fixture(const char *name, gboolean start, ...) G_GNUC_NULL_TERMINATED;

static jet_mock *fixture(const char *name, gboolean start, ...)
{
    g_autofree char *path = jet_test_plugin_copy(name);
    char err[512];
    jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
    if (m == NULL)
        g_error("load %s: %s", path, err);
    jet_mock_set_abort_on_violation(m, 0);
    va_list ap;
    va_start(ap, start);
    for (const char *kv = va_arg(ap, const char *); kv != NULL; kv = va_arg(ap, const char *)) {
        g_auto(GStrv) parts = g_strsplit(kv, "=", 2);
        g_assert_cmpint(jet_mock_set_option(m, parts[0], parts[1]), ==, JET_MOCK_OK);
    }
    va_end(ap);
    if (start) {
        int rc = jet_mock_start(m);
        if (rc != JET_MOCK_OK)
            g_error("start %s: %s", name, jet_mock_error(m));
    }
    return m;
}

static jet_mock_msg *msg_with(jet_mock *m, const char *subject, const char *verdict)
{
    jet_mock_msg *b = jet_mock_msg_new(m, subject);
    if (verdict != NULL)
        jet_mock_msg_add_header(b, "verdict", verdict);
    return b;
}

static void assert_contains(const char *haystack, const char *needle)
{
    g_assert_nonnull(haystack);
    if (strstr(haystack, needle) == NULL)
        g_error("expected '%s' in: %s", needle, haystack);
}

/* A rule broken once: the delivery reports it, with the rule named. */
static void assert_violation(jet_mock *m, int rc, const jet_mock_settlement *s, const char *rule,
                             const char *needle)
{
    g_assert_cmpint(rc, ==, JET_MOCK_VIOLATION);
    g_assert_cmpstr(s->violation, ==, rule);
    size_t n = jet_mock_violation_count(m);
    g_assert_cmpuint(n, >=, 1);
    g_assert_cmpstr(jet_mock_violation_rule(m, n - 1), ==, rule);
    assert_contains(jet_mock_violation_message(m, n - 1), needle);
    assert_contains(jet_mock_last_violation(m), rule);
    g_test_message("%s", jet_mock_last_violation(m));
}

/* --- loading ------------------------------------------------------------------ */

static void test_load(void)
{
    char err[512];
    g_autofree char *missing = g_build_filename(jet_test_private_dir(), "nope.so", NULL);
    g_assert_null(jet_mock_new_from_path(missing, err, sizeof err));
    assert_contains(err, missing);

    /* The ABI rule is the loader's: a newer minor is refused naming both. */
    g_assert_null(jet_mock_new_static(st_newer_entry, err, sizeof err));
    g_autofree char *both = g_strdup_printf("built for plugin ABI %d.%d; this host speaks %d.%d",
                                            JET_ABI_MAJOR, JET_ABI_MINOR + 1, JET_ABI_MAJOR, JET_ABI_MINOR);
    assert_contains(err, both);

    jet_mock *m = jet_mock_new_static(st_entry, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_binding(m, "orders", "ORDERS", "orders-worker");
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    g_assert_cmpuint(jet_mock_log_contains(m, "init: hello from orders"), ==, 1);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_ESTATE);
    g_assert_cmpint(jet_mock_set_option(m, "greeting", "x"), ==, JET_MOCK_ESTATE);
    jet_mock_free(m);
}

/* --- options: validated like the daemon ------------------------------------- */

static void test_options(void)
{
    static const struct {
        const char *kv, *rule, *needle;
    } bad[] = {
        { "lable=x", "option-undeclared", "option.lable: plugin fx_misuse declares no such option" },
        { "count=three", "option-type", "option.count: 'three' is not an integer" },
        { "log_now=yes", "option-type", "'yes' is not a bool" },
        { "delay=10", "option-type", "option.delay" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        jet_mock *m = fixture("fx_misuse", FALSE, bad[i].kv, NULL);
        g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EOPTION);
        assert_contains(jet_mock_error(m), bad[i].needle);
        g_assert_cmpuint(jet_mock_violation_count(m), ==, 1);
        g_assert_cmpstr(jet_mock_violation_rule(m, 0), ==, bad[i].rule);
        /* Not started: nothing can be delivered. */
        jet_mock_msg *b = jet_mock_msg_new(m, "s");
        jet_mock_settlement s;
        g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_ESTATE);
        jet_mock_msg_free(b);
        jet_mock_free(m);
    }

    jet_mock *m = fixture("fx_required", FALSE, NULL);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EOPTION);
    g_assert_cmpstr(jet_mock_violation_rule(m, 0), ==, "option-required");
    assert_contains(jet_mock_error(m), "option.must");
    jet_mock_free(m);

    /* The option. prefix is accepted; good values start. */
    m = fixture("fx_misuse", FALSE, "option.count=-3", "delay=2m", "log_now=true", NULL);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
    jet_mock_free(m);

    /* init() failing is not a violation: the plugin may refuse its config. */
    m = fixture("fx_ok", FALSE, "fail_init=true", NULL);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EINIT);
    assert_contains(jet_mock_error(m), "init failed: fixture asked to fail");
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
    jet_mock_free(m);
}

/* --- policy ------------------------------------------------------------------- */

static void test_policy(void)
{
    jet_mock *m = fixture("fx_misuse", FALSE, NULL);
    g_assert_cmpint(jet_mock_set_policy(m, "max_atempts", "3"), ==, JET_MOCK_EINVAL);
    assert_contains(jet_mock_error(m), "unknown key 'max_atempts'");
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", ""), ==, JET_MOCK_EINVAL);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "1s, 0"), ==, JET_MOCK_EINVAL);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "1s, 10"), ==, JET_MOCK_EINVAL);
    assert_contains(jet_mock_error(m), "rung 2");
    g_assert_cmpint(jet_mock_set_policy(m, "max_deliver", "0"), ==, JET_MOCK_EINVAL);
    g_assert_cmpint(jet_mock_set_policy(m, "crash_limit", "0"), ==, JET_MOCK_EINVAL);
    g_assert_cmpint(jet_mock_set_policy(m, "max_postpone_delay", "0"), ==, JET_MOCK_EINVAL);
    g_assert_cmpint(jet_mock_set_policy(m, "max_deliver", "2"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "capture_reserve", "2"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EINVAL);
    assert_contains(jet_mock_error(m), "max_deliver (2) must be more than capture_reserve (2)");
    jet_mock_free(m);

    /* The defaults are the daemon's, i.e. the config's (docs/configuration.md):
     * rungs 1s, 5s, 30s, 2m, 10m and max_attempts 5. */
    m = fixture("fx_misuse", TRUE, "verdict=retry", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "walk");
    static const guint64 rungs[] = { 1000, 5000, 30000, 120000 };
    jet_mock_settlement s;
    for (guint k = 1; k <= 4; k++) {
        g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
        g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
        g_assert_cmpuint(s.delay_ms, ==, rungs[k - 1]);
        g_assert_cmpuint(s.failure_number, ==, k);
        g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
        jet_mock_clock_advance_ms(m, s.delay_ms);
    }
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "exhausted");
    g_assert_cmpuint(s.failure_number, ==, 5);
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_ESTATE);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* --- the same settlements as the daemon's decision ---------------------------- */

static void test_sequence_matches_decide(void)
{
    static const guint64 ladder[] = { 200, 3000, 45000 };
    const JetSettlePolicy p = {
        .rungs_ms = ladder,
        .n_rungs = G_N_ELEMENTS(ladder),
        .max_attempts = 4,
        .postpone_horizon_ms = 60000,
        .max_postpone_delay_ms = 20000,
        .capture_reserve = 1,
        .max_deliver = 9,
        .crash_limit = 2,
    };
    jet_mock *m = fixture("fx_misuse", FALSE, "reason=because", NULL);
    static const char *const policy[][2] = {
        { "rungs", "200ms, 3s, 45s" }, { "max_attempts", "4" }, { "postpone_horizon", "1m" },
        { "max_postpone_delay", "20s" }, { "capture_reserve", "1" }, { "max_deliver", "9" },
        { "crash_limit", "2" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(policy); i++)
        g_assert_cmpint(jet_mock_set_policy(m, policy[i][0], policy[i][1]), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);

    /* One message walking through postpones, a failure, a postpone over the
     * cap (a plugin error), a postpone past its horizon and exhaustion; then
     * single deliveries of other messages.  The expected column is the
     * precedence list (docs/settlement.md) worked by hand; decide() is asked
     * too. */
    static const struct {
        gboolean new_message;
        guint64 advance_ms;       /* clock step before this delivery */
        const char *verdict;
        guint64 delay_ms;         /* the plugin's postpone delay */
        guint32 deliveries;       /* new messages: the server's count */
        guint32 strikes;
        JetActionKind kind;
        guint64 want_delay;
        JetCaptureCause cause;
        guint32 failure_number;
        const char *rule;         /* the violation, if any */
    } steps[] = {
        { TRUE, 0, "postpone", 10000, 1, 0, JET_ACTION_POSTPONE, 10000, JET_CAUSE_NONE, 0, NULL },
        { FALSE, 10000, "postpone", 20000, 0, 0, JET_ACTION_POSTPONE, 20000, JET_CAUSE_NONE, 0, NULL },
        { FALSE, 20000, "retry", 0, 0, 0, JET_ACTION_RETRY, 200, JET_CAUSE_NONE, 1, NULL },
        { FALSE, 200, "postpone", 30000, 0, 0, JET_ACTION_RETRY, 3000, JET_CAUSE_NONE, 2, "postpone-cap" },
        { FALSE, 30000, "postpone", 5000, 0, 0, JET_ACTION_RETRY, 45000, JET_CAUSE_NONE, 3, NULL },
        { FALSE, 45000, "retry", 0, 0, 0, JET_ACTION_CAPTURE, 0, JET_CAUSE_EXHAUSTED, 4, NULL },
        { TRUE, 0, "ack", 0, 1, 0, JET_ACTION_ACK, 0, JET_CAUSE_NONE, 0, NULL },
        { TRUE, 0, "reject", 0, 1, 0, JET_ACTION_CAPTURE, 0, JET_CAUSE_REJECTED, 0, NULL },
        { TRUE, 0, "retry", 0, 3, 2, JET_ACTION_CAPTURE, 0, JET_CAUSE_POISON, 0, NULL },
        { TRUE, 0, "retry", 0, 1, 0, JET_ACTION_RETRY, 200, JET_CAUSE_NONE, 1, NULL },
        { TRUE, 0, "retry", 0, 8, 0, JET_ACTION_CAPTURE, 0, JET_CAUSE_BUDGET, 1, NULL },
        { TRUE, 0, "ack", 0, 8, 0, JET_ACTION_ACK, 0, JET_CAUSE_NONE, 0, NULL },
    };
    jet_mock_msg *b = NULL;
    jet_mock_settlement s;
    /* What the test knows of the message, kept independently of the mock. */
    guint32 deliveries = 0, failures = 0, postpones = 0;
    gint64 enqueued = 0;
    for (gsize i = 0; i < G_N_ELEMENTS(steps); i++) {
        jet_mock_clock_advance_ms(m, steps[i].advance_ms);
        if (steps[i].new_message) {
            jet_mock_msg_free(b);
            b = jet_mock_msg_new(m, "seq");
            enqueued = jet_mock_clock_ns(m) - 500 * MS_NS;
            jet_mock_msg_set_enqueued_ns(b, enqueued);
            jet_mock_msg_set_deliveries(b, steps[i].deliveries);
            jet_mock_msg_set_strikes(b, steps[i].strikes);
            deliveries = steps[i].deliveries;
            failures = postpones = 0;
            /* Deliveries the ledger does not explain are crashes (a
             * suspect): explain these as postpones. */
            if (deliveries > 1 + steps[i].strikes) {
                postpones = deliveries - 1 - steps[i].strikes;
                jet_mock_msg_set_ledger(b, 0, postpones);
            }
        } else {
            g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
            failures += s.is_failure ? 1 : 0;
            postpones += s.action == JET_MOCK_POSTPONE ? 1 : 0;
            deliveries++;
        }
        jet_mock_msg_set_header(b, "verdict", steps[i].verdict);
        g_autofree char *d = g_strdup_printf("%" G_GUINT64_FORMAT, steps[i].delay_ms);
        jet_mock_msg_set_header(b, "delay-ms", d);

        int rc = jet_mock_deliver(m, b, &s);
        g_test_message("step %zu: %s -> %s %" G_GUINT64_FORMAT " %s k=%u %s", i, steps[i].verdict,
                       s.action_name, s.delay_ms, s.cause, s.failure_number, s.reason);
        g_assert_cmpint(rc, ==, steps[i].rule != NULL ? JET_MOCK_VIOLATION : JET_MOCK_OK);
        g_assert_cmpstr(s.violation, ==, steps[i].rule);

        /* The daemon's decision on the same facts. */
        int v = strcmp(steps[i].verdict, "retry") == 0 ? JET_RETRY
              : strcmp(steps[i].verdict, "postpone") == 0 ? JET_POSTPONE
              : strcmp(steps[i].verdict, "reject") == 0 ? JET_REJECT : JET_ACK;
        JetSettleFacts f = {
            .verdict = v,
            .has_delay = v == JET_POSTPONE,
            .delay_ms = steps[i].delay_ms,
            .reason = "because",
            .deliveries = deliveries,
            .has_enqueued = TRUE,
            .enqueued_ns = enqueued,
            .now_ns = jet_mock_clock_ns(m),
            .failures = failures,
            .postpones = postpones,
            .strikes = steps[i].strikes,
        };
        JetSettleAction a;
        jet_settle_decide(&p, &f, &a);
        g_assert_cmpint(s.action, ==, (int)a.kind);
        g_assert_cmpuint(s.delay_ms, ==, a.delay_ms);
        g_assert_cmpstr(s.cause, ==, jet_cause_name(a.cause));
        g_assert_cmpint(s.is_failure, ==, a.is_failure);
        g_assert_cmpuint(s.failure_number, ==, a.failure_number);
        g_assert_cmpint(s.plugin_error, ==, a.plugin_error);
        g_assert_cmpstr(s.reason, ==, a.reason);
        g_assert_cmpuint(s.deliveries, ==, deliveries);

        /* And the hand-worked expectation. */
        g_assert_cmpint(s.action, ==, (int)steps[i].kind);
        g_assert_cmpuint(s.delay_ms, ==, steps[i].want_delay);
        g_assert_cmpstr(s.cause, ==, jet_cause_name(steps[i].cause));
        g_assert_cmpuint(s.failure_number, ==, steps[i].failure_number);
    }
    g_assert_cmpstr(s.outcome, ==, "acked");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* --- the clock ------------------------------------------------------------------- */

static void test_clock(void)
{
    char err[256];
    jet_mock *m = jet_mock_new_static(st_entry, err, sizeof err);
    g_assert_nonnull(m);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_clock_ns(m), ==, T0_NS);

    jet_mock_msg *b = jet_mock_msg_new(m, "tick");
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_autofree char *l0 = g_strdup_printf("now=%" G_GINT64_FORMAT " stopping=0", T0_NS);
    g_assert_cmpuint(jet_mock_log_contains(m, l0), ==, 1);
    g_assert_cmpint(s.now_ns, ==, T0_NS);

    jet_mock_clock_advance_ms(m, 1500);
    jet_mock_set_stopping(m);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_autofree char *l1 = g_strdup_printf("now=%" G_GINT64_FORMAT " stopping=1", T0_NS + 1500 * MS_NS);
    g_assert_cmpuint(jet_mock_log_contains(m, l1), ==, 1);

    jet_mock_clock_set_ns(m, 42);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(jet_mock_log_contains(m, "now=42 "), ==, 1);
    g_assert_cmpint(s.now_ns, ==, 42);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_postpone_horizon(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "verdict=postpone", "delay=10m", "reason=later", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "wait");   /* enqueued now */
    jet_mock_settlement s;
    guint32 postpones = 0;
    /* 0, 10m, ... 50m: inside the 1h horizon, no attempt spent. */
    for (int i = 0; i < 6; i++) {
        g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
        g_assert_cmpint(s.action, ==, JET_MOCK_POSTPONE);
        g_assert_cmpuint(s.delay_ms, ==, 600000);
        g_assert_false(s.is_failure);
        g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
        postpones++;
        jet_mock_clock_advance_ms(m, s.delay_ms);
    }
    /* At exactly one hour it is past the horizon: failure 1, the first rung. */
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_true(s.is_failure);
    g_assert_cmpuint(s.failure_number, ==, 1);
    g_assert_cmpuint(s.delay_ms, ==, 1000);
    g_assert_cmpstr(s.reason, ==, "POSTPONE past postpone_horizon 1h: later");
    g_assert_cmpuint(postpones, ==, 6);

    /* Unknown enqueue time: past the horizon by rule, never "infinitely old"
     * by accident. */
    jet_mock_msg *u = jet_mock_msg_new(m, "wait");
    jet_mock_msg_clear_enqueued(u);
    g_assert_cmpint(jet_mock_deliver(m, u, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    assert_contains(s.reason, "enqueue time unknown");
    jet_mock_msg_free(u);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* --- the settlement's size ------------------------------------------------------ */

/* The caller allocates a jet_mock_settlement, and the library writes no
 * byte past the size the caller was built with: the plain symbols (what a
 * binary built against a header without the size calls) write the layout
 * of their time, the sized ones what they are told, zeros past the
 * library's own size. */
static void test_settlement_size(void)
{
    enum { PAST = 16 };
    const size_t v10 = offsetof(jet_mock_settlement, held_behind);
    const size_t full = sizeof(jet_mock_settlement);
    jet_mock *m = fixture("fx_ok", TRUE, NULL);
    jet_mock_msg *b = msg_with(m, "x", "ack");
    guchar buf[sizeof(jet_mock_settlement) + PAST];

    /* jet_mock_deliver the symbol: the settlement before held_behind. */
    memset(buf, 0xAA, sizeof buf);
    g_assert_cmpint((jet_mock_deliver)(m, b, (jet_mock_settlement *)buf), ==, JET_MOCK_OK);
    g_assert_cmpint(((jet_mock_settlement *)buf)->action, ==, JET_MOCK_ACK);
    for (size_t i = v10; i < sizeof buf; i++)
        g_assert_cmpuint(buf[i], ==, 0xAA);

    /* Sized larger than the library's: zeros past it, nothing further. */
    memset(buf, 0xAA, sizeof buf);
    g_assert_cmpint(jet_mock_deliver_sized(m, b, (jet_mock_settlement *)buf, full + 8), ==, JET_MOCK_OK);
    g_assert_cmpint(((jet_mock_settlement *)buf)->action, ==, JET_MOCK_ACK);
    for (size_t i = full; i < full + 8; i++)
        g_assert_cmpuint(buf[i], ==, 0);
    for (size_t i = full + 8; i < sizeof buf; i++)
        g_assert_cmpuint(buf[i], ==, 0xAA);

    /* The macro passes the caller's own size. */
    jet_mock_settlement s;
    memset(&s, 0xAA, sizeof s);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.held_behind, ==, 0);

    /* Smaller than any header ever made it: refused, zeroed as a refusal
     * is, nothing past it written. */
    memset(buf, 0xAA, sizeof buf);
    g_assert_cmpint(jet_mock_deliver_sized(m, b, (jet_mock_settlement *)buf, v10 - 1), ==, JET_MOCK_EINVAL);
    assert_contains(jet_mock_error(m), "smaller than any header");
    g_assert_cmpuint(buf[0], ==, 0);
    g_assert_cmpuint(buf[v10 - 2], ==, 0);
    g_assert_cmpuint(buf[v10 - 1], ==, 0xAA);

    /* jet_mock_deliver_held the symbol came with held_behind: that much is
     * written (zeroed, as nothing is held here), not a byte more. */
    memset(buf, 0xAA, sizeof buf);
    g_assert_cmpint((jet_mock_deliver_held)(m, (jet_mock_settlement *)buf), ==, JET_MOCK_ESTATE);
    for (size_t i = 0; i < v10 + sizeof(uint64_t); i++)
        g_assert_cmpuint(buf[i], ==, 0);
    for (size_t i = v10 + sizeof(uint64_t); i < sizeof buf; i++)
        g_assert_cmpuint(buf[i], ==, 0xAA);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* --- strict rules: each one broken once ---------------------------------------- */

static void test_strict_verdict(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "misuse=verdict", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "x");
    jet_mock_settlement s;
    int rc = jet_mock_deliver(m, b, &s);
    assert_violation(m, rc, &s, "verdict", "verdict 7 is not a jet_verdict");
    /* The daemon's settlement is reported too: a failure, never an ack. */
    g_assert_cmpint(s.verdict, ==, 7);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_true(s.plugin_error);
    g_assert_true(s.is_failure);
    g_assert_cmpstr(s.reason, ==, "plugin error: verdict 7 is not a jet_verdict");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_strict_postpone_delay(void)
{
    static const char *const variants[] = { "misuse=delay_zero", "misuse=delay_none" };
    for (gsize i = 0; i < G_N_ELEMENTS(variants); i++) {
        jet_mock *m = fixture("fx_misuse", TRUE, variants[i], NULL);
        jet_mock_msg *b = jet_mock_msg_new(m, "x");
        jet_mock_settlement s;
        int rc = jet_mock_deliver(m, b, &s);
        assert_violation(m, rc, &s, "postpone-delay", "POSTPONE without a positive delay");
        g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
        g_assert_true(s.is_failure);
        jet_mock_msg_free(b);
        jet_mock_free(m);
    }
}

static void test_strict_postpone_cap(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "misuse=delay_cap", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "x");
    jet_mock_settlement s;
    int rc = jet_mock_deliver(m, b, &s);
    assert_violation(m, rc, &s, "postpone-cap", "POSTPONE delay 1d exceeds max_postpone_delay 15m");
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    jet_mock_msg_free(b);
    jet_mock_free(m);

    /* Raising the binding's cap makes the same postpone valid. */
    m = fixture("fx_misuse", FALSE, "misuse=delay_cap", NULL);
    g_assert_cmpint(jet_mock_set_policy(m, "max_postpone_delay", "1d"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    b = jet_mock_msg_new(m, "x");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_POSTPONE);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_strict_reason(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "misuse=reason", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "x");
    jet_mock_settlement s;
    int rc = jet_mock_deliver(m, b, &s);
    assert_violation(m, rc, &s, "reason-length", "reason longer than 256 bytes");
    /* An ACK with a too-long reason is not an ack. */
    g_assert_cmpint(s.verdict, ==, JET_ACK);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_strict_use_after_handle(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "misuse=keep_pointer", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "kept");
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    /* The second handle() reads the first message's handle. */
    int rc = jet_mock_deliver(m, b, &s);
    assert_violation(m, rc, &s, "use-after-handle",
                     "msg_subject() on the jet_msg of stream seq 1 after its handle() returned");
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);   /* the verdict itself was fine */
    /* And fini() reads the second's: stop reports it. */
    size_t before = jet_mock_violation_count(m);
    g_assert_cmpint(jet_mock_stop(m), ==, JET_MOCK_VIOLATION);
    g_assert_cmpuint(jet_mock_violation_count(m), ==, before + 1);
    g_assert_cmpstr(jet_mock_violation_rule(m, before), ==, "use-after-handle");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_strict_thread(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "misuse=thread", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "x");
    jet_mock_settlement s;
    int rc = jet_mock_deliver(m, b, &s);
    g_assert_cmpint(rc, ==, JET_MOCK_VIOLATION);
    g_assert_cmpstr(s.violation, ==, "thread");
    /* Both the message call and the ctx call are caught. */
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 2);
    assert_contains(jet_mock_violation_message(m, 0), "msg_subject() called from a second thread");
    assert_contains(jet_mock_violation_message(m, 1), "ctx_log() called from a second thread");
    assert_contains(jet_mock_last_violation(m), "JET_PLUGIN_THREAD_SAFE");
    jet_mock_msg_free(b);
    jet_mock_free(m);

    /* The same code declared thread-safe breaks no rule. */
    m = fixture("fx_misuse_ts", TRUE, "misuse=thread", NULL);
    b = jet_mock_msg_new(m, "x");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_null(s.violation);
    g_assert_cmpuint(jet_mock_call_count(m, "msg_subject"), ==, 1);
    g_assert_cmpuint(jet_mock_log_contains(m, "from a second thread"), ==, 1);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

static void test_strict_option_reads(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "misuse=option_undeclared", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "x");
    jet_mock_settlement s;
    int rc = jet_mock_deliver(m, b, &s);
    assert_violation(m, rc, &s, "option-undeclared",
                     "ctx_option(\"lable\"): plugin fx_misuse declares no such option");
    jet_mock_msg_free(b);
    jet_mock_free(m);

    m = fixture("fx_misuse", TRUE, "misuse=option_type", NULL);
    b = jet_mock_msg_new(m, "x");
    rc = jet_mock_deliver(m, b, &s);
    assert_violation(m, rc, &s, "option-type",
                     "ctx_option_bool(\"count\"): the option is declared as int, not bool");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* The default mode: a violation aborts the test, naming the rule. */
static void test_strict_aborts(void)
{
    if (g_test_subprocess()) {
        g_autofree char *path = jet_test_plugin_copy("fx_misuse");
        char err[256];
        jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
        jet_mock_set_option(m, "misuse", "verdict");
        jet_mock_start(m);
        jet_mock_msg *b = jet_mock_msg_new(m, "x");
        jet_mock_settlement s;
        jet_mock_deliver(m, b, &s);   /* does not return */
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*broke the rule \"verdict\": handle() of stream seq 1: plugin "
                              "error: verdict 7 is not a jet_verdict*");
}

/* --- what the daemon decides before the handler ---------------------------------- */

static void test_before_handle(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, NULL);
    jet_mock_clear_calls(m);   /* init()'s option reads */
    jet_mock_msg *b = jet_mock_msg_new(m, "suspect");
    jet_mock_msg_set_strikes(b, 3);
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "poison");
    g_assert_false(s.handled);
    g_assert_cmpint(s.verdict, ==, -1);
    g_assert_cmpuint(jet_mock_call_count(m, NULL), ==, 0);   /* the plugin never ran */

    jet_mock_msg_set_strikes(b, 0);
    jet_mock_msg_set_breaker_claim(b, 1);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.cause, ==, "breaker");
    g_assert_false(s.handled);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* The mock runs the daemon's sequence, crash attribution included: a
 * delivery the ledger does not explain is a crash suspect, handled alone;
 * once it survives, its next delivery is explained (the ledger's absolved
 * count, carried by jet_mock_msg_redeliver).  Seen at the budget line, where
 * a suspect is captured before its handler runs (cause poison) and an
 * explained message is handled and captured for the budget. */
static void test_crash_attribution(void)
{
    jet_mock *m = fixture("fx_misuse", FALSE, NULL);
    g_assert_cmpint(jet_mock_set_policy(m, "max_deliver", "5"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "1s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;

    /* Delivery 3 with no record: two unexplained deliveries, a suspect.
     * Handled (alone), it retries; its record now explains both. */
    jet_mock_msg *b = msg_with(m, "crashed", "retry");
    jet_mock_msg_set_deliveries(b, 3);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_true(s.handled);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_cmpuint(s.failure_number, ==, 1);
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    /* Delivery 4 is the budget line (max_deliver 5, capture_reserve 1):
     * explained now, so handled and captured for the budget. */
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_true(s.handled);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "budget");
    g_assert_cmpuint(s.failure_number, ==, 2);
    jet_mock_msg_free(b);

    /* The same line reached by a suspect: captured unhandled. */
    b = msg_with(m, "crashed-at-the-line", "retry");
    jet_mock_msg_set_deliveries(b, 4);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_false(s.handled);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "poison");
    jet_mock_msg_free(b);

    /* Explained by the ledger (failures and postpones), not a suspect. */
    b = msg_with(m, "explained", "retry");
    jet_mock_msg_set_deliveries(b, 4);
    jet_mock_msg_set_ledger(b, 1, 2);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_true(s.handled);
    g_assert_cmpstr(s.cause, ==, "budget");
    g_assert_cmpuint(s.failure_number, ==, 2);
    jet_mock_msg_free(b);

    /* The breaker considers only a message with a ledger record: never a
     * first delivery. */
    b = msg_with(m, "claimed", "ack");
    jet_mock_msg_set_breaker_claim(b, 1);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_true(s.handled);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    jet_mock_msg_free(b);

    /* The postpones the settlements wrote are what the record carries. */
    b = msg_with(m, "postponed", "postpone");
    jet_mock_msg_set_header(b, "delay-ms", "1000");
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
        g_assert_cmpint(s.action, ==, JET_MOCK_POSTPONE);
        g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    }
    jet_mock_msg_set_header(b, "verdict", "reject");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_true(s.handled);
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Postpones"), ==, "2");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Deliveries"), ==, "3");
    jet_mock_msg_free(b);

    /* A ledger count implies the deliveries that made it. */
    b = msg_with(m, "counts", "ack");
    jet_mock_msg_set_ledger(b, 2, 0);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.deliveries, ==, 3);
    g_assert_true(s.handled);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* A capture the daemon could not store (the provenance alone past the 64 KiB
 * header limit: here a subject of 70,000 bytes) is stranded: no record is
 * shown, and the settlement says so. */
static void test_capture_stranded(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, NULL);
    g_autofree char *subject = g_strnfill(70000, 'x');
    jet_mock_msg *b = msg_with(m, subject, "reject");
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.outcome, ==, "stranded");
    g_assert_null(s.dlq_subject);
    g_assert_cmpuint(s.n_dlq_headers, ==, 0);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* --- the dead-letter record ------------------------------------------------------- */

static void test_dlq_provenance(void)
{
    jet_mock *m = fixture("fx_misuse", FALSE, "verdict=retry", "reason=db down", NULL);
    jet_mock_set_binding(m, "orders", "ORDERS", "orders-worker");
    jet_mock_set_policy(m, "max_attempts", "3");
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);

    jet_mock_msg *b = jet_mock_msg_new(m, "orders.created");
    jet_mock_msg_set_text(b, "{}");
    jet_mock_msg_set_seq(b, 1234, 77);
    jet_mock_msg_add_header(b, "Nats-Msg-Id", "client-1");
    jet_mock_msg_add_header(b, "Trace", "abc");
    jet_mock_msg_set_deliveries(b, 5);
    jet_mock_msg_set_ledger(b, 2, 2);
    jet_mock_msg_set_first_failure_ns(b, T0_NS - 60000 * MS_NS);
    jet_mock_msg_set_enqueued_ns(b, T0_NS - 120000 * MS_NS);
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "exhausted");
    g_assert_cmpstr(s.outcome, ==, "dead-lettered");
    g_assert_cmpstr(s.dlq_subject, ==, "jethost.dlq.orders");

    /* The daemon's record (capture.c): its Msg-Id first, then the original
     * headers in their order, Nats-<rest> renamed Jethost-Orig-Nats_<rest>... */
    g_assert_cmpuint(s.n_dlq_headers, >=, 3);
    g_assert_cmpstr(s.dlq_headers[0].name, ==, "Nats-Msg-Id");
    g_assert_cmpstr(s.dlq_headers[0].value, ==, "jethost:ORDERS.orders-worker:1234:1701388800000000000");
    g_assert_cmpstr(s.dlq_headers[1].name, ==, "Jethost-Orig-Nats_Msg-Id");
    for (gsize i = 1; i < 3; i++) {
        const jet_mock_header *h = &s.dlq_headers[i];
        if (strcmp(h->name, "Trace") == 0)
            g_assert_cmpstr(h->value, ==, "abc");
        else if (strcmp(h->name, "Jethost-Orig-Nats_Msg-Id") == 0)
            g_assert_cmpstr(h->value, ==, "client-1");
        else
            g_error("unexpected original header %s: %s", h->name, h->value);
    }
    g_assert_cmpstr(s.dlq_headers[1].name, !=, s.dlq_headers[2].name);
    /* ...then the provenance, in the daemon's order. */
    static const struct {
        const char *name, *value;
    } want[] = {
        { "Jethost-Origin-Stream", "ORDERS" },
        { "Jethost-Origin-Stream-Created", "2023-12-01T00:00:00.000000000Z" },
        { "Jethost-Origin-Subject", "orders.created" },
        { "Jethost-Origin-Seq", "1234" },
        { "Jethost-Origin-Consumer", "orders-worker" },
        { "Jethost-Deliveries", "5" },
        { "Jethost-Failures", "3" },          /* this delivery's failure included */
        { "Jethost-Postpones", "2" },
        { "Jethost-Cause", "exhausted" },
        { "Jethost-Reason", "db down" },
        { "Jethost-First-Failure", "2023-12-31T23:59:00.000000000Z" },
        { "Jethost-Enqueued", "2023-12-31T23:58:00.000000000Z" },
        { "Jethost-Captured", "2024-01-01T00:00:00.000000000Z" },
        { "Jethost-Plugin", "fx_misuse" },
        { "Jethost-Plugin-Version", "0.1.0" },
        { "Jethost-Host", "jethost-mock" },
        { "Jethost-Binding", "orders" },
    };
    g_assert_cmpuint(s.n_dlq_headers, ==, 3 + G_N_ELEMENTS(want));
    for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
        g_assert_cmpstr(s.dlq_headers[3 + i].name, ==, want[i].name);
        g_assert_cmpstr(s.dlq_headers[3 + i].value, ==, want[i].value);
    }
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Cause"), ==, "exhausted");

    /* Non-captures carry no record. */
    jet_mock_msg *ok = msg_with(m, "x", "ack");
    g_assert_cmpint(jet_mock_deliver(m, ok, &s), ==, JET_MOCK_OK);
    g_assert_null(s.dlq_subject);
    g_assert_cmpuint(s.n_dlq_headers, ==, 0);
    jet_mock_msg_free(ok);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* The record is the daemon's own (jet_capture_headers): its rules show in the
 * mock, not a look-alike's. */
static void test_dlq_daemon_rules(void)
{
    jet_mock *m = fixture("fx_misuse", FALSE, "verdict=reject", NULL);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;

    /* Unknown values are left out, never written empty or as 0: no reason,
     * no enqueue time, no first failure (a REJECT is not a failure). */
    jet_mock_msg *b = jet_mock_msg_new(m, "a.b");
    jet_mock_msg_clear_enqueued(b);
    jet_mock_msg_add_header(b, "Jethost-Cause", "from an earlier capture");
    jet_mock_msg_add_header(b, "nats-rollup", "all");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.cause, ==, "rejected");
    g_assert_null(jet_mock_settlement_header(&s, "Jethost-Reason"));
    g_assert_null(jet_mock_settlement_header(&s, "Jethost-Enqueued"));
    g_assert_null(jet_mock_settlement_header(&s, "Jethost-First-Failure"));
    g_assert_null(jet_mock_settlement_header(&s, "Jethost-Dropped-Headers"));
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Failures"), ==, "0");
    /* An earlier capture's provenance cannot pass for this one's, and no
     * server-read name survives, even in another case. */
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Cause"), ==, "rejected");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Orig-Jethost-Cause"), ==, "from an earlier capture");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Orig-nats_rollup"), ==, "all");
    g_assert_null(jet_mock_settlement_header(&s, "nats-rollup"));
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Nats-Msg-Id"), ==, "jethost:MOCK.mock:1:1701388800000000000");
    jet_mock_msg_free(b);

    /* A reason mentioning Nats-Msg-Id travels as written: the record's own
     * Msg-Id is its first line, so 2.9.10 finds that one first. */
    b = jet_mock_msg_new(m, "a.b");
    jet_mock_msg_add_header(b, "reason", "dup Nats-Msg-Id: x");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Reason"), ==, "dup Nats-Msg-Id: x");
    g_assert_cmpstr(s.dlq_headers[0].name, ==, "Nats-Msg-Id");
    g_assert_cmpstr(s.reason, ==, "dup Nats-Msg-Id: x");   /* the settlement keeps the plugin's words */
    jet_mock_msg_free(b);

    /* Original headers past the 64 KiB header block are left out and named. */
    b = jet_mock_msg_new(m, "a.b");
    g_autofree char *big = g_strnfill(70 * 1024, 'x');
    jet_mock_msg_add_header(b, "X-Big", big);
    jet_mock_msg_add_header(b, "Nats-Msg-Id", "app-9");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "dead-lettered");
    g_assert_null(jet_mock_settlement_header(&s, "X-Big"));
    g_assert_null(jet_mock_settlement_header(&s, "Jethost-Orig-Nats_Msg-Id"));
    const char *dropped = jet_mock_settlement_header(&s, "Jethost-Dropped-Headers");
    g_assert_nonnull(dropped);
    g_auto(GStrv) names = g_strsplit(dropped, ",", -1);
    g_assert_cmpuint(g_strv_length(names), ==, 2);
    g_assert_true(g_strv_contains((const char *const *)names, "X-Big"));
    g_assert_true(g_strv_contains((const char *const *)names, "Jethost-Orig-Nats_Msg-Id"));
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* --- the ABI promise ------------------------------------------------------------------- */

/* A plugin built against the frozen 1.0 header (tests/abi-1.0) loads in the
 * current host and works: it reads the message and qualifies its verdict
 * through the 1.0 table, and every verdict settles as the daemon would. */
static void abi_old_works(const char *name)
{
    jet_mock *m = fixture(name, FALSE, "label=old", "count=-1", NULL);
    jet_mock_set_policy(m, "rungs", "2s");
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    static const struct {
        const char *verdict, *action, *cause, *reason;
        guint64 delay_ms;
    } cases[] = {
        { NULL, "ack", "none", "", 0 },
        { "retry", "retry", "none", "fx: retry", 2000 },
        { "postpone:1500", "postpone", "none", "fx: postpone:1500", 1500 },
        { "reject", "capture", "rejected", "fx: reject", 0 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        jet_mock_msg *b = jet_mock_msg_new(m, "old.x");
        if (cases[i].verdict != NULL)
            jet_mock_msg_add_header(b, "Fx-Verdict", cases[i].verdict);
        jet_mock_settlement s;
        g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
        g_assert_true(s.handled);
        g_assert_cmpstr(s.action_name, ==, cases[i].action);
        g_assert_cmpstr(s.cause, ==, cases[i].cause);
        g_assert_cmpstr(s.reason, ==, cases[i].reason);
        g_assert_cmpuint(s.delay_ms, ==, cases[i].delay_ms);
        if (s.action == JET_MOCK_CAPTURE) {
            g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Plugin"), ==, "fx");
            g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Reason"), ==, "fx: reject");
        }
        jet_mock_msg_free(b);
    }
    g_assert_cmpuint(jet_mock_call_count(m, "msg_header"), ==, G_N_ELEMENTS(cases));
    g_assert_cmpuint(jet_mock_call_count(m, "msg_set_reason"), ==, 3);
    g_assert_cmpuint(jet_mock_call_count(m, "msg_set_delay_ms"), ==, 1);
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
    /* Built before validate() and settled(): the host calls neither (the
     * same source built for 1.2 refuses count = -1 and logs each one). */
    g_assert_cmpuint(jet_mock_log_contains(m, "settled seq="), ==, 0);
    jet_mock_free(m);
}

static void test_abi10_works(void)
{
    abi_old_works("fx_abi10");
}

/* The same for the frozen 1.1 header (tests/abi-1.1). */
static void test_abi11_works(void)
{
    abi_old_works("fx_abi11");
}

/* --- 1.2: validate() and settled() ------------------------------------------------- */

/* validate() runs at start, before init(): its refusal is an option error
 * quoting the plugin; a good value starts. */
static void test_validate(void)
{
    jet_mock *m = fixture("fx_ok", FALSE, "count=-1", NULL);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EOPTION);
    assert_contains(jet_mock_error(m), "plugin fx (");
    assert_contains(jet_mock_error(m), "refuses its options: option.count: -1 is below 0");
    jet_mock_free(m);
    m = fixture("fx_ok", FALSE, "count=0", NULL);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_free(m);
}

/* settled() is told each settlement as the executor did it: acked, retried
 * and postponed with their delays, dead-lettered, and a delivery settled
 * without the handler (max_attempts spent before it ran: no verdict). */
static void test_settled(void)
{
    jet_mock *m = fixture("fx_ok", FALSE, NULL);
    jet_mock_set_policy(m, "rungs", "2s");
    jet_mock_set_policy(m, "max_attempts", "3");
    g_assert_cmpint(jet_mock_set_policy(m, "max_deliver", "10"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    static const struct {
        const char *verdict;
        const char *line;
    } cases[] = {
        { NULL, "outcome=0 handled=1 verdict=0 deliveries=1 published=0 duplicates=0 delay_ms=0 reason=" },
        { "retry", "outcome=1 handled=1 verdict=1 deliveries=1 published=0 duplicates=0 delay_ms=2000 reason=fx: retry" },
        { "postpone:1500", "outcome=2 handled=1 verdict=2 deliveries=1 published=0 duplicates=0 delay_ms=1500 "
                           "reason=fx: postpone:1500" },
        { "reject", "outcome=3 handled=1 verdict=3 deliveries=1 published=0 duplicates=0 delay_ms=0 reason=fx: reject" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        jet_mock_clear_log(m);
        jet_mock_msg *b = jet_mock_msg_new(m, "orders.x");
        if (cases[i].verdict != NULL)
            jet_mock_msg_add_header(b, "Fx-Verdict", cases[i].verdict);
        jet_mock_settlement st;
        g_assert_cmpint(jet_mock_deliver(m, b, &st), ==, JET_MOCK_OK);
        g_autofree char *want = g_strdup_printf("settled seq=%" G_GUINT64_FORMAT " %s", st.stream_seq, cases[i].line);
        g_assert_cmpuint(jet_mock_log_count(m), ==, 1);
        g_assert_cmpstr(jet_mock_log_line(m, 0, NULL), ==, want);
        jet_mock_msg_free(b);
    }
    /* A poison message (the host died with it alone, crash_limit times):
     * captured before the handler. */
    jet_mock_clear_log(m);
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.x");
    jet_mock_msg_set_strikes(b, 3);
    jet_mock_msg_set_deliveries(b, 4);
    jet_mock_settlement st;
    g_assert_cmpint(jet_mock_deliver(m, b, &st), ==, JET_MOCK_OK);
    g_assert_false(st.handled);
    g_assert_cmpuint(jet_mock_log_contains(m, "outcome=3 handled=0 verdict=-1 deliveries=4"), ==, 1);
    jet_mock_msg_free(b);
    /* A record too large to store: given back for a later delivery (after
     * the last rung), and stranded on the last one (max_deliver 10). */
    g_autofree char *huge = g_strnfill(70000, 'x');
    const struct {
        guint32 deliveries;
        const char *line;
    } large[] = {
        { 1, "outcome=4 handled=1 verdict=3 deliveries=1 published=0 duplicates=0 delay_ms=2000" },
        { 10, "outcome=6 handled=0 verdict=-1 deliveries=10 published=0 duplicates=0 delay_ms=0" },   /* at the budget line: captured before it runs */
    };
    for (gsize i = 0; i < G_N_ELEMENTS(large); i++) {
        jet_mock_clear_log(m);
        b = jet_mock_msg_new(m, huge);
        jet_mock_msg_add_header(b, "Fx-Verdict", "reject");
        jet_mock_msg_set_deliveries(b, large[i].deliveries);
        g_assert_cmpint(jet_mock_deliver(m, b, &st), ==, JET_MOCK_OK);
        g_assert_cmpstr(st.outcome, ==, "stranded");
        if (jet_mock_log_contains(m, large[i].line) != 1)
            g_error("no '%s' in '%s'", large[i].line, jet_mock_log_line(m, 0, NULL));
        jet_mock_msg_free(b);
    }
    jet_mock_free(m);
}

/* A plugin declaring a newer minor is refused by the mock too, naming both
 * versions, as the daemon's loader does (tests/unit/plugin_loader.c). */
static void test_abi_newer_minor_refused(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_abi_minor");
    char err[512] = "";
    g_assert_null(jet_mock_new_from_path(path, err, sizeof err));
    assert_contains(err, path);
    assert_contains(err, "built for plugin ABI 1.9; this host speaks 1.2");
}

/* --- recording ---------------------------------------------------------------------- */

static void test_calls_and_log(void)
{
    jet_mock *m = fixture("fx_misuse", TRUE, "log_now=true", NULL);
    g_assert_cmpuint(jet_mock_call_count(m, "ctx_option(misuse)"), ==, 1);
    g_assert_cmpuint(jet_mock_call_count(m, "ctx_option_bool"), ==, 1);
    jet_mock_clear_calls(m);
    jet_mock_msg *b = msg_with(m, "a.b", "ack");
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(jet_mock_call_count(m, "ctx_log"), ==, 1);
    g_assert_cmpuint(jet_mock_call_count(m, "ctx_now_ns"), ==, 1);
    g_assert_cmpuint(jet_mock_call_count(m, "msg_header"), ==, 2);
    /* In call order: ctx_log's arguments (in the compiler's order), then it. */
    g_assert_cmpstr(jet_mock_call_name(m, 2), ==, "ctx_log");
    g_assert_null(jet_mock_call_name(m, 5));
    g_assert_cmpuint(jet_mock_log_count(m), ==, 1);
    int level = -1;
    assert_contains(jet_mock_log_line(m, 0, &level), "subject=a.b");
    g_assert_cmpint(level, ==, JET_LOG_INFO);
    jet_mock_clear_log(m);
    g_assert_cmpuint(jet_mock_log_count(m), ==, 0);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* --- `jethost mock` ------------------------------------------------------------------ */


/* KV entries and the initial-done signal in JSONL: {"key", "op"} lines and
 * an {"event": "kv_initial_done"} line, with --policy kind=kv. */
static void test_cli_kv(void)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "cli-kv", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *dir_opt = g_strdup_printf("dir=%s", dir);
    const char *input =
        "{\"key\": \"app.a\", \"data\": \"1\"}\n"
        "{\"key\": \"app.b\", \"op\": \"delete\"}\n"
        "{\"event\": \"kv_initial_done\"}\n"
        "{\"event\": \"settle_completed\"}\n"   /* nothing pending: nothing printed */
        "{\"key\": \"app.c\", \"op\": \"purge\", \"stream_seq\": 40}\n"
        "{\"key\": \"app c\"}\n";
    g_autofree char *out = NULL, *err = NULL;
    int status = jet_test_mock_cli(input, &out, &err, "--plugin", plugin, "--option", dir_opt, "--policy", "kind=kv",
                         "--policy", "bucket=CFG", "--binding", "cache", "--quiet", NULL);
    g_assert_cmpint(status, ==, 0);
    g_auto(GStrv) lines = g_strsplit(g_strchomp(out), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 5);
    assert_contains(lines[0], "\"stream_seq\":1,\"deliveries\":1,\"action\":\"ack\"");
    assert_contains(lines[2], "{\"event\":\"kv_initial_done\"}");
    assert_contains(lines[3], "\"stream_seq\":40,");
    assert_contains(lines[4], "\"cause\":\"malformed\"");
    assert_contains(lines[4], "is not a valid KV key");
    g_autofree char *kv_path = g_build_filename(dir, "kv.log", NULL);
    g_autofree char *kv = NULL;
    g_assert_true(g_file_get_contents(kv_path, &kv, NULL, NULL));
    g_assert_cmpstr(kv, ==, "1 app.a put 2\n2 app.b delete 2\ninitial-done 2\n40 app.c purge 2\n");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* What a KV line may not be. */
    static const struct {
        const char *line, *why;
        gboolean kv;
    } bad[] = {
        { "{\"key\": \"a\", \"subject\": \"$KV.CFG.a\"}", "subject and key: give one of them", TRUE },
        { "{\"key\": \"a\", \"op\": \"del\"}", "op: expected put, delete or purge", TRUE },
        { "{\"key\": 7}", "key", TRUE },
        { "{\"subject\": \"x\", \"op\": \"put\"}", "op: only with key", TRUE },
        { "{\"event\": \"kv_initial_done\", \"key\": \"a\"}", "an event line is exactly", TRUE },
        { "{\"event\": \"start\"}", "an event line is exactly", TRUE },
        { "{\"event\": \"settle_completed\", \"key\": \"a\"}", "an event line is exactly", TRUE },
        { "{\"key\": \"a\"}", "set the policy's kind = kv", FALSE },
        { "{\"event\": \"kv_initial_done\"}", "not kind = kv", FALSE },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *in = g_strdup_printf("%s\n", bad[i].line);
        if (bad[i].kv)
            status = jet_test_mock_cli(in, &out, &err, "--plugin", plugin, "--option", dir_opt, "--policy", "kind=kv",
                             "--policy", "bucket=CFG", "--quiet", NULL);
        else
            status = jet_test_mock_cli(in, &out, &err, "--plugin", plugin, "--option", dir_opt, "--quiet", NULL);
        g_assert_cmpint(status, ==, 2);
        assert_contains(err, "stdin:1: ");
        assert_contains(err, bad[i].why);
        g_clear_pointer(&out, g_free);
        g_clear_pointer(&err, g_free);
    }
}

/* jethost mock: a fault point a line (crash_after_publish, ack_lost) on
 * the shipped forward plugin: the crash's line says "crashed" with the
 * publish stored before it, the delivery after it finds that publish a
 * duplicate; two faults on one line, or a bad value, stop the run. */
static void test_cli_faults(void)
{
    g_autofree char *plugin = jet_test_plugin_copy("forward");
    const char *input =
        "{\"subject\": \"orders.eu.new\", \"data\": \"x\", \"crash_after_publish\": 1}\n"
        "{\"subject\": \"orders.eu.new\", \"data\": \"x\", \"stream_seq\": 1, \"deliveries\": 2}\n"
        "{\"subject\": \"orders.eu.new\", \"data\": \"y\", \"stream_seq\": 5, \"ack_lost\": true}\n"
        "{\"subject\": \"orders.eu.new\", \"data\": \"y\", \"stream_seq\": 5, \"deliveries\": 2}\n"
        "{\"subject\": \"orders.eu.new\", \"data\": \"z\", \"crash_after_publish\": 0}\n";
    g_autofree char *out = NULL, *err = NULL;
    int status = jet_test_mock_cli(input, &out, &err, "--plugin", plugin, "--option", "subject=copy.{subject}",
                                   "--quiet", NULL);
    g_assert_cmpint(status, ==, 0);
    g_auto(GStrv) lines = g_strsplit(g_strchomp(out), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 5);
    assert_contains(lines[0], "\"outcome\":\"crashed\"");
    assert_contains(lines[0], "\"result\":\"published\"");
    assert_contains(lines[1], "\"outcome\":\"acked\"");
    assert_contains(lines[1], "\"result\":\"duplicate\"");
    assert_contains(lines[2], "\"outcome\":\"ack-lost\"");
    assert_contains(lines[3], "\"result\":\"duplicate\"");
    assert_contains(lines[4], "\"outcome\":\"crashed\"");
    g_assert_null(strstr(lines[4], "\"publishes\""));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    static const struct {
        const char *line, *why;
    } bad[] = {
        { "{\"subject\": \"a\", \"crash_after_publish\": 1, \"ack_lost\": true}", "give one fault a delivery" },
        { "{\"subject\": \"a\", \"ack_lost\": 1}", "ack_lost: expected true or false" },
        { "{\"subject\": \"a\", \"crash_after_publish\": -1}", "crash_after_publish" },
        { "{\"subject\": \"a\", \"crash_after_publish\": 100001}", "crash_after_publish" },
        { "{\"subject\": \"a\", \"crash_after_publish\": 1.5}", "crash_after_publish" },
        { "{\"subject\": \"a\", \"crash_after_publish\": \"1\"}", "crash_after_publish" },
        { "{\"subject\": \"a\", \"crash_after_publish\": null}", "crash_after_publish" },
        { "{\"subject\": \"a\", \"ack_lost\": \"true\"}", "ack_lost: expected true or false" },
        { "{\"subject\": \"a\", \"ack_lost\": [true]}", "ack_lost: expected true or false" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *in = g_strdup_printf("%s\n", bad[i].line);
        status = jet_test_mock_cli(in, &out, &err, "--plugin", plugin, "--option", "subject=copy.{subject}",
                                   "--quiet", NULL);
        g_assert_cmpint(status, ==, 2);
        assert_contains(err, "stdin:1: ");
        assert_contains(err, bad[i].why);
        g_clear_pointer(&out, g_free);
        g_clear_pointer(&err, g_free);
    }
}

static void test_cli(void)
{
    g_assert_nonnull(g_getenv("JET_BUILDDIR"));
    g_autofree char *plugin = jet_test_plugin_copy("fx_misuse");
    const char *input =
        "{\"subject\": \"a.b\", \"data\": \"hi\"}\n"
        "\n"
        "{\"subject\": \"a.b\", \"headers\": {\"verdict\": \"retry\", \"reason\": [\"down\"]}, "
        "\"deliveries\": 3, \"failures\": 2, \"advance_ms\": 1000}\n"
        "{\"subject\": \"a.b\", \"headers\": {\"verdict\": \"postpone\", \"delay-ms\": \"5000\"}, "
        "\"enqueued\": \"2023-12-31T23:30:00Z\", \"stream_seq\": 99}\n"
        "{\"subject\": \"a.b\", \"headers\": {\"verdict\": \"postpone\", \"delay-ms\": \"5000\"}, "
        "\"enqueued\": null}\n"
        "{\"subject\": \"a.c\", \"data_b64\": \"aGk=\", \"headers\": {\"verdict\": \"reject\"}}\n";
    g_autofree char *out = NULL, *err = NULL;
    int status = jet_test_mock_cli(input, &out, &err, "--plugin", plugin, "--policy", "rungs=2s, 4s",
                         "--option", "log_now=true", NULL);
    g_assert_cmpint(status, ==, 0);
    g_auto(GStrv) lines = g_strsplit(g_strchomp(out), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 5);
    assert_contains(lines[0], "\"line\":1,\"stream_seq\":1,\"deliveries\":1,\"action\":\"ack\"");
    assert_contains(lines[1], "\"line\":3,");
    assert_contains(lines[1], "\"action\":\"retry\",\"delay_ms\":4000");
    assert_contains(lines[1], "\"reason\":\"down\",\"is_failure\":true,\"failure_number\":3");
    assert_contains(lines[2], "\"stream_seq\":99");
    assert_contains(lines[2], "\"action\":\"postpone\",\"delay_ms\":5000");
    assert_contains(lines[3], "\"action\":\"retry\"");
    assert_contains(lines[3], "enqueue time unknown");
    assert_contains(lines[4], "\"cause\":\"rejected\"");
    assert_contains(lines[4], "[\"Jethost-Origin-Subject\",\"a.c\"]");
    g_assert_null(strstr(out, "violation"));
    /* The plugin's log goes to stderr, with the advanced clock. */
    assert_contains(err, "now=1704067201000000000 subject=a.b");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* A broken rule: reported on its line, and in the exit code. */
    status = jet_test_mock_cli("{\"subject\": \"x\"}\n", &out, &err, "--plugin", plugin, "--option",
                     "misuse=verdict", "--quiet", NULL);
    g_assert_cmpint(status, ==, 1);
    assert_contains(out, "\"action\":\"retry\"");
    assert_contains(out, "\"violation\":\"verdict\"");
    assert_contains(out, "verdict 7 is not a jet_verdict");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* Bad input names its line; an unknown field is an error, not ignored. */
    status = jet_test_mock_cli("{\"subject\": \"x\"}\n{\"subject\": \"x\", \"delivery\": 2}\n", &out, &err,
                     "--plugin", plugin, NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(err, "stdin:2: unknown field 'delivery'");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    status = jet_test_mock_cli("not json\n", &out, &err, "--plugin", plugin, NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(err, "stdin:1: not JSON");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* Deep nesting is refused before the parser, which would recurse off the
     * stack; brackets inside strings do not count. */
    g_autoptr(GString) deep = g_string_new("{\"subject\": \"x\", \"data\": \"[[[[{{\"}\n{\"subject\": \"x\", \"headers\": ");
    for (int i = 0; i < 100000; i++)
        g_string_append_c(deep, '[');
    g_string_append(deep, "\n");
    status = jet_test_mock_cli(deep->str, &out, &err, "--plugin", plugin, "--quiet", NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(err, "stdin:2: nested deeper than 64");
    assert_contains(out, "\"line\":1,");
    g_assert_null(strstr(out, "\"line\":2,"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* 64 levels are still read. */
    g_string_assign(deep, "{\"subject\": \"x\", \"headers\": {\"h\": ");
    for (int i = 0; i < 62; i++)
        g_string_append_c(deep, '[');
    g_string_append(deep, "\"v\"");
    for (int i = 0; i < 62; i++)
        g_string_append_c(deep, ']');
    g_string_append(deep, "}}\n");
    status = jet_test_mock_cli(deep->str, &out, &err, "--plugin", plugin, "--quiet", NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(err, "stdin:1: headers.h: values must be strings");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* data_b64 is strict base64: g_base64_decode() alone would take these. */
    static const struct { const char *b64, *why; } bad_b64[] = {
        { "aGk", "not a multiple of 4" },
        { "aG!=", "'!' at offset 2" },
        { "aG k", "' ' at offset 2" },
        { "a===", "'=' at offset 1" },
        { "aG=k", "'=' at offset 2" },
        { "aGl=", "non-zero bits" },
        { "aR==", "non-zero bits" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad_b64); i++) {
        g_autofree char *in = g_strdup_printf("{\"subject\": \"x\", \"data_b64\": \"aGk=\"}\n"
                                              "{\"subject\": \"x\", \"data_b64\": \"%s\"}\n",
                                              bad_b64[i].b64);
        status = jet_test_mock_cli(in, &out, &err, "--plugin", plugin, "--quiet", NULL);
        g_assert_cmpint(status, ==, 2);
        assert_contains(err, "stdin:2: data_b64: ");
        assert_contains(err, bad_b64[i].why);
        g_clear_pointer(&out, g_free);
        g_clear_pointer(&err, g_free);
    }
    status = jet_test_mock_cli("{\"subject\": \"x\", \"data_b64\": \"\"}\n"
                     "{\"subject\": \"x\", \"data_b64\": \"AA==\"}\n"
                     "{\"subject\": \"x\", \"data_b64\": \"+/8=\"}\n", &out, &err,
                     "--plugin", plugin, "--quiet", NULL);
    g_assert_cmpint(status, ==, 0);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* An undeclared option: the plugin does not start. */
    status = jet_test_mock_cli("", &out, &err, "--plugin", plugin, "--option", "lable=x", NULL);
    g_assert_cmpint(status, ==, 3);
    assert_contains(err, "option-undeclared: option.lable");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    status = jet_test_mock_cli("", &out, &err, "--plugin", plugin, "--policy", "max_atempts=1", NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(err, "unknown key 'max_atempts'");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/mock/load", test_load);
    g_test_add_func("/mock/options", test_options);
    g_test_add_func("/mock/policy", test_policy);
    g_test_add_func("/mock/sequence-matches-decide", test_sequence_matches_decide);
    g_test_add_func("/mock/clock", test_clock);
    g_test_add_func("/mock/settlement-size", test_settlement_size);
    g_test_add_func("/mock/postpone-horizon", test_postpone_horizon);
    g_test_add_func("/mock/strict/verdict", test_strict_verdict);
    g_test_add_func("/mock/strict/postpone-delay", test_strict_postpone_delay);
    g_test_add_func("/mock/strict/postpone-cap", test_strict_postpone_cap);
    g_test_add_func("/mock/strict/reason-length", test_strict_reason);
    g_test_add_func("/mock/strict/use-after-handle", test_strict_use_after_handle);
    g_test_add_func("/mock/strict/thread", test_strict_thread);
    g_test_add_func("/mock/strict/option-reads", test_strict_option_reads);
    g_test_add_func("/mock/strict/aborts", test_strict_aborts);
    g_test_add_func("/mock/before-handle", test_before_handle);
    g_test_add_func("/mock/crash-attribution", test_crash_attribution);
    g_test_add_func("/mock/capture-stranded", test_capture_stranded);
    g_test_add_func("/mock/dlq-provenance", test_dlq_provenance);
    g_test_add_func("/mock/dlq-daemon-rules", test_dlq_daemon_rules);
    g_test_add_func("/mock/abi-1.0-works", test_abi10_works);
    g_test_add_func("/mock/abi-1.1-works", test_abi11_works);
    g_test_add_func("/mock/validate", test_validate);
    g_test_add_func("/mock/settled", test_settled);
    g_test_add_func("/mock/cli-kv", test_cli_kv);
    g_test_add_func("/mock/abi-newer-minor-refused", test_abi_newer_minor_refused);
    g_test_add_func("/mock/calls-and-log", test_calls_and_log);
    g_test_add_func("/mock/cli", test_cli);
    g_test_add_func("/mock/cli-faults", test_cli_faults);
    return g_test_run();
}
