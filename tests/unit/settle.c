/* The settlement decision (host/core/settle.c): the precedence list of
 * docs/settlement.md, at every edge. */
#include "settle.h"
#include "config.h"

#include <glib/gstdio.h>

#include <jethost/plugin.h>

#include <glib.h>
#include <string.h>

#define NOW_NS   G_GINT64_CONSTANT(1700000000000000000)
#define MS_NS    G_GINT64_CONSTANT(1000000)

static const guint64 ladder[] = { 1000, 5000, 30000, 120000 };
#define N_RUNGS G_N_ELEMENTS(ladder)

/* A binding with an unlimited budget and unlimited attempts: each test
 * switches on what it exercises. */
static JetSettlePolicy policy(void)
{
    JetSettlePolicy p = {
        .rungs_ms = ladder,
        .n_rungs = N_RUNGS,
        .max_attempts = 0,
        .postpone_horizon_ms = 3600000,       /* 1h */
        .max_postpone_delay_ms = 900000,      /* 15m */
        .capture_reserve = 1,
        .max_deliver = -1,
        .crash_limit = 3,
        .max_hops = 16,
    };
    return p;
}

/* A first delivery, stored one second ago. */
static JetSettleFacts facts(int verdict)
{
    JetSettleFacts f = {
        .verdict = verdict,
        .deliveries = 1,
        .has_enqueued = TRUE,
        .enqueued_ns = NOW_NS - 1000 * MS_NS,
        .now_ns = NOW_NS,
    };
    return f;
}

static JetSettleFacts postpone(guint64 delay_ms)
{
    JetSettleFacts f = facts(JET_POSTPONE);
    f.has_delay = TRUE;
    f.delay_ms = delay_ms;
    return f;
}

static JetSettleAction decide(const JetSettlePolicy *p, const JetSettleFacts *f)
{
    JetSettleAction a;
    memset(&a, 0xA5, sizeof a);   /* decide must set every field that matters */
    jet_settle_decide(p, f, &a);
    g_assert_cmpuint(strnlen(a.reason, sizeof a.reason), <, sizeof a.reason);
    return a;
}

#define assert_ack(a) G_STMT_START {                                       \
    g_assert_cmpstr(jet_action_name((a).kind), ==, "ack");                \
    g_assert_cmpstr(jet_cause_name((a).cause), ==, "none");               \
    g_assert_false((a).is_failure);                                        \
    g_assert_false((a).plugin_error);                                      \
} G_STMT_END

#define assert_retry(a, delay, k) G_STMT_START {                           \
    g_assert_cmpstr(jet_action_name((a).kind), ==, "retry");              \
    g_assert_cmpstr(jet_cause_name((a).cause), ==, "none");               \
    g_assert_cmpuint((a).delay_ms, ==, (delay));                           \
    g_assert_true((a).is_failure);                                         \
    g_assert_cmpuint((a).failure_number, ==, (k));                         \
} G_STMT_END

#define assert_postpone(a, delay) G_STMT_START {                           \
    g_assert_cmpstr(jet_action_name((a).kind), ==, "postpone");           \
    g_assert_cmpstr(jet_cause_name((a).cause), ==, "none");               \
    g_assert_cmpuint((a).delay_ms, ==, (delay));                           \
    g_assert_false((a).is_failure);                                        \
    g_assert_false((a).plugin_error);                                      \
} G_STMT_END

#define assert_capture(a, cause_name) G_STMT_START {                       \
    g_assert_cmpstr(jet_action_name((a).kind), ==, "capture");            \
    g_assert_cmpstr(jet_cause_name((a).cause), ==, (cause_name));         \
} G_STMT_END

/* --- names ------------------------------------------------------------------ */

static void test_names(void)
{
    g_assert_cmpstr(jet_action_name(JET_ACTION_ACK), ==, "ack");
    g_assert_cmpstr(jet_action_name(JET_ACTION_RETRY), ==, "retry");
    g_assert_cmpstr(jet_action_name(JET_ACTION_POSTPONE), ==, "postpone");
    g_assert_cmpstr(jet_action_name(JET_ACTION_CAPTURE), ==, "capture");
    g_assert_cmpstr(jet_action_name((JetActionKind)42), ==, "unknown");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_NONE), ==, "none");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_REJECTED), ==, "rejected");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_POISON), ==, "poison");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_BREAKER), ==, "breaker");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_BUDGET), ==, "budget");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_EXHAUSTED), ==, "exhausted");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_MAX_DELIVERIES), ==, "max-deliveries");
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_HOP_LIMIT), ==, "hop-limit");
    g_assert_cmpstr(jet_cause_name((JetCaptureCause)42), ==, "unknown");
}

/* --- ACK ------------------------------------------------------------------ */

static void test_ack(void)
{
    JetSettlePolicy p = policy();
    JetSettleFacts f = facts(JET_ACK);
    JetSettleAction a = decide(&p, &f);
    assert_ack(a);
    g_assert_cmpstr(a.reason, ==, "");

    f.reason = "done";
    a = decide(&p, &f);
    assert_ack(a);
    g_assert_cmpstr(a.reason, ==, "done");

    /* An ACK after many failures, or at the last delivery, is still an ACK. */
    p.max_attempts = 3;
    p.max_deliver = 5;
    f.failures = 12;
    f.deliveries = 5;
    assert_ack(decide(&p, &f));
}

/* An ACK whose publishes did not all go out is no ACK: a refused call is a
 * plugin error, a failed publish a plain failure; both walk the ladder and
 * end in the budget or max_attempts like any failure.  A refused call is a
 * plugin error after any verdict, its reason the refusal's (the documented
 * pattern returns JET_RETRY with no reason of its own); a failed publish
 * means nothing after another verdict (nothing was sent). */
