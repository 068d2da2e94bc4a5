/* Delivery metadata, parsed from the $JS.ACK reply subject of a JetStream
 * message: the engine settles by publishing to that subject, and reads the
 * stream sequence, delivery count and timestamp from it. */
#ifndef JET_ACK_SUBJECT_H
#define JET_ACK_SUBJECT_H

#include <glib.h>

typedef struct {
    /* Slices of the subject (not NUL-terminated); valid while it is. */
    const char *stream;
    gsize stream_len;
    const char *consumer;
    gsize consumer_len;
    guint64 delivered;         /* the delivery count, >= 1 */
    guint64 stream_seq;
    guint64 consumer_seq;
    gint64 timestamp_ns;       /* when the stream stored the message (unchanged on redelivery) */
    guint64 pending;           /* messages left for the consumer after this one */
    /* The JetStream domain of the 11/12-token form; NULL and 0 for the
     * 9-token form and for "_" (the server's "no domain"). */
    const char *domain;
    gsize domain_len;
} JetAckMeta;

/* Parses `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`
 * (9 tokens, 2.9.x) and the newer form with domain and account hash
 * (`$JS.ACK.<domain>.<acchash>.<stream>...`, 11 or 12 tokens).  Returns FALSE
 * for anything else: such a message is not a JetStream delivery.
 *
 * Refused: a NULL subject, another prefix (case matters, as in every NATS
 * subject), another token count (13 or more too, although nats.c 3.4.1's
 * js_getMetaData ignores tokens past the 11th), an empty token, a number
 * with anything but ASCII digits in it (no sign, no space) or above
 * G_MAXUINT64 (the timestamp: above G_MAXINT64), delivered == 0,
 * stream_seq == 0.  consumer_seq, timestamp and pending may be 0.
 * Allocates nothing; *out is written only on success. */
gboolean jet_ack_subject_parse(const char *subject, JetAckMeta *out);

#endif
