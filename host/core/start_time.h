/* A start time handed to nats.c (OptStartTime of a consumer: `jethost dlq
 * --from`, `deliver = by_start_time`).  nats.c's encoder writes the
 * nanoseconds without their leading zeros (.046914512 goes out as
 * .46914512, 0.42 s late), so a consumer would start past what it should
 * deliver: the host hands over the whole second before the time, which it
 * encodes exactly, and passes over what came before the time itself
 * (docs/dead-letters.md, "On call"; docs/ordered.md, "The consumer").
 * Pure: no I/O. */
#ifndef JET_START_TIME_H
#define JET_START_TIME_H

#include <glib.h>

/* ns (Unix nanoseconds) truncated down to its whole second; 0 when that is
 * the epoch itself (nats.c would send 0 as "unset": start from the
 * beginning, which is at or before any time). */
gint64 jet_start_time_whole_second(gint64 ns);

/* Whether a message stored at stored_ns comes before the start time
 * start_ns (<= 0: none) and is to be passed over. */
gboolean jet_start_time_before(gint64 start_ns, gint64 stored_ns);

#endif
