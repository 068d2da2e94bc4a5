/* The settlement executor (executor.h): the sequence, in named steps.  What
 * each step decides is pure (ledger_record.h, settle.h, dlq_record.h); what
 * it does goes through the transport. */
#include "executor.h"
#include "errors.h"
#include "jet_msg.h"
#include "kv_entry.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct JetExecutor {
    const JetBindingConfig *b;
    const JetSettlePolicy *policy;
    JetInstance *inst;
    const char *host_name;
    const char *ledger_bucket;     /* NULL: no ledger */
    const JetTransport *t;
    gpointer td;
    gint ledger_down;              /* atomic: the last ledger call found it unreachable */
};

JetExecutor *jet_executor_new(const JetBindingConfig *b, const JetSettlePolicy *policy, JetInstance *inst,
                              const char *host_name, const char *ledger_bucket, const JetTransport *transport,
                              gpointer t)
{
    JetExecutor *x = g_new0(JetExecutor, 1);
    x->b = b;
    x->policy = policy;
    x->inst = inst;
    x->host_name = host_name;
    x->ledger_bucket = ledger_bucket;
    x->t = transport;
    x->td = t;
    return x;
}

void jet_executor_free(JetExecutor *x)
{
    g_free(x);
}

static void xlogv(const JetExecutor *x, jet_log_level level, const char *event, const JetLogField *fields,
                  gsize n, const char *fmt, va_list ap) G_GNUC_PRINTF(6, 0);
