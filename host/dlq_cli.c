/* jethost dlq list|show|replay: the DLQ stream read record by record with
 * js_GetMsg (no consumer is created), and records republished to their
 * origin subject by the rules in capture.h. */
#include "dlq_cli.h"

#include "capture.h"
#include "cli.h"
#include "config.h"
#include "conn.h"
#include "embedded.h"

#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#define ERR_NO_MESSAGE_FOUND 10037

typedef struct {
    FILE *out, *err;
    gboolean json;
    char *stream;
    JetConn *conn;
} Dlq;

static const char *hdr(natsMsg *m, const char *name)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, name, &v) != NATS_OK || v == NULL)
        return NULL;
    return v;
}

static const char *or_dash(const char *s)
{
    return s != NULL && *s ? s : "-";
}

static char *json_line(JsonBuilder *b)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) g = json_generator_new();
    json_generator_set_root(g, root);
    return json_generator_to_data(g, NULL);
}

static void json_str(JsonBuilder *b, const char *key, const char *value)
{
    json_builder_set_member_name(b, key);
    if (value != NULL)
        json_builder_add_string_value(b, value);
    else
        json_builder_add_null_value(b);
}

/* Text fields on one line: tabs and line breaks would split the columns. */
static char *one_line(const char *s)
{
    char *c = g_strdup(or_dash(s));
    for (char *p = c; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r')
            *p = ' ';
    return c;
}

/* 0 found, 1 no record at that sequence (deleted), -1 error (reported). */
static int get_record(Dlq *d, guint64 seq, natsMsg **m)
{
    jsErrCode jerr = 0;
    natsStatus s = js_GetMsg(m, jet_conn_js(d->conn), d->stream, seq, NULL, &jerr);
    if (s == NATS_OK)
        return 0;
    if (jerr == ERR_NO_MESSAGE_FOUND || s == NATS_NOT_FOUND)
        return 1;
    g_autofree char *why = jet_nats_error(s);
    fprintf(d->err, "jethost dlq: %s:%" G_GUINT64_FORMAT ": %s%s\n", d->stream, seq, why,
            jerr != 0 ? " (server error)" : "");
    return -1;
}

static void print_summary(Dlq *d, natsMsg *m, guint64 seq)
{
    const char *stream = hdr(m, JET_HDR_ORIGIN_STREAM), *oseq = hdr(m, JET_HDR_ORIGIN_SEQ);
    if (d->json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_str(b, "dlq_stream", d->stream);
        json_builder_set_member_name(b, "dlq_seq");
        json_builder_add_int_value(b, (gint64)seq);
        json_str(b, "origin_stream", stream);
        json_builder_set_member_name(b, "origin_seq");
        if (oseq != NULL)
            json_builder_add_int_value(b, g_ascii_strtoll(oseq, NULL, 10));
        else
            json_builder_add_null_value(b);
        json_str(b, "subject", hdr(m, JET_HDR_ORIGIN_SUBJECT));
        json_str(b, "consumer", hdr(m, JET_HDR_ORIGIN_CONSUMER));
        json_str(b, "binding", hdr(m, JET_HDR_BINDING));
        json_str(b, "cause", hdr(m, JET_HDR_CAUSE));
        json_str(b, "reason", hdr(m, JET_HDR_REASON));
        json_str(b, "deliveries", hdr(m, JET_HDR_DELIVERIES));
        json_str(b, "captured", hdr(m, JET_HDR_CAPTURED));
        json_str(b, "dropped_headers", hdr(m, JET_HDR_DROPPED_HEADERS));
        json_builder_end_object(b);
        g_autofree char *line = json_line(b);
        fprintf(d->out, "%s\n", line);
        return;
    }
    g_autofree char *subject = one_line(hdr(m, JET_HDR_ORIGIN_SUBJECT));
    g_autofree char *reason = one_line(hdr(m, JET_HDR_REASON));
    fprintf(d->out, "%" G_GUINT64_FORMAT "\t%s:%s\t%s\t%s\t%s\t%s\n", seq, or_dash(stream), or_dash(oseq), subject,
            or_dash(hdr(m, JET_HDR_CAUSE)), or_dash(hdr(m, JET_HDR_CAPTURED)), reason);
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
        natsMsg *m = NULL;
        int got = get_record(d, seq, &m);
        if (got < 0) {
            rc = JET_EXIT_FAILURE;
            break;
        }
        if (got > 0)
            continue;   /* deleted */
        print_summary(d, m, seq);
        natsMsg_Destroy(m);
    }
    fflush(d->out);
    return rc;
}

