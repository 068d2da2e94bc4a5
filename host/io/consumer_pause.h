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

/* Pauses stream/consumer for every client for pause_ms from now by the
 * server's clock (its consumer info's time; the host's when it gives
 * none), so a host whose clock is off pauses for the time asked all the
 * same.  TRUE when the server says it is paused, with the end it gave in
 * *until_ns (Unix ns, UTC; may be NULL); FALSE with the server's reason
 * (JET_ERROR_SERVER) otherwise. */
gboolean jet_consumer_pause(natsConnection *nc, const char *stream, const char *consumer, guint64 pause_ms,
                            gint64 *until_ns, GError **error);

/* When the consumer's pause ends (Unix ns), or 0: not paused, paused until
 * a time already past, a server without the pause, or no answer. */
gint64 jet_consumer_paused_until(natsConnection *nc, const char *stream, const char *consumer);

#endif
