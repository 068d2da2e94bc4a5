/* Capture-then-ack: building the DLQ record, publishing it, the confirmed
 * ack, and the DLQ stream.  capture.h has the contract; docs/dead-letters.md
 * the operator's view. */
#include "capture.h"

#include "conn.h"
#include "errors.h"
#include "hdr_block.h"
#include "log.h"
#include "nats_raw.h"
#include "stream_msg.h"

#include <inttypes.h>
#include <string.h>

#define ERR_STREAM_NOT_FOUND 10059
#define ERR_STREAM_NAME_IN_USE 10058
#define ERR_MSG_SIZE_EXCEEDED 10054
#define ERR_HEADER_SIZE_EXCEEDED 10097

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
}

GPtrArray *jet_capture_msg_headers(natsMsg *m)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    const char **keys = NULL;
    int count = 0;
    if (m == NULL || natsMsgHeader_Keys(m, &keys, &count) != NATS_OK)
        return out;
    for (int i = 0; i < count; i++) {
        const char **values = NULL;
        int nv = 0;
        if (natsMsgHeader_Values(m, keys[i], &values, &nv) != NATS_OK)
            continue;
        for (int j = 0; j < nv; j++) {
            g_ptr_array_add(out, g_strdup(keys[i]));
            g_ptr_array_add(out, g_strdup(values[j] != NULL ? values[j] : ""));
        }
        free((void *)values);
    }
    free((void *)keys);
    return out;
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
 * hide it), the original headers, the provenance, the dropped list. */
static GPtrArray *assemble(const char *msg_id, const GPtrArray *orig, const GPtrArray *prov,
                           const GPtrArray *entries)
{
    GPtrArray *hs = g_ptr_array_new_with_free_func(g_free);
    if (msg_id != NULL) {
        g_ptr_array_add(hs, g_strdup(MSG_ID_HDR));
        g_ptr_array_add(hs, g_strdup(msg_id));
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

    g_autoptr(GPtrArray) hs = assemble(r->msg_id, orig, prov, entries);
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
        hs = assemble(r->msg_id, orig, prov, entries);
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

natsMsg *jet_capture_build(const char *dlq_subject, const char *data, int len, const GPtrArray *original,
                           const GArray *defects, const JetCaptureFacts *f, gint64 max_payload,
                           JetCaptureBuild *result, GError **error)
{
    g_return_val_if_fail(f != NULL, NULL);
    g_return_val_if_fail(len >= 0 && (len == 0 || data != NULL), NULL);
    if (result != NULL)
        memset(result, 0, sizeof *result);
    if (dlq_subject == NULL || *dlq_subject == '\0') {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_INVALID, "no DLQ subject");
        return NULL;
    }
    g_autoptr(GPtrArray) hs = jet_capture_headers(len, original, defects, f, max_payload, result, error);
    if (hs == NULL)
        return NULL;
    gsize block_len = 0;
    g_autoptr(GError) werr = NULL;
    g_autofree char *block = jet_hdr_write(hs, &block_len, &werr);
    if (block == NULL && werr != NULL) {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_INVALID, "building the DLQ message: %s",
                    werr->message);
        return NULL;
    }
    return jet_nats_msg_new_raw(dlq_subject, block, block_len, data, (gsize)len, error);
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

gint64 jet_capture_max_payload(natsConnection *nc, jsCtx *js, const char *dlq_stream)
{
    gint64 limit = nc != NULL ? natsConnection_GetMaxPayload(nc) : 0;
    jsStreamInfo *si = NULL;
    if (js != NULL && dlq_stream != NULL && js_GetStreamInfo(&si, js, dlq_stream, NULL, NULL) == NATS_OK) {
        gint64 m = si->Config->MaxMsgSize;
        if (m > 0 && (limit <= 0 || m < limit))
            limit = m;
        jsStreamInfo_Destroy(si);
    }
    return limit;
}

/* --- publishing ------------------------------------------------------------ */

const char *jet_capture_outcome_name(JetCaptureOutcome o)
{
    switch (o) {
    case JET_CAPTURE_CAPTURED: return "captured";
    case JET_CAPTURE_FAILED: return "failed";
    case JET_CAPTURE_TOO_LARGE: return "too-large";
    }
    return "unknown";
}

JetCaptureOutcome jet_capture_publish(jsCtx *js, natsMsg *dlq_msg, gint64 timeout_ms, JetCapturePubAck *ack,
                                      GError **error)
{
    if (ack != NULL)
        memset(ack, 0, sizeof *ack);
    g_return_val_if_fail(js != NULL && dlq_msg != NULL, JET_CAPTURE_FAILED);
    const char *subject = natsMsg_GetSubject(dlq_msg);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = timeout_ms > 0 ? timeout_ms : 5000;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, js, dlq_msg, &po, &jerr);
    if (s == NATS_OK) {
        /* Whatever answered must be a stream's pub-ack. */
        gboolean named = pa->Stream != NULL && *pa->Stream != '\0' && pa->Sequence > 0;
        if (named && ack != NULL) {
            ack->duplicate = pa->Duplicate;
            ack->seq = pa->Sequence;
            g_strlcpy(ack->stream, pa->Stream, sizeof ack->stream);
        }
        jsPubAck_Destroy(pa);
        if (named)
            return JET_CAPTURE_CAPTURED;
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s: the reply is not a stream's pub-ack", subject);
        return JET_CAPTURE_FAILED;
    }
    g_autofree char *why = jet_nats_error(s);
    if (s == NATS_MAX_PAYLOAD || jerr == ERR_MSG_SIZE_EXCEEDED || jerr == ERR_HEADER_SIZE_EXCEEDED) {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE,
                    "capture to %s refused for size: %s [err %d]", subject, why, (int)jerr);
        return JET_CAPTURE_TOO_LARGE;
    }
    if (s == NATS_NO_RESPONDERS)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "capture to %s: no responders: no stream captures the subject (is the DLQ stream missing?)",
                    subject);
    else if (s == NATS_TIMEOUT)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s: no pub-ack within %" G_GINT64_FORMAT " ms",
                    subject, po.MaxWait);
    else if (jerr != 0)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s refused: %s [err %d]", subject, why,
                    (int)jerr);
    else
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s failed: %s", subject, why);
    return JET_CAPTURE_FAILED;
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

