/* The dead-letter record: header names, the header list, the message id.
 * Pure code; dlq_record.h has the contract, docs/dead-letters.md the
 * operator's view. */
#include "dlq_record.h"

#include "hdr_block.h"
#include "provenance.h"
#include "settle.h"

#include <string.h>

#define MSG_ID_HDR "Nats-Msg-Id"

G_DEFINE_QUARK(jet-capture-error-quark, jet_capture_error)

/* --- names and times ------------------------------------------------------- */

static gboolean has_prefix_ci(const char *s, const char *prefix)
{
    return g_ascii_strncasecmp(s, prefix, strlen(prefix)) == 0;
}

char *jet_capture_carried_name(const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    if (has_prefix_ci(name, "Nats-"))
        /* Keep the four letters as written, so restoring is exact. */
        return g_strdup_printf(JET_HDR_ORIG_PREFIX "%.4s_%s", name, name + 5);
    if (has_prefix_ci(name, "Jethost-"))
        return g_strconcat(JET_HDR_ORIG_PREFIX, name, NULL);
    return g_strdup(name);
}

char *jet_capture_restored_name(const char *carried)
{
    g_return_val_if_fail(carried != NULL, NULL);
    if (!has_prefix_ci(carried, JET_HDR_ORIG_PREFIX))
        return NULL;
    const char *rest = carried + strlen(JET_HDR_ORIG_PREFIX);
    if (has_prefix_ci(rest, "Nats_"))
        return g_strdup_printf("%.4s-%s", rest, rest + 5);
    if (*rest == '\0')
        return NULL;
    return g_strdup(rest);
}

/* --- subjects -------------------------------------------------------------- */

gboolean jet_subject_matches(const char *pattern, const char *subject)
{
    if (pattern == NULL || subject == NULL || *pattern == '\0' || *subject == '\0')
        return FALSE;
    g_auto(GStrv) pt = g_strsplit(pattern, ".", -1);
    g_auto(GStrv) st = g_strsplit(subject, ".", -1);
    guint np = g_strv_length(pt), ns = g_strv_length(st);
    for (guint i = 0; i < ns; i++)
        if (*st[i] == '\0')
            return FALSE;
    for (guint i = 0; i < np; i++) {
        if (*pt[i] == '\0')
            return FALSE;
        if (strcmp(pt[i], ">") == 0)
            return i == np - 1 && ns > i;   /* '>' takes one or more tokens */
        if (i >= ns)
            return FALSE;
        if (strcmp(pt[i], "*") != 0 && strcmp(pt[i], st[i]) != 0)
            return FALSE;
    }
    return np == ns;
}

/* --- building -------------------------------------------------------------- */

/* Provenance values are the host's text or the plugin's reason: control
 * characters become spaces and the ends are trimmed, so the writer always
 * takes them.  NULL or what trims to nothing leaves the header out. */
