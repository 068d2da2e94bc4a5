/* paced.so through the core, without a server: the exact JSON lines, the
 * rate limit, the fsync policy, write errors and option validation. */
#include "plugin_drive.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <sys/stat.h>

static JetPlugin *paced;

static char *out_path(const char *name)
{
    return g_build_filename(jet_test_private_dir(), name, NULL);
}

static char *read_all(const char *path)
{
    g_autoptr(GError) err = NULL;
    char *text = NULL;
    g_file_get_contents(path, &text, NULL, &err);
    g_assert_no_error(err);
    return text;
}

static void test_text_line(void)
{
    g_autofree char *path = out_path("text.jsonl");
    g_autoptr(JetInstance) inst = drive_start(paced, "path", path, NULL);
    /* Quotes, backslash, the short escapes, another control byte, UTF-8
     * (2- and 4-byte) and DEL, which JSON leaves alone. */
    static const char payload[] = "say \"hi\"\\ \n\t\r\b\f \x01\x1f caf\xc3\xa9 \xf0\x9f\x98\x80 \x7f/";
    jet_msg m;
    drive_msg_init(&m, "orders.new", payload, sizeof payload - 1);
    m.stream_seq = 42;
    m.deliveries = 3;
    m.has_enqueued = TRUE;
    m.enqueued_ns = G_GINT64_CONSTANT(1714564800000000007);   /* 2024-05-01T12:00:00 UTC */
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);

    g_autofree char *text = read_all(path);
    g_assert_cmpstr(text, ==,
                    "{\"subject\":\"orders.new\",\"stream\":\"ORDERS\",\"stream_seq\":42,"
                    "\"deliveries\":3,\"enqueued\":\"2024-05-01T12:00:00.000000007Z\","
                    "\"headers\":{},\"payload\":\"say \\\"hi\\\"\\\\ \\n\\t\\r\\b\\f \\u0001\\u001f "
                    "caf\xc3\xa9 \xf0\x9f\x98\x80 \x7f/\"}\n");

    /* And a JSON parser reads the payload back byte for byte. */
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    g_assert_true(json_parser_load_from_data(parser, text, -1, &err));
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    g_assert_cmpstr(json_object_get_string_member(o, "payload"), ==, payload);
}

static void test_binary_and_empty(void)
{
    g_autofree char *path = out_path("binary.jsonl");
    g_autoptr(JetInstance) inst = drive_start(paced, "path", path, NULL);
    static const struct {
        const char *bytes;
        size_t len;
        const char *field;
    } cases[] = {
        { "\x00\xff\x10" "a", 4, "\"payload_b64\":\"AP8QYQ==\"" },     /* NUL and a bad byte */
        { "ok\x00", 3, "\"payload_b64\":\"b2sA\"" },                   /* valid UTF-8, but a NUL */
        { "\xc3\x28", 2, "\"payload_b64\":\"wyg=\"" },                 /* bad continuation */
        { "\xc0\x80", 2, "\"payload_b64\":\"wIA=\"" },                 /* overlong NUL */
        { "\xed\xa0\x80", 3, "\"payload_b64\":\"7aCA\"" },             /* a surrogate */
        { "\xf4\x90\x80\x80", 4, "\"payload_b64\":\"9JCAgA==\"" },     /* past U+10FFFF */
        { "\xe2\x82", 2, "\"payload_b64\":\"4oI=\"" },                 /* truncated */
        { "", 0, "\"payload\":\"\"" },                                 /* empty is text */
    };
    GString *expect = g_string_new(NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        jet_msg m;
        drive_msg_init(&m, "bin", cases[i].bytes, cases[i].len);
        m.stream_seq = i + 1;
        g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
        g_string_append_printf(expect,
                               "{\"subject\":\"bin\",\"stream\":\"ORDERS\",\"stream_seq\":%" G_GSIZE_FORMAT
                               ",\"deliveries\":1,\"enqueued\":null,\"headers\":{},%s}\n",
                               i + 1, cases[i].field);
    }
    g_autofree char *text = read_all(path);
    g_assert_cmpstr(text, ==, expect->str);
    g_string_free(expect, TRUE);
}

