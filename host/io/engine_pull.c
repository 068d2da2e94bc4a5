/* The pull loop (docs/engine.md): a worker's pulls on its inbox, paced so
 * that what the host holds stays within batch + threshold; what arrives
 * (deliveries, statuses, heartbeats), moved aside and held by the lease
 * keeper while a handler runs; the consumer's floor observed, and the
 * consumer re-created when it is gone.  A durable binding is this loop
 * alone (engine_durable.c); a driver's hooks (engine_driver.h) change how
 * pulls are sized and where a delivery goes (engine_lanes.c). */
#include "engine_private.h"
#include "ack_subject.h"
#include "consumer_setup.h"
#include "log.h"
#include "nats_raw.h"
#include "pull_status.h"
#include "stream_info.h"
#include "stats.h"

#include <stdio.h>
#include <string.h>

static gboolean engine_stopping(JetEngine *e)
{
    return g_atomic_int_get(&e->stopping) != 0;
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
        it->meta_ok = jet_ack_subject_parse(reply, &it->meta);
        if (it->meta_ok)
            it->stream_seq = it->meta.stream_seq;
        g_mutex_lock(&e->lease_lock);
        g_hash_table_add(e->held, it);
        g_mutex_unlock(&e->lease_lock);
    }
    return it;
}

/* The next item for the worker: what the keeper moved aside first, then
 * the subscription, waiting up to timeout_ms.  NULL: nothing came. */
