#include "floor_monitor.h"

#include <string.h>

struct JetFloorMonitor {
    GMutex lock;                /* locked by const functions too: logically mutable */
    JetFloorPolicy policy;

    /* The floor and its stall clock. */
    gboolean have_floor;
    guint64 floor;
    gboolean running;           /* the gap is open and the clock runs */
    gint64 stall_start_ns;
    gboolean stalled;
    gboolean logged;            /* this floor value's stall was logged */

    /* Saturation. */
    gboolean saturated;
    gint64 saturated_since_ns;

    /* The breaker's window on this floor. */
    guint32 win_n;              /* the window that is open or was last closed */
    gboolean win_used;          /* win_n is known claimed... */
    gint64 win_used_ns;         /* ...since then (this host's clock) */

    /* Observe mode: sequences already counted as "would quarantine", above
     * the floor.  Enforce would have captured them at that claim, so they
     * are gone in the model and never counted again. */
    GArray *counted;            /* guint64, unsorted, small */

    JetFloorStats stats;
};

JetFloorMonitor *jet_floor_monitor_new(const JetFloorPolicy *p)
{
    g_return_val_if_fail(p != NULL && p->floor_age_ns >= 0, NULL);
    JetFloorMonitor *m = g_new0(JetFloorMonitor, 1);
    g_mutex_init(&m->lock);
    m->policy = *p;
    m->counted = g_array_new(FALSE, FALSE, sizeof(guint64));
    return m;
}

void jet_floor_monitor_free(JetFloorMonitor *m)
{
    if (m == NULL)
        return;
    g_mutex_clear(&m->lock);
    g_array_unref(m->counted);
    g_free(m);
}

static gboolean is_counted(const JetFloorMonitor *m, guint64 seq)
{
    for (guint i = 0; i < m->counted->len; i++)
        if (g_array_index(m->counted, guint64, i) == seq)
            return TRUE;
    return FALSE;
}

static gint64 age(gint64 now, gint64 since)
{
    return now > since ? now - since : 0;   /* a clock that went back reads 0 */
}

void jet_floor_monitor_observe(JetFloorMonitor *m, const JetFloorSample *s, JetFloorReport *out)
{
    g_return_if_fail(m != NULL && s != NULL);
    g_mutex_lock(&m->lock);

    gboolean gap_open = s->delivered > s->ack_floor;
    if (!m->have_floor || s->ack_floor != m->floor) {
        /* The floor moved (either way) or this is the first reading: a new
         * stationary period, a new window chain. */
        m->have_floor = TRUE;
        m->floor = s->ack_floor;
        m->running = FALSE;
        m->stalled = FALSE;
        m->logged = FALSE;
        m->win_n = 0;
        m->win_used = FALSE;
        /* Counted sequences at or below the floor are acked: forget them. */
        for (guint i = m->counted->len; i-- > 0;)
            if (g_array_index(m->counted, guint64, i) <= m->floor)
                g_array_remove_index_fast(m->counted, i);
    }
    if (!gap_open) {
        /* Idle or caught up: not stalled, however still the floor. */
        m->running = FALSE;
        m->stalled = FALSE;
    } else if (!m->running) {
        /* The clock starts at the first reading that shows the gap: a stall
         * older than this process reads younger (late, never early). */
        m->running = TRUE;
        m->stall_start_ns = s->now_ns;
    }
    gint64 stall_age = m->running ? age(s->now_ns, m->stall_start_ns) : 0;
    gboolean was_stalled = m->stalled;
    m->stalled = m->running && m->policy.floor_age_ns > 0 && stall_age >= m->policy.floor_age_ns;
    gboolean log_line = FALSE;
    if (m->stalled && !was_stalled) {
        m->stats.stalls++;
        if (!m->logged) {
            log_line = TRUE;
            m->logged = TRUE;
        }
    }

    /* Saturation begins with NumAckPending at a finite MaxAckPending and a
     * pull waiting (a pull that got nothing), and lasts while NumAckPending
     * stays there: between two pulls NumWaiting can read 0 for a moment,
     * which must not end the period and start another. */
    gboolean full = s->max_ack_pending > 0 && s->num_ack_pending >= s->max_ack_pending;
    gboolean log_saturation = FALSE;
    if (!full) {
        m->saturated = FALSE;
    } else if (!m->saturated && s->num_waiting > 0) {
        m->saturated = TRUE;
        m->saturated_since_ns = s->now_ns;
        m->stats.saturation_events++;
        log_saturation = TRUE;
    }

    m->stats.samples++;
    m->stats.floor = m->floor;
    m->stats.stall_age_ns = stall_age;
    m->stats.stalled = m->stalled;
    m->stats.saturated = m->saturated;

    if (out != NULL) {
        memset(out, 0, sizeof *out);
        out->floor = m->floor;
        out->next_seq = m->floor + 1;
        out->delivered = s->delivered;
        out->gap_open = gap_open;
        out->stall_age_ns = stall_age;
        out->stalled = m->stalled;
        out->holds_next = s->holds_next;
        out->log_line = log_line;
        out->saturated = m->saturated;
        out->saturated_age_ns = m->saturated ? age(s->now_ns, m->saturated_since_ns) : 0;
        out->log_saturation = log_saturation;
        out->num_ack_pending = s->num_ack_pending;
        out->max_ack_pending = s->max_ack_pending;
        out->num_waiting = s->num_waiting;
        out->num_pending = s->num_pending;
    }
    g_mutex_unlock(&m->lock);
}

