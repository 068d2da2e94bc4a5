/* Settlement against a real nats-server 2.9.10: the retry
 * ladder's gaps as the handler sees them, postpones that come back on time
 * and spend no attempt, a bound consumer with a server BackOff refused, and
 * capture-then-ack for every trigger: one DLQ record with its provenance,
 * the original acked; a malformed delivery; a missing DLQ stream (bind:
 * Stranded at the last delivery; managed: re-created); the MaxDeliver
 * budget; Nats-Rollup / Nats-Expected-* carried harmlessly; too large.
 *
 * Spies used throughout: every settlement body the engine sends is seen by
 * a plain subscriber on $JS.ACK.ORDERS.c.> (core NATS gives everyone a
 * copy), so "never acked" is observed, not inferred; fx_gate's handled.log
 * gives each delivery's monotonic time and what the ABI said
 * (msg_failures, msg_postpones). */
#define _GNU_SOURCE
#include "rig.h"
#include "ack_subject.h"
#include "capture.h"
#include "msg_payload.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DLQ "JETHOST_DLQ"
#define DLQ_SUBJECT "jethost.dlq.t"
#define NS_PER_MS G_GINT64_CONSTANT(1000000)

/* --- handled.log ---------------------------------------------------------- */

typedef struct {
    guint64 seq;
    guint deliveries;
    gint64 mono_ns;
    guint failures, postpones;
} Handled;

/* The deliveries of one stream seq, in order (all when seq is 0). */
static GArray *handled_lines(Rig *r, guint64 seq)
{
    g_autofree char *path = g_build_filename(r->dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    GArray *a = g_array_new(FALSE, TRUE, sizeof(Handled));
    if (!jet_test_read_lines(path, &text))
        return a;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        Handled h = { 0 };
        unsigned long long s = 0;
        unsigned long thread = 0;
        long long mono = 0;
        g_assert_cmpint(sscanf(*l, "%llu %u %lx %lld %u %u", &s, &h.deliveries, &thread, &mono, &h.failures,
                               &h.postpones), ==, 6);
        h.seq = s;
        h.mono_ns = mono;
        if (seq == 0 || h.seq == seq)
            g_array_append_val(a, h);
    }
    return a;
}

/* Gaps between consecutive deliveries of h, each within 20 % or 150 ms of
 * want_ms[i] (whichever is larger). */
static void assert_gaps(GArray *h, const guint *want_ms, guint n)
{
    g_assert_cmpuint(h->len, >=, n + 1);
    for (guint i = 0; i < n; i++) {
        Handled *a = &g_array_index(h, Handled, i), *b = &g_array_index(h, Handled, i + 1);
        g_assert_cmpuint(b->deliveries, ==, a->deliveries + 1);
        gint64 gap_ms = (b->mono_ns - a->mono_ns) / NS_PER_MS;
        gint64 tol = MAX((gint64)want_ms[i] / 5, 150);
        g_test_message("delivery %u -> %u: %" G_GINT64_FORMAT " ms (rung %u ms, tolerance %" G_GINT64_FORMAT " ms)",
                       a->deliveries, b->deliveries, gap_ms, want_ms[i], tol);
        g_assert_cmpint(gap_ms, >=, (gint64)want_ms[i] - tol);
        g_assert_cmpint(gap_ms, <=, (gint64)want_ms[i] + tol);
    }
}

/* --- engine stats ----------------------------------------------------------- */

typedef struct {
    Rig *r;
    gsize offset;      /* of a guint64 in JetEngineStats */
    guint64 at_least;
} StatWait;

static gboolean stat_reached(gpointer data)
{
    StatWait *w = data;
    JetEngineStats st;
    jet_engine_stats(w->r->eng, &st);
    return G_STRUCT_MEMBER(guint64, &st, w->offset) >= w->at_least;
}

