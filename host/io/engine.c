#include "engine.h"
#include "engine_private.h"
#include "ack_subject.h"
#include "jet_msg.h"
#include "lane_key.h"
#include "lanes.h"
#include "log.h"
#include "nats_raw.h"
#include "pull_status.h"
#include "settle.h"
#include "stats.h"
#include "sub_end.h"

#include <stdio.h>
#include <string.h>

static gboolean engine_stopping(JetEngine *e)
{
    return g_atomic_int_get(&e->stopping) != 0;
}

/* --- the isolation gate, with hung handlers taken out of it ------------------ */

void jet__gate_enter(JetEngine *e, Item *it, gboolean alone)
{
    jet_isolation_enter(&e->isolation, alone);
    g_mutex_lock(&e->lease_lock);
    it->alone = alone;
    it->in_gate = TRUE;
    g_mutex_unlock(&e->lease_lock);
}

gboolean jet__gate_left_for_it(JetEngine *e, Item *it)
{
    g_mutex_lock(&e->lease_lock);
    gboolean left = it->hung;
    it->in_gate = FALSE;
    g_mutex_unlock(&e->lease_lock);
    return left;
}

/* --- careful mode ----------------------------------------------------------- */

/* How long after a suspect (or a start) messages held at a death can still
 * come back: they are redelivered once their AckWait runs out. */
static gint64 careful_span_us(JetEngine *e)
{
    return 2 * MAX(e->facts.ack_wait_ms, 300) * 1000;
}

