/* The paced pull engine against a real nats-server, in process: pacing and
 * the buffer bound, the lease, the byte budget, the lease fence, the order of
 * acks and pulls on the wire, and a status the table does not know. */
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

#include "ack_subject.h"
#include "rawpub.h"
#include "rig.h"
#include "msg_payload.h"

/* nats.c may still be running a subscription's callback when
 * natsSubscription_Destroy returns: a spy whose closure lives on the test's
 * stack is drained first, so no callback outlives the test. */
static void spy_close(natsSubscription *sub)
{
    g_assert_cmpint(natsSubscription_Drain(sub), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_WaitForDrainCompletion(sub, 10000), ==, NATS_OK);
    natsSubscription_Destroy(sub);
}

static void count_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    g_atomic_int_inc((gint *)closure);
    natsMsg_Destroy(m);
}

/* A spy's count reached want: its callbacks run on nats.c's delivery
 * thread, which may still be behind a flush's PONG. */
typedef struct {
    gint *count;
    gint want;
} CountWait;

static gboolean count_reached(gpointer data)
{
    const CountWait *w = data;
    return g_atomic_int_get(w->count) >= w->want;
}

/* Counts "+NXT" acks: each carries a pull. */
static void count_nxt(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    if (natsMsg_GetDataLength(m) > 5 && memcmp(natsMsg_GetData(m), "+NXT ", 5) == 0)
        g_atomic_int_inc((gint *)closure);
    natsMsg_Destroy(m);
}

/* What crosses the wire between the engine and the server, in the order the
 * server routed it: one subscription on `$JS.>`, so acks and pull requests
 * from the engine's connection keep their relative order (one connection in,
 * one subscription out). */
typedef enum { WIRE_PULL, WIRE_ACK, WIRE_NAK, WIRE_OTHER } WireKind;

typedef struct {
    WireKind kind;
    guint batch;       /* WIRE_PULL */
    guint64 seq;       /* WIRE_ACK, WIRE_NAK: the stream seq */
    char *reply;       /* WIRE_PULL: the pull's reply subject */
    gboolean with_ack; /* WIRE_PULL: sent as "+NXT" with the ack before it */
} WireEvent;

typedef struct {
    GMutex lock;
    GArray *events;    /* of WireEvent */
    natsSubscription *sub;
} Wire;

static void wire_event_clear(gpointer data)
{
    g_free(((WireEvent *)data)->reply);
}

static guint pull_batch(const char *body, int len)
{
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, body, len, NULL))
        return 0;
    JsonNode *root = json_parser_get_root(p);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return 0;
    return (guint)json_object_get_int_member_with_default(json_node_get_object(root), "batch", 0);
}

static void wire_add(Wire *w, const WireEvent *ev)
{
    g_mutex_lock(&w->lock);
    g_array_append_val(w->events, *ev);
    g_mutex_unlock(&w->lock);
}

/* "+NXT <pull>" on an ack subject is an ack and then a pull: two events. */
static void wire_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    Wire *w = closure;
    (void)nc;
    (void)sub;
    WireEvent ev = { .kind = WIRE_OTHER };
    const char *subject = natsMsg_GetSubject(m);
    gsize blen = 0;
    const char *body = jet_msg_payload(m, &blen);
    int len = (int)blen;
    JetAckMeta meta;
    if (g_strcmp0(subject, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c") == 0) {
        ev.kind = WIRE_PULL;
        ev.batch = pull_batch(body, len);
        ev.reply = g_strdup(natsMsg_GetReply(m));
    } else if (g_str_has_prefix(subject, "$JS.ACK.ORDERS.c.") && jet_ack_subject_parse(subject, &meta)) {
        ev.seq = meta.stream_seq;
        if (len == 4 && memcmp(body, "+ACK", 4) == 0) {
            ev.kind = WIRE_ACK;
        } else if (len >= 4 && memcmp(body, "-NAK", 4) == 0) {
            ev.kind = WIRE_NAK;
        } else if (len > 5 && memcmp(body, "+NXT ", 5) == 0) {
            ev.kind = WIRE_ACK;
            wire_add(w, &ev);
            ev = (WireEvent){ .kind = WIRE_PULL, .batch = pull_batch(body + 5, len - 5),
                              .reply = g_strdup(natsMsg_GetReply(m)), .with_ack = TRUE };
        }
    }
    if (ev.kind != WIRE_OTHER)
        wire_add(w, &ev);
    natsMsg_Destroy(m);
}

