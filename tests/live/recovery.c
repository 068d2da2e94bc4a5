/* The engine recovers from what the server can say or do, without a
 * restart and without losing a message: a killed and restarted server, a
 * silent stall, a deleted consumer, a stale status, a killed host, and a
 * server that never comes up. */
#include "rig.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <string.h>

#define HB "idle_heartbeat = 500ms\nexpires = 2s\n"

/* Publishes messages 1..n at a steady rate from a thread, with Nats-Msg-Id
 * so that a publish retried across a server restart is stored once. */
typedef struct {
    const char *url;
    guint n, rate;
    GThread *thread;
} Publisher;

static gpointer publisher_main(gpointer data)
{
    Publisher *p = data;
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(p->url, &nc);
    gint64 start = g_get_monotonic_time();
    for (guint i = 1; i <= p->n; i++) {
        gint64 due = start + (gint64)i * G_USEC_PER_SEC / p->rate;
        gint64 now = g_get_monotonic_time();
        if (due > now)
            g_usleep((gulong)(due - now));
        char id[32], data_[32];
        snprintf(id, sizeof id, "m-%u", i);
        int len = snprintf(data_, sizeof data_, "msg-%u", i);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MsgId = id;
        po.MaxWait = 1000;
        for (;;) {
            if (js_Publish(NULL, js, "orders.new", data_, len, &po, NULL) == NATS_OK)
                break;
            g_usleep(50000);   /* the server is down: keep trying */
        }
    }
    jet_test_js_close(nc, js);
    return NULL;
}

static guint lines_in(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    guint n = 0;
    for (const char *c = text; *c; c++)
        n += *c == '\n';
    return n;
}

static void assert_all_handled(Rig *r, guint64 n, guint *duplicates)
{
    g_autoptr(GArray) seqs = handled_seqs(r, NULL);
    g_autofree guint *count = g_new0(guint, n + 1);
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        g_assert_cmpuint(s, >=, 1);
        g_assert_cmpuint(s, <=, n);
        count[s]++;
    }
    guint dup = 0;
    for (guint64 s = 1; s <= n; s++) {
        if (count[s] == 0)
            g_error("stream seq %" G_GUINT64_FORMAT " was never handled", s);
        dup += count[s] - 1;
    }
    *duplicates = dup;
}

typedef struct {
    const char *dir;
    guint lines;
} LinesWait;

static gboolean lines_at_least(gpointer data)
{
    LinesWait *lw = data;
    return lines_in(lw->dir) >= lw->lines;
}

/* kill -9 of the server and a restart on the same store, mid-stream. */
#define KILLED_BATCH 10
static void test_server_killed(void)
{
    Rig r = { 0 };
    rig_server(&r);
    rig_engine(&r, "batch = 10\nack_wait = 2s\n" HB);
    Publisher pub = { jet_test_server_url(r.srv), 5000, 500, NULL };
    pub.thread = g_thread_new("pub", publisher_main, &pub);

    LinesWait lw = { r.dir, 1500 };
    g_assert_true(jet_test_wait_until(lines_at_least, &lw, 60000));
    jet_test_server_kill(r.srv);
    /* Without the server the engine can still handle what it holds: at most
     * a batch (strict pacing).  Anything past that was delivered after the
     * restart. */
    guint before = lines_in(r.dir);
    jet_test_server_restart(r.srv);
    gint64 restarted = g_get_monotonic_time();
    lw.lines = before + KILLED_BATCH + 1;
    g_assert_true(jet_test_wait_until(lines_at_least, &lw, 30000));
    g_test_message("restart to the first messages delivered after it: %" G_GINT64_FORMAT " ms",
                   (g_get_monotonic_time() - restarted) / 1000);
    /* For the record only: the test's own connection may not be back yet. */
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, r.js, "ORDERS", "c", NULL, NULL) == NATS_OK) {
        g_test_message("after the restart the server says: ack floor %" G_GUINT64_FORMAT ", delivered %"
                       G_GUINT64_FORMAT " (%u handled at the kill)", ci->AckFloor.Stream, ci->Delivered.Stream, before);
        jsConsumerInfo_Destroy(ci);
    }
    g_thread_join(pub.thread);

    /* The test's own connection reconnects too. */
    FloorWait fw = { &r, 5000 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    guint dup = 0;
    assert_all_handled(&r, 5000, &dup);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    /* At least once, never lost, and one kill costs each message one extra
     * delivery at most.  How many come twice is the server's to decide: it
     * rolls the consumer's state back to what it last wrote (about every
     * 100 ms, docs/retries.md: usually a few dozen messages here), and after
     * an unclean stop 2.9.10 can rebuild the stream's state and replay the
     * consumer from further back (seen: all 1,500).  So the bound is what
     * had been delivered by the kill: what was handled, plus the batch the
     * engine held. */
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_autofree guint *count = g_new0(guint, 5001);
    for (guint i = 0; i < seqs->len; i++)
        count[g_array_index(seqs, guint64, i)]++;
    for (guint64 s = 1; s <= 5000; s++)
        if (count[s] > 2)
            g_error("stream seq %" G_GUINT64_FORMAT " was handled %u times after one kill", s, count[s]);
    guint bound = before + KILLED_BATCH;
    g_test_message("duplicates after the kill: %u (bound %u); missed heartbeats %" G_GUINT64_FORMAT, dup, bound,
                   st.missed_heartbeats);
    g_assert_cmpuint(dup, <=, bound);
    rig_free(&r);
}

