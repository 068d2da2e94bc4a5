/* The host's log (host/core/log.c, docs/logging.md): logfmt and JSON lines,
 * their fields, hostile bytes, levels, JETHOST_LOG_LEVEL, and the journald
 * choice and entry. */
#include "log.h"
#include "errors.h"

#include <fcntl.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1970-01-01T00:00:01.234Z */
#define TS_US G_GINT64_CONSTANT(1234567)

static const JetLogField settle[] = {
    JET_LOG_NUMBER(JET_LOG_KEY_SEQ, 42),
    JET_LOG_NUMBER(JET_LOG_KEY_DELIVERY, 5),
    JET_LOG_TEXT(JET_LOG_KEY_CAUSE, "exhausted"),
};

static void test_logfmt_plain(void)
{
    g_autofree char *line = jet_log_format_line(JET_LOG_FORMAT_LOGFMT, TS_US, JET_LOG_INFO, "orders", "retry", NULL,
                                                0, "say \"hi\" \\ and\nbye");
    g_assert_cmpstr(line, ==, "ts=1970-01-01T00:00:01.234Z level=info binding=orders event=retry "
                              "msg=\"say \\\"hi\\\" \\\\ and\\nbye\"\n");
    g_autofree char *bare = jet_log_format_line(JET_LOG_FORMAT_LOGFMT, TS_US, JET_LOG_ERROR, NULL, NULL, NULL, 0,
                                                "x");
    g_assert_cmpstr(bare, ==, "ts=1970-01-01T00:00:01.234Z level=error msg=\"x\"\n");
}

/* Fields after event, before msg, in their order; the ones that cannot be
 * written are left out. */
static void test_logfmt_fields(void)
{
    g_autofree char *line = jet_log_format_line(JET_LOG_FORMAT_LOGFMT, TS_US, JET_LOG_WARNING, "orders",
                                                "dead-lettered", settle, G_N_ELEMENTS(settle), "captured");
    g_assert_cmpstr(line, ==, "ts=1970-01-01T00:00:01.234Z level=warning binding=orders event=dead-lettered "
                              "seq=42 delivery=5 cause=exhausted msg=\"captured\"\n");
    const JetLogField odd[] = {
        JET_LOG_TEXT("why", "two words"),
        JET_LOG_TEXT("eq", "a=b"),
        JET_LOG_TEXT("empty", ""),
        JET_LOG_TEXT("quote", "say \"x\"\n"),
        JET_LOG_TEXT("unset", NULL),
        JET_LOG_TEXT("msg", "reserved"),
        JET_LOG_TEXT("event", "reserved"),
        JET_LOG_TEXT("Bad-Key", "left out"),
        JET_LOG_TEXT(NULL, "left out"),
        JET_LOG_NUMBER("max", G_MAXUINT64),
    };
    g_autofree char *more = jet_log_format_line(JET_LOG_FORMAT_LOGFMT, TS_US, JET_LOG_DEBUG, "b", "e", odd,
                                                G_N_ELEMENTS(odd), "m");
    g_assert_cmpstr(more, ==, "ts=1970-01-01T00:00:01.234Z level=debug binding=b event=e why=\"two words\" "
                              "eq=\"a=b\" empty=\"\" quote=\"say \\\"x\\\"\\n\" max=18446744073709551615 "
                              "msg=\"m\"\n");
}

static JsonObject *parse_object(const char *line, JsonParser *parser)
{
    g_assert_true(g_str_has_suffix(line, "}\n"));
    g_assert_true(strchr(line, '\n') == line + strlen(line) - 1);   /* one line */
    g_assert_true(g_utf8_validate(line, -1, NULL));
    for (const char *p = line; *p; p++)
        g_assert_true((guchar)*p >= 0x20 || *p == '\n');
    g_autoptr(GError) err = NULL;
    g_assert_true(json_parser_load_from_data(parser, line, -1, &err));
    g_assert_no_error(err);
    JsonNode *root = json_parser_get_root(parser);
    g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
    return json_node_get_object(root);
}

