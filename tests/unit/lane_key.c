/* Lane keys (host/core/lane_key.c): what `key` accepts and refuses, its
 * text both ways, and the key a message carries.  No server. */
#include "lane_key.h"

#include <string.h>

/* --- parse ---------------------------------------------------------------- */

static void assert_refused(const char *text)
{
    JetLaneKeySpec spec;
    memset(&spec, 0x5a, sizeof spec);   /* a refusal must zero it */
    const char *why = NULL;
    g_assert_false(jet_lane_key_parse(text, &spec, &why));
    g_assert_nonnull(why);
    g_assert_cmpuint(strlen(why), >, 0);
    g_assert_cmpint(spec.kind, ==, JET_LANE_KEY_OFF);
    g_assert_cmpuint(spec.token, ==, 0);
    g_assert_cmpint(spec.header[0], ==, '\0');
}

static JetLaneKeySpec parse_ok(const char *text)
{
    JetLaneKeySpec spec;
    const char *why = NULL;
    if (!jet_lane_key_parse(text, &spec, &why))
        g_error("'%s' refused: %s", text, why);
    return spec;
}

/* parse(format(spec)) is spec again, and format gives the canonical text. */
static void assert_round_trip(const JetLaneKeySpec *spec, const char *canonical)
{
    g_autofree char *text = jet_lane_key_format(spec);
    g_assert_cmpstr(text, ==, canonical);
    JetLaneKeySpec back = parse_ok(text);
    g_assert_cmpint(back.kind, ==, spec->kind);
    g_assert_cmpuint(back.token, ==, spec->token);
    g_assert_cmpstr(back.header, ==, spec->header);
}

static void test_parse_header(void)
{
    JetLaneKeySpec s = parse_ok("header:Account-Id");
    g_assert_cmpint(s.kind, ==, JET_LANE_KEY_HEADER);
    g_assert_cmpstr(s.header, ==, "Account-Id");
    assert_round_trip(&s, "header:Account-Id");

    /* Every token character, and both length edges. */
    s = parse_ok("header:!#$%&'*+-.^_`|~09AZaz");
    g_assert_cmpstr(s.header, ==, "!#$%&'*+-.^_`|~09AZaz");
    s = parse_ok("header:x");
    g_assert_cmpstr(s.header, ==, "x");
    g_autofree char *name64 = g_strnfill(64, 'n');
    g_autofree char *text64 = g_strconcat("header:", name64, NULL);
    s = parse_ok(text64);
    g_assert_cmpstr(s.header, ==, name64);
    assert_round_trip(&s, text64);
}

static void test_parse_subject(void)
{
    static const struct {
        const char *text;
        guint token;
    } ok[] = {
        { "subject:1", 1 }, { "subject:2", 2 }, { "subject:99", 99 }, { "subject:255", 255 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
        JetLaneKeySpec s = parse_ok(ok[i].text);
        g_assert_cmpint(s.kind, ==, JET_LANE_KEY_SUBJECT);
        g_assert_cmpuint(s.token, ==, ok[i].token);
        assert_round_trip(&s, ok[i].text);
    }
}

static void test_parse_refused(void)
{
    g_autofree char *name65 = g_strnfill(65, 'n');
    g_autofree char *text65 = g_strconcat("header:", name65, NULL);
    g_autofree char *huge = g_strnfill(100000, '9');
    g_autofree char *huge_subject = g_strconcat("subject:", huge, NULL);
    const char *const bad[] = {
        "", "header", "header:", "header: ", "header:a b", "header:a:b", "header:a\tb", "header:a\x01",
        "header:\x7f", "header:\xc3\xa9", "header:a,b", "header:(a)", "header:a/b", "header:\"a\"",
        "header:a\r\nb", text65,
        "subject", "subject:", "subject:0", "subject:00", "subject:256", "subject:999", "subject:1000",
        "subject:-1", "subject:+1", "subject: 1", "subject:1 ", "subject:1x", "subject:x1", "subject:0x1",
        "subject:1.0", "subject:1e2", "subject:\xff", "subject:4294967297", "subject:18446744073709551617",
        huge_subject,
        "Header:a", "HEADER:a", "Subject:1", "subject1", "header=a", " header:a", "hdr:a", "token:1",
        "key:a", "none", "\x01\x02\x03", "\xef\xbb\xbfheader:a",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++)
        assert_refused(bad[i]);
}

/* The reason says which form was meant. */
static void test_parse_why(void)
{
    JetLaneKeySpec s;
    const char *why = NULL;
    g_assert_false(jet_lane_key_parse("header:a b", &s, &why));
    g_assert_nonnull(strstr(why, "header:NAME"));
    g_assert_false(jet_lane_key_parse("subject:256", &s, &why));
    g_assert_nonnull(strstr(why, "subject:N"));
    g_assert_nonnull(strstr(why, "255"));
    g_assert_false(jet_lane_key_parse("partition:1", &s, &why));
    g_assert_nonnull(strstr(why, "header:NAME or subject:N"));
}

static void test_format_off(void)
{
    JetLaneKeySpec off;
    memset(&off, 0, sizeof off);
    g_autofree char *text = jet_lane_key_format(&off);
    g_assert_cmpstr(text, ==, "none");
    /* "none" is what an unset key prints, not something `key` accepts. */
    assert_refused(text);
}

/* --- the key of a message ---------------------------------------------------- */

/* headers: name, value, name, value ..., NULL. */
static GPtrArray *hdrs(const char *first, ...)
{
    GPtrArray *a = g_ptr_array_new();
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s != NULL; s = va_arg(ap, const char *))
        g_ptr_array_add(a, (gpointer)s);
    va_end(ap);
    return a;
}

