/* Ordered bindings (host/io/ordered.c, docs/ordered.md) against a real
 * nats-server: stream order, exactly once, through consumers the host
 * re-creates when they are deleted, when the server restarts, and when a
 * delivery breaks the consumer sequence; one pull per expiry window when
 * idle; verdicts kept in place; where an unpositioned binding starts; the
 * position record (checkpoints, and crash attribution with or without
 * them); the first bind at start-up; a hung handler. */
#include "rig.h"
#include "msg_payload.h"
#include "rawpub.h"
#include "relay.h"

#include <signal.h>

#include <glib/gstdio.h>
#include <string.h>

/* --- helpers ------------------------------------------------------------------ */

typedef struct {
    Rig *r;
    guint n;
} HandledWait;

static guint handled_count(Rig *r)
{
    g_autoptr(GArray) seqs = handled_seqs(r, NULL);
    return seqs->len;
}

static gboolean handled_at_least(gpointer data)
{
    HandledWait *w = data;
    return handled_count(w->r) >= w->n;
}

static void wait_handled(Rig *r, guint n, guint timeout_ms)
{
    HandledWait w = { r, n };
    if (!jet_test_wait_until(handled_at_least, &w, timeout_ms))
        g_error("handled %u of %u in %u ms", handled_count(r), n, timeout_ms);
}

/* The ordered consumer now on ORDERS (the host has one at a time), or NULL. */
static char *current_consumer(jsCtx *js)
{
    jsConsumerNamesList *list = NULL;
    if (js_ConsumerNames(&list, js, "ORDERS", NULL, NULL) != NATS_OK || list == NULL)
        return NULL;
    char *name = NULL;
    for (int i = 0; i < list->Count; i++)
        if (g_str_has_prefix(list->List[i], "jethost_ord_t_"))
            name = g_strdup(list->List[i]);
    jsConsumerNamesList_Destroy(list);
    return name;
}

static void delete_current_consumer(Rig *r)
{
    g_autofree char *name = NULL;
    for (int i = 0; i < 200 && name == NULL; i++) {
        name = current_consumer(r->js);
        if (name == NULL)
            g_usleep(10000);
    }
    g_assert_nonnull(name);
    jsErrCode jerr = 0;
    g_assert_cmpint(js_DeleteConsumer(r->js, "ORDERS", name, NULL, &jerr), ==, NATS_OK);
    g_test_message("deleted consumer %s", name);
}

/* Every stream seq from `from` to `to` handled exactly once, in order. */
static void assert_once_in_order(Rig *r, guint64 from, guint64 to)
{
    g_autoptr(GArray) seqs = handled_seqs(r, NULL);
    g_assert_cmpuint(seqs->len, ==, to - from + 1);
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        if (s != from + i)
            g_error("handled[%u] is stream seq %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT, i, s, from + i);
    }
}

/* --- tests ------------------------------------------------------------------ */

/* 10,000 messages; the consumer deleted three times and the server
 * restarted once, all while the binding runs: every message handled once,
 * in stream order, none skipped. */
static void test_recovery(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    const guint n = 10000;
    jet_test_publish_n(r.js, "orders.new", n);
    rig_engine(&r, "batch = 50\nexpires = 2s\nidle_heartbeat = 500ms\noption.sleep = 1ms\n");
    for (guint k = 1; k <= 3; k++) {
        wait_handled(&r, k * 2000, 60000);
        delete_current_consumer(&r);
    }
    wait_handled(&r, 8000, 60000);
    jet_test_server_stop(r.srv);
    jet_test_server_restart(r.srv);
    g_test_message("server restarted");
    wait_handled(&r, n, 120000);
    rig_stop(&r);
    assert_once_in_order(&r, 1, n);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("consumers %" G_GUINT64_FORMAT ", gaps %" G_GUINT64_FORMAT ", missed heartbeats %" G_GUINT64_FORMAT
                   ", pulls %" G_GUINT64_FORMAT, st.ordered_consumers, st.gaps, st.missed_heartbeats, st.pulls);
    /* The first, one per deletion, at least one after the restart. */
    g_assert_cmpuint(st.ordered_consumers, >=, 5);
    g_assert_cmpuint(st.messages, ==, n);
    rig_free(&r);
}

typedef struct {
    GMutex lock;
    char *last_reply;          /* the reply subject of the last pull seen */
    guint pulls;
    gint64 first_us;
} PullSpy;

static void on_pull(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *data)
{
    (void)nc;
    (void)sub;
    PullSpy *spy = data;
    g_mutex_lock(&spy->lock);
    g_free(spy->last_reply);
    spy->last_reply = g_strdup(natsMsg_GetReply(m));
    if (spy->pulls++ == 0)
        spy->first_us = g_get_monotonic_time();
    g_mutex_unlock(&spy->lock);
    natsMsg_Destroy(m);
}

static natsSubscription *spy_pulls(Rig *r, PullSpy *spy)
{
    g_mutex_init(&spy->lock);
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&sub, r->nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.>", on_pull, spy), ==,
                    NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r->nc), ==, NATS_OK);
    return sub;
}

/* Loses stream seq 7 once, between the server and the host. */
static gboolean lose_seq_7(guint64 stream_seq, guint64 consumer_seq, gpointer data)
{
    (void)consumer_seq;
    gint *lost = data;
    return stream_seq == 7 && g_atomic_int_compare_and_exchange(lost, 0, 1);
}

/* A delivery lost on its way (the consumer sequence skips one): the host
 * re-creates the consumer from the last handled + 1 at once, and skips
 * nothing. */
static void test_gap(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 20);
    gint lost = 0;
    r.loss_hook = lose_seq_7;
    r.loss_data = &lost;
    rig_engine(&r, "batch = 10\n");
    wait_handled(&r, 20, 30000);
    rig_stop(&r);
    g_assert_cmpint(lost, ==, 1);
    assert_once_in_order(&r, 1, 20);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.gaps, ==, 1);
    g_assert_cmpuint(st.ordered_consumers, ==, 2);
    g_assert_cmpuint(st.missed_heartbeats, ==, 0);
    rig_free(&r);
}

static gboolean spy_seen(gpointer data)
{
    PullSpy *spy = data;
    g_mutex_lock(&spy->lock);
    gboolean seen = spy->pulls > 0;
    g_mutex_unlock(&spy->lock);
    return seen;
}

/* An idle binding issues one pull per expiry window, not two. */
static void test_idle_pulls(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    PullSpy spy = { 0 };
    natsSubscription *sub = spy_pulls(&r, &spy);
    rig_engine(&r, "expires = 1s\nidle_heartbeat = 250ms\n");
    g_assert_true(jet_test_wait_until(spy_seen, &spy, 10000));
    g_mutex_lock(&spy.lock);
    gint64 first = spy.first_us;
    g_mutex_unlock(&spy.lock);
    /* Five windows, less half of one: pulls at 0, 1, 2, 3 and 4 s. */
    gint64 until = first + 4500 * 1000;
    while (g_get_monotonic_time() < until)
        g_usleep(20000);
    g_mutex_lock(&spy.lock);
    guint pulls = spy.pulls;
    g_mutex_unlock(&spy.lock);
    g_test_message("%u pulls in 4.5 windows", pulls);
    g_assert_cmpuint(pulls, ==, 5);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.ordered_consumers, ==, 1);
    g_assert_cmpuint(st.missed_heartbeats, ==, 0);
    natsSubscription_Destroy(sub);
    g_free(spy.last_reply);
    rig_free(&r);
}

/* RETRY and POSTPONE wait in place; a spent ladder and a REJECT
 * dead-letter the message and the binding goes on; nothing overtakes. */
static void test_verdicts_in_place(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 6);
    rig_engine(&r, "rungs = 100ms\nmax_attempts = 3\n"
                   "option.verdicts = postpone,ack\noption.postpone_delay = 100ms\n"
                   "option.seq_verdicts = 3=retry,5=reject\n");
    /* 1, 2, 4, 6: postponed once, then acked; 3: three failures; 5: once. */
    wait_handled(&r, 4 * 2 + 3 + 1, 30000);
    rig_stop(&r);
    g_autoptr(GArray) deliveries = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &deliveries);
    static const guint64 want_seq[] = { 1, 1, 2, 2, 3, 3, 3, 4, 4, 5, 6, 6 };
    static const guint want_del[] = { 1, 2, 1, 2, 1, 2, 3, 1, 2, 1, 1, 2 };
    g_assert_cmpuint(seqs->len, ==, G_N_ELEMENTS(want_seq));
    for (guint i = 0; i < seqs->len; i++) {
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, want_seq[i]);
        g_assert_cmpuint(g_array_index(deliveries, guint, i), ==, want_del[i]);
    }
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.dead_lettered, ==, 2);
    g_assert_cmpuint(st.postponed, ==, 4);
    g_assert_cmpuint(st.retried, ==, 2);
    /* The records name the binding as the consumer: it outlives each
     * consumer the host makes. */
    for (guint64 dseq = 1; dseq <= 2; dseq++) {
        natsMsg *rec = NULL;
        jsErrCode jerr = 0;
        g_assert_cmpint(js_GetMsg(&rec, r.js, "JETHOST_DLQ", dseq, NULL, &jerr), ==, NATS_OK);
        const char *cons = NULL, *seq = NULL, *cause = NULL;
        natsMsgHeader_Get(rec, "Jethost-Origin-Consumer", &cons);
        natsMsgHeader_Get(rec, "Jethost-Origin-Seq", &seq);
        natsMsgHeader_Get(rec, "Jethost-Cause", &cause);
        g_assert_cmpstr(cons, ==, "t");
        g_assert_cmpstr(seq, ==, dseq == 1 ? "3" : "5");
        g_assert_cmpstr(cause, ==, dseq == 1 ? "exhausted" : "rejected");
        natsMsg_Destroy(rec);
    }
    rig_free(&r);
}

typedef struct {
    Rig *r;
} FloorWait6;

/* Seq 6, the last, has been handled. */
static gboolean last_handled_6(gpointer data)
{
    FloorWait6 *fw = data;
    g_autoptr(GArray) seqs = handled_seqs(fw->r, NULL);
    for (guint i = 0; i < seqs->len; i++)
        if (g_array_index(seqs, guint64, i) == 6)
            return TRUE;
    return FALSE;
}

/* DIR/batches.log: each handle_batch() call's stream seqs, in order. */
static GPtrArray *batches_of(Rig *r)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    g_autofree char *path = g_build_filename(r->dir, "batches.log", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return out;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], " ", -1);
        if (g_strv_length(f) < 4)
            continue;
        GArray *seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
        g_auto(GStrv) each = g_strsplit(f[3], ",", -1);
        for (guint k = 0; each[k] != NULL; k++) {
            guint64 s = g_ascii_strtoull(each[k], NULL, 10);
            g_array_append_val(seqs, s);
        }
        g_ptr_array_add(out, seqs);
    }
    return out;
}

/* Handler batches on an ordered binding keep stream order: 60 messages in
 * batches of 10, seq 7 postponed at its first handling, seq 23 rejected,
 * every acked one forwarded to FWD.  The batch holding 7 is settled up to
 * 7, which waits in place and is handled again alone; the ones behind it
 * in its batch are set aside (their verdicts and forwards dropped) and
 * handed again, as the next batch, once 7 is acked.  So FWD holds every
 * message but 23 once, in stream order, and a reject (a settlement) sets
 * nothing aside. */
