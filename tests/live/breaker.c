/* The floor monitor and the breaker through the engine, against a real
 * nats-server (docs/floor-monitor.md):
 *
 * - a blocker that fails for ever while later messages succeed: the floor
 *   is reported stalled at the right sequence (log line and gauges) and the
 *   blocker is claimed once per stall window; observe counts it only,
 *   enforce captures it with cause breaker and the floor moves;
 * - two hosts on the consumer: one claim for the window, not two;
 * - five postponed messages on a MaxAckPending 5 consumer: saturation.
 *
 * floor_age is 2 s, the ladder one 300 ms rung with unlimited attempts (room
 * for the breaker), min_deliveries 2, AckWait 2 s. */
#include "rig.h"
#include "consumer_pause.h"
#include "ledger.h"

#include <glib/gstdio.h>
#include <string.h>

#define HB "idle_heartbeat = 500ms\nexpires = 2s\n"
#define BUCKET "jethost_ledger"
/* Everything but the batch, which one test sets itself (a key written
 * twice in one file is an error). */
#define BREAKER_KEYS_NO_BATCH "ack_wait = 2s\n" HB "floor_age = 2s\nmin_deliveries = 2\n" \
                              "max_attempts = 0\nrungs = 300ms\noption.fail_seq = 6\n"
#define BREAKER_KEYS "batch = 5\n" BREAKER_KEYS_NO_BATCH

static void floor_stats(Rig *r, JetFloorStats *fs)
{
    jet_engine_floor_stats(r->eng, fs);
}

static gboolean claimed(gpointer data)
{
    JetFloorStats fs;
    floor_stats(data, &fs);
    return fs.claims >= 1;
}

static guint64 dlq_msgs(jsCtx *js)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, "JETHOST_DLQ", NULL, NULL), ==, NATS_OK);
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

static const char *hget(natsMsg *m, const char *name)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, name, &v) != NATS_OK)
        return "";
    return v;
}

/* The breaker's claim keys in the ledger bucket, "floor.n" -> value. */
static GHashTable *claim_keys(jsCtx *js)
{
    GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    kvStore *kv = NULL;
    g_assert_cmpint(js_KeyValue(&kv, js, BUCKET), ==, NATS_OK);
    kvKeysList keys = { 0 };
    natsStatus s = kvStore_Keys(&keys, kv, NULL);
    if (s == NATS_OK) {
        for (int i = 0; i < keys.Count; i++) {
            if (!g_str_has_prefix(keys.Keys[i], "breaker.ORDERS.c."))
                continue;
            kvEntry *e = NULL;
            g_assert_cmpint(kvStore_Get(&e, kv, keys.Keys[i]), ==, NATS_OK);
            g_hash_table_insert(t, g_strdup(keys.Keys[i] + strlen("breaker.ORDERS.c.")),
                                g_strdup(kvEntry_ValueString(e)));
            kvEntry_Destroy(e);
        }
        kvKeysList_Destroy(&keys);
    } else {
        g_assert_cmpint(s, ==, NATS_NOT_FOUND);
    }
    kvStore_Destroy(kv);
    return t;
}

static guint deliveries_of(Rig *r, guint64 seq)
{
    g_autoptr(GArray) seqs = handled_seqs(r, NULL);
    guint n = 0;
    for (guint i = 0; i < seqs->len; i++)
        n += g_array_index(seqs, guint64, i) == seq;
    return n;
}

/* Five messages acked (the floor at 5), then a blocker at 6 that fails for
 * ever and 7..15 that succeed. */
static void publish_blocked(Rig *r)
{
    jet_test_publish_n(r->js, "orders.new", 5);
    FloorWait fw = { r, 5 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 20000));
    jet_test_publish_n(r->js, "orders.new", 10);
}


typedef struct {
    Rig *r;
    gint64 stall_age_ns;
} StallWait;

static gboolean stall_reached(gpointer data)
{
    StallWait *w = data;
    JetFloorStats fs;
    floor_stats(w->r, &fs);
    return fs.stall_age_ns >= w->stall_age_ns;
}

static gboolean handled_all(gpointer data)
{
    Rig *r = data;
    for (guint64 seq = 7; seq <= 15; seq++)
        if (deliveries_of(r, seq) == 0)
            return FALSE;
    return TRUE;
}

