/* A plugin's publishes, checked and queued (host/core/forward.c): every
 * kind of subject, header list and size a plugin could pass, the limits at
 * their edges, and the Nats-Msg-Id.  No server. */
#include "forward.h"

#include <jethost/plugin.h>
#include <string.h>

static void test_accepted(void)
{
    g_auto(JetPublishQueue) q = { 0 };
    static const char *const hs[] = { "Trace", "abc", "Empty", "", "Trace", "again", NULL };
    g_assert_cmpint(jet_publish_queue_add(&q, "orders.fwd", hs, "xy", 2, FALSE), ==, JET_OK);
    g_assert_cmpint(jet_publish_queue_add(&q, "a", NULL, NULL, 0, FALSE), ==, JET_OK);
    g_assert_cmpint(jet_publish_queue_add(&q, "$KV.B.k", NULL, "v", 1, TRUE), ==, JET_OK);
    g_assert_null(q.refused);
    g_assert_cmpuint(q.items->len, ==, 3);
    JetPublish *p = g_ptr_array_index(q.items, 0);
    g_assert_cmpstr(p->subject, ==, "orders.fwd");
    g_assert_cmpuint(p->headers->len, ==, 6);
    g_assert_cmpstr(g_ptr_array_index(p->headers, 4), ==, "Trace");
    g_assert_cmpstr(g_ptr_array_index(p->headers, 5), ==, "again");
    gsize len = 0;
    g_assert_cmpmem(g_bytes_get_data(p->data, &len), 2, "xy", 2);
    p = g_ptr_array_index(q.items, 1);
    g_assert_cmpuint(g_bytes_get_size(p->data), ==, 0);
}