static void test_batch_in_order(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_stream_create(r.js, "FWD", "fwd.>");
    jet_test_publish_n(r.js, "orders.new", 60);
    rig_engine(&r, "batch = 20\nbatch_max = 10\nbatch_wait = 200ms\nrungs = 100ms\nmax_attempts = 3\n"
                   "option.postpone_first_seq = 7\noption.postpone_delay = 100ms\n"
                   "option.seq_verdicts = 23=reject\noption.forward_prefix = fwd\npublish_streams = FWD\n");
    JetTestStreamWait sw = { r.js, "FWD", 59 };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &sw, 30000));
    rig_wait_dead_lettered(&r, 1);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    /* FWD: every origin but 23, once, in stream order. */
    g_assert_cmpuint(jet_test_stream_msgs(r.js, "FWD"), ==, 59);
    guint64 want = 1;
    for (guint64 fseq = 1; fseq <= 59; fseq++, want++) {
        if (want == 23)
            want++;
        natsMsg *m = jet_test_stream_get(r.js, "FWD", fseq);
        g_autofree char *subject = g_strdup_printf("fwd.%" G_GUINT64_FORMAT, want);
        g_assert_cmpstr(natsMsg_GetSubject(m), ==, subject);
        natsMsg_Destroy(m);
    }
    /* The batch holding 7: what came after 7 in it was set aside, handled
     * twice (each time as a first delivery), and handed again right after
     * 7's second handling, as the next batch. */
    g_autoptr(GPtrArray) batches = batches_of(&r);
    guint with7 = G_MAXUINT, behind = 0;
    guint64 prev = 0;
    for (guint b = 0; b < batches->len; b++) {
        GArray *seqs = g_ptr_array_index(batches, b);
        g_assert_cmpuint(seqs->len, <=, 10);
        for (guint i = 0; i < seqs->len; i++) {
            guint64 s = g_array_index(seqs, guint64, i);
            /* In stream order, each batch; a batch after the one with 7
             * goes back only to what it set aside. */
            if (i > 0)
                g_assert_cmpuint(s, ==, g_array_index(seqs, guint64, i - 1) + 1);
            if (s == 7 && with7 == G_MAXUINT) {
                with7 = b;
                behind = seqs->len - 1 - i;
            }
        }
        if (b == with7 + 1 && behind > 0)
            g_assert_cmpuint(g_array_index(seqs, guint64, 0), ==, 8);
        else if (b > 0)
            g_assert_cmpuint(g_array_index(seqs, guint64, 0), ==, prev + 1);
        prev = g_array_index(seqs, guint64, seqs->len - 1);
    }
    g_test_message("%u batches; 7 in batch %u with %u behind it", batches->len, with7, behind);
    g_assert_cmpuint(with7, <, batches->len);
    g_assert_cmpuint(behind, >=, 1);
    g_assert_cmpuint(st.set_aside, ==, behind);
    g_autoptr(GArray) deliveries = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &deliveries);
    guint count[61] = { 0 };
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        g_assert_cmpuint(s, <=, 60);
        count[s]++;
        /* Only 7 is ever handled past its first delivery. */
        g_assert_cmpuint(g_array_index(deliveries, guint, i), ==, s == 7 && count[s] == 2 ? 2 : 1);
    }
    for (guint64 s = 1; s <= 60; s++)
        g_assert_cmpuint(count[s], ==, s == 7 || (s > 7 && s <= 7 + behind) ? 2 : 1);
    g_assert_cmpuint(st.postponed, ==, 1);
    g_assert_cmpuint(st.dead_lettered, ==, 1);
    g_assert_cmpuint(st.acked, ==, 59);
    rig_free(&r);
}

/* Hostile header blocks inside ordered batches: seq 4 carries a name with
 * a bare line break, seq 9 a NUL and a non-UTF-8 byte in a value and an
 * empty payload; seq 7 is postponed at its first handling.  The malformed
 * ones are dead-lettered in their turn without reaching the plugin, the rest
 * forwarded once each, in stream order, and nothing behind 7 is settled
 * before it. */
static void test_batch_hostile(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_stream_create(r.js, "FWD", "fwd.>");
    g_autoptr(GError) err = NULL;
    g_autoptr(JetRawPub) p = jet_rawpub_connect(jet_test_server_port(r.srv), &err);
    g_assert_no_error(err);
    static const char bad_name[] = "NATS/1.0\r\nX-A: 1\r\np\r\n\r\n";
    static const char bad_value[] = "NATS/1.0\r\nX-B: a\0b\xff\r\n\r\n";
    for (guint i = 1; i <= 12; i++) {
        g_autofree char *ack = NULL;
        const char *block = i == 4 ? bad_name : i == 9 ? bad_value : "NATS/1.0\r\nX-Ok: 1\r\n\r\n";
        gsize len = i == 4 ? sizeof bad_name - 1 : i == 9 ? sizeof bad_value - 1 : strlen(block);
        const char *data = i == 9 ? "" : "payload";
        g_assert_true(jet_rawpub_hpub_acked(p, "orders.new", block, len, data, strlen(data), &ack, &err));
        g_assert_no_error(err);
        g_assert_null(strstr(ack, "\"error\""));
    }
    rig_engine(&r, "batch = 12\nbatch_max = 6\nbatch_wait = 300ms\nrungs = 100ms\n"
                   "option.postpone_first_seq = 7\noption.postpone_delay = 100ms\n"
                   "option.forward_prefix = fwd\npublish_streams = FWD\n");
    JetTestStreamWait sw = { r.js, "FWD", 10 };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &sw, 30000));
    rig_wait_dead_lettered(&r, 2);
    rig_stop(&r);
    g_assert_cmpuint(jet_test_stream_msgs(r.js, "FWD"), ==, 10);
    guint64 want = 1;
    for (guint64 fseq = 1; fseq <= 10; fseq++, want++) {
        while (want == 4 || want == 9)
            want++;
        natsMsg *m = jet_test_stream_get(r.js, "FWD", fseq);
        g_autofree char *subject = g_strdup_printf("fwd.%" G_GUINT64_FORMAT, want);
        g_assert_cmpstr(natsMsg_GetSubject(m), ==, subject);
        natsMsg_Destroy(m);
    }
    g_assert_cmpuint(jet_test_stream_msgs(r.js, "JETHOST_DLQ"), ==, 2);
    for (guint64 dseq = 1; dseq <= 2; dseq++) {
        natsMsg *rec = jet_test_stream_get(r.js, "JETHOST_DLQ", dseq);
        const char *seq = NULL, *cause = NULL;
        natsMsgHeader_Get(rec, "Jethost-Origin-Seq", &seq);
        natsMsgHeader_Get(rec, "Jethost-Cause", &cause);
        g_assert_cmpstr(seq, ==, dseq == 1 ? "4" : "9");
        g_assert_cmpstr(cause, ==, "malformed-headers");
        natsMsg_Destroy(rec);
    }
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        g_assert_true(s != 4 && s != 9);
    }
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.dead_lettered, ==, 2);
    g_assert_cmpuint(st.postponed, ==, 1);
    g_assert_cmpuint(st.acked, ==, 10);
    rig_free(&r);
}

/* A dead letter whose capture fails (the DLQ stream full, discarding new
 * records, while seq 3 is in the handler) is not passed over: nothing
 * gives an ordered consumer's message back, so the binding delivers it
 * again itself, after the last rung, until the capture works (the limit
 * lifted), and only then goes on. */
static void test_capture_failed_in_place(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 6);
    rig_engine(&r, "rungs = 100ms\nmax_attempts = 3\noption.seq_verdicts = 3=reject\noption.block_seq = 3\n");
    g_autofree char *inflight = g_build_filename(r.dir, "inflight-3", NULL);
    g_assert_true(jet_test_wait_file(inflight, 30000));
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, r.js, "JETHOST_DLQ", NULL, NULL), ==, NATS_OK);
    jet_test_publish_n(r.js, "jethost.dlq.other", 1);
    si->Config->MaxMsgs = 1;
    si->Config->Discard = js_DiscardNew;
    jsStreamInfo *upd = NULL;
    g_assert_cmpint(js_UpdateStream(&upd, r.js, si->Config, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(upd);
    g_autofree char *go = g_build_filename(r.dir, "go-3", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    /* 1, 2, then 3 at least three times: its capture fails each time. */
    wait_handled(&r, 2 + 3, 30000);
    si->Config->MaxMsgs = -1;
    g_assert_cmpint(js_UpdateStream(&upd, r.js, si->Config, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(upd);
    jsStreamInfo_Destroy(si);
    FloorWait6 fw = { &r };
    g_assert_true(jet_test_wait_until(last_handled_6, &fw, 30000));
    rig_stop(&r);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    guint threes = 0;
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        threes += s == 3;
        /* Nothing after 3 before its last handling. */
        if (s > 3)
            for (guint j = i + 1; j < seqs->len; j++)
                g_assert_cmpuint(g_array_index(seqs, guint64, j), !=, 3);
    }
    g_test_message("seq 3 handled %u times", threes);
    g_assert_cmpuint(threes, >=, 3);
    g_assert_cmpuint(jet_test_stream_msgs(r.js, "JETHOST_DLQ"), ==, 2);
    natsMsg *rec = jet_test_stream_get(r.js, "JETHOST_DLQ", 2);
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Origin-Seq"), ==, "3");
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Cause"), ==, "rejected");
    natsMsg_Destroy(rec);
    rig_free(&r);
}

static gboolean pulled(gpointer data)
{
    Rig *r = data;
    JetEngineStats st;
    jet_engine_stats(r->eng, &st);
    return st.pulls > 0;
}

/* deliver = from_time with a sub-second part that has a leading zero
 * (.04...): nats.c would send it without (.4...), 0.4 s late; the host
 * starts at the whole second and passes over what precedes the time. */
static void test_deliver_from_time(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    const guint n = 80;
    jet_test_wait_late_in_second();
    for (guint i = 0; i < n; i++) {
        jet_test_publish_n(r.js, "orders.new", 1);
        g_usleep(4000);
    }
    g_autofree char *text = NULL;
    guint64 from = jet_test_start_early_in_second(r.js, "ORDERS", n, &text);
    g_autofree char *extra = g_strdup_printf("deliver = from_time %s\n", text);
    rig_engine(&r, extra);
    wait_handled(&r, n - (guint)from + 1, 20000);
    g_usleep(200000);
    rig_stop(&r);
    assert_once_in_order(&r, from, n);
    rig_free(&r);
}

/* Where a binding with no position starts. */
static void test_deliver(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 10);
    rig_engine(&r, "deliver = from_seq 7\n");
    wait_handled(&r, 4, 20000);
    g_usleep(200000);
    rig_stop(&r);
    assert_once_in_order(&r, 7, 10);
    rig_engine_end(&r);

    /* new: what was there before the consumer is never handled. */
    g_autofree char *log = g_build_filename(r.dir, "handled.log", NULL);
    g_assert_cmpint(g_unlink(log), ==, 0);
    rig_engine(&r, "deliver = new\n");
    g_assert_true(jet_test_wait_until(pulled, &r, 20000));
    jet_test_publish_n(r.js, "orders.new", 2);
    wait_handled(&r, 2, 20000);
    g_usleep(200000);
    rig_stop(&r);
    assert_once_in_order(&r, 11, 12);
    rig_engine_end(&r);

    /* last_per_subject (with a filter: the server requires one): each
     * subject's last message (12, 16, 17, 18), not the older ones between
     * them, through the one consumer (its jumps over them are what it is
     * for, not a skip to repair). */
    g_assert_cmpint(g_unlink(log), ==, 0);
    const char *const subjects[] = { "orders.a", "orders.b", "orders.a", "orders.c", "orders.b", "orders.a" };
    for (gsize i = 0; i < G_N_ELEMENTS(subjects); i++)
        g_assert_cmpint(js_Publish(NULL, r.js, subjects[i], "x", 1, NULL, NULL), ==, NATS_OK);
    rig_engine(&r, "deliver = last_per_subject\nfilter_subject = >\n");
    wait_handled(&r, 4, 20000);
    g_usleep(300000);
    rig_stop(&r);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    const guint64 want[] = { 12, 16, 17, 18 };
    g_assert_cmpuint(seqs->len, ==, G_N_ELEMENTS(want));
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, want[i]);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.ordered_consumers, ==, 1);
    g_assert_cmpuint(st.gaps, ==, 0);
    rig_free(&r);
}

/* --- kind = kv ---------------------------------------------------------------- */

static kvStore *kv_bucket(Rig *r, const char *name)
{
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = name;
    kc.History = 1;
    kvStore *kv = NULL;
    g_assert_cmpint(js_CreateKeyValue(&kv, r->js, &kc), ==, NATS_OK);
    return kv;
}

