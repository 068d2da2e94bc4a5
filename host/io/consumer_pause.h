/* A consumer's pause on the server: nats-server 2.11 and later hold every
 * client's deliveries of a paused consumer until a time, acks still taken
 * (docs/floor-monitor.md, "The pause"). */
#ifndef JET_CONSUMER_PAUSE_H
#define JET_CONSUMER_PAUSE_H

#include <glib.h>
#include <nats/nats.h>

/* Whether the server behind nc has the consumer pause (API level 1:
 * nats-server 2.11).  FALSE also when that cannot be learned. */
gboolean jet_consumer_pause_supported(natsConnection *nc);

/* Pauses stream/consumer until until_ns (Unix time, UTC) for every client.
 * TRUE when the server says it is paused until then; FALSE with the
 * server's reason (JET_ERROR_SERVER) otherwise. */
gboolean jet_consumer_pause(natsConnection *nc, const char *stream, const char *consumer, gint64 until_ns,
                            GError **error);

/* When the consumer's pause ends (Unix ns), or 0: not paused, paused until
 * a time already past, a server without the pause, or no answer. */
gint64 jet_consumer_paused_until(natsConnection *nc, const char *stream, const char *consumer);

#endif