static void test_refused(void)
{
    static const char *const odd[] = { "A", NULL };
    static const char *const bad_name[] = { "A B", "v", NULL };
    static const char *const colon[] = { "A:", "v", NULL };
    static const char *const msgid[] = { "Nats-Msg-Id", "mine", NULL };
    static const char *const nats_lower[] = { "nats-expected-stream", "S", NULL };
    static const char *const crlf[] = { "A", "v\r\nInjected: 1", NULL };
    static const char *const lead_space[] = { "A", " v", NULL };
    static const struct {
        const char *subject;
        const char *const *headers;
        const char *data;
        gsize len;
        gboolean reserved;
        int code;
        const char *needle;
    } cases[] = {
        { NULL, NULL, NULL, 0, FALSE, JET_EINVAL, "is empty" },
        { "", NULL, NULL, 0, FALSE, JET_EINVAL, "is empty" },
        { "a.*", NULL, NULL, 0, FALSE, JET_EINVAL, "wildcard" },
        { "a.>", NULL, NULL, 0, TRUE, JET_EINVAL, "wildcard" },
        { "a b", NULL, NULL, 0, FALSE, JET_EINVAL, "white space" },
        { "a\x01", NULL, NULL, 0, FALSE, JET_EINVAL, "control" },
        { "a.\xff", NULL, NULL, 0, FALSE, JET_EINVAL, "UTF-8" },
        { "a..b", NULL, NULL, 0, FALSE, JET_EINVAL, "empty token" },
        { "$JS.API.STREAM.DELETE.X", NULL, NULL, 0, FALSE, JET_EINVAL, "publish_reserved = true allows" },
        { "$kv.B.k", NULL, NULL, 0, FALSE, JET_EINVAL, "reserved for the server" },
        { "$SYS.REQ", NULL, NULL, 0, FALSE, JET_EINVAL, "reserved" },
        { "_INBOX.x", NULL, NULL, 0, FALSE, JET_EINVAL, "reserved" },
        { "a", odd, NULL, 0, FALSE, JET_EINVAL, "ends after a name" },
        { "a", bad_name, NULL, 0, FALSE, JET_EINVAL, "is not a token" },
        { "a", colon, NULL, 0, FALSE, JET_EINVAL, "is not a token" },
        { "a", msgid, NULL, 0, FALSE, JET_EINVAL, "Nats-* headers are the host's" },
        { "a", nats_lower, NULL, 0, FALSE, JET_EINVAL, "Nats-* headers are the host's" },
        { "a", crlf, NULL, 0, FALSE, JET_EINVAL, "CR, LF or NUL" },
        { "a", lead_space, NULL, 0, FALSE, JET_EINVAL, "starts or ends with a space" },
        { "a", NULL, NULL, 3, FALSE, JET_EINVAL, "data is NULL with length 3" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(JetPublishQueue) q = { 0 };
        int rc = jet_publish_queue_add(&q, cases[i].subject, cases[i].headers, cases[i].data, cases[i].len,
                                       cases[i].reserved);
        g_test_message("%zu: %s", i, q.refused != NULL ? q.refused : "(accepted)");
        g_assert_cmpint(rc, ==, cases[i].code);
        g_assert_nonnull(q.refused);
        g_assert_nonnull(strstr(q.refused, cases[i].needle));
        g_assert_true(g_str_has_prefix(q.refused, "publish 0: "));
        /* The hint about publish_reserved only where the namespace is the problem. */
        g_assert_cmpint(strstr(q.refused, "publish_reserved") != NULL, ==, strstr(cases[i].needle, "reserved") != NULL);
        g_assert_null(q.items);
    }
}

/* The first refusal is the one kept; later good calls still queue (the
 * delivery is a plugin error all the same). */
static void test_first_refusal_kept(void)
{
    g_auto(JetPublishQueue) q = { 0 };
    g_assert_cmpint(jet_publish_queue_add(&q, "ok", NULL, NULL, 0, FALSE), ==, JET_OK);
    g_assert_cmpint(jet_publish_queue_add(&q, "bad.*", NULL, NULL, 0, FALSE), ==, JET_EINVAL);
    g_assert_cmpint(jet_publish_queue_add(&q, "", NULL, NULL, 0, FALSE), ==, JET_EINVAL);
    g_assert_true(g_str_has_prefix(q.refused, "publish 1: subject \"bad.*\""));
}

static void test_limits(void)
{
    g_auto(JetPublishQueue) q = { 0 };
    for (guint i = 0; i < JET_PUBLISH_MAX_COUNT; i++)
        g_assert_cmpint(jet_publish_queue_add(&q, "a", NULL, "x", 1, FALSE), ==, JET_OK);
    g_assert_cmpint(jet_publish_queue_add(&q, "a", NULL, "x", 1, FALSE), ==, JET_ELIMIT);
    g_assert_nonnull(strstr(q.refused, "more than 256 publishes"));
    jet_publish_queue_clear(&q);

    /* Bytes: exactly at the limit passes, one more is refused. */
    gsize big = JET_PUBLISH_MAX_BYTES - 1;   /* + 1 byte of subject */
    g_autofree char *data = g_malloc0(big + 1);
    g_assert_cmpint(jet_publish_queue_add(&q, "a", NULL, data, big, FALSE), ==, JET_OK);
    g_assert_cmpint(jet_publish_queue_add(&q, "b", NULL, NULL, 0, FALSE), ==, JET_ELIMIT);
    g_assert_nonnull(strstr(q.refused, "bytes published for one message"));
    jet_publish_queue_clear(&q);

    /* Headers: 64 pass, 65 are refused. */
    g_autoptr(GPtrArray) hs = g_ptr_array_new();
    for (guint i = 0; i < JET_PUBLISH_MAX_HEADERS; i++) {
        g_ptr_array_add(hs, (gpointer) "H");
        g_ptr_array_add(hs, (gpointer) "v");
    }
    g_ptr_array_add(hs, NULL);
    g_assert_cmpint(jet_publish_queue_add(&q, "a", (const char *const *)hs->pdata, NULL, 0, FALSE), ==, JET_OK);
    g_ptr_array_remove_index(hs, hs->len - 1);
    g_ptr_array_add(hs, (gpointer) "H");
    g_ptr_array_add(hs, (gpointer) "v");
    g_ptr_array_add(hs, NULL);
    g_assert_cmpint(jet_publish_queue_add(&q, "a", (const char *const *)hs->pdata, NULL, 0, FALSE), ==, JET_ELIMIT);
    g_assert_nonnull(strstr(q.refused, "more than 64 headers"));
}

/* A long hostile subject is quoted cut and escaped. */
static void test_shown_bounded(void)
{
    g_auto(JetPublishQueue) q = { 0 };
    g_autofree char *s = g_strnfill(10000, 'x');
    s[5000] = '*';
    g_assert_cmpint(jet_publish_queue_add(&q, s, NULL, NULL, 0, FALSE), ==, JET_EINVAL);
    g_assert_cmpuint(strlen(q.refused), <, 400);
    g_assert_nonnull(strstr(q.refused, "..."));
}

static void test_msg_id(void)
{
    g_autofree char *a = jet_publish_msg_id("ORDERS", "c", 42, 1700000000000000000, 0);
    g_assert_cmpstr(a, ==, "jethost-pub:ORDERS.c:42:1700000000000000000:0");
    /* Every part tells ids apart. */
    const char *ids[6];
    g_autofree char *b = jet_publish_msg_id("ORDERS", "c", 42, 1700000000000000000, 1);
    g_autofree char *c = jet_publish_msg_id("ORDERS", "c", 43, 1700000000000000000, 0);
    g_autofree char *d = jet_publish_msg_id("ORDERS", "d", 42, 1700000000000000000, 0);
    g_autofree char *e = jet_publish_msg_id("ORDERS2", "c", 42, 1700000000000000000, 0);
    g_autofree char *f = jet_publish_msg_id("ORDERS", "c", 42, 1700000000000000001, 0);
    ids[0] = a; ids[1] = b; ids[2] = c; ids[3] = d; ids[4] = e; ids[5] = f;
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++)
            g_assert_cmpstr(ids[i], !=, ids[j]);
    /* A ':' in a consumer name cannot make two ids equal: the last three
     * fields are numbers, read from the right. */
    g_autofree char *g = jet_publish_msg_id("S", "c:1", 2, 3, 0);
    g_autofree char *h = jet_publish_msg_id("S", "c", 1, 2, 3);
    g_assert_cmpstr(g, !=, h);
}

