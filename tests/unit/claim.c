/* An exclusive binding's claim, the pure half (host/core/claim.c): the key,
 * the record both ways and what it refuses, and the standby's and the
 * holder's decisions at their edges.  No server. */
#include "claim.h"

#include <string.h>

#define MS 1000   /* microseconds */

static const char RUN_A[] = "0123456789abcdef0123456789abcdef";
static const char RUN_B[] = "fedcba9876543210fedcba9876543210";

static void test_key(void)
{
    g_autofree char *k = jet_claim_key("orders_1-x");
    g_assert_cmpstr(k, ==, "claim.orders_1-x");
    g_assert_null(jet_claim_key(""));
    g_assert_null(jet_claim_key(NULL));
    g_assert_null(jet_claim_key("a.b"));
    g_assert_null(jet_claim_key("a*"));
    g_assert_null(jet_claim_key("a b"));
}

static void test_run_ids(void)
{
    char a[JET_CLAIM_RUN_LEN + 1], b[JET_CLAIM_RUN_LEN + 1];
    jet_claim_new_run(a);
    jet_claim_new_run(b);
    g_assert_cmpuint(strlen(a), ==, JET_CLAIM_RUN_LEN);
    g_assert_cmpstr(a, !=, b);
    for (const char *p = a; *p; p++)
        g_assert_true(g_ascii_isdigit(*p) || (*p >= 'a' && *p <= 'f'));
    /* What a fresh run writes, it reads back. */
    JetClaimRecord r = { .renewed_ms = 5 }, back;
    g_strlcpy(r.host, "h", sizeof r.host);
    memcpy(r.run, a, sizeof r.run);
    g_autofree char *json = jet_claim_record_encode(&r);
    g_assert_true(jet_claim_record_decode(json, strlen(json), &back));
    g_assert_cmpstr(back.run, ==, a);
}

static void test_round_trip(void)
{
    static const struct { const char *host; gint64 renewed; gboolean released; } cases[] = {
        { "h", 0, FALSE },
        { "node-1.example.com", 1700000000000, FALSE },
        { "node \"2\" \\ ü", G_MAXINT64, TRUE },
        { "x", -1, TRUE },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        JetClaimRecord r = { .renewed_ms = cases[i].renewed, .released = cases[i].released }, back;
        g_strlcpy(r.host, cases[i].host, sizeof r.host);
        g_strlcpy(r.run, RUN_A, sizeof r.run);
        g_autofree char *json = jet_claim_record_encode(&r);
        g_assert_true(jet_claim_record_decode(json, strlen(json), &back));
        g_assert_cmpstr(back.host, ==, r.host);
        g_assert_cmpstr(back.run, ==, r.run);
        g_assert_cmpint(back.renewed_ms, ==, r.renewed_ms);
        g_assert_cmpint(back.released, ==, r.released);
    }
    /* The longest host name that fits, and renewed_ms may be absent. */
    JetClaimRecord r = { 0 }, back;
    memset(r.host, 'h', sizeof r.host - 1);
    g_strlcpy(r.run, RUN_B, sizeof r.run);
    g_autofree char *json = jet_claim_record_encode(&r);
    g_assert_true(jet_claim_record_decode(json, strlen(json), &back));
    g_assert_cmpuint(strlen(back.host), ==, sizeof r.host - 1);
    const char *bare = "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\"}";
    g_assert_true(jet_claim_record_decode(bare, strlen(bare), &back));
    g_assert_cmpint(back.renewed_ms, ==, 0);
}

static void test_refused(void)
{
    static const char *const bad[] = {
        "",
        "not json",
        "[]",
        "42",
        "{}",
        "{\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\"}",
        "{\"host\":\"h\",\"state\":\"held\"}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef\"}",
        "{\"host\":\"\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\"}",
        "{\"host\":1,\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\"}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcde\",\"state\":\"held\"}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef0\",\"state\":\"held\"}",
        "{\"host\":\"h\",\"run\":\"0123456789ABCDEF0123456789abcdef\",\"state\":\"held\"}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdeg0123456789abcdef\",\"state\":\"held\"}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"gone\"}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":true}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\",\"renewed_ms\":\"1\"}",
        "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\",\"renewed_ms\":1.5}",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        JetClaimRecord r;
        memset(&r, 0x55, sizeof r);
        if (jet_claim_record_decode(bad[i], strlen(bad[i]), &r))
            g_error("accepted: %s", bad[i]);
        g_assert_cmpstr(r.host, ==, "");   /* zeroed */
        g_assert_cmpstr(r.run, ==, "");
    }
    /* A host name one byte too long for the record. */
    g_autoptr(GString) j = g_string_new("{\"host\":\"");
    for (int i = 0; i < 128; i++)
        g_string_append_c(j, 'h');
    g_string_append(j, "\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\"}");
    JetClaimRecord r;
    g_assert_false(jet_claim_record_decode(j->str, j->len, &r));
    g_assert_false(jet_claim_record_decode(NULL, 0, &r));
    /* Length is honoured: a valid prefix of a longer buffer. */
    const char *ok = "{\"host\":\"h\",\"run\":\"0123456789abcdef0123456789abcdef\",\"state\":\"held\"}garbage";
    g_assert_false(jet_claim_record_decode(ok, strlen(ok), &r));
    g_assert_true(jet_claim_record_decode(ok, strlen(ok) - strlen("garbage"), &r));
}

