/* `jethost sub` (docs/cli.md, "sub"): a core subscription on a subject, or
 * a read of a stream from a point to its end, each message printed with its
 * header block as the server sent it (parsed by the host's own parser) and
 * its payload, as text or as JSON lines with the escaping of `dlq list
 * --json`.  A stream is read through the DLQ reader's ordered consumer
 * (ephemeral, no acks, deleted when the read ends): nothing is left on the
 * server. */
#include "sub.h"
#include "cmd_common.h"
#include "dlq_filter.h"
#include "dlq_reader.h"
#include "exit_codes.h"
#include "hdr_block.h"
#include "json_out.h"
#include "names.h"
#include "nats_raw.h"
#include "provenance.h"
#include "sub_end.h"
#include "stream_info.h"

#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* One message as printed: stream and seq only for a stream read. */
typedef struct {
    const char *stream;       /* NULL: a core message */
    guint64 seq;
    gint64 stored_ns;
    const char *subject;
    const GPtrArray *headers; /* name and value alternating, block order */
    const GArray *defects;    /* JetHdrDefect */
    const char *data;
    gsize len;
} SubMsg;

typedef struct {
    gboolean json;
    guint64 printed;
    guint64 count;            /* 0: no limit */
} SubOut;

static void print_json(const SubMsg *m)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    if (m->stream != NULL) {
        jet_json_add_bytes(b, "stream", m->stream, -1);
        json_builder_set_member_name(b, "seq");
        json_builder_add_int_value(b, (gint64)m->seq);
        g_autofree char *stored = jet_time_format_ns(m->stored_ns);
        jet_json_add_bytes(b, "stored", stored, -1);
    }
    jet_json_add_bytes(b, "subject", m->subject, -1);
    json_builder_set_member_name(b, "headers");
    json_builder_begin_array(b);
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2) {
        json_builder_begin_object(b);
        jet_json_add_bytes(b, "name", g_ptr_array_index(m->headers, i), -1);
        jet_json_add_bytes(b, "value", g_ptr_array_index(m->headers, i + 1), -1);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "header_defects");
    json_builder_begin_array(b);
    for (guint i = 0; m->defects != NULL && i < m->defects->len; i++) {
        g_autofree char *text = jet_hdr_defect_describe(&g_array_index(m->defects, JetHdrDefect, i));
        json_builder_add_string_value(b, text);
    }
    json_builder_end_array(b);
    jet_json_add_bytes(b, "data", m->data, (gssize)m->len);
    json_builder_end_object(b);
    g_autofree char *line = jet_json_line(b);
    printf("%s\n", line);
}

/* "SUBJECT" or "STREAM:SEQ SUBJECT STORED", the headers indented, the
 * payload escaped (line breaks kept), then a blank line. */
static void print_text(const SubMsg *m)
{
    g_autofree char *subject = jet_text_escape(m->subject, strlen(m->subject), FALSE);
    if (m->stream != NULL) {
        g_autofree char *stored = jet_time_format_ns(m->stored_ns);
        printf("%s:%" G_GUINT64_FORMAT " %s %s\n", m->stream, m->seq, subject, stored);
    } else {
        printf("%s\n", subject);
    }
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2) {
        const char *v = g_ptr_array_index(m->headers, i + 1);
        g_autofree char *value = jet_text_escape(v, strlen(v), FALSE);
        printf("  %s: %s\n", (const char *)g_ptr_array_index(m->headers, i), value);
    }
    for (guint i = 0; m->defects != NULL && i < m->defects->len; i++) {
        g_autofree char *text = jet_hdr_defect_describe(&g_array_index(m->defects, JetHdrDefect, i));
        printf("  (unreadable header line: %s)\n", text);
    }
    g_autofree char *payload = jet_text_escape(m->data, m->len, TRUE);
    printf("%s\n\n", payload);
}

/* FALSE once --count messages are out. */
static gboolean print_msg(SubOut *o, const SubMsg *m)
{
    if (o->json)
        print_json(m);
    else
        print_text(m);
    fflush(stdout);
    o->printed++;
    return o->count == 0 || o->printed < o->count;
}

