#include "ops_http.h"
#include "config.h"
#include "errors.h"
#include "log.h"

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

struct JetOpsHttp {
    SoupServer *server;
    JetOpsCollectFn collect;
    gpointer data;
};

static GArray *collect(JetOpsHttp *h, JetMetricsHost *host)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(JetMetricsBinding));
    memset(host, 0, sizeof *host);
    h->collect(a, host, h->data);
    return a;
}

static void reply(SoupServerMessage *msg, guint status, const char *type, char *body)
{
    soup_server_message_set_status(msg, status, NULL);
    soup_server_message_set_response(msg, type, SOUP_MEMORY_TAKE, body, strlen(body));
}

gboolean jet_ops_readiness(const JetMetricsBinding *b, gsize n, char **json)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    gboolean ready = TRUE;
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "bindings");
    json_builder_begin_array(jb);
    for (gsize i = 0; i < n; i++) {
        const char *why = jet_metrics_not_ready(&b[i]);
        if (why == NULL)
            continue;
        ready = FALSE;
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "binding");
        json_builder_add_string_value(jb, b[i].name);
        json_builder_set_member_name(jb, "reason");
        json_builder_add_string_value(jb, why);
        json_builder_end_object(jb);
    }
    json_builder_end_array(jb);
    json_builder_set_member_name(jb, "ready");
    json_builder_add_boolean_value(jb, ready);
    json_builder_end_object(jb);
    if (!ready) {
        g_autoptr(JsonGenerator) gen = json_generator_new();
        g_autoptr(JsonNode) root = json_builder_get_root(jb);
        json_generator_set_root(gen, root);
        *json = json_generator_to_data(gen, NULL);
    }
    return ready;
}

static void on_request(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
                       gpointer data)
{
    (void)server;
    (void)query;
    JetOpsHttp *h = data;
    const char *method = soup_server_message_get_method(msg);
    if (g_strcmp0(method, "GET") != 0 && g_strcmp0(method, "HEAD") != 0) {
        reply(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "text/plain", g_strdup("GET only\n"));
        return;
    }
    if (g_strcmp0(path, "/healthz") == 0) {
        /* Answered on the main loop: an answer at all is the proof. */
        reply(msg, SOUP_STATUS_OK, "text/plain", g_strdup("ok\n"));
        return;
    }
    if (g_strcmp0(path, "/metrics") == 0 || g_strcmp0(path, "/readyz") == 0) {
        JetMetricsHost host;
        g_autoptr(GArray) a = collect(h, &host);
        const JetMetricsBinding *b = (const JetMetricsBinding *)(gpointer)a->data;
        if (path[1] == 'm') {
            GString *out = g_string_new(NULL);
            jet_metrics_render(out, &host, b, a->len);
            reply(msg, SOUP_STATUS_OK, "text/plain; version=0.0.4; charset=utf-8", g_string_free(out, FALSE));
            return;
        }
        char *json = NULL;
        if (jet_ops_readiness(b, a->len, &json))
            reply(msg, SOUP_STATUS_OK, "text/plain", g_strdup("ready\n"));
        else
            reply(msg, SOUP_STATUS_SERVICE_UNAVAILABLE, "application/json", json);
        return;
    }
    reply(msg, SOUP_STATUS_NOT_FOUND, "text/plain", g_strdup("not found: try /metrics, /healthz or /readyz\n"));
}

JetOpsHttp *jet_ops_http_start(const char *listen, JetOpsCollectFn fn, gpointer data, GError **error)
{
    g_autofree char *addr = NULL;
    guint16 port = 0;
    if (!jet_config_listen_parse(listen, &addr, &port)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "metrics_listen %s: not ADDR:PORT", listen);
        return NULL;
    }
    JetOpsHttp *h = g_new0(JetOpsHttp, 1);
    h->collect = fn;
    h->data = data;
    h->server = soup_server_new("server-header", "jethost", NULL);
    soup_server_add_handler(h->server, NULL, on_request, h, NULL);
    g_autoptr(GInetAddress) ia = g_inet_address_new_from_string(addr);
    g_autoptr(GSocketAddress) sa = g_inet_socket_address_new(ia, port);
    g_autoptr(GError) local = NULL;
    if (!soup_server_listen(h->server, sa, 0, &local)) {
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "metrics_listen %s: %s", listen, local->message);
        jet_ops_http_free(h);
        return NULL;
    }
    GSList *uris = soup_server_get_uris(h->server);
    for (GSList *u = uris; u != NULL; u = u->next) {
        GUri *uri = u->data;
        const char *host = g_uri_get_host(uri);
        gboolean v6 = strchr(host, ':') != NULL;
        jet_log(JET_LOG_INFO, NULL, "metrics-listening", "serving /metrics, /healthz and /readyz at http://%s%s%s:%d",
                v6 ? "[" : "", host, v6 ? "]" : "", g_uri_get_port(uri));
    }
    g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
    return h;
}

void jet_ops_http_free(JetOpsHttp *h)
{
    if (h == NULL)
        return;
    soup_server_disconnect(h->server);
    g_object_unref(h->server);
    g_free(h);
}
