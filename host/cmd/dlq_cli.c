/* jethost dlq list|show|replay: the DLQ stream read record by record by
 * sequence (no consumer is created), each record's header block read by the
 * host's own parser, and records republished only where a stream of the
 * operator's captures them (replay.h has the rules that need no server). */
#include "dlq_cli.h"

#include "capture.h"
#include "cmd_common.h"
#include "errors.h"
#include "exit_codes.h"
#include "hdr_block.h"
#include "json_out.h"
#include "nats_raw.h"
#include "replay.h"
#include "stream_msg.h"

#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#define REQUEST_TIMEOUT_MS 5000

typedef struct {
    FILE *out, *err;
    gboolean json;
    char *stream;
    JetConn *conn;
    const char *to;        /* --to, checked for literalness; NULL: each record's origin */
    int to_captured;       /* -1 not asked yet, 0 no stream captures it, 1 one does */
} Dlq;

/* A record as stored, with its header block parsed. */
typedef struct {
    JetStoredMsg *m;
    JetHdrParse p;
} Record;

static void record_clear(Record *r)
{
    g_clear_pointer(&r->m, jet_stored_msg_free);
    jet_hdr_parse_clear(&r->p);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Record, record_clear)

static const char *rec_hdr(const Record *r, const char *name)
{
    return jet_hdr_get(r->p.headers, name);
}

static const void *bytes_data(GBytes *b, gsize *len)
{
    *len = 0;
    return b != NULL ? g_bytes_get_data(b, len) : NULL;
}

/* A field of a text line: "-" for unknown, escaped otherwise. */
static char *field(const char *s)
{
    return s != NULL && *s ? jet_text_escape(s, strlen(s), FALSE) : g_strdup("-");
}

/* 0 found, 1 no record at that sequence (deleted), -1 error (reported). */
static int get_record(Dlq *d, guint64 seq, Record *r)
{
    g_autoptr(GError) e = NULL;
    JetStoredStatus st = jet_stream_msg_get(jet_conn_nats(d->conn), d->stream, seq, REQUEST_TIMEOUT_MS, &r->m, &e);
    if (st == JET_STORED_ABSENT)
        return 1;
    if (st == JET_STORED_ERROR) {
        fprintf(d->err, "jethost dlq: %s\n", e->message);
        return -1;
    }
    gsize len = 0;
    const char *block = bytes_data(r->m->hdrs, &len);
    /* A block with defects (a forged record, a damaged one) is still
     * read: show names the defects, and what parsed is shown and
     * replayed. */
    jet_hdr_parse(block, len, &r->p);
    return 0;
}

/* The value as a JSON integer when it is a plain decimal number, else null. */
static void json_uint_or_null(JsonBuilder *b, const char *key, const char *value)
{
    guint64 v = 0;
    json_builder_set_member_name(b, key);
    if (value != NULL && g_ascii_string_to_unsigned(value, 10, 0, G_MAXINT64, &v, NULL))
        json_builder_add_int_value(b, (gint64)v);
    else
        json_builder_add_null_value(b);
}

static void print_json(Dlq *d, JsonBuilder *b)
{
    g_autofree char *line = jet_json_line(b);
    fprintf(d->out, "%s\n", line);
}

