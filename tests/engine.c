/* The paced pull engine against a real nats-server, in process: pacing and
 * the buffer bound, the lease, the byte budget, and the lease fence. */
#include "harness.h"
#include "config.h"
#include "conn.h"
#include "consumer_setup.h"
#include "engine.h"
#include "instance.h"
#include "plugin_loader.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "rig.h"

static void count_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    g_atomic_int_inc((gint *)closure);
    natsMsg_Destroy(m);
}

/* A 5 ms handler over 5,000 messages, batch 10: no drops, stream order,
 * never more than batch held, and pulls counted on the wire by an
 * independent subscriber. */
static void test_paced_bounded(void)
{
    Rig r = { 0 };
    rig_server(&r);
    gint pulls_seen = 0;
    natsSubscription *spy = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&spy, r.nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", count_msg,
                                             &pulls_seen), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    jet_test_publish_n(r.js, "orders.new", 5000);
    gint64 t0 = g_get_monotonic_time();
    rig_engine(&r, "batch = 10\nexpires = 30s\noption.sleep = 5ms\n");

    FloorWait fw = { &r, 5000 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 120000));
    gint64 elapsed_ms = (g_get_monotonic_time() - t0) / 1000;
    rig_stop(&r);
    natsConnection_Flush(r.nc);

    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_autoptr(GArray) d = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &d);
    g_assert_cmpuint(seqs->len, ==, 5000);
    for (guint i = 0; i < seqs->len; i++) {
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, i + 1);
        g_assert_cmpuint(g_array_index(d, guint, i), ==, 1);
    }
    g_assert_cmpint(g_atomic_int_get(&r.over_bound), ==, 0);
    g_assert_cmpuint(st.max_held, <=, 10);
    g_assert_cmpuint(st.max_held, >=, 2);   /* the bound was actually reached for */
    guint idle_windows = (guint)(elapsed_ms / 30000);
    g_test_message("%" G_GUINT64_FORMAT " pulls by the engine, %d seen on the wire, %" G_GINT64_FORMAT
                   " ms, max held %" G_GUINT64_FORMAT,
                   st.pulls, g_atomic_int_get(&pulls_seen), elapsed_ms, st.max_held);
    g_assert_cmpint(g_atomic_int_get(&pulls_seen), <=, 5000 / 10 + idle_windows + 1);
    g_assert_cmpuint(st.pulls, ==, (guint64)g_atomic_int_get(&pulls_seen));
    g_assert_cmpuint(st.acked, ==, 5000);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    natsSubscription_Destroy(spy);
    rig_free(&r);
}

/* With an early re-pull threshold the buffer stays within batch + threshold. */
static void test_threshold_bounded(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 2000);
    rig_engine(&r, "batch = 10\nthreshold = 4\n");
    FloorWait fw = { &r, 2000 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, 2000);
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, i + 1);
    g_test_message("max held %" G_GUINT64_FORMAT ", pulls %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " early)",
                   st.max_held, st.pulls, st.early_pulls);
    g_assert_cmpint(g_atomic_int_get(&r.over_bound), ==, 0);
    g_assert_cmpuint(st.max_held, <=, 14);
    /* The next pull went out while the last one was still being handled. */
    g_assert_cmpuint(st.early_pulls, >, 0);
    g_assert_cmpuint(st.pulls, >=, 2000 / 10);
    rig_free(&r);
}

/* A raw pull kept waiting on the consumer by the test: it receives a
 * delivery only if the server redelivers one the engine holds. */
typedef struct {
    natsSubscription *sub;
    gint deliveries;
} RawPull;

static void raw_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    RawPull *rp = closure;
    (void)nc;
    (void)sub;
    const char *reply = natsMsg_GetReply(m);
    if (reply != NULL && g_str_has_prefix(reply, "$JS.ACK."))
        g_atomic_int_inc(&rp->deliveries);
    natsMsg_Destroy(m);
}

static void raw_pull_start(Rig *r, RawPull *rp, guint expires_s)
{
    g_assert_cmpint(natsConnection_Subscribe(&rp->sub, r->nc, "_RAW.pull", raw_on_msg, rp), ==, NATS_OK);
    g_autofree char *body = g_strdup_printf("{\"batch\":1,\"expires\":%" G_GUINT64_FORMAT "}",
                                            (guint64)expires_s * G_GUINT64_CONSTANT(1000000000));
    g_assert_cmpint(natsConnection_PublishRequestString(r->nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", "_RAW.pull",
                                                        body), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r->nc), ==, NATS_OK);
}