static void test_publish_facts(void)
{
    JetSettlePolicy p = policy();
    JetSettleFacts f = facts(JET_ACK);
    f.publish_refused = "publish 0: subject \"a.*\" holds a wildcard";
    JetSettleAction a = decide(&p, &f);
    g_assert_cmpint(a.kind, ==, JET_ACTION_RETRY);
    g_assert_true(a.plugin_error);
    g_assert_true(a.is_failure);
    g_assert_cmpstr(a.reason, ==, "plugin error: publish 0: subject \"a.*\" holds a wildcard");

    f = facts(JET_ACK);
    f.reason = "forwarded";
    f.publish_failed = "publish 1 of 1 to x: no responders";
    a = decide(&p, &f);
    g_assert_cmpint(a.kind, ==, JET_ACTION_RETRY);
    g_assert_false(a.plugin_error);
    g_assert_true(a.is_failure);
    g_assert_cmpuint(a.failure_number, ==, 1);
    g_assert_cmpuint(a.delay_ms, ==, ladder[0]);
    g_assert_cmpstr(a.reason, ==, "publish failed: publish 1 of 1 to x: no responders");

    /* At max_attempts: dead-lettered, the reason kept. */
    p.max_attempts = 2;
    f.failures = 1;
    f.deliveries = 2;
    a = decide(&p, &f);
    g_assert_cmpint(a.kind, ==, JET_ACTION_CAPTURE);
    g_assert_cmpint(a.cause, ==, JET_CAUSE_EXHAUSTED);
    g_assert_cmpstr(a.reason, ==, "publish failed: publish 1 of 1 to x: no responders");

    /* At the budget line. */
    p = policy();
    p.max_deliver = 3;
    f = facts(JET_ACK);
    f.publish_failed = "x";
    f.deliveries = 2;
    a = decide(&p, &f);
    g_assert_cmpint(a.kind, ==, JET_ACTION_CAPTURE);
    g_assert_cmpint(a.cause, ==, JET_CAUSE_BUDGET);

    /* Not an ACK: a failed publish changes nothing... */
    p = policy();
    f = facts(JET_REJECT);
    f.publish_failed = "x";
    a = decide(&p, &f);
    g_assert_cmpint(a.cause, ==, JET_CAUSE_REJECTED);
    g_assert_false(a.plugin_error);
    /* ...a refused call is a plugin error whatever the verdict: the
     * refusal is the reason, the plugin's own kept beside it. */
    static const int verdicts[] = { JET_RETRY, JET_POSTPONE, JET_REJECT };
    for (gsize i = 0; i < G_N_ELEMENTS(verdicts); i++) {
        f = facts(verdicts[i]);
        f.has_delay = TRUE;
        f.delay_ms = 1000;
        f.publish_refused = "publish 0: subject \"a b\" holds white space or a control character";
        a = decide(&p, &f);
        g_assert_cmpint(a.kind, ==, JET_ACTION_RETRY);
        g_assert_true(a.plugin_error);
        g_assert_true(a.is_failure);
        g_assert_cmpstr(a.reason, ==, "plugin error: publish 0: subject \"a b\" holds white space or a control character");
        f.reason = "enrich failed";
        a = decide(&p, &f);
        g_assert_cmpstr(a.reason, ==, "plugin error: publish 0: subject \"a b\" holds white space or a control "
                                      "character (handle() said: enrich failed)");
    }
}

/* --- the retry ladder ------------------------------------------------------- */

static void test_ladder_each_rung(void)
{
    JetSettlePolicy p = policy();
    /* Failure k (k-1 recorded before) is served rungs[k-1]; from k = n on,
     * the last rung repeats. */
    for (guint32 k = 1; k <= N_RUNGS + 5; k++) {
        JetSettleFacts f = facts(JET_RETRY);
        f.failures = k - 1;
        f.deliveries = k;
        f.reason = "db down";
        JetSettleAction a = decide(&p, &f);
        guint64 want = ladder[MIN(k - 1, N_RUNGS - 1)];
        assert_retry(a, want, k);
        g_assert_cmpuint(jet_settle_rung_ms(&p, k), ==, want);
        g_assert_false(a.plugin_error);
        g_assert_cmpstr(a.reason, ==, "db down");
    }
    /* The first failure gets the first rung, not the second. */
    JetSettleFacts f = facts(JET_RETRY);
    assert_retry(decide(&p, &f), 1000, 1);
}

static void test_ladder_single_rung(void)
{
    static const guint64 one[] = { 7000 };
    JetSettlePolicy p = policy();
    p.rungs_ms = one;
    p.n_rungs = 1;
    for (guint32 failures = 0; failures < 5; failures++) {
        JetSettleFacts f = facts(JET_RETRY);
        f.failures = failures;
        assert_retry(decide(&p, &f), 7000, failures + 1);
    }
}

static void test_max_attempts_edge(void)
{
    for (guint max = 1; max <= 6; max++) {
        JetSettlePolicy p = policy();
        p.max_attempts = max;
        JetSettleFacts f = facts(JET_RETRY);
        /* k = max - 1 is still retried (when there is such a k)... */
        if (max >= 2) {
            f.failures = max - 2;
            f.deliveries = max - 1;
            assert_retry(decide(&p, &f), ladder[MIN(max - 2, N_RUNGS - 1)], max - 1);
        }
        /* ... k = max is captured, and so is anything past it. */
        for (guint32 extra = 0; extra < 3; extra++) {
            f.failures = max - 1 + extra;
            f.deliveries = max + extra;
            JetSettleAction a = decide(&p, &f);
            assert_capture(a, "exhausted");
            g_assert_true(a.is_failure);
            g_assert_cmpuint(a.failure_number, ==, max + extra);
        }
    }
}

static void test_max_attempts_unlimited(void)
{
    JetSettlePolicy p = policy();
    p.max_attempts = 0;
    JetSettleFacts f = facts(JET_RETRY);
    f.failures = 9999;
    f.deliveries = 10000;
    assert_retry(decide(&p, &f), ladder[N_RUNGS - 1], 10000);

    /* The failure count saturates instead of wrapping to 0. */
    f.failures = G_MAXUINT32;
    f.deliveries = G_MAXUINT32;
    assert_retry(decide(&p, &f), ladder[N_RUNGS - 1], G_MAXUINT32);
}

/* --- the delivery budget ------------------------------------------------------ */

static void test_budget_edge(void)
{
    for (gint64 md = 1; md <= 10; md++) {
        for (guint reserve = 0; reserve <= 3; reserve++) {
            JetSettlePolicy p = policy();
            p.max_deliver = md;
            p.capture_reserve = reserve;
            gint64 edge = md - (gint64)reserve;   /* first delivery that is captured */
            for (guint32 d = 1; d <= 12; d++) {
                JetSettleFacts f = facts(JET_RETRY);
                f.deliveries = d;
                f.failures = d - 1;
                JetSettleAction a = decide(&p, &f);
                if ((gint64)d >= edge) {
                    assert_capture(a, "budget");
                    g_assert_true(a.is_failure);
                    g_assert_cmpuint(a.failure_number, ==, d);
                } else {
                    assert_retry(a, ladder[MIN(d - 1, N_RUNGS - 1)], d);
                }
                /* An ACK is never held back by the budget. */
                JetSettleFacts ack = f;
                ack.verdict = JET_ACK;
                assert_ack(decide(&p, &ack));
            }
        }
    }
}

