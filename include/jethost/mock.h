/*
 * jethost mock host: test a plugin in milliseconds, without a NATS server.
 *
 * The mock host runs one plugin the way the daemon does (same option
 * validation, same init/handle/fini calls, same host function table) and
 * returns, for each message you deliver, the settlement the daemon would
 * make, computed by the daemon's own decision code.  It is stricter than the
 * daemon where the daemon leaves behaviour undefined: what the daemon would
 * treat as a plugin error, or cannot detect at all, is reported as a
 * *violation* naming the rule (see "Strict rules" below).
 *
 * Modelled on GStreamer's GstHarness: wrap one plugin, push messages, step a
 * virtual clock, read back what happened.
 *
 *     jet_mock *m = jet_mock_new_static(jet_plugin_entry, err, sizeof err);
 *     jet_mock_set_option(m, "reject_subject", "orders.bad");
 *     if (jet_mock_start(m) != JET_MOCK_OK) ...jet_mock_error(m)...
 *     jet_mock_msg *msg = jet_mock_msg_new(m, "orders.bad");
 *     jet_mock_settlement s;
 *     jet_mock_deliver(m, msg, &s);         // s.action == JET_MOCK_CAPTURE
 *     jet_mock_msg_free(msg);
 *     jet_mock_free(m);                     // runs fini()
 *
 * Build and link with `pkg-config --cflags --libs jethost-mock`.  Plain C99:
 * this header needs only <stddef.h> and <stdint.h> (and jethost/plugin.h).
 *
 * Threads: a jet_mock is driven from one thread (the test's).  A plugin may
 * call host functions from other threads only when it declares
 * JET_PLUGIN_THREAD_SAFE; the mock records such calls as violations.
 *
 * Memory: whoever allocates frees.  Strings returned by the mock are owned by
 * it; each function says how long they stay valid.
 */
#ifndef JETHOST_MOCK_H
#define JETHOST_MOCK_H

#include <stddef.h>
#include <stdint.h>

#include <jethost/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define JET_MOCK_API __attribute__((visibility("default")))
#else
#define JET_MOCK_API
#endif

/* ------------------------------------------------------------------------ */
/* Return codes                                                             */
/* ------------------------------------------------------------------------ */

#define JET_MOCK_OK          0
#define JET_MOCK_VIOLATION   1   /* the plugin broke a strict rule; the settlement
                                    is still filled (what the daemon would do) */
#define JET_MOCK_EINVAL     (-1) /* a bad argument: unknown key, bad value, NULL */
#define JET_MOCK_ESTATE     (-2) /* not allowed now (e.g. set_option after start) */
#define JET_MOCK_ELOAD      (-3) /* the plugin could not be loaded */
#define JET_MOCK_EOPTION    (-4) /* the options do not validate against the plugin's table */
#define JET_MOCK_EINIT      (-5) /* the plugin's init() failed */

/* A static string naming a return code. */
JET_MOCK_API const char *jet_mock_strerror(int code);

/* ------------------------------------------------------------------------ */
/* The mock host                                                            */
/* ------------------------------------------------------------------------ */

typedef struct jet_mock jet_mock;

/* Loads a plugin shared object the way the daemon does (same trust checks on
 * the file and its directories, same ABI version rule).  On failure returns
 * NULL and writes one line naming the file and the cause to err (at most
 * err_len bytes with the NUL; err may be NULL). */
JET_MOCK_API jet_mock *jet_mock_new_from_path(const char *so_path, char *err, size_t err_len);

/* A plugin linked into the test program: pass its entry function (usually
 * jet_plugin_entry).  The descriptor is checked as the loader checks it. */
JET_MOCK_API jet_mock *jet_mock_new_static(jet_plugin_entry_fn entry, char *err, size_t err_len);

/* Runs fini() if the plugin was started, and frees everything.  NULL is a
 * no-op.  Violations found during fini() are reported as for jet_mock_stop. */
JET_MOCK_API void jet_mock_free(jet_mock *m);