static GPtrArray *pairs(const char *const *kv)
{
    GPtrArray *h = g_ptr_array_new_with_free_func(g_free);
    for (; kv != NULL && kv[0] != NULL; kv += 2) {
        g_ptr_array_add(h, g_strdup(kv[0]));
        g_ptr_array_add(h, g_strdup(kv[1]));
    }
    return h;
}

static guint32 hops_of(const char *value)
{
    const char *const kv[] = { "X", "1", "Jethost-Hops", value, NULL };
    g_autoptr(GPtrArray) h = pairs(kv);
    return jet_hops_read(h);
}

static void test_hops_read(void)
{
    g_assert_cmpuint(jet_hops_read(NULL), ==, 0);
    g_autoptr(GPtrArray) none = pairs(NULL);
    g_assert_cmpuint(jet_hops_read(none), ==, 0);
    g_assert_cmpuint(hops_of("0"), ==, 0);
    g_assert_cmpuint(hops_of("1"), ==, 1);
    g_assert_cmpuint(hops_of("15"), ==, 15);
    g_assert_cmpuint(hops_of("4294967295"), ==, G_MAXUINT32);
    /* Larger than any count: capped, never wrapped to a small one. */
    g_assert_cmpuint(hops_of("4294967296"), ==, G_MAXUINT32);
    g_assert_cmpuint(hops_of("99999999999999999999999999"), ==, G_MAXUINT32);
    /* Not a count the host wrote: no count. */
    static const char *const odd[] = { "", "01", "00", "+1", "-1", " 1", "1 ", "abc", "1x", "0x10", "1.5", NULL };
    for (guint i = 0; odd[i] != NULL; i++)
        g_assert_cmpuint(hops_of(odd[i]), ==, 0);
    /* The name is case-blind, as header names are; the first one counts. */
    static const char *const lower[] = { "jethost-hops", "7", "Jethost-Hops", "9", NULL };
    g_autoptr(GPtrArray) l = pairs(lower);
    g_assert_cmpuint(jet_hops_read(l), ==, 7);
}

static void test_wire_headers(void)
{
    g_auto(JetPublishQueue) q = { 0 };
    static const char *const hs[] = { "Trace", "abc", "jethost-hops", "0", "Jethost-Hops", "x", "Z", "", NULL };
    g_assert_cmpint(jet_publish_queue_add(&q, "orders.fwd", hs, "xy", 2, FALSE), ==, JET_OK);
    g_assert_cmpint(jet_publish_queue_add(&q, "orders.fwd", NULL, NULL, 0, FALSE), ==, JET_OK);
    JetPublish *p = g_ptr_array_index(q.items, 0);
    g_autoptr(GPtrArray) h = jet_publish_wire_headers(p, "id-1", 3);
    /* The id, the host's count one up, then the plugin's own in order
     * without any count of theirs. */
    static const char *const want[] = { "Nats-Msg-Id", "id-1", "Jethost-Hops", "4", "Trace", "abc", "Z", "" };
    g_assert_cmpuint(h->len, ==, G_N_ELEMENTS(want));
    for (guint i = 0; i < h->len; i++)
        g_assert_cmpstr(g_ptr_array_index(h, i), ==, want[i]);
    g_assert_cmpuint(jet_hops_read(h), ==, 4);
    /* No headers of the plugin's; a first publish; the top of the range. */
    p = g_ptr_array_index(q.items, 1);
    g_autoptr(GPtrArray) first = jet_publish_wire_headers(p, "id-2", 0);
    g_assert_cmpuint(first->len, ==, 4);
    g_assert_cmpstr(g_ptr_array_index(first, 3), ==, "1");
    g_autoptr(GPtrArray) top = jet_publish_wire_headers(p, "id-3", G_MAXUINT32);
    g_assert_cmpstr(g_ptr_array_index(top, 3), ==, "4294967296");
    g_assert_cmpuint(jet_hops_read(top), ==, G_MAXUINT32);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/forward/accepted", test_accepted);
    g_test_add_func("/forward/refused", test_refused);
    g_test_add_func("/forward/first-refusal-kept", test_first_refusal_kept);
    g_test_add_func("/forward/limits", test_limits);
    g_test_add_func("/forward/shown-bounded", test_shown_bounded);
    g_test_add_func("/forward/msg-id", test_msg_id);
    g_test_add_func("/forward/hops-read", test_hops_read);
    g_test_add_func("/forward/wire-headers", test_wire_headers);
    return g_test_run();
}
