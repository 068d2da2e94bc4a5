/* Durations as ops write them: "250ms", "30s", "5m", "1h", "2d", or "0". */
#ifndef JET_DURATION_H
#define JET_DURATION_H

#include <glib.h>

/* Parses text into milliseconds.  A bare number is refused (the unit is
 * never guessed), except 0.  Returns FALSE with a message naming the
 * problem. */
gboolean jet_duration_parse_ms(const char *text, guint64 *out_ms, GError **error);

/* Formats ms the way it would be written ("1500ms", "30s", "5m"): the largest
 * unit that divides it exactly.  Caller frees. */
char *jet_duration_format_ms(guint64 ms);

#endif