static void careful_extend(JetEngine *e, gint64 until_us)
{
    gint64 cur = __atomic_load_n(&e->careful_until_us, __ATOMIC_RELAXED);
    while (cur < until_us &&
           !__atomic_compare_exchange_n(&e->careful_until_us, &cur, until_us, FALSE, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
}

static gboolean careful(JetEngine *e)
{
    if (g_atomic_int_get(&e->suspects_running) > 0)
        return TRUE;
    gint64 now = now_us();
    if (now < __atomic_load_n(&e->careful_until_us, __ATOMIC_RELAXED))
        return TRUE;
    return now < e->start_careful_until_us &&
           __atomic_load_n(&e->observed_floor, __ATOMIC_RELAXED) < e->start_careful_floor;
}

/* The one worker that pulls in careful mode: the first not hung. */
static guint careful_worker(JetEngine *e)
{
    if (jet__lanes_on(e))
        return 0;   /* the router is the only one that pulls */
    for (guint i = 0; i < e->n_workers; i++)
        if (!g_atomic_int_get(&e->workers[i].hung))
            return i;
    return 0;
}

void jet__suspect_begin(JetEngine *e)
{
    if (!careful(e))
        jet_log(JET_LOG_WARNING, e->b->name, "careful",
                "a suspect: pulling one message at a time on one worker until it is settled and %" G_GINT64_FORMAT
                " ms have passed with none, so no other message is held if it ends the host",
                careful_span_us(e) / 1000);
    g_atomic_int_inc(&e->suspects_running);
}

void jet__suspect_end(JetEngine *e)
{
    careful_extend(e, now_us() + careful_span_us(e));
    g_atomic_int_add(&e->suspects_running, -1);
}

/* --- arrival --------------------------------------------------------------- */

/* A message off the inbox becomes an Item.  A delivery is held from here
 * on: the lease covers it while it waits and while it is handled.  Called
 * under the worker's take_lock (by the worker or the lease keeper). */
static Item *arrive(Worker *w, natsMsg *m, gint64 now)
{
    JetEngine *e = w->eng;
    Item *it = g_new0(Item, 1);
    it->msg = m;
    it->worker = w->index;
    it->arrived_us = now;
    it->extended_us = now;
    __atomic_store_n(&w->last_heard_us, now, __ATOMIC_RELAXED);

    const char *reply = natsMsg_GetReply(m);
    if (reply != NULL && g_str_has_prefix(reply, "$JS.ACK.")) {
        it->is_delivery = TRUE;
        JetAckMeta meta;
        if (jet_ack_subject_parse(reply, &meta))
            it->stream_seq = meta.stream_seq;
        g_mutex_lock(&e->lease_lock);
        g_hash_table_add(e->held, it);
        g_mutex_unlock(&e->lease_lock);
    }
    return it;
}

/* The next item for the worker: what the keeper moved aside first, then
 * the subscription, waiting up to timeout_ms.  NULL: nothing came. */
static Item *take_next(Worker *w, gint64 timeout_ms)
{
    g_mutex_lock(&w->take_lock);
    Item *it = g_queue_pop_head(&w->moved);
    if (it != NULL) {
        g_atomic_int_add(&w->n_moved, -1);
    } else {
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, w->sub, timeout_ms);
        if (s == NATS_OK) {
            it = arrive(w, m, now_us());
        } else if (s == NATS_NO_RESPONDERS) {
            /* nats.c destroys, unseen, any message with an empty payload
             * and a "503" status line: on a pull inbox, a stored message
             * written to look like one.  It comes back after AckWait, and
             * again, until MaxDeliver (docs/headers.md). */
            JET_STAT_ADD(&w->stats, client_discarded, 1);
            jet_log(JET_LOG_ERROR, w->eng->b->name, "client-discarded",
                    "nats.c discarded a delivery with an empty payload and a 503 status line before the host "
                    "could see it; the server will deliver it again after AckWait");
        }
    }
    g_mutex_unlock(&w->take_lock);
    return it;
}

/* Messages that wait, not yet taken: moved aside or still in the
 * subscription (statuses included). */
static guint waiting_msgs(Worker *w)
{
    if (w->sub == NULL)
        return jet__lanes_on(w->eng) ? jet__lanes_ready_hint(w->eng) : 0;   /* a lane runner */
    int pending = 0;
    if (natsSubscription_GetPending(w->sub, &pending, NULL) != NATS_OK || pending < 0)
        pending = 0;
    return (guint)g_atomic_int_get(&w->n_moved) + (guint)pending;
}

/* The lease keeper, while the worker is busy in a handler: moves what waits
 * in the subscription aside, so it is held and its lease extended.  Never
 * waits for the worker.  `backdate_us` makes a moved delivery's first
 * extension come sooner: it may have waited unseen since the last visit. */
static void move_waiting(Worker *w, gint64 backdate_us)
{
    if (!g_mutex_trylock(&w->take_lock))
        return;   /* the worker is taking: nothing is left waiting for long */
    int pending = 0;
    if (natsSubscription_GetPending(w->sub, &pending, NULL) == NATS_OK) {
        gint64 now = now_us();
        for (int i = 0; i < pending; i++) {
            natsMsg *m = NULL;
            if (natsSubscription_NextMsg(&m, w->sub, 0) != NATS_OK)
                break;
            Item *it = arrive(w, m, now);
            if (it->is_delivery) {
                g_mutex_lock(&w->eng->lease_lock);
                it->extended_us = now - backdate_us;
                g_mutex_unlock(&w->eng->lease_lock);
            }
            g_queue_push_tail(&w->moved, it);
            g_atomic_int_inc(&w->n_moved);
        }
    }
    g_mutex_unlock(&w->take_lock);
}

static void release_item(Worker *w, Item *it);

/* The lease keeper, behind a hung handler: what waits for that worker is
 * released at once (NAK, recorded as a release), never held hostage.  Never
 * waits for the worker. */
static void release_waiting(Worker *w)
{
    if (!g_mutex_trylock(&w->take_lock))
        return;
    guint n = 0;
    Item *it;
    while ((it = g_queue_pop_head(&w->moved)) != NULL) {
        g_atomic_int_add(&w->n_moved, -1);
        n += it->is_delivery;
        release_item(w, it);
    }
    int pending = 0;
    if (natsSubscription_GetPending(w->sub, &pending, NULL) == NATS_OK) {
        for (int i = 0; i < pending; i++) {
            natsMsg *m = NULL;
            if (natsSubscription_NextMsg(&m, w->sub, 0) != NATS_OK)
                break;
            it = arrive(w, m, now_us());
            n += it->is_delivery;
            release_item(w, it);
        }
    }
    g_mutex_unlock(&w->take_lock);
    if (n > 0) {
        JET_STAT_ADD(&w->stats, released_behind_hung, n);
        jet_log(JET_LOG_WARNING, w->eng->b->name, "released-behind-hung",
                "worker %u is hung: released %u message(s) that waited for it", w->index, n);
    }
}

/* Wakes a worker waiting for its inbox (a reconnect, a stop): a message to
 * <inbox>.0, which answers no pull.  Without a connection the worker's own
 * wait step (TAKE_STEP_US) is the bound. */
static void wake_worker(Worker *w)
{
    if (w->wake_subject != NULL)
        natsConnection_Publish(jet_conn_nats(w->eng->conn), w->wake_subject, NULL, 0);
}

static void on_reconnect(gpointer data)
{
    JetEngine *e = data;
    jet__forget_stream_life(e);
    for (guint i = 0; i < e->n_workers; i++)
        wake_worker(&e->workers[i]);
}

/* --- settling ------------------------------------------------------------ */

void jet__publish_ack(JetEngine *e, const char *reply, const char *body)
{
    natsStatus s = natsConnection_PublishString(jet_conn_nats(e->conn), reply, body);
    if (s != NATS_OK)
        jet_log(JET_LOG_WARNING, e->b->name, "settle-failed",
                "could not send %s to %s: %s (the server will redeliver after AckWait)", body, reply,
                natsStatus_GetText(s));
}

void jet__publish_nak_delay(JetEngine *e, const char *reply, guint64 delay_ms)
{
    char body[64];
    snprintf(body, sizeof body, "-NAK {\"delay\": %" G_GUINT64_FORMAT "}", delay_ms * G_GUINT64_CONSTANT(1000000));
    jet__publish_ack(e, reply, body);
}

gboolean jet__release_hold(JetEngine *e, Item *it)
{
    g_mutex_lock(&e->lease_lock);
    g_hash_table_remove(e->held, it);
    gboolean stale = it->stale;
    gboolean was_hung = it->handler_since_us > 0 && it->stale;
    gint64 ran_us = it->handler_since_us > 0 ? now_us() - it->handler_since_us : 0;
    g_mutex_unlock(&e->lease_lock);
    if (was_hung && it->worker < e->n_workers && g_atomic_int_get(&e->workers[it->worker].hung)) {
        g_atomic_int_set(&e->workers[it->worker].hung, 0);
        jet_log(JET_LOG_WARNING, e->b->name, "handler-returned",
                "stream seq %" G_GUINT64_FORMAT ": the hung handler returned after %" G_GINT64_FORMAT " ms; worker %u "
                "takes messages again", it->stream_seq, ran_us / 1000, it->worker);
    }
    return stale;
}

/* --- acks, sent together -------------------------------------------------- */

/* Sends the acks that wait, in the order they were decided. */
static void acks_flush(Worker *w)
{
    g_mutex_lock(&w->ack_lock);
    if (w->n_acks > 0)
        JET_STAT_ADD(&w->stats, acks_grouped, w->n_acks);
    gboolean burst = w->n_acks > 1;
    if (burst)
        jet_conn_burst_begin(w->eng->conn);
    for (guint i = 0; i < w->n_acks; i++) {
        jet__publish_ack(w->eng, w->acks[i], "+ACK");
        g_free(w->acks[i]);
        w->acks[i] = NULL;
    }
    if (burst)
        jet_conn_burst_end(w->eng->conn);
    w->n_acks = 0;
    g_mutex_unlock(&w->ack_lock);
}

/* Sends them if the oldest has waited `after_us`.  Returns how long until
 * they are due (µs, > 0) when some wait, else 0. */
static gint64 acks_due(Worker *w, gint64 after_us)
{
    g_mutex_lock(&w->ack_lock);
    gboolean some = w->n_acks > 0;
    gint64 left = some ? w->acks_since_us + after_us - now_us() : 0;
    g_mutex_unlock(&w->ack_lock);
    if (some && left <= 0)
        acks_flush(w);
    return MAX(left, 0);
}

void jet__acks_due(Worker *w)
{
    acks_due(w, ACK_COALESCE_US);
}

void jet__acks_flush(Worker *w)
{
    acks_flush(w);
}

static guint owed(const Worker *w);
static gboolean ack_with_next_pull(Worker *w, const char *reply);

void jet__ack_soon(JetEngine *e, Item *it)
{
    Worker *w = &e->workers[it->worker];
    const char *reply = natsMsg_GetReply(it->msg);
    /* handler_since_us is written by this thread only (the keeper reads it). */
    gint64 handler_us = it->handler_since_us > 0 ? now_us() - it->handler_since_us : 0;
    if (handler_us >= ACK_COALESCE_US || (waiting_msgs(w) == 0 && owed(w) == 0)) {
        /* A handler that took its time gains nothing from waiting; with
         * nothing behind it and nothing more owed by the server, there is
         * nothing to wait for: this ack and any before it go now. */
        acks_flush(w);
        if (!ack_with_next_pull(w, reply))
            jet__publish_ack(e, reply, "+ACK");
        return;
    }
    g_mutex_lock(&w->ack_lock);
    if (w->n_acks == 0)
        w->acks_since_us = now_us();
    w->acks[w->n_acks++] = g_strdup(reply);
    gboolean full = w->n_acks == ACK_BATCH_MAX;
    g_mutex_unlock(&w->ack_lock);
    if (full)
        acks_flush(w);
}

/* --- pulls --------------------------------------------------------------- */

static guint owed(const Worker *w)
{
    guint n = 0;
    for (guint i = 0; i < MAX_PULLS; i++)
        if (w->pulls[i].active)
            n += w->pulls[i].batch - w->pulls[i].received;
    return n;
}

static guint active_pulls(const Worker *w)
{
    guint n = 0;
    for (guint i = 0; i < MAX_PULLS; i++)
        n += w->pulls[i].active ? 1 : 0;
    return n;
}

static Pull *find_pull(Worker *w, guint id)
{
    for (guint i = 0; i < MAX_PULLS; i++)
        if (w->pulls[i].active && w->pulls[i].id == id)
            return &w->pulls[i];
    return NULL;
}

static void end_all_pulls(Worker *w)
{
    for (guint i = 0; i < MAX_PULLS; i++) {
        if (w->pulls[i].active)
            jet__pin_pull_over(w->eng, &w->pulls[i]);
        w->pulls[i].active = FALSE;
    }
}

/* The pull request's body: batch messages (alone: one, with no byte
 * budget), an expiry and the binding's heartbeat (none when the expiry is
 * shorter than two: the server would refuse it). */
static void pull_body(JetEngine *e, guint batch, gboolean alone, guint64 expires_ms, const char *pin_id, char *body,
                      gsize size)
{
    guint64 expires_ns = expires_ms * G_GUINT64_CONSTANT(1000000);
    guint64 hb_ns = 2 * e->b->idle_heartbeat_ms <= expires_ms
                        ? e->b->idle_heartbeat_ms * G_GUINT64_CONSTANT(1000000) : 0;
    if (e->b->max_bytes > 0 && !alone)
        snprintf(body, size,
                 "{\"batch\":%u,\"expires\":%" G_GUINT64_FORMAT ",\"idle_heartbeat\":%" G_GUINT64_FORMAT
                 ",\"max_bytes\":%" G_GINT64_FORMAT "}",
                 batch, expires_ns, hb_ns, e->b->max_bytes);
    else
        snprintf(body, size,
                 "{\"batch\":%u,\"expires\":%" G_GUINT64_FORMAT ",\"idle_heartbeat\":%" G_GUINT64_FORMAT "}",
                 batch, expires_ns, hb_ns);
    if (jet__pin_grouped(e)) {
        /* A consumer with a priority group wants it in every pull. */
        char pin[160];
        jet__pin_fields(e, pin_id, pin, sizeof pin);
        gsize n = strlen(body);
        if (n > 0 && n < size)
            snprintf(body + n - 1, size - (n - 1), "%s}", pin);
    }
}

static Pull *free_pull_slot(Worker *w)
{
    for (guint i = 0; i < MAX_PULLS; i++)
        if (!w->pulls[i].active)
            return &w->pulls[i];
    return NULL;
}

/* A pull was sent: it owes batch messages until it ends. */
static void pull_sent(Worker *w, Pull *slot, guint id, guint batch, guint64 expires_ms, gboolean with_ack,
                      gboolean pin_probe)
{
    JetEngine *e = w->eng;
    gint64 now = now_us();
    slot->id = id;
    slot->pin_probe = pin_probe;
    slot->batch = batch;
    slot->received = 0;
    slot->issued_us = now;
    /* The server answers 408 at expiry; this local deadline is the fallback
     * for a pull whose answer never comes. */
    slot->deadline_us = now + (gint64)(expires_ms + 2 * e->b->idle_heartbeat_ms) * 1000;
    slot->active = TRUE;
    /* A fresh pull starts its own heartbeat clock. */
    __atomic_store_n(&w->last_heard_us, now, __ATOMIC_RELAXED);
    JET_STAT_ADD(&w->stats, pulls, 1);
    if (with_ack)
        JET_STAT_ADD(&w->stats, pulls_with_ack, 1);
    jet_log(JET_LOG_DEBUG, e->b->name, "pull-issued", "worker %u pull %u batch %u%s", w->index, id, batch,
            with_ack ? " (with an ack)" : "");
}

static gboolean issue_pull(Worker *w, guint batch)
{
    JetEngine *e = w->eng;
    Pull *slot = free_pull_slot(w);
    if (slot == NULL || batch == 0)
        return FALSE;
    gboolean pin_probe = FALSE;
    char pin_id[JET_PIN_ID_MAX + 1];
    if (!jet__pin_may_pull(w, &pin_probe, pin_id))
        return FALSE;   /* another worker's pull is being pinned: ours would only wait */

    /* Settled means sent: the acks of the last pull go before the next. */
    acks_flush(w);
    gboolean alone = w->alone_next || pin_probe;
    w->alone_next = FALSE;
    if (alone)
        batch = 1;
    guint64 expires_ms = pin_probe ? jet__pin_probe_expires_ms(e) : e->b->expires_ms;
    char body[384];
    pull_body(e, batch, alone, expires_ms, pin_id, body, sizeof body);
    char reply[128];
    guint id = ++w->next_pull_id;
    snprintf(reply, sizeof reply, "%s.%u", w->inbox, id);
    natsStatus s = natsConnection_PublishRequestString(jet_conn_nats(e->conn), e->next_subject, reply, body);
    if (s != NATS_OK) {
        jet_log(JET_LOG_WARNING, e->b->name, "pull-failed", "worker %u: pull not sent: %s", w->index,
                natsStatus_GetText(s));
        Pull none = { .pin_probe = pin_probe };
        jet__pin_pull_over(e, &none);
        return FALSE;
    }
    pull_sent(w, slot, id, batch, expires_ms, FALSE, pin_probe);
    return TRUE;
}

/* The ack of the last message a pull owed, when the worker's loop would
 * send the next pull right after it anyway (strict pacing, nothing
 * outstanding, nothing waiting, not careful, not stopping): one message,
 * "+NXT <pull>", acks it and asks for the next batch, in that order, as the
 * two messages would (docs/engine.md).  FALSE: nothing sent, ack as usual. */
static gboolean ack_with_next_pull(Worker *w, const char *reply)
{
    JetEngine *e = w->eng;
    if (w->sub == NULL || w->ordered != NULL || jet__lanes_on(e) || jet__pin_grouped(e) ||
        engine_stopping(e) || w->alone_next ||
        active_pulls(w) > 0 || waiting_msgs(w) > 0 || w->idle_windows > 0 ||
        jet_conn_generation(e->conn) != w->generation || careful(e) || jet__pulls_paused(e))
        return FALSE;
    Pull *slot = free_pull_slot(w);
    if (slot == NULL)
        return FALSE;
    char body[200] = "+NXT ";
    pull_body(e, e->b->batch, FALSE, e->b->expires_ms, NULL, body + 5, sizeof body - 5);
    char inbox[128];
    guint id = ++w->next_pull_id;
    snprintf(inbox, sizeof inbox, "%s.%u", w->inbox, id);
    if (natsConnection_PublishRequestString(jet_conn_nats(e->conn), reply, inbox, body) != NATS_OK)
        return FALSE;   /* nothing went: the plain ack is tried, and the loop pulls */
    pull_sent(w, slot, id, e->b->batch, e->b->expires_ms, TRUE, FALSE);
    return TRUE;
}

/* A pull is over: count it as an idle window when it brought nothing. */
static void pull_over(Worker *w, Pull *p)
{
    p->active = FALSE;
    jet__pin_pull_over(w->eng, p);
    if (p->received == 0)
        w->idle_windows++;
    else
        w->idle_windows = 0;
}

/* The stream's life as it is now (docs/engine.md, "A stream created
 * again"): read when the consumer the floor is of has changed. */
static void refresh_life(JetEngine *e)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, jet_conn_js(e->conn), e->b->stream, NULL, NULL) != NATS_OK)
        return;
    gint64 created = si->Created;
    jsStreamInfo_Destroy(si);
    g_mutex_lock(&e->floor_lock);
    e->floor_life_ns = created;
    g_mutex_unlock(&e->floor_lock);
}

