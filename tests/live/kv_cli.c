/* `jethost kv put|get|del` (the binary) against a real nats-server: round
 * trips with values as bytes (argument and standard input), `--create`
 * making a missing bucket and leaving an existing one as it is, the errors
 * for a missing bucket and an absent key, and a `kind = kv` binding under
 * `jethost run` seeing what `jethost kv` wrote (docs/cli.md, "kv";
 * docs/kv.md). */
#include "harness.h"

#include <json-glib/json-glib.h>
#include <signal.h>
#include <string.h>

typedef JetTestJs Fx;

/* Runs `jethost kv -s URL ARGS...` with stdin (NULL: empty) to its end;
 * its exit status, stdout as bytes and stderr as text. */
static int kv(Fx *fx, GBytes *stdin_bytes, GBytes **out, char **err_text, ...)
{
    g_autofree char *bin = jet_test_jethost_path();
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, "kv");
    g_ptr_array_add(argv, "-s");
    g_ptr_array_add(argv, (char *)fx->url);
    va_list ap;
    va_start(ap, err_text);
    for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(argv, (char *)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_newv((const char *const *)argv->pdata,
                                                 G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                     | G_SUBPROCESS_FLAGS_STDERR_PIPE, &err);
    g_assert_no_error(err);
    g_autoptr(GBytes) empty = g_bytes_new_static("", 0);
    GBytes *o = NULL, *e = NULL;
    g_assert_true(g_subprocess_communicate(p, stdin_bytes != NULL ? stdin_bytes : empty, NULL, &o, &e, &err));
    g_assert_no_error(err);
    if (out != NULL)
        *out = o;
    else
        g_bytes_unref(o);
    gsize elen = 0;
    const char *edata = g_bytes_get_data(e, &elen);
    *err_text = g_strndup(edata != NULL ? edata : "", elen);
    g_bytes_unref(e);
    return g_subprocess_get_if_exited(p) ? g_subprocess_get_exit_status(p) : 128;
}

static void assert_bytes(GBytes *b, const void *want, gsize want_len)
{
    gsize len = 0;
    const void *data = g_bytes_get_data(b, &len);
    g_assert_cmpmem(data, len, want, want_len);
}

static void assert_text(GBytes *b, const char *want)
{
    assert_bytes(b, want, strlen(want));
}

static natsStatus bucket_status(Fx *fx, const char *bucket)
{
    kvStore *kv = NULL;
    natsStatus s = js_KeyValue(&kv, fx->js, bucket);
    kvStore_Destroy(kv);
    return s;
}

/* The bucket's stream has this history and storage. */
static void assert_bucket(Fx *fx, const char *bucket, gint64 history, jsStorageType storage)
{
    g_autofree char *stream = g_strconcat("KV_", bucket, NULL);
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, fx->js, stream, NULL, NULL), ==, NATS_OK);
    g_assert_cmpint(si->Config->MaxMsgsPerSubject, ==, history);
    g_assert_cmpint(si->Config->Storage, ==, storage);
    jsStreamInfo_Destroy(si);
}

/* put --create, put, put from stdin, get, del, get again: what the command
 * says matches what nats.c reads from the bucket. */