/* The last error text of a call that returned a negative code, or "".
 * Valid until the next call on m. */
JET_MOCK_API const char *jet_mock_error(const jet_mock *m);

/* --- before start ------------------------------------------------------- */

/* Sets plugin option `name` (without the `option.` prefix) as it would be
 * written in the config.  Checked at jet_mock_start(), like the daemon does
 * when it loads the config. */
JET_MOCK_API int jet_mock_set_option(jet_mock *m, const char *name, const char *value);

/* Sets one settlement setting of the binding, with the config's key names and
 * value syntax (docs/configuration.md); unset keys have the daemon's
 * defaults:
 *   rungs               "1s, 5s, 30s, 2m, 10m"   the retry ladder
 *   max_attempts        "5"                      0 = unlimited
 *   postpone_horizon    "1h"
 *   max_postpone_delay  "15m"
 *   max_deliver         "-1"                     the consumer's MaxDeliver
 *   capture_reserve     "1"
 *   crash_limit         "3"
 *   max_hops            "16"                     0 = no limit (docs/forwarding.md)
 *   kind                "durable"                or "ordered", "kv" (1.1): what msg_kind()
 *                                                and ctx_kind() say, and how the record
 *                                                names the origin
 *   bucket              (none)                   kind = kv: the bucket (required there)
 *   key                 (none)                   per-key lanes, kind = durable only:
 *                                                "header:NAME" or "subject:N" (see
 *                                                "Lanes" below)
 *   batch_max           "1"                      handler batches (1.2; at most `batch`,
 *                                                "10" unless set): what
 *                                                jet_mock_deliver_batch() may hand over
 *   batch               "10"                     the pull's size, which bounds batch_max
 *   max_in_flight       "0"                      pending deliveries (1.2; see "Pending
 *                                                deliveries" below): 0 = JET_PENDING is a
 *                                                plugin error
 *   handler_timeout     "5m"                     when a pending delivery is late
 * An ordered or KV binding's deliveries name the binding as their consumer
 * (the daemon's consumer names change), and a KV binding's stream is
 * KV_<bucket>, whatever jet_mock_set_binding() says.
 * Returns JET_MOCK_EINVAL for an unknown key or a bad value (see
 * jet_mock_error()). */
JET_MOCK_API int jet_mock_set_policy(jet_mock *m, const char *key, const char *value);

/* Names used in ctx_name(), msg_stream(), msg_consumer() and the dead-letter
 * provenance; NULL keeps the default ("mock", "MOCK", "mock"). */
JET_MOCK_API int jet_mock_set_binding(jet_mock *m, const char *binding, const char *stream,
                                      const char *consumer);

/* What happens on a violation.  1 (the default): print it on stderr, naming
 * the rule, and abort(): a test that ignores return codes still fails.  0:
 * record it; jet_mock_deliver() returns JET_MOCK_VIOLATION and the
 * violation functions below read it (for testing the rules themselves, and
 * for the `jethost mock` command). */
JET_MOCK_API void jet_mock_set_abort_on_violation(jet_mock *m, int on);

/* 1: also write the plugin's log lines to stderr (they are always recorded). */
JET_MOCK_API void jet_mock_set_log_echo(jet_mock *m, int on);

/* Validates the options like the daemon (an undeclared option, a value of
 * the wrong type, a missing required option: JET_MOCK_EOPTION and a
 * violation naming the option) and the policy, then runs init()
 * (JET_MOCK_EINIT with the plugin's message on failure). */
JET_MOCK_API int jet_mock_start(jet_mock *m);

/* Runs fini() now (jet_mock_free() does it otherwise).  Returns
 * JET_MOCK_VIOLATION when fini() broke a rule (e.g. used a kept jet_msg). */
JET_MOCK_API int jet_mock_stop(jet_mock *m);

/* kind = kv: tells the plugin the watch caught up, as the daemon does once
 * per start (the descriptor's kv_initial_done, when it has one).  Call it
 * where the daemon would: after the last current value's delivery, or right
 * after jet_mock_start() for an empty bucket.  JET_MOCK_ESTATE when not
 * started or not kind = kv; JET_MOCK_VIOLATION when the callback broke a
 * rule. */
