/* Publish-then-ack and plugin metrics on the mock host (ABI 1.1): what the
 * daemon would send, in order, with its Nats-Msg-Id; a failed publish
 * turning the ACK into a retry; a refused call as a plugin error; no
 * publish with another verdict; msg_ctx(); metrics declared at init only,
 * counted and read back; the fault points (a crash after publish K, an ack
 * lost) and the deliveries after them; and the same through `jethost
 * mock`.  No server. */
#include <jethost/mock.h>

#include "harness.h"

#include <string.h>

static const jet_host_api *fh;

typedef struct {
    jet_ctx *ctx;
    int forwarded, last_len;        /* metric ids */
    int late_declare;               /* what a declare after init returned */
    int ctx_matched;
    int settled_calls, last_outcome;   /* settled() */
} Fwd;

static Fwd fwd;

static int f_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    memset(&fwd, 0, sizeof fwd);
    fwd.ctx = c;
    fwd.forwarded = fh->ctx_metric_declare(c, "forwarded", JET_METRIC_COUNTER, "messages forwarded");
    fwd.last_len = fh->ctx_metric_declare(c, "last_len", JET_METRIC_GAUGE, "the last payload's length");
    *state = &fwd;
    return 0;
}

/* Header "to": a comma list of subjects, each published with the payload
 * and an X-Origin header; "verdict": what to return (default ack). */
static int f_handle(void *state, jet_msg *m)
{
    Fwd *f = state;
    f->ctx_matched = fh->msg_ctx(m) == f->ctx;
    f->late_declare = fh->ctx_metric_declare(f->ctx, "late", JET_METRIC_COUNTER, "");
    size_t len = 0;
    const void *data = fh->msg_data(m, &len);
    const char *to = fh->msg_header(m, "to");
    if (to != NULL) {
        char **subjects = g_strsplit(to, ",", -1);
        for (char **s = subjects; *s != NULL; s++) {
            const char *const hs[] = { "X-Origin", fh->msg_subject(m), NULL };
            fh->msg_publish(m, *s, hs, data, len);
        }
        fh->ctx_metric_add(f->ctx, f->forwarded, g_strv_length(subjects));
        g_strfreev(subjects);
    }
    fh->ctx_metric_set(f->ctx, f->last_len, (int64_t)len);
    const char *v = fh->msg_header(m, "verdict");
    if (v != NULL && strcmp(v, "retry") == 0)
        return JET_RETRY;
    if (v != NULL && strcmp(v, "reject") == 0)
        return JET_REJECT;
    return JET_ACK;
}

static void f_settled(void *state, const jet_settled *st)
{
    Fwd *f = state;
    f->settled_calls++;
    f->last_outcome = (int)st->outcome;
}

static const jet_plugin f_plugin = {
    JET_PLUGIN_HEADER,
    .name = "fwd",
    .version = "1",
    .init = f_init,
    .handle = f_handle,
    .settled = f_settled,
};

static const jet_plugin *f_entry(const jet_host_api *h)
{
    fh = h;
    return &f_plugin;
}