static void test_json_fields(void)
{
    g_autofree char *line = jet_log_format_line(JET_LOG_FORMAT_JSON, TS_US, JET_LOG_WARNING, "orders",
                                                "dead-lettered", settle, G_N_ELEMENTS(settle), "captured");
    g_assert_cmpstr(line, ==, "{\"ts\":\"1970-01-01T00:00:01.234Z\",\"level\":\"warning\",\"binding\":\"orders\","
                              "\"event\":\"dead-lettered\",\"seq\":42,\"delivery\":5,\"cause\":\"exhausted\","
                              "\"msg\":\"captured\"}\n");
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = parse_object(line, parser);
    g_assert_cmpint(json_object_get_int_member(o, "seq"), ==, 42);
    g_assert_cmpstr(json_object_get_string_member(o, "cause"), ==, "exhausted");
    /* Without binding and event, the keys are left out. */
    g_autofree char *bare = jet_log_format_line(JET_LOG_FORMAT_JSON, TS_US, JET_LOG_INFO, NULL, NULL, NULL, 0, "");
    g_assert_cmpstr(bare, ==, "{\"ts\":\"1970-01-01T00:00:01.234Z\",\"level\":\"info\",\"msg\":\"\"}\n");
}

/* Every byte a plugin or a message could put into the text comes out as
 * valid JSON and valid UTF-8. */
static void test_json_hostile(void)
{
    /* Every byte 1..255, then invalid sequences between valid ones. */
    GString *all = g_string_new(NULL);
    for (int c = 1; c < 256; c++)
        g_string_append_c(all, (char)c);
    g_string_append(all, "|\xc3\xa9|\xe2\x80\xa8|\xed\xa0\x80|\xc0\xaf|\xf4\x90\x80\x80|\xe2\x82|\xf0\x9f\x98\x80|\xc3");
    const JetLogField f[] = { JET_LOG_TEXT("reason", all->str) };
    g_autofree char *line = jet_log_format_line(JET_LOG_FORMAT_JSON, TS_US, JET_LOG_ERROR, "b\"\n", "e\x1b[31m",
                                                f, 1, all->str);
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = parse_object(line, parser);
    g_assert_cmpstr(json_object_get_string_member(o, "binding"), ==, "b\"\n");
    g_assert_cmpstr(json_object_get_string_member(o, "event"), ==, "e\x1b[31m");
    const char *msg = json_object_get_string_member(o, "msg");
    g_assert_cmpstr(json_object_get_string_member(o, "reason"), ==, msg);
    /* ASCII comes back as it was, controls included. */
    for (int c = 1; c < 128; c++)
        g_assert_cmpint((guchar)msg[c - 1], ==, c);
    /* Bytes 0x80..0xff alone are not UTF-8: each is \xHH. */
    g_assert_true(g_str_has_prefix(msg + 127, "\\x80\\x81"));
    g_assert_nonnull(strstr(msg, "\\xfe\\xff|"));
    /* Valid UTF-8 stays; surrogates, overlong forms, values past U+10FFFF
     * and truncated sequences do not. */
    g_assert_true(g_str_has_suffix(msg, "|\xc3\xa9|\xe2\x80\xa8|\\xed\\xa0\\x80|\\xc0\\xaf|\\xf4\\x90\\x80\\x80|"
                                        "\\xe2\\x82|\xf0\x9f\x98\x80|\\xc3"));
    /* In the line itself: controls, DEL and U+2028 escaped. */
    g_assert_nonnull(strstr(line, "\\u0001\\u0002"));
    g_assert_nonnull(strstr(line, "\\t\\n\\u000b\\f\\r"));
    g_assert_nonnull(strstr(line, "\\u007f"));
    g_assert_nonnull(strstr(line, "|\\u2028|"));
    g_assert_null(strstr(line, "\xe2\x80\xa8"));
    g_string_free(all, TRUE);
}

