/* An ordered binding's checkpoint record (host/core/position.c): its key,
 * JSON both ways, what it refuses, and what a start makes of it.  No
 * server. */
#include "position.h"

#include <string.h>

static void test_round_trip(void)
{
    static const JetPosition cases[] = {
        { 0, 0, 0, 0, 0 },
        { 41, 42, 0, 0, 0 },
        { 41, 42, 3, 0, 0 },
        { 100, 0, 0, 0, 0 },
        { G_MAXINT64 - 1, G_MAXINT64, G_MAXUINT32, G_MAXINT64, 0 },
        { 7, 8, 1, G_GINT64_CONSTANT(1733000000123456789), 0 },
        /* Span marks: n counts from `in` on, up to the largest batch. */
        { 41, 42, 0, 0, 2 },
        { 41, 42, 0, G_GINT64_CONSTANT(1733000000123456789), 100 },
        { G_MAXINT64 - 1, G_MAXINT64, 0, G_MAXINT64, JET_POSITION_MAX_SPAN },
        { 0, 1, 0, 0, 1 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        gsize len = 0;
        g_autofree char *json = jet_position_to_json(&cases[i], &len);
        g_assert_cmpuint(len, ==, strlen(json));
        JetPosition back = { 7, 7, 7, 7, 7 };
        g_autoptr(GError) err = NULL;
        g_assert_true(jet_position_from_json(json, len, &back, &err));
        g_assert_no_error(err);
        g_assert_cmpuint(back.pos, ==, cases[i].pos);
        g_assert_cmpuint(back.in, ==, cases[i].in);
        g_assert_cmpuint(back.strikes, ==, cases[i].strikes);
        g_assert_cmpint(back.life, ==, cases[i].life);
        /* n absent (or 0 in the struct) reads as 1: a precise mark. */
        g_assert_cmpuint(back.n, ==, MAX(cases[i].n, 1));
    }
    /* A life not known is left out: the record reads as an older host's. */
    g_autofree char *json = jet_position_to_json(&cases[2], NULL);
    g_assert_cmpstr(json, ==, "{\"v\":1,\"pos\":41,\"in\":42,\"s\":3}");
    g_autofree char *with_life = jet_position_to_json(&cases[5], NULL);
    g_assert_cmpstr(with_life, ==, "{\"v\":1,\"pos\":7,\"in\":8,\"s\":1,\"life\":1733000000123456789}");
    /* A precise mark leaves n out (an older host's record reads the same);
     * a span says it. */
    g_autofree char *precise = jet_position_to_json(&cases[9], NULL);
    g_assert_cmpstr(precise, ==, "{\"v\":1,\"pos\":0,\"in\":1,\"s\":0}");
    g_autofree char *span = jet_position_to_json(&cases[7], NULL);
    g_assert_cmpstr(span, ==, "{\"v\":1,\"pos\":41,\"in\":42,\"n\":100,\"s\":0,\"life\":1733000000123456789}");
}

static void test_refused(void)
{
    static const struct {
        const char *json;
        const char *why;
    } cases[] = {
        { "", "not an object" },
        { "{", "not JSON" },
        { "[1]", "not an object" },
        { "{\"pos\":1}", "another version" },
        { "{\"v\":2,\"pos\":1}", "another version" },
        { "{\"v\":1,\"pos\":-1}", "out of range" },
        { "{\"v\":1,\"pos\":\"5\"}", "not an integer" },
        { "{\"v\":1,\"pos\":1.5}", "not an integer" },
        { "{\"v\":1,\"s\":4294967296}", "out of range" },
        { "{\"v\":1,\"pos\":5,\"in\":5}", "at or before the position" },
        { "{\"v\":1,\"pos\":5,\"in\":4}", "at or before the position" },
        { "{\"v\":1,\"life\":-1}", "out of range" },
        { "{\"v\":1,\"life\":\"x\"}", "not an integer" },
        /* n: a span of none, negative, past the largest batch, huge, not
         * an integer; a span with nothing in the handler or with strikes. */
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":0}", "a span of no messages" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":-1}", "out of range" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":10001}", "out of range" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":4294967297}", "out of range" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":9223372036854775807}", "out of range" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":99999999999999999999}", "out of range" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":1e3}", "not an integer" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":2.5}", "not an integer" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":\"10\"}", "not an integer" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":null}", "not an integer" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":true}", "not an integer" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":[10]}", "not an integer" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":{}}", "not an integer" },
        { "{\"v\":1,\"pos\":5,\"in\":0,\"n\":10}", "a span without a message in the handler" },
        { "{\"v\":1,\"pos\":5,\"n\":10}", "a span without a message in the handler" },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":10,\"s\":1}", "with strikes" },
        { "{\"v\":1,\"pos\":5,\"in\":5,\"n\":10}", "at or before the position" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        JetPosition p = { 1, 2, 3, 4, 5 };
        g_autoptr(GError) err = NULL;
        g_assert_false(jet_position_from_json(cases[i].json, strlen(cases[i].json), &p, &err));
        g_assert_nonnull(err);
        if (strstr(err->message, cases[i].why) == NULL)
            g_error("'%s': expected '%s' in: %s", cases[i].json, cases[i].why, err->message);
        /* Refused: nothing written. */
        g_assert_cmpuint(p.pos, ==, 1);
    }
    /* The worst bytes a writer of the bucket could leave there. */
    g_autofree char *deep = g_strnfill(100000, '[');
    g_autofree char *long_ok = g_strdup_printf("{\"v\":1,\"pad\":\"%0600d\"}", 0);
    struct {
        const char *data;
        gsize len;
        const char *why;
    } bytes[] = {
        { deep, strlen(deep), "longer than a checkpoint can be" },
        { long_ok, strlen(long_ok), "longer than a checkpoint can be" },
        { "{\"v\":1,\0\"pos\":1}", 16, "NUL" },
        { "{\"v\":1,\"x\":\"\xff\xfe\"}", 0, "not JSON" },
        { "{\"v\":1,\"pos\":1\r\n", 0, "not JSON" },
        { "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]", 0, "not" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bytes); i++) {
        JetPosition q = { 1, 2, 3, 4, 5 };
        g_autoptr(GError) err = NULL;
        gsize len = bytes[i].len != 0 ? bytes[i].len : strlen(bytes[i].data);
        g_assert_false(jet_position_from_json(bytes[i].data, len, &q, &err));
        if (strstr(err->message, bytes[i].why) == NULL)
            g_error("case %zu: expected '%s' in: %s", i, bytes[i].why, err->message);
        g_assert_cmpuint(q.pos, ==, 1);
    }

    /* Unknown keys are ignored; absent counts are 0. */
    JetPosition p = { 9, 9, 9, 9, 0 };
    const char *ok = "{\"v\":1,\"later\":\"x\"}";
    g_assert_true(jet_position_from_json(ok, strlen(ok), &p, NULL));
    g_assert_cmpuint(p.pos, ==, 0);
    g_assert_cmpuint(p.in, ==, 0);
    g_assert_cmpint(p.life, ==, 0);
    g_assert_cmpuint(p.n, ==, 1);
    /* n 1 said outright is a precise mark; the largest batch a span; the
     * last of duplicate keys is the one read (json-glib's rule), and it is
     * checked as any other. */
    static const struct {
        const char *json;
        guint32 n;
    } spans[] = {
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":1,\"s\":2}", 1 },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":10000}", JET_POSITION_MAX_SPAN },
        { "{\"v\":1,\"pos\":5,\"in\":6,\"n\":0,\"n\":3}", 3 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(spans); i++) {
        JetPosition q = { 0 };
        g_autoptr(GError) err = NULL;
        g_assert_true(jet_position_from_json(spans[i].json, strlen(spans[i].json), &q, &err));
        g_assert_no_error(err);
        g_assert_cmpuint(q.n, ==, spans[i].n);
        g_assert_cmpuint(q.in, ==, 6);
    }
    const char *dup_bad = "{\"v\":1,\"pos\":5,\"in\":6,\"n\":3,\"n\":0}";
    g_assert_false(jet_position_from_json(dup_bad, strlen(dup_bad), &p, NULL));
}

