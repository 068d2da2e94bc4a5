/* `jethost dlq` at the scale of a bad night, against a real nats-server:
 * 20,000 records of mixed causes, origins, subjects, bindings and plugins,
 * written by the host's own record builder, and a model of them in this
 * test.  Filters and stats must match the model exactly; a 5,000-record
 * slice replayed at a rate takes the time the rate implies and reaches its
 * targets exactly once though interrupted (SIGINT) and resumed; rm and
 * purge remove exactly what they name; replay --remove removes only what
 * was acknowledged.  Reading all 20,000 is timed beside a plain nats.c
 * ordered read and the one-request-per-record read it replaced (printed,
 * not asserted: docs/performance.md has the figures).
 *
 * The generator's choices come from a seed, logged; JET_ONCALL_SEED
 * repeats a run. */
#define _GNU_SOURCE
#include "harness.h"
#include "dlq_record.h"
#include "hdr_block.h"
#include "nats_raw.h"
#include "replay.h"
#include "stream_msg.h"

#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define DLQ "JETHOST_DLQ"
#define N_RECORDS 20000

static JetTestServer *srv;
static natsConnection *nc;
static jsCtx *js;
static guint32 seed;

/* --- the model ---------------------------------------------------------------- */

typedef struct {
    guint64 seq;          /* its DLQ sequence */
    const char *cause, *origin, *consumer, *binding, *plugin, *host, *reason;
    char *subject;
} Rec;

static Rec *recs;         /* recs[i].seq == i + 1 */

static const char *const causes[] = { "rejected", "exhausted", "poison", "budget", "malformed-headers", "breaker",
                                      "max-deliveries" };
/* rejected and exhausted dominate, as after a bad deploy. */
static const guint cause_weights[] = { 50, 30, 5, 5, 4, 3, 3 };
static const char *const regions[] = { "eu", "us", "ap" };
static const char *const kinds[] = { "new", "paid", "cancelled" };
static const char *const reasons[] = { "Timeout talking to inventory", "missing SKU", "db down",
                                       "crashed the host 3 times", "schema v3 expected" };

static const char *pick_cause(GRand *r)
{
    guint total = 0, x;
    for (gsize i = 0; i < G_N_ELEMENTS(cause_weights); i++)
        total += cause_weights[i];
    x = (guint)g_rand_int_range(r, 0, (gint32)total);
    for (gsize i = 0; i < G_N_ELEMENTS(causes); i++) {
        if (x < cause_weights[i])
            return causes[i];
        x -= cause_weights[i];
    }
    return causes[0];
}

static void publish_record(const char *dlq_subject, const Rec *rec, guint64 oseq, guint strikes)
{
    JetCaptureFacts f = {
        .stream = rec->origin,
        .stream_created_ns = 1,
        .consumer = rec->consumer,
        .subject = rec->subject,
        .stream_seq = oseq,
        .deliveries = 5,
        .failures = 4,
        .postpones = 1,
        .strikes = strikes,
        .reason = rec->reason,
        .has_first_failure = TRUE,
        .first_failure_ns = 1796004000 * G_GINT64_CONSTANT(1000000000),
        .captured_ns = g_get_real_time() * 1000,
        .plugin_name = rec->plugin,
        .plugin_version = "1.2.3",
        .host = rec->host,
        .binding = rec->binding,
    };
    for (JetCaptureCause c = JET_CAUSE_REJECTED; c <= JET_CAUSE_LAST; c++)
        if (strcmp(jet_cause_name(c), rec->cause) == 0)
            f.cause = c;
    g_autofree char *payload = g_strdup_printf("{\"order\":%" G_GUINT64_FORMAT ",\"pad\":\"%064u\"}", oseq, 0);
    g_auto(JetCaptureBuild) b = { 0 };
    g_autoptr(GError) e = NULL;
    g_autoptr(GPtrArray) h = jet_capture_headers((int)strlen(payload), NULL, NULL, &f, 1 << 20, &b, &e);
    g_assert_no_error(e);
    gsize block_len = 0;
    g_autofree char *block = jet_hdr_write(h, &block_len, &e);
    g_assert_no_error(e);
    natsMsg *m = jet_nats_msg_new_raw(dlq_subject, block, block_len, payload, strlen(payload), &e);
    g_assert_no_error(e);
    natsStatus s = js_PublishMsgAsync(js, &m, NULL);
    if (s != NATS_OK)
        g_error("publish: %s", natsStatus_GetText(s));
}

/* n records into stream (made here on subject_prefix.>), modelled in out
 * (out[i].seq == i + 1). */
static Rec *make_records(const char *stream, const char *subject_prefix, guint n, GRand *r)
{
    g_autofree char *pattern = g_strdup_printf("%s.>", subject_prefix);
    jet_test_stream_create(js, stream, pattern);
    Rec *out = g_new0(Rec, n);
    for (guint i = 0; i < n; i++) {
        Rec *rec = &out[i];
        rec->seq = i + 1;
        rec->cause = pick_cause(r);
        gboolean pay = g_rand_int_range(r, 0, 4) == 0;
        const char *region = regions[g_rand_int_range(r, 0, 3)];
        rec->origin = pay ? "PAYMENTS" : "ORDERS";
        rec->subject = pay ? g_strdup_printf("pay.%s", region)
                           : g_strdup_printf("orders.%s.%s", region, kinds[g_rand_int_range(r, 0, 3)]);
        rec->consumer = g_rand_boolean(r) ? "c1" : "c2";
        rec->binding = pay ? "payments" : g_rand_boolean(r) ? "orders" : "orders-audit";
        rec->plugin = pay ? "payments" : "orders";
        rec->host = g_rand_boolean(r) ? "host-a" : "host-b";
        rec->reason = reasons[g_rand_int_range(r, 0, G_N_ELEMENTS(reasons))];
        g_autofree char *subject = g_strdup_printf("%s.%s", subject_prefix, rec->binding);
        publish_record(subject, rec, i + 1, strcmp(rec->cause, "poison") == 0 ? 3 : 0);
        if (i % 2000 == 1999)
            jet_test_publish_wait(js);
    }
    jet_test_publish_wait(js);
    return out;
}

