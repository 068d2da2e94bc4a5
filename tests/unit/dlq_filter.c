/* The on-call tooling's pure parts: which records a filter selects
 * (host/core/dlq_filter.c), what stats counts (host/core/dlq_stats.c), and
 * the pace and progress line of a bulk run (host/core/progress.c).  No
 * server. */
#include "dlq_filter.h"
#include "dlq_record.h"
#include "dlq_stats.h"
#include "errors.h"
#include "progress.h"

#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS G_GINT64_CONSTANT(1000000000)
/* 2026-11-30T02:00:00Z */
#define T0 (G_GINT64_CONSTANT(1796004000) * NS)

/* A record's headers: name, value, ..., NULL. */
static GPtrArray *hdrs(const char *first, ...)
{
    GPtrArray *h = g_ptr_array_new_with_free_func(g_free);
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s != NULL; s = va_arg(ap, const char *))
        g_ptr_array_add(h, g_strdup(s));
    va_end(ap);
    return h;
}

static GPtrArray *record(const char *cause, const char *origin, const char *subject, const char *reason)
{
    return hdrs(JET_HDR_ORIGIN_STREAM, origin, JET_HDR_ORIGIN_SUBJECT, subject, JET_HDR_ORIGIN_CONSUMER, "billing",
                JET_HDR_CAUSE, cause, JET_HDR_REASON, reason, JET_HDR_BINDING, "orders", JET_HDR_PLUGIN, "orders-v2",
                JET_HDR_HOST, "h1", NULL);
}

static void add_ok(JetDlqFilter *f, const char *field, const char *value)
{
    g_autoptr(GError) e = NULL;
    if (!jet_dlq_filter_add(f, field, value, &e))
        g_error("%s=%s refused: %s", field, value, e->message);
}

static void assert_refused(const char *field, const char *value, const char *needle)
{
    g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
    g_autoptr(GError) e = NULL;
    g_assert_false(jet_dlq_filter_add(f, field, value, &e));
    g_assert_error(e, JET_ERROR, JET_ERROR_INVALID);
    g_test_message("%s=%s: %s", field, value, e->message);
    g_assert_nonnull(strstr(e->message, needle));
    g_assert_true(jet_dlq_filter_is_everything(f));
}

static void test_fields_refused(void)
{
    assert_refused("colour", "red", "no filter \"colour\"");
    assert_refused("Cause", "rejected", "no filter");   /* fields are lower case */
    assert_refused("cause", "", "empty");
    assert_refused("reason", "", "empty");
    assert_refused("cause", "rejectd", "not a cause (causes: rejected, poison");
    assert_refused("cause", "Rejected", "not a cause");
    assert_refused("cause", "none", "not a cause");
    const char *bad_patterns[] = { "a..b", ".a", "a.", "a.>.b", "a*", "*a.b", ">x", "a.b>", "a.**", ">.>" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad_patterns); i++)
        assert_refused("subject", bad_patterns[i], "not a subject pattern");
    /* The value is escaped in the message: no raw control byte. */
    g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
    g_autoptr(GError) e = NULL;
    g_assert_false(jet_dlq_filter_add(f, "cause", "x\x1b[2J", &e));
    g_assert_null(strchr(e->message, '\x1b'));
    g_assert_nonnull(strstr(e->message, "x\\x1b[2J"));
    for (const char *const *c = jet_dlq_cause_names(); *c != NULL; c++)
        add_ok(f, "cause", *c);
    g_assert_cmpuint(g_strv_length((char **)jet_dlq_cause_names()), ==, 9);
}

static void test_expr(void)
{
    g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
    g_autoptr(GError) e = NULL;
    g_assert_true(jet_dlq_filter_add_expr(f, "cause=rejected", &e));
    g_assert_true(jet_dlq_filter_add_expr(f, "reason=a=b", &e));   /* the first '=' splits */
    g_autofree char *d = jet_dlq_filter_describe(f);
    g_assert_cmpstr(d, ==, "cause=rejected reason=a=b");
    const char *bad[] = { "cause", "=rejected", "", "cause:rejected" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_clear_error(&e);
        g_assert_false(jet_dlq_filter_add_expr(f, bad[i], &e));
        g_assert_nonnull(e);
    }
    g_clear_error(&e);
    g_assert_false(jet_dlq_filter_add_expr(f, "cause=", &e));
    g_assert_nonnull(strstr(e->message, "empty"));
}