JET_MOCK_API int jet_mock_kv_initial_done(jet_mock *m);

/* Makes ctx_stopping() return non-zero from now on. */
JET_MOCK_API void jet_mock_set_stopping(jet_mock *m);

/* --- the clock ------------------------------------------------------------ */

/* The mock's wall clock, read by the plugin's ctx_now_ns() and by the
 * settlement (postpone horizons).  It never moves on its own.  It starts at
 * 2024-01-01T00:00:00Z (1704067200000000000 ns). */
JET_MOCK_API void jet_mock_clock_set_ns(jet_mock *m, int64_t unix_ns);
JET_MOCK_API void jet_mock_clock_advance_ms(jet_mock *m, uint64_t ms);
JET_MOCK_API int64_t jet_mock_clock_ns(const jet_mock *m);

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

/* One message as the daemon would hand it to the plugin.  Defaults: empty
 * payload, no headers, the next stream and consumer sequence of this mock
 * (1, 2, ...), first delivery (deliveries 1, no failures, no postpones), and
 * enqueued (stored by the stream) at the mock's clock when created: a fresh
 * message.  A builder can be delivered several times (see
 * jet_mock_msg_redeliver()). */
typedef struct jet_mock_msg jet_mock_msg;

JET_MOCK_API jet_mock_msg *jet_mock_msg_new(jet_mock *m, const char *subject);
/* kind = kv (set with jet_mock_set_policy first): the entry of key `key`
 * as the server stores it: subject $KV.<bucket>.<key>, and for a delete or
 * a purge the KV-Operation header (DEL, PURGE) the plugin never needs to
 * read (msg_kv_op()).  Its revision is its stream seq.  NULL, with
 * jet_mock_error() saying why, on another kind or a bad op.  The key is
 * not checked here: an entry no KV client could write reaches the
 * settlement as the daemon would see it (dead-lettered, cause malformed). */
JET_MOCK_API jet_mock_msg *jet_mock_msg_new_kv(jet_mock *m, const char *key, jet_kv_op op);
JET_MOCK_API void jet_mock_msg_free(jet_mock_msg *b);

/* The payload (copied). */
JET_MOCK_API void jet_mock_msg_set_data(jet_mock_msg *b, const void *data, size_t len);
JET_MOCK_API void jet_mock_msg_set_text(jet_mock_msg *b, const char *text);
/* Appends one header value (copied); a name may repeat. */
JET_MOCK_API void jet_mock_msg_add_header(jet_mock_msg *b, const char *name, const char *value);
/* Replaces every value of header `name` with this one (e.g. to change what
 * the next delivery of the same message carries in a scripted test). */
JET_MOCK_API void jet_mock_msg_set_header(jet_mock_msg *b, const char *name, const char *value);
JET_MOCK_API void jet_mock_msg_set_seq(jet_mock_msg *b, uint64_t stream_seq, uint64_t consumer_seq);
/* The server's delivery count (>= 1).  Deliveries that the ledger below
 * does not explain are crashes, as in the daemon: the message is a crash
 * suspect, handled alone (docs/mock.md, "The ledger and crashes"). */
JET_MOCK_API void jet_mock_msg_set_deliveries(jet_mock_msg *b, uint32_t deliveries);
/* The stream's timestamp of the message; _clear makes it unknown. */
JET_MOCK_API void jet_mock_msg_set_enqueued_ns(jet_mock_msg *b, int64_t unix_ns);
JET_MOCK_API void jet_mock_msg_clear_enqueued(jet_mock_msg *b);
/* The attempt ledger: failures and postpones recorded before this delivery.
 * A count raises the delivery count to at least failures + postpones +
 * strikes + 1 (the daemon reads no ledger on a first delivery). */
