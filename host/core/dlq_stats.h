/* `jethost dlq stats`: what a set of dead-letter records adds up to, by
 * cause, origin stream, origin subject and hour, with the oldest and the
 * newest record (docs/dead-letters.md, "On call").  Pure: fed record by
 * record, printed as text or JSON. */
#ifndef JET_DLQ_STATS_H
#define JET_DLQ_STATS_H

#include <glib.h>
#include <stdio.h>

typedef struct JetDlqStats JetDlqStats;

JetDlqStats *jet_dlq_stats_new(void);
void jet_dlq_stats_free(JetDlqStats *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetDlqStats, jet_dlq_stats_free)

/* Counts one record: its DLQ sequence, the time the server stored it (the
 * hour it counts under, UTC) and its headers (name and value alternating).
 * A record without a header counts under "-" for that grouping. */
void jet_dlq_stats_add(JetDlqStats *s, guint64 seq, gint64 stored_ns, const GPtrArray *headers);

guint64 jet_dlq_stats_total(const JetDlqStats *s);
/* How many records counted under key in a grouping ("cause", "origin",
 * "subject", "hour"; an hour is written "2026-11-30T02"); 0 when none. */
guint64 jet_dlq_stats_count(const JetDlqStats *s, const char *grouping, const char *key);

/* Text: a header line with the total and the oldest and newest records,
 * then each grouping, largest count first (ties by key), hours in time
 * order; at most top rows a grouping (0: all), the rest summed in one
 * "(N more)" line.  Keys are escaped (json_out.h). */
void jet_dlq_stats_print_text(const JetDlqStats *s, const char *stream, guint top, FILE *out);

/* One JSON object: stream, total, oldest and newest ({dlq_seq, stored}),
 * and by_cause, by_origin, by_subject, by_hour as objects of counts
 * (all rows). */
void jet_dlq_stats_print_json(const JetDlqStats *s, const char *stream, FILE *out);

#endif