/* The lines of DIR/kv.log: what fx_gate read through the 1.1 members. */
static GStrv kv_log(Rig *r)
{
    g_autofree char *path = g_build_filename(r->dir, "kv.log", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return g_new0(char *, 1);
    g_strchomp(text);
    return text[0] != '\0' ? g_strsplit(text, "\n", -1) : g_new0(char *, 1);
}

/* A write while the current values are handled: the last of them goes out
 * with something still pending, as newer servers also send it for a
 * last-per-subject consumer.  The current values still end with it. */
typedef struct {
    kvStore *kv;
    gint writes;
} ConcurrentWrite;

static void write_on_first(guint64 stream_seq, guint32 deliveries, const JetSettleAction *a, gpointer data)
{
    (void)stream_seq;
    (void)deliveries;
    (void)a;
    ConcurrentWrite *cw = data;
    if (g_atomic_int_add(&cw->writes, 1) == 0)
        g_assert_cmpint(kvStore_PutString(NULL, cw->kv, "app.new", "v1"), ==, NATS_OK);
}

static void test_kv_initial_pending(void)
{
    Rig r = { 0 };
    r.kv_bucket = "CFG";
    rig_server(&r);
    kvStore *kv = kv_bucket(&r, "CFG");
    for (int i = 0; i < 8; i++) {
        g_autofree char *key = g_strdup_printf("app.k%d", i);
        g_assert_cmpint(kvStore_PutString(NULL, kv, key, "v1"), ==, NATS_OK);
    }
    ConcurrentWrite cw = { kv, 0 };
    r.settle_hook = write_on_first;
    r.settle_data = &cw;
    /* One value a pull: the ones after the first go out after the write. */
    rig_engine(&r, "batch = 1\n");
    wait_handled(&r, 9, 20000);
    g_usleep(200000);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.initial_done, ==, 1);
    g_assert_cmpuint(st.initial_values, ==, 8);
    g_auto(GStrv) lines = kv_log(&r);
    g_assert_cmpuint(g_strv_length(lines), >=, 10);
    g_assert_cmpstr(lines[8], ==, "initial-done 8");
    g_assert_cmpstr(lines[9], ==, "9 app.new put 2");
    kvStore_Destroy(kv);
    rig_free(&r);
}

/* A KV watch: the current value of every key first (one each, in
 * revision order), the watch says when they are done, then the updates and
 * deletes as they happen, in revision order, nothing skipped. */
static void test_kv_watch(gconstpointer data)
{
    const char *extra = data;
    Rig r = { 0 };
    r.kv_bucket = "CFG";
    rig_server(&r);
    kvStore *kv = kv_bucket(&r, "CFG");
    /* 40 keys, the first 10 written twice: 40 current values, revisions
     * 11..50. */
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < (round == 0 ? 40 : 10); i++) {
            g_autofree char *key = g_strdup_printf("app.k%02d", i);
            g_assert_cmpint(kvStore_PutString(NULL, kv, key, round == 0 ? "v1" : "v2"), ==, NATS_OK);
        }
    g_autofree char *keys = g_strdup_printf("batch = 16\n%s", extra);
    rig_engine(&r, keys);
    wait_handled(&r, 40, 20000);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.initial_done, ==, 1);
    g_assert_cmpuint(st.initial_values, ==, 40);
    /* Updates while it runs, and a delete. */
    for (int i = 0; i < 5; i++) {
        g_autofree char *key = g_strdup_printf("app.k%02d", 30 + i);
        g_assert_cmpint(kvStore_PutString(NULL, kv, key, "v3"), ==, NATS_OK);
    }
    g_assert_cmpint(kvStore_Delete(kv, "app.k00"), ==, NATS_OK);
    wait_handled(&r, 46, 20000);
    g_usleep(200000);
    rig_stop(&r);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, 46);
    for (guint i = 0; i < seqs->len; i++) {
        guint64 want = i < 40 ? 11 + i : 51 + (i - 40);
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, want);
    }
    /* What the plugin was told (ABI 1.1): kind, key, operation and
     * revision of each entry, and the initial-done signal right after the
     * last current value. */
    g_auto(GStrv) lines = kv_log(&r);
    g_assert_cmpuint(g_strv_length(lines), ==, 47);
    for (guint i = 0; i < 40; i++) {
        /* Revision 11 + i: k10..k39 as first written, then k00..k09 again. */
        g_autofree char *want = g_strdup_printf("%u app.k%02u put 2", 11 + i, i < 30 ? 10 + i : i - 30);
        g_assert_cmpstr(lines[i], ==, want);
    }
    g_assert_cmpstr(lines[40], ==, "initial-done 40");
    g_assert_cmpstr(lines[41], ==, "51 app.k30 put 2");
    g_assert_cmpstr(lines[46], ==, "56 app.k00 delete 2");
    g_autofree char *kind_path = g_build_filename(r.dir, "kind", NULL);
    g_autofree char *kind = NULL;
    g_assert_true(g_file_get_contents(kind_path, &kind, NULL, NULL));
    g_assert_cmpstr(kind, ==, "2\n");
    if (strstr(extra, "batch_max") != NULL) {
        /* Batches of up to 8, the last current value (revision 50) ending
         * its own, so initial-done came between two batches. */
        g_autoptr(GPtrArray) batches = batches_of(&r);
        gboolean ends_at_50 = FALSE;
        guint largest = 0;
        for (guint b = 0; b < batches->len; b++) {
            GArray *in = g_ptr_array_index(batches, b);
            largest = MAX(largest, in->len);
            ends_at_50 |= g_array_index(in, guint64, in->len - 1) == 50;
        }
        g_test_message("%u batches, the largest %u", batches->len, largest);
        g_assert_true(ends_at_50);
        g_assert_cmpuint(largest, ==, 8);
    }
    kvStore_Destroy(kv);
    rig_free(&r);
}

/* An empty bucket: the watch is caught up at once; updates only
 * (initial = false) never hands over what was there. */
static void test_kv_empty_and_updates_only(void)
{
    Rig r = { 0 };
    r.kv_bucket = "EMPTY";
    rig_server(&r);
    kvStore *kv = kv_bucket(&r, "EMPTY");
    rig_engine(&r, "");
    g_assert_true(jet_test_wait_until(pulled, &r, 20000));
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.initial_done, ==, 1);
    g_assert_cmpuint(st.initial_values, ==, 0);
    rig_engine_end(&r);

    g_assert_cmpint(kvStore_PutString(NULL, kv, "a", "1"), ==, NATS_OK);
    rig_engine(&r, "initial = false\n");
    g_assert_true(jet_test_wait_until(pulled, &r, 20000));
    g_assert_cmpint(kvStore_PutString(NULL, kv, "b", "2"), ==, NATS_OK);
    wait_handled(&r, 1, 20000);
    g_usleep(200000);
    rig_stop(&r);
    assert_once_in_order(&r, 2, 2);
    jet_engine_stats(r.eng, &st);
    /* Updates only: caught up at once, before the first update. */
    g_assert_cmpuint(st.initial_done, ==, 1);
    g_auto(GStrv) lines = kv_log(&r);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    g_assert_cmpstr(lines[0], ==, "initial-done 0");   /* the empty bucket's run */
    g_assert_cmpstr(lines[1], ==, "initial-done 0");
    g_assert_cmpstr(lines[2], ==, "2 b put 2");
    kvStore_Destroy(kv);
    rig_free(&r);
}

/* Verdicts on a KV watch wait in place; the dead-letter records say which
 * entry (key, operation, revision); an entry no KV client would write (an
 * unknown KV-Operation, published raw) is dead-lettered as malformed
 * without reaching the plugin, and the watch goes on. */
static void test_kv_verdicts(void)
{
    Rig r = { 0 };
    r.kv_bucket = "V";
    rig_server(&r);
    kvStore *kv = kv_bucket(&r, "V");
    for (int i = 1; i <= 5; i++) {
        g_autofree char *key = g_strdup_printf("k%d", i);
        g_assert_cmpint(kvStore_PutString(NULL, kv, key, "v"), ==, NATS_OK);
    }
    natsMsg *raw = NULL;
    g_assert_cmpint(natsMsg_Create(&raw, "$KV.V.k6", NULL, "x", 1), ==, NATS_OK);
    g_assert_cmpint(natsMsgHeader_Set(raw, "KV-Operation", "ERASE"), ==, NATS_OK);
    g_assert_cmpint(js_PublishMsg(NULL, r.js, raw, NULL, NULL), ==, NATS_OK);
    natsMsg_Destroy(raw);
    g_assert_cmpint(kvStore_Delete(kv, "k1"), ==, NATS_OK);
    /* The current values: 2..5, 6 (never handled) and 7, the delete that
     * is k1's last entry.  2: rejected; 3: retried to the end of a
     * two-attempt ladder; the others acked. */
    rig_engine(&r, "rungs = 100ms\nmax_attempts = 2\n"
                   "option.seq_verdicts = 2=reject,3=retry\n");
    wait_handled(&r, 6, 20000);
    g_usleep(200000);
    rig_stop(&r);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    static const guint64 want_seq[] = { 2, 3, 3, 4, 5, 7 };
    g_assert_cmpuint(seqs->len, ==, G_N_ELEMENTS(want_seq));
    for (guint i = 0; i < seqs->len; i++)
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, want_seq[i]);
    static const struct {
        const char *cause, *key, *op, *rev;
    } want[] = {
        { "rejected", "k2", "put", "2" },
        { "exhausted", "k3", "put", "3" },
        { "malformed", NULL, NULL, "6" },
    };
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        natsMsg *rec = NULL;
        g_assert_cmpint(js_GetMsg(&rec, r.js, "JETHOST_DLQ", i + 1, NULL, NULL), ==, NATS_OK);
        const char *cause = NULL, *key = NULL, *op = NULL, *rev = NULL, *seq = NULL, *reason = NULL;
        natsMsgHeader_Get(rec, "Jethost-Cause", &cause);
        natsMsgHeader_Get(rec, "Jethost-KV-Key", &key);
        natsMsgHeader_Get(rec, "Jethost-KV-Operation", &op);
        natsMsgHeader_Get(rec, "Jethost-KV-Revision", &rev);
        natsMsgHeader_Get(rec, "Jethost-Origin-Seq", &seq);
        natsMsgHeader_Get(rec, "Jethost-Reason", &reason);
        g_test_message("record %u: %s %s", i + 1, cause, reason != NULL ? reason : "");
        g_assert_cmpstr(cause, ==, want[i].cause);
        g_assert_cmpstr(key, ==, want[i].key);
        g_assert_cmpstr(op, ==, want[i].op);
        g_assert_cmpstr(seq, ==, want[i].rev);
        if (want[i].key != NULL)
            g_assert_cmpstr(rev, ==, want[i].rev);
        else
            g_assert_nonnull(strstr(reason, "KV-Operation 'ERASE'"));
        natsMsg_Destroy(rec);
    }
    g_auto(GStrv) lines = kv_log(&r);
    g_assert_cmpstr(lines[g_strv_length(lines) - 2], ==, "7 k1 delete 2");
    g_assert_cmpstr(lines[g_strv_length(lines) - 1], ==, "initial-done 6");
    kvStore_Destroy(kv);
    rig_free(&r);
}

/* The stress bar: eight KV watches in one host, 1,500 keys each, updates
 * written while they run, a 1 ms handler.  No drop, no consumer
 * re-created, strict revision order per watch, and the pulls on the wire
 * (counted by a subscriber of our own) within the batch budget. */
typedef struct {
    gint pulls;
} PullCount;

static void count_pull(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *data)
{
    (void)nc;
    (void)sub;
    g_atomic_int_inc(&((PullCount *)data)->pulls);
    natsMsg_Destroy(m);
}

typedef struct {
    char *logs[8];
    guint64 want;
} AllHandled;

/* The last revision a watch handled (0: none yet). */
static guint64 last_revision(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    guint64 last = 0;
    for (char **l = lines; *l != NULL && **l; l++)
        last = g_ascii_strtoull(*l, NULL, 10);
    return last;
}

static gboolean all_handled(gpointer data)
{
    AllHandled *a = data;
    for (int i = 0; i < 8; i++)
        if (last_revision(a->logs[i]) < a->want)
            return FALSE;
    return TRUE;
}

