/* Reading a DLQ stream from one point to its end with an ordered consumer:
 * an ephemeral pull consumer (no acks, in memory, reaped when idle) pulled
 * a batch at a time, every delivery checked to follow the one before, and
 * re-created after the last record read whenever one did not (a lost
 * delivery, a consumer the server dropped).  Each record's header block
 * reaches the caller as the server stored it, parsed by the host's own
 * parser (docs/dead-letters.md, "On call").  Nothing is acked or removed.
 *
 * One request per batch instead of one per record: how much faster, and
 * against what, is in docs/performance.md. */
#ifndef JET_DLQ_READER_H
#define JET_DLQ_READER_H

#include "conn.h"

#include <glib.h>

/* One record as read.  Everything is borrowed for the callback's duration. */
typedef struct {
    guint64 seq;                 /* its DLQ stream sequence */
    gint64 stored_ns;            /* when the server stored it */
    const char *subject;         /* the DLQ subject it was published to */
    const GPtrArray *headers;    /* name and value alternating, block order (jet_hdr_parse) */
    const GArray *defects;       /* JetHdrDefect: lines of the block that did not parse */
    const char *data;            /* the payload (NULL with headers_only) */
    gsize len;
} JetDlqRecord;

/* FALSE stops the read (a limit reached): jet_dlq_read then returns TRUE. */
typedef gboolean (*JetDlqRecordFn)(const JetDlqRecord *r, gpointer data);

typedef struct {
    guint64 start_seq;      /* > 0: the first sequence to read */
    gint64 start_time_ns;   /* > 0: the first record stored at or after this time */
    guint batch;            /* records a pull asks for; 0: 512 */
    gboolean headers_only;  /* payloads are not sent (list, stats, selection) */
} JetDlqReadOptions;

typedef struct {
    guint64 records;        /* records handed to the callback */
    guint64 pulls;          /* pull requests sent */
    guint64 restarts;       /* consumers re-created after a gap or a loss */
    guint64 last_seq;       /* the stream's last sequence when the read began */
} JetDlqReadStats;

/* Reads stream from the start the options give up to the last record it
 * held when the read began (records added later are not read), calling fn
 * for each in sequence order.  FALSE with an error when the stream cannot
 * be read (missing, the server silent) or a consumer cannot be made; the
 * records already handed over stay handed over.  stats may be NULL. */
gboolean jet_dlq_read(JetConn *conn, const char *stream, const JetDlqReadOptions *o, JetDlqRecordFn fn,
                      gpointer data, JetDlqReadStats *stats, GError **error);

#endif
