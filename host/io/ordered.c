/* An ordered binding (docs/ordered.md): the stream in stream order, one
 * message at a time, through a consumer the host owns.
 *
 * The consumer is an ephemeral pull consumer with no acks (AckNone,
 * MaxDeliver 1, memory storage, one replica) that the server reaps when it
 * has been idle for longer than the pull window.  One pull is outstanding;
 * the next goes only after the handler has returned for every message of
 * the last, so nothing buffers behind a slow handler.  The host keeps its
 * position, the last stream sequence handled; anything that breaks the
 * sequence (a consumer-sequence gap, a deleted consumer, heartbeats that do
 * not come, a reconnect) re-creates the consumer at position + 1 at once,
 * never from the start and never past a message.
 *
 * Verdicts are kept in place: a RETRY or a POSTPONE waits its delay here
 * and the message is handled again (its attempts in the ledger, as on a
 * durable binding); nothing behind it overtakes it.  The settlement is the
 * executor's (executor.h), on the engine's transport with nothing to ack.
 *
 * With the ledger on, the position record (position.h) names the message
 * in the handler (with checkpoint = kv), or a span of up to `batch` of them
 * (without: one write a batch, and a span a host died in is handled again
 * one mark a message), so that a next host strikes a message that killed
 * this one; a watch thread reports a handler past handler_timeout, since the
 * worker is the thread that is stuck. */
#include "engine_private.h"
#include "msg_payload.h"
#include "ack_subject.h"
#include "conn.h"
#include "consumer_setup.h"
#include "errors.h"
#include "ledger.h"
#include "log.h"
#include "position.h"
#include "start_time.h"
#include "stream_info.h"
#include "stream_msg.h"
#include "nats_raw.h"
#include "pull_status.h"
#include "sub_end.h"

#include <stdio.h>
#include <string.h>

typedef struct JetOrdered JetOrdered;

/* A delivery checked and due, waiting for its handler batch (batch_max
 * above 1): it owns its natsMsg, into whose reply meta points. */
typedef struct {
    Item it;
    JetAckMeta meta;
} Due;

static void due_free(gpointer p)
{
    Due *d = p;
    natsMsg_Destroy(d->it.msg);
    g_free(d);
}

struct JetOrdered {
    char *name;                /* the consumer now in use; NULL: none */
    char *next_subject;        /* its pull subject */
    guint serial;              /* consumers created so far */
    guint32 run_id;            /* this run's part of the names (random, not 0) */
    guint64 position;          /* the last stream seq handled; 0: none yet */
    guint64 expect_cseq;       /* the consumer seq the next delivery must carry */
    Pull pull;                 /* the one outstanding pull */
    guint next_pull_id;
    gint64 last_heard_us;
    guint64 backoff_ms;        /* between failed creations: 100 ms doubling to 5 s */
    gboolean bound;            /* the first bind is done (jet__ordered_bind) */
    gint64 life;               /* the stream's creation time, read at the first bind */
    /* The stream began a new life while the binding ran (deleted and
     * created again): with no position yet, a consumer starts at the new
     * life's beginning, not at `deliver`. */
    gboolean life_start;
    /* The position record (position.h), kept whenever the ledger is on: the
     * message a host died with in its handler, found at start, and how many
     * hosts it has killed. */
    char *record_key;          /* NULL: no ledger, no record */
    gboolean resume;           /* checkpoint = kv: a start resumes after the record's position */
    gboolean record_read;      /* read at the first bind (or found absent) */
    guint64 crashed;
    guint32 crashed_strikes;
    guint64 mark_in;           /* `in` of the last record written: 0 once nothing is in the handler */
    /* Without checkpoint = kv one span mark covers up to `batch` handler
     * entries (docs/ordered.md, "Span marks"): how many the last one still
     * covers (0: the next entry writes a record). */
    guint32 span_left;
    /* After a host died within a span: the messages from careful_from on
     * still to be handled with a precise mark each (0: none). */
    guint64 careful_from;
    guint32 careful_left;
    gboolean record_failing;   /* the last write failed (logged once until one lands) */
    /* The delivery in the handler now, for the watch (under the engine's
     * lease lock); NULL between messages.  A batch in handle_batch(): its
     * deliveries, of which those handed to the plugin carry the handler's
     * start (in_batch NULL otherwise). */
    Item *in_handler;
    Due *const *in_batch;
    guint in_batch_n;
    /* kind = kv with initial values: they are being handled (the watch has
     * not caught up with the bucket yet). */
    gboolean initial_open;
    /* The consumer delivers the last message of each subject only (a
     * watch's first consumer): a jump over older revisions is its job. */
    gboolean per_subject;
    /* The stream's last seq read before that consumer was made: below it,
     * a delivery whose subject already had a later message is no current
     * value (0: unknown; see superseded()). */
    guint64 per_subject_last;
    gboolean per_subject_checking; /* superseded() still asks (three failed reads in a row end it) */
    guint per_subject_failures;   /* reads for it that failed in a row */
    gboolean initial_empty;    /* nothing was pending when it opened */
    guint64 initial_last;      /* the stream's last seq before the first consumer: the last current value */
    guint64 initial_values;    /* handled since it opened (the stat counts every start and life) */
    /* deliver = by_start_time, from no position: messages stored before
     * this time are passed over (0: none; start_time.h). */
    gint64 skip_before_ns;
    /* batch_max above 1: the deliveries due, in stream order, gathered for
     * one handle_batch() call (docs/batches.md), and when the batch goes as
     * it is (batch_wait after its first). */
    GPtrArray *due;
    gint64 due_until_us;
};

static JetOrdered *ordered_new(void)
{
    JetOrdered *o = g_new0(JetOrdered, 1);
    o->due = g_ptr_array_new_with_free_func(due_free);
    return o;
}

static void ordered_free(JetOrdered *o)
{
    if (o == NULL)
        return;
    g_free(o->name);
    g_free(o->next_subject);
    g_free(o->record_key);
    g_ptr_array_unref(o->due);
    g_free(o);
}

/* --- the transport: the engine's, with nothing to ack ---------------------- */

static void o_ack(gpointer t, const JetDelivery *d, JetAckTiming timing)
{
    (void)t;
    (void)d;
    (void)timing;
}

/* The wait happens in the worker's loop, in place (jet__ordered_main). */
static void o_nak(gpointer t, const JetDelivery *d, guint64 delay_ms)
{
    (void)t;
    (void)d;
    (void)delay_ms;
}

static gboolean o_ack_confirmed(gpointer t, const JetDelivery *d, GError **error)
{
    (void)t;
    (void)d;
    (void)error;
    return TRUE;
}

/* The handler has returned (or never ran): nothing is leased, so nothing is
 * ever stale; a handler the watch reported hung is said to be back, as on
 * a durable binding (docs/engine.md, "A hung handler"). */
static gboolean o_release_hold(gpointer t, const JetDelivery *d)
{
    JetEngine *e = t;
    Item *it = d->token;
    g_mutex_lock(&e->lease_lock);
    gint64 ran_us = it->handler_since_us > 0 ? now_us() - it->handler_since_us : 0;
    gboolean was_hung = it->hung_logged_us != 0;
    it->handler_since_us = 0;
    it->hung_logged_us = 0;
    g_mutex_unlock(&e->lease_lock);
    if (was_hung) {
        g_atomic_int_set(&e->workers[0].hung, 0);
        jet_log(JET_LOG_WARNING, e->b->name, "handler-returned",
                "stream seq %" G_GUINT64_FORMAT ": the hung handler returned after %" G_GINT64_FORMAT " ms; the "
                "binding goes on", it->stream_seq, ran_us / 1000);
    }
    return FALSE;
}

static void ordered_transport_init(JetEngine *e, JetTransport *t)
{
    (void)e;
    *t = jet__engine_transport;
    t->ack = o_ack;
    t->nak = o_nak;
    t->ack_confirmed = o_ack_confirmed;
    t->release_hold = o_release_hold;
}

