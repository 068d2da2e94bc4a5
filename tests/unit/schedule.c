/* The schedule check: each envelope term, each violation at its boundary
 * (equal and one off), unlimited attempts, saturation, and the text. */
#include "schedule.h"
#include "ledger.h"
#include "settle.h"

#include <jethost/plugin.h>

#include <glib.h>
#include <string.h>

#define S  G_GUINT64_CONSTANT(1000)
#define M  (60 * S)
#define H  (60 * M)

static const guint64 rungs_1s_5s[] = { 1 * S, 5 * S };

/* A binding with nothing to complain about and no server facts: rungs 1s, 5s;
 * 6 attempts; no postpone horizon; AckWait 30s; crash_limit 3. */
static JetScheduleInput base(void)
{
    JetScheduleInput in;
    memset(&in, 0, sizeof in);
    in.rungs_ms = rungs_1s_5s;
    in.n_rungs = G_N_ELEMENTS(rungs_1s_5s);
    in.max_attempts = 6;
    in.postpone_horizon_ms = 0;
    in.max_postpone_delay_ms = 15 * M;
    in.ack_wait_ms = 30 * S;
    in.max_deliver = -1;
    in.max_ack_pending = 1000;
    in.capture_reserve = 1;
    in.crash_limit = 3;
    in.workers = 1;
    in.batch = 10;
    in.threshold = 0;
    return in;
}

static JetScheduleReport check(const JetScheduleInput *in)
{
    JetScheduleReport r;
    memset(&r, 0xa5, sizeof r);   /* the check must fill everything */
    jet_schedule_check(in, &r);
    for (gsize i = 0; i < r.n_violations; i++)
        g_test_message("%s %s: %s", jet_schedule_severity_name(r.violations[i].severity),
                       r.violations[i].code, r.violations[i].message);
    return r;
}

/* The report has exactly these codes (NULL-terminated), in any order. */
static void assert_codes(const JetScheduleReport *r, const char *const *codes)
{
    gsize n = 0;
    for (; codes[n]; n++) {
        const JetScheduleViolation *v = jet_schedule_report_find(r, codes[n]);
        if (v == NULL)
            g_error("expected violation %s is missing", codes[n]);
        g_assert_cmpuint(strlen(v->message), >, 0);
    }
    if (r->n_violations != n) {
        for (gsize i = 0; i < r->n_violations; i++)
            g_test_message("present: %s", r->violations[i].code);
    }
    g_assert_cmpuint(r->n_violations, ==, n);
    guint errors = 0, warnings = 0;
    for (gsize i = 0; i < r->n_violations; i++) {
        if (r->violations[i].severity == JET_SCHEDULE_ERROR)
            errors++;
        else
            warnings++;
    }
    g_assert_cmpuint(r->n_errors, ==, errors);
    g_assert_cmpuint(r->n_warnings, ==, warnings);
}

static void assert_contains(const char *text, const char *needle);
static void consumer(JetScheduleInput *in, guint64 ack_wait, gint64 max_deliver,
                     const guint64 *backoff, gsize n_backoff);

#define CODES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NONE ((const char *const[]){ NULL })

static void assert_severity(const JetScheduleReport *r, const char *code, JetScheduleSeverity sev)
{
    const JetScheduleViolation *v = jet_schedule_report_find(r, code);
    g_assert_nonnull(v);
    g_assert_cmpint(v->severity, ==, sev);
}

/* --- the ladder ------------------------------------------------------------ */

/* The wait after failure k is rungs[min(k-1, n-1)] (settle rule 7), for the
 * max_attempts - 1 failures that are not the last: a plain loop, the model
 * the closed form must agree with. */
static guint64 ladder_by_loop(const guint64 *rungs, gsize n, guint max_attempts)
{
    guint64 sum = 0;
    for (guint k = 1; k + 1 <= max_attempts; k++)
        sum += rungs[MIN((gsize)k - 1, n - 1)];
    return sum;
}

static void test_ladder_edges(void)
{
    static const guint64 r3[] = { 1 * S, 5 * S, 30 * S };
    static const struct {
        guint max_attempts;
        guint64 ladder, listed, repeats;
        const char *why;
    } cases[] = {
        { 1, 0, 0, 0, "one attempt: no wait at all" },
        { 2, 1 * S, 1, 0, "two attempts: the first rung" },
        { 3, 6 * S, 2, 0, "1s + 5s" },
        { 4, 36 * S, 3, 0, "max_attempts n_rungs + 1: every rung once" },
        { 5, 66 * S, 3, 1, "the last rung starts repeating" },
        { 6, 96 * S, 3, 2, "" },
        { 7, 126 * S, 3, 3, "n_rungs + 3 waits... 1 + 5 + 30 x 4" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        JetScheduleInput in = base();
        in.rungs_ms = r3;
        in.n_rungs = G_N_ELEMENTS(r3);
        in.max_attempts = cases[i].max_attempts;
        JetScheduleReport r = check(&in);
        g_test_message("max_attempts %u: %s", cases[i].max_attempts, cases[i].why);
        g_assert_false(r.unlimited);
        g_assert_cmpuint(r.ladder_ms, ==, cases[i].ladder);
        g_assert_cmpuint(r.ladder_waits, ==, cases[i].max_attempts - 1);
        g_assert_cmpuint(r.ladder_listed, ==, cases[i].listed);
        g_assert_cmpuint(r.ladder_repeats, ==, cases[i].repeats);
        g_assert_cmpuint(r.ladder_ms, ==, ladder_by_loop(r3, G_N_ELEMENTS(r3), in.max_attempts));
        assert_codes(&r, NONE);
    }
}

/* rungs 1s, 5s under 6 attempts serve 1 + 5 + 5 + 5 + 5. */
static void test_ladder_short_under_many_attempts(void)
{
    JetScheduleInput in = base();
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.ladder_ms, ==, 21 * S);
    g_assert_cmpuint(r.ladder_waits, ==, 5);
    g_assert_cmpuint(r.ladder_listed, ==, 2);
    g_assert_cmpuint(r.ladder_repeats, ==, 3);
    g_assert_cmpuint(r.last_rung_ms, ==, 5 * S);
}

/* Every (n_rungs, max_attempts) up to 8 x 24 against the loop. */
static void test_ladder_matches_loop(void)
{
    guint64 rungs[8];
    for (gsize n = 1; n <= G_N_ELEMENTS(rungs); n++) {
        for (gsize i = 0; i < n; i++)
            rungs[i] = (i + 1) * 1000 + i * 7;   /* distinct, so a wrong index shows */
        for (guint m = 1; m <= 24; m++) {
            JetScheduleInput in = base();
            in.rungs_ms = rungs;
            in.n_rungs = n;
            in.max_attempts = m;
            JetScheduleReport r;
            jet_schedule_check(&in, &r);
            g_assert_cmpuint(r.ladder_ms, ==, ladder_by_loop(rungs, n, m));
            g_assert_cmpuint(r.ladder_listed + r.ladder_repeats, ==, m - 1);
        }
    }
}

static void test_no_rungs(void)
{
    JetScheduleInput in = base();
    in.n_rungs = 0;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.ladder_ms, ==, 0);
    assert_codes(&r, CODES("no-rungs"));
    assert_severity(&r, "no-rungs", JET_SCHEDULE_ERROR);

    /* Unlimited attempts still need a rung to wait. */
    in.max_attempts = 0;
    r = check(&in);
    assert_codes(&r, CODES("no-rungs"));
}

/* --- the other terms --------------------------------------------------------- */

static void test_terms(void)
{
    JetScheduleInput in = base();
    in.postpone_horizon_ms = 1 * H;
    in.max_postpone_delay_ms = 15 * M;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.ladder_ms, ==, 21 * S);
    g_assert_cmpuint(r.postpone_horizon_ms, ==, 1 * H);
    g_assert_cmpuint(r.postpone_overshoot_ms, ==, 15 * M);
    g_assert_cmpuint(r.crash_limit, ==, 3);
    g_assert_cmpuint(r.crash_fallback_ms, ==, 90 * S);
    g_assert_cmpuint(r.retry_span_ms, ==, 21 * S + 1 * H + 15 * M);
    g_assert_cmpuint(r.worst_case_ms, ==, 21 * S + 1 * H + 15 * M + 90 * S);
    g_assert_false(r.from_consumer);
    g_assert_cmpuint(r.ack_wait_ms, ==, 30 * S);
    assert_codes(&r, NONE);

    /* A horizon of 0 grants no postpone, so nothing can end past it. */
    in.postpone_horizon_ms = 0;
    r = check(&in);
    g_assert_cmpuint(r.postpone_overshoot_ms, ==, 0);
    g_assert_cmpuint(r.worst_case_ms, ==, 21 * S + 90 * S);
}

/* AckWait 1h with crash_limit 3 adds 3h and fails a 25m bound,
 * although the ladder alone (21s) is far inside it. */
static void test_crash_term(void)
{
    JetScheduleInput in = base();
    in.ack_wait_ms = 1 * H;
    in.max_time_to_dead_letter_ms = 25 * M;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.crash_fallback_ms, ==, 3 * H);
    g_assert_cmpuint(r.worst_case_ms, ==, 3 * H + 21 * S);
    assert_codes(&r, CODES("max-time-exceeded"));
    assert_severity(&r, "max-time-exceeded", JET_SCHEDULE_ERROR);

    /* The consumer's AckWait is what the server will wait, not the config's. */
    in.ack_wait_ms = 1 * S;
    in.has_consumer = TRUE;
    in.consumer_ack_wait_ms = 1 * H;
    in.consumer_max_deliver = -1;
    in.consumer_max_ack_pending = 1000;
    r = check(&in);
    g_assert_true(r.from_consumer);
    g_assert_cmpuint(r.crash_fallback_ms, ==, 3 * H);
    assert_codes(&r, CODES("max-time-exceeded"));
}

static void test_crash_unbounded(void)
{
    JetScheduleInput in = base();
    in.crash_limit = 0;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.crash_fallback_ms, ==, 0);
    assert_codes(&r, CODES("crash-unbounded"));
    assert_severity(&r, "crash-unbounded", JET_SCHEDULE_WARNING);
}

/* --- the crash term (deliveries) ---------------------------------------------- */

static const char *message_of(const JetScheduleReport *r, const char *code)
{
    const JetScheduleViolation *v = jet_schedule_report_find(r, code);
    if (v == NULL)
        g_error("expected violation %s is missing", code);
    return v->message;
}

/* The configurations the check approved while a crash-looping message went
 * dark: both fit now, with a warning that the budget line cuts the strikes
 * short. */