/* A floor is of one consumer (consumer_ns, its creation time; 0: not
 * known).  A reading of a consumer made since, by anyone, replaces the
 * floor, lower or not (it may count in a new life of the stream, whose
 * life is then read again); a late reading of an older one is dropped. */
static void observe_floor(JetEngine *e, guint64 floor, gint64 consumer_ns)
{
    gboolean other = FALSE;
    g_mutex_lock(&e->floor_lock);
    if (consumer_ns != 0 && consumer_ns < e->floor_consumer_ns) {
        g_mutex_unlock(&e->floor_lock);
        return;
    }
    if (consumer_ns != 0 && consumer_ns != e->floor_consumer_ns) {
        other = e->floor_consumer_ns != 0;
        e->floor_consumer_ns = consumer_ns;
        __atomic_store_n(&e->observed_floor, floor, __ATOMIC_RELAXED);
    } else if (floor > e->observed_floor || e->observed_floor == 0) {
        __atomic_store_n(&e->observed_floor, floor, __ATOMIC_RELAXED);
    }
    e->observed_at_us = now_us();
    g_mutex_unlock(&e->floor_lock);
    if (!other)
        return;
    refresh_life(e);
    if (jet__lanes_on(e)) {
        /* Its delivery count began again at 1: not known until the next. */
        g_mutex_lock(&e->lanes_lock);
        e->lane_next_cseq = 0;
        g_mutex_unlock(&e->lanes_lock);
    }
}

/* The consumer is gone (409 Consumer Deleted, or a probe found nothing):
 * managed bindings re-create it from the last ack floor observed + 1, never
 * from the start of the stream; bound ones wait for it, loudly. */