static void free_records(Rec *r, guint n)
{
    for (guint i = 0; i < n; i++)
        g_free(r[i].subject);
    g_free(r);
}

/* --- running the command ------------------------------------------------------- */

typedef struct {
    int rc;
    char *out, *err;
} Run;

static void run_clear(Run *r)
{
    g_free(r->out);
    g_free(r->err);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Run, run_clear)

/* `jethost dlq -s URL ARGS...` (ARGS NULL-terminated). */
static Run dlq_argv(const char *const *extra)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_ptr_array_add(args, "dlq");
    g_ptr_array_add(args, "-s");
    g_ptr_array_add(args, (char *)jet_test_server_url(srv));
    for (const char *const *a = extra; *a != NULL; a++)
        g_ptr_array_add(args, (char *)*a);
    g_ptr_array_add(args, NULL);
    Run r = { 0 };
    r.rc = jet_test_jethost_run((const char *const *)args->pdata, &r.out, &r.err);
    g_autofree char *line = g_strjoinv(" ", (char **)args->pdata);
    g_test_message("%s -> %d (%zu bytes out)\n%s", line, r.rc, strlen(r.out), r.err);
    return r;
}

/* The arguments after first, up to NULL, after the ones in args. */
static void collect(GPtrArray *args, const char *first, va_list ap)
{
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(args, (char *)a);
    g_ptr_array_add(args, NULL);
}

static Run dlq(const char *first, ...)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    va_list ap;
    va_start(ap, first);
    collect(args, first, ap);
    va_end(ap);
    return dlq_argv((const char *const *)args->pdata);
}

/* The dlq_seq of every JSON line. */
static GArray *json_seqs(const char *out)
{
    GArray *seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    g_autoptr(JsonParser) p = json_parser_new();
    for (char **l = lines; *l != NULL; l++) {
        if (**l == '\0')
            continue;
        g_assert_true(json_parser_load_from_data(p, *l, -1, NULL));
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        guint64 seq = (guint64)json_object_get_int_member(o, "dlq_seq");
        g_array_append_val(seqs, seq);
    }
    return seqs;
}

typedef gboolean (*Pred)(const Rec *r, gconstpointer data);

static void assert_selects(GArray *got, Pred pred, gconstpointer data, guint limit)
{
    guint want = 0, k = 0;
    for (guint i = 0; i < N_RECORDS && (limit == 0 || want < limit); i++) {
        if (!pred(&recs[i], data))
            continue;
        want++;
        g_assert_cmpuint(k, <, got->len);
        g_assert_cmpuint(g_array_index(got, guint64, k), ==, recs[i].seq);
        k++;
    }
    g_assert_cmpuint(got->len, ==, want);
    g_assert_cmpuint(want, >, 0);   /* a filter that selects nothing tests nothing */
}

/* --- filters ------------------------------------------------------------------ */

static gboolean is_cause(const Rec *r, gconstpointer c)
{
    return strcmp(r->cause, c) == 0;
}

static gboolean poison_or_budget(const Rec *r, gconstpointer d)
{
    (void)d;
    return strcmp(r->cause, "poison") == 0 || strcmp(r->cause, "budget") == 0;
}

static gboolean pay_eu(const Rec *r, gconstpointer d)
{
    (void)d;
    return strcmp(r->origin, "PAYMENTS") == 0 && strcmp(r->subject, "pay.eu") == 0;
}

static gboolean orders_new(const Rec *r, gconstpointer d)
{
    (void)d;
    return g_str_has_prefix(r->subject, "orders.") && g_str_has_suffix(r->subject, ".new");
}

static gboolean orders_timeout(const Rec *r, gconstpointer d)
{
    (void)d;
    return g_str_has_prefix(r->subject, "orders.") && strstr(r->reason, "Timeout") != NULL;
}

static gboolean audit_c2_hostb(const Rec *r, gconstpointer d)
{
    (void)d;
    return strcmp(r->binding, "orders-audit") == 0 && strcmp(r->plugin, "orders") == 0 &&
           strcmp(r->consumer, "c2") == 0 && strcmp(r->host, "host-b") == 0;
}

static gboolean slice_exhausted(const Rec *r, gconstpointer d)
{
    (void)d;
    return r->seq >= 5000 && r->seq <= 7000 && strcmp(r->cause, "exhausted") == 0;
}

static gboolean everything(const Rec *r, gconstpointer d)
{
    (void)r;
    (void)d;
    return TRUE;
}

/* `dlq --json list FILTER...` selects what pred says, in order. */
static void check_filter(Pred pred, gconstpointer data, guint limit, const char *first, ...)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_ptr_array_add(args, "--json");
    g_ptr_array_add(args, "list");
    va_list ap;
    va_start(ap, first);
    collect(args, first, ap);
    va_end(ap);
    g_auto(Run) r = dlq_argv((const char *const *)args->pdata);
    g_assert_cmpint(r.rc, ==, 0);
    g_autoptr(GArray) got = json_seqs(r.out);
    g_test_message("  %u records", got->len);
    assert_selects(got, pred, data, limit);
}

