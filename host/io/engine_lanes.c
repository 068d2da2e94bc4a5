/* Per-key lanes on the engine (docs/lanes.md).
 *
 * Worker 0 pulls and routes: every delivery goes to its key's lane in the
 * order the server sent it (one subscription, so the consumer's delivery
 * sequence tells a lost delivery from a late one).  Workers 1..n run what
 * the lane table (host/core/lanes.h) hands out, through the same
 * settlement as every binding, and tell it how each one ended.  Deliveries
 * waiting in a lane are held like any other: in the held set, their leases
 * extended by the lease keeper. */
#include "engine_private.h"
#include "nats_raw.h"
#include "lanes.h"
#include "lane_key.h"
#include "stream_msg.h"

#include <string.h>

/* The driver's state (JetEngine.driver_state).  The table and the fields
 * the router and runners share are under lock. */
typedef struct {
    JetLanes *table;
    GMutex lock;
    GCond cond;                /* something is ready */
    guint64 next_cseq;         /* the delivery sequence the next delivery should carry; 0: unknown */
    char *filter;              /* the consumer's filter subject, for reading unknown sequences */
    gint ready;                /* atomic: ready deliveries, for the runners' ack grouping */
    guint idle;                /* runners waiting for something ready */
    /* The router's own (worker 0's thread). */
    gboolean at_bound;
    gint64 bound_next_us;
    gboolean bound_again;      /* at the bound, the last pull brought a redelivery: pull again at once */
    guint bound_step_ms;       /* at the bound, how soon the router looks again */
    guint bound_seen;          /* the lane counts it saw last, folded into one number */
} Lanes;

static inline Lanes *L(const JetEngine *e)
{
    return e->driver_state;
}

/* Unknown sequences read per turn of the routing loop, so pulls and
 * routing go on while a long recovery range is read. */
#define READS_PER_TURN 64
#define READ_TIMEOUT_MS 2000
/* While enough is in hand, the router looks for room this often. */
#define ROOM_STEP_MS 2
/* At the bound, a pull that only fetches a head due back goes at most this often. */
#define BOUND_PULL_US (250 * 1000)

/* Under lanes_lock.  Wakes runners only for what the busy ones will not
 * take: a runner that finishes takes the next ready delivery without
 * sleeping, so with a fast handler one awake runner keeps up and nothing
 * is woken per message (a wake-up per message would cost more than the
 * handling); with slow handlers the ready ones outnumber the busy runners
 * and sleepers are woken, one per delivery. */
static void publish_ready(JetEngine *e)
{
    JetLaneCounts c;
    jet_lanes_counts(L(e)->table, &c);
    g_atomic_int_set(&L(e)->ready, (gint)c.ready);
    guint runners = e->n_workers - 1;
    guint awake = runners - MIN(L(e)->idle, runners);
    if (c.ready <= awake || L(e)->idle == 0)
        return;
    if (c.ready - awake == 1)
        g_cond_signal(&L(e)->cond);
    else
        g_cond_broadcast(&L(e)->cond);
}

static guint lanes_ready_hint(JetEngine *e)
{
    return (guint)g_atomic_int_get(&L(e)->ready);
}

/* --- the start ------------------------------------------------------------- */

/* What a previous run may have left unacked, read before the first pull:
 * a standby that waited for its claim has facts from long ago. */