#define WAIT_STAT(r, field, n, ms)                                                                  \
    do {                                                                                            \
        StatWait sw_ = { (r), G_STRUCT_OFFSET(JetEngineStats, field), (n) };                        \
        if (!jet_test_wait_until(stat_reached, &sw_, (ms)))                                         \
            g_error("stats." #field " did not reach %u within %u ms", (guint)(n), (guint)(ms));    \
    } while (0)

static JetEngineStats stats(Rig *r)
{
    JetEngineStats st;
    jet_engine_stats(r->eng, &st);
    return st;
}

/* --- the ack spy -------------------------------------------------------------- */

typedef struct {
    guint64 seq;
    guint64 delivered;
    char *body;
    gboolean request;   /* sent as a request (the confirmed ack) */
} Settlement;

typedef struct {
    natsSubscription *sub;
    GMutex lock;
    GArray *seen;       /* of Settlement */
} AckSpy;

static void settlement_clear(gpointer p)
{
    g_free(((Settlement *)p)->body);
}

static void on_ack(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    AckSpy *spy = closure;
    (void)nc;
    (void)sub;
    JetAckMeta meta;
    Settlement s = { 0 };
    if (jet_ack_subject_parse(natsMsg_GetSubject(m), &meta)) {
        s.seq = meta.stream_seq;
        s.delivered = meta.delivered;
    }
    gsize len = 0;
    const char *body = jet_msg_payload(m, &len);
    s.body = g_strndup(body, len);
    s.request = natsMsg_GetReply(m) != NULL;
    g_mutex_lock(&spy->lock);
    g_array_append_val(spy->seen, s);
    g_mutex_unlock(&spy->lock);
    natsMsg_Destroy(m);
}

static void ack_spy_start(Rig *r, AckSpy *spy)
{
    g_mutex_init(&spy->lock);
    spy->seen = g_array_new(FALSE, TRUE, sizeof(Settlement));
    g_array_set_clear_func(spy->seen, settlement_clear);
    g_assert_cmpint(natsConnection_Subscribe(&spy->sub, r->nc, "$JS.ACK.ORDERS.c.>", on_ack, spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r->nc), ==, NATS_OK);
}

static void ack_spy_stop(AckSpy *spy)
{
    natsSubscription_Unsubscribe(spy->sub);
    natsSubscription_Destroy(spy->sub);
    g_array_unref(spy->seen);
    g_mutex_clear(&spy->lock);
}

/* How many bodies starting with prefix were sent for seq (at delivery d; 0: any). */
static guint ack_spy_count(AckSpy *spy, guint64 seq, guint64 d, const char *prefix)
{
    guint n = 0;
    g_mutex_lock(&spy->lock);
    for (guint i = 0; i < spy->seen->len; i++) {
        Settlement *s = &g_array_index(spy->seen, Settlement, i);
        if (s->seq == seq && (d == 0 || s->delivered == d) && g_str_has_prefix(s->body, prefix))
            n++;
    }
    g_mutex_unlock(&spy->lock);
    return n;
}

/* --- advisories ----------------------------------------------------------------- */

typedef struct {
    natsSubscription *sub;
    gint count;
    gint64 last_seq, last_deliveries;   /* atomic enough: read after count */
} MaxDeliveries;

static void on_max_deliveries(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    MaxDeliveries *md = closure;
    (void)nc;
    (void)sub;
    g_autoptr(JsonParser) p = json_parser_new();
    gsize len = 0;
    const char *body = jet_msg_payload(m, &len);
    if (json_parser_load_from_data(p, body, (gssize)len, NULL)) {
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        md->last_seq = json_object_get_int_member_with_default(o, "stream_seq", 0);
        md->last_deliveries = json_object_get_int_member_with_default(o, "deliveries", 0);
        g_atomic_int_inc(&md->count);
    }
    natsMsg_Destroy(m);
}

static gboolean max_deliveries_seen(gpointer data)
{
    return g_atomic_int_get(&((MaxDeliveries *)data)->count) > 0;
}

/* --- stderr, teed ------------------------------------------------------------------ */

/* The engine logs to stderr: while a tap is on, fd 2 is a pipe whose reader
 * copies every byte to the real stderr and keeps it for the test. */
typedef struct {
    int saved, rd;
    GThread *thread;
    GMutex lock;
    GString *text;
} LogTap;

static gpointer tap_main(gpointer data)
{
    LogTap *t = data;
    char buf[4096];
    ssize_t n;
    while ((n = read(t->rd, buf, sizeof buf)) > 0) {
        if (write(t->saved, buf, (size_t)n) < 0) {
            /* the real stderr is gone: keep the copy anyway */
        }
        g_mutex_lock(&t->lock);
        g_string_append_len(t->text, buf, n);
        g_mutex_unlock(&t->lock);
    }
    return NULL;
}

static void log_tap_start(LogTap *t)
{
    int fds[2];
    g_assert_cmpint(pipe(fds), ==, 0);
    fflush(stderr);
    t->saved = dup(2);
    g_assert_cmpint(t->saved, >=, 0);
    g_assert_cmpint(dup2(fds[1], 2), ==, 2);
    close(fds[1]);
    t->rd = fds[0];
    g_mutex_init(&t->lock);
    t->text = g_string_new(NULL);
    t->thread = g_thread_new("log-tap", tap_main, t);
}

static void log_tap_stop(LogTap *t)
{
    fflush(stderr);
    dup2(t->saved, 2);   /* the pipe's last writer goes: the reader sees EOF */
    close(t->saved);
    g_thread_join(t->thread);
    close(t->rd);
    g_mutex_clear(&t->lock);
    g_string_free(t->text, TRUE);
}

static gboolean log_tap_has(LogTap *t, const char *needle)
{
    g_mutex_lock(&t->lock);
    gboolean has = strstr(t->text->str, needle) != NULL;
    g_mutex_unlock(&t->lock);
    return has;
}

/* --- JetStream ------------------------------------------------------------------------ */

/* A durable pull consumer "c" made by the operator (for manage = bind). */
static void bound_consumer(Rig *r, gint64 max_deliver, const int64_t *backoff, int n_backoff)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "c";
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = 2000 * NS_PER_MS;
    cc.MaxDeliver = max_deliver;
    cc.BackOff = (int64_t *)backoff;
    cc.BackOffLen = n_backoff;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddConsumer(&ci, r->js, "ORDERS", &cc, NULL, &jerr);
    if (s != NATS_OK)
        g_error("add consumer: %s (err %d)", natsStatus_GetText(s), (int)jerr);
    jsConsumerInfo_Destroy(ci);
}

/* The DLQ stream made by the operator: like the one jethost makes, and
 * allowing rollups when asked. */
static void operator_dlq(Rig *r, gboolean allow_rollup)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = DLQ;
    const char *subjects[] = { "jethost.dlq.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Duplicates = JET_DLQ_DUPLICATE_WINDOW_NS;
    sc.AllowRollup = allow_rollup;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddStream(&si, r->js, &sc, NULL, &jerr);
    if (s != NATS_OK)
        g_error("create %s: %s (err %d)", DLQ, natsStatus_GetText(s), (int)jerr);
    jsStreamInfo_Destroy(si);
}

static guint64 stream_last_seq(Rig *r, const char *name, guint64 *msgs)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, r->js, name, NULL, &jerr);
    if (s != NATS_OK)
        g_error("stream info %s: %s (err %d)", name, natsStatus_GetText(s), (int)jerr);
    guint64 last = si->State.LastSeq;
    if (msgs != NULL)
        *msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return last;
}

static const char *hget(natsMsg *m, const char *name)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, name, &v) != NATS_OK)
        return NULL;
    return v;
}

/* Every DLQ record whose Jethost-Origin-Seq is seq (0: every record), in
 * DLQ order.  Free with g_ptr_array_unref. */