static void test_crash_term_tight(void)
{
    /* max_deliver 4, max_attempts 3 (crash_limit 3, reserve 1): one death
     * beside others (delivery 1), one alone (2), captured at the line (3),
     * the fourth kept to retry a failed capture. */
    JetScheduleInput in = base();
    in.max_deliver = 4;
    in.max_attempts = 3;
    JetScheduleReport r = check(&in);
    g_assert_true(r.crash_attributed);
    g_assert_true(r.crash_captured);
    g_assert_true(r.crash_at_budget_line);
    g_assert_cmpuint(r.crash_capture_delivery, ==, 3);
    g_assert_cmpuint(r.crash_strikes, ==, 1);
    g_assert_cmpuint(r.crash_deliveries, ==, 4);
    g_assert_cmpuint(r.crash_need, ==, 3);
    assert_codes(&r, CODES("crash-limit-cut"));
    assert_severity(&r, "crash-limit-cut", JET_SCHEDULE_WARNING);
    assert_contains(message_of(&r, "crash-limit-cut"),
                    "crash term: the budget line captures a crash-looping message as poison "
                    "after fewer than crash_limit 3 strikes: 1 (at delivery 3 = MaxDeliver 4 - "
                    "capture_reserve 1, before it runs again)");
    assert_contains(message_of(&r, "crash-limit-cut"), "at least 6 for every strike");

    /* max_deliver 6, crash_limit 5 (max_attempts 5, reserve 1): captured at
     * delivery 5 with 3 strikes. */
    in = base();
    in.max_deliver = 6;
    in.max_attempts = 5;
    in.crash_limit = 5;
    r = check(&in);
    g_assert_cmpuint(r.crash_capture_delivery, ==, 5);
    g_assert_cmpuint(r.crash_strikes, ==, 3);
    g_assert_cmpuint(r.crash_deliveries, ==, 6);
    assert_codes(&r, CODES("crash-limit-cut"));
    assert_contains(message_of(&r, "crash-limit-cut"),
                    "after fewer than crash_limit 5 strikes: 3 (at delivery 5 = MaxDeliver 6");
    /* Room for every strike: 1 + crash_limit 5 + 1 + reserve 1 = 8 is
     * clean, and one less is the warning. */
    in.max_deliver = 8;
    r = check(&in);
    assert_codes(&r, NONE);
    g_assert_false(r.crash_at_budget_line);
    g_assert_cmpuint(r.crash_capture_delivery, ==, 7);
    g_assert_cmpuint(r.crash_strikes, ==, 5);
    in.max_deliver = 7;
    r = check(&in);
    assert_codes(&r, CODES("crash-limit-cut"));
    assert_contains(message_of(&r, "crash-limit-cut"), "crash_limit 5 strikes: 4 ");
}

/* MaxDeliver below 1 + 1 + capture_reserve: refused, naming the crash term,
 * whatever max_attempts says. */
static void test_crash_term_refused(void)
{
    JetScheduleInput in = base();
    in.max_attempts = 1;          /* so the ladder's own check (1 + 1 <= 2) is quiet */
    in.max_deliver = 2;
    JetScheduleReport r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash"));
    assert_severity(&r, "maxdeliver-crash", JET_SCHEDULE_ERROR);
    assert_contains(message_of(&r, "maxdeliver-crash"),
                    "crash term: a crash-looping message needs 1 + 1 + capture_reserve 1 = 3 "
                    "deliveries");
    assert_contains(message_of(&r, "maxdeliver-crash"),
                    "MaxDeliver 2 captures it at delivery 2, leaving 0 of capture_reserve 1 to "
                    "retry a failed capture");
    assert_contains(message_of(&r, "maxdeliver-crash"), "or at least 3");
    g_assert_true(r.crash_captured);
    g_assert_cmpuint(r.crash_capture_delivery, ==, 2);
    g_assert_cmpuint(r.crash_deliveries, ==, 3);

    /* Equal passes: delivery 2 is the budget line, the third the reserve.
     * The warning stays: it is captured with no strike at all. */
    in.max_deliver = 3;
    r = check(&in);
    g_assert_cmpuint(r.n_errors, ==, 0);
    assert_codes(&r, CODES("crash-limit-cut"));
    assert_contains(message_of(&r, "crash-limit-cut"), "crash_limit 3 strikes: 0 (at delivery 2");
    assert_contains(message_of(&r, "crash-limit-cut"), "is captured too when it comes back");

    /* A larger reserve moves the minimum with it. */
    in.capture_reserve = 3;
    in.max_deliver = 4;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash"));
    assert_contains(message_of(&r, "maxdeliver-crash"), "capture_reserve 3 = 5 deliveries");
    assert_contains(message_of(&r, "maxdeliver-crash"), "leaving 2 of capture_reserve 3");
    in.max_deliver = 5;
    r = check(&in);
    assert_codes(&r, CODES("crash-limit-cut"));

    /* MaxDeliver 1: the first death spends it; nothing is ever captured. */
    in = base();
    in.max_attempts = 1;
    in.capture_reserve = 0;
    in.max_deliver = 1;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash"));
    g_assert_false(r.crash_captured);
    assert_contains(message_of(&r, "maxdeliver-crash"), "1 + 1 + capture_reserve 0 = 2");
    assert_contains(message_of(&r, "maxdeliver-crash"),
                    "MaxDeliver 1 leaves it none to be captured");

    /* Unlimited attempts do not skip it. */
    in = base();
    in.max_attempts = 0;
    in.max_deliver = 2;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash"));

    /* The consumer's MaxDeliver is the one that counts. */
    in = base();
    in.max_attempts = 1;
    consumer(&in, 30 * S, 2, NULL, 0);
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash"));
    in.consumer_max_deliver = -1;
    in.max_deliver = 2;
    r = check(&in);
    assert_codes(&r, NONE);
}

/* Unlimited MaxDeliver: no budget line, poison at crash_limit strikes. */
static void test_crash_term_unlimited(void)
{
    for (gint64 md = -1; md <= 0; md++) {
        JetScheduleInput in = base();
        in.max_deliver = md;
        in.capture_reserve = 1000;
        JetScheduleReport r = check(&in);
        assert_codes(&r, NONE);
        g_assert_true(r.crash_captured);
        g_assert_false(r.crash_at_budget_line);
        g_assert_cmpuint(r.crash_capture_delivery, ==, 5);
        g_assert_cmpuint(r.crash_strikes, ==, 3);
        g_assert_cmpuint(r.crash_deliveries, ==, 5);
    }
}

/* crash_limit 0 turns poison off: on a finite MaxDeliver the budget line is
 * the only bound, and it still captures; the minimum is the same. */
static void test_crash_term_limit_off(void)
{
    JetScheduleInput in = base();
    in.crash_limit = 0;
    in.max_deliver = 7;
    JetScheduleReport r = check(&in);
    assert_codes(&r, CODES("crash-unbounded"));   /* never crash-limit-cut: no limit to cut */
    g_assert_true(r.crash_captured);
    g_assert_true(r.crash_at_budget_line);
    g_assert_cmpuint(r.crash_capture_delivery, ==, 6);
    g_assert_cmpuint(r.crash_strikes, ==, 4);
    assert_contains(message_of(&r, "crash-unbounded"),
                    "only the budget line captures a message that kills the host, at delivery 6 "
                    "after 5 deaths");

    in.max_attempts = 1;
    in.max_deliver = 3;
    r = check(&in);
    assert_codes(&r, CODES("crash-unbounded"));
    g_assert_cmpuint(r.crash_capture_delivery, ==, 2);
    in.max_deliver = 2;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash", "crash-unbounded"));
    in.capture_reserve = 0;
    in.max_deliver = 1;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash", "crash-unbounded"));
    assert_contains(message_of(&r, "crash-unbounded"), "goes dark");

    /* Unlimited: nothing captures it. */
    in = base();
    in.crash_limit = 0;
    r = check(&in);
    g_assert_false(r.crash_captured);
    assert_contains(message_of(&r, "crash-unbounded"), "without bound");
}

/* Without the ledger there is no attribution: no MaxDeliver is enough. */
static void test_crash_term_no_ledger(void)
{
    JetScheduleInput in = base();
    in.ledger_off = TRUE;
    in.max_deliver = 100;
    JetScheduleReport r = check(&in);
    assert_codes(&r, CODES("crash-no-ledger"));
    assert_severity(&r, "crash-no-ledger", JET_SCHEDULE_WARNING);
    g_assert_false(r.crash_attributed);
    g_assert_false(r.crash_captured);
    assert_contains(message_of(&r, "crash-no-ledger"), "goes dark unrecorded");
    in.max_deliver = 2;   /* its own warning, not the crash term's error */
    in.max_attempts = 1;
    r = check(&in);
    assert_codes(&r, CODES("crash-no-ledger"));
    in.max_deliver = -1;
    r = check(&in);
    assert_codes(&r, CODES("crash-no-ledger"));
    assert_contains(message_of(&r, "crash-no-ledger"), "without bound");
}

/* Every (MaxDeliver, capture_reserve, crash_limit) in a small cube: the error
 * exactly below 1 + 1 + reserve, the warning exactly below 1 + 1 +
 * crash_limit + reserve, and its strike count. */
static void test_crash_term_boundaries(void)
{
    for (gint64 md = 1; md <= 12; md++)
        for (guint reserve = 0; reserve <= 3; reserve++)
            for (guint limit = 0; limit <= 5; limit++) {
                JetScheduleInput in = base();
                in.max_deliver = md;
                in.capture_reserve = reserve;
                in.crash_limit = limit;
                in.max_attempts = 0;
                JetScheduleReport r;
                jet_schedule_check(&in, &r);
                gboolean error = md < 2 + (gint64)reserve;
                gboolean cut = !error && limit >= 1 && md < 2 + (gint64)limit + reserve;
                g_assert_cmpint(jet_schedule_report_find(&r, "maxdeliver-crash") != NULL, ==, error);
                g_assert_cmpint(jet_schedule_report_find(&r, "crash-limit-cut") != NULL, ==, cut);
                g_assert_cmpint(r.n_errors, ==, error ? 1 : 0);
                if (cut) {
                    g_autofree char *want = g_strdup_printf(
                        "fewer than crash_limit %u strikes: %" G_GINT64_FORMAT " ",
                        limit, md - reserve - 2);
                    assert_contains(message_of(&r, "crash-limit-cut"), want);
                }
                if (r.crash_captured && !error)
                    g_assert_cmpuint(r.crash_deliveries, <=, (guint64)md);
            }
}

/* The term against the rules themselves: walk a message that kills the host
 * on every run through crash attribution (ledger.h) and the before-handle
 * decision (settle.h), writing what the executor writes, and compare where
 * it is captured with what the check says.  The ledger protocol: a first
 * delivery reads nothing; a suspect sets the marker (and its strike) before
 * it runs; a death writes nothing. */
static void test_crash_term_matches_rules(void)
{
    for (gint64 md = -1; md <= 12; md++)
        for (guint reserve = 0; reserve <= 3; reserve++)
            for (guint limit = 0; limit <= 5; limit++) {
                if (md == 0)
                    continue;   /* unlimited, as -1 */
                JetSettlePolicy p;
                jet_settle_policy_init_default(&p);
                p.max_deliver = md;
                p.capture_reserve = reserve;
                p.crash_limit = limit;
                JetLedgerRecord rec;
                jet_ledger_record_init(&rec);
                gboolean have_rec = FALSE;
                guint32 captured_at = 0, strikes = 0;
                guint32 last = md > 0 ? (guint32)md : 64;
                for (guint32 d = 1; d <= last && captured_at == 0; d++) {
                    JetAttribution att;
                    memset(&att, 0, sizeof att);
                    att.kind = JET_ATTRIBUTION_NORMAL;
                    if (d > 1)
                        jet_attribution_decide(have_rec ? &rec : NULL, d, limit, &att);
                    JetSettleFacts f;
                    memset(&f, 0, sizeof f);
                    f.deliveries = d;
                    f.strikes = att.strikes;
                    f.suspect = att.kind == JET_ATTRIBUTION_SUSPECT;
                    JetSettleAction a;
                    if (jet_settle_before_handle(&p, &f, &a)) {
                        g_assert_cmpuint(a.cause, ==, JET_CAUSE_POISON);
                        captured_at = d;
                        strikes = att.strikes;
                        break;
                    }
                    if (att.kind == JET_ATTRIBUTION_SUSPECT) {
                        jet_attribution_apply_isolate(&rec, &att, "h", 1);
                        have_rec = TRUE;
                    }
                    /* ...and it dies. */
                }

                JetScheduleInput in = base();
                in.max_attempts = 0;
                in.max_deliver = md;
                in.capture_reserve = reserve;
                in.crash_limit = limit;
                JetScheduleReport r;
                jet_schedule_check(&in, &r);
                g_test_message("md %" G_GINT64_FORMAT " reserve %u limit %u: captured at %u",
                               md, reserve, limit, captured_at);
                g_assert_cmpint(r.crash_captured, ==, captured_at != 0);
                if (captured_at == 0)
                    continue;
                g_assert_cmpuint(r.crash_capture_delivery, ==, captured_at);
                g_assert_cmpuint(r.crash_strikes, ==, strikes);
                /* No error exactly when the reserve is whole after the capture. */
                gboolean room = md < 0 || (gint64)captured_at + reserve <= md;
                g_assert_cmpint(jet_schedule_report_find(&r, "maxdeliver-crash") == NULL, ==, room);
            }
}

