/* The schedule check (docs/schedule.md): what the broker and the
 * host will actually do with a binding's retry settings, and whether it
 * hangs together.
 *
 * One pure function (no I/O, no clock, no allocation): it takes the
 * binding's policy and, where known, the stream, consumer and ledger bucket
 * as they are on the server, and reports each term of the envelope
 * separately plus every violation.  `jethost check` prints the report (no
 * server: policy only; `--server`: with the facts), `jethost run` refuses a
 * binding whose report has an error.  docs/schedule.md explains each term
 * and each violation with an example.
 *
 * The lesson behind it: the configured ladder was not the real envelope,
 * several times, each time on a different surface.  So every term here is
 * what is *served*: the ladder is the rungs served before the last attempt
 * (the last rung repeating), not the rungs as listed; the crash fallback is
 * AckWait as the consumer has it, not as the config asked for it. */
#ifndef JET_SCHEDULE_H
#define JET_SCHEDULE_H

#include "config.h"
#include "floor_monitor.h"

#include <glib.h>

typedef struct {
    /* --- The binding's policy (jet_schedule_input_from_binding copies it) -- */
    const guint64 *rungs_ms;          /* borrowed; the retry ladder */
    gsize n_rungs;
    guint max_attempts;               /* 0 = unlimited */
    gboolean accept_expiry;           /* unlimited attempts may let a stream's max_age remove
                                         a message that never succeeds (accept_expiry) */
    guint64 postpone_horizon_ms;      /* postpones are free while the message is younger */
    guint64 max_postpone_delay_ms;    /* the longest single postpone */
    guint64 ack_wait_ms;              /* AckWait the binding asks for (managed mode) */
    gint64 max_deliver;               /* MaxDeliver the binding asks for; <= 0 = unlimited */
    gint64 max_ack_pending;           /* MaxAckPending the binding asks for; <= 0 = unlimited */
    guint capture_reserve;
    guint crash_limit;                /* strikes before poison; 0 = poison off */
    guint workers, batch, threshold;  /* the pull engine: what one binding holds in hand */

    /* The breaker (floor_monitor.h): its room check. */
    JetBreakerMode breaker;           /* observe (0), enforce, off */
    guint64 floor_age_ms;             /* 0 = monitor and breaker off */
    guint min_deliveries;
    gboolean ledger_off;              /* the binding keeps no ledger (ledger = false) */
    gboolean ordered;                 /* kind = ordered or kv: one message at a time, retried in
                                         place, a death attributed by the position record
                                         (docs/ordered.md), not by AckWait redelivery */
    gboolean ordered_span;            /* ordered without checkpoint = kv: span marks, so a
                                         message that kills the host dies once unnamed first
                                         (docs/ordered.md, "Span marks") */
    gboolean lanes;                   /* `key`: per-key lanes (docs/lanes.md) */
    gboolean exclusive;               /* one active host (docs/exclusive.md) */

    /* --- Optional bound --------------------------------------------------- */
    guint64 max_time_to_dead_letter_ms;   /* 0 = no bound */

    /* --- Optional facts from the server, as they are ---------------------- */
    gboolean has_stream;
    guint64 stream_max_age_ms;        /* 0 = unlimited */

    gboolean has_consumer;            /* when TRUE, these replace the binding's values */
    guint64 consumer_ack_wait_ms;
    gint64 consumer_max_deliver;      /* <= 0 = unlimited (2.9.10 shows -1) */
    gint64 consumer_max_ack_pending;  /* <= 0 = unlimited */
    const guint64 *backoff_ms;        /* borrowed; the consumer's server BackOff */
    gsize n_backoff;                  /* 0 = none (the only right answer) */

    gboolean has_ledger;
    guint64 ledger_max_age_ms;        /* the ledger bucket's max_age; 0 = unlimited */
} JetScheduleInput;

typedef enum {
    JET_SCHEDULE_WARNING = 1,
    JET_SCHEDULE_ERROR = 2,
} JetScheduleSeverity;

typedef struct {
    JetScheduleSeverity severity;
    const char *code;                 /* stable, static: "max-time-exceeded", ... */
    char message[480];                /* one line, with the numbers and what to change */
} JetScheduleViolation;

/* More than the number of distinct codes: each code is reported at most once. */
#define JET_SCHEDULE_MAX_VIOLATIONS 24

