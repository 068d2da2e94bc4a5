/* Handler batches on the mock host (docs/batches.md): handle_batch() with
 * one verdict per message, each settled as handle()'s (a rejected one
 * dead-lettered with its record, an ack's publishes with their ids), a
 * redelivery through handle() alone, a batch that fails as a whole, a
 * kept handle refused, the calls the mock refuses, and the shipped paced
 * plugin's batches.  No server. */
#include <jethost/mock.h>

#include "harness.h"

#include <string.h>

static const jet_host_api *bh;

typedef struct {
    unsigned batches, singles;
    size_t last_n;
    int fail_rc;                 /* what handle_batch() returns (0 unless a test sets it) */
    jet_msg *kept;               /* a handle kept past the call */
} Sink;

static Sink sink;

static int b_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    (void)c;
    (void)err;
    (void)err_len;
    *state = &sink;
    return 0;
}

/* The payload says: "ack", "reject", "retry", or "fwd" (ack with a
 * publish to out.<seq>). */
static int verdict_of(jet_msg *m)
{
    size_t len = 0;
    const char *data = bh->msg_data(m, &len);
    if (len == 6 && memcmp(data, "reject", 6) == 0) {
        bh->msg_set_reason(m, "bad row");
        return JET_REJECT;
    }
    if (len == 5 && memcmp(data, "retry", 5) == 0)
        return JET_RETRY;
    if (len == 3 && memcmp(data, "fwd", 3) == 0) {
        char subject[64];
        snprintf(subject, sizeof subject, "out.%llu", (unsigned long long)bh->msg_stream_seq(m));
        bh->msg_publish(m, subject, NULL, data, len);
    }
    return JET_ACK;
}

static int b_handle(void *state, jet_msg *m)
{
    Sink *s = state;
    s->singles++;
    return verdict_of(m);
}

static int b_handle_batch(void *state, jet_msg *const *msgs, size_t n, int *verdicts)
{
    Sink *s = state;
    s->batches++;
    s->last_n = n;
    for (size_t i = 0; i < n; i++)
        g_assert_cmpint(verdicts[i], ==, JET_RETRY);
    s->kept = msgs[0];
    for (size_t i = 0; i < n; i++)
        verdicts[i] = verdict_of(msgs[i]);
    return s->fail_rc;   /* a failure after publishes were queued: none is sent */
}

static const jet_plugin batch_plugin = {
    JET_PLUGIN_HEADER,
    .name = "sink",
    .version = "1",
    .init = b_init,
    .handle = b_handle,
    .handle_batch = b_handle_batch,
};

static const jet_plugin *batch_entry(const jet_host_api *h)
{
    bh = h;
    return &batch_plugin;
}

static const jet_plugin single_plugin = {
    JET_PLUGIN_HEADER,
    .name = "single",
    .version = "1",
    .init = b_init,
    .handle = b_handle,
};

static const jet_plugin *single_entry(const jet_host_api *h)
{
    bh = h;
    return &single_plugin;
}

