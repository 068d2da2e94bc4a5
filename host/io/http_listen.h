/* A small HTTP/1.1 listener on the thread-default main context, with every
 * resource a client can hold bounded (docs/operations.md, "Limits"): heads
 * of at most JET_HTTP_HEAD_MAX bytes (http_head.h), bodies never read, a
 * cap on open connections that closes the oldest for a new one, and a
 * deadline on every connection. */
#ifndef JET_HTTP_LISTEN_H
#define JET_HTTP_LISTEN_H

#include <gio/gio.h>

/* Connections open at once, at most; also at most a quarter of the
 * descriptor limit (RLIMIT_NOFILE) the process started with. */
#define JET_HTTP_MAX_CONNS 64

typedef struct JetHttpListener JetHttpListener;

/* An answer: status, content type and body (owned by the listener once
 * set, freed with g_free). */
typedef struct {
    guint status;
    const char *type;
    char *body;
} JetHttpAnswer;

/* Answers a GET or HEAD of path (the query left out). */
typedef void (*JetHttpServeFn)(const char *path, JetHttpAnswer *answer, gpointer data);

/* Listens on addr (bound as given: port 0 takes a free one).  idle_ms: how
 * long a connection may take to send a whole head, after it opens or after
 * the last answer, before it is closed. */
JetHttpListener *jet_http_listen(GSocketAddress *addr, guint64 idle_ms, JetHttpServeFn serve, gpointer data,
                                 GError **error);
/* The address bound. */
GSocketAddress *jet_http_listener_address(JetHttpListener *l);
/* Closes the listener and every connection. */
void jet_http_listener_free(JetHttpListener *l);

#endif
