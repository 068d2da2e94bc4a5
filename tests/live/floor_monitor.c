/* The floor monitor fed by a real nats-server 2.9.10's consumer info: the
 * facts it rests on, checked live (verify what you rely on).
 *
 * - A blocker waiting out a delayed NAK while later messages are acked keeps
 *   the ack floor below it and Delivered past it: the gap is open, the stall
 *   clock runs, floor + 1 is the blocker.  Acking it moves the floor to
 *   Delivered: caught up.
 * - Five postponed (delayed-NAK'd) messages on a MaxAckPending 5 consumer
 *   hold every slot: a waiting pull gets nothing, NumWaiting shows it, and
 *   the monitor reports saturation. */
#include "floor_monitor.h"
#include "harness.h"

#include <string.h>

typedef struct {
    natsConnection *nc;
    jsCtx *js;
    JetTestServer *srv;
} Live;

static void live_start(Live *l)
{
    l->srv = jet_test_server_start();
    l->js = jet_test_js_open(jet_test_server_url(l->srv), &l->nc);
    jet_test_stream_create(l->js, "ORDERS", "orders.>");
}

static void live_stop(Live *l)
{
    jet_test_js_close(l->nc, l->js);
    jet_test_server_free(l->srv);
}

static natsSubscription *consumer(Live *l, const char *name, gint64 max_ack_pending)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = name;
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = 60 * G_GINT64_CONSTANT(1000000000);
    cc.MaxAckPending = max_ack_pending;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    g_assert_cmpint(js_AddConsumer(&ci, l->js, "ORDERS", &cc, NULL, &jerr), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "ORDERS";
    so.Consumer = name;
    natsSubscription *sub = NULL;
    g_assert_cmpint(js_PullSubscribe(&sub, l->js, "orders.>", name, NULL, &so, &jerr), ==,
                    NATS_OK);
    return sub;
}

static void fetch_exactly(natsSubscription *sub, int n, natsMsgList *list)
{
    jsErrCode jerr = 0;
    memset(list, 0, sizeof *list);
    g_assert_cmpint(natsSubscription_Fetch(list, sub, n, 5000, &jerr), ==, NATS_OK);
    g_assert_cmpint(list->Count, ==, n);
}

static JetFloorReport observe(JetFloorMonitor *m, Live *l, const char *name, gint64 now,
                              jsConsumerInfo **info)
{
    jsConsumerInfo *ci = jet_test_consumer_info(l->js, "ORDERS", name);
    JetFloorSample s = { 0 };
    s.now_ns = now;
    s.ack_floor = ci->AckFloor.Stream;
    s.delivered = ci->Delivered.Stream;
    s.num_ack_pending = ci->NumAckPending;
    s.max_ack_pending = ci->Config->MaxAckPending;
    s.num_waiting = ci->NumWaiting;
    s.num_pending = ci->NumPending;
    JetFloorReport r;
    jet_floor_monitor_observe(m, &s, &r);
    char line[512];
    jet_floor_report_format(&r, FALSE, line, sizeof line);
    g_test_message("floor %" G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT " ack pending %"
                   G_GINT64_FORMAT " waiting %" G_GINT64_FORMAT ": %s", s.ack_floor, s.delivered,
                   s.num_ack_pending, s.num_waiting, line);
    if (info != NULL)
        *info = ci;
    else
        jsConsumerInfo_Destroy(ci);
    return r;
}

#define FLOOR_AGE (15 * 60 * G_GINT64_CONSTANT(1000000000))

