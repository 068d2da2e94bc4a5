/* The header block parser and writer (host/core/hdr_block.c) without a server:
 * hostile blocks, each defect class with its line, text and reason, the
 * writer's refusals, round trips, and the helpers. */
#include "errors.h"
#include "hdr_block.h"

#include <string.h>

/* A literal with its exact length, embedded NULs included. */
#define PARSE(lit, out) jet_hdr_parse((lit), sizeof(lit) - 1, (out))

static GPtrArray *pairs(const char *first, ...) G_GNUC_NULL_TERMINATED;

/* name, value, name, value ..., NULL. */
static GPtrArray *pairs(const char *first, ...)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s != NULL; s = va_arg(ap, const char *))
        g_ptr_array_add(a, g_strdup(s));
    va_end(ap);
    return a;
}

static void assert_headers(const GPtrArray *got, const GPtrArray *want)
{
    g_assert_nonnull(got);
    g_assert_cmpuint(got->len, ==, want->len);
    for (guint i = 0; i < want->len; i++)
        g_assert_cmpstr(g_ptr_array_index(got, i), ==, g_ptr_array_index(want, i));
}

static void assert_no_headers(const JetHdrParse *p)
{
    g_assert_nonnull(p->headers);
    g_assert_cmpuint(p->headers->len, ==, 0);
}

static void assert_defect(const JetHdrParse *p, guint i, guint line, const char *text, const char *why)
{
    g_assert_cmpuint(i, <, p->defects->len);
    const JetHdrDefect *d = &g_array_index(p->defects, JetHdrDefect, i);
    g_assert_cmpuint(d->line, ==, line);
    g_assert_cmpstr(d->text, ==, text);
    g_assert_cmpstr(d->why, ==, why);
}

/* Writes headers, checks the length against jet_hdr_encoded_len, parses the
 * block back and checks it gives the same pairs with no defect. */
static char *round_trip(const GPtrArray *headers, gsize *len)
{
    g_autoptr(GError) err = NULL;
    char *block = jet_hdr_write(headers, len, &err);
    g_assert_no_error(err);
    g_assert_nonnull(block);
    g_assert_cmpuint(*len, ==, jet_hdr_encoded_len(headers));
    g_assert_cmpuint(*len, >=, JET_HDR_FRAME_BYTES);
    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(jet_hdr_parse(block, *len, &p));
    g_assert_cmpuint(p.defects->len, ==, 0);
    assert_headers(p.headers, headers);
    return block;
}

static void assert_write_refused(const GPtrArray *headers, const char *in_message)
{
    g_autoptr(GError) err = NULL;
    gsize len = 99;
    g_autofree char *block = jet_hdr_write(headers, &len, &err);
    g_assert_null(block);
    g_assert_cmpuint(len, ==, 0);
    g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, in_message));
}

static void test_empty(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(jet_hdr_parse("", 0, &p));
    assert_no_headers(&p);
    g_assert_cmpuint(p.defects->len, ==, 0);

    /* Length 0 wins over the bytes behind the pointer. */
    g_auto(JetHdrParse) q = { 0 };
    g_assert_true(jet_hdr_parse("garbage", 0, &q));
    assert_no_headers(&q);
    g_assert_cmpuint(q.defects->len, ==, 0);

    g_auto(JetHdrParse) r = { 0 };
    g_assert_true(jet_hdr_parse(NULL, 0, &r));
    assert_no_headers(&r);
    g_assert_cmpuint(r.defects->len, ==, 0);

    /* The bare frame: valid, and nothing in it. */
    g_auto(JetHdrParse) f = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\n\r\n", &f));
    assert_no_headers(&f);
    g_assert_cmpuint(f.defects->len, ==, 0);

    /* Clearing twice, and clearing a cleared parse, are harmless. */
    jet_hdr_parse_clear(&f);
    jet_hdr_parse_clear(&f);
    g_assert_null(f.headers);
    g_assert_null(f.defects);
    jet_hdr_parse_clear(NULL);
}

static void test_simple(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\n"
                        "B: 2\r\n"
                        "A:1\r\n"
                        "Spaced: \t  lots of  room \t \r\n"
                        "B: again\r\n"
                        "Colons: a:b: c\r\n"
                        "Tabbed:\tx\ty\r\n"
                        "\r\n", &p));
    g_assert_cmpuint(p.defects->len, ==, 0);
    g_autoptr(GPtrArray) want = pairs("B", "2", "A", "1", "Spaced", "lots of  room", "B", "again",
                                      "Colons", "a:b: c", "Tabbed", "x\ty", NULL);
    assert_headers(p.headers, want);
}

/* A name with CR LF in it, as a careless producer writes it: "p" becomes a
 * line of its own, and what followed the CR LF reads as a real header. */
