/* The dead-letter record (docs/dead-letters.md): its header names, the
 * facts it carries and its header list, built without nats.c so that the
 * mock host previews the very record the daemon writes.  Publishing it,
 * the confirmed ack and the DLQ stream are host/io (capture.h,
 * dlq_stream.h).
 *
 * The header names are a contract: docs/dead-letters.md lists them. */
#ifndef JET_DLQ_RECORD_H
#define JET_DLQ_RECORD_H

#include <glib.h>

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
#define JET_HDR_CRASH_STRIKES    JET_PROV_CRASH_STRIKES    /* "Jethost-Crash-Strikes", only when > 0 */
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
#define JET_HDR_KV_KEY           "Jethost-KV-Key"          /* kind = kv only */
#define JET_HDR_KV_OPERATION     "Jethost-KV-Operation"
#define JET_HDR_KV_REVISION      "Jethost-KV-Revision"

/* An original header named Nats-<rest> travels as Jethost-Orig-Nats_<rest>
 * (the '-' after "Nats" becomes '_', so no server-read name survives even as
 * a substring: see docs/dead-letters.md); one named Jethost-<rest> travels as
 * Jethost-Orig-Jethost-<rest>.  Both prefixes are matched case-insensitively;
 * every other header is copied as it is. */
#define JET_HDR_ORIG_PREFIX      JET_PROV_ORIG_PREFIX      /* "Jethost-Orig-" */
#define JET_HDR_TTL              "Nats-TTL"                /* the server's; only with dlq_ttl */

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
    guint32 strikes;               /* host crashes while handling it alone; 0 leaves the header out */
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
    const char *kv_key;            /* kind = kv: the entry's key and operation ("put", ...);
                                      NULL otherwise (the revision is stream_seq) */
    const char *kv_op;
    guint64 msg_id_after;          /* 0; else the DLQ seq of a record another message's capture
                                      holds under this id: the id becomes distinct (":after-N") */
    guint64 ttl_s;                 /* 0; else the record's Nats-TTL in seconds (dlq_ttl): the
                                      server removes it then (docs/dead-letters.md) */
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

/* The header list of the DLQ message jet_capture_build (host/io/capture.h)
 * writes, in block order: name and value alternating, g_strdup'd (free with
 * g_ptr_array_unref); len is the payload's length.  original, defects,
 * max_payload and the too-large error are as jet_capture_build documents.
 * jet_capture_build writes it; the mock host shows it, so the record it
 * previews is the one the daemon writes. */
GPtrArray *jet_capture_headers(int len, const GPtrArray *original, const GArray *defects, const JetCaptureFacts *f,
                               gint64 max_payload, JetCaptureBuild *result, GError **error);

/* jethost:<stream>.<consumer>:<seq>[:<stream created ns>][:after-<N>], or
 * NULL when the stream or the sequence is unknown.  Stream and consumer
 * names cannot hold '.', so it is unambiguous; the creation time makes it
 * unique across a stream deleted and re-created under the same name. */
char *jet_capture_msg_id(const JetCaptureFacts *f);

/* The facts that follow from the settlement of a captured delivery, shared by
 * the executor and the mock host: failures (this delivery's included when it
 * was one: a->failure_number), cause and reason (borrowed from a), the first
 * failure (failures_before's, or now_ns when this delivery is the first), and
 * the capture time now_ns.  The other members are the caller's. */
void jet_capture_facts_settled(JetCaptureFacts *f, const JetSettleAction *a, guint32 failures_before,
                               gboolean has_first_failure, gint64 first_failure_ns, gint64 now_ns);

/* What a capture came to (jet_capture_publish, jet_capture_store). */
typedef enum {
    JET_CAPTURE_CAPTURED = 0,   /* the pub-ack arrived (possibly as a duplicate): ack the original */
    JET_CAPTURE_FAILED,         /* no pub-ack, or refused: keep the original */
    JET_CAPTURE_TOO_LARGE,      /* refused for size: keep it; Stranded too-large */
} JetCaptureOutcome;

const char *jet_capture_outcome_name(JetCaptureOutcome o);

/* What a duplicate pub-ack named (jet_capture_verify_duplicate). */
typedef enum {
    JET_CAPTURE_DUP_SAME,        /* the record is this capture's: already captured */
    JET_CAPTURE_DUP_COLLISION,   /* another message's record holds the id (or it was removed) */
    JET_CAPTURE_DUP_UNVERIFIED,  /* the record could not be read: error set */
} JetCaptureDup;

const char *jet_capture_dup_name(JetCaptureDup d);

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

#endif