static void test_filters(void)
{
    check_filter(everything, NULL, 0, NULL);
    check_filter(is_cause, "rejected", 0, "--cause", "rejected", NULL);
    check_filter(poison_or_budget, NULL, 0, "--cause", "poison", "--cause", "budget", NULL);
    check_filter(pay_eu, NULL, 0, "--origin", "PAYMENTS", "--subject", "pay.eu", NULL);
    check_filter(orders_new, NULL, 0, "--subject", "orders.*.new", NULL);
    check_filter(orders_timeout, NULL, 0, "--subject", "orders.>", "--reason", "TIMEOUT", NULL);
    check_filter(audit_c2_hostb, NULL, 0, "--binding", "orders-audit", "--plugin", "orders", "--consumer", "c2",
                 "--filter", "host=host-b", NULL);
    check_filter(slice_exhausted, NULL, 0, "--from", "5000", "--until", "7000", "--cause", "exhausted", NULL);
    check_filter(is_cause, "rejected", 100, "--cause", "rejected", "--limit", "100", NULL);
    check_filter(is_cause, "breaker", 0, "--filter", "cause=breaker", NULL);

    /* Times: from the time record 12,000 was stored on, everything after. */
    g_auto(Run) one = dlq("--json", "list", "--from", "12000", "--limit", "1", NULL);
    g_assert_cmpint(one.rc, ==, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_data(p, one.out, -1, NULL));
    const char *stored = json_object_get_string_member(json_node_get_object(json_parser_get_root(p)), "stored");
    g_auto(Run) since = dlq("--json", "list", "--from", stored, NULL);
    g_assert_cmpint(since.rc, ==, 0);
    g_autoptr(GArray) s = json_seqs(since.out);
    g_assert_cmpuint(s->len, >, 0);
    /* Records stored within one clock tick share a time: all from 12,000
     * on, and maybe a few just before. */
    g_assert_cmpuint(g_array_index(s, guint64, s->len - 1), ==, N_RECORDS);
    g_assert_cmpuint(s->len, >=, N_RECORDS - 12000 + 1);
    g_assert_cmpuint(g_array_index(s, guint64, 0), <=, 12000);
    g_auto(Run) ago = dlq("--json", "list", "--from", "1h", "--limit", "5", NULL);
    g_assert_cmpint(ago.rc, ==, 0);
    g_autoptr(GArray) a = json_seqs(ago.out);
    g_assert_cmpuint(a->len, ==, 5);
    g_assert_cmpuint(g_array_index(a, guint64, 0), ==, 1);
    g_auto(Run) future = dlq("--json", "list", "--from", "2099-01-01T00:00:00Z", NULL);
    g_assert_cmpint(future.rc, ==, 0);
    g_assert_cmpstr(future.out, ==, "");

    /* Tab-separated in a pipe; a table when asked. */
    g_auto(Run) tsv = dlq("list", "--cause", "breaker", "--limit", "3", NULL);
    g_auto(GStrv) lines = g_strsplit(tsv.out, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 4);
    g_auto(GStrv) cols = g_strsplit(lines[0], "\t", -1);
    g_assert_cmpuint(g_strv_length(cols), ==, 6);
    g_assert_cmpstr(cols[3], ==, "breaker");
    g_auto(Run) table = dlq("--format", "table", "list", "--cause", "breaker", "--limit", "3", NULL);
    g_auto(GStrv) rows = g_strsplit(table.out, "\n", -1);
    g_assert_cmpuint(g_strv_length(rows), ==, 5);
    g_assert_true(g_regex_match_simple("^ *SEQ  ORIGIN +SUBJECT +CAUSE +CAPTURED +REASON$", rows[0], 0, 0));
    /* Aligned: CAUSE starts in the same column on every row. */
    const char *h = strstr(rows[0], "CAUSE");
    for (guint i = 1; i < 4; i++)
        g_assert_true(g_str_has_prefix(rows[i] + (h - rows[0]), "breaker "));

    /* Refused before anything is read. */
    const char *const bad[][3] = {
        { "--cause", "rejectd", "not a cause" },     { "--subject", "orders..x", "not a subject pattern" },
        { "--from", "yesterday", "--from" },         { "--filter", "colour=red", "no filter" },
        { "--limit", "-1", "--limit" },              { "--format", "xml", "--format" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_auto(Run) b = dlq("list", bad[i][0], bad[i][1], NULL);
        g_assert_cmpint(b.rc, ==, 2);
        g_assert_nonnull(strstr(b.err, bad[i][2]));
        g_assert_cmpstr(b.out, ==, "");
    }
    g_auto(Run) seqs = dlq("list", "5", NULL);
    g_assert_cmpint(seqs.rc, ==, 2);
}

/* --- stats -------------------------------------------------------------------- */

static guint64 model_count(const char *field, const char *value, Pred pred, gconstpointer data)
{
    guint64 n = 0;
    for (guint i = 0; i < N_RECORDS; i++) {
        const Rec *r = &recs[i];
        if (pred != NULL && !pred(r, data))
            continue;
        const char *v = strcmp(field, "cause") == 0 ? r->cause : strcmp(field, "origin") == 0 ? r->origin : r->subject;
        n += strcmp(v, value) == 0;
    }
    return n;
}

static void assert_grouping(JsonObject *o, const char *field, Pred pred, gconstpointer data, guint64 total)
{
    g_autofree char *member = g_strdup_printf("by_%s", field);
    JsonArray *a = json_object_get_array_member(o, member);
    guint64 sum = 0, prev = G_MAXUINT64;
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *row = json_array_get_object_element(a, i);
        const char *key = json_object_get_string_member(row, field);
        guint64 n = (guint64)json_object_get_int_member(row, "count");
        g_assert_cmpuint(n, ==, model_count(field, key, pred, data));
        g_assert_cmpuint(n, <=, prev);   /* largest first */
        prev = n;
        sum += n;
    }
    g_assert_cmpuint(sum, ==, total);
}