static jet_mock *started(const char *batch_max)
{
    memset(&sink, 0, sizeof sink);
    char err[256];
    jet_mock *m = jet_mock_new_static(batch_entry, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    g_assert_cmpint(jet_mock_set_policy(m, "batch_max", batch_max), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "1s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    return m;
}

static jet_mock_msg *msg(jet_mock *m, const char *payload)
{
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.new");
    g_assert_nonnull(b);
    jet_mock_msg_set_text(b, payload);
    return b;
}

/* Four first deliveries in one call: one verdict each, each settled as
 * handle()'s would be. */
static void test_verdicts(void)
{
    jet_mock *m = started("4");
    jet_mock_msg *b[4] = { msg(m, "ack"), msg(m, "reject"), msg(m, "fwd"), msg(m, "retry") };
    jet_mock_settlement s[4];
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 4, s), ==, JET_MOCK_OK);
    g_assert_cmpuint(sink.batches, ==, 1);
    g_assert_cmpuint(sink.last_n, ==, 4);
    g_assert_cmpuint(sink.singles, ==, 0);
    g_assert_cmpint(s[0].action, ==, JET_MOCK_ACK);
    g_assert_cmpstr(s[0].outcome, ==, "acked");
    g_assert_cmpint(s[1].action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s[1].cause, ==, "rejected");
    g_assert_cmpstr(jet_mock_settlement_header(&s[1], "Jethost-Reason"), ==, "bad row");
    g_assert_cmpstr(jet_mock_settlement_header(&s[1], "Jethost-Origin-Seq"), ==, "2");
    g_assert_cmpint(s[2].action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s[2].n_publishes, ==, 1);
    g_assert_cmpstr(s[2].publishes[0].subject, ==, "out.3");
    g_assert_cmpstr(s[2].publishes[0].result, ==, "published");
    g_assert_cmpuint(s[0].n_publishes, ==, 0);
    g_assert_cmpint(s[3].action, ==, JET_MOCK_RETRY);
    g_assert_true(s[3].is_failure);
    g_assert_cmpuint(s[3].delay_ms, ==, 1000);

    /* Its redelivery comes alone, through handle(), beside a first
     * delivery that goes to handle_batch() alone. */
    g_assert_cmpint(jet_mock_msg_redeliver(b[3], &s[3]), ==, JET_MOCK_OK);
    jet_mock_msg *fresh = msg(m, "ack");
    const jet_mock_msg *again[2] = { b[3], fresh };
    g_assert_cmpint(jet_mock_deliver_batch(m, again, 2, s), ==, JET_MOCK_OK);
    g_assert_cmpuint(sink.singles, ==, 1);
    g_assert_cmpuint(sink.batches, ==, 2);
    g_assert_cmpuint(sink.last_n, ==, 1);
    g_assert_cmpint(s[0].action, ==, JET_MOCK_RETRY);
    g_assert_cmpuint(s[0].failure_number, ==, 2);
    g_assert_cmpint(s[1].action, ==, JET_MOCK_ACK);
    for (int i = 0; i < 4; i++)
        jet_mock_msg_free(b[i]);
    jet_mock_msg_free(fresh);
    jet_mock_free(m);
}

/* kind = ordered: the batch is settled in stream order up to the first
 * message that waits (here a retry); the ones behind it are set aside,
 * nothing of their verdicts acted on (no publish, no record), and are
 * delivered again as they are once it settled.  A reject before it is a
 * settlement like an ack.  A redelivery has no place in such a batch. */