static GPtrArray *dlq_records(Rig *r, guint64 seq)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)natsMsg_Destroy);
    guint64 last = stream_last_seq(r, DLQ, NULL);
    for (guint64 i = 1; i <= last; i++) {
        natsMsg *m = NULL;
        if (js_GetMsg(&m, r->js, DLQ, i, NULL, NULL) != NATS_OK)
            continue;   /* deleted */
        const char *o = hget(m, "Jethost-Origin-Seq");
        if (seq == 0 || (o != NULL && g_ascii_strtoull(o, NULL, 10) == seq))
            g_ptr_array_add(out, m);
        else
            natsMsg_Destroy(m);
    }
    return out;
}

/* The one record of origin seq, asserted to be exactly one. */
static natsMsg *the_record(Rig *r, guint64 seq, GPtrArray **keep)
{
    *keep = dlq_records(r, seq);
    if ((*keep)->len != 1)
        g_error("origin seq %" G_GUINT64_FORMAT ": %u DLQ records, want exactly 1", seq, (*keep)->len);
    return g_ptr_array_index(*keep, 0);
}

static void assert_header(natsMsg *m, const char *name, const char *want)
{
    const char *v = hget(m, name);
    if (want == NULL) {
        if (v != NULL)
            g_error("%s: '%s', want none", name, v);
        return;
    }
    if (v == NULL)
        g_error("%s: missing, want '%s'", name, want);
    g_assert_cmpstr(v, ==, want);
}

/* The provenance every record of this rig's binding carries. */
static void assert_provenance(natsMsg *m, guint64 seq, const char *cause, guint deliveries, guint failures,
                              guint postpones)
{
    char buf[64];
    /* The id ends with the stream's creation time, as does its own header. */
    const char *created = hget(m, "Jethost-Origin-Stream-Created");
    g_assert_nonnull(created);
    g_autofree char *id = g_strdup_printf("jethost:ORDERS.c:%" G_GUINT64_FORMAT ":", seq);
    const char *got = hget(m, "Nats-Msg-Id");
    g_assert_nonnull(got);
    g_assert_true(g_str_has_prefix(got, id));
    assert_header(m, "Jethost-Origin-Stream", "ORDERS");
    assert_header(m, "Jethost-Origin-Subject", "orders.new");
    snprintf(buf, sizeof buf, "%" G_GUINT64_FORMAT, seq);
    assert_header(m, "Jethost-Origin-Seq", buf);
    assert_header(m, "Jethost-Origin-Consumer", "c");
    assert_header(m, "Jethost-Cause", cause);
    snprintf(buf, sizeof buf, "%u", deliveries);
    assert_header(m, "Jethost-Deliveries", buf);
    snprintf(buf, sizeof buf, "%u", failures);
    assert_header(m, "Jethost-Failures", buf);
    snprintf(buf, sizeof buf, "%u", postpones);
    assert_header(m, "Jethost-Postpones", buf);
    assert_header(m, "Jethost-Plugin", "fx_gate");
    assert_header(m, "Jethost-Plugin-Version", "0.0.1");
    assert_header(m, "Jethost-Host", "rig");
    assert_header(m, "Jethost-Binding", "t");
    g_assert_nonnull(hget(m, "Jethost-Enqueued"));
    g_assert_nonnull(hget(m, "Jethost-Captured"));
    assert_header(m, "Jethost-Origin-Reply", NULL);
    if (failures > 0)
        g_assert_nonnull(hget(m, "Jethost-First-Failure"));
    else
        assert_header(m, "Jethost-First-Failure", NULL);
}

static void assert_consumer_done(Rig *r, guint64 floor)
{
    jsConsumerInfo *ci = jet_test_consumer_info(r->js, "ORDERS", "c");
    g_test_message("consumer: ack floor %" G_GUINT64_FORMAT ", ack pending %" G_GINT64_FORMAT ", pending %"
                   G_GUINT64_FORMAT, ci->AckFloor.Stream, ci->NumAckPending, ci->NumPending);
    g_assert_cmpuint(ci->AckFloor.Stream, ==, floor);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    g_assert_cmpuint(ci->NumPending, ==, 0);
    jsConsumerInfo_Destroy(ci);
}

static void publish(Rig *r, const char *data)
{
    g_assert_cmpint(js_Publish(NULL, r->js, "orders.new", data, (int)strlen(data), NULL, NULL), ==, NATS_OK);
}

/* ===================================================================== */
/* The ladder, postpones, BackOff                                         */
/* ===================================================================== */

/* Rungs 300ms, 600ms, 900ms with max_attempts 6: the gaps between the six
 * deliveries are 300, 600, 900, 900, 900 (the last rung repeats), and the
 * sixth attempt is captured as exhausted, not served a rung. */
static void test_ladder_gaps(void)
{
    Rig r = { 0 };
    rig_server(&r);
    publish(&r, "msg-1");
    rig_engine(&r, "ack_wait = 2s\nrungs = 300ms, 600ms, 900ms\nmax_attempts = 6\noption.verdict = retry\n");
    WAIT_STAT(&r, dead_lettered, 1, 15000);
    rig_stop(&r);

    g_autoptr(GArray) h = handled_lines(&r, 1);
    g_assert_cmpuint(h->len, ==, 6);
    const guint want[] = { 300, 600, 900, 900, 900 };
    assert_gaps(h, want, G_N_ELEMENTS(want));
    /* The ledger counts failures, and the ABI says so. */
    for (guint i = 0; i < h->len; i++)
        g_assert_cmpuint(g_array_index(h, Handled, i).failures, ==, i);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.retried, ==, 5);
    g_autoptr(GPtrArray) keep = NULL;
    natsMsg *rec = the_record(&r, 1, &keep);
    assert_provenance(rec, 1, "exhausted", 6, 6, 0);
    assert_consumer_done(&r, 1);
    rig_free(&r);
}

/* A postpone of 1 s comes back after about 1 s, every time, and is not a
 * failure. */
