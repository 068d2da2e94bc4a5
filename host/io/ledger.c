/* The attempt ledger (a JetStream KV bucket) and crash attribution. */
#include "ledger.h"
#include "conn.h"
#include "log.h"

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <string.h>

G_DEFINE_QUARK(jet-ledger-error-quark, jet_ledger_error)

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

gboolean jet_ledger_is_unreachable_error(const GError *error)
{
    return g_error_matches(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_UNREACHABLE);
}

const char *jet_ledger_status_name(JetLedgerStatus s)
{
    switch (s) {
    case JET_LEDGER_FOUND:       return "found";
    case JET_LEDGER_ABSENT:      return "absent";
    case JET_LEDGER_WRITTEN:     return "written";
    case JET_LEDGER_SKIPPED:     return "skipped";
    case JET_LEDGER_CONFLICT:    return "conflict";
    case JET_LEDGER_UNREACHABLE: return "unreachable";
    }
    return "unknown";
}

/* --- the record ------------------------------------------------------------- */

void jet_ledger_record_init(JetLedgerRecord *rec)
{
    g_return_if_fail(rec != NULL);
    memset(rec, 0, sizeof *rec);
}

/* Copies src into dst (size bytes with the NUL), cut at a UTF-8 boundary. */
static void copy_utf8(char *dst, gsize size, const char *src)
{
    g_autofree char *valid = g_utf8_make_valid(src != NULL ? src : "", -1);
    gsize n = strlen(valid);
    if (n >= size) {
        n = size - 1;
        /* Back up to the start of a character: never leave half of one. */
        while (n > 0 && ((guchar)valid[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, valid, n);
    dst[n] = '\0';
}

void jet_ledger_record_set_reason(JetLedgerRecord *rec, const char *reason)
{
    g_return_if_fail(rec != NULL);
    copy_utf8(rec->last_reason, sizeof rec->last_reason, reason);
}

void jet_ledger_record_add_failure(JetLedgerRecord *rec, gint64 now_ns, const char *reason)
{
    g_return_if_fail(rec != NULL);
    if (rec->failures < G_MAXUINT32)
        rec->failures++;
    if (!rec->has_first_failure) {
        rec->has_first_failure = TRUE;
        rec->first_failure_ns = now_ns;
    }
    jet_ledger_record_set_reason(rec, reason);
}

static void add_count(JsonBuilder *b, const char *key, guint32 v)
{
    if (v == 0)
        return;
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, (gint64)v);
}

char *jet_ledger_record_to_json(const JetLedgerRecord *rec, gsize *len)
{
    g_return_val_if_fail(rec != NULL, NULL);
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "v");
    json_builder_add_int_value(b, JET_LEDGER_RECORD_VERSION);
    add_count(b, "f", rec->failures);
    add_count(b, "p", rec->postpones);
    add_count(b, "r", rec->releases);
    if (rec->has_first_failure) {
        json_builder_set_member_name(b, "ff");
        json_builder_add_int_value(b, rec->first_failure_ns);
    }
    if (rec->last_reason[0] != '\0') {
        char reason[sizeof rec->last_reason];
        copy_utf8(reason, sizeof reason, rec->last_reason);   /* the struct is the caller's */
        json_builder_set_member_name(b, "lr");
        json_builder_add_string_value(b, reason);
    }
    add_count(b, "s", rec->strikes);
    add_count(b, "a", rec->absolved);
    if (rec->isolated) {
        char holder[sizeof rec->isolated_by];
        copy_utf8(holder, sizeof holder, rec->isolated_by);
        json_builder_set_member_name(b, "iso");
        json_builder_add_string_value(b, holder);
        json_builder_set_member_name(b, "isot");
        json_builder_add_int_value(b, rec->isolated_ns);
    }
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    return json_generator_to_data(gen, len);
}

static gboolean bad(GError **error, const char *key, const char *why)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "ledger record: \"%s\" %s", key, why);
    return FALSE;
}