static void test_lease_slow_handler(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 1);
    rig_engine(&r, "batch = 1\nack_wait = 2s\noption.block_seq = 1\n");
    rig_wait_inflight(&r, 1);

    /* The handler holds message 1 for 5 s, past AckWait 2 s. */
    RawPull rp = { 0 };
    raw_pull_start(&r, &rp, 8);
    g_usleep(5 * G_USEC_PER_SEC);
    g_assert_cmpint(g_atomic_int_get(&rp.deliveries), ==, 0);
    rig_let_go(&r, 1);
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 10000));
    g_assert_cmpint(g_atomic_int_get(&rp.deliveries), ==, 0);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.lease_extensions, >=, 3);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    natsSubscription_Destroy(rp.sub);
    rig_free(&r);
}

static void test_lease_buffered(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 10);
    /* Ten messages, one second each, AckWait 2 s: the last waits 9 s in the buffer. */
    rig_engine(&r, "batch = 10\nack_wait = 2s\noption.sleep = 1s\noption.block_seq = 1\n");
    /* Message 1 in the handler means the engine's pull took the batch: only
     * then may the raw pull wait, or it would take messages first. */
    rig_wait_inflight(&r, 1);
    RawPull rp = { 0 };
    raw_pull_start(&r, &rp, 15);
    rig_let_go(&r, 1);
    FloorWait fw = { &r, 10 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    g_assert_cmpint(g_atomic_int_get(&rp.deliveries), ==, 0);
    g_autoptr(GArray) d = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &d);
    g_assert_cmpuint(seqs->len, ==, 10);
    for (guint i = 0; i < d->len; i++)
        g_assert_cmpuint(g_array_index(d, guint, i), ==, 1);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    natsSubscription_Destroy(rp.sub);
    rig_free(&r);
}

/* Past handler_timeout the lease lapses: the late RETRY is not NAK'd. */
typedef struct {
    gint first_delivery;   /* NAK advisories for delivery 1 */
    gint later;            /* for later deliveries */
} NakCount;

static void count_nak(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    NakCount *n = closure;
    (void)nc;
    (void)sub;
    g_autoptr(JsonParser) p = json_parser_new();
    if (json_parser_load_from_data(p, natsMsg_GetData(m), natsMsg_GetDataLength(m), NULL)) {
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        if (json_object_get_int_member_with_default(o, "deliveries", 0) == 1)
            g_atomic_int_inc(&n->first_delivery);
        else
            g_atomic_int_inc(&n->later);
    }
    natsMsg_Destroy(m);
}

static gboolean later_nak_seen(gpointer data)
{
    return g_atomic_int_get(&((NakCount *)data)->later) > 0;
}

/* A handler that hangs costs its worker, never the binding: reported at
 * once, the isolation gate left on its behalf (its redelivery, a suspect,
 * runs on the other worker instead of waiting for ever), what waited for the
 * hung worker released at once, the rest of the stream handled by the other
 * worker; when both hang, the engine says so once (the daemon then exits so
 * its supervisor restarts it). */
typedef struct {
    gint fired;
    guint workers;
} HungSeen;

static void on_hung(JetEngine *e, const char *binding, guint hung_workers, gpointer data)
{
    HungSeen *h = data;
    (void)e;
    g_assert_cmpstr(binding, ==, "t");
    h->workers = hung_workers;
    g_atomic_int_inc(&h->fired);
}

typedef struct {
    Rig *r;
    guint64 n;
    guint64 except;
} AllBut;

static gboolean all_but_one_handled(gpointer data)
{
    AllBut *a = data;
    g_autoptr(GArray) seqs = handled_seqs(a->r, NULL);
    g_autofree gboolean *seen = g_new0(gboolean, a->n + 1);
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        if (s <= a->n)
            seen[s] = TRUE;
    }
    for (guint64 s = 1; s <= a->n; s++)
        if (s != a->except && !seen[s])
            return FALSE;
    return TRUE;
}

static gboolean hook_fired(gpointer data)
{
    return g_atomic_int_get(&((HungSeen *)data)->fired) > 0;
}

