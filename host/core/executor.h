/* The settlement executor: one delivery from the buffer to its settlement,
 * the same code in the daemon and in the mock host (docs/architecture.md,
 * "One settlement sequence").
 *
 * The sequence (docs/retries.md, docs/settlement.md):
 *   1. read the attempt ledger, on redeliveries only (the happy path does no
 *      ledger I/O); an unreachable ledger falls back to the delivery count;
 *   2. crash attribution: a suspect is handled alone with the isolation
 *      marker set; a poison message is captured without the handler;
 *   3. the breaker, for a message that has been failing;
 *   4. the plugin, then the pure decision (settle.h);
 *   5. the action and its ledger write, under the lease fence: a holder
 *      whose lease lapsed writes nothing and never releases;
 *   6. capture-then-ack when the decision is to dead-letter.
 *
 * Everything that touches a server goes through a JetTransport: the engine
 * implements it on nats.c (host/io/engine_transport.c), the mock host in
 * memory (host/mock/mock_deliver.c).  The executor itself does no I/O but
 * what its transport does, and keeps no state between deliveries but the
 * ledger's up/down flag, so one executor serves every worker of a binding. */
#ifndef JET_EXECUTOR_H
#define JET_EXECUTOR_H

#include <glib.h>

#include "config.h"
#include "dlq_record.h"
#include "forward.h"
#include "hdr_block.h"
#include "instance.h"
#include "ledger_record.h"
#include "log.h"
#include "settle.h"
#include "stats.h"

/* One delivery as its transport read it.  Strings and buffers are
 * borrowed for the call. */
typedef struct {
    const char *subject;
    const char *data;
    gsize len;
    /* The header block parsed by the host's rules; malformed: NULL, or why
     * the block cannot be trusted (the delivery is then dead-lettered with
     * cause malformed-headers, the plugin never sees it). */
    const JetHdrParse *hdrs;
    const char *malformed;
    const char *stream, *consumer;   /* as the delivery's metadata names them */
    guint64 stream_seq, consumer_seq;
    guint32 deliveries;
    gint64 enqueued_ns;              /* 0: unknown */
    /* The transport's own handle on the delivery (the engine's held item). */
    gpointer token;
    /* Where this delivery's counts go: the worker's own set. */
    JetStats *stats;
} JetDelivery;

/* When an ack may go. */
typedef enum {
    JET_TRANSPORT_ACK_NOW = 0,   /* ack at once */
    JET_TRANSPORT_ACK_SOON,      /* nothing to do after it: the ack may wait to go with the next ones */
} JetAckTiming;

/* The executor's only way out.  Every member is required but the log's;
 * `t` is the transport's data. */
