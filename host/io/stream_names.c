/* Which stream captures a subject (stream_names.h). */
#include "stream_names.h"
#include "msg_payload.h"

#include "errors.h"

#include <json-glib/json-glib.h>
#include <string.h>

char *jet_stream_capturing(JetConn *c, const char *subject, gint64 timeout_ms, GError **error)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "subject");
    json_builder_add_string_value(jb, subject);
    json_builder_end_object(jb);
    g_autoptr(JsonNode) req = json_builder_get_root(jb);
    g_autofree char *body = json_to_string(req, FALSE);
    natsMsg *reply = NULL;
    g_autofree char *api = g_strdup_printf("%s.STREAM.NAMES", jet_conn_api_prefix(c));
    natsStatus s = natsConnection_Request(&reply, jet_conn_nats(c), api, body, (int)strlen(body), timeout_ms);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "asking which stream captures %s: %s", subject, why);
        return NULL;
    }
    g_autoptr(JsonParser) p = json_parser_new();
    gsize len = 0;
    const char *data = jet_msg_payload(reply, &len);
    gboolean ok = json_parser_load_from_data(p, data, (gssize)len, NULL);
    natsMsg_Destroy(reply);
    JsonNode *root = ok ? json_parser_get_root(p) : NULL;
    JsonObject *o = root != NULL && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    if (o == NULL || json_object_has_member(o, "error")) {
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
