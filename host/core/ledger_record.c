/* The attempt ledger's record, keys and crash attribution: pure code
 * (docs/retries.md; the bucket is host/io/ledger.c). */
#include "ledger_record.h"

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <string.h>

G_DEFINE_QUARK(jet-ledger-error-quark, jet_ledger_error)

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
    case JET_LEDGER_QUEUED:      return "queued";
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
