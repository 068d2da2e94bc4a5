/* The mock host's settlement: the daemon's own sequence (executor.c) on a
 * transport that keeps everything in memory.  The ledger is the message's
 * (what the test set, and what the last settlement wrote), the server is
 * always there and always answers, the record is built by the daemon's
 * dlq_record.c and shown instead of published (docs/mock.md). */
#include "mock_private.h"
#include "dlq_record.h"
#include "errors.h"

#include <stdio.h>
#include <string.h>

/* --- the transport ----------------------------------------------------------- */

/* The run of delivery d: its own in a batch (the delivery's token), which
 * then becomes the mock's current one, else the mock's one run. */
static MockRun *run_of(gpointer t, const JetDelivery *d)
{
    jet_mock *m = t;
    if (d != NULL && d->token != NULL)
        m->run = d->token;
    return m->run;
}

static JetLedgerStatus t_ledger_get(gpointer t, const JetDelivery *d, JetLedgerRecord *out, GError **error)
{
    (void)error;
    MockRun *r = run_of(t, d);
    *out = r->rec;
    return r->rec_found ? JET_LEDGER_FOUND : JET_LEDGER_ABSENT;
}

static JetLedgerStatus t_ledger_update(gpointer t, const JetDelivery *d, const JetLedgerRecord *known,
                                       JetLedgerMutateFn mutate, gpointer mutate_data, JetLedgerRecord *out,
                                       GError **error)
{
    (void)known;   /* the mock's record is in memory: always read */
    (void)error;
    MockRun *r = run_of(t, d);
    if (r->crashed)
        return JET_LEDGER_SKIPPED;   /* the host is gone: nothing is written */
    JetLedgerRecord rec = r->rec;
    if (!mutate(&rec, mutate_data))
        return JET_LEDGER_SKIPPED;
    r->rec = rec;
    if (out != NULL)
        *out = rec;
    r->rec_found = TRUE;
    /* The message's record, for its next delivery (jet_mock_msg_redeliver). */
    jet_mock_msg *b = (jet_mock_msg *)r->msg;
    b->written = rec;
    b->has_written = TRUE;
    return JET_LEDGER_WRITTEN;
}

/* The mock's ledger answers at once: a delete the host would not wait for
 * lands here before the call returns, which a plugin cannot tell apart. */
static JetLedgerStatus t_ledger_delete(gpointer t, const JetDelivery *d, guint64 revision, GError **error)
{
    (void)revision;
    (void)error;
    MockRun *r = run_of(t, d);
    if (r->crashed)
        return JET_LEDGER_WRITTEN;   /* the host is gone: nothing is deleted */
    jet_ledger_record_init(&r->rec);
    r->rec_found = FALSE;
    /* Its next delivery, if a fault brings one, finds no record. */
    jet_mock_msg *b = (jet_mock_msg *)r->msg;
    jet_ledger_record_init(&b->written);
    b->has_written = TRUE;
    return JET_LEDGER_WRITTEN;
}

/* A test drives one delivery at a time: a lease never lapses. */
static gboolean t_lease_lapsed(gpointer t, const JetDelivery *d)
{
    (void)t;
    (void)d;
    return FALSE;
}

static gboolean t_breaker(gpointer t, const JetDelivery *d, const JetLedgerRecord *rec)
{
    (void)rec;
    return run_of(t, d)->msg->breaker_claim;
}

static void t_enter(gpointer t, const JetDelivery *d, gboolean alone)
{
    (void)t;
    (void)d;
    (void)alone;
}

/* What the plugin set on its lent copy, back on the executor's message. */
static void take_back(Lent *l, jet_msg *jm)
{
    memcpy(jm->reason, l->msg.reason, sizeof jm->reason);
    jm->has_reason = l->msg.has_reason;
    jm->reason_too_long = l->msg.reason_too_long;
    jm->delay_ms = l->msg.delay_ms;
    jm->has_delay = l->msg.has_delay;
    jm->publishes = l->msg.publishes;
    memset(&l->msg.publishes, 0, sizeof l->msg.publishes);
}

/* --- pending deliveries (max_in_flight; mock.h, "Pending deliveries") ------ */

typedef struct MockPending {
    jet_mock *mock;
    jet_mock_msg *msg;             /* a copy: the test may free its builder */
    MockRun run;
    JetHdrParse hdrs;
    JetStats stats;
    JetDelivery d;
    JetExecutorPending *xp;
    jet_msg *jm;                   /* the executor's message, in xp */
    Lent *lent;                    /* what the plugin holds */
    JetMsgAsync async;
    gint64 since_ns;               /* the mock clock at its handle() */
    gboolean completed;            /* under the mock's lock: completed, at completed_ns */
    gint64 completed_ns;
} MockPending;

