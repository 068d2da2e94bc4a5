/* The server-free half of `jethost dlq replay` and of the command line's
 * output: what a replay carries, and JSON and text that stay valid
 * whatever bytes a record holds. */
#include "hdr_block.h"
#include "json_out.h"
#include "replay.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* A record as the host writes one, plus what a forger or an old host could
 * put there: Nats-* in every case variant, old and new replay markers. */
static const char record_block[] =
    "NATS/1.0\r\n"
    "Nats-Msg-Id: jethost:ORDERS.c:7\r\n"
    "X-First: 1\r\n"
    "Jethost-Origin-Stream: ORDERS\r\n"
    "Jethost-Origin-Subject: orders.new\r\n"
    "Jethost-Orig-Nats_Rollup: all\r\n"
    "Jethost-Orig-nats_expected-last-sequence: 1\r\n"
    "Jethost-Orig-NATS_Msg-Id: publisher-id\r\n"
    "Jethost-Orig-Nats_TTL: 5s\r\n"
    "Jethost-Orig-Nats-Expected-Stream: ORDERS\r\n"
    "X-Empty:\r\n"
    "Jethost-Orig-Jethost-Trace: t1\r\n"
    "Jethost-Orig-Jethost-Replay-Of: OLD:1\r\n"
    "Jethost-Orig-Jethost-Replayed-From: OLD:0\r\n"
    "Jethost-Replay-Of: DLQ:3\r\n"
    "Jethost-Cause: rejected\r\n"
    "X-Dup: a\r\n"
    "x-dup: b\r\n"
    "Nats-Expected-Stream: S\r\n"
    "nats-rollup: all\r\n"
    "Jethost-Orig-X-Spaced: v  w\r\n"
    "\r\n";

/* The replay of record JETHOST_DLQ:5 of the DLQ stream's life life_ns. */
static GPtrArray *replay_of(const char *block, gsize len, gint64 life_ns)
{
    g_auto(JetHdrParse) p = { 0 };
    jet_hdr_parse(block, len, &p);
    g_autofree char *id = jet_replay_msg_id("JETHOST_DLQ", 5, life_ns, 0);
    return jet_replay_headers(p.headers, "JETHOST_DLQ", 5, id);
}

static void assert_headers(const GPtrArray *h, const char *const *want)
{
    guint n = 0;
    while (want[n] != NULL)
        n++;
    for (guint i = 0; i < h->len; i++)
        g_test_message("got %s", (const char *)g_ptr_array_index(h, i));
    g_assert_cmpuint(h->len, ==, n);
    for (guint i = 0; i < n; i++)
        g_assert_cmpstr(g_ptr_array_index(h, i), ==, want[i]);
}

static void test_build(void)
{
    g_autoptr(GPtrArray) h = replay_of(record_block, sizeof record_block - 1, 1234);
    const char *const want[] = {
        "Nats-Msg-Id", "jethost-replay:JETHOST_DLQ:5:1234",
        "X-First", "1",
        "X-Empty", "",
        "Jethost-Trace", "t1",
        "X-Dup", "a",
        "x-dup", "b",
        "X-Spaced", "v  w",
        "Jethost-Replay-Of", "JETHOST_DLQ:5",
        NULL,
    };
    assert_headers(h, want);

    /* The block keeps that order and the empty value, byte for byte. */
    g_autoptr(GError) err = NULL;
    gsize len = 0;
    g_autofree char *block = jet_hdr_write(h, &len, &err);
    g_assert_no_error(err);
    static const char expect[] = "NATS/1.0\r\n"
                                 "Nats-Msg-Id: jethost-replay:JETHOST_DLQ:5:1234\r\n"
                                 "X-First: 1\r\n"
                                 "X-Empty: \r\n"
                                 "Jethost-Trace: t1\r\n"
                                 "X-Dup: a\r\n"
                                 "x-dup: b\r\n"
                                 "X-Spaced: v  w\r\n"
                                 "Jethost-Replay-Of: JETHOST_DLQ:5\r\n"
                                 "\r\n";
    g_assert_cmpmem(block, len, expect, sizeof expect - 1);
}