/* --- a hung handler ---------------------------------------------------------- */

/* A handler past handler_timeout (under the lease lock).  Nothing may go
 * round it, so unlike a durable binding's nothing is released: it is
 * reported at once and then periodically, and with exit_on_any_hung the
 * host is told to exit, so that its supervisor restarts it and the next
 * host strikes the message (the position record names it). */
static void handler_hung(JetEngine *e, Item *it, gint64 now, gint64 limit_us)
{
    gint64 elapsed_ms = (now - it->handler_since_us) / 1000;
    if (it->hung_logged_us == 0) {
        it->hung_logged_us = now;
        g_atomic_int_set(&e->workers[0].hung, 1);
        JET_STAT_ADD(&e->shared_stats, hung_handlers, 1);
        jet_log_fields(JET_LOG_ERROR, e->b->name, "handler-hung",
                       &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, it->stream_seq), 1,
                "stream seq %" G_GUINT64_FORMAT ": the handler has run for %" G_GINT64_FORMAT " ms, past "
                "handler_timeout %" G_GUINT64_FORMAT " ms; nothing behind it is handled until it returns%s",
                it->stream_seq, elapsed_ms, e->b->handler_timeout_ms,
                e->b->exit_on_any_hung ? " (exit_on_any_hung: the host exits)" : "");
        if (e->b->exit_on_any_hung && !e->hung_fired && e->hung_hook != NULL) {
            e->hung_fired = TRUE;
            e->hung_hook(e, e->b->name, 1, e->hung_hook_data);
        }
        return;
    }
    jet__hung_still(e, it, now, limit_us);
}

/* The watch: the worker is the thread a hung handler holds, so another one
 * looks at it, a few times per handler_timeout (at most every second). */
static gpointer ordered_watch_main(gpointer data)
{
    JetEngine *e = data;
    JetOrdered *o = e->workers[0].driver_state;
    const gint64 limit_us = (gint64)e->b->handler_timeout_ms * 1000;
    const gint64 step_us = CLAMP(limit_us / 4, 10000, G_USEC_PER_SEC);
    g_mutex_lock(&e->lease_lock);
    while (!e->keeper_quit) {
        g_cond_wait_until(&e->lease_cond, &e->lease_lock, g_get_monotonic_time() + step_us);
        Item *it = o->in_handler;
        for (guint i = 0; it == NULL && i < o->in_batch_n; i++)
            if (o->in_batch[i]->it.handler_since_us > 0)
                it = &o->in_batch[i]->it;   /* one the plugin was handed: the call's start */
        gint64 now = now_us();
        if (!e->keeper_quit && it != NULL && it->handler_since_us > 0 && now - it->handler_since_us > limit_us)
            handler_hung(e, it, now, limit_us);
    }
    g_mutex_unlock(&e->lease_lock);
    return NULL;
}

/* --- the consumer ------------------------------------------------------------ */

static gboolean stopping(const JetEngine *e)
{
    return g_atomic_int_get(&((JetEngine *)e)->stopping) != 0;
}

/* Sleeps up to ms, waking early when the engine stops. */
static void pause_ms(JetEngine *e, guint64 ms)
{
    gint64 until = now_us() + (gint64)ms * 1000;
    while (!stopping(e) && now_us() < until)
        g_usleep(MIN(20000, MAX(until - now_us(), 1)));
}

/* The old consumer goes at once rather than waiting for the server to reap
 * it; failing to delete it costs nothing but the wait. */
static void drop_consumer(JetEngine *e, JetOrdered *o)
{
    if (o->name == NULL)
        return;
    jsErrCode jerr = 0;
    js_DeleteConsumer(jet_conn_js(e->conn), e->b->stream, o->name, NULL, &jerr);
    g_clear_pointer(&o->name, g_free);
    g_clear_pointer(&o->next_subject, g_free);
    o->pull.active = FALSE;
}

static void start_at(const JetBindingConfig *b, guint64 position, gboolean life_start, jsConsumerConfig *cc)
{
    if (position > 0) {
        cc->DeliverPolicy = js_DeliverByStartSequence;
        cc->OptStartSeq = position + 1;
        return;
    }
    /* Every message of a new life is one the binding has not seen: from
     * the first (a watch with initial values: the current ones, then the
     * updates), whatever `deliver` says of the first life. */
    if (life_start) {
        cc->DeliverPolicy = b->deliver == JET_DELIVER_LAST_PER_SUBJECT ? js_DeliverLastPerSubject : js_DeliverAll;
        return;
    }
    switch (b->deliver) {
    case JET_DELIVER_ALL: cc->DeliverPolicy = js_DeliverAll; break;
    case JET_DELIVER_NEW: cc->DeliverPolicy = js_DeliverNew; break;
    case JET_DELIVER_LAST: cc->DeliverPolicy = js_DeliverLast; break;
    case JET_DELIVER_LAST_PER_SUBJECT: cc->DeliverPolicy = js_DeliverLastPerSubject; break;
    case JET_DELIVER_FROM_SEQ:
        cc->DeliverPolicy = js_DeliverByStartSequence;
        cc->OptStartSeq = b->deliver_seq;
        break;
    case JET_DELIVER_FROM_TIME:
        /* The whole second before: on_delivery passes over what precedes
         * the time itself (start_time.h). */
        cc->OptStartTime = jet_start_time_whole_second(b->deliver_time_ns);
        cc->DeliverPolicy = cc->OptStartTime > 0 ? js_DeliverByStartTime : js_DeliverAll;
        break;
    }
}

/* A KV watch's current values are all handled (docs/kv.md). */
static void initial_done(JetEngine *e, JetOrdered *o)
{
    if (!o->initial_open)
        return;
    o->initial_open = FALSE;
    JetStats *st = &e->workers[0].stats;
    JET_STAT_ADD(st, initial_done, 1);
    jet_log(JET_LOG_INFO, e->b->name, "kv-initial-done", "bucket %s: the current values are handled (%"
            G_GUINT64_FORMAT "); updates follow", e->b->bucket, o->initial_values);
    /* Only ever called on the worker, between two handle() calls. */
    jet_instance_kv_initial_done(e->inst);
}

/* The binding's stream's info (jsStreamInfo_Destroy), or NULL with the
 * server's error (a stream deleted and not yet created again). */
static jsStreamInfo *stream_info(JetEngine *e, GError **error)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    /* A leader's answer: a member's own, during an election, may count
     * fewer messages than the stream holds (stream_info.h). */
    natsStatus s = jet_stream_info_led(&si, jet_conn_js(e->conn), e->b->stream, 5000, &e->stopping, &jerr);
    if (s != NATS_OK) {
        g_autofree char *text = s == NATS_TIMEOUT && jerr == 0 ? g_strdup("no leader answered in 5 s")
                                                              : jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: stream info of %s: %s [err %d]", e->b->name,
                    e->b->stream, text, (int)jerr);
        return NULL;
    }
    return si;
}

/* The stream now: its creation time and last sequence. */
static gboolean stream_now(JetEngine *e, gint64 *created, guint64 *last, GError **error)
{
    jsStreamInfo *si = stream_info(e, error);
    if (si == NULL)
        return FALSE;
    *created = si->Created;
    *last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return TRUE;
}

/* How long, and how far apart, a stream whose sequences fell below the
 * position under the same creation time is asked again. */
#define FELL_BACK_WAIT_MS 5000
#define FELL_BACK_STEP_MS 500

/* stream_now, but an answer whose sequences fell below the position with
 * the creation time unchanged is asked again for 5 s: on a cluster, a
 * node that lost its store and came back has answered "last seq 0" for a
 * moment while its peers held every message, and taking that for a new
 * life would handle the whole stream again.  Only an answer that still
 * says so after 5 s (a store really lost), or one with another creation
 * time, is acted on; with no answer by then nothing is decided, and the
 * consumer is tried again later (docs/ordered.md, "A stream's new
 * life"). */