static void wire_start(Wire *w, Rig *r)
{
    g_mutex_init(&w->lock);
    w->events = g_array_new(FALSE, TRUE, sizeof(WireEvent));
    g_array_set_clear_func(w->events, wire_event_clear);
    g_assert_cmpint(natsConnection_Subscribe(&w->sub, r->nc, "$JS.>", wire_on_msg, w), ==, NATS_OK);
    /* A spy on a busy engine must never drop. */
    g_assert_cmpint(natsSubscription_SetPendingLimits(w->sub, -1, -1), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r->nc), ==, NATS_OK);
}

/* Stops the spy once everything routed to it before has been recorded. */
static void wire_stop(Wire *w, Rig *r)
{
    g_assert_cmpint(natsConnection_Flush(r->nc), ==, NATS_OK);
    spy_close(w->sub);
    w->sub = NULL;
}

static void wire_free(Wire *w)
{
    g_array_unref(w->events);
    g_mutex_clear(&w->lock);
}

static guint wire_count(Wire *w, WireKind kind)
{
    g_mutex_lock(&w->lock);
    guint n = 0;
    for (guint i = 0; i < w->events->len; i++)
        n += g_array_index(w->events, WireEvent, i).kind == kind;
    g_mutex_unlock(&w->lock);
    return n;
}

typedef struct {
    Wire *w;
    WireKind kind;
    guint n;
} WireWait;

static gboolean wire_has(gpointer data)
{
    WireWait *ww = data;
    return wire_count(ww->w, ww->kind) >= ww->n;
}

/* A 5 ms handler over 5,000 messages, batch 10: no drops, stream order,
 * never more than batch held, and pulls counted on the wire by an
 * independent subscriber. */
static void test_paced_bounded(void)
{
    Rig r = { 0 };
    rig_server(&r);
    gint pulls_seen = 0, nxt_seen = 0;
    natsSubscription *spy = NULL, *nxt_spy = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&spy, r.nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", count_msg,
                                             &pulls_seen), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Subscribe(&nxt_spy, r.nc, "$JS.ACK.ORDERS.c.>", count_nxt, &nxt_seen), ==,
                    NATS_OK);
    g_assert_cmpint(natsSubscription_SetPendingLimits(nxt_spy, -1, -1), ==, NATS_OK);
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
    CountWait nxt_all = { &nxt_seen, (gint)st.pulls_with_ack };
    CountWait pulls_all = { &pulls_seen, (gint)(st.pulls - st.pulls_with_ack) };
    g_assert_true(jet_test_wait_until(count_reached, &nxt_all, 10000));
    g_assert_true(jet_test_wait_until(count_reached, &pulls_all, 10000));
    natsConnection_Flush(r.nc);
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
    /* A 5 ms handler: the last ack of each batch carries the next pull. */
    guint64 wire_pulls = (guint64)g_atomic_int_get(&pulls_seen) + (guint64)g_atomic_int_get(&nxt_seen);
    g_test_message("%" G_GUINT64_FORMAT " pulls by the engine (%" G_GUINT64_FORMAT " with an ack), %d seen on the "
                   "wire as pulls and %d as +NXT, %" G_GINT64_FORMAT " ms, max held %" G_GUINT64_FORMAT,
                   st.pulls, st.pulls_with_ack, g_atomic_int_get(&pulls_seen), g_atomic_int_get(&nxt_seen),
                   elapsed_ms, st.max_held);
    g_assert_cmpuint(wire_pulls, <=, 5000 / 10 + idle_windows + 1);
    g_assert_cmpuint(st.pulls, ==, wire_pulls);
    g_assert_cmpuint(st.pulls_with_ack, ==, (guint64)g_atomic_int_get(&nxt_seen));
    g_assert_cmpuint(st.pulls_with_ack, >=, 5000 / 10 - 1 - idle_windows);
    g_assert_cmpuint(st.acked, ==, 5000);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    spy_close(spy);
    spy_close(nxt_spy);
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
    spy_close(rp.sub);
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
    spy_close(rp.sub);
    rig_free(&r);
}