static void test_stats(void)
{
    g_auto(Run) all = dlq("--json", "stats", NULL);
    g_assert_cmpint(all.rc, ==, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_data(p, all.out, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    g_assert_cmpint(json_object_get_int_member(o, "total"), ==, N_RECORDS);
    g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(o, "oldest"), "dlq_seq"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(o, "newest"), "dlq_seq"), ==, N_RECORDS);
    assert_grouping(o, "cause", NULL, NULL, N_RECORDS);
    assert_grouping(o, "origin", NULL, NULL, N_RECORDS);
    assert_grouping(o, "subject", NULL, NULL, N_RECORDS);
    JsonArray *hours = json_object_get_array_member(o, "by_hour");
    guint64 sum = 0;
    for (guint i = 0; i < json_array_get_length(hours); i++)
        sum += (guint64)json_object_get_int_member(json_array_get_object_element(hours, i), "count");
    g_assert_cmpuint(sum, ==, N_RECORDS);
    g_assert_cmpuint(json_array_get_length(hours), <=, 2);   /* written within a minute */

    /* Over a filter: the same counts as the model's over it. */
    g_auto(Run) f = dlq("--json", "stats", "--subject", "orders.*.new", NULL);
    g_autoptr(JsonParser) pf = json_parser_new();
    g_assert_true(json_parser_load_from_data(pf, f.out, -1, NULL));
    JsonObject *of = json_node_get_object(json_parser_get_root(pf));
    guint64 want = 0;
    for (guint i = 0; i < N_RECORDS; i++)
        want += orders_new(&recs[i], NULL);
    g_assert_cmpint(json_object_get_int_member(of, "total"), ==, (gint64)want);
    assert_grouping(of, "cause", orders_new, NULL, want);
    assert_grouping(of, "subject", orders_new, NULL, want);

    /* The text a person reads first. */
    g_auto(Run) t = dlq("stats", "--top", "3", NULL);
    g_assert_true(g_str_has_prefix(t.out, DLQ ": 20000 records; oldest 1 stored "));
    g_autofree char *rejected = g_strdup_printf("\nBy cause:\n%10" G_GUINT64_FORMAT "  rejected\n",
                                                model_count("cause", "rejected", NULL, NULL));
    g_assert_nonnull(strstr(t.out, rejected));
    g_assert_nonnull(strstr(t.out, "  (4 more)\n"));   /* 7 causes, top 3 */
}

/* --- reading: how long 20,000 take ------------------------------------------------ */

static double median3(double a, double b, double c)
{
    return MAX(MIN(a, b), MIN(MAX(a, b), c));
}

/* A plain nats.c ordered consumer reading the whole stream. */
static double plain_ordered_read(void)
{
    gint64 t0 = g_get_monotonic_time();
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Ordered = true;
    so.Stream = DLQ;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    g_assert_cmpint(js_SubscribeSync(&sub, js, "jethost.dlq.>", NULL, &so, &jerr), ==, NATS_OK);
    guint n = 0;
    while (n < N_RECORDS) {
        natsMsg *m = NULL;
        g_assert_cmpint(natsSubscription_NextMsg(&m, sub, 10000), ==, NATS_OK);
        n++;
        natsMsg_Destroy(m);
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    return (double)(g_get_monotonic_time() - t0) / 1e6;
}

/* One STREAM.MSG.GET per record, as `jethost dlq list` read before. */
static double per_record_read(void)
{
    gint64 t0 = g_get_monotonic_time();
    for (guint64 seq = 1; seq <= N_RECORDS; seq++) {
        JetStoredMsg *m = NULL;
        g_autoptr(GError) e = NULL;
        g_assert_cmpint(jet_stream_msg_get(nc, DLQ, seq, 5000, &m, &e), ==, JET_STORED_FOUND);
        jet_stored_msg_free(m);
    }
    return (double)(g_get_monotonic_time() - t0) / 1e6;
}

static double timed_list(const char *what)
{
    gint64 t0 = g_get_monotonic_time();
    g_auto(Run) r = dlq("--json", what, NULL);
    double s = (double)(g_get_monotonic_time() - t0) / 1e6;
    g_assert_cmpint(r.rc, ==, 0);
    if (strcmp(what, "list") == 0) {
        g_autoptr(GArray) got = json_seqs(r.out);
        g_assert_cmpuint(got->len, ==, N_RECORDS);
    }
    return s;
}

static void test_read_time(void)
{
    double plain[3], per[3], list[3], stats[3];
    for (int i = 0; i < 3; i++) {
        plain[i] = plain_ordered_read();
        per[i] = per_record_read();
        list[i] = timed_list("list");
        stats[i] = timed_list("stats");
    }
    double mp = median3(plain[0], plain[1], plain[2]), mr = median3(per[0], per[1], per[2]);
    double ml = median3(list[0], list[1], list[2]), ms = median3(stats[0], stats[1], stats[2]);
    /* Figures for docs/performance.md; the load of a shared machine makes
     * them no assertion. */
    printf("# dlq read of %u records (median of 3): plain nats.c ordered read %.2f s; jethost dlq list --json "
           "%.2f s (%.2fx); jethost dlq stats %.2f s (%.2fx); one request per record %.2f s (%.2fx)\n",
           N_RECORDS, mp, ml, ml / mp, ms, ms / mp, mr, mr / mp);
    g_test_message("plain %.2f list %.2f stats %.2f per-record %.2f", mp, ml, ms, mr);
}

/* --- replay: a slice at a rate, interrupted and resumed, exactly once ------------ */

/* Every Jethost-Replay-Of in stream from seq first on (its count in *n). */
static GHashTable *replay_ofs(const char *stream, guint64 first, guint64 *n)
{
    GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, stream, NULL, NULL), ==, NATS_OK);
    guint64 last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    *n = 0;
    for (guint64 seq = first; seq <= last; seq++) {
        JetStoredMsg *m = NULL;
        g_autoptr(GError) e = NULL;
        if (jet_stream_msg_get(nc, stream, seq, 5000, &m, &e) != JET_STORED_FOUND)
            continue;
        g_auto(JetHdrParse) p = { 0 };
        gsize len = 0;
        const char *block = m->hdrs != NULL ? g_bytes_get_data(m->hdrs, &len) : NULL;
        jet_hdr_parse(block, len, &p);
        const char *of = jet_hdr_get(p.headers, JET_HDR_REPLAY_OF);
        g_assert_nonnull(of);
        /* Twice would be a duplicate that got through. */
        g_assert_false(g_hash_table_contains(seen, of));
        g_hash_table_add(seen, g_strdup(of));
        (*n)++;
        jet_stored_msg_free(m);
    }
    return seen;
}

