/* A payload as the host passes it on: never NULL.  nats.c 3.4 hands out ""
 * for an empty payload, 3.14 NULL (docs/testing.md, "Other nats-server and
 * nats.c versions"); a handler, a parser or a record must not see the
 * difference.  Pure: host/io's accessors (msg_payload.h) map through it. */
#ifndef JET_PAYLOAD_H
#define JET_PAYLOAD_H

#include <glib.h>

/* data, or "" when data is NULL or len is not positive; *out_len (never
 * NULL) is len, or 0 then. */
const char *jet_payload_or_empty(const char *data, int len, gsize *out_len);

#endif
