/* Structured log lines: one event a line, so a person can read them and a
 * program can index them (docs/logging.md).
 *
 * Where a line goes: under systemd (JOURNAL_STREAM names stderr's
 * device:inode) a native journald entry through GLib's structured logging
 * (g_log_writer_journald); otherwise stderr, as logfmt (the default) or one
 * JSON object a line ([host] log_format). */
#ifndef JET_LOG_H
#define JET_LOG_H

#include <glib.h>
#include <jethost/plugin.h>

/* Lines above this level are not written.  Default: JET_LOG_INFO;
 * JETHOST_LOG_LEVEL=debug|info|warning|error overrides it. */
void jet_log_set_level(jet_log_level level);
gboolean jet_log_enabled(jet_log_level level);

/* "debug", "info", "warning" or "error" (any case). */
gboolean jet_log_level_parse(const char *text, jet_log_level *out);

/* Reads JETHOST_LOG_LEVEL and sets the level from it (unset: info).  An
 * unknown value is an error (JET_ERROR_INVALID naming the variable and the
 * values allowed) and leaves the level as it was (info when none was set,
 * so that the error can be written).  The daemon calls this
 * first and exits with the config code on an error; without the call the
 * level is read on first use, and an unknown value means info. */
gboolean jet_log_level_from_env(GError **error);

typedef enum {
    JET_LOG_FORMAT_LOGFMT = 0,  /* ts=… level=… binding=… event=… [field=…] msg="…" */
    JET_LOG_FORMAT_JSON,        /* {"ts":…,"level":…,"binding":…,"event":…,[fields],"msg":…} */
} JetLogFormat;

/* "logfmt" or "json". */
gboolean jet_log_format_parse(const char *text, JetLogFormat *out);
const char *jet_log_format_name(JetLogFormat format);
/* The format of lines on stderr from now on (default logfmt). */
void jet_log_set_format(JetLogFormat format);
JetLogFormat jet_log_get_format(void);

/* One structured field of a line.  key: [a-z0-9_]+, not one of ts, level,
 * binding, event, msg (such a field is left out); in journald it becomes
 * JETHOST_<KEY in capitals>.  A text field with a NULL value is left out. */
typedef struct {
    const char *key;
    const char *text;   /* is_number FALSE */
    guint64 number;     /* is_number TRUE */
    gboolean is_number;
} JetLogField;

#define JET_LOG_TEXT(k, v) ((JetLogField){ .key = (k), .text = (v) })
#define JET_LOG_NUMBER(k, v) ((JetLogField){ .key = (k), .number = (guint64)(v), .is_number = TRUE })

/* The settlement fields, named once. */
#define JET_LOG_KEY_SEQ "seq"            /* the stream sequence */
#define JET_LOG_KEY_DELIVERY "delivery"  /* the delivery count */
#define JET_LOG_KEY_CAUSE "cause"        /* a dead-letter cause (jet_cause_name) */

/* Writes a line at level: binding and event may be NULL (left out); the
 * message is the formatted text.  jet_log_fields adds fields[0..n) in
 * their order, after event and before msg. */
void jet_log(jet_log_level level, const char *binding, const char *event, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
void jet_logv(jet_log_level level, const char *binding, const char *event, const char *fmt,
              va_list ap) G_GNUC_PRINTF(4, 0);
void jet_log_fields(jet_log_level level, const char *binding, const char *event, const JetLogField *fields,
                    gsize n, const char *fmt, ...) G_GNUC_PRINTF(6, 7);
void jet_log_fieldsv(jet_log_level level, const char *binding, const char *event, const JetLogField *fields,
                     gsize n, const char *fmt, va_list ap) G_GNUC_PRINTF(6, 0);

/* --- the pieces, for tests --------------------------------------------- */

/* One line as it is written to stderr, '\n' included; ts_us: microseconds
 * since the epoch (UTC).  Caller frees. */
char *jet_log_format_line(JetLogFormat format, gint64 ts_us, jet_log_level level, const char *binding,
                          const char *event, const JetLogField *fields, gsize n, const char *text);

/* Whether the value of JOURNAL_STREAM ("<device>:<inode>", decimal) names
 * what fd is (systemd.exec(5): then stderr is connected to the journal). */
gboolean jet_log_journal_stream_matches(const char *journal_stream, int fd);

/* A journald entry: GLogField values, for g_log_writer_journald.  PRIORITY
 * (3 error, 4 warning, 6 info, 7 debug), MESSAGE (the text),
 * SYSLOG_IDENTIFIER=jethost, JETHOST_BINDING, JETHOST_EVENT, then
 * JETHOST_<KEY> for each field. */
typedef struct {
    GArray *fields;     /* GLogField; values point into owned or the arguments */
    GPtrArray *owned;
} JetLogJournalEntry;

void jet_log_journal_entry_init(JetLogJournalEntry *e, jet_log_level level, const char *binding,
                                const char *event, const JetLogField *fields, gsize n, const char *text);
void jet_log_journal_entry_clear(JetLogJournalEntry *e);
/* The GLib level given to g_log_writer_journald with an entry. */
GLogLevelFlags jet_log_glib_level(jet_log_level level);

#endif
