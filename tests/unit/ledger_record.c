/* The ledger record (host/core/ledger_record.c): crash attribution, key encoding,
 * record serialisation.  No server. */
#include "ledger_record.h"

#include <glib.h>
#include <string.h>

/* --- attribution ------------------------------------------------------------ */

static JetLedgerRecord rec_of(guint32 f, guint32 p, guint32 r, guint32 s, guint32 a, gboolean iso)
{
    JetLedgerRecord rec;
    jet_ledger_record_init(&rec);
    rec.failures = f;
    rec.postpones = p;
    rec.releases = r;
    rec.strikes = s;
    rec.absolved = a;
    rec.isolated = iso;
    if (iso)
        g_strlcpy(rec.isolated_by, "host-a", sizeof rec.isolated_by);
    rec.revision = 7;
    return rec;
}

static void test_first_delivery(void)
{
    JetAttribution a;
    jet_attribution_decide(NULL, 1, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
    g_assert_cmpuint(a.unexplained, ==, 0);
    g_assert_false(a.strike);
    g_assert_cmpuint(a.strikes, ==, 0);
    /* 0 is not a delivery count the server sends: read as 1, never as -1. */
    jet_attribution_decide(NULL, 0, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
    g_assert_cmpuint(a.unexplained, ==, 0);
    /* An empty record explains nothing, but the first delivery needs nothing. */
    JetLedgerRecord r = rec_of(0, 0, 0, 0, 0, FALSE);
    jet_attribution_decide(&r, 1, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
}

static void test_redelivery_without_record(void)
{
    JetAttribution a;
    jet_attribution_decide(NULL, 2, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
    g_assert_cmpuint(a.unexplained, ==, 1);
    g_assert_false(a.strike);
    g_assert_cmpuint(a.strikes, ==, 0);
    g_assert_cmpuint(a.absolve_to, ==, 1);
    jet_attribution_decide(NULL, 9, 3, &a);
    g_assert_cmpuint(a.unexplained, ==, 8);
    g_assert_cmpuint(a.absolve_to, ==, 8);
}

/* Each term of the sum explains exactly one delivery. */
static void test_each_component(void)
{
    const struct { const char *name; JetLedgerRecord r; } one[] = {
        { "failures", rec_of(1, 0, 0, 0, 0, FALSE) },
        { "postpones", rec_of(0, 1, 0, 0, 0, FALSE) },
        { "releases", rec_of(0, 0, 1, 0, 0, FALSE) },
        { "strikes", rec_of(0, 0, 0, 1, 0, FALSE) },
        { "absolved", rec_of(0, 0, 0, 0, 1, FALSE) },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(one); i++) {
        JetAttribution a;
        g_test_message("%s", one[i].name);
        jet_attribution_decide(&one[i].r, 2, 0, &a);
        g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
        g_assert_cmpuint(a.unexplained, ==, 0);
        jet_attribution_decide(&one[i].r, 3, 0, &a);
        g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
        g_assert_cmpuint(a.unexplained, ==, 1);
    }
    JetLedgerRecord all = rec_of(3, 5, 2, 1, 4, FALSE);
    JetAttribution a;
    jet_attribution_decide(&all, 16, 0, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
    jet_attribution_decide(&all, 17, 0, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
    g_assert_cmpuint(a.unexplained, ==, 1);
    g_assert_cmpuint(a.absolve_to, ==, 5);
}

/* A server crash can roll the delivery count back below what the ledger
 * explains: the difference is floored at zero, never wraps. */
static void test_counts_backwards(void)
{
    JetLedgerRecord r = rec_of(5, 4, 3, 0, 0, FALSE);
    for (guint32 d = 0; d <= 13; d++) {
        JetAttribution a;
        jet_attribution_decide(&r, d, 3, &a);
        g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
        g_assert_cmpuint(a.unexplained, ==, 0);
    }
    JetLedgerRecord huge = rec_of(G_MAXUINT32, G_MAXUINT32, G_MAXUINT32, 0, G_MAXUINT32, FALSE);
    JetAttribution a;
    jet_attribution_decide(&huge, G_MAXUINT32, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
    g_assert_cmpuint(a.unexplained, ==, 0);
    jet_attribution_decide(NULL, G_MAXUINT32, 3, &a);
    g_assert_cmpuint(a.unexplained, ==, G_MAXUINT32 - 1);
    g_assert_cmpuint(a.absolve_to, ==, G_MAXUINT32 - 1);
    /* Strikes saturate rather than wrap. */
    JetLedgerRecord s = rec_of(0, 0, 0, G_MAXUINT32, 0, TRUE);
    jet_attribution_decide(&s, 2, 0, &a);
    g_assert_cmpuint(a.strikes, ==, G_MAXUINT32);
}

/* A delivery that finds the marker set is exactly one strike, whatever the
 * delivery count says, and the message stays a suspect. */
static void test_marker_is_one_strike(void)
{
    JetAttribution a;
    JetLedgerRecord r = rec_of(0, 0, 0, 0, 0, TRUE);
    jet_attribution_decide(&r, 3, 3, &a);
    g_assert_true(a.strike);
    g_assert_cmpuint(a.strikes, ==, 1);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
    g_assert_cmpuint(a.unexplained, ==, 1);   /* 3 - 1 - the strike */
    /* The marker alone makes it a suspect, even when counts went backwards. */
    jet_attribution_decide(&r, 1, 3, &a);
    g_assert_true(a.strike);
    g_assert_cmpuint(a.unexplained, ==, 0);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
    /* Earlier strikes are kept, not re-counted without a marker. */
    JetLedgerRecord k = rec_of(1, 0, 0, 2, 0, FALSE);
    jet_attribution_decide(&k, 4, 3, &a);
    g_assert_false(a.strike);
    g_assert_cmpuint(a.strikes, ==, 2);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
}

static void test_crash_limit_edge(void)
{
    JetAttribution a;
    /* limit 3: two strikes + a marker is the third: poison. */
    JetLedgerRecord r2 = rec_of(0, 0, 0, 2, 0, TRUE);
    jet_attribution_decide(&r2, 4, 3, &a);
    g_assert_cmpuint(a.strikes, ==, 3);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_POISON);
    /* one strike + a marker is two: still a suspect. */
    JetLedgerRecord r1 = rec_of(0, 0, 0, 1, 0, TRUE);
    jet_attribution_decide(&r1, 3, 3, &a);
    g_assert_cmpuint(a.strikes, ==, 2);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
    /* at the limit without a marker (a capture that failed): poison again. */
    JetLedgerRecord r3 = rec_of(0, 0, 0, 3, 0, FALSE);
    jet_attribution_decide(&r3, 5, 3, &a);
    g_assert_false(a.strike);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_POISON);
    /* limit 1: the first strike is poison. */
    JetLedgerRecord r0 = rec_of(0, 0, 0, 0, 0, TRUE);
    jet_attribution_decide(&r0, 2, 1, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_POISON);
    /* limit 0: poison off, however many strikes. */
    JetLedgerRecord many = rec_of(0, 0, 0, 1000, 0, TRUE);
    jet_attribution_decide(&many, 2, 0, &a);
    g_assert_cmpuint(a.strikes, ==, 1001);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
}

/* Every small record, delivery count and limit against a model written
 * from the header's definition. */
static void test_exhaustive(void)
{
    guint n = 0;
    for (guint f = 0; f <= 2; f++)
    for (guint p = 0; p <= 2; p++)
    for (guint r = 0; r <= 2; r++)
    for (guint s = 0; s <= 3; s++)
    for (guint ab = 0; ab <= 2; ab++)
    for (guint iso = 0; iso <= 1; iso++)
    for (guint d = 1; d <= 14; d++)
    for (guint lim = 0; lim <= 4; lim++) {
        JetLedgerRecord rec = rec_of(f, p, r, s, ab, iso);
        JetAttribution a;
        jet_attribution_decide(&rec, d, lim, &a);
        int strikes = (int)s + (int)iso;
        int un = (int)d - 1 - (int)(f + p + r + ab) - strikes;
        if (un < 0)
            un = 0;
        JetAttributionKind k = (lim > 0 && strikes >= (int)lim) ? JET_ATTRIBUTION_POISON
                               : (iso || un > 0) ? JET_ATTRIBUTION_SUSPECT
                               : JET_ATTRIBUTION_NORMAL;
        g_assert_cmpint(a.kind, ==, k);
        g_assert_cmpuint(a.unexplained, ==, (guint)un);
        g_assert_cmpuint(a.strikes, ==, (guint)strikes);
        g_assert_cmpint(a.strike, ==, (gboolean)iso);
        if (k == JET_ATTRIBUTION_SUSPECT)
            g_assert_cmpuint(a.absolve_to, ==, ab + (guint)un);
        n++;
    }
    g_test_message("%u cases", n);
}

/* The walk the engine makes with a plugin that aborts on one message:
 * one unattributed death (it was not alone), then deaths while isolated,
 * each one strike, poison at the third. */
static void test_poison_walk(void)
{
    JetLedgerRecord rec;
    jet_ledger_record_init(&rec);
    gboolean stored = FALSE;
    guint32 d = 1;
    JetAttribution a;
    /* delivery 1: the happy path reads nothing; the host dies mid-handler. */
    jet_attribution_decide(NULL, d, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
    for (d = 2;; d++) {
        jet_attribution_decide(stored ? &rec : NULL, d, 3, &a);
        if (a.kind == JET_ATTRIBUTION_POISON)
            break;
        g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
        jet_attribution_apply_isolate(&rec, &a, "host-a", 1000 + d);
        stored = TRUE;
        /* ...and it dies while alone with it */
    }
    g_assert_cmpuint(d, ==, 5);
    g_assert_cmpuint(a.strikes, ==, 3);
}

/* A suspect that survives clears the marker and is normal afterwards; a
 * host killed between messages leaves no marker, hence no strike. */
static void test_survivor_and_between(void)
{
    JetLedgerRecord rec;
    jet_ledger_record_init(&rec);
    JetAttribution a;
    /* delivery 2 after a crash: suspect, isolated, handled, RETRY. */
    jet_attribution_decide(NULL, 2, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
    jet_attribution_apply_isolate(&rec, &a, "host-a", 1);
    g_assert_true(rec.isolated);
    g_assert_cmpstr(rec.isolated_by, ==, "host-a");
    jet_attribution_apply_survived(&rec, &a);
    jet_ledger_record_add_failure(&rec, 5, "db down");
    g_assert_false(rec.isolated);
    g_assert_cmpstr(rec.isolated_by, ==, "");
    g_assert_cmpuint(rec.absolved, ==, 1);
    /* delivery 3: fully explained. */
    jet_attribution_decide(&rec, 3, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_NORMAL);
    g_assert_cmpuint(a.strikes, ==, 0);
    /* Delivery 3 sat in the host's buffer, unhandled, when the host was
     * killed between messages: delivery 4 is unexplained, so a suspect
     * again, but there was no marker, so no strike. */
    jet_attribution_decide(&rec, 4, 3, &a);
    g_assert_cmpint(a.kind, ==, JET_ATTRIBUTION_SUSPECT);
    g_assert_false(a.strike);
    g_assert_cmpuint(a.strikes, ==, 0);
}

/* A CAS retry hands the mutation a fresh record another host may already
 * have written the same thing to: nothing is counted twice. */
static void test_apply_idempotent(void)
{
    JetLedgerRecord rec = rec_of(0, 0, 0, 1, 0, TRUE);
    JetAttribution a;
    jet_attribution_decide(&rec, 3, 3, &a);
    g_assert_cmpuint(a.strikes, ==, 2);
    jet_attribution_apply_isolate(&rec, &a, "host-a", 1);
    jet_attribution_apply_isolate(&rec, &a, "host-b", 2);
    g_assert_cmpuint(rec.strikes, ==, 2);
    g_assert_cmpstr(rec.isolated_by, ==, "host-b");
    g_assert_cmpint(rec.isolated_ns, ==, 2);
    jet_attribution_apply_survived(&rec, &a);
    jet_attribution_apply_survived(&rec, &a);
    g_assert_cmpuint(rec.absolved, ==, a.absolve_to);
    g_assert_false(rec.isolated);
}

/* --- keys ------------------------------------------------------------------- */

/* nats.c 3.4.1's validKey(), and no '\\' (valid there, not everywhere). */
static gboolean valid_kv_key(const char *k)
{
    gsize n = strlen(k);
    if (n == 0)
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        char c = k[i];
        if (c == '.') {
            if (i == 0 || i == n - 1 || k[i - 1] == '.')
                return FALSE;
        } else if (!g_ascii_isalnum(c) && c != '_' && c != '-' && c != '/' && c != '=') {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean valid_token(const char *t)
{
    return valid_kv_key(t) && strchr(t, '.') == NULL;
}

static void test_key_round_trip(void)
{
    const char *names[] = {
        "ORDERS", "c", "c-1", "a_b", "_", "__", "a.b", "with space", "tab\there", "*", ">",
        "h=abc", "=", "/", "\\", "%41", "_41", "\xc3\xbcnic\xc3\xb6" "de", "\x7f\x01", "A-Z_09/=.",
        "", "-",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *t = jet_ledger_encode_name(names[i]);
        g_test_message("\"%s\" -> %s", names[i], t);
        g_assert_true(valid_token(t));
        g_autofree char *back = jet_ledger_decode_name(t);
        g_assert_cmpstr(back, ==, names[i]);
    }
    /* Distinct names, distinct tokens. */
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
        g_assert_true(g_hash_table_add(seen, jet_ledger_encode_name(names[i])));
    /* Every byte survives. */
    char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = '\0';
    for (gsize off = 0; off < 255; off += 50) {
        char part[51];
        g_strlcpy(part, all + off, sizeof part);
        g_autofree char *t = jet_ledger_encode_name(part);
        g_assert_true(valid_token(t));
        g_autofree char *back = jet_ledger_decode_name(t);
        g_assert_cmpstr(back, ==, part);
    }
}

static void test_key_exact(void)
{
    g_autofree char *k1 = jet_ledger_key("ORDERS", "c", 42);
    g_assert_cmpstr(k1, ==, "ORDERS.c.42");
    g_autofree char *k2 = jet_ledger_key("my_stream", "con sumer", 1);
    g_assert_cmpstr(k2, ==, "my_5Fstream.con_20sumer.1");
    g_autofree char *k3 = jet_ledger_key("", "", G_MAXUINT64);
    g_assert_cmpstr(k3, ==, "_._.18446744073709551615");
    g_assert_true(valid_kv_key(k1) && valid_kv_key(k2) && valid_kv_key(k3));
    /* The stream/consumer boundary cannot be forged with a dot. */
    g_autofree char *ka = jet_ledger_key("a.b", "c", 1);
    g_autofree char *kb = jet_ledger_key("a", "b.c", 1);
    g_assert_cmpstr(ka, !=, kb);
}

static void test_key_decode_rejects(void)
{
    const char *bad[] = { "a.b", "_4", "_zz", "_4a", "_41", "_2D", "_00", "a b", "h=abcd", "", "a_" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *n = jet_ledger_decode_name(bad[i]);
        g_assert_null(n);
    }
}

static void test_key_length(void)
{
    /* JET_LEDGER_TOKEN_MAX plain bytes stay readable; one more is hashed. */
    g_autofree char *at = g_strnfill(JET_LEDGER_TOKEN_MAX, 'a');
    g_autofree char *over = g_strnfill(JET_LEDGER_TOKEN_MAX + 1, 'a');
    g_autofree char *t_at = jet_ledger_encode_name(at);
    g_autofree char *t_over = jet_ledger_encode_name(over);
    g_assert_cmpstr(t_at, ==, at);
    g_assert_true(g_str_has_prefix(t_over, "h="));
    g_assert_cmpuint(strlen(t_over), ==, 2 + 64);
    g_assert_true(valid_token(t_over));
    g_assert_null(jet_ledger_decode_name(t_over));
    /* Escapes count: 64 escaped bytes fit (192), 65 do not. */
    g_autofree char *sp64 = g_strnfill(64, ' ');
    g_autofree char *sp65 = g_strnfill(65, ' ');
    g_autofree char *t64 = jet_ledger_encode_name(sp64);
    g_autofree char *t65 = jet_ledger_encode_name(sp65);
    g_assert_cmpuint(strlen(t64), ==, 192);
    g_assert_true(g_str_has_prefix(t65, "h="));
    /* Long names that differ only at the end get different tokens. */
    g_autofree char *o2 = g_strnfill(JET_LEDGER_TOKEN_MAX + 1, 'a');
    o2[JET_LEDGER_TOKEN_MAX] = 'b';
    g_autofree char *t_o2 = jet_ledger_encode_name(o2);
    g_assert_cmpstr(t_over, !=, t_o2);
    /* The longest key there can be fits JET_LEDGER_KEY_MAX. */
    g_autofree char *worst = g_strnfill(64, '*');   /* 192 after escaping */
    g_autofree char *k = jet_ledger_key(worst, worst, G_MAXUINT64);
    g_assert_cmpuint(strlen(k) + 1, <=, JET_LEDGER_KEY_MAX);
    g_autofree char *huge = g_strnfill(100000, '*');
    g_autofree char *kh = jet_ledger_key(huge, huge, 1);
    g_assert_cmpuint(strlen(kh) + 1, <=, JET_LEDGER_KEY_MAX);
    g_assert_true(valid_kv_key(kh));
}

/* --- serialisation ---------------------------------------------------------- */

/* Field by field: struct padding is not the record. */
static void assert_same_record(const JetLedgerRecord *a, const JetLedgerRecord *b)
{
    g_assert_cmpuint(a->failures, ==, b->failures);
    g_assert_cmpuint(a->postpones, ==, b->postpones);
    g_assert_cmpuint(a->releases, ==, b->releases);
    g_assert_cmpint(a->has_first_failure, ==, b->has_first_failure);
    g_assert_cmpint(a->first_failure_ns, ==, b->first_failure_ns);
    g_assert_cmpstr(a->last_reason, ==, b->last_reason);
    g_assert_cmpuint(a->strikes, ==, b->strikes);
    g_assert_cmpuint(a->absolved, ==, b->absolved);
    g_assert_cmpint(a->isolated, ==, b->isolated);
    g_assert_cmpstr(a->isolated_by, ==, b->isolated_by);
    g_assert_cmpint(a->isolated_ns, ==, b->isolated_ns);
    g_assert_cmpuint(a->revision, ==, b->revision);
}

static void test_json_round_trip(void)
{
    JetLedgerRecord r = rec_of(3, 5, 2, 1, 4, TRUE);
    r.has_first_failure = TRUE;
    r.first_failure_ns = G_GINT64_CONSTANT(1700000000123456789);
    r.isolated_ns = G_GINT64_CONSTANT(1700000000999999999);
    jet_ledger_record_set_reason(&r, "db \"down\"\n\xc3\xa9");
    gsize len = 0;
    g_autofree char *j = jet_ledger_record_to_json(&r, &len);
    g_test_message("%s (%" G_GSIZE_FORMAT " bytes)", j, len);
    g_assert_cmpuint(len, ==, strlen(j));
    g_assert_cmpuint(len, <, 200);
    JetLedgerRecord back;
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_ledger_record_from_json(j, len, &back, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(back.revision, ==, 0);
    back.revision = r.revision;
    assert_same_record(&back, &r);

    /* Zero fields are left out; the empty record is the version alone. */
    JetLedgerRecord z;
    jet_ledger_record_init(&z);
    g_autofree char *jz = jet_ledger_record_to_json(&z, NULL);
    g_assert_cmpstr(jz, ==, "{\"v\":1}");
    /* A marker with an empty holder is still a marker. */
    z.isolated = TRUE;
    g_autofree char *ji = jet_ledger_record_to_json(&z, &len);
    g_assert_true(jet_ledger_record_from_json(ji, len, &back, NULL));
    g_assert_true(back.isolated);
    /* Extremes. */
    JetLedgerRecord m = rec_of(G_MAXUINT32, G_MAXUINT32, G_MAXUINT32, G_MAXUINT32, G_MAXUINT32, FALSE);
    m.has_first_failure = TRUE;
    m.first_failure_ns = G_MININT64;
    g_autofree char *jm = jet_ledger_record_to_json(&m, &len);
    g_assert_true(jet_ledger_record_from_json(jm, len, &back, NULL));
    back.revision = m.revision;
    assert_same_record(&back, &m);
    /* Unknown keys from a later minor change are ignored; input need not be NUL-terminated. */
    const char *extra = "{\"v\":1,\"zz\":[1,2],\"f\":2}XXXX";
    g_assert_true(jet_ledger_record_from_json(extra, strlen(extra) - 4, &back, NULL));
    g_assert_cmpuint(back.failures, ==, 2);
}

static void test_reason_limits(void)
{
    JetLedgerRecord r;
    jet_ledger_record_init(&r);
    /* 255 ASCII bytes then a 2-byte character: cut before it, not inside. */
    GString *s = g_string_new(NULL);
    for (int i = 0; i < 255; i++)
        g_string_append_c(s, 'a');
    g_string_append(s, "\xc3\xa9tail");
    jet_ledger_record_set_reason(&r, s->str);
    g_assert_cmpuint(strlen(r.last_reason), ==, 255);
    g_assert_true(g_utf8_validate(r.last_reason, -1, NULL));
    g_string_free(s, TRUE);
    /* Exactly 256 fits. */
    g_autofree char *full = g_strnfill(JET_LEDGER_REASON_MAX, 'x');
    jet_ledger_record_set_reason(&r, full);
    g_assert_cmpstr(r.last_reason, ==, full);
    /* Invalid UTF-8 is repaired, so the JSON is valid. */
    jet_ledger_record_set_reason(&r, "bad \xff\xfe byte");
    g_assert_true(g_utf8_validate(r.last_reason, -1, NULL));
    gsize len;
    g_autofree char *j = jet_ledger_record_to_json(&r, &len);
    JetLedgerRecord back;
    g_assert_true(jet_ledger_record_from_json(j, len, &back, NULL));
    g_assert_cmpstr(back.last_reason, ==, r.last_reason);
    /* NULL is "" */
    jet_ledger_record_set_reason(&r, NULL);
    g_assert_cmpstr(r.last_reason, ==, "");
    /* add_failure keeps the first failure time. */
    jet_ledger_record_add_failure(&r, 10, "one");
    jet_ledger_record_add_failure(&r, 20, "two");
    g_assert_cmpuint(r.failures, ==, 2);
    g_assert_true(r.has_first_failure);
    g_assert_cmpint(r.first_failure_ns, ==, 10);
    g_assert_cmpstr(r.last_reason, ==, "two");
    /* An over-long reason in stored JSON is cut on read, not refused. */
    g_autofree char *longr = g_strnfill(600, 'y');
    g_autofree char *lj = g_strdup_printf("{\"v\":1,\"lr\":\"%s\"}", longr);
    g_assert_true(jet_ledger_record_from_json(lj, strlen(lj), &back, NULL));
    g_assert_cmpuint(strlen(back.last_reason), ==, JET_LEDGER_REASON_MAX);
}

static void test_json_garbage(void)
{
    const char *garbage[] = {
        "", " ", "not json", "[]", "1", "null", "\"v\"", "{}", "{\"v\":2}", "{\"v\":0}",
        "{\"v\":\"1\"}", "{\"v\":1.0}", "{\"v\":1,\"f\":-1}", "{\"v\":1,\"f\":4294967296}",
        "{\"v\":1,\"f\":1.5}", "{\"v\":1,\"p\":true}", "{\"v\":1,\"lr\":5}", "{\"v\":1,\"iso\":true}",
        "{\"v\":1,\"ff\":\"x\"}", "{\"v\":1,\"s\":{}}", "{\"v\":1,\"f\":", "{\"v\":1,\"isot\":[]}",
        "\xff\xfe\x00", "{\"v\":1,\"a\":null}",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(garbage); i++) {
        JetLedgerRecord r = rec_of(1, 1, 1, 1, 1, TRUE);
        g_autoptr(GError) err = NULL;
        gsize len = strlen(garbage[i]);
        if (i == G_N_ELEMENTS(garbage) - 2)
            len = 3;   /* with the NUL inside */
        g_assert_false(jet_ledger_record_from_json(garbage[i], len, &r, &err));
        g_assert_nonnull(err);
        g_autofree char *shown = g_strescape(garbage[i], NULL);
        g_test_message("%s: %s", shown, err->message);
        /* out is left as an empty record, never half-filled */
        g_assert_cmpuint(r.failures + r.postpones + r.releases + r.strikes + r.absolved, ==, 0);
        g_assert_false(r.isolated);
    }
    JetLedgerRecord r;
    g_assert_false(jet_ledger_record_from_json(NULL, 0, &r, NULL));
}

static void test_names(void)
{
    g_assert_cmpstr(jet_attribution_kind_name(JET_ATTRIBUTION_POISON), ==, "poison");
    g_assert_cmpstr(jet_attribution_kind_name((JetAttributionKind)99), ==, "unknown");
    g_assert_cmpstr(jet_ledger_status_name(JET_LEDGER_UNREACHABLE), ==, "unreachable");
    g_assert_cmpstr(jet_ledger_status_name((JetLedgerStatus)99), ==, "unknown");
    g_autoptr(GError) e = g_error_new(JET_LEDGER_ERROR, JET_LEDGER_ERROR_UNREACHABLE, "x");
    g_autoptr(GError) c = g_error_new(JET_LEDGER_ERROR, JET_LEDGER_ERROR_CONFLICT, "x");
    g_assert_true(jet_ledger_is_unreachable_error(e));
    g_assert_false(jet_ledger_is_unreachable_error(c));
    g_assert_false(jet_ledger_is_unreachable_error(NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ledger/attribution/first-delivery", test_first_delivery);
    g_test_add_func("/ledger/attribution/redelivery-without-record", test_redelivery_without_record);
    g_test_add_func("/ledger/attribution/each-component", test_each_component);
    g_test_add_func("/ledger/attribution/counts-backwards", test_counts_backwards);
    g_test_add_func("/ledger/attribution/marker-is-one-strike", test_marker_is_one_strike);
    g_test_add_func("/ledger/attribution/crash-limit-edge", test_crash_limit_edge);
    g_test_add_func("/ledger/attribution/exhaustive", test_exhaustive);
    g_test_add_func("/ledger/attribution/poison-walk", test_poison_walk);
    g_test_add_func("/ledger/attribution/survivor-and-between", test_survivor_and_between);
    g_test_add_func("/ledger/attribution/apply-idempotent", test_apply_idempotent);
    g_test_add_func("/ledger/key/round-trip", test_key_round_trip);
    g_test_add_func("/ledger/key/exact", test_key_exact);
    g_test_add_func("/ledger/key/decode-rejects", test_key_decode_rejects);
    g_test_add_func("/ledger/key/length", test_key_length);
    g_test_add_func("/ledger/record/round-trip", test_json_round_trip);
    g_test_add_func("/ledger/record/reason-limits", test_reason_limits);
    g_test_add_func("/ledger/record/garbage", test_json_garbage);
    g_test_add_func("/ledger/names", test_names);
    return g_test_run();
}