static void print_summary(Dlq *d, const Record *r, guint64 seq)
{
    const char *stream = rec_hdr(r, JET_HDR_ORIGIN_STREAM), *oseq = rec_hdr(r, JET_HDR_ORIGIN_SEQ);
    if (d->json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        jet_json_add_bytes(b, "dlq_stream", d->stream, -1);
        json_builder_set_member_name(b, "dlq_seq");
        json_builder_add_int_value(b, (gint64)seq);
        jet_json_add_bytes(b, "origin_stream", stream, -1);
        json_uint_or_null(b, "origin_seq", oseq);
        jet_json_add_bytes(b, "subject", rec_hdr(r, JET_HDR_ORIGIN_SUBJECT), -1);
        jet_json_add_bytes(b, "consumer", rec_hdr(r, JET_HDR_ORIGIN_CONSUMER), -1);
        jet_json_add_bytes(b, "binding", rec_hdr(r, JET_HDR_BINDING), -1);
        jet_json_add_bytes(b, "cause", rec_hdr(r, JET_HDR_CAUSE), -1);
        jet_json_add_bytes(b, "reason", rec_hdr(r, JET_HDR_REASON), -1);
        json_uint_or_null(b, "deliveries", rec_hdr(r, JET_HDR_DELIVERIES));
        jet_json_add_bytes(b, "captured", rec_hdr(r, JET_HDR_CAPTURED), -1);
        jet_json_add_bytes(b, "dropped_headers", rec_hdr(r, JET_HDR_DROPPED_HEADERS), -1);
        json_builder_end_object(b);
        print_json(d, b);
        return;
    }
    g_autofree char *f_stream = field(stream), *f_oseq = field(oseq);
    g_autofree char *f_subject = field(rec_hdr(r, JET_HDR_ORIGIN_SUBJECT));
    g_autofree char *f_cause = field(rec_hdr(r, JET_HDR_CAUSE));
    g_autofree char *f_captured = field(rec_hdr(r, JET_HDR_CAPTURED));
    g_autofree char *f_reason = field(rec_hdr(r, JET_HDR_REASON));
    fprintf(d->out, "%" G_GUINT64_FORMAT "\t%s:%s\t%s\t%s\t%s\t%s\n", seq, f_stream, f_oseq, f_subject, f_cause,
            f_captured, f_reason);
}

static int cmd_list(Dlq *d)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, jet_conn_js(d->conn), d->stream, NULL, &jerr);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        fprintf(d->err, "jethost dlq: stream %s: %s\n", d->stream, why);
        return JET_EXIT_FAILURE;
    }
    guint64 first = si->State.FirstSeq, last = si->State.LastSeq, msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    int rc = JET_EXIT_OK;
    for (guint64 seq = first; msgs > 0 && seq <= last && seq > 0; seq++) {
        g_auto(Record) r = { 0 };
        int got = get_record(d, seq, &r);
        if (got < 0) {
            rc = JET_EXIT_FAILURE;
            break;
        }
        if (got == 0)
            print_summary(d, &r, seq);
    }
    fflush(d->out);
    return rc;
}

static gboolean parse_seq(Dlq *d, const char *arg, guint64 *seq)
{
    guint64 v = 0;
    if (!g_ascii_string_to_unsigned(arg, 10, 1, G_MAXUINT64, &v, NULL)) {
        g_autofree char *e = jet_text_escape(arg, strlen(arg), FALSE);
        fprintf(d->err, "jethost dlq: '%s' is not a sequence number\n", e);
        return FALSE;
    }
    *seq = v;
    return TRUE;
}

static void show_json(Dlq *d, const Record *r, guint64 seq)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    jet_json_add_bytes(b, "dlq_stream", d->stream, -1);
    json_builder_set_member_name(b, "dlq_seq");
    json_builder_add_int_value(b, (gint64)seq);
    jet_json_add_bytes(b, "dlq_subject", r->m->subject, -1);
    if (r->m->time_ns != 0) {
        g_autofree char *when = jet_time_format_ns(r->m->time_ns);
        jet_json_add_bytes(b, "stored", when, -1);
    }
    json_builder_set_member_name(b, "headers");
    json_builder_begin_array(b);
    for (guint i = 0; i + 1 < r->p.headers->len; i += 2) {
        json_builder_begin_object(b);
        jet_json_add_bytes(b, "name", g_ptr_array_index(r->p.headers, i), -1);
        jet_json_add_bytes(b, "value", g_ptr_array_index(r->p.headers, i + 1), -1);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "header_defects");
    json_builder_begin_array(b);
    for (guint i = 0; i < r->p.defects->len; i++) {
        g_autofree char *text = jet_hdr_defect_describe(&g_array_index(r->p.defects, JetHdrDefect, i));
        json_builder_add_string_value(b, text);   /* ASCII: jet_hdr_escape'd */
    }
    json_builder_end_array(b);
    gsize len = 0;
    const char *data = bytes_data(r->m->data, &len);
    jet_json_add_bytes(b, "data", data != NULL ? data : "", (gssize)len);
    json_builder_end_object(b);
    print_json(d, b);
}