static Item *take_next(Worker *w, gint64 timeout_ms, gint64 *arrived_us)
{
    *arrived_us = 0;
    g_mutex_lock(&w->take_lock);
    Item *it = g_queue_pop_head(&w->moved);
    if (it != NULL) {
        g_atomic_int_add(&w->n_moved, -1);
    } else {
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, w->sub, timeout_ms);
        if (s == NATS_OK) {
            *arrived_us = now_us();
            it = arrive(w, m, *arrived_us);
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

/* The lease keeper's observer, behind a hung handler: what waits for that
 * worker is released (NAK, recorded as a release), never held hostage.
 * Never waits for the worker. */
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

/* --- pulls --------------------------------------------------------------- */

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

gint64 jet__pull_bytes(gint64 max_bytes, guint batch, guint pulls_out, gint64 largest)
{
    if (max_bytes > 0)
        return max_bytes;
    if (largest <= 0)
        return 0;
    gint64 one = largest + PULL_MSG_SLACK;
    gint64 share = PULL_BYTES_CAP / MAX(pulls_out, 1u);
    if ((gint64)batch > share / one)
        return MAX(share, one);
    return 0;
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
    gint64 budget = g_atomic_int_get(&e->budget_refused)
                        ? e->b->max_bytes
                        : jet__pull_bytes(e->b->max_bytes, batch, e->pulls_out, g_atomic_int_get(&e->largest_seen));
    if (budget > 0 && !alone)
        snprintf(body, size,
                 "{\"batch\":%u,\"expires\":%" G_GUINT64_FORMAT ",\"idle_heartbeat\":%" G_GUINT64_FORMAT
                 ",\"max_bytes\":%" G_GINT64_FORMAT "}",
                 batch, expires_ns, hb_ns, budget);
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
    jet__acks_flush(w);
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
gboolean jet__ack_with_next_pull(Worker *w, const char *reply)
{
    JetEngine *e = w->eng;
    if (w->sub == NULL || jet__pin_grouped(e) ||
        engine_stopping(e) || w->alone_next ||
        active_pulls(w) > 0 || jet__waiting_msgs(w) > 0 || w->idle_windows > 0 ||
        jet_conn_generation(e->conn) != w->generation || jet__careful(e) || jet__pulls_paused(e))
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
    /* Once: the keeper may be the caller, and a leader's answer only. */
    if (jet_stream_info_led(&si, jet_conn_js(e->conn), e->b->stream, 0, NULL, NULL) != NATS_OK)
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
    if (e->driver->consumer_new != NULL)
        e->driver->consumer_new(e);   /* its delivery count began again at 1 */
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
    if (e->driver->consumer_new != NULL)
        e->driver->consumer_new(e);   /* a new consumer counts its deliveries from 1 again */
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
                "worker %u: the next message exceeds the pull's byte budget; fetching it alone", w->index);
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
        /* The consumer's MaxRequestMaxBytes refuses the host's own budget:
         * pulls go without one, as they did before it, at once (another
         * worker's pull sent before that is refused too: no error). */
        if (e->b->max_bytes == 0 && desc != NULL && strstr(desc, "MaxRequestMaxBytes") != NULL) {
            if (g_atomic_int_compare_and_exchange(&e->budget_refused, 0, 1))
                jet_log(JET_LOG_WARNING, e->b->name, "pull-budget-refused",
                        "worker %u: the consumer refused the host's byte budget (%d %s): pulls go without one",
                        w->index, code, desc);
            return;
        }
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
            if (it->meta_ok)
                jet__record_release(e, it, &it->meta);
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

/* What every item taken goes through: a status or anything else that is
 * not a delivery is acted on and freed; a delivery whose metadata does not
 * parse is captured as malformed; a delivery counts against its pull.
 * TRUE (meta and *held set) when it is a delivery to handle. */
static gboolean admit(Worker *w, Item *it, JetAckMeta *meta, guint *held)
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
        return FALSE;
    }

    *held = 1 + jet__waiting_msgs(w);   /* this one and those behind it */
    JET_STAT_MAX(&w->stats, max_held, *held);

    if (!it->meta_ok) {
        /* A delivery we cannot read: never dropped, never a crash. */
        jet__release_hold(e, it);
        jet__capture_malformed(e, it);
        natsMsg_Destroy(m);
        g_free(it);
        return FALSE;
    }
    *meta = it->meta;   /* read once, at its arrival */
    /* The largest delivery so far sizes later pulls' byte budget. */
    int size = natsMsg_GetDataLength(m);   /* headers and subjects: PULL_MSG_SLACK */
    for (int seen = g_atomic_int_get(&e->largest_seen); size > seen; seen = g_atomic_int_get(&e->largest_seen))
        if (g_atomic_int_compare_and_exchange(&e->largest_seen, seen, size))
            break;
    jet__pin_learn(e, m, meta->stream_seq);
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
    return TRUE;
}

/* An item taken but not admitted goes back to the head of the line: the
 * next take_next() returns it (and a drain releases it). */
static void put_back(Worker *w, Item *it)
{
    g_mutex_lock(&w->take_lock);
    g_queue_push_head(&w->moved, it);
    g_atomic_int_inc(&w->n_moved);
    g_mutex_unlock(&w->take_lock);
}

/* Whether an item taken while filling a batch may join it: a first
 * delivery.  A status is acted on after the batch, as is a redelivery,
 * which goes to the plugin on its own (docs/batches.md). */
static gboolean joins_batch(Item *it)
{
    return it->meta_ok && it->meta.delivered == 1;
}

/* A handler batch (batch_max above 1): the first delivery, then the first
 * deliveries that arrived behind it, waiting up to batch_wait for more, up
 * to batch_max; handed to the plugin's handle_batch() together
 * (docs/batches.md).  A redelivery comes on its own. */
static void take_batch(Worker *w, Item *first, const JetAckMeta *first_meta, guint held)
{
    JetEngine *e = w->eng;
    const guint max = first_meta->delivered == 1 ? e->b->batch_max : 1;
    g_autofree Item **items = g_new(Item *, max);
    g_autofree JetAckMeta *metas = g_new(JetAckMeta, max);
    items[0] = first;
    metas[0] = *first_meta;
    guint n = 1;
    gint64 until = now_us() + (gint64)e->b->batch_wait_ms * 1000;
    while (n < max && !engine_stopping(e)) {
        gint64 left_ms = MAX(until - now_us(), 0) / 1000;
        if (left_ms == 0 && jet__waiting_msgs(w) == 0)
            break;   /* what has arrived is the batch */
        gint64 arrived_us;
        Item *it = take_next(w, MAX(left_ms, 1), &arrived_us);
        if (it == NULL)
            break;
        if (!joins_batch(it)) {
            put_back(w, it);
            break;
        }
        guint h;
        if (admit(w, it, &metas[n], &h))
            items[n++] = it;
    }
    /* A stop releases what was gathered behind the first, as a drain
     * releases what waits; the first goes on as a single one would. */
    if (engine_stopping(e)) {
        for (guint i = 1; i < n; i++)
            release_item(w, items[i]);
        n = 1;
    }
    if (!jet__fence_wait(e)) {
        for (guint i = 0; i < n; i++)
            release_item(w, items[i]);   /* the claim is gone: never handled here */
        return;
    }
    if (e->take_hook != NULL)
        e->take_hook(w->index, held, e->take_hook_data);
    jet__deliver_batch(e, items, metas, n, NULL);
    for (guint i = 0; i < n; i++) {
        jet_nats_msg_free(items[i]->msg);
        g_free(items[i]);
    }
}

static void take_one(Worker *w, Item *it)
{
    JetEngine *e = w->eng;
    JetAckMeta meta;
    guint held;
    if (!admit(w, it, &meta, &held))
        return;
    if (e->driver->take != NULL) {
        e->driver->take(w, it, &meta);   /* the driver's (a lane hands it to a runner) */
        return;
    }
    if (e->b->batch_max > 1) {
        take_batch(w, it, &meta, held);
        return;
    }
    if (!jet__fence_wait(e)) {
        release_item(w, it);   /* the claim is gone: never handled here */
        return;
    }
    if (e->b->max_in_flight > 0 && !jet__async_admit(e)) {
        release_item(w, it);   /* stopping while max_in_flight were pending: never handled here */
        return;
    }
    if (e->take_hook != NULL)
        e->take_hook(w->index, held, e->take_hook_data);
    if (e->b->max_in_flight > 0 && jet__deliver_async(e, it, &meta))
        return;   /* pending: its completion frees it */
    natsMsg *m = it->msg;
    if (e->b->max_in_flight == 0)
        jet__deliver(e, it, &meta, NULL);
    jet_nats_msg_free(m);
    g_free(it);
}

/* now: the clock as of the last take (a message's arrival, read there). */
static void check_deadlines(Worker *w, gint64 now)
{
    JetEngine *e = w->eng;
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
        if (hb_us > 0 && now - heard > 2 * hb_us && now - p->issued_us > 2 * hb_us && jet__waiting_msgs(w) == 0) {
            pull_over(w, p);
            JET_STAT_ADD(&w->stats, missed_heartbeats, 1);
            jet_log(JET_LOG_WARNING, e->b->name, "missed-heartbeats",
                    "worker %u pull %u: nothing from the server for %" G_GINT64_FORMAT " ms; re-pulling",
                    w->index, p->id, (now - heard) / 1000);
        }
    }
}