/* --- violations at their boundaries ------------------------------------------ */

/* A bound equal to the envelope passes, one millisecond less fails. */
static void test_max_time_boundary(void)
{
    JetScheduleInput in = base();
    in.postpone_horizon_ms = 10 * M;
    guint64 worst = 21 * S + 10 * M + 15 * M + 90 * S;

    in.max_time_to_dead_letter_ms = worst;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.worst_case_ms, ==, worst);
    assert_codes(&r, NONE);

    in.max_time_to_dead_letter_ms = worst + 1;
    r = check(&in);
    assert_codes(&r, NONE);

    in.max_time_to_dead_letter_ms = worst - 1;
    r = check(&in);
    assert_codes(&r, CODES("max-time-exceeded"));
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "max-time-exceeded")->message,
                            "by 1ms"));

    in.max_time_to_dead_letter_ms = 0;   /* no bound */
    r = check(&in);
    assert_codes(&r, NONE);
}

/* The stream must keep a message longer than ladder + horizon + last
 * postpone: equal is a violation (the server removes a message once its age
 * reaches max_age, and backlog and handler time come on top). */
static void test_stream_max_age_boundary(void)
{
    JetScheduleInput in = base();
    in.postpone_horizon_ms = 10 * M;
    in.max_postpone_delay_ms = 1 * M;
    in.has_stream = TRUE;
    guint64 span = 21 * S + 10 * M + 1 * M, worst = span + 90 * S;

    in.stream_max_age_ms = span - 1;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.retry_span_ms, ==, span);
    assert_codes(&r, CODES("stream-max-age-short"));
    assert_severity(&r, "stream-max-age-short", JET_SCHEDULE_ERROR);

    in.stream_max_age_ms = span;
    r = check(&in);
    assert_codes(&r, CODES("stream-max-age-short"));

    /* Longer than the retries, not than the crash fallback on top: a warning. */
    in.stream_max_age_ms = span + 1;
    r = check(&in);
    assert_codes(&r, CODES("stream-max-age-crash"));
    assert_severity(&r, "stream-max-age-crash", JET_SCHEDULE_WARNING);

    in.stream_max_age_ms = worst;
    r = check(&in);
    assert_codes(&r, CODES("stream-max-age-crash"));

    in.stream_max_age_ms = worst + 1;
    r = check(&in);
    assert_codes(&r, NONE);

    in.stream_max_age_ms = 0;   /* unlimited */
    r = check(&in);
    assert_codes(&r, NONE);

    in.stream_max_age_ms = 1;   /* no stream facts: not checked */
    in.has_stream = FALSE;
    r = check(&in);
    assert_codes(&r, NONE);
}

/* The live case, as pure facts: max_age 10m under a ladder of 3 x 5m. */
static void test_stream_short_ladder_case(void)
{
    static const guint64 r5m[] = { 5 * M };
    JetScheduleInput in = base();
    in.rungs_ms = r5m;
    in.n_rungs = 1;
    in.max_attempts = 4;
    in.has_stream = TRUE;
    in.stream_max_age_ms = 10 * M;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.ladder_ms, ==, 15 * M);
    assert_codes(&r, CODES("stream-max-age-short"));
    const char *msg = jet_schedule_report_find(&r, "stream-max-age-short")->message;
    g_assert_nonnull(strstr(msg, "stream max_age 10m"));
    g_assert_nonnull(strstr(msg, "ladder 15m"));
    g_assert_nonnull(strstr(msg, "silent data loss"));

    in.stream_max_age_ms = 1 * H;
    r = check(&in);
    assert_codes(&r, NONE);
}

static void test_ledger_max_age_boundary(void)
{
    JetScheduleInput in = base();
    in.has_ledger = TRUE;
    guint64 worst = 21 * S + 90 * S;

    in.ledger_max_age_ms = worst - 1;
    JetScheduleReport r = check(&in);
    assert_codes(&r, CODES("ledger-max-age-short"));
    assert_severity(&r, "ledger-max-age-short", JET_SCHEDULE_ERROR);

    in.ledger_max_age_ms = worst;
    r = check(&in);
    assert_codes(&r, CODES("ledger-max-age-short"));

    in.ledger_max_age_ms = worst + 1;
    r = check(&in);
    assert_codes(&r, NONE);

    in.ledger_max_age_ms = 0;
    r = check(&in);
    assert_codes(&r, NONE);

    in.ledger_max_age_ms = 1;
    in.has_ledger = FALSE;
    r = check(&in);
    assert_codes(&r, NONE);
}

static void consumer(JetScheduleInput *in, guint64 ack_wait, gint64 max_deliver,
                     const guint64 *backoff, gsize n_backoff)
{
    in->has_consumer = TRUE;
    in->consumer_ack_wait_ms = ack_wait;
    in->consumer_max_deliver = max_deliver;
    in->consumer_max_ack_pending = 1000;
    in->backoff_ms = backoff;
    in->n_backoff = n_backoff;
}

static void test_backoff(void)
{
    static const guint64 bo[] = { 1 * S, 5 * S };
    JetScheduleInput in = base();

    /* A consumer without BackOff: nothing. */
    consumer(&in, 30 * S, -1, NULL, 0);
    JetScheduleReport r = check(&in);
    assert_codes(&r, NONE);

    /* BackOff, MaxDeliver one more than its length, AckWait = BackOff[0]:
     * only the second scheduler itself. */
    consumer(&in, 1 * S, 3, bo, 2);
    in.max_attempts = 2;   /* so MaxDeliver 3 >= 2 + 1 */
    in.crash_limit = 1;
    in.capture_reserve = 0;   /* and 3 >= 1 + 1 + crash_limit 1 + 0: the crash term fits */
    r = check(&in);
    assert_codes(&r, CODES("server-backoff"));
    assert_severity(&r, "server-backoff", JET_SCHEDULE_ERROR);
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "server-backoff")->message, "[1s, 5s]"));

    /* 2.9.10: MaxDeliver <= len(BackOff) is refused; equal included. */
    consumer(&in, 1 * S, 2, bo, 2);
    in.max_attempts = 1;
    r = check(&in);
    assert_codes(&r, CODES("server-backoff", "maxdeliver-le-backoff", "crash-limit-cut"));
    assert_severity(&r, "maxdeliver-le-backoff", JET_SCHEDULE_ERROR);

    /* ...and unlimited, which 2.9.10 reads as -1 <= len. */
    consumer(&in, 1 * S, -1, bo, 2);
    in.max_attempts = 2;
    r = check(&in);
    assert_codes(&r, CODES("server-backoff", "maxdeliver-le-backoff"));

    /* AckWait differing from BackOff[0]: a warning, by one millisecond too. */
    consumer(&in, 1 * S + 1, 3, bo, 2);
    r = check(&in);
    assert_codes(&r, CODES("server-backoff", "ackwait-ne-backoff0"));
    assert_severity(&r, "ackwait-ne-backoff0", JET_SCHEDULE_WARNING);

    /* A BackOff known without consumer facts is not a fact: ignored. */
    in = base();
    in.backoff_ms = bo;
    in.n_backoff = 2;
    r = check(&in);
    assert_codes(&r, NONE);
}

/* Needed: MaxDeliver >= max_attempts + capture_reserve (equal: the last
 * attempt runs, captured as budget on the same delivery exhaustion would). */
static void test_max_deliver_boundary(void)
{
    JetScheduleInput in = base();   /* 6 attempts + reserve 1 = 7 */
    in.max_deliver = 7;
    JetScheduleReport r = check(&in);
    assert_codes(&r, NONE);

    in.max_deliver = 6;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-too-small"));
    assert_severity(&r, "maxdeliver-too-small", JET_SCHEDULE_ERROR);
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "maxdeliver-too-small")->message,
                            "MaxDeliver 6 is less than max_attempts 6 + capture_reserve 1 = 7"));

    in.max_deliver = -1;
    r = check(&in);
    assert_codes(&r, NONE);

    /* The consumer's MaxDeliver is the one that counts. */
    consumer(&in, 30 * S, 6, NULL, 0);
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-too-small"));
    in.max_deliver = 6;
    in.consumer_max_deliver = -1;
    r = check(&in);
    assert_codes(&r, NONE);

    /* Unlimited attempts: the budget capture is the limit; not a violation.
     * The crash term still counts: 2 < 1 + 1 + capture_reserve 1. */
    in = base();
    in.max_attempts = 0;
    in.max_deliver = 6;
    r = check(&in);
    assert_codes(&r, NONE);
    in.max_deliver = 2;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash"));
}

/* In hand: workers x (batch + threshold).  Less than half of MaxAckPending
 * left for retrying and postponed messages is a warning; exactly half is
 * fine. */
static void test_ack_pending_headroom(void)
{
    JetScheduleInput in = base();
    in.workers = 2;
    in.batch = 10;
    in.threshold = 5;

    in.max_ack_pending = 60;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.in_hand, ==, 30);
    assert_codes(&r, NONE);

    in.max_ack_pending = 59;
    r = check(&in);
    assert_codes(&r, CODES("ackpending-headroom"));
    assert_severity(&r, "ackpending-headroom", JET_SCHEDULE_WARNING);
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "ackpending-headroom")->message,
                            "leaves 29 of MaxAckPending 59"));

    in.max_ack_pending = 10;   /* less than in hand: no room at all */
    r = check(&in);
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "ackpending-headroom")->message,
                            "leaves 0 of MaxAckPending 10"));

    in.max_ack_pending = -1;
    r = check(&in);
    assert_codes(&r, NONE);

    /* Odd MaxAckPending: 61 leaves 31, more than half. */
    in.max_ack_pending = 61;
    r = check(&in);
    assert_codes(&r, NONE);

    /* The consumer's value counts. */
    in.max_ack_pending = 1000;
    consumer(&in, 30 * S, -1, NULL, 0);
    in.consumer_max_ack_pending = 59;
    r = check(&in);
    assert_codes(&r, CODES("ackpending-headroom"));
}

/* Unlimited attempts (MaxDeliver unlimited too) skip the duration checks
 * and never fail them; only a stream that expires what is still being
 * retried is refused, unless the binding accepts that. */