static void add(GPtrArray *hs, const char *name, const char *value)
{
    if (value == NULL || *value == '\0')
        return;
    char *c = g_strdup(value);
    for (char *p = c; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    g_strstrip(c);
    if (*c == '\0') {
        g_free(c);
        return;
    }
    g_ptr_array_add(hs, g_strdup(name));
    g_ptr_array_add(hs, c);
}

static void add_take(GPtrArray *hs, const char *name, char *value)
{
    add(hs, name, value);
    g_free(value);
}

static void add_uint(GPtrArray *hs, const char *name, guint64 v)
{
    add_take(hs, name, g_strdup_printf("%" G_GUINT64_FORMAT, v));
}

static void provenance(GPtrArray *hs, const JetCaptureFacts *f)
{
    add(hs, JET_HDR_ORIGIN_STREAM, f->stream);
    if (f->stream_created_ns > 0)
        add_take(hs, JET_HDR_ORIGIN_STREAM_CREATED, jet_time_format_ns(f->stream_created_ns));
    add(hs, JET_HDR_ORIGIN_SUBJECT, f->subject);
    if (f->stream_seq > 0)
        add_uint(hs, JET_HDR_ORIGIN_SEQ, f->stream_seq);
    add(hs, JET_HDR_ORIGIN_CONSUMER, f->consumer);
    add(hs, JET_HDR_ORIGIN_REPLY, f->reply);
    add_uint(hs, JET_HDR_DELIVERIES, f->deliveries);
    add_uint(hs, JET_HDR_FAILURES, f->failures);
    add_uint(hs, JET_HDR_POSTPONES, f->postpones);
    if (f->strikes > 0)
        add_uint(hs, JET_HDR_CRASH_STRIKES, f->strikes);
    add(hs, JET_HDR_CAUSE, jet_cause_name(f->cause));
    add(hs, JET_HDR_REASON, f->reason);
    if (f->has_first_failure)
        add_take(hs, JET_HDR_FIRST_FAILURE, jet_time_format_ns(f->first_failure_ns));
    if (f->has_enqueued)
        add_take(hs, JET_HDR_ENQUEUED, jet_time_format_ns(f->enqueued_ns));
    add_take(hs, JET_HDR_CAPTURED, jet_time_format_ns(f->captured_ns));
    add(hs, JET_HDR_PLUGIN, f->plugin_name);
    add(hs, JET_HDR_PLUGIN_VERSION, f->plugin_version);
    add(hs, JET_HDR_HOST, f->host);
    add(hs, JET_HDR_BINDING, f->binding);
    if (f->kv_key != NULL) {
        add(hs, JET_HDR_KV_KEY, f->kv_key);
        add(hs, JET_HDR_KV_OPERATION, f->kv_op);
        if (f->stream_seq > 0)
            add_uint(hs, JET_HDR_KV_REVISION, f->stream_seq);
    }
}

char *jet_capture_msg_id(const JetCaptureFacts *f)
{
    if (f->stream == NULL || *f->stream == '\0' || f->stream_seq == 0)
        return NULL;
    GString *id = g_string_new(NULL);
    g_string_printf(id, "jethost:%s.%s:%" G_GUINT64_FORMAT, f->stream, f->consumer != NULL ? f->consumer : "",
                    f->stream_seq);
    if (f->stream_created_ns > 0)
        g_string_append_printf(id, ":%" G_GINT64_FORMAT, f->stream_created_ns);
    if (f->msg_id_after > 0)
        g_string_append_printf(id, ":after-%" G_GUINT64_FORMAT, f->msg_id_after);
    return g_string_free(id, FALSE);
}

/* "a,b,c" of entries, cut after JET_CAPTURE_MAX_DROPPED_LIST bytes with
 * "+N more". */
static char *dropped_value(const GPtrArray *entries)
{
    g_autoptr(GString) list = g_string_new(NULL);
    guint listed = 0;
    for (; listed < entries->len; listed++) {
        const char *n = g_ptr_array_index(entries, listed);
        if (list->len + strlen(n) + 1 > JET_CAPTURE_MAX_DROPPED_LIST)
            break;
        if (list->len > 0)
            g_string_append_c(list, ',');
        g_string_append(list, n);
    }
    if (listed < entries->len)
        g_string_append_printf(list, "%s+%u more", list->len > 0 ? "," : "", entries->len - listed);
    return g_string_free(g_steal_pointer(&list), FALSE);
}

static gboolean fits(gint64 hdr, gint64 total, gint64 max_payload)
{
    return hdr <= JET_CAPTURE_MAX_HEADER_BYTES && (max_payload <= 0 || total <= max_payload);
}

static void append_pairs(GPtrArray *to, const GPtrArray *from)
{
    for (guint i = 0; from != NULL && i < from->len; i++)
        g_ptr_array_add(to, g_strdup(g_ptr_array_index(from, i)));
}

/* The record's list: the host's Nats-Msg-Id first (nats-server 2.9.10 reads
 * the first occurrence of a name in the block, so nothing before it can
 * hide it), its Nats-TTL when it has one (likewise), the original headers,
 * the provenance, the dropped list. */
static GPtrArray *assemble(const char *msg_id, guint64 ttl_s, const GPtrArray *orig, const GPtrArray *prov,
                           const GPtrArray *entries)
{
    GPtrArray *hs = g_ptr_array_new_with_free_func(g_free);
    if (msg_id != NULL) {
        g_ptr_array_add(hs, g_strdup(MSG_ID_HDR));
        g_ptr_array_add(hs, g_strdup(msg_id));
    }
    if (ttl_s > 0) {
        g_ptr_array_add(hs, g_strdup(JET_HDR_TTL));
        g_ptr_array_add(hs, g_strdup_printf("%" G_GUINT64_FORMAT "s", ttl_s));
    }
    append_pairs(hs, orig);
    append_pairs(hs, prov);
    if (entries->len > 0) {
        g_ptr_array_add(hs, g_strdup(JET_HDR_DROPPED_HEADERS));
        g_ptr_array_add(hs, dropped_value(entries));
    }
    return hs;
}

void jet_capture_build_clear(JetCaptureBuild *r)
{
    if (r == NULL)
        return;
    g_strfreev(r->dropped);
    g_free(r->msg_id);
    memset(r, 0, sizeof *r);
}

GPtrArray *jet_capture_headers(int len, const GPtrArray *original, const GArray *defects, const JetCaptureFacts *f,
                               gint64 max_payload, JetCaptureBuild *result, GError **error)
{
    g_return_val_if_fail(f != NULL && len >= 0, NULL);
    JetCaptureBuild local = { 0 };
    JetCaptureBuild *r = result != NULL ? result : &local;
    memset(r, 0, sizeof *r);
    r->msg_id = jet_capture_msg_id(f);

    g_autoptr(GPtrArray) prov = g_ptr_array_new_with_free_func(g_free);
    provenance(prov, f);

    /* What cannot travel is listed with why: the defects of the block, and
     * any pair a caller gave that the writer would refuse. */
    g_autoptr(GPtrArray) entries = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; defects != NULL && i < defects->len; i++)
        g_ptr_array_add(entries, jet_hdr_defect_describe(&g_array_index(defects, JetHdrDefect, i)));
    r->defects = defects != NULL ? defects->len : 0;
    g_autoptr(GPtrArray) orig = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; original != NULL && i + 1 < original->len; i += 2) {
        const char *name = g_ptr_array_index(original, i), *value = g_ptr_array_index(original, i + 1);
        if (!jet_hdr_name_valid(name)) {
            g_autofree char *e = jet_hdr_escape(name, strlen(name), JET_HDR_DEFECT_TEXT_MAX);
            g_ptr_array_add(entries, g_strdup_printf("\"%s\" (name is not a token)", e));
            r->defects++;
            continue;
        }
        g_autofree char *carried = jet_capture_carried_name(name);
        if (!jet_hdr_value_valid(value)) {
            g_ptr_array_add(entries, g_strdup_printf("%s (value holds CR or LF, or spaces at an end)", carried));
            r->defects++;
            continue;
        }
        g_ptr_array_add(orig, g_steal_pointer(&carried));
        g_ptr_array_add(orig, g_strdup(value));
    }

    g_autoptr(GPtrArray) hs = assemble(r->msg_id, f->ttl_s, orig, prov, entries);
    r->header_bytes = (gint64)jet_hdr_encoded_len(hs);
    r->total_bytes = r->header_bytes + len;
    if (!fits(r->header_bytes, r->total_bytes, max_payload) && orig->len > 0) {
        /* The original headers go, each distinct name listed once. */
        GPtrArray *names = g_ptr_array_new();
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
        for (guint i = 0; i + 1 < orig->len; i += 2) {
            const char *n = g_ptr_array_index(orig, i);
            if (g_hash_table_add(seen, (gpointer)n)) {
                g_ptr_array_add(names, g_strdup(n));
                /* A bare name: the one entry whose why is implied (the
                 * headers did not fit), so the list stays shorter than
                 * what it replaces. */
                g_ptr_array_add(entries, g_strdup(n));
            }
        }
        g_ptr_array_add(names, NULL);
        r->dropped = (char **)g_ptr_array_free(names, FALSE);
        r->headers_dropped = TRUE;
        g_ptr_array_set_size(orig, 0);
        g_ptr_array_unref(hs);
        hs = assemble(r->msg_id, f->ttl_s, orig, prov, entries);
        r->header_bytes = (gint64)jet_hdr_encoded_len(hs);
        r->total_bytes = r->header_bytes + len;
    }
    if (!fits(r->header_bytes, r->total_bytes, max_payload)) {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE,
                    "too large to capture: %d payload bytes + %" G_GINT64_FORMAT
                    " header bytes with the provenance alone exceed the limit (max_payload %" G_GINT64_FORMAT
                    ", headers %d); never truncated",
                    len, r->header_bytes, max_payload, JET_CAPTURE_MAX_HEADER_BYTES);
        jet_capture_build_clear(&local);
        return NULL;
    }
    jet_capture_build_clear(&local);
    return g_steal_pointer(&hs);
}