/* No Nats-* header survives, whatever its case or the way it was carried. */
static void test_no_nats(void)
{
    g_autoptr(GPtrArray) h = replay_of(record_block, sizeof record_block - 1, 1);
    guint msg_ids = 0;
    for (guint i = 0; i < h->len; i += 2) {
        const char *name = g_ptr_array_index(h, i);
        if (g_ascii_strncasecmp(name, "Nats", 4) == 0) {
            g_assert_cmpuint(i, ==, 0);
            g_assert_cmpstr(name, ==, "Nats-Msg-Id");
            msg_ids++;
        }
        g_assert_cmpint(g_ascii_strncasecmp(name, "Jethost-Orig", 12), !=, 0);
        g_assert_cmpint(g_ascii_strncasecmp(name, "Jethost-Origin", 14), !=, 0);
        g_assert_cmpint(g_ascii_strcasecmp(name, "Jethost-Cause"), !=, 0);
        g_assert_cmpint(g_ascii_strcasecmp(name, "Jethost-Replayed-From"), !=, 0);
    }
    g_assert_cmpuint(msg_ids, ==, 1);
}

/* The Msg-Id is the first header, the record's own (the same at each
 * replay), distinct for another life of the DLQ stream or with again; one
 * Replay-Of. */
static void test_msg_id_fresh(void)
{
    g_autoptr(GPtrArray) a = replay_of(record_block, sizeof record_block - 1, 1000);
    g_autoptr(GPtrArray) a2 = replay_of(record_block, sizeof record_block - 1, 1000);
    g_autoptr(GPtrArray) b = replay_of(record_block, sizeof record_block - 1, 1001);
    g_assert_cmpstr(g_ptr_array_index(a, 0), ==, "Nats-Msg-Id");
    g_assert_cmpstr(g_ptr_array_index(b, 0), ==, "Nats-Msg-Id");
    g_assert_cmpstr(g_ptr_array_index(a, 1), ==, g_ptr_array_index(a2, 1));
    g_assert_cmpstr(g_ptr_array_index(a, 1), !=, g_ptr_array_index(b, 1));
    g_autofree char *plain = jet_replay_msg_id("JETHOST_DLQ", 5, 0, 0);
    g_autofree char *again1 = jet_replay_msg_id("JETHOST_DLQ", 5, 1000, 77);
    g_autofree char *again2 = jet_replay_msg_id("JETHOST_DLQ", 5, 1000, 78);
    g_assert_cmpstr(plain, ==, "jethost-replay:JETHOST_DLQ:5");
    g_assert_cmpstr(again1, ==, "jethost-replay:JETHOST_DLQ:5:1000:again-77");
    g_assert_cmpstr(again1, !=, again2);
    g_assert_true(g_str_has_prefix(g_ptr_array_index(a, 1), JET_REPLAY_MSG_ID_PREFIX "JETHOST_DLQ:5:"));
    guint of = 0;
    for (guint i = 0; i < a->len; i += 2)
        if (g_ascii_strcasecmp(g_ptr_array_index(a, i), JET_HDR_REPLAY_OF) == 0)
            of++;
    g_assert_cmpuint(of, ==, 1);
    g_assert_cmpstr(jet_hdr_get(a, JET_HDR_REPLAY_OF), ==, "JETHOST_DLQ:5");
}

/* A block with defects: what parsed is replayed, in order. */
static void test_defects(void)
{
    static const char block[] = "NATS/1.0\r\n"
                                "X-A: 1\r\n"
                                "no colon here\r\n"
                                " continued\r\n"
                                "Bad Name: x\r\n"
                                "X-B: 2\r\n"
                                "\r\n";
    g_autoptr(GPtrArray) h = replay_of(block, sizeof block - 1, 7);
    const char *const want[] = {
        "Nats-Msg-Id", "jethost-replay:JETHOST_DLQ:5:7",
        "X-A", "1",
        "X-B", "2",
        "Jethost-Replay-Of", "JETHOST_DLQ:5",
        NULL,
    };
    assert_headers(h, want);
    /* No block at all: the two headers of our own. */
    g_autoptr(GPtrArray) none = replay_of(NULL, 0, 7);
    g_assert_cmpuint(none->len, ==, 4);
}