static void show_text(Dlq *d, const Record *r, guint64 seq)
{
    g_autofree char *when = jet_time_format_ns(r->m->time_ns);
    g_autofree char *subject = field(r->m->subject);
    fprintf(d->out, "Record: %s:%" G_GUINT64_FORMAT "\nSubject: %s\nStored: %s\n", d->stream, seq, subject, when);
    for (guint i = 0; i < r->p.defects->len; i++) {
        g_autofree char *text = jet_hdr_defect_describe(&g_array_index(r->p.defects, JetHdrDefect, i));
        fprintf(d->out, "Unreadable: %s\n", text);
    }
    fprintf(d->out, "\n");
    for (guint i = 0; i + 1 < r->p.headers->len; i += 2) {
        const char *v = g_ptr_array_index(r->p.headers, i + 1);
        g_autofree char *value = jet_text_escape(v, strlen(v), FALSE);
        fprintf(d->out, "%s: %s\n", (const char *)g_ptr_array_index(r->p.headers, i), value);
    }
    fprintf(d->out, "\n");
    gsize len = 0;
    const char *data = bytes_data(r->m->data, &len);
    g_autofree char *payload = jet_text_escape(data != NULL ? data : "", len, TRUE);
    fprintf(d->out, "%s\n", payload);
}

static int cmd_show(Dlq *d, guint64 seq)
{
    g_auto(Record) r = { 0 };
    int got = get_record(d, seq, &r);
    if (got != 0) {
        if (got > 0)
            fprintf(d->err, "jethost dlq: no record %s:%" G_GUINT64_FORMAT "\n", d->stream, seq);
        return JET_EXIT_FAILURE;
    }
    if (d->json)
        show_json(d, &r, seq);
    else
        show_text(d, &r, seq);
    fflush(d->out);
    return JET_EXIT_OK;
}

/* --- replay ---------------------------------------------------------------- */

typedef enum {
    TARGET_OK,
    TARGET_REFUSED,   /* the record may not go there: reason set */
    TARGET_ERROR,     /* the server could not be asked: reason set */
} TargetCheck;

/* Whether some stream captures subject: <API prefix>.STREAM.NAMES filtered by
 * it (the server matches the stream's patterns). */
static TargetCheck any_stream_captures(Dlq *d, const char *subject, char **reason)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "subject");
    json_builder_add_string_value(b, subject);
    json_builder_end_object(b);
    g_autofree char *body = jet_json_line(b);
    natsMsg *reply = NULL;
    g_autofree char *api = g_strdup_printf("%s.STREAM.NAMES", jet_conn_api_prefix(d->conn));
    natsStatus s = natsConnection_Request(&reply, jet_conn_nats(d->conn), api, body, (int)strlen(body),
                                          REQUEST_TIMEOUT_MS);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        *reason = g_strdup_printf("asking which stream captures %s: %s", subject, why);
        return TARGET_ERROR;
    }
    g_autoptr(JsonParser) p = json_parser_new();
    gboolean parsed = json_parser_load_from_data(p, natsMsg_GetData(reply), natsMsg_GetDataLength(reply), NULL);
    natsMsg_Destroy(reply);
    JsonNode *root = parsed ? json_parser_get_root(p) : NULL;
    JsonObject *o = root != NULL && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    if (o == NULL || json_object_has_member(o, "error")) {
        *reason = g_strdup_printf("asking which stream captures %s: the server %s", subject,
                                  o == NULL ? "sent no JSON" : "refused");
        return TARGET_ERROR;
    }
    JsonNode *n = json_object_get_member(o, "streams");
    if (n == NULL || !JSON_NODE_HOLDS_ARRAY(n) || json_array_get_length(json_node_get_array(n)) == 0) {
        *reason = g_strdup_printf("no stream captures %s", subject);
        return TARGET_REFUSED;
    }
    return TARGET_OK;
}