/* A drain gives back what was pulled and not handled, and writes each
 * release to the ledger first: the next host finds those deliveries
 * explained, so none of them is a crash suspect handled alone. */
static void test_drain_release_explained(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 10);
    rig_engine(&r, "batch = 10\nack_wait = 2s\noption.block_seq = 1\n");
    rig_wait_inflight(&r, 1);
    /* Stop while 1 is in the handler and 2..10 wait behind it. */
    jet_engine_stop(r.eng);
    rig_let_go(&r, 1);
    jet_engine_join(r.eng);
    JetEngineStats first;
    jet_engine_stats(r.eng, &first);
    g_test_message("first host: handled %" G_GUINT64_FORMAT ", released %" G_GUINT64_FORMAT, first.messages,
                   first.released);
    g_assert_cmpuint(first.released, >=, 1);
    rig_engine_end(&r);

    rig_engine(&r, "batch = 10\nack_wait = 2s\n");
    FloorWait fw = { &r, 10 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    /* The server moves the floor when it takes the last ack; the engine
     * counts the handling a moment later, on its worker. */
    JetEngineStats second;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    do {
        jet_engine_stats(r.eng, &second);
        if (second.messages >= 10 - first.messages)
            break;
        g_usleep(10 * 1000);
    } while (g_get_monotonic_time() < deadline);
    g_test_message("second host: handled %" G_GUINT64_FORMAT ", suspects %" G_GUINT64_FORMAT, second.messages,
                   second.suspects);
    g_assert_cmpuint(second.messages, ==, 10 - first.messages);
    g_assert_cmpuint(second.suspects, ==, 0);
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
    gsize len = 0;
    const char *body = jet_msg_payload(m, &len);
    if (json_parser_load_from_data(p, body, (gssize)len, NULL)) {
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

static gboolean lease_lapsed_seen(gpointer data)
{
    JetEngineStats st;
    jet_engine_stats(((Rig *)data)->eng, &st);
    return st.lease_lapsed >= 1;
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
    /* The keeper declares the lease lapsed once the handler passes the 1 s
     * limit; the RETRY that follows is for a delivery no longer ours. */
    g_assert_true(jet_test_wait_until(lease_lapsed_seen, &r, 10000));
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
    spy_close(adv);
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
    /* The flush's PONG comes after every ack the server forwarded, but the
     * spy's callbacks run on nats.c's delivery thread, maybe still behind
     * it: wait for them, then flush again so a duplicate would be counted. */
    CountWait all = { &acks_seen, 3000 };
    g_assert_true(jet_test_wait_until(count_reached, &all, 10000));
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
    spy_close(spy);
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

/* Every pull request's body a binding sends, on the pull subject or with
 * an ack (+NXT), in the order seen, one a line. */
typedef struct {
    GMutex lock;
    GString *bodies;
    guint mark;   /* pulls_after_all(): the lines when first asked */
} PullBodies;

static void pull_body_seen(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    PullBodies *pb = closure;
    gsize len = 0;
    const char *body = jet_msg_payload(m, &len);
    gboolean nxt = len > 5 && memcmp(body, "+NXT ", 5) == 0;
    if (nxt || g_str_has_prefix(natsMsg_GetSubject(m), "$JS.API.")) {
        g_mutex_lock(&pb->lock);
        g_string_append_len(pb->bodies, nxt ? body + 5 : body, (gssize)(nxt ? len - 5 : len));
        g_string_append_c(pb->bodies, '\n');
        g_mutex_unlock(&pb->lock);
    }
    natsMsg_Destroy(m);
}

static gboolean pulls_after_all(gpointer data)
{
    PullBodies *pb = data;
    g_mutex_lock(&pb->lock);
    guint lines = 0;
    for (const char *c = pb->bodies->str; *c != '\0'; c++)
        lines += *c == '\n';
    if (pb->mark == 0)
        pb->mark = lines;
    gboolean ok = lines > pb->mark;
    g_mutex_unlock(&pb->lock);
    return ok;
}

/* Runs a binding over three messages of size bytes (the first alone, then
 * two more), and returns its pulls' bodies, up to one after the last. */
static char *pull_bodies(const char *conf, gsize size)
{
    Rig r = { 0 };
    rig_server(&r);
    PullBodies pb = { .bodies = g_string_new(NULL) };
    g_mutex_init(&pb.lock);
    natsSubscription *s1 = NULL, *s2 = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&s1, r.nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", pull_body_seen, &pb),
                    ==, NATS_OK);
    g_assert_cmpint(natsConnection_Subscribe(&s2, r.nc, "$JS.ACK.ORDERS.c.>", pull_body_seen, &pb), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    g_autofree char *payload = g_malloc(size);
    memset(payload, 'p', size);
    g_assert_cmpint(js_Publish(NULL, r.js, "orders.a", payload, (int)size, NULL, NULL), ==, NATS_OK);
    rig_engine(&r, conf);
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    for (int i = 0; i < 2; i++)
        g_assert_cmpint(js_Publish(NULL, r.js, "orders.b", payload, (int)size, NULL, NULL), ==, NATS_OK);
    fw.floor = 3;
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    /* and a pull after them (the configs expire pulls in 1 s) */
    g_assert_true(jet_test_wait_until(pulls_after_all, &pb, 10000));
    rig_free(&r);
    natsSubscription_Destroy(s1);
    natsSubscription_Destroy(s2);
    g_mutex_clear(&pb.lock);
    g_test_message("%s(%" G_GSIZE_FORMAT " B) pulls:\n%s", conf, size, pb.bodies->str);
    return g_string_free(pb.bodies, FALSE);
}

/* Without max_bytes, once batch messages as large as the largest seen (and
 * 4 KiB for its subjects) could pass 16 MiB, shared by the binding's pulls
 * out at once, later pulls get that share as their byte budget: a pull of
 * a hundred 1 MiB messages would otherwise fill the 64 MiB the server
 * buffers for a connection and be closed as a slow consumer
 * (docs/engine.md, "A pull's byte budget").  Small messages: no change. */
static void test_pull_byte_budget(void)
{
    g_autofree char *small = pull_bodies("batch = 100\nexpires = 1s\nidle_heartbeat = 500ms\n", 128);
    g_assert_nonnull(strstr(small, "\"batch\":100,"));
    g_assert_null(strstr(small, "max_bytes"));
    g_autofree char *large = pull_bodies("batch = 100\nexpires = 1s\nidle_heartbeat = 500ms\n", 200 * 1024);
    g_assert_true(g_str_has_prefix(large, "{\"batch\":100,"));
    g_autofree char *first = g_strndup(large, strchr(large, '\n') - large);
    g_assert_null(strstr(first, "max_bytes"));   /* nothing seen yet */
    g_assert_nonnull(strstr(large, "\"max_bytes\":16777216"));
    g_autofree char *two = pull_bodies("batch = 10\nworkers = 2\nexpires = 1s\nidle_heartbeat = 500ms\n", 900 * 1024);
    g_assert_nonnull(strstr(two, "\"max_bytes\":8388608"));
    g_autofree char *lanes = pull_bodies("batch = 10\nkey = subject:2\nexpires = 1s\nidle_heartbeat = 500ms\n", 900 * 1024);
    g_assert_null(strstr(lanes, "max_bytes"));   /* one pull out: 9 MiB fit 16 */
    g_autofree char *own = pull_bodies("batch = 100\nmax_bytes = 5000\nexpires = 1s\nidle_heartbeat = 500ms\n", 128);
    g_assert_nonnull(strstr(own, "\"max_bytes\":5000"));   /* the binding's own wins */
}

/* An operator's consumer whose MaxRequestMaxBytes is below the host's
 * budget refuses the pull: the binding (two workers, both refused) drops
 * its budget at once, says so once, and every message is handled. */
static void test_pull_budget_refused(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "c";
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = 30000 * G_GINT64_CONSTANT(1000000);
    cc.MaxRequestMaxBytes = 1024 * 1024;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_AddConsumer(&ci, r.js, "ORDERS", &cc, NULL, &jerr);
    if (st != NATS_OK)
        g_error("add consumer: %s (err %d)", natsStatus_GetText(st), (int)jerr);
    jsConsumerInfo_Destroy(ci);
    gsize size = 200 * 1024;
    g_autofree char *payload = g_malloc(size);
    memset(payload, 'p', size);
    g_assert_cmpint(js_Publish(NULL, r.js, "orders.a", payload, (int)size, NULL, NULL), ==, NATS_OK);
    jet_test_stderr_begin("budget-refused.log");
    rig_engine(&r, "manage = bind\nworkers = 2\nbatch = 100\nexpires = 1s\nidle_heartbeat = 500ms\n");
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    /* The first pull expires (1 s); the next carries the budget. */
    g_autofree char *path = g_build_filename(jet_test_private_dir(), "budget-refused.log", NULL);
    gboolean refused = jet_test_wait_log(path, "event=pull-budget-refused", 10000);
    for (int i = 0; i < 3; i++)
        g_assert_cmpint(js_Publish(NULL, r.js, "orders.b", payload, (int)size, NULL, NULL), ==, NATS_OK);
    fw.floor = 4;
    gboolean done = jet_test_wait_until(floor_reached, &fw, 30000);
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();
    g_test_message("%s", log);
    g_assert_true(refused);
    g_assert_true(done);
    g_assert_cmpuint(jet_test_count_lines(log, "event=pull-budget-refused"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "the server refused the pull"), ==, 0);
    rig_free(&r);
}

/* Statuses newer servers send to a pull with a batch and max_bytes: a
 * batch filled with bytes to spare ends with "409 Batch Completed"
 * (2.10+), after its last message.  The engine has counted the pull over
 * by then, so the status answers a pull already over: counted as stale,
 * never ending the next pull, no warning, every message handled (the
 * table's row, unit-tested, is for a status that comes first).  A spy on
 * the inbox subjects counts what the server sent, so the test says which
 * server did what. */
typedef struct {
    gint completed;   /* atomic */
    gint statuses;    /* atomic */
} StatusSpy;

static void status_seen(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    StatusSpy *spy = closure;
    const char *status = NULL, *desc = NULL;
    if (natsMsg_GetReply(m) == NULL && natsMsgHeader_Get(m, "Status", &status) == NATS_OK) {
        g_atomic_int_inc(&spy->statuses);
        if (natsMsgHeader_Get(m, "Description", &desc) == NATS_OK && desc != NULL &&
            g_ascii_strcasecmp(desc, "Batch Completed") == 0)
            g_atomic_int_inc(&spy->completed);
    }
    natsMsg_Destroy(m);
}

static void test_batch_completed(void)
{
    Rig r = { 0 };
    rig_server(&r);
    guint version = jet_test_server_version();
    const guint n = 40;
    jet_test_publish_n(r.js, "orders.new", n);
    StatusSpy spy = { 0 };
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&sub, r.nc, "_INBOX.>", status_seen, &spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    jet_test_stderr_begin("batch-completed.log");
    rig_engine(&r, "batch = 4\nmax_bytes = 100000\n");
    FloorWait fw = { &r, n };
    gboolean done = jet_test_wait_until(floor_reached, &fw, 30000);
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    g_assert_true(done);
    gint completed = g_atomic_int_get(&spy.completed);
    g_test_message("nats-server %u: %d statuses, %d of them 409 Batch Completed", version,
                   g_atomic_int_get(&spy.statuses), completed);
    if (version >= 21000)
        g_assert_cmpint(completed, >=, 1);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.stale_statuses, >=, (guint64)completed);
    g_assert_null(strstr(log, "a status not in the table"));
    g_assert_cmpuint(jet_test_count_lines(log, "event=pull-ended"), ==, 0);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, n);
    rig_free(&r);
}

/* Acks that wait for company go out before the next pull: every message
 * handled when a pull is sent has its ack on the wire ahead of that pull.
 * With an early re-pull (threshold 4, fast handlers, a backlog), pull k+1
 * goes out when the messages of pull k not yet taken fall to 4: right then
 * the engine has handled (sum of the sizes of pulls 1..k) - 4 messages, and
 * exactly that many acks precede the pull on the wire (docs/engine.md,
 * "Pacing" and "Acks sent together"). */
static void test_acks_before_pull(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 2000, batch = 10, threshold = 4;
    jet_test_publish_n(r.js, "orders.new", n);
    Wire w = { 0 };
    wire_start(&w, &r);
    rig_engine(&r, "batch = 10\nthreshold = 4\nexpires = 30s\n");
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&r);
    wire_stop(&w, &r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);

    guint acks = 0, pulls = 0, checked = 0;
    guint64 served = 0;   /* the sizes of the pulls before this one */
    for (guint i = 0; i < w.events->len; i++) {
        const WireEvent *ev = &g_array_index(w.events, WireEvent, i);
        if (ev->kind == WIRE_ACK)
            acks++;
        if (ev->kind != WIRE_PULL)
            continue;
        pulls++;
        g_assert_cmpuint(ev->batch, <=, batch);
        g_assert_cmpuint(ev->batch, >=, batch - threshold);
        if (pulls > 1 && served <= n) {
            /* The earlier pulls were served in full from the backlog. */
            if (acks != served - threshold)
                g_error("pull %u went out after %u acks; expected %" G_GUINT64_FORMAT
                        " (every message handled by then, acked first)", pulls, acks, served - threshold);
            checked++;
        }
        served += ev->batch;
    }
    g_test_message("%u pulls (%" G_GUINT64_FORMAT " early), %u checked, %u acks, %" G_GUINT64_FORMAT " grouped",
                   pulls, st.early_pulls, checked, acks, st.acks_grouped);
    g_assert_cmpuint(acks, ==, n);
    g_assert_cmpuint(checked, >=, n / batch - 1);
    /* Acks did wait for company: the test saw what it is about. */
    g_assert_cmpuint(st.acks_grouped, >, 0);
    wire_free(&w);
    rig_free(&r);
}

