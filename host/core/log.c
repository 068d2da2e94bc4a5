/* The host's log (log.h, docs/logging.md): one line an event, logfmt or
 * JSON on stderr, or native journald entries under systemd. */
#include "log.h"
#include "errors.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define LEVEL_VAR "JETHOST_LOG_LEVEL"
#define LEVELS_ALLOWED "debug, info, warning or error"

static gint max_level = -1;   /* -1: not read from the environment yet */
static gint format = JET_LOG_FORMAT_LOGFMT;
static gint journal = -1;     /* -1: not decided yet; 1: stderr is the journal */
static GMutex write_lock;

/* --- levels ---------------------------------------------------------------- */

gboolean jet_log_level_parse(const char *text, jet_log_level *out)
{
    static const struct {
        const char *name;
        jet_log_level level;
    } names[] = {
        { "debug", JET_LOG_DEBUG },
        { "info", JET_LOG_INFO },
        { "warning", JET_LOG_WARNING },
        { "error", JET_LOG_ERROR },
    };
    if (text == NULL)
        return FALSE;
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        if (g_ascii_strcasecmp(text, names[i].name) == 0) {
            *out = names[i].level;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean jet_log_level_from_env(GError **error)
{
    const char *v = g_getenv(LEVEL_VAR);
    jet_log_level level = JET_LOG_INFO;
    if (v != NULL && !jet_log_level_parse(v, &level)) {
        g_autofree char *shown = g_strescape(v, NULL);
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "the environment variable %s is '%s', which is not a log level (" LEVELS_ALLOWED ")", LEVEL_VAR,
                    shown);
        /* The error itself must be written: info until a level is set. */
        g_atomic_int_compare_and_exchange(&max_level, -1, (gint)JET_LOG_INFO);
        return FALSE;
    }
    jet_log_set_level(level);
    return TRUE;
}

void jet_log_set_level(jet_log_level level)
{
    g_atomic_int_set(&max_level, (gint)level);
}

gboolean jet_log_enabled(jet_log_level level)
{
    gint m = g_atomic_int_get(&max_level);
    if (m < 0) {
        /* Not set by the daemon (a test, the mock): an unknown value is
         * info here, said once. */
        g_autoptr(GError) err = NULL;
        if (!jet_log_level_from_env(&err))
            jet_log(JET_LOG_WARNING, NULL, "log-level", "%s; using info", err->message);
        m = g_atomic_int_get(&max_level);
    }
    return (gint)level <= m;
}

static const char *level_name(jet_log_level l)
{
    switch (l) {
    case JET_LOG_ERROR: return "error";
    case JET_LOG_WARNING: return "warning";
    case JET_LOG_INFO: return "info";
    case JET_LOG_DEBUG: return "debug";
    }
    return "info";
}

/* --- formats ---------------------------------------------------------------- */

gboolean jet_log_format_parse(const char *text, JetLogFormat *out)
{
    if (g_strcmp0(text, "logfmt") == 0)
        *out = JET_LOG_FORMAT_LOGFMT;
    else if (g_strcmp0(text, "json") == 0)
        *out = JET_LOG_FORMAT_JSON;
    else
        return FALSE;
    return TRUE;
}

const char *jet_log_format_name(JetLogFormat f)
{
    return f == JET_LOG_FORMAT_JSON ? "json" : "logfmt";
}

void jet_log_set_format(JetLogFormat f)
{
    g_atomic_int_set(&format, (gint)f);
}

JetLogFormat jet_log_get_format(void)
{
    return (JetLogFormat)g_atomic_int_get(&format);
}

/* A field that can be written: a key of [a-z0-9_], not a key of the line
 * itself, and a value. */
static gboolean field_ok(const JetLogField *f)
{
    static const char *const reserved[] = { "ts", "level", "binding", "event", "msg" };
    if (f->key == NULL || *f->key == '\0' || (!f->is_number && f->text == NULL))
        return FALSE;
    for (const char *p = f->key; *p; p++)
        if (!g_ascii_islower(*p) && !g_ascii_isdigit(*p) && *p != '_')
            return FALSE;
    for (gsize i = 0; i < G_N_ELEMENTS(reserved); i++)
        if (strcmp(f->key, reserved[i]) == 0)
            return FALSE;
    return TRUE;
}

/* logfmt's quoted value, as msg has always been written: '"' and '\\'
 * backslashed, a newline as \n, every other byte as it is. */
static void logfmt_quoted(GString *line, const char *text)
{
    g_string_append_c(line, '"');
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_c(line, '\\'), g_string_append_c(line, *p);
        else if (*p == '\n')
            g_string_append(line, "\\n");
        else
            g_string_append_c(line, *p);
    }
    g_string_append_c(line, '"');
}

