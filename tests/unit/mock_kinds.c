/* The mock host on ordered and KV bindings (ABI 1.1): what a plugin is told
 * of the binding's kind and of each KV entry, the initial-done signal, the
 * dead-letter record of a KV entry, entries no KV client would write, and
 * a plugin built against 1.0 on every kind.  No server. */
#include <jethost/mock.h>

#include "harness.h"

#include <string.h>

/* --- a plugin that writes down what the 1.1 members say --------------------- */

static const jet_host_api *kh;

typedef struct {
    int init_kind;
    int kind;
    char key[128];
    int op;
    uint64_t revision;
    unsigned handled;
    unsigned initial_done;      /* calls */
    unsigned handled_at_done;   /* handled when it came */
} Seen;

static Seen seen;

static int k_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    seen.init_kind = kh->ctx_kind(c);
    *state = c;
    return 0;
}

/* Rejects key (or subject) "bad", retries key "flaky", acks the rest. */
static int k_handle(void *state, jet_msg *m)
{
    (void)state;
    seen.kind = kh->msg_kind(m);
    const char *key = kh->msg_kv_key(m);
    g_strlcpy(seen.key, key != NULL ? key : "(null)", sizeof seen.key);
    seen.op = kh->msg_kv_op(m);
    seen.revision = kh->msg_kv_revision(m);
    seen.handled++;
    if ((key != NULL && strcmp(key, "bad") == 0) || strcmp(kh->msg_subject(m), "bad") == 0) {
        kh->msg_set_reason(m, "bad key");
        return JET_REJECT;
    }
    if (key != NULL && strcmp(key, "flaky") == 0)
        return JET_RETRY;
    return JET_ACK;
}

static void k_initial_done(void *state)
{
    (void)state;
    seen.initial_done++;
    seen.handled_at_done = seen.handled;
}

static const jet_plugin k_plugin = {
    JET_PLUGIN_HEADER,
    .name = "kinds",
    .version = "1.1.0",
    .init = k_init,
    .handle = k_handle,
    .kv_initial_done = k_initial_done,
};

static const jet_plugin *k_entry(const jet_host_api *h)
{
    kh = h;
    return &k_plugin;
}

static jet_mock *kinds_mock(const char *kind, const char *bucket)
{
    memset(&seen, 0, sizeof seen);
    char err[256];
    jet_mock *m = jet_mock_new_static(k_entry, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    if (kind != NULL)
        g_assert_cmpint(jet_mock_set_policy(m, "kind", kind), ==, JET_MOCK_OK);
    if (bucket != NULL)
        g_assert_cmpint(jet_mock_set_policy(m, "bucket", bucket), ==, JET_MOCK_OK);
    return m;
}

static void deliver(jet_mock *m, jet_mock_msg *b, jet_mock_settlement *s)
{
    g_assert_cmpint(jet_mock_deliver(m, b, s), ==, JET_MOCK_OK);
    jet_mock_msg_free(b);
}

/* --- tests ------------------------------------------------------------------ */

/* Each entry's key, operation and revision; the kind at init and per message. */
static void test_kv_entries(void)
{
    jet_mock *m = kinds_mock("kv", "CFG");
    jet_mock_set_binding(m, "cache", NULL, "ignored");
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    g_assert_cmpint(seen.init_kind, ==, JET_BINDING_KV);
    static const struct {
        const char *key;
        jet_kv_op op;
    } cases[] = {
        { "app.a", JET_KV_PUT },
        { "app.b", JET_KV_DELETE },
        { "c", JET_KV_PURGE },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        jet_mock_msg *b = jet_mock_msg_new_kv(m, cases[i].key, cases[i].op);
        jet_mock_settlement s;
        deliver(m, b, &s);
        g_assert_cmpstr(s.action_name, ==, "ack");
        g_assert_cmpint(seen.kind, ==, JET_BINDING_KV);
        g_assert_cmpstr(seen.key, ==, cases[i].key);
        g_assert_cmpint(seen.op, ==, cases[i].op);
        g_assert_cmpuint(seen.revision, ==, i + 1);
        g_assert_cmpuint(s.stream_seq, ==, i + 1);
    }
    g_assert_cmpuint(jet_mock_call_count(m, "msg_kv_key"), ==, 3);
    g_assert_cmpuint(jet_mock_call_count(m, "ctx_kind"), ==, 1);
    g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
    jet_mock_free(m);
}

/* The signal reaches the plugin once per call, on KV bindings only. */
static void test_initial_done(void)
{
    jet_mock *m = kinds_mock("kv", "CFG");
    g_assert_cmpint(jet_mock_kv_initial_done(m), ==, JET_MOCK_ESTATE);   /* not started */
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;
    deliver(m, jet_mock_msg_new_kv(m, "a", JET_KV_PUT), &s);
    deliver(m, jet_mock_msg_new_kv(m, "b", JET_KV_PUT), &s);
    g_assert_cmpint(jet_mock_kv_initial_done(m), ==, JET_MOCK_OK);
    g_assert_cmpuint(seen.initial_done, ==, 1);
    g_assert_cmpuint(seen.handled_at_done, ==, 2);
    jet_mock_free(m);

    m = kinds_mock("ordered", NULL);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_kv_initial_done(m), ==, JET_MOCK_ESTATE);
    g_assert_nonnull(strstr(jet_mock_error(m), "not kind = kv"));
    g_assert_cmpuint(seen.initial_done, ==, 0);
    /* A KV entry builder on another kind is refused, saying why. */
    g_assert_null(jet_mock_msg_new_kv(m, "a", JET_KV_PUT));
    g_assert_nonnull(strstr(jet_mock_error(m), "kind = kv"));
    jet_mock_free(m);
}