static void test_unlimited(void)
{
    JetScheduleInput in = base();
    in.max_attempts = 0;
    in.postpone_horizon_ms = 1 * H;
    in.max_time_to_dead_letter_ms = 1;
    in.has_ledger = TRUE;
    in.ledger_max_age_ms = 1;
    JetScheduleReport r = check(&in);
    g_assert_true(r.unlimited);
    g_assert_false(r.attempts_from_budget);
    g_assert_cmpuint(r.attempts, ==, 0);
    g_assert_cmpuint(r.ladder_ms, ==, 0);
    g_assert_cmpuint(r.ladder_waits, ==, 0);
    g_assert_cmpuint(r.worst_case_ms, ==, G_MAXUINT64);
    g_assert_cmpuint(r.crash_fallback_ms, ==, 90 * S);
    assert_codes(&r, NONE);

    /* A stream without max_age keeps it for ever: nothing to refuse. */
    in.has_stream = TRUE;
    in.stream_max_age_ms = 0;
    r = check(&in);
    assert_codes(&r, NONE);
    g_assert_false(r.expiry_accepted);

    /* Any finite max_age, the shortest and the longest, expires a message
     * that never succeeds, unrecorded. */
    static const guint64 ages[] = { 1, 1 * H, G_MAXUINT64 };
    for (gsize i = 0; i < G_N_ELEMENTS(ages); i++) {
        in.stream_max_age_ms = ages[i];
        in.accept_expiry = FALSE;
        r = check(&in);
        assert_codes(&r, CODES("unlimited-expiry"));
        assert_severity(&r, "unlimited-expiry", JET_SCHEDULE_ERROR);
        g_assert_false(r.expiry_accepted);
        in.accept_expiry = TRUE;
        r = check(&in);
        assert_codes(&r, NONE);
        g_assert_true(r.expiry_accepted);
    }
    in.accept_expiry = FALSE;
    in.stream_max_age_ms = 1 * H;
    r = check(&in);
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "unlimited-expiry")->message,
                            "the stream's max_age 1h removes it at that age: a message that "
                            "never succeeds expires with no dead-letter record"));
    /* The consumer's MaxDeliver is the one that counts: unlimited there is
     * unlimited, whatever the binding asked for. */
    in.max_deliver = 9;
    consumer(&in, 30 * S, -1, NULL, 0);
    r = check(&in);
    assert_codes(&r, CODES("unlimited-expiry"));
    /* Unknown stream (no server): nothing to compare. */
    in.has_stream = FALSE;
    r = check(&in);
    assert_codes(&r, NONE);
    in.has_stream = TRUE;
    in.has_consumer = FALSE;
    in.max_deliver = -1;

    /* The other checks still run. */
    static const guint64 bo[] = { 30 * S };
    consumer(&in, 30 * S, -1, bo, 1);
    in.accept_expiry = TRUE;
    r = check(&in);
    assert_codes(&r, CODES("server-backoff", "maxdeliver-le-backoff"));
}

/* max_attempts 0 with a finite MaxDeliver is not unlimited: settlement's
 * budget rule captures any failure at delivery MaxDeliver - capture_reserve
 * (delivery 1 at the earliest).  The report must equal that of a finite
 * max_attempts of exactly that many attempts, term by term and check by
 * check, at every edge of MaxDeliver against the reserve and the rungs. */
static void test_budget_bounds_attempts(void)
{
    static const guint64 rungs_5m_only[] = { 5 * M };
    static const guint64 rungs_default[] = { 1 * S, 5 * S, 30 * S, 2 * M, 10 * M };
    static const struct {
        const guint64 *r;
        gsize n;
    } ladders[] = {
        { rungs_1s_5s, G_N_ELEMENTS(rungs_1s_5s) },
        { rungs_5m_only, 1 },
        { rungs_default, G_N_ELEMENTS(rungs_default) },
    };
    for (gsize l = 0; l < G_N_ELEMENTS(ladders); l++)
        for (guint reserve = 0; reserve <= 3; reserve++)
            for (gint64 md = 1; md <= 14; md++)
                for (int from_consumer = 0; from_consumer <= 1; from_consumer++) {
                    JetScheduleInput in = base();
                    in.rungs_ms = ladders[l].r;
                    in.n_rungs = ladders[l].n;
                    in.capture_reserve = reserve;
                    in.postpone_horizon_ms = 1 * H;
                    in.breaker = JET_BREAKER_MODE_ENFORCE;
                    in.floor_age_ms = 2 * M;
                    in.min_deliveries = 2;
                    if (from_consumer) {
                        in.max_deliver = -1;
                        consumer(&in, 30 * S, md, NULL, 0);
                    } else {
                        in.max_deliver = md;
                    }
                    guint64 attempts = md - (gint64)reserve > 1 ? (guint64)(md - reserve) : 1;
                    in.max_attempts = 0;
                    JetScheduleReport r0 = check(&in);
                    in.max_attempts = (guint)attempts;
                    JetScheduleReport rf = check(&in);
                    g_assert_false(r0.unlimited);
                    g_assert_true(r0.attempts_from_budget);
                    g_assert_false(rf.attempts_from_budget);
                    g_assert_cmpuint(r0.attempts, ==, attempts);
                    g_assert_cmpuint(rf.attempts, ==, attempts);
                    g_assert_cmpuint(r0.ladder_waits, ==, attempts - 1);
                    g_assert_cmpuint(r0.ladder_ms, ==, rf.ladder_ms);
                    g_assert_cmpuint(r0.ladder_ms, ==,
                                     ladder_by_loop(ladders[l].r, ladders[l].n, (guint)attempts));
                    g_assert_cmpuint(r0.retry_span_ms, ==, rf.retry_span_ms);
                    g_assert_cmpuint(r0.worst_case_ms, ==, rf.worst_case_ms);
                    g_assert_cmpint(r0.breaker_room.applies, ==, rf.breaker_room.applies);
                    g_assert_cmpuint(r0.breaker_room.first_failure_k, ==,
                                     rf.breaker_room.first_failure_k);
                    g_assert_cmpint(r0.breaker_room.never_fires, ==, rf.breaker_room.never_fires);
                    g_assert_cmpint(r0.breaker_room.only_at_exhaustion, ==,
                                    rf.breaker_room.only_at_exhaustion);

                    /* Each bound at its line: equal and one off, as for a
                     * finite max_attempts. */
                    struct {
                        const char *code;
                        guint64 at;
                    } lines[] = {
                        { "max-time-exceeded", r0.worst_case_ms },
                        { "stream-max-age-short", r0.retry_span_ms },
                        { "ledger-max-age-short", r0.worst_case_ms },
                    };
                    for (gsize b = 0; b < G_N_ELEMENTS(lines); b++)
                        for (int off = -1; off <= 1; off++) {
                            JetScheduleInput bi = in;
                            guint64 v = lines[b].at + (guint64)(gint64)off;
                            if (b == 0)
                                bi.max_time_to_dead_letter_ms = v;
                            else if (b == 1) {
                                bi.has_stream = TRUE;
                                bi.stream_max_age_ms = v;
                            } else {
                                bi.has_ledger = TRUE;
                                bi.ledger_max_age_ms = v;
                            }
                            bi.max_attempts = 0;
                            JetScheduleReport b0 = check(&bi);
                            bi.max_attempts = (guint)attempts;
                            JetScheduleReport bf = check(&bi);
                            gboolean fails = b == 0 ? off < 0 : off <= 0;
                            g_assert_cmpint(jet_schedule_report_find(&b0, lines[b].code) != NULL,
                                            ==, fails);
                            g_assert_cmpint(jet_schedule_report_find(&bf, lines[b].code) != NULL,
                                            ==, fails);
                            /* Never the unlimited case's error. */
                            g_assert_null(jet_schedule_report_find(&b0, "unlimited-expiry"));
                        }

                    /* The same violations, but for maxdeliver-too-small:
                     * the budget line is the last attempt by definition. */
                    gsize n0 = 0;
                    for (gsize v = 0; v < rf.n_violations; v++) {
                        if (strcmp(rf.violations[v].code, "maxdeliver-too-small") == 0)
                            continue;
                        const JetScheduleViolation *o = jet_schedule_report_find(&r0,
                                                                                 rf.violations[v].code);
                        g_assert_nonnull(o);
                        g_assert_cmpint(o->severity, ==, rf.violations[v].severity);
                        n0++;
                    }
                    g_assert_cmpuint(r0.n_violations, ==, n0);
                    g_assert_null(jet_schedule_report_find(&r0, "maxdeliver-too-small"));
                }
}

/* What the budget model says is what settlement does: a message that fails
 * on every delivery is captured as `budget` at delivery `attempts`, after
 * exactly the ladder's waits. */
static void test_budget_matches_rules(void)
{
    for (gint64 md = 1; md <= 12; md++)
        for (guint reserve = 0; reserve <= 3; reserve++) {
            JetSettlePolicy p;
            jet_settle_policy_init_default(&p);
            p.max_attempts = 0;
            p.max_deliver = md;
            p.capture_reserve = reserve;
            guint64 waited = 0;
            guint32 captured_at = 0;
            for (guint32 d = 1; d <= (guint32)md && captured_at == 0; d++) {
                JetSettleFacts f;
                memset(&f, 0, sizeof f);
                f.deliveries = d;
                f.failures = d - 1;
                f.verdict = JET_RETRY;
                JetSettleAction a;
                jet_settle_decide(&p, &f, &a);
                if (a.kind == JET_ACTION_CAPTURE) {
                    g_assert_cmpint(a.cause, ==, JET_CAUSE_BUDGET);
                    captured_at = d;
                } else {
                    g_assert_cmpint(a.kind, ==, JET_ACTION_RETRY);
                    waited += a.delay_ms;
                }
            }
            g_assert_cmpuint(captured_at, >, 0);
            JetScheduleInput in = base();
            in.rungs_ms = p.rungs_ms;
            in.n_rungs = p.n_rungs;
            in.max_attempts = 0;
            in.max_deliver = md;
            in.capture_reserve = reserve;
            JetScheduleReport r = check(&in);
            g_assert_cmpuint(r.attempts, ==, captured_at);
            g_assert_cmpuint(r.ladder_ms, ==, waited);
        }
}

/* What the report says with max_attempts 0 is what happens. */
static void test_budget_text(void)
{
    JetScheduleInput in = base();   /* rungs 1s, 5s */
    in.max_attempts = 0;
    in.max_deliver = 7;             /* reserve 1: delivery 6 is the last attempt */
    JetScheduleReport r = check(&in);
    g_autofree char *text = jet_schedule_report_format(&r);
    g_test_message("%s", text);
    g_assert_null(strstr(text, "until it succeeds"));
    g_assert_null(strstr(text, "skipped"));
    assert_contains(text, "envelope: at most 1m 51s from the first delivery to the dead-letter, "
                          "worst case (max_attempts 0 with MaxDeliver 7: the budget line "
                          "dead-letters a failing message at delivery 6, cause budget)\n");
    assert_contains(text, "max_attempts 0, but the budget line (MaxDeliver 7 - capture_reserve 1) "
                          "makes delivery 6 the last attempt; 5 waits between 6 attempts: the 2 "
                          "listed rungs, then the last one (5s) 3 more times");
    in.max_deliver = 2;
    in.capture_reserve = 1;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "makes delivery 1 the last attempt; no wait, the first failure is "
                          "dead-lettered");
    in.max_deliver = 3;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "makes delivery 2 the last attempt; 1 wait between 2 attempts: the "
                          "first rung");

    /* Truly unlimited, and the accepted expiry named. */
    in.max_deliver = -1;
    in.has_stream = TRUE;
    in.stream_max_age_ms = 1 * H;
    in.accept_expiry = TRUE;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "envelope: unlimited (max_attempts 0, MaxDeliver unlimited): a failing "
                          "message is retried until it succeeds");
    assert_contains(text, "  stream max_age      1h             a message that never succeeds "
                          "expires at this age with no dead-letter record (accept_expiry = true)\n");
}