static JetClaimSeen live(guint64 rev)
{
    return (JetClaimSeen){ .exists = TRUE, .revision = rev, .live = TRUE, .ours = FALSE };
}

static void test_standby_absent_released_ours(void)
{
    JetClaimWatch w = { .valid = TRUE, .revision = 7, .since_us = 0 };
    JetClaimSeen none = { 0 };
    g_assert_cmpint(jet_claim_standby_decide(&w, &none, 0, 5000 * MS), ==, JET_CLAIM_CREATE);
    g_assert_false(w.valid);
    /* A released or unreadable value: taken at once, by CAS on its revision. */
    JetClaimSeen released = { .exists = TRUE, .revision = 9, .live = FALSE };
    w = (JetClaimWatch){ .valid = TRUE, .revision = 9, .since_us = 100 };
    g_assert_cmpint(jet_claim_standby_decide(&w, &released, 100, 5000 * MS), ==, JET_CLAIM_TAKE);
    g_assert_false(w.valid);
    /* Our own run: a renewal whose answer was lost. */
    JetClaimSeen ours = live(3);
    ours.ours = TRUE;
    g_assert_cmpint(jet_claim_standby_decide(&w, &ours, 0, 5000 * MS), ==, JET_CLAIM_TAKE);
}

static void test_standby_ttl_edges(void)
{
    const gint64 ttl = 2000 * MS;
    JetClaimWatch w = { 0 };
    JetClaimSeen s = live(4);
    /* First sight: never taken, even of a revision that may be old. */
    g_assert_cmpint(jet_claim_standby_decide(&w, &s, 1000 * MS, ttl), ==, JET_CLAIM_STAND_BY);
    g_assert_true(w.valid);
    g_assert_cmpuint(w.revision, ==, 4);
    g_assert_cmpint(w.since_us, ==, 1000 * MS);
    /* Just under ttl: wait; at ttl exactly: take. */
    g_assert_cmpint(jet_claim_standby_decide(&w, &s, 1000 * MS + ttl - 1, ttl), ==, JET_CLAIM_STAND_BY);
    g_assert_cmpint(w.since_us, ==, 1000 * MS);   /* the same revision does not restart the wait */
    g_assert_cmpint(jet_claim_standby_decide(&w, &s, 1000 * MS + ttl, ttl), ==, JET_CLAIM_TAKE);
    /* A renewal just before ttl restarts the wait from when it was seen. */
    w = (JetClaimWatch){ 0 };
    jet_claim_standby_decide(&w, &s, 0, ttl);
    JetClaimSeen s2 = live(5);
    g_assert_cmpint(jet_claim_standby_decide(&w, &s2, ttl - 1, ttl), ==, JET_CLAIM_STAND_BY);
    g_assert_cmpint(w.since_us, ==, ttl - 1);
    g_assert_cmpint(jet_claim_standby_decide(&w, &s2, 2 * ttl - 2, ttl), ==, JET_CLAIM_STAND_BY);
    g_assert_cmpint(jet_claim_standby_decide(&w, &s2, 2 * ttl - 1, ttl), ==, JET_CLAIM_TAKE);
    /* A lower revision (the key was deleted and made again) is a change too. */
    JetClaimSeen s1 = live(1);
    g_assert_cmpint(jet_claim_standby_decide(&w, &s1, 2 * ttl, ttl), ==, JET_CLAIM_STAND_BY);
    g_assert_cmpuint(w.revision, ==, 1);
    /* A clock before since (impossible for a monotonic clock) never takes. */
    w = (JetClaimWatch){ .valid = TRUE, .revision = 1, .since_us = 10 * ttl };
    g_assert_cmpint(jet_claim_standby_decide(&w, &s1, 0, ttl), ==, JET_CLAIM_STAND_BY);
    /* ttl 0: the second sight of the same revision takes. */
    w = (JetClaimWatch){ 0 };
    g_assert_cmpint(jet_claim_standby_decide(&w, &s1, 5, 0), ==, JET_CLAIM_STAND_BY);
    g_assert_cmpint(jet_claim_standby_decide(&w, &s1, 5, 0), ==, JET_CLAIM_TAKE);
    /* After CREATE or TAKE the watch starts again: a lost race waits anew. */
    w = (JetClaimWatch){ .valid = TRUE, .revision = 1, .since_us = 0 };
    JetClaimSeen none = { 0 };
    jet_claim_standby_decide(&w, &none, ttl, ttl);
    g_assert_cmpint(jet_claim_standby_decide(&w, &s1, ttl + 1, ttl), ==, JET_CLAIM_STAND_BY);
}

