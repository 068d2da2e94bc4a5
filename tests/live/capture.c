/* Capture-then-ack against a real nats-server: the record as stored, the
 * de-duplication of a repeated capture, rollup and expected-* headers that
 * must not act, the size limits, the DLQ stream in both modes, a missing DLQ
 * stream, and the confirmed ack.  `jethost dlq` is tests/live/dlq_cli.c's. */
#define _GNU_SOURCE
#include "harness.h"
#include "capture.h"
#include "replies.h"
#include "cli.h"
#include "config.h"
#include "errors.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef JetTestJs Fx;

static JetBindingConfig *binding(JetManage manage, const char *dlq_stream, const char *dlq_subject)
{
    JetBindingConfig *b = g_new0(JetBindingConfig, 1);
    b->name = g_strdup("orders");
    b->stream = g_strdup("ORDERS");
    b->consumer = g_strdup("c");
    b->manage = manage;
    b->dlq_stream = g_strdup(dlq_stream);
    b->dlq_subject = g_strdup(dlq_subject);
    return b;
}


static void facts_init(JetCaptureFacts *f, guint64 seq)
{
    memset(f, 0, sizeof *f);
    f->stream = "ORDERS";
    f->consumer = "c";
    f->subject = "orders.new";
    f->stream_seq = seq;
    f->deliveries = 2;
    f->failures = 1;
    f->cause = JET_CAUSE_REJECTED;
    f->reason = "bad order";
    f->has_enqueued = TRUE;
    f->enqueued_ns = g_get_real_time() * 1000;
    f->captured_ns = g_get_real_time() * 1000;
    f->plugin_name = "fx";
    f->plugin_version = "0.1";
    f->host = "test-host";
    f->binding = "orders";
}

static void dlq_managed(Fx *fx)
{
    g_autoptr(JetBindingConfig) b = binding(JET_MANAGE_CREATE, "JETHOST_DLQ", "jethost.dlq.orders");
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));
    g_assert_no_error(err);
}

static jsStreamInfo *stream_info(Fx *fx, const char *name)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, fx->js, name, NULL, &jerr);
    if (s != NATS_OK)
        g_error("stream info %s: %s (err %d)", name, natsStatus_GetText(s), (int)jerr);
    return si;
}

static guint64 stream_msgs(Fx *fx, const char *name)
{
    jsStreamInfo *si = stream_info(fx, name);
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

static natsMsg *get_msg(Fx *fx, const char *stream, guint64 seq)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetMsg(&m, fx->js, stream, seq, NULL, &jerr);
    if (s != NATS_OK)
        g_error("get %s:%" G_GUINT64_FORMAT ": %s (err %d)", stream, seq, natsStatus_GetText(s), (int)jerr);
    return m;
}

static const char *hget(natsMsg *m, const char *name)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, name, &v) != NATS_OK)
        return NULL;
    return v;
}

/* The record of an original built with natsMsgHeader_* (its pairs in
 * nats.c's order). */
static natsMsg *build_from(const char *subject, const char *data, int len, natsMsg *o, const JetCaptureFacts *f,
                           gint64 max, JetCaptureBuild *r, GError **err)
{
    g_autoptr(GPtrArray) hs = o != NULL ? jet_capture_msg_headers(o) : NULL;
    return jet_capture_build(subject, data, len, hs, NULL, f, max, r, err);
}

static natsMsg *capture(Fx *fx, natsMsg *orig, const JetCaptureFacts *f, const char *data, int len,
                        JetCaptureBuild *r)
{
    g_autoptr(GError) err = NULL;
    natsMsg *m = build_from("jethost.dlq.orders", data, len, orig, f,
                                   jet_capture_max_payload(fx->nc, fx->js, "JETHOST_DLQ"), r, &err);
    g_assert_no_error(err);
    g_assert_nonnull(m);
    return m;
}

static JetCaptureOutcome publish(Fx *fx, natsMsg *m, gboolean *dup)
{
    g_autoptr(GError) err = NULL;
    JetCapturePubAck ack;
    JetCaptureOutcome o = jet_capture_publish(fx->js, m, 5000, &ack, &err);
    if (dup != NULL)
        *dup = ack.duplicate;
    if (o != JET_CAPTURE_CAPTURED)
        g_test_message("publish: %s: %s", jet_capture_outcome_name(o), err != NULL ? err->message : "?");
    return o;
}

/* The same record through jet_capture_store, the path the engine takes (its
 * pub-ack read on this thread's own inbox, replies.h). */
static JetCaptureOutcome store(Fx *fx, JetCaptureFacts *f, const char *data, int len, JetCaptureStored *out,
                               GError **err)
{
    return jet_capture_store(fx->nc, fx->js, "jethost.dlq.orders", data, len, NULL, f,
                             jet_capture_max_payload(fx->nc, fx->js, "JETHOST_DLQ"), 2000, NULL, out, err);
}

/* Managed ensure creates the DLQ stream as documented; the record is stored
 * with its headers renamed, its provenance and the Msg-Id. */