/* Alternatives within a field, every field required, a missing header
 * matches no test on it. */
static void test_match_fields(void)
{
    g_autoptr(GPtrArray) a = record("rejected", "ORDERS", "orders.eu.new", "Bad Order: missing SKU");
    g_autoptr(GPtrArray) b = record("exhausted", "ORDERS", "orders.us.new", "db down");
    g_autoptr(GPtrArray) c = record("poison", "PAYMENTS", "pay.eu", "crashed the host 3 times");
    g_autoptr(GPtrArray) bare = hdrs("X-App", "1", NULL);

    g_autoptr(JetDlqFilter) all = jet_dlq_filter_new();
    g_assert_true(jet_dlq_filter_is_everything(all));
    g_assert_true(jet_dlq_filter_matches(all, 1, T0, a));
    g_assert_true(jet_dlq_filter_matches(all, 1, T0, bare));
    g_assert_true(jet_dlq_filter_matches(all, 1, T0, NULL));
    g_autofree char *every = jet_dlq_filter_describe(all);
    g_assert_cmpstr(every, ==, "every record");

    g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
    add_ok(f, "cause", "rejected");
    add_ok(f, "cause", "poison");
    g_assert_false(jet_dlq_filter_is_everything(f));
    g_assert_true(jet_dlq_filter_matches(f, 1, T0, a));
    g_assert_false(jet_dlq_filter_matches(f, 1, T0, b));
    g_assert_true(jet_dlq_filter_matches(f, 1, T0, c));
    g_assert_false(jet_dlq_filter_matches(f, 1, T0, bare));
    g_assert_false(jet_dlq_filter_matches(f, 1, T0, NULL));
    add_ok(f, "subject", "*.eu.>");
    g_assert_true(jet_dlq_filter_matches(f, 1, T0, a));
    g_assert_false(jet_dlq_filter_matches(f, 1, T0, c));   /* pay.eu: two tokens, '>' needs one more */
    add_ok(f, "subject", "pay.*");
    g_assert_true(jet_dlq_filter_matches(f, 1, T0, c));

    /* Each exact field: equal, not a prefix, case counts. */
    const struct {
        const char *field, *yes, *no;
    } exact[] = {
        { "origin", "ORDERS", "ORDER" },   { "origin", "ORDERS", "orders" },
        { "consumer", "billing", "bill" }, { "binding", "orders", "orders2" },
        { "plugin", "orders-v2", "orders" }, { "host", "h1", "H1" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(exact); i++) {
        g_autoptr(JetDlqFilter) y = jet_dlq_filter_new();
        g_autoptr(JetDlqFilter) n = jet_dlq_filter_new();
        add_ok(y, exact[i].field, exact[i].yes);
        add_ok(n, exact[i].field, exact[i].no);
        g_assert_true(jet_dlq_filter_matches(y, 1, T0, a));
        g_assert_false(jet_dlq_filter_matches(n, 1, T0, a));
        g_assert_false(jet_dlq_filter_matches(y, 1, T0, bare));
    }

    /* Reason: a substring, ASCII case ignored; bytes that are not UTF-8 are
     * compared as they are. */
    g_autoptr(JetDlqFilter) r = jet_dlq_filter_new();
    add_ok(r, "reason", "MISSING sku");
    g_assert_true(jet_dlq_filter_matches(r, 1, T0, a));
    g_assert_false(jet_dlq_filter_matches(r, 1, T0, b));
    g_autoptr(GPtrArray) odd = record("rejected", "ORDERS", "orders.x", "bad \xff byte");
    g_autoptr(JetDlqFilter) ro = jet_dlq_filter_new();
    add_ok(ro, "reason", "\xff BYTE");
    g_assert_true(jet_dlq_filter_matches(ro, 1, T0, odd));

    /* The first occurrence of a header decides (as list and show read it). */
    g_autoptr(GPtrArray) twice = hdrs(JET_HDR_CAUSE, "poison", JET_HDR_CAUSE, "rejected", NULL);
    g_autoptr(JetDlqFilter) p = jet_dlq_filter_new();
    add_ok(p, "cause", "rejected");
    g_assert_false(jet_dlq_filter_matches(p, 1, T0, twice));
}

static gboolean set_from(JetDlqFilter *f, const char *text, GError **e)
{
    return jet_dlq_filter_set_from(f, text, T0, e);
}

/* Ends: sequences inclusive, times against the stored time, "ago" from
 * now; what cannot be read is refused with the three forms named. */
/* --from after --until, of one kind, can match nothing: refused; of two
 * kinds, or in order, let through. */
static void test_range_order(void)
{
    static const struct {
        const char *from, *until;
        gboolean ok;
    } cases[] = {
        { "10", "20", TRUE }, { "20", "20", TRUE }, { "21", "20", FALSE },
        { "2h", "1h", TRUE }, { "1h", "2h", FALSE }, { "1h", "1h", TRUE },
        { "2026-11-30T02:00:00Z", "2026-11-30T03:00:00Z", TRUE },
        { "2026-11-30T03:00:00Z", "2026-11-30T02:00:00Z", FALSE },
        /* a record's own time as both ends still matches it */
        { "2026-11-30T02:00:00.5Z", "2026-11-30T02:00:00.5Z", TRUE },
        { "10", "1h", TRUE }, { "2h", "5", TRUE },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
        g_autoptr(GError) e = NULL;
        g_assert_true(jet_dlq_filter_set_from(f, cases[i].from, T0, &e));
        g_assert_true(jet_dlq_filter_set_until(f, cases[i].until, T0, &e));
        g_assert_cmpint(jet_dlq_filter_check_range(f, &e), ==, cases[i].ok);
        if (!cases[i].ok) {
            g_test_message("%s..%s: %s", cases[i].from, cases[i].until, e->message);
            g_assert_nonnull(strstr(e->message, "comes after --until"));
        }
    }
    /* One end alone is never refused. */
    g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
    g_assert_true(jet_dlq_filter_set_from(f, "99", T0, NULL));
    g_assert_true(jet_dlq_filter_check_range(f, NULL));
}

static void test_range(void)
{
    g_autoptr(JetDlqFilter) f = jet_dlq_filter_new();
    g_autoptr(GError) e = NULL;
    g_assert_true(set_from(f, "10", &e));
    g_assert_true(jet_dlq_filter_set_until(f, "20", T0, &e));
    g_assert_false(jet_dlq_filter_is_everything(f));
    g_assert_false(jet_dlq_filter_matches(f, 9, T0, NULL));
    g_assert_true(jet_dlq_filter_matches(f, 10, T0, NULL));
    g_assert_true(jet_dlq_filter_matches(f, 20, T0, NULL));
    g_assert_false(jet_dlq_filter_matches(f, 21, T0, NULL));
    g_assert_true(jet_dlq_filter_seq_in_range(f, 10));
    g_assert_false(jet_dlq_filter_seq_in_range(f, 21));
    g_assert_true(jet_dlq_filter_before_end(f, 19, T0));
    g_assert_false(jet_dlq_filter_before_end(f, 20, T0));   /* nothing after 20 can match */
    guint64 seq = 0;
    gint64 ns = 0;
    jet_dlq_filter_start(f, &seq, &ns);
    g_assert_cmpuint(seq, ==, 10);
    g_assert_cmpint(ns, ==, 0);
    g_autofree char *d = jet_dlq_filter_describe(f);
    g_assert_cmpstr(d, ==, "from=10 until=20");

    /* Times: RFC 3339, UTC without a zone, an offset honoured. */
    g_autoptr(JetDlqFilter) t = jet_dlq_filter_new();
    g_assert_true(set_from(t, "2026-11-30T02:00:00Z", &e));
    g_assert_true(jet_dlq_filter_set_until(t, "2026-11-30T04:00:00+01:00", T0, &e));   /* 03:00Z */
    jet_dlq_filter_start(t, &seq, &ns);
    g_assert_cmpuint(seq, ==, 0);
    g_assert_cmpint(ns, ==, T0);
    g_assert_false(jet_dlq_filter_matches(t, 1, T0 - 1, NULL));
    g_assert_true(jet_dlq_filter_matches(t, 1, T0, NULL));
    g_assert_true(jet_dlq_filter_matches(t, 1, T0 + 3600 * NS, NULL));
    /* The end is read to the microsecond: the rest of it is included (a
     * record's own stored time, printed to the nanosecond, as the end). */
    g_assert_true(jet_dlq_filter_matches(t, 1, T0 + 3600 * NS + 999, NULL));
    g_assert_false(jet_dlq_filter_matches(t, 1, T0 + 3600 * NS + 1000, NULL));
    g_assert_true(jet_dlq_filter_before_end(t, 5, T0 + 3600 * NS));
    g_assert_false(jet_dlq_filter_before_end(t, 5, T0 + 3600 * NS + 999));
    g_autoptr(JetDlqFilter) own = jet_dlq_filter_new();
    g_assert_true(jet_dlq_filter_set_until(own, "2026-11-30T02:00:00.123456789Z", T0, &e));
    g_assert_true(jet_dlq_filter_matches(own, 1, T0 + 123456789, NULL));
    g_autoptr(JetDlqFilter) nz = jet_dlq_filter_new();
    g_assert_true(set_from(nz, "2026-11-30T02:00:00.5", &e));
    jet_dlq_filter_start(nz, &seq, &ns);
    g_assert_cmpint(ns, ==, T0 + NS / 2);

    /* Ago: now minus the duration. */
    g_autoptr(JetDlqFilter) ago = jet_dlq_filter_new();
    g_assert_true(set_from(ago, "90m", &e));
    jet_dlq_filter_start(ago, &seq, &ns);
    g_assert_cmpint(ns, ==, T0 - 90 * 60 * NS);

    const char *bad[] = { "0", "-5", "abc", "2026-13-01T00:00:00Z", "2026-11-30", "10s5", "1.5h", "", " 10" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(JetDlqFilter) b = jet_dlq_filter_new();
        g_clear_error(&e);
        g_assert_false(set_from(b, bad[i], &e));
        g_assert_error(e, JET_ERROR, JET_ERROR_INVALID);
        g_test_message("%s: %s", bad[i], e->message);
        g_assert_true(g_str_has_prefix(e->message, "--from"));
        g_assert_true(jet_dlq_filter_is_everything(b));
    }

    /* A limit alone narrows too. */
    g_autoptr(JetDlqFilter) l = jet_dlq_filter_new();
    jet_dlq_filter_set_limit(l, 5);
    g_assert_false(jet_dlq_filter_is_everything(l));
    g_assert_cmpuint(jet_dlq_filter_limit(l), ==, 5);
    g_autofree char *ld = jet_dlq_filter_describe(l);
    g_assert_cmpstr(ld, ==, "limit=5");
}

/* --- stats ------------------------------------------------------------------ */

static char *print_to_string(void (*fn)(FILE *, gpointer), gpointer data)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, data);
    fclose(f);
    char *s = g_strndup(buf, len);
    free(buf);
    return s;
}