/* SIGSTOP for three heartbeat intervals: nothing arrives, no reconnect
 * happens; only the missed-heartbeat path can end the dead pull. */
static void test_silent_stall(void)
{
    Rig r = { 0 };
    rig_server(&r);
    /* A long window, so that only heartbeats can notice within the test. */
    rig_engine(&r, "batch = 10\nidle_heartbeat = 500ms\nexpires = 30s\n");
    jet_test_publish_n(r.js, "orders.new", 10);
    FloorWait fw = { &r, 10 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 20000));
    guint gen = jet_conn_generation(r.conn);

    jet_test_server_pause(r.srv);
    g_usleep(1600 * 1000);   /* three heartbeat intervals and a bit */
    jet_test_server_resume(r.srv);

    jet_test_publish_n(r.js, "orders.new", 10);
    fw.floor = 20;
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 20000));
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("missed heartbeats %" G_GUINT64_FORMAT ", reconnects %u", st.missed_heartbeats,
                   jet_conn_generation(r.conn) - gen);
    g_assert_cmpuint(st.missed_heartbeats, >=, 1);
    g_assert_cmpuint(jet_conn_generation(r.conn), ==, gen);
    rig_free(&r);
}

typedef struct {
    Rig *r;
    guint64 floor;
} Observed;

static gboolean floor_observed(gpointer data)
{
    Observed *o = data;
    JetEngineStats st;
    jet_engine_stats(o->r->eng, &st);
    return st.observed_floor >= o->floor;
}

static void delete_consumer(Rig *r)
{
    jsErrCode jerr = 0;
    g_assert_cmpint(js_DeleteConsumer(r->js, "ORDERS", "c", NULL, &jerr), ==, NATS_OK);
}

/* Consumer deleted mid-stream, managed: re-created from the floor + 1. */
static void test_consumer_deleted_managed(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 100);
    rig_engine(&r, "batch = 5\n" HB "option.block_seq = 50\n");
    g_autofree char *inflight = g_build_filename(r.dir, "inflight-50", NULL);
    g_assert_true(jet_test_wait_file(inflight, 20000));
    /* 1..49 are acked and 50 is in its handler: the floor the engine reads
     * (every 2 s) reaches 49 and stays there. */
    Observed o = { &r, 49 };
    g_assert_true(jet_test_wait_until(floor_observed, &o, 10000));
    JetEngineStats before;
    jet_engine_stats(r.eng, &before);
    guint64 floor = before.observed_floor;
    g_assert_cmpuint(floor, ==, 49);
    delete_consumer(&r);
    g_autofree char *go = g_build_filename(r.dir, "go-50", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));

    FloorWait fw = { &r, 100 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    guint dup = 0;
    assert_all_handled(&r, 100, &dup);
    /* Re-created from the observed floor + 1, never from the start of the
     * stream, never from the floor itself. */
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->Config->DeliverPolicy, ==, js_DeliverByStartSequence);
    g_assert_cmpuint(ci->Config->OptStartSeq, ==, floor + 1);
    jsConsumerInfo_Destroy(ci);
    /* So 50, whose ack went to the deleted consumer, comes again, first,
     * and nothing below it does. */
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, 101);
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, i < 50 ? i + 1 : i);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("duplicates %u, resubscribes %" G_GUINT64_FORMAT, dup, st.resubscribes);
    g_assert_cmpuint(dup, ==, 1);
    g_assert_cmpuint(st.resubscribes, >=, 1);
    /* The host starts again on the consumer it made from a sequence: an
     * update that asked to start elsewhere was refused by the server. */
    ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    gint64 created = ci->Created;
    jsConsumerInfo_Destroy(ci);
    rig_engine_end(&r);
    rig_engine(&r, "batch = 5\n" HB);
    ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->Created, ==, created);
    g_assert_cmpuint(ci->Config->OptStartSeq, ==, floor + 1);
    jsConsumerInfo_Destroy(ci);
    rig_free(&r);
}

