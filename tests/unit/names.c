/* Names and subjects (names.h): the rules the config, the commands and the
 * dead-letter tools share, at their edges.  The same table is run through
 * the config reader, so that a name the config accepts is one every
 * command accepts too. */
#include "config.h"
#include "names.h"

#include <glib/gstdio.h>
#include <string.h>

typedef struct {
    const char *text;
    const char *why;   /* a word of the reason; NULL: accepted */
} Case;

static void run_cases(const char *what, const char *(*check)(const char *), const Case *cases, gsize n)
{
    for (gsize i = 0; i < n; i++) {
        const char *why = check(cases[i].text);
        g_autofree char *shown = g_strescape(cases[i].text, NULL);
        g_test_message("%s \"%s\": %s", what, shown, why != NULL ? why : "(accepted)");
        if (cases[i].why == NULL) {
            g_assert_null(why);
        } else {
            g_assert_nonnull(why);
            g_assert_nonnull(strstr(why, cases[i].why));
        }
    }
}

static const Case name_cases[] = {
    { "ORDERS", NULL },
    { "JETHOST_DLQ-2", NULL },
    { "caf\xc3\xa9", NULL },             /* the server takes UTF-8 names */
    { "\xe6\x97\xa5\xe6\x9c\xac", NULL },
    { "a$b", NULL },
    { "", "empty" },
    { "A.B", "'.'" },
    { "A*", "'*'" },
    { "A>", "'>'" },
    { "A/B", "'/'" },
    { "A\\B", "'\\'" },
    { "A B", "white space" },
    { "A\tB", "white space" },
    { "A\x01", "control" },
    { "A\x7f", "control" },
    { "A\xc2\xa0" "B", "white space" },   /* no-break space */
    { "A\xe2\x80\x8b" "B", "control" },   /* zero width space, a format character */
    { "A\xe2\x80\xae" "B", "control" },   /* bidi override */
    { "\xef\xbb\xbf" "A", "control" },    /* byte order mark */
    { "A\xff", "UTF-8" },
    { "\xc3\x28", "UTF-8" },
    { "\xc0\xae", "UTF-8" },              /* overlong '.' */
};

static void test_names(void)
{
    run_cases("name", jet_name_problem, name_cases, G_N_ELEMENTS(name_cases));
    g_autofree char *max = g_strnfill(JET_NAME_MAX, 'A');
    g_assert_null(jet_name_problem(max));
    g_autofree char *over = g_strnfill(JET_NAME_MAX + 1, 'A');
    g_assert_nonnull(strstr(jet_name_problem(over), "255"));
    g_assert_nonnull(jet_name_problem(NULL));
}

static const Case subject_cases[] = {
    { "orders.new", NULL },
    { "a", NULL },
    { "a.b.c", NULL },
    { "ORDERS_1.x-y", NULL },
    { "$JS", NULL },
    { "$jsx.api", NULL },
    { "JS.API.x", NULL },
    { "inbox.x", NULL },
    { "_INBOXES.x", NULL },
    { "caf\xc3\xa9.x", NULL },
    { "a$JS.x", NULL },
    { "orders.$JS.fine", NULL },
    { "$JS.API.STREAM.PURGE.X", "reserved" },
    { "$js.api.x", "reserved" },
    { "$Js.Ack.S.c.1.1.1.1.0", "reserved" },
    { "$KV.bucket.key", "reserved" },
    { "$kv.b.k", "reserved" },
    { "$O.store.x", "reserved" },
    { "$SYS.REQ.SERVER.PING", "reserved" },
    { "$JSC.x", "reserved" },
    { "$NRG.x", "reserved" },
    { "$MQTT.x", "reserved" },
    { "_INBOX.x", "reserved" },
    { "_inbox.abc.def", "reserved" },
    { "a.*", "wildcard" },
    { "a.>", "wildcard" },
    { ">", "wildcard" },
    { "*", "wildcard" },
    { "a*b.c", "wildcard" },
    { "a..b", "empty token" },
    { ".a", "empty token" },
    { "a.", "empty token" },
    { ".", "empty token" },
    { "a b", "white space" },
    { "a\tb", "white space" },
    { "a\nb", "white space" },
    { "a\rb", "white space" },
    { "a\x01" "b", "control" },
    { "a\x1b[31m", "control" },
    { "a\x7f", "control" },
    { "a\xc2\x85" "b", "control" },       /* U+0085 NEL */
    { "a\xe2\x80\xae" "b", "control" },   /* U+202E bidi override */
    { "a\xc2\xa0" "b", "white space" },   /* U+00A0 no-break space */
    { "a\xe2\x80\xa8" "b", "white space" },   /* line separator */
    { "", "empty" },
    { "a\xff", "UTF-8" },
    { "\xc3\x28", "UTF-8" },
};

static const char *literal(const char *s)
{
    return jet_subject_problem(s, JET_SUBJECT_LITERAL);
}

/* What a filter may be: wildcards as whole tokens, '>' last, the server's
 * namespaces allowed. */
static const Case filter_cases[] = {
    { "orders.>", NULL },
    { "orders.*.x", NULL },
    { "*", NULL },
    { ">", NULL },
    { "*.*.>", NULL },
    { "$KV.b.>", NULL },
    { "$JS.API.x", NULL },
    { "orders.>.x", "'>' before its last token" },
    { "orders.a*", "wildcard inside a token" },
    { "orders.>>", "wildcard inside a token" },
    { "orders..x", "empty token" },
    { "orders. x", "white space" },
    { "orders.\xff", "UTF-8" },
};

