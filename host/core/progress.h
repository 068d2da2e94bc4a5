/* Bulk work an operator watches (`jethost dlq replay`, `purge`): the pace a
 * rate limit sets, and the progress line a terminal shows.  Pure: the
 * caller reads the clock. */
#ifndef JET_PROGRESS_H
#define JET_PROGRESS_H

#include <glib.h>

/* When item i (0-based) may start, in µs after the first one started, at
 * rate items a second (rate <= 0: no limit, 0).  A schedule from the start
 * rather than a sleep after each item: time lost to one slow item is made
 * up by the next ones, and the whole run never goes faster than the rate. */
gint64 jet_pace_due_us(guint64 i, double rate);

/* One line of progress, at most width columns (a bar fills what the text
 * leaves, when there is room):
 *   "  2345/5000 [=========>         ]  46%  500/s  0:05 left"
 * total 0: unknown (no bar, no percentage, no time left).  The rate is
 * done over elapsed_us.  Caller frees. */
char *jet_progress_line(guint64 done, guint64 total, gint64 elapsed_us, guint width);

/* A duration for people: "0:05", "12:30", "1:02:03". Caller frees. */
char *jet_progress_clock(gint64 us);

#endif
