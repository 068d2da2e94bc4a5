/* Settlement decision: docs/settlement.md, first match wins.
 *
 * Pure: no I/O, no clock, no globals but constant tables.  The executor and
 * the mock host both call it, so a plugin author's test sees the settlement
 * the real host would make.  docs/settlement.md has the list with examples. */
#include "settle.h"

#include "duration.h"

#include <jethost/plugin.h>
#include <string.h>

const guint64 jet_settle_default_rungs_ms[] = { 1000, 5000, 30000, 120000, 600000 };
const gsize jet_settle_default_n_rungs = G_N_ELEMENTS(jet_settle_default_rungs_ms);

void jet_settle_policy_init_default(JetSettlePolicy *p)
{
    g_return_if_fail(p != NULL);
    memset(p, 0, sizeof *p);
    p->rungs_ms = jet_settle_default_rungs_ms;
    p->n_rungs = jet_settle_default_n_rungs;
    p->max_attempts = JET_SETTLE_DEFAULT_MAX_ATTEMPTS;
    p->postpone_horizon_ms = JET_SETTLE_DEFAULT_POSTPONE_HORIZON_MS;
    p->max_postpone_delay_ms = JET_SETTLE_DEFAULT_MAX_POSTPONE_DELAY_MS;
    p->capture_reserve = JET_SETTLE_DEFAULT_CAPTURE_RESERVE;
    p->max_deliver = -1;
    p->crash_limit = JET_SETTLE_DEFAULT_CRASH_LIMIT;
    p->max_hops = JET_SETTLE_DEFAULT_MAX_HOPS;
}

const char *jet_action_name(JetActionKind kind)
{
    switch (kind) {
    case JET_ACTION_ACK: return "ack";
    case JET_ACTION_RETRY: return "retry";
    case JET_ACTION_POSTPONE: return "postpone";
    case JET_ACTION_CAPTURE: return "capture";
    }
    return "unknown";
}

const char *jet_cause_name(JetCaptureCause cause)
{
    switch (cause) {
    case JET_CAUSE_NONE: return "none";
    case JET_CAUSE_REJECTED: return "rejected";
    case JET_CAUSE_POISON: return "poison";
    case JET_CAUSE_BREAKER: return "breaker";
    case JET_CAUSE_BUDGET: return "budget";
    case JET_CAUSE_EXHAUSTED: return "exhausted";
    case JET_CAUSE_MALFORMED: return "malformed";
    case JET_CAUSE_MALFORMED_HEADERS: return "malformed-headers";
    case JET_CAUSE_MAX_DELIVERIES: return "max-deliveries";
    case JET_CAUSE_HOP_LIMIT: return "hop-limit";
    }
    return "unknown";
}

/* --- small arithmetic ------------------------------------------------------ */

static guint64 sat_add(guint64 a, guint64 b)
{
    return a > G_MAXUINT64 - b ? G_MAXUINT64 : a + b;
}

static guint64 sat_mul(guint64 a, guint64 b)
{
    return (a != 0 && b > G_MAXUINT64 / a) ? G_MAXUINT64 : a * b;
}

guint64 jet_settle_rung_ms(const JetSettlePolicy *p, guint32 k)
{
    g_return_val_if_fail(p != NULL && p->rungs_ms != NULL && p->n_rungs > 0, 0);
    g_return_val_if_fail(k >= 1, p->rungs_ms[0]);
    /* k counts from 1: failure 1 is served rungs[0].  Compare before
     * subtracting so no arithmetic can wrap. */
    gsize idx = (gsize)(k - 1) < p->n_rungs - 1 ? (gsize)(k - 1) : p->n_rungs - 1;
    return p->rungs_ms[idx];
}

guint64 jet_settle_ladder_total_ms(const JetSettlePolicy *p)
{
    g_return_val_if_fail(p != NULL && p->rungs_ms != NULL && p->n_rungs > 0, 0);
    if (p->max_attempts == 0)
        return G_MAXUINT64;
    /* Attempt a (1-based) follows the rung of failure a - 1: the rungs served
     * before the last attempt are those of failures 1 .. max_attempts - 1. */
    guint64 served = (guint64)p->max_attempts - 1;
    guint64 listed = served < p->n_rungs ? served : p->n_rungs;
    guint64 total = 0;
    for (guint64 i = 0; i < listed; i++)
        total = sat_add(total, p->rungs_ms[i]);
    if (served > listed)
        total = sat_add(total, sat_mul(p->rungs_ms[p->n_rungs - 1], served - listed));
    return total;
}

