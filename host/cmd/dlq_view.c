/* jethost dlq list|show|stats, and the selection the bulk commands share:
 * records read in order by an ordered consumer (dlq_reader.h), or one by
 * sequence, each header block read by the host's own parser. */
#include "dlq_private.h"

#include "dlq_reader.h"
#include "dlq_record.h"
#include "dlq_stats.h"
#include "json_out.h"

#include <string.h>

void jet_dlq_rec_clear(JetDlqRec *r)
{
    g_clear_pointer(&r->m, jet_stored_msg_free);
    jet_hdr_parse_clear(&r->p);
}

const char *jet_dlq_rec_hdr(const JetDlqRec *r, const char *name)
{
    return jet_hdr_get(r->p.headers, name);
}

char *jet_dlq_field(const char *s)
{
    return s != NULL && *s ? jet_text_escape(s, strlen(s), FALSE) : g_strdup("-");
}

void jet_dlq_print_json(JetDlq *d, JsonBuilder *b)
{
    g_autofree char *line = jet_json_line(b);
    fprintf(d->out, "%s\n", line);
}

static const void *bytes_data(GBytes *b, gsize *len)
{
    *len = 0;
    return b != NULL ? g_bytes_get_data(b, len) : NULL;
}

int jet_dlq_get(JetDlq *d, guint64 seq, JetDlqRec *r)
{
    g_autoptr(GError) e = NULL;
    JetStoredStatus st = jet_stream_msg_get(jet_conn_nats(d->conn), d->stream, seq, JET_DLQ_REQUEST_TIMEOUT_MS,
                                            &r->m, &e);
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

/* --- list ------------------------------------------------------------------ */

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

enum { COL_SEQ, COL_ORIGIN, COL_SUBJECT, COL_CAUSE, COL_CAPTURED, COL_REASON, N_COLS };
static const char *const col_titles[N_COLS] = { "SEQ", "ORIGIN", "SUBJECT", "CAUSE", "CAPTURED", "REASON" };

/* What list, stats and the selection share: the filter applied to each
 * record read, take() called for each match, the read stopped at the limit
 * or once no later record can match. */
typedef struct {
    JetDlq *d;
    guint64 taken;
    void (*take)(const JetDlqRecord *r, gpointer data);
    gpointer data;
} MatchRun;

static gboolean match_one(const JetDlqRecord *r, gpointer data)
{
    MatchRun *run = data;
    JetDlq *d = run->d;
    if (jet_dlq_filter_matches(d->filter, r->seq, r->stored_ns, r->headers)) {
        run->take(r, run->data);
        guint64 limit = jet_dlq_filter_limit(d->filter);
        if (limit > 0 && ++run->taken >= limit)
            return FALSE;
    }
    return jet_dlq_filter_before_end(d->filter, r->seq, r->stored_ns);
}

static void read_options(JetDlq *d, JetDlqReadOptions *o)
{
    *o = (JetDlqReadOptions){ .headers_only = TRUE };
    jet_dlq_filter_start(d->filter, &o->start_seq, &o->start_time_ns);
}

/* Reads the stream, take() on each match; FALSE after saying why. */
static gboolean read_matches(JetDlq *d, void (*take)(const JetDlqRecord *r, gpointer data), gpointer data)
{
    MatchRun run = { d, 0, take, data };
    JetDlqReadOptions o;
    read_options(d, &o);
    g_autoptr(GError) e = NULL;
    if (!jet_dlq_read(d->conn, d->stream, &o, match_one, &run, NULL, &e)) {
        fprintf(d->err, "jethost dlq: %s\n", e->message);
        return FALSE;
    }
    return TRUE;
}

typedef struct {
    JetDlq *d;
    GPtrArray *rows;   /* table: GStrv of N_COLS escaped fields, printed at the end */
} ListRun;

static void list_json(JetDlq *d, const JetDlqRecord *r)
{
    const GPtrArray *h = r->headers;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    jet_json_add_bytes(b, "dlq_stream", d->stream, -1);
    json_builder_set_member_name(b, "dlq_seq");
    json_builder_add_int_value(b, (gint64)r->seq);
    g_autofree char *stored = jet_time_format_ns(r->stored_ns);
    jet_json_add_bytes(b, "stored", stored, -1);
    jet_json_add_bytes(b, "origin_stream", jet_hdr_get(h, JET_HDR_ORIGIN_STREAM), -1);
    json_uint_or_null(b, "origin_seq", jet_hdr_get(h, JET_HDR_ORIGIN_SEQ));
    jet_json_add_bytes(b, "subject", jet_hdr_get(h, JET_HDR_ORIGIN_SUBJECT), -1);
    jet_json_add_bytes(b, "consumer", jet_hdr_get(h, JET_HDR_ORIGIN_CONSUMER), -1);
    jet_json_add_bytes(b, "binding", jet_hdr_get(h, JET_HDR_BINDING), -1);
    jet_json_add_bytes(b, "plugin", jet_hdr_get(h, JET_HDR_PLUGIN), -1);
    jet_json_add_bytes(b, "host", jet_hdr_get(h, JET_HDR_HOST), -1);
    jet_json_add_bytes(b, "cause", jet_hdr_get(h, JET_HDR_CAUSE), -1);
    jet_json_add_bytes(b, "reason", jet_hdr_get(h, JET_HDR_REASON), -1);
    json_uint_or_null(b, "deliveries", jet_hdr_get(h, JET_HDR_DELIVERIES));
    jet_json_add_bytes(b, "captured", jet_hdr_get(h, JET_HDR_CAPTURED), -1);
    jet_json_add_bytes(b, "dropped_headers", jet_hdr_get(h, JET_HDR_DROPPED_HEADERS), -1);
    json_builder_end_object(b);
    jet_dlq_print_json(d, b);
}

static char **list_fields(const JetDlqRecord *r)
{
    const GPtrArray *h = r->headers;
    char **f = g_new0(char *, N_COLS + 1);
    f[COL_SEQ] = g_strdup_printf("%" G_GUINT64_FORMAT, r->seq);
    g_autofree char *stream = jet_dlq_field(jet_hdr_get(h, JET_HDR_ORIGIN_STREAM));
    g_autofree char *oseq = jet_dlq_field(jet_hdr_get(h, JET_HDR_ORIGIN_SEQ));
    f[COL_ORIGIN] = g_strdup_printf("%s:%s", stream, oseq);
    f[COL_SUBJECT] = jet_dlq_field(jet_hdr_get(h, JET_HDR_ORIGIN_SUBJECT));
    f[COL_CAUSE] = jet_dlq_field(jet_hdr_get(h, JET_HDR_CAUSE));
    f[COL_CAPTURED] = jet_dlq_field(jet_hdr_get(h, JET_HDR_CAPTURED));
    f[COL_REASON] = jet_dlq_field(jet_hdr_get(h, JET_HDR_REASON));
    return f;
}

static void list_one(const JetDlqRecord *r, gpointer data)
{
    ListRun *run = data;
    JetDlq *d = run->d;
    if (d->format == JET_DLQ_OUT_JSON) {
        list_json(d, r);
    } else {
        char **f = list_fields(r);
        if (d->format == JET_DLQ_OUT_TABLE) {
            g_ptr_array_add(run->rows, f);
        } else {
            g_autofree char *line = g_strjoinv("\t", f);
            fprintf(d->out, "%s\n", line);
            g_strfreev(f);
        }
    }
}

/* Columns as wide as their widest cell; the reason last, unpadded. */
static void print_table(JetDlq *d, GPtrArray *rows)
{
    glong width[N_COLS];
    for (int c = 0; c < N_COLS; c++)
        width[c] = g_utf8_strlen(col_titles[c], -1);
    for (guint i = 0; i < rows->len; i++) {
        char **f = g_ptr_array_index(rows, i);
        for (int c = 0; c < N_COLS; c++)
            width[c] = MAX(width[c], g_utf8_strlen(f[c], -1));
    }
    for (guint i = 0; i <= rows->len; i++) {
        const char *const *f = i == 0 ? col_titles : (const char *const *)g_ptr_array_index(rows, i - 1);
        for (int c = 0; c < N_COLS - 1; c++) {
            int pad = (int)(width[c] - g_utf8_strlen(f[c], -1));
            if (c == COL_SEQ)
                fprintf(d->out, "%*s%s  ", pad, "", f[c]);
            else
                fprintf(d->out, "%s%*s  ", f[c], pad, "");
        }
        fprintf(d->out, "%s\n", f[N_COLS - 1]);
    }
}

int jet_dlq_cmd_list(JetDlq *d)
{
    ListRun run = { d, g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev) };
    gboolean ok = read_matches(d, list_one, &run);
    if (d->format == JET_DLQ_OUT_TABLE && run.rows->len > 0)
        print_table(d, run.rows);
    g_ptr_array_unref(run.rows);
    fflush(d->out);
    return ok ? 0 : 1;
}

