/* The MAX_DELIVERIES safety net: advisory.h has the why, docs/dead-letters.md
 * the operator's view. */
#include "advisory.h"
#include "msg_payload.h"

#include "capture.h"
#include "errors.h"
#include "hdr_block.h"
#include "js_api.h"
#include "log.h"
#include "stream_msg.h"
#include "stream_info.h"
#include "stream_names.h"
#include "sub_end.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define ERR_CONSUMER_NOT_FOUND 10014
#define ERR_STREAM_NOT_FOUND 10059
#define ERR_STREAM_NAME_IN_USE 10058

#define REQUEST_MS 5000
/* A waiting fetch; stop() wakes it, so this only paces idle pulls. */
#define FETCH_MS 5000
#define BATCH 8
/* nats.c before 3.9.0 writes past its own array in a fetch that finds 5 or
 * more of a batch of 8 already waiting (its second loop counts to the
 * batch it asked the server for, not to the whole): one at a time there
 * (docs/architecture.md, "nats.c versions"). */
#define FETCH_FIXED_VERSION 0x030900
/* Idle fetches between checks that the watch still stands (the consumer was
 * not deleted; a live watch looks for a stream that now keeps advisories). */
#define CHECK_EVERY 6
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* A durable name longer than this becomes a hash (names are file names). */
#define MAX_DURABLE 200

struct JetAdvisory {
    JetConn *conn;
    const JetBindingConfig *b;
    char *host_name, *plugin_name, *plugin_version;
    JetLedger *ledger;
    char *subject;             /* the binding's advisory subject */
    char *durable;             /* its advisory consumer */
    guint64 retry_ms;          /* a failed capture is tried again after this (the last rung) */

    GMutex lock;               /* everything below */
    GCond cond;
    gboolean stopping;
    natsSubscription *sub;     /* the thread's; stop() only unsubscribes it, to wake the thread */
    JetAdvisoryMode mode;
    char *stream;              /* KEPT: the stream that keeps them */
    char *last_problem;        /* the last setup problem logged, so a repeat is not */
    gboolean live_noted;
    JetAdvisoryStats stats;
    GThread *thread;
};

#define STAT_ADD(a, field)             \
    do {                               \
        g_mutex_lock(&(a)->lock);      \
        (a)->stats.field++;            \
        g_mutex_unlock(&(a)->lock);    \
    } while (0)

/* --- names and parsing ---------------------------------------------------- */

char *jet_advisory_subject(const char *stream, const char *consumer)
{
    return g_strconcat(JET_ADVISORY_SUBJECT_PREFIX, stream, ".", consumer, NULL);
}

char *jet_advisory_consumer_name(const char *stream, const char *consumer)
{
    char *name = g_strdup_printf("jethost_adv_%s_%s", stream, consumer);
    if (strlen(name) <= MAX_DURABLE)
        return name;
    g_free(name);
    g_autofree char *key = g_strconcat(stream, ".", consumer, NULL);
    g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
    return g_strdup_printf("jethost_adv_%.32s", sum);
}

void jet_advisory_msg_clear(JetAdvisoryMsg *m)
{
    if (m == NULL)
        return;
    g_free(m->stream);
    g_free(m->consumer);
    memset(m, 0, sizeof *m);
}

static const char *string_member(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(n);
}

static guint64 uint_member(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
        return 0;
    gint64 v = json_node_get_int(n);
    return v > 0 ? (guint64)v : 0;
}

gboolean jet_advisory_parse(const char *data, gsize len, JetAdvisoryMsg *out, GError **error)
{
    g_return_val_if_fail(out != NULL, FALSE);
    memset(out, 0, sizeof *out);
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) local = NULL;
    if (data == NULL || len == 0 || !json_parser_load_from_data(p, data, (gssize)len, &local)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "not JSON: %s", local != NULL ? local->message : "empty");
        return FALSE;
    }
    JsonNode *root = json_parser_get_root(p);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "not a JSON object");
        return FALSE;
    }
    JsonObject *o = json_node_get_object(root);
    const char *stream = string_member(o, "stream"), *consumer = string_member(o, "consumer");
    guint64 seq = uint_member(o, "stream_seq");
    if (stream == NULL || *stream == '\0' || consumer == NULL || *consumer == '\0' || seq == 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "no stream, consumer or stream_seq");
        return FALSE;
    }
    out->stream = g_strdup(stream);
    out->consumer = g_strdup(consumer);
    out->stream_seq = seq;
    out->deliveries = uint_member(o, "deliveries");
    out->time_ns = jet_js_api_time_ns(string_member(o, "timestamp"));
    return TRUE;
}

