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

void jet_ledger_close(JetLedger *l)
{
    if (l == NULL)
        return;
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