static void test_ordered(void)
{
    memset(&sink, 0, sizeof sink);
    char err[256];
    jet_mock *m = jet_mock_new_static(batch_entry, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    g_assert_cmpint(jet_mock_set_policy(m, "kind", "ordered"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "batch_max", "5"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "1s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_msg *b[5] = { msg(m, "fwd"), msg(m, "reject"), msg(m, "retry"), msg(m, "fwd"), msg(m, "reject") };
    jet_mock_settlement s[5];
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 5, s), ==, JET_MOCK_OK);
    g_assert_cmpuint(sink.batches, ==, 1);
    g_assert_cmpint(s[0].action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s[0].n_publishes, ==, 1);
    g_assert_cmpint(s[1].action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpint(s[2].action, ==, JET_MOCK_RETRY);
    for (int i = 3; i < 5; i++) {
        g_assert_cmpint(s[i].action, ==, JET_MOCK_SET_ASIDE);
        g_assert_cmpstr(s[i].outcome, ==, "set-aside");
        g_assert_cmpstr(s[i].action_name, ==, "set-aside");
        g_assert_true(s[i].handled);
        g_assert_cmpuint(s[i].n_publishes, ==, 0);
        g_assert_null(s[i].dlq_subject);
        g_assert_cmpuint(s[i].deliveries, ==, 1);
        /* Not a settlement to redeliver from: it comes again as it is. */
        g_assert_cmpint(jet_mock_msg_redeliver(b[i], &s[i]), ==, JET_MOCK_ESTATE);
    }
    g_assert_cmpint(s[3].verdict, ==, JET_ACK);
    g_assert_cmpint(s[4].verdict, ==, JET_REJECT);
    /* A redelivery in a batch is refused; alone it goes through handle(). */
    g_assert_cmpint(jet_mock_msg_redeliver(b[2], &s[2]), ==, JET_MOCK_OK);
    const jet_mock_msg *mixed[2] = { b[2], b[3] };
    g_assert_cmpint(jet_mock_deliver_batch(m, mixed, 2, s), ==, JET_MOCK_EINVAL);
    g_assert_cmpint(jet_mock_deliver(m, b[2], &s[0]), ==, JET_MOCK_OK);
    g_assert_cmpint(s[0].action, ==, JET_MOCK_RETRY);
    g_assert_cmpuint(sink.singles, ==, 1);
    /* Once it settles, what was set aside goes again, as it is. */
    sink.batches = 0;
    const jet_mock_msg *rest[2] = { b[3], b[4] };
    g_assert_cmpint(jet_mock_deliver_batch(m, rest, 2, s), ==, JET_MOCK_OK);
    g_assert_cmpuint(sink.batches, ==, 1);
    g_assert_cmpint(s[0].action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s[0].n_publishes, ==, 1);
    g_assert_cmpint(s[1].action, ==, JET_MOCK_CAPTURE);
    for (int i = 0; i < 5; i++)
        jet_mock_msg_free(b[i]);
    jet_mock_free(m);
}

/* With a `key` policy: the messages whose lane's turn came run in one
 * batch, never two of a key (the second is held behind the first); a head
 * retried keeps its lane held, and once it is redelivered and acked the
 * one behind it is released to jet_mock_deliver_held().  A message whose
 * key cannot be told goes in the batch too, dead-lettered without its
 * handler. */
static jet_mock_msg *keyed(jet_mock *m, const char *subject, const char *payload)
{
    jet_mock_msg *b = jet_mock_msg_new(m, subject);
    g_assert_nonnull(b);
    jet_mock_msg_set_text(b, payload);
    return b;
}

static void test_lanes(void)
{
    memset(&sink, 0, sizeof sink);
    char err[256];
    jet_mock *m = jet_mock_new_static(batch_entry, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    g_assert_cmpint(jet_mock_set_policy(m, "key", "header:K"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "batch_max", "5"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "1s"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_msg *b[5] = { keyed(m, "orders.new", "retry"), keyed(m, "orders.new", "ack"),
                           keyed(m, "orders.new", "fwd"), keyed(m, "orders.new", "ack"),
                           keyed(m, "orders.new", "ack") };
    static const char *const keys[5] = { "a", "b", "a", "c", NULL };
    for (int i = 0; i < 4; i++)
        jet_mock_msg_add_header(b[i], "K", keys[i]);
    /* The fifth names two keys: no lane can be told. */
    jet_mock_msg_add_header(b[4], "K", "x");
    jet_mock_msg_add_header(b[4], "K", "y");
    jet_mock_settlement s[5];
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 5, s), ==, JET_MOCK_OK);
    g_assert_cmpuint(sink.batches, ==, 1);
    g_assert_cmpuint(sink.last_n, ==, 3);   /* a, b, c: the second a held, the fifth never reaches it */
    g_assert_cmpint(s[0].action, ==, JET_MOCK_RETRY);
    g_assert_cmpint(s[1].action, ==, JET_MOCK_ACK);
    g_assert_cmpint(s[2].action, ==, JET_MOCK_HELD);
    g_assert_cmpuint(s[2].held_behind, ==, 1);
    g_assert_cmpint(s[3].action, ==, JET_MOCK_ACK);
    g_assert_cmpint(s[4].action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s[4].cause, ==, "malformed-headers");
    g_assert_cmpint(s[4].handled, ==, 0);
    g_assert_cmpuint(jet_mock_held_count(m), ==, 1);
    /* The head acked at its redelivery: the one behind it is released. */
    jet_mock_settlement one;
    g_assert_cmpint(jet_mock_deliver_held(m, &one), ==, JET_MOCK_ESTATE);
    g_assert_cmpint(jet_mock_msg_redeliver(b[0], &s[0]), ==, JET_MOCK_OK);
    jet_mock_msg_set_text(b[0], "ack");
    g_assert_cmpint(jet_mock_deliver(m, b[0], &one), ==, JET_MOCK_OK);
    g_assert_cmpint(one.action, ==, JET_MOCK_ACK);
    g_assert_cmpint(jet_mock_deliver_held(m, &one), ==, JET_MOCK_OK);
    g_assert_cmpuint(one.stream_seq, ==, 3);
    g_assert_cmpint(one.action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(one.n_publishes, ==, 1);
    g_assert_cmpuint(jet_mock_held_count(m), ==, 0);
    for (int i = 0; i < 5; i++)
        jet_mock_msg_free(b[i]);
    jet_mock_free(m);
}

/* A batch that fails as a whole: each message retried with the return
 * value named, nothing published. */
static void test_batch_fails(void)
{
    jet_mock *m = started("3");
    sink.fail_rc = 9;
    jet_mock_msg *b[3] = { msg(m, "ack"), msg(m, "fwd"), msg(m, "reject") };
    jet_mock_settlement s[3];
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 3, s), ==, JET_MOCK_OK);
    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(s[i].action, ==, JET_MOCK_RETRY);
        g_assert_cmpstr(s[i].reason, ==, "handle_batch() returned 9 for the batch of 3");
        g_assert_cmpuint(s[i].n_publishes, ==, 0);
        jet_mock_msg_free(b[i]);
    }
    jet_mock_free(m);
}

/* A handle kept past handle_batch() is refused as handle()'s is. */
static void test_kept_handle(void)
{
    jet_mock *m = started("2");
    jet_mock_msg *b[2] = { msg(m, "ack"), msg(m, "ack") };
    jet_mock_settlement s[2];
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 2, s), ==, JET_MOCK_OK);
    g_assert_null(bh->msg_subject(sink.kept));
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 1);
    for (int i = 0; i < 2; i++)
        jet_mock_msg_free(b[i]);
    jet_mock_free(m);
}