static gboolean get_int(JsonObject *o, const char *key, gboolean *has, gint64 *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    *has = n != NULL;
    *out = 0;
    if (n == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
        return bad(error, key, "is not an integer");
    *out = json_node_get_int(n);
    return TRUE;
}

static gboolean get_count(JsonObject *o, const char *key, guint32 *out, GError **error)
{
    gboolean has;
    gint64 v;
    if (!get_int(o, key, &has, &v, error))
        return FALSE;
    if (v < 0 || v > (gint64)G_MAXUINT32)
        return bad(error, key, "is out of range");
    *out = (guint32)v;
    return TRUE;
}

static gboolean get_string(JsonObject *o, const char *key, gboolean *has, char *dst, gsize size,
                           GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    *has = n != NULL;
    dst[0] = '\0';
    if (n == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return bad(error, key, "is not a string");
    copy_utf8(dst, size, json_node_get_string(n));
    return TRUE;
}

gboolean jet_ledger_record_from_json(const char *data, gsize len, JetLedgerRecord *out,
                                     GError **error)
{
    g_return_val_if_fail(out != NULL, FALSE);
    jet_ledger_record_init(out);
    if (data == NULL || len == 0 || len > G_MAXSSIZE) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "ledger record: empty");
        return FALSE;
    }
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, data, (gssize)len, error))
        return FALSE;
    JsonNode *root = json_parser_get_root(p);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "ledger record: not a JSON object");
        return FALSE;
    }
    JsonObject *o = json_node_get_object(root);
    JetLedgerRecord r;
    jet_ledger_record_init(&r);
    gboolean has = FALSE;
    gint64 v = 0;
    if (!get_int(o, "v", &has, &v, error))
        return FALSE;
    if (!has) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "ledger record: no version");
        return FALSE;
    }
    if (v != JET_LEDGER_RECORD_VERSION) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "ledger record: version %" G_GINT64_FORMAT ", this host reads %d", v,
                    JET_LEDGER_RECORD_VERSION);
        return FALSE;
    }
    if (!get_count(o, "f", &r.failures, error) || !get_count(o, "p", &r.postpones, error)
        || !get_count(o, "r", &r.releases, error) || !get_count(o, "s", &r.strikes, error)
        || !get_count(o, "a", &r.absolved, error))
        return FALSE;
    if (!get_int(o, "ff", &r.has_first_failure, &r.first_failure_ns, error))
        return FALSE;
    if (!get_string(o, "lr", &has, r.last_reason, sizeof r.last_reason, error))
        return FALSE;
    if (!get_string(o, "iso", &r.isolated, r.isolated_by, sizeof r.isolated_by, error))
        return FALSE;
    if (!get_int(o, "isot", &has, &r.isolated_ns, error))
        return FALSE;
    *out = r;
    return TRUE;
}

/* --- keys ------------------------------------------------------------------- */

static gboolean plain_byte(guchar c)
{
    return g_ascii_isalnum(c) || c == '-';
}

char *jet_ledger_encode_name(const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    if (*name == '\0')
        return g_strdup("_");
    GString *t = g_string_new(NULL);
    for (const guchar *p = (const guchar *)name; *p; p++) {
        if (plain_byte(*p))
            g_string_append_c(t, (char)*p);
        else
            g_string_append_printf(t, "_%02X", *p);
    }
    if (t->len > JET_LEDGER_TOKEN_MAX) {
        g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, name, -1);
        g_string_free(t, TRUE);
        return g_strconcat("h=", sum, NULL);
    }
    return g_string_free(t, FALSE);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;   /* lower case is not what the encoder writes */
}

