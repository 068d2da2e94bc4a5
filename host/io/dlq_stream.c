/* The DLQ stream: ensured before a binding captures, and its size limit.
 * dlq_stream.h has the contract; docs/dead-letters.md the operator's view. */
#include "dlq_stream.h"

#include "conn.h"
#include "dlq_record.h"
#include "errors.h"
#include "js_api.h"
#include "log.h"
#include "setup_retry.h"
#include "stream_names.h"

#define ERR_STREAM_NOT_FOUND 10059
#define ERR_STREAM_NAME_IN_USE 10058

/* --- limits ----------------------------------------------------------------- */

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

/* --- per-record TTLs (dlq_ttl) ---------------------------------------------- */

/* A request about the DLQ stream ("INFO", "CREATE"); the reply's object, or
 * NULL with the reason.  nats.c's stream config has no allow_msg_ttl
 * (nats-server 2.11), so the host reads and writes that field itself. */
static JsonObject *api_request(natsConnection *nc, const char *what, const char *stream, const char *body,
                               GError **error)
{
    g_autofree char *api = g_strdup_printf("STREAM.%s.%s", what, stream);
    natsStatus s = NATS_OK;
    g_autoptr(JsonObject) o = jet_js_api_request(nc, api, body, 5000, &s);
    const char *refused = jet_js_api_error(o, NULL);
    if (o == NULL || refused != NULL) {
        g_autofree char *why = s != NATS_OK ? jet_nats_error(s) : NULL;
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "%s: %s", api,
                    why != NULL ? why : refused != NULL ? refused : "the reply is not JSON");
        return NULL;
    }
    return g_steal_pointer(&o);
}

/* Whether a stream info or create reply says allow_msg_ttl: a server
 * before 2.11 does not know the field and leaves it out. */
static gboolean reply_allows_ttl(JsonObject *o)
{
    JsonObject *c = json_object_has_member(o, "config") ? json_object_get_object_member(o, "config") : NULL;
    return c != NULL && json_object_has_member(c, "allow_msg_ttl") && json_object_get_boolean_member(c, "allow_msg_ttl");
}

static void ttl_refused(const JetBindingConfig *b, const char *how, GError **error)
{
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                "binding %s: dlq_ttl = %" G_GUINT64_FORMAT "s needs DLQ stream %s to keep per-message TTLs "
                "(allow_msg_ttl, nats-server 2.11 or later), and %s: enable allow_msg_ttl on the stream, or set "
                "dlq_ttl = 0 to keep records until they are removed",
                b->name, b->dlq_ttl_ms / 1000, b->dlq_stream, how);
}

static gboolean check_ttl(natsConnection *nc, const JetBindingConfig *b, GError **error)
{
    g_autoptr(GError) local = NULL;
    JsonObject *o = api_request(nc, "INFO", b->dlq_stream, "", &local);
    if (o == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: DLQ stream %s: %s", b->name, b->dlq_stream,
                    local->message);
        return FALSE;
    }
    gboolean ok = reply_allows_ttl(o);
    json_object_unref(o);
    if (!ok)
        ttl_refused(b, "the server says it does not (or does not know the setting)", error);
    return ok;
}

/* Creates the DLQ stream as jet_dlq_stream_ensure does, with allow_msg_ttl. */
static gboolean create_with_ttl(natsConnection *nc, const JetBindingConfig *b, const char *subject, GError **error)
{
    g_autoptr(JsonBuilder) j = json_builder_new();
    json_builder_begin_object(j);
    json_builder_set_member_name(j, "name");
    json_builder_add_string_value(j, b->dlq_stream);
    json_builder_set_member_name(j, "subjects");
    json_builder_begin_array(j);
    json_builder_add_string_value(j, subject);
    json_builder_end_array(j);
    json_builder_set_member_name(j, "storage");
    json_builder_add_string_value(j, "file");
    json_builder_set_member_name(j, "retention");
    json_builder_add_string_value(j, "limits");
    json_builder_set_member_name(j, "duplicate_window");
    json_builder_add_int_value(j, JET_DLQ_DUPLICATE_WINDOW_NS);
    json_builder_set_member_name(j, "num_replicas");
    json_builder_add_int_value(j, b->replicas > 0 ? (gint64)b->replicas : 1);
    json_builder_set_member_name(j, "allow_msg_ttl");
    json_builder_add_boolean_value(j, TRUE);
    json_builder_end_object(j);
    g_autoptr(JsonNode) root = json_builder_get_root(j);
    g_autofree char *body = json_to_string(root, FALSE);
    g_autoptr(GError) local = NULL;
    JsonObject *o = api_request(nc, "CREATE", b->dlq_stream, body, &local);
    if (o == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: create DLQ stream %s: %s", b->name,
                    b->dlq_stream, local->message);
        return FALSE;
    }
    gboolean ok = reply_allows_ttl(o);
    json_object_unref(o);
    if (!ok) {
        ttl_refused(b, "this server made it without (a server before 2.11)", error);
        return FALSE;
    }
    jet_log(JET_LOG_INFO, b->name, "dlq-stream-created",
            "created DLQ stream %s on %s (%d replica%s, records kept %" G_GUINT64_FORMAT "s each)", b->dlq_stream,
            subject, b->replicas > 1 ? (int)b->replicas : 1, b->replicas > 1 ? "s" : "", b->dlq_ttl_ms / 1000);
    return TRUE;
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
    jet_stream_replicas_note(b->name, "DLQ stream", si, b->replicas);
    return TRUE;
}

gboolean jet_dlq_stream_ensure(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, GError **error)
{
    g_return_val_if_fail(nc != NULL && js != NULL && b != NULL, FALSE);
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
            return ok && (b->dlq_ttl_ms == 0 || check_ttl(nc, b, error));
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
        const char *subjects[] = { subject, NULL };
        if (b->dlq_ttl_ms > 0)
            return create_with_ttl(nc, b, subject, error);
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        sc.Name = b->dlq_stream;
        sc.Subjects = subjects;
        sc.SubjectsLen = 1;
        sc.Storage = js_FileStorage;
        sc.Retention = js_LimitsPolicy;
        sc.Duplicates = JET_DLQ_DUPLICATE_WINDOW_NS;
        sc.Replicas = b->replicas > 0 ? (int64_t)b->replicas : 1;
        jerr = 0;
        s = js_AddStream(&si, js, &sc, NULL, &jerr);
        if (s == NATS_OK) {
            jet_log(JET_LOG_INFO, b->name, "dlq-stream-created", "created DLQ stream %s on %s (%d replica%s)",
                    b->dlq_stream, subject, (int)sc.Replicas, sc.Replicas == 1 ? "" : "s");
            jsStreamInfo_Destroy(si);
            return TRUE;
        }
        /* Another host created it first: look again, once. */
        if (jerr == ERR_STREAM_NAME_IN_USE && attempt == 0)
            continue;
        return jet_stream_create_failed(js, b->name, b->dlq_stream, subjects, s, jerr, error);
    }
}

typedef struct {
    natsConnection *nc;
    jsCtx *js;
    const JetBindingConfig *b;
} EnsureArgs;

static gboolean ensure_step(gpointer data, GError **error)
{
    EnsureArgs *a = data;
    return jet_dlq_stream_ensure(a->nc, a->js, a->b, error);
}

gboolean jet_dlq_stream_ensure_retrying(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, guint attempts,
                                        GError **error)
{
    EnsureArgs a = { nc, js, b };
    return jet_setup_retrying(ensure_step, &a, b->name, "dlq-stream-retry", JET_LOG_WARNING, MAX(attempts, 1), NULL,
                              error);
}