/* Strict pacing at batch 1 with a fast handler: the ack of each message
 * and the pull the loop owes next go out as one "+NXT" (ack first, then
 * the pull), and the server serves those pulls: every message acked once,
 * in order, none redelivered, every pull on the wire counted. */
static void test_ack_with_next_pull(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 500;
    jet_test_publish_n(r.js, "orders.new", n);
    Wire w = { 0 };
    wire_start(&w, &r);
    rig_engine(&r, "batch = 1\nexpires = 30s\n");
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&r);
    wire_stop(&w, &r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);

    guint acks = 0, pulls = 0, with_ack = 0;
    for (guint i = 0; i < w.events->len; i++) {
        const WireEvent *ev = &g_array_index(w.events, WireEvent, i);
        if (ev->kind == WIRE_ACK) {
            g_assert_cmpuint(ev->seq, ==, acks + 1);
            acks++;
        } else if (ev->kind == WIRE_PULL) {
            pulls++;
            g_assert_cmpuint(ev->batch, ==, 1);
            if (ev->with_ack) {
                with_ack++;
                /* the ack it carries came first, and it owed nothing more */
                g_assert_cmpuint(i, >, 0);
                g_assert_cmpint(g_array_index(w.events, WireEvent, i - 1).kind, ==, WIRE_ACK);
                g_assert_cmpuint(g_array_index(w.events, WireEvent, i - 1).seq, ==, acks);
            }
        }
    }
    g_test_message("%u acks, %u pulls (%u with an ack; engine: %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ")",
                   acks, pulls, with_ack, st.pulls, st.pulls_with_ack);
    g_assert_cmpuint(acks, ==, n);
    g_assert_cmpuint(st.pulls, ==, pulls);
    g_assert_cmpuint(st.pulls_with_ack, ==, with_ack);
    g_assert_cmpuint(with_ack, >=, n - 1);
    g_autoptr(GArray) d = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &d);
    g_assert_cmpuint(seqs->len, ==, n);
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(d, guint, i), ==, 1);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    wire_free(&w);
    rig_free(&r);
}