char *jet_ledger_decode_name(const char *token)
{
    g_return_val_if_fail(token != NULL, NULL);
    if (strcmp(token, "_") == 0)
        return g_strdup("");
    if (*token == '\0' || strlen(token) > JET_LEDGER_TOKEN_MAX)
        return NULL;
    GString *n = g_string_new(NULL);
    for (const char *p = token; *p; p++) {
        if (plain_byte((guchar)*p)) {
            g_string_append_c(n, *p);
            continue;
        }
        int hi, lo;
        if (*p != '_' || (hi = hex_digit(p[1])) < 0 || (lo = hex_digit(p[2])) < 0) {
            g_string_free(n, TRUE);
            return NULL;   /* includes the hashed form, "h=..." */
        }
        guchar c = (guchar)(hi * 16 + lo);
        if (c == 0 || plain_byte(c)) {   /* not canonical: the encoder never wrote it */
            g_string_free(n, TRUE);
            return NULL;
        }
        g_string_append_c(n, (char)c);
        p += 2;
    }
    return g_string_free(n, FALSE);
}

char *jet_ledger_key(const char *stream, const char *consumer, guint64 stream_seq)
{
    g_return_val_if_fail(stream != NULL && consumer != NULL, NULL);
    g_autofree char *s = jet_ledger_encode_name(stream);
    g_autofree char *c = jet_ledger_encode_name(consumer);
    return g_strdup_printf("%s.%s.%" G_GUINT64_FORMAT, s, c, stream_seq);
}

/* --- the bucket ------------------------------------------------------------- */

static gboolean valid_bucket(const char *b)
{
    if (*b == '\0')
        return FALSE;
    for (const char *p = b; *p; p++)
        if (!g_ascii_isalnum(*p) && *p != '_' && *p != '-')
            return FALSE;
    return TRUE;
}

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

