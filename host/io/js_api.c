/* JetStream API requests read by the host (js_api.h). */
#include "js_api.h"

#include "conn.h"
#include "msg_payload.h"

#include <string.h>

JsonObject *jet_js_api_request(natsConnection *nc, const char *api, const char *body, gint64 timeout_ms,
                               natsStatus *status)
{
    g_autofree char *subject = g_strdup_printf("%s.%s", jet_conn_nats_api_prefix(nc), api);
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_Request(&reply, nc, subject, body, (int)strlen(body),
                                          timeout_ms > 0 ? timeout_ms : 5000);
    if (status != NULL)
        *status = s;
    if (s != NATS_OK)
        return NULL;
    g_autoptr(JsonParser) p = json_parser_new();
    gsize len = 0;
    const char *data = jet_msg_payload(reply, &len);
    gboolean parsed = json_parser_load_from_data(p, data, (gssize)len, NULL);
    natsMsg_Destroy(reply);
    JsonNode *root = parsed ? json_parser_get_root(p) : NULL;
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return NULL;
    return json_object_ref(json_node_get_object(root));
}

const char *jet_js_api_error(JsonObject *o, gint64 *code)
{
    if (code != NULL)
        *code = 0;
    JsonNode *en = o != NULL ? json_object_get_member(o, "error") : NULL;
    if (en == NULL)
        return NULL;
    /* Read by type: a reply need not come from the server's API. */
    JsonObject *e = JSON_NODE_HOLDS_OBJECT(en) ? json_node_get_object(en) : NULL;
    JsonNode *cn = e != NULL ? json_object_get_member(e, "err_code") : NULL;
    JsonNode *dn = e != NULL ? json_object_get_member(e, "description") : NULL;
    if (code != NULL && cn != NULL && json_node_get_value_type(cn) == G_TYPE_INT64)
        *code = json_node_get_int(cn);
    const char *desc = dn != NULL && json_node_get_value_type(dn) == G_TYPE_STRING ? json_node_get_string(dn) : NULL;
    return desc != NULL ? desc : "refused";
}

gint64 jet_js_api_level(natsConnection *nc)
{
    JsonObject *o = jet_js_api_request(nc, "INFO", "", 5000, NULL);
    if (o == NULL || jet_js_api_error(o, NULL) != NULL) {
        if (o != NULL)
            json_object_unref(o);
        return -1;
    }
    JsonObject *api = json_object_has_member(o, "api") ? json_object_get_object_member(o, "api") : NULL;
    gint64 level = api != NULL && json_object_has_member(api, "level") ? json_object_get_int_member(api, "level") : 0;
    json_object_unref(o);
    return level;
}

gint64 jet_js_api_time_ns(const char *text)
{
    if (text == NULL)
        return 0;
    g_autoptr(GDateTime) dt = g_date_time_new_from_iso8601(text, NULL);
    if (dt == NULL)
        return 0;
    gint64 s = g_date_time_to_unix(dt);
    if (s <= 0 || s > G_MAXINT64 / 1000000000 - 1)
        return 0;
    /* GDateTime keeps microseconds; the nanoseconds are in the text. */
    gint64 frac = 0;
    int digits = 0;
    const char *dot = strchr(text, '.');
    if (dot != NULL)
        for (const char *p = dot + 1; g_ascii_isdigit(*p) && digits < 9; p++, digits++)
            frac = frac * 10 + (*p - '0');
    for (; digits < 9; digits++)
        frac *= 10;
    return s * G_GINT64_CONSTANT(1000000000) + frac;
}

gint64 jet_js_api_time_member(JsonObject *o, const char *name)
{
    JsonNode *n = o != NULL && json_object_has_member(o, name) ? json_object_get_member(o, name) : NULL;
    if (n == NULL || json_node_get_value_type(n) != G_TYPE_STRING)
        return 0;
    return jet_js_api_time_ns(json_node_get_string(n));
}
