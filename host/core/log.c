#include "log.h"

#include <stdio.h>
#include <string.h>

static gint max_level = -1;   /* -1: not read from the environment yet */
static GMutex write_lock;

static jet_log_level level_from_env(void)
{
    const char *v = g_getenv("JETHOST_LOG_LEVEL");
    if (v == NULL) return JET_LOG_INFO;
    if (g_ascii_strcasecmp(v, "debug") == 0) return JET_LOG_DEBUG;
    if (g_ascii_strcasecmp(v, "warning") == 0) return JET_LOG_WARNING;
    if (g_ascii_strcasecmp(v, "error") == 0) return JET_LOG_ERROR;
    return JET_LOG_INFO;
}

void jet_log_set_level(jet_log_level level)
{
    g_atomic_int_set(&max_level, (gint)level);
}

gboolean jet_log_enabled(jet_log_level level)
{
    gint m = g_atomic_int_get(&max_level);
    if (m < 0) {
        m = (gint)level_from_env();
        g_atomic_int_set(&max_level, m);
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

void jet_logv(jet_log_level level, const char *binding, const char *event, const char *fmt, va_list ap)
{
    if (!jet_log_enabled(level))
        return;
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    GString *line = g_string_sized_new(128);
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *ts = g_date_time_format(now, "%Y-%m-%dT%H:%M:%S");
    g_string_append_printf(line, "ts=%s.%03dZ level=%s", ts, g_date_time_get_microsecond(now) / 1000,
                           level_name(level));
    if (binding != NULL)
        g_string_append_printf(line, " binding=%s", binding);
    if (event != NULL)
        g_string_append_printf(line, " event=%s", event);
    g_string_append(line, " msg=\"");
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_c(line, '\\'), g_string_append_c(line, *p);
        else if (*p == '\n')
            g_string_append(line, "\\n");
        else
            g_string_append_c(line, *p);
    }
    g_string_append(line, "\"\n");
    g_mutex_lock(&write_lock);
    fputs(line->str, stderr);
    fflush(stderr);
    g_mutex_unlock(&write_lock);
    g_string_free(line, TRUE);
}

void jet_log(jet_log_level level, const char *binding, const char *event, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    jet_logv(level, binding, event, fmt, ap);
    va_end(ap);
}
