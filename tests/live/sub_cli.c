/* `jethost sub` (the binary) against a real nats-server (docs/cli.md,
 * "sub"): a stream read whole, from a sequence and its last N, as text and
 * as JSON lines with every header in block order (an empty message's too),
 * leaving no consumer on the stream; a core subscription that prints what
 * is published after it listens and stops at --count. */
#include "harness.h"
#include "nats_raw.h"

#include <json-glib/json-glib.h>
#include <string.h>

typedef JetTestJs Fx;

/* `jethost sub -s URL ARGS...` to its end: exit status, stdout, stderr. */
static int sub(Fx *fx, char **out, char **err_text, ...)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, "sub");
    g_ptr_array_add(argv, "-s");
    g_ptr_array_add(argv, (char *)fx->url);
    va_list ap;
    va_start(ap, err_text);
    for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(argv, (char *)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    int rc = jet_test_jethost_run((const char *const *)argv->pdata, out, err_text);
    g_test_message("sub: exit %d\n%s%s", rc, *out != NULL ? *out : "", *err_text != NULL ? *err_text : "");
    return rc;
}

/* ORDERS: five messages, the third empty with two headers in an order no
 * hash table keeps (b before a), the fourth with a header repeated. */
static void orders(Fx *fx)
{
    jet_test_stream_create(fx->js, "ORDERS", "orders.>");
    for (int i = 1; i <= 5; i++) {
        char data[16];
        int len = i == 3 ? 0 : g_snprintf(data, sizeof data, "order %d", i);
        g_autofree char *subject = g_strdup_printf("orders.n%d", i);
        /* Exact blocks, sent byte for byte (nats.c's own headers keep no order). */
        const char *block = i == 3   ? "NATS/1.0\r\nb-second: 2\r\na-first: 1\r\n\r\n"
                            : i == 4 ? "NATS/1.0\r\nTag: x\r\nTag: y\r\n\r\n"
                                     : NULL;
        g_autoptr(GError) err = NULL;
        jsPubAck *pa = NULL;
        g_assert_true(jet_js_publish_raw(fx->js, subject, block, block != NULL ? strlen(block) : 0, data, (gsize)len,
                                         &pa, &err));
        jsPubAck_Destroy(pa);
    }
}

static JsonObject *json_line(const char *line, JsonParser *p)
{
    g_autoptr(GError) err = NULL;
    g_assert_true(json_parser_load_from_data(p, line, -1, &err));
    return json_node_get_object(json_parser_get_root(p));
}

static guint consumers(Fx *fx)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, fx->js, "ORDERS", NULL, NULL), ==, NATS_OK);
    guint n = (guint)si->State.Consumers;
    jsStreamInfo_Destroy(si);
    return n;
}

static void test_stream(Fx *fx, gconstpointer data)
{
    (void)data;
    orders(fx);
    g_autofree char *out = NULL, *err = NULL;
    g_assert_cmpint(sub(fx, &out, &err, "--stream", "ORDERS", "--json", NULL), ==, 0);
    g_auto(GStrv) lines = g_strsplit(g_strchomp(out), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 5);
    for (guint i = 0; i < 5; i++) {
        g_autoptr(JsonParser) p = json_parser_new();
        JsonObject *o = json_line(lines[i], p);
        g_assert_cmpstr(json_object_get_string_member(o, "stream"), ==, "ORDERS");
        g_assert_cmpint(json_object_get_int_member(o, "seq"), ==, i + 1);
        g_autofree char *subject = g_strdup_printf("orders.n%u", i + 1);
        g_assert_cmpstr(json_object_get_string_member(o, "subject"), ==, subject);
        JsonArray *h = json_object_get_array_member(o, "headers");
        if (i == 2) {
            /* The empty one: its headers as the server sent them, in order. */
            g_assert_cmpstr(json_object_get_string_member(o, "data"), ==, "");
            g_assert_cmpuint(json_array_get_length(h), ==, 2);
            g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(h, 0), "name"), ==,
                            "b-second");
            g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(h, 1), "value"), ==, "1");
        } else if (i == 3) {
            g_assert_cmpuint(json_array_get_length(h), ==, 2);
            g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(h, 1), "value"), ==, "y");
        } else {
            g_autofree char *want = g_strdup_printf("order %u", i + 1);
            g_assert_cmpstr(json_object_get_string_member(o, "data"), ==, want);
        }
    }
    /* --last 2 and --from 4, as text. */
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(sub(fx, &out, &err, "--stream", "ORDERS", "--last", "2", NULL), ==, 0);
    g_assert_nonnull(strstr(out, "ORDERS:4 orders.n4 "));
    g_assert_nonnull(strstr(out, "  Tag: x\n  Tag: y\norder 4\n"));
    g_assert_nonnull(strstr(out, "ORDERS:5 orders.n5 "));
    g_assert_null(strstr(out, "ORDERS:3 "));
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(sub(fx, &out, &err, "--stream", "ORDERS", "--from", "4", "--count", "1", NULL), ==, 0);
    g_assert_nonnull(strstr(out, "ORDERS:4 "));
    g_assert_null(strstr(out, "ORDERS:5 "));
    /* Nothing left behind. */
    g_assert_cmpuint(consumers(fx), ==, 0);
    /* A stream that is not there, and usage errors. */
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(sub(fx, &out, &err, "--stream", "NOPE", NULL), ==, 1);
    g_assert_nonnull(strstr(err, "NOPE"));
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(sub(fx, &out, &err, "--stream", "ORDERS", "--from", "2", "--last", "1", NULL), ==, 2);
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(sub(fx, &out, &err, "orders..x", NULL), ==, 2);
    g_assert_nonnull(strstr(err, "is not a subject"));
}