static void test_observe(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_stderr_begin("observe.log");
    rig_engine(&r, BREAKER_KEYS "breaker = observe\n");
    publish_blocked(&r);
    gboolean got = jet_test_wait_until(claimed, &r, 30000);
    JetFloorStats at_claim;
    floor_stats(&r, &at_claim);
    guint before = deliveries_of(&r, 6);
    /* Less than floor_age more: the window stays claimed however often the
     * blocker comes back. */
    g_usleep(1200 * 1000);
    JetFloorStats fs;
    floor_stats(&r, &fs);
    guint after = deliveries_of(&r, 6);
    /* Two more stall windows: enforce would have captured the blocker at
     * the first claim, so observe must not count it again in them. */
    StallWait sw = { &r, at_claim.stall_age_ns + 4500 * G_GINT64_CONSTANT(1000000) };   /* floor_age 2 s */
    gboolean windows_passed = jet_test_wait_until(stall_reached, &sw, 20000);
    JetFloorStats later;
    floor_stats(&r, &later);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    /* Every later message has been handled (they succeed around the
     * blocker) before the host stops: on a loaded machine that can lag. */
    g_assert_true(jet_test_wait_until(handled_all, &r, 20000));
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();

    g_test_message("claim %s; floor %" G_GUINT64_FORMAT ", stalled %d, stalls %" G_GUINT64_FORMAT
                   ", claims %" G_GUINT64_FORMAT ", would quarantine %" G_GUINT64_FORMAT
                   ", quarantined %" G_GUINT64_FORMAT "; blocker delivered %u times after the claim",
                   got ? "made" : "NOT made", fs.floor, fs.stalled, fs.stalls, fs.claims, fs.would_quarantine,
                   fs.quarantined, after - before);
    g_assert_true(got);
    g_assert_cmpuint(fs.floor, ==, 5);
    g_assert_true(fs.stalled);
    g_assert_cmpuint(fs.stalls, ==, 1);
    g_assert_cmpuint(fs.claims, ==, 1);
    g_assert_cmpuint(fs.claims_lost, ==, 0);   /* it knew its window was used: no second try */
    g_assert_cmpuint(fs.would_quarantine, ==, 1);
    g_assert_cmpuint(fs.quarantined, ==, 0);
    g_assert_cmpuint(after - before, >=, 2);   /* considered again, not claimed again */
    g_test_message("after two more windows: claims %" G_GUINT64_FORMAT ", would quarantine %" G_GUINT64_FORMAT
                   ", counted again %" G_GUINT64_FORMAT, later.claims, later.would_quarantine, later.counted_again);
    g_assert_true(windows_passed);
    g_assert_cmpuint(later.claims, ==, 1);
    g_assert_cmpuint(later.would_quarantine, ==, 1);
    g_assert_cmpuint(later.counted_again, >=, 1);
    g_assert_cmpuint(st.dead_lettered, ==, 0);

    g_assert_cmpuint(jet_test_count_lines(log, "event=floor-stalled"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=floor-stalled msg=\"ack floor 5 stalled for"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "6 (floor + 1)"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=would-quarantine"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=would-quarantine msg=\"stream seq 6 "), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=quarantine "), ==, 0);

    /* One key, window 0 of floor 5, held by seq 6; nothing captured. */
    g_autoptr(GHashTable) keys = claim_keys(r.js);
    g_assert_cmpuint(g_hash_table_size(keys), ==, 1);
    const char *v = g_hash_table_lookup(keys, "5.0");
    g_assert_nonnull(v);
    g_assert_nonnull(strstr(v, "\"seq\":6"));
    /* ...and marked counted for the other hosts of the consumer. */
    kvStore *kv = NULL;
    g_assert_cmpint(js_KeyValue(&kv, r.js, BUCKET), ==, NATS_OK);
    kvEntry *ke = NULL;
    g_assert_cmpint(kvStore_Get(&ke, kv, "breaker-counted.ORDERS.c.6"), ==, NATS_OK);
    kvEntry_Destroy(ke);
    kvStore_Destroy(kv);
    g_assert_cmpuint(dlq_msgs(r.js), ==, 0);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 5);
    jsConsumerInfo_Destroy(ci);
    /* The later messages were handled around the blocker. */
    for (guint64 seq = 7; seq <= 15; seq++)
        g_assert_cmpuint(deliveries_of(&r, seq), >=, 1);
    rig_free(&r);
}