static void test_kv_stress(void)
{
    enum { WATCHES = 8, KEYS = 1500, UPDATES = 100, BATCH = 100 };
    Rig r = { 0 };
    rig_server(&r);
    kvStore *kv[WATCHES];
    for (int w = 0; w < WATCHES; w++) {
        g_autofree char *name = g_strdup_printf("B%d", w);
        kv[w] = kv_bucket(&r, name);
        for (int k = 0; k < KEYS; k++) {
            g_autofree char *key = g_strdup_printf("k.%04d", k);
            g_assert_cmpint(kvStore_PutString(NULL, kv[w], key, "v1"), ==, NATS_OK);
        }
    }
    PullCount pc = { 0 };
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&sub, r.nc, "$JS.API.CONSUMER.MSG.NEXT.>", count_pull, &pc), ==,
                    NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);

    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autoptr(GString) text = g_string_new(NULL);
    g_string_append_printf(text, "[host]\nserver = %s\nname = stress\n", jet_test_server_url(r.srv));
    AllHandled ah = { .want = KEYS + UPDATES };   /* the last revision of each bucket */
    for (int w = 0; w < WATCHES; w++) {
        g_autofree char *dname = g_strdup_printf("watch-%d", w);
        g_autofree char *dir = g_build_filename(jet_test_private_dir(), dname, NULL);
        g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
        ah.logs[w] = g_build_filename(dir, "handled.log", NULL);
        g_string_append_printf(text, "\n[binding w%d]\nplugin = %s\nkind = kv\nbucket = B%d\nbatch = %d\n"
                               "expires = 5s\nidle_heartbeat = 1s\noption.dir = %s\noption.sleep = 1ms\n",
                               w, plugin, w, BATCH, dir);
    }
    g_autofree char *conf = jet_test_write_file("stress.conf", text->str);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "stress.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    gint64 start = g_get_monotonic_time();
    GSubprocess *host = jet_test_jethost_spawn(errlog, args);
    /* Updates while the watches work through the current values. */
    for (int u = 0; u < UPDATES; u++) {
        for (int w = 0; w < WATCHES; w++) {
            g_autofree char *key = g_strdup_printf("k.%04d", (u * 7) % KEYS);
            g_assert_cmpint(kvStore_PutString(NULL, kv[w], key, "v2"), ==, NATS_OK);
        }
        g_usleep(10000);
    }
    g_assert_true(jet_test_wait_until(all_handled, &ah, 120000));
    gint64 secs = (g_get_monotonic_time() - start) / G_USEC_PER_SEC + 1;
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
    g_object_unref(host);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);

    /* Per watch: strictly increasing revisions; every key's current
     * value handled (a key written before the watch began shows once, with
     * its latest value; one written after, once per write). */
    for (int w = 0; w < WATCHES; w++) {
        g_autofree char *log = NULL;
        g_assert_true(g_file_get_contents(ah.logs[w], &log, NULL, NULL));
        g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
        g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
        guint n = 0;
        guint64 last = 0;
        for (char **l = lines; *l != NULL && **l; l++, n++) {
            guint64 rev = g_ascii_strtoull(*l, NULL, 10);
            if (rev <= last)
                g_error("watch %d: revision %" G_GUINT64_FORMAT " after %" G_GUINT64_FORMAT, w, rev, last);
            last = rev;
            g_hash_table_add(seen, GSIZE_TO_POINTER(rev));
        }
        g_assert_cmpuint(n, >=, KEYS);
        g_assert_cmpuint(last, ==, KEYS + UPDATES);
        for (int k = 0; k < KEYS; k++) {
            g_autofree char *key = g_strdup_printf("k.%04d", k);
            kvEntry *e = NULL;
            g_assert_cmpint(kvStore_Get(&e, kv[w], key), ==, NATS_OK);
            if (!g_hash_table_contains(seen, GSIZE_TO_POINTER(kvEntry_Revision(e))))
                g_error("watch %d: key %s at revision %" G_GUINT64_FORMAT " never handled", w, key,
                        kvEntry_Revision(e));
            kvEntry_Destroy(e);
        }
    }
    g_autofree char *err = NULL;
    g_assert_true(g_file_get_contents(errlog, &err, NULL, NULL));
    g_assert_cmpuint(jet_test_count_lines(err, "event=ordered-consumer"), ==, WATCHES);
    g_assert_cmpuint(jet_test_count_lines(err, "event=kv-initial-done"), ==, WATCHES);
    g_assert_cmpuint(jet_test_count_lines(err, "event=ordered-gap"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(err, "event=missed-heartbeats"), ==, 0);
    /* Each watch: a pull per batch of what it handled, plus at most one per
     * expiry window it waited for an update. */
    guint budget = WATCHES * ((KEYS + UPDATES + BATCH - 1) / BATCH + (guint)(secs / 5) + 2);
    guint pulls = (guint)g_atomic_int_get(&pc.pulls);
    g_test_message("%u pulls in %" G_GINT64_FORMAT " s (budget %u)", pulls, secs, budget);
    g_assert_cmpuint(pulls, <=, budget);
    natsSubscription_Destroy(sub);
    for (int w = 0; w < WATCHES; w++) {
        kvStore_Destroy(kv[w]);
        g_free(ah.logs[w]);
    }
    rig_free(&r);
}

/* --- jethost as a subprocess, killed ------------------------------------------ */

/* Where the host called `name` writes its log. */
static char *errlog_of(const char *name)
{
    g_autofree char *errfile = g_strdup_printf("%s.stderr", name);
    return g_build_filename(jet_test_private_dir(), errfile, NULL);
}

static char *log_of(const char *name)
{
    g_autofree char *path = errlog_of(name);
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return g_strdup("");
    return text;
}

/* `jethost run` with one binding t; host_extra and extra are more [host]
 * and binding keys. */
static GSubprocess *spawn_host(Rig *r, const char *name, const char *host_extra, const char *binding)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nname = %s\n%s\n[binding t]\nplugin = %s\n"
                                            "option.dir = %s\n%s",
                                            jet_test_server_url(r->srv), name, host_extra, plugin, r->dir, binding);
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    g_autofree char *errlog = errlog_of(name);
    const char *args[] = { "run", "-c", conf, NULL };
    return jet_test_jethost_spawn(errlog, args);
}

static GSubprocess *spawn_ordered(Rig *r, const char *name, const char *extra)
{
    g_autofree char *binding = g_strdup_printf("stream = ORDERS\nkind = ordered\nbatch = 10\nexpires = 2s\n"
                                               "idle_heartbeat = 500ms\n%s", extra);
    return spawn_host(r, name, "drain_timeout = 1s\n", binding);
}

/* How often each stream seq 1..n was handled (index 0 unused), and (when
 * last is not NULL) the delivery count of its last handling.  resumed: each
 * run resumed where the last was (checkpoint = kv), so the log is in order
 * but for the message a death left in the handler. */
static guint *handled_counts(Rig *r, guint n, gboolean resumed, guint **last)
{
    g_autoptr(GArray) deliveries = NULL;
    g_autoptr(GArray) seqs = handled_seqs(r, &deliveries);
    guint *count = g_new0(guint, n + 1);
    if (last != NULL)
        *last = g_new0(guint, n + 1);
    guint64 prev = 0;
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        g_assert_cmpuint(s, >=, 1);
        g_assert_cmpuint(s, <=, n);
        /* In order, within each run: a restart goes back at most to the
         * message that was in the handler. */
        if (resumed)
            g_assert_cmpuint(s + 1, >=, prev);
        prev = s;
        count[s]++;
        if (last != NULL)
            (*last)[s] = g_array_index(deliveries, guint, i);
    }
    return count;
}

/* Killed while message k is in the handler, a host with checkpoint = kv
 * resumes at k: k's handler runs again (the only duplicate: fx_gate logs a
 * message when its handler returns, so the log shows each once), nothing
 * before it does, nothing is skipped. */
static void test_checkpoint_resume(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 60;
    const guint64 k = (guint64)g_test_rand_int_range(2, 50);
    g_test_message("killed with stream seq %" G_GUINT64_FORMAT " in the handler", k);
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *block = g_strdup_printf("checkpoint = kv\noption.block_seq = %" G_GUINT64_FORMAT "\n", k);
    GSubprocess *a = spawn_ordered(&r, "ord-a", block);
    rig_wait_inflight(&r, k);
    g_subprocess_send_signal(a, SIGKILL);
    g_assert_cmpint(jet_test_jethost_wait(a, 10000), ==, 128 + SIGKILL);
    g_object_unref(a);

    GSubprocess *b = spawn_ordered(&r, "ord-b", "checkpoint = kv\n");
    wait_handled(&r, n, 30000);
    g_subprocess_send_signal(b, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(b, 20000), ==, 0);
    g_object_unref(b);
    g_autofree guint *count = handled_counts(&r, n, TRUE, NULL);
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(count[s], ==, 1);

    /* A clean stop leaves nothing in the handler: the next host handles
     * nothing again. */
    GSubprocess *c = spawn_ordered(&r, "ord-c", "checkpoint = kv\n");
    g_usleep(1500 * 1000);
    g_subprocess_send_signal(c, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(c, 20000), ==, 0);
    g_object_unref(c);
    g_autofree guint *again = handled_counts(&r, n, TRUE, NULL);
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(again[s], ==, count[s]);
    rig_free(&r);
}

/* The stream deleted and created again under the binding, twice: the
 * first time while the old life's last message is in the handler, with
 * more messages in the new life than the old one had by the time the host
 * looks again (only its creation time tells the lives apart); the second
 * time after a pause, with fewer (its sequences fell back).  The host
 * notices each new life and handles it from its first message, in order,
 * nothing skipped, nothing twice. */
static void test_stream_new_life(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 100);
    rig_engine(&r, "batch = 20\nexpires = 2s\nidle_heartbeat = 500ms\noption.block_seq = 100\n");
    rig_wait_inflight(&r, 100);
    g_assert_cmpint(js_DeleteStream(r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    jet_test_stream_create(r.js, "ORDERS", "orders.>");
    jet_test_publish_n(r.js, "orders.new", 150);
    rig_let_go(&r, 100);
    wait_handled(&r, 250, 30000);
    g_assert_cmpint(js_DeleteStream(r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    g_usleep(1000 * 1000);
    jet_test_stream_create(r.js, "ORDERS", "orders.>");
    jet_test_publish_n(r.js, "orders.new", 20);
    wait_handled(&r, 270, 30000);
    g_usleep(300 * 1000);
    rig_stop(&r);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_assert_cmpuint(seqs->len, ==, 270);
    for (guint i = 0; i < seqs->len; i++) {
        guint64 want = i < 100 ? i + 1 : i < 250 ? i - 99 : i - 249;
        g_assert_cmpuint(g_array_index(seqs, guint64, i), ==, want);
    }
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.new_lives, ==, 2);
    rig_free(&r);
}

typedef struct {
    const char *path;
    const char *const *needles;
} AnyLogWait;

static gboolean log_has_any(gpointer data)
{
    AnyLogWait *w = data;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(w->path, &text, NULL, NULL))
        return FALSE;
    for (const char *const *n = w->needles; *n != NULL; n++)
        if (strstr(text, *n) != NULL)
            return TRUE;
    return FALSE;
}

static gboolean stream_answers(gpointer data)
{
    Rig *r = data;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, r->js, "ORDERS", NULL, NULL) != NATS_OK)
        return FALSE;
    jsStreamInfo_Destroy(si);
    return TRUE;
}

/* For a moment the stream answers with its sequences below the position
 * and its creation time unchanged (a node that lost its store, before it
 * caught up): here a copy of the stream's store taken at seq 50, served
 * behind the host's address while the stream itself holds 100.  The
 * binding asks again and goes on from its position: every message handled
 * once, in order, and no new life.  (Taken for a new life at the first
 * answer, the binding started over and handled 1..50 again.) */
