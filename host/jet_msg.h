/* The host's side of the opaque jet_msg: one delivery as a plugin sees it.
 * The engine and the mock host fill one per handle() call; the settlement
 * decision reads what the plugin set on it. */
#ifndef JET_MSG_H
#define JET_MSG_H

#include <glib.h>
#include <nats/nats.h>
#include <jethost/plugin.h>

struct JetMsgStrict;

struct jet_msg {
    /* The delivery as plain fields, borrowed.  headers: name/value pairs
     * in block order as the host's own parser read them (hdr_block.h), never
     * nats.c's reading; the mock host fills it from the test's list. */
    const char *subject;
    const void *data;
    size_t len;
    GPtrArray *headers;            /* of char*; may be NULL */

    const char *stream, *consumer;
    uint64_t stream_seq, consumer_seq;
    uint32_t deliveries;
    gboolean has_enqueued;
    gint64 enqueued_ns;

    /* From the attempt ledger (zero on a first delivery). */
    uint32_t failures, postpones;
    gboolean has_first_failure;
    gint64 first_failure_ns;

    /* Set by the plugin during handle(). */
    char reason[JET_REASON_MAX + 1];
    gboolean has_reason;
    gboolean reason_too_long;
    guint64 delay_ms;
    gboolean has_delay;

    /* Set by the mock host when handle() returned: any further call through
     * this handle is a use after the borrow ended. */
    gboolean poisoned;

    /* The mock host's strict checks (host_strict.h), called by every host
     * function taking this handle; NULL in the daemon, which pays one
     * branch on it. */
    const struct JetMsgStrict *strict;
};

/* Resets what a plugin may set, before a handle() call. */
void jet_msg_reset_verdict(jet_msg *m);

#endif