static jet_mock *fwd_mock(void)
{
    char err[256];
    jet_mock *m = jet_mock_new_static(f_entry, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    jet_mock_set_binding(m, "fw", "ORDERS", "c");
    return m;
}

static jet_mock_msg *msg_to(jet_mock *m, const char *to, const char *verdict)
{
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    jet_mock_msg_set_text(b, "{\"id\":7}");
    if (to != NULL)
        jet_mock_msg_add_header(b, "to", to);
    if (verdict != NULL)
        jet_mock_msg_add_header(b, "verdict", verdict);
    return b;
}

static const char *header(const jet_mock_publish *p, const char *name)
{
    for (size_t i = 0; i < p->n_headers; i++)
        if (strcmp(p->headers[i].name, name) == 0)
            return p->headers[i].value;
    return NULL;
}

static void test_published_then_acked(void)
{
    jet_mock *m = fwd_mock();
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_msg *b = msg_to(m, "a.one,b.two", NULL);
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "ack");
    g_assert_cmpuint(s.n_publishes, ==, 2);
    g_assert_cmpstr(s.publishes[0].subject, ==, "a.one");
    g_assert_cmpstr(s.publishes[1].subject, ==, "b.two");
    g_assert_cmpstr(s.publishes[0].headers[0].name, ==, "Nats-Msg-Id");
    g_assert_cmpstr(header(&s.publishes[0], "Nats-Msg-Id"), ==, "jethost-pub:ORDERS.c:1:1701388800000000000:0");
    g_assert_cmpstr(header(&s.publishes[1], "Nats-Msg-Id"), ==, "jethost-pub:ORDERS.c:1:1701388800000000000:1");
    g_assert_cmpstr(header(&s.publishes[1], "X-Origin"), ==, "orders.new");
    g_assert_cmpmem(s.publishes[0].data, s.publishes[0].len, "{\"id\":7}", 8);
    g_assert_cmpstr(s.publishes[1].result, ==, "published");
    g_assert_true(fwd.ctx_matched);
    g_assert_cmpint(fwd.late_declare, ==, JET_ESTATE);

    /* The same message again (a redelivery): the same ids. */
    jet_mock_msg_set_deliveries(b, 2);
    jet_mock_msg_set_ledger(b, 0, 0);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(header(&s.publishes[1], "Nats-Msg-Id"), ==, "jethost-pub:ORDERS.c:1:1701388800000000000:1");
    jet_mock_msg_free(b);

    /* Metrics: declared at init, counted, read back. */
    int found = 0;
    g_assert_cmpint(jet_mock_metric(m, "forwarded", &found), ==, 4);
    g_assert_true(found);
    g_assert_cmpint(jet_mock_metric(m, "last_len", &found), ==, 8);
    g_assert_cmpint(jet_mock_metric(m, "late", &found), ==, 0);
    g_assert_false(found);
    g_assert_cmpuint(jet_mock_call_count(m, "msg_publish"), ==, 4);
    jet_mock_free(m);
}

/* A failed publish: the ACK becomes a retry with the server's reason, and
 * the rest of the queue is not sent. */
static void test_publish_failed(void)
{
    jet_mock *m = fwd_mock();
    jet_mock_set_policy(m, "max_attempts", "2");
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_fail_publishes(m, "nats: no responders available for request", 1);
    jet_mock_msg *b = msg_to(m, "a,b", NULL);
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "retry");
    g_assert_true(s.is_failure);
    g_assert_false(s.plugin_error);
    g_assert_cmpstr(s.reason, ==, "publish failed: publish 1 of 2 to a: nats: no responders available for request");
    g_assert_cmpuint(s.n_publishes, ==, 1);
    g_assert_cmpstr(s.publishes[0].result, ==, "nats: no responders available for request");
    /* Spent: the record names the refusal. */
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    jet_mock_fail_publishes(m, "maximum payload exceeded", 5);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.cause, ==, "exhausted");
    g_assert_nonnull(strstr(jet_mock_settlement_header(&s, "Jethost-Reason"), "maximum payload exceeded"));
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* A refused call: a plugin error (rule "publish"), never an ack without
 * the forward; nothing is sent. */
static void test_publish_refused(void)
{
    jet_mock *m = fwd_mock();
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_msg *b = msg_to(m, "ok,bad.*", NULL);
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_VIOLATION);
    g_assert_cmpstr(s.violation, ==, "publish");
    g_assert_cmpstr(s.action_name, ==, "retry");
    g_assert_true(s.plugin_error);
    g_assert_nonnull(strstr(s.reason, "plugin error: publish 1: subject \"bad.*\""));
    g_assert_cmpuint(s.n_publishes, ==, 0);
    jet_mock_msg_free(b);

    /* $KV. only with publish_reserved. */
    b = msg_to(m, "$KV.B.k", NULL);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_VIOLATION);
    g_assert_nonnull(strstr(s.reason, "publish_reserved"));
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* With any verdict but ACK the queue is dropped. */
static void test_other_verdicts_send_nothing(void)
{
    static const char *const verdicts[] = { "retry", "reject" };
    for (gsize i = 0; i < G_N_ELEMENTS(verdicts); i++) {
        jet_mock *m = fwd_mock();
        g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
        jet_mock_msg *b = msg_to(m, "a", verdicts[i]);
        jet_mock_settlement s;
        g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
        g_assert_cmpuint(s.n_publishes, ==, 0);
        g_assert_null(s.publishes);
        jet_mock_msg_free(b);
        jet_mock_free(m);
    }
}

