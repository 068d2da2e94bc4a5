/* The host's own request that creates or updates a binding's durable pull
 * consumer ($JS.API.CONSUMER.CREATE.<stream>.<consumer>), and the reading
 * of the consumer it starts from (docs/engine.md, "Start-up").
 *
 * nats.c's calls are not used for this: the request says what it means
 * (action create or update, nats-server 2.10+), an update changes only the
 * fields the binding owns and keeps the rest of what is on the server
 * (where the consumer starts, fields nats.c does not know), and the
 * priority-group fields of newer servers can be set. */
#ifndef JET_CONSUMER_PUT_H
#define JET_CONSUMER_PUT_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <nats/nats.h>

#include "config.h"

/* The longest priority group name the server accepts. */
#define JET_PIN_GROUP_MAX 16
/* The group of the consumers jethost pins for its exclusive bindings. */
#define JET_PIN_GROUP "jethost"

/* The consumer's info as the server wrote it (CONSUMER.INFO; a new
 * reference: json_object_unref), or NULL: with *absent TRUE when the
 * server says the consumer (or its stream) does not exist, else with the
 * reason in error (no answer, or another refusal). */
JsonObject *jet_consumer_info_json(natsConnection *nc, const JetBindingConfig *b, gboolean *absent,
                                   GError **error);

/* The "config" member of a consumer info or a create reply (borrowed), or
 * NULL. */
JsonObject *jet_consumer_info_config(JsonObject *info);

/* Creates the binding's consumer (current NULL) or updates it (current:
 * the "config" of its info as read just before, borrowed).
 *
 * A new consumer starts at stream seq start_seq (0 or 1: the whole
 * stream).  An update sets the fields the binding owns (ack policy and
 * wait, MaxDeliver, MaxAckPending, the filter, the priority group) and
 * sends every other field back as it was read.  pinned makes the consumer
 * a pinned priority group (nats-server 2.11+), else any group is removed.
 *
 * On nats-server 2.10+ an update of a consumer deleted since it was read
 * is refused (err 10149), never made a new consumer, and a create that
 * finds a consumer made meanwhile with another config is refused (10148):
 * the caller reads again.  nats-server 2.9 does neither.
 *
 * Returns the server's reply, the consumer's info as it now is (a new
 * reference), or NULL with JET_ERROR_SERVER naming the binding, the action
 * and the server's reason and error code. */
JsonObject *jet_consumer_put(natsConnection *nc, const JetBindingConfig *b, JsonObject *current, guint64 start_seq,
                             gboolean pinned, GError **error);

#endif
