/* Makes a binding's stream and durable pull consumer exist and fit
 * (manage = create), or checks that they do (manage = bind). */
#ifndef JET_CONSUMER_SETUP_H
#define JET_CONSUMER_SETUP_H

#include <glib.h>
#include <nats/nats.h>
#include "config.h"

/* What the engine needs to know about the consumer it pulls from. */
typedef struct {
    gint64 ack_wait_ms;
    gint64 max_deliver;        /* <= 0: unlimited */
    gint64 max_ack_pending;
    guint64 ack_floor_stream;  /* as observed at setup */
    gint64 stream_max_age_ms;  /* 0 = unlimited */
} JetConsumerFacts;

/* One attempt.  On success fills facts (may be NULL). */
gboolean jet_consumer_ensure(jsCtx *js, const JetBindingConfig *b, JetConsumerFacts *facts,
                             GError **error);

/* Retries jet_consumer_ensure with backoff from 100 ms doubling to 5 s:
 * `attempts` times (0 = until *stop becomes non-zero). */
gboolean jet_consumer_ensure_retrying(jsCtx *js, const JetBindingConfig *b, guint attempts,
                                      const gint *stop, JetConsumerFacts *facts, GError **error);

#endif