/* From msg_complete(), on any thread: settled at the next
 * jet_mock_settle_completed(). */
static void pending_completed(JetMsgAsync *a, jet_msg *h)
{
    MockPending *p = a->data;
    (void)h;
    g_atomic_int_set(&p->lent->completed, 1);
    g_mutex_lock(&p->mock->lock);
    p->completed = TRUE;
    p->completed_ns = p->mock->clock_ns;
    g_queue_push_tail(&p->mock->completed, p);
    g_mutex_unlock(&p->mock->lock);
}

/* A second msg_complete() during handle(). */
static void pending_refused(JetMsgAsync *a)
{
    MockPending *p = a->data;
    if (g_atomic_int_get(&p->lent->given_up))
        return;   /* given up at the stop: refused quietly */
    jet__mock_violation(p->mock, RULE_VERDICT, "msg_complete() called twice for stream seq %" G_GUINT64_FORMAT
                        " during its handle(): a delivery is completed once", p->d.stream_seq);
}

/* handle() has returned verdict for a delivery that may be kept pending:
 * JET_PENDING when it is (l stays lent), else the verdict to settle. */
static int pending_handled(MockPending *p, Lent *l, jet_msg *jm, int verdict)
{
    const gint in_handle = JET_MSG_ASYNC_IN_HANDLE;
    if (verdict == JET_PENDING) {
        if (g_atomic_int_compare_and_exchange(&p->async.state, in_handle, JET_MSG_ASYNC_PENDING))
            return JET_PENDING;
        g_atomic_int_set(&l->pending, 0);
        return JET_MSG_ASYNC_VERDICT(g_atomic_int_get(&p->async.state));   /* completed during handle() */
    }
    g_atomic_int_set(&l->pending, 0);
    if (JET_MSG_ASYNC_PHASE(g_atomic_int_get(&p->async.state)) == JET_MSG_ASYNC_EARLY)
        jet__mock_violation(p->mock, RULE_VERDICT,
                            "msg_complete() called during a handle() of stream seq %" G_GUINT64_FORMAT " that then "
                            "returned verdict %d itself: return JET_PENDING after completing, or do not complete "
                            "(the daemon settles the verdict and refuses the completion)", p->d.stream_seq, verdict);
    return verdict;
}

static int t_handle(gpointer t, const JetDelivery *d, jet_msg *jm)
{
    jet_mock *m = t;
    MockRun *r = run_of(t, d);
    Lent *l = jet__mock_lent_new(m, jm);
    m->owner = g_thread_self();
    MockPending *p = r->pending;
    if (p != NULL) {
        /* From now on its completion may come from any thread, even during
         * handle() (a quick I/O). */
        l->msg.async = &p->async;
        p->lent = l;
        p->jm = jm;
        g_atomic_int_set(&l->pending, 1);
    }
    int verdict = jet_instance_handle(m->inst, &l->msg);
    if (p != NULL) {
        verdict = pending_handled(p, l, jm, verdict);
        if (verdict == JET_PENDING)
            return verdict;   /* the plugin's until msg_complete() */
    }
    jet__mock_lent_poison(l);
    if (r->fault == JET_MOCK_FAULT_CRASH_AFTER_PUBLISH && r->fault_k == 0)
        r->crashed = TRUE;   /* dies as handle() returns */
    take_back(l, jm);
    return verdict;
}

/* A handler batch: each message lent as handle()'s is, all at once. */
static int t_handle_batch(gpointer t, const JetDelivery *const *ds, jet_msg *const *ms, guint n, int *verdicts)
{
    (void)ds;
    jet_mock *m = t;
    g_autofree Lent **lent = g_new(Lent *, n);
    g_autofree jet_msg **handles = g_new(jet_msg *, n);
    for (guint i = 0; i < n; i++) {
        lent[i] = jet__mock_lent_new(m, ms[i]);
        handles[i] = &lent[i]->msg;
    }
    m->owner = g_thread_self();
    int rc = jet_instance_handle_batch(m->inst, handles, n, verdicts);
    for (guint i = 0; i < n; i++) {
        jet__mock_lent_poison(lent[i]);
        take_back(lent[i], ms[i]);
    }
    return rc;
}

/* A pending delivery past handler_timeout: its lease stopped, so nothing
 * is released or recorded for it (the daemon's stale result). */
static gboolean t_release_hold(gpointer t, const JetDelivery *d)
{
    return run_of(t, d)->lapsed;
}

