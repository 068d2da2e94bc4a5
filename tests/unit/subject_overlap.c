/* Subject overlap (host/core/subject_overlap.c): which filters can match
 * a stream's subjects, at every edge of `*` and `>`.  No server. */
#include "subject_overlap.h"

typedef struct {
    const char *a, *b;
    gboolean overlap;
} Case;

static const Case cases[] = {
    /* literals */
    { "a", "a", TRUE },
    { "a", "b", FALSE },
    { "a.b", "a.b", TRUE },
    { "a.b", "a.c", FALSE },
    { "a.b", "a.b.c", FALSE },
    { "a.b.c", "a.b", FALSE },
    { "ab", "a", FALSE },
    { "a", "ab", FALSE },
    { "a.bc", "a.b", FALSE },
    /* `*`: exactly one token */
    { "*", "a", TRUE },
    { "*", "a.b", FALSE },
    { "a.*", "a.b", TRUE },
    { "a.*", "a", FALSE },
    { "a.*", "a.b.c", FALSE },
    { "a.*", "b.c", FALSE },
    { "*.b", "a.*", TRUE },
    { "*.b", "a.c", FALSE },
    { "*.*", "a.*", TRUE },
    { "*.*", "*", FALSE },
    { "a.*.c", "a.b.c", TRUE },
    { "a.*.c", "a.b.d", FALSE },
    /* `>`: one or more tokens */
    { ">", "a", TRUE },
    { ">", "a.b.c", TRUE },
    { ">", "*", TRUE },
    { ">", ">", TRUE },
    { ">", "*.*", TRUE },
    { "a.>", "a", FALSE },
    { "a.>", "a.b", TRUE },
    { "a.>", "a.b.c", TRUE },
    { "a.>", "b.c", FALSE },
    { "a.>", "a.*", TRUE },
    { "a.*", "a.>", TRUE },
    { "a.>", "*.b", TRUE },
    { "a.>", "*", FALSE },
    { "a.b.>", "a.>", TRUE },
    { "a.b.>", "a.c.>", FALSE },
    { "a.>", "a.b.c.d.e", TRUE },
    { "orders.>", "other.>", FALSE },
    { "orders.>", "orders.eu.>", TRUE },
    { "*.>", "a", FALSE },
    { "*.>", "a.b", TRUE },
    { "$KV.cfg.>", "$KV.cfg.app.*", TRUE },
    { "$KV.cfg.>", "$KV.other.>", FALSE },
};

static void test_pairs(void)
{
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        const Case *c = &cases[i];
        g_test_message("%s vs %s", c->a, c->b);
        /* Symmetric: which side is the filter does not matter. */
        g_assert_cmpint(jet_subject_overlaps(c->a, c->b), ==, c->overlap);
        g_assert_cmpint(jet_subject_overlaps(c->b, c->a), ==, c->overlap);
    }
}

static void test_filter_fits(void)
{
    const char *const one[] = { "orders.>" };
    const char *const two[] = { "orders.>", "refunds.*" };
    g_assert_true(jet_filter_fits_subjects("orders.eu", one, 1));
    g_assert_false(jet_filter_fits_subjects("other.>", one, 1));
    g_assert_true(jet_filter_fits_subjects("refunds.x", two, 2));
    g_assert_false(jet_filter_fits_subjects("refunds.x.y", two, 2));
    g_assert_true(jet_filter_fits_subjects(">", two, 2));
    /* No subjects (a mirror, a stream that only sources): nothing to check. */
    g_assert_true(jet_filter_fits_subjects("anything.>", NULL, 0));
}

/* --- the forward-loop cases ---------------------------------------------- */

typedef struct {
    const char *a, *b;
    gboolean overlaps;
} Pair;

static void check(const Pair *pairs, gsize n)
{
    for (gsize i = 0; i < n; i++) {
        g_test_message("'%s' ~ '%s': %d", pairs[i].a, pairs[i].b, pairs[i].overlaps);
        g_assert_cmpint(jet_subject_overlaps(pairs[i].a, pairs[i].b), ==, pairs[i].overlaps);
        g_assert_cmpint(jet_subject_overlaps(pairs[i].b, pairs[i].a), ==, pairs[i].overlaps);
    }
}

