/* The attempt ledger's KV bucket (docs/retries.md); the record it stores is
 * host/core/ledger_record.c. */
#include "ledger.h"
#include "msg_payload.h"
#include "conn.h"
#include "log.h"
#include "names.h"

#include <string.h>

struct JetLedger {
    kvStore *kv;
    char *bucket;
    guint64 max_age_ms;
    gboolean direct;
    jsCtx *behind;          /* ours: forgets not waited for, or NULL */
    char *put_prefix;       /* "$KV.<bucket>." with the API prefix before it, if not the default */
    gint forgets_failed;
    gint64 forget_logged_us;   /* the last ledger-forget-failed line (the cool-down lock) */
    guint forget_unlogged;     /* failures since it */
    GMutex lock;            /* the cool-down clock */
    guint cooldown_ms;
    gint64 down_until_us;   /* monotonic clock; 0 = not cooling down */
};

#define NS_PER_MS G_GINT64_CONSTANT(1000000)
/* How long a bucket this host created may take to show on a cluster. */
#define CREATED_SETTLE_US (5 * G_USEC_PER_SEC)

/* --- the bucket ------------------------------------------------------------- */

static void set_unreachable(GError **error, natsStatus s, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void set_unreachable(GError **error, natsStatus s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *why = jet_nats_error(s);
    g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_UNREACHABLE, "%s: %s", what, why);
}

static gboolean last_error_contains(const char *text)
{
    const char *last = nats_GetLastError(NULL);
    return last != NULL && strstr(last, text) != NULL;
}

/* A plain NATS_ERR with this text is the server's err 10071. */
static gboolean is_cas_conflict(natsStatus s)
{
    return s == NATS_ERR && last_error_contains("wrong last sequence");
}

static gboolean is_our_bucket(const jsStreamConfig *c, const char *bucket)
{
    g_autofree char *subject = g_strdup_printf("$KV.%s.>", bucket);
    return c->SubjectsLen == 1 && c->Subjects != NULL && g_strcmp0(c->Subjects[0], subject) == 0
           && c->MaxMsgsPerSubject >= 1;
}

/* nats.c's create refuses a bucket that exists with any field other than
 * those asked for, replicas included: so a bucket that exists and is ours is
 * bound to, never created over. */
static gboolean create_refused_as_different(natsStatus s)
{
    return s == NATS_ERR && last_error_contains("Existing configuration is different");
}

