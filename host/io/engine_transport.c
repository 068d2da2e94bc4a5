/* The engine's side of the settlement executor (executor.h): the
 * transport on nats.c, and the step before it, reading a delivery off the
 * wire.  The sequence itself is host/core/executor.c, the mock host's too. */
#include "engine_private.h"
#include "stream_info.h"
#include "msg_payload.h"
#include "breaker_claim.h"
#include "capture.h"
#include "conn.h"
#include "errors.h"
#include "executor.h"
#include "jet_msg.h"
#include "lane_key.h"
#include "hdr_block.h"
#include "log.h"
#include "nats_raw.h"
#include "stream_msg.h"

#include <stdio.h>
#include <string.h>

static Item *item_of(const JetDelivery *d)
{
    return d->token;
}

static const char *reply_of(const JetDelivery *d)
{
    return natsMsg_GetReply(item_of(d)->msg);
}

/* --- the ledger and the lease -------------------------------------------- */

static JetLedgerStatus t_ledger_get(gpointer t, const JetDelivery *d, JetLedgerRecord *out, GError **error)
{
    JetEngine *e = t;
    return jet_ledger_get(e->ledger, d->stream, d->consumer, d->stream_seq, out, error);
}

static JetLedgerStatus t_ledger_update(gpointer t, const JetDelivery *d, const JetLedgerRecord *known,
                                       JetLedgerMutateFn mutate, gpointer mutate_data, JetLedgerRecord *out,
                                       GError **error)
{
    JetEngine *e = t;
    return jet_ledger_update_from(e->ledger, d->stream, d->consumer, d->stream_seq, known, mutate, mutate_data, out,
                                  error);
}

static JetLedgerStatus t_ledger_delete(gpointer t, const JetDelivery *d, guint64 revision, GError **error)
{
    JetEngine *e = t;
    if (revision > 0)
        return jet_ledger_forget(e->ledger, d->stream, d->consumer, d->stream_seq, revision, error);
    return jet_ledger_delete(e->ledger, d->stream, d->consumer, d->stream_seq, error);
}

static gboolean t_lease_lapsed(gpointer t, const JetDelivery *d)
{
    JetEngine *e = t;
    Item *it = item_of(d);
    if (it == NULL)
        return FALSE;
    g_mutex_lock(&e->lease_lock);
    gboolean stale = it->stale;
    g_mutex_unlock(&e->lease_lock);
    return stale;
}

/* --- the breaker ---------------------------------------------------------- */

/* TRUE when an enforcing breaker claimed this message (capture it). */
static gboolean t_breaker(gpointer t, const JetDelivery *jm, const JetLedgerRecord *rec)
{
    JetEngine *e = t;
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
    if (enforce)
        jet__breaker_pause(e);
    return enforce;
}

/* --- the handler's frame ------------------------------------------------- */

static void t_enter(gpointer t, const JetDelivery *d, gboolean alone)
{
    JetEngine *e = t;
    if (alone)
        jet__suspect_begin(e);
    jet__gate_enter(e, item_of(d), alone);
}

/* A host call through a handle whose handle() had returned: refused by the
 * host table, counted here.  It runs under the handle table's lock, which a
 * worker takes to drop its slot as it exits, so e (freed only after its
 * workers are joined) is alive. */
static void stale_handle_used(gpointer data, const char *fn)
{
    JetEngine *e = data;
    if (strcmp(fn, "msg_complete") == 0)
        JET_STAT_ADD(&e->shared_stats, completions_refused, 1);
    else
        JET_STAT_ADD(&e->shared_stats, stale_handles, 1);
}

static int t_handle(gpointer t, const JetDelivery *d, jet_msg *jm)
{
    JetEngine *e = t;
    Item *it = item_of(d);
    /* The claim's fence once more, right before the plugin: a pause that
     * began after the worker's own check (engine_fence.c) ends here, not
     * in a handler.  Should the binding stop meanwhile, the message goes
     * back as a retry that names why: it was never handled here. */
    if (!jet__fence_wait(e)) {
        static const char why[] = "the exclusive claim was lost before the handler ran (docs/exclusive.md)";
        g_strlcpy(jm->reason, why, sizeof jm->reason);
        jm->has_reason = TRUE;
        return JET_RETRY;
    }
    g_mutex_lock(&e->lease_lock);
    it->handler_since_us = now_us();
    g_mutex_unlock(&e->lease_lock);
    /* The plugin gets a handle, not jm: jm's frame is the next delivery's,
     * and a kept pointer must not reach it (jet_msg.h). */
    const JetMsgOwner owner = { .binding = e->b->name, .plugin = jet_instance_descriptor(e->inst)->name,
                                .stale = stale_handle_used, .data = e };
    if (it->pending != NULL)
        return e->handle_pending(e, it, jm, &owner);   /* max_in_flight: engine_async.c */
    jet_msg *lent = jet_msg_lend(jm, &owner);
    int verdict = jet_instance_handle(e->inst, lent);
    jet_msg_unlend(lent);
    return verdict;
}

