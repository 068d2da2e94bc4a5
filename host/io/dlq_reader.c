/* The ordered read of a DLQ stream (dlq_reader.h).
 *
 * Deliveries arrive on an async subscription: nats.c reads the headers of a
 * message with an empty payload on the synchronous path only (nats_raw.h),
 * and with headers_only every delivery has one, so the block handed to
 * jet_hdr_parse here is the one the server sent. */
#include "dlq_reader.h"
#include "consumer_setup.h"
#include "msg_payload.h"
#include "start_time.h"
#include "stream_info.h"
#include "sub_end.h"

#include "ack_subject.h"
#include "errors.h"
#include "hdr_block.h"
#include "nats_raw.h"
#include "pull_status.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_BATCH 512
/* A pull's lifetime at the server; a read waits this and a margin for the
 * next message before it takes the consumer for lost. */
#define PULL_EXPIRES_MS 5000
#define SILENCE_MS (PULL_EXPIRES_MS + 5000)
/* Consumers re-created in a row without a record between them, before the
 * read gives up. */
#define MAX_RESTARTS 5

typedef struct {
    JetConn *conn;
    const char *stream;
    const JetDlqReadOptions *o;
    char *consumer;            /* the one in use; NULL: none */
    char *next_subject;
    char *inbox;               /* <inbox>.<pull id> replies */
    natsSubscription *sub;
    GAsyncQueue *q;            /* natsMsg *, from the subscription's thread */
    guint pull_id;             /* the one pull outstanding */
    guint pull_received;       /* its deliveries so far */
    guint64 expect_cseq;
    guint64 position;          /* the last stream seq handed over (or passed over); 0: none */
    gboolean past_start;       /* a record at or after the start time was reached */
    guint64 end;               /* the stream's last seq when the read began */
} Reader;

/* Where the subscription's thread puts deliveries, and how the reader
 * knows that thread is done with it for good (nats.c's on-complete
 * callback, after the unsubscribe): only then are the messages left in it
 * destroyed and it freed, while the connection is still open. */
typedef struct {
    GAsyncQueue *q;
    GMutex lock;
    GCond cond;
    gboolean complete;
} Sink;

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    g_async_queue_push(((Sink *)closure)->q, m);
}

static void on_complete(void *closure)
{
    Sink *k = closure;
    g_mutex_lock(&k->lock);
    k->complete = TRUE;
    g_cond_signal(&k->cond);
    g_mutex_unlock(&k->lock);
}

/* Unsubscribes and frees what the subscription fed.  Should nats.c never
 * say it is done, or the reading thread not be known to be done with it
 * (sub_end.h), the sink and the subscription are left as they are: a leak
 * in a command about to exit, rather than a thread using freed memory. */
static void unsubscribe(natsConnection *nc, natsSubscription *sub, Sink *k)
{
    gboolean ended = jet_sub_end(nc, sub);
    gint64 until = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;
    g_mutex_lock(&k->lock);
    while (!k->complete && g_cond_wait_until(&k->cond, &k->lock, until))
        ;
    gboolean complete = k->complete;
    g_mutex_unlock(&k->lock);
    if (!complete || !ended)
        return;
    natsSubscription_Destroy(sub);
    g_async_queue_unref(k->q);   /* destroys what is left in it */
    g_mutex_clear(&k->lock);
    g_cond_clear(&k->cond);
    g_free(k);
}

static void drop_consumer(Reader *r)
{
    if (r->consumer == NULL)
        return;
    jsErrCode jerr = 0;
    js_DeleteConsumer(jet_conn_js(r->conn), r->stream, r->consumer, NULL, &jerr);
    g_clear_pointer(&r->consumer, g_free);
    g_clear_pointer(&r->next_subject, g_free);
}