JET_MOCK_API void jet_mock_msg_set_ledger(jet_mock_msg *b, uint32_t failures, uint32_t postpones);
JET_MOCK_API void jet_mock_msg_set_first_failure_ns(jet_mock_msg *b, int64_t unix_ns);
JET_MOCK_API void jet_mock_msg_clear_first_failure(jet_mock_msg *b);
/* Crash attribution: strikes recorded for this message (poison at
 * crash_limit; raises the delivery count like the ledger's counts), and an
 * enforcing breaker's claim (of a redelivered message: the daemon's breaker
 * considers only messages with a ledger record).  Both decided before the
 * handler runs: the plugin is then not called. */
JET_MOCK_API void jet_mock_msg_set_strikes(jet_mock_msg *b, uint32_t strikes);
JET_MOCK_API void jet_mock_msg_set_breaker_claim(jet_mock_msg *b, int claimed);

/* ------------------------------------------------------------------------ */
/* Delivering and the settlement                                            */
/* ------------------------------------------------------------------------ */

typedef enum jet_mock_action {
    JET_MOCK_ACK = 0,        /* confirmed ack */
    JET_MOCK_RETRY = 1,      /* delayed NAK of a ladder rung; a failure is recorded */
    JET_MOCK_POSTPONE = 2,   /* delayed NAK of the plugin's delay; a postpone is recorded */
    JET_MOCK_CAPTURE = 3,    /* dead-lettered with provenance, then acked */
    JET_MOCK_HELD = 4,       /* with a `key` policy: not handled, because an earlier
                                message of its key has not settled for good; the mock
                                keeps it (see "Lanes" below) */
    JET_MOCK_PENDING = 5,    /* with `max_in_flight`: handle() returned JET_PENDING and
                                the plugin has not completed it; the mock keeps it until
                                jet_mock_settle_completed() (see "Pending deliveries") */
    JET_MOCK_SET_ASIDE = 6   /* kind ordered or kv, jet_mock_deliver_batch(): a message
                                before it in the batch waits in place (a retry, a
                                postpone), so nothing of its verdict was acted on;
                                deliver it again as it is once that one settled */
} jet_mock_action;

typedef struct jet_mock_header {
    const char *name;
    const char *value;
} jet_mock_header;

#define JET_MOCK_REASON_MAX 320

/* What the daemon would do with one delivery.  Pointers are owned by the
 * mock and stay valid until the next jet_mock_deliver() or
 * jet_mock_deliver_held() on it, or its free.
 * Members are only ever added at the end. */
typedef struct jet_mock_publish jet_mock_publish;

typedef struct jet_mock_settlement {
    jet_mock_action action;
    const char *action_name;      /* "ack", "retry", "postpone", "capture", "held",
                                     "pending", "set-aside" */
    uint64_t delay_ms;            /* RETRY and POSTPONE: the NAK delay */
    const char *cause;            /* CAPTURE: "rejected", "poison", "breaker", "budget",
                                     "exhausted"; otherwise "none" */
    const char *outcome;          /* "acked", "retried", "postponed", "dead-lettered";
                                     "stranded": a capture too large to build (no record);
                                     "held": kept in its lane, not handled;
                                     "crashed", "ack-lost": a fault point struck (see
                                     jet_mock_inject_fault()); "pending"; "set-aside":
                                     a batch member behind one that waits (ordered, kv) */
    int is_failure;               /* this delivery is a failed attempt */
    uint32_t failure_number;      /* k, when is_failure */
    int plugin_error;             /* the daemon counts the plugin's answer as an error */
    char reason[JET_MOCK_REASON_MAX]; /* the plugin's reason, or the rule it broke; "" when none */
    int handled;                  /* 0 when the host settled without calling handle()
                                     (poison, breaker) */
    int verdict;                  /* what handle() returned, unchecked; -1 when not handled */
    int64_t now_ns;               /* the clock the settlement read */
    uint64_t stream_seq;          /* which message, and which delivery of it */
    uint32_t deliveries;
    const char *violation;        /* the rule of the first violation during this
                                     delivery, or NULL */
    /* CAPTURE: the dead-letter record that would be published. */
    const char *dlq_subject;      /* NULL unless CAPTURE (and not stranded) */
    size_t n_dlq_headers;
    const jet_mock_header *dlq_headers;  /* the daemon's record, built by its own code:
                                            original headers (Nats-<rest> renamed
                                            Jethost-Orig-Nats_<rest>, Jethost-<rest>
                                            Jethost-Orig-Jethost-<rest>), then Nats-Msg-Id
                                            jethost:<stream>.<consumer>:<seq> and the
                                            provenance; unknown values left out
                                            (docs/dead-letters.md) */
    /* The publishes the plugin queued with msg_publish() as the daemon
     * sends them: only with an ACK, in order, until one fails (that one
     * included).  NULL and 0 when none was sent. */
    size_t n_publishes;
    const jet_mock_publish *publishes;
    /* HELD: the stream seq of the message at the head of its lane, the one
     * it waits for (given back with a RETRY or POSTPONE, a capture never
     * acked, or released and not yet run by jet_mock_deliver_held()); 0
     * otherwise.  Added with lanes: a libjethost-mock older than
     * jet_mock_deliver_held() does not write it. */
    uint64_t held_behind;
    /* New members go here, at the end, only.  The caller allocates this
     * struct and the library writes no byte past the size the caller's
     * header gave it (jet_mock_deliver() passes it): a test built against
     * an older header keeps its stack intact. */
} jet_mock_settlement;