JetLedger *jet_ledger_open(jsCtx *js, const char *bucket, gboolean create, guint64 max_age_ms, guint replicas,
                           GError **error)
{
    g_return_val_if_fail(js != NULL && bucket != NULL, NULL);
    const char *why = jet_bucket_problem(bucket);
    if (why != NULL) {
        g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID, "ledger bucket name \"%s\" %s", bucket, why);
        return NULL;
    }
    if (create && (max_age_ms == 0 || max_age_ms > (guint64)(G_MAXINT64 / NS_PER_MS))) {
        g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID,
                    "ledger bucket %s: a managed bucket needs a finite, positive max_age", bucket);
        return NULL;
    }
    g_autofree char *stream = g_strdup_printf("KV_%s", bucket);
    gint64 want_ns = (gint64)max_age_ms * NS_PER_MS;

    kvStore *kv = NULL;
    jsStreamInfo *si = NULL;
    natsStatus s;
    for (int attempt = 0;; attempt++) {
        s = js_GetStreamInfo(&si, js, stream, NULL, NULL);
        if (s == NATS_NOT_FOUND && !create) {
            g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_MISSING,
                        "ledger bucket %s does not exist (stream %s); create it, or let the host manage it",
                        bucket, stream);
            return NULL;
        }
        if (s != NATS_OK && s != NATS_NOT_FOUND) {
            set_unreachable(error, s, "ledger bucket %s: stream info", bucket);
            return NULL;
        }
        if (si != NULL && !is_our_bucket(si->Config, bucket)) {
            g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID,
                        "stream %s exists but is not a KV bucket (subjects, history)", stream);
            jsStreamInfo_Destroy(si);
            return NULL;
        }
        if (si != NULL || !create)
            break;
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = bucket;
        kc.Description = "jethost attempt ledger";
        kc.History = 1;
        kc.TTL = want_ns;                 /* the stream's MaxAge, in ns */
        kc.StorageType = js_FileStorage;
        kc.Replicas = replicas > 0 ? (int)replicas : 1;
        s = js_CreateKeyValue(&kv, js, &kc);
        if (s == NATS_OK) {
            jet_log(JET_LOG_INFO, NULL, "ledger-created", "created ledger bucket %s (%d replica%s)", bucket,
                    kc.Replicas, kc.Replicas == 1 ? "" : "s");
            break;
        }
        /* Another host made it first, with settings of its own: look again, once. */
        if (create_refused_as_different(s) && attempt == 0)
            continue;
        set_unreachable(error, s, "ledger bucket %s: create", bucket);
        return NULL;
    }
    if (create && si != NULL) {
        jet_stream_replicas_note(NULL, "ledger bucket stream", si, replicas);
        if (si->Config->MaxAge != want_ns) {
            /* Managed: the configured max_age wins. */
            gint64 had = si->Config->MaxAge;
            si->Config->MaxAge = want_ns;
            jsStreamInfo *upd = NULL;
            s = js_UpdateStream(&upd, js, si->Config, NULL, NULL);
            jsStreamInfo_Destroy(upd);
            if (s != NATS_OK) {
                set_unreachable(error, s, "ledger bucket %s: updating max_age", bucket);
                jsStreamInfo_Destroy(si);
                return NULL;
            }
            jet_log(JET_LOG_INFO, NULL, "ledger-max-age",
                    "ledger bucket %s: max_age changed from %" G_GINT64_FORMAT " ms to %" G_GUINT64_FORMAT " ms",
                    bucket, had / NS_PER_MS, max_age_ms);
        }
    }
    gboolean found = si != NULL;
    jsStreamInfo_Destroy(si);
    si = NULL;

    if (found) {
        s = js_KeyValue(&kv, js, bucket);
        if (s == NATS_NOT_FOUND) {
            g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_MISSING,
                        "ledger bucket %s does not exist", bucket);
            return NULL;
        }
        if (s != NATS_OK) {
            set_unreachable(error, s, "ledger bucket %s: bind", bucket);
            return NULL;
        }
    }

    /* What the server says now, not what was asked for.  A bucket just
     * made on a cluster can be "not found", or not answered, for a moment,
     * while its stream's replicas elect a leader (seen on a loaded 2-core
     * machine with nats-server 2.15 and 3 replicas): asked again for a few
     * seconds. */
    gint64 until = g_get_monotonic_time() + CREATED_SETTLE_US;
    while (((s = js_GetStreamInfo(&si, js, stream, NULL, NULL)) == NATS_NOT_FOUND || s == NATS_TIMEOUT) && !found &&
           g_get_monotonic_time() < until)
        g_usleep(100 * 1000);
    if (s != NATS_OK) {
        set_unreachable(error, s, "ledger bucket %s: stream info", bucket);
        kvStore_Destroy(kv);
        return NULL;
    }
    JetLedger *l = g_new0(JetLedger, 1);
    g_mutex_init(&l->lock);
    l->kv = kv;
    l->bucket = g_strdup(bucket);
    l->max_age_ms = si->Config->MaxAge > 0 ? (guint64)(si->Config->MaxAge / NS_PER_MS) : 0;
    l->direct = si->Config->AllowDirect;
    jsStreamInfo_Destroy(si);
    if (l->max_age_ms == 0)
        jet_log(JET_LOG_WARNING, NULL, "ledger-no-max-age",
                "ledger bucket %s has no max_age: its entries and delete markers never expire", bucket);
    if (l->max_age_ms > 0 && l->max_age_ms != max_age_ms && !create)
        jet_log(JET_LOG_INFO, NULL, "ledger-max-age", "ledger bucket %s: bound, max_age %" G_GUINT64_FORMAT " ms",
                bucket, l->max_age_ms);
    return l;
}

