/* The pull status table, pinned: every status nats-server 2.9.10 sends to a
 * pull, with the exact text it sends (server/consumer.go, jetstream.go at tag
 * v2.9.10, and probed on a live 2.9.10), and those newer servers added
 * (consumer.go of the 2.11/2.12 line). */
#include "pull_status.h"

#include <glib.h>
#include <string.h>

typedef struct {
    int code;
    const char *description;
    JetPullStatusKind if_none;   /* the pull had delivered nothing */
    JetPullStatusKind if_some;   /* it had delivered something */
} Case;

/* What the servers send, word for word; numbers as fmt's %d / %v writes them. */
static const Case server_texts[] = {
    { 100, "Idle Heartbeat", JET_PULL_HEARTBEAT, JET_PULL_HEARTBEAT },
    { 404, "No Messages", JET_PULL_END, JET_PULL_END },
    { 408, "Request Timeout", JET_PULL_END, JET_PULL_END },
    { 408, "Interest Expired", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 408, "Requests Pending", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 409, "Exceeded MaxWaiting", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 409, "Exceeded MaxRequestBatch of 10", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Exceeded MaxRequestBatch of 1", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Exceeded MaxRequestExpires of 5s", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Exceeded MaxRequestExpires of 1m30s", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Exceeded MaxRequestExpires of 500ms", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Exceeded MaxRequestMaxBytes of 1024", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Message Size Exceeds MaxBytes", JET_PULL_END_TOO_LARGE, JET_PULL_END },
    { 409, "Consumer Deleted", JET_PULL_CONSUMER_GONE, JET_PULL_CONSUMER_GONE },
    { 409, "Consumer is push based", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Leadership Change", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 409, "Server Shutdown", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 400, "Bad Request - heartbeat value too large", JET_PULL_INVALID, JET_PULL_INVALID },
    { 400, "Bad Request - invalid character 'x' looking for beginning of value",
      JET_PULL_INVALID, JET_PULL_INVALID },
    /* newer servers (2.10+) */
    { 409, "Batch Completed", JET_PULL_END, JET_PULL_END },
    { 423, "Nats-Pin-Id mismatch", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 423, "Nats-Wrong-Pin-Id", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 400, "Bad Request - Priority Group missing", JET_PULL_INVALID, JET_PULL_INVALID },
    { 400, "Bad Request - Invalid Priority Group", JET_PULL_INVALID, JET_PULL_INVALID },
    { 400, "Bad Request - Not a Overflow Priority consumer", JET_PULL_INVALID, JET_PULL_INVALID },
    { 400, "Bad Request - Not a Pinned Client Priority consumer", JET_PULL_INVALID, JET_PULL_INVALID },
    { 400, "Bad Request - Priority must be between 0 and 9", JET_PULL_INVALID, JET_PULL_INVALID },
    { 412, "Required Api Level", JET_PULL_INVALID, JET_PULL_INVALID },
    /* a queued no_wait pull that reached the end of the stream (2.10+) */
    { 404, "No Messages", JET_PULL_END, JET_PULL_END },
};

/* The same texts as another server or client might case them. */
static const Case case_variants[] = {
    { 100, "idle heartbeat", JET_PULL_HEARTBEAT, JET_PULL_HEARTBEAT },
    { 404, "no messages", JET_PULL_END, JET_PULL_END },
    { 404, "NO MESSAGES", JET_PULL_END, JET_PULL_END },
    { 408, "request timeout", JET_PULL_END, JET_PULL_END },
    { 408, "INTEREST EXPIRED", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 408, "requests pending", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 409, "exceeded maxwaiting", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 409, "EXCEEDED MAXREQUESTBATCH OF 10", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "exceeded maxrequestexpires of 5s", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "Exceeded maxRequestMaxBytes Of 2048", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "message size exceeds maxbytes", JET_PULL_END_TOO_LARGE, JET_PULL_END },
    { 409, "MESSAGE SIZE EXCEEDS MAXBYTES", JET_PULL_END_TOO_LARGE, JET_PULL_END },
    { 409, "consumer deleted", JET_PULL_CONSUMER_GONE, JET_PULL_CONSUMER_GONE },
    { 409, "CONSUMER IS PUSH BASED", JET_PULL_INVALID, JET_PULL_INVALID },
    { 409, "leadership change", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 409, "server SHUTDOWN", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 400, "bad request - heartbeat value too large", JET_PULL_INVALID, JET_PULL_INVALID },
};

/* Rows that ignore the description, or its absence. */
static const Case any_description[] = {
    { 100, NULL, JET_PULL_HEARTBEAT, JET_PULL_HEARTBEAT },
    { 100, "", JET_PULL_HEARTBEAT, JET_PULL_HEARTBEAT },
    { 100, "FlowControl Request", JET_PULL_HEARTBEAT, JET_PULL_HEARTBEAT },
    { 400, NULL, JET_PULL_INVALID, JET_PULL_INVALID },
    { 400, "Bad Request", JET_PULL_INVALID, JET_PULL_INVALID },
    { 400, "something new", JET_PULL_INVALID, JET_PULL_INVALID },
    { 423, NULL, JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 423, "Locked", JET_PULL_END_GUARDED, JET_PULL_END_GUARDED },
    { 412, NULL, JET_PULL_INVALID, JET_PULL_INVALID },
};

/* Everything else is UNKNOWN, including near misses of known texts. */
static const Case unknown[] = {
    /* no Description header at all */
    { 404, NULL, JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 408, NULL, JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, NULL, JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    /* no responders: "NATS/1.0 503", no description */
    { 503, NULL, JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 503, "No Responders", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    /* texts no server sends to a pull */
    { 409, "Batch Completed of 10", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Exceeded MaxAckPending", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Consumer is paused", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    /* the direct-get texts of stream.go, never sent to a pull */
    { 404, "Message Not Found", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 408, "Bad Request", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 408, "Empty Request", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    /* a known text under the wrong code */
    { 409, "No Messages", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 408, "Consumer Deleted", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 404, "Request Timeout", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Idle Heartbeat", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 200, "Idle Heartbeat", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    /* exact rows are exact: no prefix, no extra words */
    { 409, "Consumer Deleted by admin", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Consumer", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 404, "No Messages ", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Exceeded MaxWaiting of 512", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Message Size Exceeds MaxBytes of 250", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    /* prefix rows need the whole prefix, " of " included */
    { 409, "Exceeded MaxRequestBatch", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Exceeded MaxRequest", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 409, "Exceeded Max", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    /* codes that are no status at all */
    { 0, NULL, JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { -1, "Idle Heartbeat", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { 999, "Consumer Deleted", JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { G_MININT, NULL, JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
    { G_MAXINT, NULL, JET_PULL_UNKNOWN, JET_PULL_UNKNOWN },
};

static void check_cases(const Case *cases, gsize n)
{
    static const guint some[] = { 1, 4, 999, G_MAXUINT };
    for (gsize i = 0; i < n; i++) {
        const Case *c = &cases[i];
        g_test_message("%d '%s'", c->code, c->description ? c->description : "(null)");
        g_assert_cmpstr(jet_pull_status_name(jet_pull_status_classify(c->code, c->description, 0)),
                        ==, jet_pull_status_name(c->if_none));
        for (gsize j = 0; j < G_N_ELEMENTS(some); j++)
            g_assert_cmpstr(
                jet_pull_status_name(jet_pull_status_classify(c->code, c->description, some[j])),
                ==, jet_pull_status_name(c->if_some));
    }
}

static void test_server_texts(void)
{
    check_cases(server_texts, G_N_ELEMENTS(server_texts));
}

static void test_case_variants(void)
{
    check_cases(case_variants, G_N_ELEMENTS(case_variants));
}

static void test_any_description(void)
{
    check_cases(any_description, G_N_ELEMENTS(any_description));
}

static void test_unknown(void)
{
    check_cases(unknown, G_N_ELEMENTS(unknown));
}

/* The one row where what the pull delivered matters, spelled out. */
static void test_message_size(void)
{
    const char *text = "Message Size Exceeds MaxBytes";
    g_assert_cmpint(jet_pull_status_classify(409, text, 0), ==, JET_PULL_END_TOO_LARGE);
    g_assert_cmpint(jet_pull_status_classify(409, text, 1), ==, JET_PULL_END);
    /* the probe: batch 10, max_bytes 250 gave 4 messages, then this */
    g_assert_cmpint(jet_pull_status_classify(409, text, 4), ==, JET_PULL_END);
    g_assert_cmpint(jet_pull_status_classify(409, text, G_MAXUINT), ==, JET_PULL_END);
}

static void test_notes(void)
{
    const Case *tables[] = { server_texts, case_variants, any_description, unknown };
    const gsize sizes[] = { G_N_ELEMENTS(server_texts), G_N_ELEMENTS(case_variants),
                            G_N_ELEMENTS(any_description), G_N_ELEMENTS(unknown) };
    for (gsize t = 0; t < G_N_ELEMENTS(tables); t++) {
        for (gsize i = 0; i < sizes[t]; i++) {
            const Case *c = &tables[t][i];
            const char *note = NULL;
            JetPullStatusKind k = jet_pull_status_lookup(c->code, c->description, 0, &note);
            g_assert_cmpint(k, ==, jet_pull_status_classify(c->code, c->description, 0));
            g_assert_nonnull(note);
            g_assert_cmpuint(strlen(note), >, 0);
        }
    }
    /* note may be NULL */
    g_assert_cmpint(jet_pull_status_lookup(409, "Consumer Deleted", 0, NULL), ==,
                    JET_PULL_CONSUMER_GONE);
}

static void test_names(void)
{
    static const struct { JetPullStatusKind kind; const char *name; } names[] = {
        { JET_PULL_HEARTBEAT, "heartbeat" },
        { JET_PULL_END, "end" },
        { JET_PULL_END_GUARDED, "end-guarded" },
        { JET_PULL_END_TOO_LARGE, "end-too-large" },
        { JET_PULL_CONSUMER_GONE, "consumer-gone" },
        { JET_PULL_INVALID, "invalid" },
        { JET_PULL_UNKNOWN, "unknown" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
        g_assert_cmpstr(jet_pull_status_name(names[i].kind), ==, names[i].name);
    g_assert_cmpstr(jet_pull_status_name((JetPullStatusKind)(JET_PULL_UNKNOWN + 1)), ==, "?");
    g_assert_cmpstr(jet_pull_status_name((JetPullStatusKind)-1), ==, "?");
}

static void test_parse_line(void)
{
    static const struct { const char *text; int code; } good[] = {
        { "100", 100 }, { "404", 404 }, { "408", 408 }, { "409", 409 }, { "400", 400 },
        { "503", 503 }, { "000", 0 }, { "999", 999 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
        int code = -7;
        g_assert_true(jet_pull_status_parse_line(good[i].text, &code));
        g_assert_cmpint(code, ==, good[i].code);
    }
    static const char *bad[] = { NULL, "", "4", "40", "4o9", "4090", " 409", "409 ", "-40",
                                 "+40", "409 Consumer Deleted", "NATS/1.0 409", "x09" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        int code = -7;
        g_assert_false(jet_pull_status_parse_line(bad[i], &code));
        g_assert_cmpint(code, ==, -7);
    }
}

/* Each of the three characters must be a digit, the last one too. */
static void test_parse_line_last_digit(void)
{
    static const char *bad[] = { "40x", "10:", "40/", "99 " };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        int code = -7;
        g_assert_false(jet_pull_status_parse_line(bad[i], &code));
        g_assert_cmpint(code, ==, -7);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pull_status/server_texts", test_server_texts);
    g_test_add_func("/pull_status/case_variants", test_case_variants);
    g_test_add_func("/pull_status/any_description", test_any_description);
    g_test_add_func("/pull_status/unknown", test_unknown);
    g_test_add_func("/pull_status/message_size", test_message_size);
    g_test_add_func("/pull_status/notes", test_notes);
    g_test_add_func("/pull_status/names", test_names);
    g_test_add_func("/pull_status/parse_line", test_parse_line);
    g_test_add_func("/pull_status/parse_line_last_digit", test_parse_line_last_digit);
    return g_test_run();
}