static void test_crlf_in_name(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\n"
                         "p\r\nNats-Msg-Id: x\r\n"
                         "\r\n", &p));
    g_autoptr(GPtrArray) want = pairs("Nats-Msg-Id", "x", NULL);
    assert_headers(p.headers, want);
    g_assert_cmpuint(p.defects->len, ==, 1);
    assert_defect(&p, 0, 2, "p", "no colon");

    /* The writer never produces such a block. */
    g_autoptr(GPtrArray) bad = pairs("p\r\nNats-Msg-Id", "x", NULL);
    assert_write_refused(bad, "p\\x0d\\x0aNats-Msg-Id");
    g_autoptr(GPtrArray) bad_value = pairs("A", "1\r\nNats-Msg-Id: x", NULL);
    assert_write_refused(bad_value, "header A: the value holds CR or LF");
}

static void test_bare_cr_lf(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\n"
                         "X-\nA: v\r\n"
                         "Y-\rB: v\r\n"
                         "Value: a\nb\r\n"
                         "Tail: a\r\r\n"
                         "Lead: \nb\r\n"
                         "Ok: 1\r\n"
                         "\r\n", &p));
    g_autoptr(GPtrArray) want = pairs("Ok", "1", NULL);
    assert_headers(p.headers, want);
    g_assert_cmpuint(p.defects->len, ==, 5);
    assert_defect(&p, 0, 2, "X-\\x0aA:\\x20v", "bare CR or LF");
    assert_defect(&p, 1, 3, "Y-\\x0dB:\\x20v", "bare CR or LF");
    assert_defect(&p, 2, 4, "Value:\\x20a\\x0ab", "bare CR or LF");
    assert_defect(&p, 3, 5, "Tail:\\x20a\\x0d", "bare CR or LF");
    assert_defect(&p, 4, 6, "Lead:\\x20\\x0ab", "bare CR or LF");

    /* LF LF is not a blank line: only CR LF ends a line. */
    g_auto(JetHdrParse) q = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\nA: 1\n\nB: 2\r\n\r\n", &q));
    assert_no_headers(&q);
    g_assert_cmpuint(q.defects->len, ==, 1);
    assert_defect(&q, 0, 2, "A:\\x201\\x0a\\x0aB:\\x202", "bare CR or LF");
}

static void test_name_chars(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\n"
                         "X Y: 1\r\n"
                         "X : 2\r\n"
                         ": 3\r\n"
                         "Qu\"ote: 4\r\n"
                         "(x): 5\r\n"
                         "caf\xc3\xa9: 6\r\n"
                         "Del\x7f: 7\r\n"
                         "a/b: 8\r\n"
                         "!#$%&'*+-.^_`|~09azAZ: 9\r\n"
                         "\r\n", &p));
    g_autoptr(GPtrArray) want = pairs("!#$%&'*+-.^_`|~09azAZ", "9", NULL);
    assert_headers(p.headers, want);
    const char *token = "name has a character outside the token set";
    g_assert_cmpuint(p.defects->len, ==, 8);
    assert_defect(&p, 0, 2, "X\\x20Y:\\x201", token);
    assert_defect(&p, 1, 3, "X\\x20:\\x202", token);
    assert_defect(&p, 2, 4, ":\\x203", "empty name");
    assert_defect(&p, 3, 5, "Qu\\x22ote:\\x204", token);
    assert_defect(&p, 4, 6, "(x):\\x205", token);
    assert_defect(&p, 5, 7, "caf\\xc3\\xa9:\\x206", token);
    assert_defect(&p, 6, 8, "Del\\x7f:\\x207", token);
    assert_defect(&p, 7, 9, "a/b:\\x208", token);

    /* A colon cannot be in a name: the first one ends it, and the rest is
     * the value.  The writer refuses such a name, so it never writes one. */
    g_auto(JetHdrParse) c = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\na:b: v\r\n\r\n", &c));
    g_autoptr(GPtrArray) colon = pairs("a", "b: v", NULL);
    assert_headers(c.headers, colon);
    g_autoptr(GPtrArray) bad = pairs("a:b", "v", NULL);
    assert_write_refused(bad, "a:b");
}

static void test_continuation(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\n"
                         " X: 1\r\n"
                         "A: 2\r\n"
                         "\tfolded\r\n"
                         "  B: 3\r\n"
                         "C: 4\r\n"
                         "\r\n", &p));
    g_autoptr(GPtrArray) want = pairs("A", "2", "C", "4", NULL);
    assert_headers(p.headers, want);
    const char *why = "continuation line (starts with a space or tab)";
    g_assert_cmpuint(p.defects->len, ==, 3);
    assert_defect(&p, 0, 2, "\\x20X:\\x201", why);
    assert_defect(&p, 1, 4, "\\x09folded", why);
    assert_defect(&p, 2, 5, "\\x20\\x20B:\\x203", why);

    /* A line of blanks only is neither the end nor a header. */
    g_auto(JetHdrParse) q = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\n \r\nA: 1\r\n\r\n", &q));
    g_autoptr(GPtrArray) a = pairs("A", "1", NULL);
    assert_headers(q.headers, a);
    g_assert_cmpuint(q.defects->len, ==, 1);
    assert_defect(&q, 0, 2, "\\x20", why);
}