void jet_floor_monitor_stats(const JetFloorMonitor *m, JetFloorStats *out)
{
    g_return_if_fail(m != NULL && out != NULL);
    JetFloorMonitor *mm = (JetFloorMonitor *)m;
    g_mutex_lock(&mm->lock);
    *out = m->stats;
    g_mutex_unlock(&mm->lock);
}

guint64 jet_floor_monitor_poll_interval_ms(guint64 floor_age_ms)
{
    return CLAMP(floor_age_ms / 30, 1000, 30000);
}

static void format_ns(gint64 ns, char *buf, gsize len)
{
    static const struct {
        const char *suffix;
        guint64 ms;
    } units[] = { { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 }, { "ms", 1 } };
    guint64 ms = ns > 0 ? (guint64)ns / 1000000 : 0;
    if (ms == 0) {
        g_strlcpy(buf, "0s", len);
        return;
    }
    buf[0] = '\0';
    for (gsize i = 0; i < G_N_ELEMENTS(units) && ms > 0; i++) {
        guint64 n = ms / units[i].ms;
        if (n == 0)
            continue;
        ms -= n * units[i].ms;
        char part[32];
        g_snprintf(part, sizeof part, "%s%" G_GUINT64_FORMAT "%s", buf[0] ? " " : "", n,
                   units[i].suffix);
        g_strlcat(buf, part, len);
    }
}

void jet_floor_report_format(const JetFloorReport *r, gboolean saturation, char *buf, gsize len)
{
    g_return_if_fail(r != NULL && buf != NULL && len > 0);
    char a[64];
    if (saturation) {
        format_ns(r->saturated_age_ns, a, sizeof a);
        g_snprintf(buf, len,
                   "ack-pending saturation: NumAckPending %" G_GINT64_FORMAT " at MaxAckPending %"
                   G_GINT64_FORMAT " with %" G_GINT64_FORMAT " pull%s waiting for %s, %"
                   G_GUINT64_FORMAT " messages not yet delivered: retrying and postponed messages "
                   "hold every slot (ack floor %" G_GUINT64_FORMAT ")",
                   r->num_ack_pending, r->max_ack_pending, r->num_waiting,
                   r->num_waiting == 1 ? "" : "s", a, r->num_pending, r->floor);
        return;
    }
    format_ns(r->stall_age_ns, a, sizeof a);
    g_snprintf(buf, len,
               "ack floor %" G_GUINT64_FORMAT " stalled for %s: delivered up to %" G_GUINT64_FORMAT
               ", %" G_GINT64_FORMAT " ack pending; this host %s %" G_GUINT64_FORMAT
               " (floor + 1)",
               r->floor, a, r->delivered, r->num_ack_pending,
               r->holds_next ? "holds" : "does not hold", r->next_seq);
}

/* --- the breaker ----------------------------------------------------------- */

const char *jet_breaker_decision_name(JetBreakerDecision d)
{
    switch (d) {
    case JET_BREAKER_CLAIMABLE:
        return "claimable";
    case JET_BREAKER_OFF:
        return "off";
    case JET_BREAKER_NOT_STALLED:
        return "not-stalled";
    case JET_BREAKER_AT_FLOOR:
        return "at-floor";
    case JET_BREAKER_NO_FIRST_FAILURE:
        return "no-first-failure";
    case JET_BREAKER_FAILING_TOO_SHORT:
        return "failing-too-short";
    case JET_BREAKER_FEW_DELIVERIES:
        return "few-deliveries";
    case JET_BREAKER_WINDOW_USED:
        return "window-used";
    case JET_BREAKER_COUNTED:
        return "counted";
    }
    return "unknown";
}