typedef struct {
    /* --- the attempt ledger (called only when the executor has one) --- */
    JetLedgerStatus (*ledger_get)(gpointer t, const JetDelivery *d, JetLedgerRecord *out, GError **error);
    /* Read-modify-write: mutate runs on the freshest record, maybe more
     * than once, right before each write attempt (ledger_record.h).
     * known: the record as the executor last read or wrote it, which the
     * first attempt may take instead of reading (a stale one only costs the
     * read after all); NULL: read first.  out: what was written, on
     * JET_LEDGER_WRITTEN. */
    JetLedgerStatus (*ledger_update)(gpointer t, const JetDelivery *d, const JetLedgerRecord *known,
                                     JetLedgerMutateFn mutate, gpointer mutate_data, JetLedgerRecord *out,
                                     GError **error);
    /* revision > 0: the record as the run last knew it, deleted only if it
     * is still that one, and the transport may send it without waiting
     * (QUEUED); 0: deleted whatever it is, before this returns. */
    JetLedgerStatus (*ledger_delete)(gpointer t, const JetDelivery *d, guint64 revision, GError **error);

    /* --- the lease --- */
    /* TRUE once the delivery's lease lapsed: the server may have handed it
     * to someone else, so nothing may be written or released for it. */
    gboolean (*lease_lapsed)(gpointer t, const JetDelivery *d);

    /* --- the breaker --- */
    /* A failing message (rec: its ledger record) while the floor may be
     * stalled: TRUE when an enforcing breaker claimed it for capture. */
    gboolean (*breaker)(gpointer t, const JetDelivery *d, const JetLedgerRecord *rec);

    /* --- the handler's frame --- */
    /* Before the decision that may run the handler: a suspect (alone)
     * waits here until no other handler of the binding runs. */
    void (*enter)(gpointer t, const JetDelivery *d, gboolean alone);
    /* Runs the plugin's handle() on m (lending it as the host lends); the
     * verdict's details are left in m. */
    int (*handle)(gpointer t, const JetDelivery *d, jet_msg *m);
    /* Optional (NULL: no batches): runs the plugin's handle_batch() on
     * ms[0..n-1], the messages of ds[0..n-1], lending them together; each
     * verdict as the plugin left it in verdicts (JET_RETRY before the
     * call).  Returns what handle_batch() returned. */
    int (*handle_batch)(gpointer t, const JetDelivery *const *ds, jet_msg *const *ms, guint n, int *verdicts);
    /* The handler is done (or was never run): the delivery leaves the
     * host's hold.  Returns whether its lease lapsed meanwhile. */
    gboolean (*release_hold)(gpointer t, const JetDelivery *d);
    /* After the settlement: undoes enter. */
    void (*leave)(gpointer t, const JetDelivery *d, gboolean alone);

    /* --- publishes queued by the plugin (forward.h) --- */
    /* Publishes p with Nats-Msg-Id msg_id and waits for its pub-ack; FALSE
     * with the server's reason when it failed or was refused.  A duplicate
     * is a success (an earlier delivery's publish got there), told in
     * *duplicate. */
    gboolean (*publish)(gpointer t, const JetDelivery *d, const JetPublish *p, const char *msg_id,
                        gboolean *duplicate, GError **error);

    /* --- settling with the server --- */
    void (*ack)(gpointer t, const JetDelivery *d, JetAckTiming timing);
    void (*nak)(gpointer t, const JetDelivery *d, guint64 delay_ms);

    /* --- capture-then-ack --- */
    /* The origin stream's creation time (part of a record's id); <= 0 when
     * it cannot be read. */
    gint64 (*stream_created)(gpointer t);
    /* Builds, stores and verifies the dead-letter record (dlq_record.h);
     * CAPTURED sets *duplicate when an earlier capture's record was found
     * to be this message's. */
    JetCaptureOutcome (*capture)(gpointer t, const JetDelivery *d, JetCaptureFacts *facts, gboolean *duplicate,
                                 GError **error);
    /* +ACK as a request: TRUE when the server received it. */
    gboolean (*ack_confirmed)(gpointer t, const JetDelivery *d, GError **error);

    /* --- optional: where the executor's log lines go (NULL: the host's
     * log, log.h); log_enabled (may be NULL) says whether a level is
     * wanted before a line is built. --- */
    void (*log)(gpointer t, jet_log_level level, const char *event, const char *text);
    gboolean (*log_enabled)(gpointer t, jet_log_level level);

    /* --- optional: TRUE once the host is gone mid-settlement (the mock
     * host's crash fault): the plugin is told nothing more (no settled()).
     * NULL: never. --- */
    gboolean (*gone)(gpointer t);
} JetTransport;

typedef struct JetExecutor JetExecutor;

/* b, policy, inst, host_name and transport must outlive the executor.
 * ledger_bucket: NULL when the binding has no attempt ledger (the ledger
 * members of the transport are then never called), else its name for the
 * log. */
JetExecutor *jet_executor_new(const JetBindingConfig *b, const JetSettlePolicy *policy, JetInstance *inst,
                              const char *host_name, const char *ledger_bucket, const JetTransport *transport,
                              gpointer t);
void jet_executor_free(JetExecutor *x);