static guint64 msgs_of(const char *stream)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, stream, NULL, NULL), ==, NATS_OK);
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

static void die_with_parent(gpointer data)
{
    (void)data;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* "in 4.3s" of a summary line. */
static double summary_secs(const char *err)
{
    const char *in = strstr(err, " in ");
    g_assert_nonnull(in);
    return g_ascii_strtod(in + 4, NULL);
}

#define SLICE_FIRST 5001
#define SLICE_LAST 10000
#define RATE 500

static void test_replay_slice(void)
{
    guint64 orders0 = msgs_of("ORDERS"), pay0 = msgs_of("PAYMENTS");
    const char *url = jet_test_server_url(srv);
    g_autofree char *bin = jet_test_jethost_path();
    g_autofree char *rate = g_strdup_printf("%d", RATE);
    g_autofree char *first = g_strdup_printf("%d", SLICE_FIRST), *last = g_strdup_printf("%d", SLICE_LAST);

    /* --dry-run: what would go where, nothing published. */
    g_auto(Run) dry = dlq("replay", "--dry-run", "--from", first, "--until", last, NULL);
    g_assert_cmpint(dry.rc, ==, 0);
    g_assert_cmpuint(jet_test_count_lines(dry.out, "; dry run: not published)"), ==, SLICE_LAST - SLICE_FIRST + 1);
    g_autofree char *line1 = g_strdup_printf(DLQ ":%d -> %s (stream %s; dry run: not published)\n", SLICE_FIRST,
                                             recs[SLICE_FIRST - 1].subject, recs[SLICE_FIRST - 1].origin);
    g_assert_nonnull(strstr(dry.out, line1));
    g_assert_nonnull(strstr(dry.err, "would replay 5000 of 5000"));
    g_assert_cmpuint(msgs_of("ORDERS"), ==, orders0);

    /* The first run, interrupted once about 2,000 are in. */
    const char *argv1[] = { bin, "dlq", "-s", url, "replay", "--rate", rate, "--from", first, "--until", last, NULL };
    g_autoptr(GError) e = NULL;
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                                                 G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_set_child_setup(l, die_with_parent, NULL, NULL);
    g_autoptr(GSubprocess) p1 = g_subprocess_launcher_spawnv(l, argv1, &e);
    g_assert_no_error(e);
    while (msgs_of("ORDERS") + msgs_of("PAYMENTS") - orders0 - pay0 < 2000)
        g_usleep(20000);
    g_subprocess_send_signal(p1, SIGINT);
    g_autofree char *err1 = NULL;
    g_assert_true(g_subprocess_communicate_utf8(p1, NULL, NULL, NULL, &err1, &e));
    g_test_message("first run:\n%s", err1);
    g_assert_true(g_subprocess_get_if_exited(p1));
    g_assert_cmpint(g_subprocess_get_exit_status(p1), ==, 130);
    const char *from = strstr(err1, "--from ");
    g_assert_nonnull(from);
    guint64 resume = g_ascii_strtoull(from + 7, NULL, 10);
    g_assert_cmpuint(resume, >, SLICE_FIRST + 1500);
    g_assert_cmpuint(resume, <, SLICE_LAST);
    /* Everything before the resume point is in, nothing after it. */
    guint64 in1 = msgs_of("ORDERS") + msgs_of("PAYMENTS") - orders0 - pay0;
    g_assert_cmpuint(in1, ==, resume - SLICE_FIRST);

    /* Resumed where it said. */
    g_autofree char *resume_s = g_strdup_printf("%" G_GUINT64_FORMAT, resume);
    g_auto(Run) r2 = dlq("replay", "--rate", rate, "--from", resume_s, "--until", last, NULL);
    g_assert_cmpint(r2.rc, ==, 0);
    double secs = summary_secs(err1) + summary_secs(r2.err);
    double want = (double)(SLICE_LAST - SLICE_FIRST) / RATE;
    printf("# replay of 5000 records at %d/s, interrupted at %" G_GUINT64_FORMAT " and resumed: %.2f s (the rate "
           "implies %.2f s)\n", RATE, resume, secs, want);
    /* Never faster than the rate; slower only by what publishing costs on
     * a loaded machine (a quarter, and 2 s). */
    g_assert_cmpfloat(secs, >=, want - 0.05);
    g_assert_cmpfloat(secs, <=, want * 1.25 + 2);

    /* Exactly once: 5,000 messages, one for each record of the slice. */
    guint64 n_orders = 0, n_pay = 0;
    g_autoptr(GHashTable) o = replay_ofs("ORDERS", 1, &n_orders);
    g_autoptr(GHashTable) p = replay_ofs("PAYMENTS", 1, &n_pay);
    g_assert_cmpuint(n_orders + n_pay, ==, SLICE_LAST - SLICE_FIRST + 1);
    for (guint64 seq = SLICE_FIRST; seq <= SLICE_LAST; seq++) {
        g_autofree char *of = g_strdup_printf(DLQ ":%" G_GUINT64_FORMAT, seq);
        const Rec *rec = &recs[seq - 1];
        GHashTable *where = strcmp(rec->origin, "ORDERS") == 0 ? o : p;
        g_assert_true(g_hash_table_contains(where, of));
    }

    /* The whole slice again, by mistake: the targets keep the first of
     * each. */
    g_auto(Run) r3 = dlq("replay", "--from", first, "--until", last, NULL);
    g_assert_cmpint(r3.rc, ==, 0);
    g_assert_nonnull(strstr(r3.err, "replayed 5000 of 5000 (5000 already replayed"));
    g_assert_cmpuint(msgs_of("ORDERS") + msgs_of("PAYMENTS") - orders0 - pay0, ==, 5000);
}

/* --- removal --------------------------------------------------------------------- */

static GArray *all_seqs(const char *stream)
{
    g_auto(Run) r = dlq("--stream", stream, "--json", "list", NULL);
    g_assert_cmpint(r.rc, ==, 0);
    return json_seqs(r.out);
}

static void test_rm_purge(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(seed + 1);
    Rec *rr = make_records("DLQ_RM", "rm.dlq", 2000, rand);
    gboolean *gone = g_new0(gboolean, 2001);

    g_auto(Run) rm = dlq("--stream", "DLQ_RM", "rm", "--yes", "9", "5", "7", NULL);
    g_assert_cmpint(rm.rc, ==, 0);
    g_assert_cmpstr(rm.out, ==, "removed DLQ_RM:5\nremoved DLQ_RM:7\nremoved DLQ_RM:9\n");
    gone[5] = gone[7] = gone[9] = TRUE;
    g_auto(Run) again = dlq("--stream", "DLQ_RM", "rm", "--yes", "5", "6", NULL);
    g_assert_cmpint(again.rc, ==, 1);
    g_assert_nonnull(strstr(again.err, "no record DLQ_RM:5"));
    gone[6] = TRUE;
    /* Past the end: "no record" too (the server says it another way). */
    g_auto(Run) past = dlq("--stream", "DLQ_RM", "rm", "--yes", "999999", NULL);
    g_assert_cmpint(past.rc, ==, 1);
    g_assert_nonnull(strstr(past.err, "no record DLQ_RM:999999"));
    /* rm names records; a filter alone is purge's. */
    g_auto(Run) rmf = dlq("--stream", "DLQ_RM", "rm", "--yes", "--cause", "rejected", NULL);
    g_assert_cmpint(rmf.rc, ==, 2);
    g_assert_nonnull(strstr(rmf.err, "purge takes a filter"));
    g_auto(Run) range = dlq("--stream", "DLQ_RM", "rm", "--yes", "100-110", NULL);
    g_assert_cmpint(range.rc, ==, 0);
    g_assert_cmpuint(jet_test_count_lines(range.out, "removed"), ==, 11);
    for (int i = 100; i <= 110; i++)
        gone[i] = TRUE;

    /* No terminal to ask on and no --yes: nothing removed. */
    g_auto(Run) ask = dlq("--stream", "DLQ_RM", "rm", "200", NULL);
    g_assert_cmpint(ask.rc, ==, 2);
    g_assert_nonnull(strstr(ask.err, "give --yes"));
    g_auto(Run) pask = dlq("--stream", "DLQ_RM", "purge", "--cause", "rejected", NULL);
    g_assert_cmpint(pask.rc, ==, 2);
    g_auto(Run) nofilter = dlq("--stream", "DLQ_RM", "purge", "--yes", NULL);
    g_assert_cmpint(nofilter.rc, ==, 2);
    g_assert_nonnull(strstr(nofilter.err, "--all"));

    /* --dry-run names them and removes nothing. */
    guint want = 0;
    for (guint i = 0; i < 2000; i++)
        want += !gone[rr[i].seq] && strcmp(rr[i].cause, "rejected") == 0 && strcmp(rr[i].origin, "ORDERS") == 0;
    g_auto(Run) dry = dlq("--stream", "DLQ_RM", "purge", "--dry-run", "--cause", "rejected", "--origin", "ORDERS",
                          NULL);
    g_assert_cmpint(dry.rc, ==, 0);
    g_assert_cmpuint(jet_test_count_lines(dry.out, "would remove DLQ_RM:"), ==, want);
    g_assert_cmpuint(msgs_of("DLQ_RM"), ==, 2000 - 15);

    g_auto(Run) purge = dlq("--stream", "DLQ_RM", "purge", "--yes", "--cause", "rejected", "--origin", "ORDERS", NULL);
    g_assert_cmpint(purge.rc, ==, 0);
    g_assert_cmpuint(jet_test_count_lines(purge.out, "removed DLQ_RM:"), ==, want);
    for (guint i = 0; i < 2000; i++)
        if (strcmp(rr[i].cause, "rejected") == 0 && strcmp(rr[i].origin, "ORDERS") == 0)
            gone[rr[i].seq] = TRUE;

    /* Exactly the chosen ones are gone. */
    g_autoptr(GArray) left = all_seqs("DLQ_RM");
    guint k = 0;
    for (guint64 seq = 1; seq <= 2000; seq++) {
        if (gone[seq])
            continue;
        g_assert_cmpuint(k, <, left->len);
        g_assert_cmpuint(g_array_index(left, guint64, k), ==, seq);
        k++;
    }
    g_assert_cmpuint(left->len, ==, k);

    g_auto(Run) all = dlq("--stream", "DLQ_RM", "purge", "--all", "--yes", NULL);
    g_assert_cmpint(all.rc, ==, 0);
    g_assert_cmpuint(msgs_of("DLQ_RM"), ==, 0);
    g_free(gone);
    free_records(rr, 2000);
}

/* The confirmation on a terminal (script(1) gives the command one): "n"
 * keeps, "y" removes. */
static void test_confirm_terminal(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(seed + 2);
    Rec *rr = make_records("DLQ_ASK", "ask.dlq", 10, rand);
    g_autofree char *bin = jet_test_jethost_path();
    const char *answers[] = { "n\n", "y\n" };
    for (gsize i = 0; i < 2; i++) {
        g_autofree char *cmd = g_strdup_printf("%s dlq -s %s --stream DLQ_ASK rm 3 4", bin, jet_test_server_url(srv));
        const char *argv[] = { "script", "-qec", cmd, "/dev/null", NULL };
        g_autoptr(GError) e = NULL;
        g_autoptr(GSubprocess) p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
                                                     &e);
        if (p == NULL)
            g_error("cannot run script(1) (util-linux): %s", e->message);
        g_autofree char *out = NULL;
        g_assert_true(g_subprocess_communicate_utf8(p, answers[i], NULL, &out, NULL, &e));
        g_test_message("answer %s:\n%s", answers[i], out);
        g_assert_nonnull(strstr(out, "Remove 2 records from DLQ_ASK (2 given)? This cannot be undone. [y/N]"));
        g_assert_cmpuint(msgs_of("DLQ_ASK"), ==, i == 0 ? 10 : 8);
    }

    /* A replay on a terminal: the progress line (count, bar, percentage,
     * rate, time left, then done) stands for the per-record lines. */
    g_autofree char *cmd = g_strdup_printf("%s dlq -s %s --stream DLQ_ASK replay --again --rate 20 1-10", bin,
                                           jet_test_server_url(srv));
    const char *argv[] = { "script", "-qec", cmd, "/dev/null", NULL };
    g_autoptr(GError) e = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &e);
    g_assert_no_error(e);
    g_autofree char *out = NULL;
    g_assert_true(g_subprocess_communicate_utf8(p, NULL, NULL, &out, NULL, &e));
    g_autofree char *shown = g_strescape(out, NULL);
    g_test_message("replay on a terminal: %s", shown);
    g_assert_true(g_regex_match_simple("\\r[0-9]/8 \\[[=> ]+\\] +[0-9]+%  [0-9]+/s  0:0[0-9] left", out, 0, 0));
    g_assert_nonnull(strstr(out, "8/8 ["));
    g_assert_nonnull(strstr(out, "100%"));
    g_assert_nonnull(strstr(out, "done"));
    g_assert_nonnull(strstr(out, "replayed 8 of 8"));
    g_assert_null(strstr(out, " -> "));
    free_records(rr, 10);
}

