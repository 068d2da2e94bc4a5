/* The ack-floor stall monitor and the breaker's decision, pure, with a
 * driven clock: the idle gate, late-never-early, one log line per period,
 * saturation, every breaker condition at its boundary, one claim per stall
 * window across hosts (with an in-memory stand-in for the create-only KV
 * key), and successive floor holders. */
#include "breaker_claim.h"
#include "floor_monitor.h"

#include <glib.h>
#include <string.h>

#define MS G_GINT64_CONSTANT(1000000)
#define SEC (1000 * MS)
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define FLOOR_AGE (15 * MINUTE)

/* --- a driven consumer, hosts and a create-only claim store ---------------- */

typedef struct {
    GHashTable *keys;      /* claim key -> seq (as a pointer-sized int) */
    guint creates;         /* create attempts (KV round trips) */
} Store;

static void store_init(Store *st)
{
    st->keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    st->creates = 0;
}

static void store_clear(Store *st)
{
    g_hash_table_unref(st->keys);
}

/* kvStore_Create's semantics: the first create of a key wins, every later
 * one finds it. */
static JetBreakerClaimResult store_create(Store *st, const JetBreakerWindow *w, guint64 seq)
{
    st->creates++;
    char *key = jet_breaker_claim_key("ORDERS", "billing", w);
    if (g_hash_table_contains(st->keys, key)) {
        g_free(key);
        return JET_BREAKER_ALREADY_CLAIMED;
    }
    g_hash_table_insert(st->keys, key, GSIZE_TO_POINTER((gsize)seq));
    return JET_BREAKER_CLAIMED;
}

typedef struct {
    JetFloorMonitor *m;
    JetBreakerPolicy bp;
} Host;

static void host_init(Host *h, JetBreakerMode mode)
{
    JetFloorPolicy p = { FLOOR_AGE };
    h->m = jet_floor_monitor_new(&p);
    h->bp.mode = mode;
    h->bp.floor_age_ns = FLOOR_AGE;
    h->bp.min_deliveries = 2;
}

static void host_clear(Host *h)
{
    jet_floor_monitor_free(h->m);
}

static JetFloorReport sample(Host *h, gint64 now, guint64 floor, guint64 delivered)
{
    JetFloorSample s = { 0 };
    s.now_ns = now;
    s.ack_floor = floor;
    s.delivered = delivered;
    s.num_ack_pending = (gint64)(delivered - floor);
    s.max_ack_pending = 1000;
    s.num_waiting = 1;
    JetFloorReport r;
    jet_floor_monitor_observe(h->m, &s, &r);
    return r;
}

/* Samples every 30 s from *now to until (exclusive), the consumer standing
 * still at (floor, delivered); *now ends at until. */
static void idle_until(Host *h, gint64 *now, gint64 until, guint64 floor, guint64 delivered)
{
    for (; *now < until; *now += 30 * SEC) {
        JetFloorReport r = sample(h, *now, floor, delivered);
        if (delivered <= floor) {
            g_assert_false(r.gap_open);
            g_assert_cmpint(r.stall_age_ns, ==, 0);
            g_assert_false(r.stalled);
            g_assert_false(r.log_line);
        }
    }
    *now = until;
}

/* One failed delivery at settlement: the breaker is asked, and a claimable
 * verdict is claimed in the store.  Returns the decision; *claim the claim's
 * result when one was tried. */
static JetBreakerDecision fail(Host *h, Store *st, gint64 now, guint64 seq, guint64 deliveries,
                               gint64 first_failure, JetBreakerClaimResult *claim,
                               JetBreakerWindow *window)
{
    JetBreakerCandidate c = { seq, deliveries, TRUE, first_failure, now };
    JetBreakerVerdict v = jet_breaker_consider(h->m, &h->bp, &c);
    g_test_message("seq %" G_GUINT64_FORMAT ": %s: %s", seq,
                   jet_breaker_decision_name(v.decision), v.why);
    g_assert_cmpuint(strlen(v.why), >, 0);
    if (window != NULL)
        *window = v.window;
    if (v.decision == JET_BREAKER_CLAIMABLE) {
        JetBreakerClaimResult res = store_create(st, &v.window, seq);
        jet_breaker_note_claim(h->m, &h->bp, &v.window, res, now);
        if (claim != NULL)
            *claim = res;
    }
    return v.decision;
}

/* --- the stall clock -------------------------------------------------------- */

/* The idle false positive: four idle hours, then a message that fails
 * twice stays on the ladder; sixteen more minutes with the gap genuinely
 * open trip the breaker. */