typedef struct {
    /* The envelope, term by term.  All saturate at G_MAXUINT64. */
    gboolean unlimited;               /* max_attempts 0 and MaxDeliver unlimited: ladder and
                                         worst case unbounded; the duration checks were
                                         skipped, but a finite stream max_age is an error
                                         (unlimited-expiry) unless accept_expiry */
    guint64 attempts;                 /* attempts a message that always fails gets: max_attempts,
                                         or with max_attempts 0 and a finite MaxDeliver the
                                         budget line's delivery; 0 when unlimited */
    gboolean attempts_from_budget;    /* max_attempts 0, finite MaxDeliver: the budget line
                                         (MaxDeliver - capture_reserve) ends the ladder, cause
                                         `budget`, and every check runs on `attempts` */
    gboolean expiry_accepted;         /* unlimited, a finite stream max_age, accept_expiry */
    guint64 stream_max_age_ms;        /* the stream's, when known; 0 = unlimited or unknown */
    guint64 ladder_waits;             /* attempts - 1 (0 when unlimited) */
    guint64 ladder_listed;            /* of those, served from the listed rungs... */
    guint64 ladder_repeats;           /* ...and by repeating the last rung */
    guint64 last_rung_ms;
    guint64 ladder_ms;                /* sum of the rungs served before the last attempt */
    guint64 postpone_horizon_ms;
    guint64 postpone_overshoot_ms;    /* the last free postpone can end past the horizon */
    guint crash_limit;                /* strikes counted in the crash fallback */
    guint64 crash_fallback_ms;        /* crash_limit x AckWait (0 for an ordered binding: the
                                         next host is handed the message at once) */
    guint64 retry_span_ms;            /* ladder + horizon + overshoot: what the stream must keep */
    guint64 worst_case_ms;            /* retry_span + crash_fallback: the envelope */

    /* The crash term, in deliveries: what a message that kills the host
     * every time it runs spends of MaxDeliver (docs/retries.md, "What
     * crashes cost").  It dies once beside others, then runs alone, one
     * strike per death, until it has crash_limit strikes or its delivery
     * reaches the budget line (max_deliver - capture_reserve), where it is
     * captured as poison before it runs; capture_reserve deliveries remain
     * to retry a failed capture.  An ordered binding's message never dies
     * beside others (one is in the handler at a time, and the position
     * record names it): crash_limit deaths, then captured at delivery
     * crash_limit + 1 before it runs; without checkpoint = kv one death more
     * first, within a span mark that names no message (crash_span), so
     * captured at its crash_limit + 2nd handing. */
    gboolean ordered;                 /* the input's: an ordered binding's terms */
    gboolean crash_attributed;        /* FALSE with ledger = false: no suspects, no poison */
    gboolean crash_captured;          /* it is captured at all; FALSE: it goes dark at a finite
                                         MaxDeliver, or is redelivered without bound */
    gboolean crash_at_budget_line;    /* the budget line captures it, before crash_limit strikes */
    gboolean crash_span;              /* ordered_span: its first death strikes nothing */
    guint64 crash_capture_delivery;   /* the delivery its capture is first tried at */
    guint64 crash_strikes;            /* its strikes then: deaths while handled alone */
    guint64 crash_deliveries;         /* capture delivery + capture_reserve (finite MaxDeliver),
                                         else the capture delivery */
    guint64 crash_need;               /* 1 + 1 + capture_reserve: the least a finite MaxDeliver
                                         may be (maxdeliver-crash below it) */
    guint capture_reserve;

    /* The values the checks used: the consumer's when known, else the binding's. */
    gboolean from_consumer;
    guint64 ack_wait_ms;
    gint64 max_deliver;               /* <= 0 = unlimited */
    gint64 max_ack_pending;           /* <= 0 = unlimited */
    guint64 in_hand;                  /* workers x (batch + threshold) */

    /* Where on the ladder the breaker can first claim (room.applies FALSE:
     * breaker off or floor_age 0). */
    JetBreakerMode breaker;
    guint64 floor_age_ms;
    JetBreakerRoom breaker_room;

    guint n_errors, n_warnings;
    gsize n_violations;
    JetScheduleViolation violations[JET_SCHEDULE_MAX_VIOLATIONS];
} JetScheduleReport;

/* Zeroes *in and copies the binding's policy into it; rungs_ms is borrowed
 * from the binding.  Set the bound and the server facts afterwards. */
void jet_schedule_input_from_binding(const JetBindingConfig *binding, JetScheduleInput *in);

/* The check.  Pure: fills *out completely from *in. */
void jet_schedule_check(const JetScheduleInput *in, JetScheduleReport *out);

/* The violation with this code, or NULL. */
const JetScheduleViolation *jet_schedule_report_find(const JetScheduleReport *report,
                                                     const char *code);

/* "error" or "warning". */
const char *jet_schedule_severity_name(JetScheduleSeverity severity);

/* Writes ms as people read it: "0", "250ms", "1m 30s", "1d 2h 3m 4s 5ms"
 * (every non-zero unit, largest first).  Always NUL-terminates; 64 bytes
 * hold any guint64. */
void jet_schedule_format_duration(guint64 ms, char *buf, gsize len);

/* The text `jethost check` prints for one binding (the caller prints the
 * binding's name above it): the envelope terms in words and numbers, then
 * every violation.  Lines end with '\n'.  Caller frees. */
char *jet_schedule_report_format(const JetScheduleReport *report);

/* --- the target streams of a binding's publishes (publish_streams) ------- */

/* One stream a binding's publishes land in, as the server has it. */
typedef struct {
    const char *name;                 /* borrowed */
    gboolean found;                   /* FALSE: no such stream, or unreadable (error says) */
    const char *error;                /* borrowed; why its info could not be read, when
                                         not for want of the stream; NULL otherwise */
    guint64 duplicate_window_ms;      /* how long it remembers a Nats-Msg-Id */
} JetPublishStream;

/* The duplicate window the binding's publishes need (docs/forwarding.md,
 * "No duplicates on redelivery"): the worst case of the envelope, since
 * every delivery of a message, and so every repeat of its publishes, comes
 * within it of the first, and a stream's window runs from the first copy
 * it stored (a duplicate does not extend it).  G_MAXUINT64 when retries
 * are unlimited.  A window must be longer than this: equal is too short. */
guint64 jet_schedule_dedup_need_ms(const JetScheduleReport *report);

/* Adds the publish streams' violations to a checked report: the error
 * publish-stream-missing for each stream not found (or unreadable), the
 * warning publish-dedup-window for each window not longer than
 * jet_schedule_dedup_need_ms(); each code once, naming every stream.
 * Pure, like jet_schedule_check. */
void jet_schedule_check_publish_streams(JetScheduleReport *report, const JetPublishStream *streams,
                                        gsize n_streams);

#endif