/* How long a close waits for the forgets still out (then their records
 * expire after max_age), and how long one may go unanswered. */
#define BEHIND_CLOSE_MS 2000
#define BEHIND_ANSWER_MS 5000
/* Forgets out at once before one more waits (nats.c stalls, then refuses). */
#define BEHIND_MAX_OUT 4096
#define BEHIND_WAITED_MS 1000

/* FALSE when an answer's handler may still be running on nats.c's thread
 * (it reads l): the caller must not free l then. */
static gboolean behind_close(JetLedger *l)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = BEHIND_CLOSE_MS;
    gboolean quiet = TRUE;
    if (js_PublishAsyncComplete(l->behind, &po) != NATS_OK) {
        natsMsgList left = { 0 };
        if (js_PublishAsyncGetPendingList(&left, l->behind) == NATS_OK) {
            g_atomic_int_add(&l->forgets_failed, left.Count);
            jet_log(JET_LOG_WARNING, NULL, "ledger-forget-failed",
                    "ledger %s: %d delete(s) of finished messages' records still unanswered after %d ms at stop; "
                    "those records expire after max_age",
                    l->bucket, left.Count, BEHIND_CLOSE_MS);
            natsMsgList_Destroy(&left);
        }
        /* Taking the list leaves counted only an answer whose handler is
         * running now: wait for it to return. */
        po.MaxWait = 1000;
        quiet = js_PublishAsyncComplete(l->behind, &po) == NATS_OK;
    }
    jsCtx_Destroy(l->behind);
    l->behind = NULL;
    return quiet;
}

void jet_ledger_close(JetLedger *l)
{
    if (l == NULL)
        return;
    if (l->behind != NULL && !behind_close(l))
        return;   /* left to the process's end rather than freed under a handler */
    g_free(l->put_prefix);
    kvStore_Destroy(l->kv);
    g_mutex_clear(&l->lock);
    g_free(l->bucket);
    g_free(l);
}

void jet_ledger_set_cooldown(JetLedger *l, guint cooldown_ms)
{
    g_return_if_fail(l != NULL);
    g_mutex_lock(&l->lock);
    l->cooldown_ms = cooldown_ms;
    l->down_until_us = 0;
    g_mutex_unlock(&l->lock);
}

/* TRUE (error set) while the cool-down after an UNREACHABLE lasts. */
static gboolean cooling_down(JetLedger *l, GError **error)
{
    g_mutex_lock(&l->lock);
    gint64 left_us = l->down_until_us - g_get_monotonic_time();
    g_mutex_unlock(&l->lock);
    if (left_us <= 0)
        return FALSE;
    g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_UNREACHABLE,
                "ledger %s: unreachable a moment ago; not asking again for %" G_GINT64_FORMAT " ms",
                l->bucket, (left_us + 999) / 1000);
    return TRUE;
}

/* Returns st, starting the cool-down when it is UNREACHABLE. */
static JetLedgerStatus note(JetLedger *l, JetLedgerStatus st)
{
    if (st != JET_LEDGER_UNREACHABLE)
        return st;
    g_mutex_lock(&l->lock);
    if (l->cooldown_ms > 0)
        l->down_until_us = g_get_monotonic_time() + (gint64)l->cooldown_ms * 1000;
    g_mutex_unlock(&l->lock);
    return st;
}

kvStore *jet_ledger_kv(JetLedger *l)
{
    return l->kv;
}

const char *jet_ledger_bucket(const JetLedger *l)
{
    g_return_val_if_fail(l != NULL, NULL);
    return l->bucket;
}

guint64 jet_ledger_max_age_ms(const JetLedger *l)
{
    g_return_val_if_fail(l != NULL, 0);
    return l->max_age_ms;
}

gboolean jet_ledger_uses_direct_get(const JetLedger *l)
{
    g_return_val_if_fail(l != NULL, FALSE);
    return l->direct;
}