static void test_idle_then_stall(void)
{
    Host h;
    Store st;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    store_init(&st);
    gint64 now = 1000 * HOUR;

    idle_until(&h, &now, now + 4 * HOUR, 100, 100);

    /* Message 101 arrives and fails at once, then again 5 s later. */
    gint64 t = now;
    JetFloorReport r = sample(&h, t, 100, 101);
    g_assert_true(r.gap_open);
    g_assert_cmpint(r.stall_age_ns, ==, 0);
    g_assert_false(r.stalled);
    r = sample(&h, t + 5 * SEC, 100, 101);
    g_assert_cmpint(r.stall_age_ns, ==, 5 * SEC);
    g_assert_false(r.stalled);
    /* The verdict is the stall gate's, not the failing-time gate's. */
    g_assert_cmpint(fail(&h, &st, t + 5 * SEC, 101, 2, t, NULL, NULL), ==,
                    JET_BREAKER_NOT_STALLED);
    g_assert_cmpuint(st.creates, ==, 0);

    /* Sixteen more minutes with 101 failing and the gap open. */
    now = t + 5 * SEC;
    guint64 deliveries = 2;
    gboolean logged = FALSE;
    for (gint64 until = t + 16 * MINUTE; now < until; now += 30 * SEC) {
        r = sample(&h, now, 100, 101);
        logged |= r.log_line;
        if (r.stall_age_ns < FLOOR_AGE)
            g_assert_false(r.stalled);
    }
    g_assert_true(logged);
    now = t + 16 * MINUTE;
    r = sample(&h, now, 100, 101);
    g_assert_true(r.stalled);
    g_assert_cmpint(r.stall_age_ns, ==, 16 * MINUTE);
    g_assert_cmpuint(r.floor, ==, 100);
    g_assert_cmpuint(r.next_seq, ==, 101);

    JetBreakerClaimResult res = JET_BREAKER_CLAIM_ERROR;
    JetBreakerWindow w;
    g_assert_cmpint(fail(&h, &st, now, 101, ++deliveries, t, &res, &w), ==,
                    JET_BREAKER_CLAIMABLE);
    g_assert_cmpint(res, ==, JET_BREAKER_CLAIMED);
    g_assert_cmpuint(w.floor, ==, 100);
    g_assert_cmpuint(w.n, ==, 0);

    JetFloorStats stats;
    jet_floor_monitor_stats(h.m, &stats);
    g_assert_cmpuint(stats.stalls, ==, 1);
    g_assert_cmpuint(stats.claims, ==, 1);
    g_assert_cmpuint(stats.would_quarantine, ==, 1);
    g_assert_cmpuint(stats.quarantined, ==, 0);
    g_assert_true(stats.stalled);
    g_assert_cmpint(stats.stall_age_ns, ==, 16 * MINUTE);
    store_clear(&st);
    host_clear(&h);
}

/* An idle consumer is never stalled; a consumer that catches up stops the
 * clock, and the next gap starts it from zero. */
static void test_idle_consumer(void)
{
    Host h;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    gint64 now = 0;
    idle_until(&h, &now, 24 * HOUR, 7, 7);

    /* A gap for 10 minutes, then caught up: the floor moved to delivered. */
    for (gint64 end = now + 10 * MINUTE; now < end; now += 30 * SEC)
        sample(&h, now, 7, 9);
    JetFloorReport r = sample(&h, now, 9, 9);
    g_assert_false(r.gap_open);
    g_assert_cmpint(r.stall_age_ns, ==, 0);
    idle_until(&h, &now, now + 2 * HOUR, 9, 9);

    /* The same floor with the gap closing and opening again (a delivered
     * count rolled back by a server crash): the clock restarts. */
    sample(&h, now, 9, 12);
    r = sample(&h, now + 10 * MINUTE, 9, 12);
    g_assert_cmpint(r.stall_age_ns, ==, 10 * MINUTE);
    r = sample(&h, now + 11 * MINUTE, 9, 9);
    g_assert_cmpint(r.stall_age_ns, ==, 0);
    r = sample(&h, now + 12 * MINUTE, 9, 12);
    g_assert_cmpint(r.stall_age_ns, ==, 0);
    r = sample(&h, now + 26 * MINUTE, 9, 12);
    g_assert_cmpint(r.stall_age_ns, ==, 14 * MINUTE);
    g_assert_false(r.stalled);

    JetFloorStats stats;
    jet_floor_monitor_stats(h.m, &stats);
    g_assert_cmpuint(stats.stalls, ==, 0);
    host_clear(&h);
}

/* A fresh process meets a stall two hours old: it reports it late (from its
 * first reading), never early, and stalled exactly at floor_age (>=). */
static void test_fresh_monitor_late(void)
{
    Host h;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    gint64 began = 50 * HOUR, first = began + 2 * HOUR;
    JetFloorReport r = sample(&h, first, 500, 800);
    g_assert_cmpint(r.stall_age_ns, ==, 0);
    g_assert_false(r.stalled);
    for (gint64 now = first; now < first + FLOOR_AGE; now += 7 * SEC) {
        r = sample(&h, now, 500, 800);
        g_assert_cmpint(r.stall_age_ns, <=, now - began);   /* never early */
        g_assert_cmpint(r.stall_age_ns, ==, now - first);
        g_assert_false(r.stalled);
    }
    r = sample(&h, first + FLOOR_AGE - 1, 500, 800);
    g_assert_false(r.stalled);
    r = sample(&h, first + FLOOR_AGE, 500, 800);
    g_assert_true(r.stalled);
    g_assert_true(r.log_line);

    /* A clock that goes back reads age 0, not a negative or huge age. */
    r = sample(&h, first - HOUR, 500, 800);
    g_assert_cmpint(r.stall_age_ns, ==, 0);
    host_clear(&h);
}

/* One log line per stationary period: when it first becomes stalled, not on
 * later readings, not when the gap closes and reopens on the same floor;
 * again once the floor has moved and stalls anew. */