/* A consumer from position + 1, or from the options' start for the first. */
static gboolean make_consumer(Reader *r, GError **error)
{
    drop_consumer(r);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.AckPolicy = js_AckNone;
    cc.MemoryStorage = true;
    cc.Replicas = 1;
    cc.HeadersOnly = r->o->headers_only;
    /* Reaped by the server if this process dies mid-read. */
    cc.InactiveThreshold = (int64_t)30 * 1000000000;
    if (r->position > 0) {
        cc.DeliverPolicy = js_DeliverByStartSequence;
        cc.OptStartSeq = r->position + 1;
    } else if (r->o->start_seq > 0) {
        cc.DeliverPolicy = js_DeliverByStartSequence;
        cc.OptStartSeq = r->o->start_seq;
    } else if (jet_start_time_whole_second(r->o->start_time_ns) > 0) {
        /* The second before: deliver() passes over what precedes the time. */
        cc.DeliverPolicy = js_DeliverByStartTime;
        cc.OptStartTime = jet_start_time_whole_second(r->o->start_time_ns);
    } else {
        cc.DeliverPolicy = js_DeliverAll;
    }
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddConsumer(&ci, jet_conn_js(r->conn), r->stream, &cc, NULL, &jerr);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "stream %s: cannot create a consumer to read it: %s [err %d]",
                    r->stream, why, (int)jerr);
        return FALSE;
    }
    r->consumer = g_strdup(ci->Name);
    jsConsumerInfo_Destroy(ci);
    r->next_subject = g_strdup_printf("%s.CONSUMER.MSG.NEXT.%s.%s", jet_conn_api_prefix(r->conn), r->stream,
                                      r->consumer);
    r->expect_cseq = 1;
    return TRUE;
}

static guint batch_of(const Reader *r)
{
    return r->o->batch > 0 ? r->o->batch : DEFAULT_BATCH;
}

static gboolean pull(Reader *r, GError **error)
{
    guint batch = batch_of(r);
    char body[128];
    snprintf(body, sizeof body, "{\"batch\":%u,\"expires\":%" G_GUINT64_FORMAT ",\"no_wait\":true}", batch,
             (guint64)PULL_EXPIRES_MS * 1000000);
    g_autofree char *reply = g_strdup_printf("%s.%u", r->inbox, ++r->pull_id);
    r->pull_received = 0;
    natsStatus s = natsConnection_PublishRequestString(jet_conn_nats(r->conn), r->next_subject, reply, body);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "stream %s: pull not sent: %s", r->stream, why);
        return FALSE;
    }
    return TRUE;
}

/* The pull id a reply subject names (0: not ours). */
static guint pull_id_of(const Reader *r, const char *subject)
{
    gsize n = strlen(r->inbox);
    if (subject == NULL || strncmp(subject, r->inbox, n) != 0 || subject[n] != '.')
        return 0;
    return (guint)g_ascii_strtoull(subject + n + 1, NULL, 10);
}


typedef enum {
    STEP_RECORD,      /* go on */
    STEP_PULL_FULL,   /* the pull delivered its whole batch: the next one */
    STEP_PULL_OVER,   /* the server ended the pull */
    STEP_RESTART,     /* a new consumer, after the last record handed over */
    STEP_DONE,
    STEP_STOP,
} Step;

/* After a delivery: the end, the next pull, or the next record. */
static Step next_step(const Reader *r, const JetAckMeta *meta)
{
    if (meta->pending == 0 || r->position >= r->end)
        return STEP_DONE;
    return r->pull_received >= batch_of(r) ? STEP_PULL_FULL : STEP_RECORD;
}