static void test_postpone_1s(void)
{
    Rig r = { 0 };
    rig_server(&r);
    publish(&r, "msg-1");
    rig_engine(&r, "ack_wait = 2s\nrungs = 5s\noption.script = postpone*2,ack\noption.postpone_delay = 1s\n");
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 10000));
    rig_stop(&r);
    g_autoptr(GArray) h = handled_lines(&r, 1);
    g_assert_cmpuint(h->len, ==, 3);
    const guint want[] = { 1000, 1000 };
    assert_gaps(h, want, G_N_ELEMENTS(want));
    Handled *last = &g_array_index(h, Handled, 2);
    g_assert_cmpuint(last->postpones, ==, 2);
    g_assert_cmpuint(last->failures, ==, 0);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.postponed, ==, 2);
    g_assert_cmpuint(st.retried, ==, 0);
    g_assert_cmpuint(st.acked, ==, 1);
    rig_free(&r);
}

/* Postponed five times, then a RETRY: that is failure number 1 (served rung
 * 1, 400 ms, not the 3 s of rung 2+), so with max_attempts 2 the message is
 * retried, not captured; the next delivery reads failures 1, postpones 5. */
static void test_postpones_spend_no_attempts(void)
{
    Rig r = { 0 };
    rig_server(&r);
    publish(&r, "msg-1");
    rig_engine(&r, "ack_wait = 2s\nrungs = 400ms, 3s\nmax_attempts = 2\n"
                   "option.script = postpone*5,retry,ack\noption.postpone_delay = 200ms\n");
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 15000));
    rig_stop(&r);
    g_autoptr(GArray) h = handled_lines(&r, 1);
    g_assert_cmpuint(h->len, ==, 7);
    for (guint i = 0; i < 6; i++) {
        Handled *d = &g_array_index(h, Handled, i);
        g_assert_cmpuint(d->deliveries, ==, i + 1);
        g_assert_cmpuint(d->postpones, ==, i);   /* msg_postpones() before this delivery */
        g_assert_cmpuint(d->failures, ==, 0);
    }
    Handled *d7 = &g_array_index(h, Handled, 6);
    g_assert_cmpuint(d7->deliveries, ==, 7);
    g_assert_cmpuint(d7->failures, ==, 1);
    g_assert_cmpuint(d7->postpones, ==, 5);
    const guint want[] = { 200, 200, 200, 200, 200, 400 };
    assert_gaps(h, want, G_N_ELEMENTS(want));
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.postponed, ==, 5);
    g_assert_cmpuint(st.retried, ==, 1);
    g_assert_cmpuint(st.dead_lettered, ==, 0);
    g_assert_cmpuint(st.acked, ==, 1);
    rig_free(&r);
}

typedef struct {
    GSubprocess *p;
    const char *errlog;
} HostRun;

static gboolean host_exited_or_running(gpointer data)
{
    HostRun *h = data;
    if (g_subprocess_get_identifier(h->p) == NULL)
        return TRUE;
    g_autofree char *text = NULL;
    return g_file_get_contents(h->errlog, &text, NULL, NULL) && strstr(text, "event=running") != NULL;
}

/* manage = bind on a consumer with a server BackOff: jethost refuses to
 * start, and says which binding and why. */
static void test_bind_backoff_refused(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const int64_t backoff[] = { 1000 * NS_PER_MS, 2000 * NS_PER_MS };
    bound_consumer(&r, 5, backoff, 2);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nname = rig\n\n[binding t]\nplugin = %s\nstream = ORDERS\nconsumer = c\n"
        "manage = bind\noption.dir = %s\n",
        jet_test_server_url(r.srv), plugin, r.dir);
    g_autofree char *conf = jet_test_write_file("backoff.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "backoff.err", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    GSubprocess *p = jet_test_jethost_spawn(errlog, args);
    HostRun hr = { p, errlog };
    g_assert_true(jet_test_wait_until(host_exited_or_running, &hr, 20000));
    g_autofree char *out = NULL;
    g_assert_true(g_file_get_contents(errlog, &out, NULL, NULL));
    if (g_subprocess_get_identifier(p) != NULL) {
        g_subprocess_force_exit(p);
        g_subprocess_wait(p, NULL, NULL);
        g_object_unref(p);
        g_error("jethost started on a consumer with a BackOff:\n%s", out);
    }
    int rc = jet_test_jethost_wait(p, 5000);
    g_object_unref(p);
    g_test_message("jethost exited %d", rc);
    if (rc == 0 || strstr(out, "binding t") == NULL || strstr(out, "BackOff") == NULL)
        g_test_message("its stderr:\n%s", out);
    g_assert_cmpint(rc, !=, 0);
    g_assert_nonnull(strstr(out, "binding t"));
    g_assert_nonnull(strstr(out, "BackOff"));
    g_assert_null(strstr(out, "event=running"));
    /* Nothing was handled. */
    g_autoptr(GArray) h = handled_lines(&r, 0);
    g_assert_cmpuint(h->len, ==, 0);
    rig_free(&r);
}

/* ===================================================================== */
/* Capture-then-ack                                                       */
/* ===================================================================== */

/* rejected, exhausted and budget: one record each with its provenance, each
 * original acked (with confirmation) at the delivery that captured it. */