static void test_crashed(void)
{
    guint64 crashed = 99;
    guint32 strikes = 99;
    JetPosition clean = { 10, 0, 0, 0, 0 };
    jet_position_crashed(&clean, &crashed, &strikes);
    g_assert_cmpuint(crashed, ==, 0);
    g_assert_cmpuint(strikes, ==, 0);
    JetPosition died = { 10, 11, 0, 0, 0 };
    jet_position_crashed(&died, &crashed, &strikes);
    g_assert_cmpuint(crashed, ==, 11);
    g_assert_cmpuint(strikes, ==, 1);
    JetPosition again = { 10, 11, 2, 0, 0 };
    jet_position_crashed(&again, &crashed, &strikes);
    g_assert_cmpuint(strikes, ==, 3);
    /* A span names no message: nothing is struck.  n 0 (a record built by
     * hand) is a precise mark, as an absent n reads. */
    JetPosition span = { 10, 11, 0, 0, 2 };
    jet_position_crashed(&span, &crashed, &strikes);
    g_assert_cmpuint(crashed, ==, 0);
    g_assert_cmpuint(strikes, ==, 0);
    JetPosition one = { 10, 11, 0, 0, 1 };
    jet_position_crashed(&one, &crashed, &strikes);
    g_assert_cmpuint(crashed, ==, 11);
    g_assert_cmpuint(strikes, ==, 1);
}