static void recover_consumer(Worker *w, const char *why)
{
    JetEngine *e = w->eng;
    end_all_pulls(w);
    jet__forget_stream_life(e);
    g_mutex_lock(&e->recover_lock);
    guint64 floor = 0;
    gint64 created = 0;
    int exists = jet_consumer_exists(jet_conn_js(e->conn), e->b, &floor, &created);
    if (exists == 1) {
        /* Another worker, host or the operator put it back already, maybe
         * on a new life of the stream. */
        observe_floor(e, floor, created);
        g_mutex_unlock(&e->recover_lock);
        return;
    }
    g_mutex_lock(&e->floor_lock);
    guint64 start = e->observed_floor + 1;
    g_mutex_unlock(&e->floor_lock);
    JET_STAT_ADD(&w->stats, resubscribes, 1);
    g_atomic_int_set(&e->recovering, 1);
    if (e->b->manage == JET_MANAGE_CREATE)
        jet_log(JET_LOG_ERROR, e->b->name, "consumer-gone",
                "consumer %s/%s is gone (%s); re-creating it from stream seq %" G_GUINT64_FORMAT
                " (the last ack floor observed + 1)", e->b->stream, e->b->consumer, why, start);
    else
        jet_log(JET_LOG_ERROR, e->b->name, "consumer-gone",
                "consumer %s/%s is gone (%s); manage = bind: waiting for it to be put back",
                e->b->stream, e->b->consumer, why);
    if (jet__lanes_on(e)) {
        /* A new consumer counts its deliveries from 1 again. */
        g_mutex_lock(&e->lanes_lock);
        e->lane_next_cseq = 0;
        g_mutex_unlock(&e->lanes_lock);
    }
    g_autoptr(GError) err = NULL;
    JetConsumerFacts facts;
    memset(&facts, 0, sizeof facts);
    g_mutex_lock(&e->floor_lock);
    gint64 life = e->floor_life_ns;
    g_mutex_unlock(&e->floor_lock);
    if (!jet_consumer_ensure_retrying(jet_conn_nats(e->conn), jet_conn_js(e->conn), e->b, start, life, 0,
                                      &e->stopping, &facts, &err)) {
        jet_log(JET_LOG_WARNING, e->b->name, "resubscribing", "stopped while recovering: %s", err->message);
    } else {
        /* From now on the floor is the new consumer's, in the stream's
         * life it was made in (a new one: the floor before counts nothing). */
        g_mutex_lock(&e->floor_lock);
        __atomic_store_n(&e->observed_floor, facts.ack_floor_stream, __ATOMIC_RELAXED);
        e->floor_consumer_ns = facts.consumer_created_ns;
        if (facts.stream_created_ns != 0)
            e->floor_life_ns = facts.stream_created_ns;
        g_mutex_unlock(&e->floor_lock);
        jet_log(JET_LOG_INFO, e->b->name, "subscribed", "consumer %s/%s is back", e->b->stream, e->b->consumer);
        jet__pin_reread(e);   /* a consumer put back by someone else may name another group, or none */
    }
    g_atomic_int_set(&e->consumer_missing, 0);
    g_atomic_int_set(&e->recovering, 0);
    g_mutex_unlock(&e->recover_lock);
}

/* After two idle windows in a row: is the consumer still there?  (A pull to
 * a consumer that does not exist gets no answer at all on 2.9.10.) */
static void probe_consumer(Worker *w)
{
    JetEngine *e = w->eng;
    w->idle_windows = 0;
    guint64 floor = 0;
    gint64 created = 0;
    int exists = jet_consumer_exists(jet_conn_js(e->conn), e->b, &floor, &created);
    if (exists == 1)
        observe_floor(e, floor, created);
    else if (exists == 0)
        recover_consumer(w, "a probe after two idle windows found no consumer");
}

static void guard_sleep(Worker *w)
{
    gint64 until = now_us() + GUARD_DELAY_US;
    while (!engine_stopping(w->eng) && now_us() < until)
        g_usleep(20000);
}

static void on_status(Worker *w, natsMsg *m, int code, const char *desc)
{
    JetEngine *e = w->eng;
    JET_STAT_ADD(&w->stats, statuses, 1);
    const char *subj = natsMsg_GetSubject(m);
    const char *dot = subj != NULL ? strrchr(subj, '.') : NULL;
    guint id = dot != NULL ? (guint)g_ascii_strtoull(dot + 1, NULL, 10) : 0;
    Pull *p = find_pull(w, id);
    if (p == NULL) {
        /* It answers a pull that is already over (typically the server's
         * expiry after our local deadline): it must not end the live one. */
        JET_STAT_ADD(&w->stats, stale_statuses, 1);
        return;
    }
    JetPullStatusKind kind = jet_pull_status_classify(code, desc, p->received);
    gboolean early = now_us() - p->issued_us < (gint64)e->b->expires_ms * 500;
    if (code == 423 && jet__pin_grouped(e)) {
        /* The pin we sent is not the server's: the next pull asks for one
         * at once (only a pull with a wrong id gets this: no loop). */
        pull_over(w, p);
        jet__pin_refused(w, code, desc);
        return;
    }
    if (kind != JET_PULL_INVALID)
        w->invalid_backoff_ms = 0;
    switch (kind) {
    case JET_PULL_HEARTBEAT:
        return;
    case JET_PULL_END:
        pull_over(w, p);
        if (p->received == 0 && early)
            guard_sleep(w);
        return;
    case JET_PULL_END_GUARDED:
    case JET_PULL_UNKNOWN:
        pull_over(w, p);
        jet_log(kind == JET_PULL_UNKNOWN ? JET_LOG_WARNING : JET_LOG_INFO, e->b->name, "pull-ended",
                "worker %u pull %u: %d %s", w->index, id, code, desc != NULL ? desc : "");
        if (p->received == 0)
            guard_sleep(w);
        return;
    case JET_PULL_END_TOO_LARGE:
        pull_over(w, p);
        w->alone_next = TRUE;
        jet_log(JET_LOG_WARNING, e->b->name, "message-too-large",
                "worker %u: the next message exceeds max_bytes %" G_GINT64_FORMAT "; fetching it alone",
                w->index, e->b->max_bytes);
        return;
    case JET_PULL_CONSUMER_GONE:
        pull_over(w, p);
        recover_consumer(w, "the server said 409 Consumer Deleted");
        return;
    case JET_PULL_INVALID:
        /* The request does not fit the consumer (an operator's limit): it
         * cannot heal by itself, so the binding says so loudly and re-tries
         * only slowly, never in a hot loop, never taking others down. */
        pull_over(w, p);
        /* The consumer's priority group changed under us (an operator, or
         * a host of another version, updated it): pulls follow it. */
        if (code == 400 && desc != NULL && (strstr(desc, "Priority") != NULL || strstr(desc, "Pinned") != NULL))
            jet__pin_reread(e);
        w->invalid_backoff_ms = w->invalid_backoff_ms == 0 ? 1000 : MIN(w->invalid_backoff_ms * 2, 30000);
        JET_STAT_ADD(&w->stats, refused_pulls, 1);
        jet_log(JET_LOG_ERROR, e->b->name, "failed",
                "worker %u: the server refused the pull: %d %s; fix the binding or the consumer "
                "(retrying in %" G_GUINT64_FORMAT " ms)",
                w->index, code, desc != NULL ? desc : "", w->invalid_backoff_ms);
        {
            gint64 until = now_us() + (gint64)w->invalid_backoff_ms * 1000;
            while (!engine_stopping(e) && now_us() < until)
                g_usleep(20000);
        }
        return;
    }
}

static void release_item(Worker *w, Item *it)
{
    JetEngine *e = w->eng;
    if (it->is_delivery) {
        gboolean stale = jet__release_hold(e, it);
        if (!stale) {
            JetAckMeta meta;
            if (jet_ack_subject_parse(natsMsg_GetReply(it->msg), &meta))
                jet__record_release(e, it, &meta);
            jet__publish_ack(e, natsMsg_GetReply(it->msg), "-NAK");
            JET_STAT_ADD(&w->stats, released, 1);
        }
    }
    natsMsg_Destroy(it->msg);
    g_free(it);
}

void jet__release_item(Worker *w, Item *it)
{
    release_item(w, it);
}

/* Frees what waits to be freed (the worker's thread only). */
static void reap_flush(Worker *w)
{
    for (guint i = 0; i < w->n_reap; i++)
        natsMsg_Destroy(w->reap[i]);
    w->n_reap = 0;
    w->reap_bytes = 0;
}