/* nats.c joins an empty value to the next line; the host must not. */
static void test_empty_values(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\n"
                        "X-Empty:\r\n"
                        "X-After: v\r\n"
                        "X-Blank:   \t \r\n"
                        "X-Mid:\r\n"
                        "X-Mid2:\r\n"
                        "X-Next: w\r\n"
                        "X-Last:\r\n"
                        "\r\n", &p));
    g_assert_cmpuint(p.defects->len, ==, 0);
    g_autoptr(GPtrArray) want = pairs("X-Empty", "", "X-After", "v", "X-Blank", "", "X-Mid", "",
                                      "X-Mid2", "", "X-Next", "w", "X-Last", "", NULL);
    assert_headers(p.headers, want);
    g_assert_cmpstr(jet_hdr_get(p.headers, "X-Empty"), ==, "");
    g_assert_cmpstr(jet_hdr_get(p.headers, "X-After"), ==, "v");
    g_assert_cmpstr(jet_hdr_get(p.headers, "X-Last"), ==, "");

    gsize len = 0;
    g_autofree char *block = round_trip(want, &len);
    /* An empty value is written as "name: ", as Go's textproto and nats.c
     * write it. */
    const char expect[] = "NATS/1.0\r\nX-Empty: \r\nX-After: v\r\nX-Blank: \r\nX-Mid: \r\n"
                          "X-Mid2: \r\nX-Next: w\r\nX-Last: \r\n\r\n";
    g_assert_cmpmem(block, len, expect, sizeof expect - 1);

    /* The only header, empty. */
    g_auto(JetHdrParse) q = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\nX-Empty:\r\n\r\n", &q));
    g_autoptr(GPtrArray) only = pairs("X-Empty", "", NULL);
    assert_headers(q.headers, only);
}

static void test_many(void)
{
    enum { N = 10000 };
    g_autoptr(GPtrArray) h = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < N; i++) {
        g_ptr_array_add(h, g_strdup_printf("X-H%u", i));
        g_ptr_array_add(h, i % 7 == 0 ? g_strdup("") : g_strdup_printf("value %u", i));
    }
    g_ptr_array_add(h, g_strdup("x-h0"));
    g_ptr_array_add(h, g_strdup("shadowed"));
    gsize len = 0;
    g_autofree char *block = round_trip(h, &len);

    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(jet_hdr_parse(block, len, &p));
    g_assert_cmpuint(p.headers->len, ==, 2 * N + 2);
    g_assert_cmpstr(jet_hdr_get(p.headers, "X-H0"), ==, "");
    g_assert_cmpstr(jet_hdr_get(p.headers, "x-h9999"), ==, "value 9999");
    g_assert_cmpstr(jet_hdr_get(p.headers, "X-H5000"), ==, "value 5000");
    g_assert_null(jet_hdr_get(p.headers, "X-H10000"));

    /* One bad line among them is reported with its own line number and
     * costs only itself. */
    GString *s = g_string_new(JET_HDR_LINE "\r\n");
    for (guint i = 0; i < N; i++) {
        if (i == 4321)
            g_string_append_printf(s, "bad line %u\r\n", i);
        else
            g_string_append_printf(s, "H%u: %u\r\n", i, i);
    }
    g_string_append(s, "\r\n");
    g_auto(JetHdrParse) q = { 0 };
    g_assert_false(jet_hdr_parse(s->str, s->len, &q));
    g_assert_cmpuint(q.headers->len, ==, 2 * (N - 1));
    g_assert_cmpuint(q.defects->len, ==, 1);
    assert_defect(&q, 0, 4321 + 2, "bad\\x20line\\x204321", "no colon");
    g_assert_cmpstr(jet_hdr_get(q.headers, "H4320"), ==, "4320");
    g_assert_null(jet_hdr_get(q.headers, "H4321"));
    g_assert_cmpstr(jet_hdr_get(q.headers, "H4322"), ==, "4322");
    g_string_free(s, TRUE);
}

static void test_non_utf8(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\n"
                        "Latin1: caf\xe9\r\n"
                        "Bytes: \xff\xfe\x80\xc0\r\n"
                        "Ctl: a\x01\x1b[0m\x7f" "b\r\n"
                        "Utf8: \xe2\x82\xac \xf0\x9f\x98\x80\r\n"
                        "\r\n", &p));
    g_assert_cmpuint(p.defects->len, ==, 0);
    g_assert_cmpuint(p.headers->len, ==, 8);
    const char *latin1 = g_ptr_array_index(p.headers, 1);
    g_assert_cmpmem(latin1, strlen(latin1), "caf\xe9", 4);
    const char *bytes = g_ptr_array_index(p.headers, 3);
    g_assert_cmpmem(bytes, strlen(bytes), "\xff\xfe\x80\xc0", 4);
    const char *ctl = g_ptr_array_index(p.headers, 5);
    g_assert_cmpmem(ctl, strlen(ctl), "a\x01\x1b[0m\x7f" "b", 8);
    g_assert_false(g_utf8_validate(latin1, -1, NULL));

    gsize len = 0;
    g_autofree char *block = round_trip(p.headers, &len);
    const char expect[] = "NATS/1.0\r\nLatin1: caf\xe9\r\nBytes: \xff\xfe\x80\xc0\r\n"
                          "Ctl: a\x01\x1b[0m\x7f" "b\r\nUtf8: \xe2\x82\xac \xf0\x9f\x98\x80\r\n\r\n";
    g_assert_cmpmem(block, len, expect, sizeof expect - 1);
}

