/* The host's consumer create and update requests (consumer_put.h). */
#include "consumer_put.h"
#include "errors.h"
#include "js_api.h"

#include <string.h>

#define ERR_CONSUMER_NOT_FOUND 10014
#define ERR_STREAM_NOT_FOUND 10059

static void set_server_error(GError **error, const JetBindingConfig *b, const char *what, natsStatus s,
                             JsonObject *reply)
{
    if (reply == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: %s consumer %s/%s: %s", b->name, what,
                    b->stream, b->consumer, s != NATS_OK ? natsStatus_GetText(s) : "the reply is not JSON");
        return;
    }
    gint64 code = 0;
    const char *why = jet_js_api_error(reply, &code);
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: %s consumer %s/%s: %s [err %" G_GINT64_FORMAT "]",
                b->name, what, b->stream, b->consumer, why, code);
}

JsonObject *jet_consumer_info_json(natsConnection *nc, const JetBindingConfig *b, gboolean *absent,
                                   GError **error)
{
    *absent = FALSE;
    g_autofree char *api = g_strdup_printf("CONSUMER.INFO.%s.%s", b->stream, b->consumer);
    natsStatus s = NATS_OK;
    JsonObject *o = jet_js_api_request(nc, api, "", 5000, &s);
    gint64 code = 0;
    if (o != NULL && jet_js_api_error(o, &code) == NULL)
        return o;
    if (code == ERR_CONSUMER_NOT_FOUND || code == ERR_STREAM_NOT_FOUND) {
        *absent = TRUE;
        json_object_unref(o);
        return NULL;
    }
    set_server_error(error, b, "read", s, o);
    if (o != NULL)
        json_object_unref(o);
    return NULL;
}

JsonObject *jet_consumer_info_config(JsonObject *info)
{
    JsonNode *n = info != NULL && json_object_has_member(info, "config") ? json_object_get_member(info, "config")
                                                                           : NULL;
    return n != NULL && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

static gint64 ns_of_ms(guint64 ms)
{
    return (gint64)MIN(ms, (guint64)(G_MAXINT64 / 1000000)) * 1000000;
}

/* The server's own keys ("_nats.*": its version, the API level a config
 * needs) are the server's to write: not sent back. */
static void drop_server_metadata(JsonObject *c)
{
    JsonNode *n = json_object_has_member(c, "metadata") ? json_object_get_member(c, "metadata") : NULL;
    if (n == NULL || !JSON_NODE_HOLDS_OBJECT(n))
        return;
    JsonObject *m = json_node_get_object(n);
    g_autoptr(GList) keys = json_object_get_members(m);
    for (GList *k = keys; k != NULL; k = k->next)
        if (g_str_has_prefix(k->data, "_nats."))
            json_object_remove_member(m, k->data);
    if (json_object_get_size(m) == 0)
        json_object_remove_member(c, "metadata");
}

/* What the binding owns, set over whatever c holds. */
static void set_owned(JsonObject *c, const JetBindingConfig *b, gboolean pinned)
{
    json_object_set_string_member(c, "durable_name", b->consumer);
    json_object_set_string_member(c, "ack_policy", "explicit");
    json_object_set_int_member(c, "ack_wait", ns_of_ms(b->ack_wait_ms));
    json_object_set_int_member(c, "max_deliver", b->max_deliver);
    json_object_set_int_member(c, "max_ack_pending", b->max_ack_pending);
    /* The binding's one filter, or none: nats-server 2.10's list of
     * filters is replaced by it too. */
    json_object_remove_member(c, "filter_subjects");
    if (b->filter_subject != NULL)
        json_object_set_string_member(c, "filter_subject", b->filter_subject);
    else
        json_object_remove_member(c, "filter_subject");
    json_object_remove_member(c, "priority_groups");
    json_object_remove_member(c, "priority_policy");
    json_object_remove_member(c, "priority_timeout");
    if (pinned) {
        JsonArray *groups = json_array_new();
        json_array_add_string_element(groups, JET_PIN_GROUP);
        json_object_set_array_member(c, "priority_groups", groups);
        json_object_set_string_member(c, "priority_policy", "pinned_client");
        /* The server gives the pin up after expires + claim_ttl without a
         * pull of the holder's: an idle holder, whose pull waits out
         * `expires`, keeps it; a new holder does not wait for that, it
         * takes the pin when it starts (docs/exclusive.md). */
        json_object_set_int_member(c, "priority_timeout", ns_of_ms(b->expires_ms + b->claim_ttl_ms));
    }
}

/* A new consumer's config: delivered from start_seq, replayed at once. */
static JsonObject *new_config(guint64 start_seq)
{
    JsonObject *c = json_object_new();
    gboolean from_seq = start_seq > 1;
    json_object_set_string_member(c, "deliver_policy", from_seq ? "by_start_sequence" : "all");
    if (from_seq)
        json_object_set_int_member(c, "opt_start_seq", (gint64)MIN(start_seq, (guint64)G_MAXINT64));
    json_object_set_string_member(c, "replay_policy", "instant");
    return c;
}

/* A deep copy (json-glib's node copy shares objects): a round trip. */
static JsonObject *copy_object(JsonObject *o)
{
    g_autoptr(JsonNode) n = json_node_init_object(json_node_alloc(), o);
    g_autofree char *text = json_to_string(n, FALSE);
    g_autoptr(JsonNode) fresh = json_from_string(text, NULL);
    return json_object_ref(json_node_get_object(fresh));
}

JsonObject *jet_consumer_put(natsConnection *nc, const JetBindingConfig *b, JsonObject *current, guint64 start_seq,
                             gboolean pinned, GError **error)
{
    gboolean update = current != NULL;
    g_autoptr(JsonObject) c = update ? copy_object(current) : new_config(start_seq);
    drop_server_metadata(c);
    set_owned(c, b, pinned);

    g_autoptr(JsonObject) req = json_object_new();
    json_object_set_string_member(req, "stream_name", b->stream);
    /* What the host means (nats-server 2.10+; 2.9 ignores it): an update
     * of a consumer deleted since it was read is refused, not made a new
     * consumer from the stream's first message; a create that finds one
     * made meanwhile with another config is refused, not applied to it. */
    json_object_set_string_member(req, "action", update ? "update" : "create");
    json_object_set_object_member(req, "config", json_object_ref(c));
    g_autoptr(JsonNode) root = json_node_init_object(json_node_alloc(), req);
    g_autofree char *body = json_to_string(root, FALSE);

    g_autofree char *api = g_strdup_printf("CONSUMER.CREATE.%s.%s", b->stream, b->consumer);
    natsStatus s = NATS_OK;
    JsonObject *reply = jet_js_api_request(nc, api, body, 5000, &s);
    const char *what = update ? "update" : "create";
    if (reply == NULL || jet_js_api_error(reply, NULL) != NULL || jet_consumer_info_config(reply) == NULL) {
        if (reply != NULL && jet_js_api_error(reply, NULL) == NULL) {
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: %s consumer %s/%s: the reply has no "
                        "config", b->name, what, b->stream, b->consumer);
        } else {
            set_server_error(error, b, what, s, reply);
        }
        if (reply != NULL)
            json_object_unref(reply);
        return NULL;
    }
    return reply;
}
