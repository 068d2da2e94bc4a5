/* Structured log lines on stderr: one event a line, key=value, so a person
 * can read them and a program can parse them. */
#ifndef JET_LOG_H
#define JET_LOG_H

#include <glib.h>
#include <jethost/plugin.h>

/* Lines above this level are not written.  Default: JET_LOG_INFO;
 * JETHOST_LOG_LEVEL=debug|info|warning|error overrides it. */
void jet_log_set_level(jet_log_level level);
gboolean jet_log_enabled(jet_log_level level);

/* Writes `ts=… level=… binding=… event=… msg="…"`; binding and event may be
 * NULL.  The message is quoted, with quotes and newlines escaped. */
void jet_log(jet_log_level level, const char *binding, const char *event, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
void jet_logv(jet_log_level level, const char *binding, const char *event, const char *fmt,
              va_list ap) G_GNUC_PRINTF(4, 0);

#endif