static void test_managed_and_record(Fx *fx, gconstpointer data)
{
    (void)data;
    dlq_managed(fx);
    jsStreamInfo *si = stream_info(fx, "JETHOST_DLQ");
    g_assert_cmpint(si->Config->SubjectsLen, ==, 1);
    g_assert_cmpstr(si->Config->Subjects[0], ==, "jethost.dlq.>");
    g_assert_cmpint(si->Config->Storage, ==, js_FileStorage);
    g_assert_cmpint(si->Config->Retention, ==, js_LimitsPolicy);
    g_assert_cmpint(si->Config->Duplicates, ==, JET_DLQ_DUPLICATE_WINDOW_NS);
    g_assert_false(si->Config->AllowRollup);
    jsStreamInfo_Destroy(si);
    /* Again: the existing stream is accepted as it is. */
    dlq_managed(fx);

    natsMsg *o = NULL;
    natsMsg_Create(&o, "orders.new", NULL, "hello", 5);
    natsMsgHeader_Set(o, "Nats-Msg-Id", "app-id-7");
    natsMsgHeader_Set(o, "Nats-Expected-Stream", "ELSEWHERE");   /* would be refused if it acted */
    natsMsgHeader_Set(o, "X-App", "v");
    JetCaptureFacts f;
    facts_init(&f, 7);
    natsMsg *m = capture(fx, o, &f, "hello", 5, NULL);
    gboolean dup = TRUE;
    g_assert_cmpint(publish(fx, m, &dup), ==, JET_CAPTURE_CAPTURED);
    g_assert_false(dup);
    natsMsg_Destroy(m);
    natsMsg_Destroy(o);

    natsMsg *rec = get_msg(fx, "JETHOST_DLQ", 1);
    g_assert_cmpstr(natsMsg_GetSubject(rec), ==, "jethost.dlq.orders");
    g_assert_cmpmem(natsMsg_GetData(rec), natsMsg_GetDataLength(rec), "hello", 5);
    g_assert_cmpstr(hget(rec, "Nats-Msg-Id"), ==, "jethost:ORDERS.c:7");
    g_assert_cmpstr(hget(rec, "Jethost-Orig-Nats_Msg-Id"), ==, "app-id-7");
    g_assert_cmpstr(hget(rec, "Jethost-Orig-Nats_Expected-Stream"), ==, "ELSEWHERE");
    g_assert_null(hget(rec, "Nats-Expected-Stream"));
    g_assert_cmpstr(hget(rec, "X-App"), ==, "v");
    g_assert_cmpstr(hget(rec, JET_HDR_ORIGIN_STREAM), ==, "ORDERS");
    g_assert_cmpstr(hget(rec, JET_HDR_ORIGIN_SEQ), ==, "7");
    g_assert_cmpstr(hget(rec, JET_HDR_ORIGIN_SUBJECT), ==, "orders.new");
    g_assert_cmpstr(hget(rec, JET_HDR_ORIGIN_CONSUMER), ==, "c");
    g_assert_cmpstr(hget(rec, JET_HDR_CAUSE), ==, "rejected");
    g_assert_cmpstr(hget(rec, JET_HDR_REASON), ==, "bad order");
    g_assert_cmpstr(hget(rec, JET_HDR_DELIVERIES), ==, "2");
    g_assert_cmpstr(hget(rec, JET_HDR_HOST), ==, "test-host");
    g_assert_nonnull(hget(rec, JET_HDR_CAPTURED));
    g_assert_nonnull(hget(rec, JET_HDR_ENQUEUED));
    natsMsg_Destroy(rec);
}

/* A capture published twice (a lost ack, a crash after the pub-ack) leaves
 * one record: the second pub-ack is a duplicate.  Each original carries its
 * own Nats-Msg-Id and up to 1,100 other headers: nats-server 2.9.10 reads
 * the first occurrence of "Nats-Msg-Id" in the block, and the record's own
 * is its first line, so no number of carried headers can hide it. */
static void test_duplicate(Fx *fx, gconstpointer data)
{
    (void)data;
    dlq_managed(fx);
    const guint extra[] = { 0, 3, 40, 1100 };
    for (guint seq = 1; seq <= G_N_ELEMENTS(extra); seq++) {
        natsMsg *o = NULL;
        natsMsg_Create(&o, "orders.new", NULL, "x", 1);
        g_autofree char *id = g_strdup_printf("app-%u", seq);
        natsMsgHeader_Set(o, "Nats-Msg-Id", id);
        for (guint k = 0; k < extra[seq - 1]; k++) {
            g_autofree char *name = g_strdup_printf("X-H%u-%u", seq, k);
            natsMsgHeader_Set(o, name, "v");
        }
        JetCaptureFacts f;
        facts_init(&f, seq);
        g_auto(JetCaptureBuild) r = { 0 };
        natsMsg *m = capture(fx, o, &f, "x", 1, &r);
        g_assert_false(r.headers_dropped);
        gboolean dup = TRUE;
        g_assert_cmpint(publish(fx, m, &dup), ==, JET_CAPTURE_CAPTURED);
        g_assert_false(dup);
        /* The same capture rebuilt later (another host, another delivery). */
        f.deliveries = 3;
        f.captured_ns += 1000;
        natsMsg *again = capture(fx, o, &f, "x", 1, NULL);
        g_assert_cmpint(publish(fx, again, &dup), ==, JET_CAPTURE_CAPTURED);
        g_assert_true(dup);
        natsMsg_Destroy(again);
        natsMsg_Destroy(m);
        natsMsg_Destroy(o);
    }
    g_assert_cmpuint(stream_msgs(fx, "JETHOST_DLQ"), ==, G_N_ELEMENTS(extra));

    /* Through the store: a new record, then the same capture again found to
     * be this message's (the pub-ack's duplicate flag and sequence read). */
    JetCaptureFacts f;
    facts_init(&f, 99);
    JetCaptureStored first, again;
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(store(fx, &f, "x", 1, &first, &err), ==, JET_CAPTURE_CAPTURED);
    g_assert_no_error(err);
    g_assert_false(first.duplicate);
    g_assert_cmpuint(first.seq, ==, G_N_ELEMENTS(extra) + 1);
    g_assert_cmpstr(first.stream, ==, "JETHOST_DLQ");
    f.deliveries = 3;
    g_assert_cmpint(store(fx, &f, "x", 1, &again, &err), ==, JET_CAPTURE_CAPTURED);
    g_assert_no_error(err);
    g_assert_true(again.duplicate);
    g_assert_cmpuint(again.seq, ==, first.seq);
    g_assert_cmpuint(stream_msgs(fx, "JETHOST_DLQ"), ==, G_N_ELEMENTS(extra) + 1);
}

