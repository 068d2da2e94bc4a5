/* The capture record without a server: the subject matcher, the rename rule
 * both ways, jet_capture_build (headers, provenance, Msg-Id, sizes) and the
 * replay message. */
#include "capture.h"
#include "settle.h"

#include <stdlib.h>
#include <string.h>

static const char *hget(natsMsg *m, const char *name)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, name, &v) != NATS_OK)
        return NULL;
    return v;
}

static int hcount(natsMsg *m, const char *name)
{
    const char **values = NULL;
    int n = 0;
    if (natsMsgHeader_Values(m, name, &values, &n) != NATS_OK)
        return 0;
    free((void *)values);
    return n;
}

static GPtrArray *hkeys(natsMsg *m)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    const char **keys = NULL;
    int n = 0;
    if (natsMsgHeader_Keys(m, &keys, &n) == NATS_OK) {
        for (int i = 0; i < n; i++)
            g_ptr_array_add(a, g_strdup(keys[i]));
        free((void *)keys);
    }
    return a;
}

static void facts_init(JetCaptureFacts *f)
{
    memset(f, 0, sizeof *f);
    f->stream = "ORDERS";
    f->consumer = "billing";
    f->subject = "orders.new";
    f->stream_seq = 42;
    f->deliveries = 3;
    f->failures = 2;
    f->postpones = 1;
    f->cause = JET_CAUSE_EXHAUSTED;
    f->reason = "db down";
    f->has_first_failure = TRUE;
    f->first_failure_ns = G_GINT64_CONSTANT(1795957242286822598);
    f->has_enqueued = TRUE;
    f->enqueued_ns = G_GINT64_CONSTANT(1795957240000000001);
    f->captured_ns = G_GINT64_CONSTANT(1795957300000000000);
    f->plugin_name = "orders";
    f->plugin_version = "1.2.3";
    f->host = "h1";
    f->binding = "orders";
}

/* The record of an original built with natsMsgHeader_* (its pairs in
 * nats.c's order). */
static natsMsg *build_from(const char *subject, const char *data, int len, natsMsg *o, const JetCaptureFacts *f,
                           gint64 max, JetCaptureBuild *r, GError **err)
{
    g_autoptr(GPtrArray) hs = o != NULL ? jet_capture_msg_headers(o) : NULL;
    return jet_capture_build(subject, data, len, hs, NULL, f, max, r, err);
}

static void test_subject_matches(void)
{
    g_assert_true(jet_subject_matches("jethost.dlq.>", "jethost.dlq.orders"));
    g_assert_true(jet_subject_matches("jethost.dlq.>", "jethost.dlq.a.b"));
    g_assert_false(jet_subject_matches("jethost.dlq.>", "jethost.dlq"));
    g_assert_false(jet_subject_matches("jethost.dlq.>", "jethost.dlqx.a"));
    g_assert_true(jet_subject_matches(">", "a"));
    g_assert_true(jet_subject_matches("a.*.c", "a.b.c"));
    g_assert_false(jet_subject_matches("a.*.c", "a.b.d"));
    g_assert_false(jet_subject_matches("a.*.c", "a.b.c.d"));
    g_assert_false(jet_subject_matches("a.*", "a"));
    g_assert_true(jet_subject_matches("*.*", "a.b"));
    g_assert_true(jet_subject_matches("*.>", "a.b.c"));
    g_assert_true(jet_subject_matches("a.b", "a.b"));
    g_assert_false(jet_subject_matches("a.b", "a.bc"));
    g_assert_false(jet_subject_matches("a.b", "a"));
    g_assert_false(jet_subject_matches("a", "a.b"));
    g_assert_false(jet_subject_matches("a.>.c", "a.b.c"));   /* '>' only last */
    g_assert_false(jet_subject_matches("a..b", "a..b"));     /* empty tokens */
    g_assert_false(jet_subject_matches("", "a"));
    g_assert_false(jet_subject_matches("a", ""));
    g_assert_false(jet_subject_matches(NULL, "a"));
    g_assert_false(jet_subject_matches("a.*", "a."));
}