static void lanes_start(Worker *w)
{
    JetEngine *e = w->eng;
    guint waited = 0;
    while (!g_atomic_int_get(&e->stopping)) {
        jsConsumerInfo *ci = NULL;
        natsStatus s = js_GetConsumerInfo(&ci, jet_conn_js(e->conn), e->b->stream, e->b->consumer, NULL, NULL);
        if (s == NATS_OK) {
            g_mutex_lock(&L(e)->lock);
            if (ci->NumAckPending > 0)
                jet_lanes_recover(L(e)->table, ci->AckFloor.Stream, ci->Delivered.Stream);
            L(e)->next_cseq = ci->Delivered.Consumer + 1;
            g_mutex_unlock(&L(e)->lock);
            g_free(L(e)->filter);
            L(e)->filter = g_strdup(ci->Config->FilterSubject != NULL && *ci->Config->FilterSubject
                                          ? ci->Config->FilterSubject : NULL);
            if (ci->NumAckPending > 0)
                jet_log(JET_LOG_INFO, e->b->name, "lanes-recover",
                        "%" G_GINT64_FORMAT " message(s) delivered before this run are unacked, between stream seq %"
                        G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT ": a later message of the same key waits for "
                        "them", ci->NumAckPending, ci->AckFloor.Stream + 1, ci->Delivered.Stream);
            jsConsumerInfo_Destroy(ci);
            return;
        }
        if (waited++ % 10 == 0)
            jet_log(JET_LOG_WARNING, e->b->name, "lanes-wait",
                    "cannot read the consumer's state (%s): lanes need it before the first pull, trying again",
                    natsStatus_GetText(s));
        g_usleep(500 * 1000);
    }
}

/* --- pulling --------------------------------------------------------------- */

static guint lanes_pull_size(Worker *w, gint64 *wait_ms)
{
    JetEngine *e = w->eng;
    JetLaneCounts c;
    gint64 now = now_us();
    g_mutex_lock(&L(e)->lock);
    jet_lanes_counts(L(e)->table, &c);
    guint due = c.waiting >= e->b->max_lane_held ? jet_lanes_due(L(e)->table, now) : 0;
    g_mutex_unlock(&L(e)->lock);
    *wait_ms = TAKE_STEP_US / 1000;
    if (c.waiting >= e->b->max_lane_held) {
        /* The bound: nothing new is taken in, but a head given back must
         * be able to come home, or its lane would wait for ever. */
        if (!L(e)->at_bound) {
            L(e)->at_bound = TRUE;
            JET_STAT_ADD(&w->stats, lane_bound, 1);
            jet_log(JET_LOG_WARNING, e->b->name, "lanes-bound",
                    "%u deliveries wait behind an earlier message of their key (max_lane_held %u; %u of them "
                    "behind one given back or unacked by an earlier run): pulls stop until they drain, except "
                    "one at a time for a head that is due back", c.waiting, e->b->max_lane_held, c.held);
        }
        /* The server sends redeliveries in the order they fell due, so a
         * head may come back behind every other message the last run left
         * unacked: while pulls bring redeliveries (messages the server
         * already counts against MaxAckPending), the next goes at once.
         * A first delivery or nothing puts the pace back.  The word holds
         * until a head is due: the redelivery it came with is usually that
         * head, in a handler, and the next is due only once it is settled. */
        if (due > 0 && (L(e)->bound_again || now >= L(e)->bound_next_us)) {
            L(e)->bound_again = FALSE;
            L(e)->bound_next_us = now + BOUND_PULL_US;
            L(e)->bound_step_ms = ROOM_STEP_MS;
            return 1;
        }
        /* What is in hand settles soon, and its settlement is what clears
         * the bound or makes the next head due: look again then, not a
         * take step later (with a small bound that step was the pace).
         * Every 2 ms while the counts move; while they do not (a slow or
         * hung handler) twice as long each time, up to the take step. */
        if (c.ready + c.busy > 0) {
            guint seen = c.ready ^ (c.busy << 10) ^ (c.waiting << 20);
            if (seen != L(e)->bound_seen || L(e)->bound_step_ms == 0)
                L(e)->bound_step_ms = ROOM_STEP_MS;
            else
                L(e)->bound_step_ms = MIN(L(e)->bound_step_ms * 2, TAKE_STEP_US / 1000);
            L(e)->bound_seen = seen;
            *wait_ms = L(e)->bound_step_ms;
        } else {
            L(e)->bound_again = FALSE;   /* given back with a delay: the pace it is */
        }
        return 0;
    }
    L(e)->bound_again = FALSE;
    L(e)->bound_step_ms = 0;   /* the next time at the bound starts at 2 ms */
    if (L(e)->at_bound) {
        L(e)->at_bound = FALSE;
        jet_log(JET_LOG_INFO, e->b->name, "lanes-bound-cleared", "%u deliveries wait behind an earlier message "
                "of their key; pulling again", c.waiting);
    }
    if (c.blocked_on_unknown)
        return 0;   /* read keys first: what comes would only wait */
    /* What waits behind an earlier message of its key, whatever that one
     * is doing, is the bound's: a busy hot key must not keep the other
     * keys from being pulled.  What is ready or in a handler stays within
     * one batch, as on a binding without lanes. */
    guint in_hand = c.ready + c.busy;
    if (in_hand >= e->b->batch) {
        *wait_ms = ROOM_STEP_MS;
        return 0;
    }
    return MIN(e->b->batch - in_hand, e->b->max_lane_held - c.waiting);
}