/* The record's own target: its origin subject, if its origin stream (as it
 * is now) captures it. */
static TargetCheck origin_target(Dlq *d, const Record *r, char **reason)
{
    const char *subject = rec_hdr(r, JET_HDR_ORIGIN_SUBJECT);
    const char *stream = rec_hdr(r, JET_HDR_ORIGIN_STREAM);
    const char *why = jet_subject_refusal(subject);
    if (why != NULL) {
        g_autofree char *e = jet_text_escape(subject, strlen(subject), FALSE);
        *reason = g_strdup_printf("origin subject \"%s\" %s", e, why);
        return TARGET_REFUSED;
    }
    if (stream == NULL) {
        *reason = g_strdup("no " JET_HDR_ORIGIN_STREAM " header: give --to SUBJECT");
        return TARGET_REFUSED;
    }
    if ((why = jet_stream_name_refusal(stream)) != NULL) {
        g_autofree char *e = jet_text_escape(stream, strlen(stream), FALSE);
        *reason = g_strdup_printf("origin stream \"%s\" %s", e, why);
        return TARGET_REFUSED;
    }
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, jet_conn_js(d->conn), stream, NULL, &jerr);
    if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
        *reason = g_strdup_printf("origin stream %s does not exist (give --to SUBJECT)", stream);
        return TARGET_REFUSED;
    }
    if (s != NATS_OK) {
        g_autofree char *e = jet_nats_error(s);
        *reason = g_strdup_printf("origin stream %s: %s", stream, e);
        return TARGET_ERROR;
    }
    const jsStreamConfig *sc = si->Config;
    gboolean ok = sc != NULL && jet_replay_captured_by(sc->Subjects, (gsize)sc->SubjectsLen, subject);
    if (!ok) {
        g_autoptr(GString) list = g_string_new(NULL);
        for (int i = 0; sc != NULL && i < sc->SubjectsLen; i++)
            g_string_append_printf(list, "%s%s", i ? ", " : "", sc->Subjects[i]);
        *reason = g_strdup_printf("origin stream %s does not capture %s (its subjects: %s; give --to SUBJECT)",
                                  stream, subject, list->len ? list->str : "none");
    }
    jsStreamInfo_Destroy(si);
    return ok ? TARGET_OK : TARGET_REFUSED;
}

static TargetCheck to_target(Dlq *d, char **reason)
{
    if (d->to_captured < 0) {
        g_autofree char *why = NULL;
        TargetCheck t = any_stream_captures(d, d->to, &why);
        if (t == TARGET_ERROR) {
            *reason = g_steal_pointer(&why);
            return t;   /* asked again for the next record */
        }
        d->to_captured = t == TARGET_OK;
    }
    if (!d->to_captured) {
        *reason = g_strdup_printf("--to %s: no stream captures it", d->to);
        return TARGET_REFUSED;
    }
    return TARGET_OK;
}

static void print_replayed(Dlq *d, guint64 seq, const char *subject, const jsPubAck *pa, const char *msg_id)
{
    if (d->json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        jet_json_add_bytes(b, "dlq_stream", d->stream, -1);
        json_builder_set_member_name(b, "dlq_seq");
        json_builder_add_int_value(b, (gint64)seq);
        jet_json_add_bytes(b, "subject", subject, -1);
        jet_json_add_pub_ack(b, pa->Stream, pa->Sequence, pa->Duplicate);
        jet_json_add_bytes(b, "msg_id", msg_id, -1);
        json_builder_end_object(b);
        print_json(d, b);
    } else {
        g_autofree char *stream = field(pa->Stream);
        fprintf(d->out, "%s:%" G_GUINT64_FORMAT " -> %s: stream %s seq %" PRIu64 "%s\n", d->stream, seq, subject,
                stream, pa->Sequence, pa->Duplicate ? " (duplicate)" : "");
    }
}