/* Metric declarations the host refuses. */
static int m_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    (void)state;
    static const char *const bad[] = { "", "Upper", "9lead", "with-dash", "sp ace", NULL };
    for (const char *const *n = bad; *n != NULL; n++)
        if (fh->ctx_metric_declare(c, *n, JET_METRIC_COUNTER, "") != JET_EINVAL) {
            g_snprintf(err, err_len, "bad name '%s' accepted", *n);
            return 1;
        }
    g_autofree char *long_name = g_strnfill(65, 'a');
    if (fh->ctx_metric_declare(c, long_name, JET_METRIC_COUNTER, "") != JET_EINVAL ||
        fh->ctx_metric_declare(c, "typed", 7, "") != JET_EINVAL) {
        g_snprintf(err, err_len, "long name or bad type accepted");
        return 1;
    }
    g_autofree char *max_name = g_strnfill(64, 'a');
    if (fh->ctx_metric_declare(c, max_name, JET_METRIC_GAUGE, "a\nmulti-line\r\nhelp") != 0 ||
        fh->ctx_metric_declare(c, max_name, JET_METRIC_GAUGE, "") != JET_EINVAL) {
        g_snprintf(err, err_len, "64-byte name refused, or repeated name accepted");
        return 1;
    }
    for (int i = 1; i < 64; i++) {
        char name[16];
        g_snprintf(name, sizeof name, "m%d", i);
        if (fh->ctx_metric_declare(c, name, JET_METRIC_COUNTER, "") != i) {
            g_snprintf(err, err_len, "metric %d refused", i);
            return 1;
        }
    }
    if (fh->ctx_metric_declare(c, "one_too_many", JET_METRIC_COUNTER, "") != JET_ELIMIT ||
        fh->ctx_metric_add(c, 0, 1) != JET_EINVAL ||     /* a gauge */
        fh->ctx_metric_set(c, 1, 5) != JET_EINVAL ||     /* a counter */
        fh->ctx_metric_add(c, 64, 1) != JET_EINVAL || fh->ctx_metric_add(c, -1, 1) != JET_EINVAL ||
        fh->ctx_metric_add(NULL, 1, 1) != JET_EINVAL || fh->ctx_metric_add(c, 1, 3) != JET_OK) {
        g_snprintf(err, err_len, "a limit or a type not kept");
        return 1;
    }
    return 0;
}

static int m_handle(void *state, jet_msg *m)
{
    (void)state;
    (void)m;
    return JET_ACK;
}

static const jet_plugin m_plugin = {
    JET_PLUGIN_HEADER, .name = "metrics", .version = "1", .init = m_init, .handle = m_handle,
};

static const jet_plugin *m_entry(const jet_host_api *h)
{
    fh = h;
    return &m_plugin;
}

static void test_metric_rules(void)
{
    char err[256];
    jet_mock *m = jet_mock_new_static(m_entry, err, sizeof err);
    g_assert_nonnull(m);
    if (jet_mock_start(m) != JET_MOCK_OK)
        g_error("%s", jet_mock_error(m));
    g_assert_cmpint(jet_mock_metric(m, "m1", NULL), ==, 3);
    jet_mock_free(m);
}

/* The hop count: each publish carries the delivery's Jethost-Hops plus
 * one, a plugin's own count left out; a delivery at max_hops is
 * dead-lettered as hop-limit without the handler; 0 turns the bound off. */