/* Two consumers of one stream that both give up on the same sequence make
 * two records: neither capture is swallowed as the other's duplicate. */
static void test_two_consumers(Fx *fx, gconstpointer data)
{
    (void)data;
    dlq_managed(fx);
    JetCaptureFacts f;
    facts_init(&f, 5);
    natsMsg *a = capture(fx, NULL, &f, "x", 1, NULL);
    f.consumer = "other";
    natsMsg *b = capture(fx, NULL, &f, "x", 1, NULL);
    gboolean dup = TRUE;
    g_assert_cmpint(publish(fx, a, &dup), ==, JET_CAPTURE_CAPTURED);
    g_assert_false(dup);
    g_assert_cmpint(publish(fx, b, &dup), ==, JET_CAPTURE_CAPTURED);
    g_assert_false(dup);
    g_assert_cmpuint(stream_msgs(fx, "JETHOST_DLQ"), ==, 2);
    natsMsg_Destroy(a);
    natsMsg_Destroy(b);
}

/* Nats-Rollup: all and Nats-Expected-Last-Sequence: 1 on the original: on a
 * DLQ stream that allows rollups the capture is stored and purges nothing. */
static void test_rollup_expected(Fx *fx, gconstpointer data)
{
    (void)data;
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "JETHOST_DLQ";
    const char *subjects[] = { "jethost.dlq.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.AllowRollup = true;
    sc.Duplicates = JET_DLQ_DUPLICATE_WINDOW_NS;
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_AddStream(&si, fx->js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si);
    g_autoptr(JetBindingConfig) b = binding(JET_MANAGE_BIND, "JETHOST_DLQ", "jethost.dlq.orders");
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));

    for (guint seq = 1; seq <= 2; seq++) {
        JetCaptureFacts f;
        facts_init(&f, seq);
        natsMsg *m = capture(fx, NULL, &f, "earlier", 7, NULL);
        g_assert_cmpint(publish(fx, m, NULL), ==, JET_CAPTURE_CAPTURED);
        natsMsg_Destroy(m);
    }
    natsMsg *o = NULL;
    natsMsg_Create(&o, "orders.new", NULL, "r", 1);
    natsMsgHeader_Set(o, "Nats-Rollup", "all");
    natsMsgHeader_Set(o, "Nats-Expected-Last-Sequence", "1");
    JetCaptureFacts f;
    facts_init(&f, 3);
    natsMsg *m = capture(fx, o, &f, "r", 1, NULL);
    g_assert_cmpint(publish(fx, m, NULL), ==, JET_CAPTURE_CAPTURED);
    natsMsg_Destroy(m);
    natsMsg_Destroy(o);
    si = stream_info(fx, "JETHOST_DLQ");
    g_assert_cmpuint(si->State.Msgs, ==, 3);
    g_assert_cmpuint(si->State.FirstSeq, ==, 1);
    jsStreamInfo_Destroy(si);
    natsMsg *rec = get_msg(fx, "JETHOST_DLQ", 3);
    g_assert_cmpstr(hget(rec, "Jethost-Orig-Nats_Rollup"), ==, "all");
    g_assert_cmpstr(hget(rec, "Jethost-Orig-Nats_Expected-Last-Sequence"), ==, "1");
    natsMsg_Destroy(rec);
}

/* Near the server's max_payload with many headers: captured without them
 * (names listed), at exactly the limit; over it with the provenance alone:
 * too-large and nothing published.  Also the publish side: a message over
 * the limit is TOO_LARGE, not FAILED. */