/* --- the reason ------------------------------------------------------------ */

/* Copies src into dst (dst_len >= 1), truncating if needed.  A cut never
 * leaves half a UTF-8 sequence at the end: the bytes of the split character
 * are dropped.  (Reasons are bytes, not necessarily UTF-8; only the tail of
 * a truncated copy is trimmed, and only of continuation bytes.) */
static void reason_copy(char *dst, gsize dst_len, const char *src)
{
    if (src == NULL) {
        dst[0] = '\0';
        return;
    }
    gsize len = strnlen(src, dst_len);
    if (len < dst_len) {
        memcpy(dst, src, len + 1);
        return;
    }
    len = dst_len - 1;
    /* src[len] is the first byte that does not fit: when it continues a
     * multi-byte character, drop that character's bytes already copied. */
    if (((guchar)src[len] & 0xC0) == 0x80) {
        while (len > 0 && ((guchar)src[len - 1] & 0xC0) == 0x80)
            len--;
        if (len > 0 && ((guchar)src[len - 1] & 0xC0) == 0xC0)
            len--;
    }
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static void reason_printf(JetSettleAction *out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void reason_printf(JetSettleAction *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    reason_copy(out->reason, sizeof out->reason, text);
}

/* --- the decision ------------------------------------------------------------ */

static void action_reset(JetSettleAction *out)
{
    /* Never ACK by default: a zeroed action would read as one. */
    memset(out, 0, sizeof *out);
    out->kind = JET_ACTION_RETRY;
    out->cause = JET_CAUSE_NONE;
}

static void capture(JetSettleAction *out, JetCaptureCause cause)
{
    out->kind = JET_ACTION_CAPTURE;
    out->cause = cause;
    out->delay_ms = 0;
}

/* Rule 4: the server's MaxDeliver is about to run out.  Signed 64-bit
 * arithmetic on the sum, so capture_reserve >= max_deliver cannot wrap: the
 * threshold is then <= 0 and every delivery is past it. */
static gboolean budget_spent(const JetSettlePolicy *p, guint32 deliveries)
{
    if (p->max_deliver <= 0)
        return FALSE;
    return (gint64)deliveries + (gint64)p->capture_reserve >= p->max_deliver;
}

/* Rule 5: is the message younger than the horizon?  now - enqueued, floored
 * at zero (a clock behind the stream's is "just stored"), compared in
 * nanoseconds without overflow. */
static gboolean within_horizon(const JetSettlePolicy *p, const JetSettleFacts *f)
{
    if (p->postpone_horizon_ms == 0 || !f->has_enqueued)
        return FALSE;
    if (f->now_ns <= f->enqueued_ns)
        return TRUE;
    guint64 age_ns = (guint64)f->now_ns - (guint64)f->enqueued_ns;
    if (p->postpone_horizon_ms > G_MAXUINT64 / G_GUINT64_CONSTANT(1000000))
        return TRUE;
    return age_ns < p->postpone_horizon_ms * G_GUINT64_CONSTANT(1000000);
}

gboolean jet_settle_before_handle(const JetSettlePolicy *policy, const JetSettleFacts *facts,
                                  JetSettleAction *out)
{
    g_return_val_if_fail(out != NULL, FALSE);
    action_reset(out);
    g_return_val_if_fail(policy != NULL && facts != NULL, FALSE);

    /* A block the host cannot read faithfully is never handed to a plugin
     * half-read (docs/headers.md). */
    if (facts->malformed_headers != NULL) {
        capture(out, JET_CAUSE_MALFORMED_HEADERS);
        reason_printf(out, "header block: %s", facts->malformed_headers);
        return TRUE;
    }
    if (facts->malformed_entry != NULL) {
        capture(out, JET_CAUSE_MALFORMED);
        reason_printf(out, "%s", facts->malformed_entry);
        return TRUE;
    }
    /* Handling it could publish it once more: a loop, bounded here, even
     * one through hosts that share no config (docs/forwarding.md). */
    if (policy->max_hops >= 1 && facts->hops >= policy->max_hops) {
        capture(out, JET_CAUSE_HOP_LIMIT);
        reason_printf(out, "published by hosts %" G_GUINT32_FORMAT " times already (Jethost-Hops), max_hops %u: "
                      "a publish loop", facts->hops, policy->max_hops);
        return TRUE;
    }
    /* Rules 2 and 3; REJECT (rule 1) needs a verdict, which does not exist
     * yet: the handler must not run again for these. */
    if (policy->crash_limit >= 1 && facts->strikes >= policy->crash_limit) {
        capture(out, JET_CAUSE_POISON);
        reason_printf(out, "crashed the host %" G_GUINT32_FORMAT " times handling this message "
                      "alone (crash_limit %u)", facts->strikes, policy->crash_limit);
        return TRUE;
    }
    /* A suspect has had the host die (or lose it) with it in hand, and the
     * handler may do it again: at the budget line one more crash could spend
     * the deliveries its capture needs, and a crash yields no verdict for
     * rule 4 to catch, so the message would go dark at MaxDeliver.  It is
     * poison by the only evidence there is room for.  This holds with
     * crash_limit 0 too: the budget line is then the only bound. */
    if (facts->suspect && budget_spent(policy, facts->deliveries)) {
        capture(out, JET_CAUSE_POISON);
        reason_printf(out, "crash suspect at the budget line: delivery %" G_GUINT32_FORMAT
                      " of max_deliver %" G_GINT64_FORMAT " with capture_reserve %u, %"
                      G_GUINT32_FORMAT " strike%s handling it alone; captured before it runs "
                      "again, so another crash cannot spend the deliveries its capture needs",
                      facts->deliveries, policy->max_deliver, policy->capture_reserve,
                      facts->strikes, facts->strikes == 1 ? "" : "s");
        return TRUE;
    }
    if (facts->breaker_claim) {
        capture(out, JET_CAUSE_BREAKER);
        reason_copy(out->reason, sizeof out->reason, "claimed by the floor breaker");
        return TRUE;
    }
    return FALSE;
}

/* Rule 0 (plugin errors): returns TRUE and writes the misuse into out->reason
 * when the plugin broke a rule. */
static gboolean plugin_error(const JetSettlePolicy *p, const JetSettleFacts *f,
                             JetSettleAction *out)
{
    int v = f->verdict;
    if (v == JET_PENDING) {
        reason_printf(out, "plugin error: handle() returned JET_PENDING on a binding without max_in_flight "
                      "(docs/async.md)");
        return TRUE;
    }
    if (v != JET_ACK && v != JET_RETRY && v != JET_POSTPONE && v != JET_REJECT) {
        reason_printf(out, "plugin error: verdict %d is not a jet_verdict", v);
        return TRUE;
    }
    /* The flag is what msg_set_reason() recorded; the length check guards a
     * caller that passed a long reason without setting it. */
    if (f->reason_too_long || (f->reason != NULL && strnlen(f->reason, JET_REASON_MAX + 1)
                                                     > JET_REASON_MAX)) {
        reason_printf(out, "plugin error: reason longer than %d bytes", JET_REASON_MAX);
        return TRUE;
    }
    /* A call the host refused, whatever handle() then returned: after an
     * ACK the forward would be lost, and after any other verdict the
     * plugin's mistake (a subject it built wrong) would go unseen, with no
     * reason at all where the documented pattern returns JET_RETRY. */
    if (f->publish_refused != NULL) {
        if (f->reason != NULL && *f->reason)
            reason_printf(out, "plugin error: %s (handle() said: %s)", f->publish_refused, f->reason);
        else
            reason_printf(out, "plugin error: %s", f->publish_refused);
        return TRUE;
    }
    if (v == JET_POSTPONE && (!f->has_delay || f->delay_ms == 0)) {
        reason_copy(out->reason, sizeof out->reason,
                    "plugin error: POSTPONE without a positive delay");
        return TRUE;
    }
    if (v == JET_POSTPONE && f->delay_ms > p->max_postpone_delay_ms) {
        g_autofree char *d = jet_duration_format_ms(f->delay_ms);
        g_autofree char *cap = jet_duration_format_ms(p->max_postpone_delay_ms);
        reason_printf(out, "plugin error: POSTPONE delay %s exceeds max_postpone_delay %s", d, cap);
        return TRUE;
    }
    return FALSE;
}

/* A postpone past its horizon: say why it became a failure, and keep the
 * plugin's own reason after it. */
static void postpone_failure_reason(const JetSettlePolicy *p, const JetSettleFacts *f,
                                    JetSettleAction *out)
{
    const char *sep = f->reason != NULL && f->reason[0] != '\0' ? ": " : "";
    const char *r = f->reason != NULL ? f->reason : "";
    if (p->postpone_horizon_ms == 0) {
        reason_printf(out, "POSTPONE counts as a failure (postpone_horizon 0)%s%s", sep, r);
    } else if (!f->has_enqueued) {
        reason_printf(out, "POSTPONE counts as a failure: enqueue time unknown, "
                      "treated as past the horizon%s%s", sep, r);
    } else {
        g_autofree char *h = jet_duration_format_ms(p->postpone_horizon_ms);
        reason_printf(out, "POSTPONE past postpone_horizon %s%s%s", h, sep, r);
    }
}

void jet_settle_decide(const JetSettlePolicy *policy, const JetSettleFacts *facts,
                       JetSettleAction *out)
{
    g_return_if_fail(out != NULL);
    action_reset(out);
    g_return_if_fail(policy != NULL && facts != NULL);
    g_return_if_fail(policy->rungs_ms != NULL && policy->n_rungs > 0);

    /* Rules 2 and 3 first when the facts carry them: the handler should not
     * have run, so the verdict is moot and decide agrees with before_handle. */
    if (jet_settle_before_handle(policy, facts, out))
        return;

    /* Rule 0: classify.  A plugin error is a failure, never an ACK. */
    gboolean failure = FALSE;
    if (plugin_error(policy, facts, out)) {
        out->plugin_error = TRUE;
        failure = TRUE;
    } else if (facts->verdict == JET_ACK && facts->publish_failed != NULL) {
        /* The forward did not happen: the message must come back. */
        failure = TRUE;
        reason_printf(out, "publish failed: %s", facts->publish_failed);
    } else if (facts->verdict == JET_ACK) {
        out->kind = JET_ACTION_ACK;
        reason_copy(out->reason, sizeof out->reason, facts->reason);
        return;
    } else if (facts->verdict == JET_REJECT) {
        /* Rule 1. */
        capture(out, JET_CAUSE_REJECTED);
        reason_copy(out->reason, sizeof out->reason, facts->reason);
        return;
    } else if (facts->verdict == JET_RETRY) {
        failure = TRUE;
        reason_copy(out->reason, sizeof out->reason, facts->reason);
    } else {
        /* A valid POSTPONE: a failure only once past its horizon (rule 5). */
        g_assert(facts->verdict == JET_POSTPONE);
        if (within_horizon(policy, facts)) {
            reason_copy(out->reason, sizeof out->reason, facts->reason);
        } else {
            failure = TRUE;
            postpone_failure_reason(policy, facts, out);
        }
    }

    guint32 k = facts->failures == G_MAXUINT32 ? G_MAXUINT32 : facts->failures + 1;
    if (failure) {
        out->is_failure = TRUE;
        out->failure_number = k;
    }

    /* Rule 4: any outcome but ACK (which returned above). */
    if (budget_spent(policy, facts->deliveries)) {
        capture(out, JET_CAUSE_BUDGET);
        return;
    }

    /* Rule 5: a postpone inside its horizon. */
    if (!failure) {
        out->kind = JET_ACTION_POSTPONE;
        out->delay_ms = facts->delay_ms;
        return;
    }

    /* Rule 6. */
    if (policy->max_attempts > 0 && k >= policy->max_attempts) {
        capture(out, JET_CAUSE_EXHAUSTED);
        return;
    }

    /* Rule 7. */
    out->kind = JET_ACTION_RETRY;
    out->delay_ms = jet_settle_rung_ms(policy, k);
}