/* One delivery handed over; what the read does next. */
static Step deliver(Reader *r, natsMsg *m, const JetAckMeta *meta, JetDlqRecordFn fn, gpointer data,
                    JetDlqReadStats *st)
{
    if (meta->consumer_seq != r->expect_cseq)
        return STEP_RESTART;   /* a delivery went missing: read again after position */
    r->expect_cseq++;
    r->pull_received++;
    if (meta->stream_seq <= r->position)
        return STEP_RECORD;    /* already handed over (cannot happen on a fresh consumer; cheap to keep) */
    if (meta->stream_seq > r->end)
        return STEP_DONE;      /* added after the read began */
    if (!r->past_start && r->o->start_seq == 0 && jet_start_time_before(r->o->start_time_ns, meta->timestamp_ns)) {
        /* Before the start time, from the whole second the consumer began at
         * (start_time.h): passed over, as the server would have. */
        r->position = meta->stream_seq;
        return next_step(r, meta);
    }
    r->past_start = TRUE;
    g_autofree char *block = NULL;
    gsize block_len = 0;
    jet_nats_raw_headers(m, &block, &block_len);
    g_auto(JetHdrParse) p = { 0 };
    jet_hdr_parse(block, block_len, &p);
    JetDlqRecord rec = {
        .seq = meta->stream_seq,
        .stored_ns = meta->timestamp_ns,
        .subject = natsMsg_GetSubject(m),
        .headers = p.headers,
        .defects = p.defects,
    };
    if (!r->o->headers_only)
        rec.data = jet_msg_payload(m, &rec.len);
    r->position = meta->stream_seq;
    st->records++;
    if (!fn(&rec, data))
        return STEP_STOP;
    return next_step(r, meta);
}

static gboolean read_all(Reader *r, JetDlqRecordFn fn, gpointer data, JetDlqReadStats *st, GError **error)
{
    guint restarts = 0;
    if (!make_consumer(r, error) || !pull(r, error))
        return FALSE;
    st->pulls++;
    for (;;) {
        natsMsg *m = g_async_queue_timeout_pop(r->q, (guint64)SILENCE_MS * 1000);
        Step step;
        guint64 received_before = st->records;
        if (m == NULL) {
            step = STEP_RESTART;
        } else {
            guint id = pull_id_of(r, natsMsg_GetSubject(m));
            int code = 0;
            const char *desc = NULL;
            JetAckMeta meta;
            guint received = r->pull_received;
            if (natsMsg_GetReply(m) == NULL && jet_nats_status(m, &code, &desc)) {
                if (id != r->pull_id) {
                    step = STEP_RECORD;   /* a status of a pull already over */
                } else {
                    switch (jet_pull_status_classify(code, desc, 0)) {
                    case JET_PULL_HEARTBEAT: step = STEP_RECORD; break;
                    case JET_PULL_CONSUMER_GONE: step = STEP_RESTART; break;
                    case JET_PULL_INVALID:
                        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "stream %s: the server refused the pull: %d %s",
                                    r->stream, code, desc != NULL ? desc : "");
                        natsMsg_Destroy(m);
                        return FALSE;
                    case JET_PULL_END:
                        /* no_wait: a pull that ends having found nothing
                         * means nothing is left (records removed at the
                         * end, after the last one read), if the consumer
                         * agrees: a consumer just made by start time has
                         * answered a first pull with "no messages" while
                         * records were there (seen on 2.9.10). */
                        if (received > 0)
                            step = STEP_PULL_OVER;
                        else if (jet_consumer_nothing_pending(jet_conn_js(r->conn), r->stream, r->consumer))
                            step = STEP_DONE;
                        else {
                            g_usleep(20 * 1000);
                            step = STEP_RESTART;
                        }
                        break;
                    default:
                        /* Ended for a reason of the server's (a leader
                         * change, a shutdown) or one the table does not
                         * know: never taken for the end of the stream. */
                        if (received == 0) {
                            g_usleep(100 * 1000);
                            step = STEP_RESTART;
                        } else {
                            step = STEP_PULL_OVER;
                        }
                        break;
                    }
                }
            } else if (jet_ack_subject_parse(natsMsg_GetReply(m), &meta)) {
                /* The rest of a consumer already given up (a gap, a
                 * restart) may still be queued: only the current
                 * consumer's deliveries count (a delivery carries its
                 * stored subject, not the pull's inbox: the consumer is
                 * what tells). */
                gboolean current = r->consumer != NULL &&
                                   meta.consumer_len == strlen(r->consumer) &&
                                   memcmp(meta.consumer, r->consumer, meta.consumer_len) == 0;
                step = current ? deliver(r, m, &meta, fn, data, st) : STEP_RECORD;
            } else {
                step = STEP_RECORD;   /* not a delivery: nothing of ours */
            }
            natsMsg_Destroy(m);
        }
        if (st->records > received_before)
            restarts = 0;
        switch (step) {
        case STEP_RECORD:
            break;
        case STEP_STOP:
        case STEP_DONE:
            return TRUE;
        case STEP_PULL_FULL:
        case STEP_PULL_OVER:
            if (!pull(r, error))
                return FALSE;
            st->pulls++;
            break;
        case STEP_RESTART:
            if (++restarts > MAX_RESTARTS) {
                g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                            "stream %s: reading stopped after record %" G_GUINT64_FORMAT
                            ": %u consumers in a row delivered nothing in order",
                            r->stream, r->position, MAX_RESTARTS);
                return FALSE;
            }
            st->restarts++;
            if (!make_consumer(r, error) || !pull(r, error)) {
                g_prefix_error(error, "reading stopped after record %" G_GUINT64_FORMAT ": ", r->position);
                return FALSE;
            }
            st->pulls++;
            break;
        }
    }
}