/* Nats-* headers steer the server (dedup, rollups, expected sequences): they
 * are kept under the case they were written in, and found in any case. */
static void test_nats_names_any_case(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\n"
                        "nats-msg-id: lower\r\n"
                        "NATS-MSG-ID: upper\r\n"
                        "Nats-Msg-Id: canonical\r\n"
                        "nAtS-rOlLuP: sub\r\n"
                        "\r\n", &p));
    g_autoptr(GPtrArray) want = pairs("nats-msg-id", "lower", "NATS-MSG-ID", "upper",
                                      "Nats-Msg-Id", "canonical", "nAtS-rOlLuP", "sub", NULL);
    assert_headers(p.headers, want);
    g_assert_cmpstr(jet_hdr_get(p.headers, "Nats-Msg-Id"), ==, "lower");
    g_assert_cmpstr(jet_hdr_get(p.headers, "NATS-MSG-ID"), ==, "lower");
    g_assert_cmpstr(jet_hdr_get(p.headers, "Nats-Rollup"), ==, "sub");

    gsize len = 0;
    g_autofree char *block = round_trip(want, &len);
    g_assert_nonnull(g_strstr_len(block, (gssize)len, "\r\nnats-msg-id: lower\r\n"));
    g_assert_nonnull(g_strstr_len(block, (gssize)len, "\r\nNATS-MSG-ID: upper\r\n"));
}

static void test_truncated(void)
{
    const char *truncated = "truncated: no blank line at the end";
    {
        /* The last header line is complete and kept; the end is missing. */
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\r\nA: 1\r\nB: 2\r\n", &p));
        g_autoptr(GPtrArray) want = pairs("A", "1", "B", "2", NULL);
        assert_headers(p.headers, want);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 0, "", truncated);
    }
    {
        /* A last line cut short is not read: its value may be cut too. */
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\r\nA: 1\r\nB: 2", &p));
        g_autoptr(GPtrArray) want = pairs("A", "1", NULL);
        assert_headers(p.headers, want);
        g_assert_cmpuint(p.defects->len, ==, 2);
        assert_defect(&p, 0, 3, "B:\\x202", "no CR LF at its end");
        assert_defect(&p, 1, 0, "", truncated);
    }
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\r\nA: 1\r\n\r", &p));
        g_autoptr(GPtrArray) want = pairs("A", "1", NULL);
        assert_headers(p.headers, want);
        g_assert_cmpuint(p.defects->len, ==, 2);
        assert_defect(&p, 0, 3, "\\x0d", "no CR LF at its end");
        assert_defect(&p, 1, 0, "", truncated);
    }
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\r\n", &p));
        assert_no_headers(&p);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 0, "", truncated);
    }
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0", &p));
        assert_no_headers(&p);
        g_assert_cmpuint(p.defects->len, ==, 2);
        assert_defect(&p, 0, 1, "NATS/1.0", "no CR LF at its end");
        assert_defect(&p, 1, 0, "", truncated);
    }
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("N", &p));
        g_assert_cmpuint(p.defects->len, ==, 2);
        assert_defect(&p, 0, 1, "N", "no CR LF at its end");
        assert_defect(&p, 1, 0, "", truncated);
    }
}

static void test_trailing_bytes(void)
{
    const char *after = "bytes after the blank line";
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\r\nA: 1\r\n\r\nB: 2\r\n\r\n", &p));
        /* What follows the end is not read as headers. */
        g_autoptr(GPtrArray) want = pairs("A", "1", NULL);
        assert_headers(p.headers, want);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 0, "B:\\x202\\x0d\\x0a\\x0d\\x0a", after);
    }
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\r\n\r\n\r\n", &p));
        assert_no_headers(&p);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 0, "\\x0d\\x0a", after);
    }
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\r\n\r\n\0", &p));
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 0, "\\x00", after);
    }
    {
        /* A long tail is cut in the defect's text. */
        GString *s = g_string_new("NATS/1.0\r\n\r\n");
        for (int i = 0; i < 100; i++)
            g_string_append_c(s, 'z');
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(jet_hdr_parse(s->str, s->len, &p));
        g_assert_cmpuint(p.defects->len, ==, 1);
        g_autofree char *cut = g_strnfill(JET_HDR_DEFECT_TEXT_MAX, 'z');
        g_autofree char *want = g_strconcat(cut, "...", NULL);
        assert_defect(&p, 0, 0, want, after);
        g_string_free(s, TRUE);
    }
}