/* --- setting up the watch ------------------------------------------------- */

static gboolean stopping(JetAdvisory *a)
{
    g_mutex_lock(&a->lock);
    gboolean s = a->stopping;
    g_mutex_unlock(&a->lock);
    return s;
}

/* A setup problem, logged once until it changes: the thread tries again
 * every few seconds and must not fill the log. */
static void problem(JetAdvisory *a, const char *text)
{
    g_mutex_lock(&a->lock);
    gboolean repeat = g_strcmp0(a->last_problem, text) == 0;
    if (!repeat) {
        g_free(a->last_problem);
        a->last_problem = g_strdup(text);
    }
    g_mutex_unlock(&a->lock);
    if (!repeat)
        jet_log(JET_LOG_WARNING, a->b->name, "advisory-watch-problem", "%s", text);
}

/* The stream that captures the binding's advisory subject: an operator's
 * stream of any name is found as well as jethost's own.  NULL with *error
 * unset: none does. */
static char *find_stream(JetAdvisory *a, GError **error)
{
    return jet_stream_capturing(a->conn, a->subject, REQUEST_MS, error);
}

/* No stream captures the subject: create JETHOST_ADVISORIES (managed), or say
 * why the watch is live.  Returns the stream's name, or NULL with *why_live. */
static char *own_stream(JetAdvisory *a, char **why_live)
{
    jsCtx *js = jet_conn_js(a->conn);
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, js, JET_ADVISORY_STREAM, NULL, &jerr);
    if (s == NATS_OK) {
        /* Ours by name, but not capturing this subject: the operator's now. */
        g_autoptr(GString) list = g_string_new(NULL);
        for (int i = 0; i < si->Config->SubjectsLen; i++)
            g_string_append_printf(list, "%s%s", i ? ", " : "", si->Config->Subjects[i]);
        jsStreamInfo_Destroy(si);
        *why_live = g_strdup_printf("stream %s exists but does not capture %s (its subjects: %s); an existing "
                                    "stream is never reshaped: add %s to it",
                                    JET_ADVISORY_STREAM, a->subject, list->len ? list->str : "none",
                                    JET_ADVISORY_STREAM_SUBJECT);
        return NULL;
    }
    if (jerr != ERR_STREAM_NOT_FOUND && s != NATS_NOT_FOUND) {
        g_autofree char *why = jet_nats_error(s);
        *why_live = g_strdup_printf("stream %s info: %s", JET_ADVISORY_STREAM, why);
        return NULL;
    }
    if (a->b->manage == JET_MANAGE_BIND) {
        *why_live = g_strdup_printf("no stream captures %s, and manage = bind never creates one", a->subject);
        return NULL;
    }
    const char *subjects[] = { JET_ADVISORY_STREAM_SUBJECT };
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = JET_ADVISORY_STREAM;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Retention = js_LimitsPolicy;
    sc.Discard = js_DiscardOld;
    sc.MaxAge = (int64_t)JET_ADVISORY_MAX_AGE_MS * 1000000;
    sc.MaxBytes = JET_ADVISORY_MAX_BYTES;
    sc.Replicas = a->b->replicas > 0 ? (int64_t)a->b->replicas : 1;
    jerr = 0;
    s = js_AddStream(&si, js, &sc, NULL, &jerr);
    if (s == NATS_OK) {
        jsStreamInfo_Destroy(si);
        jet_log(JET_LOG_INFO, a->b->name, "advisory-stream-created",
                "created stream %s on %s (file storage, %d replica%s, max_age 7d, max_bytes 64 MiB): "
                "MAX_DELIVERIES advisories are kept while no host runs", JET_ADVISORY_STREAM,
                JET_ADVISORY_STREAM_SUBJECT, (int)sc.Replicas, sc.Replicas == 1 ? "" : "s");
        return g_strdup(JET_ADVISORY_STREAM);
    }
    if (jerr == ERR_STREAM_NAME_IN_USE) {
        /* Another host created it first. */
        g_autoptr(GError) err = NULL;
        char *found = find_stream(a, &err);
        if (found != NULL)
            return found;
    }
    g_autofree char *why = jet_nats_error(s);
    *why_live = g_strdup_printf("creating stream %s on %s: %s [err %d]", JET_ADVISORY_STREAM,
                                JET_ADVISORY_STREAM_SUBJECT, why, (int)jerr);
    return NULL;
}

