/* The settlement executor: one delivery from the buffer to its settlement.
 *
 * Order of events (docs/retries.md, docs/settlement.md):
 *   1. redeliveries only: read the attempt ledger (the happy path does no
 *      ledger I/O); an unreachable ledger falls back to the delivery count;
 *   2. crash attribution: a suspect is handled alone with the isolation
 *      marker set; a poison message is captured without the handler;
 *   3. the breaker considers a message that has been failing while the floor
 *      is stalled;
 *   4. the plugin; the pure decision (settle.c);
 *   5. the action, with its ledger write, under the lease fence: a holder
 *      whose lease lapsed writes nothing and never releases. */
#include "engine_private.h"
#include "breaker_claim.h"
#include "capture.h"
#include "conn.h"
#include "errors.h"
#include "jet_msg.h"
#include "hdr_block.h"
#include "log.h"
#include "nats_raw.h"
#include "stream_msg.h"

#include <stdio.h>
#include <string.h>

/* --- the ledger, with its fallback --------------------------------------- */

static void ledger_went_down(JetEngine *e, const GError *err)
{
    STAT_ADD(e, ledger_fallbacks, 1);
    if (g_atomic_int_compare_and_exchange(&e->ledger_down, 0, 1))
        jet_log(JET_LOG_WARNING, e->b->name, "ledger-fallback",
                "the attempt ledger (bucket %s) is unreachable: %s; counting attempts from the delivery "
                "count until it answers again (postpones then count as failures)",
                jet_ledger_bucket(e->ledger), err != NULL ? err->message : "no answer");
}

static void ledger_answered(JetEngine *e)
{
    if (g_atomic_int_compare_and_exchange(&e->ledger_down, 1, 0))
        jet_log(JET_LOG_INFO, e->b->name, "ledger-back", "the attempt ledger answers again");
}

typedef enum {
    OP_ISOLATE,       /* set the marker (and the strike) before a suspect runs alone */
    OP_FAILURE,       /* one failure (+ survived, when alone) */
    OP_POSTPONE,      /* one postpone (+ survived, when alone) */
    OP_RELEASE,       /* the host gave it back unhandled, or kept it after a failed capture */
    OP_SURVIVED,      /* a suspect's handler returned: clear the marker */
} LedgerOp;

typedef struct {
    JetEngine *e;
    Item *it;                  /* NULL: no lease to check (drain) */
    LedgerOp op;
    const JetAttribution *att;
    gboolean alone;
    gint64 now_ns;
    const char *reason;
} Mutation;

static gboolean lease_lapsed(JetEngine *e, Item *it)
{
    if (it == NULL)
        return FALSE;
    g_mutex_lock(&e->lease_lock);
    gboolean stale = it->stale;
    g_mutex_unlock(&e->lease_lock);
    return stale;
}

/* Runs right before every compare-and-set attempt: the lease fence lives here. */
static gboolean mutate(JetLedgerRecord *rec, gpointer data)
{
    Mutation *m = data;
    if (lease_lapsed(m->e, m->it))
        return FALSE;
    switch (m->op) {
    case OP_ISOLATE:
        jet_attribution_apply_isolate(rec, m->att, m->e->host_name, m->now_ns);
        return TRUE;
    case OP_FAILURE:
        if (m->alone)
            jet_attribution_apply_survived(rec, m->att);
        jet_ledger_record_add_failure(rec, m->now_ns, m->reason);
        return TRUE;
    case OP_POSTPONE:
        if (m->alone)
            jet_attribution_apply_survived(rec, m->att);
        rec->postpones++;
        return TRUE;
    case OP_RELEASE:
        rec->releases++;
        return TRUE;
    case OP_SURVIVED:
        jet_attribution_apply_survived(rec, m->att);
        return TRUE;
    }
    return FALSE;
}

static void ledger_write(JetEngine *e, const char *stream, const char *consumer, guint64 seq, Mutation *m)
{
    if (e->ledger == NULL)
        return;
    g_autoptr(GError) err = NULL;
    JetLedgerStatus st = jet_ledger_update(e->ledger, stream, consumer, seq, mutate, m, NULL, &err);
    if (st == JET_LEDGER_WRITTEN) {
        ledger_answered(e);
    } else if (st == JET_LEDGER_UNREACHABLE || st == JET_LEDGER_CONFLICT) {
        ledger_went_down(e, err);
    }
    /* SKIPPED: the lease lapsed; nothing is written, by design. */
}

