/* The MAX_DELIVERIES safety net against a real nats-server 2.9.10, with
 * `jethost run` as a subprocess.
 *
 * A message is driven dark by a plain client of the binding's consumer: it
 * pulls the message and never acks, MaxDeliver times, then keeps a pull
 * waiting, which is when the server gives up and raises the advisory.  What
 * must hold, read from the server's own view (the DLQ record's raw block,
 * the advisory consumer's ack floor), never from the code under test:
 *   - raised while no host ran, the advisory is kept and the next start
 *     dead-letters the message (cause max-deliveries, its provenance,
 *     headers and payload), acks the advisory, and a later start does not
 *     handle it again;
 *   - raised while a host runs, it is dead-lettered at once, through the
 *     advisory stream (manage = create) or a live subscription (bind, no
 *     stream: said once in the log);
 *   - a message gone from the stream is logged as lost and counted, and its
 *     advisory acked, not retried;
 *   - a record forged under the capture's id is a collision: the message is
 *     captured again under a distinct id;
 *   - an advisory for a message the engine dead-lettered itself finds that
 *     record under the same Nats-Msg-Id: still one record; an advisory
 *     that does not parse is counted and acked. */
#include "harness.h"
#include "advisory.h"
#include "hdr_block.h"
#include "provenance.h"
#include "settle.h"
#include "stream_msg.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#define DLQ "JETHOST_DLQ"
#define ADV JET_ADVISORY_STREAM
#define ADV_CONSUMER "jethost_adv_ORDERS_c"
#define ADV_SUBJECT JET_ADVISORY_SUBJECT_PREFIX "ORDERS.c"
#define MAX_DELIVER 3
#define WAIT_MS 30000

typedef struct {
    JetTestServer *srv;
    natsConnection *nc;
    jsCtx *js;
    char *gate;           /* fx_gate's directory */
    guint ack_wait_ms;    /* the binding's AckWait */
} T;

typedef struct {
    GSubprocess *p;
    char *log;            /* its stderr */
} Host;

static void t_init(T *t)
{
    static guint n;
    memset(t, 0, sizeof *t);
    t->ack_wait_ms = 1000;
    t->srv = jet_test_server_start();
    t->js = jet_test_js_open(jet_test_server_url(t->srv), &t->nc);
    jet_test_stream_create(t->js, "ORDERS", "orders.>");
    g_autofree char *name = g_strdup_printf("gate-%u", ++n);
    t->gate = g_build_filename(jet_test_private_dir(), name, NULL);
    g_assert_cmpint(g_mkdir(t->gate, 0700), ==, 0);
}

static void t_free(T *t)
{
    jet_test_js_close(t->nc, t->js);
    jet_test_server_free(t->srv);
    g_free(t->gate);
}

/* --- the host ----------------------------------------------------------------- */

static gboolean file_says(const char *path, const char *needle)
{
    g_autofree char *text = NULL;
    return g_file_get_contents(path, &text, NULL, NULL) && strstr(text, needle) != NULL;
}

typedef struct {
    const char *path, *needle;
    GSubprocess *p;
} LogWait;

/* Stops waiting when the host exited, too: the log says why. */
static gboolean log_has(gpointer data)
{
    LogWait *w = data;
    return file_says(w->path, w->needle) || g_subprocess_get_identifier(w->p) == NULL;
}

static void wait_log(const Host *h, const char *needle)
{
    LogWait w = { h->log, needle, h->p };
    if (!jet_test_wait_until(log_has, &w, WAIT_MS) || !file_says(h->log, needle)) {
        g_autofree char *text = NULL;
        g_file_get_contents(h->log, &text, NULL, NULL);
        g_test_message("host log:\n%s", text != NULL ? text : "");
        g_assert_true(file_says(h->log, needle));
    }
}

/* One `jethost run` on binding "orders" (ORDERS/c: AckWait t->ack_wait_ms,
 * MaxDeliver 3), the plugin named (fx_gate gets its directory), the extra
 * keys. */
