/* The mock host's per-key lanes (the policy `key`): a head given back with
 * a RETRY or POSTPONE holds its key while other keys go on; its successors
 * are kept unhandled (JET_MOCK_HELD) and released, in stream order, once it
 * is redelivered and settled for good, each by jet_mock_deliver_held(); the
 * keyless lane; a key header written twice; bad `key` values; and the same
 * through `jethost mock`.  No server. */
#include <jethost/mock.h>

#include "harness.h"

#include <string.h>

/* --- a plugin that answers what the message's "verdict" header says -------- */

static const jet_host_api *lh;
static GArray *handled;   /* guint64: the stream seq of every handle(), in order */

/* "retry", "postpone" (5 s) or "reject"; anything else acks. */
static int l_handle(void *state, jet_msg *m)
{
    (void)state;
    guint64 seq = lh->msg_stream_seq(m);
    g_array_append_val(handled, seq);
    const char *v = lh->msg_header(m, "verdict");
    if (v != NULL && strcmp(v, "retry") == 0)
        return JET_RETRY;
    if (v != NULL && strcmp(v, "postpone") == 0) {
        lh->msg_set_delay_ms(m, 5000);
        return JET_POSTPONE;
    }
    if (v != NULL && strcmp(v, "reject") == 0)
        return JET_REJECT;
    return JET_ACK;
}

static int l_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    *state = c;
    return 0;
}

static const jet_plugin l_plugin = {
    JET_PLUGIN_HEADER,
    .name = "lanes",
    .version = "1.0.0",
    .init = l_init,
    .handle = l_handle,
};

static const jet_plugin *l_entry(const jet_host_api *h)
{
    lh = h;
    return &l_plugin;
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (haystack == NULL || strstr(haystack, needle) == NULL)
        g_error("expected '%s' in '%s'", needle, haystack != NULL ? haystack : "(null)");
}

/* A started mock keyed by `key` (NULL: no lanes), with more policy pairs. */
static jet_mock *lanes_mock(const char *key, ...) G_GNUC_NULL_TERMINATED;

static jet_mock *lanes_mock(const char *key, ...)
{
    if (handled == NULL)
        handled = g_array_new(FALSE, FALSE, sizeof(guint64));
    g_array_set_size(handled, 0);
    char err[256];
    jet_mock *m = jet_mock_new_static(l_entry, err, sizeof err);
    if (m == NULL)
        g_error("%s", err);
    if (key != NULL)
        g_assert_cmpint(jet_mock_set_policy(m, "key", key), ==, JET_MOCK_OK);
    va_list ap;
    va_start(ap, key);
    for (const char *k = va_arg(ap, const char *); k != NULL; k = va_arg(ap, const char *))
        g_assert_cmpint(jet_mock_set_policy(m, k, va_arg(ap, const char *)), ==, JET_MOCK_OK);
    va_end(ap);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    return m;
}

/* A message of stream seq `seq` with header order = `order` (NULL: none)
 * and header verdict = `verdict` (NULL: none, an ack). */
static jet_mock_msg *msg(jet_mock *m, guint64 seq, const char *order, const char *verdict)
{
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    jet_mock_msg_set_seq(b, seq, seq);
    if (order != NULL)
        jet_mock_msg_add_header(b, "order", order);
    if (verdict != NULL)
        jet_mock_msg_add_header(b, "verdict", verdict);
    return b;
}

static void deliver(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *s, jet_mock_action want)
{
    g_assert_cmpint(jet_mock_deliver(m, b, s), ==, JET_MOCK_OK);
    g_assert_cmpint(s->action, ==, want);
}

/* What handle() saw, as "1 3 2". */
static char *handled_text(void)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < handled->len; i++)
        g_string_append_printf(s, "%s%" G_GUINT64_FORMAT, i > 0 ? " " : "", g_array_index(handled, guint64, i));
    return g_string_free(s, FALSE);
}

static void assert_handled(const char *want)
{
    g_autofree char *got = handled_text();
    g_assert_cmpstr(got, ==, want);
}

static void assert_held(const jet_mock_settlement *s, guint64 seq, guint64 behind)
{
    g_assert_cmpint(s->action, ==, JET_MOCK_HELD);
    g_assert_cmpstr(s->action_name, ==, "held");
    g_assert_cmpstr(s->outcome, ==, "held");
    g_assert_cmpstr(s->cause, ==, "none");
    g_assert_cmpint(s->handled, ==, 0);
    g_assert_cmpint(s->verdict, ==, -1);
    g_assert_cmpint(s->is_failure, ==, 0);
    g_assert_cmpuint(s->stream_seq, ==, seq);
    g_assert_cmpuint(s->held_behind, ==, behind);
}