static void reap(Worker *w, natsMsg *m)
{
    w->reap[w->n_reap++] = m;
    w->reap_bytes += (gsize)MAX(natsMsg_GetDataLength(m), 0);
    if (w->n_reap == REAP_MAX || w->reap_bytes >= REAP_BYTES)
        reap_flush(w);
}

static void take_one(Worker *w, Item *it)
{
    JetEngine *e = w->eng;
    natsMsg *m = it->msg;
    int code;
    const char *desc;
    if (!it->is_delivery) {
        if (jet_nats_status(m, &code, &desc))
            on_status(w, m, code, desc);
        else if (g_strcmp0(natsMsg_GetSubject(m), w->wake_subject) != 0)
            JET_STAT_ADD(&w->stats, not_jetstream, 1);
        natsMsg_Destroy(m);
        g_free(it);
        return;
    }

    guint held = 1 + waiting_msgs(w);   /* this one and those behind it */
    JET_STAT_MAX(&w->stats, max_held, held);

    JetAckMeta meta;
    if (!jet_ack_subject_parse(natsMsg_GetReply(m), &meta)) {
        /* A delivery we cannot read: never dropped, never a crash. */
        jet__release_hold(e, it);
        jet__capture_malformed(e, it);
        natsMsg_Destroy(m);
        g_free(it);
        return;
    }
    jet__pin_learn(e, m, meta.stream_seq);
    /* Count it against the oldest pull still owed messages. */
    Pull *p = NULL;
    for (guint i = 0; i < MAX_PULLS; i++) {
        Pull *q = &w->pulls[i];
        if (q->active && q->received < q->batch && (p == NULL || q->id < p->id))
            p = q;
    }
    if (p != NULL) {
        if (++p->received == p->batch)
            pull_over(w, p);
    } else {
        JET_STAT_ADD(&w->stats, late_messages, 1);
    }
    if (jet__lanes_on(e)) {
        jet__lanes_route(w, it, &meta);   /* its lane hands it to a runner */
        return;
    }
    if (!jet__fence_wait(e)) {
        release_item(w, it);   /* the claim is gone: never handled here */
        return;
    }
    if (e->take_hook != NULL)
        e->take_hook(w->index, held, e->take_hook_data);
    jet__deliver(e, it, &meta, NULL);
    reap(w, m);
    g_free(it);
}

static void check_deadlines(Worker *w)
{
    JetEngine *e = w->eng;
    gint64 now = now_us();
    gint64 heard = __atomic_load_n(&w->last_heard_us, __ATOMIC_RELAXED);
    gint64 hb_us = (gint64)e->b->idle_heartbeat_ms * 1000;
    for (guint i = 0; i < MAX_PULLS; i++) {
        Pull *p = &w->pulls[i];
        if (!p->active)
            continue;
        if (now > p->deadline_us) {
            pull_over(w, p);
            continue;
        }
        /* Two heartbeats with nothing at all from the server: the pull died
         * silently (a reconnect, a killed server).  Anything still waiting
         * to be taken (after a long handler) is the server speaking. */
        if (hb_us > 0 && now - heard > 2 * hb_us && now - p->issued_us > 2 * hb_us && waiting_msgs(w) == 0) {
            pull_over(w, p);
            JET_STAT_ADD(&w->stats, missed_heartbeats, 1);
            jet_log(JET_LOG_WARNING, e->b->name, "missed-heartbeats",
                    "worker %u pull %u: nothing from the server for %" G_GINT64_FORMAT " ms; re-pulling",
                    w->index, p->id, (now - heard) / 1000);
        }
    }
}

static gpointer worker_main(gpointer data)
{
    Worker *w = data;
    JetEngine *e = w->eng;
    const guint batch = e->b->batch;
    const guint threshold = e->b->threshold;

    w->generation = jet_conn_generation(e->conn);
    gboolean lanes = jet__lanes_on(e);
    if (lanes)
        jet__lanes_start(w);
    while (!engine_stopping(e)) {
        guint gen = jet_conn_generation(e->conn);
        if (gen != w->generation) {
            /* A reconnect voids the server's waiting pulls: re-pull now. */
            w->generation = gen;
            end_all_pulls(w);
        }
        if (w->idle_windows >= 2 && active_pulls(w) == 0)
            probe_consumer(w);
        guint buffered = waiting_msgs(w);
        gint64 acks_left_us = acks_due(w, ACK_COALESCE_US);
        guint n_active = active_pulls(w);
        gboolean care = careful(e);
        gint64 take_ms = TAKE_STEP_US / 1000;
        if (jet__pulls_paused(e)) {
            /* The breaker's pause: nothing new is asked for. */
        } else if (lanes) {
            /* One pull at a time, sized by what the lanes can take in. */
            guint n = n_active == 0 && buffered == 0 ? jet__lanes_pull_size(w, &take_ms) : 0;
            if (n > 0)
                issue_pull(w, care ? 1 : n);
        } else if (n_active == 0 && buffered == 0) {
            if (!care)
                issue_pull(w, batch);
            else if (w->index == careful_worker(e))
                issue_pull(w, 1);
        } else if (!care && threshold > 0 && n_active == 1) {
            /* What is left to handle: a pull's messages count as received
             * when taken, so what it still owes includes what waits here.
             * The next pull asks for batch minus what the server still
             * owes: held at most batch + threshold. */
            guint left = owed(w);
            if (left <= threshold) {
                guint from_server = left > buffered ? left - buffered : 0;
                if (issue_pull(w, batch - from_server))
                    JET_STAT_ADD(&w->stats, early_pulls, 1);
            }
        }

        /* Acks waiting for company wait no longer than they may. */
        Item *it = take_next(w, acks_left_us > 0 ? (acks_left_us + 999) / 1000 : take_ms);
        if (it != NULL)
            take_one(w, it);
        else
            reap_flush(w);   /* idle: nothing is kept for long */
        if (lanes)
            jet__lanes_resolve_some(w);
        check_deadlines(w);
    }

    acks_flush(w);
    reap_flush(w);
    /* Drain: stop the inbox (the server drops the pulls' interest; nats.c
     * flushes, so everything sent before that is received), then release
     * everything that arrived and was not handled: what was moved aside
     * first, then the subscription until the drain completes. */
    natsSubscription_Drain(w->sub);
    g_mutex_lock(&w->take_lock);
    Item *it;
    while ((it = g_queue_pop_head(&w->moved)) != NULL) {
        g_atomic_int_add(&w->n_moved, -1);
        release_item(w, it);
    }
    gint64 deadline = now_us() + 5 * G_USEC_PER_SEC;
    for (;;) {
        gint64 left_ms = (deadline - now_us()) / 1000;
        natsMsg *m = NULL;
        if (left_ms <= 0 || natsSubscription_NextMsg(&m, w->sub, left_ms) != NATS_OK)
            break;   /* drained (or closed, or out of time) */
        release_item(w, arrive(w, m, now_us()));
    }
    g_mutex_unlock(&w->take_lock);
    natsConnection_FlushTimeout(jet_conn_nats(e->conn), 2000);
    return NULL;
}

/* Reads consumer info: the ack floor (recovery starts there) and, with a
 * floor monitor, a stall sample. */
