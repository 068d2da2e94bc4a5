#include "schedule.h"

#include <stdarg.h>
#include <string.h>

/* --- saturating arithmetic: a term too large to hold reads as G_MAXUINT64,
 * which fails every bound, never wraps to something small that passes. --- */

static guint64 sat_add(guint64 a, guint64 b)
{
    return a > G_MAXUINT64 - b ? G_MAXUINT64 : a + b;
}

static guint64 sat_mul(guint64 a, guint64 b)
{
    if (a == 0 || b == 0)
        return 0;
    return a > G_MAXUINT64 / b ? G_MAXUINT64 : a * b;
}

void jet_schedule_input_from_binding(const JetBindingConfig *b, JetScheduleInput *in)
{
    g_return_if_fail(b != NULL && in != NULL);
    memset(in, 0, sizeof *in);
    in->rungs_ms = b->rungs_ms;
    in->n_rungs = b->n_rungs;
    in->max_attempts = b->max_attempts;
    in->accept_expiry = b->accept_expiry;
    in->postpone_horizon_ms = b->postpone_horizon_ms;
    in->max_postpone_delay_ms = b->max_postpone_delay_ms;
    in->ack_wait_ms = b->ack_wait_ms;
    in->max_deliver = b->max_deliver;
    in->max_ack_pending = b->max_ack_pending;
    in->capture_reserve = b->capture_reserve;
    in->crash_limit = b->crash_limit;
    in->workers = b->workers;
    in->batch = b->batch;
    in->threshold = b->threshold;
    in->max_time_to_dead_letter_ms = b->max_time_to_dead_letter_ms;
    in->breaker = b->breaker;
    in->floor_age_ms = b->floor_age_ms;
    in->min_deliveries = b->min_deliveries;
    in->ledger_off = !b->ledger;
    in->lanes = b->lane_key.kind != JET_LANE_KEY_OFF;
    in->exclusive = b->exclusive;
    if (JET_KIND_IS_ORDERED(b->kind)) {
        /* In place, one at a time (docs/ordered.md): no breaker, no floor
         * to stall, no server redelivery; crashes attributed by the
         * position record while the ledger is on. */
        in->ordered = TRUE;
        /* At batch 1 a span is one message: every mark is precise. */
        in->ordered_span = b->checkpoint != JET_CHECKPOINT_KV && b->batch > 1;
        in->breaker = JET_BREAKER_MODE_OFF;
        in->floor_age_ms = 0;
        in->max_deliver = -1;
        in->workers = 1;
    }
}

/* --- durations as people read them ---------------------------------------- */

void jet_schedule_format_duration(guint64 ms, char *buf, gsize len)
{
    static const struct {
        const char *suffix;
        guint64 ms;
    } units[] = {
        { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 }, { "ms", 1 },
    };
    g_return_if_fail(buf != NULL && len > 0);
    if (ms == 0) {
        g_strlcpy(buf, "0", len);
        return;
    }
    gsize used = 0;
    buf[0] = '\0';
    for (gsize i = 0; i < G_N_ELEMENTS(units) && ms > 0; i++) {
        guint64 n = ms / units[i].ms;
        if (n == 0)
            continue;
        ms -= n * units[i].ms;
        if (used < len)
            used += (gsize)g_snprintf(buf + used, len - used, "%s%" G_GUINT64_FORMAT "%s",
                                      used ? " " : "", n, units[i].suffix);
    }
}

/* A formatted duration by value, so a message can hold several at once. */
typedef struct {
    char s[64];
} Dur;

static Dur dur(guint64 ms)
{
    Dur d;
    jet_schedule_format_duration(ms, d.s, sizeof d.s);
    return d;
}

static Dur count_or_unlimited(gint64 v)
{
    Dur d;
    if (v <= 0)
        g_snprintf(d.s, sizeof d.s, "%" G_GINT64_FORMAT " (unlimited)", v);
    else
        g_snprintf(d.s, sizeof d.s, "%" G_GINT64_FORMAT, v);
    return d;
}

/* --- the report ------------------------------------------------------------ */