static void test_too_large(Fx *fx, gconstpointer data)
{
    (void)data;
    dlq_managed(fx);
    gint64 max = jet_capture_max_payload(fx->nc, fx->js, "JETHOST_DLQ");
    g_assert_cmpint(max, ==, natsConnection_GetMaxPayload(fx->nc));
    g_assert_cmpint(max, >, 0);

    natsMsg *o = NULL;
    natsMsg_Create(&o, "orders.new", NULL, NULL, 0);
    for (int i = 0; i < 200; i++) {
        g_autofree char *k = g_strdup_printf("X-Header-%03d", i);
        natsMsgHeader_Set(o, k, "some header value");
    }
    natsMsgHeader_Set(o, "Nats-Msg-Id", "app");
    JetCaptureFacts f;
    facts_init(&f, 11);
    /* Size of the provenance-only record with the dropped list: build once
     * with a payload that cannot fit beside the headers. */
    g_autofree char *data_buf = g_malloc((gsize)max + 1);
    memset(data_buf, 'z', (gsize)max + 1);
    g_auto(JetCaptureBuild) probe = { 0 };
    natsMsg *m = build_from("jethost.dlq.orders", data_buf, (int)(max - 4500), o, &f, max, &probe, NULL);
    g_assert_nonnull(m);
    g_assert_true(probe.headers_dropped);
    natsMsg_Destroy(m);
    /* Now exactly at the limit. */
    int len = (int)(max - probe.header_bytes);
    g_auto(JetCaptureBuild) r = { 0 };
    m = capture(fx, o, &f, data_buf, len, &r);
    g_assert_true(r.headers_dropped);
    g_assert_cmpint(r.total_bytes, ==, max);
    g_assert_cmpint(publish(fx, m, NULL), ==, JET_CAPTURE_CAPTURED);
    natsMsg_Destroy(m);
    natsMsg *rec = get_msg(fx, "JETHOST_DLQ", 1);
    g_assert_cmpint(natsMsg_GetDataLength(rec), ==, len);
    g_assert_null(hget(rec, "X-Header-000"));
    g_assert_null(hget(rec, "Jethost-Orig-Nats_Msg-Id"));
    const char *list = hget(rec, JET_HDR_DROPPED_HEADERS);
    g_assert_nonnull(list);
    g_assert_nonnull(strstr(list, "X-Header-000"));
    g_assert_nonnull(strstr(list, "X-Header-199"));
    g_assert_nonnull(strstr(list, "Jethost-Orig-Nats_Msg-Id"));
    g_assert_cmpstr(hget(rec, JET_HDR_ORIGIN_SEQ), ==, "11");
    natsMsg_Destroy(rec);

    /* One byte more than fits with the provenance alone. */
    facts_init(&f, 12);
    g_autoptr(GError) err = NULL;
    m = build_from("jethost.dlq.orders", data_buf, len + 1, o, &f, max, NULL, &err);
    g_assert_null(m);
    g_assert_error(err, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE);
    g_clear_error(&err);
    /* Built without a limit, the server's refusal is TOO_LARGE. */
    m = build_from("jethost.dlq.orders", data_buf, (int)max + 1, NULL, &f, 0, NULL, &err);
    g_assert_nonnull(m);
    g_assert_cmpint(jet_capture_publish(fx->js, m, 5000, NULL, &err), ==, JET_CAPTURE_TOO_LARGE);
    g_assert_error(err, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE);
    natsMsg_Destroy(m);
    natsMsg_Destroy(o);
    g_assert_cmpuint(stream_msgs(fx, "JETHOST_DLQ"), ==, 1);
}

/* A DLQ stream's own max_msg_size lowers the limit. */
static void test_stream_max_msg_size(Fx *fx, gconstpointer data)
{
    (void)data;
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "JETHOST_DLQ";
    const char *subjects[] = { "jethost.dlq.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.MaxMsgSize = 2000;
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_AddStream(&si, fx->js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si);
    g_assert_cmpint(jet_capture_max_payload(fx->nc, fx->js, "JETHOST_DLQ"), ==, 2000);
    /* Without that limit the server refuses it for size: TOO_LARGE. */
    JetCaptureFacts f;
    facts_init(&f, 1);
    g_autofree char *buf = g_malloc0(3000);
    memset(buf, 'q', 2999);
    natsMsg *m = build_from("jethost.dlq.orders", buf, 2500, NULL, &f, 0, NULL, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(jet_capture_publish(fx->js, m, 5000, NULL, &err), ==, JET_CAPTURE_TOO_LARGE);
    g_test_message("%s", err->message);
    natsMsg_Destroy(m);
    /* The store's own reading of the refusal: the same outcome, the
     * server's code in the reason.  (Told the limit, the record would be
     * built without it; 0 here makes the server refuse it.) */
    g_clear_error(&err);
    JetCaptureStored st;
    g_assert_cmpint(jet_capture_store(fx->nc, fx->js, "jethost.dlq.orders", buf, 2500, NULL, &f, 0, 2000, NULL, &st,
                                      &err), ==, JET_CAPTURE_TOO_LARGE);
    g_test_message("store: %s", err->message);
    g_assert_nonnull(strstr(err->message, "[err 10054]"));
}

/* Bind mode never creates; it checks existence and coverage. */
static void test_bind_mode(Fx *fx, gconstpointer data)
{
    (void)data;
    g_autoptr(JetBindingConfig) b = binding(JET_MANAGE_BIND, "JETHOST_DLQ", "jethost.dlq.orders");
    g_autoptr(GError) err = NULL;
    g_assert_false(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));
    g_assert_error(err, JET_ERROR, JET_ERROR_SERVER);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "JETHOST_DLQ does not exist"));
    g_assert_nonnull(strstr(err->message, "bind"));
    g_assert_nonnull(strstr(err->message, "jethost.dlq.orders"));
    g_clear_error(&err);
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, fx->js, "JETHOST_DLQ", NULL, NULL), !=, NATS_OK);

    jet_test_stream_create(fx->js, "JETHOST_DLQ", "other.dlq.*");
    g_assert_false(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "does not capture"));
    g_assert_nonnull(strstr(err->message, "other.dlq.*"));
    g_clear_error(&err);
    /* Managed mode does not reshape an existing stream either. */
    b->manage = JET_MANAGE_CREATE;
    g_assert_false(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));
    g_clear_error(&err);

    jet_test_stream_create(fx->js, "DLQ2", "team.*.dead");
    g_autoptr(JetBindingConfig) b2 = binding(JET_MANAGE_BIND, "DLQ2", "team.orders.dead");
    g_assert_true(jet_dlq_stream_ensure(fx->nc, fx->js, b2, &err));
    g_assert_no_error(err);

    /* Managed, a subject outside jethost.dlq.: the stream takes that subject. */
    g_autoptr(JetBindingConfig) b3 = binding(JET_MANAGE_CREATE, "DLQ3", "mine.dead");
    g_assert_true(jet_dlq_stream_ensure(fx->nc, fx->js, b3, &err));
    g_assert_no_error(err);
    si = stream_info(fx, "DLQ3");
    g_assert_cmpint(si->Config->SubjectsLen, ==, 1);
    g_assert_cmpstr(si->Config->Subjects[0], ==, "mine.dead");
    jsStreamInfo_Destroy(si);
}

