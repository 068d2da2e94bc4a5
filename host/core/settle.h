/* Settlement: what becomes of a delivery once its plugin has answered.
 *
 * One pure function decides (no I/O, no clock: everything it needs comes in
 * the facts), following docs/settlement.md's precedence list to the letter; the
 * executor in the engine acts on the one action it returns, and the mock
 * host returns the same action to plugin authors. */
#ifndef JET_SETTLE_H
#define JET_SETTLE_H

#include <glib.h>

typedef struct {
    const guint64 *rungs_ms;       /* the retry ladder; at least one rung */
    gsize n_rungs;
    guint max_attempts;            /* 0 = unlimited */
    guint64 postpone_horizon_ms;   /* postpones count as failures once the message is older */
    guint64 max_postpone_delay_ms; /* a longer postpone delay is a plugin error */
    guint capture_reserve;         /* deliveries kept for retrying a failed capture */
    gint64 max_deliver;            /* the consumer's MaxDeliver; <= 0 = unlimited */
    guint crash_limit;             /* strikes before a suspect is captured as poison */
    guint max_hops;                /* a delivery forwarded this many times is captured, unhandled; 0 = no limit */
} JetSettlePolicy;

typedef enum {
    JET_ACTION_ACK = 0,        /* confirmed ack */
    JET_ACTION_RETRY,          /* delayed NAK of a ladder rung; a failure is recorded */
    JET_ACTION_POSTPONE,       /* delayed NAK; a postpone is recorded, not a failure */
    JET_ACTION_CAPTURE,        /* dead-letter, then ack */
} JetActionKind;

typedef enum {
    JET_CAUSE_NONE = 0,
    JET_CAUSE_REJECTED,        /* the plugin said REJECT */
    JET_CAUSE_POISON,          /* a suspect reached the crash limit */
    JET_CAUSE_BREAKER,         /* an enforcing breaker claimed it */
    JET_CAUSE_BUDGET,          /* the server's MaxDeliver is about to run out */
    JET_CAUSE_EXHAUSTED,       /* max_attempts failures */
    JET_CAUSE_MALFORMED,       /* its $JS.ACK metadata could not be parsed (capture.h) */
    JET_CAUSE_MALFORMED_HEADERS, /* its header block cannot be read faithfully (hdr_block.h) */
    JET_CAUSE_MAX_DELIVERIES,  /* the server gave up on it (MaxDeliver) and said so in an advisory (advisory.h) */
    JET_CAUSE_HOP_LIMIT,       /* published by hosts max_hops times already: a loop (forward.h) */
} JetCaptureCause;

/* The last cause, for tables that list them all. */
#define JET_CAUSE_LAST JET_CAUSE_HOP_LIMIT

/* What is known about one delivery and its verdict. */
typedef struct {
    /* The plugin's answer, unchecked: handle()'s return value and what it set. */
    int verdict;
    gboolean has_delay;
    guint64 delay_ms;
    gboolean reason_too_long;
    const char *reason;            /* may be NULL */

    /* The delivery. */
    guint32 deliveries;            /* the server's count, >= 1 */
    gboolean has_enqueued;
    gint64 enqueued_ns;
    gint64 now_ns;

    /* The ledger: failures and postpones recorded before this delivery. */
    guint32 failures;
    guint32 postpones;

    /* Decided before the handler ran (crash attribution, breaker). */
    guint32 strikes;               /* crashes while handling this message alone */
    gboolean suspect;              /* crash attribution could not explain its earlier
                                      deliveries: the host would run it alone */
    gboolean breaker_claim;        /* an enforcing breaker claimed this message */
    const char *malformed_headers; /* NULL; else what makes its header block unreadable: it is
                                      captured without the handler, never handled half-read */
    const char *malformed_entry;   /* NULL; else why a kind = kv delivery is no KV entry
                                      (kv_entry.h): captured, cause malformed, unhandled */
    guint32 hops;                  /* its Jethost-Hops: host publishes it came through (forward.h) */

    /* Publishes queued with an ACK (forward.h): a call the host refused (a
     * plugin error), or the publishes sent and one failed (a failure). */
    const char *publish_refused;
    const char *publish_failed;
} JetSettleFacts;