static void test_overflow(void)
{
    static const guint64 huge[] = { G_MAXUINT64 / 2, G_MAXUINT64 - 1 };
    JetScheduleInput in = base();
    in.rungs_ms = huge;
    in.n_rungs = 2;
    in.max_attempts = G_MAXUINT;
    in.postpone_horizon_ms = G_MAXUINT64;
    in.max_postpone_delay_ms = G_MAXUINT64;
    in.crash_limit = G_MAXUINT;
    in.ack_wait_ms = G_MAXUINT64;
    in.workers = G_MAXUINT;
    in.batch = G_MAXUINT;
    in.threshold = G_MAXUINT;
    in.max_ack_pending = G_MAXINT64;
    in.max_deliver = G_MAXINT64;
    in.capture_reserve = G_MAXUINT;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.ladder_ms, ==, G_MAXUINT64);
    g_assert_cmpuint(r.ladder_waits, ==, (guint64)G_MAXUINT - 1);
    g_assert_cmpuint(r.crash_fallback_ms, ==, G_MAXUINT64);
    g_assert_cmpuint(r.retry_span_ms, ==, G_MAXUINT64);
    g_assert_cmpuint(r.worst_case_ms, ==, G_MAXUINT64);
    g_assert_cmpuint(r.in_hand, ==, G_MAXUINT64);
    /* Saturated in hand never fits a finite MaxAckPending. */
    assert_codes(&r, CODES("ackpending-headroom"));

    /* A saturated envelope fails every finite bound, and meets the largest. */
    in.max_time_to_dead_letter_ms = G_MAXUINT64 - 1;
    in.has_stream = TRUE;
    in.stream_max_age_ms = G_MAXUINT64;
    in.has_ledger = TRUE;
    in.ledger_max_age_ms = G_MAXUINT64;
    r = check(&in);
    assert_codes(&r, CODES("ackpending-headroom", "max-time-exceeded", "stream-max-age-short",
                           "ledger-max-age-short"));
    in.max_time_to_dead_letter_ms = G_MAXUINT64;
    r = check(&in);
    assert_codes(&r, CODES("ackpending-headroom", "stream-max-age-short", "ledger-max-age-short"));

    /* Large but exact: no saturation where none is due. */
    static const guint64 big[] = { G_MAXUINT64 / 4 };
    in = base();
    in.rungs_ms = big;
    in.n_rungs = 1;
    in.max_attempts = 3;   /* two waits: exactly G_MAXUINT64 / 4 * 2 */
    in.crash_limit = 0;
    r = check(&in);
    g_assert_cmpuint(r.ladder_ms, ==, (G_MAXUINT64 / 4) * 2);
    g_assert_cmpuint(r.worst_case_ms, ==, (G_MAXUINT64 / 4) * 2);
    in.max_attempts = 6;   /* five waits: would wrap */
    r = check(&in);
    g_assert_cmpuint(r.ladder_ms, ==, G_MAXUINT64);

    /* The crash term at the top of the counters: no wrap, and no message
     * cut short by its buffer. */
    in = base();
    in.max_attempts = 0;
    in.capture_reserve = G_MAXUINT;
    in.crash_limit = G_MAXUINT;
    in.max_deliver = (gint64)G_MAXUINT + 1;
    r = check(&in);
    assert_codes(&r, CODES("maxdeliver-crash"));
    g_assert_cmpuint(r.crash_need, ==, (guint64)G_MAXUINT + 2);
    g_assert_cmpuint(r.crash_capture_delivery, ==, 2);
    in.max_deliver = (gint64)G_MAXUINT + 2;
    r = check(&in);
    assert_codes(&r, CODES("crash-limit-cut"));
    in.max_deliver = (gint64)G_MAXUINT * 2 + 2;
    r = check(&in);
    assert_codes(&r, NONE);
    g_assert_cmpuint(r.crash_capture_delivery, ==, (guint64)G_MAXUINT + 2);
    in.max_deliver = G_MAXINT64;
    in.has_consumer = TRUE;
    in.consumer_max_deliver = G_MAXINT64 - 1;
    in.consumer_max_ack_pending = G_MAXINT64;
    in.consumer_ack_wait_ms = G_MAXUINT64;
    r = check(&in);
    assert_codes(&r, NONE);
    g_assert_cmpuint(r.crash_deliveries, ==, (guint64)G_MAXUINT * 2 + 2);
    static const struct { gint64 md; guint reserve, limit; gboolean ledger_off; } far[] = {
        { G_MAXUINT, G_MAXUINT, G_MAXUINT, FALSE },
        { (gint64)G_MAXUINT + 2, G_MAXUINT, G_MAXUINT, FALSE },
        { G_MAXINT64 - 1, 0, 0, FALSE },
        { G_MAXINT64, 0, 0, TRUE },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(far); i++) {
        in = base();
        in.max_attempts = 0;
        in.max_deliver = far[i].md;
        in.capture_reserve = far[i].reserve;
        in.crash_limit = far[i].limit;
        in.ledger_off = far[i].ledger_off;
        in.ack_wait_ms = G_MAXUINT64;
        r = check(&in);
        g_assert_cmpuint(r.n_violations, >, 0);
        for (gsize v = 0; v < r.n_violations; v++)
            g_assert_cmpuint(strlen(r.violations[v].message), <, sizeof r.violations[v].message - 1);
    }

    /* MaxDeliver need at the top of both counters does not wrap. */
    in = base();
    in.max_attempts = G_MAXUINT;
    in.capture_reserve = G_MAXUINT;
    in.max_deliver = (gint64)G_MAXUINT * 2;
    r = check(&in);
    g_assert_null(jet_schedule_report_find(&r, "maxdeliver-too-small"));
    in.max_deliver = (gint64)G_MAXUINT * 2 - 1;
    r = check(&in);
    g_assert_nonnull(jet_schedule_report_find(&r, "maxdeliver-too-small"));
}

/* No stream, no consumer, no ledger, no bound: the policy alone, clean. */
static void test_policy_only(void)
{
    JetScheduleInput in = base();
    JetScheduleReport r = check(&in);
    assert_codes(&r, NONE);
    g_assert_false(r.from_consumer);
    g_assert_cmpint(r.max_deliver, ==, -1);
    g_assert_cmpint(r.max_ack_pending, ==, 1000);
    g_assert_cmpuint(r.in_hand, ==, 10);
}

static void test_from_binding(void)
{
    guint64 rungs[] = { 2 * S, 7 * S, 1 * M };
    JetBindingConfig b;
    memset(&b, 0, sizeof b);
    b.rungs_ms = rungs;
    b.n_rungs = 3;
    b.max_attempts = 9;
    b.postpone_horizon_ms = 2 * H;
    b.max_postpone_delay_ms = 5 * M;
    b.ack_wait_ms = 45 * S;
    b.max_deliver = 12;
    b.max_ack_pending = 500;
    b.capture_reserve = 2;
    b.crash_limit = 4;
    b.workers = 3;
    b.batch = 20;
    b.threshold = 5;
    b.ledger = TRUE;
    b.floor_age_ms = 5 * M;
    b.breaker = JET_BREAKER_MODE_ENFORCE;
    b.min_deliveries = 3;

    JetScheduleInput in;
    memset(&in, 0x5a, sizeof in);   /* everything not from the binding must be zeroed */
    jet_schedule_input_from_binding(&b, &in);
    g_assert_true(in.rungs_ms == rungs);
    g_assert_cmpuint(in.n_rungs, ==, 3);
    g_assert_cmpuint(in.max_attempts, ==, 9);
    g_assert_cmpuint(in.postpone_horizon_ms, ==, 2 * H);
    g_assert_cmpuint(in.max_postpone_delay_ms, ==, 5 * M);
    g_assert_cmpuint(in.ack_wait_ms, ==, 45 * S);
    g_assert_cmpint(in.max_deliver, ==, 12);
    g_assert_cmpint(in.max_ack_pending, ==, 500);
    g_assert_cmpuint(in.capture_reserve, ==, 2);
    g_assert_cmpuint(in.crash_limit, ==, 4);
    g_assert_cmpuint(in.workers, ==, 3);
    g_assert_cmpuint(in.batch, ==, 20);
    g_assert_cmpuint(in.threshold, ==, 5);
    g_assert_cmpuint(in.max_time_to_dead_letter_ms, ==, 0);
    g_assert_false(in.has_stream);
    g_assert_false(in.has_consumer);
    g_assert_false(in.has_ledger);
    g_assert_null(in.backoff_ms);
    g_assert_cmpuint(in.n_backoff, ==, 0);
    g_assert_cmpint(in.breaker, ==, JET_BREAKER_MODE_ENFORCE);
    g_assert_cmpuint(in.floor_age_ms, ==, 5 * M);
    g_assert_cmpuint(in.min_deliveries, ==, 3);
    g_assert_false(in.ledger_off);

    JetScheduleReport r = check(&in);
    /* 5m is reached after 2 + 7 + 60 x 5 s = 309 s, before failure 8 of 9. */
    g_assert_true(r.breaker_room.applies);
    g_assert_cmpuint(r.breaker_room.first_failure_k, ==, 8);
    /* 2 + 7 + 60 x 6 s */
    g_assert_cmpuint(r.ladder_ms, ==, 369 * S);
    g_assert_cmpuint(r.crash_fallback_ms, ==, 180 * S);
    g_assert_cmpuint(r.in_hand, ==, 75);
    assert_codes(&r, NONE);   /* MaxDeliver 12 >= 9 + 2; 500 >= 150 */
}

/* --- ordered bindings ---------------------------------------------------------- */

/* An ordered (or kv) binding as the config makes it: durable keys it does
 * not have are left at what would be wrong for it. */
static void ordered_binding(JetBindingConfig *b, JetBindingKind kind, gboolean ledger, guint64 *rungs)
{
    memset(b, 0, sizeof *b);
    b->kind = kind;
    rungs[0] = 1 * S;
    rungs[1] = 5 * S;
    b->rungs_ms = rungs;
    b->n_rungs = 2;
    b->max_attempts = 6;
    b->max_postpone_delay_ms = 15 * M;
    b->ack_wait_ms = 30 * S;
    b->max_deliver = 3;
    b->max_ack_pending = 1000;
    b->capture_reserve = 1;
    b->crash_limit = 2;
    b->workers = 4;
    b->batch = 10;
    b->ledger = ledger;
    b->floor_age_ms = 2 * M;
    b->breaker = JET_BREAKER_MODE_ENFORCE;
    b->min_deliveries = 2;
}

/* With the ledger, the position record names the message in the handler
 * (docs/ordered.md): with checkpoint = kv, crash_limit deaths, each alone
 * in the handler, then poison before it runs; no AckWait between deaths,
 * nothing to warn. */
static void test_ordered_crash_attributed(void)
{
    static const JetBindingKind kinds[] = { JET_KIND_ORDERED, JET_KIND_KV };
    for (gsize k = 0; k < G_N_ELEMENTS(kinds); k++) {
        guint64 rungs[2];
        JetBindingConfig b;
        ordered_binding(&b, kinds[k], TRUE, rungs);
        b.checkpoint = JET_CHECKPOINT_KV;
        JetScheduleInput in;
        jet_schedule_input_from_binding(&b, &in);
        g_assert_true(in.ordered);
        g_assert_false(in.ordered_span);
        g_assert_cmpuint(in.crash_limit, ==, 2);
        g_assert_cmpint(in.max_deliver, ==, -1);
        g_assert_cmpint(in.breaker, ==, JET_BREAKER_MODE_OFF);
        JetScheduleReport r = check(&in);
        assert_codes(&r, NONE);
        g_assert_true(r.crash_attributed);
        g_assert_true(r.crash_captured);
        g_assert_false(r.crash_span);
        g_assert_false(r.crash_at_budget_line);
        g_assert_cmpuint(r.crash_strikes, ==, 2);
        g_assert_cmpuint(r.crash_capture_delivery, ==, 3);
        g_assert_cmpuint(r.crash_deliveries, ==, 3);
        g_assert_cmpuint(r.crash_limit, ==, 2);
        g_assert_cmpuint(r.crash_fallback_ms, ==, 0);
        /* 1 s + 4 x 5 s: the ladder alone. */
        g_assert_cmpuint(r.worst_case_ms, ==, 21 * S);
        g_autofree char *text = jet_schedule_report_format(&r);
        g_test_message("%s", text);
        assert_contains(text, "crash fallback      0              crash_limit 2 deaths, each handing the message "
                              "to the next host at once");
        assert_contains(text, "crash term          3 deliveries   a message that kills the host: 2 deaths, each "
                              "with it alone in the handler");
        assert_contains(text, "captured as poison at delivery 3 before it runs (crash_limit 2 strikes)");
        assert_contains(text, "checked as an ordered binding");
        g_assert_null(strstr(text, "AckWait 30s"));
        g_assert_null(strstr(text, "span"));
    }
}