/* The binding's durable advisory consumer on stream exists and fits (it is
 * created when missing, never reshaped).  FALSE with *why_live. */
static gboolean ensure_consumer(JetAdvisory *a, const char *stream, guint64 *pending, char **why_live)
{
    jsCtx *js = jet_conn_js(a->conn);
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetConsumerInfo(&ci, js, stream, a->durable, NULL, &jerr);
    if (s != NATS_OK && jerr != ERR_CONSUMER_NOT_FOUND && s != NATS_NOT_FOUND) {
        g_autofree char *why = jet_nats_error(s);
        *why_live = g_strdup_printf("advisory consumer %s/%s info: %s", stream, a->durable, why);
        return FALSE;
    }
    if (s != NATS_OK) {
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = a->durable;
        cc.FilterSubject = a->subject;
        cc.AckPolicy = js_AckExplicit;
        cc.DeliverPolicy = js_DeliverAll;
        cc.AckWait = (int64_t)JET_ADVISORY_ACK_WAIT_MS * 1000000;
        cc.MaxDeliver = -1;
        cc.MaxAckPending = 64;
        jerr = 0;
        s = js_AddConsumer(&ci, js, stream, &cc, NULL, &jerr);
        if (s != NATS_OK) {
            g_autofree char *why = jet_nats_error(s);
            *why_live = g_strdup_printf("creating advisory consumer %s/%s: %s [err %d]", stream, a->durable, why,
                                        (int)jerr);
            return FALSE;
        }
        jet_log(JET_LOG_INFO, a->b->name, "advisory-consumer-created",
                "created durable pull consumer %s/%s on %s", stream, a->durable, a->subject);
    }
    const jsConsumerConfig *cc = ci->Config;
    gboolean fits = (cc->DeliverSubject == NULL || *cc->DeliverSubject == '\0') && cc->AckPolicy == js_AckExplicit &&
                    g_strcmp0(cc->FilterSubject, a->subject) == 0;
    if (!fits)
        *why_live = g_strdup_printf("advisory consumer %s/%s exists but is not an explicit-ack pull consumer "
                                    "filtered on %s (filter: %s); never reshaped",
                                    stream, a->durable, a->subject,
                                    cc->FilterSubject != NULL ? cc->FilterSubject : "none");
    *pending = ci->NumPending + (guint64)MAX(ci->NumAckPending, 0);
    jsConsumerInfo_Destroy(ci);
    return fits;
}

/* Swaps in a new subscription (the old one, if any, goes). */
static void install(JetAdvisory *a, natsSubscription *sub, JetAdvisoryMode mode, const char *stream)
{
    g_mutex_lock(&a->lock);
    natsSubscription *old = a->sub;
    a->sub = sub;
    a->mode = mode;
    g_free(a->stream);
    a->stream = g_strdup(stream);
    g_mutex_unlock(&a->lock);
    jet_sub_end_destroy(jet_conn_nats(a->conn), old);
}

/* The watch works: a later problem is news again. */
static void healthy(JetAdvisory *a, guint64 *backoff)
{
    *backoff = BACKOFF_MIN_MS;
    g_mutex_lock(&a->lock);
    g_clear_pointer(&a->last_problem, g_free);
    g_mutex_unlock(&a->lock);
}

/* The kept watch: a stream, the consumer, the pull subscription.  FALSE
 * with *why_live when it cannot be had. */