/* One publish sent.  Owned by the mock, valid as the settlement is. */
struct jet_mock_publish {
    const char *subject;
    size_t n_headers;
    const jet_mock_header *headers;   /* Nats-Msg-Id first (jethost-pub:<stream>.<consumer>:
                                         <seq>:<stream created ns>:<index>), Jethost-Hops
                                         (the delivery's count + 1) second, then the plugin's */
    const void *data;
    size_t len;
    const char *result;               /* "published"; "duplicate" when a publish with
                                         its Nats-Msg-Id was stored less than 2 minutes
                                         before (mock time: the stream's duplicate
                                         window, nothing stored again); or why it failed */
};

/* The next count publishes fail with reason (as a refusing or unreachable
 * server would make them): the delivery's ACK becomes a retry. */
JET_MOCK_API int jet_mock_fail_publishes(jet_mock *m, const char *reason, unsigned count);

/* --- fault points ---------------------------------------------------------
 * Named faults for the next delivery (jet_mock_deliver() or
 * jet_mock_deliver_held()) only, each as the daemon meets it on a real
 * server; the settlement's outcome says whether it struck, and
 * jet_mock_msg_redeliver() then makes the message's next delivery.
 *
 *   JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, k: the host dies right after the
 *       k-th publish of the delivery is stored (k = 0: right after handle()
 *       returns, before anything is sent).  Nothing after that point
 *       happens: no more publishes, no ack or NAK, no ledger write, no
 *       settled() call.  Outcome "crashed" (the action is what the host
 *       was about to do).  The message comes again as a crash the ledger
 *       does not explain (a suspect, handled alone), and its first k
 *       publishes are then answered "duplicate" by the targets'
 *       2-minute window.  A delivery with fewer than k publishes to send
 *       does not crash.
 *   JET_MOCK_FAULT_ACK_LOST: the delivery's ack (an ACK, or the ack after a
 *       capture) is sent and never reaches the server.  The host does not
 *       know for an ACK (settled() says acked); a capture's ack waits for
 *       its confirmation and is uncertain.  Outcome "ack-lost".  The
 *       message comes again: after an ACK unexplained (a ledger record, if
 *       any, was deleted with the ack), so as a suspect; after a capture
 *       with its record kept.
 *
 * The fault is spent by the next jet_mock_deliver() or
 * jet_mock_deliver_held() call whatever it does (a message held in its
 * lane is not run), and by jet_mock_start() and jet_mock_stop().  k is
 * ignored for JET_MOCK_FAULT_ACK_LOST.  JET_MOCK_EINVAL for another fault.
 * Added in libjethost-mock 2 (ABI 1.2). */