/* What the mock refuses: more than batch_max, none, a fault armed, a
 * plugin without handle_batch() (at start, as the daemon does). */
static void test_refused(void)
{
    jet_mock *m = started("2");
    jet_mock_msg *b[3] = { msg(m, "ack"), msg(m, "ack"), msg(m, "ack") };
    jet_mock_settlement s[3];
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 3, s), ==, JET_MOCK_EINVAL);
    g_assert_nonnull(strstr(jet_mock_error(m), "batch_max is 2"));
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 0, s), ==, JET_MOCK_EINVAL);
    g_assert_cmpint(jet_mock_inject_fault(m, JET_MOCK_FAULT_ACK_LOST, 0), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 2, s), ==, JET_MOCK_ESTATE);
    g_assert_cmpuint(sink.batches, ==, 0);
    for (int i = 0; i < 3; i++)
        jet_mock_msg_free(b[i]);
    jet_mock_free(m);

    char err[256];
    m = jet_mock_new_static(single_entry, err, sizeof err);
    g_assert_cmpint(jet_mock_set_policy(m, "batch_max", "2"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EINVAL);
    g_assert_nonnull(strstr(jet_mock_error(m), "need a plugin with handle_batch(), and single has none"));
    jet_mock_free(m);
}

/* The shipped paced plugin's handle_batch(): the batch's lines in stream
 * order, one each, acked; on /dev/full every message of the batch retried
 * with the write's error. */
static jet_mock *paced_mock(const char *path, const char *fsync)
{
    g_autofree char *so = jet_test_plugin_copy("paced");
    char err[256];
    jet_mock *m = jet_mock_new_from_path(so, err, sizeof err);
    if (m == NULL)
        g_error("load %s: %s", so, err);
    jet_mock_set_abort_on_violation(m, 0);
    g_assert_cmpint(jet_mock_set_option(m, "path", path), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_option(m, "fsync", fsync), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "batch_max", "3"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    return m;
}

static void test_paced_batch(void)
{
    g_autofree char *path = g_build_filename(jet_test_private_dir(), "paced-batch.jsonl", NULL);
    jet_mock *m = paced_mock(path, "always");
    jet_mock_msg *b[3];
    for (int i = 0; i < 3; i++) {
        b[i] = jet_mock_msg_new(m, "orders.new");
        char text[16];
        snprintf(text, sizeof text, "m%d", i + 1);
        jet_mock_msg_set_text(b[i], text);
    }
    jet_mock_settlement s[3];
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 3, s), ==, JET_MOCK_OK);
    for (int i = 0; i < 3; i++)
        g_assert_cmpint(s[i].action, ==, JET_MOCK_ACK);
    jet_mock_free(m);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 4);   /* three lines and the end */
    for (int i = 0; i < 3; i++) {
        g_autofree char *want = g_strdup_printf("\"stream_seq\":%d,", i + 1);
        g_autofree char *payload = g_strdup_printf("\"payload\":\"m%d\"}", i + 1);
        g_assert_nonnull(strstr(lines[i], want));
        g_assert_true(g_str_has_suffix(lines[i], payload));
        jet_mock_msg_free(b[i]);
    }

    m = paced_mock("/dev/full", "always");
    for (int i = 0; i < 2; i++) {
        b[i] = jet_mock_msg_new(m, "orders.new");
        jet_mock_msg_set_text(b[i], "x");
    }
    g_assert_cmpint(jet_mock_deliver_batch(m, (const jet_mock_msg *const *)b, 2, s), ==, JET_MOCK_OK);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpint(s[i].action, ==, JET_MOCK_RETRY);
        g_assert_cmpstr(s[i].reason, ==, "write /dev/full: No space left on device (ENOSPC)");
        jet_mock_msg_free(b[i]);
    }
    jet_mock_free(m);
}