static void xlog(const JetExecutor *x, jet_log_level level, const char *event, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static void xlog_fields(const JetExecutor *x, jet_log_level level, const char *event, const JetLogField *fields,
                        gsize n, const char *fmt, ...) G_GNUC_PRINTF(6, 7);

/* The host's log, with the line's fields (log.h), or the transport's when
 * it keeps its own (the text alone). */
static void xlogv(const JetExecutor *x, jet_log_level level, const char *event, const JetLogField *fields,
                  gsize n, const char *fmt, va_list ap)
{
    if (x->t->log == NULL) {
        jet_log_fieldsv(level, x->b->name, event, fields, n, fmt, ap);
    } else if (x->t->log_enabled == NULL || x->t->log_enabled(x->td, level)) {
        g_autofree char *text = g_strdup_vprintf(fmt, ap);
        x->t->log(x->td, level, event, text);
    }
}

static void xlog(const JetExecutor *x, jet_log_level level, const char *event, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    xlogv(x, level, event, NULL, 0, fmt, ap);
    va_end(ap);
}

G_STATIC_ASSERT(JET_CAUSE_LAST < JET_STATS_CAUSES);
static void xlog_fields(const JetExecutor *x, jet_log_level level, const char *event, const JetLogField *fields,
                        gsize n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    xlogv(x, level, event, fields, n, fmt, ap);
    va_end(ap);
}

/* A settlement line's fields: seq and delivery (each when known) and, with
 * a cause, the cause.  Returns how many of out[3] are set. */
static gsize settle_fields(JetLogField out[3], guint64 stream_seq, guint32 deliveries, const char *cause)
{
    gsize n = 0;
    if (stream_seq > 0)
        out[n++] = JET_LOG_NUMBER(JET_LOG_KEY_SEQ, stream_seq);
    if (deliveries > 0)
        out[n++] = JET_LOG_NUMBER(JET_LOG_KEY_DELIVERY, deliveries);
    if (cause != NULL)
        out[n++] = JET_LOG_TEXT(JET_LOG_KEY_CAUSE, cause);
    return n;
}

/* The fields of a line about a capture. */
static gsize capture_fields(JetLogField out[3], const JetCaptureFacts *facts)
{
    return settle_fields(out, facts->stream_seq, facts->deliveries, jet_cause_name(facts->cause));
}

static gint64 now_ns(const JetExecutor *x)
{
    return jet_instance_now_ns(x->inst);
}

/* --- the ledger, with its fallback --------------------------------------- */

static void ledger_went_down(JetExecutor *x, const JetDelivery *d, const GError *err)
{
    JET_STAT_ADD(d->stats, ledger_fallbacks, 1);
    if (g_atomic_int_compare_and_exchange(&x->ledger_down, 0, 1))
        xlog(x, JET_LOG_WARNING, "ledger-fallback",
                "the attempt ledger (bucket %s) is unreachable: %s; counting attempts from the delivery "
                "count until it answers again (postpones then count as failures)",
                x->ledger_bucket, err != NULL ? err->message : "no answer");
}

static void ledger_answered(JetExecutor *x)
{
    if (g_atomic_int_compare_and_exchange(&x->ledger_down, 1, 0))
        xlog(x, JET_LOG_INFO, "ledger-back", "the attempt ledger answers again");
}

typedef enum {
    OP_ISOLATE,       /* set the marker (and the strike) before a suspect runs alone */
    OP_FAILURE,       /* one failure (+ survived, when alone) */
    OP_POSTPONE,      /* one postpone (+ survived, when alone) */
    OP_RELEASE,       /* the host gave it back unhandled, or kept it after a failed capture */
    OP_SURVIVED,      /* a suspect's handler returned: clear the marker */
} LedgerOp;

typedef struct {
    JetExecutor *x;
    const JetDelivery *d;
    /* The record as this delivery's run last read or wrote it (NULL: not
     * known, read first); a write replaces it with what was written. */
    JetLedgerRecord *known;
    gboolean fenced;           /* check the lease before writing (FALSE: a drain's release) */
    LedgerOp op;
    const JetAttribution *att;
    gboolean alone;
    gint64 now_ns;
    const char *reason;
} Mutation;

/* Runs right before every compare-and-set attempt: the lease fence lives
 * here (docs/engine.md, "The lease fence"). */
static gboolean mutate(JetLedgerRecord *rec, gpointer data)
{
    Mutation *m = data;
    if (m->fenced && m->x->t->lease_lapsed(m->x->td, m->d))
        return FALSE;
    switch (m->op) {
    case OP_ISOLATE:
        jet_attribution_apply_isolate(rec, m->att, m->x->host_name, m->now_ns);
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

static void ledger_write(Mutation *m)
{
    JetExecutor *x = m->x;
    if (x->ledger_bucket == NULL)
        return;
    g_autoptr(GError) err = NULL;
    JetLedgerRecord written;
    JetLedgerStatus st = x->t->ledger_update(x->td, m->d, m->known, mutate, m, &written, &err);
    if (st == JET_LEDGER_WRITTEN && m->known != NULL)
        *m->known = written;
    if (st == JET_LEDGER_WRITTEN)
        ledger_answered(x);
    else if (st == JET_LEDGER_UNREACHABLE || st == JET_LEDGER_CONFLICT)
        ledger_went_down(x, m->d, err);
    /* SKIPPED: the lease lapsed; nothing is written, by design. */
}

/* known: the record as the run knows it, once the message is acked: the
 * delete need not be waited for (nothing follows it that reads the record,
 * and it can only remove that revision).  NULL: it must land first. */
static void ledger_forget(JetExecutor *x, const JetDelivery *d, const JetLedgerRecord *known)
{
    if (x->ledger_bucket == NULL)
        return;
    g_autoptr(GError) err = NULL;
    JetLedgerStatus st = x->t->ledger_delete(x->td, d, known != NULL ? known->revision : 0, &err);
    if (st == JET_LEDGER_WRITTEN)
        ledger_answered(x);
    else if (st != JET_LEDGER_QUEUED)
        ledger_went_down(x, d, err);
}

void jet_executor_record_release(JetExecutor *x, const JetDelivery *d)
{
    Mutation m = { .x = x, .d = d, .fenced = FALSE, .op = OP_RELEASE, .now_ns = now_ns(x) };
    ledger_write(&m);
}

/* --- what one delivery carries through the steps ------------------------- */

/* What became of a capture. */
typedef enum {
    CAPTURE_ACKED,       /* dead-lettered and acked */
    CAPTURE_KEPT,        /* not captured; NAK'd to be tried again at a later delivery */
    CAPTURE_STRANDED,    /* neither captured nor acked, for good: an operator must act */
    CAPTURE_UNCERTAIN,   /* captured; the ack was not confirmed */
} CaptureResult;

typedef struct {
    const JetDelivery *d;
    jet_msg jm;                /* what the plugin is shown (lent, never given) */
    JetLedgerRecord rec;
    gboolean have_rec;         /* a record was read */
    /* What the ledger holds for it as far as this run knows: read (found
     * or absent), nothing on a first delivery, or what it wrote since;
     * known_valid FALSE: not known (no ledger, or it did not answer). */
    JetLedgerRecord known;
    gboolean known_valid;
    gboolean ledger_live;      /* the ledger answered (or was not needed) */
    JetAttribution att;
    gboolean alone;            /* a suspect: handled alone */
    JetSettleFacts f;
    JetSettleAction a;
    gboolean handled;
    gboolean stale;
    gint64 settled_ns;
    char *not_kv;              /* kind = kv: why the delivery is no KV entry, or NULL */
    char *publish_failed;      /* the first queued publish that failed, why */
    guint published, duplicates;   /* publishes stored; of them, already stored before */
    CaptureResult captured;        /* CAPTURE: what became of it */
    gint64 began_us;               /* the handler's start (a pending one's time counts to its completion) */
} Run;

/* Step 1: the ledger, on redeliveries only. */
static void read_ledger(JetExecutor *x, Run *r)
{
    jet_ledger_record_init(&r->rec);
    r->ledger_live = x->ledger_bucket != NULL;
    if (r->ledger_live && r->jm.deliveries > 1) {
        g_autoptr(GError) err = NULL;
        JetLedgerStatus st = x->t->ledger_get(x->td, r->d, &r->rec, &err);
        if (st == JET_LEDGER_FOUND || st == JET_LEDGER_ABSENT) {
            r->have_rec = st == JET_LEDGER_FOUND;
            ledger_answered(x);
        } else {
            ledger_went_down(x, r->d, err);
            r->ledger_live = FALSE;
        }
    }
    /* A first delivery has no record yet (a consumer made again under its
     * name may find an old one: the write then reads it after all). */
    r->known = r->rec;
    r->known_valid = r->ledger_live;
    if (r->ledger_live) {
        r->jm.failures = r->rec.failures;
        r->jm.postpones = r->rec.postpones;
        r->jm.has_first_failure = r->rec.has_first_failure;
        r->jm.first_failure_ns = r->rec.first_failure_ns;
    } else {
        /* No ledger: every earlier delivery counts as a failure, which can
         * only dead-letter early, never late. */
        r->jm.failures = r->jm.deliveries > 0 ? r->jm.deliveries - 1 : 0;
    }
}

static JetLedgerRecord *known_of(Run *r)
{
    return r->known_valid ? &r->known : NULL;
}

/* Step 2: crash attribution (ledger_record.h). */
static void attribute(JetExecutor *x, Run *r)
{
    memset(&r->att, 0, sizeof r->att);
    r->att.kind = JET_ATTRIBUTION_NORMAL;
    if (r->ledger_live)
        jet_attribution_decide(r->have_rec ? &r->rec : NULL, r->jm.deliveries, x->b->crash_limit, &r->att);
    r->alone = r->att.kind == JET_ATTRIBUTION_SUSPECT;
    if (r->att.kind == JET_ATTRIBUTION_POISON)
        JET_STAT_ADD(r->d->stats, poison, 1);
}

/* Step 3: the breaker considers a message with a failure record. */
static gboolean breaker_claims(JetExecutor *x, Run *r)
{
    return r->ledger_live && r->have_rec && r->att.kind != JET_ATTRIBUTION_POISON &&
           x->t->breaker(x->td, r->d, &r->rec);
}

/* A suspect about to run alone: the marker (and any strike) first. */
static void isolate(JetExecutor *x, Run *r)
{
    JET_STAT_ADD(r->d->stats, suspects, 1);
    if (r->att.strike)
        JET_STAT_ADD(r->d->stats, strikes, 1);
    JetLogField lf[3];
    xlog_fields(x, JET_LOG_WARNING, "suspect", lf, settle_fields(lf, r->jm.stream_seq, r->jm.deliveries, NULL),
            "stream seq %" G_GUINT64_FORMAT " (delivery %u): %u deliveries unexplained%s; "
            "handling it alone with the isolation marker set", r->jm.stream_seq, r->jm.deliveries,
            r->att.unexplained, r->att.strike ? ", and the marker was still set: one strike" : "");
    Mutation iso = { .x = x, .d = r->d, .known = known_of(r), .fenced = TRUE, .op = OP_ISOLATE, .att = &r->att,
                     .now_ns = now_ns(x) };
    ledger_write(&iso);
}

/* Step 4b: an ACK with publishes queued is an ACK only once every one of
 * them has its pub-ack (docs/forwarding.md); they go in order, and the
 * first failure stops the rest (the redelivery sends them all again, each
 * under the same Nats-Msg-Id). */
static void send_publishes(JetExecutor *x, Run *r)
{
    GPtrArray *items = r->jm.publishes.items;
    if (r->f.verdict != JET_ACK || r->f.reason_too_long || r->jm.publishes.refused != NULL || items == NULL)
        return;
    /* Part of every publish's id: without it a redelivery could not give
     * the same ids, so nothing is sent. */
    gint64 created = x->t->stream_created(x->td);
    if (created <= 0) {
        r->publish_failed = g_strdup("the origin stream's creation time cannot be read (it is part of each "
                                     "publish's Nats-Msg-Id); nothing was sent");
        JET_STAT_ADD(r->d->stats, publish_failures, 1);
        return;
    }
    for (guint i = 0; i < items->len; i++) {
        g_autofree char *id = jet_publish_msg_id(r->d->stream, r->d->consumer, r->d->stream_seq, created, i);
        g_autoptr(GError) err = NULL;
        gboolean duplicate = FALSE;
        if (!x->t->publish(x->td, r->d, g_ptr_array_index(items, i), id, &duplicate, &err)) {
            r->publish_failed = g_strdup_printf("publish %u of %u to %s: %s", i + 1, items->len,
                                                ((JetPublish *)g_ptr_array_index(items, i))->subject,
                                                err != NULL ? err->message : "no answer");
            JET_STAT_ADD(r->d->stats, publish_failures, 1);
            return;
        }
        JET_STAT_ADD(r->d->stats, published, 1);
        r->published++;
        if (duplicate)
            r->duplicates++;
    }
}

/* Step 4a: the decision before the handler.  FALSE when it settled the
 * delivery without one (r->a set). */
static gboolean decide_before(JetExecutor *x, Run *r)
{
    r->f = (JetSettleFacts){
        .verdict = -1,
        .deliveries = r->jm.deliveries,
        .has_enqueued = r->jm.has_enqueued,
        .enqueued_ns = r->jm.enqueued_ns,
        .now_ns = now_ns(x),
        .failures = r->jm.failures,
        .postpones = r->jm.postpones,
        .strikes = r->att.strikes,
        .suspect = r->alone,
        .breaker_claim = breaker_claims(x, r),
        .malformed_headers = r->d->malformed,
        .malformed_entry = r->not_kv,
        .hops = r->d->hdrs != NULL ? jet_hops_read(r->d->hdrs->headers) : 0,
    };
    x->t->enter(x->td, r->d, r->alone);
    if (jet_settle_before_handle(x->policy, &r->f, &r->a))
        return FALSE;
    if (r->alone)
        isolate(x, r);
    if (r->d->enqueued_ns > 0) {
        /* Wall clocks of two machines: a skewed one reads as no wait at all. */
        gint64 waited_us = (r->f.now_ns - r->d->enqueued_ns) / 1000;
        JET_STAT_OBSERVE(r->d->stats, latency_us, MAX(waited_us, 0));
    }
    return TRUE;
}

/* Step 4c: the plugin's verdict, its publishes, the decision after. */
static void decide_after(JetExecutor *x, Run *r, int verdict)
{
    r->f.verdict = verdict;
    r->handled = TRUE;
    r->f.has_delay = r->jm.has_delay;
    r->f.delay_ms = r->jm.delay_ms;
    r->f.reason_too_long = r->jm.reason_too_long;
    r->f.reason = r->jm.has_reason ? r->jm.reason : NULL;
    r->f.publish_refused = r->jm.publishes.refused;
    send_publishes(x, r);
    r->f.publish_failed = r->publish_failed;
    r->f.now_ns = now_ns(x);
    jet_settle_decide(x->policy, &r->f, &r->a);
}

/* Step 4: the decision before the handler, the plugin (4b), the decision
 * after. */
static void decide(JetExecutor *x, Run *r)
{
    if (!decide_before(x, r))
        return;
    gint64 began_us = g_get_monotonic_time();
    int verdict = x->t->handle(x->td, r->d, &r->jm);
    JET_STAT_OBSERVE(r->d->stats, handler_us, g_get_monotonic_time() - began_us);
    decide_after(x, r, verdict);
}

/* --- capture-then-ack ------------------------------------------------------ */

/* Whether the server will deliver this message again (finite MaxDeliver). */
static gboolean deliveries_remain(const JetExecutor *x, guint32 deliveries)
{
    return x->policy->max_deliver <= 0 || (gint64)deliveries < x->policy->max_deliver;
}

static guint64 last_rung_ms(const JetExecutor *x)
{
    return x->policy->rungs_ms[x->policy->n_rungs - 1];
}

/* Keeps a message the host could not capture: a delayed NAK while the
 * server will deliver it again, else Stranded (logged with what to do). */
static CaptureResult keep_uncaptured(JetExecutor *x, const JetDelivery *d, const JetCaptureFacts *facts,
                                     gboolean stale, const char *what, const char *why)
{
    JetLogField lf[3];
    if (!stale && deliveries_remain(x, facts->deliveries)) {
        x->t->nak(x->td, d, last_rung_ms(x));
        JET_STAT_ADD(d->stats, capture_failed, 1);
        xlog_fields(x, JET_LOG_ERROR, "capture-failed", lf, capture_fields(lf, facts),
                "stream seq %" G_GUINT64_FORMAT " delivery %u: %s: %s; kept on the consumer, tried again in %"
                G_GUINT64_FORMAT " ms", facts->stream_seq, facts->deliveries, what, why, last_rung_ms(x));
        return CAPTURE_KEPT;
    }
    JET_STAT_ADD(d->stats, stranded, 1);
    xlog_fields(x, JET_LOG_ERROR, "stranded", lf, capture_fields(lf, facts),
            "stream seq %" G_GUINT64_FORMAT " delivery %u: %s: %s; this was its last delivery (MaxDeliver %"
            G_GINT64_FORMAT "), so it is STRANDED: never acked, never dead-lettered. To recover it, fix the "
            "dead-letter stream %s (subject %s), then read it from stream %s at seq %" G_GUINT64_FORMAT
            " and republish it", facts->stream_seq, facts->deliveries, what, why, x->policy->max_deliver,
            x->b->dlq_stream, x->b->dlq_subject, x->b->stream, facts->stream_seq);
    return CAPTURE_STRANDED;
}

/* The capture's pub-ack came: the original is acked with confirmation. */
static CaptureResult ack_captured(JetExecutor *x, const JetDelivery *d, const JetCaptureFacts *facts,
                                  gboolean duplicate)
{
    JetLogField lf[3];
    g_autoptr(GError) err = NULL;
    if (x->t->ack_confirmed(x->td, d, &err)) {
        JET_STAT_ADD(d->stats, dead_lettered, 1);
        JET_STAT_ADD(d->stats, dead_lettered_cause[facts->cause < JET_STATS_CAUSES ? facts->cause : 0], 1);
        xlog_fields(x, JET_LOG_WARNING, "dead-lettered", lf, capture_fields(lf, facts),
                "stream seq %" G_GUINT64_FORMAT " delivery %u: captured to %s (cause %s%s%s)%s, then acked",
                facts->stream_seq, facts->deliveries, x->b->dlq_subject, jet_cause_name(facts->cause),
                facts->reason != NULL && *facts->reason ? ": " : "", facts->reason != NULL ? facts->reason : "",
                duplicate ? " as a duplicate of an earlier capture" : "");
        return CAPTURE_ACKED;
    }
    if (facts->cause == JET_CAUSE_MALFORMED) {
        /* Without readable metadata there is no floor to check and no
         * Msg-Id to de-duplicate a second capture: an operator must look. */
        JET_STAT_ADD(d->stats, stranded, 1);
        xlog_fields(x, JET_LOG_ERROR, "stranded", lf, capture_fields(lf, facts),
                "a malformed delivery (reply '%s') was dead-lettered to %s, but it cannot be acked: %s. "
                "STRANDED: the record in %s carries its payload and reply subject; if the server "
                "delivers it again it is captured again",
                facts->reply != NULL ? facts->reply : "", x->b->dlq_stream,
                err != NULL ? err->message : "no reply", x->b->dlq_stream);
        return CAPTURE_STRANDED;
    }
    JET_STAT_ADD(d->stats, uncertain, 1);
    xlog_fields(x, JET_LOG_ERROR, "uncertain", lf, capture_fields(lf, facts),
            "stream seq %" G_GUINT64_FORMAT ": dead-lettered to %s (%s), but the ack was not confirmed: %s. "
            "UNCERTAIN: if the consumer's ack floor passes %" G_GUINT64_FORMAT " it is done; if it is "
            "delivered again it is captured again and the duplicate is discarded by Nats-Msg-Id",
            facts->stream_seq, x->b->dlq_stream, duplicate ? "a duplicate of an earlier capture" : "new record",
            err != NULL ? err->message : "no reply", facts->stream_seq);
    return CAPTURE_UNCERTAIN;
}

/* Publishes the record, waits for its pub-ack, then acks with
 * confirmation (docs/dead-letters.md).  CAPTURE_ACKED: the original was
 * acked (its ledger record can go); CAPTURE_KEPT: NAK'd for another try
 * (the ledger must explain that redelivery). */
static CaptureResult capture_then_ack(JetExecutor *x, const JetDelivery *d, JetCaptureFacts *facts, gboolean stale,
                                      JetCaptureOutcome *outcome)
{
    JetLogField lf[3];
    *outcome = JET_CAPTURE_FAILED;
    if (facts->stream_seq > 0) {
        facts->stream_created_ns = x->t->stream_created(x->td);
        if (facts->stream_created_ns <= 0)
            return keep_uncaptured(x, d, facts, stale, "capture not built",
                                   "the origin stream's creation time (part of the record's id) cannot be read");
    }
    g_autoptr(GError) err = NULL;
    gboolean duplicate = FALSE;
    *outcome = x->t->capture(x->td, d, facts, &duplicate, &err);
    if (*outcome == JET_CAPTURE_TOO_LARGE) {
        JET_STAT_ADD(d->stats, stranded, 1);
        xlog_fields(x, JET_LOG_ERROR, "stranded", lf, capture_fields(lf, facts),
                "stream seq %" G_GUINT64_FORMAT ": too-large: %s; never truncated, never acked. It stays "
                "on the consumer: raise the dead-letter stream's limits or handle it by hand",
                facts->stream_seq, err != NULL ? err->message : "");
        if (!stale && deliveries_remain(x, facts->deliveries)) {
            x->t->nak(x->td, d, last_rung_ms(x));
            return CAPTURE_KEPT;
        }
        return CAPTURE_STRANDED;
    }
    if (*outcome != JET_CAPTURE_CAPTURED)
        return keep_uncaptured(x, d, facts, stale, "capture failed", err != NULL ? err->message : "no pub-ack");
    return ack_captured(x, d, facts, duplicate);
}

void jet_executor_capture_malformed(JetExecutor *x, const JetDelivery *d, const char *reply)
{
    const jet_plugin *desc = jet_instance_descriptor(x->inst);
    JetCaptureFacts facts = {
        .stream = x->b->stream,
        .consumer = x->b->consumer,
        .subject = d->subject,
        .reply = reply,
        .cause = JET_CAUSE_MALFORMED,
        .reason = "the delivery's $JS.ACK reply subject could not be parsed",
        .captured_ns = now_ns(x),
        .plugin_name = desc->name,
        .plugin_version = desc->version,
        .host = x->host_name,
        .binding = x->b->name,
        .ttl_s = x->b->dlq_ttl_ms / 1000,
    };
    JetLogField lf[3];
    xlog_fields(x, JET_LOG_ERROR, "malformed", lf, capture_fields(lf, &facts),
            "a delivery with reply subject '%s' does not parse; dead-lettering it with cause malformed",
            reply != NULL ? reply : "");
    if (reply == NULL || *reply == '\0') {
        JET_STAT_ADD(d->stats, stranded, 1);
        return;
    }
    JetCaptureOutcome outcome;
    capture_then_ack(x, d, &facts, FALSE, &outcome);
    JET_STAT_ADD(d->stats, messages, 1);
}

/* --- step 5: the action -------------------------------------------------- */

static void act_ack(JetExecutor *x, Run *r)
{
    const JetDelivery *d = r->d;
    if (r->alone) {
        /* The marker goes first: a death after this earns no strike. */
        ledger_forget(x, d, NULL);
        x->t->ack(x->td, d, JET_TRANSPORT_ACK_NOW);
    } else if (!r->have_rec) {
        /* The fast path: nothing to forget after it, so the ack may wait a
         * moment to go with the next ones. */
        x->t->ack(x->td, d, JET_TRANSPORT_ACK_SOON);
    } else {
        x->t->ack(x->td, d, JET_TRANSPORT_ACK_NOW);
        ledger_forget(x, d, known_of(r));
    }
    JET_STAT_ADD(d->stats, acked, 1);
}

/* RETRY and POSTPONE: the count written, then the delayed NAK. */
static void act_nak(JetExecutor *x, Run *r)
{
    const JetDelivery *d = r->d;
    const JetSettleAction *a = &r->a;
    if (a->kind == JET_ACTION_RETRY)
        JET_STAT_ADD(d->stats, handler_failed, 1);
    if (r->stale) {
        /* The server has handed it to someone else by now: a NAK would
         * release their delivery, and a ledger write would count an
         * attempt twice (docs/engine.md, "The lease fence"). */
        JetLogField lf[3];
        xlog_fields(x, JET_LOG_WARNING, "stale-result",
                    lf, settle_fields(lf, r->jm.stream_seq, r->jm.deliveries, NULL),
                "stream seq %" G_GUINT64_FORMAT ": %s after the lease lapsed; not released, not recorded",
                r->jm.stream_seq, jet_action_name(a->kind));
        return;
    }
    /* Every retry and every postpone is written: the op and, for a
     * suspect, the survived marker (docs/retries.md). */
    Mutation mu = { .x = x, .d = d, .known = known_of(r), .fenced = TRUE,
                    .op = a->kind == JET_ACTION_RETRY ? OP_FAILURE : OP_POSTPONE,
                    .att = &r->att, .alone = r->alone, .now_ns = r->settled_ns, .reason = a->reason };
    ledger_write(&mu);
    x->t->nak(x->td, d, a->delay_ms);
    if (a->kind == JET_ACTION_RETRY)
        JET_STAT_ADD(d->stats, retried, 1);
    else
        JET_STAT_ADD(d->stats, postponed, 1);
    JetLogField lf[3];
    xlog_fields(x, JET_LOG_INFO, jet_action_name(a->kind), lf,
                settle_fields(lf, r->jm.stream_seq, r->jm.deliveries, NULL),
            "stream seq %" G_GUINT64_FORMAT " delivery %u: %s in %" G_GUINT64_FORMAT " ms%s%s",
            r->jm.stream_seq, r->jm.deliveries, jet_action_name(a->kind), a->delay_ms,
            a->reason[0] ? ": " : "", a->reason);
}

static void act_capture(JetExecutor *x, Run *r, JetExecuted *out)
{
    const JetDelivery *d = r->d;
    if (r->alone && r->handled) {
        /* The marker goes first (a death after this earns no strike); the
         * record itself stays until the capture is acked: a capture that
         * fails must not lose the message's failures.  A suspect captured
         * before it ran survived nothing: its deaths stay unexplained, so a
         * retried capture still finds a suspect. */
        Mutation clr = { .x = x, .d = d, .known = known_of(r), .fenced = TRUE, .op = OP_SURVIVED, .att = &r->att,
                         .alone = TRUE, .now_ns = r->settled_ns };
        ledger_write(&clr);
    }
    const jet_plugin *desc = jet_instance_descriptor(x->inst);
    JetCaptureFacts facts = {
        .stream = d->stream,
        .consumer = d->consumer,
        .subject = d->subject,
        .stream_seq = d->stream_seq,
        .deliveries = r->jm.deliveries,
        .postpones = r->jm.postpones,
        .strikes = r->att.strikes,
        .has_enqueued = r->jm.has_enqueued,
        .enqueued_ns = r->jm.enqueued_ns,
        .plugin_name = desc->name,
        .plugin_version = desc->version,
        .host = x->host_name,
        .binding = x->b->name,
        .ttl_s = x->b->dlq_ttl_ms / 1000,
        .kv_key = r->jm.kv_key,
        .kv_op = r->jm.kv_key != NULL ? jet_kv_op_name((jet_kv_op)r->jm.kv_op) : NULL,
    };
    jet_capture_facts_settled(&facts, &r->a, r->jm.failures, r->jm.has_first_failure, r->jm.first_failure_ns,
                              r->settled_ns);
    CaptureResult cr = capture_then_ack(x, d, &facts, r->stale, &out->capture);
    r->captured = cr;
    out->captured = cr == CAPTURE_ACKED;
    if (!out->captured)
        out->capture_again_ms = last_rung_ms(x);
    if (cr == CAPTURE_ACKED && (r->have_rec || r->alone)) {
        ledger_forget(x, d, r->alone ? NULL : known_of(r));
    } else if (cr == CAPTURE_KEPT) {
        /* The host gave it back for another try: its next delivery is
         * explained, not a crash (no suspect), and its failures stay. */
        Mutation kept = { .x = x, .d = d, .known = known_of(r), .fenced = TRUE, .op = OP_RELEASE,
                          .now_ns = r->settled_ns };
        ledger_write(&kept);
    }
}

/* --- step 7: the plugin told how it ended ------------------------------------ */

static void tell_settled(JetExecutor *x, const Run *r)
{
    jet_settled s = {
        .struct_size = sizeof s,
        .handled = r->handled ? 1 : 0,
        .verdict = r->handled ? r->f.verdict : -1,
        .stream_seq = r->jm.stream_seq,
        .deliveries = r->jm.deliveries,
        .reason = r->a.reason,
    };
    switch (r->a.kind) {
    case JET_ACTION_ACK:
        s.outcome = JET_SETTLED_ACKED;
        /* Publishes count only once the ack they wait for is decided. */
        s.published = r->published;
        s.duplicates = r->duplicates;
        break;
    case JET_ACTION_RETRY:
    case JET_ACTION_POSTPONE:
        s.outcome = r->stale ? JET_SETTLED_UNSETTLED
                  : r->a.kind == JET_ACTION_RETRY ? JET_SETTLED_RETRIED : JET_SETTLED_POSTPONED;
        s.delay_ms = r->stale ? 0 : r->a.delay_ms;
        break;
    case JET_ACTION_CAPTURE:
        if (r->stale && r->captured != CAPTURE_ACKED && deliveries_remain(x, r->jm.deliveries)) {
            s.outcome = JET_SETTLED_UNSETTLED;   /* its lease lapsed: the server delivers it again */
            break;
        }
        switch (r->captured) {
        case CAPTURE_ACKED: s.outcome = JET_SETTLED_DEAD_LETTERED; break;
        case CAPTURE_KEPT:
            s.outcome = JET_SETTLED_UNSETTLED;
            s.delay_ms = last_rung_ms(x);   /* keep_uncaptured()'s NAK */
            break;
        case CAPTURE_STRANDED: s.outcome = JET_SETTLED_STRANDED; break;
        case CAPTURE_UNCERTAIN: s.outcome = JET_SETTLED_UNCERTAIN; break;
        }
        break;
    }
    if (x->t->gone != NULL && x->t->gone(x->td))
        return;   /* a host that died says nothing */
    jet_instance_settled(x->inst, &s);
}

/* --- one delivery ---------------------------------------------------------- */

static void show_delivery(const JetExecutor *x, const JetDelivery *d, Run *r)
{
    jet_msg *jm = &r->jm;
    memset(jm, 0, sizeof *jm);
    jm->headers = d->hdrs != NULL ? d->hdrs->headers : NULL;
    jm->subject = d->subject;
    jm->data = d->data;
    jm->len = d->len;
    jm->stream = d->stream;
    jm->consumer = d->consumer;
    jm->stream_seq = d->stream_seq;
    jm->consumer_seq = d->consumer_seq;
    jm->deliveries = d->deliveries;
    jm->has_enqueued = d->enqueued_ns > 0;
    jm->enqueued_ns = d->enqueued_ns;
    jm->kind = (int)x->b->kind;
    jm->ctx = x->inst;
    jm->publish_reserved = x->b->publish_reserved;
    if (x->b->kind == JET_KIND_KV && d->malformed == NULL) {
        JetKvEntry e;
        if (jet_kv_entry_read(x->b->bucket, d->subject, jm->headers, &e, &r->not_kv)) {
            jm->kv_key = e.key;
            jm->kv_op = (int)e.op;
            jm->kv_revision = d->stream_seq;
        }
    }
    jet_msg_reset_verdict(jm);
}

/* Steps 1 and 2 for one delivery. */
static void prepare(JetExecutor *x, const JetDelivery *d, Run *r)
{
    memset(r, 0, sizeof *r);
    r->d = d;
    show_delivery(x, d, r);
    read_ledger(x, r);
    attribute(x, r);
}

/* Steps 5 to 7 once decided, and what out reports. */
static void conclude(JetExecutor *x, Run *r, JetExecuted *out)
{
    const JetDelivery *d = r->d;
    memset(out, 0, sizeof *out);
    r->stale = x->t->release_hold(x->td, d);
    /* After a handler, the clock the decision read (after it and its
     * publishes): a settlement is that moment's, and one read of the clock
     * fewer a message on the hot path.  One settled without the handler
     * may be concluded long after its decision (behind a batch). */
    r->settled_ns = r->handled ? r->f.now_ns : now_ns(x);

    switch (r->a.kind) {
    case JET_ACTION_ACK:
        act_ack(x, r);
        break;
    case JET_ACTION_RETRY:
    case JET_ACTION_POSTPONE:
        act_nak(x, r);
        break;
    case JET_ACTION_CAPTURE:
        act_capture(x, r, out);
        break;
    }
    tell_settled(x, r);
    x->t->leave(x->td, d, r->alone);
    JET_STAT_ADD(d->stats, messages, 1);

    out->action = r->a;
    out->facts = r->f;
    if (r->f.reason != NULL) {
        g_strlcpy(out->reason, r->f.reason, sizeof out->reason);
        out->facts.reason = out->reason;
    }
    out->handled = r->handled;
    out->verdict = r->handled ? r->f.verdict : -1;
    out->stale = r->stale;
    out->suspect = r->alone;
    /* Freed below: the reason holds what the settlement needs of them. */
    out->facts.malformed_entry = NULL;
    out->publish_refused = r->jm.publishes.refused != NULL && r->handled;
    out->facts.publish_refused = NULL;
    out->facts.publish_failed = NULL;
    g_free(r->not_kv);
    g_free(r->publish_failed);
    jet_publish_queue_clear(&r->jm.publishes);
}

void jet_executor_deliver(JetExecutor *x, const JetDelivery *d, JetExecuted *out)
{
    JetExecuted local;
    Run r;
    prepare(x, d, &r);
    decide(x, &r);
    conclude(x, &r, out != NULL ? out : &local);
}

struct JetExecutorPending {
    Run r;
};

JetExecutorPending *jet_executor_pending_new(JetExecutor *x, const JetDelivery *d)
{
    JetExecutorPending *p = g_new(JetExecutorPending, 1);
    prepare(x, d, &p->r);
    return p;
}

gboolean jet_executor_run_async(JetExecutor *x, JetExecutorPending *p, JetExecuted *out)
{
    JetExecuted local;
    Run *r = &p->r;
    if (decide_before(x, r)) {
        r->began_us = g_get_monotonic_time();
        int verdict = x->t->handle(x->td, r->d, &r->jm);
        if (verdict == JET_PENDING)
            return TRUE;   /* p is its completion's now, maybe settled already */
        JET_STAT_OBSERVE(r->d->stats, handler_us, g_get_monotonic_time() - r->began_us);
        decide_after(x, r, verdict);
    }
    conclude(x, r, out != NULL ? out : &local);
    g_free(p);
    return FALSE;
}

void jet_executor_complete(JetExecutor *x, JetExecutorPending *p, int verdict, const char *why, JetExecuted *out)
{
    JetExecuted local;
    Run *r = &p->r;
    JET_STAT_OBSERVE(r->d->stats, handler_us, g_get_monotonic_time() - r->began_us);
    if (why != NULL) {
        jet_publish_queue_clear(&r->jm.publishes);
        jet_msg_reset_verdict(&r->jm);
        g_strlcpy(r->jm.reason, why, sizeof r->jm.reason);
        r->jm.has_reason = TRUE;
        verdict = JET_RETRY;
    }
    decide_after(x, r, verdict);
    conclude(x, r, out != NULL ? out : &local);
    g_free(p);
}

/* Step 4 for a batch, rs[0..n-1]: the decision before the handler for
 * each (through[i]: it goes to the plugin), then one handle_batch() call
 * for those it lets through, each verdict left in verdicts[i].  A batch that
 * failed as a whole makes each a RETRY saying so, with nothing it queued
 * sent.  One the decision settled without the handler is concluded here
 * into early[i] when early is given (else the caller concludes it in its
 * turn).  The decision after the handler is the caller's. */
static void batch_handle(JetExecutor *x, Run *const *rs, guint n, gboolean *through, int *verdicts,
                         JetExecuted *early)
{
    g_autofree const JetDelivery **bd = g_new(const JetDelivery *, n);
    g_autofree jet_msg **bm = g_new(jet_msg *, n);
    g_autofree int *bv = g_new(int, n);
    guint k = 0;
    for (guint i = 0; i < n; i++) {
        through[i] = decide_before(x, rs[i]);
        if (!through[i]) {
            if (early != NULL)
                conclude(x, rs[i], &early[i]);
            continue;
        }
        bd[k] = rs[i]->d;
        bm[k] = &rs[i]->jm;
        bv[k] = JET_RETRY;
        k++;
    }
    if (k == 0)
        return;
    gint64 began_us = g_get_monotonic_time();
    int rc = x->t->handle_batch(x->td, bd, bm, k, bv);
    /* One handler run, one observation. */
    JET_STAT_OBSERVE(bd[0]->stats, handler_us, g_get_monotonic_time() - began_us);
    for (guint i = 0, j = 0; i < n; i++) {
        if (!through[i])
            continue;
        Run *r = rs[i];
        verdicts[i] = bv[j++];
        if (rc != 0) {
            jet_publish_queue_clear(&r->jm.publishes);
            jet_msg_reset_verdict(&r->jm);
            g_snprintf(r->jm.reason, sizeof r->jm.reason, "handle_batch() returned %d for the batch of %u", rc, k);
            r->jm.has_reason = TRUE;
            verdicts[i] = JET_RETRY;
        }
    }
}

void jet_executor_deliver_batch(JetExecutor *x, const JetDelivery *const *ds, guint n, JetExecuted *outs)
{
    g_return_if_fail(n >= 1 && x->t->handle_batch != NULL);
    g_autofree Run *runs = g_new(Run, n);
    g_autofree JetExecuted *local = outs == NULL ? g_new(JetExecuted, n) : NULL;
    if (outs == NULL)
        outs = local;
    for (guint i = 0; i < n; i++)
        prepare(x, ds[i], &runs[i]);
    /* A delivery after the first runs on its own, through handle(): a
     * batch that killed the host comes back one message at a time (each a
     * suspect, alone), which finds the one that did, and a message that
     * failed, or failed its batch, cannot fail other messages again
     * (docs/batches.md). */
    g_autofree Run **rs = g_new(Run *, n);
    g_autofree guint *which = g_new(guint, n);
    guint k = 0;
    for (guint i = 0; i < n; i++) {
        Run *r = &runs[i];
        if (r->alone || r->jm.deliveries > 1) {
            decide(x, r);
            conclude(x, r, &outs[i]);
            continue;
        }
        which[k] = i;
        rs[k++] = r;
    }
    if (k == 0)
        return;
    g_autofree gboolean *through = g_new(gboolean, k);
    g_autofree int *verdicts = g_new(int, k);
    g_autofree JetExecuted *early = g_new(JetExecuted, k);
    batch_handle(x, rs, k, through, verdicts, early);
    for (guint j = 0; j < k; j++) {
        if (!through[j]) {
            outs[which[j]] = early[j];
            continue;
        }
        decide_after(x, rs[j], verdicts[j]);
        conclude(x, rs[j], &outs[which[j]]);
    }
}

/* A batch member behind one that waits in place: nothing of its verdict is
 * acted on (no publish, no ledger write, no settled()); it leaves the
 * host's frame as it entered it, to be handed again. */
static void set_aside(JetExecutor *x, Run *r, gboolean through, int verdict, JetExecuted *out)
{
    memset(out, 0, sizeof *out);
    x->t->release_hold(x->td, r->d);
    x->t->leave(x->td, r->d, r->alone);
    JET_STAT_ADD(r->d->stats, set_aside, 1);
    out->set_aside = TRUE;
    out->handled = through;
    out->verdict = through ? verdict : -1;
    g_free(r->not_kv);
    jet_publish_queue_clear(&r->jm.publishes);
}

guint jet_executor_deliver_batch_in_order(JetExecutor *x, const JetDelivery *const *ds, guint n, JetExecuted *outs)
{
    g_return_val_if_fail(n >= 1 && x->t->handle_batch != NULL && outs != NULL, 0);
    g_autofree Run *runs = g_new(Run, n);
    g_autofree Run **rs = g_new(Run *, n);
    for (guint i = 0; i < n; i++) {
        prepare(x, ds[i], &runs[i]);
        rs[i] = &runs[i];
    }
    g_autofree gboolean *through = g_new(gboolean, n);
    g_autofree int *verdicts = g_new(int, n);
    for (guint i = 0; i < n; i++)
        verdicts[i] = -1;   /* one the decision settles before the handler has none */
    batch_handle(x, rs, n, through, verdicts, NULL);
    guint settled = 0;
    gboolean waits = FALSE;   /* the last one settled waits in place */
    for (guint i = 0; i < n; i++) {
        Run *r = rs[i];
        if (waits) {
            set_aside(x, r, through[i], verdicts[i], &outs[i]);
            continue;
        }
        if (through[i])
            decide_after(x, r, verdicts[i]);
        conclude(x, r, &outs[i]);
        settled++;
        waits = jet_executed_waits(&outs[i]);
        if (waits && i + 1 < n)
            xlog(x, JET_LOG_INFO, "batch-set-aside",
                 "stream seq %" G_GUINT64_FORMAT " waits in place (%s): the %u after it in its batch are handed "
                 "again once it is settled", r->jm.stream_seq, jet_action_name(outs[i].action.kind), n - i - 1);
    }
    return settled;
}

gboolean jet_executed_waits(const JetExecuted *done)
{
    JetActionKind k = done->action.kind;
    return k == JET_ACTION_RETRY || k == JET_ACTION_POSTPONE || (k == JET_ACTION_CAPTURE && !done->captured);
}