static JetLedgerStatus read_key(JetLedger *l, const char *key, JetLedgerRecord *out, GError **error)
{
    jet_ledger_record_init(out);
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, l->kv, key);
    if (s == NATS_NOT_FOUND)
        return JET_LEDGER_ABSENT;   /* never written, deleted (marker) or expired */
    if (s != NATS_OK) {
        set_unreachable(error, s, "ledger %s: reading %s", l->bucket, key);
        return JET_LEDGER_UNREACHABLE;
    }
    guint64 rev = kvEntry_Revision(e);
    gsize len = 0;
    const char *value = jet_kv_value(e, &len);
    g_autoptr(GError) perr = NULL;
    gboolean ok = jet_ledger_record_from_json(value, len, out, &perr);
    kvEntry_Destroy(e);
    if (!ok) {
        jet_log(JET_LOG_WARNING, NULL, "ledger-unreadable",
                "ledger %s: record %s at revision %" G_GUINT64_FORMAT " is unreadable (%s); treated as absent",
                l->bucket, key, rev, perr->message);
        jet_ledger_record_init(out);
        out->revision = rev;        /* so that the next write replaces it */
        return JET_LEDGER_ABSENT;
    }
    out->revision = rev;
    return JET_LEDGER_FOUND;
}

JetLedgerStatus jet_ledger_get(JetLedger *l, const char *stream, const char *consumer,
                               guint64 stream_seq, JetLedgerRecord *out, GError **error)
{
    g_return_val_if_fail(l != NULL && stream != NULL && consumer != NULL && out != NULL,
                         JET_LEDGER_UNREACHABLE);
    if (cooling_down(l, error)) {
        jet_ledger_record_init(out);
        return JET_LEDGER_UNREACHABLE;
    }
    g_autofree char *key = jet_ledger_key(stream, consumer, stream_seq);
    return note(l, read_key(l, key, out, error));
}

static JetLedgerStatus update(JetLedger *l, const char *key, const JetLedgerRecord *known, JetLedgerMutateFn mutate,
                              gpointer user_data, JetLedgerRecord *out, GError **error)
{
    for (guint attempt = 1;; attempt++) {
        JetLedgerRecord rec;
        /* The caller's record saves the read: one round trip a write.  If
         * it is not what the key holds, the write loses, and the next
         * attempt reads. */
        gboolean guessed = attempt == 1 && known != NULL;
        if (guessed)
            rec = *known;
        else if (read_key(l, key, &rec, error) == JET_LEDGER_UNREACHABLE)
            return JET_LEDGER_UNREACHABLE;
        guint64 read_at = rec.revision;
        JetLedgerRecord as_read = rec;
        if (!mutate(&rec, user_data)) {
            if (out != NULL)
                *out = as_read;
            return JET_LEDGER_SKIPPED;
        }
        rec.revision = read_at;
        gsize len = 0;
        g_autofree char *json = jet_ledger_record_to_json(&rec, &len);
        guint64 rev = 0;
        natsStatus s = kvStore_Update(&rev, l->kv, key, json, (int)len, read_at);
        if (read_at == 0 && is_cas_conflict(s)) {
            /* "Nothing there" may be a delete marker, which has a revision
             * kvStore_Get does not tell: kvStore_Create reads it and writes
             * over it.  (Not called first: when the key truly holds nothing
             * and the write fails for another reason, it clears the error
             * text we report.) */
            s = kvStore_Create(&rev, l->kv, key, json, (int)len);
        }
        if (s == NATS_OK) {
            rec.revision = rev;
            if (out != NULL)
                *out = rec;
            return JET_LEDGER_WRITTEN;
        }
        if (!is_cas_conflict(s)) {
            set_unreachable(error, s, "ledger %s: writing %s", l->bucket, key);
            return JET_LEDGER_UNREACHABLE;
        }
        if (attempt >= JET_LEDGER_CAS_ATTEMPTS + (known != NULL ? 1u : 0u)) {   /* a guess is not one of them */
            g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_CONFLICT,
                        "ledger %s: %s changed under each of %d compare-and-set attempts",
                        l->bucket, key, JET_LEDGER_CAS_ATTEMPTS);
            return JET_LEDGER_CONFLICT;
        }
        /* Someone else wrote in between: read the fresh record and retry,
         * after a short jittered pause so two writers do not keep colliding
         * (at once after a guess that lost: nobody else may have written). */
        if (!guessed)
            g_usleep((gulong)g_random_int_range(50, 500 * (1 << MIN(attempt, 4u))));
    }
}