/* The stream deleted and created again under a managed binding: its
 * sequences start again at 1, so the consumer the host makes again must
 * start at the new stream's beginning, not at the old life's floor + 1
 * (which would skip every message of the new life below it). */
static void test_stream_recreated(gconstpointer data)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 40);
    g_autofree char *keys = g_strdup_printf("batch = 5\n" HB "%s", (const char *)data);
    rig_engine(&r, keys);
    Observed o = { &r, 40 };
    g_assert_true(jet_test_wait_until(floor_observed, &o, 20000));
    g_assert_cmpint(js_DeleteStream(r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    jet_test_stream_create(r.js, "ORDERS", "orders.>");
    jet_test_publish_n(r.js, "orders.new", 10);   /* seqs 1..10 of the new life */

    g_autoptr(GArray) seqs = NULL;
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    for (;;) {
        g_clear_pointer(&seqs, g_array_unref);
        seqs = handled_seqs(&r, NULL);
        if (seqs->len >= 50 || g_get_monotonic_time() > deadline)
            break;
        g_usleep(100000);
    }
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_test_message("handled %u; the consumer starts at %" G_GUINT64_FORMAT " (policy %d), ack floor %" G_GUINT64_FORMAT,
                   seqs->len, ci->Config->OptStartSeq, (int)ci->Config->DeliverPolicy, ci->AckFloor.Stream);
    jsConsumerInfo_Destroy(ci);
    g_assert_cmpuint(seqs->len, ==, 50);
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, i < 40 ? i + 1 : i - 39);
    FloorWait fw = { &r, 10 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 10000));
    rig_free(&r);
}

static gboolean consumer_missing_logged(gpointer data)
{
    Rig *r = data;
    JetEngineStats st;
    jet_engine_stats(r->eng, &st);
    return st.resubscribes >= 1;
}

/* The operator's consumer "c" on ORDERS, from start (0: the stream's first
 * message). */
static void add_consumer_c(Rig *r, guint64 start)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "c";
    cc.AckPolicy = js_AckExplicit;
    if (start > 0) {
        cc.DeliverPolicy = js_DeliverByStartSequence;
        cc.OptStartSeq = start;
    }
    jsConsumerInfo *ci = NULL;
    g_assert_cmpint(js_AddConsumer(&ci, r->js, "ORDERS", &cc, NULL, NULL), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);
}

/* manage = bind: the host waits, and resumes when the consumer is put back. */
static void test_consumer_deleted_bind(void)
{
    Rig r = { 0 };
    rig_server(&r);
    add_consumer_c(&r, 0);
    jet_test_publish_n(r.js, "orders.new", 20);
    rig_engine(&r, "manage = bind\nbatch = 5\n" HB);
    FloorWait fw = { &r, 20 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 20000));

    delete_consumer(&r);
    g_assert_true(jet_test_wait_until(consumer_missing_logged, &r, 20000));
    /* Put back by the operator, from where it was. */
    add_consumer_c(&r, 21);
    jet_test_publish_n(r.js, "orders.new", 10);
    fw.floor = 30;
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    guint dup = 0;
    assert_all_handled(&r, 30, &dup);
    g_assert_cmpuint(dup, ==, 0);
    rig_free(&r);
}

static gboolean floor_observed_exactly(gpointer data)
{
    Observed *o = data;
    JetEngineStats st;
    jet_engine_stats(o->r->eng, &st);
    return st.observed_floor == o->floor;
}