static void observe_consumer(JetEngine *e)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    if (js_GetConsumerInfo(&ci, jet_conn_js(e->conn), e->b->stream, e->b->consumer, NULL, &jerr) != NATS_OK) {
        if (jerr == JSConsumerNotFoundErr)
            g_atomic_int_set(&e->consumer_missing, 1);
        return;
    }
    g_atomic_int_set(&e->consumer_missing, 0);
    __atomic_store_n(&e->num_pending, (gint64)ci->NumPending, __ATOMIC_RELAXED);
    __atomic_store_n(&e->num_ack_pending, (gint64)ci->NumAckPending, __ATOMIC_RELAXED);
    observe_floor(e, ci->AckFloor.Stream, ci->Created);
    if (jet__lanes_on(e))
        jet__lanes_floor(e, ci->AckFloor.Stream);
    if (e->floor != NULL) {
        JetFloorSample sample = {
            .now_ns = g_get_real_time() * 1000,
            .ack_floor = ci->AckFloor.Stream,
            .delivered = ci->Delivered.Stream,
            .num_ack_pending = ci->NumAckPending,
            .max_ack_pending = ci->Config->MaxAckPending,
            .num_waiting = ci->NumWaiting,
            .num_pending = ci->NumPending,
        };
        g_mutex_lock(&e->lease_lock);
        GHashTableIter iter;
        gpointer key;
        g_hash_table_iter_init(&iter, e->held);
        while (!sample.holds_next && g_hash_table_iter_next(&iter, &key, NULL))
            sample.holds_next = ((Item *)key)->stream_seq == sample.ack_floor + 1;
        g_mutex_unlock(&e->lease_lock);
        JetFloorReport report;
        jet_floor_monitor_observe(e->floor, &sample, &report);
        char line[512];
        if (report.log_line) {
            jet_floor_report_format(&report, FALSE, line, sizeof line);
            g_autofree char *lane = jet__lanes_on(e) ? jet__lanes_describe(e, sample.ack_floor + 1) : NULL;
            jet_log(JET_LOG_WARNING, e->b->name, "floor-stalled", "%s%s%s", line, lane != NULL ? "; " : "",
                    lane != NULL ? lane : "");
        }
        if (report.log_saturation) {
            jet_floor_report_format(&report, TRUE, line, sizeof line);
            jet_log(JET_LOG_WARNING, e->b->name, "ack-pending-saturated", "%s", line);
        }
    }
    jsConsumerInfo_Destroy(ci);
}

/* A binding that holds messages and has ended no handling for floor_age is
 * named once, whatever the ack floor does (another host may move it):
 * the same condition takes it out of /readyz (docs/operations.md). */
static void observe_idle(JetEngine *e)
{
    if (e->b->floor_age_ms == 0)
        return;
    JetEngineHealth h;
    jet_engine_health(e, &h);
    gboolean idle = h.idle_holding_ms >= (gint64)e->b->floor_age_ms;
    if (idle && !e->idle_logged) {
        g_autofree char *lane = NULL;
        if (jet__lanes_on(e)) {
            guint64 floor = __atomic_load_n(&e->observed_floor, __ATOMIC_RELAXED);
            lane = jet__lanes_describe(e, floor + 1);
        }
        jet_log(JET_LOG_WARNING, e->b->name, "binding-idle",
                "holds %u message(s) and has ended no handling for %" G_GINT64_FORMAT " ms (floor_age %"
                G_GUINT64_FORMAT " ms)%s%s", h.buffered, h.idle_holding_ms, e->b->floor_age_ms,
                lane != NULL ? "; " : "", lane != NULL ? lane : "");
    } else if (!idle && e->idle_logged && h.idle_holding_ms == 0) {
        jet_log(JET_LOG_INFO, e->b->name, "binding-idle-cleared", "handling again");
    }
    if (idle)
        e->idle_logged = TRUE;
    else if (h.idle_holding_ms == 0)
        e->idle_logged = FALSE;
}

/* --- the lease keeper ---------------------------------------------------- */

/* A handler past handler_timeout (under the lease lock): its lease stops
 * (the delivery is stale: it may still be acked or captured when the
 * handler returns, never released or recorded), it leaves the isolation
 * gate so that nothing waits behind it, its worker's waiting messages are
 * released, and it is reported at once and then periodically. */
static void handler_hung(JetEngine *e, Item *it, gint64 now, gint64 limit_us)
{
    gint64 elapsed_ms = (now - it->handler_since_us) / 1000;
    if (!it->stale) {
        it->stale = TRUE;
        it->hung_logged_us = now;
        if (it->in_gate && !it->hung) {
            /* Out of the gate on its behalf, so nothing waits behind it; its
             * worker, should it ever return, must not leave again. */
            it->hung = TRUE;
            jet_isolation_leave(&e->isolation, it->alone);
        }
        if (it->worker < e->n_workers)
            g_atomic_int_set(&e->workers[it->worker].hung, 1);
        JET_STAT_ADD(&e->shared_stats, lease_lapsed, 1);
        JET_STAT_ADD(&e->shared_stats, hung_handlers, 1);
        jet_log_fields(JET_LOG_ERROR, e->b->name, "handler-hung",
                       &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, it->stream_seq), 1,
                "stream seq %" G_GUINT64_FORMAT ": the handler has run for %" G_GINT64_FORMAT " ms, past "
                "handler_timeout %" G_GUINT64_FORMAT " ms: its lease stops (the server delivers it again after "
                "AckWait), worker %u is out until it returns, and what waits for that worker is released",
                it->stream_seq, elapsed_ms, e->b->handler_timeout_ms, it->worker);
        return;
    }
    jet__hung_still(e, it, now, limit_us);
}

void jet__hung_still(JetEngine *e, Item *it, gint64 now, gint64 limit_us)
{
    gint64 repeat_us = CLAMP(limit_us, G_USEC_PER_SEC, 60 * G_USEC_PER_SEC);
    if (now - it->hung_logged_us >= repeat_us) {
        it->hung_logged_us = now;
        jet_log_fields(JET_LOG_ERROR, e->b->name, "handler-hung",
                       &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, it->stream_seq), 1,
                "stream seq %" G_GUINT64_FORMAT ": the handler is still running after %" G_GINT64_FORMAT " ms (worker %u)",
                it->stream_seq, (now - it->handler_since_us) / 1000, it->worker);
    }
}

/* Every worker hung (or one, with exit_on_any_hung): the binding can do
 * nothing more, or the operator wants no hung handler kept; tell the host,
 * once (under the lease lock). */
static void every_worker_hung(JetEngine *e)
{
    if (e->hung_fired || e->hung_hook == NULL)
        return;
    guint hung = 0;
    guint first = jet__lanes_on(e) ? 1 : 0;   /* a lane router runs no handler */
    for (guint i = first; i < e->n_workers; i++)
        hung += g_atomic_int_get(&e->workers[i].hung) ? 1 : 0;
    if (hung == 0 || (hung < e->n_workers - first && !e->b->exit_on_any_hung))
        return;
    e->hung_fired = TRUE;
    e->hung_hook(e, e->b->name, hung, e->hung_hook_data);
}