static void test_enforce(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_stderr_begin("enforce.log");
    rig_engine(&r, BREAKER_KEYS "breaker = enforce\n");
    publish_blocked(&r);
    gboolean got = jet_test_wait_until(claimed, &r, 30000);
    /* Captured, then acked: the floor moves past the blocker, to the end. */
    FloorWait fw = { &r, 15 };
    gboolean moved = got && jet_test_wait_until(floor_reached, &fw, 10000);
    if (moved)
        rig_wait_dead_lettered(&r, 1);
    JetFloorStats fs;
    floor_stats(&r, &fs);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();

    g_test_message("claims %" G_GUINT64_FORMAT ", quarantined %" G_GUINT64_FORMAT ", would quarantine %"
                   G_GUINT64_FORMAT ", dead-lettered %" G_GUINT64_FORMAT, fs.claims, fs.quarantined,
                   fs.would_quarantine, st.dead_lettered);
    g_assert_true(got);
    g_assert_true(moved);
    g_assert_cmpuint(fs.claims, ==, 1);
    g_assert_cmpuint(fs.quarantined, ==, 1);
    g_assert_cmpuint(fs.would_quarantine, ==, 0);
    g_assert_cmpuint(st.dead_lettered, ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=floor-stalled msg=\"ack floor 5 stalled for"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=quarantine msg=\"stream seq 6 "), ==, 1);

    g_assert_cmpuint(dlq_msgs(r.js), ==, 1);
    natsMsg *m = NULL;
    g_assert_cmpint(js_GetMsg(&m, r.js, "JETHOST_DLQ", 1, NULL, NULL), ==, NATS_OK);
    g_assert_cmpstr(hget(m, "Jethost-Cause"), ==, "breaker");
    g_assert_cmpstr(hget(m, "Jethost-Origin-Seq"), ==, "6");
    natsMsg_Destroy(m);
    /* Settled: its ledger record is gone (its delete was not waited for). */
    rig_wait_record_gone(&r, "ORDERS", "c", 6);
    rig_free(&r);
}

typedef struct {
    Rig *a, *b;
} Pair;

/* Host b of a pair, on a.srv with its own fx_gate directory. */
static void rig_second(Rig *a, Rig *b, const char *keys, const char *dir)
{
    memset(b, 0, sizeof *b);
    b->srv = a->srv;
    b->dir = g_build_filename(jet_test_private_dir(), dir, NULL);
    g_assert_cmpint(g_mkdir(b->dir, 0700), ==, 0);
    rig_engine(b, keys);
}

static void rig_second_free(Rig *b)
{
    jet_engine_free(b->eng);
    jet_instance_free(b->inst);
    jet_ledger_close(b->ledger);
    jsCtx_Destroy(b->ledger_js);
    jet_conn_close(b->conn);
    jet_config_free(b->cfg);
    g_free(b->dir);
}

/* Both hosts have asked: one claimed and the other lost the window or found
 * the blocker counted, or (wrongly) both made a claim. */
static gboolean both_tried(gpointer data)
{
    Pair *p = data;
    JetFloorStats fa, fb;
    floor_stats(p->a, &fa);
    floor_stats(p->b, &fb);
    guint64 refused = fa.claims == 0 ? fa.claims_lost + fa.counted_again : fb.claims_lost + fb.counted_again;
    return (fa.claims + fb.claims >= 1 && refused >= 1) || fa.claims + fb.claims >= 2;
}

/* Two engines (two connections, two floor monitors) on one consumer, the
 * blocker delivered to either: both find the stall and try to claim the
 * window; one claim, the other finds it taken. */
static void test_two_hosts_one_claim(void)
{
    Rig a = { 0 }, b;
    rig_server(&a);
    const char *keys = BREAKER_KEYS_NO_BATCH "batch = 1\nbreaker = observe\n";
    rig_engine(&a, keys);
    rig_second(&a, &b, keys, "gate-b");
    publish_blocked(&a);
    Pair p = { &a, &b };
    gboolean tried = jet_test_wait_until(both_tried, &p, 30000);
    rig_stop(&a);
    rig_stop(&b);
    JetFloorStats fa, fb;
    floor_stats(&a, &fa);
    floor_stats(&b, &fb);
    g_test_message("host a: claims %" G_GUINT64_FORMAT " lost %" G_GUINT64_FORMAT " errors %" G_GUINT64_FORMAT
                   "; host b: claims %" G_GUINT64_FORMAT " lost %" G_GUINT64_FORMAT " errors %" G_GUINT64_FORMAT
                   "; blocker on a %u times, on b %u times",
                   fa.claims, fa.claims_lost, fa.claim_errors, fb.claims, fb.claims_lost, fb.claim_errors,
                   deliveries_of(&a, 6), deliveries_of(&b, 6));
    g_assert_true(tried);
    g_assert_cmpuint(fa.claim_errors + fb.claim_errors, ==, 0);
    /* Each claim is a window of its own: the count of claims is the count
     * of keys, and window 0 of floor 5 was claimed once, by one host. */
    g_autoptr(GHashTable) ck = claim_keys(a.js);
    g_assert_cmpuint(fa.claims + fb.claims, ==, 1);
    /* The other host lost the window, or learned first that the blocker
     * was counted (observe: counted once across hosts). */
    g_assert_cmpuint(fa.claims_lost + fb.claims_lost + fa.counted_again + fb.counted_again, >=, 1);
    g_assert_cmpuint(g_hash_table_size(ck), ==, 1);
    g_assert_nonnull(g_hash_table_lookup(ck, "5.0"));
    g_assert_cmpuint(fa.would_quarantine + fb.would_quarantine, ==, 1);

    rig_second_free(&b);
    rig_free(&a);
}