static gboolean setup_kept(JetAdvisory *a, char **why_live)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *stream = find_stream(a, &err);
    if (err != NULL) {
        *why_live = g_strdup(err->message);
        return FALSE;
    }
    if (stream != NULL && strcmp(stream, JET_ADVISORY_STREAM) == 0) {
        /* The host's own by name, found: an operator may have re-made it. */
        jsStreamInfo *si = NULL;
        if (js_GetStreamInfo(&si, jet_conn_js(a->conn), stream, NULL, NULL) == NATS_OK)
            jet_stream_replicas_note(a->b->name, "advisory stream", si, a->b->replicas);
        jsStreamInfo_Destroy(si);
    }
    if (stream == NULL && (stream = own_stream(a, why_live)) == NULL)
        return FALSE;
    guint64 pending = 0;
    if (!ensure_consumer(a, stream, &pending, why_live))
        return FALSE;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = a->durable;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PullSubscribe(&sub, jet_conn_js(a->conn), a->subject, a->durable, NULL, &so, &jerr);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        *why_live = g_strdup_printf("pull subscription on %s/%s: %s [err %d]", stream, a->durable, why, (int)jerr);
        return FALSE;
    }
    install(a, sub, JET_ADVISORY_KEPT, stream);
    jet_log(JET_LOG_INFO, a->b->name, "advisory-watch",
            "dead-lettering messages the server gives up on: MAX_DELIVERIES advisories on %s, kept by stream %s, "
            "read through consumer %s (%" G_GUINT64_FORMAT " waiting)", a->subject, stream, a->durable, pending);
    return TRUE;
}

/* The live watch.  Said once, with why; a later fall back to it is a
 * setup problem like any other. */
static gboolean setup_live(JetAdvisory *a, const char *why_live)
{
    natsSubscription *sub = NULL;
    natsStatus s = natsConnection_SubscribeSync(&sub, jet_conn_nats(a->conn), a->subject);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_autofree char *text = g_strdup_printf("subscribing to %s: %s; retrying", a->subject, why);
        problem(a, text);
        return FALSE;
    }
    natsSubscription_SetPendingLimits(sub, -1, -1);
    install(a, sub, JET_ADVISORY_LIVE, NULL);
    g_mutex_lock(&a->lock);
    gboolean noted = a->live_noted;
    a->live_noted = TRUE;
    g_mutex_unlock(&a->lock);
    if (noted) {
        g_autofree char *text = g_strdup_printf("advisories of %s are not kept: %s", a->subject, why_live);
        problem(a, text);
    } else {
        jet_log(JET_LOG_WARNING, a->b->name, "advisories-not-kept",
                "dead-lettering messages the server gives up on from MAX_DELIVERIES advisories on %s while the host "
                "runs; advisories raised while no host runs are NOT kept: %s. To keep them, create a stream "
                "capturing %s (file storage; e.g. %s)", a->subject, why_live, JET_ADVISORY_STREAM_SUBJECT,
                JET_ADVISORY_STREAM);
    }
    return TRUE;
}

/* Kept when it can be, else live.  FALSE: neither (tried again later). */
static gboolean setup(JetAdvisory *a)
{
    g_autofree char *why_live = NULL;
    if (setup_kept(a, &why_live))
        return TRUE;
    return setup_live(a, why_live);
}

/* --- one advisory ---------------------------------------------------------- */

static gboolean republish_after_ensure(gpointer data, const GError *error)
{
    JetAdvisory *a = data;
    (void)error;
    /* A deleted dead-letter stream is re-created (managed), then tried once more. */
    g_autoptr(GError) err = NULL;
    return a->b->manage == JET_MANAGE_CREATE && jet_dlq_stream_ensure(jet_conn_nats(a->conn), jet_conn_js(a->conn), a->b, &err);
}

typedef struct {
    JetAdvisory *a;
    guint64 seq;
} HookData;

static void on_collision(gpointer data, const char *msg_id, guint64 other_seq, const char *why)
{
    HookData *h = data;
    jet_log(JET_LOG_ERROR, h->a->b->name, "capture-collision",
            "stream seq %" G_GUINT64_FORMAT ": the dead-letter stream answered \"duplicate\" for Nats-Msg-Id %s (its "
            "seq %" G_GUINT64_FORMAT "), but %s; capturing it again under a distinct id", h->seq, msg_id, other_seq,
            why);
}