/* --- stats ------------------------------------------------------------------- */

static void count_one(const JetDlqRecord *r, gpointer data)
{
    jet_dlq_stats_add(data, r->seq, r->stored_ns, r->headers);
}

int jet_dlq_cmd_stats(JetDlq *d)
{
    g_autoptr(JetDlqStats) stats = jet_dlq_stats_new();
    if (!read_matches(d, count_one, stats))
        return 1;
    if (d->format == JET_DLQ_OUT_JSON)
        jet_dlq_stats_print_json(stats, d->stream, d->out);
    else
        jet_dlq_stats_print_text(stats, d->stream, d->top, d->out);
    fflush(d->out);
    return 0;
}

/* --- the selection --------------------------------------------------------- */

static void select_one(const JetDlqRecord *r, gpointer data)
{
    g_array_append_val((GArray *)data, r->seq);
}

GArray *jet_dlq_select(JetDlq *d)
{
    GArray *seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
    if (d->seqs->len > 0) {
        /* Given sequences: the filter's sequence range narrows them here;
         * times, fields and the limit need the record (read later). */
        for (guint i = 0; i < d->seqs->len; i++) {
            guint64 seq = g_array_index(d->seqs, guint64, i);
            if (jet_dlq_filter_seq_in_range(d->filter, seq))
                g_array_append_val(seqs, seq);
        }
        return seqs;
    }
    if (!read_matches(d, select_one, seqs)) {
        g_array_unref(seqs);
        return NULL;
    }
    return seqs;
}

