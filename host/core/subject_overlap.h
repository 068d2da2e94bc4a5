/* Whether two NATS subject patterns can match one subject (docs/forwarding.md,
 * "A forward that feeds itself"). */
#ifndef JET_SUBJECT_OVERLAP_H
#define JET_SUBJECT_OVERLAP_H

#include <glib.h>

/* TRUE when some subject matches both a and b, with the server's wildcards:
 * a token `*` is any one token, a last token `>` one or more.  A wildcard
 * inside a token ("a*", "b>") is a literal character, as the server reads
 * it.  NULL or empty: FALSE.  Pure. */
gboolean jet_subject_overlaps(const char *a, const char *b);

#endif
