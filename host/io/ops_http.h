/* The operator's HTTP endpoints on the daemon's main loop: /metrics (the
 * Prometheus text exposition, metrics_text.h), /healthz and /readyz
 * (docs/operations.md). */
#ifndef JET_OPS_HTTP_H
#define JET_OPS_HTTP_H

#include <glib.h>
#include "metrics_text.h"

typedef struct JetOpsHttp JetOpsHttp;

/* Fills the figures of every binding (n of them, in config order) and of
 * the host; called on the main loop for each request. */
typedef void (*JetOpsCollectFn)(GArray *bindings, JetMetricsHost *host, gpointer data);

/* Listens on listen ("ADDR:PORT", config.h jet_config_listen_parse) on the
 * thread-default main context (http_listen.h: its limits; idle_ms is
 * [host] metrics_idle_timeout) and logs event=metrics-listening with the
 * address bound (the port chosen, for port 0). */
JetOpsHttp *jet_ops_http_start(const char *listen, guint64 idle_ms, JetOpsCollectFn collect, gpointer data,
                               GError **error);
void jet_ops_http_free(JetOpsHttp *h);

/* The readiness answer for these bindings: TRUE when every one is ready,
 * else FALSE with *json set (caller frees) to
 * {"ready":false,"bindings":[{"binding":NAME,"reason":WHY},...]}. */
gboolean jet_ops_readiness(const JetMetricsBinding *b, gsize n, char **json);

#endif