static void test_rename_rule(void)
{
    static const struct {
        const char *orig, *carried;
    } cases[] = {
        { "Nats-Msg-Id", "Jethost-Orig-Nats_Msg-Id" },
        { "Nats-Rollup", "Jethost-Orig-Nats_Rollup" },
        { "Nats-Expected-Last-Sequence", "Jethost-Orig-Nats_Expected-Last-Sequence" },
        { "nats-lower", "Jethost-Orig-nats_lower" },
        { "NATS-UP", "Jethost-Orig-NATS_UP" },
        { "Jethost-Cause", "Jethost-Orig-Jethost-Cause" },
        { "Jethost-Replayed-From", "Jethost-Orig-Jethost-Replayed-From" },
        { "Jethost-Orig-X", "Jethost-Orig-Jethost-Orig-X" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *c = jet_capture_carried_name(cases[i].orig);
        g_assert_cmpstr(c, ==, cases[i].carried);
        g_autofree char *r = jet_capture_restored_name(c);
        g_assert_cmpstr(r, ==, cases[i].orig);
        /* No server-read name survives, even as a substring. */
        g_assert_null(strstr(c, "Nats-"));
    }
    g_autofree char *plain = jet_capture_carried_name("X-Trace");
    g_assert_cmpstr(plain, ==, "X-Trace");
    g_assert_null(jet_capture_restored_name("X-Trace"));
    g_assert_null(jet_capture_restored_name("Jethost-Cause"));
    g_assert_null(jet_capture_restored_name("Jethost-Orig-"));
}

static void test_time_format(void)
{
    g_autofree char *a = jet_time_format_ns(G_GINT64_CONSTANT(1795957242286822598));
    g_assert_cmpstr(a, ==, "2026-11-29T13:00:42.286822598Z");
    g_autofree char *b = jet_time_format_ns(0);
    g_assert_cmpstr(b, ==, "1970-01-01T00:00:00.000000000Z");
    g_autofree char *c = jet_time_format_ns(5);
    g_assert_cmpstr(c, ==, "1970-01-01T00:00:00.000000005Z");
}

static void test_cause_name(void)
{
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_MALFORMED), ==, "malformed");
    g_assert_cmpint(JET_CAUSE_MALFORMED, ==, JET_CAUSE_EXHAUSTED + 1);   /* enums grow at the end */
    g_assert_cmpstr(jet_cause_name(JET_CAUSE_MALFORMED_HEADERS), ==, "malformed-headers");
    g_assert_cmpint(JET_CAUSE_MALFORMED_HEADERS, ==, JET_CAUSE_MALFORMED + 1);
    g_assert_cmpstr(jet_capture_outcome_name(JET_CAPTURE_TOO_LARGE), ==, "too-large");
}

static natsMsg *original_with_headers(void)
{
    natsMsg *o = NULL;
    g_assert_cmpint(natsMsg_Create(&o, "orders.new", NULL, "payload", 7), ==, NATS_OK);
    natsMsgHeader_Set(o, "Nats-Msg-Id", "pub-1");
    natsMsgHeader_Set(o, "Nats-Rollup", "all");
    natsMsgHeader_Set(o, "Nats-Expected-Last-Sequence", "1");
    natsMsgHeader_Set(o, "X-Trace", "t1");
    natsMsgHeader_Add(o, "X-Multi", "a");
    natsMsgHeader_Add(o, "X-Multi", "b");
    natsMsgHeader_Set(o, "Jethost-Cause", "forged");
    return o;
}