typedef struct {
    JetActionKind kind;
    guint64 delay_ms;              /* RETRY and POSTPONE */
    JetCaptureCause cause;         /* CAPTURE; JET_CAUSE_NONE otherwise */
    gboolean is_failure;           /* this delivery is a failed attempt: RETRY, and any
                                      capture of a failure (EXHAUSTED, and BUDGET when the
                                      outcome was a failure).  Never for ACK, POSTPONE,
                                      REJECTED, POISON, BREAKER. */
    guint32 failure_number;        /* k: failures including this one, when is_failure */
    gboolean plugin_error;         /* the plugin broke a rule; reason names which */
    char reason[320];              /* the plugin's reason, or the rule it broke; always
                                      NUL-terminated, "" when none */
} JetSettleAction;

/* Defaults a binding gets when its config says nothing (docs/settlement.md). */
#define JET_SETTLE_DEFAULT_MAX_ATTEMPTS          5u
#define JET_SETTLE_DEFAULT_POSTPONE_HORIZON_MS   (60u * 60u * 1000u)     /* 1h */
#define JET_SETTLE_DEFAULT_MAX_POSTPONE_DELAY_MS (15u * 60u * 1000u)     /* 15m */
#define JET_SETTLE_DEFAULT_CAPTURE_RESERVE       1u
#define JET_SETTLE_DEFAULT_CRASH_LIMIT           3u
#define JET_SETTLE_DEFAULT_MAX_HOPS              16u
/* The default ladder: 1s, 5s, 30s, 2m, 10m (the last rung repeats); the same
 * defaults as the config keys (host/core/config.c), which a test checks. */
extern const guint64 jet_settle_default_rungs_ms[];
extern const gsize jet_settle_default_n_rungs;

/* Fills p with the defaults above, the default ladder and max_deliver -1. */
void jet_settle_policy_init_default(JetSettlePolicy *p);

/* Before the handler runs: a message whose header block has defects
 * (malformed-headers), one that is no KV entry (malformed), one that came
 * through max_hops host publishes (hops >= max_hops, max_hops >= 1:
 * hop-limit), a suspect at its crash limit (strikes >= crash_limit,
 * crash_limit >= 1; 0 turns poison off), a suspect at the budget line
 * (deliveries >= max_deliver - capture_reserve on a finite MaxDeliver: poison,
 * whatever crash_limit, since one more crash could spend the deliveries its
 * capture needs), or a breaker claim, is captured without calling the
 * plugin, in that order.  Returns TRUE and fills out when so;
 * FALSE when the handler should run (out is then left as an empty, non-ACK
 * action: kind RETRY, delay 0, no cause; do not act on it). */
gboolean jet_settle_before_handle(const JetSettlePolicy *policy, const JetSettleFacts *facts,
                                  JetSettleAction *out);

/* After the handler: exactly one action.  Pure.  When the facts would have
 * made jet_settle_before_handle() capture, decide returns that same capture
 * whatever the verdict (the handler should not have run).  A policy with no
 * rungs is a programmer error: it logs a critical and returns RETRY with
 * delay 0, never an ACK. */
void jet_settle_decide(const JetSettlePolicy *policy, const JetSettleFacts *facts,
                       JetSettleAction *out);

/* "ack", "retry", "postpone", "capture"; "none", "rejected", "poison",
 * "breaker", "budget", "exhausted", "malformed", "malformed-headers",
 * "max-deliveries", "hop-limit".  "unknown" for a value outside the enum. */
const char *jet_action_name(JetActionKind kind);
const char *jet_cause_name(JetCaptureCause cause);

/* The rung served after failure k (k >= 1): rungs[min(k - 1, n_rungs - 1)],
 * i.e. the delay before the attempt k + 1.  The last rung repeats. */
guint64 jet_settle_rung_ms(const JetSettlePolicy *p, guint32 k);

/* The ladder term of the schedule envelope (docs/schedule.md): the sum of the
 * rungs served before the last attempt, i.e. max_attempts - 1 rungs with the
 * repeating tail; 0 when max_attempts is 1; G_MAXUINT64 when max_attempts is
 * 0 (unlimited).  Saturates at G_MAXUINT64.  It reads the ladder alone: a
 * finite MaxDeliver (the budget capture) can end the walk earlier, and
 * postpones and crash redeliveries add time the ladder does not show. */
guint64 jet_settle_ladder_total_ms(const JetSettlePolicy *p);

#endif
