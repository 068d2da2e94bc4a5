/* Makes a binding's stream and durable pull consumer exist and fit
 * (manage = create), or checks that they do (manage = bind). */
#ifndef JET_CONSUMER_SETUP_H
#define JET_CONSUMER_SETUP_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <nats/nats.h>
#include "config.h"
#include "consumer_put.h"


/* What the engine needs to know about the consumer it pulls from. */
typedef struct {
    gint64 ack_wait_ms;
    gint64 max_deliver;        /* <= 0: unlimited */
    gint64 max_ack_pending;
    guint64 ack_floor_stream;  /* as observed at setup */
    gint64 num_ack_pending;    /* delivered, not acked, at setup: held by a run that may have died */
    guint64 delivered_stream;  /* the last stream seq delivered, at setup */
    gint64 stream_max_age_ms;  /* 0 = unlimited */
    gint64 stream_created_ns;  /* the stream's life: its creation time (0: not read) */
    gint64 consumer_created_ns;   /* the consumer's creation time: which one the floor is of */
    /* The consumer's priority group (nats-server 2.11+; "" when it names
     * none): every pull carries it.  pinned: its policy is pinned_client,
     * so the server delivers only to the pull that carries the pin it gave
     * (docs/exclusive.md, "The server's fence"). */
    char pin_group[JET_PIN_GROUP_MAX + 1];
    gboolean pinned;
} JetConsumerFacts;

/* One attempt.  On success fills facts (may be NULL).  A consumer that has
 * to be created starts at start_seq (0 or 1: the whole stream); recovery
 * passes the last ack floor observed + 1, never the start of the stream. */
gboolean jet_consumer_ensure(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, guint64 start_seq,
                             JetConsumerFacts *facts, GError **error);

/* The consumer's priority group and whether it is pinned, read from the
 * server (nats.c does not carry them): FALSE when no answer came (group
 * and pinned untouched). */
gboolean jet_consumer_priority(natsConnection *nc, const char *stream, const char *consumer,
                               char group[JET_PIN_GROUP_MAX + 1], gboolean *pinned);

/* The binding's stream exists; with subjects set (manage = create) it is
 * created when missing.  An existing stream is never reshaped. */
gboolean jet_stream_ensure(jsCtx *js, const JetBindingConfig *b, GError **error);

/* Whether the consumer exists: 1 yes, 0 no (the server said so), -1 the
 * server could not say (it is unreachable, or timed out).  With 1, its ack
 * floor and creation time (either pointer may be NULL). */
int jet_consumer_exists(jsCtx *js, const JetBindingConfig *b, guint64 *ack_floor, gint64 *created_ns);

/* Whether an existing consumer is one jethost can use: a pull consumer with
 * explicit acks and no server BackOff.  config: the "config" member of its
 * info (consumer_put.h).  FALSE with JET_ERROR_INVALID (a
 * config error, never retried) naming the binding. */
gboolean jet_consumer_check_fits(const JetBindingConfig *b, JsonObject *config, GError **error);

/* Whether a consumer has nothing left to deliver (its NumPending, asked of
 * the server; an answer that does not come counts as something left). */
gboolean jet_consumer_nothing_pending(jsCtx *js, const char *stream, const char *consumer);

/* Whether the binding's filter_subject (none: TRUE) overlaps one of the
 * stream's subjects (subject_overlap.h); a stream without subjects cannot
 * be checked: TRUE.  FALSE with JET_ERROR_INVALID (a config error) naming
 * the binding, the filter and the stream's subjects. */
gboolean jet_filter_check(const JetBindingConfig *b, const jsStreamInfo *si, GError **error);

/* Retries jet_consumer_ensure with backoff from 100 ms doubling to 5 s:
 * `attempts` times (0 = until *stop becomes non-zero); with attempts > 0, a
 * consumer that does not fit (JET_ERROR_INVALID) is not retried.
 * start_seq > 1 is a sequence of the stream's life life_ns (its creation
 * time; 0: not known, start_seq taken as it is): when an attempt finds the
 * stream gone, or created at another time, it was deleted and created
 * again, its sequences began again at 1, and a consumer made then starts
 * at the new life's beginning (docs/engine.md, "A stream created again"). */
gboolean jet_consumer_ensure_retrying(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, guint64 start_seq,
                                      gint64 life_ns, guint attempts, const gint *stop, JetConsumerFacts *facts,
                                      GError **error);

#endif