/* --- routing ------------------------------------------------------------------ */

static void lanes_route(Worker *w, Item *it, const JetAckMeta *meta)
{
    JetEngine *e = w->eng;
    natsMsg *m = it->msg;
    const char *key = NULL;
    gsize len = 0;
    g_auto(JetHdrParse) hdrs = { 0 };
    const GPtrArray *headers = NULL;
    if (e->b->lane_key.kind == JET_LANE_KEY_HEADER) {
        g_autofree char *bad = jet__read_headers(e, m, meta->stream_seq, &hdrs);
        headers = hdrs.headers;
    }
    JetLaneKeyResult kr = jet_lane_key_of(&e->b->lane_key, natsMsg_GetSubject(m), headers, &key, &len);
    if (kr == JET_LANE_AMBIGUOUS) {
        /* Two values: no lane is honest for it.  It goes to the keyless
         * lane, and its settlement dead-letters it (jet__deliver). */
        it->lane_ambiguous = TRUE;
        key = NULL;
    } else if (kr == JET_LANE_KEYLESS) {
        key = NULL;
    }

    g_mutex_lock(&L(e)->lock);
    JetLaneCounts before;
    jet_lanes_counts(L(e)->table, &before);
    if (L(e)->next_cseq != 0 && meta->consumer_seq > L(e)->next_cseq) {
        guint64 lost = meta->consumer_seq - L(e)->next_cseq;
        jet_lanes_gap(L(e)->table);
        JET_STAT_ADD(&w->stats, lane_gaps, lost);
        jet_log(JET_LOG_WARNING, e->b->name, "lanes-gap",
                "%" G_GUINT64_FORMAT " deliveries (delivery seq %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
                ") never reached the host: until their keys are known, nothing after them is handled",
                lost, L(e)->next_cseq, meta->consumer_seq - 1);
    }
    if (meta->consumer_seq >= L(e)->next_cseq)
        L(e)->next_cseq = meta->consumer_seq + 1;
    L(e)->bound_again = L(e)->at_bound && meta->delivered > 1;
    gpointer replaced = jet_lanes_offer(L(e)->table, key, len, meta->stream_seq, meta->delivered == 1, it);
    JetLaneCounts c;
    jet_lanes_counts(L(e)->table, &c);
    publish_ready(e);
    g_mutex_unlock(&L(e)->lock);
    JET_STAT_MAX(&w->stats, max_held, c.waiting + c.ready + c.busy);
    if (c.waiting > before.waiting)
        JET_STAT_ADD(&w->stats, lane_waits, 1);
    if (replaced != NULL) {
        /* An earlier delivery of the same message, never handed out: the
         * server sent it again, so that one is stale; dropped unsettled. */
        Item *old = replaced;
        jet__release_hold(e, old);
        natsMsg_Destroy(old->msg);
        g_free(old);
    }
}