gboolean jet_dlq_read(JetConn *conn, const char *stream, const JetDlqReadOptions *o, JetDlqRecordFn fn,
                      gpointer data, JetDlqReadStats *stats, GError **error)
{
    JetDlqReadStats local = { 0 };
    JetDlqReadStats *st = stats != NULL ? stats : &local;
    *st = (JetDlqReadStats){ 0 };
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    /* Where the read ends: a leader's count, never a member's own during an
     * election (stream_info.h). */
    natsStatus s = jet_stream_info_led(&si, jet_conn_js(conn), stream, 5000, NULL, &jerr);
    if (s != NATS_OK) {
        g_autofree char *why = s == NATS_TIMEOUT && jerr == 0 ? g_strdup("no leader answered in 5 s (an election?)")
                                                             : jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "stream %s: %s", stream, why);
        return FALSE;
    }
    guint64 msgs = si->State.Msgs, last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    st->last_seq = last;
    if (msgs == 0 || (o->start_seq > 0 && o->start_seq > last))
        return TRUE;

    Reader r = { .conn = conn, .stream = stream, .o = o, .end = last };
    Sink *k = g_new0(Sink, 1);
    k->q = g_async_queue_new_full((GDestroyNotify)natsMsg_Destroy);
    g_mutex_init(&k->lock);
    g_cond_init(&k->cond);
    r.q = k->q;
    natsInbox *inbox = NULL;
    s = natsInbox_Create(&inbox);
    if (s == NATS_OK) {
        r.inbox = g_strdup(inbox);
        natsInbox_Destroy(inbox);
        g_autofree char *pattern = g_strdup_printf("%s.*", r.inbox);
        s = natsConnection_Subscribe(&r.sub, jet_conn_nats(conn), pattern, on_msg, k);
        if (s == NATS_OK)
            s = natsSubscription_SetOnCompleteCB(r.sub, on_complete, k);
    }
    gboolean ok;
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "stream %s: cannot subscribe for the read: %s", stream, why);
        ok = FALSE;
    } else {
        ok = read_all(&r, fn, data, st, error);
    }
    drop_consumer(&r);
    if (r.sub != NULL) {
        unsubscribe(jet_conn_nats(conn), r.sub, k);
    } else {
        g_async_queue_unref(k->q);
        g_mutex_clear(&k->lock);
        g_cond_clear(&k->cond);
        g_free(k);
    }
    g_free(r.inbox);
    return ok;
}