static JetLaneKeyResult key_of(const char *spec_text, const char *subject, const GPtrArray *headers,
                               const char **key, gsize *len)
{
    JetLaneKeySpec spec = parse_ok(spec_text);
    *key = (const char *)0x1;   /* must be reset */
    *len = 77;
    return jet_lane_key_of(&spec, subject, headers, key, len);
}

static void assert_keyed(const char *spec_text, const char *subject, const GPtrArray *headers,
                         const char *want)
{
    const char *k;
    gsize n;
    g_assert_cmpint(key_of(spec_text, subject, headers, &k, &n), ==, JET_LANE_KEYED);
    g_assert_cmpuint(n, ==, strlen(want));
    g_assert_true(memcmp(k, want, n) == 0);
}

static void assert_not_keyed(const char *spec_text, const char *subject, const GPtrArray *headers,
                             JetLaneKeyResult want)
{
    const char *k;
    gsize n;
    g_assert_cmpint(key_of(spec_text, subject, headers, &k, &n), ==, want);
    g_assert_null(k);
    g_assert_cmpuint(n, ==, 0);
}

static void test_header_key(void)
{
    g_autoptr(GPtrArray) one = hdrs("Other", "x", "Account", "acct-7", NULL);
    assert_keyed("header:Account", "s", one, "acct-7");
    /* The name is compared without case, both ways. */
    assert_keyed("header:ACCOUNT", "s", one, "acct-7");
    assert_keyed("header:account", NULL, one, "acct-7");
    g_autoptr(GPtrArray) lower = hdrs("account", "a", NULL);
    assert_keyed("header:AcCoUnT", "s", lower, "a");
    /* The key points into the headers, not a copy. */
    const char *k;
    gsize n;
    g_assert_cmpint(key_of("header:Account", "s", one, &k, &n), ==, JET_LANE_KEYED);
    g_assert_true(k == g_ptr_array_index(one, 3));

    /* Absent, empty, no headers at all: keyless. */
    assert_not_keyed("header:Missing", "s", one, JET_LANE_KEYLESS);
    g_autoptr(GPtrArray) empty = hdrs("Account", "", NULL);
    assert_not_keyed("header:Account", "s", empty, JET_LANE_KEYLESS);
    g_autoptr(GPtrArray) none = hdrs(NULL, NULL);
    assert_not_keyed("header:Account", "s", none, JET_LANE_KEYLESS);
    assert_not_keyed("header:Account", "s", NULL, JET_LANE_KEYLESS);
    /* A prefix of the name is another name. */
    g_autoptr(GPtrArray) longer = hdrs("Account-Id", "x", "Acc", "y", NULL);
    assert_not_keyed("header:Account", "s", longer, JET_LANE_KEYLESS);
    /* A name without its value (an odd list) is not read past the end. */
    g_autoptr(GPtrArray) odd = hdrs("Other", "x", "Account", NULL);
    assert_not_keyed("header:Account", "s", odd, JET_LANE_KEYLESS);
    /* The value is bytes: case and spaces inside count. */
    g_autoptr(GPtrArray) upper = hdrs("Account", "ACCT-7", NULL);
    assert_keyed("header:Account", "s", upper, "ACCT-7");
    g_autoptr(GPtrArray) spaced = hdrs("Account", "a b", NULL);
    assert_keyed("header:Account", "s", spaced, "a b");
    g_autoptr(GPtrArray) binary = hdrs("Account", "\x01\xff\x7f", NULL);
    assert_keyed("header:Account", "s", binary, "\x01\xff\x7f");
}