static void test_triggers(void)
{
    Rig r = { 0 };
    rig_server(&r);
    AckSpy spy;
    ack_spy_start(&r, &spy);
    jet_test_publish_n(r.js, "orders.new", 3);
    /* max_deliver 4, capture_reserve 1: a non-ACK at delivery 3 is captured
     * (budget).  Seq 3 postpones: no failures, but deliveries. */
    rig_engine(&r, "ack_wait = 2s\nmax_deliver = 4\ncapture_reserve = 1\nmax_attempts = 2\nrungs = 200ms\n"
                   "option.seq_verdicts = 1=reject,2=retry,3=postpone\noption.postpone_delay = 200ms\n");
    WAIT_STAT(&r, dead_lettered, 3, 15000);
    FloorWait fw = { &r, 3 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 5000));
    rig_stop(&r);

    g_autoptr(GPtrArray) k1 = NULL, k2 = NULL, k3 = NULL;
    natsMsg *rec = the_record(&r, 1, &k1);
    assert_provenance(rec, 1, "rejected", 1, 0, 0);
    assert_header(rec, "Jethost-Reason", "fx_gate says reject");
    g_assert_cmpmem(natsMsg_GetData(rec), natsMsg_GetDataLength(rec), "msg-1", 5);
    rec = the_record(&r, 2, &k2);
    assert_provenance(rec, 2, "exhausted", 2, 2, 0);
    assert_header(rec, "Jethost-Reason", "fx_gate says retry");
    g_assert_cmpmem(natsMsg_GetData(rec), natsMsg_GetDataLength(rec), "msg-2", 5);
    rec = the_record(&r, 3, &k3);
    assert_provenance(rec, 3, "budget", 3, 0, 2);
    g_assert_cmpmem(natsMsg_GetData(rec), natsMsg_GetDataLength(rec), "msg-3", 5);
    g_autoptr(GPtrArray) all = dlq_records(&r, 0);
    g_assert_cmpuint(all->len, ==, 3);

    /* Acked once each, as a request (the confirmed ack), at the capturing delivery. */
    natsConnection_Flush(r.nc);
    const guint64 at[] = { 0, 1, 2, 3 };
    for (guint64 seq = 1; seq <= 3; seq++) {
        g_assert_cmpuint(ack_spy_count(&spy, seq, 0, "+ACK"), ==, 1);
        g_assert_cmpuint(ack_spy_count(&spy, seq, at[seq], "+ACK"), ==, 1);
    }
    assert_consumer_done(&r, 3);
    rig_wait_dead_lettered(&r, 3);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.dead_lettered, ==, 3);
    g_assert_cmpuint(st.stranded, ==, 0);
    g_assert_cmpuint(st.capture_failed, ==, 0);
    g_assert_cmpuint(st.uncertain, ==, 0);
    g_autoptr(GArray) h = handled_lines(&r, 0);
    g_assert_cmpuint(h->len, ==, 1 + 2 + 3);
    ack_spy_stop(&spy);
    rig_free(&r);
}

/* The pull's reply subject, learnt by a spy on the pull requests. */
typedef struct {
    GMutex lock;
    char *reply;
} PullSpy;

static void on_pull(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    PullSpy *ps = closure;
    (void)nc;
    (void)sub;
    g_mutex_lock(&ps->lock);
    g_free(ps->reply);
    ps->reply = g_strdup(natsMsg_GetReply(m));
    g_mutex_unlock(&ps->lock);
    natsMsg_Destroy(m);
}

static gboolean pull_seen(gpointer data)
{
    PullSpy *ps = data;
    g_mutex_lock(&ps->lock);
    gboolean seen = ps->reply != NULL;
    g_mutex_unlock(&ps->lock);
    return seen;
}

/* A delivery whose $JS.ACK subject does not parse, on the pull's own reply
 * subject: one DLQ record with cause malformed and what could be read; the
 * host keeps running.
 *
 * The reply is "$JS.ACK." exactly: nats-server 2.9.10 drops a client's
 * message whose reply starts with "$JS.ACK." and is longer than that prefix
 * (server/client.go, isReservedReply: nobody may forge JetStream ack
 * subjects), so "$JS.ACK.garbage" never reaches the host; the bare prefix is
 * the one malformed ack subject a test can inject.  Nothing can answer the
 * confirmed ack sent to it (not a valid subscription subject), so the
 * outcome is Uncertain: captured, ack not confirmed. */
static void test_malformed(void)
{
    Rig r = { 0 };
    rig_server(&r);
    PullSpy ps = { 0 };
    g_mutex_init(&ps.lock);
    natsSubscription *pulls = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&pulls, r.nc, "$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", on_pull, &ps), ==,
                    NATS_OK);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    rig_engine(&r, "ack_wait = 2s\n");
    g_assert_true(jet_test_wait_until(pull_seen, &ps, 10000));

    g_mutex_lock(&ps.lock);
    g_autofree char *inbox = g_strdup(ps.reply);
    g_mutex_unlock(&ps.lock);
    g_test_message("the pull replies to %s", inbox);
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, inbox, "$JS.ACK.", "bad-1", 5), ==, NATS_OK);
    g_assert_cmpint(natsMsgHeader_Set(m, "X-Test", "kept"), ==, NATS_OK);
    g_assert_cmpint(natsConnection_PublishMsg(r.nc, m), ==, NATS_OK);
    natsMsg_Destroy(m);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    /* Nothing can confirm an ack to a reply that does not parse: Stranded. */
    WAIT_STAT(&r, stranded, 1, 10000);

    /* Still running: a real message is handled and acked. */
    publish(&r, "msg-1");
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 10000));
    rig_stop(&r);

    g_autoptr(GPtrArray) all = dlq_records(&r, 0);
    g_assert_cmpuint(all->len, ==, 1);
    natsMsg *rec = g_ptr_array_index(all, 0);
    assert_header(rec, "Jethost-Cause", "malformed");
    assert_header(rec, "Jethost-Origin-Reply", "$JS.ACK.");
    assert_header(rec, "Jethost-Origin-Subject", inbox);
    assert_header(rec, "Jethost-Origin-Stream", "ORDERS");
    assert_header(rec, "Jethost-Origin-Consumer", "c");
    assert_header(rec, "Jethost-Binding", "t");
    assert_header(rec, "X-Test", "kept");
    /* Unknown is left out, never written as zero. */
    assert_header(rec, "Jethost-Origin-Seq", NULL);
    assert_header(rec, "Nats-Msg-Id", NULL);
    assert_header(rec, "Jethost-Enqueued", NULL);
    g_assert_cmpmem(natsMsg_GetData(rec), natsMsg_GetDataLength(rec), "bad-1", 5);

    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.uncertain, ==, 0);
    g_assert_cmpuint(st.dead_lettered, ==, 0);
    g_assert_cmpuint(st.acked, ==, 1);
    g_assert_cmpuint(st.stranded, ==, 1);
    g_autoptr(GArray) h = handled_lines(&r, 0);
    g_assert_cmpuint(h->len, ==, 1);   /* the plugin never saw the malformed one */
    natsSubscription_Destroy(pulls);
    g_free(ps.reply);
    g_mutex_clear(&ps.lock);
    rig_free(&r);
}

