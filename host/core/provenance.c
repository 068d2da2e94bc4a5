/* The time format of dead-letter provenance; see provenance.h. */
#include "provenance.h"

char *jet_time_format_ns(gint64 unix_ns)
{
    gint64 secs = unix_ns / G_GINT64_CONSTANT(1000000000);
    gint64 frac = unix_ns % G_GINT64_CONSTANT(1000000000);
    if (frac < 0) {
        frac += G_GINT64_CONSTANT(1000000000);
        secs -= 1;
    }
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(secs);
    if (dt == NULL)
        return g_strdup_printf("%" G_GINT64_FORMAT "ns", unix_ns);
    g_autofree char *base = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S");
    return g_strdup_printf("%s.%09" G_GINT64_FORMAT "Z", base, frac);
}