/* --- show ------------------------------------------------------------------- */

static void show_json(JetDlq *d, const JetDlqRec *r, guint64 seq)
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
    jet_dlq_print_json(d, b);
}

/* One line of the story: "  Label:  value", left out when value is. */
static void story(JetDlq *d, const char *label, const char *value)
{
    if (value == NULL)
        return;
    fprintf(d->out, "  %-16s %s\n", label, value);
}

static void story_hdr(JetDlq *d, const JetDlqRec *r, const char *label, const char *name)
{
    const char *v = jet_dlq_rec_hdr(r, name);
    if (v == NULL)
        return;
    g_autofree char *e = jet_text_escape(v, strlen(v), FALSE);
    story(d, label, e);
}

/* What happened to the message, from its provenance (the headers follow
 * in full, so nothing here is the only copy). */
static void show_story(JetDlq *d, const JetDlqRec *r)
{
    fprintf(d->out, "What happened:\n");
    g_autofree char *cause = jet_dlq_field(jet_dlq_rec_hdr(r, JET_HDR_CAUSE));
    story(d, "Cause:", cause);
    story_hdr(d, r, "Reason:", JET_HDR_REASON);
    const char *os = jet_dlq_rec_hdr(r, JET_HDR_ORIGIN_STREAM), *oq = jet_dlq_rec_hdr(r, JET_HDR_ORIGIN_SEQ);
    if (os != NULL || oq != NULL) {
        g_autofree char *s = jet_dlq_field(os), *q = jet_dlq_field(oq);
        g_autofree char *origin = g_strdup_printf("%s:%s", s, q);
        story(d, "Origin:", origin);
    }
    story_hdr(d, r, "Subject:", JET_HDR_ORIGIN_SUBJECT);
    story_hdr(d, r, "Consumer:", JET_HDR_ORIGIN_CONSUMER);
    story_hdr(d, r, "Binding:", JET_HDR_BINDING);
    const char *plugin = jet_dlq_rec_hdr(r, JET_HDR_PLUGIN), *version = jet_dlq_rec_hdr(r, JET_HDR_PLUGIN_VERSION);
    if (plugin != NULL) {
        g_autofree char *p = jet_dlq_field(plugin), *v = jet_dlq_field(version);
        g_autofree char *both = version != NULL ? g_strdup_printf("%s %s", p, v) : g_strdup(p);
        story(d, "Plugin:", both);
    }
    story_hdr(d, r, "Host:", JET_HDR_HOST);
    story_hdr(d, r, "Enqueued:", JET_HDR_ENQUEUED);
    story_hdr(d, r, "First failure:", JET_HDR_FIRST_FAILURE);
    story_hdr(d, r, "Captured:", JET_HDR_CAPTURED);
    const char *dl = jet_dlq_rec_hdr(r, JET_HDR_DELIVERIES), *fl = jet_dlq_rec_hdr(r, JET_HDR_FAILURES),
               *pp = jet_dlq_rec_hdr(r, JET_HDR_POSTPONES), *cs = jet_dlq_rec_hdr(r, JET_HDR_CRASH_STRIKES);
    if (dl != NULL || fl != NULL || pp != NULL) {
        g_autofree char *a = jet_dlq_field(dl), *b = jet_dlq_field(fl), *c = jet_dlq_field(pp);
        g_autofree char *e = jet_dlq_field(cs != NULL ? cs : "0");
        g_autofree char *attempts = g_strdup_printf("%s deliveries, %s failures, %s postpones, %s crash strikes", a,
                                                    b, c, e);
        story(d, "Attempts:", attempts);
    }
    story_hdr(d, r, "KV key:", JET_HDR_KV_KEY);
    story_hdr(d, r, "KV operation:", JET_HDR_KV_OPERATION);
    story_hdr(d, r, "Not carried:", JET_HDR_DROPPED_HEADERS);
}

