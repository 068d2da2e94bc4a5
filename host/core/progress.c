/* Pace and progress (progress.h). */
#include "progress.h"

#include <string.h>

gint64 jet_pace_due_us(guint64 i, double rate)
{
    if (!(rate > 0) || i == 0)
        return 0;
    double us = (double)i * 1e6 / rate;
    if (us >= (double)G_MAXINT64)
        return G_MAXINT64;
    gint64 whole = (gint64)us;
    return (double)whole < us ? whole + 1 : whole;   /* never early */
}

char *jet_progress_clock(gint64 us)
{
    gint64 s = us > 0 ? (us + 999999) / 1000000 : 0;
    if (s >= 3600)
        return g_strdup_printf("%" G_GINT64_FORMAT ":%02d:%02d", s / 3600, (int)(s / 60 % 60), (int)(s % 60));
    return g_strdup_printf("%d:%02d", (int)(s / 60), (int)(s % 60));
}

char *jet_progress_line(guint64 done, guint64 total, gint64 elapsed_us, guint width)
{
    double rate = elapsed_us > 0 ? (double)done * 1e6 / (double)elapsed_us : 0;
    g_autofree char *count = total > 0 ? g_strdup_printf("%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT, done, total)
                                       : g_strdup_printf("%" G_GUINT64_FORMAT, done);
    GString *tail = g_string_new(NULL);
    if (total > 0)
        g_string_append_printf(tail, "  %3u%%", (guint)(MIN(done, total) * 100 / total));
    g_string_append_printf(tail, "  %.0f/s", rate);
    if (total > 0 && done >= total) {
        g_string_append(tail, "  done");
    } else if (total > 0 && rate > 0) {
        g_autofree char *left = jet_progress_clock((gint64)((double)(total - done) / rate * 1e6));
        g_string_append_printf(tail, "  %s left", left);
    }
    GString *line = g_string_new(count);
    /* " [" + bar + "]": worth drawing with at least 10 cells. */
    gsize fixed = strlen(count) + 3 + tail->len;
    if (total > 0 && width >= fixed + 10) {
        gsize cells = MIN(width - fixed, (gsize)50);
        gsize full = (gsize)((double)MIN(done, total) / (double)total * (double)cells);
        g_string_append(line, " [");
        for (gsize i = 0; i < cells; i++)
            g_string_append_c(line, i < full ? '=' : i == full ? '>' : ' ');
        g_string_append_c(line, ']');
    }
    g_string_append(line, tail->str);
    g_string_free(tail, TRUE);
    if (line->len > width && width > 0)
        g_string_truncate(line, width);
    return g_string_free(line, FALSE);
}