/* replay --remove: a record goes once its replay is acknowledged; a
 * refused one stays. */
static void test_replay_remove(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(seed + 3);
    Rec *rr = make_records("DLQ_RR", "rr.dlq", 50, rand);
    /* One more whose origin stream does not exist. */
    Rec lost = { .cause = "rejected", .origin = "GONE", .consumer = "c", .binding = "b", .plugin = "p",
                 .host = "h", .reason = "r", .subject = g_strdup("gone.x") };
    publish_record("rr.dlq.b", &lost, 1, 0);
    jet_test_publish_wait(js);
    guint64 before = msgs_of("ORDERS") + msgs_of("PAYMENTS");
    g_auto(Run) r = dlq("--stream", "DLQ_RR", "replay", "--remove", "--from", "1", NULL);
    g_assert_cmpint(r.rc, ==, 1);   /* one refused */
    g_assert_nonnull(strstr(r.err, "DLQ_RR:51: refused: origin stream GONE does not exist"));
    g_assert_nonnull(strstr(r.err, "replayed 50 of 51, removed 50, refused 1"));
    g_assert_cmpuint(msgs_of("ORDERS") + msgs_of("PAYMENTS"), ==, before + 50);
    g_autoptr(GArray) left = all_seqs("DLQ_RR");
    g_assert_cmpuint(left->len, ==, 1);
    g_assert_cmpuint(g_array_index(left, guint64, 0), ==, 51);
    g_free(lost.subject);
    free_records(rr, 50);
}