static const char *filter(const char *s)
{
    return jet_subject_problem(s, JET_SUBJECT_WILDCARDS | JET_SUBJECT_RESERVED);
}

static void test_subjects(void)
{
    run_cases("subject", literal, subject_cases, G_N_ELEMENTS(subject_cases));
    run_cases("filter", filter, filter_cases, G_N_ELEMENTS(filter_cases));
    g_assert_nonnull(literal(NULL));
    /* The namespaces alone, or wildcards alone. */
    g_assert_null(jet_subject_problem("$KV.b.k", JET_SUBJECT_RESERVED));
    g_assert_nonnull(jet_subject_problem("$KV.b.*", JET_SUBJECT_RESERVED));
    g_assert_nonnull(jet_subject_problem("$KV.b.*", JET_SUBJECT_WILDCARDS));
    g_assert_null(jet_subject_problem("kv.b.*", JET_SUBJECT_WILDCARDS));
    /* 1024 bytes at most, counted in bytes. */
    g_autofree char *max = g_strnfill(JET_SUBJECT_MAX, 'a');
    g_assert_null(literal(max));
    g_autofree char *over = g_strnfill(JET_SUBJECT_MAX + 1, 'a');
    g_assert_nonnull(strstr(literal(over), "1024"));
}

static const Case bucket_cases[] = {
    { "jethost_ledger", NULL },
    { "a-b_C9", NULL },
    { "", "empty" },
    { "a.b", "letters, digits" },
    { "C+F", "letters, digits" },
    { "caf\xc3\xa9", "letters, digits" },
    { "a b", "letters, digits" },
};

static const Case key_cases[] = {
    { "k", NULL },
    { "a.b/c=d_e-f", NULL },
    { "", "empty" },
    { ".a", "empty token" },
    { "a.", "empty token" },
    { "a..b", "empty token" },
    { "a*", "not a KV key" },
    { "a>", "not a KV key" },
    { "a b", "not a KV key" },
    { "\xc3\xa9", "not a KV key" },
};

static const Case binding_cases[] = {
    { "orders", NULL },
    { "o-1_X", NULL },
    { "", "empty" },
    { "a.b", "letters, digits" },
    { "caf\xc3\xa9", "letters, digits" },
};

static void test_buckets_keys_bindings(void)
{
    run_cases("bucket", jet_bucket_problem, bucket_cases, G_N_ELEMENTS(bucket_cases));
    run_cases("key", jet_kv_key_problem, key_cases, G_N_ELEMENTS(key_cases));
    run_cases("binding", jet_binding_name_problem, binding_cases, G_N_ELEMENTS(binding_cases));
    g_autofree char *max = g_strnfill(JET_BUCKET_MAX, 'b');
    g_assert_null(jet_bucket_problem(max));
    g_autofree char *over = g_strnfill(JET_BUCKET_MAX + 1, 'b');
    g_assert_nonnull(jet_bucket_problem(over));
    g_autofree char *bmax = g_strnfill(JET_NAME_MAX, 'b');
    g_assert_null(jet_binding_name_problem(bmax));
    g_autofree char *bover = g_strnfill(JET_NAME_MAX + 1, 'b');
    g_assert_nonnull(jet_binding_name_problem(bover));
}

/* The config reader takes exactly the names the commands take: every name
 * case as a dlq_stream, and as an item of publish_streams. */
static void test_config_agrees(void)
{
    g_autofree char *dir = g_dir_make_tmp("jet-names-XXXXXX", NULL);
    g_assert_nonnull(dir);
    g_autofree char *plugin = g_build_filename(dir, "p.so", NULL);
    g_assert_true(g_file_set_contents(plugin, "", 0, NULL));
    g_autofree char *path = g_build_filename(dir, "c.conf", NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(name_cases); i++) {
        const Case *c = &name_cases[i];
        if (*c->text == '\0' || !g_utf8_validate(c->text, -1, NULL))
            continue;   /* an empty key is "required"; GKeyFile refuses what is not UTF-8 */
        for (int as_list = 0; as_list < 2; as_list++) {
            g_autofree char *text = g_strdup_printf(
                "[host]\nserver = nats://127.0.0.1:4222\n\n[binding b]\nplugin = %s\nstream = S\nconsumer = c\n"
                "%s = %s\n", plugin, as_list ? "publish_streams" : "dlq_stream", c->text);
            g_assert_true(g_file_set_contents(path, text, -1, NULL));
            g_autoptr(GError) error = NULL;
            JetConfig *cfg = jet_config_load(path, NULL, &error);
            gboolean accepted = cfg != NULL;
            g_autofree char *shown = g_strescape(c->text, NULL);
            g_test_message("config %s = \"%s\": %s", as_list ? "publish_streams" : "dlq_stream", shown,
                           accepted ? "accepted" : error->message);
            /* White space at either end of a list item is the list's. */
            if (as_list && c->why != NULL && strcmp(c->why, "white space") == 0 && cfg == NULL)
                continue;
            g_assert_cmpint(accepted, ==, c->why == NULL);
            if (cfg != NULL)
                jet_config_free(cfg);
        }
    }
    g_unlink(path);
    g_unlink(plugin);
    g_rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/names/names", test_names);
    g_test_add_func("/names/subjects", test_subjects);
    g_test_add_func("/names/buckets-keys-bindings", test_buckets_keys_bindings);
    g_test_add_func("/names/config-agrees", test_config_agrees);
    return g_test_run();
}