static void test_blocker_pins_floor(void)
{
    Live l;
    live_start(&l);
    natsSubscription *sub = consumer(&l, "c", 1000);
    jet_test_publish_n(l.js, "orders.new", 10);
    JetFloorPolicy p = { FLOOR_AGE };
    g_autoptr(JetFloorMonitor) m = jet_floor_monitor_new(&p);

    natsMsgList list;
    fetch_exactly(sub, 10, &list);
    /* 1 is postponed (a delayed NAK), 2..10 succeed. */
    g_assert_cmpint(natsMsg_NakWithDelay(list.Msgs[0], 30000, NULL), ==, NATS_OK);
    for (int i = 1; i < 10; i++)
        g_assert_cmpint(natsMsg_AckSync(list.Msgs[i], NULL, NULL), ==, NATS_OK);

    JetFloorReport r = observe(m, &l, "c", 0, NULL);
    g_assert_cmpuint(r.floor, ==, 0);
    g_assert_cmpuint(r.next_seq, ==, 1);
    g_assert_cmpuint(r.delivered, ==, 10);
    g_assert_true(r.gap_open);
    g_assert_cmpint(r.num_ack_pending, ==, 1);   /* the NAK'd message still counts */
    r = observe(m, &l, "c", FLOOR_AGE, NULL);
    g_assert_true(r.stalled);
    g_assert_true(r.log_line);

    /* The blocker succeeds at last (acked by stream sequence, as a capture's
     * ack would be): the floor jumps to Delivered, caught up.  A raw +ACK on
     * the first delivery's reply subject: nats.c refuses to ack a message it
     * already NAK'd. */
    natsMsg *reply = NULL;
    g_assert_cmpint(natsConnection_RequestString(&reply, l.nc, natsMsg_GetReply(list.Msgs[0]),
                                                 "+ACK", 2000), ==, NATS_OK);
    natsMsg_Destroy(reply);
    r = observe(m, &l, "c", FLOOR_AGE + 1, NULL);
    g_assert_cmpuint(r.floor, ==, 10);
    g_assert_false(r.gap_open);
    g_assert_false(r.stalled);
    natsMsgList_Destroy(&list);
    natsSubscription_Destroy(sub);
    live_stop(&l);
}

typedef struct {
    natsSubscription *sub;
    int got;
} Waiter;

static gpointer waiter_main(gpointer data)
{
    Waiter *w = data;
    natsMsgList list = { 0 };
    jsErrCode jerr = 0;
    natsSubscription_Fetch(&list, w->sub, 1, 3000, &jerr);
    w->got = list.Count;
    natsMsgList_Destroy(&list);
    return NULL;
}

static gboolean pull_waiting(gpointer data)
{
    Live *l = data;
    jsConsumerInfo *ci = jet_test_consumer_info(l->js, "ORDERS", "s");
    gboolean waiting = ci->NumWaiting > 0;
    jsConsumerInfo_Destroy(ci);
    return waiting;
}

static void test_saturation(void)
{
    Live l;
    live_start(&l);
    natsSubscription *sub = consumer(&l, "s", 5);
    jet_test_publish_n(l.js, "orders.new", 8);
    JetFloorPolicy p = { FLOOR_AGE };
    g_autoptr(JetFloorMonitor) m = jet_floor_monitor_new(&p);

    natsMsgList list;
    fetch_exactly(sub, 5, &list);
    for (int i = 0; i < 5; i++)
        g_assert_cmpint(natsMsg_NakWithDelay(list.Msgs[i], 30000, NULL), ==, NATS_OK);
    natsConnection_Flush(l.nc);

    Waiter w = { sub, -1 };
    GThread *t = g_thread_new("waiter", waiter_main, &w);
    g_assert_true(jet_test_wait_until(pull_waiting, &l, 2000));
    jsConsumerInfo *ci = NULL;
    JetFloorReport r = observe(m, &l, "s", 0, &ci);
    g_assert_cmpint(ci->NumAckPending, ==, 5);
    g_assert_cmpint(ci->Config->MaxAckPending, ==, 5);
    g_assert_cmpuint(ci->NumPending, ==, 3);
    jsConsumerInfo_Destroy(ci);
    g_assert_true(r.saturated);
    g_assert_true(r.log_saturation);
    char line[512];
    jet_floor_report_format(&r, TRUE, line, sizeof line);
    g_test_message("%s", line);

    g_thread_join(t);
    g_assert_cmpint(w.got, ==, 0);   /* the waiting pull got nothing */
    JetFloorStats stats;
    jet_floor_monitor_stats(m, &stats);
    g_assert_cmpuint(stats.saturation_events, ==, 1);
    natsMsgList_Destroy(&list);
    natsSubscription_Destroy(sub);
    live_stop(&l);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/floor-live/blocker-pins-floor", test_blocker_pins_floor);
    g_test_add_func("/floor-live/saturation", test_saturation);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