static const char *nonempty(const char *s)
{
    return s != NULL && *s ? s : NULL;
}

/* A provenance header of the record against what this capture would write. */
static gboolean prov_equal(const GPtrArray *hs, const char *name, const char *want, GString *why)
{
    const char *got = jet_hdr_get(hs, name);
    if (g_strcmp0(got, want) == 0)
        return TRUE;
    g_autofree char *g = got != NULL ? jet_hdr_escape(got, strlen(got), 64) : g_strdup("(none)");
    g_string_append_printf(why, "%s%s is %s, not %s", why->len ? "; " : "", name, g, want != NULL ? want : "(none)");
    return FALSE;
}

JetCaptureDup jet_capture_verify_duplicate(natsConnection *nc, const JetCapturePubAck *ack, const char *msg_id,
                                           const JetCaptureFacts *f, char **why_out, GError **error)
{
    g_return_val_if_fail(nc != NULL && ack != NULL && f != NULL && why_out != NULL, JET_CAPTURE_DUP_UNVERIFIED);
    *why_out = NULL;
    g_autoptr(JetStoredMsg) rec = NULL;
    JetStoredStatus st = jet_stream_msg_get(nc, ack->stream, ack->seq, 5000, &rec, error);
    if (st == JET_STORED_ERROR)
        return JET_CAPTURE_DUP_UNVERIFIED;
    if (st == JET_STORED_ABSENT) {
        *why_out = g_strdup_printf("the record it names (%s:%" G_GUINT64_FORMAT ") was removed", ack->stream,
                                   ack->seq);
        return JET_CAPTURE_DUP_COLLISION;
    }
    g_auto(JetHdrParse) p = { 0 };
    gsize hlen = 0;
    const char *h = rec->hdrs != NULL ? g_bytes_get_data(rec->hdrs, &hlen) : NULL;
    jet_hdr_parse(h, hlen, &p);
    g_autoptr(GString) why = g_string_new(NULL);
    g_autofree char *seq = f->stream_seq > 0 ? g_strdup_printf("%" G_GUINT64_FORMAT, f->stream_seq) : NULL;
    g_autofree char *created = f->stream_created_ns > 0 ? jet_time_format_ns(f->stream_created_ns) : NULL;
    gboolean same = prov_equal(p.headers, MSG_ID_HDR, msg_id, why);
    same = prov_equal(p.headers, JET_HDR_ORIGIN_STREAM, nonempty(f->stream), why) && same;
    same = prov_equal(p.headers, JET_HDR_ORIGIN_STREAM_CREATED, created, why) && same;
    same = prov_equal(p.headers, JET_HDR_ORIGIN_CONSUMER, nonempty(f->consumer), why) && same;
    same = prov_equal(p.headers, JET_HDR_ORIGIN_SEQ, seq, why) && same;
    if (same)
        return JET_CAPTURE_DUP_SAME;
    *why_out = g_strdup_printf("the record it names (%s:%" G_GUINT64_FORMAT ") is another message's: %s",
                               ack->stream, ack->seq, why->str);
    return JET_CAPTURE_DUP_COLLISION;
}