static void host_start(T *t, Host *h, const char *plugin_name, const char *extra)
{
    g_autofree char *plugin = jet_test_plugin_copy(plugin_name);
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    /* fx_gate keeps its files in the test's directory. */
    g_autofree char *dir = strcmp(plugin_name, "fx_gate") == 0 ? g_strdup_printf("option.dir = %s\n", t->gate)
                                                               : g_strdup("");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nstate_dir = %s\nname = adv-host\n\n"
        "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = c\nack_wait = %ums\nmax_deliver = %d\n"
        "max_attempts = 2\nbreaker = off\nworkers = 1\nbatch = 1\n%s%s",
        jet_test_server_url(t->srv), state, plugin, t->ack_wait_ms, MAX_DELIVER, dir, extra != NULL ? extra : "");
    /* Names unique to the process: a log left by an earlier run must never
     * be read as this one's. */
    static guint runs;
    runs++;
    g_autofree char *conf_name = g_strdup_printf("adv-%u.conf", runs);
    g_autofree char *conf = jet_test_write_file(conf_name, text);
    g_autofree char *log_name = g_strdup_printf("adv-%u.stderr", runs);
    h->log = g_build_filename(jet_test_private_dir(), log_name, NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    h->p = jet_test_jethost_spawn(h->log, args);
    wait_log(h, "event=running");
}

/* SIGTERM, a clean exit; returns the log. */
static char *host_stop(Host *h)
{
    g_subprocess_send_signal(h->p, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(h->p, 20000), ==, 0);
    g_clear_object(&h->p);
    char *text = NULL;
    g_assert_true(g_file_get_contents(h->log, &text, NULL, NULL));
    g_clear_pointer(&h->log, g_free);
    return text;
}

/* The number after "KEY " in the log's advisories-stopped line. */
static guint64 stopped_count(const char *log, const char *key)
{
    const char *line = strstr(log, "event=advisories-stopped");
    g_assert_nonnull(line);
    g_autofree char *needle = g_strdup_printf("%s ", key);
    const char *p = strstr(line, needle);
    g_assert_nonnull(p);
    return g_ascii_strtoull(p + strlen(needle), NULL, 10);
}

/* --- the server's view ---------------------------------------------------------- */

static void wait_msgs(T *t, const char *stream, guint64 want)
{
    JetTestStreamWait w = { t->js, stream, want };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &w, WAIT_MS));
}

typedef struct {
    jsCtx *js;
    guint64 floor;
} FloorWait;

/* The advisory consumer acked everything up to floor, and holds nothing. */
static gboolean adv_floor_reached(gpointer data)
{
    FloorWait *w = data;
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, w->js, ADV, ADV_CONSUMER, NULL, NULL) != NATS_OK)
        return FALSE;
    gboolean ok = ci->AckFloor.Stream >= w->floor && ci->NumAckPending == 0 && ci->NumPending == 0;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

static void wait_adv_floor(T *t, guint64 floor)
{
    FloorWait w = { t->js, floor };
    g_assert_true(jet_test_wait_until(adv_floor_reached, &w, WAIT_MS));
}

typedef struct {
    JetStoredMsg *m;
    JetHdrParse p;
} Record;

static void record_read(T *t, const char *stream, guint64 seq, Record *r)
{
    g_autoptr(GError) err = NULL;
    memset(r, 0, sizeof *r);
    g_assert_cmpint(jet_stream_msg_get(t->nc, stream, seq, 5000, &r->m, &err), ==, JET_STORED_FOUND);
    g_assert_no_error(err);
    gsize len = 0;
    const char *h = r->m->hdrs != NULL ? g_bytes_get_data(r->m->hdrs, &len) : NULL;
    g_assert_true(jet_hdr_parse(h, len, &r->p));
}

static void record_clear(Record *r)
{
    jet_stored_msg_free(r->m);
    jet_hdr_parse_clear(&r->p);
}

static const char *hdr(const Record *r, const char *name)
{
    return jet_hdr_get(r->p.headers, name);
}

/* A DLQ record of cause max-deliveries for ORDERS seq, checked against the
 * original as the stream stores it. */
