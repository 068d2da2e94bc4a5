/* The payload the host passes on (host/core/payload.c): never NULL, on
 * every nats.c version; NULL is what 3.14 returns for an empty one and
 * cannot be made on 3.4, so it is fed here.  No server. */
#include "payload.h"

static void test_null(void)
{
    gsize len = 99;
    const char *p = jet_payload_or_empty(NULL, 0, &len);
    g_assert_nonnull(p);
    g_assert_cmpstr(p, ==, "");
    g_assert_cmpuint(len, ==, 0);
    /* NULL with a length (never sent by nats.c): still nothing to read. */
    len = 99;
    p = jet_payload_or_empty(NULL, 5, &len);
    g_assert_cmpstr(p, ==, "");
    g_assert_cmpuint(len, ==, 0);
}

static void test_empty(void)
{
    gsize len = 99;
    const char *p = jet_payload_or_empty("", 0, &len);
    g_assert_cmpstr(p, ==, "");
    g_assert_cmpuint(len, ==, 0);
    /* A negative length (an error from nats.c) reads as empty. */
    len = 99;
    p = jet_payload_or_empty("abc", -1, &len);
    g_assert_cmpstr(p, ==, "");
    g_assert_cmpuint(len, ==, 0);
}

static void test_bytes(void)
{
    static const char data[] = { 'a', '\0', 'b' };
    gsize len = 0;
    const char *p = jet_payload_or_empty(data, 3, &len);
    g_assert_true(p == data);   /* borrowed, not copied */
    g_assert_cmpuint(len, ==, 3);
    p = jet_payload_or_empty(data, 1, &len);
    g_assert_true(p == data);
    g_assert_cmpuint(len, ==, 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/payload/null", test_null);
    g_test_add_func("/payload/empty", test_empty);
    g_test_add_func("/payload/bytes", test_bytes);
    return g_test_run();
}
