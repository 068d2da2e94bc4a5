#include "duration.h"
#include "errors.h"

#include <string.h>

static const struct {
    const char *suffix;
    guint64 ms;
} units[] = {
    /* longest suffixes first so "ms" is not read as "m" */
    { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 },
};

gboolean jet_duration_parse_ms(const char *text, guint64 *out_ms, GError **error)
{
    g_return_val_if_fail(text != NULL && out_ms != NULL, FALSE);

    const char *p = text;
    while (g_ascii_isspace(*p))
        p++;
    if (strcmp(p, "0") == 0) {
        *out_ms = 0;
        return TRUE;
    }
    if (!g_ascii_isdigit(*p)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "'%s' is not a duration (write it like 250ms, 30s, 5m, 1h)", text);
        return FALSE;
    }
    guint64 value = 0;
    while (g_ascii_isdigit(*p)) {
        if (value > G_MAXUINT64 / 10 - 10) {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "duration '%s' is too large", text);
            return FALSE;
        }
        value = value * 10 + (guint64)(*p - '0');
        p++;
    }
    g_autofree char *suffix = g_strstrip(g_strdup(p));
    for (gsize i = 0; i < G_N_ELEMENTS(units); i++) {
        if (strcmp(suffix, units[i].suffix) == 0) {
            if (value > G_MAXUINT64 / units[i].ms) {
                g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "duration '%s' is too large", text);
                return FALSE;
            }
            *out_ms = value * units[i].ms;
            return TRUE;
        }
    }
    if (*suffix == '\0')
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "duration '%s' has no unit (write it like %s" "ms or %s" "s)", text, text, text);
    else
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "duration '%s' has an unknown unit '%s' (ms, s, m, h or d)", text, suffix);
    return FALSE;
}

char *jet_duration_format_ms(guint64 ms)
{
    if (ms == 0)
        return g_strdup("0");
    for (gsize i = G_N_ELEMENTS(units); i-- > 0;) {
        if (ms % units[i].ms == 0)
            return g_strdup_printf("%" G_GUINT64_FORMAT "%s", ms / units[i].ms, units[i].suffix);
    }
    g_assert_not_reached();
}