static void on_headers_dropped(gpointer data)
{
    HookData *h = data;
    jet_log(JET_LOG_WARNING, h->a->b->name, "capture-headers-dropped",
            "stream seq %" G_GUINT64_FORMAT ": the original headers did not fit and were left out of the "
            "dead-letter record (their names are in Jethost-Dropped-Headers)", h->seq);
}

static gboolean publish_failed(gpointer data, const GError *error)
{
    HookData *h = data;
    return republish_after_ensure(h->a, error);
}

static void lost(JetAdvisory *a, guint64 seq, guint64 deliveries, const char *why)
{
    STAT_ADD(a, lost);
    jet_log(JET_LOG_ERROR, a->b->name, "max-deliveries-lost",
            "stream seq %" G_GUINT64_FORMAT ": the server gave up on it after %" G_GUINT64_FORMAT " deliveries, and "
            "%s: LOST, nothing to dead-letter", seq, deliveries, why);
}

/* TRUE: done with this advisory (ack it); FALSE: try it again later.
 * can_retry: it will come again if kept (a live one will not). */
static gboolean handle(JetAdvisory *a, const char *data, gsize len, gboolean can_retry)
{
    const JetBindingConfig *b = a->b;
    natsConnection *nc = jet_conn_nats(a->conn);
    jsCtx *js = jet_conn_js(a->conn);
    STAT_ADD(a, advisories);

    g_autoptr(GError) err = NULL;
    g_auto(JetAdvisoryMsg) adv = { 0 };
    if (!jet_advisory_parse(data, len, &adv, &err) || strcmp(adv.stream, b->stream) != 0 ||
        strcmp(adv.consumer, b->consumer) != 0) {
        STAT_ADD(a, invalid);
        g_autofree char *text = jet_hdr_escape(data, len, 200);
        jet_log(JET_LOG_WARNING, b->name, "advisory-invalid",
                "not a MAX_DELIVERIES advisory for this binding on %s (%s): \"%s\"; ignored", a->subject,
                err != NULL ? err->message : "it names another consumer", text);
        return TRUE;
    }

    /* The stream's life: the sequence names this message only in the life
     * the advisory was raised in; a leader's answer, never a member's own
     * during an election (stream_info.h). */
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = jet_stream_info_led(&si, js, b->stream, 2000, NULL, &jerr);
    if (s != NATS_OK && (jerr == ERR_STREAM_NOT_FOUND || s == NATS_NOT_FOUND)) {
        g_autofree char *why = g_strdup_printf("stream %s no longer exists", b->stream);
        lost(a, adv.stream_seq, adv.deliveries, why);
        return TRUE;
    }
    gint64 created = 0;
    if (s == NATS_OK) {
        created = si->Created;
        jsStreamInfo_Destroy(si);
    }
    g_autoptr(JetStoredMsg) stored = NULL;
    JetStoredStatus st = JET_STORED_ERROR;
    if (created <= 0) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(&err, JET_ERROR, JET_ERROR_SERVER, "stream %s info (its creation time is part of the record's "
                    "id): %s", b->stream, why);
    } else if (adv.time_ns > 0 && created > adv.time_ns) {
        g_autofree char *why = g_strdup_printf("stream %s was re-created after the advisory (its seq now names "
                                               "another message or none)", b->stream);
        lost(a, adv.stream_seq, adv.deliveries, why);
        return TRUE;
    } else {
        st = jet_stream_msg_get(nc, b->stream, adv.stream_seq, REQUEST_MS, &stored, &err);
    }
    if (st == JET_STORED_ABSENT) {
        g_autofree char *why = g_strdup_printf("it is no longer in stream %s (deleted, or aged out)", b->stream);
        lost(a, adv.stream_seq, adv.deliveries, why);
        return TRUE;
    }

    JetCaptureOutcome out = JET_CAPTURE_FAILED;
    JetCaptureStored where = { 0 };
    if (st == JET_STORED_FOUND) {
        g_auto(JetHdrParse) hdrs = { 0 };
        gsize hlen = 0;
        const char *h = stored->hdrs != NULL ? g_bytes_get_data(stored->hdrs, &hlen) : NULL;
        jet_hdr_parse(h, hlen, &hdrs);
        gsize dlen = 0;
        const char *payload = g_bytes_get_data(stored->data, &dlen);

        JetLedgerRecord rec;
        jet_ledger_record_init(&rec);
        gboolean have_rec = FALSE;
        if (a->ledger != NULL) {
            g_autoptr(GError) lerr = NULL;
            have_rec = jet_ledger_get(a->ledger, b->stream, b->consumer, adv.stream_seq, &rec, &lerr) ==
                       JET_LEDGER_FOUND;
        }
        g_autofree char *reason = g_strdup_printf("the server gave up after %" G_GUINT64_FORMAT
                                                  " deliveries (MAX_DELIVERIES advisory)", adv.deliveries);
        JetCaptureFacts facts = {
            .stream = b->stream,
            .stream_created_ns = created,
            .consumer = b->consumer,
            .subject = stored->subject,
            .stream_seq = adv.stream_seq,
            .deliveries = (guint32)MIN(adv.deliveries, G_MAXUINT32),
            .failures = rec.failures,
            .postpones = rec.postpones,
            .cause = JET_CAUSE_MAX_DELIVERIES,
            .reason = reason,
            .has_first_failure = rec.has_first_failure,
            .first_failure_ns = rec.first_failure_ns,
            .has_enqueued = stored->time_ns > 0,
            .enqueued_ns = stored->time_ns,
            .captured_ns = g_get_real_time() * 1000,
            .plugin_name = a->plugin_name,
            .plugin_version = a->plugin_version,
            .host = a->host_name,
            .binding = b->name,
            .ttl_s = b->dlq_ttl_ms / 1000,
        };
        HookData hd = { a, adv.stream_seq };
        JetCaptureHooks hooks = { publish_failed, on_collision, on_headers_dropped, &hd };
        gint64 max_payload = jet_capture_max_payload(nc, js, b->dlq_stream);
        out = jet_capture_store(nc, js, b->dlq_subject, payload, (int)MIN(dlen, (gsize)G_MAXINT), &hdrs, &facts,
                                max_payload, REQUEST_MS, &hooks, &where, &err);
        if (out == JET_CAPTURE_CAPTURED) {
            if (where.duplicate)
                STAT_ADD(a, duplicates);
            else
                STAT_ADD(a, captured);
            jet_log(JET_LOG_WARNING, b->name, "max-deliveries-captured",
                    "stream seq %" G_GUINT64_FORMAT " (%s): the server gave up on it after %" G_GUINT64_FORMAT
                    " deliveries; %s %s (DLQ %s seq %" G_GUINT64_FORMAT ")", adv.stream_seq, stored->subject,
                    adv.deliveries, where.duplicate ? "already captured to" : "captured to", b->dlq_subject,
                    where.stream, where.seq);
            if (have_rec) {
                g_autoptr(GError) lerr = NULL;
                jet_ledger_delete(a->ledger, b->stream, b->consumer, adv.stream_seq, &lerr);
            }
            return TRUE;
        }
    }
    if (out == JET_CAPTURE_TOO_LARGE || !can_retry) {
        STAT_ADD(a, stranded);
        jet_log(JET_LOG_ERROR, b->name, "stranded",
                "stream seq %" G_GUINT64_FORMAT ": the server gave up on it after %" G_GUINT64_FORMAT " deliveries, "
                "and it cannot be dead-lettered: %s. It is STRANDED in stream %s: read it at seq %" G_GUINT64_FORMAT
                " and handle it by hand", adv.stream_seq, adv.deliveries, err != NULL ? err->message : "unknown",
                b->stream, adv.stream_seq);
        return TRUE;
    }
    STAT_ADD(a, failed);
    jet_log(JET_LOG_ERROR, b->name, "max-deliveries-capture-failed",
            "stream seq %" G_GUINT64_FORMAT ": the server gave up on it after %" G_GUINT64_FORMAT " deliveries; "
            "dead-lettering it failed: %s; its advisory is kept and tried again in %" G_GUINT64_FORMAT " ms",
            adv.stream_seq, adv.deliveries, err != NULL ? err->message : "unknown", a->retry_ms);
    return FALSE;
}

