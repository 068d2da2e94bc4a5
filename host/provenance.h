/* The provenance headers of a dead-letter record (DESIGN section 4,
 * capture-then-ack): what the capture executor writes and what the mock host
 * shows a plugin author, built by this one function.
 *
 * The record carries the original payload and the original headers, each
 * original header whose name starts with "Nats-" or "Jethost-" renamed under
 * JET_PROV_ORIG_PREFIX (so a Nats-Expected-* header cannot get the capture
 * rejected, a Nats-Rollup cannot purge the DLQ, and an earlier capture's
 * provenance cannot be mistaken for this one's), then the headers below. */
#ifndef JET_PROVENANCE_H
#define JET_PROVENANCE_H

#include <glib.h>

#define JET_PROV_ORIG_PREFIX     "Jethost-Orig-"
#define JET_PROV_STREAM          "Jethost-Origin-Stream"
#define JET_PROV_SUBJECT         "Jethost-Origin-Subject"
#define JET_PROV_SEQ             "Jethost-Origin-Seq"
#define JET_PROV_CONSUMER        "Jethost-Origin-Consumer"
#define JET_PROV_BINDING         "Jethost-Binding"
#define JET_PROV_DELIVERIES      "Jethost-Deliveries"
#define JET_PROV_FAILURES        "Jethost-Failures"
#define JET_PROV_POSTPONES       "Jethost-Postpones"
#define JET_PROV_CAUSE           "Jethost-Cause"
#define JET_PROV_REASON          "Jethost-Reason"
#define JET_PROV_FIRST_FAILURE   "Jethost-First-Failure"
#define JET_PROV_ENQUEUED        "Jethost-Enqueued"
#define JET_PROV_CAPTURED        "Jethost-Captured"
#define JET_PROV_PLUGIN          "Jethost-Plugin"
#define JET_PROV_PLUGIN_VERSION  "Jethost-Plugin-Version"
#define JET_PROV_HOST            "Jethost-Host"
#define JET_PROV_MSG_ID          "Nats-Msg-Id"

typedef struct {
    const char *stream, *consumer, *subject, *binding;
    guint64 stream_seq;
    guint32 deliveries;
    guint32 failures;            /* including this delivery's when it was one */
    guint32 postpones;
    const char *cause;           /* jet_cause_name() */
    const char *reason;          /* may be NULL or "" */
    gboolean has_first_failure;
    gint64 first_failure_ns;
    gboolean has_enqueued;
    gint64 enqueued_ns;
    gint64 captured_ns;
    const char *plugin_name, *plugin_version, *host_name;
} JetProvenance;

/* Appends the record's headers to out (a GPtrArray of g_strdup'd strings,
 * name and value alternating, freed with g_free): first the original headers
 * orig (same layout; may be NULL) renamed as above, then the provenance, in
 * the order of the defines, ending with Nats-Msg-Id.  Times are RFC 3339 UTC
 * with nanoseconds; a time that is unknown is left out, never written as 0.
 * CR and LF in a value (a reason) become spaces. */
void jet_provenance_headers(const JetProvenance *p, const GPtrArray *orig, GPtrArray *out);

/* "jethost-dlq:<stream>:<seq>": repeated captures of one message
 * de-duplicate.  Caller frees. */
char *jet_provenance_msg_id(const char *stream, guint64 stream_seq);

/* The name an original header travels under.  Caller frees. */
char *jet_provenance_orig_name(const char *name);

/* RFC 3339 UTC with nanoseconds, e.g. "2024-01-01T00:00:00.000000000Z".
 * Caller frees. */
char *jet_time_format_ns(gint64 unix_ns);

#endif