static void test_literals(void)
{
    static const Pair pairs[] = {
        { "a", "a", TRUE },           { "a", "b", FALSE },            { "a.b", "a.b", TRUE },
        { "a.b", "a.c", FALSE },      { "a", "a.b", FALSE },          { "a.b", "a", FALSE },
        { "ab", "a", FALSE },         { "a", "ab", FALSE },           { "a.bc", "a.b", FALSE },
        { "orders.new", "orders.enriched", FALSE },
        { "orders.enriched", "orders.enriched", TRUE },
    };
    check(pairs, G_N_ELEMENTS(pairs));
}

static void test_star(void)
{
    static const Pair pairs[] = {
        { "*", "a", TRUE },           { "*", "*", TRUE },             { "*", "a.b", FALSE },
        { "a.*", "a.b", TRUE },       { "a.*", "a", FALSE },          { "a.*", "a.b.c", FALSE },
        { "*.b", "a.*", TRUE },       { "*.b", "a.c", FALSE },        { "*.*", "a.b", TRUE },
        { "*.*", "a", FALSE },        { "a.*.c", "a.b.*", TRUE },     { "a.*.c", "a.b.d", FALSE },
        { "*.b.*", "a.*.c", TRUE },   { "*", "*.*", FALSE },
    };
    check(pairs, G_N_ELEMENTS(pairs));
}

static void test_tail(void)
{
    static const Pair pairs[] = {
        { ">", "a", TRUE },           { ">", "a.b.c", TRUE },         { ">", ">", TRUE },
        { ">", "*", TRUE },           { "a.>", "a", FALSE },          { "a.>", "a.b", TRUE },
        { "a.>", "a.b.c", TRUE },     { "a.>", "b.c", FALSE },        { "a.>", "a.*", TRUE },
        { "a.>", "*.b", TRUE },       { "a.>", "*", FALSE },          { "a.>", "b.>", FALSE },
        { "a.>", "a.b.>", TRUE },     { "a.b.>", "a.c.>", FALSE },    { "*.>", "a", FALSE },
        { "*.>", "a.b", TRUE },       { "orders.>", "orders.enriched", TRUE },
        { "orders.>", "orders", FALSE },
        { "a.*.>", "a.b", FALSE },    { "a.*.>", "a.b.c.d", TRUE },   { "a.*.>", "*.*.c", TRUE },
    };
    check(pairs, G_N_ELEMENTS(pairs));
}

/* A wildcard character inside a token is a literal, as the server reads it. */
static void test_wildcards_inside_tokens(void)
{
    static const Pair pairs[] = {
        { "a*", "ab", FALSE },        { "a*", "a*", TRUE },           { "a*", "*", TRUE },
        { "b>", "b.c", FALSE },       { "b>", "b>", TRUE },           { "x.>y", "x.a.b", FALSE },
        { ">.a", ">.a", TRUE },       { "*a", "ba", FALSE },
    };
    check(pairs, G_N_ELEMENTS(pairs));
}

static void test_degenerate(void)
{
    static const Pair pairs[] = {
        { "", "", FALSE },            { "", "a", FALSE },             { "", ">", FALSE },
        { "a..b", "a..b", TRUE },     { "a..b", "a.*.b", TRUE },      { "a.", "a.", TRUE },
        { "a.", "a.>", TRUE },
    };
    check(pairs, G_N_ELEMENTS(pairs));
    g_assert_false(jet_subject_overlaps(NULL, "a"));
    g_assert_false(jet_subject_overlaps("a", NULL));
    g_assert_false(jet_subject_overlaps(NULL, NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/subject_overlap/pairs", test_pairs);
    g_test_add_func("/subject_overlap/filter-fits", test_filter_fits);
    g_test_add_func("/subject_overlap/literals", test_literals);
    g_test_add_func("/subject_overlap/star", test_star);
    g_test_add_func("/subject_overlap/tail", test_tail);
    g_test_add_func("/subject_overlap/wildcards-inside-tokens", test_wildcards_inside_tokens);
    g_test_add_func("/subject_overlap/degenerate", test_degenerate);
    return g_test_run();
}