static void test_fell_back_briefly(void)
{
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 50);
    /* The copy: the same stream, created at the same time, at seq 50. */
    jet_test_server_stop(r.srv);
    g_autoptr(JetTestServer) behind = jet_test_server_start();
    jet_test_server_stop(behind);
    jet_test_server_wipe_store(behind);
    g_autofree char *from = g_build_filename(jet_test_server_dir(r.srv), "store", NULL);
    g_autofree char *to = g_build_filename(jet_test_server_dir(behind), "store", NULL);
    const char *cp[] = { "cp", "-a", from, to, NULL };
    gint status = -1;
    g_autoptr(GError) err = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)cp, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, &status, &err));
    g_assert_no_error(err);
    g_assert_cmpint(status, ==, 0);
    jet_test_server_restart(behind);
    jet_test_server_restart(r.srv);
    g_assert_true(jet_test_wait_until(stream_answers, &r, 20000));
    jet_test_publish_n(r.js, "orders.new", 50);

    JetTestRelay *relay = jet_test_relay_start(jet_test_server_port(r.srv));
    r.engine_url = jet_test_relay_url(relay);
    jet_test_stderr_begin("fell-back.log");
    rig_engine(&r, "batch = 20\nexpires = 2s\nidle_heartbeat = 500ms\n");
    wait_handled(&r, 100, 30000);
    /* The host's next look at the stream reaches the copy... */
    jet_test_relay_retarget(relay, jet_test_server_port(behind));
    jet_test_relay_cut(relay);
    g_autofree char *log = g_build_filename(jet_test_private_dir(), "fell-back.log", NULL);
    const char *needles[] = { "stream-fell-back", "stream-new-life", NULL };
    AnyLogWait lw = { log, needles };
    gboolean looked = jet_test_wait_until(log_has_any, &lw, 20000);
    /* ...and the one after it the stream as it is. */
    jet_test_relay_retarget(relay, jet_test_server_port(r.srv));
    jet_test_relay_cut(relay);
    jet_test_publish_n(r.js, "orders.new", 10);
    HandledWait hw = { &r, 110 };
    jet_test_wait_until(handled_at_least, &hw, 30000);
    g_usleep(300 * 1000);
    rig_stop(&r);
    g_autofree char *text = jet_test_stderr_end();
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++)
        if (strstr(lines[i], "stream-") != NULL)
            g_test_message("%s", lines[i]);
    g_assert_true(looked);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.new_lives, ==, 0);
    assert_once_in_order(&r, 1, 110);
    g_assert_nonnull(strstr(text, "the earlier answer was a moment's"));
    rig_free(&r);
    jet_test_relay_stop(relay);
}

/* The lines of the kv log that are entries (not "initial-done"). */
static guint kv_entries(GStrv lines)
{
    guint n = 0;
    for (guint i = 0; lines[i] != NULL; i++)
        n += !g_str_has_prefix(lines[i], "initial-done");
    return n;
}

typedef struct {
    Rig *r;
    guint n;
} KvWait;

static gboolean kv_entries_at_least(gpointer data)
{
    KvWait *w = data;
    g_auto(GStrv) lines = kv_log(w->r);
    return kv_entries(lines) >= w->n;
}

static void wait_kv_entries(Rig *r, guint n)
{
    KvWait w = { r, n };
    if (!jet_test_wait_until(kv_entries_at_least, &w, 30000)) {
        g_auto(GStrv) lines = kv_log(r);
        g_error("kv log: %u entries of %u", kv_entries(lines), n);
    }
}

/* A key purged while the watch hands out the current values, its value
 * not yet delivered: nats-server 2.9 sends the next stored message in its
 * place, here an older revision of another key.  That one is passed
 * over: the watch's current values are 1..30 and 33..43, then the purge
 * and an update. */
static void purge_on_first(guint64 stream_seq, guint32 deliveries, const JetSettleAction *a, gpointer data)
{
    (void)stream_seq;
    (void)deliveries;
    (void)a;
    ConcurrentWrite *cw = data;
    if (g_atomic_int_add(&cw->writes, 1) != 0)
        return;
    g_assert_cmpint(kvStore_Purge(cw->kv, "app.x", NULL), ==, NATS_OK);
    /* And an update of a value still to come: that value is handled as
     * current all the same, the update after. */
    g_assert_cmpint(kvStore_PutString(NULL, cw->kv, "app.k35", "v2"), ==, NATS_OK);
}

static void test_kv_purged_under_watch(void)
{
    Rig r = { 0 };
    r.kv_bucket = "CFG";
    rig_server(&r);
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = "CFG";
    kc.History = 5;
    kvStore *kv = NULL;
    g_assert_cmpint(js_CreateKeyValue(&kv, r.js, &kc), ==, NATS_OK);
    /* app.k00..k29 (1..30), app.x (31), app.a's first value (32),
     * app.k30..k39 (33..42), app.a's second (43). */
    for (int i = 0; i < 40; i++) {
        if (i == 30) {
            g_assert_cmpint(kvStore_PutString(NULL, kv, "app.x", "x1"), ==, NATS_OK);
            g_assert_cmpint(kvStore_PutString(NULL, kv, "app.a", "old"), ==, NATS_OK);
        }
        g_autofree char *key = g_strdup_printf("app.k%02d", i);
        g_assert_cmpint(kvStore_PutString(NULL, kv, key, "v1"), ==, NATS_OK);
    }
    g_assert_cmpint(kvStore_PutString(NULL, kv, "app.a", "new"), ==, NATS_OK);
    ConcurrentWrite cw = { kv, 0 };
    r.settle_hook = purge_on_first;
    r.settle_data = &cw;
    /* The purge lands after the first pull's four values. */
    rig_engine(&r, "batch = 4\n");
    wait_kv_entries(&r, 43);
    g_usleep(300 * 1000);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("nats-server %u: %" G_GUINT64_FORMAT " passed over", jet_test_server_version(),
                   st.superseded);
    g_auto(GStrv) lines = kv_log(&r);
    guint entry = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix(lines[i], "initial-done")) {
            g_assert_cmpuint(entry, ==, 41);
            g_assert_cmpstr(lines[i], ==, "initial-done 41");
            continue;
        }
        g_autofree char *want = entry < 30 ? g_strdup_printf("%u app.k%02u put 2", entry + 1, entry)
                                : entry < 40 ? g_strdup_printf("%u app.k%02u put 2", entry + 3, entry)
                                : entry == 40 ? g_strdup("43 app.a put 2")
                                : entry == 41 ? g_strdup("44 app.x purge 2")
                                              : g_strdup("45 app.k35 put 2");
        g_assert_cmpstr(lines[i], ==, want);
        entry++;
    }
    g_assert_cmpuint(entry, ==, 43);
    g_assert_cmpuint(st.initial_done, ==, 1);
    g_assert_cmpuint(st.initial_values, ==, 41);
    /* 2.9 hands out seq 32 for the purged 31; later servers skip 31. */
    g_assert_cmpuint(st.superseded, ==, jet_test_server_version() < 21000 ? 1 : 0);
    kvStore_Destroy(kv);
    rig_free(&r);
}

/* A bucket deleted and created again under a running watch, while the
 * old bucket's last value is in the handler: the watch starts over with
 * the new bucket, its current values, kv_initial_done again, then its
 * updates.  The new bucket's 61 entries (more than the old one's 50: only
 * its creation time tells the lives apart; 60 puts and a delete of a key
 * never written, so that its current values are all of them whenever the
 * host looks) are each handled once, in revision order.
 * With checkpoint = kv, a next host resumes in the new life, after what
 * was handled in it. */
static void test_kv_new_life(gconstpointer data)
{
    const gboolean checkpoint = GPOINTER_TO_INT(data);
    Rig r = { 0 };
    r.kv_bucket = "CFG";
    rig_server(&r);
    kvStore *kv = kv_bucket(&r, "CFG");
    for (int i = 0; i < 50; i++) {
        g_autofree char *key = g_strdup_printf("app.k%02d", i);
        g_assert_cmpint(kvStore_PutString(NULL, kv, key, "old"), ==, NATS_OK);
    }
    const char *extra = checkpoint ? "batch = 16\nexpires = 2s\nidle_heartbeat = 500ms\ncheckpoint = kv\n"
                                   : "batch = 16\nexpires = 2s\nidle_heartbeat = 500ms\n";
    g_autofree char *blocked = g_strconcat(extra, "option.block_seq = 50\n", NULL);
    rig_engine(&r, blocked);
    rig_wait_inflight(&r, 50);
    kvStore_Destroy(kv);
    g_assert_cmpint(js_DeleteKeyValue(r.js, "CFG"), ==, NATS_OK);
    kv = kv_bucket(&r, "CFG");
    for (int i = 0; i < 60; i++) {
        g_autofree char *key = g_strdup_printf("app.n%02d", i);
        g_assert_cmpint(kvStore_PutString(NULL, kv, key, "new"), ==, NATS_OK);
    }
    g_assert_cmpint(kvStore_Delete(kv, "app.gone"), ==, NATS_OK);
    rig_let_go(&r, 50);
    wait_kv_entries(&r, 111);
    g_usleep(300 * 1000);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.new_lives, ==, 1);
    g_assert_cmpuint(st.initial_done, ==, 2);
    g_auto(GStrv) lines = kv_log(&r);
    guint entry = 0, dones = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix(lines[i], "initial-done")) {
            dones++;
            continue;
        }
        g_autofree char *want = entry < 50 ? g_strdup_printf("%u app.k%02u put 2", entry + 1, entry)
                                : entry < 110 ? g_strdup_printf("%u app.n%02u put 2", entry - 49, entry - 50)
                                              : g_strdup("61 app.gone delete 2");
        g_assert_cmpstr(lines[i], ==, want);
        /* The second catching-up comes after the old bucket's values. */
        g_assert_cmpuint(dones, ==, entry < 50 ? 0 : entry == 50 ? 1 : dones);
        entry++;
    }
    g_assert_cmpuint(entry, ==, 111);
    g_assert_cmpuint(dones, ==, 2);
    if (checkpoint) {
        rig_engine_end(&r);
        g_assert_cmpint(kvStore_PutString(NULL, kv, "app.n00", "newer"), ==, NATS_OK);
        rig_engine(&r, extra);
        wait_kv_entries(&r, 112);
        g_usleep(300 * 1000);
        rig_stop(&r);
        /* What happened since the checkpoint, then caught up. */
        g_auto(GStrv) after = kv_log(&r);
        guint n = g_strv_length(after);
        g_assert_cmpuint(kv_entries(after), ==, 112);
        g_assert_cmpuint(n, ==, 115);
        g_assert_cmpstr(after[n - 2], ==, "62 app.n00 put 2");
        g_assert_cmpstr(after[n - 1], ==, "initial-done 1");
    }
    kvStore_Destroy(kv);
    rig_free(&r);
}

typedef struct {
    kvStore *kv;
    guint seed;
    guint ops;
} ChurnWriter;

static gpointer churn_writer(gpointer data)
{
    ChurnWriter *cw = data;
    GRand *rand = g_rand_new_with_seed(cw->seed);
    for (guint i = 0; i < cw->ops; i++) {
        g_autofree char *key = g_strdup_printf("k.%03d", g_rand_int_range(rand, 0, 500));
        natsStatus s = g_rand_int_range(rand, 0, 3) == 0 ? kvStore_Delete(cw->kv, key)
                                                          : kvStore_PutString(NULL, cw->kv, key, "v");
        g_assert_cmpint(s, ==, NATS_OK);
    }
    g_rand_free(rand);
    return NULL;
}

/* Ten writers put and delete 500 keys (history 1) while a slow watch with
 * large batches lags behind: many deletes it was delivered are replaced by
 * a later write before it handles them, so the stream no longer holds
 * them.  Each is still handled as delivered, as a delete: nothing
 * dead-lettered, every delivery reaches the plugin. */