static void test_budget_named_cases(void)
{
    JetSettlePolicy p = policy();
    JetSettleFacts f = facts(JET_RETRY);

    /* MaxDeliver 5, reserve 1: delivery 4 is the last the host may NAK. */
    p.max_deliver = 5;
    p.capture_reserve = 1;
    f.deliveries = 3;
    f.failures = 2;
    assert_retry(decide(&p, &f), 30000, 3);
    f.deliveries = 4;
    f.failures = 3;
    assert_capture(decide(&p, &f), "budget");

    /* Reserve 0: the very last delivery is captured, one below retried. */
    p.capture_reserve = 0;
    f.deliveries = 4;
    assert_retry(decide(&p, &f), ladder[3], 4);
    f.deliveries = 5;
    assert_capture(decide(&p, &f), "budget");

    /* Reserve >= MaxDeliver: nothing may ever be NAKed (no unsigned wrap). */
    p.max_deliver = 2;
    p.capture_reserve = 2;
    f.deliveries = 1;
    f.failures = 0;
    assert_capture(decide(&p, &f), "budget");
    p.capture_reserve = G_MAXUINT;
    assert_capture(decide(&p, &f), "budget");

    /* MaxDeliver -1 and 0 are unlimited. */
    p.capture_reserve = 1;
    for (gint64 md = -1; md <= 0; md++) {
        p.max_deliver = md;
        f.deliveries = G_MAXUINT32;
        f.failures = 7;
        assert_retry(decide(&p, &f), ladder[3], 8);
    }

    /* A huge MaxDeliver and delivery count cannot overflow either. */
    p.max_deliver = G_MAXINT64;
    p.capture_reserve = G_MAXUINT;
    f.deliveries = G_MAXUINT32;
    assert_retry(decide(&p, &f), ladder[3], 8);
}

/* --- REJECT ------------------------------------------------------------------ */

static void test_reject(void)
{
    for (guint32 d = 1; d <= 10; d++) {
        JetSettlePolicy p = policy();
        p.max_attempts = 3;
        p.max_deliver = 6;
        JetSettleFacts f = facts(JET_REJECT);
        f.deliveries = d;
        f.failures = d - 1;
        f.reason = "schema v1 is gone";
        JetSettleAction a = decide(&p, &f);
        assert_capture(a, "rejected");
        g_assert_cmpstr(a.reason, ==, "schema v1 is gone");
        g_assert_false(a.is_failure);
        g_assert_false(a.plugin_error);
    }
    /* Without a reason. */
    JetSettlePolicy p = policy();
    JetSettleFacts f = facts(JET_REJECT);
    JetSettleAction a = decide(&p, &f);
    assert_capture(a, "rejected");
    g_assert_cmpstr(a.reason, ==, "");
}

/* --- POSTPONE ---------------------------------------------------------------- */

static void test_postpone_inside_horizon(void)
{
    JetSettlePolicy p = policy();
    JetSettleFacts f = postpone(30000);
    f.failures = 2;
    f.postpones = 40;
    f.deliveries = 43;
    f.reason = "waiting for a slot";
    JetSettleAction a = decide(&p, &f);
    assert_postpone(a, 30000);
    g_assert_cmpuint(a.failure_number, ==, 0);
    g_assert_cmpstr(a.reason, ==, "waiting for a slot");

    /* One nanosecond short of the horizon. */
    f.enqueued_ns = NOW_NS - (gint64)p.postpone_horizon_ms * MS_NS + 1;
    assert_postpone(decide(&p, &f), 30000);

    /* A stream clock ahead of ours is "just stored", not an overflow. */
    f.enqueued_ns = NOW_NS + 1000 * MS_NS;
    assert_postpone(decide(&p, &f), 30000);
    f.enqueued_ns = G_MAXINT64;
    f.now_ns = G_MININT64;
    assert_postpone(decide(&p, &f), 30000);

    /* A postpone does not walk toward max_attempts. */
    p.max_attempts = 3;
    f = postpone(1000);
    f.failures = 2;       /* the next failure would exhaust */
    assert_postpone(decide(&p, &f), 1000);
}

static void test_postpone_past_horizon(void)
{
    JetSettlePolicy p = policy();
    JetSettleFacts f = postpone(30000);
    f.failures = 1;
    f.deliveries = 5;
    f.reason = "waiting for a slot";

    /* Exactly at the horizon is past it. */
    f.enqueued_ns = NOW_NS - (gint64)p.postpone_horizon_ms * MS_NS;
    JetSettleAction a = decide(&p, &f);
    assert_retry(a, ladder[1], 2);   /* the ladder's rung, not the plugin's delay */
    g_assert_false(a.plugin_error);
    g_assert_cmpstr(a.reason, ==, "POSTPONE past postpone_horizon 1h: waiting for a slot");

    /* Well past it. */
    f.enqueued_ns = NOW_NS - 2 * (gint64)p.postpone_horizon_ms * MS_NS;
    assert_retry(decide(&p, &f), ladder[1], 2);

    /* The oldest possible message. */
    f.enqueued_ns = G_MININT64;
    f.now_ns = G_MAXINT64;
    assert_retry(decide(&p, &f), ladder[1], 2);
    f.now_ns = NOW_NS;

    /* Past the horizon it exhausts like any failure. */
    p.max_attempts = 2;
    a = decide(&p, &f);
    assert_capture(a, "exhausted");
    g_assert_true(a.is_failure);

    /* Horizon 0: every postpone is a failure. */
    p = policy();
    p.postpone_horizon_ms = 0;
    f = postpone(30000);
    a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_cmpstr(a.reason, ==, "POSTPONE counts as a failure (postpone_horizon 0)");

    /* A horizon too large to express in nanoseconds never passes. */
    p.postpone_horizon_ms = G_MAXUINT64;
    f.enqueued_ns = G_MININT64;
    f.now_ns = G_MAXINT64;
    assert_postpone(decide(&p, &f), 30000);
}

static void test_postpone_unknown_enqueue(void)
{
    /* Unknown age is treated as past the horizon, and the reason says so: a
     * message whose age cannot be known must not be able to wait forever. */
    JetSettlePolicy p = policy();
    JetSettleFacts f = postpone(30000);
    f.has_enqueued = FALSE;
    f.enqueued_ns = NOW_NS;   /* a stale value must not be read */
    JetSettleAction a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_false(a.plugin_error);
    g_assert_nonnull(strstr(a.reason, "enqueue time unknown"));

    f.reason = "not yet";
    a = decide(&p, &f);
    g_assert_true(g_str_has_suffix(a.reason, ": not yet"));

    /* Known age zero is not unknown age. */
    f.has_enqueued = TRUE;
    f.enqueued_ns = NOW_NS;
    assert_postpone(decide(&p, &f), 30000);
    /* Nor is an enqueue time of 0 (1970): that is a known, old message. */
    f.enqueued_ns = 0;
    assert_retry(decide(&p, &f), ladder[0], 1);
}