gpointer jet__pull_main(gpointer data)
{
    Worker *w = data;
    JetEngine *e = w->eng;
    const guint batch = e->b->batch;
    const guint threshold = e->b->threshold;

    w->generation = jet_conn_generation(e->conn);
    const JetDriver *d = e->driver;
    if (d->pull_start != NULL)
        d->pull_start(w);
    while (!engine_stopping(e)) {
        guint gen = jet_conn_generation(e->conn);
        if (gen != w->generation) {
            /* A reconnect voids the server's waiting pulls: re-pull now. */
            w->generation = gen;
            end_all_pulls(w);
        }
        if (w->idle_windows >= 2 && active_pulls(w) == 0)
            probe_consumer(w);
        guint buffered = jet__waiting_msgs(w);
        gint64 acks_left_us = jet__acks_due_after(w, ACK_COALESCE_US);
        guint n_active = active_pulls(w);
        gboolean care = jet__careful(e);
        gint64 take_ms = TAKE_STEP_US / 1000;
        if (jet__pulls_paused(e)) {
            /* The breaker's pause: nothing new is asked for. */
        } else if (d->pull_size != NULL) {
            /* One pull at a time, sized by the driver (what lanes can take in). */
            guint n = n_active == 0 && buffered == 0 ? d->pull_size(w, &take_ms) : 0;
            if (n > 0)
                issue_pull(w, care ? 1 : n);
        } else if (n_active == 0 && buffered == 0) {
            if (!care)
                issue_pull(w, batch);
            else if (w->index == jet__careful_worker(e))
                issue_pull(w, 1);
        } else if (!care && threshold > 0 && n_active == 1) {
            /* What is left to handle: a pull's messages count as received
             * when taken, so what it still owes includes what waits here.
             * The next pull asks for batch minus what the server still
             * owes: held at most batch + threshold. */
            guint left = jet__owed(w);
            if (left <= threshold) {
                guint from_server = left > buffered ? left - buffered : 0;
                if (issue_pull(w, batch - from_server))
                    JET_STAT_ADD(&w->stats, early_pulls, 1);
            }
        }

        /* Acks waiting for company wait no longer than they may. */
        gint64 arrived_us;
        Item *it = take_next(w, acks_left_us > 0 ? (acks_left_us + 999) / 1000 : take_ms, &arrived_us);
        /* A message just arrived tells the time it came; the handler's
         * time since only delays a deadline to the next turn. */
        gint64 now = arrived_us != 0 ? arrived_us : now_us();
        if (it != NULL)
            take_one(w, it);
        if (d->turn != NULL)
            d->turn(w);
        check_deadlines(w, now);
    }

    jet__acks_flush(w);
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
 * floor monitor, a stall sample.  FALSE when the request went unanswered. */
static gboolean observe_consumer(JetEngine *e)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetConsumerInfo(&ci, jet_conn_js(e->conn), e->b->stream, e->b->consumer, NULL, &jerr);
    if (s != NATS_OK) {
        if (jerr == JSConsumerNotFoundErr)
            g_atomic_int_set(&e->consumer_missing, 1);
        return s != NATS_TIMEOUT;
    }
    g_atomic_int_set(&e->consumer_missing, 0);
    __atomic_store_n(&e->num_pending, (gint64)ci->NumPending, __ATOMIC_RELAXED);
    __atomic_store_n(&e->num_ack_pending, (gint64)ci->NumAckPending, __ATOMIC_RELAXED);
    observe_floor(e, ci->AckFloor.Stream, ci->Created);
    if (e->driver->floor != NULL)
        e->driver->floor(e, ci->AckFloor.Stream);
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
            g_autofree char *lane = e->driver->describe != NULL ? e->driver->describe(e, sample.ack_floor + 1) : NULL;
            jet_log(JET_LOG_WARNING, e->b->name, "floor-stalled", "%s%s%s", line, lane != NULL ? "; " : "",
                    lane != NULL ? lane : "");
        }
        if (report.log_saturation) {
            jet_floor_report_format(&report, TRUE, line, sizeof line);
            jet_log(JET_LOG_WARNING, e->b->name, "ack-pending-saturated", "%s", line);
        }
    }
    jsConsumerInfo_Destroy(ci);
    return TRUE;
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
        if (e->driver->describe != NULL) {
            guint64 floor = __atomic_load_n(&e->observed_floor, __ATOMIC_RELAXED);
            lane = e->driver->describe(e, floor + 1);
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


/* --- the lease keeper's visits (keeper.h runs them) ---------------------------- */

/* On jet-observe: the ack floor, so a consumer that has to be re-created
 * starts where the fleet was, not at the start of the stream.  What waits
 * behind a busy worker is moved aside first, so the floor monitor sees
 * every message this host holds; what waits behind a hung one is released
 * here, not on jet-lease, as each release is written to the attempt ledger
 * (a request that may wait). */
static gboolean keeper_observe(gpointer data)
{
    JetEngine *e = data;
    for (guint i = 0; i < e->n_workers; i++) {
        if (g_atomic_int_get(&e->workers[i].hung))
            release_waiting(&e->workers[i]);
        else
            move_waiting(&e->workers[i], e->keep.lease_every_us);
    }
    gboolean answered = observe_consumer(e);
    observe_idle(e);
    return answered;
}

/* On jet-lease: never waits on the server. */
static void keeper_lease(gpointer data)
{
    JetEngine *e = data;
    gint64 limit_us = (gint64)e->b->handler_timeout_ms * 1000;
    /* What waits behind a busy worker is held too (behind a hung one,
     * until the observer releases it): it may have waited unseen for up to
     * a step, so its first extension comes a step sooner (a delivery is
     * extended within AckWait / 2 of arriving). */
    gboolean release = FALSE;
    for (guint i = 0; i < e->n_workers; i++) {
        move_waiting(&e->workers[i], e->keep.lease_every_us);
        release |= g_atomic_int_get(&e->workers[i].hung) && g_atomic_int_get(&e->workers[i].n_moved) > 0;
        jet__acks_due_after(&e->workers[i], ACK_COALESCE_US);   /* behind a slow handler */
    }
    if (release)
        jet_keeper_observe_soon(&e->keep);
    g_mutex_lock(&e->lease_lock);
    gint64 now = now_us();
    GHashTableIter iter;
    gpointer key;
    g_hash_table_iter_init(&iter, e->held);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        Item *it = key;
        if (limit_us > 0 && it->handler_since_us > 0 && now - it->handler_since_us > limit_us) {
            JetAsyncPast past = it->pending != NULL ? jet__async_past_limit(e, it, now, limit_us)
                                                    : JET_ASYNC_IN_HANDLER;
            if (past == JET_ASYNC_IN_HANDLER)
                jet__handler_hung(e, it, now, limit_us);
            if (past != JET_ASYNC_SETTLING)
                continue;
        }
        if (it->stale)
            continue;
        if (now - it->extended_us >= e->extend_every_us) {
            natsConnection_PublishString(jet_conn_nats(e->conn), natsMsg_GetReply(it->msg), "+WPI");
            it->extended_us = now;
            JET_STAT_ADD(&e->shared_stats, lease_extensions, 1);
        }
    }
    jet__every_worker_hung(e);
    jet__async_every_place_hung(e);
    g_mutex_unlock(&e->lease_lock);
}