static void t_ack(gpointer t, const JetDelivery *d, JetAckTiming timing)
{
    (void)d;
    (void)timing;
    MockRun *r = run_of(t, d);
    if (!r->crashed && r->fault == JET_MOCK_FAULT_ACK_LOST)
        r->ack_lost = TRUE;   /* sent; the server never hears of it */
}

static void t_nak(gpointer t, const JetDelivery *d, guint64 delay_ms)
{
    (void)t;
    (void)d;
    (void)delay_ms;
}

static gint64 t_stream_created(gpointer t)
{
    (void)t;
    return MOCK_STREAM_CREATED_NS;
}

/* The record the daemon would publish, built by its own code.  The mock
 * knows no server, so no max_payload: only the 64 KiB header-block limit
 * applies (docs/mock.md). */
static JetCaptureOutcome t_capture(gpointer t, const JetDelivery *d, JetCaptureFacts *facts, gboolean *duplicate,
                                   GError **error)
{
    MockRun *r = run_of(t, d);
    *duplicate = FALSE;
    if (r->crashed)
        return JET_CAPTURE_CAPTURED;   /* the host is gone: nothing is stored or shown */
    GPtrArray *hs = jet_capture_headers((int)MIN(d->len, (gsize)G_MAXINT), d->hdrs->headers, d->hdrs->defects,
                                        facts, 0, NULL, error);
    if (hs == NULL) {
        r->captured_too_large = TRUE;
        return JET_CAPTURE_TOO_LARGE;
    }
    if (r->dlq != NULL)
        g_ptr_array_unref(r->dlq);
    r->dlq = hs;
    return JET_CAPTURE_CAPTURED;
}

static gboolean t_ack_confirmed(gpointer t, const JetDelivery *d, GError **error)
{
    MockRun *r = run_of(t, d);
    if (!r->crashed && r->fault == JET_MOCK_FAULT_ACK_LOST) {
        r->ack_lost = TRUE;
        g_set_error(error, g_quark_from_static_string("jet-mock"), 0,
                    "ack not confirmed: no reply within 5000 ms (jet_mock_inject_fault: the ack was lost)");
        return FALSE;
    }
    return TRUE;
}

/* After a crash fault nothing more reaches the plugin. */
static gboolean t_gone(gpointer t)
{
    MockRun *r = run_of(t, NULL);
    return r != NULL && r->crashed;
}

/* The host's own lines (dead-lettered, retry, suspect ...) are not the
 * plugin's log: shown only with jet_mock_set_log_echo(). */
static gboolean t_log_enabled(gpointer t, jet_log_level level)
{
    (void)level;
    return ((jet_mock *)t)->log_echo;
}

static void t_log(gpointer t, jet_log_level level, const char *event, const char *text)
{
    (void)level;
    jet_mock *m = t;
    if (m->log_echo)
        fprintf(stderr, "[mock host %s] %s: %s\n", m->binding, event, text);
}

/* JetStream's default duplicate window: a stream that stored a Nats-Msg-Id
 * this long ago (mock time) answers a publish with the same id with
 * "duplicate" and stores nothing. */
#define DUPLICATE_WINDOW_NS (G_GINT64_CONSTANT(120) * 1000000000)

/* A publish as the daemon would send it, recorded; it fails when the test
 * asked (jet_mock_fail_publishes). */