typedef struct {
    JetDlqStats *s;
    guint top;
} PrintArgs;

static void print_text(FILE *f, gpointer data)
{
    PrintArgs *a = data;
    jet_dlq_stats_print_text(a->s, "JETHOST_DLQ", a->top, f);
}

static void print_json(FILE *f, gpointer data)
{
    PrintArgs *a = data;
    jet_dlq_stats_print_json(a->s, "JETHOST_DLQ", f);
}

static void test_stats(void)
{
    g_autoptr(JetDlqStats) s = jet_dlq_stats_new();
    PrintArgs pa = { s, 2 };
    g_autofree char *empty = print_to_string(print_text, &pa);
    g_assert_cmpstr(empty, ==, "JETHOST_DLQ: 0 records\n");

    /* 6 rejected on ORDERS in hour 02, 3 exhausted in hour 03, a bare one
     * and one with a subject that is not text in hour 04; added out of
     * order: oldest and newest go by sequence. */
    for (guint i = 0; i < 6; i++) {
        g_autoptr(GPtrArray) h = record("rejected", "ORDERS", i % 2 ? "orders.a" : "orders.b", "r");
        jet_dlq_stats_add(s, 10 + i, T0 + i * NS, h);
    }
    for (guint i = 0; i < 3; i++) {
        g_autoptr(GPtrArray) h = record("exhausted", "PAY", "pay.x", "r");
        jet_dlq_stats_add(s, 20 + i, T0 + 3600 * NS + i, h);
    }
    g_autoptr(GPtrArray) bare = hdrs("X", "1", NULL);
    jet_dlq_stats_add(s, 5, T0 + 2 * 3600 * NS, bare);
    g_autoptr(GPtrArray) odd = record("rejected", "ORDERS", "orders.\xff\x1b", "r");
    jet_dlq_stats_add(s, 30, T0 + 2 * 3600 * NS + 59 * 60 * NS, odd);

    g_assert_cmpuint(jet_dlq_stats_total(s), ==, 11);
    g_assert_cmpuint(jet_dlq_stats_count(s, "cause", "rejected"), ==, 7);
    g_assert_cmpuint(jet_dlq_stats_count(s, "cause", "exhausted"), ==, 3);
    g_assert_cmpuint(jet_dlq_stats_count(s, "cause", "-"), ==, 1);
    g_assert_cmpuint(jet_dlq_stats_count(s, "origin", "ORDERS"), ==, 7);
    g_assert_cmpuint(jet_dlq_stats_count(s, "origin", "PAY"), ==, 3);
    g_assert_cmpuint(jet_dlq_stats_count(s, "subject", "orders.a"), ==, 3);
    g_assert_cmpuint(jet_dlq_stats_count(s, "subject", "orders.b"), ==, 3);
    g_assert_cmpuint(jet_dlq_stats_count(s, "hour", "2026-11-30T02"), ==, 6);
    g_assert_cmpuint(jet_dlq_stats_count(s, "hour", "2026-11-30T03"), ==, 3);
    g_assert_cmpuint(jet_dlq_stats_count(s, "hour", "2026-11-30T04"), ==, 2);
    g_assert_cmpuint(jet_dlq_stats_count(s, "hour", "2026-11-30T05"), ==, 0);
    g_assert_cmpuint(jet_dlq_stats_count(s, "colour", "red"), ==, 0);

    g_autofree char *text = print_to_string(print_text, &pa);
    g_test_message("%s", text);
    g_assert_true(g_str_has_prefix(text, "JETHOST_DLQ: 11 records; oldest 5 stored 2026-11-30T04:00:00.000000000Z; "
                                         "newest 30 stored 2026-11-30T04:59:00.000000000Z\n"));
    /* Largest first, ties by key; top 2 and the rest in one line; hours
     * in time order and all of them. */
    g_assert_nonnull(strstr(text, "\nBy cause:\n         7  rejected\n         3  exhausted\n         1  (1 more)\n"));
    g_assert_nonnull(strstr(text, "\nBy subject:\n         3  orders.a\n         3  orders.b\n         5  (3 more)\n"));
    g_assert_nonnull(strstr(text, "\nBy hour (UTC):\n         6  2026-11-30T02\n         3  2026-11-30T03\n"
                                  "         2  2026-11-30T04\n"));
    g_assert_null(strchr(text, '\x1b'));
    pa.top = 0;
    g_autofree char *full = print_to_string(print_text, &pa);
    g_assert_nonnull(strstr(full, "         1  orders.\\xff\\x1b\n"));
    g_assert_null(strstr(full, "more)"));

    g_autofree char *json = print_to_string(print_json, &pa);
    g_assert_true(g_utf8_validate(json, -1, NULL));
    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_data(p, json, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    g_assert_cmpint(json_object_get_int_member(o, "total"), ==, 11);
    g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(o, "oldest"), "dlq_seq"), ==, 5);
    g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(o, "newest"), "dlq_seq"), ==, 30);
    JsonArray *by = json_object_get_array_member(o, "by_cause");
    g_assert_cmpuint(json_array_get_length(by), ==, 3);
    JsonObject *first = json_array_get_object_element(by, 0);
    g_assert_cmpstr(json_object_get_string_member(first, "cause"), ==, "rejected");
    g_assert_cmpint(json_object_get_int_member(first, "count"), ==, 7);
    /* A key that is not text travels as base64. */
    JsonArray *subj = json_object_get_array_member(o, "by_subject");
    gboolean b64 = FALSE;
    for (guint i = 0; i < json_array_get_length(subj); i++)
        b64 |= json_object_has_member(json_array_get_object_element(subj, i), "subject_base64");
    g_assert_true(b64);
}