static void test_hop_limit(void)
{
    jet_mock *m = fwd_mock();
    g_assert_cmpint(jet_mock_set_policy(m, "max_hops", "16"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_msg *b = msg_to(m, "a.one", NULL);
    jet_mock_msg_add_header(b, "Jethost-Hops", "15");
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "ack");
    g_assert_cmpint(s.handled, ==, 1);
    g_assert_cmpstr(s.publishes[0].headers[1].name, ==, "Jethost-Hops");
    g_assert_cmpstr(s.publishes[0].headers[1].value, ==, "16");
    jet_mock_msg_free(b);

    b = msg_to(m, "a.one", NULL);
    jet_mock_msg_set_seq(b, 2, 2);
    jet_mock_msg_add_header(b, "Jethost-Hops", "16");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "capture");
    g_assert_cmpstr(s.cause, ==, "hop-limit");
    g_assert_cmpint(s.handled, ==, 0);
    g_assert_cmpuint(s.n_publishes, ==, 0);
    g_assert_nonnull(strstr(s.reason, "16 times already"));
    jet_mock_msg_free(b);
    jet_mock_free(m);

    m = fwd_mock();
    g_assert_cmpint(jet_mock_set_policy(m, "max_hops", "0"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    b = msg_to(m, "a.one", NULL);
    jet_mock_msg_add_header(b, "Jethost-Hops", "4000000000");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "ack");
    g_assert_cmpstr(header(&s.publishes[0], "Jethost-Hops"), ==, "4000000001");
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* A crash after the k-th publish is stored: nothing after it (no more
 * publishes, no ack, no settled()); the next delivery is a suspect whose
 * first k publishes are duplicates.  k = 0 dies before any publish; a k
 * past the delivery's publishes never strikes; a fault is for one
 * delivery. */
static void test_fault_crash_after_publish(void)
{
    jet_mock *m = fwd_mock();
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;
    jet_mock_msg *b = msg_to(m, "a.one,b.two,c.three", NULL);
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 2), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "crashed");
    g_assert_cmpstr(s.action_name, ==, "ack");
    g_assert_cmpuint(s.n_publishes, ==, 2);
    g_assert_cmpstr(s.publishes[1].subject, ==, "b.two");
    g_assert_cmpstr(s.publishes[1].result, ==, "published");
    g_assert_cmpint(fwd.settled_calls, ==, 0);

    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.deliveries, ==, 2);
    g_assert_cmpstr(s.outcome, ==, "acked");
    g_assert_cmpuint(s.n_publishes, ==, 3);
    g_assert_cmpstr(s.publishes[0].result, ==, "duplicate");
    g_assert_cmpstr(s.publishes[1].result, ==, "duplicate");
    g_assert_cmpstr(s.publishes[2].result, ==, "published");
    g_assert_cmpint(fwd.settled_calls, ==, 1);
    g_assert_cmpint(fwd.last_outcome, ==, JET_SETTLED_ACKED);
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_ESTATE);   /* acked: over */
    jet_mock_msg_free(b);

    /* k = 0: dies as handle() returns. */
    b = msg_to(m, "a.one", NULL);
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 0), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "crashed");
    g_assert_cmpuint(s.n_publishes, ==, 0);
    g_assert_cmpint(fwd.settled_calls, ==, 1);
    /* A retry that dies before its failure is written: nothing recorded. */
    jet_mock_msg_free(b);
    b = msg_to(m, NULL, "retry");
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 0), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "crashed");
    g_assert_cmpstr(s.action_name, ==, "retry");
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    /* Rejected now: the record shows no failure (the delivery that died
     * wrote none). */
    jet_mock_msg_set_header(b, "verdict", "reject");
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "dead-lettered");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Failures"), ==, "0");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Deliveries"), ==, "2");
    jet_mock_msg_free(b);

    /* k past the publishes: no crash; and the fault is gone after it. */
    b = msg_to(m, "a.one", NULL);
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 5), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "acked");
    jet_mock_msg_free(b);
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 1), ==, JET_MOCK_OK);
    b = msg_to(m, NULL, NULL);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);   /* no publish: does not strike */
    jet_mock_msg_free(b);
    b = msg_to(m, "a.one,b.two", NULL);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "acked");
    g_assert_cmpuint(s.n_publishes, ==, 2);
    jet_mock_msg_free(b);

    g_assert_cmpint(jet_mock_inject_fault(m, (jet_mock_fault)7, 0), ==, JET_MOCK_EINVAL);
    g_assert_nonnull(strstr(jet_mock_error(m), "no fault point"));
    jet_mock_free(m);
}

/* An ack lost: an ACK's (the host is told nothing: settled() says acked)
 * or a capture's (its confirmation never comes: uncertain, the record
 * stored); the message comes again, a suspect, and its publishes are
 * duplicates. */