#define PAUSE_MS 5000

static gboolean either_claimed(gpointer data)
{
    Pair *p = data;
    JetFloorStats fa, fb;
    floor_stats(p->a, &fa);
    floor_stats(p->b, &fb);
    return fa.claims + fb.claims >= 1;
}

static gboolean server_paused(gpointer data)
{
    Rig *r = data;
    return jet_consumer_paused_until(r->nc, "ORDERS", "c") > 0;
}

static gboolean pulls_paused(gpointer data)
{
    JetEngineHealth h;
    jet_engine_health(((Rig *)data)->eng, &h);
    return h.pulls_paused_ms > 0;
}

static gboolean not_paused(gpointer data)
{
    return !pulls_paused(data);
}

typedef struct {
    Rig *hosts[2];
    guint n;
    guint64 from, to;
    gboolean all;   /* every seq of from..to (else any) */
} HandledWait;

static gboolean handled_range(gpointer data)
{
    HandledWait *w = data;
    guint found = 0;
    for (guint64 seq = w->from; seq <= w->to; seq++) {
        guint n = 0;
        for (guint h = 0; h < w->n; h++)
            n += deliveries_of(w->hosts[h], seq);
        found += n > 0;
    }
    return w->all ? found == w->to - w->from + 1 : found > 0;
}

/* Enforce with breaker_pause, two hosts on the consumer: once the blocker
 * is captured, the consumer rests.  nats-server 2.11+: the server pauses
 * it, neither host gets a message published meanwhile until the pause
 * ends, and a host's start (its consumer update) keeps the pause.  Before
 * 2.11: the host that captured pulls nothing for the pause, and the other
 * goes on. */
static void test_enforce_pause(void)
{
    gboolean server = jet_test_server_version() >= 21100;
    Rig a = { 0 }, b;
    rig_server(&a);
    jet_test_stderr_begin("enforce-pause.log");
    const char *keys = BREAKER_KEYS_NO_BATCH "batch = 1\nbreaker = enforce\nbreaker_pause = 5s\n";
    rig_engine(&a, keys);
    rig_second(&a, &b, keys, "gate-pause-b");
    publish_blocked(&a);
    Pair p = { &a, &b };
    g_assert_true(jet_test_wait_until(either_claimed, &p, 30000));
    JetFloorStats fa;
    floor_stats(&a, &fa);
    Rig *claimer = fa.claims > 0 ? &a : &b, *other = claimer == &a ? &b : &a;
    gint64 t0 = g_get_monotonic_time();
    if (server)
        g_assert_true(jet_test_wait_until(server_paused, &a, 5000));
    else
        g_assert_true(jet_test_wait_until(pulls_paused, claimer, 5000));
    gint64 paused_at = jet_consumer_paused_until(a.nc, "ORDERS", "c");

    /* A host that starts now updates the consumer: the server keeps the
     * pause through an update that does not name it. */
    g_autoptr(GError) err = NULL;
    const JetBindingConfig *bc = g_ptr_array_index(a.cfg->bindings, 0);
    g_assert_true(jet_consumer_ensure(a.nc, a.js, bc, 0, NULL, &err));
    g_assert_cmpint(jet_consumer_paused_until(a.nc, "ORDERS", "c"), ==, paused_at);

    jet_test_publish_n(a.js, "orders.new", 5);   /* 16..20 */
    /* What is left of the pause, less a margin: by the server's end of it,
     * or by the pausing host's own count. */
    JetEngineHealth h;
    jet_engine_health(claimer->eng, &h);
    gint64 left_ms = (server ? (paused_at - g_get_real_time() * 1000) / 1000000 : h.pulls_paused_ms) - 800;
    g_assert_cmpint(left_ms, >, 500);
    HandledWait paused = { { claimer, other }, server ? 2 : 1, 16, 20, FALSE };
    gboolean early = jet_test_wait_until(handled_range, &paused, (guint)left_ms);
    HandledWait by_other = { { other }, 1, 16, 20, TRUE };
    gboolean other_went_on = !server && jet_test_wait_until(handled_range, &by_other, 10000);
    HandledWait all = { { &a, &b }, 2, 16, 20, TRUE };
    gboolean after = jet_test_wait_until(handled_range, &all, PAUSE_MS + 15000);
    gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
    gboolean resumed = server || jet_test_wait_until(not_paused, claimer, PAUSE_MS + 5000);
    rig_stop(&a);
    rig_stop(&b);
    g_autofree char *log = jet_test_stderr_end();
    g_test_message("server pause %s; 16..20 handled %" G_GINT64_FORMAT " ms after the pause began",
                   server ? "yes" : "no", took_ms);
    g_assert_false(early);
    g_assert_true(after);
    if (server) {
        g_assert_cmpint(paused_at, >, 0);
        g_assert_cmpint(took_ms, >=, PAUSE_MS - 1000);
        g_assert_cmpuint(jet_test_count_lines(log, "event=breaker-paused msg=\"consumer ORDERS/c paused by the "
                                                   "server until"), ==, 1);
    } else {
        g_assert_cmpint(paused_at, ==, 0);
        g_assert_true(other_went_on);
        g_assert_true(resumed);
        g_assert_cmpuint(jet_test_count_lines(log, "event=breaker-paused msg=\"this host pulls nothing on "
                                                   "ORDERS/c until"), ==, 1);
        g_assert_cmpuint(jet_test_count_lines(log, "event=breaker-resumed"), ==, 1);
    }
    rig_second_free(&b);
    rig_free(&a);
}