static void ledger_forget(JetEngine *e, const char *stream, const char *consumer, guint64 seq)
{
    if (e->ledger == NULL)
        return;
    g_autoptr(GError) err = NULL;
    if (jet_ledger_delete(e->ledger, stream, consumer, seq, &err) == JET_LEDGER_WRITTEN)
        ledger_answered(e);
    else
        ledger_went_down(e, err);
}

void jet__record_release(JetEngine *e, const JetAckMeta *meta)
{
    if (e->ledger == NULL)
        return;
    char stream[256], consumer[256];
    g_strlcpy(stream, meta->stream, MIN(sizeof stream, meta->stream_len + 1));
    g_strlcpy(consumer, meta->consumer, MIN(sizeof consumer, meta->consumer_len + 1));
    Mutation m = { .e = e, .op = OP_RELEASE, .now_ns = g_get_real_time() * 1000 };
    ledger_write(e, stream, consumer, meta->stream_seq, &m);
}

/* --- the breaker ---------------------------------------------------------- */

/* TRUE when an enforcing breaker claimed this message (capture it). */
static gboolean breaker_considers(JetEngine *e, const jet_msg *jm, const JetLedgerRecord *rec)
{
    if (e->floor == NULL || e->ledger == NULL || e->breaker.mode == JET_BREAKER_MODE_OFF)
        return FALSE;
    JetBreakerCandidate c = {
        .stream_seq = jm->stream_seq,
        .deliveries = jm->deliveries,
        .has_first_failure = rec->has_first_failure,
        .first_failure_ns = rec->first_failure_ns,
        .now_ns = g_get_real_time() * 1000,
    };
    JetBreakerVerdict v = jet_breaker_consider(e->floor, &e->breaker, &c);
    if (v.decision != JET_BREAKER_CLAIMABLE)
        return FALSE;
    gboolean enforce = e->breaker.mode == JET_BREAKER_MODE_ENFORCE;
    kvStore *kv = jet_ledger_kv(e->ledger);
    /* Observe counts what enforce would do: a message another host counted
     * would have been captured then (docs/floor-monitor.md). */
    if (!enforce && jet_breaker_was_counted(kv, jm->stream, jm->consumer, jm->stream_seq) == 1) {
        jet_breaker_note_counted(e->floor, jm->stream_seq);
        return FALSE;
    }
    g_autoptr(GError) err = NULL;
    JetBreakerClaimHolder holder;
    memset(&holder, 0, sizeof holder);
    JetBreakerClaimResult r = jet_breaker_claim(kv, jm->stream, jm->consumer, &v.window,
                                                jm->stream_seq, e->host_name, &holder, &err);
    jet_breaker_note_claim(e->floor, &e->breaker, &v.window, r, c.now_ns);
    if (r == JET_BREAKER_CLAIM_ERROR) {
        jet_log(JET_LOG_WARNING, e->b->name, "breaker", "claim for stream seq %" G_GUINT64_FORMAT " failed: %s",
                jm->stream_seq, err != NULL ? err->message : "unknown");
        return FALSE;
    }
    if (r == JET_BREAKER_ALREADY_CLAIMED) {
        if (!enforce && holder.seq != 0)
            jet_breaker_note_counted(e->floor, holder.seq);
        return FALSE;
    }
    if (!enforce) {
        jet_breaker_note_counted(e->floor, jm->stream_seq);
        g_autoptr(GError) merr = NULL;
        if (!jet_breaker_mark_counted(kv, jm->stream, jm->consumer, jm->stream_seq, e->host_name, &merr))
            jet_log(JET_LOG_WARNING, e->b->name, "breaker", "%s (another host may count this message again)",
                    merr->message);
    }
    jet_log(JET_LOG_WARNING, e->b->name, enforce ? "quarantine" : "would-quarantine",
            "stream seq %" G_GUINT64_FORMAT " (delivery %u): %s%s", jm->stream_seq, jm->deliveries, v.why,
            enforce ? "; capturing it (breaker = enforce)" : "; observe mode: counted only");
    return enforce;
}

static char *read_headers(JetEngine *e, natsMsg *m, guint64 stream_seq, JetHdrParse *out);