/* --- tests ------------------------------------------------------------------ */

/* A postponed head holds its key; another key goes on; the head's
 * redelivery, acked, releases what waited, one jet_mock_deliver_held() at a
 * time and in stream order, whatever order they arrived in. */
static void test_postpone_holds(void)
{
    jet_mock *m = lanes_mock("header:order", NULL);
    jet_mock_settlement s, hs;
    jet_mock_msg *head = msg(m, 1, "A", "postpone");
    deliver(m, head, &hs, JET_MOCK_POSTPONE);
    g_assert_cmpuint(hs.held_behind, ==, 0);

    /* Seq 4 arrives before seq 2: both wait behind 1. */
    jet_mock_msg *b4 = msg(m, 4, "A", NULL);
    deliver(m, b4, &s, JET_MOCK_HELD);
    assert_held(&s, 4, 1);
    g_assert_cmpint(jet_mock_msg_redeliver(b4, &s), ==, JET_MOCK_ESTATE);   /* the mock keeps it */
    jet_mock_msg_free(b4);   /* the mock copied what it needs */
    jet_mock_msg *b2 = msg(m, 2, "A", NULL);
    deliver(m, b2, &s, JET_MOCK_HELD);
    assert_held(&s, 2, 1);
    jet_mock_msg_free(b2);
    g_assert_cmpuint(jet_mock_held_count(m), ==, 2);

    /* Another key is not held. */
    jet_mock_msg *b3 = msg(m, 3, "B", NULL);
    deliver(m, b3, &s, JET_MOCK_ACK);
    jet_mock_msg_free(b3);
    assert_handled("1 3");

    /* Nothing is ready while the head is out. */
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_ESTATE);
    assert_contains(jet_mock_error(m), "no held message is ready (2 held");
    g_assert_cmpint(s.action, ==, 0);

    /* The head comes back and acks: one deliver, one settlement, nothing
     * else run. */
    g_assert_cmpint(jet_mock_msg_redeliver(head, &hs), ==, JET_MOCK_OK);
    jet_mock_msg_set_header(head, "verdict", "ack");
    jet_mock_clock_advance_ms(m, hs.delay_ms);
    deliver(m, head, &s, JET_MOCK_ACK);
    g_assert_cmpuint(s.stream_seq, ==, 1);
    g_assert_cmpuint(s.deliveries, ==, 2);
    assert_handled("1 3 1");
    g_assert_cmpuint(jet_mock_held_count(m), ==, 2);

    /* Released in stream order: 2, then 4 (which waits for 2 to settle). */
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s.stream_seq, ==, 2);
    g_assert_cmpint(s.handled, ==, 1);
    g_assert_cmpuint(jet_mock_held_count(m), ==, 1);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 4);
    assert_handled("1 3 1 2 4");
    g_assert_cmpuint(jet_mock_held_count(m), ==, 0);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_ESTATE);

    /* The key is free again: a new message of A runs at once. */
    jet_mock_msg *b5 = msg(m, 5, "A", NULL);
    deliver(m, b5, &s, JET_MOCK_ACK);
    jet_mock_msg_free(b5);
    jet_mock_msg_free(head);
    jet_mock_free(m);
}

/* Stream order, not arrival order: a message of a held key with a lower
 * seq than the head runs at once; a released message delivered again runs
 * in place of jet_mock_deliver_held(); a released one that postpones holds
 * its lane in turn. */