gboolean jet_ack_confirmed(natsConnection *nc, const char *reply_subject, gint64 timeout_ms, GError **error)
{
    g_return_val_if_fail(nc != NULL, FALSE);
    if (reply_subject == NULL || *reply_subject == '\0') {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "no reply subject to ack");
        return FALSE;
    }
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_Request(&reply, nc, reply_subject, "+ACK", 4, timeout_ms > 0 ? timeout_ms : 5000);
    if (s == NATS_OK) {
        natsMsg_Destroy(reply);
        return TRUE;
    }
    if (s == NATS_NO_RESPONDERS)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "ack not confirmed: no responders (the consumer is gone)");
    else if (s == NATS_TIMEOUT)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "ack not confirmed: no reply within %" G_GINT64_FORMAT " ms",
                    timeout_ms > 0 ? timeout_ms : 5000);
    else {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "ack not confirmed: %s", why);
    }
    return FALSE;
}

/* --- the DLQ stream -------------------------------------------------------- */

static gboolean covers(const jsStreamConfig *sc, const char *subject)
{
    for (int i = 0; i < sc->SubjectsLen; i++)
        if (jet_subject_matches(sc->Subjects[i], subject))
            return TRUE;
    return FALSE;
}

static gboolean check_existing(const JetBindingConfig *b, const jsStreamInfo *si, GError **error)
{
    const jsStreamConfig *sc = si->Config;
    if (!covers(sc, b->dlq_subject)) {
        g_autoptr(GString) list = g_string_new(NULL);
        for (int i = 0; i < sc->SubjectsLen; i++)
            g_string_append_printf(list, "%s%s", i ? ", " : "", sc->Subjects[i]);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "binding %s: DLQ stream %s does not capture dlq_subject %s (its subjects: %s); "
                    "add the subject to the stream or point dlq_stream/dlq_subject at one that does",
                    b->name, b->dlq_stream, b->dlq_subject, list->len ? list->str : "none");
        return FALSE;
    }
    if (sc->Duplicates < JET_DLQ_DUPLICATE_WINDOW_NS)
        jet_log(JET_LOG_WARNING, b->name, "dlq-window",
                "DLQ stream %s has a duplicate window of %" G_GINT64_FORMAT " ms (jethost uses 2 h): a capture "
                "repeated after it closes makes a second record",
                b->dlq_stream, sc->Duplicates / 1000000);
    return TRUE;
}

gboolean jet_dlq_stream_ensure(jsCtx *js, const JetBindingConfig *b, GError **error)
{
    g_return_val_if_fail(js != NULL && b != NULL, FALSE);
    if (b->dlq_stream == NULL || b->dlq_subject == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "binding %s: no DLQ stream or subject", b->name);
        return FALSE;
    }
    for (int attempt = 0;; attempt++) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_GetStreamInfo(&si, js, b->dlq_stream, NULL, &jerr);
        if (s == NATS_OK) {
            gboolean ok = check_existing(b, si, error);
            jsStreamInfo_Destroy(si);
            return ok;
        }
        if (jerr != ERR_STREAM_NOT_FOUND && s != NATS_NOT_FOUND) {
            g_autofree char *why = jet_nats_error(s);
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: DLQ stream %s info: %s%s", b->name,
                        b->dlq_stream, why, jerr ? " (server error)" : "");
            return FALSE;
        }
        if (b->manage == JET_MANAGE_BIND) {
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                        "binding %s: DLQ stream %s does not exist (manage = bind never creates it): create it "
                        "with subjects covering %s, or nothing can be dead-lettered",
                        b->name, b->dlq_stream, b->dlq_subject);
            return FALSE;
        }
        g_autofree char *subject = g_str_has_prefix(b->dlq_subject, JET_DLQ_SUBJECT_PREFIX)
                                       ? g_strconcat(JET_DLQ_SUBJECT_PREFIX, ">", NULL)
                                       : g_strdup(b->dlq_subject);
        const char *subjects[] = { subject };
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        sc.Name = b->dlq_stream;
        sc.Subjects = subjects;
        sc.SubjectsLen = 1;
        sc.Storage = js_FileStorage;
        sc.Retention = js_LimitsPolicy;
        sc.Duplicates = JET_DLQ_DUPLICATE_WINDOW_NS;
        jerr = 0;
        s = js_AddStream(&si, js, &sc, NULL, &jerr);
        if (s == NATS_OK) {
            jet_log(JET_LOG_INFO, b->name, "dlq-stream-created", "created DLQ stream %s on %s", b->dlq_stream,
                    subject);
            jsStreamInfo_Destroy(si);
            return TRUE;
        }
        /* Another host created it first: look again, once. */
        if (jerr == ERR_STREAM_NAME_IN_USE && attempt == 0)
            continue;
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: create DLQ stream %s on %s: %s [err %d]",
                    b->name, b->dlq_stream, subject, why, (int)jerr);
        return FALSE;
    }
}