/* With no DLQ stream the publish fails at once (no responders), never a
 * timeout, and the caller keeps the message. */
static void test_publish_missing_stream(Fx *fx, gconstpointer data)
{
    (void)data;
    JetCaptureFacts f;
    facts_init(&f, 1);
    natsMsg *m = capture(fx, NULL, &f, "x", 1, NULL);
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_capture_publish(fx->js, m, 5000, NULL, &err), ==, JET_CAPTURE_FAILED);
    gint64 ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("%s (%" G_GINT64_FORMAT " ms)", err->message, ms);
    g_assert_cmpint(ms, <, 1000);
    g_assert_nonnull(strstr(err->message, "no responders"));
    natsMsg_Destroy(m);
    /* Through the store: the same answer, and the thread's next request,
     * on a new inbox, still gets its own answer. */
    g_clear_error(&err);
    t0 = g_get_monotonic_time();
    g_assert_cmpint(store(fx, &f, "x", 1, NULL, &err), ==, JET_CAPTURE_FAILED);
    g_test_message("store: %s", err->message);
    g_assert_cmpint((g_get_monotonic_time() - t0) / 1000, <, 1000);
    g_assert_nonnull(strstr(err->message, "no responders"));
    dlq_managed(fx);
    g_clear_error(&err);
    g_assert_cmpint(store(fx, &f, "x", 1, NULL, &err), ==, JET_CAPTURE_CAPTURED);
    g_assert_no_error(err);
}

/* A stream that refuses (a sealed one: no new messages) is FAILED with the
 * server's reason, not captured. */
static void test_publish_refused(Fx *fx, gconstpointer data)
{
    (void)data;
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "JETHOST_DLQ";
    const char *subjects[] = { "jethost.dlq.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.MaxMsgs = 1;
    sc.Discard = js_DiscardNew;
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_AddStream(&si, fx->js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si);
    JetCaptureFacts f;
    facts_init(&f, 1);
    natsMsg *m = capture(fx, NULL, &f, "x", 1, NULL);
    g_assert_cmpint(publish(fx, m, NULL), ==, JET_CAPTURE_CAPTURED);
    natsMsg_Destroy(m);
    facts_init(&f, 2);
    m = capture(fx, NULL, &f, "x", 1, NULL);
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(jet_capture_publish(fx->js, m, 5000, NULL, &err), ==, JET_CAPTURE_FAILED);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "refused"));
    natsMsg_Destroy(m);
    g_clear_error(&err);
    facts_init(&f, 3);
    g_assert_cmpint(store(fx, &f, "x", 1, NULL, &err), ==, JET_CAPTURE_FAILED);
    g_test_message("store: %s", err->message);
    g_assert_nonnull(strstr(err->message, "refused"));
    g_assert_nonnull(strstr(err->message, "[err 10077]"));
}

static natsMsg *pull_one(Fx *fx)
{
    natsMsg *m = NULL;
    natsStatus s = natsConnection_RequestString(&m, fx->nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c",
                                                "{\"batch\":1,\"expires\":2000000000}", 3000);
    g_assert_cmpint(s, ==, NATS_OK);
    g_assert_true(g_str_has_prefix(natsMsg_GetReply(m), "$JS.ACK.ORDERS.c."));
    return m;
}

/* The confirmed ack: TRUE on a live delivery (and the server applied it),
 * FALSE with "no responders" once the consumer is gone. */
static void test_ack_confirmed(Fx *fx, gconstpointer data)
{
    (void)data;
    jet_test_stream_create(fx->js, "ORDERS", "orders.>");
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "c";
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = G_GINT64_CONSTANT(30000000000);
    jsConsumerInfo *ci = NULL;
    g_assert_cmpint(js_AddConsumer(&ci, fx->js, "ORDERS", &cc, NULL, NULL), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);
    jet_test_publish_n(fx->js, "orders.new", 2);

    natsMsg *m = pull_one(fx);
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_ack_confirmed(fx->nc, natsMsg_GetReply(m), 2000, &err));
    g_assert_no_error(err);
    natsMsg_Destroy(m);
    ci = jet_test_consumer_info(fx->js, "ORDERS", "c");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 1);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    jsConsumerInfo_Destroy(ci);

    m = pull_one(fx);
    g_assert_cmpint(js_DeleteConsumer(fx->js, "ORDERS", "c", NULL, NULL), ==, NATS_OK);
    gint64 t0 = g_get_monotonic_time();
    g_assert_false(jet_ack_confirmed(fx->nc, natsMsg_GetReply(m), 2000, &err));
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "no responders"));
    g_assert_cmpint((g_get_monotonic_time() - t0) / 1000, <, 1000);
    natsMsg_Destroy(m);
}

