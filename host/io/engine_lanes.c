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
#include "lanes.h"
#include "lane_key.h"
#include "stream_msg.h"

#include <string.h>

/* Unknown sequences read per turn of the routing loop, so pulls and
 * routing go on while a long recovery range is read. */
#define READS_PER_TURN 64
#define READ_TIMEOUT_MS 2000
/* While enough is in hand, the router looks for room this often. */
#define ROOM_STEP_MS 2
/* At the bound, a pull that only fetches a head due back goes at most this often. */
#define BOUND_PULL_US (250 * 1000)

gboolean jet__lanes_on(const JetEngine *e)
{
    return e->lanes != NULL;
}

/* Under lanes_lock.  Wakes runners only for what the busy ones will not
 * take: a runner that finishes takes the next ready delivery without
 * sleeping, so with a fast handler one awake runner keeps up and nothing
 * is woken per message (a wake-up per message would cost more than the
 * handling); with slow handlers the ready ones outnumber the busy runners
 * and sleepers are woken, one per delivery. */
static void publish_ready(JetEngine *e)
{
    JetLaneCounts c;
    jet_lanes_counts(e->lanes, &c);
    g_atomic_int_set(&e->lane_ready, (gint)c.ready);
    guint runners = e->n_workers - 1;
    guint awake = runners - MIN(e->lane_idle, runners);
    if (c.ready <= awake || e->lane_idle == 0)
        return;
    if (c.ready - awake == 1)
        g_cond_signal(&e->lanes_cond);
    else
        g_cond_broadcast(&e->lanes_cond);
}

guint jet__lanes_ready_hint(JetEngine *e)
{
    return (guint)g_atomic_int_get(&e->lane_ready);
}

/* --- the start ------------------------------------------------------------- */

/* What a previous run may have left unacked, read before the first pull:
 * a standby that waited for its claim has facts from long ago. */