static gboolean stream_now_doubted(JetEngine *e, JetOrdered *o, gint64 *created, guint64 *last, GError **error)
{
    if (!stream_now(e, created, last, error))
        return FALSE;
    if (!jet_position_fell_back(o->life, o->position, *created, *last))
        return TRUE;
    jet_log(JET_LOG_WARNING, e->b->name, "stream-fell-back",
            "stream %s answered last seq %" G_GUINT64_FORMAT ", below stream seq %" G_GUINT64_FORMAT
            " handled already, with its creation time unchanged: asking again for %d ms before taking "
            "it for a new life", e->b->stream, *last, o->position, FELL_BACK_WAIT_MS);
    gint64 until = now_us() + (gint64)FELL_BACK_WAIT_MS * 1000;
    while (!stopping(e)) {
        pause_ms(e, FELL_BACK_STEP_MS);
        gint64 c = 0;
        guint64 l = 0;
        g_autoptr(GError) local = NULL;
        gboolean ok = stream_now(e, &c, &l, &local);
        if (ok && !jet_position_fell_back(o->life, o->position, c, l)) {
            *created = c;
            *last = l;
            if (c == o->life || o->life == 0)
                jet_log(JET_LOG_INFO, e->b->name, "stream-fell-back",
                        "stream %s now answers last seq %" G_GUINT64_FORMAT ": the earlier answer was a moment's",
                        e->b->stream, l);
            return TRUE;   /* the position holds, or another life (begin_new_life says so) */
        }
        if (now_us() < until)
            continue;
        if (ok) {
            *created = c;   /* it still says so after the wait */
            *last = l;
            return TRUE;
        }
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "binding %s: stream %s: no answer after %d ms, following one below the position: nothing "
                    "decided, asked again later (%s)", e->b->name, e->b->stream, FELL_BACK_WAIT_MS, local->message);
        return FALSE;
    }
    /* Nothing is decided at a stop: the next start asks again. */
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: stopped while asking stream %s again", e->b->name,
                e->b->stream);
    return FALSE;
}

static void record_write(JetEngine *e, JetOrdered *o, guint64 in, guint32 n);

/* The stream was deleted and created again under its name (or its
 * sequences fell back below the position): what the binding knew of it
 * is of the old life.  It starts over at the new life's beginning, a
 * watch with its current values and kv_initial_done once more; nothing
 * the position record says of the old life applies (docs/ordered.md, "A
 * stream's new life"). */
static void begin_new_life(JetEngine *e, JetOrdered *o, gint64 created, guint64 last)
{
    const JetBindingConfig *b = e->b;
    if (created != o->life)
        jet_log(JET_LOG_WARNING, b->name, "stream-new-life",
                "stream %s was created again (at %" G_GINT64_FORMAT " ns; the one handled up to stream seq %"
                G_GUINT64_FORMAT " was created at %" G_GINT64_FORMAT " ns): starting over from the beginning of "
                "its new life%s", b->stream, created, o->position, o->life,
                b->kind == JET_KIND_KV ? " (its current values, then updates)" : "");
    else
        jet_log(JET_LOG_WARNING, b->name, "stream-new-life",
                "stream %s: its last seq %" G_GUINT64_FORMAT " is below stream seq %" G_GUINT64_FORMAT
                ", handled already, so its sequences started again: starting over from the beginning of its new "
                "life%s", b->stream, last, o->position, b->kind == JET_KIND_KV ? " (its current values, then updates)" : "");
    JET_STAT_ADD(&e->workers[0].stats, new_lives, 1);
    /* A dead letter's Nats-Msg-Id names the life: with the old one's, the
     * DLQ stream would take a capture of new seq N for a repeat of old
     * seq N's and keep nothing of it (docs/dead-letters.md). */
    __atomic_store_n(&e->stream_created_ns, created, __ATOMIC_RELAXED);
    o->life = created;
    o->life_start = TRUE;
    o->position = 0;
    g_ptr_array_set_size(o->due, 0);   /* none is gathered here; none of the old life may move the position */
    o->crashed = 0;
    o->crashed_strikes = 0;
    o->careful_from = 0;
    o->careful_left = 0;
    o->span_left = 0;
    if (b->kind == JET_KIND_KV)
        o->initial_last = last;
    /* A next host must not take the old life's position for this one's. */
    record_write(e, o, 0, 1);
}

/* Creates the next consumer, at position + 1 (or at `deliver` when nothing
 * was handled yet).  FALSE with the server's error when it would not. */
static gboolean create_consumer(JetEngine *e, JetOrdered *o, const char *why, GError **error)
{
    const JetBindingConfig *b = e->b;
    drop_consumer(e, o);
    /* A name of this run's own: the consumer of a host that died may still
     * be there (until the server reaps it), and creating one under its name
     * would return it as it is, past where this run starts. */
    if (o->run_id == 0)
        o->run_id = g_random_int() | 1u;
    g_autofree char *name = jet_ordered_consumer_name(b->name, o->run_id, o->serial + 1);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Name = name;
    cc.AckPolicy = js_AckNone;
    cc.MaxDeliver = 1;
    cc.MemoryStorage = true;
    cc.Replicas = 1;
    cc.FilterSubject = b->filter_subject;
    /* Reaped once idle for longer than a pull can wait, plus room for a
     * slow handler: re-created from the position if that happens. */
    cc.InactiveThreshold = (int64_t)(2 * b->expires_ms + 5000) * 1000000;
    /* Which life of the stream the consumer starts in: looked at on every
     * re-creation, since a stream deleted and created again reaches the
     * host only as a consumer gone or silent. */
    gboolean new_life = FALSE, read = FALSE;
    gint64 created = 0;
    guint64 last = 0;
    if (o->serial > 0 || o->position > 0 || b->kind == JET_KIND_KV) {
        if (!stream_now_doubted(e, o, &created, &last, error))
            return FALSE;
        read = TRUE;
        new_life = jet_position_other_life(o->life, o->position, created, last);
        if (new_life)
            begin_new_life(e, o, created, last);
        else if (o->serial == 0 && b->kind == JET_KIND_KV)
            o->initial_last = last;
    }
    start_at(b, o->position, o->life_start, &cc);
    o->per_subject = cc.DeliverPolicy == js_DeliverLastPerSubject;
    if (o->per_subject && !read && !stream_now(e, &created, &last, error))
        return FALSE;
    o->per_subject_last = o->per_subject ? last : 0;
    o->per_subject_checking = o->per_subject;
    o->per_subject_failures = 0;
    o->skip_before_ns = o->position == 0 && !o->life_start && b->deliver == JET_DELIVER_FROM_TIME
                            ? b->deliver_time_ns : 0;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddConsumer(&ci, jet_conn_js(e->conn), b->stream, &cc, NULL, &jerr);
    if (s != NATS_OK) {
        g_autofree char *text = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "binding %s: cannot create the ordered consumer on stream %s: %s [err %d]", b->name, b->stream,
                    text, (int)jerr);
        return FALSE;
    }
    /* A watch catches up once per start and once per new life of its
     * bucket: the current values, or what happened since the checkpoint;
     * with initial = false at once (in a new life: its updates so far). */
    if ((o->serial == 0 || new_life) && b->kind == JET_KIND_KV) {
        o->initial_open = TRUE;
        o->initial_values = 0;
        /* An empty bucket: nothing to wait for; said by the worker, the
         * thread the plugin hears from (the first bind runs before it). */
        o->initial_empty = ci->NumPending == 0;
    }
    jsConsumerInfo_Destroy(ci);
    o->serial++;
    o->name = g_steal_pointer(&name);
    o->next_subject = g_strdup_printf("%s.CONSUMER.MSG.NEXT.%s.%s", jet_conn_api_prefix(e->conn), b->stream, o->name);
    o->expect_cseq = 1;
    o->pull.active = FALSE;
    o->backoff_ms = 100;
    o->last_heard_us = now_us();
    JET_STAT_ADD(&e->workers[0].stats, ordered_consumers, 1);
    if (o->serial > 1)
        JET_STAT_ADD(&e->workers[0].stats, resubscribes, 1);
    if (o->position > 0)
        jet_log(JET_LOG_INFO, b->name, "ordered-consumer", "consumer %s on %s from stream seq %" G_GUINT64_FORMAT
                " (%s)", o->name, b->stream, o->position + 1, why);
    else
        jet_log(JET_LOG_INFO, b->name, "ordered-consumer", "consumer %s on %s (%s)", o->name, b->stream, why);
    return TRUE;
}