static void add(JetScheduleReport *out, JetScheduleSeverity sev, const char *code,
                const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static void add(JetScheduleReport *out, JetScheduleSeverity sev, const char *code,
                const char *fmt, ...)
{
    /* Each code is added at most once, and there are fewer codes than slots. */
    g_assert(out->n_violations < JET_SCHEDULE_MAX_VIOLATIONS);
    JetScheduleViolation *v = &out->violations[out->n_violations++];
    v->severity = sev;
    v->code = code;
    va_list ap;
    va_start(ap, fmt);
    g_vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
    if (sev == JET_SCHEDULE_ERROR)
        out->n_errors++;
    else
        out->n_warnings++;
}

/* The ladder: attempts 1..A have A - 1 waits between them; the wait after
 * failure k is rungs[min(k - 1, n - 1)] (settle.h rule 7), so the listed
 * rungs are served first and the last one repeats for the rest.  Closed
 * form, so A = G_MAXUINT costs nothing. */
static void ladder(const JetScheduleInput *in, JetScheduleReport *out)
{
    out->ladder_waits = out->attempts - 1;
    if (in->n_rungs == 0 || in->rungs_ms == NULL)
        return;   /* reported as no-rungs; nothing can be served */
    out->ladder_listed = MIN(out->ladder_waits, (guint64)in->n_rungs);
    out->ladder_repeats = out->ladder_waits - out->ladder_listed;
    out->last_rung_ms = in->rungs_ms[in->n_rungs - 1];
    guint64 sum = 0;
    for (guint64 i = 0; i < out->ladder_listed; i++)
        sum = sat_add(sum, in->rungs_ms[i]);
    out->ladder_ms = sat_add(sum, sat_mul(out->ladder_repeats, out->last_rung_ms));
}

/* The crash term.  A message that kills the host on every run spends its
 * first delivery dying beside others (a first delivery is never a suspect:
 * nothing has been lost yet).  From its second it is a suspect, handled
 * alone; each death leaves the isolation marker set, and the next delivery
 * finds it: one strike, so delivery d (d >= 2) comes with d - 2 strikes.  It
 * is captured as poison at delivery crash_limit + 2, or at the budget line
 * max_deliver - capture_reserve if that comes first (settle.h: a suspect
 * there is captured before it runs), but never before delivery 2.  A finite
 * MaxDeliver then has to hold capture_reserve more for retrying a failed
 * capture, so it needs 1 + 1 + capture_reserve at least, whatever
 * crash_limit is. */
static void crash_term(const JetScheduleInput *in, JetScheduleReport *out)
{
    out->crash_attributed = !in->ledger_off;
    out->capture_reserve = in->capture_reserve;
    out->crash_need = 2 + (guint64)in->capture_reserve;
    if (!out->crash_attributed)
        return;   /* no suspects without the ledger: never captured */
    if (in->ordered) {
        /* One message in the handler at a time, named by the position
         * record: each death is its strike, and the next host captures it
         * at crash_limit strikes before it runs (docs/ordered.md).  Without
         * checkpoint = kv the record is a span mark first: that death names
         * no message, and the span's replay, one mark a message, dies once
         * more to name it ("Span marks"). */
        if (in->crash_limit == 0)
            return;
        out->crash_captured = TRUE;
        out->crash_span = in->ordered_span;
        out->crash_strikes = in->crash_limit;
        out->crash_capture_delivery = (guint64)in->crash_limit + 1 + (in->ordered_span ? 1 : 0);
        out->crash_deliveries = out->crash_capture_delivery;
        return;
    }
    guint64 at = in->crash_limit >= 1 ? (guint64)in->crash_limit + 2 : G_MAXUINT64;
    if (out->max_deliver > 0) {
        /* No overflow: max_deliver > 0 and the reserve fits in 32 bits. */
        gint64 line = out->max_deliver - (gint64)in->capture_reserve;
        guint64 at_line = line > 2 ? (guint64)line : 2;
        if (at_line < at) {
            at = at_line;
            out->crash_at_budget_line = TRUE;
        }
    }
    if (at == G_MAXUINT64)
        return;   /* crash_limit 0 and MaxDeliver unlimited */
    if (out->max_deliver > 0 && at > (guint64)out->max_deliver)
        return;   /* its first death spends the last delivery */
    out->crash_captured = TRUE;
    out->crash_capture_delivery = at;
    out->crash_strikes = at - 2;
    out->crash_deliveries = out->max_deliver > 0 ? sat_add(at, in->capture_reserve) : at;
}

void jet_schedule_check(const JetScheduleInput *in, JetScheduleReport *out)
{
    g_return_if_fail(in != NULL && out != NULL);
    memset(out, 0, sizeof *out);

    /* What the checks use: the server's values when known, because those
     * are what will happen; the binding's otherwise (what managed mode
     * would create). */
    out->from_consumer = in->has_consumer;
    out->ack_wait_ms = in->has_consumer ? in->consumer_ack_wait_ms : in->ack_wait_ms;
    out->max_deliver = in->has_consumer ? in->consumer_max_deliver : in->max_deliver;
    out->max_ack_pending = in->has_consumer ? in->consumer_max_ack_pending : in->max_ack_pending;
    out->in_hand = sat_mul(in->workers, (guint64)in->batch + in->threshold);

    /* --- the envelope ---------------------------------------------------- */
    /* max_attempts 0 is unlimited only when MaxDeliver is too: otherwise
     * settlement's budget rule captures any failure at delivery MaxDeliver -
     * capture_reserve (never before delivery 1), which then is the last
     * attempt, and the message is dead-lettered as `budget` exactly as
     * exhaustion would at that many attempts (docs/schedule.md). */
    if (in->max_attempts > 0) {
        out->attempts = in->max_attempts;
    } else if (out->max_deliver > 0) {
        gint64 line = out->max_deliver - (gint64)in->capture_reserve;
        out->attempts = line > 1 ? (guint64)line : 1;
        out->attempts_from_budget = TRUE;
    }
    out->unlimited = out->attempts == 0;
    out->stream_max_age_ms = in->has_stream ? in->stream_max_age_ms : 0;
    if (!out->unlimited)
        ladder(in, out);
    out->postpone_horizon_ms = in->postpone_horizon_ms;
    /* A postpone granted just inside the horizon holds the message for up
     * to max_postpone_delay past it; a horizon of 0 grants none. */
    out->postpone_overshoot_ms = in->postpone_horizon_ms ? in->max_postpone_delay_ms : 0;
    /* Each strike is one death of the host with the message in hand, and
     * each costs one AckWait before the server redelivers. */
    out->crash_limit = in->crash_limit;
    out->ordered = in->ordered;
    /* An ordered binding's next host is handed the message at once: no
     * AckWait runs out in between (its restart is the supervisor's time). */
    out->crash_fallback_ms = in->ordered ? 0 : sat_mul(in->crash_limit, out->ack_wait_ms);
    if (out->unlimited) {
        out->retry_span_ms = G_MAXUINT64;
        out->worst_case_ms = G_MAXUINT64;
    } else {
        out->retry_span_ms = sat_add(sat_add(out->ladder_ms, out->postpone_horizon_ms),
                                     out->postpone_overshoot_ms);
        out->worst_case_ms = sat_add(out->retry_span_ms, out->crash_fallback_ms);
    }
    crash_term(in, out);

    /* --- the ladder itself ----------------------------------------------- */
    if (in->n_rungs == 0 || in->rungs_ms == NULL)
        add(out, JET_SCHEDULE_ERROR, "no-rungs",
            "the retry ladder has no rungs: a RETRY would have no delay to wait; give the "
            "binding at least one rung (rungs = 1s, 5s, 30s, 2m, 10m is the default)");

    /* --- unlimited retries on an expiring stream --------------------------- */
    /* Retried until it succeeds, a message that never does is removed by
     * max_age with no dead-letter record: silent loss, unless the binding
     * says it accepts that. */
    if (out->unlimited && in->has_stream && in->stream_max_age_ms > 0) {
        if (in->accept_expiry) {
            out->expiry_accepted = TRUE;
        } else {
            Dur age = dur(in->stream_max_age_ms);
            add(out, JET_SCHEDULE_ERROR, "unlimited-expiry",
                "max_attempts 0 with MaxDeliver unlimited retries a failing message until it "
                "succeeds, but the stream's max_age %s removes it at that age: a message that "
                "never succeeds expires with no dead-letter record (silent data loss); set "
                "max_attempts or a finite max_deliver so that it is dead-lettered, or "
                "accept_expiry = true if losing it is acceptable",
                age.s);
        }
    }

    /* --- duration checks (skipped, never failed, with unlimited attempts) - */
    if (!out->unlimited) {
        Dur worst = dur(out->worst_case_ms), span = dur(out->retry_span_ms);

        if (in->max_time_to_dead_letter_ms > 0 && out->worst_case_ms > in->max_time_to_dead_letter_ms) {
            Dur bound = dur(in->max_time_to_dead_letter_ms);
            Dur over = dur(out->worst_case_ms - in->max_time_to_dead_letter_ms);
            Dur l = dur(out->ladder_ms), h = dur(out->postpone_horizon_ms);
            Dur o = dur(out->postpone_overshoot_ms), c = dur(out->crash_fallback_ms);
            add(out, JET_SCHEDULE_ERROR, "max-time-exceeded",
                "worst case %s (ladder %s + postpone horizon %s + last postpone %s + crash "
                "fallback %s) exceeds max_time_to_dead_letter %s by %s: shorten the ladder, "
                "lower %s, postpone_horizon, crash_limit or ack_wait, or raise the bound",
                worst.s, l.s, h.s, o.s, c.s, bound.s, over.s,
                out->attempts_from_budget ? "max_deliver (max_attempts 0: the budget line ends "
                                            "the ladder)" : "max_attempts");
        }

        /* The server removes a message once its age reaches max_age, and the
         * envelope leaves out the message's wait before its first delivery
         * and every handler's run time: equality is already too short. */
        if (in->has_stream && in->stream_max_age_ms > 0) {
            Dur age = dur(in->stream_max_age_ms);
            if (in->stream_max_age_ms <= out->retry_span_ms) {
                Dur l = dur(out->ladder_ms), h = dur(out->postpone_horizon_ms);
                Dur o = dur(out->postpone_overshoot_ms);
                add(out, JET_SCHEDULE_ERROR, "stream-max-age-short",
                    "stream max_age %s is not longer than ladder %s + postpone horizon %s + "
                    "last postpone %s = %s: messages would expire while still being retried "
                    "(silent data loss); raise the stream's max_age above %s or shorten the "
                    "ladder or the horizon",
                    age.s, l.s, h.s, o.s, span.s, span.s);
            } else if (in->stream_max_age_ms <= out->worst_case_ms) {
                Dur c = dur(out->crash_fallback_ms);
                add(out, JET_SCHEDULE_WARNING, "stream-max-age-crash",
                    "stream max_age %s is not longer than the worst case %s with the crash "
                    "fallback %s: a message that keeps killing the host can expire before it "
                    "is captured as poison; raise the stream's max_age above %s or lower "
                    "crash_limit or ack_wait",
                    age.s, worst.s, c.s, worst.s);
            }
        }

        /* Conservative: the envelope, although a ledger entry's age restarts
         * at each write (docs/schedule.md). */
        if (in->has_ledger && in->ledger_max_age_ms > 0 && in->ledger_max_age_ms <= out->worst_case_ms) {
            Dur age = dur(in->ledger_max_age_ms);
            add(out, JET_SCHEDULE_ERROR, "ledger-max-age-short",
                "ledger bucket max_age %s is not longer than the worst case %s: an entry could "
                "expire while its message is still being retried, and the message would start "
                "the ladder over; raise the bucket's max_age above %s",
                age.s, worst.s, worst.s);
        }
    }

    /* --- one scheduler ----------------------------------------------------- */
    if (in->has_consumer && in->n_backoff > 0 && in->backoff_ms != NULL) {
        char list[160] = "";
        gsize shown = MIN(in->n_backoff, (gsize)4);
        for (gsize i = 0; i < shown; i++) {
            Dur b = dur(in->backoff_ms[i]);
            g_strlcat(list, i ? ", " : "", sizeof list);
            g_strlcat(list, b.s, sizeof list);
        }
        if (in->n_backoff > shown)
            g_strlcat(list, ", ...", sizeof list);
        add(out, JET_SCHEDULE_ERROR, "server-backoff",
            "the consumer has a server BackOff [%s] (%" G_GSIZE_FORMAT " values) beside the "
            "host's ladder: two schedulers compose (a delayed NAK and BackOff add up); remove "
            "BackOff from the consumer",
            list, in->n_backoff);

        /* nats-server 2.9.10 consumer.go: MaxDeliver <= len(BackOff) is
         * err 10116, after defaults, so unlimited (-1) is refused too. */
        if (in->consumer_max_deliver <= 0 || (guint64)in->consumer_max_deliver <= in->n_backoff) {
            Dur md = count_or_unlimited(in->consumer_max_deliver);
            add(out, JET_SCHEDULE_ERROR, "maxdeliver-le-backoff",
                "MaxDeliver %s is not more than len(BackOff) %" G_GSIZE_FORMAT ": nats-server "
                "2.9.10 refuses such a consumer (err 10116); remove BackOff from the consumer",
                md.s, in->n_backoff);
        }

        if (in->consumer_ack_wait_ms != in->backoff_ms[0]) {
            Dur aw = dur(in->consumer_ack_wait_ms), b0 = dur(in->backoff_ms[0]);
            add(out, JET_SCHEDULE_WARNING, "ackwait-ne-backoff0",
                "AckWait %s differs from BackOff[0] %s: 2.9.10 overwrites AckWait with "
                "BackOff[0], so the crash fallback is not what was asked for; remove BackOff "
                "from the consumer",
                aw.s, b0.s);
        }
    }

    /* --- the server's delivery budget ---------------------------------------- */
    /* With max_attempts 0 the budget line is the last attempt by definition. */
    if (!out->unlimited && !out->attempts_from_budget && out->max_deliver > 0) {
        guint64 need = (guint64)in->max_attempts + in->capture_reserve;
        if ((guint64)out->max_deliver < need)
            add(out, JET_SCHEDULE_ERROR, "maxdeliver-too-small",
                "MaxDeliver %" G_GINT64_FORMAT " is less than max_attempts %u + capture_reserve "
                "%u = %" G_GUINT64_FORMAT ": the server's deliveries run out before the ladder "
                "does, and failing messages are captured early as `budget`; set max_deliver to "
                "-1 (the host owns the ladder) or at least %" G_GUINT64_FORMAT,
                out->max_deliver, in->max_attempts, in->capture_reserve, need, need);
    }

    /* A crash yields no verdict, so the budget rule above never sees one: the
     * crash term is checked on its own, whatever max_attempts is. */
    if (out->crash_attributed && out->max_deliver > 0) {
        guint64 md = (guint64)out->max_deliver;
        if (md < out->crash_need) {
            char left[200];
            if (out->crash_captured)
                g_snprintf(left, sizeof left, "captures it at delivery %" G_GUINT64_FORMAT
                           ", leaving %" G_GUINT64_FORMAT " of capture_reserve %u to retry a "
                           "failed capture, after which it goes dark unrecorded",
                           out->crash_capture_delivery, md - out->crash_capture_delivery,
                           in->capture_reserve);
            else
                g_strlcpy(left, "leaves it none to be captured: its first death spends the last "
                          "delivery and it goes dark unrecorded", sizeof left);
            add(out, JET_SCHEDULE_ERROR, "maxdeliver-crash",
                "crash term: a crash-looping message needs 1 + 1 + capture_reserve %u = %"
                G_GUINT64_FORMAT " deliveries (one to die beside others, one to be captured as "
                "poison at the budget line, the reserve); MaxDeliver %" G_GINT64_FORMAT " %s; "
                "set max_deliver to -1 (the host owns the ladder) or at least %" G_GUINT64_FORMAT,
                in->capture_reserve, out->crash_need, out->max_deliver, left, out->crash_need);
        } else if (in->crash_limit >= 1 && out->crash_at_budget_line) {
            guint64 full = sat_add(out->crash_need, in->crash_limit);
            add(out, JET_SCHEDULE_WARNING, "crash-limit-cut",
                "crash term: the budget line captures a crash-looping message as poison after "
                "fewer than crash_limit %u strikes: %" G_GUINT64_FORMAT " (at delivery %"
                G_GUINT64_FORMAT " = MaxDeliver %" G_GINT64_FORMAT " - capture_reserve %u, "
                "before it runs again); a suspect there is captured without running, so a "
                "message held beside a crash %s; set max_deliver to -1 or at least %"
                G_GUINT64_FORMAT " for every strike",
                in->crash_limit, out->crash_strikes, out->crash_capture_delivery,
                out->max_deliver, in->capture_reserve,
                out->crash_strikes == 0 ? "is captured too when it comes back"
                                        : "can be captured too if it comes back that late",
                full);
        }
    }
    if (!out->crash_attributed && in->ordered) {
        add(out, JET_SCHEDULE_WARNING, "crash-unbounded",
            "crash term: ledger = false leaves an ordered binding no position record: a message that kills "
            "the host is never struck and never captured as poison, and a restart that reaches it again "
            "(deliver = all, say) dies on it again, without bound; set ledger = true");
    } else if (!out->crash_attributed) {
        Dur md = count_or_unlimited(out->max_deliver);
        add(out, JET_SCHEDULE_WARNING, "crash-no-ledger",
            "crash term: ledger = false leaves no crash attribution: a message that kills the "
            "host is never a suspect and never captured as poison, and %s (MaxDeliver %s); set "
            "ledger = true",
            out->max_deliver > 0 ? "goes dark unrecorded when its deliveries run out"
                                 : "is redelivered every AckWait without bound", md.s);
    }

    /* --- MaxAckPending headroom -------------------------------------------- */
    /* Messages waiting out a delayed NAK count in NumAckPending (floor-monitor.md).
     * Room left = MaxAckPending - in_hand; less than half is a warning, i.e.
     * MaxAckPending < 2 x in_hand.  Exactly half is enough. */
    if (out->max_ack_pending > 0) {
        guint64 need = sat_mul(out->in_hand, 2);
        if ((guint64)out->max_ack_pending < need) {
            guint64 map = (guint64)out->max_ack_pending;
            guint64 room = map > out->in_hand ? map - out->in_hand : 0;
            add(out, JET_SCHEDULE_WARNING, "ackpending-headroom",
                "workers %u x (batch %u + threshold %u) = %" G_GUINT64_FORMAT " in hand leaves "
                "%" G_GUINT64_FORMAT " of MaxAckPending %" G_GINT64_FORMAT " for retrying and "
                "postponed messages, less than half: they count in NumAckPending and can stop "
                "the consumer; raise max_ack_pending to at least %" G_GUINT64_FORMAT " or lower "
                "workers, batch or threshold",
                in->workers, in->batch, in->threshold, out->in_hand, room,
                out->max_ack_pending, need);
        }
    }

    /* --- the breaker's room (floor_monitor.h, docs/floor-monitor.md) ---------- */
    out->breaker = in->breaker;
    out->floor_age_ms = in->floor_age_ms;
    guint room_attempts = out->attempts > G_MAXUINT ? G_MAXUINT : (guint)out->attempts;
    jet_breaker_room(in->breaker, in->floor_age_ms, in->min_deliveries, in->rungs_ms,
                     in->n_rungs, room_attempts, &out->breaker_room);
    gboolean enforce = in->breaker == JET_BREAKER_MODE_ENFORCE;
    if (out->breaker_room.applies && out->breaker_room.never_fires) {
        /* The settlement weighs a claim ahead of exhaustion, so a floor_age
         * equal to the ladder's reach still fires, on the last attempt:
         * only more than the reach (`>`) never does. */
        Dur fa = dur(in->floor_age_ms), reach = dur(out->breaker_room.reach_ms);
        if (in->floor_age_ms > out->breaker_room.reach_ms)
            add(out, enforce ? JET_SCHEDULE_ERROR : JET_SCHEDULE_WARNING, "breaker-no-room",
                "floor_age %s is more than the ladder's reach %s (the rungs served before "
                "attempt %u%s): the ladder dead-letters a failing message before it has failed "
                "for floor_age, so the breaker (%s) can never claim one; lower floor_age to at "
                "most %s, lengthen the ladder, or set breaker = off",
                fa.s, reach.s, room_attempts,
                out->attempts_from_budget ? ", the budget line" : "",
                enforce ? "enforce" : "observe", reach.s);
        else
            add(out, enforce ? JET_SCHEDULE_ERROR : JET_SCHEDULE_WARNING, "breaker-no-room",
                "min_deliveries %u is more than %s %u: the ladder dead-letters a "
                "failing message before its delivery %u, so the breaker (%s) can never claim "
                "one; lower min_deliveries or set breaker = off",
                in->min_deliveries,
                out->attempts_from_budget ? "the attempts the budget line allows"
                                          : "max_attempts",
                room_attempts, in->min_deliveries, enforce ? "enforce" : "observe");
    }
    if (in->breaker != JET_BREAKER_MODE_OFF && in->floor_age_ms > 0 && in->ledger_off)
        add(out, enforce ? JET_SCHEDULE_ERROR : JET_SCHEDULE_WARNING, "breaker-no-ledger",
            "the breaker (%s) needs the ledger's first-failure time and the binding keeps no "
            "ledger (ledger = false): it can never claim a message; set ledger = true or "
            "breaker = off", enforce ? "enforce" : "observe");

    /* --- lanes across hosts ------------------------------------------------- */
    if (in->lanes && !in->exclusive)
        add(out, JET_SCHEDULE_WARNING, "lanes-not-exclusive",
            "key is set and exclusive = false: every host keeps its own lanes, so two messages of one "
            "key handled by two hosts may run at once and out of order; remove exclusive = false "
            "(key implies it) or split the subjects into partitions, one exclusive binding each "
            "(docs/lanes.md)");

    /* --- crashes with poison detection off --------------------------------- */
    if (in->crash_limit == 0 && !jet_schedule_report_find(out, "crash-unbounded")) {
        Dur aw = dur(out->ack_wait_ms);
        if (in->ordered)
            add(out, JET_SCHEDULE_WARNING, "crash-unbounded",
                "crash_limit 0 turns poison detection off: a message that kills the host is "
                "handed to each next host again, without bound; set crash_limit (3 is the default)");
        else if (out->crash_captured)
            add(out, JET_SCHEDULE_WARNING, "crash-unbounded",
                "crash_limit 0 turns poison detection off: only the budget line captures a "
                "message that kills the host, at delivery %" G_GUINT64_FORMAT " after %"
                G_GUINT64_FORMAT " deaths, each costing an AckWait (%s) that the envelope does "
                "not count; set crash_limit (3 is the default)",
                out->crash_capture_delivery, out->crash_capture_delivery - 1, aw.s);
        else if (out->max_deliver > 0)
            add(out, JET_SCHEDULE_WARNING, "crash-unbounded",
                "crash_limit 0 turns poison detection off, and nothing else captures a message "
                "that kills the host here (see the crash term): it goes dark when its deliveries "
                "run out; set crash_limit (3 is the default)");
        else
            add(out, JET_SCHEDULE_WARNING, "crash-unbounded",
                "crash_limit 0 turns poison detection off: a message that kills the host is "
                "redelivered every AckWait %s without bound, and the envelope does not count "
                "crashes; set crash_limit (3 is the default)",
                aw.s);
    }
}

const JetScheduleViolation *jet_schedule_report_find(const JetScheduleReport *report,
                                                     const char *code)
{
    g_return_val_if_fail(report != NULL && code != NULL, NULL);
    for (gsize i = 0; i < report->n_violations; i++) {
        if (strcmp(report->violations[i].code, code) == 0)
            return &report->violations[i];
    }
    return NULL;
}

const char *jet_schedule_severity_name(JetScheduleSeverity severity)
{
    switch (severity) {
    case JET_SCHEDULE_ERROR:
        return "error";
    case JET_SCHEDULE_WARNING:
        return "warning";
    }
    return "unknown";
}

/* --- the text `jethost check` prints --------------------------------------- */

static void term(GString *s, const char *name, const char *value, const char *why)
{
    g_string_append_printf(s, "  %-19s %-14s %s\n", name, value, why);
}

static const char *unlimited_or(const JetScheduleReport *r, const Dur *d)
{
    return r->unlimited ? "unlimited" : d->s;
}

/* The crash term in deliveries, beside the durations: it is not part of
 * their sum, it is what a crash-looping message spends of MaxDeliver. */
static void crash_term_line(GString *s, const JetScheduleReport *r)
{
    Dur md = count_or_unlimited(r->max_deliver);
    char value[64];
    g_autofree char *why = NULL;
    if (r->ordered) {
        if (r->crash_captured) {
            g_snprintf(value, sizeof value, "%" G_GUINT64_FORMAT " deliveries", r->crash_deliveries);
            why = g_strdup_printf("a message that kills the host: %s%" G_GUINT64_FORMAT " deaths, each with it "
                                  "alone in the handler (the position record names it), captured as "
                                  "poison at delivery %" G_GUINT64_FORMAT " before it runs (crash_limit %u "
                                  "strikes)", r->crash_span ? "1 death within a span mark (no checkpoint: "
                                  "names no message), then " : "", r->crash_strikes,
                                  r->crash_capture_delivery, r->crash_limit);
        } else {
            g_strlcpy(value, "never", sizeof value);
            why = g_strdup(r->crash_attributed ? "crash_limit 0: a message that kills the host is never "
                                                 "captured"
                                               : "ledger = false: no position record, a message that "
                                                 "kills the host is never struck or captured");
        }
    } else if (!r->crash_attributed) {
        g_strlcpy(value, "never", sizeof value);
        why = g_strdup_printf("ledger = false: no crash attribution, a message that kills the "
                              "host is never captured; MaxDeliver %s", md.s);
    } else if (!r->crash_captured) {
        g_strlcpy(value, "never", sizeof value);
        why = g_strdup_printf(r->max_deliver > 0
                              ? "a message that kills the host spends MaxDeliver %s on its first "
                                "death, beside others: it goes dark unrecorded"
                              : "crash_limit 0 and MaxDeliver %s: a message that kills the host "
                                "is redelivered without bound", md.s);
    } else {
        g_snprintf(value, sizeof value, "%" G_GUINT64_FORMAT " deliveries", r->crash_deliveries);
        char how[96];
        if (!r->crash_at_budget_line)
            g_snprintf(how, sizeof how, "crash_limit %u strikes", r->crash_limit);
        else if (r->crash_limit == 0)
            g_strlcpy(how, "the budget line; crash_limit 0", sizeof how);
        else
            g_snprintf(how, sizeof how, "the budget line, %" G_GUINT64_FORMAT " of crash_limit %u "
                       "strikes", r->crash_strikes, r->crash_limit);
        char tail[96];
        if (r->max_deliver <= 0)
            g_snprintf(tail, sizeof tail, "; MaxDeliver %s", md.s);
        else if (r->crash_deliveries > (guint64)r->max_deliver)
            g_snprintf(tail, sizeof tail, " + capture_reserve %u: %" G_GUINT64_FORMAT
                       " more than MaxDeliver %s", r->capture_reserve,
                       r->crash_deliveries - (guint64)r->max_deliver, md.s);
        else
            g_snprintf(tail, sizeof tail, " + capture_reserve %u; MaxDeliver %s",
                       r->capture_reserve, md.s);
        why = g_strdup_printf("a message that kills the host: 1 death beside others + %"
                              G_GUINT64_FORMAT " alone, captured as poison at delivery %"
                              G_GUINT64_FORMAT " (%s)%s",
                              r->crash_strikes, r->crash_capture_delivery, how, tail);
    }
    term(s, "crash term", value, why);
}

char *jet_schedule_report_format(const JetScheduleReport *r)
{
    g_return_val_if_fail(r != NULL, NULL);
    GString *s = g_string_new(NULL);
    Dur ladder = dur(r->ladder_ms), horizon = dur(r->postpone_horizon_ms);
    Dur over = dur(r->postpone_overshoot_ms), crash = dur(r->crash_fallback_ms);
    Dur worst = dur(r->worst_case_ms), aw = dur(r->ack_wait_ms), last = dur(r->last_rung_ms);
    g_autofree char *why = NULL;

    Dur md = count_or_unlimited(r->max_deliver), map = count_or_unlimited(r->max_ack_pending);
    if (r->unlimited)
        g_string_append(s, "envelope: unlimited (max_attempts 0, MaxDeliver unlimited): a failing "
                           "message is retried until it succeeds; the duration checks are "
                           "skipped\n");
    else if (r->attempts_from_budget)
        g_string_append_printf(s, "envelope: at most %s from the first delivery to the "
                                  "dead-letter, worst case (max_attempts 0 with MaxDeliver %s: "
                                  "the budget line dead-letters a failing message at delivery %"
                                  G_GUINT64_FORMAT ", cause budget)\n",
                               worst.s, md.s, r->attempts);
    else
        g_string_append_printf(s, "envelope: at most %s from the first delivery to the "
                                  "dead-letter, worst case\n", worst.s);

    /* With max_attempts 0 and a finite MaxDeliver, say what ends the ladder. */
    g_autofree char *budget = r->attempts_from_budget
        ? g_strdup_printf("max_attempts 0, but the budget line (MaxDeliver %s - capture_reserve "
                          "%u) makes delivery %" G_GUINT64_FORMAT " the last attempt; ",
                          md.s, r->capture_reserve, r->attempts)
        : g_strdup("");
    if (r->unlimited)
        why = g_strdup("max_attempts 0: no last attempt, the last rung repeats for ever");
    else if (r->ladder_waits == 0)
        why = g_strdup_printf("%sno wait, the first failure is dead-lettered",
                              r->attempts_from_budget ? budget : "max_attempts 1: ");
    else if (r->ladder_waits == 1)
        why = g_strdup_printf("%s1 wait between 2 attempts: the first rung", budget);
    else if (r->ladder_repeats == 0)
        why = g_strdup_printf("%s%" G_GUINT64_FORMAT " waits between %" G_GUINT64_FORMAT
                              " attempts: the first %" G_GUINT64_FORMAT " rungs", budget,
                              r->ladder_waits, r->ladder_waits + 1, r->ladder_listed);
    else
        why = g_strdup_printf("%s%" G_GUINT64_FORMAT " waits between %" G_GUINT64_FORMAT
                              " attempts: the %" G_GUINT64_FORMAT " listed rung%s, then the "
                              "last one (%s) %" G_GUINT64_FORMAT " more time%s", budget,
                              r->ladder_waits, r->ladder_waits + 1, r->ladder_listed,
                              r->ladder_listed == 1 ? "" : "s", last.s, r->ladder_repeats,
                              r->ladder_repeats == 1 ? "" : "s");
    term(s, "ladder", unlimited_or(r, &ladder), why);
    term(s, "postpone horizon", horizon.s,
         r->postpone_horizon_ms ? "postpones are free while the message is younger"
                                : "0: every postpone counts as a failure");
    term(s, "last postpone", over.s,
         "a postpone granted just inside the horizon can end this far past it");
    g_free(why);
    if (r->ordered)
        why = g_strdup_printf("crash_limit %u deaths, each handing the message to the next host at "
                              "once (no AckWait; the restart itself is not counted)", r->crash_limit);
    else
        why = g_strdup_printf("crash_limit %u strikes x AckWait %s (%s)", r->crash_limit, aw.s,
                              r->from_consumer ? "the consumer's" : "the binding's");
    term(s, "crash fallback", crash.s, why);
    term(s, "worst case", unlimited_or(r, &worst), "the sum: the longest a message can take "
                                                   "to be dead-lettered");
    crash_term_line(s, r);
    if (r->expiry_accepted) {
        Dur age = dur(r->stream_max_age_ms);
        term(s, "stream max_age", age.s, "a message that never succeeds expires at this age "
                                         "with no dead-letter record (accept_expiry = true)");
    }

    if (r->breaker_room.applies) {
        Dur fa = dur(r->floor_age_ms);
        const char *mode = r->breaker == JET_BREAKER_MODE_ENFORCE ? "enforce" : "observe";
        g_free(why);
        if (r->breaker_room.never_fires)
            why = g_strdup_printf("floor_age (breaker %s): never claims, the ladder dead-letters "
                                  "first", mode);
        else if (r->breaker_room.only_at_exhaustion)
            why = g_strdup_printf("floor_age (breaker %s): can claim only at delivery %"
                                  G_GUINT64_FORMAT ", the last attempt, before its handler runs, "
                                  "where the ladder would dead-letter the message anyway if it "
                                  "failed", mode, r->breaker_room.first_failure_k);
        else if (r->unlimited)
            why = g_strdup_printf("floor_age (breaker %s): can claim from delivery %"
                                  G_GUINT64_FORMAT ", before its handler runs", mode,
                                  r->breaker_room.first_failure_k);
        else
            why = g_strdup_printf("floor_age (breaker %s): can claim from delivery %"
                                  G_GUINT64_FORMAT ", before its handler runs, ahead of the last "
                                  "attempt (delivery %" G_GUINT64_FORMAT ")", mode,
                                  r->breaker_room.first_failure_k, r->attempts);
        term(s, "breaker", fa.s, why);
    }

    if (r->ordered)
        g_string_append_printf(s, "  checked as an ordered binding: its own consumer acks nothing (no "
                                  "AckWait, no MaxDeliver), %" G_GUINT64_FORMAT " messages in hand\n",
                               r->in_hand);
    else
        g_string_append_printf(s, "  checked with AckWait %s, MaxDeliver %s, MaxAckPending %s (%s), "
                                  "%" G_GUINT64_FORMAT " messages in hand\n",
                               aw.s, md.s, map.s,
                               r->from_consumer ? "from the consumer on the server"
                                                : "from the binding's config",
                               r->in_hand);

    if (r->n_violations == 0) {
        g_string_append(s, "no violations\n");
    } else {
        g_string_append_printf(s, "violations: %u error%s, %u warning%s\n",
                               r->n_errors, r->n_errors == 1 ? "" : "s",
                               r->n_warnings, r->n_warnings == 1 ? "" : "s");
        for (gsize i = 0; i < r->n_violations; i++)
            g_string_append_printf(s, "  %-7s %s: %s\n",
                                   jet_schedule_severity_name(r->violations[i].severity),
                                   r->violations[i].code, r->violations[i].message);
    }
    return g_string_free(s, FALSE);
}

/* --- the target streams of a binding's publishes -------------------------- */

guint64 jet_schedule_dedup_need_ms(const JetScheduleReport *r)
{
    g_return_val_if_fail(r != NULL, G_MAXUINT64);
    return r->unlimited ? G_MAXUINT64 : r->worst_case_ms;
}

/* Appends "NAME (what)" to a list kept within one violation's message. */
static void list_add(char *list, gsize size, const char *name, const char *what)
{
    if (g_str_has_suffix(list, "..."))
        return;   /* full: the rest is left out, never a later one that fits */
    g_autofree char *item = g_strdup_printf("%s%s (%s)", *list ? ", " : "", name, what);
    if (strlen(list) + strlen(item) + 5 >= size) {
        g_strlcat(list, *list ? ", ..." : "...", size);
        return;
    }
    g_strlcat(list, item, size);
}

void jet_schedule_check_publish_streams(JetScheduleReport *r, const JetPublishStream *streams, gsize n)
{
    g_return_if_fail(r != NULL && (streams != NULL || n == 0));
    /* The lists are kept short: the rest of each message, the worst case
     * and its terms in full, must fit beside them. */
    char missing[100] = "", short_[100] = "";
    gsize n_missing = 0, n_short = 0;
    guint64 need = jet_schedule_dedup_need_ms(r);
    for (gsize i = 0; i < n; i++) {
        const JetPublishStream *s = &streams[i];
        if (!s->found) {
            list_add(missing, sizeof missing, s->name, s->error != NULL ? s->error : "does not exist");
            n_missing++;
        } else if (s->duplicate_window_ms <= need) {
            Dur w = dur(s->duplicate_window_ms);
            list_add(short_, sizeof short_, s->name, w.s);
            n_short++;
        }
    }
    if (n_missing > 0)
        add(r, JET_SCHEDULE_ERROR, "publish-stream-missing",
            "publish_streams: not on the server: %s; the plugin's publishes there would fail and "
            "its messages be retried, then dead-lettered; create the stream or correct "
            "publish_streams", missing);
    if (n_short == 0)
        return;
    if (r->unlimited) {
        add(r, JET_SCHEDULE_WARNING, "publish-dedup-window",
            "publish_streams: retries without bound (max_attempts 0, MaxDeliver unlimited) can "
            "redeliver a message after any duplicate window, %s: its publishes are then stored "
            "again; set max_attempts or a finite max_deliver", short_);
        return;
    }
    Dur worst = dur(r->worst_case_ms), l = dur(r->ladder_ms), h = dur(r->postpone_horizon_ms);
    Dur o = dur(r->postpone_overshoot_ms), c = dur(r->crash_fallback_ms);
    add(r, JET_SCHEDULE_WARNING, "publish-dedup-window",
        "publish_streams: duplicate window of %s not longer than the worst case %s (ladder %s + "
        "postpone horizon %s + last postpone %s + crash fallback %s): a message redelivered "
        "later publishes again, and it is stored twice; raise duplicate_window above %s or "
        "shorten the schedule",
        short_, worst.s, l.s, h.s, o.s, c.s, worst.s);
}