static int replay_one(Dlq *d, guint64 seq)
{
    g_auto(Record) r = { 0 };
    int got = get_record(d, seq, &r);
    if (got != 0) {
        if (got > 0)
            fprintf(d->err, "jethost dlq: no record %s:%" G_GUINT64_FORMAT "\n", d->stream, seq);
        return JET_EXIT_FAILURE;
    }
    if (rec_hdr(&r, JET_HDR_ORIGIN_SUBJECT) == NULL) {
        fprintf(d->err, "jethost dlq: %s:%" G_GUINT64_FORMAT ": refused: no " JET_HDR_ORIGIN_SUBJECT
                        " header: not a jethost capture\n", d->stream, seq);
        return JET_EXIT_FAILURE;
    }
    g_autofree char *reason = NULL;
    TargetCheck t = d->to != NULL ? to_target(d, &reason) : origin_target(d, &r, &reason);
    if (t != TARGET_OK) {
        fprintf(d->err, "jethost dlq: %s:%" G_GUINT64_FORMAT ": %s%s\n", d->stream, seq,
                t == TARGET_REFUSED ? "refused: " : "", reason);
        return JET_EXIT_FAILURE;
    }
    const char *subject = d->to != NULL ? d->to : rec_hdr(&r, JET_HDR_ORIGIN_SUBJECT);

    g_autoptr(GPtrArray) headers = jet_replay_headers(r.p.headers, d->stream, seq, g_get_real_time() * 1000);
    const char *msg_id = g_ptr_array_index(headers, 1);
    g_autoptr(GError) e = NULL;
    gsize block_len = 0;
    g_autofree char *block = jet_hdr_write(headers, &block_len, &e);
    gsize len = 0;
    const char *data = bytes_data(r.m->data, &len);
    if (block == NULL && e != NULL) {
        fprintf(d->err, "jethost dlq: %s:%" G_GUINT64_FORMAT ": building the replay: %s\n", d->stream, seq,
                e->message);
        return JET_EXIT_FAILURE;
    }
    jsPubAck *pa = NULL;
    if (!jet_js_publish_raw(jet_conn_js(d->conn), subject, block, block_len, data, len, &pa, &e)) {
        fprintf(d->err, "jethost dlq: %s:%" G_GUINT64_FORMAT ": replay to %s: %s\n", d->stream, seq, subject,
                e->message);
        return JET_EXIT_FAILURE;
    }
    print_replayed(d, seq, subject, pa, msg_id);
    jsPubAck_Destroy(pa);
    fflush(d->out);
    return JET_EXIT_OK;
}

/* --- the command ----------------------------------------------------------- */

#define USAGE "usage: jethost dlq [-s URL | -c FILE [-d DIR]] [--stream NAME] [--json] " \
              "list | show SEQ | replay [--to SUBJECT] SEQ..."