static void test_kv_churn(void)
{
    enum { WRITERS = 10, OPS = 300 };
    Rig r = { 0 };
    r.kv_bucket = "CHURN";
    rig_server(&r);
    kvStore *kv = kv_bucket(&r, "CHURN");
    rig_engine(&r, "batch = 200\noption.sleep = 1ms\n");
    g_assert_true(jet_test_wait_until(pulled, &r, 20000));
    guint32 seed = g_test_rand_int();
    g_test_message("seed %u", seed);
    ChurnWriter cw[WRITERS];
    GThread *th[WRITERS];
    for (guint w = 0; w < WRITERS; w++) {
        cw[w] = (ChurnWriter){ kv, seed + w, OPS };
        th[w] = g_thread_new("churn", churn_writer, &cw[w]);
    }
    for (guint w = 0; w < WRITERS; w++)
        g_thread_join(th[w]);
    /* The watch reaches the last revision. */
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, r.js, "KV_CHURN", NULL, NULL), ==, NATS_OK);
    guint64 last_seq = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    g_assert_cmpuint(last_seq, ==, WRITERS * OPS);
    for (guint k = 0;; k++) {
        g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
        if (seqs->len > 0 && g_array_index(seqs, guint64, seqs->len - 1) == last_seq)
            break;
        g_assert_cmpuint(k, <, 6000);
        g_usleep(10000);
    }
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_auto(GStrv) lines = kv_log(&r);
    guint deletes = 0, entries = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix(lines[i], "initial-done"))
            continue;
        entries++;
        deletes += strstr(lines[i], " delete ") != NULL;
    }
    g_assert_cmpint(js_GetStreamInfo(&si, r.js, "KV_CHURN", NULL, NULL), ==, NATS_OK);
    guint64 removed = last_seq - si->State.Msgs;
    jsStreamInfo_Destroy(si);
    g_test_message("%u entries handled (%u deletes) of %" G_GUINT64_FORMAT " delivered; %" G_GUINT64_FORMAT
                   " of the stream's entries since replaced", entries, deletes, st.messages, removed);
    g_assert_cmpuint(st.dead_lettered, ==, 0);
    g_assert_cmpuint(entries, ==, st.messages);
    g_assert_cmpuint(deletes, >, 0);
    kvStore_Destroy(kv);
    rig_free(&r);
}

/* Markers: an empty entry with no KV-Operation and a Nats-Marker-Reason.
 * One written by hand (any server carries it) reaches the plugin as the
 * delete it stands for; on 2.11 and later, the server's own marker after
 * a key's per-message TTL ran out reaches it as a purge. */
static void publish_marker(Rig *r, const char *subject, const char *reason)
{
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, subject, NULL, NULL, 0), ==, NATS_OK);
    g_assert_cmpint(natsMsgHeader_Set(m, "Nats-Marker-Reason", reason), ==, NATS_OK);
    jsPubAck *pa = NULL;
    g_assert_cmpint(js_PublishMsg(&pa, r->js, m, NULL, NULL), ==, NATS_OK);
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(m);
}

static void test_kv_markers(void)
{
    Rig r = { 0 };
    r.kv_bucket = "TTL";
    rig_server(&r);
    guint version = jet_test_server_version();
    gboolean server_markers = version >= 21100;
    if (server_markers) {
        /* A bucket as the KV clients of 2.11 make it with limit markers. */
        const char *cfg = "{\"name\":\"KV_TTL\",\"subjects\":[\"$KV.TTL.>\"],\"max_msgs_per_subject\":1,"
                          "\"discard\":\"new\",\"allow_rollup_hdrs\":true,\"deny_delete\":true,"
                          "\"allow_direct\":true,\"allow_msg_ttl\":true,"
                          "\"subject_delete_marker_ttl\":60000000000,\"storage\":\"file\",\"num_replicas\":1}";
        natsMsg *reply = NULL;
        g_assert_cmpint(natsConnection_RequestString(&reply, r.nc, "$JS.API.STREAM.CREATE.KV_TTL", cfg, 5000), ==,
                        NATS_OK);
        g_autofree char *text = g_strndup(natsMsg_GetData(reply), (gsize)natsMsg_GetDataLength(reply));
        g_test_message("stream create: %s", text);
        g_assert_null(strstr(text, "\"error\""));
        natsMsg_Destroy(reply);
    } else {
        kvStore *kv = kv_bucket(&r, "TTL");
        kvStore_Destroy(kv);
    }
    rig_engine(&r, "batch = 16\n");
    g_assert_true(jet_test_wait_until(pulled, &r, 20000));
    publish_marker(&r, "$KV.TTL.hand", "Remove");
    publish_marker(&r, "$KV.TTL.aged", "MaxAge");
    publish_marker(&r, "$KV.TTL.newer", "Something-New");
    guint want = 3;
    if (server_markers) {
        natsMsg *m = NULL;
        g_assert_cmpint(natsMsg_Create(&m, "$KV.TTL.brief", NULL, "v", 1), ==, NATS_OK);
        g_assert_cmpint(natsMsgHeader_Set(m, "Nats-TTL", "1s"), ==, NATS_OK);
        jsPubAck *pa = NULL;
        g_assert_cmpint(js_PublishMsg(&pa, r.js, m, NULL, NULL), ==, NATS_OK);
        jsPubAck_Destroy(pa);
        natsMsg_Destroy(m);
        want = 5;   /* the put, then the server's marker when its TTL ran out */
    }
    wait_handled(&r, want, 30000);
    g_usleep(200000);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.dead_lettered, ==, 0);
    g_auto(GStrv) lines = kv_log(&r);
    g_autoptr(GPtrArray) entries = g_ptr_array_new();
    for (guint i = 0; lines[i] != NULL; i++) {
        g_test_message("%s", lines[i]);
        if (!g_str_has_prefix(lines[i], "initial-done"))
            g_ptr_array_add(entries, lines[i]);
    }
    g_assert_cmpuint(entries->len, ==, want);
    g_assert_cmpstr(g_ptr_array_index(entries, 0), ==, "1 hand delete 2");
    g_assert_cmpstr(g_ptr_array_index(entries, 1), ==, "2 aged purge 2");
    g_assert_cmpstr(g_ptr_array_index(entries, 2), ==, "3 newer delete 2");
    if (server_markers) {
        g_assert_cmpstr(g_ptr_array_index(entries, 3), ==, "4 brief put 2");
        g_assert_cmpstr(g_ptr_array_index(entries, 4), ==, "5 brief purge 2");
    }
    g_test_message("nats-server %u: %s", version, server_markers ? "its own marker read as a purge"
                                                                 : "no limit markers before 2.11");
    rig_free(&r);
}

/* Whether stream seq `seq` was handled (fx_gate's log). */
static gboolean was_handled(Rig *r, guint64 seq)
{
    g_autoptr(GArray) seqs = handled_seqs(r, NULL);
    for (guint i = 0; i < seqs->len; i++)
        if (g_array_index(seqs, guint64, i) == seq)
            return TRUE;
    return FALSE;
}

typedef struct {
    GSubprocess *h;
    Rig *r;
    guint64 last;
} ExitOrDone;

static gboolean exited_or_done(gpointer data)
{
    ExitOrDone *eh = data;
    return g_subprocess_get_identifier(eh->h) == NULL || was_handled(eh->r, eh->last);
}

/* A supervisor: runs the host again each time it dies (with death_rc),
 * until one gets to stream seq n, the stream's last (then stopped with
 * SIGTERM).  Returns the deaths; at most four runs. */
static guint supervise(Rig *r, const char *name, const char *extra, guint n, int death_rc)
{
    guint deaths = 0;
    for (guint run = 0; run < 4; run++) {
        g_autofree char *run_name = g_strdup_printf("%s-%u", name, run);
        GSubprocess *h = spawn_ordered(r, run_name, extra);
        ExitOrDone eh = { h, r, n };
        if (!jet_test_wait_until(exited_or_done, &eh, 60000)) {
            g_autofree char *text = log_of(run_name);
            g_error("run %u: neither exited nor handled stream seq %u (handled %u); its log:\n%s", run, n,
                    handled_count(r), text);
        }
        gboolean alive = g_subprocess_get_identifier(h) != NULL;
        if (alive)
            g_subprocess_send_signal(h, SIGTERM);
        int rc = jet_test_jethost_wait(h, 20000);
        g_object_unref(h);
        if (alive) {
            g_assert_cmpint(rc, ==, 0);
            break;
        }
        g_assert_cmpint(rc, ==, death_rc);
        deaths++;
    }
    g_test_message("%u deaths", deaths);
    return deaths;
}

/* The first record on the dead-letter stream: stream seq k, as poison. */
static void assert_poison(Rig *r, guint64 k)
{
    natsMsg *m = NULL;
    g_assert_cmpint(js_GetMsg(&m, r->js, "JETHOST_DLQ", 1, NULL, NULL), ==, NATS_OK);
    const char *seq = NULL, *cause = NULL;
    natsMsgHeader_Get(m, "Jethost-Origin-Seq", &seq);
    natsMsgHeader_Get(m, "Jethost-Cause", &cause);
    g_autofree char *kstr = g_strdup_printf("%" G_GUINT64_FORMAT, k);
    g_assert_cmpstr(seq, ==, kstr);
    g_assert_cmpstr(cause, ==, "poison");
    natsMsg_Destroy(m);
}

/* A server with n messages on ORDERS, one of which (stream seq k, returned:
 * neither the first nor the last) the test's plugin will stop on. */
static guint64 rig_culprit(Rig *r, guint n, const char *what)
{
    rig_server(r);
    const guint64 k = (guint64)g_test_rand_int_range(2, (gint32)n - 1);
    g_test_message("%s stream seq %" G_GUINT64_FORMAT, what, k);
    jet_test_publish_n(r->js, "orders.new", n);
    return k;
}

/* A message that kills the host every time: each restart strikes it, and
 * at crash_limit it is dead-lettered as poison without running, so the
 * binding goes on instead of dying on it for ever.  With checkpoint = kv
 * each restart resumes at that message; without, it begins at deliver (all:
 * the stream's start), and its first death is within a span mark, which
 * names no message: the next host strikes nothing, handles the span one mark
 * a message, dies on it again, and from then on the record names it
 * (docs/ordered.md, "Span marks"): one death more. */
typedef struct {
    gboolean checkpoint;
    gboolean batches;   /* batch_max = 5 */
} PoisonCase;

/* The stream seqs of the first handler batch holding k that a host died
 * in: [*from, k]. */
static guint64 batch_start_of(Rig *r, guint64 k)
{
    g_autoptr(GPtrArray) batches = batches_of(r);
    for (guint b = 0; b < batches->len; b++) {
        GArray *seqs = g_ptr_array_index(batches, b);
        for (guint i = 0; i < seqs->len; i++)
            if (g_array_index(seqs, guint64, i) == k)
                return g_array_index(seqs, guint64, 0);
    }
    g_error("no batch held stream seq %" G_GUINT64_FORMAT, k);
}

static void test_poison(gconstpointer data)
{
    const PoisonCase *pc = data;
    const gboolean checkpoint = pc->checkpoint;
    Rig r = { 0 };
    const guint n = 20;
    const guint64 k = rig_culprit(&r, n, checkpoint ? "abort() on" : "no checkpoint, abort() on");
    g_autofree char *extra = g_strdup_printf("%s%scrash_limit = 2\noption.abort_seq = %" G_GUINT64_FORMAT "\n",
                                             checkpoint ? "checkpoint = kv\n" : "",
                                             pc->batches ? "batch_max = 5\n" : "", k);
    /* A death within a span, or within a batch, names no message: the
     * next host is careful, and dies naming it. */
    const guint deaths = checkpoint && !pc->batches ? 2 : 3;
    g_assert_cmpuint(supervise(&r, checkpoint ? "poison" : "nockpt", extra, n, 128 + SIGABRT), ==, deaths);
    /* k at each death (its last with a strike: delivery 2), then poison;
     * the rest once, and without a checkpoint what comes before k once a
     * run.  With a checkpoint and batches, the first death's batch is
     * handled again from its start, one message a mark: what came before
     * k in it twice. */
    const guint64 from = checkpoint && pc->batches ? batch_start_of(&r, k) : k;
    g_autofree guint *last = NULL;
    g_autofree guint *count = handled_counts(&r, n, checkpoint && !pc->batches, &last);
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(count[s], ==, s == k ? deaths : s < k && !checkpoint ? deaths + 1 : s >= from && s < k ? 2 : 1);
    g_assert_cmpuint(last[k], ==, 2);
    assert_poison(&r, k);
    if (!checkpoint || pc->batches) {
        /* The second host strikes nothing; the third strikes k. */
        g_autofree char *second = log_of(checkpoint ? "poison-1" : "nockpt-1");
        g_assert_cmpuint(jet_test_count_lines(second, "event=span-suspect"), ==, 1);
        g_assert_cmpuint(jet_test_count_lines(second, "event=suspect"), ==, 0);
        g_autofree char *third = log_of(checkpoint ? "poison-2" : "nockpt-2");
        g_autofree char *struck =
            g_strdup_printf("event=suspect seq=%" G_GUINT64_FORMAT " msg=\"stream seq %" G_GUINT64_FORMAT " ", k, k);
        g_assert_cmpuint(jet_test_count_lines(third, struck), ==, 1);
    }
    rig_free(&r);
}