static void test_postpone_delay_rules(void)
{
    JetSettlePolicy p = policy();

    JetSettleFacts f = facts(JET_POSTPONE);   /* no delay set */
    JetSettleAction a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_true(a.plugin_error);
    g_assert_cmpstr(a.reason, ==, "plugin error: POSTPONE without a positive delay");

    f = postpone(0);
    a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_true(a.plugin_error);
    g_assert_cmpstr(a.reason, ==, "plugin error: POSTPONE without a positive delay");

    f = postpone(1);
    assert_postpone(decide(&p, &f), 1);

    f = postpone(p.max_postpone_delay_ms);
    assert_postpone(decide(&p, &f), p.max_postpone_delay_ms);

    f = postpone(p.max_postpone_delay_ms + 1);
    f.failures = 4;
    a = decide(&p, &f);
    assert_retry(a, ladder[3], 5);
    g_assert_true(a.plugin_error);
    g_assert_cmpstr(a.reason, ==,
                    "plugin error: POSTPONE delay 900001ms exceeds max_postpone_delay 15m");

    f = postpone(20 * 60 * 1000);
    a = decide(&p, &f);
    g_assert_cmpstr(a.reason, ==, "plugin error: POSTPONE delay 20m exceeds max_postpone_delay 15m");

    /* A delay set on another verdict is ignored. */
    f = facts(JET_RETRY);
    f.has_delay = TRUE;
    f.delay_ms = 0;
    a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_false(a.plugin_error);
}

/* --- plugin errors ------------------------------------------------------------- */

/* JET_PENDING reaches the decision only where the binding keeps no
 * delivery pending (the transport takes it in hand where it does). */
static void test_pending_not_enabled(void)
{
    JetSettlePolicy p = policy();
    JetSettleFacts f = facts(JET_PENDING);
    JetSettleAction a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_true(a.plugin_error);
    g_assert_cmpstr(a.reason, ==, "plugin error: handle() returned JET_PENDING on a binding without max_in_flight "
                                  "(docs/async.md)");
}

static void test_bad_verdicts(void)
{
    static const int bad[] = { -1, 5, 7, 99, G_MININT, G_MAXINT };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        JetSettlePolicy p = policy();
        JetSettleFacts f = facts(bad[i]);
        f.reason = "ignored";
        JetSettleAction a = decide(&p, &f);
        assert_retry(a, ladder[0], 1);
        g_assert_true(a.plugin_error);
        g_autofree char *want = g_strdup_printf("plugin error: verdict %d is not a jet_verdict",
                                                bad[i]);
        g_assert_cmpstr(a.reason, ==, want);

        /* Plugin errors count toward max_attempts... */
        p.max_attempts = 1;
        a = decide(&p, &f);
        assert_capture(a, "exhausted");
        g_assert_true(a.plugin_error);
        g_assert_cmpstr(a.reason, ==, want);
        /* ... and the budget. */
        p.max_attempts = 0;
        p.max_deliver = 2;
        a = decide(&p, &f);
        assert_capture(a, "budget");
        g_assert_true(a.plugin_error);
    }
}

static void test_reason_length(void)
{
    char exact[JET_REASON_MAX + 1];
    memset(exact, 'r', JET_REASON_MAX);
    exact[JET_REASON_MAX] = '\0';
    char over[JET_REASON_MAX + 2];
    memset(over, 'o', JET_REASON_MAX + 1);
    over[JET_REASON_MAX + 1] = '\0';

    static const int verdicts[] = { JET_ACK, JET_RETRY, JET_POSTPONE, JET_REJECT };
    static const JetActionKind kinds[] = { JET_ACTION_ACK, JET_ACTION_RETRY, JET_ACTION_POSTPONE,
                                           JET_ACTION_CAPTURE };
    for (gsize i = 0; i < G_N_ELEMENTS(verdicts); i++) {
        JetSettlePolicy p = policy();
        JetSettleFacts f = postpone(5000);
        f.verdict = verdicts[i];

        /* Exactly 256 bytes is fine, and copied whole. */
        f.reason = exact;
        JetSettleAction a = decide(&p, &f);
        g_assert_false(a.plugin_error);
        g_assert_cmpstr(a.reason, ==, exact);
        g_assert_cmpuint(a.kind, ==, kinds[i]);

        /* The host flagged a longer one (msg_set_reason refused it): a
         * failure on every verdict, even ACK. */
        f.reason = NULL;
        f.reason_too_long = TRUE;
        a = decide(&p, &f);
        assert_retry(a, ladder[0], 1);
        g_assert_true(a.plugin_error);
        g_assert_cmpstr(a.reason, ==, "plugin error: reason longer than 256 bytes");

        /* A caller that passes a 257-byte reason unflagged gets the same. */
        f.reason = over;
        f.reason_too_long = FALSE;
        a = decide(&p, &f);
        assert_retry(a, ladder[0], 1);
        g_assert_true(a.plugin_error);
    }
}

static void test_reason_truncation(void)
{
    /* The buffer outlasts any valid reason; a longer text in a composed
     * reason is cut without splitting a UTF-8 character. */
    JetSettlePolicy p = policy();
    JetSettleFacts f = postpone(5000);
    f.has_enqueued = FALSE;
    for (int odd = 0; odd <= 1; odd++) {
        /* With and without one ASCII byte in front, so that one of the two
         * cuts lands inside a character. */
        GString *r = g_string_new(odd ? "x" : "");
        while (r->len + 2 <= JET_REASON_MAX)
            g_string_append(r, "\xc3\xa9");   /* é, two bytes */
        f.reason = r->str;
        JetSettleAction a = decide(&p, &f);
        g_assert_cmpuint(strlen(a.reason), >=, sizeof a.reason - 2);
        g_assert_cmpuint(strlen(a.reason), <=, sizeof a.reason - 1);
        g_assert_true(g_utf8_validate(a.reason, -1, NULL));
        g_string_free(r, TRUE);
    }
}

/* --- precedence ------------------------------------------------------------------ */

static void test_poison_and_breaker(void)
{
    JetSettlePolicy p = policy();
    JetSettleFacts f = facts(JET_ACK);
    JetSettleAction a;

    /* Below the limit the handler runs. */
    f.strikes = p.crash_limit - 1;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));
    g_assert_cmpuint(a.kind, !=, JET_ACTION_ACK);
    assert_ack(decide(&p, &f));

    /* At and past it: poison, before the handler. */
    for (guint32 s = p.crash_limit; s <= p.crash_limit + 2; s++) {
        f.strikes = s;
        g_assert_true(jet_settle_before_handle(&p, &f, &a));
        assert_capture(a, "poison");
        g_assert_false(a.is_failure);
    }

    /* crash_limit 1: the first strike is enough; 0 turns poison off. */
    p.crash_limit = 1;
    f.strikes = 1;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "poison");
    p.crash_limit = 0;
    f.strikes = 1000;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));

    /* The hop count: at max_hops a capture, unhandled and no failure;
     * max_hops 0 bounds nothing. */
    p = policy();
    f = facts(JET_ACK);
    g_assert_cmpuint(p.max_hops, ==, 16);
    f.hops = 15;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));
    f.hops = 16;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "hop-limit");
    g_assert_false(a.is_failure);
    f.hops = G_MAXUINT32;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    p.max_hops = 0;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));

    /* The breaker. */
    p = policy();
    f = facts(JET_ACK);
    f.breaker_claim = TRUE;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "breaker");
    g_assert_false(a.is_failure);

    /* Poison outranks the breaker. */
    f.strikes = p.crash_limit;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "poison");

    /* An unreadable header block outranks both: the plugin never sees it,
     * whatever its verdict would have been, and it is no failure. */
    f.malformed_headers = "line 3 \"p\" (no colon)";
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "malformed-headers");
    g_assert_false(a.is_failure);
    g_assert_cmpstr(a.reason, ==, "header block: line 3 \"p\" (no colon)");
    f = facts(JET_ACK);
    f.malformed_headers = "block (truncated: no blank line at the end)";
    assert_capture(decide(&p, &f), "malformed-headers");
}