/* A dead-lettered entry's record says which entry: key, operation and
 * revision, the binding standing for the consumer, the bucket's stream. */
static void test_kv_record(void)
{
    jet_mock *m = kinds_mock("kv", "CFG");
    jet_mock_set_binding(m, "cache", "IGNORED", NULL);
    jet_mock_set_policy(m, "max_attempts", "2");
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    jet_mock_settlement s;
    deliver(m, jet_mock_msg_new_kv(m, "ok", JET_KV_PUT), &s);
    deliver(m, jet_mock_msg_new_kv(m, "bad", JET_KV_PUT), &s);
    g_assert_cmpstr(s.action_name, ==, "capture");
    g_assert_cmpstr(s.cause, ==, "rejected");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-KV-Key"), ==, "bad");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-KV-Operation"), ==, "put");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-KV-Revision"), ==, "2");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Origin-Stream"), ==, "KV_CFG");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Origin-Consumer"), ==, "cache");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Origin-Subject"), ==, "$KV.CFG.bad");
    g_assert_true(g_str_has_prefix(jet_mock_settlement_header(&s, "Nats-Msg-Id"), "jethost:KV_CFG.cache:2"));

    /* A retried entry on its ladder, then spent: waits in place. */
    jet_mock_msg *b = jet_mock_msg_new_kv(m, "flaky", JET_KV_DELETE);
    g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
    g_assert_cmpstr(s.action_name, ==, "retry");
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    jet_mock_clock_advance_ms(m, s.delay_ms);
    deliver(m, b, &s);
    g_assert_cmpstr(s.cause, ==, "exhausted");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-KV-Operation"), ==, "delete");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "KV-Operation"), ==, "DEL");
    jet_mock_free(m);
}

/* What no KV client would write never reaches the plugin: dead-lettered
 * with cause malformed and the reason; the record has no KV headers. */