/* --- show: a record's story ----------------------------------------------------------- */

static void test_show_story(void)
{
    guint64 seq = 0;
    for (guint i = 0; i < N_RECORDS && seq == 0; i++)
        if (strcmp(recs[i].cause, "poison") == 0)
            seq = recs[i].seq;
    g_autofree char *s = g_strdup_printf("%" G_GUINT64_FORMAT, seq);
    g_auto(Run) r = dlq("show", s, NULL);
    g_assert_cmpint(r.rc, ==, 0);
    const Rec *rec = &recs[seq - 1];
    g_autofree char *origin = g_strdup_printf("\n  Origin:          %s:%" G_GUINT64_FORMAT "\n", rec->origin, seq);
    g_autofree char *plugin = g_strdup_printf("\n  Plugin:          %s 1.2.3\n  Host:            %s\n", rec->plugin,
                                              rec->host);
    g_assert_nonnull(strstr(r.out, "\n  Cause:           poison\n"));
    g_assert_nonnull(strstr(r.out, origin));
    g_assert_nonnull(strstr(r.out, plugin));
    g_assert_nonnull(strstr(r.out, "\n  First failure:   2026-11-30T02:00:00.000000000Z\n"));
    g_assert_nonnull(strstr(r.out, "\n  Attempts:        5 deliveries, 4 failures, 1 postpones, 3 crash strikes\n"));
    g_assert_nonnull(strstr(r.out, "\nJethost-Crash-Strikes: 3\n"));
    g_assert_true(g_str_has_suffix(r.out, " bytes (--payload shows them)\n"));
    g_auto(Run) pl = dlq("show", "--payload", s, NULL);
    g_autofree char *body = g_strdup_printf("bytes, text:\n{\"order\":%" G_GUINT64_FORMAT ",", seq);
    g_assert_nonnull(strstr(pl.out, body));
}