/* The position record as the host wrote it (the ledger bucket's key) says
 * nothing is in the handler, after pos; and fx_gate's handler has run on
 * `ran` (0: any), so a record read now was written after that handler
 * began. */
typedef struct {
    Rig *r;
    guint64 pos;
    guint64 ran;
} RecordWait;

static gboolean record_idle_at(gpointer data)
{
    RecordWait *rw = data;
    if (rw->ran != 0 && !was_handled(rw->r, rw->ran))
        return FALSE;
    kvStore *kv = NULL;
    if (js_KeyValue(&kv, rw->r->js, "jethost_ledger") != NATS_OK)
        return FALSE;
    kvEntry *e = NULL;
    gboolean ok = FALSE;
    if (kvStore_Get(&e, kv, "ordered.t") == NATS_OK) {
        g_autofree char *want = g_strdup_printf("\"pos\":%" G_GUINT64_FORMAT ",\"in\":0,", rw->pos);
        gsize len = 0;
        const char *value = jet_kv_value(e, &len);
        ok = g_strstr_len(value, (gssize)len, want) != NULL;
        kvEntry_Destroy(e);
    }
    kvStore_Destroy(kv);
    return ok;
}

/* A host run until fx_gate's log holds `lines` lines, then stopped. */
static void run_until_handled(Rig *r, const char *name, const char *extra, guint lines)
{
    GSubprocess *h = spawn_ordered(r, name, extra);
    wait_handled(r, lines, 30000);
    g_subprocess_send_signal(h, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(h, 20000), ==, 0);
    g_object_unref(h);
}

/* Each of stream seqs 1..n handled `times` times, the last at delivery 1:
 * no strike. */
static void assert_unstruck(Rig *r, guint n, guint times)
{
    g_autofree guint *last = NULL;
    g_autofree guint *count = handled_counts(r, n, FALSE, &last);
    for (guint64 s = 1; s <= n; s++) {
        g_assert_cmpuint(count[s], ==, times);
        g_assert_cmpuint(last[s], ==, 1);
    }
}

/* While a batch is gathered (batch_wait) nothing is in the handler: the
 * record says so, as when idle, so a host killed then blames no message.
 * Seven messages, batches of five with batch_wait 3 s: the first five are
 * handled, then 6 and 7 wait for more, and meanwhile the record names
 * nothing after 5. */
static void test_batch_gathering_idle(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 7);
    GSubprocess *h = spawn_ordered(&r, "gather", "checkpoint = kv\nbatch_max = 5\nbatch_wait = 3s\n");
    wait_handled(&r, 5, 30000);
    RecordWait rw = { &r, 5, 0 };
    g_assert_true(jet_test_wait_until(record_idle_at, &rw, 2000));
    g_assert_cmpuint(handled_count(&r), ==, 5);
    wait_handled(&r, 7, 30000);
    g_subprocess_send_signal(h, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(h, 20000), ==, 0);
    g_object_unref(h);
    rig_free(&r);
}

/* What the record must not blame: a host killed while idle had nothing in
 * the handler (the record says so once nothing waits), nor one killed while
 * a message waits a retry in place; and a stream deleted and re-created has
 * other messages under the same sequences (the record holds the stream's
 * creation time). */
static void test_mark_blames_nobody_else(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 10;
    jet_test_publish_n(r.js, "orders.new", n);
    GSubprocess *a = spawn_ordered(&r, "idle-a", "");
    wait_handled(&r, n, 30000);
    RecordWait rw = { &r, n, 0 };
    g_assert_true(jet_test_wait_until(record_idle_at, &rw, 10000));
    g_subprocess_send_signal(a, SIGKILL);
    g_assert_cmpint(jet_test_jethost_wait(a, 10000), ==, 128 + SIGKILL);
    g_object_unref(a);
    run_until_handled(&r, "idle-b", "", 2 * n);
    assert_unstruck(&r, n, 2);
    g_autofree char *blog = log_of("idle-b");
    g_assert_cmpuint(jet_test_count_lines(blog, "event=suspect"), ==, 0);

    /* Killed by stream seq 4 of this life of ORDERS; the stream is then
     * deleted and made again: its seq 4 is another message, never struck. */
    GSubprocess *c = spawn_ordered(&r, "life-c", "option.abort_seq = 4\n");
    g_assert_cmpint(jet_test_jethost_wait(c, 30000), ==, 128 + SIGABRT);
    g_object_unref(c);
    g_assert_cmpint(js_DeleteStream(r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    jet_test_stream_create(r.js, "ORDERS", "orders.>");
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *path = g_build_filename(r.dir, "handled.log", NULL);
    g_assert_cmpint(g_unlink(path), ==, 0);
    run_until_handled(&r, "life-d", "", n);
    assert_unstruck(&r, n, 1);
    g_autofree char *dlog = log_of("life-d");
    g_assert_cmpuint(jet_test_count_lines(dlog, "event=checkpoint-other-stream"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(dlog, "event=suspect"), ==, 0);

    /* Killed while seq 3 waits a retry's rung in place, out of the handler:
     * the next host does not strike it. */
    g_assert_cmpint(g_unlink(path), ==, 0);
    GSubprocess *e = spawn_ordered(&r, "wait-e", "rungs = 1m\noption.fail_seq = 3\n");
    RecordWait waiting = { &r, 2, 3 };
    g_assert_true(jet_test_wait_until(record_idle_at, &waiting, 10000));
    g_subprocess_send_signal(e, SIGKILL);
    g_assert_cmpint(jet_test_jethost_wait(e, 10000), ==, 128 + SIGKILL);
    g_object_unref(e);
    g_assert_cmpint(g_unlink(path), ==, 0);
    run_until_handled(&r, "wait-f", "", n);
    assert_unstruck(&r, n, 1);
    g_autofree char *flog = log_of("wait-f");
    g_assert_cmpuint(jet_test_count_lines(flog, "event=suspect"), ==, 0);
    rig_free(&r);
}

/* The position record as it is now (the ledger bucket's key ordered.t). */
static char *record_text(Rig *r)
{
    kvStore *kv = NULL;
    g_assert_cmpint(js_KeyValue(&kv, r->js, "jethost_ledger"), ==, NATS_OK);
    kvEntry *e = NULL;
    g_assert_cmpint(kvStore_Get(&e, kv, "ordered.t"), ==, NATS_OK);
    gsize len = 0;
    const char *value = jet_kv_value(e, &len);
    char *text = g_strndup(value, len);
    kvEntry_Destroy(e);
    kvStore_Destroy(kv);
    return text;
}

/* How many writes the ledger bucket has taken so far. */
static guint64 ledger_writes(Rig *r)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, r->js, "KV_jethost_ledger", NULL, NULL), ==, NATS_OK);
    guint64 last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return last;
}

/* Without checkpoint = kv the record is written once a span of up to
 * `batch` messages, not once a message (docs/ordered.md, "Span marks");
 * with it, once a message (it is the checkpoint). */
static void test_span_marks(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 200;
    jet_test_publish_n(r.js, "orders.new", n);
    run_until_handled(&r, "span-a", "", n);
    guint64 spans = ledger_writes(&r);
    g_test_message("%" G_GUINT64_FORMAT " writes for %u messages at batch 10", spans, n);
    /* One a batch, another when a pull's round trip outlasts the idle
     * mark's 10 ms, one at the stop. */
    g_assert_cmpuint(spans, >=, n / 10);
    g_assert_cmpuint(spans, <, n / 2);
    g_autofree char *idle = record_text(&r);
    g_assert_nonnull(strstr(idle, "\"in\":0,"));
    g_assert_null(strstr(idle, "\"n\":"));

    jet_test_publish_n(r.js, "orders.new", n);
    run_until_handled(&r, "span-b", "checkpoint = kv\n", 2 * n);
    guint64 precise = ledger_writes(&r) - spans;
    g_test_message("%" G_GUINT64_FORMAT " writes for %u messages with checkpoint = kv", precise, n);
    g_assert_cmpuint(precise, >=, n);
    assert_once_in_order(&r, 1, 2 * n);
    rig_free(&r);
}

/* A host killed within a span strikes nothing (the span names no
 * message); the next host handles the span one mark a message, so its death
 * names the culprit, which the host after it strikes (at crash_limit 1:
 * poison, without running), and the binding goes on. */
