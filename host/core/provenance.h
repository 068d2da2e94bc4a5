/* The provenance header names of a dead-letter record (docs/dead-letters.md,
 * capture-then-ack) and its time format.
 *
 * The record itself, the original headers renamed (Nats-<rest> travels as
 * Jethost-Orig-Nats_<rest>, Jethost-<rest> as Jethost-Orig-Jethost-<rest>),
 * the provenance and the Nats-Msg-Id jethost:<stream>.<consumer>:<seq>, is
 * built by one function, jet_capture_headers() in capture.c: the capture
 * executor publishes it and the mock host shows it to a plugin author.
 * capture.h and docs/dead-letters.md have the contract. */
#ifndef JET_PROVENANCE_H
#define JET_PROVENANCE_H

#include <glib.h>

#define JET_PROV_ORIG_PREFIX     "Jethost-Orig-"
#define JET_PROV_STREAM          "Jethost-Origin-Stream"
#define JET_PROV_STREAM_CREATED  "Jethost-Origin-Stream-Created"
#define JET_PROV_SUBJECT         "Jethost-Origin-Subject"
#define JET_PROV_SEQ             "Jethost-Origin-Seq"
#define JET_PROV_CONSUMER        "Jethost-Origin-Consumer"
#define JET_PROV_BINDING         "Jethost-Binding"
#define JET_PROV_DELIVERIES      "Jethost-Deliveries"
#define JET_PROV_FAILURES        "Jethost-Failures"
#define JET_PROV_POSTPONES       "Jethost-Postpones"
#define JET_PROV_CRASH_STRIKES   "Jethost-Crash-Strikes"
#define JET_PROV_CAUSE           "Jethost-Cause"
#define JET_PROV_REASON          "Jethost-Reason"
#define JET_PROV_FIRST_FAILURE   "Jethost-First-Failure"
#define JET_PROV_ENQUEUED        "Jethost-Enqueued"
#define JET_PROV_CAPTURED        "Jethost-Captured"
#define JET_PROV_PLUGIN          "Jethost-Plugin"
#define JET_PROV_PLUGIN_VERSION  "Jethost-Plugin-Version"
#define JET_PROV_HOST            "Jethost-Host"

/* RFC 3339 UTC with nanoseconds, e.g. "2024-01-01T00:00:00.000000000Z".
 * Caller frees. */
char *jet_time_format_ns(gint64 unix_ns);

#endif
