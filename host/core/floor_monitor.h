/* The ack-floor stall monitor and the breaker's decision
 * (docs/floor-monitor.md).  Pure: no I/O, no clock of its own (every time is an input), no
 * logging (the report says when to log and jet_floor_report_format writes
 * the line).  docs/floor-monitor.md explains the rules and their history.
 *
 * The monitor is fed one consumer-info reading at a time (a JetFloorSample):
 *
 *   now_ns            the host clock when the reading was taken
 *   ack_floor         ci->AckFloor.Stream
 *   delivered         ci->Delivered.Stream
 *   num_ack_pending   ci->NumAckPending
 *   max_ack_pending   ci->Config->MaxAckPending (<= 0: unlimited)
 *   num_waiting       ci->NumWaiting
 *   num_pending       ci->NumPending
 *   holds_next        this host holds (in a buffer or a handler) the message
 *                     at stream sequence ack_floor + 1
 *
 * The stall clock runs only while the consumer has delivered past its ack
 * floor (delivered > ack_floor): an idle or caught-up consumer is not
 * stalled, however long its floor sits still.  It starts at the first
 * reading that shows the gap open and restarts when the floor moves (either
 * way: a server crash can move it back) or the gap closes.  A fresh monitor
 * therefore under-reports an old stall: late, never early.
 *
 * The breaker claims at most one message per stall window per consumer,
 * across hosts, with a create-only KV key per window (breaker_claim.h).  A
 * window is named by the floor it stalls on and its index n in that stall:
 * window (F, 0) opens when the floor F has been stalled floor_age; window
 * (F, n + 1) opens floor_age after this host learned that window (F, n) was
 * claimed (by itself or by another host: never earlier than the claim).  A
 * floor that moves starts over at (F', 0), so a claim that cleared the
 * blocker re-arms at once, and one that did not waits out a full window.
 *
 * Thread safety: every function locks the monitor, so the thread that feeds
 * samples and the workers that ask the breaker may share one monitor. */
#ifndef JET_FLOOR_MONITOR_H
#define JET_FLOOR_MONITOR_H

#include "config.h"

#include <glib.h>

typedef struct {
    gint64 floor_age_ns;   /* stalled = stall age >= this; 0 = never stalled (monitor off) */
} JetFloorPolicy;

typedef struct {
    gint64 now_ns;
    guint64 ack_floor;          /* stream sequence */
    guint64 delivered;          /* stream sequence */
    gint64 num_ack_pending;
    gint64 max_ack_pending;     /* <= 0: unlimited (never saturated) */
    gint64 num_waiting;
    guint64 num_pending;
    gboolean holds_next;        /* this host holds ack_floor + 1 */
} JetFloorSample;

typedef struct {
    guint64 floor;              /* the ack floor of this sample */
    guint64 next_seq;           /* floor + 1: the blocker, on an unfiltered dense stream */
    guint64 delivered;
    gboolean gap_open;          /* delivered > floor: the stall clock runs */
    gint64 stall_age_ns;        /* 0 while the clock does not run */
    gboolean stalled;           /* stall_age >= floor_age (floor_age > 0) */
    gboolean holds_next;        /* copied from the sample */
    gboolean log_line;          /* log the stall now: once per floor value */

    gboolean saturated;         /* NumAckPending >= MaxAckPending, a pull waiting */
    gint64 saturated_age_ns;    /* since the saturation began (as observed) */
    gboolean log_saturation;    /* log the saturation now: once per saturation period */
    gint64 num_ack_pending, max_ack_pending, num_waiting;
    guint64 num_pending;
} JetFloorReport;

/* Counters and gauges for the metrics endpoint.  Counters only grow. */
typedef struct {
    /* gauges, from the last sample */
    guint64 floor;
    gint64 stall_age_ns;
    gboolean stalled;
    gboolean saturated;
    /* counters */
    guint64 samples;
    guint64 stalls;             /* stall periods that reached floor_age */
    guint64 saturation_events;  /* saturation periods begun */
    guint64 claims;             /* windows this host claimed (observe and enforce) */
    guint64 claims_lost;        /* windows found already claimed (another host or worker) */
    guint64 claim_errors;       /* claims that failed (KV unreachable, ...) */
    guint64 would_quarantine;   /* claims in observe mode: what enforce would have captured */
    guint64 quarantined;        /* claims in enforce mode: handed to the capture path */
    guint64 counted_again;      /* observe: deliveries of a counted message, not counted again */
} JetFloorStats;

typedef struct JetFloorMonitor JetFloorMonitor;

JetFloorMonitor *jet_floor_monitor_new(const JetFloorPolicy *p);
void jet_floor_monitor_free(JetFloorMonitor *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetFloorMonitor, jet_floor_monitor_free)

/* Feeds one reading; fills *out (which may be NULL). */
void jet_floor_monitor_observe(JetFloorMonitor *m, const JetFloorSample *s, JetFloorReport *out);

void jet_floor_monitor_stats(const JetFloorMonitor *m, JetFloorStats *out);

/* How often to read consumer info for this floor_age: floor_age / 30,
 * at least 1 s and at most 30 s (the stall age is late by at most this). */
guint64 jet_floor_monitor_poll_interval_ms(guint64 floor_age_ms);

