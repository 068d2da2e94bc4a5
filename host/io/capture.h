/* Capture-then-ack (docs/dead-letters.md): a message the
 * host gives up on is published to its binding's dead-letter stream with its
 * provenance, the pub-ack is awaited, and only then is the original acked,
 * with confirmation.  Nothing here decides *whether* to capture (settle.h
 * does) or logs outcomes (the engine does); these are the four steps:
 *
 *   jet_dlq_stream_ensure   the DLQ stream exists and covers the subject
 *                           (dlq_stream.h)
 *   jet_capture_build       the DLQ message: payload, headers, provenance
 *                           (the header list: dlq_record.h, pure)
 *   jet_capture_publish     publish and wait for the pub-ack
 *   jet_ack_confirmed       +ACK as a request: did the server receive it?
 *
 * The header names are a contract (dlq_record.h): docs/dead-letters.md lists
 * them. */
#ifndef JET_CAPTURE_H
#define JET_CAPTURE_H

#include <glib.h>
#include <nats/nats.h>

#include "config.h"
#include "hdr_block.h"
#include "provenance.h"
#include "settle.h"

#include "dlq_record.h"
#include "dlq_stream.h"

/* --- building and publishing ---------------------------------------------- */

/* The DLQ message for one capture, to dlq_subject, its header block
 * written by the host (hdr_block.h) and sent byte for byte (nats_raw.h):
 *   Nats-Msg-Id (jet_capture_msg_id; absent when stream or seq is unknown),
 *     first, so that no later line can hide it from the server;
 *   the original headers (original: name/value pairs in block order, from
 *     jet_hdr_parse; renamed by the rule in dlq_record.h), in order, empty values kept;
 *   the provenance;
 *   Jethost-Dropped-Headers, when anything could not travel: each defect of
 *     the original block (defects: JetHdrDefect, may be NULL) and each pair
 *     the writer would refuse, with why.
 * The payload (data, len) is never truncated.
 *
 * max_payload: the server's (natsConnection_GetMaxPayload) or
 * jet_capture_max_payload(); <= 0 means unknown (only the 64 KiB header
 * limit applies).  When headers + payload exceed it, or the header block
 * exceeds 64 KiB, the original headers are left out and listed by name (a
 * bare name in the list means "did not fit"; JetCaptureBuild.dropped).  When even the payload with the provenance does not fit:
 * NULL with JET_CAPTURE_ERROR_TOO_LARGE (the outcome is Stranded with cause
 * too-large).  result may be NULL. */
natsMsg *jet_capture_build(const char *dlq_subject, const char *data, int len, const GPtrArray *original,
                           const GArray *defects, const JetCaptureFacts *f, gint64 max_payload,
                           JetCaptureBuild *result, GError **error);

/* Every header value of a message built with natsMsgHeader_* (nats.c's key
 * order), name and value alternating, g_strdup'd.  Not for received
 * messages: nats.c mis-reads hostile blocks; those go through
 * jet_nats_raw_headers() and jet_hdr_parse(). */
GPtrArray *jet_capture_msg_headers(natsMsg *m);

/* The pub-ack of a capture. */
typedef struct {
    gboolean duplicate;   /* the stream already held a record under this Nats-Msg-Id ... */
    guint64 seq;          /* ... at this sequence (else: the new record's) */
    char stream[256];     /* the stream that stored it */
} JetCapturePubAck;

/* Publishes dlq_msg with js_PublishMsg and waits up to timeout_ms for the
 * pub-ack (ack may be NULL).  CAPTURED: a stream's pub-ack came; when it says
 * duplicate, verify it (jet_capture_verify_duplicate) before acking anything.
 * FAILED and TOO_LARGE set error with the reason (no responders: nothing
 * captures the subject, is the DLQ stream missing?; a timeout; the server's
 * refusal and its err code; a reply that is not a pub-ack).  dlq_msg is not
 * consumed: a caller may publish it again. */
JetCaptureOutcome jet_capture_publish(jsCtx *js, natsMsg *dlq_msg, gint64 timeout_ms, JetCapturePubAck *ack,
                                      GError **error);

/* A duplicate pub-ack checked against the record it names (read by
 * sequence, its header block parsed by the host): its Nats-Msg-Id, origin
 * stream, the stream's creation time, consumer and sequence must all be
 * this capture's (f, msg_id).  COLLISION sets *why_out (g_free). */
JetCaptureDup jet_capture_verify_duplicate(natsConnection *nc, const JetCapturePubAck *ack, const char *msg_id,
                                           const JetCaptureFacts *f, char **why_out, GError **error);

/* Sends +ACK to reply_subject as a request and waits up to timeout_ms for the
 * (empty) reply.  TRUE when it came: the server *received* the ack, which is
 * all a confirmation proves.  FALSE with the reason otherwise ("no
 * responders": the consumer is gone; a timeout): the outcome is then
 * Uncertain, resolved by checking whether the ack floor passed the sequence. */
gboolean jet_ack_confirmed(natsConnection *nc, const char *reply_subject, gint64 timeout_ms, GError **error);

/* --- one capture, stored and verified -------------------------------------- */

/* What a caller may do at the points where a capture can go wrong; every
 * member may be NULL.  publish_failed: a publish got no pub-ack (error says
 * why); TRUE publishes the same record once more (e.g. after re-creating a
 * deleted DLQ stream).  collision: a duplicate pub-ack named another
 * message's record (other_seq, why); the capture goes again under a distinct
 * id.  headers_dropped: the original headers did not fit (once). */
typedef struct {
    gboolean (*publish_failed)(gpointer data, const GError *error);
    void (*collision)(gpointer data, const char *msg_id, guint64 other_seq, const char *why);
    void (*headers_dropped)(gpointer data);
    gpointer data;
} JetCaptureHooks;

/* Where the record is, once stored. */
typedef struct {
    gboolean duplicate;   /* an earlier capture's record, read back and found to be this message's */
    guint64 seq;          /* the record's DLQ sequence */
    char stream[256];     /* the DLQ stream */
    guint collisions;     /* duplicate pub-acks that named another message's record */
} JetCaptureStored;

#define JET_CAPTURE_STORE_ATTEMPTS 3

/* Build, publish, and verify a duplicate pub-ack: the sequence every capture
 * needs before it may ack anything.  The record is built from the original
 * payload (data, len) and header block as parsed by the host (orig, may be
 * NULL) with the facts; after a collision facts->msg_id_after is set and the
 * capture goes again, at most JET_CAPTURE_STORE_ATTEMPTS times.  CAPTURED
 * only when this message's record is stored (out says where); FAILED and
 * TOO_LARGE set error.  Logs nothing: the hooks and out tell the caller. */
JetCaptureOutcome jet_capture_store(natsConnection *nc, jsCtx *js, const char *dlq_subject, const char *data,
                                    int len, const JetHdrParse *orig, JetCaptureFacts *facts, gint64 max_payload,
                                    gint64 timeout_ms, const JetCaptureHooks *hooks, JetCaptureStored *out,
                                    GError **error);

#endif