typedef enum jet_mock_fault {
    JET_MOCK_FAULT_CRASH_AFTER_PUBLISH = 1,
    JET_MOCK_FAULT_ACK_LOST = 2
} jet_mock_fault;

JET_MOCK_API int jet_mock_inject_fault(jet_mock *m, jet_mock_fault fault, unsigned k);

/* A plugin metric's value (ctx_metric_declare); *found (may be NULL) is 1
 * when the plugin declared it.  Valid while started (after stop the
 * instance and its metrics are gone: 0, not found). */
JET_MOCK_API int64_t jet_mock_metric(const jet_mock *m, const char *name, int *found);

/* Delivers b to the plugin's handle() (unless the host would capture it
 * before: poison, breaker; or, with a `key`, its lane is held: action
 * JET_MOCK_HELD, see "Lanes" below) and fills *out with the settlement.  Returns
 * JET_MOCK_OK, JET_MOCK_VIOLATION (in record mode; out is filled), or a
 * negative code (not started; out is then zeroed). */
JET_MOCK_API int jet_mock_deliver(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out);
/* What jet_mock_deliver() calls: out_size is sizeof(jet_mock_settlement)
 * as the caller was built, and no byte past it is written (bytes past the
 * library's own size are zeroed; a size smaller than any header ever had is
 * JET_MOCK_EINVAL).  The symbol jet_mock_deliver itself, which binaries
 * built against a header before this one call, writes the members before
 * held_behind only: such a binary reads held_behind as it left it (rebuild
 * it to have the member written). */
JET_MOCK_API int jet_mock_deliver_sized(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out,
                                        size_t out_size);
#define jet_mock_deliver(m, b, out) jet_mock_deliver_sized((m), (b), (out), sizeof(jet_mock_settlement))

/* Delivers msgs[0..n-1] as the daemon hands a handler batch to the
 * plugin (the binding's `batch_max` above 1, docs/batches.md): first
 * deliveries together through handle_batch(), a redelivery (deliveries
 * above 1) on its own through handle(), each verdict settled as
 * jet_mock_deliver() settles handle()'s; outs[i] is msgs[i]'s settlement
 * (its publishes and record valid until the next delivery).  With kind
 * ordered or kv the batch is settled in stream order up to the first
 * message that waits (a RETRY, a POSTPONE), and the ones behind it are
 * JET_MOCK_SET_ASIDE: deliver them again as they are, as the daemon does,
 * after the waiting one settled.  Returns as jet_mock_deliver() (a
 * violation names its rule in every settlement of the call);
 * JET_MOCK_EINVAL (outs zeroed) when n is 0 or above the binding's
 * batch_max, the plugin has no handle_batch(), or (ordered, kv) a message
 * is a redelivery; JET_MOCK_ESTATE when not started or a fault point is
 * armed (faults are for one message: jet_mock_deliver()). */
JET_MOCK_API int jet_mock_deliver_batch_sized(jet_mock *m, const jet_mock_msg *const *msgs, size_t n,
                                              jet_mock_settlement *outs, size_t out_size);
#define jet_mock_deliver_batch(m, msgs, n, outs) \
    jet_mock_deliver_batch_sized((m), (msgs), (n), (outs), sizeof(jet_mock_settlement))

/* Turns b into its next delivery after settlement s, as the server and the
 * attempt ledger would: deliveries + 1, and the ledger record as the
 * settlement wrote it (failures + 1 when s was a failure, the first-failure
 * time set at s->now_ns if it was the first, postpones + 1 after a
 * postpone, a suspect's crashes forgiven once it survived).  After a fault
 * point (outcome "crashed" or "ack-lost") the next delivery reads what was
 * written before the fault, and nothing explains it.  Returns JET_MOCK_OK,
 * or JET_MOCK_ESTATE when s ended the message (ack, capture) or left it
 * with the mock (held): there is no next delivery.  The clock is not moved: advance it by
 * s->delay_ms yourself. */