static void test_parse(void)
{
    jet_log_level l = JET_LOG_ERROR;
    g_assert_true(jet_log_level_parse("debug", &l) && l == JET_LOG_DEBUG);
    g_assert_true(jet_log_level_parse("INFO", &l) && l == JET_LOG_INFO);
    g_assert_true(jet_log_level_parse("Warning", &l) && l == JET_LOG_WARNING);
    g_assert_true(jet_log_level_parse("error", &l) && l == JET_LOG_ERROR);
    g_assert_false(jet_log_level_parse("warn", &l));
    g_assert_false(jet_log_level_parse("", &l));
    g_assert_false(jet_log_level_parse(NULL, &l));
    JetLogFormat f = JET_LOG_FORMAT_JSON;
    g_assert_true(jet_log_format_parse("logfmt", &f) && f == JET_LOG_FORMAT_LOGFMT);
    g_assert_true(jet_log_format_parse("json", &f) && f == JET_LOG_FORMAT_JSON);
    g_assert_false(jet_log_format_parse("JSON", &f));
    g_assert_false(jet_log_format_parse("text", &f));
    g_assert_cmpstr(jet_log_format_name(JET_LOG_FORMAT_JSON), ==, "json");
    g_assert_cmpstr(jet_log_format_name(JET_LOG_FORMAT_LOGFMT), ==, "logfmt");
}

static void test_levels(void)
{
    if (g_test_subprocess()) {
        jet_log_set_level(JET_LOG_WARNING);
        g_assert_false(jet_log_enabled(JET_LOG_INFO));
        g_assert_true(jet_log_enabled(JET_LOG_WARNING));
        g_assert_true(jet_log_enabled(JET_LOG_ERROR));
        jet_log(JET_LOG_INFO, "b", "quiet", "not written");
        jet_log(JET_LOG_DEBUG, "b", "quiet", "not written");
        jet_log_fields(JET_LOG_ERROR, "b", "loud", settle, 2, "written");
        jet_log_set_level(JET_LOG_DEBUG);
        jet_log(JET_LOG_DEBUG, "b", "chatty", "written too");
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr_unmatched("*quiet*");
    g_test_trap_assert_stderr("ts=*Z level=error binding=b event=loud seq=42 delivery=5 msg=\"written\"\n"
                              "ts=*Z level=debug binding=b event=chatty msg=\"written too\"\n");
}

static void test_level_env(void)
{
    g_setenv("JETHOST_LOG_LEVEL", "warning", TRUE);
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_log_level_from_env(&err));
    g_assert_no_error(err);
    g_assert_false(jet_log_enabled(JET_LOG_INFO));
    g_unsetenv("JETHOST_LOG_LEVEL");
    g_assert_true(jet_log_level_from_env(&err));
    g_assert_true(jet_log_enabled(JET_LOG_INFO));
    g_assert_false(jet_log_enabled(JET_LOG_DEBUG));

    jet_log_set_level(JET_LOG_ERROR);
    g_setenv("JETHOST_LOG_LEVEL", "verbose\n", TRUE);
    g_assert_false(jet_log_level_from_env(&err));
    g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
    g_assert_cmpstr(err->message, ==, "the environment variable JETHOST_LOG_LEVEL is 'verbose\\n', which is not a "
                                      "log level (debug, info, warning or error)");
    /* The level stays as it was. */
    g_assert_false(jet_log_enabled(JET_LOG_WARNING));
    g_unsetenv("JETHOST_LOG_LEVEL");
}