/* When and how big the early re-pull is: batch 10, threshold 4, and only 8
 * messages, so the first pull is left owing 2.  A 20 ms handler lets all 8
 * arrive before the sixth is done.  After 6 are handled, 4 are not taken
 * (2 buffered, 2 still owed by the server): the second pull goes out then,
 * after exactly the 6 acks, for 10 - 2 = 8 messages, not for a batch. */
static void test_early_pull_when_and_size(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 8);
    Wire w = { 0 };
    wire_start(&w, &r);
    rig_engine(&r, "batch = 10\nthreshold = 4\nexpires = 30s\noption.sleep = 20ms\n");
    FloorWait fw = { &r, 8 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 20000));
    /* Both pulls wait on the server now (the first owes 2, the second 8):
     * no third one may go out. */
    rig_stop(&r);
    wire_stop(&w, &r);

    GString *trace = g_string_new(NULL);
    guint acks = 0, pulls = 0;
    guint at[2] = { 0, 0 }, size[2] = { 0, 0 };
    for (guint i = 0; i < w.events->len; i++) {
        const WireEvent *ev = &g_array_index(w.events, WireEvent, i);
        if (ev->kind == WIRE_ACK) {
            g_string_append_printf(trace, " ack%" G_GUINT64_FORMAT, ev->seq);
            g_assert_cmpuint(ev->seq, ==, acks + 1);   /* in stream order */
            acks++;
        } else if (ev->kind == WIRE_PULL) {
            g_string_append_printf(trace, " pull(%u)", ev->batch);
            if (pulls < 2) {
                at[pulls] = acks;
                size[pulls] = ev->batch;
            }
            pulls++;
        }
    }
    g_test_message("on the wire:%s", trace->str);
    g_string_free(trace, TRUE);
    g_assert_cmpuint(acks, ==, 8);
    g_assert_cmpuint(pulls, ==, 2);
    g_assert_cmpuint(at[0], ==, 0);
    g_assert_cmpuint(size[0], ==, 10);
    g_assert_cmpuint(at[1], ==, 6);
    g_assert_cmpuint(size[1], ==, 8);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.early_pulls, ==, 1);
    wire_free(&w);
    rig_free(&r);
}