/* A responder that answers "late" 300 ms after the request, for
 * test_replies_late_answer. */
static void answer_late(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)sub;
    (void)closure;
    g_usleep(300 * 1000);
    natsConnection_PublishString(nc, natsMsg_GetReply(m), "late");
    natsMsg_Destroy(m);
}

static void answer_now(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)sub;
    (void)closure;
    natsConnection_PublishString(nc, natsMsg_GetReply(m), natsMsg_GetData(m));
    natsMsg_Destroy(m);
}

/* A thread's own inbox: an answer that comes after its request timed out
 * never answers the thread's next request; "no responders" answers its
 * own request at once, and the next one is answered again.  A connection
 * the thread asked on and that was closed since is let go at its next
 * request. */
static void test_replies_late_answer(Fx *fx, gconstpointer data)
{
    (void)data;
    natsSubscription *slow = NULL, *fast = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&slow, fx->nc, "svc.slow", answer_late, NULL), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Subscribe(&fast, fx->nc, "svc.fast", answer_now, NULL), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(fx->nc), ==, NATS_OK);
    natsMsg *reply = NULL;
    g_assert_cmpint(jet_replies_request(fx->nc, "svc.slow", "a", 1, 100, &reply), ==, NATS_TIMEOUT);
    g_assert_null(reply);
    for (int i = 0; i < 5; i++) {
        /* The late answer arrives during one of these. */
        g_autofree char *body = g_strdup_printf("n%d", i);
        g_assert_cmpint(jet_replies_request(fx->nc, "svc.fast", body, (int)strlen(body) + 1, 2000, &reply), ==,
                        NATS_OK);
        g_assert_cmpstr(natsMsg_GetData(reply), ==, body);
        natsMsg_Destroy(reply);
        g_usleep(100 * 1000);
    }
    g_assert_cmpint(jet_replies_request(fx->nc, "svc.none", "a", 1, 2000, &reply), ==, NATS_NO_RESPONDERS);
    g_assert_cmpint(jet_replies_request(fx->nc, "svc.fast", "b", 2, 2000, &reply), ==, NATS_OK);
    g_assert_cmpstr(natsMsg_GetData(reply), ==, "b");
    natsMsg_Destroy(reply);

    natsConnection *other = NULL;
    g_assert_cmpint(natsConnection_ConnectTo(&other, fx->url), ==, NATS_OK);
    g_assert_cmpint(jet_replies_request(other, "svc.fast", "o", 2, 2000, &reply), ==, NATS_OK);
    g_assert_cmpstr(natsMsg_GetData(reply), ==, "o");
    jet_replies_free_later(other, reply);
    natsConnection_Close(other);
    natsConnection_Destroy(other);
    g_assert_cmpint(jet_replies_request(fx->nc, "svc.fast", "d", 2, 2000, &reply), ==, NATS_OK);
    g_assert_cmpstr(natsMsg_GetData(reply), ==, "d");
    natsMsg_Destroy(reply);
    natsSubscription_Destroy(slow);
    natsSubscription_Destroy(fast);
}

static void answer_twice(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)sub;
    (void)closure;
    natsConnection_PublishString(nc, natsMsg_GetReply(m), "first");
    natsConnection_PublishString(nc, natsMsg_GetReply(m), "again");
    natsMsg_Destroy(m);
}

/* Two answers to one request: the second never answers the next request.
 * And a paused server: a request to a subject nobody serves times out
 * while it sleeps, and the server's "no responders", sent once it wakes,
 * must not answer the next request (nats.c hands that one over without
 * its subject, so only a new inbox keeps it out). */
static void test_replies_stray_answers(Fx *fx, gconstpointer data)
{
    (void)data;
    natsSubscription *twice = NULL, *fast = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&twice, fx->nc, "svc.twice", answer_twice, NULL), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Subscribe(&fast, fx->nc, "svc.fast", answer_now, NULL), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(fx->nc), ==, NATS_OK);
    natsMsg *reply = NULL;
    g_assert_cmpint(jet_replies_request(fx->nc, "svc.twice", "a", 1, 2000, &reply), ==, NATS_OK);
    g_assert_cmpstr(natsMsg_GetData(reply), ==, "first");
    natsMsg_Destroy(reply);
    g_usleep(200 * 1000);   /* "again" is in the inbox by now */
    g_assert_cmpint(jet_replies_request(fx->nc, "svc.fast", "b", 2, 2000, &reply), ==, NATS_OK);
    g_assert_cmpstr(natsMsg_GetData(reply), ==, "b");
    natsMsg_Destroy(reply);

    jet_test_server_pause(fx->srv);
    g_assert_cmpint(jet_replies_request(fx->nc, "svc.none", "a", 1, 300, &reply), ==, NATS_TIMEOUT);
    jet_test_server_resume(fx->srv);
    for (int i = 0; i < 3; i++) {
        g_autofree char *body = g_strdup_printf("c%d", i);
        g_assert_cmpint(jet_replies_request(fx->nc, "svc.fast", body, (int)strlen(body) + 1, 5000, &reply), ==,
                        NATS_OK);
        g_assert_cmpstr(natsMsg_GetData(reply), ==, body);
        natsMsg_Destroy(reply);
    }
    natsSubscription_Destroy(twice);
    natsSubscription_Destroy(fast);
}