/* Saturation reported, and the five deliveries that fill MaxAckPending
 * settled (postponed): the server may report five pending an ack while the
 * engine is still handling them. */
static gboolean saturated_and_settled(gpointer data)
{
    Rig *r = data;
    JetFloorStats fs;
    floor_stats(r, &fs);
    JetEngineStats st;
    jet_engine_stats(r->eng, &st);
    return fs.saturation_events >= 1 && st.postponed >= 5;
}

typedef struct {
    Rig *r;
    guint64 samples;
} FloorWindow;

static gboolean samples_reached(gpointer data)
{
    FloorWindow *fw = data;
    JetFloorStats fs;
    floor_stats(fw->r, &fs);
    return fs.samples >= fw->samples;
}

/* Five messages postponed for 30 s on a MaxAckPending 5 consumer hold
 * every slot; the engine's pull waits with nothing to get. */
static void test_saturation(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_stderr_begin("saturation.log");
    rig_engine(&r, "batch = 10\nack_wait = 2s\n" HB "max_ack_pending = 5\nfloor_age = 2s\n"
                   "option.verdict = postpone\noption.postpone_delay = 30s\n");
    jet_test_publish_n(r.js, "orders.new", 8);
    gboolean seen = jet_test_wait_until(saturated_and_settled, &r, 20000);
    /* The slots stay full: the server delivers nothing more, for a whole
     * floor_age window after the postpones (the keeper samples every 1 s). */
    FloorWindow fw = { &r, 0 };
    {
        JetFloorStats fs0;
        floor_stats(&r, &fs0);
        fw.samples = fs0.samples + 3;
    }
    gboolean sampled = seen && jet_test_wait_until(samples_reached, &fw, 20000);
    JetFloorStats fs;
    floor_stats(&r, &fs);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    gint64 ack_pending = ci->NumAckPending;
    guint64 pending = ci->NumPending;
    jsConsumerInfo_Destroy(ci);
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();
    g_test_message("saturation events %" G_GUINT64_FORMAT ", saturated %d, postponed %" G_GUINT64_FORMAT
                   ", messages %" G_GUINT64_FORMAT "; ack pending %" G_GINT64_FORMAT ", pending %" G_GUINT64_FORMAT,
                   fs.saturation_events, fs.saturated, st.postponed, st.messages, ack_pending, pending);
    g_assert_true(seen);
    g_assert_true(sampled);
    g_assert_true(fs.saturated);
    g_assert_cmpuint(fs.saturation_events, ==, 1);
    g_assert_cmpuint(st.postponed, ==, 5);
    g_assert_cmpuint(st.messages, ==, 5);
    g_assert_cmpint(ack_pending, ==, 5);
    g_assert_cmpuint(pending, ==, 3);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, 5);
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, i + 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=ack-pending-saturated"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "NumAckPending 5 at MaxAckPending 5"), ==, 1);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/breaker/observe", test_observe);
    g_test_add_func("/breaker/enforce", test_enforce);
    g_test_add_func("/breaker/two-hosts-one-claim", test_two_hosts_one_claim);
    g_test_add_func("/breaker/enforce-pause", test_enforce_pause);
    g_test_add_func("/breaker/saturation", test_saturation);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