static void test_hung_handler(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint64 n = 60;
    jet_test_publish_n(r.js, "orders.new", n);
    rig_engine(&r, "workers = 2\nbatch = 5\nack_wait = 2s\nhandler_timeout = 1s\noption.block_seq = 3\n");
    HungSeen hs = { 0 };
    jet_engine_set_hung_hook(r.eng, on_hung, &hs);
    rig_wait_inflight(&r, 3);

    /* The other worker handles everything else, including what was pulled
     * behind the hung handler. */
    AllBut ab = { &r, n, 3 };
    g_assert_true(jet_test_wait_until(all_but_one_handled, &ab, 30000));
    /* Seq 3 comes back after AckWait (its lease stopped) as a suspect, runs
     * alone on the other worker (nothing waits behind the hung one), and
     * hangs too: now every worker is hung, and the engine says so once. */
    g_assert_true(jet_test_wait_until(hook_fired, &hs, 30000));
    g_assert_cmpuint(hs.workers, ==, 2);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("hung %" G_GUINT64_FORMAT ", released behind hung %" G_GUINT64_FORMAT ", suspects %" G_GUINT64_FORMAT,
                   st.hung_handlers, st.released_behind_hung, st.suspects);
    g_assert_cmpuint(st.hung_handlers, ==, 2);
    g_assert_cmpuint(st.suspects, >=, 1);

    /* Let both go: the stale deliveries are acked, nothing is lost. */
    rig_let_go(&r, 3);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    g_assert_cmpint(g_atomic_int_get(&hs.fired), ==, 1);
    rig_free(&r);
}

/* exit_on_any_hung: the engine says so at the first hung handler. */
static void test_hung_any(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 10);
    rig_engine(&r, "workers = 2\nbatch = 1\nack_wait = 2s\nhandler_timeout = 1s\nexit_on_any_hung = true\n"
                   "option.block_seq = 2\n");
    HungSeen hs = { 0 };
    jet_engine_set_hung_hook(r.eng, on_hung, &hs);
    rig_wait_inflight(&r, 2);
    g_assert_true(jet_test_wait_until(hook_fired, &hs, 30000));
    g_assert_cmpuint(hs.workers, ==, 1);
    rig_let_go(&r, 2);
    FloorWait fw = { &r, 10 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    rig_free(&r);
}

static void test_lease_lapses(void)
{
    Rig r = { 0 };
    rig_server(&r);
    NakCount naks = { 0 };
    natsSubscription *adv = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&adv, r.nc, "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.ORDERS.c",
                                             count_nak, &naks), ==, NATS_OK);
    natsConnection_Flush(r.nc);
    jet_test_publish_n(r.js, "orders.new", 1);
    rig_engine(&r, "batch = 1\nack_wait = 2s\nhandler_timeout = 1s\noption.block_seq = 1\noption.verdict = retry\n");
    rig_wait_inflight(&r, 1);
    g_usleep(3500 * 1000);   /* past the 1 s limit, and past AckWait after the last extension */
    rig_let_go(&r, 1);
    /* The redelivery (delivery 2) is NAK'd as usual: that proves the advisory
     * subscription sees NAKs, so the silence for delivery 1 means something. */
    g_assert_true(jet_test_wait_until(later_nak_seen, &naks, 15000));
    rig_stop(&r);
    natsConnection_Flush(r.nc);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.lease_lapsed, ==, 1);
    g_assert_cmpint(g_atomic_int_get(&naks.first_delivery), ==, 0);
    g_autoptr(GArray) d = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &d);
    g_assert_cmpuint(d->len, >=, 2);
    g_assert_cmpuint(g_array_index(d, guint, 0), ==, 1);
    g_assert_cmpuint(g_array_index(d, guint, 1), ==, 2);
    natsSubscription_Destroy(adv);
    rig_free(&r);
}

/* Fast handlers on a busy consumer: acks decided while more messages wait
 * go out together.  Every message acked exactly once on the wire (a spy on
 * the ack subjects), in stream order, none redelivered. */