static void test_headers_line(void)
{
    g_autofree char *path = out_path("headers.jsonl");
    /* An existing file is appended to, never truncated. */
    g_assert_true(g_file_set_contents(path, "earlier\n", -1, NULL));
    g_autoptr(JetInstance) inst = drive_start(paced, "path", path, NULL);
    jet_msg m;
    drive_msg_init(&m, "orders.\xff", "{}", 2);
    m.stream_seq = 7;
    m.has_enqueued = TRUE;
    m.enqueued_ns = -1;   /* one ns before the epoch */
    drive_msg_header(&m, "Trace", "a");
    drive_msg_header(&m, "X-Quote", "say \"x\"\\");
    drive_msg_header(&m, "Trace", "b");
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
    drive_msg_clear(&m);

    g_autofree char *text = read_all(path);
    /* Repeated names are grouped in order of first appearance; a subject byte
     * that is not UTF-8 becomes U+FFFD. */
    g_assert_cmpstr(text, ==,
                    "earlier\n"
                    "{\"subject\":\"orders.\xef\xbf\xbd\",\"stream\":\"ORDERS\",\"stream_seq\":7,"
                    "\"deliveries\":1,\"enqueued\":\"1969-12-31T23:59:59.999999999Z\","
                    "\"headers\":{\"Trace\":[\"a\",\"b\"],\"X-Quote\":[\"say \\\"x\\\"\\\\\"]},"
                    "\"payload\":\"{}\"}\n");
}

static void test_rate_paces(void)
{
    g_autofree char *path = out_path("rate.jsonl");
    g_autoptr(JetInstance) inst = drive_start(paced, "path", path, "rate", "100", NULL);
    jet_msg m;
    drive_msg_init(&m, "r", "x", 1);
    gint64 t0 = g_get_monotonic_time();
    for (int i = 0; i < 20; i++) {
        m.stream_seq = (uint64_t)i + 1;
        g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
    }
    gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("20 messages at rate 100 took %" G_GINT64_FORMAT " ms", took_ms);
    /* The first goes at once, then one every 10 ms. */
    g_assert_cmpint(took_ms, >=, 190);
    g_assert_cmpint(took_ms, <, 2000);

    /* A fractional rate: 2 messages at 12.5/s are 80 ms apart. */
    g_autoptr(JetInstance) frac = drive_start(paced, "path", path, "rate", "12.5", NULL);
    t0 = g_get_monotonic_time();
    g_assert_cmpint(drive_handle(frac, &m), ==, JET_ACK);
    g_assert_cmpint(drive_handle(frac, &m), ==, JET_ACK);
    g_assert_cmpint((g_get_monotonic_time() - t0) / 1000, >=, 79);

    /* Unlimited: 200 messages take no time to speak of. */
    g_autoptr(JetInstance) fast = drive_start(paced, "path", path, "fsync", "every:50", NULL);
    t0 = g_get_monotonic_time();
    for (int i = 0; i < 200; i++)
        g_assert_cmpint(drive_handle(fast, &m), ==, JET_ACK);
    g_assert_cmpint((g_get_monotonic_time() - t0) / 1000, <, 150);

    g_autofree char *text = read_all(path);
    guint lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    g_assert_cmpuint(lines, ==, 222);
}

static void test_stopping_cuts_the_wait(void)
{
    g_autofree char *path = out_path("stop.jsonl");
    g_autoptr(JetInstance) inst = drive_start(paced, "path", path, "rate", "0.5", NULL);
    jet_msg m;
    drive_msg_init(&m, "s", "x", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
    jet_instance_set_stopping(inst);
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);   /* written, not waited 2 s for */
    g_assert_cmpint((g_get_monotonic_time() - t0) / 1000, <, 1000);
}

static void test_write_error_retries(void)
{
    /* /dev/full opens for appending and fails every write with ENOSPC. */
    g_autoptr(JetInstance) inst = drive_start(paced, "path", "/dev/full", "fsync", "always", NULL);
    jet_msg m;
    drive_msg_init(&m, "w", "x", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_RETRY);
    g_assert_true(m.has_reason);
    g_assert_false(m.reason_too_long);
    g_test_message("reason: %s", m.reason);
    drive_assert_contains(m.reason, "write /dev/full");
    drive_assert_contains(m.reason, "ENOSPC");
}