void jet__lanes_start(Worker *w)
{
    JetEngine *e = w->eng;
    guint waited = 0;
    while (!g_atomic_int_get(&e->stopping)) {
        jsConsumerInfo *ci = NULL;
        natsStatus s = js_GetConsumerInfo(&ci, jet_conn_js(e->conn), e->b->stream, e->b->consumer, NULL, NULL);
        if (s == NATS_OK) {
            g_mutex_lock(&e->lanes_lock);
            if (ci->NumAckPending > 0)
                jet_lanes_recover(e->lanes, ci->AckFloor.Stream, ci->Delivered.Stream);
            e->lane_next_cseq = ci->Delivered.Consumer + 1;
            g_mutex_unlock(&e->lanes_lock);
            g_free(e->lane_filter);
            e->lane_filter = g_strdup(ci->Config->FilterSubject != NULL && *ci->Config->FilterSubject
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

guint jet__lanes_pull_size(Worker *w, gint64 *wait_ms)
{
    JetEngine *e = w->eng;
    JetLaneCounts c;
    gint64 now = now_us();
    g_mutex_lock(&e->lanes_lock);
    jet_lanes_counts(e->lanes, &c);
    guint due = c.waiting >= e->b->max_lane_held ? jet_lanes_due(e->lanes, now) : 0;
    g_mutex_unlock(&e->lanes_lock);
    *wait_ms = TAKE_STEP_US / 1000;
    if (c.waiting >= e->b->max_lane_held) {
        /* The bound: nothing new is taken in, but a head given back must
         * be able to come home, or its lane would wait for ever. */
        if (!e->lane_at_bound) {
            e->lane_at_bound = TRUE;
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
        if (due > 0 && (e->lane_bound_again || now >= e->lane_bound_next_us)) {
            e->lane_bound_again = FALSE;
            e->lane_bound_next_us = now + BOUND_PULL_US;
            e->lane_bound_step_ms = ROOM_STEP_MS;
            return 1;
        }
        /* What is in hand settles soon, and its settlement is what clears
         * the bound or makes the next head due: look again then, not a
         * take step later (with a small bound that step was the pace).
         * Every 2 ms while the counts move; while they do not (a slow or
         * hung handler) twice as long each time, up to the take step. */
        if (c.ready + c.busy > 0) {
            guint seen = c.ready ^ (c.busy << 10) ^ (c.waiting << 20);
            if (seen != e->lane_bound_seen || e->lane_bound_step_ms == 0)
                e->lane_bound_step_ms = ROOM_STEP_MS;
            else
                e->lane_bound_step_ms = MIN(e->lane_bound_step_ms * 2, TAKE_STEP_US / 1000);
            e->lane_bound_seen = seen;
            *wait_ms = e->lane_bound_step_ms;
        } else {
            e->lane_bound_again = FALSE;   /* given back with a delay: the pace it is */
        }
        return 0;
    }
    e->lane_bound_again = FALSE;
    e->lane_bound_step_ms = 0;   /* the next time at the bound starts at 2 ms */
    if (e->lane_at_bound) {
        e->lane_at_bound = FALSE;
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

void jet__lanes_route(Worker *w, Item *it, const JetAckMeta *meta)
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

    g_mutex_lock(&e->lanes_lock);
    JetLaneCounts before;
    jet_lanes_counts(e->lanes, &before);
    if (e->lane_next_cseq != 0 && meta->consumer_seq > e->lane_next_cseq) {
        guint64 lost = meta->consumer_seq - e->lane_next_cseq;
        jet_lanes_gap(e->lanes);
        JET_STAT_ADD(&w->stats, lane_gaps, lost);
        jet_log(JET_LOG_WARNING, e->b->name, "lanes-gap",
                "%" G_GUINT64_FORMAT " deliveries (delivery seq %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
                ") never reached the host: until their keys are known, nothing after them is handled",
                lost, e->lane_next_cseq, meta->consumer_seq - 1);
    }
    if (meta->consumer_seq >= e->lane_next_cseq)
        e->lane_next_cseq = meta->consumer_seq + 1;
    e->lane_bound_again = e->lane_at_bound && meta->delivered > 1;
    gpointer replaced = jet_lanes_offer(e->lanes, key, len, meta->stream_seq, meta->delivered == 1, it);
    JetLaneCounts c;
    jet_lanes_counts(e->lanes, &c);
    publish_ready(e);
    g_mutex_unlock(&e->lanes_lock);
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
                       (e->lane_filter == NULL || jet_subject_matches(e->lane_filter, sm->subject));
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
    g_mutex_lock(&e->lanes_lock);
    jet_lanes_resolve(e->lanes, seq, pending, key, len);
    publish_ready(e);
    g_mutex_unlock(&e->lanes_lock);
    return TRUE;
}

void jet__lanes_resolve_some(Worker *w)
{
    JetEngine *e = w->eng;
    for (guint i = 0; i < READS_PER_TURN && !g_atomic_int_get(&e->stopping); i++) {
        guint64 seq = 0;
        g_mutex_lock(&e->lanes_lock);
        gboolean need = jet_lanes_next_unresolved(e->lanes, &seq);
        g_mutex_unlock(&e->lanes_lock);
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

gpointer jet__lanes_runner_main(gpointer data)
{
    Worker *w = data;
    JetEngine *e = w->eng;
    while (!g_atomic_int_get(&e->stopping)) {
        guint64 seq = 0;
        /* Nothing is taken past the claim's fence: what waits in the lanes
         * is released at the drain, in order (docs/exclusive.md). */
        if (!jet__fence_wait(e))
            break;
        g_mutex_lock(&e->lanes_lock);
        Item *it = jet_lanes_take(e->lanes, &seq);
        if (it == NULL) {
            e->lane_idle++;
            g_cond_wait_until(&e->lanes_cond, &e->lanes_lock, g_get_monotonic_time() + TAKE_STEP_US);
            e->lane_idle--;
            g_mutex_unlock(&e->lanes_lock);
            jet__acks_due(w);
            continue;
        }
        publish_ready(e);
        g_mutex_unlock(&e->lanes_lock);

        JetAckMeta meta;
        jet_ack_subject_parse(natsMsg_GetReply(it->msg), &meta);   /* parsed once already at routing */
        g_mutex_lock(&e->lease_lock);
        it->worker = w->index;   /* its handler's worker, for a hung report and the counters */
        g_mutex_unlock(&e->lease_lock);
        if (e->take_hook != NULL)
            e->take_hook(w->index, jet__lanes_ready_hint(e) + 1, e->take_hook_data);
        JetExecuted x;
        jet__deliver(e, it, &meta, &x);
        gint64 due = 0;
        JetLaneSettled how = lane_outcome(e, &x, &due);

        g_mutex_lock(&e->lanes_lock);
        jet_lanes_settled(e->lanes, it, seq, how, due);
        publish_ready(e);
        g_mutex_unlock(&e->lanes_lock);
        natsMsg_Destroy(it->msg);
        g_free(it);
    }
    jet__acks_flush(w);
    return NULL;
}

/* --- the floor and the end ----------------------------------------------------- */

void jet__lanes_floor(JetEngine *e, guint64 floor)
{
    g_mutex_lock(&e->lanes_lock);
    jet_lanes_floor(e->lanes, floor);
    publish_ready(e);
    g_mutex_unlock(&e->lanes_lock);
}

char *jet__lanes_describe(JetEngine *e, guint64 seq)
{
    g_autofree char *key = NULL;
    const char *state = NULL;
    guint behind = 0;
    g_mutex_lock(&e->lanes_lock);
    gboolean found = jet_lanes_describe(e->lanes, seq, &key, &state, &behind);
    g_mutex_unlock(&e->lanes_lock);
    if (!found)
        return NULL;
    return g_strdup_printf("stream seq %" G_GUINT64_FORMAT " holds the floor in lane %s: %s, %u behind it in its lane",
                           seq, key, state, behind);
}

void jet__lanes_release_all(JetEngine *e, Worker *w)
{
    guint n = 0;
    for (;;) {
        guint64 seq = 0;
        g_mutex_lock(&e->lanes_lock);
        Item *it = jet_lanes_pop_waiting(e->lanes, &seq);
        g_mutex_unlock(&e->lanes_lock);
        if (it == NULL)
            break;
        jet__release_item(w, it);
        n++;
    }
    if (n > 0)
        jet_log(JET_LOG_INFO, e->b->name, "lanes-released",
                "%u delivery(ies) waiting in lanes given back (the next run keeps their order: docs/lanes.md)", n);
}
