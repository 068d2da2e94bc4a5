/* The consumer pause: consumer_pause.h has the contract. */
#include "consumer_pause.h"

#include "conn.h"
#include "errors.h"
#include "js_api.h"
#include "provenance.h"

gboolean jet_consumer_pause_supported(natsConnection *nc)
{
    return jet_js_api_level(nc) >= 1;
}

/* The server's time now (its consumer info's "ts", nats-server 2.10+), or 0. */
static gint64 server_now_ns(natsConnection *nc, const char *stream, const char *consumer)
{
    g_autofree char *api = g_strdup_printf("CONSUMER.INFO.%s.%s", stream, consumer);
    g_autoptr(JsonObject) o = jet_js_api_request(nc, api, "", 5000, NULL);
    if (o == NULL || jet_js_api_error(o, NULL) != NULL)
        return 0;
    return jet_js_api_time_member(o, "ts");
}

gboolean jet_consumer_pause(natsConnection *nc, const char *stream, const char *consumer, guint64 pause_ms,
                            gint64 *until_ns_out, GError **error)
{
    gint64 now_ns = server_now_ns(nc, stream, consumer);
    if (now_ns == 0)
        now_ns = g_get_real_time() * 1000;
    gint64 until_ns = now_ns + (gint64)pause_ms * 1000000;   /* pause_ms is at most a day (config) */
    g_autofree char *api = g_strdup_printf("CONSUMER.PAUSE.%s.%s", stream, consumer);
    g_autofree char *until = jet_time_format_ns(until_ns);
    g_autofree char *body = g_strdup_printf("{\"pause_until\":\"%s\"}", until);
    natsStatus s = NATS_OK;
    g_autoptr(JsonObject) o = jet_js_api_request(nc, api, body, 5000, &s);
    const char *refused = o != NULL ? jet_js_api_error(o, NULL) : NULL;
    if (o == NULL || refused != NULL) {
        g_autofree char *why = s != NATS_OK ? jet_nats_error(s) : g_strdup(refused != NULL ? refused : "no JSON reply");
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "pause consumer %s/%s until %s: %s", stream, consumer, until,
                    why);
        return FALSE;
    }
    if (!json_object_has_member(o, "paused") || !json_object_get_boolean_member(o, "paused")) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "pause consumer %s/%s until %s: the server says it is not "
                    "paused", stream, consumer, until);
        return FALSE;
    }
    if (until_ns_out != NULL) {
        gint64 given = jet_js_api_time_member(o, "pause_until");
        *until_ns_out = given > 0 ? given : until_ns;
    }
    return TRUE;
}

gint64 jet_consumer_paused_until(natsConnection *nc, const char *stream, const char *consumer)
{
    g_autofree char *api = g_strdup_printf("CONSUMER.INFO.%s.%s", stream, consumer);
    g_autoptr(JsonObject) o = jet_js_api_request(nc, api, "", 5000, NULL);
    if (o == NULL || jet_js_api_error(o, NULL) != NULL)
        return 0;
    if (!json_object_has_member(o, "paused") || !json_object_get_boolean_member(o, "paused"))
        return 0;
    JsonObject *c = json_object_has_member(o, "config") ? json_object_get_object_member(o, "config") : NULL;
    return jet_js_api_time_member(c, "pause_until");
}
