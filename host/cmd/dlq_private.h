/* What the parts of `jethost dlq` share (docs/dead-letters.md, "jethost
 * dlq" and "On call"): the command's state, a record read by sequence, and
 * the outputs.  dlq_cli.c parses the command line; dlq_view.c lists, shows
 * and counts; dlq_bulk.c replays and removes. */
#ifndef JET_DLQ_PRIVATE_H
#define JET_DLQ_PRIVATE_H

#include "conn.h"
#include "dlq_filter.h"
#include "hdr_block.h"
#include "stream_msg.h"

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>

#define JET_DLQ_REQUEST_TIMEOUT_MS 5000

typedef enum {
    JET_DLQ_OUT_AUTO,    /* a table on a terminal, tab-separated otherwise */
    JET_DLQ_OUT_TABLE,
    JET_DLQ_OUT_TSV,
    JET_DLQ_OUT_JSON,
} JetDlqOut;

typedef enum {
    JET_DLQ_PAYLOAD_NONE,   /* show: the size only */
    JET_DLQ_PAYLOAD_AUTO,   /* text when it is text, else hex */
    JET_DLQ_PAYLOAD_TEXT,
    JET_DLQ_PAYLOAD_HEX,
} JetDlqPayload;

typedef struct {
    FILE *out, *err;
    JetDlqOut format;          /* AUTO resolved before a command runs */
    char *stream;              /* the DLQ stream */
    JetConn *conn;
    JetDlqFilter *filter;
    GArray *seqs;              /* guint64: the SEQ arguments, ranges expanded, sorted, unique */

    /* show */
    JetDlqPayload payload;
    /* stats */
    guint top;
    /* replay, rm, purge */
    const char *to;            /* --to, checked for literalness; NULL: each record's origin */
    int to_captured;           /* -1 not asked yet, 0 no stream captures it, 1 one does */
    GHashTable *origins;       /* origin stream -> its subjects (GStrv), or NULL when absent */
    double rate;               /* replays a second; 0: no limit */
    gboolean dry_run, remove, again, yes, all, verbose;
} JetDlq;

/* A record as stored, with its header block parsed. */
typedef struct {
    JetStoredMsg *m;
    JetHdrParse p;
} JetDlqRec;

void jet_dlq_rec_clear(JetDlqRec *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(JetDlqRec, jet_dlq_rec_clear)

/* 0 found, 1 no record at that sequence (removed), -1 error (reported). */
int jet_dlq_get(JetDlq *d, guint64 seq, JetDlqRec *r);
const char *jet_dlq_rec_hdr(const JetDlqRec *r, const char *name);

/* A field of a text line: "-" for unknown, escaped otherwise.  Caller frees. */
char *jet_dlq_field(const char *s);
void jet_dlq_print_json(JetDlq *d, JsonBuilder *b);

/* The commands; each returns an exit code. */
int jet_dlq_cmd_list(JetDlq *d);
int jet_dlq_cmd_show(JetDlq *d, guint64 seq);
int jet_dlq_cmd_stats(JetDlq *d);
int jet_dlq_cmd_replay(JetDlq *d);
int jet_dlq_cmd_rm(JetDlq *d);
int jet_dlq_cmd_purge(JetDlq *d);

/* The DLQ sequences the selection names, in order: d->seqs when given (and
 * then only those that match the filter's range), else those the filter
 * matches, read with an ordered consumer.  NULL after reporting an error.
 * Field tests on given SEQs are applied when each record is read
 * (jet_dlq_filter_matches). */
GArray *jet_dlq_select(JetDlq *d);

#endif