static void test_holder_edges(void)
{
    const gint64 hb = 1000 * MS, ttl = 5000 * MS;
    /* Just won: hold. */
    g_assert_cmpint(jet_claim_holder_decide(0, 0, 0, hb, ttl), ==, JET_CLAIM_HOLD);
    g_assert_cmpint(jet_claim_holder_decide(0, 0, hb - 1, hb, ttl), ==, JET_CLAIM_HOLD);
    g_assert_cmpint(jet_claim_holder_decide(0, 0, hb, hb, ttl), ==, JET_CLAIM_RENEW);
    /* Failing renewals: retried every heartbeat, until ttl - heartbeat. */
    g_assert_cmpint(jet_claim_holder_decide(0, 3 * hb, 3 * hb + 1, hb, ttl), ==, JET_CLAIM_HOLD);
    g_assert_cmpint(jet_claim_holder_decide(0, 3 * hb, 4 * hb - 1, hb, ttl), ==, JET_CLAIM_HOLD);
    g_assert_cmpint(jet_claim_holder_decide(0, 3 * hb, ttl - hb - 1, hb, ttl), ==, JET_CLAIM_HOLD);
    g_assert_cmpint(jet_claim_holder_decide(0, 3 * hb, ttl - hb, hb, ttl), ==, JET_CLAIM_EXPIRED);
    /* Expiry wins over a due renewal. */
    g_assert_cmpint(jet_claim_holder_decide(0, 0, ttl, hb, ttl), ==, JET_CLAIM_EXPIRED);
    /* A successful renewal moves the fence. */
    g_assert_cmpint(jet_claim_holder_decide(4 * hb, 4 * hb, ttl, hb, ttl), ==, JET_CLAIM_RENEW);
    /* Heartbeat at half of ttl (the largest config allows): one retry fits. */
    g_assert_cmpint(jet_claim_holder_decide(0, 0, 1000 * MS, 1000 * MS, 2000 * MS), ==, JET_CLAIM_EXPIRED);
    g_assert_cmpint(jet_claim_holder_decide(0, 0, 999 * MS, 1000 * MS, 2000 * MS), ==, JET_CLAIM_HOLD);
    /* ttl not above heartbeat: expired at once (config refuses it anyway). */
    g_assert_cmpint(jet_claim_holder_decide(0, 0, 0, hb, hb), ==, JET_CLAIM_EXPIRED);
    /* The workers' fence is the same bound, so no handler starts where the
     * claim thread would stop the binding. */
    g_assert_cmpint(jet_claim_fence_us(0, hb, ttl), ==, ttl - hb);
    g_assert_cmpint(jet_claim_fence_us(7 * hb, hb, ttl), ==, 7 * hb + ttl - hb);
    g_assert_cmpint(jet_claim_fence_us(5, hb, hb), ==, 5);
    for (gint64 now = 0; now < 2 * ttl; now += hb / 4)
        g_assert_cmpint(jet_claim_holder_decide(0, now, now, hb, ttl) == JET_CLAIM_EXPIRED, ==,
                        now >= jet_claim_fence_us(0, hb, ttl));
    /* A clock before the marks (impossible): stop rather than guess. */
    g_assert_cmpint(jet_claim_holder_decide(10, 10, 9, hb, ttl), ==, JET_CLAIM_EXPIRED);
    g_assert_cmpint(jet_claim_holder_decide(0, 10, 9, hb, ttl), ==, JET_CLAIM_RENEW);
}

/* The fence holds for every interleaving on a grid: the holder stops no
 * later than a standby that saw its last write may take. */
static void test_holder_stops_before_standby_takes(void)
{
    const gint64 hb = 400 * MS, ttl = 1000 * MS;
    for (gint64 sent = 0; sent <= 300 * MS; sent += 50 * MS) {
        for (gint64 seen = sent; seen <= sent + 500 * MS; seen += 50 * MS) {
            /* The earliest instant the standby takes. */
            JetClaimWatch w = { 0 };
            JetClaimSeen s = live(2);
            jet_claim_standby_decide(&w, &s, seen, ttl);
            gint64 take = seen;
            while (jet_claim_standby_decide(&w, &s, take, ttl) != JET_CLAIM_TAKE)
                take += MS;
            /* The holder, with no renewal getting through after sent. */
            gint64 stop = sent;
            while (jet_claim_holder_decide(sent, stop, stop, hb, ttl) != JET_CLAIM_EXPIRED)
                stop += MS;
            g_assert_cmpint(stop + hb, <=, take);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/claim/key", test_key);
    g_test_add_func("/claim/run-ids", test_run_ids);
    g_test_add_func("/claim/round-trip", test_round_trip);
    g_test_add_func("/claim/refused", test_refused);
    g_test_add_func("/claim/standby/absent-released-ours", test_standby_absent_released_ours);
    g_test_add_func("/claim/standby/ttl-edges", test_standby_ttl_edges);
    g_test_add_func("/claim/holder/edges", test_holder_edges);
    g_test_add_func("/claim/holder/stops-before-standby-takes", test_holder_stops_before_standby_takes);
    return g_test_run();
}