JET_MOCK_API int jet_mock_msg_redeliver(jet_mock_msg *b, const jet_mock_settlement *s);

/* --- pending deliveries (libjethost-mock 4, ABI 1.2) ------------------------
 *
 * With the policy `max_in_flight` above 0 (and `handler_timeout`, "5m"
 * unless set), handle() may return JET_PENDING and complete the message
 * later with msg_complete(), from any thread, as the daemon allows
 * (docs/async.md).  jet_mock_deliver() then returns action
 * JET_MOCK_PENDING (outcome "pending"): nothing is settled yet, and the
 * mock keeps the delivery (the builder may be freed).  The plugin may call
 * host functions on a pending message from any thread until its
 * msg_complete(); a call after it is a violation (use-after-handle), a
 * second completion too (verdict).
 *
 * jet_mock_settle_completed() settles the completed ones, one a call, in
 * the order they were completed, by the same steps as a verdict of
 * handle() (the settlement as jet_mock_deliver() would have filled it).
 * A delivery completed when the mock clock had passed its handle() time
 * by handler_timeout (or not completed yet then) is late: its lease
 * stopped, as the daemon's lease keeper stops a hung handler's, so its
 * settlement has outcome "late" (an ACK or a capture is still made;
 * nothing is released or recorded: the server would deliver it again).
 * jet_mock_stop() settles what is completed and gives up the rest
 * (outcome "given-up"); their msg_complete() after that returns
 * JET_ESTATE without a violation.
 * A delivery's ledger record, once it was pending, is counted by
 * jet_mock_msg_redeliver() from the settlement.  The mock keeps no bound
 * of its own: max_in_flight is the daemon's pace, not a rule for the
 * plugin. */

/* Settles the earliest completed pending delivery into out.
 * Returns as jet_mock_deliver(); JET_MOCK_ESTATE (out zeroed) when none is
 * completed yet (jet_mock_error() says how many are pending). */
JET_MOCK_API int jet_mock_settle_completed_sized(jet_mock *m, jet_mock_settlement *out, size_t out_size);
#define jet_mock_settle_completed(m, out) jet_mock_settle_completed_sized((m), (out), sizeof(jet_mock_settlement))

/* Deliveries handed over pending and not settled yet (completed or not). */
JET_MOCK_API size_t jet_mock_pending(const jet_mock *m);

/* --- lanes ---------------------------------------------------------------- */

/* With the policy `key` set, the mock keeps the daemon's per-key lanes:
 * messages with one key are handled one at a time, in stream order, and a
 * message whose RETRY or POSTPONE gave it back to the server holds its
 * key's lane until it is redelivered and settled for good (ACK or
 * CAPTURE).  A message that arrives while its lane is held is not handled:
 * jet_mock_deliver() returns JET_MOCK_OK with action JET_MOCK_HELD, and the
 * mock keeps a copy of it (the builder may be freed).  Messages of other
 * keys go on.  A message without the key goes to the keyless lane (one
 * lane for all of them); one that carries the key header twice with two
 * different values is dead-lettered, cause "malformed-headers", as the
 * daemon does.
 *
 * Settling the head does not run what waited behind it: one
 * jet_mock_deliver() is still one settlement, so a test sees each step.
 * Call jet_mock_deliver_held() for each released message instead.
 * docs/mock.md, "Lanes", has a walk-through. */

/* Runs the next held message whose turn has come (its lane's head settled
 * for good): the one with the lowest stream seq among them.  Fills *out as
 * jet_mock_deliver() does and returns the same codes; JET_MOCK_ESTATE (out
 * zeroed, jet_mock_error() says why) when none is ready, or when not
 * started.  A held message that RETRYs or POSTPONEs here holds its lane in
 * turn; redeliver it with jet_mock_msg_redeliver() on your own builder. */