static void test_fault_ack_lost(void)
{
    jet_mock *m = fwd_mock();
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;
    jet_mock_msg *b = msg_to(m, "a.one", NULL);
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_ACK_LOST, 0), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "ack-lost");
    g_assert_cmpstr(s.action_name, ==, "ack");
    g_assert_cmpstr(s.publishes[0].result, ==, "published");
    g_assert_cmpint(fwd.settled_calls, ==, 1);
    g_assert_cmpint(fwd.last_outcome, ==, JET_SETTLED_ACKED);
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "acked");
    g_assert_cmpstr(s.publishes[0].result, ==, "duplicate");
    jet_mock_msg_free(b);

    b = msg_to(m, NULL, "reject");
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_ACK_LOST, 0), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "capture");
    g_assert_cmpstr(s.outcome, ==, "ack-lost");
    g_assert_nonnull(s.dlq_subject);
    g_assert_cmpint(fwd.last_outcome, ==, JET_SETTLED_UNCERTAIN);
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* A suspect whose host dies with it, twice: its isolation marker stays in
 * the record, so each next delivery counts a strike, and at crash_limit
 * it is dead-lettered as poison without running (as the daemon's would). */
static void test_fault_crash_strikes(void)
{
    jet_mock *m = fwd_mock();
    g_assert_cmpint(jet_mock_set_policy(m, "crash_limit", "2"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;
    jet_mock_msg *b = msg_to(m, "a.one", NULL);
    jet_mock_msg_set_deliveries(b, 2);   /* one death unexplained: a suspect */
    guint crashes = 0;
    for (int i = 0; i < 4; i++) {
        g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 0), ==, JET_MOCK_OK);
        g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
        g_test_message("delivery %u: %s, %s", s.deliveries, s.action_name, s.outcome);
        if (strcmp(s.outcome, "crashed") != 0)
            break;
        crashes++;
        g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    }
    g_assert_cmpuint(crashes, ==, 2);
    g_assert_cmpstr(s.outcome, ==, "dead-lettered");
    g_assert_cmpstr(s.cause, ==, "poison");
    g_assert_false(s.handled);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* With lanes, a fault spent on a message held in its lane: it does not
 * strike the message that runs next. */
static void test_fault_spent_when_held(void)
{
    jet_mock *m = fwd_mock();
    g_assert_cmpint(jet_mock_set_policy(m, "key", "subject:2"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;
    jet_mock_msg *a = msg_to(m, NULL, "retry");
    g_assert_cmpint(jet_mock_deliver(m, a, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "retry");
    jet_mock_msg *b = msg_to(m, "a.one", NULL);   /* the same key: held behind a */
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 1), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "held");
    g_assert_cmpint(jet_mock_msg_redeliver(a, &s), ==, JET_MOCK_ESTATE);   /* s was b's */
    jet_mock_msg_set_header(a, "verdict", "ack");
    jet_mock_msg_set_deliveries(a, 2);
    jet_mock_msg_set_ledger(a, 1, 0);
    g_assert_cmpint(jet_mock_deliver(m, a, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "acked");
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.n_publishes, ==, 1);
    g_assert_cmpstr(s.outcome, ==, "acked");
    /* Spent by a jet_mock_deliver_held() that had nothing to run, too. */
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, 1), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_ESTATE);
    jet_mock_msg *c = msg_to(m, "a.two", NULL);
    jet_mock_msg_set_seq(c, 9, 9);
    g_assert_cmpint(jet_mock_deliver(m, c, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.outcome, ==, "acked");
    jet_mock_msg_free(c);
    jet_mock_msg_free(a);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/mock-publish/published-then-acked", test_published_then_acked);
    g_test_add_func("/mock-publish/failed", test_publish_failed);
    g_test_add_func("/mock-publish/refused", test_publish_refused);
    g_test_add_func("/mock-publish/other-verdicts", test_other_verdicts_send_nothing);
    g_test_add_func("/mock-publish/metric-rules", test_metric_rules);
    g_test_add_func("/mock-publish/hop-limit", test_hop_limit);
    g_test_add_func("/mock-publish/fault-crash-after-publish", test_fault_crash_after_publish);
    g_test_add_func("/mock-publish/fault-ack-lost", test_fault_ack_lost);
    g_test_add_func("/mock-publish/fault-crash-strikes", test_fault_crash_strikes);
    g_test_add_func("/mock-publish/fault-spent-when-held", test_fault_spent_when_held);
    return g_test_run();
}
