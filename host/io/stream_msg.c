/* <API prefix>.STREAM.MSG.GET with the stored bytes kept: stream_msg.h. */
#include "stream_msg.h"
#include "js_api.h"

#include "conn.h"
#include "errors.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define ERR_NO_MESSAGE_FOUND 10037

void jet_stored_msg_free(JetStoredMsg *m)
{
    if (m == NULL)
        return;
    g_free(m->subject);
    g_clear_pointer(&m->hdrs, g_bytes_unref);
    g_clear_pointer(&m->data, g_bytes_unref);
    g_free(m);
}

static GBytes *b64(JsonObject *o, const char *member)
{
    const char *s = json_object_has_member(o, member) ? json_object_get_string_member(o, member) : NULL;
    if (s == NULL || *s == '\0')
        return NULL;
    gsize len = 0;
    guchar *raw = g_base64_decode(s, &len);
    return g_bytes_new_take(raw, len);
}

static JetStoredStatus msg_get(natsConnection *nc, const char *stream, guint64 seq, const char *next_by_subject,
                               gint64 timeout_ms, JetStoredMsg **out, GError **error)
{
    g_return_val_if_fail(nc != NULL && stream != NULL && out != NULL, JET_STORED_ERROR);
    *out = NULL;
    g_autofree char *api = g_strdup_printf("STREAM.MSG.GET.%s", stream);
    /* The subject may be a delivered message's, quotes and all. */
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "seq");
    json_builder_add_int_value(jb, (gint64)seq);
    if (next_by_subject != NULL) {
        json_builder_set_member_name(jb, "next_by_subj");
        json_builder_add_string_value(jb, next_by_subject);
    }
    json_builder_end_object(jb);
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    g_autofree char *body = json_to_string(root, FALSE);
    natsStatus s = NATS_OK;
    g_autoptr(JsonObject) o = jet_js_api_request(nc, api, body, timeout_ms, &s);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "reading %s:%" G_GUINT64_FORMAT ": %s%s", stream, seq, why,
                    s == NATS_NO_RESPONDERS ? " (no such stream?)" : "");
        return JET_STORED_ERROR;
    }
    if (o == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "reading %s:%" G_GUINT64_FORMAT ": the reply is not JSON",
                    stream, seq);
        return JET_STORED_ERROR;
    }
    gint64 code = 0;
    const char *refused = jet_js_api_error(o, &code);
    if (refused != NULL) {
        /* Only "no message found" is absence: a missing stream is a 404
         * too (err 10059), and must not read as a deleted message. */
        if (code == ERR_NO_MESSAGE_FOUND)
            return JET_STORED_ABSENT;
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "reading %s:%" G_GUINT64_FORMAT ": %s [err %" G_GINT64_FORMAT "]",
                    stream, seq, refused, code);
        return JET_STORED_ERROR;
    }
    JsonObject *m = json_object_has_member(o, "message") ? json_object_get_object_member(o, "message") : NULL;
    if (m == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "reading %s:%" G_GUINT64_FORMAT ": the reply has no message",
                    stream, seq);
        return JET_STORED_ERROR;
    }
    JetStoredMsg *r = g_new0(JetStoredMsg, 1);
    r->subject = g_strdup(json_object_has_member(m, "subject") ? json_object_get_string_member(m, "subject") : "");
    r->seq = json_object_has_member(m, "seq") ? (guint64)json_object_get_int_member(m, "seq") : seq;
    r->time_ns = jet_js_api_time_member(m, "time");
    r->hdrs = b64(m, "hdrs");
    r->data = b64(m, "data");
    if (r->data == NULL)
        r->data = g_bytes_new(NULL, 0);
    *out = r;
    return JET_STORED_FOUND;
}

JetStoredStatus jet_stream_msg_get(natsConnection *nc, const char *stream, guint64 seq, gint64 timeout_ms,
                                   JetStoredMsg **out, GError **error)
{
    return msg_get(nc, stream, seq, NULL, timeout_ms, out, error);
}

JetStoredStatus jet_stream_msg_next(natsConnection *nc, const char *stream, guint64 seq, const char *subject,
                                    gint64 timeout_ms, JetStoredMsg **out, GError **error)
{
    return msg_get(nc, stream, seq, subject != NULL ? subject : ">", timeout_ms, out, error);
}