static gboolean t_publish(gpointer t, const JetDelivery *d, const JetPublish *p, const char *msg_id,
                          gboolean *duplicate, GError **error)
{
    jet_mock *m = t;
    MockRun *r = run_of(t, d);
    if (r->crashed)
        return TRUE;   /* the host is gone: nothing is sent */
    if (r->n_pubs++ == 0)
        r->pub_first = m->publishes->len;
    jet_mock_publish rec = { 0 };
    rec.subject = g_strdup(p->subject);
    g_ptr_array_add(m->pub_strings, (gpointer)rec.subject);
    gsize len = 0;
    const void *data = g_bytes_get_data(p->data, &len);
    rec.data = len > 0 ? g_memdup2(data, len) : NULL;
    if (rec.data != NULL)
        g_ptr_array_add(m->pub_strings, (gpointer)rec.data);
    rec.len = len;
    /* Headers are appended to one array; the pointer is fixed up when the
     * settlement is filled (the array may move until then). */
    g_autoptr(GPtrArray) wire = jet_publish_wire_headers(p, msg_id, d->hdrs != NULL ? jet_hops_read(d->hdrs->headers) : 0);
    rec.n_headers = wire->len / 2;
    for (guint i = 0; i + 1 < wire->len; i += 2) {
        jet_mock_header h = { g_strdup(g_ptr_array_index(wire, i)), g_strdup(g_ptr_array_index(wire, i + 1)) };
        g_ptr_array_add(m->pub_strings, (gpointer)h.name);
        g_ptr_array_add(m->pub_strings, (gpointer)h.value);
        g_array_append_val(m->pub_headers, h);
    }
    gboolean ok = TRUE;
    if (m->pub_fail_count > 0) {
        m->pub_fail_count--;
        ok = FALSE;
        g_set_error(error, g_quark_from_static_string("jet-mock"), 0, "%s", m->pub_fail_reason);
        rec.result = g_strdup(m->pub_fail_reason);
    } else {
        gint64 now = jet__mock_clock(m);
        const gint64 *stored = g_hash_table_lookup(m->pub_ids, msg_id);
        *duplicate = stored != NULL && now - *stored < DUPLICATE_WINDOW_NS;
        if (!*duplicate)
            g_hash_table_insert(m->pub_ids, g_strdup(msg_id), g_memdup2(&now, sizeof now));
        rec.result = g_strdup(*duplicate ? "duplicate" : "published");
        if (r->fault == JET_MOCK_FAULT_CRASH_AFTER_PUBLISH && ++r->stored == r->fault_k)
            r->crashed = TRUE;   /* dies once this one is stored */
    }
    g_ptr_array_add(m->pub_strings, (gpointer)rec.result);
    g_array_append_val(m->publishes, rec);
    return ok;
}

const JetTransport jet__mock_transport = {
    .ledger_get = t_ledger_get,
    .ledger_update = t_ledger_update,
    .ledger_delete = t_ledger_delete,
    .lease_lapsed = t_lease_lapsed,
    .breaker = t_breaker,
    .enter = t_enter,
    .handle = t_handle,
    .handle_batch = t_handle_batch,
    .release_hold = t_release_hold,
    .leave = t_enter,
    .ack = t_ack,
    .nak = t_nak,
    .stream_created = t_stream_created,
    .capture = t_capture,
    .ack_confirmed = t_ack_confirmed,
    .publish = t_publish,
    .log = t_log,
    .log_enabled = t_log_enabled,
    .gone = t_gone,
};

/* --- the message's ledger record ------------------------------------------ */

/* What the test set (or the last settlement wrote) as the record the host
 * reads at this delivery: found when it holds anything. */
static void run_init(MockRun *r, const jet_mock_msg *b)
{
    memset(r, 0, sizeof *r);
    r->msg = b;
    jet_ledger_record_init(&r->rec);
    r->rec.failures = b->failures;
    r->rec.postpones = b->postpones;
    r->rec.strikes = b->strikes;
    r->rec.absolved = b->absolved;
    r->rec.has_first_failure = b->has_first_failure;
    r->rec.first_failure_ns = b->first_failure_ns;
    r->rec.releases = b->releases;
    r->rec.isolated = b->isolated;
    g_strlcpy(r->rec.isolated_by, b->isolated_by, sizeof r->rec.isolated_by);
    r->rec.isolated_ns = b->isolated_ns;
    r->rec_found = b->failures > 0 || b->postpones > 0 || b->strikes > 0 || b->absolved > 0 ||
                   b->has_first_failure || b->breaker_claim || b->releases > 0 || b->isolated;
}

int jet_mock_msg_redeliver(jet_mock_msg *b, const jet_mock_settlement *s)
{
    g_return_val_if_fail(b != NULL && s != NULL, JET_MOCK_EINVAL);
    gboolean fault = s->outcome != NULL && (strcmp(s->outcome, "crashed") == 0 || strcmp(s->outcome, "ack-lost") == 0);
    if (s->action != JET_MOCK_RETRY && s->action != JET_MOCK_POSTPONE && !fault)
        return JET_MOCK_ESTATE;
    if (b->deliveries < G_MAXUINT32)
        b->deliveries++;
    if (b->has_written) {
        /* What the settlement wrote is what the next delivery reads. */
        b->failures = b->written.failures;
        b->postpones = b->written.postpones;
        b->strikes = b->written.strikes;
        b->absolved = b->written.absolved;
        b->has_first_failure = b->written.has_first_failure;
        b->first_failure_ns = b->written.first_failure_ns;
        b->releases = b->written.releases;
        b->isolated = b->written.isolated;
        g_strlcpy(b->isolated_by, b->written.isolated_by, sizeof b->isolated_by);
        b->isolated_ns = b->written.isolated_ns;
        b->has_written = FALSE;
        return JET_MOCK_OK;
    }
    if (fault)
        return JET_MOCK_OK;   /* nothing was written before the fault */
    if (s->is_failure) {
        if (b->failures < G_MAXUINT32)
            b->failures++;
        if (!b->has_first_failure) {
            b->has_first_failure = TRUE;
            b->first_failure_ns = s->now_ns;
        }
    }
    if (s->action == JET_MOCK_POSTPONE && b->postpones < G_MAXUINT32)
        b->postpones++;
    return JET_MOCK_OK;
}