static void test_first_line(void)
{
    const char *status = "status after NATS/1.0", *not_nats = "first line is not NATS/1.0";
    {
        /* A status block (no responders, heartbeat) is no stored message. */
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0 503\r\n\r\n", &p));
        assert_no_headers(&p);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 1, "NATS/1.0\\x20503", status);
    }
    {
        /* Headers after a bad first line are still read. */
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 7\r\n\r\n", &p));
        g_autoptr(GPtrArray) want = pairs("Nats-Last-Consumer", "7", NULL);
        assert_headers(p.headers, want);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 1, "NATS/1.0\\x20100\\x20Idle\\x20Heartbeat", status);
    }
    {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("NATS/1.0\t\r\n\r\n", &p));
        assert_defect(&p, 0, 1, "NATS/1.0\\x09", status);
    }
    static const struct { const char *block; const char *text; } bad[] = {
        { "NATS/2.0\r\n\r\n", "NATS/2.0" },
        { "nats/1.0\r\n\r\n", "nats/1.0" },
        { "HTTP/1.1\r\n\r\n", "HTTP/1.1" },
        { "NATS/1.\r\n\r\n", "NATS/1." },
        { " NATS/1.0\r\n\r\n", "\\x20NATS/1.0" },
        { "\r\n\r\n", "" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(jet_hdr_parse(bad[i].block, strlen(bad[i].block), &p));
        assert_no_headers(&p);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 1, bad[i].text, not_nats);
    }
    {
        /* A header where the first line should be is not a header. */
        g_auto(JetHdrParse) p = { 0 };
        g_assert_false(PARSE("A: 1\r\nB: 2\r\n\r\n", &p));
        g_autoptr(GPtrArray) want = pairs("B", "2", NULL);
        assert_headers(p.headers, want);
        g_assert_cmpuint(p.defects->len, ==, 1);
        assert_defect(&p, 0, 1, "A:\\x201", not_nats);
    }
}

static void test_nul(void)
{
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\n"
                         "A: x\0y\r\n"
                         "B\0C: 1\r\n"
                         "\0: 2\r\n"
                         "D: \0\r\n"
                         "E: ok\r\n"
                         "\r\n", &p));
    g_autoptr(GPtrArray) want = pairs("E", "ok", NULL);
    assert_headers(p.headers, want);
    g_assert_cmpuint(p.defects->len, ==, 4);
    assert_defect(&p, 0, 2, "A:\\x20x\\x00y", "NUL byte");
    assert_defect(&p, 1, 3, "B\\x00C:\\x201", "NUL byte");
    assert_defect(&p, 2, 4, "\\x00:\\x202", "NUL byte");
    assert_defect(&p, 3, 5, "D:\\x20\\x00", "NUL byte");

    g_auto(JetHdrParse) q = { 0 };
    g_assert_false(PARSE("NATS\0/1.0\r\n\r\n", &q));
    assert_defect(&q, 0, 1, "NATS\\x00/1.0", "first line is not NATS/1.0");
    g_auto(JetHdrParse) r = { 0 };
    g_assert_false(PARSE("\0", &r));
    g_assert_cmpuint(r.defects->len, ==, 2);
    assert_defect(&r, 0, 1, "\\x00", "no CR LF at its end");
}

static void test_long_line(void)
{
    GString *s = g_string_new("NATS/1.0\r\n");
    for (int i = 0; i < 200; i++)
        g_string_append_c(s, 'n');
    g_string_append(s, "\r\nX-Long: ");
    for (int i = 0; i < 100000; i++)
        g_string_append_c(s, (char)('a' + i % 26));
    g_string_append(s, "\r\n\r\n");
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(jet_hdr_parse(s->str, s->len, &p));
    g_assert_cmpuint(p.defects->len, ==, 1);
    g_autofree char *cut = g_strnfill(JET_HDR_DEFECT_TEXT_MAX, 'n');
    g_autofree char *want = g_strconcat(cut, "...", NULL);
    assert_defect(&p, 0, 2, want, "no colon");
    g_assert_cmpuint(p.headers->len, ==, 2);
    g_assert_cmpuint(strlen(g_ptr_array_index(p.headers, 1)), ==, 100000);
    g_string_free(s, TRUE);
}

static void test_round_trip(void)
{
    g_autoptr(GPtrArray) h = pairs("Nats-Msg-Id", "abc-1", "X-Dup", "1", "x-dup", "2", "X-Empty", "",
                                   "X-Inner", "a \t b", "X-Punct", "\"q\", \\ ; : =",
                                   "~", "tilde", "X-High", "\xff\x80", NULL);
    gsize len = 0;
    g_autofree char *block = round_trip(h, &len);
    const char expect[] = "NATS/1.0\r\nNats-Msg-Id: abc-1\r\nX-Dup: 1\r\nx-dup: 2\r\nX-Empty: \r\n"
                          "X-Inner: a \t b\r\nX-Punct: \"q\", \\ ; : =\r\n~: tilde\r\nX-High: \xff\x80\r\n\r\n";
    g_assert_cmpmem(block, len, expect, sizeof expect - 1);

    /* Write, parse, write: the same bytes. */
    g_auto(JetHdrParse) p = { 0 };
    g_assert_true(jet_hdr_parse(block, len, &p));
    gsize len2 = 0;
    g_autofree char *again = jet_hdr_write(p.headers, &len2, NULL);
    g_assert_cmpmem(again, len2, block, len);

    /* A parse of a loosely spaced block writes the canonical form. */
    g_auto(JetHdrParse) loose = { 0 };
    g_assert_true(PARSE("NATS/1.0\r\nA:1\r\nB:   2  \r\nC:\t\r\n\r\n", &loose));
    gsize len3 = 0;
    g_autofree char *canon = round_trip(loose.headers, &len3);
    const char canon_expect[] = "NATS/1.0\r\nA: 1\r\nB: 2\r\nC: \r\n\r\n";
    g_assert_cmpmem(canon, len3, canon_expect, sizeof canon_expect - 1);

    /* One header of each single value byte the writer accepts. */
    g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
    for (int c = 1; c < 256; c++) {
        if (c == '\r' || c == '\n' || c == ' ' || c == '\t')
            continue;
        g_ptr_array_add(all, g_strdup_printf("V%d", c));
        g_ptr_array_add(all, g_strdup_printf("<%c>", c));
        g_ptr_array_add(all, g_strdup_printf("S%d", c));
        g_ptr_array_add(all, g_strdup_printf("%c", c));
    }
    gsize len4 = 0;
    g_autofree char *every = round_trip(all, &len4);
}