/* --- the pull ------------------------------------------------------------ */

static void issue_pull(Worker *w, JetOrdered *o)
{
    JetEngine *e = w->eng;
    const JetBindingConfig *b = e->b;
    char body[160];
    snprintf(body, sizeof body,
             "{\"batch\":%u,\"expires\":%" G_GUINT64_FORMAT ",\"idle_heartbeat\":%" G_GUINT64_FORMAT "}", b->batch,
             b->expires_ms * G_GUINT64_CONSTANT(1000000), b->idle_heartbeat_ms * G_GUINT64_CONSTANT(1000000));
    char reply[160];
    guint id = ++o->next_pull_id;
    snprintf(reply, sizeof reply, "%s.%u", w->inbox, id);
    natsStatus s = natsConnection_PublishRequestString(jet_conn_nats(e->conn), o->next_subject, reply, body);
    if (s != NATS_OK) {
        jet_log(JET_LOG_WARNING, b->name, "pull-failed", "pull not sent: %s", natsStatus_GetText(s));
        pause_ms(e, 100);
        return;
    }
    gint64 now = now_us();
    o->pull = (Pull){
        .id = id,
        .batch = b->batch,
        .issued_us = now,
        .deadline_us = now + (gint64)(b->expires_ms + 2 * b->idle_heartbeat_ms) * 1000,
        .active = TRUE,
    };
    o->last_heard_us = now;
    JET_STAT_ADD(&w->stats, pulls, 1);
}

/* What a status means for the one pull (pull_status.h).  Returns FALSE when
 * the consumer must be re-created. */
static gboolean on_status(Worker *w, JetOrdered *o, natsMsg *m, int code, const char *desc)
{
    JetEngine *e = w->eng;
    JET_STAT_ADD(&w->stats, statuses, 1);
    const char *subj = natsMsg_GetSubject(m);
    const char *dot = subj != NULL ? strrchr(subj, '.') : NULL;
    guint id = dot != NULL ? (guint)g_ascii_strtoull(dot + 1, NULL, 10) : 0;
    if (!o->pull.active || id != o->pull.id) {
        JET_STAT_ADD(&w->stats, stale_statuses, 1);
        return TRUE;
    }
    JetPullStatusKind kind = jet_pull_status_classify(code, desc, o->pull.received);
    /* Idle with the current values not all seen: if the consumer has
     * nothing left, they were (the last one may have been removed since). */
    if ((kind == JET_PULL_HEARTBEAT || kind == JET_PULL_END) && o->initial_open &&
        jet_consumer_nothing_pending(jet_conn_js(e->conn), e->b->stream, o->name))
        initial_done(e, o);
    switch (kind) {
    case JET_PULL_HEARTBEAT:
        return TRUE;
    case JET_PULL_END:
        o->pull.active = FALSE;
        return TRUE;
    case JET_PULL_END_GUARDED:
    case JET_PULL_UNKNOWN:
    case JET_PULL_END_TOO_LARGE:
        o->pull.active = FALSE;
        jet_log(JET_LOG_INFO, e->b->name, "pull-ended", "pull %u: %d %s", id, code, desc != NULL ? desc : "");
        if (o->pull.received == 0)
            pause_ms(e, GUARD_DELAY_US / 1000);
        return TRUE;
    case JET_PULL_CONSUMER_GONE:
        o->pull.active = FALSE;
        return FALSE;
    case JET_PULL_INVALID:
        o->pull.active = FALSE;
        JET_STAT_ADD(&w->stats, refused_pulls, 1);
        jet_log(JET_LOG_ERROR, e->b->name, "failed", "the server refused the pull: %d %s; re-creating the consumer",
                code, desc != NULL ? desc : "");
        return FALSE;
    }
    return TRUE;
}

/* --- the position record (position.h) ---------------------------------------- */

static kvStore *record_kv(JetEngine *e)
{
    return e->ledger != NULL ? jet_ledger_kv(e->ledger) : NULL;
}

/* Reads the record, once, at the first bind.  FALSE with an error when the
 * bucket does not answer (another attempt may), or when a record the binding
 * would resume from does not parse: it is never guessed at (JET_ERROR_INVALID:
 * an operator must say where to start).  Without checkpoint = kv nothing
 * starts from it, so one that does not parse only costs the strike. */
static gboolean record_read(JetEngine *e, JetOrdered *o, GError **error)
{
    const char *name = e->b->name;
    kvEntry *entry = NULL;
    natsStatus s = kvStore_Get(&entry, record_kv(e), o->record_key);
    if (s == NATS_NOT_FOUND) {
        if (o->resume)
            jet_log(JET_LOG_INFO, name, "checkpoint", "no checkpoint yet: starting at deliver");
        return TRUE;
    }
    if (s != NATS_OK) {
        g_autofree char *text = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: cannot read its position record %s: %s", name,
                    o->record_key, text);
        return FALSE;
    }
    JetPosition p = { 0 };
    g_autoptr(GError) err = NULL;
    gsize len = 0;
    const char *value = jet_kv_value(entry, &len);
    gboolean ok = jet_position_from_json(value, len, &p, &err);
    kvEntry_Destroy(entry);
    if (!ok && o->resume) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "binding %s: key %s: %s; not starting (delete the key to start at deliver)", name,
                    o->record_key, err->message);
        return FALSE;
    }
    if (!ok) {
        jet_log(JET_LOG_WARNING, name, "checkpoint-unreadable",
                "key %s: %s; ignored (no message is struck), and written anew with the first message", o->record_key,
                err->message);
        return TRUE;
    }
    JetPositionStart start;
    jet_position_start(&p, o->life, o->resume, &start);
    if (start.other_life) {
        jet_log(JET_LOG_WARNING, name, "checkpoint-other-stream",
                "key %s was written for stream %s created at %" G_GINT64_FORMAT " ns; the stream now was created at %"
                G_GINT64_FORMAT " ns, so neither its position nor the message it names are this stream's: starting "
                "at deliver", o->record_key, e->b->stream, p.life, o->life);
        return TRUE;
    }
    o->position = start.resume_after;
    o->crashed = start.crashed;
    o->crashed_strikes = start.strikes;
    o->careful_from = start.careful_from;
    o->careful_left = start.careful_n;
    if (o->resume)
        jet_log(JET_LOG_INFO, name, "checkpoint", "resuming after stream seq %" G_GUINT64_FORMAT, p.pos);
    if (o->careful_left != 0)
        jet_log(JET_LOG_WARNING, name, "span-suspect",
                "a host died with one of %u messages from stream seq %" G_GUINT64_FORMAT " on in its handler, "
                "which one unknown: nothing is struck, and they are handled again one mark each", o->careful_left,
                o->careful_from);
    if (o->crashed != 0)
        jet_log_fields(JET_LOG_WARNING, name, "suspect", &JET_LOG_NUMBER(JET_LOG_KEY_SEQ, o->crashed), 1,
                "stream seq %" G_GUINT64_FORMAT " was in the handler of a host that did not finish it: strike %u "
                "when it comes again", o->crashed, o->crashed_strikes);
    return TRUE;
}

/* Writes where the binding is: after pos, with `in` going to the handler
 * (0: nothing in it), the record covering n handler entries from `in` on
 * (1: `in` alone).  A failed write is logged, not fatal: it costs
 * duplicates after a restart (with checkpoint = kv) or a strike, never a
 * skipped message. */