static gboolean parse_seq(Dlq *d, const char *arg, guint64 *seq)
{
    guint64 v = 0;
    if (!g_ascii_string_to_unsigned(arg, 10, 1, G_MAXUINT64, &v, NULL)) {
        fprintf(d->err, "jethost dlq: '%s' is not a sequence number\n", arg);
        return FALSE;
    }
    *seq = v;
    return TRUE;
}

static gint cmp_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmd_show(Dlq *d, guint64 seq)
{
    natsMsg *m = NULL;
    int got = get_record(d, seq, &m);
    if (got != 0) {
        if (got > 0)
            fprintf(d->err, "jethost dlq: no record %s:%" G_GUINT64_FORMAT "\n", d->stream, seq);
        return JET_EXIT_FAILURE;
    }
    const char **keys = NULL;
    int count = 0;
    if (natsMsgHeader_Keys(m, &keys, &count) != NATS_OK)
        count = 0;
    /* Sorted, so the output does not depend on nats.c's hash order. */
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (int i = 0; i < count; i++)
        g_ptr_array_add(names, (gpointer)keys[i]);
    g_ptr_array_sort(names, cmp_names);
    int len = natsMsg_GetDataLength(m);
    if (d->json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_str(b, "dlq_stream", d->stream);
        json_builder_set_member_name(b, "dlq_seq");
        json_builder_add_int_value(b, (gint64)seq);
        json_str(b, "dlq_subject", natsMsg_GetSubject(m));
        json_builder_set_member_name(b, "headers");
        json_builder_begin_object(b);
        for (guint i = 0; i < names->len; i++) {
            const char *k = g_ptr_array_index(names, i);
            const char **values = NULL;
            int nv = 0;
            json_builder_set_member_name(b, k);
            json_builder_begin_array(b);
            if (natsMsgHeader_Values(m, k, &values, &nv) == NATS_OK) {
                for (int j = 0; j < nv; j++)
                    json_builder_add_string_value(b, values[j]);
                free((void *)values);
            }
            json_builder_end_array(b);
        }
        json_builder_end_object(b);
        const char *data = natsMsg_GetData(m);
        if (len == 0 || g_utf8_validate(data, len, NULL)) {
            g_autofree char *text = g_strndup(data != NULL ? data : "", (gsize)len);
            json_str(b, "data", text);
        } else {
            g_autofree char *b64 = g_base64_encode((const guchar *)data, (gsize)len);
            json_str(b, "data_base64", b64);
        }
        json_builder_end_object(b);
        g_autofree char *line = json_line(b);
        fprintf(d->out, "%s\n", line);
    } else {
        g_autofree char *when = jet_time_format_ns(natsMsg_GetTime(m));
        fprintf(d->out, "Record: %s:%" G_GUINT64_FORMAT "\nSubject: %s\nStored: %s\n\n", d->stream, seq,
                natsMsg_GetSubject(m), when);
        for (guint i = 0; i < names->len; i++) {
            const char *k = g_ptr_array_index(names, i);
            const char **values = NULL;
            int nv = 0;
            if (natsMsgHeader_Values(m, k, &values, &nv) != NATS_OK)
                continue;
            for (int j = 0; j < nv; j++)
                fprintf(d->out, "%s: %s\n", k, values[j]);
            free((void *)values);
        }
        fprintf(d->out, "\n");
        if (len > 0)
            fwrite(natsMsg_GetData(m), 1, (size_t)len, d->out);
        fprintf(d->out, "\n");
    }
    free((void *)keys);
    natsMsg_Destroy(m);
    fflush(d->out);
    return JET_EXIT_OK;
}