/* How one delivery was settled. */
typedef struct {
    JetSettleAction action;        /* what settle.h decided */
    JetSettleFacts facts;          /* what it decided from; facts.reason points into reason below,
                                      facts.malformed_headers is the delivery's */
    char reason[JET_REASON_MAX + 1];   /* the plugin's reason, when it gave one */
    gboolean handled;              /* the plugin's handle() ran */
    int verdict;                   /* its return value, when handled; else -1 */
    gboolean stale;                /* the lease lapsed: nothing was released or written */
    gboolean suspect;              /* handled alone (crash attribution) */
    gboolean captured;             /* CAPTURE: the record is stored and the original acked */
    guint64 capture_again_ms;      /* CAPTURE not done: the delay of its next try (a durable
                                      consumer's NAK; a binding whose consumer gives nothing
                                      back waits this long and delivers it again itself) */
    gboolean publish_refused;      /* a msg_publish() call was refused (a plugin error) */
    JetCaptureOutcome capture;     /* CAPTURE: what the transport answered */
    gboolean set_aside;            /* an in-order batch member behind one that waits: nothing
                                      was acted on (jet_executor_deliver_batch_in_order); of
                                      such a report only handled and verdict say anything */
} JetExecuted;

/* Whether done leaves its message waiting where it is: a RETRY or a
 * POSTPONE, or a capture that failed (a binding whose consumer gives
 * nothing back delivers it again itself after the delay). */
gboolean jet_executed_waits(const JetExecuted *done);

/* Handles and settles one delivery; out may be NULL. */
void jet_executor_deliver(JetExecutor *x, const JetDelivery *d, JetExecuted *out);

/* Handles and settles ds[0..n-1] (n >= 1) with one handle_batch() call
 * (the transport must have one): each delivery read and attributed as
 * jet_executor_deliver does; a redelivery (a suspect alone) through handle(); one
 * the decision settles without a handler settled so; the rest handed to
 * the plugin together, each verdict settled as handle()'s.  outs (may be
 * NULL) gets n reports, in the order of ds. */
void jet_executor_deliver_batch(JetExecutor *x, const JetDelivery *const *ds, guint n, JetExecuted *outs);

/* For a binding that keeps stream order (ordered, KV): handles ds[0..n-1]
 * (first deliveries, none a suspect, in stream order) with one
 * handle_batch() call and settles them in that order up to the first that
 * waits (jet_executed_waits), which is settled too.  The ones behind it
 * are set aside (outs[i].set_aside): nothing of their verdicts is acted
 * on, no publish, no ledger write, no settled(), so nothing is settled out
 * of order; the caller hands them again once the waiting one is settled
 * (docs/batches.md).  Returns how many were settled (1..n); outs gets n
 * reports. */
guint jet_executor_deliver_batch_in_order(JetExecutor *x, const JetDelivery *const *ds, guint n, JetExecuted *outs);

/* A delivery its plugin keeps pending (docs/async.md): handle() returned
 * JET_PENDING, and the transport's handle() passed that on, having taken
 * the delivery's completion in hand.  Owned by the caller until
 * jet_executor_complete(); d (and what it borrows) must live as long. */
typedef struct JetExecutorPending JetExecutorPending;

/* For a binding whose plugin may keep deliveries pending: steps 1 and 2
 * for d, before its handler (so the transport can tell where its
 * completion goes before the plugin could complete it); then
 * jet_executor_run_async() runs the rest: FALSE when it settled the
 * delivery (out filled, may be NULL; p freed), TRUE when it is pending,
 * after which p is its completion's and the caller must not touch it. */
JetExecutorPending *jet_executor_pending_new(JetExecutor *x, const JetDelivery *d);
gboolean jet_executor_run_async(JetExecutor *x, JetExecutorPending *p, JetExecuted *out);

/* The pending delivery p settled with verdict, as handle()'s would be,
 * from any thread; frees p.  why: NULL, or the reason the host completes
 * it in the plugin's place (the verdict is then a failure with it). */
void jet_executor_complete(JetExecutor *x, JetExecutorPending *p, int verdict, const char *why, JetExecuted *out);

/* A delivery whose metadata does not parse: dead-lettered with cause
 * malformed (with what can be read: d->stream_seq is 0), then acked.
 * reply: the raw reply subject, kept in the record. */
void jet_executor_capture_malformed(JetExecutor *x, const JetDelivery *d, const char *reply);

/* The host gives a delivery back unhandled (a drain): the release is
 * written to the ledger first, so its next delivery is explained. */
void jet_executor_record_release(JetExecutor *x, const JetDelivery *d);

#endif