/* manage = bind, MaxDeliver 4, no DLQ stream: each capture fails, the
 * message is kept with a delayed NAK while deliveries remain, and at the
 * fourth (last) delivery it is reported Stranded, with what to do; it is
 * never acked, and the server then gives up on it (MAX_DELIVERIES). */
static void test_bind_dlq_missing_stranded(void)
{
    Rig r = { 0 };
    rig_server(&r);
    bound_consumer(&r, 4, NULL, 0);
    AckSpy spy;
    ack_spy_start(&r, &spy);
    MaxDeliveries md = { 0 };
    g_assert_cmpint(natsConnection_Subscribe(&md.sub, r.nc, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.c",
                                             on_max_deliveries, &md), ==, NATS_OK);
    natsConnection_Flush(r.nc);
    publish(&r, "msg-1");
    LogTap tap;
    log_tap_start(&tap);
    rig_engine(&r, "manage = bind\nrungs = 200ms\noption.verdict = reject\n");
    WAIT_STAT(&r, stranded, 1, 15000);
    /* At this instant it was not acked: still pending an ack. */
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumAckPending, ==, 1);
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 0);
    jsConsumerInfo_Destroy(ci);
    /* The server gives up after AckWait (2 s): the host spent every delivery. */
    g_assert_true(jet_test_wait_until(max_deliveries_seen, &md, 10000));
    g_assert_cmpint(md.last_seq, ==, 1);
    g_assert_cmpint(md.last_deliveries, ==, 4);
    rig_stop(&r);
    natsConnection_Flush(r.nc);

    g_autoptr(GArray) h = handled_lines(&r, 1);
    g_assert_cmpuint(h->len, ==, 4);
    for (guint i = 0; i < 4; i++)
        g_assert_cmpuint(g_array_index(h, Handled, i).deliveries, ==, i + 1);
    /* Kept (a delayed NAK) at deliveries 1..3; nothing at all sent at 4. */
    for (guint d = 1; d <= 3; d++)
        g_assert_cmpuint(ack_spy_count(&spy, 1, d, "-NAK {\"delay\""), ==, 1);
    g_assert_cmpuint(ack_spy_count(&spy, 1, 4, ""), ==, 0);
    g_assert_cmpuint(ack_spy_count(&spy, 1, 0, "+ACK"), ==, 0);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.capture_failed, ==, 3);
    g_assert_cmpuint(st.stranded, ==, 1);
    g_assert_cmpuint(st.dead_lettered, ==, 0);
    /* A delivery the host gave back after a failed capture is explained:
     * not taken for a crash (no suspect, not handled alone). */
    g_assert_cmpuint(st.suspects, ==, 0);
    g_assert_true(log_tap_has(&tap, "event=capture-failed"));
    g_assert_true(log_tap_has(&tap, "event=stranded"));
    g_assert_true(log_tap_has(&tap, "delivery 4"));
    g_assert_true(log_tap_has(&tap, "STRANDED"));
    /* What to do: fix the DLQ stream, then read the message by its seq. */
    g_assert_true(log_tap_has(&tap, "fix the dead-letter stream JETHOST_DLQ (subject jethost.dlq.t)"));
    g_assert_true(log_tap_has(&tap, "read it from stream ORDERS at seq 1"));
    log_tap_stop(&tap);
    natsSubscription_Destroy(md.sub);
    ack_spy_stop(&spy);
    rig_free(&r);
}

/* A capture that fails keeps the message's attempt history: an exhausted
 * message whose capture fails (bind, no DLQ stream yet) is captured again
 * at each later delivery, never walked down the ladder again, and its
 * redeliveries are not taken for crashes.  Once the operator creates the
 * DLQ stream the capture succeeds, with the failures counted. */
static void test_capture_retry_keeps_history(void)
{
    Rig r = { 0 };
    rig_server(&r);
    bound_consumer(&r, -1, NULL, 0);
    publish(&r, "msg-1");
    rig_engine(&r, "manage = bind\nrungs = 200ms\nmax_attempts = 2\noption.verdict = retry\n");
    WAIT_STAT(&r, capture_failed, 3, 10000);
    operator_dlq(&r, FALSE);
    WAIT_STAT(&r, dead_lettered, 1, 10000);
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 5000));
    rig_stop(&r);

    g_autoptr(GArray) h = handled_lines(&r, 1);
    g_assert_cmpuint(h->len, >=, 5);
    /* From delivery 2 on the ABI reads the one recorded failure. */
    for (guint i = 1; i < h->len; i++)
        g_assert_cmpuint(g_array_index(h, Handled, i).failures, ==, 1);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.retried, ==, 1);   /* delivery 1 only */
    g_assert_cmpuint(st.suspects, ==, 0);
    g_assert_cmpuint(st.capture_failed, ==, h->len - 2);
    g_autoptr(GPtrArray) keep = NULL;
    natsMsg *rec = the_record(&r, 1, &keep);
    assert_provenance(rec, 1, "exhausted", h->len, 2, 0);
    assert_consumer_done(&r, 1);
    rig_free(&r);
}