static void test_stream_order(void)
{
    jet_mock *m = lanes_mock("header:order", NULL);
    jet_mock_settlement s;
    jet_mock_msg *b5 = msg(m, 5, "A", "postpone");
    deliver(m, b5, &s, JET_MOCK_POSTPONE);
    jet_mock_msg *b7 = msg(m, 7, "A", "postpone");
    deliver(m, b7, &s, JET_MOCK_HELD);
    assert_held(&s, 7, 5);
    jet_mock_msg *b3 = msg(m, 3, "A", NULL);
    deliver(m, b3, &s, JET_MOCK_ACK);   /* before 5 in the stream */
    jet_mock_msg_free(b3);
    assert_handled("5 3");

    /* A second postponed head below 5 (seq 4): 5's redelivery waits for it. */
    jet_mock_settlement s4;
    jet_mock_msg *b4 = msg(m, 4, "A", "postpone");
    deliver(m, b4, &s4, JET_MOCK_POSTPONE);
    g_assert_cmpint(jet_mock_msg_redeliver(b5, &s4), ==, JET_MOCK_OK);
    jet_mock_msg_set_header(b5, "verdict", "ack");
    deliver(m, b5, &s, JET_MOCK_HELD);
    assert_held(&s, 5, 4);
    g_assert_cmpint(jet_mock_msg_redeliver(b4, &s4), ==, JET_MOCK_OK);
    jet_mock_msg_set_header(b4, "verdict", "ack");
    deliver(m, b4, &s, JET_MOCK_ACK);
    assert_handled("5 3 4 4");

    /* 5 (its redelivery, kept) is released; delivering it runs it here. */
    g_assert_cmpuint(jet_mock_held_count(m), ==, 2);
    deliver(m, b5, &s, JET_MOCK_ACK);
    g_assert_cmpuint(s.deliveries, ==, 2);
    assert_handled("5 3 4 4 5");

    /* 7 is released and postpones again: it holds A now. */
    jet_mock_settlement s7;
    g_assert_cmpint(jet_mock_deliver_held(m, &s7), ==, JET_MOCK_OK);
    g_assert_cmpint(s7.action, ==, JET_MOCK_POSTPONE);
    g_assert_cmpuint(s7.stream_seq, ==, 7);
    jet_mock_msg *b8 = msg(m, 8, "A", NULL);
    deliver(m, b8, &s, JET_MOCK_HELD);
    assert_held(&s, 8, 7);
    /* The caller's builder of 7 follows it as for any delivery. */
    g_assert_cmpint(jet_mock_msg_redeliver(b7, &s7), ==, JET_MOCK_OK);
    jet_mock_msg_set_header(b7, "verdict", "ack");
    deliver(m, b7, &s, JET_MOCK_ACK);
    g_assert_cmpuint(s.deliveries, ==, 2);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 8);
    assert_handled("5 3 4 4 5 7 7 8");
    jet_mock_msg_free(b4);
    jet_mock_msg_free(b5);
    jet_mock_msg_free(b7);
    jet_mock_msg_free(b8);

    /* Freed while it keeps messages: they are dropped, never handled. */
    jet_mock_msg *b9 = msg(m, 9, "B", "retry");
    deliver(m, b9, &s, JET_MOCK_RETRY);
    jet_mock_msg *b10 = msg(m, 10, "B", NULL);
    deliver(m, b10, &s, JET_MOCK_HELD);
    g_assert_cmpuint(jet_mock_held_count(m), ==, 1);
    g_assert_cmpint(jet_mock_stop(m), ==, JET_MOCK_OK);
    g_assert_cmpuint(jet_mock_held_count(m), ==, 0);
    jet_mock_msg_free(b9);
    jet_mock_msg_free(b10);
    jet_mock_free(m);
}

/* Two lanes released at once: jet_mock_deliver_held() runs them in stream
 * order, whichever head settled first. */
static void test_release_order(void)
{
    jet_mock *m = lanes_mock("subject:1", NULL);
    jet_mock_settlement s, sa, sb;
    jet_mock_msg *a1 = jet_mock_msg_new(m, "A");
    jet_mock_msg_add_header(a1, "verdict", "postpone");
    deliver(m, a1, &sa, JET_MOCK_POSTPONE);
    jet_mock_msg *b2 = jet_mock_msg_new(m, "B");
    jet_mock_msg_add_header(b2, "verdict", "retry");
    deliver(m, b2, &sb, JET_MOCK_RETRY);
    for (guint i = 0; i < 2; i++) {
        jet_mock_msg *b = jet_mock_msg_new(m, i == 0 ? "A" : "B");   /* 3 behind 1, 4 behind 2 */
        deliver(m, b, &s, JET_MOCK_HELD);
        g_assert_cmpuint(s.held_behind, ==, i + 1);
        jet_mock_msg_free(b);
    }
    g_assert_cmpint(jet_mock_msg_redeliver(b2, &sb), ==, JET_MOCK_OK);
    jet_mock_msg_set_header(b2, "verdict", "ack");
    deliver(m, b2, &sb, JET_MOCK_ACK);
    g_assert_cmpint(jet_mock_msg_redeliver(a1, &sa), ==, JET_MOCK_OK);
    jet_mock_msg_set_header(a1, "verdict", "ack");
    deliver(m, a1, &sa, JET_MOCK_ACK);
    g_assert_cmpuint(jet_mock_held_count(m), ==, 2);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 3);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 4);
    assert_handled("1 2 2 1 3 4");
    jet_mock_msg_free(a1);
    jet_mock_msg_free(b2);
    jet_mock_free(m);
}