typedef struct {
    Rig *r;
    guint64 n;
} StatusWait;

static gboolean statuses_at_least(gpointer data)
{
    StatusWait *sw = data;
    JetEngineStats st;
    jet_engine_stats(sw->r->eng, &st);
    return st.statuses >= sw->n;
}

/* The engine counts a pull after it is on the wire: a test that saw it
 * there waits for the count too. */
static gboolean pulls_at_least(gpointer data)
{
    StatusWait *sw = data;
    JetEngineStats st;
    jet_engine_stats(sw->r->eng, &st);
    return st.pulls >= sw->n;
}

/* Sends a status block, raw, to the reply subject of the first pull seen on
 * the wire, as a server would answer it; returns when it was sent. */
static gint64 answer_first_pull(Rig *r, Wire *w, const char *block)
{
    g_mutex_lock(&w->lock);
    g_autofree char *reply = g_strdup(g_array_index(w->events, WireEvent, 0).reply);
    g_mutex_unlock(&w->lock);
    g_assert_nonnull(reply);
    g_autoptr(GError) err = NULL;
    g_autoptr(JetRawPub) raw = jet_rawpub_connect(jet_test_server_port(r->srv), &err);
    g_assert_no_error(err);
    gint64 t0 = g_get_monotonic_time();
    g_assert_true(jet_rawpub_hpub(raw, reply, block, strlen(block), NULL, 0, &err));
    g_assert_no_error(err);
    g_assert_true(jet_rawpub_flush(raw, &err));
    g_assert_no_error(err);
    return t0;
}