/* --- the thread ------------------------------------------------------------ */

/* Waits ms, or until stop(). */
static void pause_ms(JetAdvisory *a, guint64 ms)
{
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    g_mutex_lock(&a->lock);
    while (!a->stopping && g_cond_wait_until(&a->cond, &a->lock, until))
        ;
    g_mutex_unlock(&a->lock);
}

static void drop(JetAdvisory *a)
{
    install(a, NULL, a->mode, NULL);
}

/* Whether the kept watch still stands: its consumer is there. */
static gboolean consumer_present(JetAdvisory *a)
{
    g_mutex_lock(&a->lock);
    g_autofree char *stream = g_strdup(a->stream);
    g_mutex_unlock(&a->lock);
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetConsumerInfo(&ci, jet_conn_js(a->conn), stream, a->durable, NULL, &jerr);
    if (s == NATS_OK) {
        jsConsumerInfo_Destroy(ci);
        return TRUE;
    }
    /* Only the server's "not found" counts: a timeout is no reason to move. */
    return !(jerr == ERR_CONSUMER_NOT_FOUND || jerr == ERR_STREAM_NOT_FOUND || s == NATS_NOT_FOUND);
}

static void settle_kept(JetAdvisory *a, natsMsg *m)
{
    natsConnection *nc = jet_conn_nats(a->conn);
    const char *reply = natsMsg_GetReply(m);
    if (stopping(a)) {
        /* Unhandled: back at once, for another host or the next start. */
        natsConnection_PublishString(nc, reply, "-NAK");
        return;
    }
    gsize len = 0;
    const char *data = jet_msg_payload(m, &len);
    if (!handle(a, data, len, TRUE)) {
        g_autofree char *nak = g_strdup_printf("-NAK {\"delay\": %" G_GUINT64_FORMAT "}", a->retry_ms * 1000000);
        natsConnection_PublishString(nc, reply, nak);
        return;
    }
    g_autoptr(GError) err = NULL;
    if (!jet_ack_confirmed(nc, reply, REQUEST_MS, &err))
        /* It comes back after AckWait; the record's Nats-Msg-Id makes that a duplicate. */
        jet_log(JET_LOG_WARNING, a->b->name, "advisory-ack", "an advisory was handled but its ack %s",
                err != NULL ? err->message : "was not confirmed");
}