/* Without the daemon's check, an unknown value is info, said once. */
static void test_level_env_lazy(void)
{
    if (g_test_subprocess()) {
        g_setenv("JETHOST_LOG_LEVEL", "loud", TRUE);
        jet_log(JET_LOG_DEBUG, NULL, "hidden", "not written");
        jet_log(JET_LOG_INFO, NULL, "shown", "written");
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("ts=*Z level=warning event=log-level msg=\"the environment variable "
                              "JETHOST_LOG_LEVEL is 'loud', which is not a log level (debug, info, warning or "
                              "error); using info\"\nts=*Z level=info event=shown msg=\"written\"\n");
}

/* The format set is the format written. */
static void test_write_json(void)
{
    if (g_test_subprocess()) {
        g_unsetenv("JOURNAL_STREAM");
        jet_log_set_level(JET_LOG_INFO);
        jet_log_set_format(JET_LOG_FORMAT_JSON);
        g_assert_cmpint(jet_log_get_format(), ==, JET_LOG_FORMAT_JSON);
        jet_log_fields(JET_LOG_WARNING, "orders", "dead-lettered", settle, G_N_ELEMENTS(settle), "seq %d", 42);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("{\"ts\":\"*Z\",\"level\":\"warning\",\"binding\":\"orders\",\"event\":\"dead-lettered\","
                              "\"seq\":42,\"delivery\":5,\"cause\":\"exhausted\",\"msg\":\"seq 42\"}\n");
}

static char *dev_ino(int fd)
{
    struct stat st;
    g_assert_cmpint(fstat(fd, &st), ==, 0);
    return g_strdup_printf("%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT, (guint64)st.st_dev, (guint64)st.st_ino);
}

static void test_journal_stream(void)
{
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    int fd = g_file_open_tmp("jet-log-XXXXXX", &path, &err);
    g_assert_no_error(err);
    int other = open("/dev/null", O_WRONLY);
    g_assert_cmpint(other, >=, 0);
    g_autofree char *mine = dev_ino(fd);
    g_assert_true(jet_log_journal_stream_matches(mine, fd));
    g_assert_false(jet_log_journal_stream_matches(mine, other));
    g_assert_false(jet_log_journal_stream_matches("1:1", fd));
    g_assert_false(jet_log_journal_stream_matches(NULL, fd));
    g_assert_false(jet_log_journal_stream_matches("", fd));
    g_assert_false(jet_log_journal_stream_matches("12", fd));
    g_assert_false(jet_log_journal_stream_matches(":", fd));
    g_assert_false(jet_log_journal_stream_matches("a:b", fd));
    g_autofree char *trailing = g_strconcat(mine, "x", NULL);
    g_assert_false(jet_log_journal_stream_matches(trailing, fd));
    g_assert_false(jet_log_journal_stream_matches(mine, -1));
    close(other);
    close(fd);
    unlink(path);
}

/* JOURNAL_STREAM that names something else: the line is on stderr. */
static void test_journal_mismatch(void)
{
    if (g_test_subprocess()) {
        g_setenv("JOURNAL_STREAM", "1:1", TRUE);
        jet_log_set_level(JET_LOG_INFO);
        jet_log(JET_LOG_INFO, "b", "here", "on stderr");
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("ts=*Z level=info binding=b event=here msg=\"on stderr\"\n");
}

/* JOURNAL_STREAM naming stderr, but no journal socket to write to: the
 * line still reaches stderr.  Where a journal socket exists the entry goes
 * there instead (nothing on stderr), unless the journal refuses it (then
 * the same line on stderr): either way nothing is lost and nothing else is
 * written. */
static void test_journal_no_socket(void)
{
    if (g_test_subprocess()) {
        g_autofree char *mine = dev_ino(STDERR_FILENO);
        g_setenv("JOURNAL_STREAM", mine, TRUE);
        jet_log_set_level(JET_LOG_INFO);
        jet_log(JET_LOG_INFO, "b", "fallback", "on stderr after all");
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    const char *line = "ts=*Z level=info binding=b event=fallback msg=\"on stderr after all\"\n";
    if (!g_file_test("/run/systemd/journal/socket", G_FILE_TEST_EXISTS)) {
        g_test_trap_assert_stderr(line);
        return;
    }
    g_test_trap_assert_stderr_unmatched("*level=*level=*");   /* never twice */
    g_test_trap_assert_stdout("");
}

static const char *entry_value(const JetLogJournalEntry *e, const char *key)
{
    const char *found = NULL;
    for (guint i = 0; i < e->fields->len; i++) {
        const GLogField *f = &g_array_index(e->fields, GLogField, i);
        if (strcmp(f->key, key) == 0) {
            g_assert_null(found);   /* each key once */
            g_assert_cmpint(f->length, ==, -1);
            found = f->value;
        }
    }
    return found;
}

/* What g_log_writer_journald is given (it always writes to
 * /run/systemd/journal/socket, so the entry is checked, not sent). */
static void test_journal_entry(void)
{
    const JetLogField f[] = {
        settle[0], settle[1], settle[2],
        JET_LOG_TEXT("msg", "reserved"),
        JET_LOG_TEXT("lane_key", "k\n1"),
    };
    JetLogJournalEntry e;
    jet_log_journal_entry_init(&e, JET_LOG_WARNING, "orders", "dead-lettered", f, G_N_ELEMENTS(f),
                               "stream seq 42: \"captured\"\n");
    g_assert_cmpuint(e.fields->len, ==, 9);
    g_assert_cmpstr(entry_value(&e, "PRIORITY"), ==, "4");
    g_assert_cmpstr(entry_value(&e, "MESSAGE"), ==, "stream seq 42: \"captured\"\n");
    g_assert_cmpstr(entry_value(&e, "SYSLOG_IDENTIFIER"), ==, "jethost");
    g_assert_cmpstr(entry_value(&e, "JETHOST_BINDING"), ==, "orders");
    g_assert_cmpstr(entry_value(&e, "JETHOST_EVENT"), ==, "dead-lettered");
    g_assert_cmpstr(entry_value(&e, "JETHOST_SEQ"), ==, "42");
    g_assert_cmpstr(entry_value(&e, "JETHOST_DELIVERY"), ==, "5");
    g_assert_cmpstr(entry_value(&e, "JETHOST_CAUSE"), ==, "exhausted");
    g_assert_cmpstr(entry_value(&e, "JETHOST_LANE_KEY"), ==, "k\n1");
    g_assert_null(entry_value(&e, "JETHOST_MSG"));
    jet_log_journal_entry_clear(&e);
    g_assert_null(e.fields);

    static const struct {
        jet_log_level level;
        const char *priority;
        GLogLevelFlags glib;
    } map[] = {
        { JET_LOG_ERROR, "3", G_LOG_LEVEL_CRITICAL },
        { JET_LOG_WARNING, "4", G_LOG_LEVEL_WARNING },
        { JET_LOG_INFO, "6", G_LOG_LEVEL_INFO },
        { JET_LOG_DEBUG, "7", G_LOG_LEVEL_DEBUG },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(map); i++) {
        jet_log_journal_entry_init(&e, map[i].level, NULL, NULL, NULL, 0, "m");
        g_assert_cmpuint(e.fields->len, ==, 3);   /* no binding, no event */
        g_assert_cmpstr(entry_value(&e, "PRIORITY"), ==, map[i].priority);
        g_assert_null(entry_value(&e, "JETHOST_BINDING"));
        g_assert_cmpint(jet_log_glib_level(map[i].level), ==, map[i].glib);
        jet_log_journal_entry_clear(&e);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/log/logfmt/plain", test_logfmt_plain);
    g_test_add_func("/log/logfmt/fields", test_logfmt_fields);
    g_test_add_func("/log/json/fields", test_json_fields);
    g_test_add_func("/log/json/hostile", test_json_hostile);
    g_test_add_func("/log/parse", test_parse);
    g_test_add_func("/log/levels", test_levels);
    g_test_add_func("/log/level-env", test_level_env);
    g_test_add_func("/log/level-env-lazy", test_level_env_lazy);
    g_test_add_func("/log/write-json", test_write_json);
    g_test_add_func("/log/journal/stream-matches", test_journal_stream);
    g_test_add_func("/log/journal/mismatch-stderr", test_journal_mismatch);
    g_test_add_func("/log/journal/no-socket-stderr", test_journal_no_socket);
    g_test_add_func("/log/journal/entry", test_journal_entry);
    return g_test_run();
}
