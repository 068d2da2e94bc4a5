/* The DLQ stream: ensured before a binding captures, and its size limit.
 * dlq_stream.h has the contract; docs/dead-letters.md the operator's view. */
#include "dlq_stream.h"

#include "conn.h"
#include "dlq_record.h"
#include "errors.h"
#include "log.h"
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
        const char *subjects[] = { subject, NULL };
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