static void test_precedence_conflicts(void)
{
    JetSettlePolicy p = policy();
    p.max_deliver = 5;
    p.capture_reserve = 1;
    p.max_attempts = 3;

    /* REJECT at the budget edge, at exhaustion: rejected. */
    JetSettleFacts f = facts(JET_REJECT);
    f.deliveries = 4;
    f.failures = 2;
    assert_capture(decide(&p, &f), "rejected");

    /* Budget beats exhaustion: both apply, budget is weighed first. */
    f.verdict = JET_RETRY;
    JetSettleAction a = decide(&p, &f);
    assert_capture(a, "budget");
    g_assert_true(a.is_failure);
    g_assert_cmpuint(a.failure_number, ==, 3);
    f.deliveries = 3;
    assert_capture(decide(&p, &f), "exhausted");

    /* A valid postpone inside its horizon at the budget edge: budget, and
     * not a failure. */
    f = postpone(1000);
    f.deliveries = 4;
    a = decide(&p, &f);
    assert_capture(a, "budget");
    g_assert_false(a.is_failure);
    g_assert_false(a.plugin_error);
    /* Past its horizon at the budget edge: budget, as a failure. */
    f.has_enqueued = FALSE;
    a = decide(&p, &f);
    assert_capture(a, "budget");
    g_assert_true(a.is_failure);

    /* Poison beats everything, the verdict included. */
    static const int verdicts[] = { JET_ACK, JET_RETRY, JET_POSTPONE, JET_REJECT, 99 };
    for (gsize i = 0; i < G_N_ELEMENTS(verdicts); i++) {
        f = facts(verdicts[i]);
        f.deliveries = 4;      /* at the budget edge */
        f.failures = 2;        /* at exhaustion */
        f.reason_too_long = TRUE;
        f.breaker_claim = TRUE;
        f.strikes = p.crash_limit;
        a = decide(&p, &f);
        assert_capture(a, "poison");
        g_assert_false(a.plugin_error);
        g_assert_false(a.is_failure);

        /* Then the breaker, ahead of the budget and of the verdict. */
        f.strikes = 0;
        a = decide(&p, &f);
        assert_capture(a, "breaker");
        g_assert_false(a.plugin_error);
    }

    /* A plugin error on an ACK at the budget edge: budget, never ack. */
    f = facts(JET_ACK);
    f.reason_too_long = TRUE;
    f.deliveries = 4;
    a = decide(&p, &f);
    assert_capture(a, "budget");
    g_assert_true(a.plugin_error);
}

/* decide agrees with before_handle whenever before_handle captures, and
 * before_handle captures exactly for a malformed block, a delivery at
 * max_hops, a suspect at its crash limit, a suspect at the budget line
 * (deliveries >= max_deliver - capture_reserve, finite MaxDeliver) or a
 * breaker claim, in that order. */
static void test_before_handle_consistency(void)
{
    static const gint64 mds[] = { -1, 0, 1, 2, 3, 4, 6 };
    static const guint reserves[] = { 0, 1, 2, 3, 6, G_MAXUINT };
    guint64 n = 0;
    for (guint limit = 0; limit <= 3; limit++)
      for (guint32 strikes = 0; strikes <= 4; strikes++)
        for (int claim = 0; claim <= 1; claim++)
          for (int bad = 0; bad <= 1; bad++)
           for (guint32 hops = 0; hops <= 3; hops += 2)
            for (int suspect = 0; suspect <= 1; suspect++)
              for (gsize mi = 0; mi < G_N_ELEMENTS(mds); mi++)
                for (gsize ri = 0; ri < G_N_ELEMENTS(reserves); ri++)
                  for (guint32 d = 1; d <= 8; d++)
                    for (int v = -1; v <= 4; v++) {
                        JetSettlePolicy p = policy();
                        p.crash_limit = limit;
                        p.max_deliver = mds[mi];
                        p.capture_reserve = reserves[ri];
                        p.max_hops = 2;
                        JetSettleFacts f = postpone(1000);
                        f.hops = hops;
                        f.verdict = v;
                        f.deliveries = d;
                        f.failures = d - 1;
                        f.strikes = strikes;
                        f.suspect = suspect;
                        f.breaker_claim = claim;
                        f.malformed_headers = bad ? "line 2 \"x\" (no colon)" : NULL;
                        JetSettleAction before, after;
                        gboolean captured = jet_settle_before_handle(&p, &f, &before);
                        jet_settle_decide(&p, &f, &after);
                        n++;
                        gboolean poison = limit >= 1 && strikes >= limit;
                        /* The line as a plain sum in 64 bits: no wrap with these. */
                        gboolean line = suspect && mds[mi] > 0 &&
                                        (gint64)d + (gint64)reserves[ri] >= mds[mi];
                        gboolean loop = hops >= 2;
                        g_assert_cmpint(captured, ==, bad || loop || poison || line || claim);
                        if (captured) {
                            g_assert_cmpuint(after.kind, ==, before.kind);
                            g_assert_cmpuint(after.cause, ==, before.cause);
                            g_assert_cmpstr(after.reason, ==, before.reason);
                            g_assert_cmpint(after.is_failure, ==, before.is_failure);
                            g_assert_false(after.is_failure);
                            g_assert_false(after.plugin_error);
                            g_assert_cmpuint(after.cause, ==, bad      ? JET_CAUSE_MALFORMED_HEADERS
                                                              : loop   ? JET_CAUSE_HOP_LIMIT
                                                              : poison ? JET_CAUSE_POISON
                                                              : line   ? JET_CAUSE_POISON
                                                                       : JET_CAUSE_BREAKER);
                            if (!bad && loop)
                                g_assert_true(g_str_has_prefix(after.reason, "published by hosts 2 times"));
                            if (!bad && !loop && !poison && line)
                                g_assert_true(g_str_has_prefix(after.reason,
                                                               "crash suspect at the budget line: "));
                            if (!bad && !loop && poison)
                                g_assert_true(g_str_has_prefix(after.reason, "crashed the host "));
                        } else {
                            /* The handler runs: its verdict decides, and no
                             * capture before it is ever claimed. */
                            g_assert_cmpuint(after.cause, !=, JET_CAUSE_POISON);
                            g_assert_cmpuint(after.cause, !=, JET_CAUSE_BREAKER);
                            g_assert_cmpuint(after.cause, !=, JET_CAUSE_MALFORMED_HEADERS);
                            g_assert_cmpuint(after.cause, !=, JET_CAUSE_HOP_LIMIT);
                        }
                    }
    g_test_message("%" G_GUINT64_FORMAT " facts", n);
}