/* The store's pub-ack and the confirmed ack's answer are addressed to the
 * asking thread's own inbox (a second connection sees where they go), not
 * to nats.c's shared one. */
static void test_replies_direct(Fx *fx, gconstpointer data)
{
    (void)data;
    dlq_managed(fx);
    natsConnection *spy_nc = NULL;
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(natsConnection_ConnectTo(&spy_nc, fx->url), ==, NATS_OK);
    natsSubscription *spy = NULL;
    g_assert_cmpint(natsConnection_SubscribeSync(&spy, spy_nc, "_INBOX.>"), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(spy_nc), ==, NATS_OK);
    JetReplies *mine = jet_replies_here(fx->nc, NULL);
    g_assert_nonnull(mine);
    g_autofree char *prefix = g_strdup(jet_replies_subject(mine));
    *strrchr(prefix, '.') = '\0';
    JetCaptureFacts f;
    facts_init(&f, 7);
    g_assert_cmpint(store(fx, &f, "x", 1, NULL, &err), ==, JET_CAPTURE_CAPTURED);
    g_assert_no_error(err);
    guint direct = 0;
    natsMsg *m = NULL;
    while (natsSubscription_NextMsg(&m, spy, 500) == NATS_OK) {
        const char *subj = natsMsg_GetSubject(m);
        g_test_message("answer to %s: %.*s", subj, natsMsg_GetDataLength(m), natsMsg_GetData(m));
        if (g_str_has_prefix(subj, prefix) && strstr(natsMsg_GetData(m), "\"JETHOST_DLQ\"") != NULL)
            direct++;
        natsMsg_Destroy(m);
    }
    g_assert_cmpuint(direct, ==, 1);

    /* The confirmed ack's answer (empty) too. */
    jet_test_stream_create(fx->js, "ORDERS", "orders.>");
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "c";
    cc.AckPolicy = js_AckExplicit;
    jsConsumerInfo *ci = NULL;
    g_assert_cmpint(js_AddConsumer(&ci, fx->js, "ORDERS", &cc, NULL, NULL), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);
    jet_test_publish_n(fx->js, "orders.new", 1);
    natsMsg *orig = pull_one(fx);
    while (natsSubscription_NextMsg(&m, spy, 300) == NATS_OK)   /* the pull's own answer */
        natsMsg_Destroy(m);
    mine = jet_replies_here(fx->nc, NULL);
    g_free(prefix);
    prefix = g_strdup(jet_replies_subject(mine));
    *strrchr(prefix, '.') = '\0';
    g_assert_true(jet_ack_confirmed(fx->nc, natsMsg_GetReply(orig), 2000, &err));
    g_assert_no_error(err);
    natsMsg_Destroy(orig);
    guint acked = 0;
    while (natsSubscription_NextMsg(&m, spy, 500) == NATS_OK) {
        g_test_message("answer to %s: %d bytes", natsMsg_GetSubject(m), natsMsg_GetDataLength(m));
        if (g_str_has_prefix(natsMsg_GetSubject(m), prefix) && natsMsg_GetDataLength(m) == 0)
            acked++;
        natsMsg_Destroy(m);
    }
    g_assert_cmpuint(acked, ==, 1);
    natsSubscription_Destroy(spy);
    natsConnection_Destroy(spy_nc);
}

/* dlq_ttl: a managed DLQ stream is made with allow_msg_ttl, each record
 * carries Nats-TTL and the server removes it then (2.11 and later); a
 * stream without the setting, or a server that does not know it, is a
 * config error naming the stream, in both modes. */
static gboolean stream_empty(gpointer data)
{
    Fx *fx = data;
    return stream_msgs(fx, "TTL_DLQ") == 0;
}

static void test_dlq_ttl(Fx *fx, gconstpointer data)
{
    (void)data;
    guint version = jet_test_server_version();
    g_autoptr(JetBindingConfig) b = binding(JET_MANAGE_CREATE, "TTL_DLQ", "jethost.dlq.orders");
    b->dlq_ttl_ms = 2000;
    g_autoptr(GError) err = NULL;
    if (version < 21100) {
        g_assert_false(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));
        g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
        g_test_message("nats-server %u: %s", version, err->message);
        g_assert_nonnull(strstr(err->message, "a server before 2.11"));
        g_clear_error(&err);
        /* And once made, it is refused as any stream without the setting. */
    } else {
        g_assert_true(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));
        g_assert_no_error(err);
        /* Found again: accepted. */
        g_assert_true(jet_dlq_stream_ensure(fx->nc, fx->js, b, &err));
        JetCaptureFacts f;
        facts_init(&f, 7);
        f.ttl_s = b->dlq_ttl_ms / 1000;
        natsMsg *m = build_from("jethost.dlq.orders", "x", 1, NULL, &f, 0, NULL, &err);
        g_assert_nonnull(m);
        JetCapturePubAck ack;
        g_assert_cmpint(jet_capture_publish(fx->js, m, 5000, &ack, &err), ==, JET_CAPTURE_CAPTURED);
        natsMsg_Destroy(m);
        natsMsg *rec = jet_test_stream_get(fx->js, "TTL_DLQ", ack.seq);
        g_assert_cmpstr(jet_test_msg_header(rec, "Nats-TTL"), ==, "2s");
        natsMsg_Destroy(rec);
        gint64 t0 = g_get_monotonic_time();
        g_assert_true(jet_test_wait_until(stream_empty, fx, 15000));
        g_test_message("nats-server %u: the record was removed after %" G_GINT64_FORMAT " ms", version,
                       (g_get_monotonic_time() - t0) / 1000);
    }
    /* A stream made without the setting: refused, in bind mode too. */
    jet_test_stream_create(fx->js, "PLAIN_DLQ", "plain.dlq.>");
    g_autoptr(JetBindingConfig) p = binding(JET_MANAGE_BIND, "PLAIN_DLQ", "plain.dlq.orders");
    g_assert_true(jet_dlq_stream_ensure(fx->nc, fx->js, p, &err));
    p->dlq_ttl_ms = 3600000;
    g_assert_false(jet_dlq_stream_ensure(fx->nc, fx->js, p, &err));
    g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "dlq_ttl = 3600s needs DLQ stream PLAIN_DLQ"));
}