JET_MOCK_API int jet_mock_deliver_held(jet_mock *m, jet_mock_settlement *out);
/* The same with the caller's size, as jet_mock_deliver_sized(). */
JET_MOCK_API int jet_mock_deliver_held_sized(jet_mock *m, jet_mock_settlement *out, size_t out_size);
#define jet_mock_deliver_held(m, out) jet_mock_deliver_held_sized((m), (out), sizeof(jet_mock_settlement))

/* How many messages the mock keeps unhandled: held behind their lane's
 * head, plus those released and waiting for jet_mock_deliver_held().  0
 * without a `key`. */
JET_MOCK_API size_t jet_mock_held_count(const jet_mock *m);

/* The value of dead-letter header `name` in s, or NULL. */
JET_MOCK_API const char *jet_mock_settlement_header(const jet_mock_settlement *s, const char *name);

/* ------------------------------------------------------------------------ */
/* Strict rules and violations                                              */
/* ------------------------------------------------------------------------ */

/* Rule names, as reported:
 *   "verdict"            handle() returned a value outside jet_verdict
 *   "postpone-delay"     JET_POSTPONE without a positive msg_set_delay_ms()
 *   "postpone-cap"       a postpone delay above max_postpone_delay
 *   "reason-length"      a reason longer than JET_REASON_MAX bytes
 *   "use-after-handle"   a jet_msg used after its handle() returned
 *   "thread"             a host call from a second thread by a plugin not
 *                        declared JET_PLUGIN_THREAD_SAFE
 *   "option-undeclared"  an option set, or read, that the plugin does not declare
 *   "option-type"        an option value of the wrong type, or a typed read
 *                        (ctx_option_int, ...) of an option declared with another type
 *   "option-required"    a required option left unset
 *   "publish"            a msg_publish() the host refused (a bad subject or
 *                        header, a Nats-* header, over a limit) with an ACK
 * The first four are plugin errors the daemon settles as failures (never as
 * an ACK): the settlement shows that, and the violation says why. */

JET_MOCK_API size_t jet_mock_violation_count(const jet_mock *m);
/* Violation i (0 = oldest): its rule and its one-line message.  Valid until
 * jet_mock_clear_violations() or free. */
JET_MOCK_API const char *jet_mock_violation_rule(const jet_mock *m, size_t i);
JET_MOCK_API const char *jet_mock_violation_message(const jet_mock *m, size_t i);
/* "RULE: message" of the newest violation, or NULL. */
JET_MOCK_API const char *jet_mock_last_violation(const jet_mock *m);
JET_MOCK_API void jet_mock_clear_violations(jet_mock *m);

/* ------------------------------------------------------------------------ */
/* What the plugin did                                                      */
/* ------------------------------------------------------------------------ */

/* Log lines the plugin wrote with ctx_log(), oldest first.  *level (may be
 * NULL) receives the jet_log_level.  Valid until jet_mock_clear_log() or
 * free. */
JET_MOCK_API size_t jet_mock_log_count(const jet_mock *m);
JET_MOCK_API const char *jet_mock_log_line(const jet_mock *m, size_t i, int *level);
/* How many recorded lines contain `needle`. */
JET_MOCK_API size_t jet_mock_log_contains(const jet_mock *m, const char *needle);
JET_MOCK_API void jet_mock_clear_log(jet_mock *m);

/* Host functions the plugin called, by their jet_host_api member name
 * ("msg_subject", "ctx_log", ...), oldest first.  The option readers are
 * recorded with the option's name, "ctx_option_int(count)".  count(m, fn)
 * counts the entries equal to fn, and, when fn has no parenthesis, those of
 * fn with any option name; count(m, NULL) counts all.  Names are valid until
 * jet_mock_clear_calls() or free. */
JET_MOCK_API size_t jet_mock_call_count(const jet_mock *m, const char *fn);
JET_MOCK_API const char *jet_mock_call_name(const jet_mock *m, size_t i);
JET_MOCK_API void jet_mock_clear_calls(jet_mock *m);

#ifdef __cplusplus
}
#endif

#endif /* JETHOST_MOCK_H */
