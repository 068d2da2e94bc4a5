/* The binding's dead-letter stream (docs/dead-letters.md): making sure it
 * exists and covers the DLQ subject, and the size limit a capture must fit. */
#ifndef JET_DLQ_STREAM_H
#define JET_DLQ_STREAM_H

#include <glib.h>
#include <nats/nats.h>

#include "config.h"

/* The limit to give jet_capture_build: the server's max_payload, lowered to
 * the DLQ stream's max_msg_size when it sets one.  0 when unknown. */
gint64 jet_capture_max_payload(natsConnection *nc, jsCtx *js, const char *dlq_stream);

/* The binding's DLQ stream (b->dlq_stream) exists and its subjects cover
 * b->dlq_subject.  Managed mode creates it when missing: file storage,
 * limits retention with no limits, a 2 h duplicate window
 * (JET_DLQ_DUPLICATE_WINDOW_NS), subjects jethost.dlq.> when the DLQ subject
 * starts with jethost.dlq., else the subject itself.  An existing stream is
 * never reshaped, in either mode: one that does not cover the subject is an
 * error naming what to add.  With dlq_ttl, the stream must keep per-message
 * TTLs (allow_msg_ttl, nats-server 2.11+; created so in managed mode): a
 * stream or a server that does not is JET_ERROR_INVALID, a config error
 * naming the stream.  nc is js's connection (the host reads that setting
 * through the JetStream API itself). */
gboolean jet_dlq_stream_ensure(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, GError **error);

/* jet_dlq_stream_ensure up to `attempts` times (at least once), with the
 * backoff of setup_retry.h: a stream deleted and re-created by someone else
 * while the host creates it is refused for a moment (err 10049, 10058).
 * A config error (JET_ERROR_INVALID) is not asked again. */
gboolean jet_dlq_stream_ensure_retrying(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, guint attempts,
                                        GError **error);

#endif