static void assert_contains(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        g_error("missing \"%s\" in \"%s\"", needle, text);
}

/* A suspect (the ledger cannot explain its earlier deliveries: the host may
 * have died with it in hand) at the budget line is captured as poison before
 * it runs: another crash would spend a delivery its capture needs, and a
 * crash gives rule 4 no verdict to catch. */
static void test_suspect_budget_line(void)
{
    JetSettlePolicy p = policy();
    p.max_deliver = 4;
    p.capture_reserve = 1;             /* the line: delivery 3 */
    JetSettleFacts f = facts(JET_ACK);
    JetSettleAction a;
    f.suspect = TRUE;

    /* Below the line it runs alone, and its verdict counts. */
    f.deliveries = 2;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));
    g_assert_cmpuint(a.kind, !=, JET_ACTION_ACK);
    assert_ack(decide(&p, &f));

    /* At the line: captured, not a failure, no plugin error, no delay. */
    f.deliveries = 3;
    f.strikes = 1;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "poison");
    g_assert_false(a.is_failure);
    g_assert_false(a.plugin_error);
    g_assert_cmpuint(a.failure_number, ==, 0);
    g_assert_cmpuint(a.delay_ms, ==, 0);
    g_assert_cmpstr(a.reason, ==, "crash suspect at the budget line: delivery 3 of max_deliver 4 "
                                  "with capture_reserve 1, 1 strike handling it alone; captured "
                                  "before it runs again, so another crash cannot spend the "
                                  "deliveries its capture needs");
    /* decide agrees, whatever the verdict would have been. */
    assert_capture(decide(&p, &f), "poison");
    f.verdict = JET_RETRY;
    assert_capture(decide(&p, &f), "poison");
    f.verdict = JET_ACK;
    /* Past the line too, and with no strike at all (its first death was
     * beside others). */
    f.deliveries = 4;
    f.strikes = 0;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "poison");
    assert_contains(a.reason, "delivery 4 of max_deliver 4 with capture_reserve 1, 0 strikes");

    /* Not a suspect at the line: the handler runs (an ACK is an ACK; any
     * other verdict is rule 4's budget capture). */
    f.suspect = FALSE;
    f.deliveries = 3;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));
    assert_ack(decide(&p, &f));
    f.verdict = JET_RETRY;
    f.failures = 2;
    assert_capture(decide(&p, &f), "budget");

    /* The exact boundary: the first delivery with d + reserve >= max_deliver. */
    for (gint64 md = 1; md <= 10; md++)
        for (guint reserve = 0; reserve <= 4; reserve++)
            for (guint32 d = 1; d <= 12; d++) {
                p = policy();
                p.max_deliver = md;
                p.capture_reserve = reserve;
                f = facts(JET_ACK);
                f.suspect = TRUE;
                f.deliveries = d;
                gboolean at_line = (gint64)d >= md - (gint64)reserve;
                g_assert_cmpint(jet_settle_before_handle(&p, &f, &a), ==, at_line);
                f.suspect = FALSE;
                g_assert_false(jet_settle_before_handle(&p, &f, &a));
            }

    /* MaxDeliver unlimited: never, at any count, with any reserve. */
    f = facts(JET_ACK);
    f.suspect = TRUE;
    for (gint64 md = -1; md <= 0; md++) {
        p = policy();
        p.max_deliver = md;
        p.capture_reserve = G_MAXUINT;
        p.crash_limit = 0;
        f.deliveries = G_MAXUINT32;
        g_assert_false(jet_settle_before_handle(&p, &f, &a));
        assert_ack(decide(&p, &f));
    }

    /* capture_reserve >= max_deliver: always, from the first delivery, and
     * the threshold never wraps. */
    p = policy();
    p.max_deliver = 2;
    p.capture_reserve = 2;
    f.deliveries = 1;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    p.capture_reserve = G_MAXUINT;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_contains(a.reason, "max_deliver 2 with capture_reserve 4294967295");
    /* ...and a huge MaxDeliver with the largest counts does not overflow. */
    p.max_deliver = G_MAXINT64;
    f.deliveries = G_MAXUINT32;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));

    /* crash_limit 0 turns poison-by-strikes off, not the budget line: that
     * is then the only thing between a crash loop and MaxDeliver. */
    p = policy();
    p.max_deliver = 5;
    p.capture_reserve = 1;
    p.crash_limit = 0;
    f = facts(JET_ACK);
    f.suspect = TRUE;
    f.strikes = 1000;
    f.deliveries = 3;
    g_assert_false(jet_settle_before_handle(&p, &f, &a));
    f.deliveries = 4;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "poison");
    assert_contains(a.reason, "crash suspect at the budget line: delivery 4 of max_deliver 5");

    /* Precedence: a malformed block first, then the crash limit, then the
     * line, then the breaker. */
    p = policy();
    p.max_deliver = 4;
    p.capture_reserve = 1;
    f = facts(JET_ACK);
    f.suspect = TRUE;
    f.deliveries = 3;
    f.breaker_claim = TRUE;
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "poison");
    assert_contains(a.reason, "crash suspect at the budget line");
    f.deliveries = 2;   /* below the line: the breaker's */
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "breaker");
    f.deliveries = 3;
    f.strikes = p.crash_limit;   /* at its crash limit too: that rule's reason */
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "poison");
    g_assert_true(g_str_has_prefix(a.reason, "crashed the host 3 times"));
    f.malformed_headers = "line 1 \"k\" (no colon)";
    g_assert_true(jet_settle_before_handle(&p, &f, &a));
    assert_capture(a, "malformed-headers");
}

/* --- the invariant sweep ------------------------------------------------------------ */

typedef struct {
    const char *name;
    int verdict;
    gboolean has_delay;
    guint64 delay_ms;
    gboolean too_long;
    gboolean valid;          /* no plugin error */
} Answer;