/* Without checkpoint = kv the record is a span mark (docs/ordered.md,
 * "Span marks"): one death more, naming no message, before the crash_limit
 * deaths alone; still nothing to warn, and no AckWait. */
static void test_ordered_crash_span(void)
{
    static const JetBindingKind kinds[] = { JET_KIND_ORDERED, JET_KIND_KV };
    static const guint limits[] = { 1, 2, 5 };
    for (gsize k = 0; k < G_N_ELEMENTS(kinds); k++) {
        for (gsize l = 0; l < G_N_ELEMENTS(limits); l++) {
            guint64 rungs[2];
            JetBindingConfig b;
            ordered_binding(&b, kinds[k], TRUE, rungs);
            b.checkpoint = JET_CHECKPOINT_NONE;
            b.crash_limit = limits[l];
            JetScheduleInput in;
            jet_schedule_input_from_binding(&b, &in);
            g_assert_true(in.ordered_span);
            JetScheduleReport r = check(&in);
            assert_codes(&r, NONE);
            g_assert_true(r.crash_captured);
            g_assert_true(r.crash_span);
            g_assert_cmpuint(r.crash_strikes, ==, limits[l]);
            g_assert_cmpuint(r.crash_capture_delivery, ==, limits[l] + 2);
            g_assert_cmpuint(r.crash_deliveries, ==, limits[l] + 2);
            g_assert_cmpuint(r.crash_fallback_ms, ==, 0);
            g_assert_cmpuint(r.worst_case_ms, ==, 21 * S);
            g_autofree char *text = jet_schedule_report_format(&r);
            g_autofree char *want = g_strdup_printf(
                "crash term          %u deliveries   a message that kills the host: 1 death within a span mark "
                "(no checkpoint: names no message), then %u deaths, each with it alone in the handler",
                limits[l] + 2, limits[l]);
            assert_contains(text, want);
            g_autofree char *at = g_strdup_printf("captured as poison at delivery %u before it runs (crash_limit %u "
                                                  "strikes)", limits[l] + 2, limits[l]);
            assert_contains(text, at);
        }
    }
    /* At batch 1 a span is one message: no death more. */
    guint64 rungs[2];
    JetBindingConfig b;
    ordered_binding(&b, JET_KIND_ORDERED, TRUE, rungs);
    b.batch = 1;
    JetScheduleInput in;
    jet_schedule_input_from_binding(&b, &in);
    g_assert_false(in.ordered_span);
    JetScheduleReport one = check(&in);
    g_assert_false(one.crash_span);
    g_assert_cmpuint(one.crash_capture_delivery, ==, 3);
    /* The span changes nothing where nothing is captured: crash_limit 0 or
     * no ledger. */
    b.batch = 10;
    jet_schedule_input_from_binding(&b, &in);
    g_assert_true(in.ordered_span);
    in.crash_limit = 0;
    JetScheduleReport r = check(&in);
    assert_codes(&r, CODES("crash-unbounded"));
    g_assert_false(r.crash_captured);
    g_assert_false(r.crash_span);
    in.crash_limit = 2;
    in.ledger_off = TRUE;
    r = check(&in);
    assert_codes(&r, CODES("crash-unbounded"));
    g_assert_false(r.crash_span);
}

/* Without the ledger there is no position record: nothing attributes a
 * death, so the check still warns crash-unbounded (and only that: the
 * durable crash-no-ledger speaks of MaxDeliver and AckWait). */
static void test_ordered_crash_no_ledger(void)
{
    guint64 rungs[2];
    JetBindingConfig b;
    ordered_binding(&b, JET_KIND_ORDERED, FALSE, rungs);
    JetScheduleInput in;
    jet_schedule_input_from_binding(&b, &in);
    JetScheduleReport r = check(&in);
    assert_codes(&r, CODES("crash-unbounded"));
    assert_severity(&r, "crash-unbounded", JET_SCHEDULE_WARNING);
    assert_contains(message_of(&r, "crash-unbounded"), "ledger = false");
    assert_contains(message_of(&r, "crash-unbounded"), "never struck");
    g_assert_false(r.crash_attributed);
    g_assert_false(r.crash_captured);
    g_autofree char *text = jet_schedule_report_format(&r);
    assert_contains(text, "crash term          never          ledger = false: no position record");

    /* crash_limit 0 (a hand-built input: the config refuses it), ledger on:
     * one warning, in an ordered binding's words. */
    in.ledger_off = FALSE;
    in.crash_limit = 0;
    r = check(&in);
    assert_codes(&r, CODES("crash-unbounded"));
    assert_contains(message_of(&r, "crash-unbounded"), "handed to each next host");
    /* Both: still one. */
    in.ledger_off = TRUE;
    r = check(&in);
    assert_codes(&r, CODES("crash-unbounded"));
}

/* --- the breaker's room ------------------------------------------------------ */

/* Rungs 5m, 4 attempts: the ladder reaches 15m before the last attempt.  A
 * claim is weighed ahead of exhaustion, so floor_age 15m can still fire
 * (on the last attempt); 15m + 1ms never does (`>` is the never-fires line):
 * a warning in observe, an error in enforce. */
static const guint64 rung_5m[] = { 5 * M };

static JetScheduleInput breaker_base(JetBreakerMode mode, guint64 floor_age)
{
    JetScheduleInput in = base();
    in.rungs_ms = rung_5m;
    in.n_rungs = 1;
    in.max_attempts = 4;
    in.breaker = mode;
    in.floor_age_ms = floor_age;
    in.min_deliveries = 2;
    return in;
}

static void test_breaker_room(void)
{
    JetScheduleInput in = breaker_base(JET_BREAKER_MODE_OBSERVE, 15 * M);
    JetScheduleReport r = check(&in);
    assert_codes(&r, NONE);
    g_assert_cmpuint(r.ladder_ms, ==, 15 * M);
    g_assert_true(r.breaker_room.applies);
    g_assert_true(r.breaker_room.only_at_exhaustion);
    g_assert_false(r.breaker_room.never_fires);
    g_assert_cmpuint(r.breaker_room.first_failure_k, ==, 4);
    in.breaker = JET_BREAKER_MODE_ENFORCE;
    r = check(&in);
    assert_codes(&r, NONE);

    in = breaker_base(JET_BREAKER_MODE_OBSERVE, 15 * M + 1);
    r = check(&in);
    assert_codes(&r, CODES("breaker-no-room"));
    assert_severity(&r, "breaker-no-room", JET_SCHEDULE_WARNING);
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "breaker-no-room")->message,
                            "floor_age 15m 1ms is more than the ladder's reach 15m"));
    in.breaker = JET_BREAKER_MODE_ENFORCE;
    r = check(&in);
    assert_codes(&r, CODES("breaker-no-room"));
    assert_severity(&r, "breaker-no-room", JET_SCHEDULE_ERROR);
    in.breaker = JET_BREAKER_MODE_OFF;
    r = check(&in);
    assert_codes(&r, NONE);
    g_assert_false(r.breaker_room.applies);
    in.breaker = JET_BREAKER_MODE_ENFORCE;
    in.floor_age_ms = 0;             /* monitor off */
    r = check(&in);
    assert_codes(&r, NONE);
    in.floor_age_ms = 100 * H;
    in.max_attempts = 0;             /* unlimited: always room */
    r = check(&in);
    assert_codes(&r, NONE);

    /* min_deliveries past the last attempt: no room either. */
    in = breaker_base(JET_BREAKER_MODE_ENFORCE, 1 * M);
    in.min_deliveries = 4;
    r = check(&in);
    assert_codes(&r, NONE);
    in.min_deliveries = 5;
    r = check(&in);
    assert_codes(&r, CODES("breaker-no-room"));
    assert_severity(&r, "breaker-no-room", JET_SCHEDULE_ERROR);
    g_assert_nonnull(strstr(jet_schedule_report_find(&r, "breaker-no-room")->message,
                            "min_deliveries 5 is more than max_attempts 4"));
}

/* A breaker without the ledger's first-failure time can never claim. */
static void test_breaker_no_ledger(void)
{
    JetScheduleInput in = breaker_base(JET_BREAKER_MODE_OBSERVE, 10 * M);
    in.ledger_off = TRUE;
    JetScheduleReport r = check(&in);
    assert_codes(&r, CODES("breaker-no-ledger", "crash-no-ledger"));
    assert_severity(&r, "breaker-no-ledger", JET_SCHEDULE_WARNING);
    in.breaker = JET_BREAKER_MODE_ENFORCE;
    r = check(&in);
    assert_severity(&r, "breaker-no-ledger", JET_SCHEDULE_ERROR);
    in.breaker = JET_BREAKER_MODE_OFF;
    r = check(&in);
    assert_codes(&r, CODES("crash-no-ledger"));
    in.breaker = JET_BREAKER_MODE_OBSERVE;
    in.floor_age_ms = 0;
    r = check(&in);
    assert_codes(&r, CODES("crash-no-ledger"));
}

static void test_breaker_text(void)
{
    static const struct {
        guint64 floor_age;
        const char *text;
    } cases[] = {
        { 10 * M, "breaker             10m            floor_age (breaker observe): can claim from delivery 3, before its handler runs, ahead of the last attempt (delivery 4)" },
        { 15 * M, "breaker             15m            floor_age (breaker observe): can claim only at delivery 4, the last attempt, before its handler runs, where the ladder would dead-letter the message anyway if it failed" },
        { 15 * M + 1, "breaker             15m 1ms        floor_age (breaker observe): never claims, the ladder dead-letters first" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        JetScheduleInput in = breaker_base(JET_BREAKER_MODE_OBSERVE, cases[i].floor_age);
        JetScheduleReport r = check(&in);
        g_autofree char *text = jet_schedule_report_format(&r);
        g_test_message("%s", text);
        assert_contains(text, cases[i].text);
    }
    /* No line when the breaker is off. */
    JetScheduleInput in = breaker_base(JET_BREAKER_MODE_OFF, 15 * M);
    JetScheduleReport r = check(&in);
    g_autofree char *text = jet_schedule_report_format(&r);
    g_assert_null(strstr(text, "breaker "));

    /* The default binding (rungs 1s, 5s, 30s, 2m, 10m; 5 attempts; floor_age
     * 2m): failing 36s at delivery 4, 2m 36s at delivery 5, the last. */
    static const guint64 rungs_default[] = { 1 * S, 5 * S, 30 * S, 2 * M, 10 * M };
    in = base();
    in.rungs_ms = rungs_default;
    in.n_rungs = G_N_ELEMENTS(rungs_default);
    in.max_attempts = 5;
    in.breaker = JET_BREAKER_MODE_OBSERVE;
    in.floor_age_ms = 2 * M;
    in.min_deliveries = 2;
    r = check(&in);
    assert_codes(&r, NONE);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "floor_age (breaker observe): can claim only at delivery 5, the last "
                          "attempt, before its handler runs");
    /* Unlimited attempts: from the delivery the rungs reach floor_age. */
    in.max_attempts = 0;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "floor_age (breaker observe): can claim from delivery 5, before its "
                          "handler runs\n");
}

/* --- the text ------------------------------------------------------------- */