static void assert_dark_record(T *t, guint64 dlq_seq, guint64 seq, const char *trace)
{
    Record rec, orig;
    record_read(t, DLQ, dlq_seq, &rec);
    record_read(t, "ORDERS", seq, &orig);
    gint64 created = jet_test_stream_created(t->js, "ORDERS");
    g_autofree char *id = g_strdup_printf("jethost:ORDERS.c:%" G_GUINT64_FORMAT ":%" G_GINT64_FORMAT, seq, created);
    g_assert_cmpstr(g_ptr_array_index(rec.p.headers, 0), ==, "Nats-Msg-Id");
    g_assert_cmpstr(g_ptr_array_index(rec.p.headers, 1), ==, id);
    g_assert_cmpstr(hdr(&rec, "Jethost-Cause"), ==, "max-deliveries");
    g_autofree char *reason =
        g_strdup_printf("the server gave up after %d deliveries (MAX_DELIVERIES advisory)", MAX_DELIVER);
    g_assert_cmpstr(hdr(&rec, "Jethost-Reason"), ==, reason);
    g_autofree char *deliveries = g_strdup_printf("%d", MAX_DELIVER);
    g_assert_cmpstr(hdr(&rec, "Jethost-Deliveries"), ==, deliveries);
    g_assert_cmpstr(hdr(&rec, "Jethost-Origin-Stream"), ==, "ORDERS");
    g_autofree char *created_text = jet_time_format_ns(created);
    g_assert_cmpstr(hdr(&rec, "Jethost-Origin-Stream-Created"), ==, created_text);
    g_assert_cmpstr(hdr(&rec, "Jethost-Origin-Consumer"), ==, "c");
    g_autofree char *seq_text = g_strdup_printf("%" G_GUINT64_FORMAT, seq);
    g_assert_cmpstr(hdr(&rec, "Jethost-Origin-Seq"), ==, seq_text);
    g_assert_cmpstr(hdr(&rec, "Jethost-Origin-Subject"), ==, orig.m->subject);
    g_autofree char *enqueued = jet_time_format_ns(orig.m->time_ns);
    g_assert_cmpstr(hdr(&rec, "Jethost-Enqueued"), ==, enqueued);
    g_assert_cmpstr(hdr(&rec, "Jethost-Host"), ==, "adv-host");
    g_assert_cmpstr(hdr(&rec, "Jethost-Binding"), ==, "orders");
    g_assert_nonnull(hdr(&rec, "Jethost-Captured"));
    /* The stored message's own headers, renamed by the rule. */
    g_assert_cmpstr(hdr(&rec, "X-Trace"), ==, trace);
    g_autofree char *orig_id = g_strdup_printf("orig-%" G_GUINT64_FORMAT, seq);
    g_assert_cmpstr(hdr(&rec, "Jethost-Orig-Nats_Msg-Id"), ==, orig_id);
    g_assert_true(g_bytes_equal(rec.m->data, orig.m->data));
    record_clear(&rec);
    record_clear(&orig);
}

/* --- the plain client that drives a message dark ------------------------------- */

static void publish(T *t, guint64 seq, const char *payload)
{
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, "orders.new", NULL, payload, (int)strlen(payload)), ==, NATS_OK);
    g_autofree char *trace = g_strdup_printf("t-%" G_GUINT64_FORMAT, seq);
    g_autofree char *id = g_strdup_printf("orig-%" G_GUINT64_FORMAT, seq);
    natsMsgHeader_Set(m, "X-Trace", trace);
    natsMsgHeader_Set(m, "Nats-Msg-Id", id);
    jsPubAck *pa = NULL;
    g_assert_cmpint(js_PublishMsg(&pa, t->js, m, NULL, NULL), ==, NATS_OK);
    g_assert_cmpuint(pa->Sequence, ==, seq);
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(m);
}

/* One pull of one message from ORDERS/c, waiting up to expires_ms, never
 * acked.  Returns the delivery count and sets *seq; 0 when the pull ended
 * with nothing (its 408). */