static void test_kv_hostile(void)
{
    jet_mock *m = kinds_mock("kv", "CFG");
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
    static const struct {
        const char *subject, *op, *reason;
    } cases[] = {
        { "$KV.CFG.a b", NULL, "is not a valid KV key" },
        { "$KV.CFG..", NULL, "is not a valid KV key" },
        { "orders.x", NULL, "is not a key of bucket CFG" },
        { "$KV.CFGX.a", NULL, "is not a key of bucket CFG" },
        { "$KV.CFG.a", "ERASE", "'ERASE' is neither DEL nor PURGE" },
        { "$KV.CFG.a", "del", "'del' is neither" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        jet_mock_msg *b = jet_mock_msg_new(m, cases[i].subject);
        if (cases[i].op != NULL)
            jet_mock_msg_add_header(b, "KV-Operation", cases[i].op);
        jet_mock_settlement s;
        deliver(m, b, &s);
        g_assert_false(s.handled);
        g_assert_cmpstr(s.cause, ==, "malformed");
        g_assert_nonnull(strstr(s.reason, cases[i].reason));
        g_assert_null(jet_mock_settlement_header(&s, "Jethost-KV-Key"));
        g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Origin-Subject"), ==, cases[i].subject);
    }
    /* A repeated operation header. */
    jet_mock_msg *b = jet_mock_msg_new_kv(m, "a", JET_KV_DELETE);
    jet_mock_msg_add_header(b, "KV-Operation", "DEL");
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpstr(s.cause, ==, "malformed");
    g_assert_cmpuint(seen.handled, ==, 0);
    jet_mock_free(m);
}

/* Ordered and durable bindings: the kind, and no KV entry. */
static void test_other_kinds(void)
{
    static const struct {
        const char *kind;
        int want;
        const char *consumer;
    } cases[] = {
        { NULL, JET_BINDING_DURABLE, "c" },
        { "durable", JET_BINDING_DURABLE, "c" },
        { "ordered", JET_BINDING_ORDERED, "replay" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        jet_mock *m = kinds_mock(cases[i].kind, NULL);
        jet_mock_set_binding(m, "replay", NULL, "c");
        g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
        g_assert_cmpint(seen.init_kind, ==, cases[i].want);
        jet_mock_msg *b = jet_mock_msg_new(m, "$KV.CFG.looks-like-one");
        jet_mock_msg_add_header(b, "KV-Operation", "DEL");
        jet_mock_settlement s;
        deliver(m, b, &s);
        g_assert_cmpstr(s.action_name, ==, "ack");
        g_assert_cmpint(seen.kind, ==, cases[i].want);
        g_assert_cmpstr(seen.key, ==, "(null)");
        g_assert_cmpint(seen.op, ==, JET_KV_NONE);
        g_assert_cmpuint(seen.revision, ==, 0);
        /* What a record names as the consumer: the binding on an ordered
         * binding, whose consumers change names. */
        g_assert_null(jet_mock_msg_new_kv(m, "k", JET_KV_PUT));
        deliver(m, jet_mock_msg_new(m, "bad"), &s);
        g_assert_cmpstr(s.cause, ==, "rejected");
        g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Origin-Consumer"), ==, cases[i].consumer);
        jet_mock_free(m);
    }
    /* An unknown kind, and a KV binding without its bucket, are the
     * config's errors. */
    jet_mock *m = kinds_mock(NULL, NULL);
    g_assert_cmpint(jet_mock_set_policy(m, "kind", "stream"), ==, JET_MOCK_EINVAL);
    g_assert_nonnull(strstr(jet_mock_error(m), "'stream' is not durable, ordered or kv"));
    g_assert_cmpint(jet_mock_set_policy(m, "kind", "kv"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_EINVAL);
    g_assert_nonnull(strstr(jet_mock_error(m), "bucket"));
    jet_mock_free(m);
}

/* A plugin built against the frozen 1.0 header runs on every kind: it has
 * no kv_initial_done, so the signal is a no-op for it. */
static void test_abi10_every_kind(void)
{
    static const char *const kinds[] = { "durable", "ordered", "kv" };
    for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++) {
        g_autofree char *path = jet_test_plugin_copy("fx_abi10");
        char err[512];
        jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
        g_assert_nonnull(m);
        jet_mock_set_abort_on_violation(m, 0);
        jet_mock_set_option(m, "label", "old");
        jet_mock_set_policy(m, "kind", kinds[i]);
        if (strcmp(kinds[i], "kv") == 0)
            jet_mock_set_policy(m, "bucket", "B");
        g_assert_cmpint(jet_mock_start(m), ==, JET_MOCK_OK);
        jet_mock_msg *b = strcmp(kinds[i], "kv") == 0 ? jet_mock_msg_new_kv(m, "k", JET_KV_PUT)
                                                       : jet_mock_msg_new(m, "old.x");
        jet_mock_msg_add_header(b, "Fx-Verdict", "reject");
        jet_mock_settlement s;
        deliver(m, b, &s);
        g_assert_cmpstr(s.cause, ==, "rejected");
        if (strcmp(kinds[i], "kv") == 0)
            g_assert_cmpint(jet_mock_kv_initial_done(m), ==, JET_MOCK_OK);
        g_assert_cmpuint(jet_mock_violation_count(m), ==, 0);
        jet_mock_free(m);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/mock-kinds/kv-entries", test_kv_entries);
    g_test_add_func("/mock-kinds/initial-done", test_initial_done);
    g_test_add_func("/mock-kinds/kv-record", test_kv_record);
    g_test_add_func("/mock-kinds/kv-hostile", test_kv_hostile);
    g_test_add_func("/mock-kinds/other-kinds", test_other_kinds);
    g_test_add_func("/mock-kinds/abi-1.0-every-kind", test_abi10_every_kind);
    return g_test_run();
}
