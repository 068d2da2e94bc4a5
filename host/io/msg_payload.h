/* Every payload the host reads from nats.c goes through here, so that an
 * empty one is "" with length 0 on every nats.c version (payload.h). */
#ifndef JET_MSG_PAYLOAD_H
#define JET_MSG_PAYLOAD_H

#include <glib.h>
#include <nats/nats.h>

/* A message's payload, borrowed for the message's lifetime; never NULL. */
const char *jet_msg_payload(natsMsg *m, gsize *len);

/* A KV entry's value, borrowed for the entry's lifetime; never NULL (a
 * delete marker's is ""). */
const char *jet_kv_value(kvEntry *e, gsize *len);

#endif