/* A status the table does not know (a newer server's) ends the pull: the
 * next pull goes out after the guard, not when the first one expires (30 s
 * here).  Real idle heartbeats, read the same way, end nothing. */
static void test_unknown_status(void)
{
    Rig r = { 0 };
    rig_server(&r);
    Wire w = { 0 };
    wire_start(&w, &r);
    rig_engine(&r, "batch = 1\nidle_heartbeat = 500ms\nexpires = 30s\n");
    WireWait one = { &w, WIRE_PULL, 1 };
    g_assert_true(jet_test_wait_until(wire_has, &one, 10000));
    StatusWait beats = { &r, 2 };
    g_assert_true(jet_test_wait_until(statuses_at_least, &beats, 10000));
    JetEngineStats st0;
    jet_engine_stats(r.eng, &st0);
    g_assert_cmpuint(st0.pulls, ==, 1);
    g_assert_cmpuint(st0.stale_statuses, ==, 0);
    g_assert_cmpuint(wire_count(&w, WIRE_PULL), ==, 1);

    gint64 t0 = answer_first_pull(&r, &w, "NATS/1.0 418 Whatever\r\n\r\n");

    /* The guard is 500 ms; the pull's own end would be 30 s away. */
    WireWait two = { &w, WIRE_PULL, 2 };
    g_assert_true(jet_test_wait_until(wire_has, &two, 5000));
    g_test_message("the next pull went out %" G_GINT64_FORMAT " ms after the unknown status",
                   (g_get_monotonic_time() - t0) / 1000);
    StatusWait counted = { &r, 2 };
    g_assert_true(jet_test_wait_until(pulls_at_least, &counted, 5000));
    JetEngineStats st1;
    jet_engine_stats(r.eng, &st1);
    g_assert_cmpuint(st1.not_jetstream, ==, 0);
    rig_stop(&r);
    wire_stop(&w, &r);
    wire_free(&w);
    rig_free(&r);
}