/* A head that keeps retrying holds its key until it is dead-lettered at
 * max_attempts; the capture releases its successor (unless the capture
 * could not be made). */
static void test_retry_exhausted_releases(void)
{
    jet_mock *m = lanes_mock("header:order", "max_attempts", "3", NULL);
    jet_mock_settlement s, hs;
    jet_mock_msg *head = msg(m, 1, "A", "retry");
    deliver(m, head, &hs, JET_MOCK_RETRY);
    jet_mock_msg *b2 = msg(m, 2, "A", NULL);
    deliver(m, b2, &s, JET_MOCK_HELD);
    assert_held(&s, 2, 1);
    jet_mock_msg_free(b2);
    guint attempts = 1;
    while (jet_mock_msg_redeliver(head, &hs) == JET_MOCK_OK) {
        jet_mock_clock_advance_ms(m, hs.delay_ms);
        g_assert_cmpint(jet_mock_deliver(m, head, &hs), ==, JET_MOCK_OK);
        g_assert_cmpint(hs.action, !=, JET_MOCK_HELD);   /* the head itself is never held */
        attempts++;
        /* Its successor waits until the last attempt. */
        if (hs.action == JET_MOCK_RETRY) {
            g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_ESTATE);
            g_assert_cmpuint(jet_mock_held_count(m), ==, 1);
        }
    }
    g_assert_cmpuint(attempts, ==, 3);
    g_assert_cmpint(hs.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(hs.cause, ==, "exhausted");
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s.stream_seq, ==, 2);
    assert_handled("1 1 1 2");
    jet_mock_msg_free(head);

    /* A capture whose record cannot be built is never acked ("stranded"):
     * the message stays with the server, so it keeps holding its key. */
    g_autofree char *subject = g_strnfill(70000, 'x');
    head = jet_mock_msg_new(m, subject);
    jet_mock_msg_set_seq(head, 10, 10);
    jet_mock_msg_add_header(head, "order", "B");
    jet_mock_msg_add_header(head, "verdict", "reject");
    deliver(m, head, &hs, JET_MOCK_CAPTURE);
    g_assert_cmpstr(hs.outcome, ==, "stranded");
    b2 = msg(m, 11, "B", NULL);
    deliver(m, b2, &s, JET_MOCK_HELD);
    assert_held(&s, 11, 10);
    jet_mock_msg_free(b2);
    jet_mock_msg_free(head);
    jet_mock_free(m);
}

/* Messages without the key share one lane, held like any other; a key from
 * the subject (subject:N) works the same way. */
static void test_keyless(void)
{
    jet_mock *m = lanes_mock("header:order", NULL);
    jet_mock_settlement s, hs;
    jet_mock_msg *head = msg(m, 1, NULL, "postpone");
    deliver(m, head, &hs, JET_MOCK_POSTPONE);
    jet_mock_msg *b2 = msg(m, 2, NULL, NULL);
    deliver(m, b2, &s, JET_MOCK_HELD);
    assert_held(&s, 2, 1);
    jet_mock_msg *b3 = msg(m, 3, "A", NULL);
    deliver(m, b3, &s, JET_MOCK_ACK);
    jet_mock_msg *b4 = msg(m, 4, "", NULL);   /* an empty value: keyless too */
    deliver(m, b4, &s, JET_MOCK_HELD);
    assert_held(&s, 4, 1);
    g_assert_cmpint(jet_mock_msg_redeliver(head, &hs), ==, JET_MOCK_OK);
    jet_mock_msg_set_header(head, "verdict", "ack");
    deliver(m, head, &s, JET_MOCK_ACK);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 2);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 4);
    assert_handled("1 3 1 2 4");
    jet_mock_msg_free(head);
    jet_mock_msg_free(b2);
    jet_mock_msg_free(b3);
    jet_mock_msg_free(b4);
    jet_mock_free(m);

    m = lanes_mock("subject:2", NULL);
    static const struct {
        const char *subject, *verdict;
        jet_mock_action want;
    } steps[] = {
        { "orders.A.new", "postpone", JET_MOCK_POSTPONE },
        { "orders.A.paid", NULL, JET_MOCK_HELD },
        { "orders.B.new", NULL, JET_MOCK_ACK },
        { "orders", NULL, JET_MOCK_ACK },   /* no second token: keyless, and that lane is free */
        { "orders..x", "postpone", JET_MOCK_POSTPONE },   /* an empty token: keyless */
        { "orders", NULL, JET_MOCK_HELD },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(steps); i++) {
        jet_mock_msg *b = jet_mock_msg_new(m, steps[i].subject);
        if (steps[i].verdict != NULL)
            jet_mock_msg_add_header(b, "verdict", steps[i].verdict);
        deliver(m, b, &s, steps[i].want);
        jet_mock_msg_free(b);
    }
    g_assert_cmpuint(s.held_behind, ==, 5);
    assert_handled("1 3 4 5");
    jet_mock_free(m);
}

