/* Which stream captures a subject (stream_names.h). */
#include "stream_names.h"

#include "errors.h"
#include "js_api.h"
#include "subject_overlap.h"

#include <json-glib/json-glib.h>

char *jet_stream_capturing(JetConn *c, const char *subject, gint64 timeout_ms, GError **error)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "subject");
    json_builder_add_string_value(jb, subject);
    json_builder_end_object(jb);
    g_autoptr(JsonNode) req = json_builder_get_root(jb);
    g_autofree char *body = json_to_string(req, FALSE);
    natsStatus s = NATS_OK;
    g_autoptr(JsonObject) o = jet_js_api_request(jet_conn_nats(c), "STREAM.NAMES", body, timeout_ms, &s);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "asking which stream captures %s: %s", subject, why);
        return NULL;
    }
    if (o == NULL || jet_js_api_error(o, NULL) != NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "asking which stream captures %s: the server %s", subject,
                    o == NULL ? "sent no JSON" : "refused");
        return NULL;
    }
    JsonNode *list = json_object_get_member(o, "streams");
    if (list == NULL || !JSON_NODE_HOLDS_ARRAY(list))
        return NULL;   /* "streams": null when none */
    JsonArray *arr = json_node_get_array(list);
    for (guint i = 0; i < json_array_get_length(arr); i++) {
        JsonNode *n = json_array_get_element(arr, i);
        if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING)
            return g_strdup(json_node_get_string(n));
    }
    return NULL;
}

char **jet_stream_subjects(const char *stream, void *conn)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, jet_conn_js(conn), stream, NULL, NULL) != NATS_OK)
        return NULL;
    char **out = g_new0(char *, (gsize)si->Config->SubjectsLen + 1);
    for (int i = 0; i < si->Config->SubjectsLen; i++)
        out[i] = g_strdup(si->Config->Subjects[i]);
    jsStreamInfo_Destroy(si);
    return out;
}

/* The server's "subjects overlap with an existing stream". */
#define ERR_STREAM_SUBJECT_OVERLAP 10065

/* "NAME (subjects), ..." of every stream on the server other than `stream`
 * with a subject that overlaps one of subjects; "" when none is found. */
static char *streams_overlapping(jsCtx *js, const char *stream, const char *const *subjects)
{
    GString *out = g_string_new(NULL);
    jsStreamInfoList *list = NULL;
    if (js_Streams(&list, js, NULL, NULL) != NATS_OK)
        return g_string_free(out, FALSE);
    for (int i = 0; i < list->Count; i++) {
        const jsStreamConfig *c = list->List[i]->Config;
        gboolean hit = FALSE;
        for (int k = 0; k < c->SubjectsLen && !hit; k++)
            for (gsize n = 0; subjects[n] != NULL && !hit; n++)
                hit = jet_subject_overlaps(c->Subjects[k], subjects[n]);
        if (!hit || g_strcmp0(c->Name, stream) == 0)
            continue;
        g_string_append_printf(out, "%s%s (", out->len ? ", " : "", c->Name);
        for (int k = 0; k < c->SubjectsLen; k++)
            g_string_append_printf(out, "%s%s", k ? ", " : "", c->Subjects[k]);
        g_string_append_c(out, ')');
    }
    jsStreamInfoList_Destroy(list);
    return g_string_free(out, FALSE);
}

gboolean jet_stream_create_failed(jsCtx *js, const char *binding, const char *stream, const char *const *subjects,
                                  natsStatus s, jsErrCode jerr, GError **error)
{
    g_autofree char *why = jet_nats_error(s);
    g_autofree char *asked = g_strjoinv(", ", (char **)subjects);
    if (jerr != ERR_STREAM_SUBJECT_OVERLAP) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: create stream %s (subjects %s): %s [err %d]",
                    binding, stream, asked, why, (int)jerr);
        return FALSE;
    }
    /* Waiting cannot mend it: only an operator's change to one of the
     * streams can (docs/forwarding.md, "Exit codes"). */
    g_autofree char *others = streams_overlapping(js, stream, subjects);
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                "binding %s: create stream %s (subjects %s): its subjects overlap those of stream%s %s on the "
                "server: a config error, not retried; change the binding's subjects or the other stream's "
                "[err %d]", binding, stream, asked, strchr(others, ',') != NULL ? "s" : "",
                *others != '\0' ? others : "(not found: listing the streams failed)", (int)jerr);
    return FALSE;
}
