/* An ordered binding's checkpoint record (host/core/position.c): its key,
 * JSON both ways, what it refuses, and what a start makes of it.  No
 * server. */
#include "position.h"

#include <string.h>

static void test_round_trip(void)
{
    static const JetPosition cases[] = {
        { 0, 0, 0, 0 },
        { 41, 42, 0, 0 },
        { 41, 42, 3, 0 },
        { 100, 0, 0, 0 },
        { G_MAXINT64 - 1, G_MAXINT64, G_MAXUINT32, G_MAXINT64 },
        { 7, 8, 1, G_GINT64_CONSTANT(1733000000123456789) },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        gsize len = 0;
        g_autofree char *json = jet_position_to_json(&cases[i], &len);
        g_assert_cmpuint(len, ==, strlen(json));
        JetPosition back = { 7, 7, 7, 7 };
        g_autoptr(GError) err = NULL;
        g_assert_true(jet_position_from_json(json, len, &back, &err));
        g_assert_no_error(err);
        g_assert_cmpuint(back.pos, ==, cases[i].pos);
        g_assert_cmpuint(back.in, ==, cases[i].in);
        g_assert_cmpuint(back.strikes, ==, cases[i].strikes);
        g_assert_cmpint(back.life, ==, cases[i].life);
    }
    /* A life not known is left out: the record reads as an older host's. */
    g_autofree char *json = jet_position_to_json(&cases[2], NULL);
    g_assert_cmpstr(json, ==, "{\"v\":1,\"pos\":41,\"in\":42,\"s\":3}");
    g_autofree char *with_life = jet_position_to_json(&cases[5], NULL);
    g_assert_cmpstr(with_life, ==, "{\"v\":1,\"pos\":7,\"in\":8,\"s\":1,\"life\":1733000000123456789}");
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
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        JetPosition p = { 1, 2, 3, 4 };
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
        JetPosition q = { 1, 2, 3, 4 };
        g_autoptr(GError) err = NULL;
        gsize len = bytes[i].len != 0 ? bytes[i].len : strlen(bytes[i].data);
        g_assert_false(jet_position_from_json(bytes[i].data, len, &q, &err));
        if (strstr(err->message, bytes[i].why) == NULL)
            g_error("case %zu: expected '%s' in: %s", i, bytes[i].why, err->message);
        g_assert_cmpuint(q.pos, ==, 1);
    }

    /* Unknown keys are ignored; absent counts are 0. */
    JetPosition p = { 9, 9, 9, 9 };
    const char *ok = "{\"v\":1,\"later\":\"x\"}";
    g_assert_true(jet_position_from_json(ok, strlen(ok), &p, NULL));
    g_assert_cmpuint(p.pos, ==, 0);
    g_assert_cmpuint(p.in, ==, 0);
    g_assert_cmpint(p.life, ==, 0);
}

static void test_crashed(void)
{
    guint64 crashed = 99;
    guint32 strikes = 99;
    JetPosition clean = { 10, 0, 0, 0 };
    jet_position_crashed(&clean, &crashed, &strikes);
    g_assert_cmpuint(crashed, ==, 0);
    g_assert_cmpuint(strikes, ==, 0);
    JetPosition died = { 10, 11, 0, 0 };
    jet_position_crashed(&died, &crashed, &strikes);
    g_assert_cmpuint(crashed, ==, 11);
    g_assert_cmpuint(strikes, ==, 1);
    JetPosition again = { 10, 11, 2, 0 };
    jet_position_crashed(&again, &crashed, &strikes);
    g_assert_cmpuint(strikes, ==, 3);
}

/* What a start makes of a record: resumed from only with checkpoint = kv,
 * its mark struck either way, and nothing of it for another life of the
 * stream (a stream deleted and re-created: its seq 11 is another message). */
static void test_start(void)
{
    const gint64 life = G_GINT64_CONSTANT(1733000000000000000);
    JetPosition died = { 10, 11, 1, life };
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
    JetPosition old = { 10, 11, 0, 0 };
    jet_position_start(&old, life, TRUE, &st);
    g_assert_false(st.other_life);
    g_assert_cmpuint(st.crashed, ==, 11);
    jet_position_start(&died, 0, TRUE, &st);
    g_assert_false(st.other_life);
    g_assert_cmpuint(st.resume_after, ==, 10);
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
    g_test_add_func("/position/key", test_key);
    g_test_add_func("/position/consumer-name", test_consumer_name);
    return g_test_run();
}