static void record_write(JetEngine *e, JetOrdered *o, guint64 in, guint32 n)
{
    if (o->record_key == NULL)
        return;
    JetPosition p = {
        .pos = o->position,
        .in = in,
        .strikes = in != 0 && n <= 1 && in == o->crashed ? o->crashed_strikes : 0,
        .life = o->life,
        .n = in != 0 ? n : 1,
    };
    gsize len = 0;
    g_autofree char *json = jet_position_to_json(&p, &len);
    natsStatus s = kvStore_Put(NULL, record_kv(e), o->record_key, json, (int)len);
    o->mark_in = in;
    if (s != NATS_OK && !o->record_failing)
        jet_log(JET_LOG_WARNING, e->b->name, "checkpoint-failed",
                "cannot write the position record %s: %s; a restart may handle messages again or miss a strike",
                o->record_key, natsStatus_GetText(s));
    else if (s == NATS_OK && o->record_failing)
        jet_log(JET_LOG_INFO, e->b->name, "checkpoint", "the position record is written again");
    o->record_failing = s != NATS_OK;
}

/* The ledger learns the strikes of a message that killed a host, so that
 * the executor's crash attribution sees them (poison at crash_limit). */
static gboolean set_strikes(JetLedgerRecord *rec, gpointer data)
{
    guint32 strikes = *(const guint32 *)data;
    rec->strikes = MAX(rec->strikes, strikes);
    return TRUE;
}

static void record_strikes(JetEngine *e, guint64 seq, guint32 strikes)
{
    if (e->ledger == NULL)
        return;
    g_autoptr(GError) err = NULL;
    if (jet_ledger_update(e->ledger, e->b->stream, e->b->name, seq, set_strikes, &strikes, NULL, &err) !=
        JET_LEDGER_WRITTEN)
        jet_log(JET_LOG_WARNING, e->b->name, "ledger-fallback", "stream seq %" G_GUINT64_FORMAT
                ": cannot record its strike: %s", seq, err != NULL ? err->message : "no answer");
}

/* The record before a handler entry for stream seq seq.  precise: this
 * message alone (checkpoint = kv, where the record is the checkpoint; a
 * suspect; the careful replay of a span).  Otherwise one span mark covers
 * the next `batch` entries, so a busy binding writes once a batch, not once
 * a message (docs/ordered.md, "Span marks"); a record that says nothing is
 * in the handler starts a new one. */
static void mark_entry(JetEngine *e, JetOrdered *o, guint64 seq, gboolean precise)
{
    if (precise) {
        record_write(e, o, seq, 1);
        o->span_left = 0;
        return;
    }
    if (o->mark_in == 0 || o->span_left == 0) {
        record_write(e, o, seq, e->b->batch);
        o->span_left = e->b->batch;
    }
    o->span_left--;
}

/* The record before a handler batch of n entries from stream seq first
 * on: with checkpoint = kv one record a batch, naming it whole (a host
 * that dies in it leaves a careful replay, not a strike: see "Span
 * marks"); otherwise the current span mark if the batch fits in what it
 * still covers, else a new one. */
static void mark_batch(JetEngine *e, JetOrdered *o, guint64 first, guint32 n)
{
    if (o->resume) {
        record_write(e, o, first, n);
        o->span_left = 0;
        return;
    }
    if (o->mark_in == 0 || o->span_left < n) {
        record_write(e, o, first, e->b->batch);
        o->span_left = e->b->batch;
    }
    o->span_left -= n;
}

/* --- one message, in place ------------------------------------------------- */

static JetOrdered *o_of(Worker *w)
{
    return w->driver_state;
}

/* One handling of the delivery, its attempt-th.  FALSE when an exclusive
 * claim's fence held it and the engine stopped meanwhile: it stays
 * unhandled, and the position does not move past it
 * (docs/exclusive.md). */
static gboolean deliver_once(Worker *w, Item *it, const JetAckMeta *meta, const JetHdrParse *hdrs,
                             const char *malformed, guint32 attempt, JetExecuted *done)
{
    JetEngine *e = w->eng;
    const JetBindingConfig *b = e->b;
    natsMsg *m = it->msg;
    /* The binding's name stands for the consumer: the ledger's records
     * and the dead-letter record's id must outlive each re-creation. */
    JetDelivery d = {
        .subject = natsMsg_GetSubject(m),
        .hdrs = hdrs,
        .malformed = malformed,
        .stream = b->stream,
        .consumer = b->name,
        .stream_seq = meta->stream_seq,
        .consumer_seq = meta->consumer_seq,
        .deliveries = attempt,
        .enqueued_ns = MAX(meta->timestamp_ns, 0),
        .token = it,
        .stats = &w->stats,
    };
    d.data = jet_msg_payload(m, &d.len);
    if (!jet__fence_wait(e))
        return FALSE;
    jet_executor_deliver(e->executor, &d, done);
    jet__progress(e);
    if (e->settle_hook != NULL)
        e->settle_hook(d.stream_seq, d.deliveries, &done->action, e->settle_hook_data);
    return TRUE;
}

/* Handles the delivery until it is settled for good: a RETRY or a POSTPONE
 * waits its delay here and the message is handled again, and so does a
 * capture that failed; nothing else is taken meanwhile.  first: NULL, or
 * how its first handling, in a batch, was settled (one that waits).  FALSE
 * when the engine stopped before it was settled (the position does not
 * move past it). */
static gboolean handle_in_place(Worker *w, Item *it, const JetAckMeta *meta, const JetExecuted *first)
{
    JetEngine *e = w->eng;
    g_auto(JetHdrParse) hdrs = { 0 };
    g_autofree char *malformed = jet__read_headers(e, it->msg, meta->stream_seq, &hdrs);
    JetOrdered *o = o_of(w);
    gboolean precise = o->resume || meta->stream_seq == o->crashed;
    if (o->careful_left > 0 && meta->stream_seq >= o->careful_from) {
        precise = TRUE;
        o->careful_left--;
    }
    if (first == NULL)
        mark_entry(e, o, meta->stream_seq, precise);
    /* A message a host died with counts those deaths as deliveries, and
     * its ledger record holds them as strikes (executor.h: attribution). */
    guint32 strikes = meta->stream_seq == o->crashed ? o->crashed_strikes : 0;
    if (strikes > 0)
        record_strikes(e, meta->stream_seq, strikes);
    for (guint32 attempt = 1 + strikes;; attempt++) {
        JetExecuted done;
        if (first != NULL && attempt == 1)
            done = *first;
        else if (!deliver_once(w, it, meta, &hdrs, malformed, attempt, &done))
            return FALSE;
        /* A dead letter whose capture failed (the DLQ stream without a
         * leader, say) is not done either: nothing gives an ordered
         * consumer's message back, so it is delivered again here, after
         * the delay a durable consumer's NAK would have, and the position
         * waits. */
        if (!jet_executed_waits(&done))
            return TRUE;
        gboolean capture_again = done.action.kind == JET_ACTION_CAPTURE;
        /* Waiting is not being in the handler: a host that dies now was
         * not killed by this message. */
        record_write(e, o, 0, 1);
        pause_ms(e, capture_again ? done.capture_again_ms : done.action.delay_ms);
        if (stopping(e))
            return FALSE;
        mark_entry(e, o, meta->stream_seq, precise);
    }
}

/* Whether the consumer jumped over a message it should have delivered:
 * seq comes after position + 1 while the stream still holds a message of
 * the filter in between (nats-server 2.9's last-per-subject consumers do
 * this; docs/ordered.md, "Re-creation").  Asked of the server on
 * a jump only, and only where every message of the filter is due: past a
 * last-per-subject consumer's current values, on an ordered binding
 * without a filter or with `>` (with another, other subjects' messages
 * make every delivery a jump). */
