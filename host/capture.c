/* Capture-then-ack: building the DLQ record, publishing it, the confirmed
 * ack, and the DLQ stream.  capture.h has the contract; docs/dead-letters.md
 * the operator's view. */
#include "capture.h"

#include "conn.h"
#include "errors.h"
#include "log.h"

#include <inttypes.h>
#include <string.h>

#define ERR_STREAM_NOT_FOUND 10059
#define ERR_STREAM_NAME_IN_USE 10058
#define ERR_MSG_SIZE_EXCEEDED 10054
#define ERR_HEADER_SIZE_EXCEEDED 10097

#define HDR_LINE_LEN 10   /* "NATS/1.0\r\n", as nats.c encodes it */
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

typedef struct {
    char *name;
    char *value;
} Header;

static void header_clear(gpointer p)
{
    Header *h = p;
    g_free(h->name);
    g_free(h->value);
}

static GArray *headers_new(void)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(Header));
    g_array_set_clear_func(a, header_clear);
    return a;
}

/* Header values cannot carry CR or LF (they end the line); a reason is the
 * plugin's text, so control characters become spaces. */
static char *clean_value(const char *v)
{
    char *c = g_strdup(v);
    for (char *p = c; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return c;
}

static void add(GArray *hs, const char *name, const char *value)
{
    if (value == NULL || *value == '\0')
        return;
    Header h = { g_strdup(name), clean_value(value) };
    g_array_append_val(hs, h);
}

static void add_take(GArray *hs, const char *name, char *value)
{
    add(hs, name, value);
    g_free(value);
}

static void add_uint(GArray *hs, const char *name, guint64 v)
{
    add_take(hs, name, g_strdup_printf("%" G_GUINT64_FORMAT, v));
}

static gint64 headers_len(GArray *hs)
{
    if (hs->len == 0)
        return 0;
    gint64 n = HDR_LINE_LEN + 2;
    for (guint i = 0; i < hs->len; i++) {
        Header *h = &g_array_index(hs, Header, i);
        n += (gint64)strlen(h->name) + 2 + (gint64)strlen(h->value) + 2;
    }
    return n;
}

static void provenance(GArray *hs, const JetCaptureFacts *f)
{
    add(hs, JET_HDR_ORIGIN_STREAM, f->stream);
    add(hs, JET_HDR_ORIGIN_SUBJECT, f->subject);
    if (f->stream_seq > 0)
        add_uint(hs, JET_HDR_ORIGIN_SEQ, f->stream_seq);
    add(hs, JET_HDR_ORIGIN_CONSUMER, f->consumer);
    add(hs, JET_HDR_ORIGIN_REPLY, f->reply);
    add_uint(hs, JET_HDR_DELIVERIES, f->deliveries);
    add_uint(hs, JET_HDR_FAILURES, f->failures);
    add_uint(hs, JET_HDR_POSTPONES, f->postpones);
    add(hs, JET_HDR_CAUSE, jet_cause_name(f->cause));
    if (f->reason != NULL && *f->reason) {
        /* The one substring 2.9.10 must not see before the real Msg-Id. */
        g_autoptr(GString) r = g_string_new(f->reason);
        g_string_replace(r, MSG_ID_HDR, "Nats_Msg-Id", 0);
        add(hs, JET_HDR_REASON, r->str);
    }
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

/* The original headers under their carried names, in the given order. */
static GArray *original_headers(const GPtrArray *orig)
{
    GArray *hs = headers_new();
    for (guint i = 0; orig != NULL && i + 1 < orig->len; i += 2) {
        Header h = { jet_capture_carried_name(g_ptr_array_index(orig, i)),
                     g_strdup(g_ptr_array_index(orig, i + 1)) };
        g_array_append_val(hs, h);
    }
    return hs;
}

static char *dropped_list(GArray *orig, char ***names_out)
{
    GPtrArray *names = g_ptr_array_new();
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < orig->len; i++) {
        Header *h = &g_array_index(orig, Header, i);
        if (g_hash_table_add(seen, h->name))
            g_ptr_array_add(names, g_strdup(h->name));
    }
    g_autoptr(GString) list = g_string_new(NULL);
    guint listed = 0;
    for (; listed < names->len; listed++) {
        const char *n = g_ptr_array_index(names, listed);
        if (list->len + strlen(n) + 1 > JET_CAPTURE_MAX_DROPPED_LIST)
            break;
        if (list->len > 0)
            g_string_append_c(list, ',');
        g_string_append(list, n);
    }
    if (listed < names->len)
        g_string_append_printf(list, "%s+%u more", list->len > 0 ? "," : "", names->len - listed);
    g_ptr_array_add(names, NULL);
    *names_out = (char **)g_ptr_array_free(names, FALSE);
    return g_string_free(g_steal_pointer(&list), FALSE);
}

static gboolean fits(gint64 hdr, gint64 total, gint64 max_payload)
{
    return hdr <= JET_CAPTURE_MAX_HEADER_BYTES && (max_payload <= 0 || total <= max_payload);
}

static gboolean shadowed(GArray *hs)
{
    for (guint i = 0; i < hs->len; i++) {
        Header *h = &g_array_index(hs, Header, i);
        if (strcmp(h->name, MSG_ID_HDR) == 0)
            continue;
        if (strstr(h->name, MSG_ID_HDR) != NULL || strstr(h->value, MSG_ID_HDR) != NULL)
            return TRUE;
    }
    return FALSE;
}

void jet_capture_build_clear(JetCaptureBuild *r)
{
    if (r == NULL)
        return;
    g_strfreev(r->dropped);
    g_free(r->msg_id);
    memset(r, 0, sizeof *r);
}

GPtrArray *jet_capture_headers(int len, const GPtrArray *original, const JetCaptureFacts *f,
                               gint64 max_payload, JetCaptureBuild *result, GError **error)
{
    g_return_val_if_fail(f != NULL && len >= 0, NULL);
    JetCaptureBuild local = { 0 };
    JetCaptureBuild *r = result != NULL ? result : &local;
    memset(r, 0, sizeof *r);

    g_autoptr(GArray) prov = headers_new();
    if (f->stream != NULL && *f->stream && f->stream_seq > 0) {
        r->msg_id = g_strdup_printf("jethost:%s.%s:%" G_GUINT64_FORMAT, f->stream,
                                    f->consumer != NULL ? f->consumer : "", f->stream_seq);
        add(prov, MSG_ID_HDR, r->msg_id);
    }
    provenance(prov, f);
    g_autoptr(GArray) orig = original_headers(original);

    gint64 prov_len = headers_len(prov);
    /* Both sets in one block: the line and the blank line counted once. */
    gint64 all_len = orig->len == 0 ? prov_len : headers_len(orig) - (HDR_LINE_LEN + 2) + prov_len;
    gboolean keep_orig = fits(all_len, all_len + len, max_payload);
    g_autoptr(GArray) hs = headers_new();
    if (keep_orig) {
        for (guint i = 0; i < orig->len; i++) {
            Header *h = &g_array_index(orig, Header, i);
            Header c = { g_strdup(h->name), g_strdup(h->value) };   /* as they were, empty ones too */
            g_array_append_val(hs, c);
        }
    } else {
        g_autofree char *list = dropped_list(orig, &r->dropped);
        add(prov, JET_HDR_DROPPED_HEADERS, list);
        r->headers_dropped = TRUE;
    }
    for (guint i = 0; i < prov->len; i++) {
        Header *h = &g_array_index(prov, Header, i);
        add(hs, h->name, h->value);
    }
    r->header_bytes = headers_len(hs);
    r->total_bytes = r->header_bytes + len;
    if (!fits(r->header_bytes, r->total_bytes, max_payload)) {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE,
                    "too large to capture: %d payload bytes + %" G_GINT64_FORMAT
                    " header bytes with the provenance alone exceed the limit (max_payload %" G_GINT64_FORMAT
                    ", headers %d); never truncated",
                    len, r->header_bytes, max_payload, JET_CAPTURE_MAX_HEADER_BYTES);
        jet_capture_build_clear(&local);
        return NULL;
    }
    r->msg_id_shadowed = r->msg_id != NULL && shadowed(hs);

    GPtrArray *out = g_ptr_array_new_full(2 * hs->len, g_free);
    for (guint i = 0; i < hs->len; i++) {
        Header *h = &g_array_index(hs, Header, i);
        g_ptr_array_add(out, g_steal_pointer(&h->name));
        g_ptr_array_add(out, g_steal_pointer(&h->value));
    }
    jet_capture_build_clear(&local);
    return out;
}