static void test_captured_by(void)
{
    const char *const subjects[] = { "orders.>", "audit.*.x" };
    g_assert_true(jet_replay_captured_by(subjects, 2, "orders.new"));
    g_assert_true(jet_replay_captured_by(subjects, 2, "audit.a.x"));
    g_assert_false(jet_replay_captured_by(subjects, 2, "orders"));
    g_assert_false(jet_replay_captured_by(subjects, 2, "audit.a.y"));
    g_assert_false(jet_replay_captured_by(subjects, 1, "audit.a.x"));
    g_assert_false(jet_replay_captured_by(NULL, 0, "orders.new"));
}

/* Valid JSON by a strict reading: UTF-8, and no raw control character. */
static void assert_strict_json(const char *line)
{
    g_assert_true(g_utf8_validate(line, -1, NULL));
    for (const char *p = line; *p; p++)
        g_assert_cmpint((guchar)*p, >=, 0x20);
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) err = NULL;
    g_assert_true(json_parser_load_from_data(p, line, -1, &err));
    g_assert_no_error(err);
}

static void test_json_bytes(void)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    jet_json_add_bytes(b, "text", "caf\xc3\xa9 \x01\x1f\x7f end", -1);
    jet_json_add_bytes(b, "bin", "a\xff" "b", -1);
    jet_json_add_bytes(b, "nul", "a\0b", 3);
    jet_json_add_bytes(b, "none", NULL, -1);
    jet_json_add_bytes(b, "empty", "", 0);
    json_builder_end_object(b);
    g_autofree char *line = jet_json_line(b);
    g_test_message("%s", line);
    assert_strict_json(line);
    g_assert_null(strchr(line, '\n'));

    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_data(p, line, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    g_assert_cmpstr(json_object_get_string_member(o, "text"), ==, "caf\xc3\xa9 \x01\x1f\x7f end");
    g_assert_false(json_object_has_member(o, "bin"));
    gsize n = 0;
    g_autofree guchar *bin = g_base64_decode(json_object_get_string_member(o, "bin_base64"), &n);
    g_assert_cmpmem(bin, n, "a\xff" "b", 3);
    g_assert_false(json_object_has_member(o, "nul"));
    g_autofree guchar *nul = g_base64_decode(json_object_get_string_member(o, "nul_base64"), &n);
    g_assert_cmpmem(nul, n, "a\0b", 3);
    g_assert_true(json_object_has_member(o, "none"));
    g_assert_true(json_object_get_null_member(o, "none"));
    g_assert_cmpstr(json_object_get_string_member(o, "empty"), ==, "");

    g_assert_true(jet_json_text_ok("caf\xc3\xa9", 5));
    g_assert_false(jet_json_text_ok("a\0b", 3));
    g_assert_false(jet_json_text_ok("\xc3\x28", 2));
    g_assert_false(jet_json_text_ok(NULL, 0));
}

static void test_text_escape(void)
{
    static const char in[] = "a\tb\nc\\d\x1b[31m\xff caf\xc3\xa9 \xe2\x80\xae" "x\xc2\x85" "y\r";
    g_autofree char *field = jet_text_escape(in, sizeof in - 1, FALSE);
    g_assert_cmpstr(field, ==,
                    "a\\x09b\\x0ac\\\\d\\x1b[31m\\xff caf\xc3\xa9 \\xe2\\x80\\xaex\\xc2\\x85y\\x0d");
    g_autofree char *payload = jet_text_escape(in, sizeof in - 1, TRUE);
    g_assert_cmpstr(payload, ==,
                    "a\tb\nc\\\\d\\x1b[31m\\xff caf\xc3\xa9 \\xe2\\x80\\xaex\\xc2\\x85y\\x0d");
    g_autofree char *nul = jet_text_escape("a\0b", 3, FALSE);
    g_assert_cmpstr(nul, ==, "a\\x00b");
    /* A sequence cut short at the end is bytes, not a character. */
    g_autofree char *cut = jet_text_escape("x\xe2\x80", 3, FALSE);
    g_assert_cmpstr(cut, ==, "x\\xe2\\x80");
    g_assert_true(g_utf8_validate(field, -1, NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/replay/build", test_build);
    g_test_add_func("/replay/no-nats", test_no_nats);
    g_test_add_func("/replay/msg-id-fresh", test_msg_id_fresh);
    g_test_add_func("/replay/defects", test_defects);
    g_test_add_func("/replay/captured-by", test_captured_by);
    g_test_add_func("/output/json-bytes", test_json_bytes);
    g_test_add_func("/output/text-escape", test_text_escape);
    return g_test_run();
}