typedef struct {
    const char *path;
} FileWait;

static gboolean listening(gpointer data)
{
    FileWait *w = data;
    g_autofree char *text = NULL;
    return g_file_get_contents(w->path, &text, NULL, NULL) && strstr(text, "listening on") != NULL;
}

/* A core subscription: what is published once it listens, in order, with
 * its headers; it ends itself at --count. */
static void test_subject(Fx *fx, gconstpointer data)
{
    (void)data;
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "sub.stderr", NULL);
    const char *args[] = { "sub", "-s", fx->url, "--count", "3", "--json", "live.>", NULL };
    g_autofree char *outlog = g_build_filename(jet_test_private_dir(), "sub.stdout", NULL);
    g_autofree char *bin = jet_test_jethost_path();
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
    g_subprocess_launcher_set_stdout_file_path(l, outlog);
    g_subprocess_launcher_set_stderr_file_path(l, errlog);
    const char *argv[G_N_ELEMENTS(args) + 1] = { bin };
    for (gsize i = 0; args[i] != NULL; i++)
        argv[i + 1] = args[i];
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_launcher_spawnv(l, argv, &err);
    g_assert_no_error(err);
    FileWait w = { errlog };
    g_assert_true(jet_test_wait_until(listening, &w, 10000));
    for (int i = 1; i <= 3; i++) {
        natsMsg *m = NULL;
        char body[8];
        int len = g_snprintf(body, sizeof body, "m%d", i);
        g_assert_cmpint(natsMsg_Create(&m, "live.x", NULL, body, len), ==, NATS_OK);
        g_assert_cmpint(natsMsgHeader_Set(m, "N", body), ==, NATS_OK);
        g_assert_cmpint(natsConnection_PublishMsg(fx->nc, m), ==, NATS_OK);
        natsMsg_Destroy(m);
    }
    g_assert_cmpint(natsConnection_Flush(fx->nc), ==, NATS_OK);
    g_assert_cmpint(jet_test_jethost_wait(p, 10000), ==, 0);
    g_autofree char *out = jet_test_read_text(outlog);
    g_test_message("%s", out);
    g_auto(GStrv) lines = g_strsplit(g_strchomp(out), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    for (guint i = 0; i < 3; i++) {
        g_autoptr(JsonParser) jp = json_parser_new();
        JsonObject *o = json_line(lines[i], jp);
        g_autofree char *want = g_strdup_printf("m%u", i + 1);
        g_assert_cmpstr(json_object_get_string_member(o, "data"), ==, want);
        g_assert_false(json_object_has_member(o, "seq"));
        JsonArray *h = json_object_get_array_member(o, "headers");
        g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(h, 0), "value"), ==, want);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/sub/stream", Fx, NULL, jet_test_js_setup, test_stream, jet_test_js_teardown);
    g_test_add("/sub/subject", Fx, NULL, jet_test_js_setup, test_subject, jet_test_js_teardown);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
