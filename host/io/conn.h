/* The host's one NATS connection: SendAsap on (one outstanding pull is
 * otherwise capped at ~1,000 round trips/s by nats.c's 1 ms flusher),
 * bounded first-connect attempts of our own, then reconnect for ever. */
#ifndef JET_CONN_H
#define JET_CONN_H

#include <glib.h>
#include <nats/nats.h>
#include "config.h"

typedef struct JetConn JetConn;

/* Connects to urls (NULL-terminated) with the credentials of host (may be
 * NULL).  attempts: first-connect attempts, 100 ms apart, doubling to 5 s. */
JetConn *jet_conn_open(const char *const *urls, const JetHostConfig *host, guint attempts,
                       GError **error);
/* Connects as `jethost run` does with cfg: all its URLs (or the running
 * embedded server's), its credentials, TLS, API prefix and connect_attempts.
 * server, when given, replaces only the URLs.  cfg NULL: server, $NATS_URL
 * or nats://127.0.0.1:4222, without credentials.  For the commands that
 * talk to the server for an operator (pub, dlq). */
JetConn *jet_conn_open_config(const JetConfig *cfg, const char *server, GError **error);
void jet_conn_close(JetConn *c);

natsConnection *jet_conn_nats(JetConn *c);
jsCtx *jet_conn_js(JetConn *c);

/* Bumped on every reconnect: pulls issued before it were voided by the
 * server, so an engine that sees it change re-pulls at once. */
guint jet_conn_generation(JetConn *c);
gboolean jet_conn_is_connected(JetConn *c);

/* A burst of small publishes (acks): between begin and end the socket is
 * corked, so the burst leaves as a few segments (sock_cork.h).  Any
 * thread; bursts may overlap. */
void jet_conn_burst_begin(JetConn *c);
void jet_conn_burst_end(JetConn *c);

/* Registers a function called (on nats.c's thread) after each reconnect. */
void jet_conn_on_reconnect(JetConn *c, void (*fn)(gpointer), gpointer data);
/* Unregisters it (an engine freed while the connection lives on: an
 * exclusive binding's engine is made again at each claim). */
void jet_conn_off_reconnect(JetConn *c, void (*fn)(gpointer), gpointer data);

/* The JetStream API prefix, without a final dot: "$JS.API", "$JS.<domain>.API"
 * for [host] js_domain, or js_api_prefix (docs/configuration.md, "JetStream
 * domains").  Every request to the JetStream API is made under it: the
 * connection's jsCtx and every hand-built "<prefix>.STREAM..." subject. */
#define JET_JS_DEFAULT_API_PREFIX "$JS.API"
char *jet_conn_api_prefix_for(const JetHostConfig *host);   /* host may be NULL */
const char *jet_conn_api_prefix(const JetConn *c);
/* The prefix of the JetConn that owns nc; the default for a connection
 * that no JetConn made. */
const char *jet_conn_nats_api_prefix(natsConnection *nc);

/* A stream (or a bucket's stream) the host would have created with `want`
 * replicas ([host] replicas) but found: it is used as it is, since its
 * replicas, placement and storage are the operator's to choose
 * (docs/reliability.md).  Logs at info, once per call, when its replica
 * count differs; binding may be NULL. */
void jet_stream_replicas_note(const char *binding, const char *what, const jsStreamInfo *si, guint want);

/* Turns a natsStatus and the library's last error text into a message. */
char *jet_nats_error(natsStatus s);

#endif