static const char *hostile_body;
static int hostile_len;
static void answer_hostile(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)sub; (void)closure;
    natsConnection_Publish(nc, natsMsg_GetReply(m), hostile_body, hostile_len);
    natsMsg_Destroy(m);
}
/* Whatever answers on the DLQ subject instead of a stream (a client of
 * the operator's listening there): an empty, unparsable, truncated, deeply
 * nested or wrongly typed reply is FAILED, never a capture, and reads no
 * member by the wrong type. */
static void test_hostile_pub_ack(Fx *fx, gconstpointer data)
{
    (void)data;
    natsSubscription *s = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&s, fx->nc, "jethost.dlq.orders", answer_hostile, NULL), ==, NATS_OK);
    natsConnection_Flush(fx->nc);
    g_autofree char *huge = g_strnfill(900000, '[');
    g_autofree char *nested = g_strnfill(4000, '[');   /* under the size bound: parsed */
    g_autofree char *deep4k = g_strdup_printf("{\"x\":%s}", nested);
    g_autofree char *deep = g_strdup_printf("{\"stream\":\"X\",\"seq\":1,\"x\":%s}", huge);
    static const char nul[] = "{\"stream\":\"A\0B\",\"seq\":2}";
    struct { const char *b; int len; } cases[] = {
        { "", 0 }, { "garbage", 7 }, { "{}", 2 }, { "[]", 2 }, { "{\"stream\":\"X\",\"seq\":0}", -1 },
        { "{\"stream\":\"X\",\"seq\":\"7\"}", -1 }, { "{\"stream\":{},\"seq\":3}", -1 },
        { "{\"stream\":\"X\",\"seq\":-5}", -1 }, { "{\"stream\":\"X\",\"seq\":1e300}", -1 },
        { "{\"stream\":\"X\",\"seq\":4,\"duplicate\":\"yes\"}", -1 }, { "{\"error\":5}", -1 },
        { "{\"error\":{\"err_code\":\"x\",\"description\":7}}", -1 }, { "{\"stream\":\"\xff\xfe\",\"seq\":1}", -1 },
        { "{\"stream\":\"X\",\"se", -1 }, { nul, (int)sizeof nul - 1 }, { deep, -1 }, { deep4k, -1 },
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        hostile_body = cases[i].b;
        hostile_len = cases[i].len >= 0 ? cases[i].len : (int)strlen(cases[i].b);
        JetCaptureFacts f;
        facts_init(&f, 10 + i);
        g_autoptr(GError) err = NULL;
        JetCaptureStored st;
        JetCaptureOutcome o = jet_capture_store(fx->nc, fx->js, "jethost.dlq.orders", "x", 1, NULL, &f, 0, 2000,
                                                NULL, &st, &err);
        g_test_message("case %u: %s: %s", i, jet_capture_outcome_name(o), err != NULL ? err->message : "-");
        g_assert_cmpint(o, ==, JET_CAPTURE_FAILED);
        g_assert_nonnull(err);
        g_assert_cmpuint(st.seq, ==, 0);
    }
    natsSubscription_Destroy(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
#define ADD(path, fn) g_test_add(path, Fx, NULL, jet_test_js_setup, fn, jet_test_js_teardown)
    ADD("/capture/managed-and-record", test_managed_and_record);
    ADD("/capture/duplicate", test_duplicate);
    ADD("/capture/two-consumers", test_two_consumers);
    ADD("/capture/rollup-expected", test_rollup_expected);
    ADD("/capture/too-large", test_too_large);
    ADD("/capture/stream-max-msg-size", test_stream_max_msg_size);
    ADD("/capture/bind-mode", test_bind_mode);
    ADD("/capture/publish-missing-stream", test_publish_missing_stream);
    ADD("/capture/publish-refused", test_publish_refused);
    ADD("/capture/ack-confirmed", test_ack_confirmed);
    ADD("/capture/dlq-ttl", test_dlq_ttl);
    ADD("/capture/replies-late-answer", test_replies_late_answer);
    ADD("/capture/replies-stray-answers", test_replies_stray_answers);
    ADD("/capture/replies-direct", test_replies_direct);
    ADD("/capture/hostile-pub-ack", test_hostile_pub_ack);
#undef ADD
    int rc = g_test_run();
    nats_Close();
    return rc;
}