/* The key of one unknown sequence, from the stream. */
static gboolean read_unknown(JetEngine *e, guint64 seq, Worker *w)
{
    g_autoptr(JetStoredMsg) sm = NULL;
    g_autoptr(GError) err = NULL;
    JetStoredStatus st = jet_stream_msg_get(jet_conn_nats(e->conn), e->b->stream, seq, READ_TIMEOUT_MS, &sm, &err);
    if (st == JET_STORED_ERROR) {
        jet_log(JET_LOG_WARNING, e->b->name, "lanes-read-failed",
                "stream seq %" G_GUINT64_FORMAT ": its key cannot be read (%s); later messages wait, trying again",
                seq, err != NULL ? err->message : "no answer");
        return FALSE;
    }
    JET_STAT_ADD(&w->stats, lane_reads, 1);
    gboolean pending = st == JET_STORED_FOUND &&
                       (L(e)->filter == NULL || jet_subject_matches(L(e)->filter, sm->subject));
    const char *key = NULL;
    gsize len = 0;
    g_auto(JetHdrParse) hdrs = { 0 };
    if (pending) {
        gsize hlen = 0;
        const char *block = sm->hdrs != NULL ? g_bytes_get_data(sm->hdrs, &hlen) : NULL;
        jet_hdr_parse(block, hlen, &hdrs);
        if (jet_lane_key_of(&e->b->lane_key, sm->subject, hdrs.headers, &key, &len) != JET_LANE_KEYED)
            key = NULL;
    }
    g_mutex_lock(&L(e)->lock);
    jet_lanes_resolve(L(e)->table, seq, pending, key, len);
    publish_ready(e);
    g_mutex_unlock(&L(e)->lock);
    return TRUE;
}

static void lanes_resolve_some(Worker *w)
{
    JetEngine *e = w->eng;
    for (guint i = 0; i < READS_PER_TURN && !g_atomic_int_get(&e->stopping); i++) {
        guint64 seq = 0;
        g_mutex_lock(&L(e)->lock);
        gboolean need = jet_lanes_next_unresolved(L(e)->table, &seq);
        g_mutex_unlock(&L(e)->lock);
        if (!need || !read_unknown(e, seq, w))
            return;
    }
}

/* --- running ------------------------------------------------------------------ */

/* How the lane table hears of a settlement (lanes.h). */
static JetLaneSettled lane_outcome(const JetEngine *e, const JetExecuted *x, gint64 *due_us)
{
    gint64 now = now_us();
    *due_us = now + MAX(e->facts.ack_wait_ms, 300) * 1000;
    switch (x->action.kind) {
    case JET_ACTION_ACK:
        return JET_LANE_DONE;   /* acked, even when late: the server has it */
    case JET_ACTION_CAPTURE:
        if (x->captured)
            return JET_LANE_DONE;
        *due_us = now;   /* kept or unconfirmed: back soon, or the floor passes it */
        return JET_LANE_OUT;
    case JET_ACTION_RETRY:
    case JET_ACTION_POSTPONE:
        if (!x->stale)
            *due_us = now + (gint64)x->action.delay_ms * 1000;
        return JET_LANE_OUT;
    }
    return JET_LANE_OUT;
}

/* One delivery taken from the table, handled and settled back into it. */
static void run_one(Worker *w, Item *it, guint64 seq)
{
    JetEngine *e = w->eng;
    JetAckMeta meta = it->meta;   /* read at its arrival */
    g_mutex_lock(&e->lease_lock);
    it->worker = w->index;   /* its handler's worker, for a hung report and the counters */
    g_mutex_unlock(&e->lease_lock);
    if (e->take_hook != NULL)
        e->take_hook(w->index, lanes_ready_hint(e) + 1, e->take_hook_data);
    JetExecuted x;
    jet__deliver(e, it, &meta, &x);
    gint64 due = 0;
    JetLaneSettled how = lane_outcome(e, &x, &due);

    g_mutex_lock(&L(e)->lock);
    jet_lanes_settled(L(e)->table, it, seq, how, due);
    publish_ready(e);
    g_mutex_unlock(&L(e)->lock);
    jet_nats_msg_free(it->msg);
    g_free(it);
}

