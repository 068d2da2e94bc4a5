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
    /* Where the bytes come from: a nats.c message (headers read through it),
     * or plain fields with a header list (the mock host). */
    natsMsg *nmsg;                 /* borrowed; may be NULL */
    const char *subject;
    const void *data;
    size_t len;
    GPtrArray *headers;            /* of char*, name/value pairs; used when nmsg is NULL */

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