/* A handler batch: handle()'s fence and lending, for n messages at once. */
static int t_handle_batch(gpointer t, const JetDelivery *const *ds, jet_msg *const *ms, guint n, int *verdicts)
{
    JetEngine *e = t;
    if (!jet__fence_wait(e)) {
        static const char why[] = "the exclusive claim was lost before the handler ran (docs/exclusive.md)";
        for (guint i = 0; i < n; i++) {
            g_strlcpy(ms[i]->reason, why, sizeof ms[i]->reason);
            ms[i]->has_reason = TRUE;
            verdicts[i] = JET_RETRY;
        }
        return 0;
    }
    gint64 now = now_us();
    g_mutex_lock(&e->lease_lock);
    for (guint i = 0; i < n; i++)
        item_of(ds[i])->handler_since_us = now;
    g_mutex_unlock(&e->lease_lock);
    const JetMsgOwner owner = { .binding = e->b->name, .plugin = jet_instance_descriptor(e->inst)->name,
                                .stale = stale_handle_used, .data = e };
    g_autofree jet_msg **lent = g_new(jet_msg *, n);
    for (guint i = 0; i < n; i++)
        lent[i] = jet_msg_lend_nth(ms[i], &owner, i);
    int rc = jet_instance_handle_batch(e->inst, lent, n, verdicts);
    for (guint i = 0; i < n; i++)
        jet_msg_unlend(lent[i]);
    /* Out of the handler: each waits for its settlement after the ones
     * before it, which is no handler time (a hung one keeps its start, so
     * its release says the handler returned). */
    g_mutex_lock(&e->lease_lock);
    for (guint i = 0; i < n; i++) {
        Item *it = item_of(ds[i]);
        if (!it->stale && it->hung_logged_us == 0)
            it->handler_since_us = 0;
    }
    g_mutex_unlock(&e->lease_lock);
    return rc;
}

static gboolean t_release_hold(gpointer t, const JetDelivery *d)
{
    return jet__release_hold(t, item_of(d));
}

static void t_leave(gpointer t, const JetDelivery *d, gboolean alone)
{
    JetEngine *e = t;
    jet__progress(e);   /* each settlement, a batch's one by one */
    if (!jet__gate_left_for_it(e, item_of(d)))
        jet_isolation_leave(&e->isolation, alone);
    if (alone)
        jet__suspect_end(e);
}

/* --- settling with the server -------------------------------------------- */

static void t_ack(gpointer t, const JetDelivery *d, JetAckTiming timing)
{
    JetEngine *e = t;
    /* A completed pending delivery is settled off its worker, whose group
     * of acks is its own. */
    if (timing == JET_TRANSPORT_ACK_SOON && !item_of(d)->off_worker)
        jet__ack_soon(e, item_of(d));
    else
        jet__publish_ack(e, reply_of(d), "+ACK");
}

static void t_nak(gpointer t, const JetDelivery *d, guint64 delay_ms)
{
    jet__publish_nak_delay(t, reply_of(d), delay_ms);
}

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

/* The origin stream's creation time, read from stream info once and again
 * after a recovery or a reconnect (either may mean the stream was deleted
 * and re-created: jet__forget_stream_life).  0 when it cannot be read. */