/* --- a stream -------------------------------------------------------------- */

static gboolean stream_record(const JetDlqRecord *r, gpointer data)
{
    void **ctx = data;
    SubOut *o = ctx[0];
    const char *stream = ctx[1];
    SubMsg m = { stream, r->seq, r->stored_ns, r->subject, r->headers, r->defects, r->data != NULL ? r->data : "",
                 r->len };
    return print_msg(o, &m);
}

static int read_stream(JetConn *conn, const char *stream, const char *from, gint last, SubOut *o)
{
    JetDlqReadOptions ro = { 0 };
    g_autoptr(GError) err = NULL;
    if (from != NULL) {
        g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
        if (!jet_dlq_filter_set_from(f, from, g_get_real_time() * 1000, &err)) {
            fprintf(stderr, "jethost sub: %s\n", err->message);
            return JET_EXIT_USAGE;
        }
        jet_dlq_filter_start(f, &ro.start_seq, &ro.start_time_ns);
    }
    if (last > 0) {
        jsStreamInfo *si = NULL;
        natsStatus s = jet_stream_info_led(&si, jet_conn_js(conn), stream, 5000, NULL, NULL);
        if (s != NATS_OK) {
            fprintf(stderr, "jethost sub: stream %s: %s\n", stream,
                    s == NATS_NOT_FOUND ? "does not exist"
                    : s == NATS_TIMEOUT ? "no leader answered in 5 s (an election?)" : natsStatus_GetText(s));
            return JET_EXIT_FAILURE;
        }
        guint64 first = si->State.FirstSeq, lastseq = si->State.LastSeq;
        jsStreamInfo_Destroy(si);
        if (lastseq == 0 || lastseq < first)
            return JET_EXIT_OK;   /* empty */
        ro.start_seq = lastseq >= (guint64)last ? MAX(first, lastseq - (guint64)last + 1) : first;
    }
    void *ctx[] = { o, (void *)stream };
    JetDlqReadStats st;
    if (!jet_dlq_read(conn, stream, &ro, stream_record, ctx, &st, &err)) {
        fprintf(stderr, "jethost sub: stream %s: %s\n", stream, err->message);
        return JET_EXIT_FAILURE;
    }
    return JET_EXIT_OK;
}