static gboolean skipped_over(JetEngine *e, JetOrdered *o, guint64 last, guint64 seq)
{
    const JetBindingConfig *b = e->b;
    /* While a last-per-subject consumer hands out the current values, a
     * jump over older revisions is what it is for; a consumer re-created
     * from a position during them delivers every message, and a jump there
     * is a skip like any other (nats-server 2.9.10 made one after a pause). */
    if (last == 0 || seq <= last + 1 ||
        (o->per_subject && (o->initial_open || seq <= o->per_subject_last)) ||
        (b->kind != JET_KIND_KV && b->filter_subject != NULL && strcmp(b->filter_subject, ">") != 0))
        return FALSE;
    g_autoptr(GError) err = NULL;
    g_autoptr(JetStoredMsg) next = NULL;
    JetStoredStatus st = jet_stream_msg_next(jet_conn_nats(e->conn), b->stream, last + 1, b->filter_subject, 2000,
                                             &next, &err);
    if (st == JET_STORED_ERROR) {
        jet_log(JET_LOG_WARNING, b->name, "ordered-jump-unchecked",
                "stream seq %" G_GUINT64_FORMAT " follows %" G_GUINT64_FORMAT " and what lies between cannot be read "
                "(%s): going on", seq, last, err->message);
        return FALSE;
    }
    if (st != JET_STORED_FOUND || next->seq >= seq)
        return FALSE;   /* what lay between was removed: a jump the stream made */
    JET_STAT_ADD(&e->workers[0].stats, gaps, 1);
    jet_log(JET_LOG_WARNING, b->name, "ordered-skip",
            "consumer %s delivered stream seq %" G_GUINT64_FORMAT " where seq %" G_GUINT64_FORMAT
            " was due (the stream holds it); re-creating it from stream seq %" G_GUINT64_FORMAT, o->name, seq,
            next->seq, last + 1);
    return TRUE;
}

/* Whether a last-per-subject consumer, among the current values, handed
 * out a message whose subject had a later one before the consumer was
 * made: nats-server 2.9 gives the next stored message in place of a
 * current value removed under the consumer (a key purged while the watch
 * reads), and that may be an older revision of another key, or a current
 * value twice.  One read of the subject's next message per current value
 * (docs/ordered.md, "Last per subject"). */
static gboolean superseded(JetEngine *e, JetOrdered *o, natsMsg *msg, guint64 seq)
{
    if (!o->per_subject_checking || seq >= o->per_subject_last)
        return FALSE;
    const JetBindingConfig *b = e->b;
    const char *subject = natsMsg_GetSubject(msg);
    g_autoptr(GError) err = NULL;
    g_autoptr(JetStoredMsg) next = NULL;
    JetStoredStatus st = jet_stream_msg_next(jet_conn_nats(e->conn), b->stream, seq + 1, subject, 2000, &next, &err);
    if (st == JET_STORED_ERROR) {
        /* Three failures in a row end the check for this consumer: a read
         * that always fails (no permission for the API, say) would cost
         * its timeout a value; an election's moment does not. */
        gboolean give_up = ++o->per_subject_failures >= 3;
        jet_log(JET_LOG_WARNING, b->name, "ordered-current-unchecked",
                "stream seq %" G_GUINT64_FORMAT " (%s) came as a current value and whether %s has a later message "
                "cannot be read (%s): handled as one%s", seq, subject, subject, err->message,
                give_up ? "; so are the rest of this consumer's current values (3 reads failed in a row)" : "");
        if (give_up)
            o->per_subject_checking = FALSE;
        return FALSE;
    }
    o->per_subject_failures = 0;
    /* The server reads the subject as a filter: only the same subject's
     * message counts (a stored subject may look like a wildcard). */
    if (st != JET_STORED_FOUND || next->seq > o->per_subject_last || g_strcmp0(next->subject, subject) != 0)
        return FALSE;   /* the subject's last when the consumer was made, or a later write's to come */
    JET_STAT_ADD(&e->workers[0].stats, superseded, 1);
    jet_log(JET_LOG_WARNING, b->name, "ordered-superseded",
            "consumer %s delivered stream seq %" G_GUINT64_FORMAT " (%s) as a current value, but stream seq %"
            G_GUINT64_FORMAT " of the same subject was stored before the consumer began (a current value was "
            "removed under it): passed over", o->name, seq, subject, next->seq);
    return TRUE;
}

/* Whether the watch caught up with this delivery: its bucket's last entry
 * as it was when the watch began, or nothing pending; newer servers do not
 * always say 0 on the last one of a last-per-subject consumer (docs/kv.md,
 * "What a plugin sees"). */
static gboolean caught_up(const JetOrdered *o, const JetAckMeta *meta)
{
    return meta->pending == 0 || (o->initial_last > 0 && meta->stream_seq >= o->initial_last);
}

/* What a delivery of the consumer in use is to the binding. */
typedef enum {
    CHECK_IGNORE,      /* left over from a replaced consumer, or handled already */
    CHECK_MALFORMED,   /* its metadata does not parse: dead-lettered */
    CHECK_BROKEN,      /* the sequence broke: the consumer is re-created at position + 1 */
    CHECK_PASS,        /* passed over: the position moves past it, unhandled */
    CHECK_DUE,         /* to be handled */
} Check;

/* The last stream seq checked: the last one due in the batch being
 * gathered, else the position. */
static guint64 checked_last(const JetOrdered *o)
{
    return o->due->len > 0 ? ((const Due *)g_ptr_array_index(o->due, o->due->len - 1))->meta.stream_seq
                           : o->position;
}

static Check check(Worker *w, JetOrdered *o, Item *it, JetAckMeta *meta)
{
    JetEngine *e = w->eng;
    if (!jet_ack_subject_parse(natsMsg_GetReply(it->msg), meta))
        return CHECK_MALFORMED;
    if (e->loss_hook != NULL && e->loss_hook(meta->stream_seq, meta->consumer_seq, e->loss_hook_data))
        return CHECK_IGNORE;
    if (o->name == NULL || meta->consumer_len != strlen(o->name) ||
        strncmp(meta->consumer, o->name, meta->consumer_len) != 0)
        return CHECK_IGNORE;   /* left over from a consumer already replaced */
    if (meta->consumer_seq != o->expect_cseq) {
        JET_STAT_ADD(&w->stats, gaps, 1);
        jet_log(JET_LOG_WARNING, e->b->name, "ordered-gap",
                "consumer %s delivered consumer seq %" G_GUINT64_FORMAT " where %" G_GUINT64_FORMAT
                " was due; re-creating it from stream seq %" G_GUINT64_FORMAT, o->name, meta->consumer_seq,
                o->expect_cseq, checked_last(o) + 1);
        return CHECK_BROKEN;
    }
    o->expect_cseq++;
    if (o->pull.active && ++o->pull.received >= o->pull.batch)
        o->pull.active = FALSE;
    guint64 last = checked_last(o);
    if (meta->stream_seq <= last)
        return CHECK_IGNORE;   /* handled already (a re-created consumer never starts before position + 1) */
    if (skipped_over(e, o, last, meta->stream_seq))
        return CHECK_BROKEN;
    if (superseded(e, o, it->msg, meta->stream_seq))
        return CHECK_PASS;
    if (jet_start_time_before(o->skip_before_ns, meta->timestamp_ns))
        return CHECK_PASS;   /* before the start time: passed over, as the server would have */
    o->skip_before_ns = 0;
    return CHECK_DUE;
}

/* The position moves past a delivery handled (or passed over). */
static void moved_past(Worker *w, JetOrdered *o, const JetAckMeta *meta, gboolean handled)
{
    o->position = meta->stream_seq;
    if (o->initial_open) {
        if (handled) {
            JET_STAT_ADD(&w->stats, initial_values, 1);
            o->initial_values++;
        }
        if (caught_up(o, meta))
            initial_done(w->eng, o);
    }
    if (handled)
        o->last_heard_us = now_us();   /* the handler's time is not the server's silence */
}

/* One delivery on its own, settled in place. */
static void handle_one(Worker *w, JetOrdered *o, Item *it, const JetAckMeta *meta)
{
    JetEngine *e = w->eng;
    g_mutex_lock(&e->lease_lock);
    o->in_handler = it;
    g_mutex_unlock(&e->lease_lock);
    gboolean settled = handle_in_place(w, it, meta, NULL);
    g_mutex_lock(&e->lease_lock);
    o->in_handler = NULL;
    g_mutex_unlock(&e->lease_lock);
    if (settled)
        moved_past(w, o, meta, TRUE);
}