/* --- start ------------------------------------------------------------------ */

void jet__pull_start_workers(JetEngine *e, GThreadFunc runner_main)
{
    jet__pin_take(e);
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        g_autofree char *name = g_strdup_printf("jet-%s-%u", e->b->name, i);
        if (e->driver->first_routes && i > 0) {
            w->thread = g_thread_new(name, runner_main, w);
            continue;
        }
        jet__worker_inbox(w);
        w->thread = g_thread_new(name, jet__pull_main, w);
    }
}

void jet__pull_start_keeper(JetEngine *e)
{
    /* +WPI every AckWait / 3, visited every AckWait / 6 (at most 2 s);
     * consumer info every 2 s, or as often as the floor monitor needs. */
    gint64 ack_wait_us = MAX(e->facts.ack_wait_ms, 300) * 1000;
    e->extend_every_us = ack_wait_us / 3;
    e->keep.lease_every_us = MIN(e->extend_every_us / 2, FLOOR_OBSERVE_US);
    e->keep.observe_every_us = FLOOR_OBSERVE_US;
    if (e->b->floor_age_ms > 0)
        e->keep.observe_every_us = MIN(e->keep.observe_every_us,
                                       (gint64)jet_floor_monitor_poll_interval_ms(e->b->floor_age_ms) * 1000);
    e->keep.lease = keeper_lease;
    e->keep.observe = keeper_observe;
    e->keep.owner = e;
    jet_keeper_add(&e->keep);
}
