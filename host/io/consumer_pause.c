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

/* A time the server wrote (RFC 3339, UTC) as Unix ns; 0 when absent. */
static gint64 time_member(JsonObject *o, const char *name)
{
    const char *text = o != NULL && json_object_has_member(o, name) ? json_object_get_string_member(o, name) : NULL;
    if (text == NULL)
        return 0;
    g_autoptr(GDateTime) dt = g_date_time_new_from_iso8601(text, NULL);
    if (dt == NULL)
        return 0;
    /* Microseconds are enough for a pause; a zero time ("0001-01-01...")
     * comes out negative. */
    return MAX(g_date_time_to_unix(dt) * 1000000000 + (gint64)g_date_time_get_microsecond(dt) * 1000, 0);
}

gboolean jet_consumer_pause(natsConnection *nc, const char *stream, const char *consumer, gint64 until_ns,
                            GError **error)
{
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
    return time_member(c, "pause_until");
}