/* manage = bind, and the operator deletes the stream, makes it again and
 * puts the consumer back on it: the floor the host keeps (where it would
 * start a consumer of its own) is the new consumer's, lower than the old
 * life's, not the old life's 20. */
static void test_stream_recreated_bind(void)
{
    Rig r = { 0 };
    rig_server(&r);
    add_consumer_c(&r, 0);
    jet_test_publish_n(r.js, "orders.new", 20);
    rig_engine(&r, "manage = bind\nbatch = 5\n" HB);
    Observed o = { &r, 20 };
    g_assert_true(jet_test_wait_until(floor_observed, &o, 20000));

    g_assert_cmpint(js_DeleteStream(r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    g_assert_true(jet_test_wait_until(consumer_missing_logged, &r, 20000));
    jet_test_stream_create(r.js, "ORDERS", "orders.>");
    add_consumer_c(&r, 0);
    jet_test_publish_n(r.js, "orders.new", 5);
    FloorWait fw = { &r, 5 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    o.floor = 5;
    gboolean adopted = jet_test_wait_until(floor_observed_exactly, &o, 10000);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("the host's floor after the new life: %" G_GUINT64_FORMAT, st.observed_floor);
    g_assert_true(adopted);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, 25);
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, i < 20 ? i + 1 : i - 19);
    rig_free(&r);
}

/* A raw status line, as the server would send it, to a subject. */
static void send_raw_status(const char *url, const char *subject, const char *status_line)
{
    const char *hostport = strstr(url, "://");
    g_assert_nonnull(hostport);
    g_autoptr(GSocketClient) client = g_socket_client_new();
    GError *err = NULL;
    g_autoptr(GSocketConnection) conn = g_socket_client_connect_to_host(client, hostport + 3, 4222, NULL, &err);
    g_assert_no_error(err);
    GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
    g_autofree char *hdr = g_strdup_printf("NATS/1.0 %s\r\n\r\n", status_line);
    g_autofree char *proto = g_strdup_printf(
        "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true}\r\n"
        "HPUB %s %zu %zu\r\n%s\r\nPING\r\n",
        subject, strlen(hdr), strlen(hdr), hdr);
    g_assert_true(g_output_stream_write_all(out, proto, strlen(proto), NULL, NULL, &err));
    g_assert_no_error(err);
    /* Wait for the PONG: the server has routed the message by then. */
    GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(conn));
    char buf[4096];
    gsize got = 0;
    while (got < sizeof buf - 1) {
        gssize n = g_input_stream_read(in, buf + got, sizeof buf - 1 - got, NULL, &err);
        g_assert_no_error(err);
        g_assert_cmpint(n, >, 0);
        got += (gsize)n;
        buf[got] = '\0';
        if (strstr(buf, "PONG") != NULL)
            break;
    }
}

typedef struct {
    GMutex lock;
    GPtrArray *replies;   /* reply subjects of the engine's pulls, in order */
} PullSpy;

/* A pull is a request on the NEXT subject, or an ack "+NXT <pull>" that
 * carries one (docs/engine.md): both recorded, by their reply subject. */
static void spy_pull(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    PullSpy *spy = closure;
    (void)nc;
    (void)sub;
    gboolean ack = g_str_has_prefix(natsMsg_GetSubject(m), "$JS.ACK.");
    if (!ack || (natsMsg_GetDataLength(m) > 5 && memcmp(natsMsg_GetData(m), "+NXT ", 5) == 0)) {
        g_mutex_lock(&spy->lock);
        g_ptr_array_add(spy->replies, g_strdup(natsMsg_GetReply(m)));
        g_mutex_unlock(&spy->lock);
    }
    natsMsg_Destroy(m);
}

static gboolean two_pulls(gpointer data)
{
    PullSpy *spy = data;
    g_mutex_lock(&spy->lock);
    gboolean ok = spy->replies->len >= 2;
    g_mutex_unlock(&spy->lock);
    return ok;
}

/* A stale 408 for an earlier pull must not end the live one. */
typedef struct {
    Rig *r;
    guint64 want;
} StaleWait;

static gboolean stale_counted(gpointer data)
{
    StaleWait *w = data;
    JetEngineStats st;
    jet_engine_stats(w->r->eng, &st);
    return st.stale_statuses >= w->want;
}

