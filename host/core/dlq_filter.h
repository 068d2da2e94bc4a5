/* Which dead-letter records an operator means: the selection `jethost dlq`
 * list, stats, replay and purge share (docs/dead-letters.md, "On call").
 *
 * A filter is a range (from, until: each a DLQ sequence or a time), a
 * limit, and tests on the record's provenance headers.  Values given for
 * one field are alternatives (any may match); different fields must all
 * match.  A record lacking a header matches no test on it.  Pure: the
 * reader (host/io/dlq_reader.h) feeds it what the server stored. */
#ifndef JET_DLQ_FILTER_H
#define JET_DLQ_FILTER_H

#include <glib.h>

typedef struct JetDlqFilter JetDlqFilter;

JetDlqFilter *jet_dlq_filter_new(void);
void jet_dlq_filter_free(JetDlqFilter *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetDlqFilter, jet_dlq_filter_free)

/* Adds one alternative for a field.  Fields and what their value is:
 *   cause     a cause name (rejected, poison, ...): refused when unknown
 *   origin    the origin stream's name, exactly
 *   consumer  the origin consumer's name, exactly
 *   subject   a subject pattern ('*' one token, a final '>' the rest)
 *   binding   the binding's name, exactly
 *   plugin    the plugin's declared name, exactly
 *   host      the host's name, exactly
 *   reason    text the reason contains, ASCII case ignored
 * FALSE with an error naming the field and why for an unknown field or a
 * value that can never match (an empty one, a malformed pattern). */
gboolean jet_dlq_filter_add(JetDlqFilter *f, const char *field, const char *value, GError **error);

/* The same from "FIELD=VALUE". */
gboolean jet_dlq_filter_add_expr(JetDlqFilter *f, const char *expr, GError **error);

/* The range's ends, inclusive: a DLQ sequence ("1500"), a time in RFC 3339
 * ("2026-11-30T02:00:00Z"; a time without a zone is UTC), or a duration
 * before now_ns ("90m", "2h", "1d": duration.h).  A time is compared with
 * the time the server stored the record, which no publisher can forge. */
gboolean jet_dlq_filter_set_from(JetDlqFilter *f, const char *text, gint64 now_ns, GError **error);
gboolean jet_dlq_filter_set_until(JetDlqFilter *f, const char *text, gint64 now_ns, GError **error);

/* FALSE, saying why, when --from and --until are of one kind (both
 * sequences, or both times) and from comes after until: a range no record
 * can match, which is a usage error, not an empty answer. */
gboolean jet_dlq_filter_check_range(const JetDlqFilter *f, GError **error);

/* At most this many matching records (0: no limit). */
void jet_dlq_filter_set_limit(JetDlqFilter *f, guint64 limit);
guint64 jet_dlq_filter_limit(const JetDlqFilter *f);

/* TRUE when nothing narrows the selection: every record matches. */
gboolean jet_dlq_filter_is_everything(const JetDlqFilter *f);

/* Where reading starts: *seq (> 0) or *time_ns (> 0), or both 0 for the
 * first record. */
void jet_dlq_filter_start(const JetDlqFilter *f, guint64 *seq, gint64 *time_ns);

/* Whether a record past this one can still match: FALSE once seq or
 * stored_ns is beyond `until` (records are read in sequence order, and
 * the server stamps them in that order). */
gboolean jet_dlq_filter_before_end(const JetDlqFilter *f, guint64 seq, gint64 stored_ns);

/* Whether seq is within the range's sequence ends (its time ends are not
 * looked at). */
gboolean jet_dlq_filter_seq_in_range(const JetDlqFilter *f, guint64 seq);

/* Whether the record matches the range and every field test.  headers:
 * name and value alternating, as jet_hdr_parse gives them (the first
 * occurrence of a name counts). */
gboolean jet_dlq_filter_matches(const JetDlqFilter *f, guint64 seq, gint64 stored_ns, const GPtrArray *headers);

/* The selection as text for a confirmation prompt or a summary
 * ("cause=rejected subject=orders.* from=1500"); "every record" when
 * empty.  Caller frees. */
char *jet_dlq_filter_describe(const JetDlqFilter *f);

/* The cause names a record can carry, NULL-terminated (static). */
const char *const *jet_dlq_cause_names(void);

#endif