JetLedger *jet_ledger_open(jsCtx *js, const char *bucket, gboolean create, guint64 max_age_ms,
                           GError **error)
{
    g_return_val_if_fail(js != NULL && bucket != NULL, NULL);
    if (!valid_bucket(bucket)) {
        g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID,
                    "ledger bucket name \"%s\": only letters, digits, '_' and '-'", bucket);
        return NULL;
    }
    if (create && (max_age_ms == 0 || max_age_ms > (guint64)(G_MAXINT64 / NS_PER_MS))) {
        g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID,
                    "ledger bucket %s: a managed bucket needs a finite, positive max_age", bucket);
        return NULL;
    }
    g_autofree char *stream = g_strdup_printf("KV_%s", bucket);
    gint64 want_ns = (gint64)max_age_ms * NS_PER_MS;

    jsStreamInfo *si = NULL;
    natsStatus s = js_GetStreamInfo(&si, js, stream, NULL, NULL);
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
    if (create && si != NULL && si->Config->MaxAge != want_ns) {
        /* Managed: the configured max_age wins.  nats.c's create would refuse
         * the bucket as "different", so the stream is updated first. */
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
    jsStreamInfo_Destroy(si);
    si = NULL;

    kvStore *kv = NULL;
    if (create) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = bucket;
        kc.Description = "jethost attempt ledger";
        kc.History = 1;
        kc.TTL = want_ns;                 /* the stream's MaxAge, in ns */
        kc.StorageType = js_FileStorage;
        s = js_CreateKeyValue(&kv, js, &kc);
        if (s != NATS_OK) {
            if (s == NATS_ERR && last_error_contains("Existing configuration is different")) {
                g_autofree char *why = jet_nats_error(s);
                g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID,
                            "ledger bucket %s exists with a configuration the host did not make: %s",
                            bucket, why);
            } else {
                set_unreachable(error, s, "ledger bucket %s: create", bucket);
            }
            return NULL;
        }
    } else {
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

    /* What the server says now, not what was asked for. */
    s = js_GetStreamInfo(&si, js, stream, NULL, NULL);
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
    int len = kvEntry_ValueLen(e);
    g_autoptr(GError) perr = NULL;
    gboolean ok = jet_ledger_record_from_json(kvEntry_Value(e), len > 0 ? (gsize)len : 0, out, &perr);
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

static JetLedgerStatus update(JetLedger *l, const char *key, JetLedgerMutateFn mutate,
                              gpointer user_data, JetLedgerRecord *out, GError **error)
{
    for (guint attempt = 1;; attempt++) {
        JetLedgerRecord rec;
        if (read_key(l, key, &rec, error) == JET_LEDGER_UNREACHABLE)
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
        if (attempt >= JET_LEDGER_CAS_ATTEMPTS) {
            g_set_error(error, JET_LEDGER_ERROR, JET_LEDGER_ERROR_CONFLICT,
                        "ledger %s: %s changed under each of %d compare-and-set attempts",
                        l->bucket, key, JET_LEDGER_CAS_ATTEMPTS);
            return JET_LEDGER_CONFLICT;
        }
        /* Someone else wrote in between: read the fresh record and retry,
         * after a short jittered pause so two writers do not keep colliding. */
        g_usleep((gulong)g_random_int_range(50, 500 * (1 << MIN(attempt, 4u))));
    }
}

JetLedgerStatus jet_ledger_update(JetLedger *l, const char *stream, const char *consumer,
                                  guint64 stream_seq, JetLedgerMutateFn mutate, gpointer user_data,
                                  JetLedgerRecord *out, GError **error)
{
    g_return_val_if_fail(l != NULL && stream != NULL && consumer != NULL && mutate != NULL,
                         JET_LEDGER_UNREACHABLE);
    if (cooling_down(l, error))
        return JET_LEDGER_UNREACHABLE;
    g_autofree char *key = jet_ledger_key(stream, consumer, stream_seq);
    return note(l, update(l, key, mutate, user_data, out, error));
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

/* --- crash attribution ------------------------------------------------------ */

void jet_attribution_decide(const JetLedgerRecord *rec, guint32 deliveries, guint crash_limit,
                            JetAttribution *out)
{
    g_return_if_fail(out != NULL);
    memset(out, 0, sizeof *out);
    if (deliveries == 0)
        deliveries = 1;
    gint64 strikes = 0;
    gint64 explained = 0;
    guint32 absolved = 0;
    if (rec != NULL) {
        out->strike = rec->isolated;
        strikes = (gint64)rec->strikes + (out->strike ? 1 : 0);
        absolved = rec->absolved;
        explained = (gint64)rec->failures + rec->postpones + rec->releases + strikes + rec->absolved;
    }
    gint64 unexplained = (gint64)deliveries - 1 - explained;
    out->unexplained = unexplained > 0 ? (guint32)unexplained : 0;
    out->strikes = (guint32)MIN(strikes, (gint64)G_MAXUINT32);
    if (crash_limit > 0 && out->strikes >= crash_limit) {
        out->kind = JET_ATTRIBUTION_POISON;
    } else if (out->strike || out->unexplained > 0) {
        out->kind = JET_ATTRIBUTION_SUSPECT;
        out->absolve_to = (guint32)MIN((gint64)absolved + out->unexplained, (gint64)G_MAXUINT32);
    } else {
        out->kind = JET_ATTRIBUTION_NORMAL;
    }
}

const char *jet_attribution_kind_name(JetAttributionKind kind)
{
    switch (kind) {
    case JET_ATTRIBUTION_NORMAL:  return "normal";
    case JET_ATTRIBUTION_SUSPECT: return "suspect";
    case JET_ATTRIBUTION_POISON:  return "poison";
    }
    return "unknown";
}

void jet_attribution_apply_isolate(JetLedgerRecord *rec, const JetAttribution *att,
                                   const char *holder, gint64 now_ns)
{
    g_return_if_fail(rec != NULL && att != NULL);
    rec->strikes = MAX(rec->strikes, att->strikes);
    rec->isolated = TRUE;
    copy_utf8(rec->isolated_by, sizeof rec->isolated_by, holder);
    rec->isolated_ns = now_ns;
}

void jet_attribution_apply_survived(JetLedgerRecord *rec, const JetAttribution *att)
{
    g_return_if_fail(rec != NULL && att != NULL);
    rec->absolved = MAX(rec->absolved, att->absolve_to);
    rec->isolated = FALSE;
    rec->isolated_by[0] = '\0';
    rec->isolated_ns = 0;
}