static void test_stale_status(void)
{
    Rig r = { 0 };
    rig_server(&r);
    PullSpy spy = { .replies = g_ptr_array_new_with_free_func(g_free) };
    g_mutex_init(&spy.lock);
    natsSubscription *sub = NULL, *nxt = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&sub, r.nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", spy_pull, &spy), ==,
                    NATS_OK);
    g_assert_cmpint(natsConnection_Subscribe(&nxt, r.nc, "$JS.ACK.ORDERS.c.>", spy_pull, &spy), ==, NATS_OK);
    natsConnection_Flush(r.nc);
    /* The first pull is over as soon as its one message arrives; the second
     * (on its own, or carried by that message's ack) then waits 20 s for more. */
    jet_test_publish_n(r.js, "orders.new", 1);
    rig_engine(&r, "batch = 1\nidle_heartbeat = 1s\nexpires = 20s\n");
    g_assert_true(jet_test_wait_until(two_pulls, &spy, 20000));
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 10000));
    /* The older pull: the lower pull number (the reply's last token).  The
     * spy's two subscriptions call back on threads of their own, so the
     * order it recorded them in is not the order they were sent in (seen
     * reversed on 2.15.1). */
    g_mutex_lock(&spy.lock);
    const char *oldest = NULL;
    guint64 oldest_id = G_MAXUINT64;
    for (guint i = 0; i < spy.replies->len; i++) {
        const char *reply = g_ptr_array_index(spy.replies, i);
        const char *dot = strrchr(reply, '.');
        guint64 id = dot != NULL ? g_ascii_strtoull(dot + 1, NULL, 10) : G_MAXUINT64;
        if (oldest == NULL || id < oldest_id) {
            oldest = reply;
            oldest_id = id;
        }
    }
    g_autofree char *old = g_strdup(oldest);
    g_mutex_unlock(&spy.lock);
    g_test_message("the pull answered late: %s (of %u seen)", old, spy.replies->len);
    JetEngineStats st0;
    jet_engine_stats(r.eng, &st0);

    send_raw_status(jet_test_server_url(r.srv), old, "408 Request Timeout");
    /* The next message arrives on the live pull: no new pull, nothing late. */
    jet_test_publish_n(r.js, "orders.new", 1);
    fw.floor = 2;
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 10000));
    /* The status came on another connection: nothing orders it before
     * message 2 (seen after it under load), so it is waited for. */
    StaleWait sw = { &r, st0.stale_statuses + 1 };
    jet_test_wait_until(stale_counted, &sw, 10000);
    JetEngineStats st1;
    jet_engine_stats(r.eng, &st1);
    g_test_message("stale statuses %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT ", pulls %" G_GUINT64_FORMAT
                   " -> %" G_GUINT64_FORMAT, st0.stale_statuses, st1.stale_statuses, st0.pulls, st1.pulls);
    g_assert_cmpuint(st1.stale_statuses, ==, st0.stale_statuses + 1);
    g_assert_cmpuint(st1.late_messages, ==, 0);
    /* One new pull: the one issued after message 2 completed the live pull. */
    g_assert_cmpuint(st1.pulls, <=, st0.pulls + 1);
    /* The engine still pulls: the spy's callback must be over for good
     * before what it writes to is freed. */
    g_assert_cmpint(natsSubscription_Drain(sub), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_Drain(nxt), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_WaitForDrainCompletion(sub, 10000), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_WaitForDrainCompletion(nxt, 10000), ==, NATS_OK);
    natsSubscription_Destroy(sub);
    natsSubscription_Destroy(nxt);
    g_ptr_array_unref(spy.replies);
    g_mutex_clear(&spy.lock);
    rig_free(&r);
}

static void count_advisory(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    g_atomic_int_inc((gint *)closure);
    natsMsg_Destroy(m);
}

static GSubprocess *start_host(Rig *r, const char *name, guint64 block_seq)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\n\n[binding t]\nplugin = %s\nstream = ORDERS\nconsumer = c\n"
        "batch = 10\nack_wait = 2s\n" HB "option.dir = %s\noption.block_seq = %" G_GUINT64_FORMAT "\n",
        jet_test_server_url(r->srv), plugin, r->dir, block_seq);
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    g_autofree char *errfile = g_strdup_printf("%s.stderr", name);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), errfile, NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    return jet_test_jethost_spawn(errlog, args);
}