static gpointer keeper_main(gpointer data)
{
    JetEngine *e = data;
    gint64 ack_wait_us = MAX(e->facts.ack_wait_ms, 300) * 1000;
    gint64 every_us = ack_wait_us / 3;
    gint64 limit_us = (gint64)e->b->handler_timeout_ms * 1000;

    gint64 next_observe = 0;
    gint64 observe_every_us = FLOOR_OBSERVE_US;
    if (e->b->floor_age_ms > 0)
        observe_every_us = MIN(observe_every_us,
                               (gint64)jet_floor_monitor_poll_interval_ms(e->b->floor_age_ms) * 1000);
    g_mutex_lock(&e->lease_lock);
    while (!e->keeper_quit) {
        if (now_us() >= next_observe) {
            /* The ack floor, so a consumer that has to be re-created starts
             * where the fleet was, not at the start of the stream.  What
             * waits behind a busy worker is moved aside first, so the floor
             * monitor sees every message this host holds. */
            g_mutex_unlock(&e->lease_lock);
            for (guint i = 0; i < e->n_workers; i++)
                move_waiting(&e->workers[i], MIN(every_us / 2, FLOOR_OBSERVE_US));
            observe_consumer(e);
            observe_idle(e);
            next_observe = now_us() + observe_every_us;
            g_mutex_lock(&e->lease_lock);
            if (e->keeper_quit)
                break;
        }
        gint64 step_us = MIN(every_us / 2, FLOOR_OBSERVE_US);
        gint64 until = g_get_monotonic_time() + step_us;
        g_cond_wait_until(&e->lease_cond, &e->lease_lock, until);
        if (e->keeper_quit)
            break;
        /* What waits behind a busy worker is held too: it may have waited
         * unseen for up to a step, so its first extension comes a step
         * sooner (a delivery is extended within AckWait / 2 of arriving). */
        g_mutex_unlock(&e->lease_lock);
        for (guint i = 0; i < e->n_workers; i++) {
            if (g_atomic_int_get(&e->workers[i].hung))
                release_waiting(&e->workers[i]);
            else
                move_waiting(&e->workers[i], step_us);
            acks_due(&e->workers[i], ACK_COALESCE_US);   /* behind a slow handler */
        }
        g_mutex_lock(&e->lease_lock);
        gint64 now = now_us();
        GHashTableIter iter;
        gpointer key;
        g_hash_table_iter_init(&iter, e->held);
        while (g_hash_table_iter_next(&iter, &key, NULL)) {
            Item *it = key;
            if (limit_us > 0 && it->handler_since_us > 0 && now - it->handler_since_us > limit_us) {
                handler_hung(e, it, now, limit_us);
                continue;
            }
            if (it->stale)
                continue;
            if (now - it->extended_us >= every_us) {
                natsConnection_PublishString(jet_conn_nats(e->conn), natsMsg_GetReply(it->msg), "+WPI");
                it->extended_us = now;
                JET_STAT_ADD(&e->shared_stats, lease_extensions, 1);
            }
        }
        every_worker_hung(e);
    }
    g_mutex_unlock(&e->lease_lock);
    return NULL;
}

/* --- lifecycle ------------------------------------------------------------ */

JetEngine *jet_engine_new(JetConn *conn, const JetBindingConfig *b, JetInstance *inst,
                          const JetConsumerFacts *facts)
{
    JetEngine *e = g_new0(JetEngine, 1);
    e->conn = conn;
    e->b = b;
    e->inst = inst;
    if (facts != NULL)
        e->facts = *facts;
    else
        e->facts.ack_wait_ms = (gint64)b->ack_wait_ms;
    e->observed_floor = e->facts.ack_floor_stream;
    e->floor_life_ns = e->facts.stream_created_ns;
    e->floor_consumer_ns = e->facts.consumer_created_ns;
    e->num_pending = e->num_ack_pending = -1;
    jet_binding_settle_policy(b, e->facts.max_deliver, &e->policy);
    gboolean ordered = JET_KIND_IS_ORDERED(b->kind);
    if (!ordered)
        e->next_subject = g_strdup_printf("%s.CONSUMER.MSG.NEXT.%s.%s", jet_conn_api_prefix(conn), b->stream,
                                          b->consumer);
    g_mutex_init(&e->floor_lock);
    g_mutex_init(&e->pin_lock);
    jet__pin_set(e, e->facts.pin_group, e->facts.pinned);
    g_mutex_init(&e->lease_lock);
    g_mutex_init(&e->recover_lock);
    jet_isolation_init(&e->isolation);
    e->host_name = g_strdup(g_get_host_name());
    if (b->floor_age_ms > 0 && !ordered) {
        JetFloorPolicy fp = { .floor_age_ns = (gint64)b->floor_age_ms * 1000000 };
        e->floor = jet_floor_monitor_new(&fp);
    }
    e->breaker = (JetBreakerPolicy){
        .mode = b->breaker,
        .floor_age_ns = (gint64)b->floor_age_ms * 1000000,
        .min_deliveries = b->min_deliveries,
    };
    g_cond_init(&e->lease_cond);
    e->held = g_hash_table_new(g_direct_hash, g_direct_equal);
    e->n_workers = ordered ? 1 : MAX(b->workers, 1);
    if (!ordered && b->lane_key.kind != JET_LANE_KEY_OFF) {
        e->lanes = jet_lanes_new();
        g_mutex_init(&e->lanes_lock);
        g_cond_init(&e->lanes_cond);
        e->n_workers++;   /* worker 0 routes, the others run */
    }
    e->workers = g_new0(Worker, e->n_workers);
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        w->eng = e;
        w->index = i;
        g_mutex_init(&w->take_lock);
        g_queue_init(&w->moved);
        g_mutex_init(&w->ack_lock);
        if (ordered)
            w->ordered = jet__ordered_new();
    }
    jet_conn_on_reconnect(conn, on_reconnect, e);
    return e;
}

void jet_engine_set_ledger(JetEngine *e, JetLedger *ledger, const char *host_name)
{
    e->ledger = e->b->ledger ? ledger : NULL;
    if (host_name != NULL) {
        g_free(e->host_name);
        e->host_name = g_strdup(host_name);
    }
}

void jet_engine_floor_stats(JetEngine *e, JetFloorStats *out)
{
    if (e->floor != NULL)
        jet_floor_monitor_stats(e->floor, out);
    else
        memset(out, 0, sizeof *out);
}

void jet_engine_set_take_hook(JetEngine *e, JetEngineTakeHook fn, gpointer data)
{
    e->take_hook = fn;
    e->take_hook_data = data;
}

void jet_engine_set_hung_hook(JetEngine *e, JetEngineHungHook fn, gpointer data)
{
    e->hung_hook = fn;
    e->hung_hook_data = data;
}

void jet_engine_set_clean_predecessor(JetEngine *e)
{
    e->clean_predecessor = TRUE;
}

gboolean jet_engine_drained_clean(JetEngine *e)
{
    JetEngineStats st;
    jet_engine_stats(e, &st);
    return st.uncertain == 0 && st.stranded == 0;
}

void jet_engine_set_loss_hook(JetEngine *e, JetEngineLossHook fn, gpointer data)
{
    e->loss_hook = fn;
    e->loss_hook_data = data;
}

void jet_engine_set_settle_hook(JetEngine *e, JetEngineSettleHook fn, gpointer data)
{
    e->settle_hook = fn;
    e->settle_hook_data = data;
}

gboolean jet_engine_bind(JetEngine *e, guint attempts, GError **error)
{
    if (!JET_KIND_IS_ORDERED(e->b->kind))
        return TRUE;   /* bound by consumer_setup before the engine existed */
    return jet__ordered_bind(e, MAX(attempts, 1), error);
}