static void test_acks_grouped(void)
{
    Rig r = { 0 };
    rig_server(&r);
    gint acks_seen = 0;
    natsSubscription *spy = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&spy, r.nc, "$JS.ACK.ORDERS.c.>", count_msg, &acks_seen), ==,
                    NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    jet_test_publish_n(r.js, "orders.new", 3000);
    rig_engine(&r, "batch = 100\n");
    FloorWait fw = { &r, 3000 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&r);
    natsConnection_Flush(r.nc);

    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("acked %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT " of them sent in groups, %d seen on the wire",
                   st.acked, st.acks_grouped, g_atomic_int_get(&acks_seen));
    g_assert_cmpuint(st.acked, ==, 3000);
    g_assert_cmpuint(st.acks_grouped, >, 0);
    g_assert_cmpuint(st.acks_grouped, <=, 3000);
    g_assert_cmpint(g_atomic_int_get(&acks_seen), ==, 3000);
    g_autoptr(GArray) d = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &d);
    g_assert_cmpuint(seqs->len, ==, 3000);
    for (guint i = 0; i < seqs->len; i++) {
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, i + 1);
        g_assert_cmpuint(g_array_index(d, guint, i), ==, 1);
    }
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    jsConsumerInfo_Destroy(ci);
    natsSubscription_Destroy(spy);
    rig_free(&r);
}

static gboolean ack_floor_at_least(gpointer data)
{
    FloorWait *fw = data;
    jsConsumerInfo *ci = jet_test_consumer_info(fw->r->js, "ORDERS", "c");
    gboolean ok = ci->AckFloor.Stream >= fw->floor;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

/* An ack waiting for company is not held back by a slow handler after it:
 * messages 1 and 2 are handled at once while 3-10 wait, then message 3
 * stays in its handler.  1 and 2 are acked while 3 is still there (the
 * lease keeper sends what waits), and nothing is redelivered. */
static void test_acks_behind_slow_handler(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 10);
    rig_engine(&r, "batch = 10\nack_wait = 2s\noption.block_seq = 3\n");
    rig_wait_inflight(&r, 3);
    FloorWait two = { &r, 2 };
    g_assert_true(jet_test_wait_until(ack_floor_at_least, &two, 5000));
    {
        /* 3 is still in its handler (it is logged once it returns) */
        g_autoptr(GArray) before = handled_seqs(&r, NULL);
        g_assert_cmpuint(before->len, ==, 2);
    }
    rig_let_go(&r, 3);
    FloorWait all = { &r, 10 };
    g_assert_true(jet_test_wait_until(floor_reached, &all, 20000));
    rig_stop(&r);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    g_autoptr(GArray) d = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &d);
    g_assert_cmpuint(seqs->len, ==, 10);
    rig_free(&r);
}

/* A message larger than the binding's max_bytes among small ones. */
static void test_max_bytes(void)
{
    Rig r = { 0 };
    rig_server(&r);
    char big[1500];
    memset(big, 'x', sizeof big);
    for (int i = 0; i < 5; i++)
        g_assert_cmpint(js_Publish(NULL, r.js, "orders.small", "s", 1, NULL, NULL), ==, NATS_OK);
    g_assert_cmpint(js_Publish(NULL, r.js, "orders.big", big, sizeof big, NULL, NULL), ==, NATS_OK);
    for (int i = 0; i < 5; i++)
        g_assert_cmpint(js_Publish(NULL, r.js, "orders.small", "s", 1, NULL, NULL), ==, NATS_OK);
    rig_engine(&r, "batch = 4\nmax_bytes = 600\n");
    FloorWait fw = { &r, 11 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, 11);
    /* and it keeps running */
    g_assert_cmpint(js_Publish(NULL, r.js, "orders.small", "s", 1, NULL, NULL), ==, NATS_OK);
    fw.floor = 12;
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/engine/paced-bounded", test_paced_bounded);
    g_test_add_func("/engine/threshold-bounded", test_threshold_bounded);
    g_test_add_func("/engine/lease-slow-handler", test_lease_slow_handler);
    g_test_add_func("/engine/lease-buffered", test_lease_buffered);
    g_test_add_func("/engine/lease-lapses", test_lease_lapses);
    g_test_add_func("/engine/hung-handler", test_hung_handler);
    g_test_add_func("/engine/hung-any", test_hung_any);
    g_test_add_func("/engine/max-bytes", test_max_bytes);
    g_test_add_func("/engine/acks-grouped", test_acks_grouped);
    g_test_add_func("/engine/acks-behind-slow-handler", test_acks_behind_slow_handler);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
