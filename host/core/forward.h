/* Publishes a plugin queues while it handles a message, sent by the host
 * before it acks the message (docs/forwarding.md): what a queued publish
 * is, the rules a plugin's call must pass, and the Nats-Msg-Id that makes a
 * redelivery publish nothing twice. */
#ifndef JET_FORWARD_H
#define JET_FORWARD_H

#include <glib.h>

/* Limits per delivery (plugin.h, msg_publish). */
#define JET_PUBLISH_MAX_COUNT 256u
#define JET_PUBLISH_MAX_BYTES (8u * 1024u * 1024u)
#define JET_PUBLISH_MAX_HEADERS 64u

/* One queued publish; owns everything. */
typedef struct {
    char *subject;
    GPtrArray *headers;   /* name/value pairs, g_strdup'd; the plugin's, in its order */
    GBytes *data;
} JetPublish;

void jet_publish_free(JetPublish *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetPublish, jet_publish_free)

/* The queue of one delivery. */
typedef struct {
    GPtrArray *items;     /* JetPublish*, NULL until the first */
    gsize bytes;          /* payloads and headers queued */
    char *refused;        /* the first call the host refused, why; NULL when none */
} JetPublishQueue;

void jet_publish_queue_clear(JetPublishQueue *q);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(JetPublishQueue, jet_publish_queue_clear)

/* Checks and queues one publish (plugin.h, msg_publish): the subject
 * (jet_subject_problem, reserved namespaces only with allow_reserved), the
 * headers (name, value, ..., NULL: tokens, values that survive a header
 * block, no Nats-* name, at most JET_PUBLISH_MAX_HEADERS), and the limits.
 * Returns JET_OK, or JET_EINVAL / JET_ELIMIT with the first refusal kept in
 * q->refused (the delivery then cannot be an ack). */
int jet_publish_queue_add(JetPublishQueue *q, const char *subject, const char *const *headers,
                          const void *data, gsize len, gboolean allow_reserved);

/* The hop count, in every publish the host makes for a plugin: how many
 * host publishes the message came through.  A delivery that carries
 * max_hops is dead-lettered unhandled (settle.h, docs/forwarding.md). */
#define JET_HOPS_HEADER "Jethost-Hops"

/* A delivery's hop count: the first Jethost-Hops of headers (name/value
 * pairs) when it is a decimal number without sign or padding, capped at
 * G_MAXUINT32; 0 when there is none or it is not a number (a hop count
 * is the host's, and no host writes another). */
guint32 jet_hops_read(const GPtrArray *headers);

/* The headers publish p goes out with (name/value pairs, g_strdup'd, in
 * this order): Nats-Msg-Id msg_id, Jethost-Hops hops_in + 1, then the
 * plugin's own in its order, any Jethost-Hops of theirs left out (the
 * count is the host's). */
GPtrArray *jet_publish_wire_headers(const JetPublish *p, const char *msg_id, guint32 hops_in);

/* jethost-pub:<stream>.<consumer>:<seq>:<stream created ns>:<index>, the
 * id of publish `index` (0-based) made while handling that message: the
 * same on every delivery of it, distinct from any other message's or
 * publish's (read from the right: the last three fields are numbers, and a
 * stream name holds no '.'), and from one life of a stream name to the
 * next. */
char *jet_publish_msg_id(const char *stream, const char *consumer, guint64 seq, gint64 stream_created_ns,
                         guint index);

#endif