void jet_capture_facts_settled(JetCaptureFacts *f, const JetSettleAction *a, guint32 failures_before,
                               gboolean has_first_failure, gint64 first_failure_ns, gint64 now_ns)
{
    g_return_if_fail(f != NULL && a != NULL);
    f->failures = a->is_failure ? a->failure_number : failures_before;
    f->cause = a->cause;
    f->reason = a->reason;
    f->has_first_failure = has_first_failure || a->is_failure;
    f->first_failure_ns = has_first_failure ? first_failure_ns : now_ns;
    f->captured_ns = now_ns;
}

/* --- outcomes ------------------------------------------------------------- */

const char *jet_capture_outcome_name(JetCaptureOutcome o)
{
    switch (o) {
    case JET_CAPTURE_CAPTURED: return "captured";
    case JET_CAPTURE_FAILED: return "failed";
    case JET_CAPTURE_TOO_LARGE: return "too-large";
    }
    return "unknown";
}

const char *jet_capture_dup_name(JetCaptureDup d)
{
    switch (d) {
    case JET_CAPTURE_DUP_SAME: return "same";
    case JET_CAPTURE_DUP_COLLISION: return "collision";
    case JET_CAPTURE_DUP_UNVERIFIED: return "unverified";
    }
    return "unknown";
}