/* --- delivering ------------------------------------------------------------ */

static const char *outcome_name(JetActionKind k)
{
    switch (k) {
    case JET_ACTION_ACK: return "acked";
    case JET_ACTION_RETRY: return "retried";
    case JET_ACTION_POSTPONE: return "postponed";
    case JET_ACTION_CAPTURE: return "dead-lettered";
    }
    return "unknown";
}

/* Which rule a plugin error broke, in the order settle.c weighs them. */
static const char *plugin_error_rule(const JetSettlePolicy *p, const JetExecuted *x)
{
    const JetSettleFacts *f = &x->facts;
    int v = f->verdict;
    if (x->publish_refused && v == JET_ACK)
        return RULE_PUBLISH;
    if (v != JET_ACK && v != JET_RETRY && v != JET_POSTPONE && v != JET_REJECT)
        return RULE_VERDICT;
    if (f->reason_too_long || (f->reason != NULL && strlen(f->reason) > JET_REASON_MAX))
        return RULE_REASON_LENGTH;
    if (v == JET_POSTPONE && (!f->has_delay || f->delay_ms == 0))
        return RULE_POSTPONE_DELAY;
    if (v == JET_POSTPONE && f->delay_ms > p->max_postpone_delay_ms)
        return RULE_POSTPONE_CAP;
    return RULE_VERDICT;   /* not reached while settle.c keeps this list */
}

static char *describe(const JetSettleAction *a)
{
    if (a->kind == JET_ACTION_RETRY || a->kind == JET_ACTION_POSTPONE)
        return g_strdup_printf("%s in %" G_GUINT64_FORMAT " ms", jet_action_name(a->kind), a->delay_ms);
    if (a->kind == JET_ACTION_CAPTURE)
        return g_strdup_printf("capture (%s)", jet_cause_name(a->cause));
    return g_strdup(jet_action_name(a->kind));
}

/* A run's dead-letter record, as the settlement shows it: its strings and
 * header array are the mock's until the next delivery. */
static void show_dlq(jet_mock *m, MockRun *run, jet_mock_settlement *out)
{
    GPtrArray *strings = run->dlq != NULL ? g_steal_pointer(&run->dlq) : g_ptr_array_new();
    g_ptr_array_add(m->dlq_strings, strings);
    gsize n = strings->len / 2;
    jet_mock_header *hs = g_new0(jet_mock_header, n + 1);
    g_ptr_array_add(m->dlq_headers, hs);
    for (gsize i = 0; i < n; i++) {
        hs[i].name = g_ptr_array_index(strings, 2 * i);
        hs[i].value = g_ptr_array_index(strings, 2 * i + 1);
    }
    out->dlq_subject = m->config->dlq_subject;
    out->n_dlq_headers = n;
    out->dlq_headers = hs;
}

/* The message's header list as a parsed block: the pairs in the order they
 * were added; a header with no name cannot come from a server and is left
 * out. */
static void headers_of(const jet_mock_msg *b, JetHdrParse *out)
{
    jet_hdr_parse(NULL, 0, out);
    for (guint i = 0; i + 1 < b->headers->len; i += 2) {
        if (*(const char *)g_ptr_array_index(b->headers, i) == '\0')
            continue;
        g_ptr_array_add(out->headers, g_strdup(g_ptr_array_index(b->headers, i)));
        g_ptr_array_add(out->headers, g_strdup(g_ptr_array_index(b->headers, i + 1)));
    }
}

void jet__mock_settlement_out(const jet_mock_settlement *full, jet_mock_settlement *out, size_t out_size)
{
    size_t n = MIN(out_size, sizeof *full);
    memcpy(out, full, n);
    if (out_size > n)
        memset((char *)out + n, 0, out_size - n);
}

/* What the last call showed goes: a new call's settlements start empty. */
static void outputs_reset(jet_mock *m)
{
    g_ptr_array_set_size(m->dlq_strings, 0);
    g_ptr_array_set_size(m->dlq_headers, 0);
    g_ptr_array_set_size(m->pub_strings, 0);
    g_array_set_size(m->publishes, 0);
    g_array_set_size(m->pub_headers, 0);
}