static void test_build_headers(void)
{
    natsMsg *o = original_with_headers();
    JetCaptureFacts f;
    facts_init(&f);
    g_auto(JetCaptureBuild) r = { 0 };
    g_autoptr(GError) err = NULL;
    natsMsg *m = build_from("jethost.dlq.orders", "payload", 7, o, &f, 1048576, &r, &err);
    g_assert_no_error(err);
    g_assert_nonnull(m);
    g_assert_cmpstr(natsMsg_GetSubject(m), ==, "jethost.dlq.orders");
    g_assert_cmpint(natsMsg_GetDataLength(m), ==, 7);
    g_assert_cmpmem(natsMsg_GetData(m), 7, "payload", 7);
    g_assert_false(r.headers_dropped);

    /* Msg-Id from origin stream, consumer and sequence. */
    g_assert_cmpstr(hget(m, "Nats-Msg-Id"), ==, "jethost:ORDERS.billing:42");
    g_assert_cmpstr(r.msg_id, ==, "jethost:ORDERS.billing:42");
    g_assert_cmpint(hcount(m, "Nats-Msg-Id"), ==, 1);
    /* Renamed: no Nats-* but the Msg-Id, and nothing else containing it. */
    g_autoptr(GPtrArray) keys = hkeys(m);
    for (guint i = 0; i < keys->len; i++) {
        const char *k = g_ptr_array_index(keys, i);
        if (strcmp(k, "Nats-Msg-Id") != 0)
            g_assert_null(strstr(k, "Nats-"));
    }
    g_assert_cmpstr(hget(m, "Jethost-Orig-Nats_Msg-Id"), ==, "pub-1");
    g_assert_cmpstr(hget(m, "Jethost-Orig-Nats_Rollup"), ==, "all");
    g_assert_cmpstr(hget(m, "Jethost-Orig-Nats_Expected-Last-Sequence"), ==, "1");
    g_assert_null(hget(m, "Nats-Rollup"));
    g_assert_null(hget(m, "Nats-Expected-Last-Sequence"));
    g_assert_cmpstr(hget(m, "X-Trace"), ==, "t1");
    g_assert_cmpint(hcount(m, "X-Multi"), ==, 2);
    /* An original header cannot pose as provenance. */
    g_assert_cmpstr(hget(m, "Jethost-Orig-Jethost-Cause"), ==, "forged");
    g_assert_cmpint(hcount(m, "Jethost-Cause"), ==, 1);

    /* Provenance. */
    g_assert_cmpstr(hget(m, JET_HDR_ORIGIN_STREAM), ==, "ORDERS");
    g_assert_cmpstr(hget(m, JET_HDR_ORIGIN_SUBJECT), ==, "orders.new");
    g_assert_cmpstr(hget(m, JET_HDR_ORIGIN_SEQ), ==, "42");
    g_assert_cmpstr(hget(m, JET_HDR_ORIGIN_CONSUMER), ==, "billing");
    g_assert_cmpstr(hget(m, JET_HDR_DELIVERIES), ==, "3");
    g_assert_cmpstr(hget(m, JET_HDR_FAILURES), ==, "2");
    g_assert_cmpstr(hget(m, JET_HDR_POSTPONES), ==, "1");
    g_assert_cmpstr(hget(m, JET_HDR_CAUSE), ==, "exhausted");
    g_assert_cmpstr(hget(m, JET_HDR_REASON), ==, "db down");
    g_assert_cmpstr(hget(m, JET_HDR_FIRST_FAILURE), ==, "2026-11-29T13:00:42.286822598Z");
    g_assert_cmpstr(hget(m, JET_HDR_ENQUEUED), ==, "2026-11-29T13:00:40.000000001Z");
    g_assert_cmpstr(hget(m, JET_HDR_CAPTURED), ==, "2026-11-29T13:01:40.000000000Z");
    g_assert_cmpstr(hget(m, JET_HDR_PLUGIN), ==, "orders");
    g_assert_cmpstr(hget(m, JET_HDR_PLUGIN_VERSION), ==, "1.2.3");
    g_assert_cmpstr(hget(m, JET_HDR_HOST), ==, "h1");
    g_assert_cmpstr(hget(m, JET_HDR_BINDING), ==, "orders");
    g_assert_null(hget(m, JET_HDR_DROPPED_HEADERS));
    g_assert_null(hget(m, JET_HDR_ORIGIN_REPLY));
    /* No crash: no strikes header, never a zero. */
    g_assert_null(hget(m, JET_HDR_CRASH_STRIKES));
    natsMsg_Destroy(m);
    natsMsg_Destroy(o);

    f.strikes = 2;
    JetCaptureBuild r2 = { 0 };
    m = build_from("jethost.dlq.orders", "payload", 7, NULL, &f, 1048576, &r2, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(hget(m, JET_HDR_CRASH_STRIKES), ==, "2");
    jet_capture_build_clear(&r2);
    natsMsg_Destroy(m);
}

/* A delivery that knows little (malformed): what is unknown is left out,
 * never written as zero; without stream and seq there is no Msg-Id. */
static void test_build_unknowns(void)
{
    JetCaptureFacts f = { 0 };
    f.subject = "orders.new";
    f.reply = "$JS.ACK.garbage";
    f.cause = JET_CAUSE_MALFORMED;
    f.reason = "line1\r\nNats-Rollup: all\tNats-Msg-Id";
    f.captured_ns = 1;
    g_auto(JetCaptureBuild) r = { 0 };
    g_autoptr(GError) err = NULL;
    natsMsg *m = build_from("jethost.dlq.x", NULL, 0, NULL, &f, 0, &r, &err);
    g_assert_no_error(err);
    g_assert_null(r.msg_id);
    g_assert_null(hget(m, "Nats-Msg-Id"));
    g_assert_null(hget(m, JET_HDR_ORIGIN_SEQ));
    g_assert_null(hget(m, JET_HDR_ORIGIN_STREAM));
    g_assert_null(hget(m, JET_HDR_FIRST_FAILURE));
    g_assert_null(hget(m, JET_HDR_ENQUEUED));
    g_assert_null(hget(m, JET_HDR_PLUGIN));
    g_assert_cmpstr(hget(m, JET_HDR_CAUSE), ==, "malformed");
    g_assert_cmpstr(hget(m, JET_HDR_ORIGIN_REPLY), ==, "$JS.ACK.garbage");
    /* No line break can reach the header block. */
    g_assert_cmpstr(hget(m, JET_HDR_REASON), ==, "line1  Nats-Rollup: all Nats-Msg-Id");
    g_assert_cmpint(natsMsg_GetDataLength(m), ==, 0);
    natsMsg_Destroy(m);
}

/* Sizes: exactly at the limit fits with the headers; one byte over drops
 * them (names listed); the payload alone with provenance over: too-large. */
static void test_build_sizes(void)
{
    natsMsg *o = original_with_headers();
    JetCaptureFacts f;
    facts_init(&f);
    /* The record's size with and without the original headers. */
    g_auto(JetCaptureBuild) full = { 0 };
    natsMsg *m = build_from("jethost.dlq.orders", "", 0, o, &f, 0, &full, NULL);
    natsMsg_Destroy(m);
    natsMsg *bare = NULL;
    natsMsg_Create(&bare, "orders.new", NULL, NULL, 0);
    g_auto(JetCaptureBuild) prov = { 0 };
    m = build_from("jethost.dlq.orders", "", 0, bare, &f, 0, &prov, NULL);
    natsMsg_Destroy(m);
    natsMsg_Destroy(bare);
    g_assert_cmpint(full.header_bytes, >, prov.header_bytes);

    const gint64 max = 4096;
    int len = (int)(max - full.header_bytes);
    g_autofree char *data = g_malloc0((gsize)max + 1);
    memset(data, 'p', (gsize)max);

    g_auto(JetCaptureBuild) r1 = { 0 };
    g_autoptr(GError) e1 = NULL;
    m = build_from("jethost.dlq.orders", data, len, o, &f, max, &r1, &e1);
    g_assert_no_error(e1);
    g_assert_nonnull(m);
    g_assert_false(r1.headers_dropped);
    g_assert_cmpint(r1.total_bytes, ==, max);
    natsMsg_Destroy(m);

    g_auto(JetCaptureBuild) r2 = { 0 };
    m = build_from("jethost.dlq.orders", data, len + 1, o, &f, max, &r2, NULL);
    g_assert_nonnull(m);
    g_assert_true(r2.headers_dropped);
    g_assert_cmpint(r2.total_bytes, <=, max);
    g_assert_cmpint(natsMsg_GetDataLength(m), ==, len + 1);   /* never truncated */
    g_assert_null(hget(m, "X-Trace"));
    g_assert_null(hget(m, "Jethost-Orig-Nats_Rollup"));
    g_assert_cmpstr(hget(m, "Nats-Msg-Id"), ==, "jethost:ORDERS.billing:42");
    const char *list = hget(m, JET_HDR_DROPPED_HEADERS);
    g_assert_nonnull(list);
    g_auto(GStrv) names = g_strsplit(list, ",", -1);
    g_assert_cmpuint(g_strv_length(names), ==, 6);
    g_assert_true(g_strv_contains((const char *const *)names, "X-Trace"));
    g_assert_true(g_strv_contains((const char *const *)names, "X-Multi"));
    g_assert_true(g_strv_contains((const char *const *)names, "Jethost-Orig-Nats_Msg-Id"));
    g_assert_true(g_strv_contains((const char *const *)names, "Jethost-Orig-Jethost-Cause"));
    g_assert_cmpuint(g_strv_length(r2.dropped), ==, 6);
    natsMsg_Destroy(m);

    /* The payload alone with the provenance (and the list) does not fit. */
    int too = (int)(max - prov.header_bytes) + 1;
    g_auto(JetCaptureBuild) r3 = { 0 };
    g_autoptr(GError) err = NULL;
    m = build_from("jethost.dlq.orders", data, too, NULL, &f, max, &r3, &err);
    g_assert_null(m);
    g_assert_error(err, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE);
    g_clear_error(&err);
    m = build_from("jethost.dlq.orders", data, too - 1, NULL, &f, max, NULL, &err);
    g_assert_no_error(err);
    natsMsg_Destroy(m);
    natsMsg_Destroy(o);
}

/* Whatever max_payload says, JetStream refuses a header block over 64 KiB. */
static void test_build_header_cap(void)
{
    natsMsg *o = NULL;
    natsMsg_Create(&o, "orders.new", NULL, "x", 1);
    g_autofree char *big = g_malloc0(1001);
    memset(big, 'v', 1000);
    for (int i = 0; i < 70; i++) {
        g_autofree char *k = g_strdup_printf("X-H%02d", i);
        natsMsgHeader_Set(o, k, big);
    }
    JetCaptureFacts f;
    facts_init(&f);
    g_auto(JetCaptureBuild) r = { 0 };
    natsMsg *m = build_from("jethost.dlq.x", "x", 1, o, &f, 8 * 1024 * 1024, &r, NULL);
    g_assert_nonnull(m);
    g_assert_true(r.headers_dropped);
    g_assert_cmpint(r.header_bytes, <=, JET_CAPTURE_MAX_HEADER_BYTES);
    g_assert_cmpuint(g_strv_length(r.dropped), ==, 70);
    natsMsg_Destroy(m);
    natsMsg_Destroy(o);
}

/* A very long list of dropped names is cut at the cap with "+N more". */
static void test_dropped_list_cap(void)
{
    natsMsg *o = NULL;
    natsMsg_Create(&o, "orders.new", NULL, "x", 1);
    for (int i = 0; i < 2000; i++) {
        g_autofree char *k = g_strdup_printf("X-A-Rather-Long-Header-Name-%04d", i);
        natsMsgHeader_Set(o, k, "v");
    }
    JetCaptureFacts f;
    facts_init(&f);
    g_auto(JetCaptureBuild) r = { 0 };
    natsMsg *m = build_from("jethost.dlq.x", "x", 1, o, &f, 0, &r, NULL);
    g_assert_nonnull(m);
    g_assert_true(r.headers_dropped);
    const char *list = hget(m, JET_HDR_DROPPED_HEADERS);
    g_assert_cmpuint(strlen(list), <=, JET_CAPTURE_MAX_DROPPED_LIST + 16);
    g_assert_true(g_regex_match_simple(",\\+[0-9]+ more$", list, 0, 0));
    natsMsg_Destroy(m);
    natsMsg_Destroy(o);
}

/* The block as the server will store it: the host's Msg-Id first, the
 * original pairs in their order (empty and non-UTF-8 values too), each
 * defect of the original block and each pair the writer refuses listed with
 * why, nothing else starting with "Nats-". */
static void test_build_block(void)
{
    JetCaptureFacts f;
    facts_init(&f);
    f.stream_created_ns = G_GINT64_CONSTANT(1796120053548051334);
    g_autoptr(GPtrArray) orig = g_ptr_array_new_with_free_func(g_free);
    const char *pairs[] = { "Z-First", "1", "X-Empty", "", "nats-rollup", "all", "X-Bin", "\xff\x80",
                            "a b", "bad name", "X-CR", "v\r\nNats-Rollup: all", "A-Last", "2" };
    for (gsize i = 0; i < G_N_ELEMENTS(pairs); i++)
        g_ptr_array_add(orig, g_strdup(pairs[i]));
    g_auto(JetHdrParse) bad = { 0 };
    const char *block = "NATS/1.0\r\np\r\nNats-Msg-Id: forged\r\n\r\n";
    g_assert_false(jet_hdr_parse(block, strlen(block), &bad));
    g_auto(JetCaptureBuild) r = { 0 };
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) hs = jet_capture_headers(3, orig, bad.defects, &f, 0, &r, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(r.msg_id, ==, "jethost:ORDERS.billing:42:1796120053548051334");
    g_assert_cmpuint(r.defects, ==, 3);
    g_assert_cmpstr(g_ptr_array_index(hs, 0), ==, "Nats-Msg-Id");
    g_assert_cmpstr(g_ptr_array_index(hs, 1), ==, r.msg_id);
    const char *want[] = { "Z-First", "1", "X-Empty", "", "Jethost-Orig-nats_rollup", "all", "X-Bin", "\xff\x80",
                           "A-Last", "2" };
    for (gsize i = 0; i < G_N_ELEMENTS(want); i++)
        g_assert_cmpstr(g_ptr_array_index(hs, 2 + i), ==, want[i]);
    g_assert_cmpstr(jet_hdr_get(hs, JET_HDR_ORIGIN_STREAM_CREATED), ==, "2026-12-01T10:14:13.548051334Z");
    const char *list = jet_hdr_get(hs, JET_HDR_DROPPED_HEADERS);
    g_assert_cmpstr(list, ==, "line 2 \"p\" (no colon),"
                              "\"a\\x20b\" (name is not a token),"
                              "X-CR (value holds CR or LF, or spaces at an end)");
    for (guint i = 2; i < hs->len; i += 2)
        g_assert_cmpint(g_ascii_strncasecmp(g_ptr_array_index(hs, i), "nats-", 5), !=, 0);

    /* Written and read back: the same pairs, no defect. */
    gsize len = 0;
    g_autofree char *w = jet_hdr_write(hs, &len, &err);
    g_assert_no_error(err);
    g_assert_true(g_str_has_prefix(w, "NATS/1.0\r\nNats-Msg-Id: jethost:ORDERS.billing:42:"));
    g_auto(JetHdrParse) back = { 0 };
    g_assert_true(jet_hdr_parse(w, len, &back));
    g_assert_cmpuint(back.headers->len, ==, hs->len);
    for (guint i = 0; i < hs->len; i++)
        g_assert_cmpstr(g_ptr_array_index(back.headers, i), ==, g_ptr_array_index(hs, i));
}

/* jethost:<stream>.<consumer>:<seq>[:<created>][:after-N]. */
static void test_msg_id(void)
{
    JetCaptureFacts f;
    facts_init(&f);
    g_autofree char *a = jet_capture_msg_id(&f);
    g_assert_cmpstr(a, ==, "jethost:ORDERS.billing:42");
    f.stream_created_ns = 7;
    g_autofree char *b = jet_capture_msg_id(&f);
    g_assert_cmpstr(b, ==, "jethost:ORDERS.billing:42:7");
    f.msg_id_after = 9;
    g_autofree char *c = jet_capture_msg_id(&f);
    g_assert_cmpstr(c, ==, "jethost:ORDERS.billing:42:7:after-9");
    f.stream_seq = 0;
    g_assert_null(jet_capture_msg_id(&f));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_assert_cmpint(nats_Open(-1), ==, NATS_OK);   /* natsMsg_Destroy needs the library up */
    g_test_add_func("/capture/subject-matches", test_subject_matches);
    g_test_add_func("/capture/rename-rule", test_rename_rule);
    g_test_add_func("/capture/time-format", test_time_format);
    g_test_add_func("/capture/cause-name", test_cause_name);
    g_test_add_func("/capture/build/headers", test_build_headers);
    g_test_add_func("/capture/build/unknowns", test_build_unknowns);
    g_test_add_func("/capture/build/sizes", test_build_sizes);
    g_test_add_func("/capture/build/header-cap", test_build_header_cap);
    g_test_add_func("/capture/build/dropped-list-cap", test_dropped_list_cap);
    g_test_add_func("/capture/build/block", test_build_block);
    g_test_add_func("/capture/msg-id", test_msg_id);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