/* Hands dues[0..n-1] to the plugin's handle_batch() and settles them in
 * stream order (executor.h): the first of them that waits (a RETRY, a
 * POSTPONE, a capture not done) is then handled on its own, in place, until
 * it is settled, and the ones behind it, set aside, are the caller's to
 * hand again.  Returns how many are done (the position is past them);
 * *stopped when the engine stopped before the one that waited was. */
static guint batch_in_place(Worker *w, JetOrdered *o, Due *const *dues, guint n, gboolean *stopped)
{
    JetEngine *e = w->eng;
    const JetBindingConfig *b = e->b;
    g_autofree JetDelivery *ds = g_new0(JetDelivery, n);
    g_autofree const JetDelivery **dp = g_new(const JetDelivery *, n);
    g_autofree JetHdrParse *hdrs = g_new0(JetHdrParse, n);
    g_autofree char **malformed = g_new0(char *, n);
    g_autofree JetExecuted *outs = g_new(JetExecuted, n);
    guint done = 0;
    for (guint i = 0; i < n; i++) {
        Due *du = dues[i];
        natsMsg *m = du->it.msg;
        malformed[i] = jet__read_headers(e, m, du->meta.stream_seq, &hdrs[i]);
        ds[i] = (JetDelivery){
            .subject = natsMsg_GetSubject(m),
            .hdrs = &hdrs[i],
            .malformed = malformed[i],
            .stream = b->stream,
            .consumer = b->name,
            .stream_seq = du->meta.stream_seq,
            .consumer_seq = du->meta.consumer_seq,
            .deliveries = 1,
            .enqueued_ns = MAX(du->meta.timestamp_ns, 0),
            .token = &du->it,
            .stats = &w->stats,
        };
        ds[i].data = jet_msg_payload(m, &ds[i].len);
        dp[i] = &ds[i];
    }
    if (!jet__fence_wait(e)) {
        *stopped = TRUE;
        goto out;
    }
    mark_batch(e, o, ds[0].stream_seq, n);
    g_mutex_lock(&e->lease_lock);
    o->in_batch = dues;
    o->in_batch_n = n;
    g_mutex_unlock(&e->lease_lock);
    guint settled = jet_executor_deliver_batch_in_order(e->executor, dp, n, outs);
    jet__progress(e);
    g_mutex_lock(&e->lease_lock);
    o->in_batch = NULL;
    o->in_batch_n = 0;
    g_mutex_unlock(&e->lease_lock);
    if (e->settle_hook != NULL)
        for (guint i = 0; i < settled; i++)
            e->settle_hook(ds[i].stream_seq, 1, &outs[i].action, e->settle_hook_data);
    for (guint i = 0; i + 1 < settled; i++)
        moved_past(w, o, &dues[i]->meta, TRUE);
    done = settled - 1;
    Due *last = dues[settled - 1];
    if (jet_executed_waits(&outs[settled - 1])) {
        g_mutex_lock(&e->lease_lock);
        o->in_handler = &last->it;
        g_mutex_unlock(&e->lease_lock);
        gboolean ok = handle_in_place(w, &last->it, &last->meta, &outs[settled - 1]);
        g_mutex_lock(&e->lease_lock);
        o->in_handler = NULL;
        g_mutex_unlock(&e->lease_lock);
        if (!ok) {
            *stopped = TRUE;
            goto out;
        }
    }
    moved_past(w, o, &last->meta, TRUE);
    done = settled;
out:
    for (guint i = 0; i < n; i++) {
        jet_hdr_parse_clear(&hdrs[i]);
        g_free(malformed[i]);
    }
    return done;
}

/* Hands the deliveries due to the plugin, batch after batch: what a batch
 * set aside goes again as the next, so each call settles at least one
 * message.  FALSE when the engine stopped first: what was not settled is
 * dropped, and the position stays before it. */
static gboolean handle_due(Worker *w, JetOrdered *o)
{
    gboolean stopped = FALSE;
    while (o->due->len > 0 && !stopped && !stopping(w->eng)) {
        guint done = batch_in_place(w, o, (Due *const *)o->due->pdata, o->due->len, &stopped);
        g_ptr_array_remove_range(o->due, 0, done);
    }
    gboolean all = o->due->len == 0;
    g_ptr_array_set_size(o->due, 0);
    return all;
}

/* Whether the batch being gathered goes now: full, its pull over, its
 * batch_wait spent, or (without one) nothing more has arrived. */
static gboolean due_ready(Worker *w, JetOrdered *o)
{
    const JetBindingConfig *b = w->eng->b;
    if (o->due->len == 0)
        return FALSE;
    if (o->due->len >= b->batch_max || !o->pull.active)
        return TRUE;
    if (b->batch_wait_ms > 0)
        return now_us() >= o->due_until_us;
    int queued = 0, bytes = 0;
    return natsSubscription_GetPending(w->sub, &queued, &bytes) != NATS_OK || queued == 0;
}

/* A delivery of the consumer in use (owned: destroyed here, or kept in
 * the batch being gathered).  FALSE when the sequence broke (the consumer
 * must be re-created at position + 1).  Whatever is not a delivery due
 * for the batch first hands over the batch gathered before it, so the
 * position only ever moves in stream order. */
static gboolean on_delivery(Worker *w, JetOrdered *o, natsMsg *m)
{
    JetEngine *e = w->eng;
    Item it = { .msg = m, .worker = w->index, .is_delivery = TRUE, .arrived_us = now_us() };
    JetAckMeta meta;
    gboolean keep = TRUE;
    switch (check(w, o, &it, &meta)) {
    case CHECK_IGNORE:
        break;
    case CHECK_MALFORMED:
        if (handle_due(w, o))
            jet__capture_malformed(e, &it);
        break;
    case CHECK_BROKEN:
        handle_due(w, o);
        keep = FALSE;
        break;
    case CHECK_PASS:
        if (handle_due(w, o))
            moved_past(w, o, &meta, FALSE);
        break;
    case CHECK_DUE: {
        if (e->take_hook != NULL)
            e->take_hook(w->index, 1, e->take_hook_data);
        it.stream_seq = meta.stream_seq;
        /* A message a host died with, or one of a span a host died in, is
         * handled on its own with a precise mark (docs/ordered.md). */
        gboolean alone = meta.stream_seq == o->crashed || (o->careful_left > 0 && meta.stream_seq >= o->careful_from);
        if (e->b->batch_max > 1 && !alone) {
            Due *du = g_new(Due, 1);
            du->it = it;
            du->meta = meta;
            if (o->due->len == 0)
                o->due_until_us = now_us() + (gint64)e->b->batch_wait_ms * 1000;
            g_ptr_array_add(o->due, du);
            /* The watch's last current value ends its batch: the plugin
             * hears kv_initial_done between it and the first update. */
            if (o->due->len >= e->b->batch_max || (o->initial_open && caught_up(o, &meta)))
                handle_due(w, o);
            return TRUE;   /* the batch owns m */
        }
        if (handle_due(w, o))
            handle_one(w, o, &it, &meta);
        break;
    }
    }
    natsMsg_Destroy(m);
    return keep;
}

/* --- the first bind ------------------------------------------------------------- */

/* The stream's creation time: which life of the stream name this is; and
 * whether the filter can match the stream (consumer_setup.h). */
static gboolean read_life(JetEngine *e, JetOrdered *o, GError **error)
{
    jsStreamInfo *si = stream_info(e, error);
    if (si == NULL)
        return FALSE;
    gboolean ok = jet_filter_check(e->b, si, error);
    if (ok)
        o->life = si->Created;
    jsStreamInfo_Destroy(si);
    return ok;
}

/* One attempt: the stream (created in managed mode), its life, the record
 * (each read once), then the first consumer. */