static void test_format_duration(void)
{
    static const struct { guint64 ms; const char *text; } cases[] = {
        { 0, "0" }, { 1, "1ms" }, { 999, "999ms" }, { 1000, "1s" }, { 1500, "1s 500ms" },
        { 21000, "21s" }, { 90000, "1m 30s" }, { 3600000, "1h" }, { 3723000, "1h 2m 3s" },
        { 86400000, "1d" }, { 90061001, "1d 1h 1m 1s 1ms" },
        { G_MAXUINT64, "213503982334d 14h 25m 51s 615ms" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        char buf[64];
        jet_schedule_format_duration(cases[i].ms, buf, sizeof buf);
        g_assert_cmpstr(buf, ==, cases[i].text);
    }
    /* Truncation keeps a terminated string. */
    char small[5];
    jet_schedule_format_duration(90061001, small, sizeof small);
    g_assert_cmpstr(small, ==, "1d 1");
}

static void assert_contains(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        g_error("missing \"%s\" in:\n%s", needle, text);
}

static void test_format_report(void)
{
    JetScheduleInput in = base();
    in.postpone_horizon_ms = 1 * H;
    in.has_stream = TRUE;
    in.stream_max_age_ms = 10 * M;
    in.max_time_to_dead_letter_ms = 25 * M;
    in.max_ack_pending = 15;
    JetScheduleReport r = check(&in);
    g_autofree char *text = jet_schedule_report_format(&r);
    g_test_message("%s", text);

    assert_contains(text, "envelope: at most 1h 16m 51s");
    assert_contains(text, "ladder");
    assert_contains(text, "21s");
    assert_contains(text, "5 waits between 6 attempts: the 2 listed rungs, then the last one (5s) 3 more times");
    assert_contains(text, "postpone horizon");
    assert_contains(text, "1h ");
    assert_contains(text, "last postpone");
    assert_contains(text, "15m");
    assert_contains(text, "crash fallback");
    assert_contains(text, "1m 30s");
    assert_contains(text, "crash_limit 3 strikes x AckWait 30s (the binding's)");
    assert_contains(text, "worst case");
    assert_contains(text, "1h 16m 51s");
    assert_contains(text, "MaxDeliver -1 (unlimited), MaxAckPending 15 (from the binding's config)");
    assert_contains(text, "violations: 2 errors, 1 warning\n");
    for (gsize i = 0; i < r.n_violations; i++) {
        g_autofree char *line = g_strdup_printf("  %-7s %s: %s\n",
                                                jet_schedule_severity_name(r.violations[i].severity),
                                                r.violations[i].code, r.violations[i].message);
        assert_contains(text, line);
    }
    assert_contains(text, "error   max-time-exceeded: worst case 1h 16m 51s");
    assert_contains(text, "error   stream-max-age-short: stream max_age 10m");
    assert_contains(text, "warning ackpending-headroom: ");
    /* Every line is one line: no message carries a newline of its own. */
    for (gsize i = 0; i < r.n_violations; i++)
        g_assert_null(strchr(r.violations[i].message, '\n'));

    /* Clean. */
    in = base();
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    g_test_message("%s", text);
    assert_contains(text, "no violations\n");
    g_assert_null(strstr(text, "violations:"));

    /* One attempt; one listed rung used without repeats. */
    in.max_attempts = 1;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "max_attempts 1: no wait, the first failure is dead-lettered");
    in.max_attempts = 2;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "1 wait between 2 attempts: the first rung");

    /* Unlimited. */
    in.max_attempts = 0;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    g_test_message("%s", text);
    assert_contains(text, "envelope: unlimited (max_attempts 0, MaxDeliver unlimited)");
    assert_contains(text, "duration checks are skipped");
    assert_contains(text, "unlimited      max_attempts 0");

    /* The crash term, a line of its own in deliveries. */
    static const struct {
        gint64 max_deliver;
        guint max_attempts, crash_limit;
        gboolean ledger_off;
        const char *line;
    } crash[] = {
        { -1, 6, 3, FALSE, "  crash term          5 deliveries   a message that kills the host: 1 death "
          "beside others + 3 alone, captured as poison at delivery 5 (crash_limit 3 strikes); "
          "MaxDeliver -1 (unlimited)\n" },
        { 4, 3, 3, FALSE, "  crash term          4 deliveries   a message that kills the host: 1 death "
          "beside others + 1 alone, captured as poison at delivery 3 (the budget line, 1 of "
          "crash_limit 3 strikes) + capture_reserve 1; MaxDeliver 4\n" },
        { 10, 6, 3, FALSE, "  crash term          6 deliveries   a message that kills the host: 1 death "
          "beside others + 3 alone, captured as poison at delivery 5 (crash_limit 3 strikes) + "
          "capture_reserve 1; MaxDeliver 10\n" },
        { 2, 1, 3, FALSE, "  crash term          3 deliveries   a message that kills the host: 1 death "
          "beside others + 0 alone, captured as poison at delivery 2 (the budget line, 0 of "
          "crash_limit 3 strikes) + capture_reserve 1: 1 more than MaxDeliver 2\n" },
        { 7, 6, 0, FALSE, "  crash term          7 deliveries   a message that kills the host: 1 death "
          "beside others + 4 alone, captured as poison at delivery 6 (the budget line; "
          "crash_limit 0) + capture_reserve 1; MaxDeliver 7\n" },
        { 1, 0, 3, FALSE, "  crash term          never          a message that kills the host spends "
          "MaxDeliver 1 on its first death, beside others: it goes dark unrecorded\n" },
        { -1, 6, 0, FALSE, "  crash term          never          crash_limit 0 and MaxDeliver -1 "
          "(unlimited): a message that kills the host is redelivered without bound\n" },
        { 9, 6, 3, TRUE, "  crash term          never          ledger = false: no crash attribution, "
          "a message that kills the host is never captured; MaxDeliver 9\n" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(crash); i++) {
        in = base();
        in.max_deliver = crash[i].max_deliver;
        in.max_attempts = crash[i].max_attempts;
        in.crash_limit = crash[i].crash_limit;
        in.ledger_off = crash[i].ledger_off;
        r = check(&in);
        g_free(text);
        text = jet_schedule_report_format(&r);
        g_test_message("%s", text);
        assert_contains(text, crash[i].line);
        /* After the worst case, before what the check used. */
        g_assert_true(strstr(text, "  worst case") < strstr(text, "  crash term"));
        g_assert_true(strstr(text, "  crash term") < strstr(text, "  checked with"));
    }
    assert_contains(text, "warning crash-no-ledger: crash term: ledger = false");
    in = base();
    in.max_deliver = 2;
    in.max_attempts = 1;
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "violations: 1 error, 0 warnings\n  error   maxdeliver-crash: crash term: "
                          "a crash-looping message needs 1 + 1 + capture_reserve 1 = 3 deliveries");

    /* From the consumer. */
    in = base();
    consumer(&in, 1 * M, 20, NULL, 0);
    r = check(&in);
    g_free(text);
    text = jet_schedule_report_format(&r);
    assert_contains(text, "AckWait 1m (the consumer's)");
    assert_contains(text, "MaxDeliver 20, MaxAckPending 1000 (from the consumer on the server)");
}

/* floor_age exactly at the ladder's reach is room enough: when the breaker
 * still cannot fire, min_deliveries is the reason given, not floor_age. */
static void test_breaker_room_reach_edge(void)
{
    JetScheduleInput in = breaker_base(JET_BREAKER_MODE_ENFORCE, 15 * M);
    in.min_deliveries = 5;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(r.breaker_room.reach_ms, ==, 15 * M);
    g_assert_true(r.breaker_room.never_fires);
    assert_codes(&r, CODES("breaker-no-room"));
    const char *msg = jet_schedule_report_find(&r, "breaker-no-room")->message;
    g_assert_nonnull(strstr(msg, "min_deliveries 5 is more than max_attempts 4"));
    g_assert_null(strstr(msg, "floor_age"));
}

/* With max_attempts 0 the budget line ends the ladder, so a worst case over
 * the bound is fixed through max_deliver: the message names it. */
static void test_budget_max_time_names_max_deliver(void)
{
    JetScheduleInput in = base();
    in.max_attempts = 0;
    in.max_deliver = 7;
    in.max_time_to_dead_letter_ms = 1;
    JetScheduleReport r = check(&in);
    g_assert_true(r.attempts_from_budget);
    assert_codes(&r, CODES("max-time-exceeded"));
    const char *msg = jet_schedule_report_find(&r, "max-time-exceeded")->message;
    g_assert_nonnull(strstr(msg, "lower max_deliver (max_attempts 0: the budget line ends the ladder)"));
    in.max_attempts = 6;
    r = check(&in);
    assert_codes(&r, CODES("max-time-exceeded"));
    msg = jet_schedule_report_find(&r, "max-time-exceeded")->message;
    g_assert_nonnull(strstr(msg, "lower max_attempts,"));
}

/* A budget line past G_MAXUINT attempts: the breaker's room is weighed at
 * G_MAXUINT attempts (the ladder outlasts any floor_age), never at the
 * count cut to 32 bits. */
static void test_budget_line_past_guint(void)
{
    JetScheduleInput in = base();
    in.max_attempts = 0;
    in.capture_reserve = 1;
    in.max_deliver = (gint64)G_MAXUINT + 3;   /* line: 2^32 + 2 attempts */
    in.breaker = JET_BREAKER_MODE_ENFORCE;
    in.floor_age_ms = 2 * M;
    in.min_deliveries = 2;
    JetScheduleReport r = check(&in);
    g_assert_true(r.attempts_from_budget);
    g_assert_cmpuint(r.attempts, ==, (guint64)G_MAXUINT + 2);
    g_assert_true(r.breaker_room.applies);
    g_assert_false(r.breaker_room.never_fires);
    g_assert_false(r.breaker_room.only_at_exhaustion);
    g_assert_null(jet_schedule_report_find(&r, "breaker-no-room"));
}

/* --- the target streams of a binding's publishes (publish_streams) -------- */

/* The check, then the publish streams on its report. */
static JetScheduleReport check_publish(const JetScheduleInput *in, const JetPublishStream *streams, gsize n)
{
    JetScheduleReport r = check(in);
    jet_schedule_check_publish_streams(&r, streams, n);
    for (gsize i = 0; i < r.n_violations; i++)
        g_test_message("%s %s: %s", jet_schedule_severity_name(r.violations[i].severity),
                       r.violations[i].code, r.violations[i].message);
    return r;
}

static JetPublishStream found(const char *name, guint64 window_ms)
{
    return (JetPublishStream){ .name = name, .found = TRUE, .duplicate_window_ms = window_ms };
}

/* The window must be longer than the worst case: equal is too short (the
 * envelope leaves out handler and publish time). */
static void test_publish_window_boundary(void)
{
    JetScheduleInput in = base();
    guint64 worst = 21 * S + 90 * S;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(jet_schedule_dedup_need_ms(&r), ==, worst);

    JetPublishStream s = found("FWD", worst - 1);
    r = check_publish(&in, &s, 1);
    assert_codes(&r, CODES("publish-dedup-window"));
    assert_severity(&r, "publish-dedup-window", JET_SCHEDULE_WARNING);
    const char *msg = jet_schedule_report_find(&r, "publish-dedup-window")->message;
    assert_contains(msg, "duplicate window of FWD (1m 50s 999ms) not longer than the worst case 1m 51s "
                         "(ladder 21s + postpone horizon 0 + last postpone 0 + crash fallback 1m 30s)");
    assert_contains(msg, "raise duplicate_window above 1m 51s");

    s.duplicate_window_ms = worst;
    r = check_publish(&in, &s, 1);
    assert_codes(&r, CODES("publish-dedup-window"));

    s.duplicate_window_ms = worst + 1;
    r = check_publish(&in, &s, 1);
    assert_codes(&r, NONE);

    /* No streams: nothing to say. */
    r = check_publish(&in, NULL, 0);
    assert_codes(&r, NONE);
}

/* Every term counts: the postpone horizon and its overshoot (a message
 * postponed after a failed publish publishes again when it is acked), and
 * the crash fallback with the consumer's AckWait when the server has one. */