JetBreakerVerdict jet_breaker_consider(const JetFloorMonitor *m, const JetBreakerPolicy *p,
                                       const JetBreakerCandidate *c)
{
    JetBreakerVerdict v;
    memset(&v, 0, sizeof v);
    v.decision = JET_BREAKER_OFF;
    g_return_val_if_fail(m != NULL && p != NULL && c != NULL, v);
    JetFloorMonitor *mm = (JetFloorMonitor *)m;
    g_mutex_lock(&mm->lock);

    gint64 floor_age = p->floor_age_ns;
    char fa[64], st[64], fl[64];
    format_ns(floor_age, fa, sizeof fa);
    v.stall_age_ns = m->running ? age(c->now_ns, m->stall_start_ns) : 0;
    v.failing_ns = c->has_first_failure ? age(c->now_ns, c->first_failure_ns) : 0;
    v.window.floor = m->floor;
    v.window.n = m->win_n;
    format_ns(v.stall_age_ns, st, sizeof st);
    format_ns(v.failing_ns, fl, sizeof fl);

    if (p->mode == JET_BREAKER_MODE_OFF || floor_age <= 0) {
        g_strlcpy(v.why, "the breaker is off", sizeof v.why);
    } else if (!m->have_floor || !m->running || v.stall_age_ns < floor_age) {
        v.decision = JET_BREAKER_NOT_STALLED;
        if (!m->have_floor)
            g_strlcpy(v.why, "no consumer info read yet", sizeof v.why);
        else
            g_snprintf(v.why, sizeof v.why,
                       "ack floor %" G_GUINT64_FORMAT " stalled for %s, less than floor_age %s",
                       m->floor, st, fa);
    } else if (c->stream_seq <= m->floor) {
        v.decision = JET_BREAKER_AT_FLOOR;
        g_snprintf(v.why, sizeof v.why,
                   "seq %" G_GUINT64_FORMAT " is not above the ack floor %" G_GUINT64_FORMAT,
                   c->stream_seq, m->floor);
    } else if (p->mode == JET_BREAKER_MODE_OBSERVE && is_counted(m, c->stream_seq)) {
        v.decision = JET_BREAKER_COUNTED;
        mm->stats.counted_again++;
        g_snprintf(v.why, sizeof v.why,
                   "seq %" G_GUINT64_FORMAT " was already counted as would-quarantine (enforce "
                   "would have captured it then)", c->stream_seq);
    } else if (!c->has_first_failure) {
        v.decision = JET_BREAKER_NO_FIRST_FAILURE;
        g_snprintf(v.why, sizeof v.why,
                   "seq %" G_GUINT64_FORMAT " has no first-failure time (ledger)", c->stream_seq);
    } else if (v.failing_ns < floor_age) {
        v.decision = JET_BREAKER_FAILING_TOO_SHORT;
        g_snprintf(v.why, sizeof v.why,
                   "seq %" G_GUINT64_FORMAT " has been failing for %s, less than floor_age %s",
                   c->stream_seq, fl, fa);
    } else if (c->deliveries < p->min_deliveries) {
        v.decision = JET_BREAKER_FEW_DELIVERIES;
        g_snprintf(v.why, sizeof v.why,
                   "seq %" G_GUINT64_FORMAT " delivered %" G_GUINT64_FORMAT " time%s, fewer than "
                   "min_deliveries %u", c->stream_seq, c->deliveries,
                   c->deliveries == 1 ? "" : "s", p->min_deliveries);
    } else if (m->win_used && age(c->now_ns, m->win_used_ns) < floor_age) {
        v.decision = JET_BREAKER_WINDOW_USED;
        char left[64];
        format_ns(floor_age - age(c->now_ns, m->win_used_ns), left, sizeof left);
        g_snprintf(v.why, sizeof v.why,
                   "stall window %u of ack floor %" G_GUINT64_FORMAT " is already claimed; the "
                   "next opens in %s", m->win_n, m->floor, left);
    } else {
        v.decision = JET_BREAKER_CLAIMABLE;
        if (m->win_used)
            v.window.n = m->win_n + 1;
        g_snprintf(v.why, sizeof v.why,
                   "ack floor %" G_GUINT64_FORMAT " stalled for %s and seq %" G_GUINT64_FORMAT
                   " failing for %s (floor_age %s), delivered %" G_GUINT64_FORMAT " times; stall "
                   "window %u", m->floor, st, c->stream_seq, fl, fa, c->deliveries, v.window.n);
    }
    g_mutex_unlock(&mm->lock);
    return v;
}