/* What a start makes of a record: resumed from only with checkpoint = kv,
 * its mark struck either way, and nothing of it for another life of the
 * stream (a stream deleted and re-created: its seq 11 is another message). */
static void test_start(void)
{
    const gint64 life = G_GINT64_CONSTANT(1733000000000000000);
    JetPosition died = { 10, 11, 1, life, 0 };
    JetPositionStart st;
    jet_position_start(&died, life, TRUE, &st);
    g_assert_false(st.other_life);
    g_assert_cmpuint(st.resume_after, ==, 10);
    g_assert_cmpuint(st.crashed, ==, 11);
    g_assert_cmpuint(st.strikes, ==, 2);
    /* No checkpoint: start at deliver, strike 11 if it comes. */
    jet_position_start(&died, life, FALSE, &st);
    g_assert_cmpuint(st.resume_after, ==, 0);
    g_assert_cmpuint(st.crashed, ==, 11);
    g_assert_cmpuint(st.strikes, ==, 2);
    /* Another life: nothing applies, resumed or not. */
    for (int resume = 0; resume <= 1; resume++) {
        jet_position_start(&died, life + 1, resume, &st);
        g_assert_true(st.other_life);
        g_assert_cmpuint(st.resume_after, ==, 0);
        g_assert_cmpuint(st.crashed, ==, 0);
        g_assert_cmpuint(st.strikes, ==, 0);
    }
    /* A record of an older host (no life), or a life not known now: taken
     * as this stream's. */
    JetPosition old = { 10, 11, 0, 0, 0 };
    jet_position_start(&old, life, TRUE, &st);
    g_assert_false(st.other_life);
    g_assert_cmpuint(st.crashed, ==, 11);
    jet_position_start(&died, 0, TRUE, &st);
    g_assert_false(st.other_life);
    g_assert_cmpuint(st.resume_after, ==, 10);
    g_assert_cmpuint(st.careful_n, ==, 0);
    g_assert_cmpuint(st.careful_from, ==, 0);

    /* A span: nothing struck, its messages handled one mark each from `in`
     * on; resumed from or not, as any record. */
    JetPosition span = { 10, 11, 0, life, 100 };
    for (int resume = 0; resume <= 1; resume++) {
        jet_position_start(&span, life, resume, &st);
        g_assert_false(st.other_life);
        g_assert_cmpuint(st.resume_after, ==, resume ? 10 : 0);
        g_assert_cmpuint(st.crashed, ==, 0);
        g_assert_cmpuint(st.strikes, ==, 0);
        g_assert_cmpuint(st.careful_from, ==, 11);
        g_assert_cmpuint(st.careful_n, ==, 100);
    }
    /* ...and nothing of it for another life of the stream. */
    jet_position_start(&span, life + 1, FALSE, &st);
    g_assert_true(st.other_life);
    g_assert_cmpuint(st.careful_n, ==, 0);
    g_assert_cmpuint(st.careful_from, ==, 0);
    /* An idle record: nothing careful. */
    JetPosition idle = { 10, 0, 0, life, 1 };
    jet_position_start(&idle, life, FALSE, &st);
    g_assert_cmpuint(st.careful_n, ==, 0);
    g_assert_cmpuint(st.crashed, ==, 0);
}

/* Sequences below the position under one life (or an unknown one): the
 * answer the host asks again before starting over.  A changed creation
 * time is a new life at once, never a doubt. */