static void test_header_repeated(void)
{
    /* The same value twice (any case of the name) is one key. */
    g_autoptr(GPtrArray) same = hdrs("Account", "a", "X", "y", "ACCOUNT", "a", NULL);
    assert_keyed("header:Account", "s", same, "a");
    /* Two values cannot be one lane: whichever order. */
    g_autoptr(GPtrArray) two = hdrs("Account", "a", "account", "b", NULL);
    assert_not_keyed("header:Account", "s", two, JET_LANE_AMBIGUOUS);
    g_autoptr(GPtrArray) three = hdrs("Account", "a", "Account", "a", "Account", "A", NULL);
    assert_not_keyed("header:Account", "s", three, JET_LANE_AMBIGUOUS);
    /* An empty value beside a real one is two values, not a missing one. */
    g_autoptr(GPtrArray) empty_first = hdrs("Account", "", "Account", "a", NULL);
    assert_not_keyed("header:Account", "s", empty_first, JET_LANE_AMBIGUOUS);
    g_autoptr(GPtrArray) empty_last = hdrs("Account", "a", "Account", "", NULL);
    assert_not_keyed("header:Account", "s", empty_last, JET_LANE_AMBIGUOUS);
    /* Empty twice is still no key. */
    g_autoptr(GPtrArray) empty_twice = hdrs("Account", "", "Account", "", NULL);
    assert_not_keyed("header:Account", "s", empty_twice, JET_LANE_KEYLESS);
    /* Another header repeated with two values does not matter. */
    g_autoptr(GPtrArray) other = hdrs("Other", "1", "Account", "a", "Other", "2", NULL);
    assert_keyed("header:Account", "s", other, "a");
}

static void test_subject_key(void)
{
    assert_keyed("subject:1", "orders.eu.acct-7.created", NULL, "orders");
    assert_keyed("subject:2", "orders.eu.acct-7.created", NULL, "eu");
    assert_keyed("subject:3", "orders.eu.acct-7.created", NULL, "acct-7");
    assert_keyed("subject:4", "orders.eu.acct-7.created", NULL, "created");
    assert_keyed("subject:1", "single", NULL, "single");
    /* Fewer tokens: keyless. */
    assert_not_keyed("subject:5", "orders.eu.acct-7.created", NULL, JET_LANE_KEYLESS);
    assert_not_keyed("subject:2", "single", NULL, JET_LANE_KEYLESS);
    assert_not_keyed("subject:255", "a.b", NULL, JET_LANE_KEYLESS);
    /* Empty tokens: keyless, wherever they are. */
    assert_not_keyed("subject:2", "a..b", NULL, JET_LANE_KEYLESS);
    assert_keyed("subject:3", "a..b", NULL, "b");
    assert_not_keyed("subject:1", ".a", NULL, JET_LANE_KEYLESS);
    assert_keyed("subject:2", ".a", NULL, "a");
    assert_not_keyed("subject:2", "a.", NULL, JET_LANE_KEYLESS);
    assert_not_keyed("subject:1", "", NULL, JET_LANE_KEYLESS);
    assert_not_keyed("subject:1", ".", NULL, JET_LANE_KEYLESS);
    assert_not_keyed("subject:1", NULL, NULL, JET_LANE_KEYLESS);
    /* The headers do not matter to a subject key. */
    g_autoptr(GPtrArray) h = hdrs("subject", "x", NULL);
    assert_keyed("subject:2", "a.b", h, "b");

    /* The key points into the subject, not at a copy: the length bounds it. */
    const char *subject = "a.bc.d";
    const char *k;
    gsize n;
    g_assert_cmpint(key_of("subject:2", subject, NULL, &k, &n), ==, JET_LANE_KEYED);
    g_assert_true(k == subject + 2);
    g_assert_cmpuint(n, ==, 2);

    /* The last possible token. */
    GString *s = g_string_new(NULL);
    for (guint i = 1; i <= 255; i++)
        g_string_append_printf(s, "%st%u", i > 1 ? "." : "", i);
    assert_keyed("subject:255", s->str, NULL, "t255");
    assert_keyed("subject:128", s->str, NULL, "t128");
    g_string_append(s, ".t256");
    assert_keyed("subject:255", s->str, NULL, "t255");
    g_string_free(s, TRUE);
}

/* A spec with no key (the binding has no lanes) puts everything in one lane. */
static void test_off(void)
{
    JetLaneKeySpec off;
    memset(&off, 0, sizeof off);
    g_autoptr(GPtrArray) h = hdrs("Account", "a", NULL);
    const char *k = "x";
    gsize n = 5;
    g_assert_cmpint(jet_lane_key_of(&off, "a.b", h, &k, &n), ==, JET_LANE_KEYLESS);
    g_assert_null(k);
    g_assert_cmpuint(n, ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/lane_key/parse/header", test_parse_header);
    g_test_add_func("/lane_key/parse/subject", test_parse_subject);
    g_test_add_func("/lane_key/parse/refused", test_parse_refused);
    g_test_add_func("/lane_key/parse/why", test_parse_why);
    g_test_add_func("/lane_key/format/off", test_format_off);
    g_test_add_func("/lane_key/of/header", test_header_key);
    g_test_add_func("/lane_key/of/header-repeated", test_header_repeated);
    g_test_add_func("/lane_key/of/subject", test_subject_key);
    g_test_add_func("/lane_key/of/off", test_off);
    return g_test_run();
}