/* --- pace and progress ------------------------------------------------------- */

static void test_pace(void)
{
    g_assert_cmpint(jet_pace_due_us(0, 100), ==, 0);
    g_assert_cmpint(jet_pace_due_us(5, 0), ==, 0);      /* no limit */
    g_assert_cmpint(jet_pace_due_us(5, -1), ==, 0);
    g_assert_cmpint(jet_pace_due_us(1, 1000), ==, 1000);
    g_assert_cmpint(jet_pace_due_us(1000, 1000), ==, 1000000);
    g_assert_cmpint(jet_pace_due_us(1, 3), ==, 333334);  /* rounded up: never early */
    g_assert_cmpint(jet_pace_due_us(3, 3), ==, 1000000);
    g_assert_cmpint(jet_pace_due_us(1, 0.5), ==, 2000000);
    g_assert_cmpint(jet_pace_due_us(G_MAXUINT64, 1e-9), ==, G_MAXINT64);
    /* Never early, never more than a microsecond late, monotonic. */
    const double rates[] = { 1, 3, 7, 250, 333.3, 1000, 99999 };
    for (gsize r = 0; r < G_N_ELEMENTS(rates); r++) {
        gint64 prev = -1;
        for (guint64 i = 0; i < 5000; i++) {
            gint64 due = jet_pace_due_us(i, rates[r]);
            double exact = (double)i * 1e6 / rates[r];
            g_assert_cmpfloat((double)due, >=, exact);
            g_assert_cmpfloat((double)due, <, exact + 1);
            g_assert_cmpint(due, >=, prev);
            prev = due;
        }
    }
}