void jet_breaker_note_claim(JetFloorMonitor *m, const JetBreakerPolicy *p,
                            const JetBreakerWindow *w, JetBreakerClaimResult result,
                            gint64 now_ns)
{
    g_return_if_fail(m != NULL && p != NULL && w != NULL);
    g_mutex_lock(&m->lock);
    switch (result) {
    case JET_BREAKER_CLAIMED:
        m->stats.claims++;
        if (p->mode == JET_BREAKER_MODE_ENFORCE)
            m->stats.quarantined++;
        else
            m->stats.would_quarantine++;
        break;
    case JET_BREAKER_ALREADY_CLAIMED:
        m->stats.claims_lost++;
        break;
    case JET_BREAKER_CLAIM_ERROR:
        m->stats.claim_errors++;
        break;
    }
    /* Close the window, unless the floor moved meanwhile (a new chain) or a
     * later window of this floor is already known to be closed. */
    if (result != JET_BREAKER_CLAIM_ERROR && m->have_floor && w->floor == m->floor &&
        (!m->win_used || w->n >= m->win_n)) {
        if (!m->win_used || w->n > m->win_n)
            m->win_used_ns = now_ns;
        m->win_n = w->n;
        m->win_used = TRUE;
    }
    g_mutex_unlock(&m->lock);
}

void jet_breaker_note_counted(JetFloorMonitor *m, guint64 seq)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    /* At most one claim per floor_age: the cap is never reached in practice;
     * past it a message could be counted twice, never lost. */
    if ((!m->have_floor || seq > m->floor) && !is_counted(m, seq) && m->counted->len < 4096)
        g_array_append_val(m->counted, seq);
    g_mutex_unlock(&m->lock);
}

/* --- the room check -------------------------------------------------------- */

void jet_breaker_room(JetBreakerMode mode, guint64 floor_age_ms, guint min_deliveries,
                      const guint64 *rungs_ms, gsize n_rungs, guint max_attempts,
                      JetBreakerRoom *out)
{
    g_return_if_fail(out != NULL);
    memset(out, 0, sizeof *out);
    if (mode == JET_BREAKER_MODE_OFF || floor_age_ms == 0 || rungs_ms == NULL || n_rungs == 0)
        return;
    out->applies = TRUE;

    /* The fewest waits j with W(j) >= floor_age, W(j) being the sum of the
     * rungs served after failures 1..j (the last rung repeats). */
    guint64 sum = 0, j = 0;
    for (; j < n_rungs && sum < floor_age_ms; j++)
        sum = sum > G_MAXUINT64 - rungs_ms[j] ? G_MAXUINT64 : sum + rungs_ms[j];
    if (sum < floor_age_ms) {
        guint64 last = rungs_ms[n_rungs - 1];
        guint64 rest = floor_age_ms - sum;
        j += rest / last + (rest % last != 0);
    }
    /* Failure k has been failing for W(k - 1), and its delivery is k. */
    guint64 k = MAX(j + 1, (guint64)MAX(min_deliveries, 1u));
    out->first_failure_k = k;

    if (max_attempts == 0) {   /* unlimited: the ladder never ends, there is always room */
        out->reach_ms = G_MAXUINT64;
        return;
    }
    /* The ladder's reach: W(max_attempts - 1). */
    guint64 waits = (guint64)max_attempts - 1, reach = 0;
    for (guint64 i = 0; i < MIN(waits, (guint64)n_rungs); i++)
        reach = reach > G_MAXUINT64 - rungs_ms[i] ? G_MAXUINT64 : reach + rungs_ms[i];
    if (waits > n_rungs) {
        guint64 last = rungs_ms[n_rungs - 1], rep = waits - n_rungs;
        guint64 add = last != 0 && rep > G_MAXUINT64 / last ? G_MAXUINT64 : rep * last;
        reach = reach > G_MAXUINT64 - add ? G_MAXUINT64 : reach + add;
    }
    out->reach_ms = reach;
    out->never_fires = k > max_attempts;
    out->only_at_exhaustion = k == max_attempts;
}
