/* jet_subject_overlaps: NATS wildcard semantics at every edge, both ways
 * round (the relation is symmetric). */
#include "subject_overlap.h"

#include <glib.h>

typedef struct {
    const char *a, *b;
    gboolean overlaps;
} Case;

static void check(const Case *cases, gsize n)
{
    for (gsize i = 0; i < n; i++) {
        g_test_message("'%s' ~ '%s': %d", cases[i].a, cases[i].b, cases[i].overlaps);
        g_assert_cmpint(jet_subject_overlaps(cases[i].a, cases[i].b), ==, cases[i].overlaps);
        g_assert_cmpint(jet_subject_overlaps(cases[i].b, cases[i].a), ==, cases[i].overlaps);
    }
}

static void test_literals(void)
{
    static const Case cases[] = {
        { "a", "a", TRUE },           { "a", "b", FALSE },            { "a.b", "a.b", TRUE },
        { "a.b", "a.c", FALSE },      { "a", "a.b", FALSE },          { "a.b", "a", FALSE },
        { "ab", "a", FALSE },         { "a", "ab", FALSE },           { "a.bc", "a.b", FALSE },
        { "orders.new", "orders.enriched", FALSE },
        { "orders.enriched", "orders.enriched", TRUE },
    };
    check(cases, G_N_ELEMENTS(cases));
}

static void test_star(void)
{
    static const Case cases[] = {
        { "*", "a", TRUE },           { "*", "*", TRUE },             { "*", "a.b", FALSE },
        { "a.*", "a.b", TRUE },       { "a.*", "a", FALSE },          { "a.*", "a.b.c", FALSE },
        { "*.b", "a.*", TRUE },       { "*.b", "a.c", FALSE },        { "*.*", "a.b", TRUE },
        { "*.*", "a", FALSE },        { "a.*.c", "a.b.*", TRUE },     { "a.*.c", "a.b.d", FALSE },
        { "*.b.*", "a.*.c", TRUE },   { "*", "*.*", FALSE },
    };
    check(cases, G_N_ELEMENTS(cases));
}

static void test_tail(void)
{
    static const Case cases[] = {
        { ">", "a", TRUE },           { ">", "a.b.c", TRUE },         { ">", ">", TRUE },
        { ">", "*", TRUE },           { "a.>", "a", FALSE },          { "a.>", "a.b", TRUE },
        { "a.>", "a.b.c", TRUE },     { "a.>", "b.c", FALSE },        { "a.>", "a.*", TRUE },
        { "a.>", "*.b", TRUE },       { "a.>", "*", FALSE },          { "a.>", "b.>", FALSE },
        { "a.>", "a.b.>", TRUE },     { "a.b.>", "a.c.>", FALSE },    { "*.>", "a", FALSE },
        { "*.>", "a.b", TRUE },       { "orders.>", "orders.enriched", TRUE },
        { "orders.>", "orders", FALSE },
        { "a.*.>", "a.b", FALSE },    { "a.*.>", "a.b.c.d", TRUE },   { "a.*.>", "*.*.c", TRUE },
    };
    check(cases, G_N_ELEMENTS(cases));
}

/* A wildcard character inside a token is a literal, as the server reads it. */
static void test_wildcards_inside_tokens(void)
{
    static const Case cases[] = {
        { "a*", "ab", FALSE },        { "a*", "a*", TRUE },           { "a*", "*", TRUE },
        { "b>", "b.c", FALSE },       { "b>", "b>", TRUE },           { "x.>y", "x.a.b", FALSE },
        { ">.a", ">.a", TRUE },       { "*a", "ba", FALSE },
    };
    check(cases, G_N_ELEMENTS(cases));
}

static void test_degenerate(void)
{
    static const Case cases[] = {
        { "", "", FALSE },            { "", "a", FALSE },             { "", ">", FALSE },
        { "a..b", "a..b", TRUE },     { "a..b", "a.*.b", TRUE },      { "a.", "a.", TRUE },
        { "a.", "a.>", TRUE },
    };
    check(cases, G_N_ELEMENTS(cases));
    g_assert_false(jet_subject_overlaps(NULL, "a"));
    g_assert_false(jet_subject_overlaps("a", NULL));
    g_assert_false(jet_subject_overlaps(NULL, NULL));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/subject_overlap/literals", test_literals);
    g_test_add_func("/subject_overlap/star", test_star);
    g_test_add_func("/subject_overlap/tail", test_tail);
    g_test_add_func("/subject_overlap/wildcards-inside-tokens", test_wildcards_inside_tokens);
    g_test_add_func("/subject_overlap/degenerate", test_degenerate);
    return g_test_run();
}