static void test_span_crash_careful(void)
{
    Rig r = { 0 };
    const guint n = 30;
    const guint64 k = rig_culprit(&r, n, "abort() on");
    g_autofree char *extra = g_strdup_printf("crash_limit = 1\noption.abort_seq = %" G_GUINT64_FORMAT "\n", k);

    GSubprocess *a = spawn_ordered(&r, "careful-a", extra);
    g_assert_cmpint(jet_test_jethost_wait(a, 30000), ==, 128 + SIGABRT);
    g_object_unref(a);
    /* A span of a batch (10) that holds k, with no strikes. */
    g_autofree char *span = record_text(&r);
    g_test_message("after the first death: %s", span);
    g_assert_nonnull(strstr(span, "\"n\":10,\"s\":0"));
    guint64 from = 0;
    g_assert_nonnull(strstr(span, "\"in\":"));
    from = g_ascii_strtoull(strstr(span, "\"in\":") + 5, NULL, 10);
    g_assert_cmpuint(from, <=, k);
    g_assert_cmpuint(from + 10, >, k);

    GSubprocess *b = spawn_ordered(&r, "careful-b", extra);
    g_assert_cmpint(jet_test_jethost_wait(b, 30000), ==, 128 + SIGABRT);
    g_object_unref(b);
    g_autofree char *blog = log_of("careful-b");
    g_assert_cmpuint(jet_test_count_lines(blog, "event=span-suspect"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(blog, "event=suspect"), ==, 0);
    /* The careful replay named k alone. */
    g_autofree char *precise = record_text(&r);
    g_test_message("after the second death: %s", precise);
    g_autofree char *named = g_strdup_printf("\"in\":%" G_GUINT64_FORMAT ",\"s\":0", k);
    g_assert_nonnull(strstr(precise, named));
    g_assert_null(strstr(precise, "\"n\":"));

    /* Lines: 1..k by each of the two that died, then all but k. */
    run_until_handled(&r, "careful-c", extra, 2 * (guint)k + n - 1);
    g_autofree char *clog = log_of("careful-c");
    g_autofree char *struck =
        g_strdup_printf("event=suspect seq=%" G_GUINT64_FORMAT " msg=\"stream seq %" G_GUINT64_FORMAT " ", k, k);
    g_assert_cmpuint(jet_test_count_lines(clog, struck), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(clog, "event=span-suspect"), ==, 0);
    assert_poison(&r, k);
    /* Before k: once a run; k: at each death, never struck before the
     * third host (delivery 1 both times); after k: once. */
    g_autofree guint *last = NULL;
    g_autofree guint *count = handled_counts(&r, n, FALSE, &last);
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(count[s], ==, s < k ? 3 : s == k ? 2 : 1);
    g_assert_cmpuint(last[k], ==, 1);
    rig_free(&r);
}

/* --- the first bind ----------------------------------------------------------- */

/* `jethost run` binds an ordered binding as it does a durable one: a few
 * attempts (100 ms doubling, 5 in all), then it exits 1 naming the binding
 * and what the server said: a missing stream, a missing bucket.  A filter
 * that matches none of the stream's subjects is the host's own refusal, on
 * every server version (2.10 and later accept such a consumer), and a
 * config error: not retried, for an ordered and a durable binding alike.
 * A stream that appears meanwhile is bound. */
static void test_first_bind(void)
{
    Rig r = { 0 };
    rig_server(&r);
    static const struct {
        const char *name;
        const char *binding;
        const char *says;
        guint retried;      /* attempts that said when the next comes */
        const char *retry_event;
    } cases[] = {
        { "bind-stream", "stream = NOPE\nkind = ordered\n", "binding t: stream NOPE does not exist", 4,
          "event=ordered-bind-failed" },
        { "bind-bucket", "kind = kv\nbucket = NOBUCKET\n", "binding t: KV bucket NOBUCKET does not exist", 4,
          "event=ordered-bind-failed" },
        { "bind-filter", "stream = ORDERS\nkind = ordered\nfilter_subject = other.>\n",
          "binding t: filter_subject other.> matches none of the subjects of stream ORDERS (orders.>)", 0,
          "event=ordered-bind-failed" },
        { "bind-filter-durable", "stream = ORDERS\nconsumer = d\nfilter_subject = orders.*.x.>\n"
          "subjects = orders.>\n", NULL, 0, "event=resubscribing" },
        { "bind-filter-token", "stream = ORDERS\nkind = ordered\nfilter_subject = orders\n",
          "binding t: filter_subject orders matches none of the subjects of stream ORDERS (orders.>)", 0,
          "event=ordered-bind-failed" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        gint64 t0 = g_get_monotonic_time();
        GSubprocess *h = spawn_host(&r, cases[i].name, "", cases[i].binding);
        if (cases[i].says == NULL) {
            /* A filter that does fit (orders.*.x.> within orders.>) binds. */
            g_autofree char *log = NULL;
            for (guint k = 0;; k++) {
                g_clear_pointer(&log, g_free);
                log = log_of(cases[i].name);
                if (strstr(log, "event=consumer-created") != NULL)
                    break;
                g_assert_cmpuint(k, <, 1000);
                g_usleep(5000);
            }
            g_subprocess_send_signal(h, SIGTERM);
            g_assert_cmpint(jet_test_jethost_wait(h, 10000), ==, 0);
            g_object_unref(h);
            continue;
        }
        g_assert_cmpint(jet_test_jethost_wait(h, 10000), ==, 1);
        g_object_unref(h);
        gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
        g_autofree char *log = log_of(cases[i].name);
        g_test_message("%s: exited after %" G_GINT64_FORMAT " ms:\n%s", cases[i].name, took_ms, log);
        g_assert_cmpint(took_ms, <, 5000);
        g_assert_cmpuint(jet_test_count_lines(log, cases[i].retry_event), ==, cases[i].retried);
        g_assert_cmpuint(jet_test_count_lines(log, "event=failed"), ==, 1);
        g_assert_nonnull(strstr(log, cases[i].says));
        g_autofree char *not_started = g_strdup_printf("event=not-started msg=\"1 of 1 binding cannot start: t "
                                                       "(cannot bind%s); exiting with code 1",
                                                       cases[i].retried > 0 ? "" : " as configured");
        g_assert_cmpuint(jet_test_count_lines(log, not_started), ==, 1);
    }
    /* A durable binding's filter is checked as an ordered one's is; there a
     * consumer that cannot fit is a config error, exit 3 (docs/cli.md). */
    GSubprocess *d = spawn_host(&r, "bind-durable-filter", "", "stream = ORDERS\nconsumer = d2\n"
                                "filter_subject = other.>\n");
    g_assert_cmpint(jet_test_jethost_wait(d, 10000), ==, 3);
    g_object_unref(d);
    g_autofree char *durable_log = log_of("bind-durable-filter");
    g_test_message("bind-durable-filter:\n%s", durable_log);
    g_assert_nonnull(strstr(durable_log, "binding t: filter_subject other.> matches none of the subjects of stream "
                                         "ORDERS (orders.>)"));
    g_assert_cmpuint(jet_test_count_lines(durable_log, "event=resubscribing"), ==, 0);

    /* The stream is made after the first attempt failed: a later one binds. */
    GSubprocess *h = spawn_host(&r, "bind-late", "", "stream = LATE\nkind = ordered\n");
    for (guint i = 0;; i++) {
        g_autofree char *log = log_of("bind-late");
        if (jet_test_count_lines(log, "event=ordered-bind-failed") > 0)
            break;
        g_assert_cmpuint(i, <, 1000);
        g_usleep(5000);
    }
    jet_test_stream_create(r.js, "LATE", "late.>");
    jet_test_publish_n(r.js, "late.x", 3);
    wait_handled(&r, 3, 20000);
    g_subprocess_send_signal(h, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(h, 20000), ==, 0);
    g_object_unref(h);
    rig_free(&r);
}

/* --- a hung handler --------------------------------------------------------------- */

typedef struct {
    gint fired;
    guint workers;
} HungSeen;

static void on_hung(JetEngine *e, const char *binding, guint workers, gpointer data)
{
    (void)e;
    (void)binding;
    HungSeen *hs = data;
    hs->workers = workers;
    g_atomic_int_inc(&hs->fired);
}

static gboolean hung_seen(gpointer data)
{
    JetEngineStats st;
    jet_engine_stats(((Rig *)data)->eng, &st);
    return st.hung_handlers >= 1;
}

static gboolean hook_fired(gpointer data)
{
    return g_atomic_int_get(&((HungSeen *)data)->fired) > 0;
}

/* A handler past handler_timeout on an ordered binding: reported by the
 * watch (the worker is the stuck thread), counted, and nothing overtakes
 * it; when it returns the binding goes on in order.  The host is told to
 * exit only with exit_on_any_hung. */
static void test_hung(gconstpointer data)
{
    /* With batches the six go to handle_batch() together, hung on 3:
     * the call is reported, by its first message. */
    const gboolean batches = GPOINTER_TO_INT(data);
    const char *said = batches ? "1" : "3";
    Rig r = { 0 };
    r.ordered = TRUE;
    rig_server(&r);
    const guint n = 6;
    jet_test_publish_n(r.js, "orders.new", n);
    HungSeen hs = { 0 };
    r.hung_hook = on_hung;
    r.hung_data = &hs;
    jet_test_stderr_begin("ordered-hung");
    rig_engine(&r, batches ? "batch_max = 6\nbatch_wait = 500ms\nhandler_timeout = 1s\noption.block_seq = 3\n"
                           : "handler_timeout = 1s\noption.block_seq = 3\n");
    rig_wait_inflight(&r, 3);
    g_assert_true(jet_test_wait_until(hung_seen, &r, 10000));
    /* Nothing went round it. */
    assert_once_in_order(&r, 1, 2);
    g_assert_cmpint(g_atomic_int_get(&hs.fired), ==, 0);
    rig_let_go(&r, 3);
    wait_handled(&r, n, 20000);
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();
    assert_once_in_order(&r, 1, n);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.hung_handlers, ==, 1);
    g_assert_cmpint(g_atomic_int_get(&hs.fired), ==, 0);
    g_autofree char *hung = g_strdup_printf("event=handler-hung seq=%s msg=\"stream seq %s: ", said, said);
    g_autofree char *back = g_strdup_printf("event=handler-returned msg=\"stream seq %s: the hung handler returned after ",
                                            said);
    g_assert_cmpuint(jet_test_count_lines(log, hung), >=, 1);
    g_assert_cmpuint(jet_test_count_lines(log, back), ==, 1);
    /* It says how long it ran: at least the timeout. */
    g_assert_cmpuint(jet_test_count_lines(log, " returned after 0 ms"), ==, 0);
    rig_engine_end(&r);

    /* exit_on_any_hung: the host is told at once. */
    g_autofree char *path = g_build_filename(r.dir, "handled.log", NULL);
    g_assert_cmpint(g_unlink(path), ==, 0);
    jet_test_publish_n(r.js, "orders.new", 1);
    rig_engine(&r, "deliver = from_seq 7\nhandler_timeout = 1s\nexit_on_any_hung = true\noption.block_seq = 7\n");
    rig_wait_inflight(&r, 7);
    g_assert_true(jet_test_wait_until(hook_fired, &hs, 10000));
    g_assert_cmpuint(hs.workers, ==, 1);
    rig_let_go(&r, 7);
    wait_handled(&r, 1, 20000);
    g_assert_cmpint(g_atomic_int_get(&hs.fired), ==, 1);
    rig_free(&r);
}

/* A handler that never returns on one message, with exit_on_any_hung: the
 * host exits (code 5), its supervisor (this loop) restarts it, and the
 * position record strikes the message each time: at crash_limit it is
 * poison, dead-lettered without running, and the rest is handled. */
static void test_hang_poison(void)
{
    Rig r = { 0 };
    const guint n = 12;
    const guint64 k = rig_culprit(&r, n, "hangs on");
    g_autofree char *extra = g_strdup_printf("crash_limit = 2\nhandler_timeout = 1s\nexit_on_any_hung = true\n"
                                             "option.block_seq = %" G_GUINT64_FORMAT "\n", k);
    /* No checkpoint: the first hang is within a span mark, which names no
     * message; the careful replay's hang names it (docs/ordered.md, "Span
     * marks"). */
    g_assert_cmpuint(supervise(&r, "hang", extra, n, 5), ==, 3);
    /* k never finished a handler (hung three times, then poison). */
    g_autofree guint *last = NULL;
    g_autofree guint *count = handled_counts(&r, n, FALSE, &last);
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(count[s], ==, s < k ? 4 : s == k ? 0 : 1);
    assert_poison(&r, k);
    g_autofree char *log = log_of("hang-0");
    g_autofree char *hung =
        g_strdup_printf("event=handler-hung seq=%" G_GUINT64_FORMAT " msg=\"stream seq %" G_GUINT64_FORMAT ": ", k, k);
    g_assert_cmpuint(jet_test_count_lines(log, hung), >=, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=all-workers-hung"), ==, 1);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ordered/recovery", test_recovery);
    g_test_add_func("/ordered/gap", test_gap);
    g_test_add_func("/ordered/idle-pulls", test_idle_pulls);
    g_test_add_func("/ordered/verdicts-in-place", test_verdicts_in_place);
    g_test_add_func("/ordered/capture-failed-in-place", test_capture_failed_in_place);
    g_test_add_func("/ordered/batch-in-order", test_batch_in_order);
    g_test_add_func("/ordered/batch-hostile", test_batch_hostile);
    g_test_add_func("/ordered/deliver", test_deliver);
    g_test_add_func("/ordered/deliver-from-time", test_deliver_from_time);
    g_test_add_data_func("/ordered/kv-watch", "", test_kv_watch);
    g_test_add_data_func("/ordered/kv-watch-batches", "batch_max = 8\n", test_kv_watch);
    g_test_add_func("/ordered/kv-initial-pending", test_kv_initial_pending);
    g_test_add_func("/ordered/kv-purged-under-watch", test_kv_purged_under_watch);
    g_test_add_func("/ordered/kv-empty-and-updates-only", test_kv_empty_and_updates_only);
    g_test_add_func("/ordered/kv-verdicts", test_kv_verdicts);
    g_test_add_func("/ordered/kv-stress", test_kv_stress);
    g_test_add_func("/ordered/kv-churn", test_kv_churn);
    g_test_add_func("/ordered/kv-markers", test_kv_markers);
    g_test_add_func("/ordered/checkpoint-resume", test_checkpoint_resume);
    g_test_add_func("/ordered/stream-new-life", test_stream_new_life);
    g_test_add_func("/ordered/fell-back-briefly", test_fell_back_briefly);
    g_test_add_data_func("/ordered/kv-new-life", GINT_TO_POINTER(FALSE), test_kv_new_life);
    g_test_add_data_func("/ordered/kv-new-life-checkpoint", GINT_TO_POINTER(TRUE), test_kv_new_life);
    static const PoisonCase poison_cases[] = { { TRUE, FALSE }, { FALSE, FALSE }, { TRUE, TRUE }, { FALSE, TRUE } };
    g_test_add_data_func("/ordered/checkpoint-poison", &poison_cases[0], test_poison);
    g_test_add_data_func("/ordered/crash-no-checkpoint", &poison_cases[1], test_poison);
    g_test_add_data_func("/ordered/checkpoint-poison-batches", &poison_cases[2], test_poison);
    g_test_add_data_func("/ordered/crash-no-checkpoint-batches", &poison_cases[3], test_poison);
    g_test_add_func("/ordered/mark-blames-nobody-else", test_mark_blames_nobody_else);
    g_test_add_func("/ordered/batch-gathering-idle", test_batch_gathering_idle);
    g_test_add_func("/ordered/span-marks", test_span_marks);
    g_test_add_func("/ordered/span-crash-careful", test_span_crash_careful);
    g_test_add_func("/ordered/first-bind", test_first_bind);
    g_test_add_data_func("/ordered/hung", GINT_TO_POINTER(FALSE), test_hung);
    g_test_add_data_func("/ordered/hung-batch", GINT_TO_POINTER(TRUE), test_hung);
    g_test_add_func("/ordered/hang-poison", test_hang_poison);
    return g_test_run();
}