static void test_write_refusals(void)
{
    static const char *bad_names[] = {
        "", "a b", "a:b", "a\tb", " a", "a ", "a\r\nb", "a\nb", "a\rb", "x\"y", "(x)", "a/b",
        "a,b", "a;b", "a=b", "a@b", "[a]", "{a}", "a?b", "a\\b", "caf\xc3\xa9", "\x7f", "\x01",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad_names); i++) {
        g_assert_false(jet_hdr_name_valid(bad_names[i]));
        g_autoptr(GPtrArray) h = pairs("Good", "1", bad_names[i], "v", NULL);
        g_autofree char *esc = jet_hdr_escape(bad_names[i], strlen(bad_names[i]), 64);
        g_autofree char *msg = g_strdup_printf("header name \"%s\" is not a token", esc);
        assert_write_refused(h, msg);
    }
    static const char *bad_values[] = {
        "a\rb", "a\nb", "a\r\nb", "\r\n", "\r", "\n", "x\r\n\r\nbody", " a", "a ", "\ta", "a\t",
        " ", "\t", "  ", " a ",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad_values); i++) {
        g_assert_false(jet_hdr_value_valid(bad_values[i]));
        g_autoptr(GPtrArray) h = pairs("Good", "1", "X-Bad", bad_values[i], NULL);
        assert_write_refused(h, "header X-Bad: the value holds CR or LF, or starts or ends with a space or tab");
    }

    /* The first bad header is the one named. */
    g_autoptr(GPtrArray) two = pairs("A", " x", "B b", "y", NULL);
    assert_write_refused(two, "header A:");

    /* NULL name or value. */
    g_autoptr(GPtrArray) nulls = g_ptr_array_new();
    g_ptr_array_add(nulls, (gpointer)"A");
    g_ptr_array_add(nulls, NULL);
    assert_write_refused(nulls, "header A: the value is missing");
    g_ptr_array_index(nulls, 0) = NULL;
    g_ptr_array_index(nulls, 1) = (gpointer)"v";
    assert_write_refused(nulls, "header name \"\" is not a token");
    g_assert_false(jet_hdr_name_valid(NULL));
    g_assert_false(jet_hdr_value_valid(NULL));

    /* A name left without its value. */
    g_autoptr(GPtrArray) odd = pairs("A", "1", "B", NULL);
    assert_write_refused(odd, "header B: the value is missing");
    g_autoptr(GPtrArray) lone = pairs("A", NULL);
    assert_write_refused(lone, "header A: the value is missing");

    /* No headers: no block, and no error. */
    g_autoptr(GPtrArray) none = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    gsize len = 99;
    g_assert_null(jet_hdr_write(none, &len, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(len, ==, 0);
    len = 99;
    g_assert_null(jet_hdr_write(NULL, &len, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(len, ==, 0);

    /* What the writer accepts. */
    static const char *good_values[] = { "", "a", "a b", "a\tb", "\x01", "\xff", ":", "\"", "a  \t  b" };
    for (gsize i = 0; i < G_N_ELEMENTS(good_values); i++)
        g_assert_true(jet_hdr_value_valid(good_values[i]));
    static const char *good_names[] = { "a", "Z", "0", "!", "#", "$", "%", "&", "'", "*", "+", "-",
                                        ".", "^", "_", "`", "|", "~", "Nats-Msg-Id" };
    for (gsize i = 0; i < G_N_ELEMENTS(good_names); i++)
        g_assert_true(jet_hdr_name_valid(good_names[i]));
    /* Every byte: the token set and nothing else. */
    for (int c = 1; c < 256; c++) {
        char name[2] = { (char)c, '\0' };
        gboolean tchar = g_ascii_isalnum(c) || (c < 128 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
        g_assert_cmpint(jet_hdr_name_valid(name), ==, tchar);
    }
}

static void test_encoded_len(void)
{
    g_assert_cmpuint(jet_hdr_encoded_len(NULL), ==, 0);
    g_autoptr(GPtrArray) none = g_ptr_array_new();
    g_assert_cmpuint(jet_hdr_encoded_len(none), ==, 0);

    g_autoptr(GPtrArray) one = pairs("A", "1", NULL);
    g_assert_cmpuint(jet_hdr_encoded_len(one), ==, JET_HDR_FRAME_BYTES + strlen("A: 1\r\n"));
    g_autoptr(GPtrArray) empty = pairs("A", "", NULL);
    g_assert_cmpuint(jet_hdr_encoded_len(empty), ==, JET_HDR_FRAME_BYTES + strlen("A: \r\n"));

    GPtrArray *sets[] = {
        one, empty,
        pairs("Nats-Msg-Id", "x", "B", "", "C", "long value with spaces", "D", "", NULL),
        pairs("X", "\xff\xfe", "Y", ":", NULL),
    };
    for (gsize i = 0; i < G_N_ELEMENTS(sets); i++) {
        gsize len = 0;
        g_autofree char *block = jet_hdr_write(sets[i], &len, NULL);
        g_assert_nonnull(block);
        g_assert_cmpuint(len, ==, jet_hdr_encoded_len(sets[i]));
        /* The block is a C string too, for callers that log it. */
        g_assert_cmpuint(strlen(block), ==, len);
    }
    g_ptr_array_unref(sets[2]);
    g_ptr_array_unref(sets[3]);
}

static void test_get(void)
{
    g_autoptr(GPtrArray) h = pairs("Content-Type", "text/plain", "X-Dup", "first", "x-dup", "second",
                                   "X-DUP", "third", "X-Empty", "", NULL);
    g_assert_cmpstr(jet_hdr_get(h, "Content-Type"), ==, "text/plain");
    g_assert_cmpstr(jet_hdr_get(h, "content-type"), ==, "text/plain");
    g_assert_cmpstr(jet_hdr_get(h, "CONTENT-TYPE"), ==, "text/plain");
    g_assert_cmpstr(jet_hdr_get(h, "x-dup"), ==, "first");
    g_assert_cmpstr(jet_hdr_get(h, "X-DUP"), ==, "first");
    g_assert_cmpstr(jet_hdr_get(h, "X-Empty"), ==, "");
    g_assert_null(jet_hdr_get(h, "X-Missing"));
    g_assert_null(jet_hdr_get(h, "Content"));
    g_assert_null(jet_hdr_get(h, "Content-Type-"));
    g_assert_null(jet_hdr_get(h, ""));
    /* Values are not names. */
    g_assert_null(jet_hdr_get(h, "first"));
    g_assert_null(jet_hdr_get(NULL, "X"));
    g_autoptr(GPtrArray) none = g_ptr_array_new();
    g_assert_null(jet_hdr_get(none, "X"));
}

static void test_escape(void)
{
    static const struct { const char *in; gsize len; gsize max; const char *out; } cases[] = {
        { "", 0, 64, "" },
        { "abc", 3, 64, "abc" },
        { "!~AZaz09", 8, 64, "!~AZaz09" },
        { " ", 1, 64, "\\x20" },
        { "\\", 1, 64, "\\x5c" },
        { "\"", 1, 64, "\\x22" },
        { ",", 1, 64, "\\x2c" },
        { "\0", 1, 64, "\\x00" },
        { "\t\r\n", 3, 64, "\\x09\\x0d\\x0a" },
        { "\x7f\x80\xff", 3, 64, "\\x7f\\x80\\xff" },
        { "caf\xc3\xa9", 5, 64, "caf\\xc3\\xa9" },
        { "a\0b", 3, 64, "a\\x00b" },
        { "abcdef", 6, 3, "abc..." },
        { "abcdef", 6, 6, "abcdef" },
        { "abcdef", 6, 5, "abcde..." },
        { "abcdef", 6, 0, "..." },
        { "  ", 2, 1, "\\x20..." },
        /* Only len bytes are read, NULs or not. */
        { "abcdef", 2, 64, "ab" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *e = jet_hdr_escape(cases[i].in, cases[i].len, cases[i].max);
        g_assert_cmpstr(e, ==, cases[i].out);
    }
    /* Every byte comes out printable, and a backslash only starts \xHH. */
    char all[256];
    for (int c = 0; c < 256; c++)
        all[c] = (char)c;
    g_autofree char *e = jet_hdr_escape(all, sizeof all, sizeof all);
    for (const char *c = e; *c; c++) {
        g_assert_cmpint(*c, >=, 0x21);
        g_assert_cmpint(*c, <=, 0x7e);
        g_assert_cmpint(*c, !=, '"');
        g_assert_cmpint(*c, !=, ',');
    }
    g_autofree char *esc_only = jet_hdr_escape("\\\"", 2, 64);
    g_assert_cmpstr(esc_only, ==, "\\x5c\\x22");
}

static void test_defect_describe(void)
{
    JetHdrDefect line = { 3, (char *)"p", "no colon" };
    g_autofree char *a = jet_hdr_defect_describe(&line);
    g_assert_cmpstr(a, ==, "line 3 \"p\" (no colon)");

    JetHdrDefect empty_line = { 1, (char *)"", "first line is not NATS/1.0" };
    g_autofree char *b = jet_hdr_defect_describe(&empty_line);
    g_assert_cmpstr(b, ==, "line 1 \"\" (first line is not NATS/1.0)");

    JetHdrDefect block = { 0, (char *)"", "truncated: no blank line at the end" };
    g_autofree char *c = jet_hdr_defect_describe(&block);
    g_assert_cmpstr(c, ==, "block (truncated: no blank line at the end)");

    JetHdrDefect tail = { 0, (char *)"xyz", "bytes after the blank line" };
    g_autofree char *d = jet_hdr_defect_describe(&tail);
    g_assert_cmpstr(d, ==, "block \"xyz\" (bytes after the blank line)");

    /* From a parse: the text is escaped, so the quotes stay unambiguous. */
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(PARSE("NATS/1.0\r\nA\"B: \"x\", y\r\n\r\nmore", &p));
    g_assert_cmpuint(p.defects->len, ==, 2);
    g_autofree char *e = jet_hdr_defect_describe(&g_array_index(p.defects, JetHdrDefect, 0));
    g_assert_cmpstr(e, ==, "line 2 \"A\\x22B:\\x20\\x22x\\x22\\x2c\\x20y\" "
                           "(name has a character outside the token set)");
    g_autofree char *f = jet_hdr_defect_describe(&g_array_index(p.defects, JetHdrDefect, 1));
    g_assert_cmpstr(f, ==, "block \"more\" (bytes after the blank line)");
}

/* The parser reads exactly len bytes: a CR at the end of the block is not
 * half of a CR LF, whatever byte follows it in memory. */
static void test_cr_at_end(void)
{
    static const char bytes[] = "NATS/1.0\r\nA: 1\r\n\r\n";
    g_auto(JetHdrParse) p = { 0 };
    g_assert_false(jet_hdr_parse(bytes, sizeof bytes - 2, &p));   /* without the last LF */
    g_autoptr(GPtrArray) want = pairs("A", "1", NULL);
    assert_headers(p.headers, want);
    g_assert_cmpuint(p.defects->len, ==, 2);
    assert_defect(&p, 0, 3, "\\x0d", "no CR LF at its end");
    assert_defect(&p, 1, 0, "", "truncated: no blank line at the end");

    /* The same in an exactly sized buffer: looking for the LF after that CR
     * must not read past it (the sanitizer build sees any read beyond). */
    g_autofree char *exact = g_memdup2(bytes, sizeof bytes - 2);
    g_auto(JetHdrParse) e = { 0 };
    g_assert_false(jet_hdr_parse(exact, sizeof bytes - 2, &e));
    g_assert_cmpuint(e.defects->len, ==, 2);
    assert_defect(&e, 0, 3, "\\x0d", "no CR LF at its end");

    /* A first line shorter than "NATS/1.0", at the very end of an exactly
     * sized buffer, is refused as not NATS/1.0. */
    g_autofree char *shortline = g_memdup2("NAT\r\n", 5);
    g_auto(JetHdrParse) q = { 0 };
    g_assert_false(jet_hdr_parse(shortline, 5, &q));
    assert_defect(&q, 0, 1, "NAT", "first line is not NATS/1.0");
}

/* An odd array (a name without its value) never yields the slot past its
 * end as a value. */
static void test_get_odd_array(void)
{
    char a[] = "A", one[] = "1", b[] = "B", past[] = "not a value";
    gpointer slots[] = { a, one, b, past };
    GPtrArray odd = { slots, 3 };
    g_assert_cmpstr(jet_hdr_get(&odd, "A"), ==, "1");
    g_assert_null(jet_hdr_get(&odd, "B"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/hdr_block/empty", test_empty);
    g_test_add_func("/hdr_block/simple", test_simple);
    g_test_add_func("/hdr_block/crlf-in-name", test_crlf_in_name);
    g_test_add_func("/hdr_block/bare-cr-lf", test_bare_cr_lf);
    g_test_add_func("/hdr_block/name-chars", test_name_chars);
    g_test_add_func("/hdr_block/continuation", test_continuation);
    g_test_add_func("/hdr_block/empty-values", test_empty_values);
    g_test_add_func("/hdr_block/many", test_many);
    g_test_add_func("/hdr_block/non-utf8", test_non_utf8);
    g_test_add_func("/hdr_block/nats-names-any-case", test_nats_names_any_case);
    g_test_add_func("/hdr_block/truncated", test_truncated);
    g_test_add_func("/hdr_block/trailing-bytes", test_trailing_bytes);
    g_test_add_func("/hdr_block/first-line", test_first_line);
    g_test_add_func("/hdr_block/nul", test_nul);
    g_test_add_func("/hdr_block/long-line", test_long_line);
    g_test_add_func("/hdr_block/round-trip", test_round_trip);
    g_test_add_func("/hdr_block/write-refusals", test_write_refusals);
    g_test_add_func("/hdr_block/encoded-len", test_encoded_len);
    g_test_add_func("/hdr_block/get", test_get);
    g_test_add_func("/hdr_block/escape", test_escape);
    g_test_add_func("/hdr_block/defect-describe", test_defect_describe);
    g_test_add_func("/hdr_block/cr-at-end", test_cr_at_end);
    g_test_add_func("/hdr_block/get-odd-array", test_get_odd_array);
    return g_test_run();
}