static void test_round_trip(Fx *fx, gconstpointer data)
{
    (void)data;
    g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL, *e5 = NULL, *e6 = NULL, *e7 = NULL, *e8 = NULL;
    g_autoptr(GBytes) o1 = NULL, o2 = NULL, o3 = NULL, o4 = NULL, o5 = NULL, o6 = NULL, o7 = NULL, o8 = NULL;

    /* Without --create a missing bucket is an error, and stays missing. */
    g_assert_cmpint(kv(fx, NULL, &o1, &e1, "put", "SETTINGS", "app.theme", "dark", NULL), ==, 1);
    g_assert_nonnull(strstr(e1, "bucket SETTINGS does not exist"));
    g_assert_nonnull(strstr(e1, "--create"));
    g_assert_cmpuint(g_bytes_get_size(o1), ==, 0);
    g_assert_cmpint(bucket_status(fx, "SETTINGS"), ==, NATS_NOT_FOUND);

    g_assert_cmpint(kv(fx, NULL, &o2, &e2, "put", "--create", "SETTINGS", "app.theme", "dark", NULL), ==, 0);
    assert_text(o2, "1\n");
    g_assert_nonnull(strstr(e2, "created bucket SETTINGS (history 1, file storage)"));
    assert_bucket(fx, "SETTINGS", 1, js_FileStorage);

    /* Again with --create: the bucket is there, nothing is created. */
    g_assert_cmpint(kv(fx, NULL, &o3, &e3, "put", "--create", "SETTINGS", "app.theme", "light", NULL), ==, 0);
    assert_text(o3, "2\n");
    g_assert_null(strstr(e3, "created"));

    /* Standard input, as bytes: a NUL, a line break and a byte that is not UTF-8. */
    static const char raw[] = { 'a', '\0', 'b', '\n', (char)0xff };
    g_autoptr(GBytes) in = g_bytes_new_static(raw, sizeof raw);
    g_assert_cmpint(kv(fx, in, &o4, &e4, "put", "SETTINGS", "app/limits=x", NULL), ==, 0);
    assert_text(o4, "3\n");
    kvStore *store = NULL;
    g_assert_cmpint(js_KeyValue(&store, fx->js, "SETTINGS"), ==, NATS_OK);
    kvEntry *entry = NULL;
    g_assert_cmpint(kvStore_Get(&entry, store, "app/limits=x"), ==, NATS_OK);
    g_assert_cmpmem(kvEntry_Value(entry), kvEntry_ValueLen(entry), raw, sizeof raw);
    kvEntry_Destroy(entry);

    /* get prints the value as stored, no newline added; "--" lets a value start with '-'. */
    g_assert_cmpint(kv(fx, NULL, &o5, &e5, "get", "SETTINGS", "app/limits=x", NULL), ==, 0);
    assert_bytes(o5, raw, sizeof raw);
    g_autofree char *e5b = NULL;
    g_autoptr(GBytes) o5b = NULL, o5c = NULL;
    g_assert_cmpint(kv(fx, NULL, &o5b, &e5b, "put", "SETTINGS", "app.retries", "--", "-1", NULL), ==, 0);
    g_autofree char *e5c = NULL;
    g_assert_cmpint(kv(fx, NULL, &o5c, &e5c, "get", "SETTINGS", "app.retries", NULL), ==, 0);
    assert_text(o5c, "-1");

    /* del: a delete marker; get then fails and says why. */
    g_assert_cmpint(kv(fx, NULL, &o6, &e6, "del", "SETTINGS", "app.theme", NULL), ==, 0);
    g_assert_cmpuint(g_bytes_get_size(o6), ==, 0);
    g_assert_cmpint(kvStore_Get(&entry, store, "app.theme"), ==, NATS_NOT_FOUND);
    g_assert_cmpint(kv(fx, NULL, &o7, &e7, "get", "SETTINGS", "app.theme", NULL), ==, 1);
    g_assert_nonnull(strstr(e7, "key app.theme has no value in bucket SETTINGS (never put, or deleted)"));
    g_assert_cmpuint(g_bytes_get_size(o7), ==, 0);
    g_assert_cmpint(kv(fx, NULL, &o8, &e8, "get", "SETTINGS", "never.written", NULL), ==, 1);
    g_assert_nonnull(strstr(e8, "key never.written has no value"));
    kvStore_Destroy(store);
}

/* --create binds to a bucket that exists and changes nothing of it. */
static void test_create_keeps_existing(Fx *fx, gconstpointer data)
{
    (void)data;
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = "KEEP";
    kc.History = 5;
    kc.StorageType = js_MemoryStorage;
    kvStore *store = NULL;
    g_assert_cmpint(js_CreateKeyValue(&store, fx->js, &kc), ==, NATS_OK);
    kvStore_Destroy(store);
    g_autofree char *e = NULL;
    g_autoptr(GBytes) o = NULL;
    g_assert_cmpint(kv(fx, NULL, &o, &e, "put", "--create", "KEEP", "k", "v", NULL), ==, 0);
    assert_text(o, "1\n");
    g_assert_null(strstr(e, "created"));
    assert_bucket(fx, "KEEP", 5, js_MemoryStorage);
}

/* get and del on a missing bucket: exit 1, the reason, nothing created. */
static void test_missing_bucket(Fx *fx, gconstpointer data)
{
    (void)data;
    const char *ops[] = { "get", "del" };
    for (gsize i = 0; i < G_N_ELEMENTS(ops); i++) {
        g_autofree char *e = NULL;
        g_autoptr(GBytes) o = NULL;
        g_assert_cmpint(kv(fx, NULL, &o, &e, ops[i], "ABSENT", "k", NULL), ==, 1);
        g_assert_nonnull(strstr(e, "jethost kv: bucket ABSENT does not exist (no stream KV_ABSENT); "
                                   "`jethost kv put --create ABSENT KEY VALUE` creates it"));
        g_assert_cmpuint(g_bytes_get_size(o), ==, 0);
    }
    g_assert_cmpint(bucket_status(fx, "ABSENT"), ==, NATS_NOT_FOUND);
}