static int replay_one(Dlq *d, guint64 seq)
{
    natsMsg *rec = NULL;
    int got = get_record(d, seq, &rec);
    if (got != 0) {
        if (got > 0)
            fprintf(d->err, "jethost dlq: no record %s:%" G_GUINT64_FORMAT "\n", d->stream, seq);
        return JET_EXIT_FAILURE;
    }
    g_autoptr(GError) err = NULL;
    g_autofree char *msg_id = NULL;
    natsMsg *m = jet_capture_replay_build(rec, d->stream, seq, g_get_real_time() * 1000, &msg_id, &err);
    g_autofree char *origin_stream = g_strdup(hdr(rec, JET_HDR_ORIGIN_STREAM));
    natsMsg_Destroy(rec);
    if (m == NULL) {
        fprintf(d->err, "jethost dlq: %s\n", err->message);
        return JET_EXIT_FAILURE;
    }
    g_autofree char *subject = g_strdup(natsMsg_GetSubject(m));
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, jet_conn_js(d->conn), m, NULL, &jerr);
    natsMsg_Destroy(m);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        fprintf(d->err, "jethost dlq: replay of %s:%" G_GUINT64_FORMAT " to %s: %s%s\n", d->stream, seq, subject, why,
                s == NATS_NO_RESPONDERS ? " (no stream captures this subject)" : "");
        return JET_EXIT_FAILURE;
    }
    if (origin_stream != NULL && g_strcmp0(origin_stream, pa->Stream) != 0)
        fprintf(d->err, "jethost dlq: note: %s:%" G_GUINT64_FORMAT " came from stream %s but %s is now stored by %s\n",
                d->stream, seq, origin_stream, subject, pa->Stream);
    if (d->json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        json_builder_begin_object(b);
        json_str(b, "dlq_stream", d->stream);
        json_builder_set_member_name(b, "dlq_seq");
        json_builder_add_int_value(b, (gint64)seq);
        json_str(b, "subject", subject);
        json_str(b, "stream", pa->Stream);
        json_builder_set_member_name(b, "seq");
        json_builder_add_int_value(b, (gint64)pa->Sequence);
        json_builder_set_member_name(b, "duplicate");
        json_builder_add_boolean_value(b, pa->Duplicate);
        json_str(b, "msg_id", msg_id);
        json_builder_end_object(b);
        g_autofree char *line = json_line(b);
        fprintf(d->out, "%s\n", line);
    } else {
        fprintf(d->out, "%s:%" G_GUINT64_FORMAT " -> %s: stream %s seq %" PRIu64 "%s\n", d->stream, seq, subject,
                pa->Stream, pa->Sequence, pa->Duplicate ? " (duplicate)" : "");
    }
    jsPubAck_Destroy(pa);
    fflush(d->out);
    return JET_EXIT_OK;
}

/* jet_conn_close() frees the JetConn while nats.c may still be about to run
 * its disconnected callback, which writes into it (ASan: heap-use-after-free
 * in conn.c on_disconnected).  Close the connection first and wait for that
 * callback to have run (it clears the connected flag first thing) before
 * freeing.  The real fix belongs in conn.c (wait for the closed callback). */
static void close_conn(JetConn *c)
{
    natsConnection *nc = jet_conn_nats(c);
    if (nc != NULL && jet_conn_is_connected(c)) {
        natsConnection_FlushTimeout(nc, 2000);
        natsConnection_Close(nc);
        for (int i = 0; i < 200 && jet_conn_is_connected(c); i++)
            g_usleep(10000);
    }
    jet_conn_close(c);
}

