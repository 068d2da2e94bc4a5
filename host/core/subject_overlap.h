/* Whether two NATS subjects can match a common subject: the host refuses a
 * filter_subject that matches none of its stream's subjects itself, since
 * nats-server 2.10 and later accept such a consumer and it would silently
 * receive nothing (docs/ordered.md, "The first bind"), and a forward whose
 * target its own stream captures (docs/forwarding.md, "A forward that
 * feeds itself").
 *
 * Pure: no I/O.  Subjects are valid ones (config.c refuses empty tokens
 * and misplaced wildcards before anything gets here): `*` stands for one
 * token, `>` (last) for one or more. */
#ifndef JET_SUBJECT_OVERLAP_H
#define JET_SUBJECT_OVERLAP_H

#include <glib.h>

/* Whether some subject matches both a and b.  A wildcard inside a token
 * ("a*") is a literal character, as the server reads it; NULL or empty:
 * FALSE. */
gboolean jet_subject_overlaps(const char *a, const char *b);

/* Whether a consumer with this filter can receive anything from a stream
 * with these n subjects: the filter overlaps one of them.  A stream with no
 * subjects (one that mirrors or sources others) cannot be checked: TRUE. */
gboolean jet_filter_fits_subjects(const char *filter, const char *const *subjects, gsize n);

#endif