static void test_log_once(void)
{
    Host h;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    guint lines = 0;
    gint64 now = 0;
    for (; now <= 2 * HOUR; now += 10 * SEC)
        lines += sample(&h, now, 10, 20).log_line;
    g_assert_cmpuint(lines, ==, 1);
    /* Gap closed and reopened on floor 10: no second line. */
    sample(&h, now, 10, 10);
    for (gint64 end = now + HOUR; now <= end; now += 10 * SEC)
        lines += sample(&h, now, 10, 20).log_line;
    g_assert_cmpuint(lines, ==, 1);
    /* The floor moves and stalls again: a new period, a new line. */
    for (gint64 end = now + HOUR; now <= end; now += 10 * SEC)
        lines += sample(&h, now, 11, 20).log_line;
    g_assert_cmpuint(lines, ==, 2);

    JetFloorStats stats;
    jet_floor_monitor_stats(h.m, &stats);
    g_assert_cmpuint(stats.stalls, ==, 3);   /* three stall periods reached floor_age */
    host_clear(&h);
}

/* floor_age 0: the monitor reports the floor and age but never a stall. */
static void test_floor_age_zero(void)
{
    JetFloorPolicy p = { 0 };
    g_autoptr(JetFloorMonitor) m = jet_floor_monitor_new(&p);
    JetFloorSample s = { 0 };
    s.ack_floor = 1;
    s.delivered = 5;
    s.now_ns = 0;
    JetFloorReport r;
    jet_floor_monitor_observe(m, &s, &r);
    s.now_ns = 100 * HOUR;
    jet_floor_monitor_observe(m, &s, &r);
    g_assert_cmpint(r.stall_age_ns, ==, 100 * HOUR);
    g_assert_false(r.stalled);
    g_assert_false(r.log_line);
    JetBreakerPolicy bp = { JET_BREAKER_MODE_OBSERVE, 0, 2 };
    JetBreakerCandidate c = { 2, 5, TRUE, 0, 100 * HOUR };
    g_assert_cmpint(jet_breaker_consider(m, &bp, &c).decision, ==, JET_BREAKER_OFF);
}

/* --- saturation ---------------------------------------------------------------- */

static JetFloorReport sat_sample(JetFloorMonitor *m, gint64 now, gint64 ack_pending,
                                 gint64 max_ack_pending, gint64 waiting)
{
    JetFloorSample s = { 0 };
    s.now_ns = now;
    s.ack_floor = 0;
    s.delivered = 5;
    s.num_ack_pending = ack_pending;
    s.max_ack_pending = max_ack_pending;
    s.num_waiting = waiting;
    s.num_pending = 3;
    JetFloorReport r;
    jet_floor_monitor_observe(m, &s, &r);
    return r;
}

/* Five postponed messages on a MaxAckPending 5 consumer with a pull waiting:
 * saturated, logged once per period; a reading between two pulls (no pull
 * waiting) neither ends the period nor starts another. */
static void test_saturation(void)
{
    JetFloorPolicy p = { FLOOR_AGE };
    g_autoptr(JetFloorMonitor) m = jet_floor_monitor_new(&p);
    /* Full but no pull waiting: not (yet) the stall saturation shows. */
    JetFloorReport r = sat_sample(m, 0, 5, 5, 0);
    g_assert_false(r.saturated);
    guint logs = 0;
    r = sat_sample(m, 1 * SEC, 5, 5, 1);
    g_assert_true(r.saturated);
    g_assert_true(r.log_saturation);
    logs += r.log_saturation;
    for (gint64 t = 2; t < 60; t++) {
        r = sat_sample(m, t * SEC, 5, 5, t % 3 == 0 ? 0 : 1);
        g_assert_true(r.saturated);
        logs += r.log_saturation;
    }
    g_assert_cmpuint(logs, ==, 1);
    g_assert_cmpint(r.saturated_age_ns, ==, 58 * SEC);
    char line[512];
    jet_floor_report_format(&r, TRUE, line, sizeof line);
    g_test_message("%s", line);
    g_assert_nonnull(strstr(line, "NumAckPending 5 at MaxAckPending 5"));

    /* Relief, then full again with a pull waiting: a second period. */
    r = sat_sample(m, 60 * SEC, 4, 5, 1);
    g_assert_false(r.saturated);
    r = sat_sample(m, 61 * SEC, 5, 5, 1);
    g_assert_true(r.saturated);
    g_assert_true(r.log_saturation);
    g_assert_cmpint(r.saturated_age_ns, ==, 0);
    /* Unlimited MaxAckPending never saturates. */
    r = sat_sample(m, 62 * SEC, 100000, -1, 1);
    g_assert_false(r.saturated);
    r = sat_sample(m, 63 * SEC, 100000, 0, 1);
    g_assert_false(r.saturated);

    JetFloorStats stats;
    jet_floor_monitor_stats(m, &stats);
    g_assert_cmpuint(stats.saturation_events, ==, 2);
    g_assert_false(stats.saturated);
}

/* --- the breaker ------------------------------------------------------------- */