static char *server_url(const char *server, const JetConfig *cfg, GError **error)
{
    if (server != NULL)
        return g_strdup(server);
    if (cfg != NULL) {
        if (cfg->host.embedded)
            return jet_embedded_read_url(cfg->host.state_dir, error);
        return g_strdup(cfg->host.urls[0]);
    }
    const char *env = g_getenv("NATS_URL");
    return g_strdup(env != NULL ? env : "nats://127.0.0.1:4222");
}

int jet_dlq_cli_run(int argc, char **argv, FILE *out, FILE *err)
{
    g_autofree char *server = NULL;
    g_autofree char *config = NULL;
    g_autofree char *dropin = NULL;
    g_autofree char *stream = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "server", 's', 0, G_OPTION_ARG_STRING, &server, "the server URL (default: $NATS_URL, or nats://127.0.0.1:4222)", "URL" },
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config, "take the server and DLQ stream from this config", "FILE" },
        { "dropin-dir", 'd', 0, G_OPTION_ARG_FILENAME, &dropin, "the config's drop-in directory", "DIR" },
        { "stream", 0, 0, G_OPTION_ARG_STRING, &stream, "the DLQ stream (default: the config's first binding's, or " JET_DLQ_DEFAULT_STREAM ")", "NAME" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "one JSON object a line", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("list | show SEQ | replay SEQ... - dead-letter records");
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
        fprintf(err, "jethost dlq: usage: jethost dlq [-s URL | -c FILE [-d DIR]] [--stream NAME] [--json] "
                     "list | show SEQ | replay SEQ...\n");
        return JET_EXIT_USAGE;
    }
    Dlq d = { out, err, json, NULL, NULL };
    g_autoptr(GArray) seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (int i = 2; i < n; i++) {
        guint64 seq = 0;
        if (!parse_seq(&d, a[i], &seq))
            return JET_EXIT_USAGE;
        g_array_append_val(seqs, seq);
    }

    g_autoptr(JetConfig) cfg = NULL;
    if (config != NULL) {
        cfg = jet_config_load(config, dropin, &e);
        if (cfg == NULL) {
            fprintf(err, "jethost dlq: %s\n", e->message);
            return JET_EXIT_CONFIG;
        }
    }
    if (stream != NULL)
        d.stream = g_strdup(stream);
    else if (cfg != NULL && cfg->bindings->len > 0)
        d.stream = g_strdup(((const JetBindingConfig *)g_ptr_array_index(cfg->bindings, 0))->dlq_stream);
    else
        d.stream = g_strdup(JET_DLQ_DEFAULT_STREAM);

    g_autofree char *url = server_url(server, cfg, &e);
    if (url == NULL) {
        fprintf(err, "jethost dlq: %s\n", e->message);
        g_free(d.stream);
        return JET_EXIT_FAILURE;
    }
    const char *urls[] = { url, NULL };
    d.conn = jet_conn_open(urls, cfg != NULL && server == NULL ? &cfg->host : NULL, 3, &e);
    if (d.conn == NULL) {
        fprintf(err, "jethost dlq: %s\n", e->message);
        g_free(d.stream);
        return JET_EXIT_FAILURE;
    }
    int rc = JET_EXIT_OK;
    if (is_list) {
        rc = cmd_list(&d);
    } else if (is_show) {
        rc = cmd_show(&d, g_array_index(seqs, guint64, 0));
    } else {
        for (guint i = 0; i < seqs->len; i++)
            if (replay_one(&d, g_array_index(seqs, guint64, i)) != JET_EXIT_OK)
                rc = JET_EXIT_FAILURE;   /* the others are still tried */
    }
    close_conn(d.conn);
    g_free(d.stream);
    fflush(out);
    return rc;
}

int jet_dlq_cli_main(int argc, char **argv)
{
    return jet_dlq_cli_run(argc, argv, stdout, stderr);
}