/* One log line (no newline) for a report whose log_line is set:
 *   "ack floor 100 stalled for 16m 2s: delivered up to 250, 150 ack pending,
 *    this host holds 101"
 * and, with saturation = TRUE, for one whose log_saturation is set. */
void jet_floor_report_format(const JetFloorReport *r, gboolean saturation, char *buf, gsize len);

/* --- the breaker ----------------------------------------------------------- */

typedef struct {
    JetBreakerMode mode;        /* config.h: observe, enforce, off */
    gint64 floor_age_ns;        /* the same as the monitor's */
    guint min_deliveries;       /* default 2 */
} JetBreakerPolicy;

/* A stall window: the floor it stalls on and its index in that stall.  The
 * same on every host for the same stall. */
typedef struct {
    guint64 floor;
    guint32 n;
} JetBreakerWindow;

/* One delivery the breaker is asked about (at settlement of a failure). */
typedef struct {
    guint64 stream_seq;
    guint64 deliveries;
    gboolean has_first_failure;     /* from the ledger; FALSE: unknown, never claimable */
    gint64 first_failure_ns;
    gint64 now_ns;
} JetBreakerCandidate;

typedef enum {
    JET_BREAKER_CLAIMABLE = 0,      /* every condition holds: claim verdict.window */
    JET_BREAKER_OFF,                /* breaker = off, or floor_age 0 */
    JET_BREAKER_NOT_STALLED,        /* the floor has not been stalled floor_age */
    JET_BREAKER_AT_FLOOR,           /* seq <= floor: already acked, not the stall */
    JET_BREAKER_NO_FIRST_FAILURE,   /* the ledger has no first-failure time */
    JET_BREAKER_FAILING_TOO_SHORT,  /* now - first_failure < floor_age */
    JET_BREAKER_FEW_DELIVERIES,     /* deliveries < min_deliveries */
    JET_BREAKER_WINDOW_USED,        /* this stall window was claimed; the next opens later */
    JET_BREAKER_COUNTED,            /* observe: this seq was counted already (enforce would
                                       have captured it then): not counted again */
} JetBreakerDecision;

typedef struct {
    JetBreakerDecision decision;
    JetBreakerWindow window;        /* the window to claim (CLAIMABLE, WINDOW_USED) */
    gint64 stall_age_ns;
    gint64 failing_ns;              /* now - first_failure (0 when unknown) */
    char why[256];                  /* one phrase, with the numbers: for the log line */
} JetBreakerVerdict;

/* All of: the floor stalled at least floor_age; seq > floor; (observe) seq
 * not counted already; failing at
 * least floor_age by the first-failure time; deliveries >= min_deliveries;
 * and the current window not known to be claimed.  Changes nothing but the
 * counted_again counter. */
JetBreakerVerdict jet_breaker_consider(const JetFloorMonitor *m, const JetBreakerPolicy *p,
                                       const JetBreakerCandidate *c);

typedef enum {
    JET_BREAKER_CLAIM_ERROR = -1,   /* not known: nothing changes, a later delivery tries again */
    JET_BREAKER_CLAIMED = 0,        /* this host won the window */
    JET_BREAKER_ALREADY_CLAIMED = 1,/* someone else (host or worker) had it */
} JetBreakerClaimResult;

/* Tells the monitor how a claim of window w went, at now_ns.  CLAIMED and
 * ALREADY_CLAIMED close the window (the next one opens floor_age later);
 * the counters follow the mode (observe: would_quarantine; enforce:
 * quarantined).  A window of a floor that has since moved only counts. */
void jet_breaker_note_claim(JetFloorMonitor *m, const JetBreakerPolicy *p,
                            const JetBreakerWindow *w, JetBreakerClaimResult result,
                            gint64 now_ns);

/* Observe mode: seq has been counted as would-quarantine, by this host's
 * claim or another host's.  Enforce would have captured it then, so from
 * now on it is JET_BREAKER_COUNTED (until the floor passes it): observe
 * counts what enforce would do, once per message. */
void jet_breaker_note_counted(JetFloorMonitor *m, guint64 seq);

/* "claimable", "off", "not-stalled", ... (static). */
const char *jet_breaker_decision_name(JetBreakerDecision d);

/* --- the room check (the schedule report calls it) ------------------------- */

/* Where on the ladder the breaker can first fire, assuming one failure per
 * delivery (no postpones, no crashes).  The breaker is asked when delivery
 * k arrives, before its handler runs; the message has then been failing
 * for the rungs served after failures 1..k-1.  So it can still fire at the
 * last attempt's delivery: floor_age == the ladder's reach can fire,
 * floor_age > the reach never does (docs/floor-monitor.md). */
typedef struct {
    gboolean applies;               /* breaker on, floor_age > 0, rungs */
    guint64 first_failure_k;        /* first delivery the breaker can claim at; 0 = none */
    guint64 reach_ms;               /* the ladder's reach: rungs before the last attempt
                                       (G_MAXUINT64 with unlimited attempts) */
    gboolean never_fires;           /* first_failure_k > max_attempts */
    gboolean only_at_exhaustion;    /* first_failure_k == max_attempts */
} JetBreakerRoom;

void jet_breaker_room(JetBreakerMode mode, guint64 floor_age_ms, guint min_deliveries,
                      const guint64 *rungs_ms, gsize n_rungs, guint max_attempts,
                      JetBreakerRoom *out);

#endif
