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
void jet_conn_close(JetConn *c);

natsConnection *jet_conn_nats(JetConn *c);
jsCtx *jet_conn_js(JetConn *c);

/* Bumped on every reconnect: pulls issued before it were voided by the
 * server, so an engine that sees it change re-pulls at once. */
guint jet_conn_generation(JetConn *c);
gboolean jet_conn_is_connected(JetConn *c);

/* Registers a function called (on nats.c's thread) after each reconnect. */
void jet_conn_on_reconnect(JetConn *c, void (*fn)(gpointer), gpointer data);

/* Turns a natsStatus and the library's last error text into a message. */
char *jet_nats_error(natsStatus s);

#endif