static void test_sweep(void)
{
    const guint64 cap = 900000;
    static const Answer answers[] = {
        { "ack", JET_ACK, FALSE, 0, FALSE, TRUE },
        { "ack+long", JET_ACK, FALSE, 0, TRUE, FALSE },
        { "retry", JET_RETRY, FALSE, 0, FALSE, TRUE },
        { "retry+long", JET_RETRY, FALSE, 0, TRUE, FALSE },
        { "postpone", JET_POSTPONE, TRUE, 60000, FALSE, TRUE },
        { "postpone@cap", JET_POSTPONE, TRUE, 900000, FALSE, TRUE },
        { "postpone>cap", JET_POSTPONE, TRUE, 900001, FALSE, FALSE },
        { "postpone-0", JET_POSTPONE, TRUE, 0, FALSE, FALSE },
        { "postpone-none", JET_POSTPONE, FALSE, 0, FALSE, FALSE },
        { "reject", JET_REJECT, FALSE, 0, FALSE, TRUE },
        { "reject+long", JET_REJECT, FALSE, 0, TRUE, FALSE },
        { "verdict-1", -1, FALSE, 0, FALSE, FALSE },
        { "verdict4", 4, FALSE, 0, FALSE, FALSE },
    };
    /* The message's age: young, at the horizon, unknown. */
    enum { AGE_YOUNG, AGE_HORIZON, AGE_UNKNOWN, N_AGES };
    guint64 n = 0;

    for (gsize ai = 0; ai < G_N_ELEMENTS(answers); ai++)
    for (int age = 0; age < N_AGES; age++)
    for (guint32 d = 1; d <= 12; d++)
    for (guint32 failures = 0; failures <= 12; failures++)
    for (guint max = 0; max <= 5; max++)
    for (gint64 md = -1; md <= 8; md++)
    for (guint reserve = 0; reserve <= 2; reserve++) {
        const Answer *ans = &answers[ai];
        JetSettlePolicy p = policy();
        p.max_attempts = max;
        p.max_deliver = md;
        p.capture_reserve = reserve;
        p.max_postpone_delay_ms = cap;
        JetSettleFacts f = facts(ans->verdict);
        f.has_delay = ans->has_delay;
        f.delay_ms = ans->delay_ms;
        f.reason_too_long = ans->too_long;
        f.reason = ans->too_long ? NULL : ans->name;
        f.deliveries = d;
        f.failures = failures;
        if (age == AGE_HORIZON)
            f.enqueued_ns = NOW_NS - (gint64)p.postpone_horizon_ms * MS_NS;
        f.has_enqueued = age != AGE_UNKNOWN;

        JetSettleAction a = decide(&p, &f);
        n++;

        gboolean budget = md > 0 && (gint64)d >= md - (gint64)reserve;
        guint32 k = failures + 1;

        /* Exactly one action, from the enum. */
        g_assert_cmpint(a.kind, >=, JET_ACTION_ACK);
        g_assert_cmpint(a.kind, <=, JET_ACTION_CAPTURE);
        g_assert_cmpuint(strnlen(a.reason, sizeof a.reason), <, sizeof a.reason);

        /* ACK exactly when the plugin validly said ACK. */
        g_assert_cmpint(a.kind == JET_ACTION_ACK, ==, ans->verdict == JET_ACK && ans->valid);
        /* A plugin error is flagged, and named. */
        g_assert_cmpint(a.plugin_error, ==, !ans->valid);
        if (a.plugin_error) {
            g_assert_true(g_str_has_prefix(a.reason, "plugin error: "));
            g_assert_true(a.is_failure);
        }
        /* A valid REJECT is always captured as rejected. */
        if (ans->verdict == JET_REJECT && ans->valid)
            g_assert_cmpuint(a.cause, ==, JET_CAUSE_REJECTED);

        switch (a.kind) {
        case JET_ACTION_ACK:
            g_assert_cmpuint(a.cause, ==, JET_CAUSE_NONE);
            g_assert_false(a.is_failure);
            break;
        case JET_ACTION_RETRY:
            g_assert_cmpuint(a.cause, ==, JET_CAUSE_NONE);
            g_assert_true(a.is_failure);
            g_assert_cmpuint(a.failure_number, ==, k);
            g_assert_cmpuint(a.delay_ms, ==, ladder[MIN(k - 1, N_RUNGS - 1)]);
            g_assert_true(max == 0 || k < max);
            break;
        case JET_ACTION_POSTPONE:
            g_assert_cmpuint(a.cause, ==, JET_CAUSE_NONE);
            g_assert_false(a.is_failure);
            g_assert_cmpuint(ans->verdict, ==, JET_POSTPONE);
            g_assert_true(ans->valid);
            g_assert_cmpint(age, ==, AGE_YOUNG);
            g_assert_cmpuint(a.delay_ms, ==, ans->delay_ms);
            g_assert_cmpuint(a.delay_ms, >, 0);
            g_assert_cmpuint(a.delay_ms, <=, cap);
            break;
        case JET_ACTION_CAPTURE:
            g_assert_cmpuint(a.cause, !=, JET_CAUSE_NONE);
            if (a.cause == JET_CAUSE_EXHAUSTED) {
                g_assert_cmpuint(max, >, 0);
                g_assert_cmpuint(k, >=, max);
                g_assert_true(a.is_failure);
            }
            if (a.cause == JET_CAUSE_BUDGET)
                g_assert_true(budget);
            if (a.is_failure)
                g_assert_cmpuint(a.failure_number, ==, k);
            break;
        }

        /* Never NAK (retry or postpone) a message the server cannot
         * redeliver with the reserve intact. */
        if (budget)
            g_assert_true(a.kind == JET_ACTION_ACK || a.kind == JET_ACTION_CAPTURE);
    }
    g_test_message("sweep: %" G_GUINT64_FORMAT " decisions", n);
}

/* --- ladder totals ------------------------------------------------------------------- */