static guint pull_one(T *t, guint expires_ms, guint64 *seq)
{
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsInbox_Create(&inbox), ==, NATS_OK);
    g_assert_cmpint(natsConnection_SubscribeSync(&sub, t->nc, inbox), ==, NATS_OK);
    g_autofree char *body = g_strdup_printf("{\"batch\":1,\"expires\":%" G_GUINT64_FORMAT "}",
                                            (guint64)expires_ms * 1000000);
    g_assert_cmpint(natsConnection_PublishRequestString(t->nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", inbox, body),
                    ==, NATS_OK);
    natsMsg *m = NULL;
    guint delivered = 0;
    g_assert_cmpint(natsSubscription_NextMsg(&m, sub, expires_ms + 5000), ==, NATS_OK);
    const char *reply = natsMsg_GetReply(m);
    if (reply != NULL && g_str_has_prefix(reply, "$JS.ACK.")) {
        /* $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending> */
        g_auto(GStrv) tok = g_strsplit(reply, ".", -1);
        g_assert_cmpuint(g_strv_length(tok), >=, 9);
        delivered = (guint)g_ascii_strtoull(tok[4], NULL, 10);
        *seq = g_ascii_strtoull(tok[5], NULL, 10);
    }
    natsMsg_Destroy(m);
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    return delivered;
}

/* Pulls seq MaxDeliver times without an ack (each redelivery comes once
 * AckWait passes), then keeps a pull waiting, which is when the server gives
 * up on seq and raises the advisory; again if need be (a pull that ended
 * just before), until the advisory is seen on its subject. */
static void drive_dark(T *t, guint64 seq)
{
    natsSubscription *adv = NULL;
    g_assert_cmpint(natsConnection_SubscribeSync(&adv, t->nc, ADV_SUBJECT), ==, NATS_OK);
    g_assert_cmpint(natsConnection_FlushTimeout(t->nc, 5000), ==, NATS_OK);
    for (guint d = 1; d <= MAX_DELIVER; d++) {
        guint64 got = 0;
        g_assert_cmpuint(pull_one(t, t->ack_wait_ms + 4000, &got), ==, d);
        g_assert_cmpuint(got, ==, seq);
    }
    natsMsg *m = NULL;
    for (guint i = 0; m == NULL; i++) {
        g_assert_cmpuint(i, <, 5);
        guint64 none = 0;
        g_assert_cmpuint(pull_one(t, t->ack_wait_ms + 500, &none), ==, 0);
        natsSubscription_NextMsg(&m, adv, 1000);
    }
    g_auto(JetAdvisoryMsg) a = { 0 };
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_advisory_parse(natsMsg_GetData(m), (gsize)natsMsg_GetDataLength(m), &a, &err));
    g_assert_cmpuint(a.stream_seq, ==, seq);
    g_assert_cmpuint(a.deliveries, ==, MAX_DELIVER);
    natsMsg_Destroy(m);
    natsSubscription_Destroy(adv);
}

/* --- the tests ----------------------------------------------------------------- */

static void test_parse(void)
{
    const char *good = "{\"type\":\"io.nats.jetstream.advisory.v1.max_deliver\",\"id\":\"x\","
                       "\"timestamp\":\"2024-05-06T07:08:09.123456789Z\",\"stream\":\"ORDERS\",\"consumer\":\"c\","
                       "\"stream_seq\":42,\"deliveries\":3}";
    g_auto(JetAdvisoryMsg) m = { 0 };
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_advisory_parse(good, strlen(good), &m, &err));
    g_assert_no_error(err);
    g_assert_cmpstr(m.stream, ==, "ORDERS");
    g_assert_cmpstr(m.consumer, ==, "c");
    g_assert_cmpuint(m.stream_seq, ==, 42);
    g_assert_cmpuint(m.deliveries, ==, 3);
    g_assert_cmpint(m.time_ns, ==, G_GINT64_CONSTANT(1714979289123456789));

    const char *bad[] = { "", "nope", "[]", "{\"stream\":\"S\",\"consumer\":\"c\"}",
                          "{\"stream\":\"S\",\"consumer\":\"c\",\"stream_seq\":0}",
                          "{\"stream\":1,\"consumer\":\"c\",\"stream_seq\":3}",
                          "{\"stream\":\"S\",\"consumer\":\"\",\"stream_seq\":3}" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_auto(JetAdvisoryMsg) b = { 0 };
        g_autoptr(GError) e = NULL;
        g_assert_false(jet_advisory_parse(bad[i], strlen(bad[i]), &b, &e));
        g_assert_nonnull(e);
    }

    g_assert_cmpstr(jet_cause_name(JET_CAUSE_MAX_DELIVERIES), ==, "max-deliveries");

    g_autofree char *subject = jet_advisory_subject("ORDERS", "c");
    g_assert_cmpstr(subject, ==, ADV_SUBJECT);
    g_autofree char *name = jet_advisory_consumer_name("ORDERS", "c");
    g_assert_cmpstr(name, ==, ADV_CONSUMER);
    g_autofree char *long_stream = g_strnfill(250, 'S');
    g_autofree char *hashed = jet_advisory_consumer_name(long_stream, "c");
    g_assert_cmpuint(strlen(hashed), ==, strlen("jethost_adv_") + 32);
    g_autofree char *hashed2 = jet_advisory_consumer_name(long_stream, "d");
    g_assert_cmpstr(hashed, !=, hashed2);
}