static gpointer run(gpointer data)
{
    JetAdvisory *a = data;
    guint64 backoff = BACKOFF_MIN_MS;
    guint idle = 0;
    while (!stopping(a)) {
        g_mutex_lock(&a->lock);
        natsSubscription *sub = a->sub;
        JetAdvisoryMode mode = a->mode;
        g_mutex_unlock(&a->lock);
        if (sub == NULL) {
            /* The backoff is reset only by a watch that works: a setup that
             * succeeds into a fetch that fails must not spin. */
            if (!setup(a)) {
                pause_ms(a, backoff);
                backoff = MIN(backoff * 2, BACKOFF_MAX_MS);
            }
            continue;
        }
        if (mode == JET_ADVISORY_KEPT) {
            natsMsgList list = { 0 };
            jsErrCode jerr = 0;
            int batch = nats_GetVersionNumber() >= FETCH_FIXED_VERSION ? BATCH : 1;
            natsStatus s = natsSubscription_Fetch(&list, sub, batch, FETCH_MS, &jerr);
            if (s == NATS_OK) {
                idle = 0;
                healthy(a, &backoff);
                for (int i = 0; i < list.Count; i++)
                    settle_kept(a, list.Msgs[i]);
                natsMsgList_Destroy(&list);
                continue;
            }
            natsMsgList_Destroy(&list);
            if (s == NATS_TIMEOUT) {
                healthy(a, &backoff);
                if (++idle % CHECK_EVERY == 0 && !consumer_present(a))
                    drop(a);
                continue;
            }
            if (stopping(a))
                break;
            g_autofree char *why = jet_nats_error(s);
            g_autofree char *text = g_strdup_printf("fetching advisories from %s: %s [err %d]; setting up again",
                                                    a->durable, why, (int)jerr);
            problem(a, text);
            drop(a);
            pause_ms(a, backoff);
            backoff = MIN(backoff * 2, BACKOFF_MAX_MS);
            continue;
        }
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, sub, FETCH_MS);
        if (s == NATS_OK || s == NATS_TIMEOUT)
            healthy(a, &backoff);
        if (s == NATS_OK) {
            gsize len = 0;
            const char *payload = jet_msg_payload(m, &len);
            handle(a, payload, len, FALSE);
            natsMsg_Destroy(m);
            continue;
        }
        if (s == NATS_TIMEOUT) {
            /* A stream that keeps them may have appeared: move to it (the
             * live subscription stays until the kept one is in place). */
            if (++idle % CHECK_EVERY == 0) {
                g_autofree char *why_live = NULL;
                setup_kept(a, &why_live);
            }
            continue;
        }
        if (stopping(a))
            break;
        drop(a);
        pause_ms(a, backoff);
        backoff = MIN(backoff * 2, BACKOFF_MAX_MS);
    }
    drop(a);
    return NULL;
}

