/* Counting dead-letter records (dlq_stats.h). */
#include "dlq_stats.h"

#include "dlq_record.h"
#include "hdr_block.h"
#include "json_out.h"
#include "provenance.h"

#include <string.h>

enum { G_CAUSE, G_ORIGIN, G_SUBJECT, G_HOUR, G_N };

static const char *const grouping_names[G_N] = { "cause", "origin", "subject", "hour" };
static const char *const grouping_titles[G_N] = { "By cause", "By origin stream", "By subject", "By hour (UTC)" };

struct JetDlqStats {
    GHashTable *counts[G_N];   /* key (bytes as stored, NUL-terminated) -> guint64 * */
    guint64 total;
    guint64 oldest_seq, newest_seq;
    gint64 oldest_ns, newest_ns;
};

JetDlqStats *jet_dlq_stats_new(void)
{
    JetDlqStats *s = g_new0(JetDlqStats, 1);
    for (int i = 0; i < G_N; i++)
        s->counts[i] = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return s;
}

void jet_dlq_stats_free(JetDlqStats *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < G_N; i++)
        g_hash_table_unref(s->counts[i]);
    g_free(s);
}

static void bump(GHashTable *t, const char *key)
{
    guint64 *n = g_hash_table_lookup(t, key);
    if (n == NULL) {
        n = g_new0(guint64, 1);
        g_hash_table_insert(t, g_strdup(key), n);
    }
    (*n)++;
}

static char *hour_of(gint64 ns)
{
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(ns / G_GINT64_CONSTANT(1000000000));
    return dt != NULL ? g_date_time_format(dt, "%Y-%m-%dT%H") : g_strdup("-");
}

void jet_dlq_stats_add(JetDlqStats *s, guint64 seq, gint64 stored_ns, const GPtrArray *headers)
{
    const char *v;
    v = headers != NULL ? jet_hdr_get(headers, JET_HDR_CAUSE) : NULL;
    bump(s->counts[G_CAUSE], v != NULL ? v : "-");
    v = headers != NULL ? jet_hdr_get(headers, JET_HDR_ORIGIN_STREAM) : NULL;
    bump(s->counts[G_ORIGIN], v != NULL ? v : "-");
    v = headers != NULL ? jet_hdr_get(headers, JET_HDR_ORIGIN_SUBJECT) : NULL;
    bump(s->counts[G_SUBJECT], v != NULL ? v : "-");
    g_autofree char *hour = hour_of(stored_ns);
    bump(s->counts[G_HOUR], hour);
    if (s->total == 0 || seq < s->oldest_seq) {
        s->oldest_seq = seq;
        s->oldest_ns = stored_ns;
    }
    if (s->total == 0 || seq > s->newest_seq) {
        s->newest_seq = seq;
        s->newest_ns = stored_ns;
    }
    s->total++;
}

guint64 jet_dlq_stats_total(const JetDlqStats *s)
{
    return s->total;
}

guint64 jet_dlq_stats_count(const JetDlqStats *s, const char *grouping, const char *key)
{
    for (int i = 0; i < G_N; i++) {
        if (strcmp(grouping_names[i], grouping) == 0) {
            const guint64 *n = g_hash_table_lookup(s->counts[i], key);
            return n != NULL ? *n : 0;
        }
    }
    return 0;
}

typedef struct {
    const char *key;
    guint64 n;
} Row;

static gint by_count(gconstpointer a, gconstpointer b)
{
    const Row *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->key, y->key);
}

static gint by_key(gconstpointer a, gconstpointer b)
{
    return strcmp(((const Row *)a)->key, ((const Row *)b)->key);
}

/* The rows of grouping g in printing order; the keys are borrowed. */
static GArray *rows(const JetDlqStats *s, int g)
{
    GArray *r = g_array_new(FALSE, FALSE, sizeof(Row));
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, s->counts[g]);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        Row row = { k, *(guint64 *)v };
        g_array_append_val(r, row);
    }
    g_array_sort(r, g == G_HOUR ? by_key : by_count);
    return r;
}

void jet_dlq_stats_print_text(const JetDlqStats *s, const char *stream, guint top, FILE *out)
{
    fprintf(out, "%s: %" G_GUINT64_FORMAT " record%s", stream, s->total, s->total == 1 ? "" : "s");
    if (s->total > 0) {
        g_autofree char *o = jet_time_format_ns(s->oldest_ns), *n = jet_time_format_ns(s->newest_ns);
        fprintf(out, "; oldest %" G_GUINT64_FORMAT " stored %s; newest %" G_GUINT64_FORMAT " stored %s",
                s->oldest_seq, o, s->newest_seq, n);
    }
    fprintf(out, "\n");
    for (int g = 0; g < G_N && s->total > 0; g++) {
        g_autoptr(GArray) r = rows(s, g);
        fprintf(out, "\n%s:\n", grouping_titles[g]);
        guint shown = top > 0 && g != G_HOUR ? MIN(top, r->len) : r->len;
        for (guint i = 0; i < shown; i++) {
            const Row *row = &g_array_index(r, Row, i);
            g_autofree char *k = jet_text_escape(row->key, strlen(row->key), FALSE);
            fprintf(out, "%10" G_GUINT64_FORMAT "  %s\n", row->n, k);
        }
        if (shown < r->len) {
            guint64 rest = 0;
            for (guint i = shown; i < r->len; i++)
                rest += g_array_index(r, Row, i).n;
            fprintf(out, "%10" G_GUINT64_FORMAT "  (%u more)\n", rest, r->len - shown);
        }
    }
}

static void json_end(JsonBuilder *b, const char *name, guint64 seq, gint64 ns)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "dlq_seq");
    json_builder_add_int_value(b, (gint64)seq);
    g_autofree char *when = jet_time_format_ns(ns);
    json_builder_set_member_name(b, "stored");
    json_builder_add_string_value(b, when);
    json_builder_end_object(b);
}

void jet_dlq_stats_print_json(const JetDlqStats *s, const char *stream, FILE *out)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    jet_json_add_bytes(b, "stream", stream, -1);
    json_builder_set_member_name(b, "total");
    json_builder_add_int_value(b, (gint64)s->total);
    if (s->total > 0) {
        json_end(b, "oldest", s->oldest_seq, s->oldest_ns);
        json_end(b, "newest", s->newest_seq, s->newest_ns);
    }
    for (int g = 0; g < G_N; g++) {
        g_autoptr(GArray) r = rows(s, g);
        g_autofree char *member = g_strdup_printf("by_%s", grouping_names[g]);
        json_builder_set_member_name(b, member);
        json_builder_begin_array(b);
        for (guint i = 0; i < r->len; i++) {
            const Row *row = &g_array_index(r, Row, i);
            json_builder_begin_object(b);
            jet_json_add_bytes(b, grouping_names[g], row->key, -1);
            json_builder_set_member_name(b, "count");
            json_builder_add_int_value(b, (gint64)row->n);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
    }
    json_builder_end_object(b);
    g_autofree char *line = jet_json_line(b);
    fprintf(out, "%s\n", line);
}