/* --- one capture, stored and verified -------------------------------------- */

JetCaptureOutcome jet_capture_store(natsConnection *nc, jsCtx *js, const char *dlq_subject, const char *data,
                                    int len, const JetHdrParse *orig, JetCaptureFacts *facts, gint64 max_payload,
                                    gint64 timeout_ms, const JetCaptureHooks *hooks, JetCaptureStored *out,
                                    GError **error)
{
    static const JetCaptureHooks none = { 0 };
    const JetCaptureHooks *h = hooks != NULL ? hooks : &none;
    JetCaptureStored local;
    JetCaptureStored *o = out != NULL ? out : &local;
    memset(o, 0, sizeof *o);
    g_return_val_if_fail(nc != NULL && js != NULL && facts != NULL, JET_CAPTURE_FAILED);
    for (int attempt = 0; attempt < JET_CAPTURE_STORE_ATTEMPTS; attempt++) {
        g_autoptr(GError) err = NULL;
        g_auto(JetCaptureBuild) build = { 0 };
        natsMsg *dlq = jet_capture_build(dlq_subject, data, len, orig != NULL ? orig->headers : NULL,
                                         orig != NULL ? orig->defects : NULL, facts, max_payload, &build, &err);
        if (dlq == NULL) {
            JetCaptureOutcome res = g_error_matches(err, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE)
                                        ? JET_CAPTURE_TOO_LARGE
                                        : JET_CAPTURE_FAILED;
            g_propagate_error(error, g_steal_pointer(&err));
            return res;
        }
        if (build.headers_dropped && attempt == 0 && h->headers_dropped != NULL)
            h->headers_dropped(h->data);
        JetCapturePubAck ack;
        JetCaptureOutcome res = jet_capture_publish(js, dlq, timeout_ms, &ack, &err);
        if (res == JET_CAPTURE_FAILED && h->publish_failed != NULL && h->publish_failed(h->data, err)) {
            g_clear_error(&err);
            res = jet_capture_publish(js, dlq, timeout_ms, &ack, &err);
        }
        natsMsg_Destroy(dlq);
        if (res != JET_CAPTURE_CAPTURED) {
            g_propagate_error(error, g_steal_pointer(&err));
            return res;
        }
        o->seq = ack.seq;
        g_strlcpy(o->stream, ack.stream, sizeof o->stream);
        if (!ack.duplicate || build.msg_id == NULL)
            return JET_CAPTURE_CAPTURED;
        g_autofree char *why = NULL;
        JetCaptureDup d = jet_capture_verify_duplicate(nc, &ack, build.msg_id, facts, &why, &err);
        if (d == JET_CAPTURE_DUP_SAME) {
            o->duplicate = TRUE;
            return JET_CAPTURE_CAPTURED;
        }
        o->seq = 0;
        o->stream[0] = '\0';
        if (d == JET_CAPTURE_DUP_UNVERIFIED) {
            g_prefix_error(&err, "the pub-ack says duplicate and the record it names could not be checked: ");
            g_propagate_error(error, g_steal_pointer(&err));
            return JET_CAPTURE_FAILED;
        }
        o->collisions++;
        if (h->collision != NULL)
            h->collision(h->data, build.msg_id, ack.seq, why);
        facts->msg_id_after = ack.seq;
    }
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "%d captures in a row collided with other records",
                JET_CAPTURE_STORE_ATTEMPTS);
    return JET_CAPTURE_FAILED;
}