/* Managed: the DLQ stream deleted while the host runs is re-created at the
 * next capture, which succeeds on that same delivery. */
static void test_managed_dlq_recreated(void)
{
    Rig r = { 0 };
    rig_server(&r);
    rig_engine(&r, "ack_wait = 2s\nrungs = 200ms\noption.verdict = reject\n");
    publish(&r, "msg-1");
    WAIT_STAT(&r, dead_lettered, 1, 10000);
    g_assert_cmpint(js_DeleteStream(r.js, DLQ, NULL, NULL), ==, NATS_OK);
    publish(&r, "msg-2");
    WAIT_STAT(&r, dead_lettered, 2, 10000);
    FloorWait fw = { &r, 2 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 5000));
    rig_stop(&r);

    guint64 msgs = 0;
    stream_last_seq(&r, DLQ, &msgs);
    g_assert_cmpuint(msgs, ==, 1);
    g_autoptr(GPtrArray) keep = NULL;
    natsMsg *rec = the_record(&r, 2, &keep);
    assert_provenance(rec, 2, "rejected", 1, 0, 0);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.capture_failed, ==, 0);
    g_assert_cmpuint(st.stranded, ==, 0);
    g_autoptr(GArray) h = handled_lines(&r, 2);
    g_assert_cmpuint(h->len, ==, 1);   /* captured at its first delivery */
    rig_free(&r);
}

/* manage = bind, MaxDeliver 4, capture_reserve 1, a plugin that always
 * RETRYs (attempts unlimited): captured with cause budget at delivery 3,
 * leaving the fourth for a failed capture; acked, never delivered again. */
static void test_budget_bound(void)
{
    Rig r = { 0 };
    rig_server(&r);
    bound_consumer(&r, 4, NULL, 0);
    operator_dlq(&r, FALSE);
    AckSpy spy;
    ack_spy_start(&r, &spy);
    publish(&r, "msg-1");
    rig_engine(&r, "manage = bind\nrungs = 200ms\nmax_attempts = 0\ncapture_reserve = 1\noption.verdict = retry\n");
    WAIT_STAT(&r, dead_lettered, 1, 10000);
    FloorWait fw = { &r, 1 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 5000));
    g_usleep(500 * 1000);   /* room for a fourth delivery, were there one */
    rig_stop(&r);
    natsConnection_Flush(r.nc);

    g_autoptr(GArray) h = handled_lines(&r, 1);
    g_assert_cmpuint(h->len, ==, 3);
    g_autoptr(GPtrArray) keep = NULL;
    natsMsg *rec = the_record(&r, 1, &keep);
    assert_provenance(rec, 1, "budget", 3, 3, 0);
    g_assert_cmpuint(ack_spy_count(&spy, 1, 3, "+ACK"), ==, 1);
    g_assert_cmpuint(ack_spy_count(&spy, 1, 1, "-NAK"), ==, 1);
    g_assert_cmpuint(ack_spy_count(&spy, 1, 2, "-NAK"), ==, 1);
    assert_consumer_done(&r, 1);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.retried, ==, 2);
    g_assert_cmpuint(st.dead_lettered, ==, 1);
    ack_spy_stop(&spy);
    rig_free(&r);
}

/* A message carrying Nats-Rollup: all and Nats-Expected-Last-Sequence: 1.
 * For the origin publish to store them, ORDERS allows rollups (the rollup
 * purges nothing that matters: seq 1 was handled first) and its last seq is
 * 1.  The DLQ allows rollups and already holds two records, so were the
 * headers carried as they are, the capture would be refused (DLQ last seq
 * 2, not 1) or, were only the rollup carried, purge the DLQ. */
static void test_rollup_expected(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    jsStreamConfig sc = *si->Config;
    sc.AllowRollup = true;
    jsStreamInfo *si2 = NULL;
    g_assert_cmpint(js_UpdateStream(&si2, r.js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si2);
    jsStreamInfo_Destroy(si);
    operator_dlq(&r, TRUE);
    g_assert_cmpint(js_Publish(NULL, r.js, "jethost.dlq.other", "earlier", 7, NULL, NULL), ==, NATS_OK);

    rig_engine(&r, "ack_wait = 2s\nrungs = 200ms\noption.verdict = reject\n");
    publish(&r, "msg-1");
    WAIT_STAT(&r, dead_lettered, 1, 10000);
    g_assert_cmpuint(stream_last_seq(&r, DLQ, NULL), ==, 2);

    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, "orders.new", NULL, "msg-2", 5), ==, NATS_OK);
    natsMsgHeader_Set(m, "Nats-Rollup", "all");
    natsMsgHeader_Set(m, "Nats-Expected-Last-Sequence", "1");
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, r.js, m, NULL, &jerr);
    natsMsg_Destroy(m);
    if (s != NATS_OK)
        g_error("origin publish with rollup: %s (err %d)", natsStatus_GetText(s), (int)jerr);
    g_assert_cmpuint(pa->Sequence, ==, 2);
    jsPubAck_Destroy(pa);

    WAIT_STAT(&r, dead_lettered, 2, 10000);
    FloorWait fw = { &r, 2 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 5000));
    rig_stop(&r);

    guint64 msgs = 0;
    g_assert_cmpuint(stream_last_seq(&r, DLQ, &msgs), ==, 3);
    g_assert_cmpuint(msgs, ==, 3);   /* nothing purged */
    g_autoptr(GPtrArray) k1 = NULL, k2 = NULL;
    the_record(&r, 1, &k1);
    natsMsg *rec = the_record(&r, 2, &k2);
    assert_provenance(rec, 2, "rejected", 1, 0, 0);
    assert_header(rec, "Nats-Rollup", NULL);
    assert_header(rec, "Nats-Expected-Last-Sequence", NULL);
    assert_header(rec, "Jethost-Orig-Nats_Rollup", "all");
    assert_header(rec, "Jethost-Orig-Nats_Expected-Last-Sequence", "1");
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.capture_failed, ==, 0);
    g_assert_cmpuint(st.stranded, ==, 0);
    g_autoptr(GArray) h = handled_lines(&r, 2);
    g_assert_cmpuint(h->len, ==, 1);   /* captured at its first delivery: not refused */
    rig_free(&r);
}