/* Raised while no host ran: kept, captured at the next start, once. */
static void test_kept_while_down(void)
{
    T t;
    t_init(&t);
    Host h = { 0 };

    /* A first run creates everything, and leaves it when it stops. */
    host_start(&t, &h, "template", NULL);
    g_autofree char *log1 = host_stop(&h);
    g_assert_cmpuint(jet_test_count_lines(log1, "event=advisory-stream-created"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log1, "event=advisory-watch "), ==, 1);
    jsConsumerInfo *ci = jet_test_consumer_info(t.js, ADV, ADV_CONSUMER);
    g_assert_cmpstr(ci->Config->FilterSubject, ==, ADV_SUBJECT);
    jsConsumerInfo_Destroy(ci);

    /* No host runs: the message goes dark; the stream keeps the advisory. */
    publish(&t, 1, "dark-1");
    drive_dark(&t, 1);
    wait_msgs(&t, ADV, 1);
    g_assert_cmpuint(jet_test_stream_msgs(t.js, DLQ), ==, 0);

    host_start(&t, &h, "template", NULL);
    wait_msgs(&t, DLQ, 1);
    wait_adv_floor(&t, 1);
    g_autofree char *log2 = host_stop(&h);
    g_assert_cmpuint(jet_test_count_lines(log2, "event=max-deliveries-captured"), ==, 1);
    g_assert_cmpuint(stopped_count(log2, "captured"), ==, 1);
    g_assert_cmpuint(jet_test_stream_msgs(t.js, DLQ), ==, 1);
    assert_dark_record(&t, 1, 1, "t-1");

    /* Another goes dark while no host runs; the next start handles that one
     * alone: the first advisory was acked, and advisories come in order, so
     * a repeat of it would have come first. */
    publish(&t, 2, "dark-2");
    drive_dark(&t, 2);
    wait_msgs(&t, ADV, 2);
    host_start(&t, &h, "template", NULL);
    wait_msgs(&t, DLQ, 2);
    wait_adv_floor(&t, 2);
    g_autofree char *log3 = host_stop(&h);
    g_assert_cmpuint(jet_test_count_lines(log3, "event=max-deliveries-captured"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log3, "stream seq 2 (orders.new)"), ==, 1);
    g_assert_cmpuint(stopped_count(log3, "MAX_DELIVERIES advisories"), ==, 1);
    g_assert_cmpuint(jet_test_stream_msgs(t.js, DLQ), ==, 2);
    assert_dark_record(&t, 2, 2, "t-2");
    t_free(&t);
}

/* Raised while a host runs: a plain client takes the message while the
 * host's one worker is held in its handler by another. */