/* `jethost mock` with a batch line: the shipped paced plugin's batch, one
 * settlement line each; a lone message line still goes through handle();
 * malformed batch lines refused (exit 2). */
static void test_cli_batch(void)
{
    g_autofree char *plugin = jet_test_plugin_copy("paced");
    g_autofree char *path = g_build_filename(jet_test_private_dir(), "cli-batch.jsonl", NULL);
    g_autofree char *opt = g_strdup_printf("path=%s", path);
    const char *input = "{\"batch\": [{\"subject\": \"a\", \"data\": \"1\"}, {\"subject\": \"b\", \"data\": \"2\"}]}\n"
                        "{\"subject\": \"c\", \"data\": \"3\"}\n";
    g_autofree char *out = NULL, *err = NULL;
    int status = jet_test_mock_cli(input, &out, &err, "--plugin", plugin, "--option", opt, "--policy", "batch_max=2",
                                   "--quiet", NULL);
    g_assert_cmpint(status, ==, 0);
    g_auto(GStrv) lines = g_strsplit(g_strchomp(out), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    g_assert_nonnull(strstr(lines[0], "\"line\":1,\"stream_seq\":1,"));
    g_assert_nonnull(strstr(lines[1], "\"line\":1,\"stream_seq\":2,"));
    g_assert_nonnull(strstr(lines[2], "\"line\":2,\"stream_seq\":3,"));
    for (int i = 0; i < 3; i++)
        g_assert_nonnull(strstr(lines[i], "\"outcome\":\"acked\""));
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) written = g_strsplit(g_strchomp(text), "\n", -1);
    g_assert_cmpuint(g_strv_length(written), ==, 3);

    static const struct {
        const char *line, *why;
    } bad[] = {
        { "{\"batch\": []}", "a batch line is exactly" },
        { "{\"batch\": [{\"subject\": \"a\"}], \"x\": 1}", "a batch line is exactly" },
        { "{\"batch\": [1]}", "batch[0]: a message is a JSON object" },
        { "{\"batch\": [{\"subject\": \"a\", \"ack_lost\": true}]}", "batch[0]: ack_lost is for one message" },
        { "{\"batch\": [{\"subject\": \"a\"}, {\"subjekt\": \"b\"}]}", "batch[1]: unknown field 'subjekt'" },
        { "{\"batch\": [{\"subject\": \"a\"}, {\"subject\": \"b\"}, {\"subject\": \"c\"}]}",
          "3 messages, and the binding's batch_max is 2" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_clear_pointer(&out, g_free);
        g_clear_pointer(&err, g_free);
        g_autofree char *in = g_strdup_printf("%s\n", bad[i].line);
        status = jet_test_mock_cli(in, &out, &err, "--plugin", plugin, "--option", opt, "--policy", "batch_max=2",
                                   "--quiet", NULL);
        g_assert_cmpint(status, ==, 2);
        g_assert_nonnull(strstr(err, "stdin:1: "));
        if (strstr(err, bad[i].why) == NULL)
            g_error("%s: wanted '%s' in: %s", bad[i].line, bad[i].why, err);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mock-batch/verdicts", test_verdicts);
    g_test_add_func("/mock-batch/batch-fails", test_batch_fails);
    g_test_add_func("/mock-batch/ordered", test_ordered);
    g_test_add_func("/mock-batch/lanes", test_lanes);
    g_test_add_func("/mock-batch/kept-handle", test_kept_handle);
    g_test_add_func("/mock-batch/refused", test_refused);
    g_test_add_func("/mock-batch/paced", test_paced_batch);
    g_test_add_func("/mock-batch/cli", test_cli_batch);
    return g_test_run();
}