static gint64 t_stream_created(gpointer t)
{
    JetEngine *e = t;
    gint64 v = __atomic_load_n(&e->stream_created_ns, __ATOMIC_RELAXED);
    if (v > 0)
        return v;
    jsStreamInfo *si = NULL;
    /* A leader's: a member's own, during an election, may be another
     * creation time, and every publish's id would change with it. */
    if (jet_stream_info_led(&si, jet_conn_js(e->conn), e->b->stream, 0, NULL, NULL) == NATS_OK) {
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
    JetStats *stats;
} StoreCtx;

static gboolean store_publish_failed(gpointer data, const GError *err)
{
    StoreCtx *c = data;
    (void)err;
    if (c->e->b->manage != JET_MANAGE_CREATE)
        return FALSE;
    g_autoptr(GError) ensure_err = NULL;
    if (!jet_dlq_stream_ensure(jet_conn_nats(c->e->conn), jet_conn_js(c->e->conn), c->e->b, &ensure_err))
        return FALSE;
    capture_max_payload(c->e, TRUE);
    return TRUE;
}

static void store_collision(gpointer data, const char *msg_id, guint64 dlq_seq, const char *why)
{
    StoreCtx *c = data;
    (void)dlq_seq;
    JET_STAT_ADD(c->stats, capture_collisions, 1);
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

static JetCaptureOutcome t_capture(gpointer t, const JetDelivery *d, JetCaptureFacts *facts, gboolean *duplicate,
                                   GError **error)
{
    JetEngine *e = t;
    StoreCtx ctx = { e, facts->stream_seq, d->stats };
    const JetCaptureHooks hooks = {
        .publish_failed = store_publish_failed,
        .collision = store_collision,
        .headers_dropped = store_headers_dropped,
        .data = &ctx,
    };
    JetCaptureStored stored;
    JetCaptureOutcome out = jet_capture_store(jet_conn_nats(e->conn), jet_conn_js(e->conn), e->b->dlq_subject,
                                              d->data, (int)MIN(d->len, (gsize)G_MAXINT), d->hdrs, facts, capture_max_payload(e, FALSE),
                                              CAPTURE_TIMEOUT_MS, &hooks, &stored, error);
    *duplicate = out == JET_CAPTURE_CAPTURED && stored.duplicate;
    return out;
}

static gboolean t_ack_confirmed(gpointer t, const JetDelivery *d, GError **error)
{
    JetEngine *e = t;
    return jet_ack_confirmed(jet_conn_nats(e->conn), reply_of(d), CAPTURE_TIMEOUT_MS, error);
}

/* One plugin publish, its block written by the host (the Msg-Id first, so
 * the server reads it), sent with no publish options (nats_raw.h). */
static gboolean t_publish(gpointer t, const JetDelivery *d, const JetPublish *p, const char *msg_id,
                          gboolean *duplicate, GError **error)
{
    JetEngine *e = t;
    g_autoptr(GPtrArray) hdrs = jet_publish_wire_headers(p, msg_id, d->hdrs != NULL ? jet_hops_read(d->hdrs->headers) : 0);
    gsize block_len = 0;
    g_autofree char *block = jet_hdr_write(hdrs, &block_len, error);
    if (block == NULL)
        return FALSE;
    gsize len = 0;
    const void *data = g_bytes_get_data(p->data, &len);
    jsPubAck *pa = NULL;
    if (!jet_js_publish_raw(jet_conn_js(e->conn), p->subject, block, block_len, data, len, &pa, error))
        return FALSE;
    *duplicate = pa != NULL && pa->Duplicate;
    jsPubAck_Destroy(pa);
    return TRUE;
}

const JetTransport jet__engine_transport = {
    .ledger_get = t_ledger_get,
    .ledger_update = t_ledger_update,
    .ledger_delete = t_ledger_delete,
    .lease_lapsed = t_lease_lapsed,
    .breaker = t_breaker,
    .enter = t_enter,
    .handle = t_handle,
    .handle_batch = t_handle_batch,
    .release_hold = t_release_hold,
    .leave = t_leave,
    .ack = t_ack,
    .nak = t_nak,
    .stream_created = t_stream_created,
    .capture = t_capture,
    .ack_confirmed = t_ack_confirmed,
    .publish = t_publish,
};

/* --- off the wire ------------------------------------------------------------ */

/* The delivery's header block as the server sent it, parsed by the host's
 * rules (docs/headers.md).  Returns NULL, or what makes the block unreadable
 * (the first defect, and how many there are; caller frees). */
char *jet__read_headers(JetEngine *e, natsMsg *m, guint64 stream_seq, JetHdrParse *out)
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

/* The delivery as the executor sees it.  stream and consumer are copied
 * out of the metadata (which points into the reply subject). */
void jet__delivery_init(JetEngine *e, JetDelivery *d, Item *it, const JetAckMeta *meta, char *stream,
                        char *consumer)
{
    natsMsg *m = it->msg;
    g_strlcpy(stream, meta->stream, MIN(JET_NAME_BUF, meta->stream_len + 1));
    g_strlcpy(consumer, meta->consumer, MIN(JET_NAME_BUF, meta->consumer_len + 1));
    *d = (JetDelivery){
        .subject = natsMsg_GetSubject(m),
        .stream = stream,
        .consumer = consumer,
        .stream_seq = meta->stream_seq,
        .consumer_seq = meta->consumer_seq,
        .deliveries = (guint32)MIN(meta->delivered, G_MAXUINT32),
        .enqueued_ns = MAX(meta->timestamp_ns, 0),
        .token = it,
        .stats = jet__stats_of(e, it),
    };
    d->data = jet_msg_payload(m, &d->len);
}

/* After a settlement: the tests' hook, and the debug line. */
void jet__settled(JetEngine *e, const JetDelivery *d, const JetExecuted *done)
{
    if (e->settle_hook != NULL)
        e->settle_hook(d->stream_seq, d->deliveries, &done->action, e->settle_hook_data);
    if (jet_log_enabled(JET_LOG_DEBUG))
        jet_log(JET_LOG_DEBUG, e->b->name, "settled", "seq %" G_GUINT64_FORMAT " %s delivery %u: %s%s%s%s%s",
                d->stream_seq, d->subject, d->deliveries, jet_action_name(done->action.kind),
                done->action.kind == JET_ACTION_CAPTURE ? " " : "",
                done->action.kind == JET_ACTION_CAPTURE ? jet_cause_name(done->action.cause) : "",
                done->stale ? " (stale)" : "", done->handled ? "" : " (handler not run)");
}

void jet__deliver(JetEngine *e, Item *it, const JetAckMeta *meta, JetExecuted *out)
{
    char stream[JET_NAME_BUF], consumer[JET_NAME_BUF];
    JetDelivery d;
    jet__delivery_init(e, &d, it, meta, stream, consumer);
    /* The header block first, before anything could make nats.c read it. */
    g_auto(JetHdrParse) hdrs = { 0 };
    g_autofree char *malformed = jet__read_headers(e, it->msg, meta->stream_seq, &hdrs);
    if (malformed == NULL && it->lane_ambiguous)
        malformed = jet_lane_key_ambiguous_reason(&e->b->lane_key);
    d.hdrs = &hdrs;
    d.malformed = malformed;

    JetExecuted local;
    JetExecuted *done = out != NULL ? out : &local;
    jet_executor_deliver(e->executor, &d, done);   /* its leave() marks the progress */
    jet__settled(e, &d, done);
}

/* One delivery of a batch, with what its JetDelivery borrows. */
typedef struct {
    JetDelivery d;
    char stream[JET_NAME_BUF], consumer[JET_NAME_BUF];
    JetHdrParse hdrs;
    char *malformed;
} BatchSlot;

void jet__deliver_batch(JetEngine *e, Item *const *items, const JetAckMeta *metas, guint n, JetExecuted *outs)
{
    g_autofree BatchSlot *bs = g_new0(BatchSlot, n);
    g_autofree const JetDelivery **dp = g_new(const JetDelivery *, n);
    g_autofree JetExecuted *local = outs == NULL ? g_new(JetExecuted, n) : NULL;
    JetExecuted *done = outs != NULL ? outs : local;
    for (guint i = 0; i < n; i++) {
        BatchSlot *b = &bs[i];
        jet__delivery_init(e, &b->d, items[i], &metas[i], b->stream, b->consumer);
        b->malformed = jet__read_headers(e, items[i]->msg, metas[i].stream_seq, &b->hdrs);
        if (b->malformed == NULL && items[i]->lane_ambiguous)
            b->malformed = jet_lane_key_ambiguous_reason(&e->b->lane_key);
        b->d.hdrs = &b->hdrs;
        b->d.malformed = b->malformed;
        dp[i] = &b->d;
    }
    jet_executor_deliver_batch(e->executor, dp, n, done);   /* each leave() marks the progress */
    for (guint i = 0; i < n; i++) {
        jet__settled(e, &bs[i].d, &done[i]);
        jet_hdr_parse_clear(&bs[i].hdrs);
        g_free(bs[i].malformed);
    }
}

void jet__capture_malformed(JetEngine *e, Item *it)
{
    natsMsg *m = it->msg;
    g_auto(JetHdrParse) hdrs = { 0 };
    jet__read_headers(e, m, 0, &hdrs);
    JetDelivery d = {
        .subject = natsMsg_GetSubject(m),
        .hdrs = &hdrs,
        .token = it,
        .stats = jet__stats_of(e, it),
    };
    d.data = jet_msg_payload(m, &d.len);
    jet_executor_capture_malformed(e->executor, &d, natsMsg_GetReply(m));
}

void jet__record_release(JetEngine *e, Item *it, const JetAckMeta *meta)
{
    char stream[JET_NAME_BUF], consumer[JET_NAME_BUF];
    JetDelivery d;
    jet__delivery_init(e, &d, it, meta, stream, consumer);
    jet_executor_record_release(e->executor, &d);
}

void jet__engine_transport_init(JetEngine *e, JetTransport *t)
{
    (void)e;
    *t = jet__engine_transport;
}