/* The server killed in the middle of a read and of a replay: the command
 * ends with exit 1 and says why (a replay: where to go on), what it printed
 * before is whole, nothing crashes.  Runs last: it takes the server. */
static void test_server_gone(void)
{
    g_autofree char *bin = jet_test_jethost_path();
    const char *url = jet_test_server_url(srv);
    g_autoptr(GError) e = NULL;
    const char *read_argv[] = { bin, "dlq", "-s", url, "--json", "list", NULL };
    const char *replay_argv[] = { bin, "dlq", "-s", url, "replay", "--again", "--rate", "200", "--from", "1", NULL };
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                                 G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_set_child_setup(l, die_with_parent, NULL, NULL);
    g_autoptr(GSubprocess) reader = g_subprocess_launcher_spawnv(l, read_argv, &e);
    g_assert_no_error(e);
    g_autoptr(GSubprocess) replayer = g_subprocess_launcher_spawnv(l, replay_argv, &e);
    g_assert_no_error(e);
    /* Both under way: the reader's first lines out, the replay's first
     * records in. */
    GInputStream *rs = g_subprocess_get_stdout_pipe(reader);
    char buf[4096];
    g_assert_cmpint(g_input_stream_read(rs, buf, sizeof buf, NULL, &e), >, 0);
    while (msgs_of("ORDERS") + msgs_of("PAYMENTS") < 5000 + 50 + 20)
        g_usleep(10000);
    jet_test_server_kill(srv);

    GSubprocess *procs[] = { reader, replayer };
    for (gsize i = 0; i < 2; i++) {
        g_autofree char *out = NULL, *err = NULL;
        g_assert_true(g_subprocess_communicate_utf8(procs[i], NULL, NULL, &out, &err, &e));
        g_test_message("%s:\n%s", i == 0 ? "list" : "replay", err);
        g_assert_true(g_subprocess_get_if_exited(procs[i]));
        g_assert_cmpint(g_subprocess_get_exit_status(procs[i]), ==, 1);
        g_assert_true(g_str_has_prefix(err, "jethost dlq: ") || strstr(err, "\njethost dlq: ") != NULL);
        /* Whole lines only. */
        g_assert_true(*out == '\0' || g_str_has_suffix(out, "\n"));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    const char *env = g_getenv("JET_ONCALL_SEED");
    seed = env != NULL ? (guint32)g_ascii_strtoull(env, NULL, 10) : g_random_int();
    g_test_message("seed %u (JET_ONCALL_SEED repeats it)", seed);
    printf("# seed %u (JET_ONCALL_SEED=%u repeats this run)\n", seed, seed);
    srv = jet_test_server_start();
    js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_stream_create(js, "PAYMENTS", "pay.>");
    g_autoptr(GRand) rand = g_rand_new_with_seed(seed);
    gint64 t0 = g_get_monotonic_time();
    recs = make_records(DLQ, "jethost.dlq", N_RECORDS, rand);
    printf("# %u records written in %.1f s\n", N_RECORDS, (double)(g_get_monotonic_time() - t0) / 1e6);

    g_test_add_func("/dlq-oncall/filters", test_filters);
    g_test_add_func("/dlq-oncall/stats", test_stats);
    g_test_add_func("/dlq-oncall/show-story", test_show_story);
    g_test_add_func("/dlq-oncall/read-time", test_read_time);
    g_test_add_func("/dlq-oncall/replay-slice", test_replay_slice);
    g_test_add_func("/dlq-oncall/replay-remove", test_replay_remove);
    g_test_add_func("/dlq-oncall/rm-purge", test_rm_purge);
    g_test_add_func("/dlq-oncall/confirm-terminal", test_confirm_terminal);
    g_test_add_func("/dlq-oncall/server-gone", test_server_gone);
    int rc = g_test_run();
    free_records(recs, N_RECORDS);
    jet_test_js_close(nc, js);
    jet_test_server_free(srv);
    return rc;
}