JetLedgerStatus jet_ledger_update_from(JetLedger *l, const char *stream, const char *consumer, guint64 stream_seq,
                                       const JetLedgerRecord *known, JetLedgerMutateFn mutate, gpointer user_data,
                                       JetLedgerRecord *out, GError **error)
{
    g_return_val_if_fail(l != NULL && stream != NULL && consumer != NULL && mutate != NULL,
                         JET_LEDGER_UNREACHABLE);
    if (cooling_down(l, error))
        return JET_LEDGER_UNREACHABLE;
    g_autofree char *key = jet_ledger_key(stream, consumer, stream_seq);
    return note(l, update(l, key, known, mutate, user_data, out, error));
}

JetLedgerStatus jet_ledger_update(JetLedger *l, const char *stream, const char *consumer,
                                  guint64 stream_seq, JetLedgerMutateFn mutate, gpointer user_data,
                                  JetLedgerRecord *out, GError **error)
{
    return jet_ledger_update_from(l, stream, consumer, stream_seq, NULL, mutate, user_data, out, error);
}

JetLedgerStatus jet_ledger_delete(JetLedger *l, const char *stream, const char *consumer,
                                  guint64 stream_seq, GError **error)
{
    g_return_val_if_fail(l != NULL && stream != NULL && consumer != NULL, JET_LEDGER_UNREACHABLE);
    if (cooling_down(l, error))
        return JET_LEDGER_UNREACHABLE;
    g_autofree char *key = jet_ledger_key(stream, consumer, stream_seq);
    natsStatus s = kvStore_Delete(l->kv, key);
    if (s != NATS_OK) {
        set_unreachable(error, s, "ledger %s: deleting %s", l->bucket, key);
        return note(l, JET_LEDGER_UNREACHABLE);
    }
    return JET_LEDGER_WRITTEN;
}

/* --- forgetting without waiting ---------------------------------------------- */

/* One line every ten seconds at most while deletes keep failing. */
#define FORGET_LOG_US (10 * G_USEC_PER_SEC)

/* On nats.c's thread: a forget the server refused, or did not answer in
 * time.  Losing to a later write (err 10071) is the design working.  No
 * cool-down starts: the workers' own calls find out for themselves, and a
 * late timeout must not send them to the fallback once the server is back. */
static void forget_answered_badly(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    (void)js;
    JetLedger *l = closure;
    if (pae->ErrCode == 10071)
        return;
    g_atomic_int_inc(&l->forgets_failed);
    gint64 now = g_get_monotonic_time();
    g_mutex_lock(&l->lock);
    guint before = l->forget_unlogged;
    gboolean say = l->forget_logged_us == 0 || now - l->forget_logged_us >= FORGET_LOG_US;
    if (say) {
        l->forget_logged_us = now;
        l->forget_unlogged = 0;
    } else {
        l->forget_unlogged++;
    }
    g_mutex_unlock(&l->lock);
    if (!say)
        return;
    const char *subject = pae->Msg != NULL ? natsMsg_GetSubject(pae->Msg) : "?";
    /* The server's own words when it refused; nats.c's otherwise. */
    g_autofree char *why = pae->ErrCode != 0 && pae->ErrText != NULL
                               ? g_strdup_printf("%s (err %d)", pae->ErrText, (int)pae->ErrCode)
                               : jet_nats_error(pae->Err);
    g_autofree char *more = before > 0 ? g_strdup_printf(" (and %u more since the last such line)", before)
                                       : g_strdup("");
    jet_log(JET_LOG_WARNING, NULL, "ledger-forget-failed",
            "ledger %s: deleting a finished message's record (%s) failed: %s%s; unless it lands after all, the "
            "record expires after max_age",
            l->bucket, subject, why, more);
}