static void test_fsync_always(void)
{
    g_autofree char *path = out_path("fsync.jsonl");
    g_autoptr(JetInstance) inst = drive_start(paced, "path", path, "fsync", "always", NULL);
    jet_msg m;
    drive_msg_init(&m, "f", "x", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
    g_assert_false(m.has_reason);
    struct stat st;
    g_assert_cmpint(stat(path, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 0777 & ~0640, ==, 0);
}

struct writer {
    JetInstance *inst;
    int id;
};

static gpointer write_many(gpointer data)
{
    struct writer *w = data;
    g_autofree char *payload = g_strnfill(4000, (char)('a' + w->id));
    for (int i = 0; i < 100; i++) {
        jet_msg m;
        drive_msg_init(&m, "t", payload, strlen(payload));
        m.stream_seq = (uint64_t)(w->id * 1000 + i);
        g_assert_cmpint(drive_handle(w->inst, &m), ==, JET_ACK);
    }
    return NULL;
}

static void test_threads_never_interleave(void)
{
    g_autofree char *path = out_path("threads.jsonl");
    g_autoptr(JetInstance) inst = drive_start(paced, "path", path, NULL);
    g_assert_cmpuint(jet_instance_descriptor(inst)->flags & JET_PLUGIN_THREAD_SAFE, !=, 0);
    struct writer w[4];
    GThread *t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct writer){ inst, i };
        t[i] = g_thread_new("w", write_many, &w[i]);
    }
    for (int i = 0; i < 4; i++)
        g_thread_join(t[i]);
    g_autofree char *text = read_all(path);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 401);
    for (int i = 0; i < 400; i++) {
        g_autoptr(JsonParser) parser = json_parser_new();
        g_assert_true(json_parser_load_from_data(parser, lines[i], -1, NULL));
        JsonObject *o = json_node_get_object(json_parser_get_root(parser));
        g_assert_cmpuint(strlen(json_object_get_string_member(o, "payload")), ==, 4000);
    }
}

static void test_bad_options(void)
{
    static const struct {
        const char *key, *value, *needle;
    } bad[] = {
        { "rate", "fast", "option.rate: 'fast' is not a rate" },
        { "rate", "-1", "option.rate: '-1'" },
        { "rate", "1e3", "option.rate: '1e3'" },
        { "rate", "0.0001", "from 0.001" },
        { "fsync", "sometimes", "option.fsync: 'sometimes' is not always, never or every:N" },
        { "fsync", "every:0", "option.fsync: 'every:0'" },
        { "fsync", "every:x", "option.fsync: 'every:x'" },
        { "path", "/nonexistent-dir/x.jsonl", "cannot open /nonexistent-dir/x.jsonl for appending" },
    };
    g_autofree char *path = out_path("bad.jsonl");
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *msg = strcmp(bad[i].key, "path") == 0
            ? drive_start_error(paced, "path", bad[i].value, NULL)
            : drive_start_error(paced, "path", path, bad[i].key, bad[i].value, NULL);
        drive_assert_contains(msg, bad[i].needle);
    }
    /* path is required: the host says so before init() runs. */
    g_autofree char *msg = drive_start_error(paced, NULL);
    drive_assert_contains(msg, "option.path: plugin paced requires it");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    paced = drive_plugin("paced");
    g_test_add_func("/paced/text-line", test_text_line);
    g_test_add_func("/paced/binary-and-empty", test_binary_and_empty);
    g_test_add_func("/paced/headers-line", test_headers_line);
    g_test_add_func("/paced/rate-paces", test_rate_paces);
    g_test_add_func("/paced/stopping-cuts-the-wait", test_stopping_cuts_the_wait);
    g_test_add_func("/paced/write-error-retries", test_write_error_retries);
    g_test_add_func("/paced/fsync-always", test_fsync_always);
    g_test_add_func("/paced/threads-never-interleave", test_threads_never_interleave);
    g_test_add_func("/paced/bad-options", test_bad_options);
    return g_test_run();
}