/* A status whose code does not parse (nats.c hands over what follows
 * "NATS/1.0 ") is still a status: code 0, which the table does not know, so
 * the pull ends at once, as for any unknown status, and the next goes out
 * only after the guard (500 ms): never as a delivery, never in a hot loop. */
static void test_unparsable_status(void)
{
    Rig r = { 0 };
    rig_server(&r);
    Wire w = { 0 };
    wire_start(&w, &r);
    rig_engine(&r, "batch = 1\nidle_heartbeat = 500ms\nexpires = 30s\n");
    WireWait one = { &w, WIRE_PULL, 1 };
    g_assert_true(jet_test_wait_until(wire_has, &one, 10000));
    StatusWait beats = { &r, 2 };
    g_assert_true(jet_test_wait_until(statuses_at_least, &beats, 10000));

    gint64 t0 = answer_first_pull(&r, &w, "NATS/1.0 4x8 Whatever\r\n\r\n");

    WireWait two = { &w, WIRE_PULL, 2 };
    g_assert_true(jet_test_wait_until(wire_has, &two, 5000));
    gint64 waited_ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("the next pull went out %" G_GINT64_FORMAT " ms after the status", waited_ms);
    g_assert_cmpint(waited_ms, >=, 500);
    JetEngineStats st1;
    jet_engine_stats(r.eng, &st1);
    g_assert_cmpuint(st1.not_jetstream, ==, 0);
    g_assert_cmpuint(st1.pulls, >=, 2);
    rig_stop(&r);
    wire_stop(&w, &r);
    wire_free(&w);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/engine/paced-bounded", test_paced_bounded);
    g_test_add_func("/engine/threshold-bounded", test_threshold_bounded);
    g_test_add_func("/engine/lease-slow-handler", test_lease_slow_handler);
    g_test_add_func("/engine/lease-buffered", test_lease_buffered);
    g_test_add_func("/engine/drain-release-explained", test_drain_release_explained);
    g_test_add_func("/engine/lease-lapses", test_lease_lapses);
    g_test_add_func("/engine/hung-handler", test_hung_handler);
    g_test_add_func("/engine/hung-any", test_hung_any);
    g_test_add_func("/engine/max-bytes", test_max_bytes);
    g_test_add_func("/engine/pull-byte-budget", test_pull_byte_budget);
    g_test_add_func("/engine/pull-budget-refused", test_pull_budget_refused);
    g_test_add_func("/engine/batch-completed", test_batch_completed);
    g_test_add_func("/engine/acks-grouped", test_acks_grouped);
    g_test_add_func("/engine/acks-behind-slow-handler", test_acks_behind_slow_handler);
    g_test_add_func("/engine/acks-before-pull", test_acks_before_pull);
    g_test_add_func("/engine/early-pull-when-and-size", test_early_pull_when_and_size);
    g_test_add_func("/engine/ack-with-next-pull", test_ack_with_next_pull);
    g_test_add_func("/engine/unknown-status", test_unknown_status);
    g_test_add_func("/engine/unparsable-status", test_unparsable_status);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