/* A field's value: bare when it is printable ASCII without '"', '=' or
 * '\\' (and not empty), else quoted. */
static void logfmt_value(GString *line, const char *text)
{
    gboolean bare = *text != '\0';
    for (const char *p = text; *p && bare; p++)
        bare = *p > ' ' && *p < 0x7f && *p != '"' && *p != '=' && *p != '\\';
    if (bare)
        g_string_append(line, text);
    else
        logfmt_quoted(line, text);
}

/* A JSON string that is valid JSON and valid UTF-8 whatever the bytes:
 * '"', '\\' and controls escaped (DEL and U+2028/U+2029 too), valid UTF-8
 * as it is, and each byte that is not UTF-8 as the text \xHH. */
static void json_string(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    const char *p = s;
    while (*p) {
        guchar c = (guchar)*p;
        if (c < 0x80) {
            switch (c) {
            case '"': g_string_append(out, "\\\""); break;
            case '\\': g_string_append(out, "\\\\"); break;
            case '\n': g_string_append(out, "\\n"); break;
            case '\r': g_string_append(out, "\\r"); break;
            case '\t': g_string_append(out, "\\t"); break;
            case '\b': g_string_append(out, "\\b"); break;
            case '\f': g_string_append(out, "\\f"); break;
            default:
                if (c < 0x20 || c == 0x7f)
                    g_string_append_printf(out, "\\u%04x", c);
                else
                    g_string_append_c(out, (char)c);
            }
            p++;
            continue;
        }
        gunichar u = g_utf8_get_char_validated(p, -1);
        if (u == (gunichar)-1 || u == (gunichar)-2) {
            g_string_append_printf(out, "\\\\x%02x", c);
            p++;
            continue;
        }
        const char *next = g_utf8_next_char(p);
        if (u == 0x2028 || u == 0x2029)
            g_string_append_printf(out, "\\u%04x", (guint)u);
        else
            g_string_append_len(out, p, next - p);
        p = next;
    }
    g_string_append_c(out, '"');
}

char *jet_log_format_line(JetLogFormat fmt, gint64 ts_us, jet_log_level level, const char *binding,
                          const char *event, const JetLogField *fields, gsize n, const char *text)
{
    g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(ts_us / G_USEC_PER_SEC);
    g_autofree char *day = t != NULL ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%S") : g_strdup("1970-01-01T00:00:00");
    g_autofree char *ts = g_strdup_printf("%s.%03dZ", day, (int)((ts_us % G_USEC_PER_SEC) / 1000));
    GString *line = g_string_sized_new(160);
    if (fmt == JET_LOG_FORMAT_JSON) {
        g_string_append_printf(line, "{\"ts\":\"%s\",\"level\":\"%s\"", ts, level_name(level));
        if (binding != NULL)
            g_string_append(line, ",\"binding\":"), json_string(line, binding);
        if (event != NULL)
            g_string_append(line, ",\"event\":"), json_string(line, event);
        for (gsize i = 0; i < n; i++) {
            if (!field_ok(&fields[i]))
                continue;
            g_string_append_printf(line, ",\"%s\":", fields[i].key);
            if (fields[i].is_number)
                g_string_append_printf(line, "%" G_GUINT64_FORMAT, fields[i].number);
            else
                json_string(line, fields[i].text);
        }
        g_string_append(line, ",\"msg\":");
        json_string(line, text);
        g_string_append(line, "}\n");
        return g_string_free(line, FALSE);
    }
    g_string_append_printf(line, "ts=%s level=%s", ts, level_name(level));
    if (binding != NULL)
        g_string_append_printf(line, " binding=%s", binding);
    if (event != NULL)
        g_string_append_printf(line, " event=%s", event);
    for (gsize i = 0; i < n; i++) {
        if (!field_ok(&fields[i]))
            continue;
        g_string_append_printf(line, " %s=", fields[i].key);
        if (fields[i].is_number)
            g_string_append_printf(line, "%" G_GUINT64_FORMAT, fields[i].number);
        else
            logfmt_value(line, fields[i].text);
    }
    g_string_append(line, " msg=");
    logfmt_quoted(line, text);
    g_string_append_c(line, '\n');
    return g_string_free(line, FALSE);
}

/* --- journald --------------------------------------------------------------- */

gboolean jet_log_journal_stream_matches(const char *journal_stream, int fd)
{
    if (journal_stream == NULL || *journal_stream == '\0')
        return FALSE;
    const char *colon = strchr(journal_stream, ':');
    if (colon == NULL)
        return FALSE;
    g_autofree char *dev_text = g_strndup(journal_stream, (gsize)(colon - journal_stream));
    guint64 dev, ino;
    if (!g_ascii_string_to_unsigned(dev_text, 10, 0, G_MAXUINT64, &dev, NULL) ||
        !g_ascii_string_to_unsigned(colon + 1, 10, 0, G_MAXUINT64, &ino, NULL))
        return FALSE;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return FALSE;
    return (guint64)st.st_dev == dev && (guint64)st.st_ino == ino;
}