/* --- a subject ------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int read_subject(JetConn *conn, const char *subject, SubOut *o)
{
    natsSubscription *sub = NULL;
    natsStatus s = natsConnection_SubscribeSync(&sub, jet_conn_nats(conn), subject);
    if (s == NATS_OK)
        s = natsSubscription_SetPendingLimits(sub, -1, -1);
    if (s == NATS_OK)
        s = natsConnection_Flush(jet_conn_nats(conn));
    if (s != NATS_OK) {
        fprintf(stderr, "jethost sub: subscribe to %s: %s\n", subject, natsStatus_GetText(s));
        jet_sub_end_destroy(jet_conn_nats(conn), sub);
        return JET_EXIT_FAILURE;
    }
    struct sigaction sa = { 0 };
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    fprintf(stderr, "jethost sub: listening on %s%s\n", subject,
            o->count > 0 ? "" : " (Ctrl-C stops)");
    int rc = JET_EXIT_OK;
    while (!interrupted) {
        natsMsg *m = NULL;
        s = natsSubscription_NextMsg(&m, sub, 200);
        if (s == NATS_TIMEOUT)
            continue;
        if (s != NATS_OK) {
            fprintf(stderr, "jethost sub: %s: %s\n", subject, natsStatus_GetText(s));
            rc = JET_EXIT_FAILURE;
            break;
        }
        g_autofree char *block = NULL;
        gsize block_len = 0;
        g_auto(JetHdrParse) p = { 0 };
        jet_nats_raw_headers(m, &block, &block_len);
        jet_hdr_parse(block, block_len, &p);
        int len = natsMsg_GetDataLength(m);
        const char *data = natsMsg_GetData(m);
        SubMsg sm = { NULL, 0, 0, natsMsg_GetSubject(m), p.headers, p.defects, data != NULL ? data : "",
                      (gsize)MAX(len, 0) };
        gboolean more = print_msg(o, &sm);
        natsMsg_Destroy(m);
        if (!more)
            break;
    }
    jet_sub_end_destroy(jet_conn_nats(conn), sub);
    return rc;
}

int jet_sub_main(int argc, char **argv)
{
    g_auto(JetCmdConnOptions) co = { 0 };
    g_autofree char *stream = NULL, *from = NULL;
    gint last = 0, count = 0;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        /* FILENAME: the name's bytes as given, judged by names.h. */
        { "stream", 0, 0, G_OPTION_ARG_FILENAME, &stream, "read this stream from --from (or its first message) to its end, "
          "leaving no consumer behind", "STREAM" },
        { "from", 0, 0, G_OPTION_ARG_STRING, &from, "--stream: the first message: a sequence, a time "
          "(2026-11-30T02:00:00Z) or how long ago (90m)", "SEQ|TIME|AGO" },
        { "last", 0, 0, G_OPTION_ARG_INT, &last, "--stream: only its last N messages", "N" },
        { "count", 'n', 0, G_OPTION_ARG_INT, &count, "stop after N messages", "N" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "one JSON object a line (the escaping of dlq list --json)", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("[SUBJECT] - print what a subject carries (a core "
                                                         "subscription) or what a stream holds (--stream)");
    jet_cmd_conn_add_options(ctx, &co, "take the server from this config (embedded included)");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) perr = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &perr)) {
        fprintf(stderr, "jethost: %s\n", perr->message);
        return JET_EXIT_USAGE;
    }
    if (stream != NULL ? argc != 1 : argc != 2) {
        fprintf(stderr, "jethost sub: give one SUBJECT, or --stream STREAM (not both)\n");
        return JET_EXIT_USAGE;
    }
    if (count < 0 || last < 0) {
        fprintf(stderr, "jethost sub: --count and --last take a count\n");
        return JET_EXIT_USAGE;
    }
    if (stream == NULL && (from != NULL || last > 0)) {
        fprintf(stderr, "jethost sub: --from and --last are for --stream\n");
        return JET_EXIT_USAGE;
    }
    if (from != NULL && last > 0) {
        fprintf(stderr, "jethost sub: give --from or --last, not both\n");
        return JET_EXIT_USAGE;
    }
    const char *why = NULL;
    if (stream != NULL && (why = jet_name_problem(stream)) != NULL) {
        g_autofree char *shown = jet_text_escape(stream, strlen(stream), FALSE);
        fprintf(stderr, "jethost sub: --stream \"%s\" is not a stream name: it %s\n", shown, why);
        return JET_EXIT_USAGE;
    }
    /* Any subject one may subscribe to, the server's namespaces too
     * (watching $KV.<bucket>.> is a way to see a bucket change). */
    const char *subject = stream == NULL ? argv[1] : NULL;
    if (subject != NULL && (why = jet_subject_problem(subject, JET_SUBJECT_WILDCARDS | JET_SUBJECT_RESERVED)) != NULL) {
        g_autofree char *shown = jet_text_escape(subject, strlen(subject), FALSE);
        fprintf(stderr, "jethost sub: \"%s\" is not a subject: it %s\n", shown, why);
        return JET_EXIT_USAGE;
    }
    g_autoptr(JetConfig) cfg = NULL;
    int rc = JET_EXIT_OK;
    JetConn *conn = jet_cmd_connect("sub", &co, stderr, &cfg, &rc);
    if (conn == NULL)
        return rc;
    SubOut o = { json, 0, (guint64)count };
    rc = stream != NULL ? read_stream(conn, stream, from, last, &o) : read_subject(conn, subject, &o);
    fflush(stdout);
    jet_cmd_conn_close(conn);
    return rc;
}