static void delivery_of(jet_mock *m, const jet_mock_msg *b, const char *malformed, JetHdrParse *hdrs,
                        JetStats *stats, JetDelivery *d)
{
    headers_of(b, hdrs);
    *d = (JetDelivery){
        .subject = b->subject,
        .data = (const char *)b->data,
        .len = b->len,
        .hdrs = hdrs,
        .malformed = malformed,
        .stream = m->stream,
        .consumer = m->consumer,
        .stream_seq = b->stream_seq,
        .consumer_seq = b->consumer_seq,
        .deliveries = b->deliveries,
        .enqueued_ns = b->has_enqueued ? b->enqueued_ns : 0,
        .stats = stats,
    };
}

/* One settlement from its run; its publishes' pointers are set once every
 * run of the call is over (publishes_shown). */
static void settlement_fill(jet_mock *m, const jet_mock_msg *b, MockRun *run, const JetExecuted *x,
                            jet_mock_settlement *out)
{
    gboolean batched = run->batched;
    memset(out, 0, sizeof *out);
    if (x->set_aside) {
        out->action = JET_MOCK_SET_ASIDE;
        out->action_name = out->outcome = "set-aside";
        out->cause = "none";
        out->handled = x->handled;
        out->verdict = x->verdict;
        out->now_ns = jet__mock_clock(m);
        out->stream_seq = b->stream_seq;
        out->deliveries = b->deliveries;
        return;
    }
    const JetSettleAction *a = &x->action;
    out->verdict = x->verdict;
    out->handled = x->handled;
    out->action = (jet_mock_action)a->kind;
    out->action_name = jet_action_name(a->kind);
    out->delay_ms = a->delay_ms;
    out->cause = jet_cause_name(a->cause);
    out->outcome = run->crashed ? "crashed" : run->ack_lost ? "ack-lost"
                 : run->captured_too_large ? "stranded" : outcome_name(a->kind);
    out->is_failure = a->is_failure;
    out->failure_number = a->failure_number;
    out->plugin_error = a->plugin_error;
    g_strlcpy(out->reason, a->reason, sizeof out->reason);
    out->now_ns = x->facts.now_ns;
    out->stream_seq = b->stream_seq;
    out->deliveries = b->deliveries;
    if (a->kind == JET_ACTION_CAPTURE && (x->captured || run->ack_lost) && !run->crashed)
        show_dlq(m, run, out);
    out->n_publishes = run->n_pubs;
    if (a->plugin_error) {
        g_autofree char *what = describe(a);
        jet__mock_violation(m, plugin_error_rule(&m->policy, x),
                            "%s of stream seq %" G_GUINT64_FORMAT ": %s; the daemon counts it as a "
                            "failed attempt (%s), never as an ack", batched ? "handle_batch()'s verdict" : "handle()",
                            b->stream_seq, a->reason, what);
    }
    if (run->dlq != NULL)
        g_ptr_array_unref(g_steal_pointer(&run->dlq));
}

/* The publishes' headers, and each settlement's publishes, now that the
 * arrays no longer move. */
static void publishes_shown(jet_mock *m, const MockRun *runs, jet_mock_settlement *outs, size_t n)
{
    jet_mock_header *h = (jet_mock_header *)(void *)m->pub_headers->data;
    for (guint i = 0; i < m->publishes->len; i++) {
        jet_mock_publish *p = &g_array_index(m->publishes, jet_mock_publish, i);
        p->headers = h;
        h += p->n_headers;
    }
    for (size_t i = 0; i < n; i++)
        outs[i].publishes = runs[i].n_pubs > 0
                                ? &g_array_index(m->publishes, jet_mock_publish, runs[i].pub_first) : NULL;
}

/* The call's result: a violation since `before` names its rule in every
 * settlement of the call. */
static int call_result(jet_mock *m, size_t before, jet_mock_settlement *outs, size_t n)
{
    if (jet_mock_violation_count(m) == before)
        return JET_MOCK_OK;
    for (size_t i = 0; i < n; i++)
        outs[i].violation = jet_mock_violation_rule(m, before);
    return JET_MOCK_VIOLATION;
}

/* What a settled pending delivery held; the struct itself stays until
 * the mock is freed (jet__mock_pending_free), since a plugin thread may
 * still be inside msg_complete() on it. */
static void pending_clear(MockPending *p)
{
    jet_hdr_parse_clear(&p->hdrs);
    if (p->run.dlq != NULL)
        g_ptr_array_unref(g_steal_pointer(&p->run.dlq));
    g_clear_pointer(&p->msg, jet_mock_msg_free);
}

