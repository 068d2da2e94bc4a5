/* One stored message read by stream sequence (<API prefix>.STREAM.MSG.GET, conn.h), with
 * its header block as the server stored it (the reply carries it base64
 * encoded).  nats.c's js_GetMsg would parse that block by its own rules;
 * this keeps the bytes.  Used to verify a duplicate capture, by `jethost
 * dlq`, and by the tests to read the server's own view of a record. */
#ifndef JET_STREAM_MSG_H
#define JET_STREAM_MSG_H

#include <glib.h>
#include <nats/nats.h>

typedef struct {
    char *subject;
    guint64 seq;
    gint64 time_ns;      /* the stream's timestamp; 0 when the reply had none */
    GBytes *hdrs;        /* the stored header block; NULL when none */
    GBytes *data;        /* the payload; never NULL (may be empty) */
} JetStoredMsg;

void jet_stored_msg_free(JetStoredMsg *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetStoredMsg, jet_stored_msg_free)

typedef enum {
    JET_STORED_FOUND,
    JET_STORED_ABSENT,   /* no message at that sequence (deleted, or past the end) */
    JET_STORED_ERROR,    /* no answer, a refusal, or a reply that does not parse: error set */
} JetStoredStatus;

/* Reads stream:seq, waiting up to timeout_ms (<= 0: 5 s).  *out is set only
 * when FOUND. */
JetStoredStatus jet_stream_msg_get(natsConnection *nc, const char *stream, guint64 seq, gint64 timeout_ms,
                                   JetStoredMsg **out, GError **error);

/* The first message of stream at or after seq whose subject matches
 * subject (a filter; NULL: any), as jet_stream_msg_get; ABSENT when there
 * is none. */
JetStoredStatus jet_stream_msg_next(natsConnection *nc, const char *stream, guint64 seq, const char *subject,
                                    gint64 timeout_ms, JetStoredMsg **out, GError **error);

#endif