static gboolean first_delivery(Item *it)
{
    return it->meta_ok && it->meta.delivered == 1;
}

/* A handler batch on lanes (batch_max above 1, docs/batches.md): items[0]
 * and the first deliveries of other lanes whose turn it is too, taken from
 * the table together (so one a key: a lane hands out its next delivery
 * only once the one before is settled), handed to handle_batch() at once,
 * each settled back into its lane. */
static void run_batch(Worker *w, Item *const *items, const guint64 *seqs, guint n)
{
    JetEngine *e = w->eng;
    g_autofree JetAckMeta *metas = g_new(JetAckMeta, n);
    g_autofree JetExecuted *done = g_new(JetExecuted, n);
    g_mutex_lock(&e->lease_lock);
    for (guint i = 0; i < n; i++)
        items[i]->worker = w->index;
    g_mutex_unlock(&e->lease_lock);
    for (guint i = 0; i < n; i++)
        metas[i] = items[i]->meta;   /* read at its arrival */
    if (e->take_hook != NULL)
        e->take_hook(w->index, lanes_ready_hint(e) + n, e->take_hook_data);
    jet__deliver_batch(e, items, metas, n, done);
    g_mutex_lock(&L(e)->lock);
    for (guint i = 0; i < n; i++) {
        gint64 due = 0;
        JetLaneSettled how = lane_outcome(e, &done[i], &due);
        jet_lanes_settled(L(e)->table, items[i], seqs[i], how, due);
    }
    publish_ready(e);
    g_mutex_unlock(&L(e)->lock);
    for (guint i = 0; i < n; i++) {
        jet_nats_msg_free(items[i]->msg);
        g_free(items[i]);
    }
}

static gpointer lanes_runner_main(gpointer data)
{
    Worker *w = data;
    JetEngine *e = w->eng;
    const guint max = MAX(e->b->batch_max, 1);
    g_autofree Item **items = g_new(Item *, max);
    g_autofree guint64 *seqs = g_new(guint64, max);
    while (!g_atomic_int_get(&e->stopping)) {
        guint64 seq = 0;
        /* Nothing is taken past the claim's fence: what waits in the lanes
         * is released at the drain, in order (docs/exclusive.md). */
        if (!jet__fence_wait(e))
            break;
        g_mutex_lock(&L(e)->lock);
        Item *it = jet_lanes_take(L(e)->table, &seq);
        if (it == NULL) {
            L(e)->idle++;
            g_cond_wait_until(&L(e)->cond, &L(e)->lock, g_get_monotonic_time() + TAKE_STEP_US);
            L(e)->idle--;
            g_mutex_unlock(&L(e)->lock);
            jet__acks_due(w);
            continue;
        }
        /* With batch_max, the first deliveries of other lanes ready now
         * join a first delivery.  A redelivery is left ready for another
         * runner (it goes alone, never behind a batch), and nothing is
         * gathered while careful (after a suspect: one message a call) or
         * stopping (what waits is released instead). */
        guint n = 1;
        gboolean left = FALSE;
        items[0] = it;
        seqs[0] = seq;
        if (max > 1 && first_delivery(it) && !jet__careful(e) && !g_atomic_int_get(&e->stopping)) {
            while (n < max) {
                Item *x = jet_lanes_peek(L(e)->table);
                if (x == NULL)
                    break;
                if (!first_delivery(x)) {
                    left = TRUE;
                    break;
                }
                items[n] = jet_lanes_take(L(e)->table, &seqs[n]);
                n++;
            }
        }
        publish_ready(e);
        if (left && L(e)->idle > 0)
            g_cond_signal(&L(e)->cond);   /* this runner is busy with the batch: another takes it */
        g_mutex_unlock(&L(e)->lock);

        if (n > 1)
            run_batch(w, items, seqs, n);
        else
            run_one(w, it, seq);
    }
    jet__acks_flush(w);
    return NULL;
}

/* --- the floor and the end ----------------------------------------------------- */