static void pending_done(jet_mock *m, MockPending *p)
{
    pending_clear(p);
    g_ptr_array_add(m->pending_done, p);
}

void jet__mock_pending_free(gpointer pending)
{
    MockPending *p = pending;
    pending_clear(p);
    g_free(p);
}

/* What jet_mock_deliver() shows of a delivery handed over pending. */
static void settlement_pending(jet_mock *m, const MockPending *p, jet_mock_settlement *out)
{
    memset(out, 0, sizeof *out);
    out->action = JET_MOCK_PENDING;
    out->action_name = "pending";
    out->cause = "none";
    out->outcome = "pending";
    out->handled = 1;
    out->verdict = JET_PENDING;
    out->now_ns = jet__mock_clock(m);
    out->stream_seq = p->msg->stream_seq;
    out->deliveries = p->msg->deliveries;
}

/* jet__mock_run on a binding with max_in_flight: the delivery on the heap,
 * with a copy of the builder, since it may outlive the call. */
static int run_async(jet_mock *m, const jet_mock_msg *b, const char *malformed, jet_mock_settlement *out)
{
    size_t before = jet_mock_violation_count(m);
    MockPending *p = g_new0(MockPending, 1);
    p->mock = m;
    p->msg = jet__mock_msg_copy(b);
    delivery_of(m, p->msg, malformed, &p->hdrs, &p->stats, &p->d);
    run_init(&p->run, p->msg);
    p->run.fault = m->fault;
    p->run.fault_k = m->fault_k;
    p->run.pending = p;
    p->async.completed = pending_completed;
    p->async.refused = pending_refused;
    p->async.data = p;
    p->since_ns = jet__mock_clock(m);
    m->run = &p->run;
    p->xp = jet_executor_pending_new(m->executor, &p->d);
    JetExecuted x;
    if (jet_executor_run_async(m->executor, p->xp, &x)) {
        m->run = NULL;
        g_ptr_array_add(m->pending, p);
        settlement_pending(m, p, out);
        return call_result(m, before, out, 1);
    }
    m->run = NULL;
    /* Settled at once: what it wrote is the builder's next delivery's. */
    jet_mock_msg *w = (jet_mock_msg *)b;
    w->written = p->msg->written;
    w->has_written = p->msg->has_written;
    settlement_fill(m, p->msg, &p->run, &x, out);
    publishes_shown(m, &p->run, out, 1);
    int rc = call_result(m, before, out, 1);
    pending_done(m, p);
    return rc;
}

/* Pending deliveries past handler_timeout on the mock clock: hung, as
 * the daemon's lease keeper finds them: their lease stops, and they stay
 * pending until the plugin completes them. */
static void pending_expire(jet_mock *m)
{
    guint64 limit_ms = m->config->handler_timeout_ms;
    if (limit_ms == 0)
        return;
    gint64 now = jet__mock_clock(m);
    g_mutex_lock(&m->lock);
    for (guint i = 0; i < m->pending->len; i++) {
        MockPending *p = g_ptr_array_index(m->pending, i);
        gint64 at = p->completed ? p->completed_ns : now;   /* a completion stops its clock */
        if (at - p->since_ns > (gint64)limit_ms * 1000000)
            p->run.lapsed = TRUE;
    }
    g_mutex_unlock(&m->lock);
}

size_t jet__mock_pending_count(jet_mock *m)
{
    if (m->state == MOCK_STARTED)
        pending_expire(m);
    return m->pending->len;
}

int jet__mock_settle_completed(jet_mock *m, jet_mock_settlement *out)
{
    pending_expire(m);
    g_mutex_lock(&m->lock);
    MockPending *p = g_queue_pop_head(&m->completed);
    g_mutex_unlock(&m->lock);
    if (p == NULL)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_settle_completed: none of the %u pending deliveries "
                              "has been completed (msg_complete())", m->pending->len);
    outputs_reset(m);
    size_t before = jet_mock_violation_count(m);
    g_ptr_array_remove(m->pending, p);
    take_back(p->lent, p->jm);
    jet__mock_lent_poison(p->lent);
    gint st = g_atomic_int_get(&p->async.state);
    gboolean given_up = JET_MSG_ASYNC_PHASE(st) == JET_MSG_ASYNC_GIVEN_UP;
    const char *why = given_up ? "still pending when the mock stopped: given up" : NULL;
    m->run = &p->run;
    JetExecuted x;
    jet_executor_complete(m->executor, p->xp, JET_MSG_ASYNC_VERDICT(st), why, &x);
    m->run = NULL;
    settlement_fill(m, p->msg, &p->run, &x, out);
    if (given_up)
        out->outcome = "given-up";
    else if (p->run.lapsed)
        out->outcome = "late";
    publishes_shown(m, &p->run, out, 1);
    int rc = call_result(m, before, out, 1);
    pending_done(m, p);
    return rc;
}