static void test_fell_back(void)
{
    const gint64 life = G_GINT64_CONSTANT(1733000000000000000);
    g_assert_true(jet_position_fell_back(life, 41, life, 40));
    g_assert_true(jet_position_fell_back(life, 1, life, 0));
    g_assert_true(jet_position_fell_back(0, 41, life, 0));
    g_assert_true(jet_position_fell_back(life, 41, 0, 0));
    g_assert_true(jet_position_fell_back(0, 41, 0, 40));
    g_assert_true(jet_position_fell_back(life, G_MAXUINT64, life, G_MAXUINT64 - 1));
    /* At or past the position: nothing fell back. */
    g_assert_false(jet_position_fell_back(life, 41, life, 41));
    g_assert_false(jet_position_fell_back(life, 41, life, 42));
    g_assert_false(jet_position_fell_back(life, 0, life, 0));
    g_assert_false(jet_position_fell_back(life, 41, life, G_MAXUINT64));
    /* Another creation time, one nanosecond apart either way: a new life,
     * whatever the sequences say. */
    g_assert_false(jet_position_fell_back(life, 41, life + 1, 0));
    g_assert_false(jet_position_fell_back(life, 41, life - 1, 40));
    g_assert_false(jet_position_fell_back(G_MININT64, 41, G_MAXINT64, 0));
    /* Whatever falls back is another life to jet_position_other_life. */
    g_assert_true(jet_position_other_life(life, 41, life, 40));
    g_assert_true(jet_position_other_life(0, 41, life, 0));
}

/* Another life of the stream: a creation time that changed (both known),
 * or a last sequence below the position; at every edge of both. */
static void test_other_life(void)
{
    const gint64 life = G_GINT64_CONSTANT(1733000000000000000);
    /* Same life, sequences at or past the position, or the last unknown. */
    g_assert_false(jet_position_other_life(life, 0, life, 0));
    g_assert_false(jet_position_other_life(life, 41, life, 41));
    g_assert_false(jet_position_other_life(life, 41, life, 42));
    g_assert_false(jet_position_other_life(life, 41, life, G_MAXUINT64));
    g_assert_false(jet_position_other_life(life, G_MAXUINT64, life, G_MAXUINT64));
    /* A life not known then or now never differs by time... */
    g_assert_false(jet_position_other_life(0, 41, life, 41));
    g_assert_false(jet_position_other_life(life, 41, 0, 41));
    g_assert_false(jet_position_other_life(0, 0, 0, 0));
    /* ...but sequences that fell back tell, whatever the times say. */
    g_assert_true(jet_position_other_life(life, 41, life, 40));
    g_assert_true(jet_position_other_life(0, 41, 0, 0));
    g_assert_true(jet_position_other_life(life, 1, life, 0));
    g_assert_true(jet_position_other_life(life, G_MAXUINT64, life, G_MAXUINT64 - 1));
    /* Another creation time, one nanosecond apart either way, even with
     * sequences past the position (the new life already longer). */
    g_assert_true(jet_position_other_life(life, 41, life + 1, 41));
    g_assert_true(jet_position_other_life(life, 41, life - 1, 1000));
    g_assert_true(jet_position_other_life(life, 0, life + 1, 0));
    g_assert_true(jet_position_other_life(G_MININT64, 0, G_MAXINT64, 0));
    /* A record whose position is past the stream's last (jet_position_start
     * knows no last): not another life by that alone. */
    JetPosition far = { 1000, 0, 0, life, 1 };
    JetPositionStart st;
    jet_position_start(&far, life, TRUE, &st);
    g_assert_false(st.other_life);
    g_assert_cmpuint(st.resume_after, ==, 1000);
}

static void test_key(void)
{
    g_autofree char *plain = jet_position_key("search-index");
    g_assert_cmpstr(plain, ==, "ordered.search-index");
    g_autofree char *odd = jet_position_key("a.b c");
    g_assert_cmpstr(odd, ==, "ordered.a_2Eb_20c");
}

/* The longest binding name still gives a name the server takes. */
static void test_consumer_name(void)
{
    g_autofree char *plain = jet_ordered_consumer_name("idx", 0xabcdef01u, 3);
    g_assert_cmpstr(plain, ==, "jethost_ord_idx_abcdef01_3");
    g_autofree char *longest = g_strnfill(255, 'b');
    g_autofree char *name = jet_ordered_consumer_name(longest, G_MAXUINT32, G_MAXUINT);
    g_assert_cmpuint(strlen(name), <=, 255);
    g_assert_true(g_str_has_suffix(name, "_ffffffff_4294967295"));
    g_assert_null(strpbrk(name, ". *>\t"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/position/round-trip", test_round_trip);
    g_test_add_func("/position/refused", test_refused);
    g_test_add_func("/position/crashed", test_crashed);
    g_test_add_func("/position/start", test_start);
    g_test_add_func("/position/other-life", test_other_life);
    g_test_add_func("/position/fell-back", test_fell_back);
    g_test_add_func("/position/key", test_key);
    g_test_add_func("/position/consumer-name", test_consumer_name);
    return g_test_run();
}