gboolean jet_ledger_forget_behind(JetLedger *l, natsConnection *nc, const char *api_prefix, GError **error)
{
    g_return_val_if_fail(l != NULL && nc != NULL && l->behind == NULL, FALSE);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = BEHIND_ANSWER_MS;
    jo.Prefix = api_prefix;
    jo.PublishAsync.ErrHandler = forget_answered_badly;
    jo.PublishAsync.ErrHandlerClosure = l;
    jo.PublishAsync.MaxPending = BEHIND_MAX_OUT;
    natsStatus s = natsConnection_JetStream(&l->behind, nc, &jo);
    if (s != NATS_OK) {
        l->behind = NULL;
        set_unreachable(error, s, "ledger %s: a context for deletes", l->bucket);
        return FALSE;
    }
    /* As nats.c's kvStore names a put: the API prefix first only when it
     * is not the default one. */
    gboolean custom = api_prefix != NULL && *api_prefix != '\0' && g_strcmp0(api_prefix, "$JS.API") != 0;
    l->put_prefix = custom ? g_strdup_printf("%s.$KV.%s.", api_prefix, l->bucket) : g_strdup_printf("$KV.%s.", l->bucket);
    return TRUE;
}

/* The delete marker nats.c's kvStore_Delete sends. */
static natsMsg *forget_msg(JetLedger *l, const char *key)
{
    g_autofree char *subject = g_strconcat(l->put_prefix, key, NULL);
    natsMsg *m = NULL;
    if (natsMsg_Create(&m, subject, NULL, NULL, 0) != NATS_OK)
        return NULL;
    if (natsMsgHeader_Set(m, "KV-Operation", "DEL") != NATS_OK) {
        natsMsg_Destroy(m);
        return NULL;
    }
    return m;
}

JetLedgerStatus jet_ledger_forget(JetLedger *l, const char *stream, const char *consumer, guint64 stream_seq,
                                  guint64 revision, GError **error)
{
    g_return_val_if_fail(l != NULL && stream != NULL && consumer != NULL && revision > 0, JET_LEDGER_UNREACHABLE);
    if (l->behind == NULL)
        return jet_ledger_delete(l, stream, consumer, stream_seq, error);
    if (cooling_down(l, error))
        return JET_LEDGER_UNREACHABLE;
    g_autofree char *key = jet_ledger_key(stream, consumer, stream_seq);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.ExpectLastSubjectSeq = revision;
    po.MaxWait = BEHIND_ANSWER_MS;   /* an answer that never comes is a failure too */
    natsMsg *m = forget_msg(l, key);
    natsStatus s = m != NULL ? js_PublishMsgAsync(l->behind, &m, &po) : NATS_NO_MEMORY;
    natsMsg_Destroy(m);   /* NULL once nats.c took it */
    if (s == NATS_OK)
        return JET_LEDGER_QUEUED;
    /* Not taken: too many out (nats.c stalled for its StallWait, 200 ms),
     * or the connection refused it (closed, its reconnect buffer full).
     * This one waits for its answer instead, as long as the daemon's
     * ledger calls do. */
    po.MaxWait = BEHIND_WAITED_MS;
    m = forget_msg(l, key);
    jsErrCode jerr = 0;
    s = m != NULL ? js_PublishMsg(NULL, l->behind, m, &po, &jerr) : NATS_NO_MEMORY;
    natsMsg_Destroy(m);
    if (s == NATS_OK || jerr == 10071)
        return JET_LEDGER_WRITTEN;
    set_unreachable(error, s, "ledger %s: deleting %s", l->bucket, key);
    return note(l, JET_LEDGER_UNREACHABLE);
}

guint jet_ledger_forgets_failed(JetLedger *l)
{
    g_return_val_if_fail(l != NULL, 0);
    return (guint)g_atomic_int_get(&l->forgets_failed);
}