void jet__mock_pending_stop(jet_mock *m)
{
    /* A stop gives up what is still pending: settled unsettled, as the
     * daemon's drain would after handler_timeout. */
    while (m->pending->len > 0) {
        MockPending *p = g_ptr_array_index(m->pending, 0);
        if (g_atomic_int_compare_and_exchange(&p->async.state, JET_MSG_ASYNC_PENDING, JET_MSG_ASYNC_GIVEN_UP)) {
            g_atomic_int_set(&p->lent->given_up, 1);
            p->run.lapsed = TRUE;
            g_mutex_lock(&m->lock);
            g_queue_push_tail(&m->completed, p);
            g_mutex_unlock(&m->lock);
        }
        /* Completed meanwhile, on its way to the queue: settled once there. */
        g_mutex_lock(&m->lock);
        gboolean queued = !g_queue_is_empty(&m->completed);
        g_mutex_unlock(&m->lock);
        if (!queued) {
            g_thread_yield();
            continue;
        }
        jet_mock_settlement s;
        jet__mock_settle_completed(m, &s);
    }
}

int jet__mock_run(jet_mock *m, const jet_mock_msg *b, const char *malformed, jet_mock_settlement *out)
{
    if (m->config->max_in_flight > 0) {
        outputs_reset(m);
        ((jet_mock_msg *)b)->has_written = FALSE;
        return run_async(m, b, malformed, out);
    }
    outputs_reset(m);
    ((jet_mock_msg *)b)->has_written = FALSE;
    size_t before = jet_mock_violation_count(m);
    g_auto(JetHdrParse) hdrs = { 0 };
    JetStats stats = { 0 };
    JetDelivery d;
    delivery_of(m, b, malformed, &hdrs, &stats, &d);
    MockRun run;
    run_init(&run, b);
    run.fault = m->fault;   /* armed for this call only: the entry points spend it */
    run.fault_k = m->fault_k;
    m->run = &run;
    JetExecuted x;
    jet_executor_deliver(m->executor, &d, &x);
    m->run = NULL;
    settlement_fill(m, b, &run, &x, out);
    publishes_shown(m, &run, out, 1);
    return call_result(m, before, out, 1);
}

int jet__mock_run_batch(jet_mock *m, const jet_mock_msg *const *msgs, size_t n, const char *const *malformed,
                        jet_mock_settlement *outs)
{
    outputs_reset(m);
    size_t before = jet_mock_violation_count(m);
    g_autofree JetHdrParse *hdrs = g_new0(JetHdrParse, n);
    g_autofree JetDelivery *ds = g_new(JetDelivery, n);
    g_autofree const JetDelivery **dp = g_new(const JetDelivery *, n);
    g_autofree MockRun *runs = g_new(MockRun, n);
    g_autofree JetExecuted *xs = g_new(JetExecuted, n);
    JetStats stats = { 0 };
    for (size_t i = 0; i < n; i++) {
        ((jet_mock_msg *)msgs[i])->has_written = FALSE;
        delivery_of(m, msgs[i], malformed != NULL ? malformed[i] : NULL, &hdrs[i], &stats, &ds[i]);
        run_init(&runs[i], msgs[i]);
        runs[i].batched = msgs[i]->deliveries <= 1;
        ds[i].token = &runs[i];
        dp[i] = &ds[i];
    }
    m->run = &runs[0];
    /* An ordered or KV binding settles its batch in stream order
     * (executor.h): what follows a message that waits is set aside. */
    if (JET_KIND_IS_ORDERED(m->config->kind))
        jet_executor_deliver_batch_in_order(m->executor, dp, (guint)n, xs);
    else
        jet_executor_deliver_batch(m->executor, dp, (guint)n, xs);
    m->run = NULL;
    for (size_t i = 0; i < n; i++) {
        settlement_fill(m, msgs[i], &runs[i], &xs[i], &outs[i]);
        jet_hdr_parse_clear(&hdrs[i]);
    }
    publishes_shown(m, runs, outs, n);
    return call_result(m, before, outs, n);
}

const char *jet_mock_settlement_header(const jet_mock_settlement *s, const char *name)
{
    g_return_val_if_fail(s != NULL && name != NULL, NULL);
    for (size_t i = 0; i < s->n_dlq_headers; i++)
        if (strcmp(s->dlq_headers[i].name, name) == 0)
            return s->dlq_headers[i].value;
    return NULL;
}