static void lanes_floor(JetEngine *e, guint64 floor)
{
    g_mutex_lock(&L(e)->lock);
    jet_lanes_floor(L(e)->table, floor);
    publish_ready(e);
    g_mutex_unlock(&L(e)->lock);
}

static char *lanes_describe(JetEngine *e, guint64 seq)
{
    g_autofree char *key = NULL;
    const char *state = NULL;
    guint behind = 0;
    g_mutex_lock(&L(e)->lock);
    gboolean found = jet_lanes_describe(L(e)->table, seq, &key, &state, &behind);
    g_mutex_unlock(&L(e)->lock);
    if (!found)
        return NULL;
    return g_strdup_printf("stream seq %" G_GUINT64_FORMAT " holds the floor in lane %s: %s, %u behind it in its lane",
                           seq, key, state, behind);
}

static void lanes_release_all(JetEngine *e, Worker *w)
{
    guint n = 0;
    for (;;) {
        guint64 seq = 0;
        g_mutex_lock(&L(e)->lock);
        Item *it = jet_lanes_pop_waiting(L(e)->table, &seq);
        g_mutex_unlock(&L(e)->lock);
        if (it == NULL)
            break;
        jet__release_item(w, it);
        n++;
    }
    if (n > 0)
        jet_log(JET_LOG_INFO, e->b->name, "lanes-released",
                "%u delivery(ies) waiting in lanes given back (the next run keeps their order: docs/lanes.md)", n);
}

/* --- the driver ---------------------------------------------------------------- */

static guint lanes_workers(const JetBindingConfig *b)
{
    return MAX(b->workers, 1) + 1;   /* worker 0 routes, the others run */
}

static void lanes_init(JetEngine *e)
{
    Lanes *l = g_new0(Lanes, 1);
    l->table = jet_lanes_new();
    g_mutex_init(&l->lock);
    g_cond_init(&l->cond);
    e->driver_state = l;
}

static void lanes_fini(JetEngine *e)
{
    Lanes *l = L(e);
    jet_lanes_free(l->table);
    g_mutex_clear(&l->lock);
    g_cond_clear(&l->cond);
    g_free(l->filter);
    g_free(l);
    e->driver_state = NULL;
}

static void lanes_start_all(JetEngine *e)
{
    jet__pull_start_workers(e, lanes_runner_main);
    g_autofree char *key = jet_lane_key_format(&e->b->lane_key);
    jet_log(JET_LOG_INFO, e->b->name, "subscribed", "%u worker(s) on %s/%s in lanes by %s, batch %u, at most %u "
            "held behind a lane's head", e->n_workers - 1, e->b->stream, e->b->consumer, key, e->b->batch,
            e->b->max_lane_held);
    jet__pull_start_keeper(e);
}

/* After every thread is joined: what waits in lanes is given back. */
static void lanes_joined(JetEngine *e)
{
    if (e->workers[0].sub == NULL)
        return;   /* never started: nothing was routed */
    lanes_release_all(e, &e->workers[0]);
    natsConnection_FlushTimeout(jet_conn_nats(e->conn), 2000);
}

/* A new consumer counts its deliveries from 1 again: the next is not
 * known until it comes. */
static void lanes_consumer_new(JetEngine *e)
{
    g_mutex_lock(&L(e)->lock);
    L(e)->next_cseq = 0;
    g_mutex_unlock(&L(e)->lock);
}

const JetDriver jet__driver_lanes = {
    .kind = "lanes",
    .acked = TRUE,
    .first_routes = TRUE,
    .n_workers = lanes_workers,
    .init = lanes_init,
    .fini = lanes_fini,
    .transport = jet__engine_transport_init,
    .start = lanes_start_all,
    .joined = lanes_joined,
    .pull_start = lanes_start,
    .pull_size = lanes_pull_size,
    .take = lanes_route,
    .turn = lanes_resolve_some,
    .consumer_new = lanes_consumer_new,
    .floor = lanes_floor,
    .describe = lanes_describe,
    .ready = lanes_ready_hint,
};
