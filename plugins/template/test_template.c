/*
 * test_template: the template plugin's own tests, on the jethost mock host.
 *
 * Uses only <jethost/mock.h>: no NATS server, no GLib.  The plugin is linked
 * into this program (jet_mock_new_static), so the test runs in milliseconds;
 * jet_mock_new_from_path("./template.so", ...) tests the built .so instead.
 * Prints TAP on stdout; exits non-zero when a test fails.  The mock aborts
 * with a message naming the rule if the plugin breaks one (its default).
 *
 * Build and run (see Makefile.example):
 *     cc -o test_template test_template.c template.c \
 *        $(pkg-config --cflags --libs jethost-mock) && ./test_template
 */
#include <stdio.h>
#include <string.h>

#include <jethost/mock.h>

static int failed, n;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            printf("# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
            ok = 0;                                                               \
        }                                                                         \
    } while (0)

static void report(int ok, const char *name)
{
    n++;
    if (!ok)
        failed++;
    printf("%s %d - %s\n", ok ? "ok" : "not ok", n, name);
}

/* A started mock of the template with one option set (name may be NULL). */
static jet_mock *started(const char *name, const char *value)
{
    char err[256];
    jet_mock *m = jet_mock_new_static(jet_plugin_entry, err, sizeof err);
    if (m == NULL) {
        printf("# %s\n", err);
        return NULL;
    }
    if (name != NULL)
        jet_mock_set_option(m, name, value);
    if (jet_mock_start(m) != JET_MOCK_OK) {
        printf("# start: %s\n", jet_mock_error(m));
        jet_mock_free(m);
        return NULL;
    }
    return m;
}

static void test_acks(void)
{
    int ok = 1;
    jet_mock *m = started(NULL, NULL);
    CHECK(m != NULL);
    if (m != NULL) {
        jet_mock_msg *msg = jet_mock_msg_new(m, "orders.new");
        jet_mock_msg_set_text(msg, "{\"id\": 1}");
        jet_mock_settlement s;
        CHECK(jet_mock_deliver(m, msg, &s) == JET_MOCK_OK);
        CHECK(s.action == JET_MOCK_ACK);
        CHECK(strcmp(s.outcome, "acked") == 0);
        CHECK(s.is_failure == 0);
        CHECK(jet_mock_log_count(m) == 0);   /* log_every defaults to 0: silent */
        jet_mock_msg_free(msg);
        CHECK(jet_mock_violation_count(m) == 0);
        jet_mock_free(m);
    }
    report(ok, "acks every message");
}

static void test_rejects_configured_subject(void)
{
    int ok = 1;
    jet_mock *m = started("reject_subject", "orders.bad");
    CHECK(m != NULL);
    if (m != NULL) {
        jet_mock_msg *good = jet_mock_msg_new(m, "orders.good");
        jet_mock_msg *bad = jet_mock_msg_new(m, "orders.bad");
        jet_mock_msg_add_header(bad, "Nats-Expected-Stream", "ORDERS");
        jet_mock_settlement s;
        CHECK(jet_mock_deliver(m, good, &s) == JET_MOCK_OK);
        CHECK(s.action == JET_MOCK_ACK);
        CHECK(jet_mock_deliver(m, bad, &s) == JET_MOCK_OK);
        CHECK(s.action == JET_MOCK_CAPTURE);
        CHECK(strcmp(s.cause, "rejected") == 0);
        CHECK(strcmp(s.reason, "subject is configured as rejected") == 0);
        CHECK(s.is_failure == 0);
        /* The dead-letter record that would be written. */
        const char *v = jet_mock_settlement_header(&s, "Jethost-Cause");
        CHECK(v != NULL && strcmp(v, "rejected") == 0);
        v = jet_mock_settlement_header(&s, "Jethost-Plugin");
        CHECK(v != NULL && strcmp(v, "template") == 0);
        v = jet_mock_settlement_header(&s, "Jethost-Origin-Subject");
        CHECK(v != NULL && strcmp(v, "orders.bad") == 0);
        /* The original Nats-* header travels renamed, never as itself. */
        CHECK(jet_mock_settlement_header(&s, "Nats-Expected-Stream") == NULL);
        v = jet_mock_settlement_header(&s, "Jethost-Orig-Nats_Expected-Stream");
        CHECK(v != NULL && strcmp(v, "ORDERS") == 0);
        jet_mock_msg_free(good);
        jet_mock_msg_free(bad);
        jet_mock_free(m);
    }
    report(ok, "rejects the configured subject: dead-lettered with provenance");
}

static void test_logs_every_n(void)
{
    int ok = 1;
    jet_mock *m = started("log_every", "2");
    CHECK(m != NULL);
    if (m != NULL) {
        for (int i = 0; i < 4; i++) {
            jet_mock_msg *msg = jet_mock_msg_new(m, "orders.new");
            jet_mock_settlement s;
            CHECK(jet_mock_deliver(m, msg, &s) == JET_MOCK_OK);
            jet_mock_msg_free(msg);
        }
        CHECK(jet_mock_log_count(m) == 2);
        CHECK(jet_mock_log_contains(m, "message 2: orders.new seq 2") == 1);
        CHECK(jet_mock_log_contains(m, "message 4: orders.new seq 4") == 1);
        jet_mock_free(m);
    }
    report(ok, "logs one line per log_every messages");
}

static void test_option_validation(void)
{
    int ok = 1;
    char err[256];
    /* A typo in an option name fails like a typo in the config. */
    jet_mock *m = jet_mock_new_static(jet_plugin_entry, err, sizeof err);
    CHECK(m != NULL);
    if (m != NULL) {
        jet_mock_set_abort_on_violation(m, 0);   /* we expect a violation here */
        jet_mock_set_option(m, "log_evry", "2");
        CHECK(jet_mock_start(m) == JET_MOCK_EOPTION);
        CHECK(strstr(jet_mock_error(m), "log_evry") != NULL);
        CHECK(jet_mock_violation_count(m) == 1);
        CHECK(strcmp(jet_mock_violation_rule(m, 0), "option-undeclared") == 0);
        jet_mock_free(m);
    }
    /* A negative log_every is refused by the template's own init(). */
    m = jet_mock_new_static(jet_plugin_entry, err, sizeof err);
    CHECK(m != NULL);
    if (m != NULL) {
        jet_mock_set_option(m, "log_every", "-1");
        CHECK(jet_mock_start(m) == JET_MOCK_EINIT);
        CHECK(strstr(jet_mock_error(m), "non-negative") != NULL);
        jet_mock_free(m);
    }
    report(ok, "options are validated, and init() refuses a negative log_every");
}

int main(void)
{
    printf("1..4\n");
    test_acks();
    test_rejects_configured_subject();
    test_logs_every_n();
    test_option_validation();
    return failed == 0 ? 0 : 1;
}
