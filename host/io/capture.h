/* Capture-then-ack (docs/dead-letters.md): a message the
 * host gives up on is published to its binding's dead-letter stream with its
 * provenance, the pub-ack is awaited, and only then is the original acked,
 * with confirmation.  Nothing here decides *whether* to capture (settle.h
 * does) or logs outcomes (the engine does); these are the four steps:
 *
 *   jet_dlq_stream_ensure   the DLQ stream exists and covers the subject
 *   jet_capture_build       the DLQ message: payload, headers, provenance
 *   jet_capture_publish     publish and wait for the pub-ack
 *   jet_ack_confirmed       +ACK as a request: did the server receive it?
 *
 * The header names are a contract: docs/dead-letters.md lists them. */
#ifndef JET_CAPTURE_H
#define JET_CAPTURE_H

#include <glib.h>
#include <nats/nats.h>

#include "config.h"
#include "hdr_block.h"
#include "provenance.h"
#include "settle.h"

/* --- the contract: header names ------------------------------------------- */

/* The provenance names are provenance.h's (one list). */
#define JET_HDR_ORIGIN_STREAM    JET_PROV_STREAM           /* "Jethost-Origin-Stream" */
#define JET_HDR_ORIGIN_STREAM_CREATED JET_PROV_STREAM_CREATED /* "Jethost-Origin-Stream-Created" */
#define JET_HDR_ORIGIN_SUBJECT   JET_PROV_SUBJECT          /* "Jethost-Origin-Subject" */
#define JET_HDR_ORIGIN_SEQ       JET_PROV_SEQ              /* "Jethost-Origin-Seq" */
#define JET_HDR_ORIGIN_CONSUMER  JET_PROV_CONSUMER         /* "Jethost-Origin-Consumer" */
#define JET_HDR_ORIGIN_REPLY     "Jethost-Origin-Reply"    /* only when facts carry it (malformed) */
#define JET_HDR_DELIVERIES       JET_PROV_DELIVERIES       /* "Jethost-Deliveries" */
#define JET_HDR_FAILURES         JET_PROV_FAILURES         /* "Jethost-Failures" */
#define JET_HDR_POSTPONES        JET_PROV_POSTPONES        /* "Jethost-Postpones" */
#define JET_HDR_CAUSE            JET_PROV_CAUSE            /* "Jethost-Cause" */
#define JET_HDR_REASON           JET_PROV_REASON           /* "Jethost-Reason" */
#define JET_HDR_FIRST_FAILURE    JET_PROV_FIRST_FAILURE    /* "Jethost-First-Failure" */
#define JET_HDR_ENQUEUED         JET_PROV_ENQUEUED         /* "Jethost-Enqueued" */
#define JET_HDR_CAPTURED         JET_PROV_CAPTURED         /* "Jethost-Captured" */
#define JET_HDR_PLUGIN           JET_PROV_PLUGIN           /* "Jethost-Plugin" */
#define JET_HDR_PLUGIN_VERSION   JET_PROV_PLUGIN_VERSION   /* "Jethost-Plugin-Version" */
#define JET_HDR_HOST             JET_PROV_HOST             /* "Jethost-Host" */
#define JET_HDR_BINDING          JET_PROV_BINDING          /* "Jethost-Binding" */
#define JET_HDR_DROPPED_HEADERS  "Jethost-Dropped-Headers"

/* An original header named Nats-<rest> travels as Jethost-Orig-Nats_<rest>
 * (the '-' after "Nats" becomes '_', so no server-read name survives even as
 * a substring: see docs/dead-letters.md); one named Jethost-<rest> travels as
 * Jethost-Orig-Jethost-<rest>.  Both prefixes are matched case-insensitively;
 * every other header is copied as it is. */
#define JET_HDR_ORIG_PREFIX      JET_PROV_ORIG_PREFIX      /* "Jethost-Orig-" */

/* The DLQ stream jethost creates in managed mode (jet_dlq_stream_ensure). */
#define JET_DLQ_DEFAULT_STREAM   "JETHOST_DLQ"
#define JET_DLQ_SUBJECT_PREFIX   "jethost.dlq."
#define JET_DLQ_DUPLICATE_WINDOW_NS (G_GINT64_CONSTANT(2) * 3600 * G_GINT64_CONSTANT(1000000000))

/* JetStream refuses a header block over 64 KiB whatever max_payload says
 * (err 10097, checked live on 2.9.10: 65535 bytes accepted, 65536 refused). */
#define JET_CAPTURE_MAX_HEADER_BYTES 65535
/* Jethost-Dropped-Headers lists names up to this many bytes, then "+N more". */
#define JET_CAPTURE_MAX_DROPPED_LIST 4096

#define JET_CAPTURE_ERROR (jet_capture_error_quark())
GQuark jet_capture_error_quark(void);

typedef enum {
    JET_CAPTURE_ERROR_TOO_LARGE,   /* the payload with its provenance exceeds the limits */
    JET_CAPTURE_ERROR_INVALID,     /* bad arguments (no DLQ subject, ...) */
} JetCaptureError;

/* What the DLQ record says about where the message came from.  Strings are
 * borrowed; NULL or "" leaves its header out, as does a false has_* or a zero
 * stream_seq (a malformed delivery may know little). */