/* The key header twice with two values: no lane can be chosen, so it is
 * dead-lettered unhandled, as the daemon does; the same value twice is one
 * key. */
static void test_ambiguous(void)
{
    jet_mock *m = lanes_mock("header:Order", NULL);
    jet_mock_settlement s;
    jet_mock_msg *b = msg(m, 1, "A", NULL);
    jet_mock_msg_add_header(b, "ORDER", "B");
    deliver(m, b, &s, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "malformed-headers");
    assert_contains(s.reason, "the lane key header 'Order' has two different values");
    g_assert_cmpint(s.handled, ==, 0);
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Cause"), ==, "malformed-headers");
    jet_mock_msg_free(b);
    assert_handled("");
    g_assert_cmpuint(jet_mock_held_count(m), ==, 0);

    jet_mock_settlement hs;
    jet_mock_msg *head = msg(m, 2, "A", "postpone");
    jet_mock_msg_add_header(head, "order", "A");
    deliver(m, head, &hs, JET_MOCK_POSTPONE);
    b = msg(m, 3, "A", NULL);
    deliver(m, b, &s, JET_MOCK_HELD);
    assert_held(&s, 3, 2);
    jet_mock_msg_free(b);
    assert_handled("2");

    /* A head whose redelivery names two keys is dead-lettered in its lane,
     * which releases its successor. */
    g_assert_cmpint(jet_mock_msg_redeliver(head, &hs), ==, JET_MOCK_OK);
    jet_mock_msg_add_header(head, "order", "Z");
    deliver(m, head, &hs, JET_MOCK_CAPTURE);
    g_assert_cmpstr(hs.cause, ==, "malformed-headers");
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_OK);
    g_assert_cmpuint(s.stream_seq, ==, 3);
    assert_handled("2 3");
    jet_mock_msg_free(head);
    jet_mock_free(m);
}