void jet_engine_start(JetEngine *e)
{
    /* Before the first delivery: are empty messages' blocks read as
     * delivered (nats_raw.h)?  Once per process. */
    jet_nats_raw_probe(jet_conn_nats(e->conn));
    jet__progress(e);
    g_atomic_int_set(&e->started, 1);
    gboolean ordered = JET_KIND_IS_ORDERED(e->b->kind);
    if (ordered)
        jet__ordered_transport_init(&e->transport);
    else
        e->transport = jet__engine_transport;
    e->executor = jet_executor_new(e->b, &e->policy, e->inst, e->host_name,
                                   e->ledger != NULL ? jet_ledger_bucket(e->ledger) : NULL, &e->transport, e);
    /* What a previous run held when it ended comes back within AckWait:
     * if that run died, some of it is a suspect.  Careful until it is all
     * settled (the floor passes what had been delivered) or AckWait x 2. */
    if (e->facts.num_ack_pending > 0 && e->clean_predecessor) {
        jet_log(JET_LOG_INFO, e->b->name, "restart-released",
                "%" G_GINT64_FORMAT " message(s) held unacked at start, up to stream seq %" G_GUINT64_FORMAT
                ": released by this binding's previous engine in this process (a reload), their releases "
                "recorded; pulling as usual", e->facts.num_ack_pending, e->facts.delivered_stream);
    } else if (e->facts.num_ack_pending > 0) {
        e->start_careful_until_us = now_us() + careful_span_us(e);
        e->start_careful_floor = e->facts.delivered_stream;
        jet_log(JET_LOG_INFO, e->b->name, "careful",
                "%" G_GINT64_FORMAT " message(s) were held unacked at start, up to stream seq %" G_GUINT64_FORMAT
                ": pulling one message at a time until the ack floor passes it or %" G_GINT64_FORMAT " ms have "
                "passed, as some may come back as suspects", e->facts.num_ack_pending, e->facts.delivered_stream,
                careful_span_us(e) / 1000);
    }
    if (!ordered)
        jet__pin_take(e);
    natsConnection *nc = jet_conn_nats(e->conn);
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        if (jet__lanes_on(e) && i > 0) {
            g_autofree char *rname = g_strdup_printf("jet-%s-%u", e->b->name, i);
            w->thread = g_thread_new(rname, jet__lanes_runner_main, w);
            continue;
        }
        char *inbox = NULL;
        natsInbox_Create((natsInbox **)&inbox);
        w->inbox = g_strdup(inbox);
        natsInbox_Destroy((natsInbox *)inbox);
        g_autofree char *subject = g_strdup_printf("%s.*", w->inbox);
        w->wake_subject = g_strdup_printf("%s.0", w->inbox);
        /* Synchronous: the worker takes each message itself, without a hop
         * through a delivery thread (one thread wake-up less per message). */
        natsStatus s = natsConnection_SubscribeSync(&w->sub, nc, subject);
        if (s == NATS_OK)
            /* Unlimited: boundedness comes from the pull, never from a drop. */
            s = natsSubscription_SetPendingLimits(w->sub, -1, -1);
        if (s != NATS_OK)
            g_error("binding %s: cannot subscribe to its inbox: %s", e->b->name, natsStatus_GetText(s));
        g_autofree char *name = g_strdup_printf("jet-%s-%u", e->b->name, i);
        w->thread = g_thread_new(name, ordered ? jet__ordered_main : worker_main, w);
    }
    if (ordered) {
        /* Nothing is acked, so there is no lease to keep (docs/ordered.md);
         * a handler past handler_timeout is still reported. */
        jet_log(JET_LOG_INFO, e->b->name, "subscribed", "ordered on %s, batch %u", e->b->stream, e->b->batch);
        if (e->b->handler_timeout_ms > 0) {
            g_autofree char *wname = g_strdup_printf("jet-%s-watch", e->b->name);
            e->keeper = g_thread_new(wname, jet__ordered_watch_main, e);
        }
        return;
    }
    if (jet__lanes_on(e)) {
        g_autofree char *key = jet_lane_key_format(&e->b->lane_key);
        jet_log(JET_LOG_INFO, e->b->name, "subscribed", "%u worker(s) on %s/%s in lanes by %s, batch %u, at most %u "
                "held behind a lane's head", e->n_workers - 1, e->b->stream, e->b->consumer, key, e->b->batch,
                e->b->max_lane_held);
    } else {
        jet_log(JET_LOG_INFO, e->b->name, "subscribed", "%u worker(s) on %s/%s, batch %u", e->n_workers,
                e->b->stream, e->b->consumer, e->b->batch);
    }
    g_autofree char *kname = g_strdup_printf("jet-%s-lease", e->b->name);
    e->keeper = g_thread_new(kname, keeper_main, e);
}

void jet_engine_stop(JetEngine *e)
{
    g_atomic_int_set(&e->stopping, 1);
    jet_instance_set_stopping(e->inst);
    for (guint i = 0; i < e->n_workers; i++)
        wake_worker(&e->workers[i]);
}

void jet_engine_join(JetEngine *e)
{
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        if (w->thread != NULL) {
            g_thread_join(w->thread);
            w->thread = NULL;
        }
    }
    if (jet__lanes_on(e) && e->workers[0].sub != NULL) {
        jet__lanes_release_all(e, &e->workers[0]);
        natsConnection_FlushTimeout(jet_conn_nats(e->conn), 2000);
    }
    if (e->keeper != NULL) {
        g_mutex_lock(&e->lease_lock);
        e->keeper_quit = TRUE;
        g_cond_signal(&e->lease_cond);
        g_mutex_unlock(&e->lease_lock);
        g_thread_join(e->keeper);
        e->keeper = NULL;
    }
}

void jet_engine_free(JetEngine *e)
{
    if (e == NULL)
        return;
    jet_engine_stop(e);
    jet_engine_join(e);
    jet_conn_off_reconnect(e->conn, on_reconnect, e);
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        jet_sub_end_destroy(jet_conn_nats(e->conn), w->sub);
        Item *it;
        while ((it = g_queue_pop_head(&w->moved)) != NULL) {
            if (it->is_delivery)
                jet__release_hold(e, it);
            natsMsg_Destroy(it->msg);
            g_free(it);
        }
        g_mutex_clear(&w->take_lock);
        for (guint k = 0; k < w->n_acks; k++)
            g_free(w->acks[k]);   /* never started, or its drain could not send them */
        g_mutex_clear(&w->ack_lock);
        g_free(w->wake_subject);
        g_free(w->inbox);
        if (w->ordered != NULL)
            jet__ordered_drop(e, w->ordered);   /* bound, never started (another binding failed) */
        jet__ordered_free(w->ordered);
    }
    g_free(e->workers);
    if (e->lanes != NULL) {
        /* Never started: nothing was routed. */
        jet_lanes_free(e->lanes);
        g_mutex_clear(&e->lanes_lock);
        g_cond_clear(&e->lanes_cond);
        g_free(e->lane_filter);
    }
    g_hash_table_unref(e->held);
    g_mutex_clear(&e->floor_lock);
    g_mutex_clear(&e->pin_lock);
    jet_executor_free(e->executor);
    g_mutex_clear(&e->lease_lock);
    g_mutex_clear(&e->recover_lock);
    jet_isolation_clear(&e->isolation);
    jet_floor_monitor_free(e->floor);
    g_free(e->host_name);
    g_cond_clear(&e->lease_cond);
    g_free(e->next_subject);
    g_free(e);
}

void jet_engine_stats(JetEngine *e, JetEngineStats *out)
{
    memset(out, 0, sizeof *out);
    jet_stats_merge(out, &e->shared_stats);
    for (guint i = 0; i < e->n_workers; i++)
        jet_stats_merge(out, &e->workers[i].stats);
    out->observed_floor = __atomic_load_n(&e->observed_floor, __ATOMIC_RELAXED);
}

void jet_engine_health(JetEngine *e, JetEngineHealth *out)
{
    memset(out, 0, sizeof *out);
    out->started = g_atomic_int_get(&e->started) != 0;
    out->recovering = g_atomic_int_get(&e->recovering) != 0 || g_atomic_int_get(&e->consumer_missing) != 0;
    out->num_pending = __atomic_load_n(&e->num_pending, __ATOMIC_RELAXED);
    out->num_ack_pending = __atomic_load_n(&e->num_ack_pending, __ATOMIC_RELAXED);
    gint64 paused_until = __atomic_load_n(&e->paused_until_us, __ATOMIC_RELAXED);
    /* At least 1 until a worker has seen the time and pulls again. */
    out->pulls_paused_ms = paused_until > 0 ? MAX((paused_until - now_us()) / 1000, 1) : 0;
    for (guint i = 0; i < e->n_workers; i++)
        out->hung_workers += g_atomic_int_get(&e->workers[i].hung) ? 1 : 0;
    gint64 oldest = G_MAXINT64;
    g_mutex_lock(&e->lease_lock);
    GHashTableIter iter;
    gpointer key;
    g_hash_table_iter_init(&iter, e->held);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        const Item *it = key;
        if (it->handler_since_us > 0) {
            out->in_handlers++;
        } else {
            out->buffered++;
            oldest = MIN(oldest, it->arrived_us);
        }
    }
    g_mutex_unlock(&e->lease_lock);
    if (out->buffered > 0) {
        gint64 since = MAX(oldest, __atomic_load_n(&e->progress_us, __ATOMIC_RELAXED));
        out->idle_holding_ms = MAX(now_us() - since, 0) / 1000;
    }
}

const char *jet_engine_binding(const JetEngine *e)
{
    return e->b->name;
}