typedef struct {
    const char *stream;            /* origin stream */
    gint64 stream_created_ns;      /* its creation time (stream info), telling one life of a
                                      stream name from the next; 0 = unknown */
    const char *consumer;
    const char *subject;           /* the message's own subject */
    const char *reply;             /* the raw reply subject; set it for cause malformed */
    guint64 stream_seq;            /* 0 = unknown */
    guint32 deliveries;
    guint32 failures;
    guint32 postpones;
    JetCaptureCause cause;
    const char *reason;
    gboolean has_first_failure;
    gint64 first_failure_ns;       /* unix ns */
    gboolean has_enqueued;
    gint64 enqueued_ns;            /* the stream's timestamp of the message */
    gint64 captured_ns;            /* the host's clock when it built the capture */
    const char *plugin_name;
    const char *plugin_version;
    const char *host;              /* JetHostConfig.name */
    const char *binding;
    guint64 msg_id_after;          /* 0; else the DLQ seq of a record another message's capture
                                      holds under this id: the id becomes distinct (":after-N") */
} JetCaptureFacts;

/* What jet_capture_build did; clear with jet_capture_build_clear. */
typedef struct {
    gboolean headers_dropped;      /* the original headers did not fit and were left out */
    char **dropped;                /* their names as they would have been carried (NULL-terminated) */
    char *msg_id;                  /* the Nats-Msg-Id set, or NULL when stream or seq was unknown */
    guint defects;                 /* lines of the original block (or pairs) that could not travel,
                                      listed in Jethost-Dropped-Headers with why */
    gint64 header_bytes;           /* the encoded header block */
    gint64 total_bytes;            /* headers + payload, as the server counts them */
} JetCaptureBuild;

void jet_capture_build_clear(JetCaptureBuild *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(JetCaptureBuild, jet_capture_build_clear)

/* The DLQ message for one capture, to dlq_subject, its header block
 * written by the host (hdr_block.h) and sent byte for byte (nats_raw.h):
 *   Nats-Msg-Id (jet_capture_msg_id; absent when stream or seq is unknown),
 *     first, so that no later line can hide it from the server;
 *   the original headers (original: name/value pairs in block order, from
 *     jet_hdr_parse; renamed by the rule above), in order, empty values kept;
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

/* The header list of that DLQ message, in block order: name and value
 * alternating, g_strdup'd (free with g_ptr_array_unref); len is the
 * payload's length.  jet_capture_build writes it; the mock host shows it,
 * so the record it previews is the one the daemon writes. */
GPtrArray *jet_capture_headers(int len, const GPtrArray *original, const GArray *defects, const JetCaptureFacts *f,
                               gint64 max_payload, JetCaptureBuild *result, GError **error);

/* jethost:<stream>.<consumer>:<seq>[:<stream created ns>][:after-<N>], or
 * NULL when the stream or the sequence is unknown.  Stream and consumer
 * names cannot hold '.', so it is unambiguous; the creation time makes it
 * unique across a stream deleted and re-created under the same name. */
char *jet_capture_msg_id(const JetCaptureFacts *f);

/* Every header value of a message built with natsMsgHeader_* (nats.c's key
 * order), name and value alternating, g_strdup'd.  Not for received
 * messages: nats.c mis-reads hostile blocks; those go through
 * jet_nats_raw_headers() and jet_hdr_parse(). */
GPtrArray *jet_capture_msg_headers(natsMsg *m);

/* The facts that follow from the settlement of a captured delivery, shared by
 * the executor and the mock host: failures (this delivery's included when it
 * was one: a->failure_number), cause and reason (borrowed from a), the first
 * failure (failures_before's, or now_ns when this delivery is the first), and
 * the capture time now_ns.  The other members are the caller's. */
void jet_capture_facts_settled(JetCaptureFacts *f, const JetSettleAction *a, guint32 failures_before,
                               gboolean has_first_failure, gint64 first_failure_ns, gint64 now_ns);

/* The limit to give jet_capture_build: the server's max_payload, lowered to
 * the DLQ stream's max_msg_size when it sets one.  0 when unknown. */
gint64 jet_capture_max_payload(natsConnection *nc, jsCtx *js, const char *dlq_stream);

typedef enum {
    JET_CAPTURE_CAPTURED = 0,   /* the pub-ack arrived (possibly as a duplicate): ack the original */
    JET_CAPTURE_FAILED,         /* no pub-ack, or refused: keep the original */
    JET_CAPTURE_TOO_LARGE,      /* refused for size: keep it; Stranded too-large */
} JetCaptureOutcome;

const char *jet_capture_outcome_name(JetCaptureOutcome o);

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

typedef enum {
    JET_CAPTURE_DUP_SAME,        /* the record is this capture's: already captured */
    JET_CAPTURE_DUP_COLLISION,   /* another message's record holds the id (or it was removed) */
    JET_CAPTURE_DUP_UNVERIFIED,  /* the record could not be read: error set */
} JetCaptureDup;

const char *jet_capture_dup_name(JetCaptureDup d);

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

/* The binding's DLQ stream (b->dlq_stream) exists and its subjects cover
 * b->dlq_subject.  Managed mode creates it when missing: file storage,
 * limits retention with no limits, a 2 h duplicate window
 * (JET_DLQ_DUPLICATE_WINDOW_NS), subjects jethost.dlq.> when the DLQ subject
 * starts with jethost.dlq., else the subject itself.  An existing stream is
 * never reshaped, in either mode: one that does not cover the subject is an
 * error naming what to add. */
gboolean jet_dlq_stream_ensure(jsCtx *js, const JetBindingConfig *b, GError **error);

/* Whether the NATS subject pattern (tokens, '*' for one token, a final '>'
 * for one or more) matches the literal subject.  FALSE for an empty or
 * malformed pattern or subject (empty tokens, '>' not last). */
gboolean jet_subject_matches(const char *pattern, const char *subject);

/* The rename rule both ways.  jet_capture_carried_name: the name an original
 * header travels under (a new string; the name itself when not renamed).
 * jet_capture_restored_name: for a Jethost-Orig-* name, the original name;
 * NULL for any other name. */
char *jet_capture_carried_name(const char *name);
char *jet_capture_restored_name(const char *carried);

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