static void live(gboolean bind)
{
    T t;
    t_init(&t);
    const char *extra = "option.block_seq = 1\n";
    g_autofree char *bind_extra = NULL;
    if (bind) {
        /* The operator's consumer and DLQ stream; no advisory stream. */
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = "c";
        cc.AckPolicy = js_AckExplicit;
        cc.AckWait = G_GINT64_CONSTANT(2000000000);
        cc.MaxDeliver = MAX_DELIVER;
        jsConsumerInfo *ci = NULL;
        g_assert_cmpint(js_AddConsumer(&ci, t.js, "ORDERS", &cc, NULL, NULL), ==, NATS_OK);
        jsConsumerInfo_Destroy(ci);
        jet_test_stream_create(t.js, DLQ, "jethost.dlq.>");
        bind_extra = g_strdup_printf("%smanage = bind\nledger = false\n", extra);
        extra = bind_extra;
    }
    Host h = { 0 };
    /* The blocker's lease is kept by the host's +WPI: a longer AckWait
     * leaves them room on a loaded machine. */
    t.ack_wait_ms = 2000;
    host_start(&t, &h, "fx_gate", extra);

    publish(&t, 1, "blocker");
    g_autofree char *inflight = g_build_filename(t.gate, "inflight-1", NULL);
    g_assert_true(jet_test_wait_file(inflight, WAIT_MS));
    publish(&t, 2, "dark-2");
    drive_dark(&t, 2);
    wait_msgs(&t, DLQ, 1);
    assert_dark_record(&t, 1, 2, "t-2");

    g_autofree char *go = g_build_filename(t.gate, "go-1", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    g_autofree char *log = host_stop(&h);
    g_assert_cmpuint(jet_test_count_lines(log, "event=max-deliveries-captured"), ==, 1);
    g_assert_cmpuint(stopped_count(log, "captured"), ==, 1);
    g_assert_cmpuint(jet_test_stream_msgs(t.js, DLQ), ==, 1);
    jsStreamInfo *si = NULL;
    natsStatus s = js_GetStreamInfo(&si, t.js, ADV, NULL, NULL);
    jsStreamInfo_Destroy(si);
    if (bind) {
        g_assert_cmpint(s, !=, NATS_OK);
        g_assert_cmpuint(jet_test_count_lines(log, "event=advisories-not-kept"), ==, 1);
    } else {
        g_assert_cmpint(s, ==, NATS_OK);
        g_assert_cmpuint(jet_test_count_lines(log, "event=advisories-not-kept"), ==, 0);
        wait_adv_floor(&t, 1);
    }
    t_free(&t);
}

static void test_live_managed(void)
{
    live(FALSE);
}

static void test_live_bind(void)
{
    live(TRUE);
}

/* Gone from the stream before its advisory is handled. */
static void test_lost(void)
{
    T t;
    t_init(&t);
    Host h = { 0 };
    host_start(&t, &h, "template", NULL);
    g_free(host_stop(&h));

    publish(&t, 1, "dark-1");
    drive_dark(&t, 1);
    wait_msgs(&t, ADV, 1);
    jsErrCode jerr = 0;
    g_assert_cmpint(js_DeleteMsg(t.js, "ORDERS", 1, NULL, &jerr), ==, NATS_OK);

    host_start(&t, &h, "template", NULL);
    wait_log(&h, "event=max-deliveries-lost");
    wait_adv_floor(&t, 1);
    g_autofree char *log = host_stop(&h);
    g_assert_cmpuint(jet_test_count_lines(log, "event=max-deliveries-lost"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "level=error binding=orders event=max-deliveries-lost"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "stream seq 1: "), >=, 1);
    g_assert_cmpuint(stopped_count(log, "lost"), ==, 1);
    g_assert_cmpuint(stopped_count(log, "captured"), ==, 0);
    g_assert_cmpuint(jet_test_stream_msgs(t.js, DLQ), ==, 0);
    /* Acked once, not redelivered. */
    jsConsumerInfo *ci = jet_test_consumer_info(t.js, ADV, ADV_CONSUMER);
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    t_free(&t);
}

/* A record forged under the id the capture will use, before the host
 * captures: the duplicate pub-ack is read back, found to be another
 * message's, and the capture goes again under a distinct id. */
static void test_collision(void)
{
    T t;
    t_init(&t);
    Host h = { 0 };
    host_start(&t, &h, "template", NULL);
    g_free(host_stop(&h));
    publish(&t, 1, "dark-1");
    drive_dark(&t, 1);
    wait_msgs(&t, ADV, 1);

    g_autofree char *id =
        g_strdup_printf("jethost:ORDERS.c:1:%" G_GINT64_FORMAT, jet_test_stream_created(t.js, "ORDERS"));
    natsMsg *forged = NULL;
    g_assert_cmpint(natsMsg_Create(&forged, "jethost.dlq.orders", NULL, "forged", 6), ==, NATS_OK);
    natsMsgHeader_Set(forged, "Nats-Msg-Id", id);
    natsMsgHeader_Set(forged, "Jethost-Origin-Stream", "ORDERS");
    natsMsgHeader_Set(forged, "Jethost-Origin-Seq", "7");
    jsPubAck *pa = NULL;
    g_assert_cmpint(js_PublishMsg(&pa, t.js, forged, NULL, NULL), ==, NATS_OK);
    g_assert_cmpuint(pa->Sequence, ==, 1);
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(forged);

    host_start(&t, &h, "template", NULL);
    wait_msgs(&t, DLQ, 2);
    wait_adv_floor(&t, 1);
    g_autofree char *log = host_stop(&h);
    g_assert_cmpuint(jet_test_count_lines(log, "event=capture-collision"), ==, 1);
    g_assert_cmpuint(stopped_count(log, "captured"), ==, 1);
    g_assert_cmpuint(jet_test_stream_msgs(t.js, DLQ), ==, 2);
    Record rec;
    record_read(&t, DLQ, 2, &rec);
    g_autofree char *after = g_strdup_printf("%s:after-1", id);
    g_assert_cmpstr(hdr(&rec, "Nats-Msg-Id"), ==, after);
    g_assert_cmpstr(hdr(&rec, "Jethost-Cause"), ==, "max-deliveries");
    g_assert_cmpstr(hdr(&rec, "Jethost-Origin-Seq"), ==, "1");
    record_clear(&rec);
    t_free(&t);
}

static void publish_advisory(T *t, const char *body)
{
    jsPubAck *pa = NULL;
    g_assert_cmpint(js_Publish(&pa, t->js, ADV_SUBJECT, body, (int)strlen(body), NULL, NULL), ==, NATS_OK);
    jsPubAck_Destroy(pa);
}

/* The engine dead-lettered the message itself; an advisory for it (here a
 * forged one: a real one never follows an ack) finds that record. */
static void test_same_id_as_engine(void)
{
    T t;
    t_init(&t);
    Host h = { 0 };
    host_start(&t, &h, "fx_gate", "option.verdict = reject\n");
    publish(&t, 1, "rejected-1");
    wait_msgs(&t, DLQ, 1);

    publish_advisory(&t, "not json");
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *ts = g_date_time_format_iso8601(now);
    g_autofree char *body = g_strdup_printf("{\"type\":\"io.nats.jetstream.advisory.v1.max_deliver\",\"id\":\"f\","
                                            "\"timestamp\":\"%s\",\"stream\":\"ORDERS\",\"consumer\":\"c\","
                                            "\"stream_seq\":1,\"deliveries\":%d}", ts, MAX_DELIVER);
    publish_advisory(&t, body);
    wait_adv_floor(&t, 2);
    g_autofree char *log = host_stop(&h);
    g_assert_cmpuint(jet_test_count_lines(log, "event=advisory-invalid"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "already captured to"), ==, 1);
    g_assert_cmpuint(stopped_count(log, "already captured"), ==, 1);
    g_assert_cmpuint(stopped_count(log, "invalid"), ==, 1);
    g_assert_cmpuint(stopped_count(log, "captured"), ==, 0);
    g_assert_cmpuint(jet_test_stream_msgs(t.js, DLQ), ==, 1);
    Record rec;
    record_read(&t, DLQ, 1, &rec);
    g_assert_cmpstr(hdr(&rec, "Jethost-Cause"), ==, "rejected");
    record_clear(&rec);
    t_free(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/advisory/parse", test_parse);
    g_test_add_func("/advisory/kept-while-down", test_kept_while_down);
    g_test_add_func("/advisory/live-managed", test_live_managed);
    g_test_add_func("/advisory/live-bind", test_live_bind);
    g_test_add_func("/advisory/lost", test_lost);
    g_test_add_func("/advisory/collision", test_collision);
    g_test_add_func("/advisory/same-id-as-engine", test_same_id_as_engine);
    return g_test_run();
}