/* --- capture-then-ack ------------------------------------------------------ */

#define CAPTURE_TIMEOUT_MS 5000

static gint64 capture_max_payload(JetEngine *e, gboolean refresh)
{
    gint64 v = __atomic_load_n(&e->capture_max_payload, __ATOMIC_RELAXED);
    if (v <= 0 || refresh) {
        v = jet_capture_max_payload(jet_conn_nats(e->conn), jet_conn_js(e->conn), e->b->dlq_stream);
        __atomic_store_n(&e->capture_max_payload, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* Whether the server will deliver this message again (finite MaxDeliver). */
static gboolean deliveries_remain(JetEngine *e, guint32 deliveries)
{
    return e->policy.max_deliver <= 0 || (gint64)deliveries < e->policy.max_deliver;
}

/* What became of a capture. */
typedef enum {
    CAPTURE_ACKED,       /* dead-lettered and acked */
    CAPTURE_KEPT,        /* not captured; NAK'd to be tried again at a later delivery */
    CAPTURE_NOT_ACKED,   /* stranded, uncertain, or stale: nothing more to do here */
} CaptureResult;

/* Keeps a message the host could not capture: a delayed NAK while the
 * server will deliver it again, else Stranded (logged with what to do). */
static CaptureResult keep_uncaptured(JetEngine *e, const char *reply, guint32 deliveries, guint64 seq, gboolean stale,
                            const char *what, const char *why)
{
    if (!stale && deliveries_remain(e, deliveries)) {
        jet__publish_nak_delay(e, reply, e->policy.rungs_ms[e->policy.n_rungs - 1]);
        STAT_ADD(e, capture_failed, 1);
        jet_log(JET_LOG_ERROR, e->b->name, "capture-failed",
                "stream seq %" G_GUINT64_FORMAT " delivery %u: %s: %s; kept on the consumer, tried again in %"
                G_GUINT64_FORMAT " ms", seq, deliveries, what, why, e->policy.rungs_ms[e->policy.n_rungs - 1]);
        return CAPTURE_KEPT;
    }
    STAT_ADD(e, stranded, 1);
    jet_log(JET_LOG_ERROR, e->b->name, "stranded",
            "stream seq %" G_GUINT64_FORMAT " delivery %u: %s: %s; this was its last delivery (MaxDeliver %"
            G_GINT64_FORMAT "), so it is STRANDED: never acked, never dead-lettered. To recover it, fix the "
            "dead-letter stream %s (subject %s), then read it from stream %s at seq %" G_GUINT64_FORMAT
            " and republish it", seq, deliveries, what, why, e->policy.max_deliver, e->b->dlq_stream, e->b->dlq_subject,
            e->b->stream, seq);
    return CAPTURE_NOT_ACKED;
}

/* The origin stream's creation time, read from stream info once and again
 * after a recovery or a reconnect (either may mean the stream was deleted
 * and re-created: jet__forget_stream_life).  0 when it cannot be read. */
static gint64 stream_created(JetEngine *e)
{
    gint64 v = __atomic_load_n(&e->stream_created_ns, __ATOMIC_RELAXED);
    if (v > 0)
        return v;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, jet_conn_js(e->conn), e->b->stream, NULL, NULL) == NATS_OK) {
        v = si->Created;
        jsStreamInfo_Destroy(si);
        __atomic_store_n(&e->stream_created_ns, v, __ATOMIC_RELAXED);
    }
    return v;
}

void jet__forget_stream_life(JetEngine *e)
{
    __atomic_store_n(&e->stream_created_ns, 0, __ATOMIC_RELAXED);
}

/* What the shared capture sequence (jet_capture_store) leaves to the
 * engine: a deleted dead-letter stream re-created (managed) and tried once
 * more, and what to log. */
typedef struct {
    JetEngine *e;
    guint64 seq;
} StoreCtx;

static gboolean store_publish_failed(gpointer data, const GError *err)
{
    StoreCtx *c = data;
    (void)err;
    if (c->e->b->manage != JET_MANAGE_CREATE)
        return FALSE;
    g_autoptr(GError) ensure_err = NULL;
    if (!jet_dlq_stream_ensure(jet_conn_js(c->e->conn), c->e->b, &ensure_err))
        return FALSE;
    capture_max_payload(c->e, TRUE);
    return TRUE;
}

static void store_collision(gpointer data, const char *msg_id, guint64 dlq_seq, const char *why)
{
    StoreCtx *c = data;
    (void)dlq_seq;
    STAT_ADD(c->e, capture_collisions, 1);
    jet_log(JET_LOG_ERROR, c->e->b->name, "capture-collision",
            "stream seq %" G_GUINT64_FORMAT ": the dead-letter stream answered \"duplicate\" for Nats-Msg-Id %s, "
            "but %s; capturing it again under a distinct id", c->seq, msg_id, why);
}

static void store_headers_dropped(gpointer data)
{
    StoreCtx *c = data;
    jet_log(JET_LOG_WARNING, c->e->b->name, "capture-headers-dropped",
            "stream seq %" G_GUINT64_FORMAT ": the original headers did not fit and were left out of the "
            "dead-letter record (their names are in Jethost-Dropped-Headers)", c->seq);
}

static JetCaptureOutcome publish_verified(JetEngine *e, const char *data, int len, const JetHdrParse *orig,
                                          JetCaptureFacts *facts, gboolean *duplicate, GError **error)
{
    StoreCtx ctx = { e, facts->stream_seq };
    const JetCaptureHooks hooks = {
        .publish_failed = store_publish_failed,
        .collision = store_collision,
        .headers_dropped = store_headers_dropped,
        .data = &ctx,
    };
    JetCaptureStored stored;
    JetCaptureOutcome out = jet_capture_store(jet_conn_nats(e->conn), jet_conn_js(e->conn), e->b->dlq_subject,
                                              data, len, orig, facts, capture_max_payload(e, FALSE),
                                              CAPTURE_TIMEOUT_MS, &hooks, &stored, error);
    *duplicate = out == JET_CAPTURE_CAPTURED && stored.duplicate;
    return out;
}

/* Publishes the DLQ record, waits for the pub-ack, then acks with
 * confirmation.  CAPTURE_ACKED: the original was acked (its ledger record
 * can go); CAPTURE_KEPT: NAK'd for another try (the ledger must explain
 * that redelivery). */
static CaptureResult capture_then_ack(JetEngine *e, natsMsg *m, const JetHdrParse *orig, JetCaptureFacts *facts,
                                      const char *reply, gboolean stale)
{
    g_autoptr(GError) err = NULL;
    const char *data = natsMsg_GetData(m);
    int len = natsMsg_GetDataLength(m);
    if (facts->stream_seq > 0) {
        facts->stream_created_ns = stream_created(e);
        if (facts->stream_created_ns <= 0)
            return keep_uncaptured(e, reply, facts->deliveries, facts->stream_seq, stale, "capture not built",
                                   "the origin stream's creation time (part of the record's id) cannot be read");
    }
    gboolean duplicate = FALSE;
    JetCaptureOutcome out = publish_verified(e, data, len, orig, facts, &duplicate, &err);
    if (out == JET_CAPTURE_TOO_LARGE) {
        STAT_ADD(e, stranded, 1);
        jet_log(JET_LOG_ERROR, e->b->name, "stranded",
                "stream seq %" G_GUINT64_FORMAT ": too-large: %s; never truncated, never acked. It stays "
                "on the consumer: raise the dead-letter stream's limits or handle it by hand",
                facts->stream_seq, err != NULL ? err->message : "");
        if (!stale && deliveries_remain(e, facts->deliveries)) {
            jet__publish_nak_delay(e, reply, e->policy.rungs_ms[e->policy.n_rungs - 1]);
            return CAPTURE_KEPT;
        }
        return CAPTURE_NOT_ACKED;
    }
    if (out != JET_CAPTURE_CAPTURED) {
        return keep_uncaptured(e, reply, facts->deliveries, facts->stream_seq, stale, "capture failed",
                               err != NULL ? err->message : "no pub-ack");
    }
    g_clear_error(&err);
    if (!jet_ack_confirmed(jet_conn_nats(e->conn), reply, CAPTURE_TIMEOUT_MS, &err)) {
        if (facts->cause == JET_CAUSE_MALFORMED) {
            /* Without readable metadata there is no floor to check and no
             * Msg-Id to de-duplicate a second capture: an operator must look. */
            STAT_ADD(e, stranded, 1);
            jet_log(JET_LOG_ERROR, e->b->name, "stranded",
                    "a malformed delivery (reply '%s') was dead-lettered to %s, but it cannot be acked: %s. "
                    "STRANDED: the record in %s carries its payload and reply subject; if the server "
                    "delivers it again it is captured again",
                    facts->reply != NULL ? facts->reply : "", e->b->dlq_stream,
                    err != NULL ? err->message : "no reply", e->b->dlq_stream);
            return CAPTURE_NOT_ACKED;
        }
        STAT_ADD(e, uncertain, 1);
        jet_log(JET_LOG_ERROR, e->b->name, "uncertain",
                "stream seq %" G_GUINT64_FORMAT ": dead-lettered to %s (%s), but the ack was not confirmed: %s. "
                "UNCERTAIN: if the consumer's ack floor passes %" G_GUINT64_FORMAT " it is done; if it is "
                "delivered again it is captured again and the duplicate is discarded by Nats-Msg-Id",
                facts->stream_seq, e->b->dlq_stream, duplicate ? "a duplicate of an earlier capture" : "new record",
                err != NULL ? err->message : "no reply", facts->stream_seq);
        return CAPTURE_NOT_ACKED;
    }
    STAT_ADD(e, dead_lettered, 1);
    jet_log(JET_LOG_WARNING, e->b->name, "dead-lettered",
            "stream seq %" G_GUINT64_FORMAT " delivery %u: captured to %s (cause %s%s%s)%s, then acked",
            facts->stream_seq, facts->deliveries, e->b->dlq_subject, jet_cause_name(facts->cause),
            facts->reason != NULL && *facts->reason ? ": " : "", facts->reason != NULL ? facts->reason : "",
            duplicate ? " as a duplicate of an earlier capture" : "");
    return CAPTURE_ACKED;
}

void jet__capture_malformed(JetEngine *e, natsMsg *m)
{
    const char *reply = natsMsg_GetReply(m);
    g_auto(JetHdrParse) orig = { 0 };
    read_headers(e, m, 0, &orig);
    const jet_plugin *d = jet_instance_descriptor(e->inst);
    JetCaptureFacts facts = {
        .stream = e->b->stream,
        .consumer = e->b->consumer,
        .subject = natsMsg_GetSubject(m),
        .reply = reply,
        .cause = JET_CAUSE_MALFORMED,
        .reason = "the delivery's $JS.ACK reply subject could not be parsed",
        .captured_ns = g_get_real_time() * 1000,
        .plugin_name = d->name,
        .plugin_version = d->version,
        .host = e->host_name,
        .binding = e->b->name,
    };
    jet_log(JET_LOG_ERROR, e->b->name, "malformed", "a delivery with reply subject '%s' does not parse; "
            "dead-lettering it with cause malformed", reply != NULL ? reply : "");
    if (reply == NULL || *reply == '\0') {
        STAT_ADD(e, stranded, 1);
        return;
    }
    capture_then_ack(e, m, &orig, &facts, reply, FALSE);
    STAT_ADD(e, messages, 1);
}

/* --- one delivery ---------------------------------------------------------- */

/* The delivery's header block as the server sent it, parsed by the host's
 * rules (docs/headers.md).  Returns NULL, or what makes the block unreadable
 * (the first defect, and how many there are; caller frees). */
static char *read_headers(JetEngine *e, natsMsg *m, guint64 stream_seq, JetHdrParse *out)
{
    g_autofree char *block = NULL;
    gsize len = 0;
    g_autofree char *lost = NULL;
    if (!jet_nats_raw_headers(m, &block, &len)) {
        lost = g_strdup("out of memory");
    } else if (len > 0 && !jet_nats_raw_intact(m)) {
        /* nats.c has read (and rewritten) this block already: the stream
         * still holds it as stored. */
        g_autoptr(JetStoredMsg) stored = NULL;
        g_autoptr(GError) err = NULL;
        JetStoredStatus st = stream_seq > 0 ? jet_stream_msg_get(jet_conn_nats(e->conn), e->b->stream, stream_seq,
                                                                 CAPTURE_TIMEOUT_MS, &stored, &err)
                                            : JET_STORED_ERROR;
        g_clear_pointer(&block, g_free);
        len = 0;
        if (st == JET_STORED_FOUND && stored->hdrs != NULL) {
            block = g_memdup2(g_bytes_get_data(stored->hdrs, &len), g_bytes_get_size(stored->hdrs));
        } else {
            lost = g_strdup_printf("an empty message's header block, which nats.c reads before the host can, "
                                   "could not be read back from the stream (%s)",
                                   st == JET_STORED_ABSENT ? "no longer there"
                                   : err != NULL           ? err->message
                                                           : "no stream sequence");
        }
    }
    if (lost != NULL) {
        /* What nats.c read, checked by the host's rules, is all there is:
         * kept for the record, never shown to a plugin. */
        jet_hdr_parse(NULL, 0, out);
        g_autoptr(GPtrArray) seen = jet_capture_msg_headers(m);
        for (guint i = 0; i < seen->len; i++)
            g_ptr_array_add(out->headers, g_strdup(g_ptr_array_index(seen, i)));
        JetHdrDefect d = { 0, g_strdup(""), "the block could not be read as stored" };
        g_array_append_val(out->defects, d);
        jet_log(JET_LOG_ERROR, e->b->name, "headers-unreadable", "stream seq %" G_GUINT64_FORMAT ": %s; "
                "dead-lettering it with the headers as nats.c read them", stream_seq, lost);
        return g_strdup_printf("the block could not be read as stored: %s", lost);
    }
    if (jet_hdr_parse(block, len, out))
        return NULL;
    g_autofree char *first = jet_hdr_defect_describe(&g_array_index(out->defects, JetHdrDefect, 0));
    if (out->defects->len == 1)
        return g_steal_pointer(&first);
    return g_strdup_printf("%s, and %u more", first, out->defects->len - 1);
}

/* A host call through a handle whose handle() had returned: refused by the
 * host table, counted here.  It runs under the handle table's lock, which a
 * worker takes to drop its slot as it exits, so e (freed only after its
 * workers are joined) is alive. */
static void stale_handle_used(gpointer data, const char *fn)
{
    JetEngine *e = data;
    (void)fn;
    STAT_ADD(e, stale_handles, 1);
}

void jet__deliver(JetEngine *e, Item *it, const JetAckMeta *meta)
{
    natsMsg *m = it->msg;
    const char *reply = natsMsg_GetReply(m);
    char stream[256], consumer[256];
    g_strlcpy(stream, meta->stream, MIN(sizeof stream, meta->stream_len + 1));
    g_strlcpy(consumer, meta->consumer, MIN(sizeof consumer, meta->consumer_len + 1));

    /* The header block first, before anything could make nats.c read it. */
    g_auto(JetHdrParse) hdrs = { 0 };
    g_autofree char *malformed = read_headers(e, m, meta->stream_seq, &hdrs);

    jet_msg jm;
    memset(&jm, 0, sizeof jm);
    jm.headers = hdrs.headers;
    jm.subject = natsMsg_GetSubject(m);
    jm.data = natsMsg_GetData(m);
    jm.len = (size_t)natsMsg_GetDataLength(m);
    jm.stream = stream;
    jm.consumer = consumer;
    jm.stream_seq = meta->stream_seq;
    jm.consumer_seq = meta->consumer_seq;
    jm.deliveries = (uint32_t)MIN(meta->delivered, G_MAXUINT32);
    jm.has_enqueued = meta->timestamp_ns > 0;
    jm.enqueued_ns = meta->timestamp_ns;
    jet_msg_reset_verdict(&jm);

    /* 1. The ledger, on redeliveries only. */
    JetLedgerRecord rec;
    jet_ledger_record_init(&rec);
    gboolean have_rec = FALSE;
    gboolean ledger_live = e->ledger != NULL;
    if (ledger_live && jm.deliveries > 1) {
        g_autoptr(GError) err = NULL;
        JetLedgerStatus st = jet_ledger_get(e->ledger, stream, consumer, jm.stream_seq, &rec, &err);
        if (st == JET_LEDGER_FOUND) {
            have_rec = TRUE;
            ledger_answered(e);
        } else if (st == JET_LEDGER_ABSENT) {
            ledger_answered(e);
        } else {
            ledger_went_down(e, err);
            ledger_live = FALSE;
        }
    }
    if (ledger_live) {
        jm.failures = rec.failures;
        jm.postpones = rec.postpones;
        jm.has_first_failure = rec.has_first_failure;
        jm.first_failure_ns = rec.first_failure_ns;
    } else {
        /* No ledger: every earlier delivery counts as a failure, which can
         * only dead-letter early, never late. */
        jm.failures = jm.deliveries > 0 ? jm.deliveries - 1 : 0;
    }

    /* 2. Crash attribution. */
    JetAttribution att;
    memset(&att, 0, sizeof att);
    att.kind = JET_ATTRIBUTION_NORMAL;
    if (ledger_live)
        jet_attribution_decide(have_rec ? &rec : NULL, jm.deliveries, e->b->crash_limit, &att);
    gboolean alone = att.kind == JET_ATTRIBUTION_SUSPECT;

    /* 3. The breaker. */
    gboolean breaker_claim = ledger_live && have_rec && att.kind != JET_ATTRIBUTION_POISON &&
                             breaker_considers(e, &jm, &rec);

    /* 4. The plugin, alone when a suspect. */
    if (alone)
        jet__suspect_begin(e);
    jet__gate_enter(e, it, alone);

    JetSettleFacts f = {
        .deliveries = jm.deliveries,
        .has_enqueued = jm.has_enqueued,
        .enqueued_ns = jm.enqueued_ns,
        .failures = jm.failures,
        .postpones = jm.postpones,
        .strikes = att.strikes,
        .suspect = alone,
        .breaker_claim = breaker_claim,
        .malformed_headers = malformed,
    };
    JetSettleAction a;
    gboolean handled = FALSE;
    if (att.kind == JET_ATTRIBUTION_POISON) {
        STAT_ADD(e, poison, 1);
    }
    if (!jet_settle_before_handle(&e->policy, &f, &a)) {
        if (alone) {
            STAT_ADD(e, suspects, 1);
            if (att.strike)
                STAT_ADD(e, strikes, 1);
            jet_log(JET_LOG_WARNING, e->b->name, "suspect",
                    "stream seq %" G_GUINT64_FORMAT " (delivery %u): %u deliveries unexplained%s; "
                    "handling it alone with the isolation marker set",
                    jm.stream_seq, jm.deliveries, att.unexplained,
                    att.strike ? ", and the marker was still set: one strike" : "");
            Mutation iso = { .e = e, .it = it, .op = OP_ISOLATE, .att = &att, .now_ns = g_get_real_time() * 1000 };
            ledger_write(e, stream, consumer, jm.stream_seq, &iso);
        }
        g_mutex_lock(&e->lease_lock);
        it->handler_since_us = now_us();
        g_mutex_unlock(&e->lease_lock);

        /* The plugin gets a handle, not &jm: jm's frame is the next
         * delivery's, and a kept pointer must not reach it (jet_msg.h). */
        const JetMsgOwner owner = { .binding = e->b->name, .plugin = jet_instance_descriptor(e->inst)->name,
                                    .stale = stale_handle_used, .data = e };
        jet_msg *lent = jet_msg_lend(&jm, &owner);
        f.verdict = jet_instance_handle(e->inst, lent);
        jet_msg_unlend(lent);
        handled = TRUE;
        f.has_delay = jm.has_delay;
        f.delay_ms = jm.delay_ms;
        f.reason_too_long = jm.reason_too_long;
        f.reason = jm.has_reason ? jm.reason : NULL;
        f.now_ns = jet_instance_now_ns(e->inst);
        jet_settle_decide(&e->policy, &f, &a);
    }
    gboolean stale = jet__release_hold(e, it);
    gint64 now_ns = g_get_real_time() * 1000;

    /* 5. The action. */
    switch (a.kind) {
    case JET_ACTION_ACK:
        if (alone)   /* the marker goes first: a death after this earns no strike */
            ledger_forget(e, stream, consumer, jm.stream_seq);
        if (!alone && !have_rec) {
            /* The fast path: nothing to forget after it, so the ack may
             * wait a moment to go with the next ones. */
            jet__ack_soon(e, it);
        } else {
            jet__publish_ack(e, reply, "+ACK");
            if (!alone)
                ledger_forget(e, stream, consumer, jm.stream_seq);
        }
        STAT_ADD(e, acked, 1);
        break;
    case JET_ACTION_RETRY:
    case JET_ACTION_POSTPONE: {
        if (a.kind == JET_ACTION_RETRY)
            STAT_ADD(e, handler_failed, 1);
        if (stale) {
            /* The server has handed it to someone else by now: a NAK would
             * release their delivery, and a ledger write would count an
             * attempt twice: the lease fence, docs/engine.md). */
            jet_log(JET_LOG_WARNING, e->b->name, "stale-result",
                    "stream seq %" G_GUINT64_FORMAT ": %s after the lease lapsed; not released, not recorded",
                    jm.stream_seq, jet_action_name(a.kind));
            break;
        }
        Mutation mu = { .e = e, .it = it, .op = a.kind == JET_ACTION_RETRY ? OP_FAILURE : OP_POSTPONE,
                        .att = &att, .alone = alone, .now_ns = now_ns, .reason = a.reason };
        /* Every retry and every postpone is written: the op (a failure or
         * a postpone) and the survived marker of a suspect are in mu; the
         * ledger keeps both counts (docs/retries.md). */
        ledger_write(e, stream, consumer, jm.stream_seq, &mu);
        jet__publish_nak_delay(e, reply, a.delay_ms);
        if (a.kind == JET_ACTION_RETRY)
            STAT_ADD(e, retried, 1);
        else
            STAT_ADD(e, postponed, 1);
        jet_log(JET_LOG_INFO, e->b->name, jet_action_name(a.kind),
                "stream seq %" G_GUINT64_FORMAT " delivery %u: %s in %" G_GUINT64_FORMAT " ms%s%s",
                jm.stream_seq, jm.deliveries, jet_action_name(a.kind), a.delay_ms,
                a.reason[0] ? ": " : "", a.reason);
        break;
    }
    case JET_ACTION_CAPTURE: {
        if (alone && handled) {
            /* The marker goes first (a death after this earns no strike);
             * the record itself stays until the capture is acked: a capture
             * that fails must not lose the message's failures.  A suspect
             * captured before it ran survived nothing: its deaths stay
             * unexplained, so a retried capture still finds a suspect. */
            Mutation clr = { .e = e, .it = it, .op = OP_SURVIVED, .att = &att, .alone = TRUE, .now_ns = now_ns };
            ledger_write(e, stream, consumer, jm.stream_seq, &clr);
        }
        const jet_plugin *d = jet_instance_descriptor(e->inst);
        JetCaptureFacts facts = {
            .stream = stream,
            .consumer = consumer,
            .subject = jm.subject,
            .stream_seq = jm.stream_seq,
            .deliveries = jm.deliveries,
            .postpones = jm.postpones,
            .has_enqueued = jm.has_enqueued,
            .enqueued_ns = jm.enqueued_ns,
            .plugin_name = d->name,
            .plugin_version = d->version,
            .host = e->host_name,
            .binding = e->b->name,
        };
        jet_capture_facts_settled(&facts, &a, jm.failures, jm.has_first_failure, jm.first_failure_ns, now_ns);
        CaptureResult cr = capture_then_ack(e, m, &hdrs, &facts, reply, stale);
        if (cr == CAPTURE_ACKED && (have_rec || alone)) {
            ledger_forget(e, stream, consumer, jm.stream_seq);
        } else if (cr == CAPTURE_KEPT) {
            /* The host gave it back for another try: its next delivery is
             * explained, not a crash (no suspect), and its failures stay. */
            Mutation kept = { .e = e, .it = it, .op = OP_RELEASE, .now_ns = now_ns };
            ledger_write(e, stream, consumer, jm.stream_seq, &kept);
        }
        break;
    }
    }
    if (!jet__gate_left_for_it(e, it))
        jet_isolation_leave(&e->isolation, alone);
    if (alone)
        jet__suspect_end(e);

    STAT_ADD(e, messages, 1);
    if (e->settle_hook != NULL)
        e->settle_hook(jm.stream_seq, jm.deliveries, &a, e->settle_hook_data);
    if (jet_log_enabled(JET_LOG_DEBUG))
        jet_log(JET_LOG_DEBUG, e->b->name, "settled", "seq %" G_GUINT64_FORMAT " %s delivery %u: %s%s%s%s%s",
                jm.stream_seq, jm.subject, jm.deliveries, jet_action_name(a.kind),
                a.kind == JET_ACTION_CAPTURE ? " " : "", a.kind == JET_ACTION_CAPTURE ? jet_cause_name(a.cause) : "",
                stale ? " (stale)" : "", handled ? "" : " (handler not run)");
}