static void test_ladder_total(void)
{
    JetSettlePolicy p = policy();   /* 1s 5s 30s 2m */
    static const struct { guint max; guint64 total; } cases[] = {
        { 1, 0 },                          /* one attempt: no rung is served */
        { 2, 1000 },
        { 3, 6000 },
        { 4, 36000 },
        { 5, 156000 },                     /* every listed rung once */
        { 6, 276000 },                     /* the tail repeats */
        { 8, 516000 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        p.max_attempts = cases[i].max;
        g_assert_cmpuint(jet_settle_ladder_total_ms(&p), ==, cases[i].total);
    }
    p.max_attempts = 0;
    g_assert_cmpuint(jet_settle_ladder_total_ms(&p), ==, G_MAXUINT64);

    /* It agrees with a walk of decide over the retries it serves. */
    for (guint max = 1; max <= 9; max++) {
        p.max_attempts = max;
        guint64 walked = 0;
        for (guint32 failures = 0;; failures++) {
            JetSettleFacts f = facts(JET_RETRY);
            f.failures = failures;
            f.deliveries = failures + 1;
            JetSettleAction a = decide(&p, &f);
            if (a.kind == JET_ACTION_CAPTURE) {
                g_assert_cmpuint(f.deliveries, ==, max);   /* captured at the last attempt */
                break;
            }
            walked += a.delay_ms;
        }
        g_assert_cmpuint(jet_settle_ladder_total_ms(&p), ==, walked);
    }

    /* Saturates. */
    static const guint64 big[] = { G_MAXUINT64 / 2, G_MAXUINT64 / 2 };
    p.rungs_ms = big;
    p.n_rungs = 2;
    p.max_attempts = 4;
    g_assert_cmpuint(jet_settle_ladder_total_ms(&p), ==, G_MAXUINT64);
    p.max_attempts = G_MAXUINT;
    g_assert_cmpuint(jet_settle_ladder_total_ms(&p), ==, G_MAXUINT64);
}

static void test_defaults(void)
{
    JetSettlePolicy p;
    jet_settle_policy_init_default(&p);
    g_assert_cmpuint(p.n_rungs, ==, 5);
    g_assert_cmpuint(p.rungs_ms[0], ==, 1000);
    g_assert_cmpuint(p.rungs_ms[4], ==, 600000);
    g_assert_cmpuint(p.max_attempts, ==, 5);
    g_assert_cmpuint(p.capture_reserve, ==, 1);
    g_assert_cmpuint(p.crash_limit, ==, 3);
    g_assert_cmpint(p.max_deliver, ==, -1);
    /* 1s + 5s + 30s + 2m, the figure docs/settlement.md quotes. */
    g_assert_cmpuint(jet_settle_ladder_total_ms(&p), ==, 156000);

    /* The retry walks of docs/settlement.md. */
    static const guint64 walk[] = { 1000, 5000, 30000, 120000 };
    for (guint32 d = 1; d <= 5; d++) {
        JetSettleFacts f = facts(JET_RETRY);
        f.deliveries = d;
        f.failures = d - 1;
        JetSettleAction a = decide(&p, &f);
        if (d <= 4)
            assert_retry(a, walk[d - 1], d);
        else
            assert_capture(a, "exhausted");
    }
    p.max_deliver = 4;
    for (guint32 d = 1; d <= 3; d++) {
        JetSettleFacts f = facts(JET_RETRY);
        f.deliveries = d;
        f.failures = d - 1;
        JetSettleAction a = decide(&p, &f);
        if (d <= 2)
            assert_retry(a, walk[d - 1], d);
        else
            assert_capture(a, "budget");
    }
}

/* The settlement defaults are the config's: one source of truth for both. */
static void test_defaults_match_config(void)
{
    g_autofree char *dir = g_dir_make_tmp("jethost-settle-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "c.conf", NULL);
    g_assert_true(g_file_set_contents(path, "[host]\nserver = embedded\n[binding b]\nplugin = /x.so\n"
                                            "stream = S\nconsumer = c\n", -1, NULL));
    g_autoptr(GError) err = NULL;
    g_autoptr(JetConfig) cfg = jet_config_load(path, NULL, &err);
    g_assert_no_error(err);
    const JetBindingConfig *b = jet_config_binding(cfg, "b");
    JetSettlePolicy p;
    jet_settle_policy_init_default(&p);
    g_assert_cmpuint(b->n_rungs, ==, p.n_rungs);
    for (gsize i = 0; i < p.n_rungs; i++)
        g_assert_cmpuint(b->rungs_ms[i], ==, p.rungs_ms[i]);
    g_assert_cmpuint(b->max_attempts, ==, p.max_attempts);
    g_assert_cmpuint(b->postpone_horizon_ms, ==, p.postpone_horizon_ms);
    g_assert_cmpuint(b->max_postpone_delay_ms, ==, p.max_postpone_delay_ms);
    g_assert_cmpuint(b->capture_reserve, ==, p.capture_reserve);
    g_assert_cmpuint(b->crash_limit, ==, p.crash_limit);
    g_assert_cmpint(b->max_deliver, ==, p.max_deliver);
    g_unlink(path);
    g_rmdir(dir);
}

/* Horizon 0 makes every postpone a failure, even of a message stored this
 * very instant or "in the future" by a clock behind the stream's: neither
 * counts as inside a horizon of zero. */
static void test_postpone_horizon_zero_young(void)
{
    JetSettlePolicy p = policy();
    p.postpone_horizon_ms = 0;
    JetSettleFacts f = postpone(30000);

    f.enqueued_ns = NOW_NS;                    /* just stored */
    JetSettleAction a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_cmpstr(a.reason, ==, "POSTPONE counts as a failure (postpone_horizon 0)");

    f.enqueued_ns = NOW_NS + 5000 * MS_NS;     /* our clock is behind */
    a = decide(&p, &f);
    assert_retry(a, ladder[0], 1);
    g_assert_cmpstr(a.reason, ==, "POSTPONE counts as a failure (postpone_horizon 0)");

    /* The same young message inside a real horizon is postponed. */
    p.postpone_horizon_ms = 1;
    assert_postpone(decide(&p, &f), 30000);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/settle/names", test_names);
    g_test_add_func("/settle/ack", test_ack);
    g_test_add_func("/settle/publish-facts", test_publish_facts);
    g_test_add_func("/settle/ladder/each-rung", test_ladder_each_rung);
    g_test_add_func("/settle/ladder/single-rung", test_ladder_single_rung);
    g_test_add_func("/settle/ladder/total", test_ladder_total);
    g_test_add_func("/settle/ladder/defaults", test_defaults);
    g_test_add_func("/settle/ladder/defaults-match-config", test_defaults_match_config);
    g_test_add_func("/settle/max-attempts/edge", test_max_attempts_edge);
    g_test_add_func("/settle/max-attempts/unlimited", test_max_attempts_unlimited);
    g_test_add_func("/settle/budget/edge", test_budget_edge);
    g_test_add_func("/settle/budget/named", test_budget_named_cases);
    g_test_add_func("/settle/reject", test_reject);
    g_test_add_func("/settle/postpone/inside-horizon", test_postpone_inside_horizon);
    g_test_add_func("/settle/postpone/past-horizon", test_postpone_past_horizon);
    g_test_add_func("/settle/postpone/unknown-enqueue", test_postpone_unknown_enqueue);
    g_test_add_func("/settle/postpone/delay-rules", test_postpone_delay_rules);
    g_test_add_func("/settle/plugin-error/verdicts", test_bad_verdicts);
    g_test_add_func("/settle/plugin-error/pending-not-enabled", test_pending_not_enabled);
    g_test_add_func("/settle/plugin-error/reason-length", test_reason_length);
    g_test_add_func("/settle/reason-truncation", test_reason_truncation);
    g_test_add_func("/settle/precedence/poison-breaker", test_poison_and_breaker);
    g_test_add_func("/settle/precedence/conflicts", test_precedence_conflicts);
    g_test_add_func("/settle/precedence/before-handle", test_before_handle_consistency);
    g_test_add_func("/settle/precedence/suspect-budget-line", test_suspect_budget_line);
    g_test_add_func("/settle/sweep", test_sweep);
    g_test_add_func("/settle/postpone/horizon-zero-young", test_postpone_horizon_zero_young);
    return g_test_run();
}