static void test_publish_window_terms(void)
{
    JetScheduleInput in = base();
    in.postpone_horizon_ms = 1 * H;
    in.max_postpone_delay_ms = 15 * M;
    guint64 worst = 21 * S + 1 * H + 15 * M + 90 * S;
    JetScheduleReport r = check(&in);
    g_assert_cmpuint(jet_schedule_dedup_need_ms(&r), ==, worst);
    JetPublishStream s = found("FWD", 2 * M);   /* the server's default window */
    r = check_publish(&in, &s, 1);
    assert_codes(&r, CODES("publish-dedup-window"));
    assert_contains(jet_schedule_report_find(&r, "publish-dedup-window")->message,
                    "worst case 1h 16m 51s (ladder 21s + postpone horizon 1h + last postpone 15m + crash fallback "
                    "1m 30s)");
    s.duplicate_window_ms = worst + 1;
    r = check_publish(&in, &s, 1);
    assert_codes(&r, NONE);

    /* The consumer's AckWait replaces the binding's. */
    in = base();
    consumer(&in, 2 * S, -1, NULL, 0);
    r = check(&in);
    g_assert_cmpuint(jet_schedule_dedup_need_ms(&r), ==, 21 * S + 6 * S);
    s.duplicate_window_ms = 27 * S;
    r = check_publish(&in, &s, 1);
    assert_codes(&r, CODES("publish-dedup-window"));
    s.duplicate_window_ms = 27 * S + 1;
    r = check_publish(&in, &s, 1);
    assert_codes(&r, NONE);
}

/* A stream the server does not have is an error; one it could not read is
 * too, saying why; each code once, naming every stream. */
static void test_publish_streams_missing(void)
{
    JetScheduleInput in = base();
    JetPublishStream s[] = {
        found("FWD", 1 * H),
        { .name = "NOPE", .found = FALSE },
        found("SHORT", 1 * S),
        { .name = "LOCKED", .found = FALSE, .error = "cannot be read: timeout" },
        found("TINY", 0),
    };
    JetScheduleReport r = check_publish(&in, s, G_N_ELEMENTS(s));
    assert_codes(&r, CODES("publish-stream-missing", "publish-dedup-window"));
    assert_severity(&r, "publish-stream-missing", JET_SCHEDULE_ERROR);
    const char *msg = jet_schedule_report_find(&r, "publish-stream-missing")->message;
    assert_contains(msg, "not on the server: NOPE (does not exist), LOCKED (cannot be read: timeout);");
    g_assert_null(strstr(msg, "FWD"));
    msg = jet_schedule_report_find(&r, "publish-dedup-window")->message;
    assert_contains(msg, "duplicate window of SHORT (1s), TINY (0) not longer than the worst case 1m 51s");
    g_assert_null(strstr(msg, "FWD"));
}

/* Unlimited retries outlive any window. */
static void test_publish_window_unlimited(void)
{
    JetScheduleInput in = base();
    in.max_attempts = 0;
    JetScheduleReport r = check(&in);
    g_assert_true(r.unlimited);
    g_assert_cmpuint(jet_schedule_dedup_need_ms(&r), ==, G_MAXUINT64);
    JetPublishStream s = found("FWD", 365 * 24 * H);
    r = check_publish(&in, &s, 1);
    assert_codes(&r, CODES("publish-dedup-window"));
    assert_contains(jet_schedule_report_find(&r, "publish-dedup-window")->message,
                    "retries without bound (max_attempts 0, MaxDeliver unlimited) can redeliver a message after "
                    "any duplicate window, FWD (365d)");

    /* With a finite MaxDeliver the budget line bounds it again. */
    in.max_deliver = 7;
    r = check(&in);
    guint64 need = jet_schedule_dedup_need_ms(&r);
    g_assert_cmpuint(need, ==, r.worst_case_ms);
    g_assert_cmpuint(need, <, G_MAXUINT64);
    s.duplicate_window_ms = need + 1;
    r = check_publish(&in, &s, 1);
    g_assert_null(jet_schedule_report_find(&r, "publish-dedup-window"));
}

/* Many streams: one violation per code, its list cut short, the message
 * whole. */
static void test_publish_streams_many(void)
{
    JetScheduleInput in = base();
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    JetPublishStream s[80];
    for (gsize i = 0; i < G_N_ELEMENTS(s); i++) {
        char *name = g_strdup_printf("STREAM_WITH_A_LONG_NAME_%" G_GSIZE_FORMAT, i);
        g_ptr_array_add(names, name);
        s[i] = i % 2 ? found(name, 1 * S) : (JetPublishStream){ .name = name, .found = FALSE };
    }
    JetScheduleReport r = check_publish(&in, s, G_N_ELEMENTS(s));
    assert_codes(&r, CODES("publish-stream-missing", "publish-dedup-window"));
    for (gsize i = 0; i < r.n_violations; i++) {
        assert_contains(r.violations[i].message, ", ...");
        g_assert_cmpuint(strlen(r.violations[i].message), <, sizeof r.violations[i].message - 1);
    }
    assert_contains(jet_schedule_report_find(&r, "publish-stream-missing")->message, "; the plugin's publishes");
    assert_contains(jet_schedule_report_find(&r, "publish-dedup-window")->message, "or shorten the schedule");

    /* The longest terms too. */
    in.postpone_horizon_ms = 1 * 24 * H + 1 * H + 1 * M + 1 * S + 1;
    in.max_postpone_delay_ms = in.postpone_horizon_ms;
    in.ack_wait_ms = in.postpone_horizon_ms;
    r = check_publish(&in, s, G_N_ELEMENTS(s));
    assert_contains(jet_schedule_report_find(&r, "publish-dedup-window")->message, "or shorten the schedule");
}

/* --- lanes ------------------------------------------------------------------------ */

/* Lanes keep order on one host only: shared between hosts they warn. */
static void test_lanes_not_exclusive(void)
{
    const char *const WARN[] = { "lanes-not-exclusive", NULL };
    JetScheduleInput in = base();
    in.lanes = TRUE;
    in.exclusive = FALSE;
    JetScheduleReport r = check(&in);
    assert_codes(&r, WARN);
    assert_severity(&r, "lanes-not-exclusive", JET_SCHEDULE_WARNING);
    const char *msg = message_of(&r, "lanes-not-exclusive");
    assert_contains(msg, "exclusive = false");
    assert_contains(msg, "key");

    in.exclusive = TRUE;
    r = check(&in);
    assert_codes(&r, NONE);
    in.lanes = FALSE;
    r = check(&in);
    assert_codes(&r, NONE);
    in.exclusive = FALSE;
    r = check(&in);
    assert_codes(&r, NONE);
}

/* The binding's key and exclusive reach the check. */
static void test_lanes_from_binding(void)
{
    guint64 rungs[] = { 1 * S, 5 * S };
    JetBindingConfig b;
    memset(&b, 0, sizeof b);
    b.rungs_ms = rungs;
    b.n_rungs = G_N_ELEMENTS(rungs);
    b.max_attempts = 6;
    b.max_postpone_delay_ms = 15 * M;
    b.ack_wait_ms = 30 * S;
    b.max_deliver = -1;
    b.max_ack_pending = 1000;
    b.capture_reserve = 1;
    b.crash_limit = 3;
    b.workers = 1;
    b.batch = 10;
    b.ledger = TRUE;
    b.lane_key.kind = JET_LANE_KEY_SUBJECT;
    b.lane_key.token = 2;
    JetScheduleInput in;
    memset(&in, 0x5a, sizeof in);
    jet_schedule_input_from_binding(&b, &in);
    g_assert_true(in.lanes);
    g_assert_false(in.exclusive);
    JetScheduleReport r = check(&in);
    g_assert_nonnull(jet_schedule_report_find(&r, "lanes-not-exclusive"));

    b.exclusive = TRUE;
    memset(&in, 0x5a, sizeof in);
    jet_schedule_input_from_binding(&b, &in);
    g_assert_true(in.exclusive);
    r = check(&in);
    g_assert_null(jet_schedule_report_find(&r, "lanes-not-exclusive"));

    b.lane_key.kind = JET_LANE_KEY_OFF;
    b.exclusive = FALSE;
    memset(&in, 0x5a, sizeof in);
    jet_schedule_input_from_binding(&b, &in);
    g_assert_false(in.lanes);
    r = check(&in);
    g_assert_null(jet_schedule_report_find(&r, "lanes-not-exclusive"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/schedule/ladder/edges", test_ladder_edges);
    g_test_add_func("/schedule/ladder/short-under-many-attempts", test_ladder_short_under_many_attempts);
    g_test_add_func("/schedule/ladder/matches-loop", test_ladder_matches_loop);
    g_test_add_func("/schedule/ladder/no-rungs", test_no_rungs);
    g_test_add_func("/schedule/terms", test_terms);
    g_test_add_func("/schedule/crash/term", test_crash_term);
    g_test_add_func("/schedule/crash/unbounded", test_crash_unbounded);
    g_test_add_func("/schedule/crash/term-tight", test_crash_term_tight);
    g_test_add_func("/schedule/crash/term-refused", test_crash_term_refused);
    g_test_add_func("/schedule/crash/term-unlimited", test_crash_term_unlimited);
    g_test_add_func("/schedule/crash/term-limit-off", test_crash_term_limit_off);
    g_test_add_func("/schedule/crash/term-no-ledger", test_crash_term_no_ledger);
    g_test_add_func("/schedule/crash/term-boundaries", test_crash_term_boundaries);
    g_test_add_func("/schedule/crash/term-matches-rules", test_crash_term_matches_rules);
    g_test_add_func("/schedule/max-time/boundary", test_max_time_boundary);
    g_test_add_func("/schedule/stream/boundary", test_stream_max_age_boundary);
    g_test_add_func("/schedule/stream/short-ladder-case", test_stream_short_ladder_case);
    g_test_add_func("/schedule/ledger/boundary", test_ledger_max_age_boundary);
    g_test_add_func("/schedule/consumer/backoff", test_backoff);
    g_test_add_func("/schedule/consumer/max-deliver", test_max_deliver_boundary);
    g_test_add_func("/schedule/consumer/ack-pending", test_ack_pending_headroom);
    g_test_add_func("/schedule/unlimited", test_unlimited);
    g_test_add_func("/schedule/budget/bounds-attempts", test_budget_bounds_attempts);
    g_test_add_func("/schedule/budget/matches-rules", test_budget_matches_rules);
    g_test_add_func("/schedule/budget/text", test_budget_text);
    g_test_add_func("/schedule/overflow", test_overflow);
    g_test_add_func("/schedule/policy-only", test_policy_only);
    g_test_add_func("/schedule/from-binding", test_from_binding);
    g_test_add_func("/schedule/ordered/crash-attributed", test_ordered_crash_attributed);
    g_test_add_func("/schedule/ordered/crash-span", test_ordered_crash_span);
    g_test_add_func("/schedule/ordered/crash-no-ledger", test_ordered_crash_no_ledger);
    g_test_add_func("/schedule/breaker/room", test_breaker_room);
    g_test_add_func("/schedule/breaker/no-ledger", test_breaker_no_ledger);
    g_test_add_func("/schedule/breaker/text", test_breaker_text);
    g_test_add_func("/schedule/format/duration", test_format_duration);
    g_test_add_func("/schedule/format/report", test_format_report);
    g_test_add_func("/schedule/breaker/room-reach-edge", test_breaker_room_reach_edge);
    g_test_add_func("/schedule/budget/max-time-names-max-deliver", test_budget_max_time_names_max_deliver);
    g_test_add_func("/schedule/budget/line-past-guint", test_budget_line_past_guint);
    g_test_add_func("/schedule/publish/window-boundary", test_publish_window_boundary);
    g_test_add_func("/schedule/publish/window-terms", test_publish_window_terms);
    g_test_add_func("/schedule/publish/streams-missing", test_publish_streams_missing);
    g_test_add_func("/schedule/publish/window-unlimited", test_publish_window_unlimited);
    g_test_add_func("/schedule/publish/streams-many", test_publish_streams_many);
    g_test_add_func("/schedule/lanes/not-exclusive", test_lanes_not_exclusive);
    g_test_add_func("/schedule/lanes/from-binding", test_lanes_from_binding);
    return g_test_run();
}