/* --- a watch under `jethost run` ------------------------------------------------- */

typedef struct {
    const char *path;
    guint want;
} Lines;

static guint count_lines(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    return jet_test_count_lines(text, "\"stream_seq\"");
}

static gboolean enough_lines(gpointer data)
{
    Lines *l = data;
    return count_lines(l->path) >= l->want;
}

static void put_ok(Fx *fx, const char *flag, const char *key, const char *value)
{
    g_autofree char *e = NULL;
    int rc = flag != NULL ? kv(fx, NULL, NULL, &e, "put", flag, "WATCHED", key, value, NULL)
                          : kv(fx, NULL, NULL, &e, "put", "WATCHED", key, value, NULL);
    if (rc != 0)
        g_error("jethost kv put %s: exit %d: %s", key, rc, e);
}

/* Keys written with `jethost kv` before and while a `kind = kv` binding
 * runs reach its plugin (paced, one JSON line each) in revision order,
 * the delete as a DEL marker. */
static void test_watched_by_run(Fx *fx, gconstpointer data)
{
    (void)data;
    put_ok(fx, "--create", "app.theme", "dark");
    put_ok(fx, NULL, "app.lang", "en");
    put_ok(fx, NULL, "app.theme", "light");   /* revision 3: the current value of app.theme */
    g_autofree char *plugin = jet_test_plugin_copy("paced");
    g_autofree char *out = g_build_filename(jet_test_private_dir(), "watch.jsonl", NULL);
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\n\n[binding settings]\nplugin = %s\nkind = kv\n"
                                            "bucket = WATCHED\nexpires = 2s\nidle_heartbeat = 1s\n"
                                            "option.path = %s\noption.fsync = never\n",
                                            fx->url, plugin, out);
    g_autofree char *conf = jet_test_write_file("watch.conf", text);
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "watch.stderr", NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, args);
    Lines l = { out, 2 };
    g_assert_true(jet_test_wait_until(enough_lines, &l, 20000));
    put_ok(fx, NULL, "app.lang", "fr");
    g_autofree char *e = NULL;
    g_assert_cmpint(kv(fx, NULL, NULL, &e, "del", "WATCHED", "app.theme", NULL), ==, 0);
    l.want = 4;
    g_assert_true(jet_test_wait_until(enough_lines, &l, 20000));
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);

    g_autofree char *lines = NULL;
    g_assert_true(g_file_get_contents(out, &lines, NULL, NULL));
    g_auto(GStrv) rows = g_strsplit(g_strstrip(lines), "\n", -1);
    g_assert_cmpuint(g_strv_length(rows), ==, 4);
    static const struct {
        const char *subject;
        gint64 seq;
        const char *data;
        const char *op;
    } want[] = {
        { "$KV.WATCHED.app.lang", 2, "en", NULL },
        { "$KV.WATCHED.app.theme", 3, "light", NULL },
        { "$KV.WATCHED.app.lang", 4, "fr", NULL },
        { "$KV.WATCHED.app.theme", 5, "", "DEL" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autoptr(JsonParser) p = json_parser_new();
        g_assert_true(json_parser_load_from_data(p, rows[i], -1, NULL));
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        g_assert_cmpstr(json_object_get_string_member(o, "subject"), ==, want[i].subject);
        g_assert_cmpint(json_object_get_int_member(o, "stream_seq"), ==, want[i].seq);
        g_assert_cmpstr(json_object_get_string_member(o, "payload"), ==, want[i].data);
        JsonObject *h = json_object_get_object_member(o, "headers");
        JsonNode *op = h != NULL ? json_object_get_member(h, "KV-Operation") : NULL;
        if (want[i].op == NULL) {
            g_assert_null(op);
        } else {
            g_assert_nonnull(op);
            g_assert_cmpstr(json_node_get_string(json_array_get_element(json_node_get_array(op), 0)), ==, want[i].op);
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add(path, Fx, NULL, jet_test_js_setup, fn, jet_test_js_teardown)
    ADD("/kv-cli/round-trip", test_round_trip);
    ADD("/kv-cli/create-keeps-existing", test_create_keeps_existing);
    ADD("/kv-cli/missing-bucket", test_missing_bucket);
    ADD("/kv-cli/watched-by-run", test_watched_by_run);
    return g_test_run();
}