static void test_progress(void)
{
    g_autofree char *c0 = jet_progress_clock(0), *c1 = jet_progress_clock(1), *c2 = jet_progress_clock(65 * 1000000);
    g_autofree char *c3 = jet_progress_clock((gint64)3723 * 1000000);
    g_assert_cmpstr(c0, ==, "0:00");
    g_assert_cmpstr(c1, ==, "0:01");   /* a part of a second left counts as one */
    g_assert_cmpstr(c2, ==, "1:05");
    g_assert_cmpstr(c3, ==, "1:02:03");

    /* 2,000 of 5,000 in 4 s: 500/s, 6 s left. */
    g_autofree char *narrow = jet_progress_line(2000, 5000, 4000000, 30);
    g_assert_cmpstr(narrow, ==, "2000/5000   40%  500/s  0:06 l");   /* cut to the width */
    g_assert_cmpuint(strlen(narrow), ==, 30);
    g_autofree char *wide = jet_progress_line(2000, 5000, 4000000, 80);
    g_test_message("%s", wide);
    g_assert_true(g_str_has_prefix(wide, "2000/5000 ["));
    g_assert_true(g_str_has_suffix(wide, "]   40%  500/s  0:06 left"));
    g_assert_cmpuint(strlen(wide), <=, 80);
    const char *bar = strchr(wide, '[');
    const char *end = strchr(wide, ']');
    gsize cells = (gsize)(end - bar - 1);
    gsize full = 0;
    for (const char *p = bar + 1; p < end; p++)
        full += *p == '=';
    g_assert_cmpuint(full, ==, cells * 2 / 5);
    g_assert_cmpint(bar[1 + full], ==, '>');

    g_autofree char *done = jet_progress_line(5000, 5000, 10000000, 80);
    g_assert_true(g_str_has_suffix(done, "]  100%  500/s  done"));
    g_assert_null(strchr(done, '>'));
    g_autofree char *unknown = jet_progress_line(42, 0, 1000000, 80);
    g_assert_cmpstr(unknown, ==, "42  42/s");
    g_autofree char *start = jet_progress_line(0, 10, 0, 80);
    g_assert_true(g_str_has_suffix(start, "]    0%  0/s"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/dlq-filter/fields-refused", test_fields_refused);
    g_test_add_func("/dlq-filter/expr", test_expr);
    g_test_add_func("/dlq-filter/match-fields", test_match_fields);
    g_test_add_func("/dlq-filter/range", test_range);
    g_test_add_func("/dlq-filter/range-order", test_range_order);
    g_test_add_func("/dlq-stats/counts", test_stats);
    g_test_add_func("/progress/pace", test_pace);
    g_test_add_func("/progress/line", test_progress);
    return g_test_run();
}