GLogLevelFlags jet_log_glib_level(jet_log_level level)
{
    switch (level) {
    case JET_LOG_ERROR: return G_LOG_LEVEL_CRITICAL;  /* G_LOG_LEVEL_ERROR means "abort" to GLib */
    case JET_LOG_WARNING: return G_LOG_LEVEL_WARNING;
    case JET_LOG_INFO: return G_LOG_LEVEL_INFO;
    case JET_LOG_DEBUG: return G_LOG_LEVEL_DEBUG;
    }
    return G_LOG_LEVEL_INFO;
}

static const char *priority(jet_log_level level)
{
    switch (level) {
    case JET_LOG_ERROR: return "3";
    case JET_LOG_WARNING: return "4";
    case JET_LOG_INFO: return "6";
    case JET_LOG_DEBUG: return "7";
    }
    return "6";
}

static void entry_add(JetLogJournalEntry *e, const char *key, const char *value)
{
    GLogField f = { .key = key, .value = value, .length = -1 };
    g_array_append_val(e->fields, f);
}

void jet_log_journal_entry_init(JetLogJournalEntry *e, jet_log_level level, const char *binding,
                                const char *event, const JetLogField *fields, gsize n, const char *text)
{
    e->fields = g_array_sized_new(FALSE, FALSE, sizeof(GLogField), 5 + n);
    e->owned = g_ptr_array_new_with_free_func(g_free);
    entry_add(e, "PRIORITY", priority(level));
    entry_add(e, "MESSAGE", text);
    entry_add(e, "SYSLOG_IDENTIFIER", "jethost");
    if (binding != NULL)
        entry_add(e, "JETHOST_BINDING", binding);
    if (event != NULL)
        entry_add(e, "JETHOST_EVENT", event);
    for (gsize i = 0; i < n; i++) {
        if (!field_ok(&fields[i]))
            continue;
        char *key = g_strconcat("JETHOST_", fields[i].key, NULL);
        for (char *p = key; *p; p++)
            *p = g_ascii_toupper(*p);
        g_ptr_array_add(e->owned, key);
        const char *value = fields[i].text;
        if (fields[i].is_number) {
            char *num = g_strdup_printf("%" G_GUINT64_FORMAT, fields[i].number);
            g_ptr_array_add(e->owned, num);
            value = num;
        }
        entry_add(e, key, value);
    }
}

void jet_log_journal_entry_clear(JetLogJournalEntry *e)
{
    g_clear_pointer(&e->fields, g_array_unref);
    g_clear_pointer(&e->owned, g_ptr_array_unref);
}

static gboolean to_journal(void)
{
    gint j = g_atomic_int_get(&journal);
    if (j < 0) {
        j = jet_log_journal_stream_matches(g_getenv("JOURNAL_STREAM"), fileno(stderr)) ? 1 : 0;
        g_atomic_int_set(&journal, j);
    }
    return j == 1;
}

/* --- writing ------------------------------------------------------------------ */

void jet_log_fieldsv(jet_log_level level, const char *binding, const char *event, const JetLogField *fields,
                     gsize n, const char *fmt, va_list ap)
{
    if (!jet_log_enabled(level))
        return;
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    if (to_journal()) {
        JetLogJournalEntry e;
        jet_log_journal_entry_init(&e, level, binding, event, fields, n, text);
        GLogWriterOutput out = g_log_writer_journald(jet_log_glib_level(level), (const GLogField *)e.fields->data,
                                                     e.fields->len, NULL);
        jet_log_journal_entry_clear(&e);
        if (out == G_LOG_WRITER_HANDLED)
            return;
        /* No journal socket after all: stderr still reaches the journal. */
    }
    g_autofree char *line = jet_log_format_line(jet_log_get_format(), g_get_real_time(), level, binding, event,
                                                fields, n, text);
    g_mutex_lock(&write_lock);
    fputs(line, stderr);
    fflush(stderr);
    g_mutex_unlock(&write_lock);
}

void jet_log_fields(jet_log_level level, const char *binding, const char *event, const JetLogField *fields,
                    gsize n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    jet_log_fieldsv(level, binding, event, fields, n, fmt, ap);
    va_end(ap);
}

void jet_logv(jet_log_level level, const char *binding, const char *event, const char *fmt, va_list ap)
{
    jet_log_fieldsv(level, binding, event, NULL, 0, fmt, ap);
}

void jet_log(jet_log_level level, const char *binding, const char *event, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    jet_log_fieldsv(level, binding, event, NULL, 0, fmt, ap);
    va_end(ap);
}