static gboolean bind_once(JetEngine *e, JetOrdered *o, GError **error)
{
    if (o->life == 0 && (!jet_stream_ensure(jet_conn_js(e->conn), e->b, error) || !read_life(e, o, error)))
        return FALSE;
    if (o->record_key != NULL && !o->record_read) {
        if (!record_read(e, o, error))
            return FALSE;
        o->record_read = TRUE;
    }
    return create_consumer(e, o, "start", error);
}

static gboolean ordered_bind(JetEngine *e, guint attempts, GError **error)
{
    JetOrdered *o = e->workers[0].driver_state;
    if (o->bound)
        return TRUE;
    o->resume = e->b->checkpoint == JET_CHECKPOINT_KV;
    if (record_kv(e) != NULL && o->record_key == NULL)
        o->record_key = jet_position_key(e->b->name);
    guint64 wait_ms = 100;
    for (guint i = 1;; i++) {
        g_autoptr(GError) local = NULL;
        if (bind_once(e, o, &local)) {
            o->bound = TRUE;
            return TRUE;
        }
        /* A record that does not parse is not healed by waiting, at start-up;
         * a binding that binds by itself (attempts 0) waits for an operator. */
        if (stopping(e) || (attempts > 0 && (i >= attempts || g_error_matches(local, JET_ERROR, JET_ERROR_INVALID)))) {
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        }
        jet_log(attempts > 0 ? JET_LOG_WARNING : JET_LOG_ERROR, e->b->name, "ordered-bind-failed",
                "attempt %u: %s; next in %" G_GUINT64_FORMAT " ms", i, local->message, wait_ms);
        pause_ms(e, wait_ms);
        wait_ms = MIN(wait_ms * 2, 5000);
    }
}

static void ordered_drop(JetEngine *e, JetOrdered *o)
{
    drop_consumer(e, o);
}

/* --- the loop ---------------------------------------------------------------- */

/* How long a message may be awaited before the record says nothing is in
 * the handler: long enough that a busy binding's next message (already
 * buffered, or a round trip away) comes first and costs no write. */
#define MARK_IDLE_MS 10

static gpointer ordered_main(gpointer data)
{
    Worker *w = data;
    JetEngine *e = w->eng;
    JetOrdered *o = w->driver_state;
    const gint64 hb_us = (gint64)e->b->idle_heartbeat_ms * 1000;
    /* Bound by the daemon at start-up (a few attempts); otherwise here,
     * until it binds or the engine stops. */
    if (!ordered_bind(e, 0, NULL))
        return NULL;
    o->backoff_ms = 100;
    const char *why = "start";
    w->generation = jet_conn_generation(e->conn);
    while (!stopping(e)) {
        if (o->initial_open && o->initial_empty)
            initial_done(e, o);
        guint gen = jet_conn_generation(e->conn);
        if (gen != w->generation) {
            /* A reconnect voids the pull, and a restarted server may have
             * lost the consumer (memory storage).  What was delivered before
             * goes first: the next consumer may find a new life of the
             * stream, whose position must not be moved by the old one's. */
            w->generation = gen;
            handle_due(w, o);
            drop_consumer(e, o);
            why = "a reconnect";
        }
        if (o->name == NULL) {
            g_autoptr(GError) err = NULL;
            if (!create_consumer(e, o, why, &err)) {
                jet_log(JET_LOG_WARNING, e->b->name, "ordered-create-failed", "%s (%s); again in %" G_GUINT64_FORMAT
                        " ms", err->message, why, o->backoff_ms);
                pause_ms(e, o->backoff_ms);
                o->backoff_ms = MIN(o->backoff_ms * 2, 5000);
                continue;
            }
        }
        if (due_ready(w, o))
            handle_due(w, o);
        if (!o->pull.active && o->due->len == 0)
            issue_pull(w, o);

        gint64 wait_ms = o->mark_in != 0 ? MARK_IDLE_MS : TAKE_STEP_US / 1000;
        if (o->due->len > 0)
            wait_ms = CLAMP((o->due_until_us - now_us()) / 1000, 1, wait_ms);
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, w->sub, wait_ms);
        if (s != NATS_OK && o->mark_in != 0 && !stopping(e))
            /* Nothing came: the handler is done with what the record names.
             * Said once, so a host killed while idle strikes nothing. */
            record_write(e, o, 0, 1);
        if (s == NATS_OK) {
            o->last_heard_us = now_us();
            int code = 0;
            const char *desc = NULL;
            gboolean keep = TRUE;
            const char *reply = natsMsg_GetReply(m);
            if (jet_nats_status(m, &code, &desc)) {
                /* What the server says comes after what it delivered before
                 * (a consumer gone, all its current values seen); a stop
                 * meanwhile left some unhandled, so it says nothing now. */
                if (handle_due(w, o))
                    keep = on_status(w, o, m, code, desc);
                why = "the server said the consumer is gone";
                natsMsg_Destroy(m);
            } else if (reply != NULL && g_str_has_prefix(reply, "$JS.ACK.")) {
                keep = on_delivery(w, o, m);
                why = "a consumer-sequence gap";
            } else {
                if (g_strcmp0(natsMsg_GetSubject(m), w->wake_subject) != 0)
                    JET_STAT_ADD(&w->stats, not_jetstream, 1);
                natsMsg_Destroy(m);
            }
            if (!keep)
                drop_consumer(e, o);
        }
        /* Silence past two heartbeats (a killed server, a lost pull), or a
         * pull whose end never came: re-create rather than re-pull, since
         * what broke may be the consumer. */
        gint64 now = now_us();
        if (o->pull.active && hb_us > 0 && now - o->last_heard_us > 2 * hb_us) {
            JET_STAT_ADD(&w->stats, missed_heartbeats, 1);
            jet_log(JET_LOG_WARNING, e->b->name, "missed-heartbeats",
                    "nothing from the server for %" G_GINT64_FORMAT " ms; re-creating the ordered consumer",
                    (now - o->last_heard_us) / 1000);
            why = "missed heartbeats";
            handle_due(w, o);
            drop_consumer(e, o);
        } else if (o->pull.active && now > o->pull.deadline_us) {
            o->pull.active = FALSE;
        }
    }
    g_ptr_array_set_size(o->due, 0);   /* never handled: the position stays before them */
    jet_sub_end(jet_conn_nats(e->conn), w->sub);   /* destroyed with the engine */
    drop_consumer(e, o);
    /* Stopped cleanly: nothing in the handler. */
    record_write(e, o, 0, 1);
    return NULL;
}

/* --- the driver ---------------------------------------------------------------- */

static guint ordered_workers(const JetBindingConfig *b)
{
    (void)b;
    return 1;   /* one message at a time, in stream order */
}

static void ordered_init(JetEngine *e)
{
    e->workers[0].driver_state = ordered_new();
}

static void ordered_fini(JetEngine *e)
{
    Worker *w = &e->workers[0];
    ordered_drop(e, w->driver_state);   /* bound, never started (another binding failed) */
    ordered_free(w->driver_state);
    w->driver_state = NULL;
}

static void ordered_start(JetEngine *e)
{
    Worker *w = &e->workers[0];
    jet__worker_inbox(w);
    g_autofree char *name = g_strdup_printf("jet-%s-0", e->b->name);
    w->thread = g_thread_new(name, ordered_main, w);
    /* Nothing is acked, so there is no lease to keep (docs/ordered.md);
     * a handler past handler_timeout is still reported. */
    jet_log(JET_LOG_INFO, e->b->name, "subscribed", "ordered on %s, batch %u", e->b->stream, e->b->batch);
    if (e->b->handler_timeout_ms > 0) {
        g_autofree char *wname = g_strdup_printf("jet-%s-watch", e->b->name);
        e->keeper = g_thread_new(wname, ordered_watch_main, e);
    }
}

const JetDriver jet__driver_ordered = {
    .kind = "ordered",
    .n_workers = ordered_workers,
    .init = ordered_init,
    .fini = ordered_fini,
    .bind = ordered_bind,
    .transport = ordered_transport_init,
    .start = ordered_start,
};
