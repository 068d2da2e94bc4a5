#include "ops_http.h"
#include "config.h"
#include "errors.h"
#include "log.h"

#include "http_listen.h"

#include <json-glib/json-glib.h>
#include <string.h>

struct JetOpsHttp {
    JetHttpListener *listener;
    JetOpsCollectFn collect;
    gpointer data;
};

static GArray *collect(JetOpsHttp *h, JetMetricsHost *host)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(JetMetricsBinding));
    g_array_set_clear_func(a, jet_metrics_binding_clear);
    memset(host, 0, sizeof *host);
    h->collect(a, host, h->data);
    return a;
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

static void answer(JetHttpAnswer *a, guint status, const char *type, char *body)
{
    a->status = status;
    a->type = type;
    a->body = body;
}

static void serve(const char *path, JetHttpAnswer *a, gpointer data)
{
    JetOpsHttp *h = data;
    if (strcmp(path, "/healthz") == 0) {
        /* Answered on the main loop: an answer at all is the proof. */
        answer(a, 200, "text/plain", g_strdup("ok\n"));
        return;
    }
    if (strcmp(path, "/metrics") == 0 || strcmp(path, "/readyz") == 0) {
        JetMetricsHost host;
        g_autoptr(GArray) arr = collect(h, &host);
        const JetMetricsBinding *b = (const JetMetricsBinding *)(gpointer)arr->data;
        if (path[1] == 'm') {
            GString *out = g_string_new(NULL);
            jet_metrics_render(out, &host, b, arr->len);
            answer(a, 200, "text/plain; version=0.0.4; charset=utf-8", g_string_free(out, FALSE));
            return;
        }
        char *json = NULL;
        if (jet_ops_readiness(b, arr->len, &json))
            answer(a, 200, "text/plain", g_strdup("ready\n"));
        else
            answer(a, 503, "application/json", json);
        return;
    }
    answer(a, 404, "text/plain", g_strdup("not found: try /metrics, /healthz or /readyz\n"));
}

JetOpsHttp *jet_ops_http_start(const char *listen, guint64 idle_ms, JetOpsCollectFn fn, gpointer data,
                               GError **error)
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
    g_autoptr(GInetAddress) ia = g_inet_address_new_from_string(addr);
    g_autoptr(GSocketAddress) sa = g_inet_socket_address_new(ia, port);
    g_autoptr(GError) local = NULL;
    h->listener = jet_http_listen(sa, idle_ms, serve, h, &local);
    if (h->listener == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "metrics_listen %s: %s", listen, local->message);
        jet_ops_http_free(h);
        return NULL;
    }
    g_autoptr(GSocketAddress) bound = jet_http_listener_address(h->listener);
    GInetSocketAddress *isa = G_INET_SOCKET_ADDRESS(bound);
    g_autofree char *host = g_inet_address_to_string(g_inet_socket_address_get_address(isa));
    gboolean v6 = strchr(host, ':') != NULL;
    jet_log(JET_LOG_INFO, NULL, "metrics-listening", "serving /metrics, /healthz and /readyz at http://%s%s%s:%u",
            v6 ? "[" : "", host, v6 ? "]" : "", (guint)g_inet_socket_address_get_port(isa));
    return h;
}

void jet_ops_http_free(JetOpsHttp *h)
{
    if (h == NULL)
        return;
    jet_http_listener_free(h->listener);
    g_free(h);
}