/* What `key` may be, on which kind, and what lanes-only calls do without. */
static void test_policy(void)
{
    char err[256];
    jet_mock *m = jet_mock_new_static(l_entry, err, sizeof err);
    static const struct {
        const char *value, *why;
    } bad[] = {
        { "order", "must be header:NAME or subject:N" },
        { "header:", "header:NAME needs a header name" },
        { "header:a b", "header:NAME needs a header name" },
        { "subject:0", "subject:N needs a token number from 1" },
        { "subject:256", "subject:N needs a token number from 1" },
        { "subject:x", "subject:N needs a token number from 1" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_cmpint(jet_mock_set_policy(m, "key", bad[i].value), ==, JET_MOCK_EINVAL);
        assert_contains(jet_mock_error(m), bad[i].why);
        assert_contains(jet_mock_error(m), "key");
    }
    /* Durable only, as in a config file. */
    g_assert_cmpint(jet_mock_set_policy(m, "key", "subject:1"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "kind", "ordered"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EINVAL);
    assert_contains(jet_mock_error(m), "key");
    assert_contains(jet_mock_error(m), "not for kind = ordered");
    jet_mock_free(m);

    /* Without a key: no lanes. */
    m = lanes_mock(NULL, NULL);
    jet_mock_settlement s;
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_ESTATE);
    assert_contains(jet_mock_error(m), "no lanes");
    g_assert_cmpuint(jet_mock_held_count(m), ==, 0);
    jet_mock_msg *b = msg(m, 1, "A", "postpone");
    deliver(m, b, &s, JET_MOCK_POSTPONE);
    jet_mock_msg_free(b);
    b = msg(m, 2, "A", NULL);
    deliver(m, b, &s, JET_MOCK_ACK);
    jet_mock_msg_free(b);
    g_assert_cmpint(jet_mock_set_policy(m, "key", "subject:1"), ==, JET_MOCK_ESTATE);
    jet_mock_free(m);

    m = jet_mock_new_static(l_entry, err, sizeof err);
    g_assert_cmpint(jet_mock_deliver_held(m, &s), ==, JET_MOCK_ESTATE);
    assert_contains(jet_mock_error(m), "not started");
    jet_mock_free(m);
}

/* --- `jethost mock` ------------------------------------------------------------ */


/* --policy key=..., a "held" line naming the head, and {"event":
 * "deliver_held"} lines. */
static void test_cli(void)
{
    g_assert_nonnull(g_getenv("JET_BUILDDIR"));
    g_autofree char *plugin = jet_test_plugin_copy("fx_misuse");
    const char *input =
        "{\"subject\": \"a\", \"headers\": {\"order\": \"A\", \"verdict\": \"postpone\", \"delay-ms\": \"5000\"}}\n"
        "{\"subject\": \"a\", \"headers\": {\"order\": \"A\"}}\n"
        "{\"subject\": \"a\", \"headers\": {\"order\": \"B\"}}\n"
        "{\"subject\": \"a\", \"headers\": {\"order\": \"A\"}, \"stream_seq\": 1, \"deliveries\": 2, "
        "\"postpones\": 1, \"advance_ms\": 5000}\n"
        "{\"event\": \"deliver_held\"}\n"
        "{\"subject\": \"a\", \"headers\": {\"order\": [\"A\", \"C\"]}}\n";
    g_autofree char *out = NULL, *err = NULL;
    int status = jet_test_mock_cli(input, &out, &err, "--plugin", plugin, "--policy", "key=header:order", "--quiet", NULL);
    g_assert_cmpint(status, ==, 0);
    g_auto(GStrv) lines = g_strsplit(g_strchomp(out), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 6);
    assert_contains(lines[0], "\"stream_seq\":1,\"deliveries\":1,\"action\":\"postpone\"");
    assert_contains(lines[1], "{\"line\":2,\"stream_seq\":2,\"deliveries\":1,\"action\":\"held\"");
    assert_contains(lines[1], "\"outcome\":\"held\"");
    assert_contains(lines[1], "\"handled\":false,\"verdict\":-1,\"held_behind\":1}");
    assert_contains(lines[2], "\"stream_seq\":3,\"deliveries\":1,\"action\":\"ack\"");
    g_assert_null(strstr(lines[2], "held_behind"));
    assert_contains(lines[3], "\"stream_seq\":1,\"deliveries\":2,\"action\":\"ack\"");
    assert_contains(lines[4], "{\"line\":5,\"stream_seq\":2,\"deliveries\":1,\"action\":\"ack\"");
    assert_contains(lines[4], "\"handled\":true");
    assert_contains(lines[5], "\"cause\":\"malformed-headers\"");
    assert_contains(lines[5], "the lane key header 'order' has two different values");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    /* Nothing released yet: an input error, naming why. */
    status = jet_test_mock_cli("{\"subject\": \"a\", \"headers\": {\"verdict\": \"retry\"}}\n"
                     "{\"subject\": \"a\"}\n"
                     "{\"event\": \"deliver_held\"}\n",
                     &out, &err, "--plugin", plugin, "--policy", "key=header:order", "--quiet", NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(out, "\"action\":\"held\"");
    assert_contains(err, "stdin:3: jet_mock_deliver_held: no held message is ready (1 held");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    status = jet_test_mock_cli("", &out, &err, "--plugin", plugin, "--policy", "key=header:", NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(err, "--policy ");
    assert_contains(err, "header:NAME needs a header name");
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);

    status = jet_test_mock_cli("{\"event\": \"deliver_held\", \"subject\": \"a\"}\n", &out, &err, "--plugin", plugin,
                     "--policy", "key=header:order", "--quiet", NULL);
    g_assert_cmpint(status, ==, 2);
    assert_contains(err, "stdin:1: an event line is exactly");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/mock/lanes/postpone-holds", test_postpone_holds);
    g_test_add_func("/mock/lanes/stream-order", test_stream_order);
    g_test_add_func("/mock/lanes/release-order", test_release_order);
    g_test_add_func("/mock/lanes/retry-exhausted-releases", test_retry_exhausted_releases);
    g_test_add_func("/mock/lanes/keyless", test_keyless);
    g_test_add_func("/mock/lanes/ambiguous", test_ambiguous);
    g_test_add_func("/mock/lanes/policy", test_policy);
    g_test_add_func("/mock/lanes/cli", test_cli);
    return g_test_run();
}
