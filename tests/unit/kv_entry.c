/* A KV entry read off a delivery (host/core/kv_entry.c): every subject and
 * KV-Operation header a publisher could send, the accepted ones read right,
 * the others refused with what is wrong.  No server. */
#include "kv_entry.h"

#include <string.h>

static GPtrArray *hdrs(const char *const *pairs)
{
    GPtrArray *a = g_ptr_array_new();
    for (guint i = 0; pairs != NULL && pairs[i] != NULL; i++)
        g_ptr_array_add(a, (gpointer)pairs[i]);
    return a;
}

static void test_accepted(void)
{
    static const char *const none[] = { NULL };
    static const char *const del[] = { "KV-Operation", "DEL", NULL };
    static const char *const purge[] = { "Other", "x", "KV-Operation", "PURGE", NULL };
    /* Header names are exact, as the server's own: another case is just a header. */
    static const char *const lower[] = { "kv-operation", "DEL", NULL };
    /* A server's own marker (2.11+): no KV-Operation, a reason. */
    static const char *const max_age[] = { "Nats-Marker-Reason", "MaxAge", "Nats-TTL", "1s", NULL };
    static const char *const purged[] = { "Nats-Marker-Reason", "Purge", NULL };
    static const char *const removed[] = { "Nats-Marker-Reason", "Remove", NULL };
    static const char *const newer[] = { "Nats-Marker-Reason", "Something-New", NULL };
    static const char *const empty_reason[] = { "Nats-Marker-Reason", "", NULL };
    static const char *const lower_marker[] = { "nats-marker-reason", "MaxAge", NULL };
    /* A KV-Operation outranks a reason, as in the KV clients. */
    static const char *const both[] = { "Nats-Marker-Reason", "MaxAge", "KV-Operation", "DEL", NULL };
    static const struct {
        const char *bucket, *subject;
        const char *const *h;
        const char *key;
        jet_kv_op op;
    } cases[] = {
        { "B", "$KV.B.k", none, "k", JET_KV_PUT },
        { "B", "$KV.B.a.b.c", del, "a.b.c", JET_KV_DELETE },
        { "B", "$KV.B.x", purge, "x", JET_KV_PURGE },
        { "B", "$KV.B.x", lower, "x", JET_KV_PUT },
        { "B", "$KV.B.x", max_age, "x", JET_KV_PURGE },
        { "B", "$KV.B.x", purged, "x", JET_KV_PURGE },
        { "B", "$KV.B.x", removed, "x", JET_KV_DELETE },
        { "B", "$KV.B.x", newer, "x", JET_KV_DELETE },
        { "B", "$KV.B.x", empty_reason, "x", JET_KV_PUT },
        { "B", "$KV.B.x", lower_marker, "x", JET_KV_PUT },
        { "B", "$KV.B.x", both, "x", JET_KV_DELETE },
        { "CFG_1", "$KV.CFG_1.A-z_0/9=.q", none, "A-z_0/9=.q", JET_KV_PUT },
        { "B", "$KV.B.$KV.B", NULL, NULL, JET_KV_NONE },   /* '$' is no key character */
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GPtrArray) h = cases[i].h != NULL ? hdrs(cases[i].h) : NULL;
        JetKvEntry e;
        g_autofree char *why = NULL;
        gboolean ok = jet_kv_entry_read(cases[i].bucket, cases[i].subject, h, &e, &why);
        if (cases[i].key == NULL) {
            g_assert_false(ok);
            continue;
        }
        g_assert_true(ok);
        g_assert_null(why);
        g_assert_cmpstr(e.key, ==, cases[i].key);
        g_assert_cmpint(e.op, ==, cases[i].op);
        /* Borrowed from the subject, not copied. */
        g_assert_true(e.key >= cases[i].subject && e.key < cases[i].subject + strlen(cases[i].subject));
    }
}

static void test_refused(void)
{
    static const char *const none[] = { NULL };
    static const char *const twice[] = { "KV-Operation", "DEL", "KV-Operation", "DEL", NULL };
    static const char *const lower_value[] = { "KV-Operation", "del", NULL };
    static const char *const empty[] = { "KV-Operation", "", NULL };
    static const char *const put[] = { "KV-Operation", "PUT", NULL };
    static const char *const ctl[] = { "KV-Operation", "DEL\x01", NULL };
    static const struct {
        const char *subject;
        const char *const *h;
        const char *needle;
    } cases[] = {
        { NULL, none, "is not a key of bucket B" },
        { "", none, "is not a key of bucket B" },
        { "$KV.B", none, "is not a key of bucket B" },
        { "$KV.B.", none, "is not a valid KV key" },
        { "$KV.BB.k", none, "is not a key of bucket B" },
        { "$KV.b.k", none, "is not a key of bucket B" },
        { "KV.B.k", none, "is not a key of bucket B" },
        { "$kv.B.k", none, "is not a key of bucket B" },
        { "$KV.B..k", none, "is not a valid KV key" },
        { "$KV.B.k.", none, "is not a valid KV key" },
        { "$KV.B.a..b", none, "is not a valid KV key" },
        { "$KV.B.*", none, "is not a valid KV key" },
        { "$KV.B.a.>", none, "is not a valid KV key" },
        { "$KV.B.a b", none, "is not a valid KV key" },
        { "$KV.B.a\tb", none, "'a\\tb'" },
        { "$KV.B.\xc3\xa9", none, "'\\303\\251'" },
        { "$KV.B.k\r\n", none, "is not a valid KV key" },
        { "$KV.B.k", twice, "appears 2 times" },
        { "$KV.B.k", lower_value, "'del' is neither DEL nor PURGE" },
        { "$KV.B.k", empty, "'' is neither" },
        { "$KV.B.k", put, "'PUT' is neither" },
        { "$KV.B.k", ctl, "'DEL\\001' is neither" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GPtrArray) h = hdrs(cases[i].h);
        JetKvEntry e = { "stale", JET_KV_PURGE };
        g_autofree char *why = NULL;
        g_assert_false(jet_kv_entry_read("B", cases[i].subject, h, &e, &why));
        g_test_message("%s -> %s", cases[i].subject != NULL ? cases[i].subject : "(null)", why);
        g_assert_nonnull(why);
        g_assert_nonnull(strstr(why, cases[i].needle));
        g_assert_true(g_str_has_prefix(why, "KV entry: "));
        g_assert_null(e.key);
        g_assert_cmpint(e.op, ==, JET_KV_NONE);
    }
    /* A long hostile subject is shown cut, never whole. */
    g_autofree char *longkey = g_strnfill(5000, 'x');
    g_autofree char *subject = g_strconcat("$KV.B.", longkey, "*", NULL);
    JetKvEntry e;
    g_autofree char *why = NULL;
    g_assert_false(jet_kv_entry_read("B", subject, NULL, &e, &why));
    g_assert_cmpuint(strlen(why), <, 300);
}

static void test_op_names(void)
{
    g_assert_cmpstr(jet_kv_op_name(JET_KV_PUT), ==, "put");
    g_assert_cmpstr(jet_kv_op_name(JET_KV_DELETE), ==, "delete");
    g_assert_cmpstr(jet_kv_op_name(JET_KV_PURGE), ==, "purge");
    g_assert_cmpstr(jet_kv_op_name(JET_KV_NONE), ==, "none");
    g_assert_cmpstr(jet_kv_op_name((jet_kv_op)42), ==, "none");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kv-entry/accepted", test_accepted);
    g_test_add_func("/kv-entry/refused", test_refused);
    g_test_add_func("/kv-entry/op-names", test_op_names);
    return g_test_run();
}