int jet_dlq_cli_run(int argc, char **argv, FILE *out, FILE *err)
{
    g_auto(JetCmdConnOptions) co = { 0 };
    g_autofree char *stream = NULL;
    g_autofree char *to = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "stream", 0, 0, G_OPTION_ARG_STRING, &stream, "the DLQ stream (default: the config's first binding's, or " JET_DLQ_DEFAULT_STREAM ")", "NAME" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "one JSON object a line", NULL },
        /* FILENAME: the bytes as given, judged by jet_subject_refusal. */
        { "to", 0, 0, G_OPTION_ARG_FILENAME, &to, "replay: publish to this subject (a stream must capture it) instead of each record's origin", "SUBJECT" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("list | show SEQ | replay SEQ... - dead-letter records");
    jet_cmd_conn_add_options(ctx, &co, "take the server and DLQ stream from this config");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) e = NULL;
    /* Parse a copy: GOption rearranges argv. */
    g_autofree char **args = g_new0(char *, (gsize)argc + 1);
    for (int i = 0; i < argc; i++)
        args[i] = argv[i];
    int n = argc;
    char **a = args;
    if (!g_option_context_parse(ctx, &n, &a, &e)) {
        fprintf(err, "jethost dlq: %s\n", e->message);
        return JET_EXIT_USAGE;
    }
    if (n < 2) {
        fprintf(err, "jethost dlq: give list, show SEQ or replay SEQ...\n");
        return JET_EXIT_USAGE;
    }
    const char *cmd = a[1];
    gboolean is_list = strcmp(cmd, "list") == 0, is_show = strcmp(cmd, "show") == 0,
             is_replay = strcmp(cmd, "replay") == 0;
    if ((!is_list && !is_show && !is_replay) || (is_list && n != 2) || (is_show && n != 3) || (is_replay && n < 3)) {
        fprintf(err, "jethost dlq: " USAGE "\n");
        return JET_EXIT_USAGE;
    }
    if (to != NULL && !is_replay) {
        fprintf(err, "jethost dlq: --to is for replay only\n");
        return JET_EXIT_USAGE;
    }
    const char *why = to != NULL ? jet_subject_refusal(to) : NULL;
    if (why != NULL) {
        g_autofree char *esc = jet_text_escape(to, strlen(to), FALSE);
        fprintf(err, "jethost dlq: --to \"%s\" %s\n", esc, why);
        return JET_EXIT_USAGE;
    }
    Dlq d = { out, err, json, NULL, NULL, to, -1 };
    g_autoptr(GArray) seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (int i = 2; i < n; i++) {
        guint64 seq = 0;
        if (!parse_seq(&d, a[i], &seq))
            return JET_EXIT_USAGE;
        g_array_append_val(seqs, seq);
    }

    g_autoptr(JetConfig) cfg = NULL;
    int rc = jet_cmd_conn_load("dlq", &co, err, &cfg);
    if (rc != JET_EXIT_OK)
        return rc;
    g_autofree char *dlq_stream = NULL;
    if (stream != NULL)
        dlq_stream = g_strdup(stream);
    else if (cfg != NULL && cfg->bindings->len > 0)
        dlq_stream = g_strdup(((const JetBindingConfig *)g_ptr_array_index(cfg->bindings, 0))->dlq_stream);
    else
        dlq_stream = g_strdup(JET_DLQ_DEFAULT_STREAM);
    if ((why = jet_stream_name_refusal(dlq_stream)) != NULL) {
        g_autofree char *esc = jet_text_escape(dlq_stream, strlen(dlq_stream), FALSE);
        fprintf(err, "jethost dlq: stream name \"%s\" %s\n", esc, why);
        return stream != NULL ? JET_EXIT_USAGE : JET_EXIT_CONFIG;
    }
    d.stream = dlq_stream;

    d.conn = jet_cmd_conn_open("dlq", cfg, &co, err);
    if (d.conn == NULL)
        return JET_EXIT_FAILURE;
    if (is_list) {
        rc = cmd_list(&d);
    } else if (is_show) {
        rc = cmd_show(&d, g_array_index(seqs, guint64, 0));
    } else {
        for (guint i = 0; i < seqs->len; i++)
            if (replay_one(&d, g_array_index(seqs, guint64, i)) != JET_EXIT_OK)
                rc = JET_EXIT_FAILURE;   /* the others are still tried */
    }
    jet_cmd_conn_close(d.conn);
    fflush(out);
    fflush(err);
    return rc;
}

int jet_dlq_cli_main(int argc, char **argv)
{
    return jet_dlq_cli_run(argc, argv, stdout, stderr);
}