/* Each condition alone, at its boundary. */
static void test_breaker_conditions(void)
{
    Host h;
    Store st;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    store_init(&st);
    gint64 t0 = 10 * HOUR;
    sample(&h, t0, 100, 120);
    gint64 at = t0 + FLOOR_AGE;
    gint64 ff = at - FLOOR_AGE;   /* failing exactly floor_age at `at` */

    /* The floor one nanosecond short of floor_age. */
    sample(&h, at - 1, 100, 120);
    g_assert_cmpint(fail(&h, &st, at - 1, 101, 5, ff - 1, NULL, NULL), ==, JET_BREAKER_NOT_STALLED);
    sample(&h, at, 100, 120);
    /* At or below the floor. */
    g_assert_cmpint(fail(&h, &st, at, 100, 5, ff, NULL, NULL), ==, JET_BREAKER_AT_FLOOR);
    g_assert_cmpint(fail(&h, &st, at, 50, 5, ff, NULL, NULL), ==, JET_BREAKER_AT_FLOOR);
    /* No first-failure time: never claimable, however old the stall. */
    JetBreakerCandidate c = { 101, 5, FALSE, 0, at };
    g_assert_cmpint(jet_breaker_consider(h.m, &h.bp, &c).decision, ==,
                    JET_BREAKER_NO_FIRST_FAILURE);
    /* Failing one nanosecond short of floor_age. */
    g_assert_cmpint(fail(&h, &st, at, 101, 5, ff + 1, NULL, NULL), ==,
                    JET_BREAKER_FAILING_TOO_SHORT);
    /* A first failure in the future (clock skew) reads 0, not huge. */
    g_assert_cmpint(fail(&h, &st, at, 101, 5, at + HOUR, NULL, NULL), ==,
                    JET_BREAKER_FAILING_TOO_SHORT);
    /* One delivery short of min_deliveries. */
    g_assert_cmpint(fail(&h, &st, at, 101, 1, ff, NULL, NULL), ==, JET_BREAKER_FEW_DELIVERIES);
    /* Mode off. */
    h.bp.mode = JET_BREAKER_MODE_OFF;
    g_assert_cmpint(fail(&h, &st, at, 101, 5, ff, NULL, NULL), ==, JET_BREAKER_OFF);
    h.bp.mode = JET_BREAKER_MODE_OBSERVE;
    g_assert_cmpuint(st.creates, ==, 0);
    /* Every boundary met exactly: claimable.  A seq far above the floor too
     * (the gap to the floor does not matter). */
    JetBreakerClaimResult res;
    g_assert_cmpint(fail(&h, &st, at, 100100, 2, ff, &res, NULL), ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpint(res, ==, JET_BREAKER_CLAIMED);
    store_clear(&st);
    host_clear(&h);
}

/* 200 messages failing in one window: exactly one claim, none more in that
 * window (on this host or a second one), exactly one in the next. */
static void test_one_claim_per_window(void)
{
    Host a, b;
    Store st;
    host_init(&a, JET_BREAKER_MODE_OBSERVE);
    host_init(&b, JET_BREAKER_MODE_OBSERVE);
    store_init(&st);
    gint64 t0 = 3 * HOUR;
    /* Host b started 5 minutes after a: its clock under-reports. */
    for (gint64 now = t0; now <= t0 + 16 * MINUTE; now += 30 * SEC) {
        sample(&a, now, 1000, 1200);
        if (now >= t0 + 5 * MINUTE)
            sample(&b, now, 1000, 1200);
    }
    gint64 now = t0 + 16 * MINUTE;
    guint claimed = 0, lost = 0;
    for (guint64 seq = 1001; seq <= 1200; seq++) {
        JetBreakerClaimResult res = JET_BREAKER_CLAIM_ERROR;
        JetBreakerDecision d = fail(&a, &st, now, seq, 3, t0, &res, NULL);
        if (d == JET_BREAKER_CLAIMABLE)
            claimed += res == JET_BREAKER_CLAIMED;
        else
            g_assert_cmpint(d, ==, JET_BREAKER_WINDOW_USED);
    }
    g_assert_cmpuint(claimed, ==, 1);
    g_assert_cmpuint(st.creates, ==, 1);   /* the window closed locally: one KV round trip */

    /* Host b's own clock reaches floor_age at t0 + 20m; the window is taken. */
    now = t0 + 20 * MINUTE;
    sample(&a, now, 1000, 1200);
    sample(&b, now, 1000, 1200);
    for (guint64 seq = 1001; seq <= 1200; seq++) {
        JetBreakerClaimResult res = JET_BREAKER_CLAIM_ERROR;
        if (fail(&b, &st, now, seq, 3, t0, &res, NULL) == JET_BREAKER_CLAIMABLE) {
            g_assert_cmpint(res, ==, JET_BREAKER_ALREADY_CLAIMED);
            lost++;
        }
        g_assert_cmpint(fail(&a, &st, now, seq, 3, t0, NULL, NULL), ==, JET_BREAKER_WINDOW_USED);
    }
    g_assert_cmpuint(lost, ==, 1);
    g_assert_cmpuint(g_hash_table_size(st.keys), ==, 1);

    /* One nanosecond before the next window opens on a: still none. */
    now = t0 + 16 * MINUTE + FLOOR_AGE - 1;
    sample(&a, now, 1000, 1200);
    sample(&b, now, 1000, 1200);
    for (guint64 seq = 1001; seq <= 1200; seq++) {
        g_assert_cmpint(fail(&a, &st, now, seq, 4, t0, NULL, NULL), ==, JET_BREAKER_WINDOW_USED);
        g_assert_cmpint(fail(&b, &st, now, seq, 4, t0, NULL, NULL), ==, JET_BREAKER_WINDOW_USED);
    }
    g_assert_cmpuint(g_hash_table_size(st.keys), ==, 1);

    /* The next window: both hosts ask for every message; exactly one claim. */
    now = t0 + 36 * MINUTE;
    sample(&a, now, 1000, 1200);
    sample(&b, now, 1000, 1200);
    claimed = 0;
    for (guint64 seq = 1001; seq <= 1200; seq++) {
        JetBreakerClaimResult res = JET_BREAKER_CLAIM_ERROR;
        JetBreakerWindow w = { 0 };
        Host *h = seq % 2 ? &b : &a;
        if (fail(h, &st, now, seq, 5, t0, &res, &w) == JET_BREAKER_CLAIMABLE) {
            g_assert_cmpuint(w.floor, ==, 1000);
            g_assert_cmpuint(w.n, ==, 1);
            claimed += res == JET_BREAKER_CLAIMED;
        }
    }
    g_assert_cmpuint(claimed, ==, 1);
    g_assert_cmpuint(g_hash_table_size(st.keys), ==, 2);

    JetFloorStats sa, sb;
    jet_floor_monitor_stats(a.m, &sa);
    jet_floor_monitor_stats(b.m, &sb);
    g_assert_cmpuint(sa.claims + sb.claims, ==, 2);
    g_assert_cmpuint(sa.would_quarantine + sb.would_quarantine, ==, 2);
    g_assert_cmpuint(sb.claims_lost, >=, 1);
    store_clear(&st);
    host_clear(&a);
    host_clear(&b);
}

/* Three successive floor holders, cleared back to back: each new floor
 * restarts the clock and opens its own first window. */
static void test_successive_holders(void)
{
    Host h;
    Store st;
    host_init(&h, JET_BREAKER_MODE_ENFORCE);
    store_init(&st);
    gint64 t0 = 7 * HOUR, now = t0;
    guint64 floor = 100;
    for (guint i = 0; i < 3; i++) {
        guint64 holder = floor + 1;
        gint64 stall_began = now;
        /* Not before this floor's own floor_age, though every holder has
         * been failing since t0. */
        for (; now < stall_began + FLOOR_AGE; now += 30 * SEC) {
            sample(&h, now, floor, 110);
            g_assert_cmpint(fail(&h, &st, now, holder, 9, t0, NULL, NULL), ==,
                            JET_BREAKER_NOT_STALLED);
        }
        now = stall_began + FLOOR_AGE;
        sample(&h, now, floor, 110);
        JetBreakerClaimResult res = JET_BREAKER_CLAIM_ERROR;
        JetBreakerWindow w = { 0 };
        g_assert_cmpint(fail(&h, &st, now, holder, 9, t0, &res, &w), ==, JET_BREAKER_CLAIMABLE);
        g_assert_cmpint(res, ==, JET_BREAKER_CLAIMED);
        g_assert_cmpuint(w.floor, ==, floor);
        g_assert_cmpuint(w.n, ==, 0);
        /* The rest of this window: nothing more. */
        g_assert_cmpint(fail(&h, &st, now, holder + 1, 9, t0, NULL, NULL), ==,
                        JET_BREAKER_WINDOW_USED);
        /* The capture acks the holder: the floor moves at the next reading. */
        now += 2 * SEC;
        floor = holder;
        JetFloorReport r = sample(&h, now, floor, 110);
        g_assert_cmpint(r.stall_age_ns, ==, 0);
        g_assert_false(r.stalled);
    }
    g_assert_cmpuint(g_hash_table_size(st.keys), ==, 3);
    JetFloorStats stats;
    jet_floor_monitor_stats(h.m, &stats);
    g_assert_cmpuint(stats.claims, ==, 3);
    g_assert_cmpuint(stats.quarantined, ==, 3);
    g_assert_cmpuint(stats.would_quarantine, ==, 0);
    g_assert_cmpuint(stats.stalls, ==, 3);
    store_clear(&st);
    host_clear(&h);
}

/* Observe counts what enforce would do.  One message failing through three
 * stall windows: enforce captures it at the first claim, so observe counts
 * it once, and a second failing message gets the next window as it would
 * under enforce.  When the floor passes a counted message it is forgotten. */
static void test_observe_counts_once(void)
{
    Host h;
    Store st;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    store_init(&st);
    gint64 t0 = 2 * HOUR, now = t0;
    for (; now <= t0 + FLOOR_AGE; now += 30 * SEC)
        sample(&h, now, 100, 110);
    now = t0 + FLOOR_AGE;
    JetBreakerClaimResult res = JET_BREAKER_CLAIM_ERROR;
    g_assert_cmpint(fail(&h, &st, now, 101, 3, t0, &res, NULL), ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpint(res, ==, JET_BREAKER_CLAIMED);
    jet_breaker_note_counted(h.m, 101);
    /* Windows 1 and 2: 101 alone keeps failing; it is not counted again. */
    for (guint win = 1; win <= 2; win++) {
        now += FLOOR_AGE;
        sample(&h, now, 100, 110);
        g_assert_cmpint(fail(&h, &st, now, 101, 3 + win, t0, NULL, NULL), ==, JET_BREAKER_COUNTED);
    }
    JetFloorStats stats;
    jet_floor_monitor_stats(h.m, &stats);
    g_assert_cmpuint(stats.would_quarantine, ==, 1);
    g_assert_cmpuint(stats.counted_again, ==, 2);
    /* Another failing message takes the open window, as under enforce. */
    JetBreakerWindow w = { 0 };
    g_assert_cmpint(fail(&h, &st, now, 105, 5, t0, &res, &w), ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpint(res, ==, JET_BREAKER_CLAIMED);
    g_assert_cmpuint(w.n, ==, 1);
    jet_breaker_note_counted(h.m, 105);
    /* A counted message learned from another host's claim counts the same. */
    jet_breaker_note_counted(h.m, 107);
    now += FLOOR_AGE;
    sample(&h, now, 100, 110);
    g_assert_cmpint(fail(&h, &st, now, 107, 5, t0, NULL, NULL), ==, JET_BREAKER_COUNTED);
    /* The floor passes 101 and 105 (say they succeeded at last): forgotten,
     * and 107 is still counted. */
    now += SEC;
    sample(&h, now, 106, 110);
    now += FLOOR_AGE;
    sample(&h, now, 106, 110);
    g_assert_cmpint(fail(&h, &st, now, 107, 6, t0, NULL, NULL), ==, JET_BREAKER_COUNTED);
    g_assert_cmpint(fail(&h, &st, now, 108, 6, t0, &res, NULL), ==, JET_BREAKER_CLAIMABLE);
    /* Enforce never consults the set: a captured message is gone anyway. */
    Host e;
    host_init(&e, JET_BREAKER_MODE_ENFORCE);
    for (gint64 t = t0; t <= t0 + FLOOR_AGE; t += 30 * SEC)
        sample(&e, t, 100, 110);
    jet_breaker_note_counted(e.m, 101);
    g_assert_cmpint(fail(&e, &st, t0 + FLOOR_AGE, 101, 3, t0, NULL, NULL), ==, JET_BREAKER_CLAIMABLE);
    store_clear(&st);
    host_clear(&h);
    host_clear(&e);
}

/* After the floor reads lower (the consumer was recreated and delivers
 * afresh), a stall of floor_age at 95: is SEQ claimable, or counted? */
static JetBreakerDecision after_floor_drop(Host *h, gint64 *now, guint64 seq)
{
    Store st;
    store_init(&st);
    *now += SEC;
    sample(h, *now, 95, 110);
    *now += FLOOR_AGE;
    sample(h, *now, 95, 110);
    JetBreakerDecision d = fail(h, &st, *now, seq, 3, 0, NULL, NULL);
    store_clear(&st);
    return d;
}

/* The counted set holds only sequences above the floor: one at the floor
 * is never added, and one the floor reaches is acked and forgotten.  So if
 * the floor later reads lower, neither is "counted" in the new stall. */
static void test_counted_at_floor(void)
{
    Host h;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    gint64 now = 2 * HOUR;
    sample(&h, now, 100, 110);
    jet_breaker_note_counted(h.m, 100);   /* at the floor: not added */
    g_assert_cmpint(after_floor_drop(&h, &now, 100), ==, JET_BREAKER_CLAIMABLE);
    host_clear(&h);

    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    sample(&h, now, 100, 110);
    jet_breaker_note_counted(h.m, 105);
    now += SEC;
    sample(&h, now, 105, 110);            /* the floor reaches 105 */
    g_assert_cmpint(after_floor_drop(&h, &now, 105), ==, JET_BREAKER_CLAIMABLE);
    JetFloorStats stats;
    jet_floor_monitor_stats(h.m, &stats);
    g_assert_cmpuint(stats.counted_again, ==, 0);
    host_clear(&h);
}

/* A failed claim changes nothing (the next delivery tries again); a claim
 * noted for a floor that has since moved only counts. */
static void test_claim_error_and_stale(void)
{
    Host h;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    gint64 now = 0;
    sample(&h, now, 5, 9);
    now = FLOOR_AGE;
    sample(&h, now, 5, 9);
    JetBreakerCandidate c = { 6, 3, TRUE, 0, now };
    JetBreakerVerdict v = jet_breaker_consider(h.m, &h.bp, &c);
    g_assert_cmpint(v.decision, ==, JET_BREAKER_CLAIMABLE);
    jet_breaker_note_claim(h.m, &h.bp, &v.window, JET_BREAKER_CLAIM_ERROR, now);
    v = jet_breaker_consider(h.m, &h.bp, &c);
    g_assert_cmpint(v.decision, ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpuint(v.window.n, ==, 0);

    /* The floor moves before the claim's answer is noted. */
    JetBreakerWindow old = v.window;
    sample(&h, now + SEC, 6, 9);
    jet_breaker_note_claim(h.m, &h.bp, &old, JET_BREAKER_CLAIMED, now + SEC);
    now += SEC + FLOOR_AGE;
    sample(&h, now, 6, 9);
    JetBreakerCandidate c7 = { 7, 3, TRUE, 0, now };
    v = jet_breaker_consider(h.m, &h.bp, &c7);
    g_assert_cmpint(v.decision, ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpuint(v.window.floor, ==, 6);
    g_assert_cmpuint(v.window.n, ==, 0);

    JetFloorStats stats;
    jet_floor_monitor_stats(h.m, &stats);
    g_assert_cmpuint(stats.claim_errors, ==, 1);
    g_assert_cmpuint(stats.claims, ==, 1);
    host_clear(&h);
}

/* --- keys and text -------------------------------------------------------------- */

static void test_claim_key(void)
{
    JetBreakerWindow w = { G_MAXUINT64, 3 };
    g_autofree char *k1 = jet_breaker_claim_key("ORDERS", "billing-v2_x", &w);
    g_assert_cmpstr(k1, ==, "breaker.ORDERS.billing-v2_x.18446744073709551615.3");
    /* '=' and any byte outside the token set are escaped; distinct names
     * never collide. */
    JetBreakerWindow w0 = { 1, 0 };
    g_autofree char *k2 = jet_breaker_claim_key("A=2E", "c", &w0);
    g_autofree char *k3 = jet_breaker_claim_key("A.", "c", &w0);
    g_autofree char *k4 = jet_breaker_claim_key("caf\xc3\xa9", "c d", &w0);
    g_assert_cmpstr(k2, ==, "breaker.A=3D2E.c.1.0");
    g_assert_cmpstr(k3, ==, "breaker.A=2E.c.1.0");
    g_assert_cmpstr(k4, ==, "breaker.caf=C3=A9.c=20d.1.0");
}

static void test_report_format(void)
{
    Host h;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    sample(&h, 0, 41, 60);
    JetFloorSample s = { 0 };
    s.now_ns = 16 * MINUTE + 2 * SEC;
    s.ack_floor = 41;
    s.delivered = 60;
    s.num_ack_pending = 19;
    s.max_ack_pending = 1000;
    s.holds_next = TRUE;
    JetFloorReport r;
    jet_floor_monitor_observe(h.m, &s, &r);
    g_assert_true(r.log_line);
    g_assert_true(r.holds_next);
    char line[512];
    jet_floor_report_format(&r, FALSE, line, sizeof line);
    g_test_message("%s", line);
    g_assert_cmpstr(line, ==, "ack floor 41 stalled for 16m 2s: delivered up to 60, 19 ack "
                              "pending; this host holds 42 (floor + 1)");
    host_clear(&h);
}

static void test_poll_interval(void)
{
    g_assert_cmpuint(jet_floor_monitor_poll_interval_ms(15 * 60000), ==, 30000);
    g_assert_cmpuint(jet_floor_monitor_poll_interval_ms(60000), ==, 2000);
    g_assert_cmpuint(jet_floor_monitor_poll_interval_ms(1000), ==, 1000);
    g_assert_cmpuint(jet_floor_monitor_poll_interval_ms(24 * 3600000), ==, 30000);
}

/* --- the room check ------------------------------------------------------------ */

static void test_room(void)
{
    const guint64 five_min[] = { 5 * 60000 };
    JetBreakerRoom r;
    /* Ladder 5m x 3 waits = 15m before attempt 4. */
    jet_breaker_room(JET_BREAKER_MODE_OBSERVE, 15 * 60000, 2, five_min, 1, 4, &r);
    g_assert_true(r.applies);
    g_assert_cmpuint(r.reach_ms, ==, 15 * 60000);
    g_assert_cmpuint(r.first_failure_k, ==, 4);
    g_assert_false(r.never_fires);
    g_assert_true(r.only_at_exhaustion);
    jet_breaker_room(JET_BREAKER_MODE_ENFORCE, 15 * 60000 + 1, 2, five_min, 1, 4, &r);
    g_assert_cmpuint(r.first_failure_k, ==, 5);
    g_assert_true(r.never_fires);
    jet_breaker_room(JET_BREAKER_MODE_OBSERVE, 10 * 60000, 2, five_min, 1, 4, &r);
    g_assert_cmpuint(r.first_failure_k, ==, 3);
    g_assert_false(r.never_fires);
    g_assert_false(r.only_at_exhaustion);
    /* min_deliveries pushes the first claim later. */
    jet_breaker_room(JET_BREAKER_MODE_OBSERVE, 1, 5, five_min, 1, 4, &r);
    g_assert_cmpuint(r.first_failure_k, ==, 5);
    g_assert_true(r.never_fires);
    /* Listed rungs, then the last repeating: 1s, 5s, then 10s... */
    const guint64 mixed[] = { 1000, 5000, 10000 };
    jet_breaker_room(JET_BREAKER_MODE_OBSERVE, 36000, 2, mixed, 3, 100, &r);
    g_assert_cmpuint(r.first_failure_k, ==, 6);   /* W(5) = 1+5+10+10+10 = 36s */
    /* Unlimited attempts: always room. */
    jet_breaker_room(JET_BREAKER_MODE_ENFORCE, 100 * 3600000, 2, five_min, 1, 0, &r);
    g_assert_true(r.applies);
    g_assert_false(r.never_fires);
    g_assert_cmpuint(r.reach_ms, ==, G_MAXUINT64);
    /* Off, or floor_age 0: does not apply. */
    jet_breaker_room(JET_BREAKER_MODE_OFF, 15 * 60000, 2, five_min, 1, 4, &r);
    g_assert_false(r.applies);
    jet_breaker_room(JET_BREAKER_MODE_ENFORCE, 0, 2, five_min, 1, 4, &r);
    g_assert_false(r.applies);
}

/* Two workers asked the breaker at the same moment and both got window 0;
 * one claims it, the other's claim comes back taken a minute later.  The
 * window closed at the first claim: the next opens floor_age after it, not
 * after the late answer. */
static void test_window_closes_at_first_claim(void)
{
    Host h;
    Store st;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    store_init(&st);
    gint64 t0 = 2 * HOUR, now = t0;
    for (; now <= t0 + FLOOR_AGE; now += 30 * SEC)
        sample(&h, now, 100, 110);
    now = t0 + FLOOR_AGE;
    JetBreakerCandidate c1 = { 101, 3, TRUE, t0, now }, c2 = { 102, 3, TRUE, t0, now };
    JetBreakerVerdict v1 = jet_breaker_consider(h.m, &h.bp, &c1);
    JetBreakerVerdict v2 = jet_breaker_consider(h.m, &h.bp, &c2);
    g_assert_cmpint(v1.decision, ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpint(v2.decision, ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpuint(v1.window.n, ==, v2.window.n);
    g_assert_cmpint(store_create(&st, &v1.window, 101), ==, JET_BREAKER_CLAIMED);
    jet_breaker_note_claim(h.m, &h.bp, &v1.window, JET_BREAKER_CLAIMED, now);
    g_assert_cmpint(store_create(&st, &v2.window, 102), ==, JET_BREAKER_ALREADY_CLAIMED);
    jet_breaker_note_claim(h.m, &h.bp, &v2.window, JET_BREAKER_ALREADY_CLAIMED, now + MINUTE);
    /* floor_age after the first claim: the next window is open. */
    now += FLOOR_AGE;
    sample(&h, now, 100, 110);
    JetBreakerWindow w = { 0 };
    g_assert_cmpint(fail(&h, &st, now, 103, 4, t0, NULL, &w), ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpuint(w.n, ==, v1.window.n + 1);
    store_clear(&st);
    host_clear(&h);
}

/* The fewest waits that reach floor_age, when a prefix of the listed rungs
 * sums to it exactly: no further rung is needed. */
static void test_room_exact_sum(void)
{
    const guint64 rungs[] = { 5 * 60000, 10 * 60000, 30 * 60000 };
    JetBreakerRoom r;
    jet_breaker_room(JET_BREAKER_MODE_OBSERVE, 15 * 60000, 2, rungs, 3, 10, &r);
    g_assert_cmpuint(r.first_failure_k, ==, 3);   /* W(2) = 5m + 10m = 15m */
    jet_breaker_room(JET_BREAKER_MODE_OBSERVE, 15 * 60000 + 1, 2, rungs, 3, 10, &r);
    g_assert_cmpuint(r.first_failure_k, ==, 4);
}

/* A claim's answer that comes back after a later window of the same floor
 * was already closed (a slow worker) does not take the window count back. */
static void test_late_answer_for_older_window(void)
{
    Host h;
    Store st;
    host_init(&h, JET_BREAKER_MODE_OBSERVE);
    store_init(&st);
    gint64 t0 = 2 * HOUR, now = t0;
    for (; now <= t0 + FLOOR_AGE; now += 30 * SEC)
        sample(&h, now, 100, 110);
    now = t0 + FLOOR_AGE;
    JetBreakerWindow w0 = { 0 }, w = { 0 };
    g_assert_cmpint(fail(&h, &st, now, 101, 3, t0, NULL, &w0), ==, JET_BREAKER_CLAIMABLE);
    for (guint n = 1; n <= 2; n++) {
        now += FLOOR_AGE;
        sample(&h, now, 100, 110);
        g_assert_cmpint(fail(&h, &st, now, 101 + n, 3, t0, NULL, &w), ==, JET_BREAKER_CLAIMABLE);
        g_assert_cmpuint(w.n, ==, n);
    }
    jet_breaker_note_claim(h.m, &h.bp, &w0, JET_BREAKER_ALREADY_CLAIMED, now + SEC);
    now += FLOOR_AGE;
    sample(&h, now, 100, 110);
    g_assert_cmpint(fail(&h, &st, now, 104, 3, t0, NULL, &w), ==, JET_BREAKER_CLAIMABLE);
    g_assert_cmpuint(w.n, ==, 3);
    store_clear(&st);
    host_clear(&h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/floor/clock/idle-then-stall", test_idle_then_stall);
    g_test_add_func("/floor/clock/idle-consumer", test_idle_consumer);
    g_test_add_func("/floor/clock/fresh-monitor-late", test_fresh_monitor_late);
    g_test_add_func("/floor/clock/log-once", test_log_once);
    g_test_add_func("/floor/clock/floor-age-zero", test_floor_age_zero);
    g_test_add_func("/floor/saturation", test_saturation);
    g_test_add_func("/floor/breaker/conditions", test_breaker_conditions);
    g_test_add_func("/floor/breaker/one-claim-per-window", test_one_claim_per_window);
    g_test_add_func("/floor/breaker/successive-holders", test_successive_holders);
    g_test_add_func("/floor/breaker/observe-counts-once", test_observe_counts_once);
    g_test_add_func("/floor/breaker/claim-error-and-stale", test_claim_error_and_stale);
    g_test_add_func("/floor/breaker/claim-key", test_claim_key);
    g_test_add_func("/floor/report-format", test_report_format);
    g_test_add_func("/floor/poll-interval", test_poll_interval);
    g_test_add_func("/floor/room", test_room);
    g_test_add_func("/floor/breaker/counted-at-floor", test_counted_at_floor);
    g_test_add_func("/floor/breaker/window-closes-at-first-claim", test_window_closes_at_first_claim);
    g_test_add_func("/floor/room-exact-sum", test_room_exact_sum);
    g_test_add_func("/floor/breaker/late-answer-for-older-window", test_late_answer_for_older_window);
    return g_test_run();
}
