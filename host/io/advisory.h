/* The MAX_DELIVERIES safety net (docs/dead-letters.md): a message the server
 * stopped delivering for good (MaxDeliver spent: a host that was down, an
 * operator's change, a case the host's own rules missed) is dead-lettered
 * from the server's advisory, with cause max-deliveries.
 *
 * nats-server 2.9.10 publishes one advisory per such message, on
 * $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>, as a plain
 * core-NATS message (and only while a pull waits on that consumer).  So that
 * one raised while no host ran is not lost, a stream keeps them
 * (JETHOST_ADVISORIES, or any stream of the operator's that captures the
 * subject) and each binding reads its own through a durable pull consumer,
 * acking an advisory only once its capture is stored: capture-then-ack
 * again, so each advisory is handled once across restarts and hosts, and a
 * repeat is a duplicate the record's Nats-Msg-Id discards.  Without such a
 * stream (manage = bind, or a stream that cannot be made), a core
 * subscription takes them while the host runs.
 *
 * One thread per binding: the volume is tiny (one advisory per lost
 * message), the work is a few requests each. */
#ifndef JET_ADVISORY_H
#define JET_ADVISORY_H

#include <glib.h>
#include "config.h"
#include "conn.h"
#include "ledger.h"

/* The stream jethost creates (manage = create) when none captures a
 * binding's advisories: one for every binding of every host. */
#define JET_ADVISORY_STREAM "JETHOST_ADVISORIES"
#define JET_ADVISORY_SUBJECT_PREFIX "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."
#define JET_ADVISORY_STREAM_SUBJECT JET_ADVISORY_SUBJECT_PREFIX ">"
#define JET_ADVISORY_MAX_AGE_MS (G_GUINT64_CONSTANT(7) * 24 * 3600 * 1000)
#define JET_ADVISORY_MAX_BYTES (G_GINT64_CONSTANT(64) * 1024 * 1024)
/* The advisory consumer's AckWait: longer than a capture that meets every
 * timeout, so a slow host does not hand its advisory to another. */
#define JET_ADVISORY_ACK_WAIT_MS 60000

/* $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer> */
char *jet_advisory_subject(const char *stream, const char *consumer);
/* The binding's durable advisory consumer: jethost_adv_<stream>_<consumer>,
 * or jethost_adv_<hash> when that would be too long. */
char *jet_advisory_consumer_name(const char *stream, const char *consumer);

/* One advisory, as the server wrote it. */
typedef struct {
    char *stream, *consumer;
    guint64 stream_seq;
    guint64 deliveries;
    gint64 time_ns;       /* its timestamp; 0 when absent */
} JetAdvisoryMsg;

void jet_advisory_msg_clear(JetAdvisoryMsg *m);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(JetAdvisoryMsg, jet_advisory_msg_clear)

/* Parses the JSON body; FALSE with error when it is not an object naming a
 * stream, a consumer and a stream sequence above 0.  Pure. */
gboolean jet_advisory_parse(const char *data, gsize len, JetAdvisoryMsg *out, GError **error);

typedef enum {
    JET_ADVISORY_KEPT,    /* read from a stream through a durable consumer */
    JET_ADVISORY_LIVE,    /* a core subscription: advisories raised while no host runs are lost */
} JetAdvisoryMode;

typedef struct {
    guint64 advisories;   /* advisories handled */
    guint64 captured;     /* dark messages dead-lettered: a new record */
    guint64 duplicates;   /* ... already in the DLQ stream (the record read back and found theirs) */
    guint64 lost;         /* gone from the stream before they could be captured */
    guint64 failed;       /* captures that failed, kept for another try */
    guint64 stranded;     /* captures that cannot be made (too large; failed with no way to retry) */
    guint64 invalid;      /* advisories that did not parse or named another consumer */
} JetAdvisoryStats;

/* What a record says besides the message: borrowed, for the watcher's life. */
typedef struct {
    const char *host_name;
    const char *plugin_name, *plugin_version;
    JetLedger *ledger;    /* may be NULL: the record then says 0 failures */
} JetAdvisoryContext;

typedef struct JetAdvisory JetAdvisory;

/* Sets up the binding's watch (the advisory stream and consumer, or the
 * live subscription; logged) and starts its thread.  Never fails: a setup
 * the server refuses is logged and tried again by the thread.  conn and b
 * must outlive it. */
JetAdvisory *jet_advisory_start(JetConn *conn, const JetBindingConfig *b, const JetAdvisoryContext *ctx);
/* Asks the thread to stop after the advisory in hand; returns at once. */
void jet_advisory_stop(JetAdvisory *a);
/* Stops and waits for the thread. */
void jet_advisory_join(JetAdvisory *a);
void jet_advisory_free(JetAdvisory *a);

JetAdvisoryMode jet_advisory_mode(JetAdvisory *a);
void jet_advisory_stats(JetAdvisory *a, JetAdvisoryStats *out);

#endif