/* --- life ------------------------------------------------------------------- */

JetAdvisory *jet_advisory_start(JetConn *conn, const JetBindingConfig *b, const JetAdvisoryContext *ctx)
{
    g_return_val_if_fail(conn != NULL && b != NULL, NULL);
    JetAdvisory *a = g_new0(JetAdvisory, 1);
    a->conn = conn;
    a->b = b;
    if (ctx != NULL) {
        a->host_name = g_strdup(ctx->host_name);
        a->plugin_name = g_strdup(ctx->plugin_name);
        a->plugin_version = g_strdup(ctx->plugin_version);
        a->ledger = ctx->ledger;
    }
    a->subject = jet_advisory_subject(b->stream, b->consumer);
    a->durable = jet_advisory_consumer_name(b->stream, b->consumer);
    a->retry_ms = b->n_rungs > 0 ? b->rungs_ms[b->n_rungs - 1] : 60000;
    a->mode = JET_ADVISORY_LIVE;
    g_mutex_init(&a->lock);
    g_cond_init(&a->cond);
    /* Set up before returning, so the watch stands before the binding's
     * first pull (the pull that makes the server raise a waiting advisory). */
    setup(a);
    g_autofree char *name = g_strdup_printf("jet-adv-%s", b->name);
    a->thread = g_thread_new(name, run, a);
    return a;
}

void jet_advisory_stop(JetAdvisory *a)
{
    if (a == NULL)
        return;
    g_mutex_lock(&a->lock);
    a->stopping = TRUE;
    /* Wakes a waiting fetch or NextMsg; the consumer stays (it was bound,
     * not created, by the subscription). */
    if (a->sub != NULL)
        natsSubscription_Unsubscribe(a->sub);
    g_cond_broadcast(&a->cond);
    g_mutex_unlock(&a->lock);
}

void jet_advisory_join(JetAdvisory *a)
{
    if (a == NULL)
        return;
    jet_advisory_stop(a);
    g_clear_pointer(&a->thread, g_thread_join);
}

void jet_advisory_free(JetAdvisory *a)
{
    if (a == NULL)
        return;
    jet_advisory_join(a);
    drop(a);
    g_free(a->host_name);
    g_free(a->plugin_name);
    g_free(a->plugin_version);
    g_free(a->subject);
    g_free(a->durable);
    g_free(a->stream);
    g_free(a->last_problem);
    g_cond_clear(&a->cond);
    g_mutex_clear(&a->lock);
    g_free(a);
}

JetAdvisoryMode jet_advisory_mode(JetAdvisory *a)
{
    g_mutex_lock(&a->lock);
    JetAdvisoryMode m = a->mode;
    g_mutex_unlock(&a->lock);
    return m;
}

void jet_advisory_stats(JetAdvisory *a, JetAdvisoryStats *out)
{
    memset(out, 0, sizeof *out);
    if (a == NULL)
        return;
    g_mutex_lock(&a->lock);
    *out = a->stats;
    g_mutex_unlock(&a->lock);
}