/* The host kill -9'd three times, at messages picked by g_test_rand (GLib
 * prints what it started from at the top of the output, so a run can be
 * repeated), each while that message is in the handler. */
static void test_host_killed(void)
{
    Rig r = { 0 };
    rig_server(&r);
    gint terminated = 0;
    natsSubscription *adv = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&adv, r.nc, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS.c",
                                             count_advisory, &terminated), ==, NATS_OK);
    natsConnection_Flush(r.nc);
    const guint n = 20000;
    jet_test_publish_n(r.js, "orders.new", n);
    for (guint k = 0; k < 3; k++) {
        guint64 seq = (guint64)g_test_rand_int_range((gint32)(1000 + k * 6000), (gint32)(6000 + k * 6000));
        g_test_message("kill %u at stream seq %" G_GUINT64_FORMAT, k + 1, seq);
        g_autofree char *name = g_strdup_printf("killed-%u", k);
        g_autoptr(GSubprocess) host = start_host(&r, name, seq);
        g_autofree char *file = g_strdup_printf("inflight-%" G_GUINT64_FORMAT, seq);
        g_autofree char *inflight = g_build_filename(r.dir, file, NULL);
        g_assert_true(jet_test_wait_file(inflight, 60000));
        g_subprocess_force_exit(host);
        g_assert_cmpint(jet_test_jethost_wait(host, 10000), ==, 128 + SIGKILL);
        /* The next host may pass it (its block is elsewhere). */
        g_autofree char *gofile = g_strdup_printf("go-%" G_GUINT64_FORMAT, seq);
        g_autofree char *go = g_build_filename(r.dir, gofile, NULL);
        g_assert_true(g_file_set_contents(go, "", 0, NULL));
    }
    g_autoptr(GSubprocess) last = start_host(&r, "killed-last", 0);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 120000));
    g_subprocess_send_signal(last, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(last, 20000), ==, 0);
    natsConnection_Flush(r.nc);
    guint dup = 0;
    assert_all_handled(&r, n, &dup);
    g_test_message("duplicates over 3 kills: %u (bound: 10 held x 3 kills)", dup);
    g_assert_cmpuint(dup, <=, 10 * 3);
    g_assert_cmpint(g_atomic_int_get(&terminated), ==, 0);
    g_assert_cmpint(natsSubscription_Drain(adv), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_WaitForDrainCompletion(adv, 10000), ==, NATS_OK);
    natsSubscription_Destroy(adv);
    rig_free(&r);
}

/* A server that never comes up: five attempts, about 1.5 s, then exit 1
 * naming the binding and the error. */
static void test_never_up(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    g_autofree char *url = g_strdup(jet_test_server_url(srv));
    jet_test_server_stop(srv);   /* a port known to be closed now */
    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\n\n[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\n", url, plugin);
    g_autofree char *conf = jet_test_write_file("never-up.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "never-up.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    g_assert_cmpint(jet_test_jethost_wait(host, 30000), ==, 1);
    gint64 ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("gave up after %" G_GINT64_FORMAT " ms", ms);
    g_assert_cmpint(ms, >=, 1400);
    g_assert_cmpint(ms, <, 6000);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "connect attempt 5 of 5"));
    g_assert_nonnull(strstr(log, "binding orders: cannot bind"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/recovery/server-killed", test_server_killed);
    g_test_add_func("/recovery/silent-stall", test_silent_stall);
    g_test_add_func("/recovery/consumer-deleted-managed", test_consumer_deleted_managed);
    g_test_add_func("/recovery/consumer-deleted-bind", test_consumer_deleted_bind);
    g_test_add_data_func("/recovery/stream-recreated", "", test_stream_recreated);
    g_test_add_func("/recovery/stream-recreated-bind", test_stream_recreated_bind);
    g_test_add_data_func("/recovery/stream-recreated-lanes", "key = subject:2\nworkers = 3\n", test_stream_recreated);
    g_test_add_func("/recovery/stale-status", test_stale_status);
    g_test_add_func("/recovery/host-killed", test_host_killed);
    g_test_add_func("/recovery/never-up", test_never_up);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