#define MAX_PAYLOAD 8192
#define N_HEADERS 40

static gboolean spy_ack_seen(gpointer data)
{
    return ack_spy_count(data, 1, 0, "+ACK") > 0;
}

/* max_payload 8 KiB.  Seq 1: 6,000 payload bytes and 41 headers fit the
 * origin stream, not the record with its provenance: captured without the
 * headers, their names listed.  Seq 2: 8,000 payload bytes do not fit with
 * the provenance at all: Stranded too-large, never truncated, never acked. */
static void test_too_large(void)
{
    Rig r = { 0 };
    g_autofree char *conf = jet_test_write_file("small.conf", "max_payload: 8192\n");
    const char *const args[] = { "-c", conf, NULL };
    r.server_args = args;
    rig_server(&r);
    g_assert_cmpint(natsConnection_GetMaxPayload(r.nc), ==, MAX_PAYLOAD);
    AckSpy spy;
    ack_spy_start(&r, &spy);

    char *big = g_malloc(8000);
    memset(big, 'p', 8000);
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, "orders.new", NULL, big, 6000), ==, NATS_OK);
    for (int i = 1; i <= N_HEADERS; i++) {
        char name[32], value[64];
        snprintf(name, sizeof name, "X-Hdr-%02d", i);
        snprintf(value, sizeof value, "value-%02d-of-a-header-that-takes-some-room", i);
        natsMsgHeader_Set(m, name, value);
    }
    natsMsgHeader_Set(m, "Nats-Msg-Id", "orig-1");
    g_assert_cmpint(js_PublishMsg(NULL, r.js, m, NULL, NULL), ==, NATS_OK);
    natsMsg_Destroy(m);
    g_assert_cmpint(js_Publish(NULL, r.js, "orders.new", big, 8000, NULL, NULL), ==, NATS_OK);

    LogTap tap;
    log_tap_start(&tap);
    rig_engine(&r, "ack_wait = 2s\nrungs = 1s\noption.verdict = reject\n");
    WAIT_STAT(&r, dead_lettered, 1, 10000);
    WAIT_STAT(&r, stranded, 1, 10000);
    g_assert_true(jet_test_wait_until(spy_ack_seen, &spy, 5000));
    rig_stop(&r);
    natsConnection_Flush(r.nc);

    g_autoptr(GPtrArray) keep = NULL;
    natsMsg *rec = the_record(&r, 1, &keep);
    assert_provenance(rec, 1, "rejected", 1, 0, 0);
    g_assert_cmpint(natsMsg_GetDataLength(rec), ==, 6000);
    g_assert_cmpmem(natsMsg_GetData(rec), 6000, big, 6000);
    const char *dropped = hget(rec, "Jethost-Dropped-Headers");
    g_assert_nonnull(dropped);
    g_auto(GStrv) names = g_strsplit(dropped, ",", -1);
    g_assert_cmpuint(g_strv_length(names), ==, N_HEADERS + 1);
    g_assert_true(g_strv_contains((const char *const *)names, "Jethost-Orig-Nats_Msg-Id"));
    for (int i = 1; i <= N_HEADERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "X-Hdr-%02d", i);
        g_assert_true(g_strv_contains((const char *const *)names, name));
        assert_header(rec, name, NULL);
    }
    assert_header(rec, "Jethost-Orig-Nats_Msg-Id", NULL);
    g_assert_cmpuint(ack_spy_count(&spy, 1, 0, "+ACK"), ==, 1);

    /* Seq 2: no record, never acked, still pending. */
    g_autoptr(GPtrArray) none = dlq_records(&r, 2);
    g_assert_cmpuint(none->len, ==, 0);
    g_assert_cmpuint(ack_spy_count(&spy, 2, 0, "+ACK"), ==, 0);
    g_assert_cmpuint(ack_spy_count(&spy, 2, 0, "-NAK"), >=, 1);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpint(ci->NumAckPending, ==, 1);
    g_assert_cmpuint(ci->AckFloor.Stream, ==, 1);
    jsConsumerInfo_Destroy(ci);
    rig_wait_dead_lettered(&r, 1);
    JetEngineStats st = stats(&r);
    g_assert_cmpuint(st.dead_lettered, ==, 1);
    g_assert_cmpuint(st.stranded, >=, 1);
    g_assert_true(log_tap_has(&tap, "event=stranded"));
    g_assert_true(log_tap_has(&tap, "too-large"));
    g_assert_true(log_tap_has(&tap, "event=capture-headers-dropped"));
    log_tap_stop(&tap);
    g_free(big);
    ack_spy_stop(&spy);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/settlement/ladder-gaps", test_ladder_gaps);
    g_test_add_func("/settlement/postpone-1s", test_postpone_1s);
    g_test_add_func("/settlement/postpones-spend-no-attempts", test_postpones_spend_no_attempts);
    g_test_add_func("/settlement/bind-backoff-refused", test_bind_backoff_refused);
    g_test_add_func("/settlement/triggers", test_triggers);
    g_test_add_func("/settlement/malformed", test_malformed);
    g_test_add_func("/settlement/bind-dlq-missing-stranded", test_bind_dlq_missing_stranded);
    g_test_add_func("/settlement/capture-retry-keeps-history", test_capture_retry_keeps_history);
    g_test_add_func("/settlement/managed-dlq-recreated", test_managed_dlq_recreated);
    g_test_add_func("/settlement/budget-bound", test_budget_bound);
    g_test_add_func("/settlement/rollup-expected", test_rollup_expected);
    g_test_add_func("/settlement/too-large", test_too_large);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