natsMsg *jet_capture_build(const char *dlq_subject, const char *data, int len, natsMsg *original,
                           const JetCaptureFacts *f, gint64 max_payload, JetCaptureBuild *result,
                           GError **error)
{
    g_return_val_if_fail(f != NULL, NULL);
    g_return_val_if_fail(len >= 0 && (len == 0 || data != NULL), NULL);
    if (result != NULL)
        memset(result, 0, sizeof *result);
    if (dlq_subject == NULL || *dlq_subject == '\0') {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_INVALID, "no DLQ subject");
        return NULL;
    }
    g_autoptr(GPtrArray) orig = original != NULL ? jet_capture_msg_headers(original) : NULL;
    g_autoptr(GPtrArray) hs = jet_capture_headers(len, orig, f, max_payload, result, error);
    if (hs == NULL)
        return NULL;

    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, dlq_subject, NULL, len > 0 ? data : NULL, len);
    for (guint i = 0; s == NATS_OK && i + 1 < hs->len; i += 2)
        s = natsMsgHeader_Add(m, g_ptr_array_index(hs, i), g_ptr_array_index(hs, i + 1));
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_INVALID, "building the DLQ message: %s", why);
        natsMsg_Destroy(m);
        return NULL;
    }
    return m;
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

JetCaptureOutcome jet_capture_publish(jsCtx *js, natsMsg *dlq_msg, gint64 timeout_ms, gboolean *duplicate,
                                      GError **error)
{
    if (duplicate != NULL)
        *duplicate = FALSE;
    g_return_val_if_fail(js != NULL && dlq_msg != NULL, JET_CAPTURE_FAILED);
    const char *subject = natsMsg_GetSubject(dlq_msg);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = timeout_ms > 0 ? timeout_ms : 5000;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, js, dlq_msg, &po, &jerr);
    if (s == NATS_OK) {
        if (duplicate != NULL)
            *duplicate = pa->Duplicate;
        jsPubAck_Destroy(pa);
        return JET_CAPTURE_CAPTURED;
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

/* --- replay ---------------------------------------------------------------- */

static gboolean never_restored(const char *name)
{
    return g_ascii_strcasecmp(name, "Nats-Rollup") == 0 || has_prefix_ci(name, "Nats-Expected-") ||
           g_ascii_strcasecmp(name, MSG_ID_HDR) == 0;
}

natsMsg *jet_capture_replay_build(natsMsg *record, const char *dlq_stream, guint64 dlq_seq, gint64 now_ns,
                                  char **msg_id_out, GError **error)
{
    g_return_val_if_fail(record != NULL && dlq_stream != NULL, NULL);
    const char *subject = NULL;
    if (natsMsgHeader_Get(record, JET_HDR_ORIGIN_SUBJECT, &subject) != NATS_OK || subject == NULL || !*subject) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "%s:%" G_GUINT64_FORMAT " has no " JET_HDR_ORIGIN_SUBJECT " header: not a jethost capture",
                    dlq_stream, dlq_seq);
        return NULL;
    }
    g_autofree char *subj = g_strdup(subject);
    natsMsg *m = NULL;
    int len = natsMsg_GetDataLength(record);
    natsStatus s = natsMsg_Create(&m, subj, NULL, len > 0 ? natsMsg_GetData(record) : NULL, len);
    const char **keys = NULL;
    int count = 0;
    if (s == NATS_OK && natsMsgHeader_Keys(record, &keys, &count) == NATS_OK) {
        for (int i = 0; s == NATS_OK && i < count; i++) {
            g_autofree char *restored = jet_capture_restored_name(keys[i]);
            const char *name = restored;
            if (name == NULL) {
                /* The record's own Nats-* headers (its Msg-Id) and the
                 * provenance stay behind; application headers travel. */
                if (has_prefix_ci(keys[i], "Nats-") || has_prefix_ci(keys[i], "Jethost-"))
                    continue;
                name = keys[i];
            } else if (never_restored(name)) {
                continue;
            }
            const char **values = NULL;
            int nv = 0;
            if (natsMsgHeader_Values(record, keys[i], &values, &nv) != NATS_OK)
                continue;
            for (int j = 0; s == NATS_OK && j < nv; j++)
                s = natsMsgHeader_Add(m, name, values[j]);
            free((void *)values);
        }
        free((void *)keys);
    }
    g_autofree char *id = g_strdup_printf("jethost-replay:%s:%" G_GUINT64_FORMAT ":%" G_GINT64_FORMAT, dlq_stream,
                                          dlq_seq, now_ns);
    g_autofree char *from = g_strdup_printf("%s:%" G_GUINT64_FORMAT, dlq_stream, dlq_seq);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, MSG_ID_HDR, id);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, JET_HDR_REPLAYED_FROM, from);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "building the replay of %s: %s", from, why);
        natsMsg_Destroy(m);
        return NULL;
    }
    if (msg_id_out != NULL)
        *msg_id_out = g_steal_pointer(&id);
    return m;
}