/* Text when the bytes are UTF-8 with no control character but line breaks
 * and tabs. */
static gboolean looks_like_text(const char *data, gsize len)
{
    if (!g_utf8_validate(data, (gssize)len, NULL))
        return FALSE;
    for (gsize i = 0; i < len; i++) {
        guchar c = (guchar)data[i];
        if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f)
            return FALSE;
    }
    return TRUE;
}

/* xxd's layout: offset, 16 bytes in hex, the printable ASCII. */
static void hex_dump(FILE *out, const guchar *p, gsize len)
{
    for (gsize off = 0; off < len; off += 16) {
        fprintf(out, "%08" G_GSIZE_MODIFIER "x ", off);
        for (gsize i = 0; i < 16; i++) {
            if (i == 8)
                fputc(' ', out);
            if (off + i < len)
                fprintf(out, " %02x", p[off + i]);
            else
                fputs("   ", out);
        }
        fputs("  |", out);
        for (gsize i = 0; i < 16 && off + i < len; i++)
            fputc(p[off + i] >= 0x20 && p[off + i] < 0x7f ? p[off + i] : '.', out);
        fputs("|\n", out);
    }
}

static void show_payload(JetDlq *d, const char *data, gsize len)
{
    JetDlqPayload mode = d->payload;
    if (mode == JET_DLQ_PAYLOAD_NONE) {
        fprintf(d->out, "Payload: %" G_GSIZE_FORMAT " bytes (--payload shows them)\n", len);
        return;
    }
    if (mode == JET_DLQ_PAYLOAD_AUTO)
        mode = looks_like_text(data, len) ? JET_DLQ_PAYLOAD_TEXT : JET_DLQ_PAYLOAD_HEX;
    fprintf(d->out, "Payload: %" G_GSIZE_FORMAT " bytes, %s:\n", len, mode == JET_DLQ_PAYLOAD_HEX ? "hex" : "text");
    if (mode == JET_DLQ_PAYLOAD_HEX) {
        hex_dump(d->out, (const guchar *)data, len);
        return;
    }
    g_autofree char *payload = jet_text_escape(data, len, TRUE);
    fprintf(d->out, "%s\n", payload);
}

static void show_text(JetDlq *d, const JetDlqRec *r, guint64 seq)
{
    g_autofree char *when = jet_time_format_ns(r->m->time_ns);
    g_autofree char *subject = jet_dlq_field(r->m->subject);
    fprintf(d->out, "Record: %s:%" G_GUINT64_FORMAT "\nSubject: %s\nStored: %s\n", d->stream, seq, subject, when);
    for (guint i = 0; i < r->p.defects->len; i++) {
        g_autofree char *text = jet_hdr_defect_describe(&g_array_index(r->p.defects, JetHdrDefect, i));
        fprintf(d->out, "Unreadable: %s\n", text);
    }
    fprintf(d->out, "\n");
    show_story(d, r);
    fprintf(d->out, "\nHeaders, in block order:\n");
    for (guint i = 0; i + 1 < r->p.headers->len; i += 2) {
        const char *v = g_ptr_array_index(r->p.headers, i + 1);
        g_autofree char *value = jet_text_escape(v, strlen(v), FALSE);
        fprintf(d->out, "%s: %s\n", (const char *)g_ptr_array_index(r->p.headers, i), value);
    }
    fprintf(d->out, "\n");
    gsize len = 0;
    const char *data = bytes_data(r->m->data, &len);
    show_payload(d, data != NULL ? data : "", len);
}

int jet_dlq_cmd_show(JetDlq *d, guint64 seq)
{
    g_auto(JetDlqRec) r = { 0 };
    int got = jet_dlq_get(d, seq, &r);
    if (got != 0) {
        if (got > 0)
            fprintf(d->err, "jethost dlq: no record %s:%" G_GUINT64_FORMAT "\n", d->stream, seq);
        return 1;
    }
    if (d->format == JET_DLQ_OUT_JSON)
        show_json(d, &r, seq);
    else
        show_text(d, &r, seq);
    fflush(d->out);
    return 0;
}
