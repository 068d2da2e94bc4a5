/* `jethost kv put|get|del` (docs/cli.md, "kv"): one KV entry written, read
 * or deleted through nats.c's kvStore, connected as `pub` is.  The bucket
 * and the key are checked before any connection, so a hostile argument is
 * named and refused, never sent; a bucket is created only by `put
 * --create`, and one that exists is never changed. */
#include "kv_cli.h"
#include "msg_payload.h"

#include "cmd_common.h"
#include "exit_codes.h"
#include "json_out.h"
#include "names.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>


#define USAGE "usage: jethost kv [-s URL | -c FILE [-d DIR]] put [--create [--replicas N]] BUCKET KEY [VALUE] | " \
              "get BUCKET KEY | del BUCKET KEY"

typedef enum { KV_PUT, KV_GET, KV_DEL } KvOp;

/* NULL when key can be written as it is in bucket, else a static reason:
 * a key is the last part of the subject $KV.<bucket>.<key>. */
static const char *key_refusal(const char *bucket, const char *key)
{
    const char *why = jet_kv_key_problem(key);
    if (why == NULL && strlen("$KV.") + strlen(bucket) + 1 + strlen(key) > JET_SUBJECT_MAX)
        return "is too long: the subject $KV.<bucket>.<key> would be longer than 1024 bytes";
    return why;
}

/* FALSE after naming the argument and why it is refused. */
static gboolean arg_ok(const char *what, const char *value, const char *why)
{
    if (why == NULL)
        return TRUE;
    g_autofree char *shown = jet_text_escape(value, strlen(value), FALSE);
    fprintf(stderr, "jethost kv: %s \"%s\" %s\n", what, shown, why);
    return FALSE;
}

static void report(natsStatus s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void report(natsStatus s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *why = jet_nats_error(s);
    fprintf(stderr, "jethost kv: %s: %s\n", what, why);
}

/* Binds to the bucket; with create, makes it first when it does not exist
 * (history 1, file storage, `replicas` copies), and never touches one that
 * does.  JET_EXIT_OK with *kv set, else the exit code after saying why. */
static int bucket_open(jsCtx *js, const char *bucket, gboolean create, guint replicas, kvStore **kv)
{
    natsStatus s = js_KeyValue(kv, js, bucket);
    if (s == NATS_NOT_FOUND && create) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = bucket;
        kc.Description = "created by jethost kv put --create";
        kc.History = 1;
        kc.StorageType = js_FileStorage;
        kc.Replicas = (int)replicas;
        s = js_CreateKeyValue(kv, js, &kc);
        if (s == NATS_OK) {
            fprintf(stderr, "jethost kv: created bucket %s (history 1, file storage), %u replica%s\n", bucket,
                    replicas, replicas == 1 ? "" : "s");
            return JET_EXIT_OK;
        }
        /* Someone else may have made it since: theirs is used as it is. */
        g_autofree char *why_create = jet_nats_error(s);
        if (js_KeyValue(kv, js, bucket) == NATS_OK)
            return JET_EXIT_OK;
        fprintf(stderr, "jethost kv: creating bucket %s: %s\n", bucket, why_create);
        return JET_EXIT_FAILURE;
    }
    if (s == NATS_NOT_FOUND) {
        fprintf(stderr, "jethost kv: bucket %s does not exist (no stream KV_%s); "
                        "`jethost kv put --create %s KEY VALUE` creates it\n", bucket, bucket, bucket);
        return JET_EXIT_FAILURE;
    }
    if (s != NATS_OK) {
        report(s, "bucket %s", bucket);
        return JET_EXIT_FAILURE;
    }
    return JET_EXIT_OK;
}

static int kv_put(kvStore *kv, const char *bucket, const char *key, const char *data, gsize len)
{
    uint64_t rev = 0;
    natsStatus s = kvStore_Put(&rev, kv, key, data, (int)len);
    if (s != NATS_OK) {
        report(s, "put %s in bucket %s", key, bucket);
        return JET_EXIT_FAILURE;
    }
    printf("%" PRIu64 "\n", rev);
    return JET_EXIT_OK;
}

static int kv_get(kvStore *kv, const char *bucket, const char *key)
{
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, kv, key);
    if (s == NATS_NOT_FOUND) {
        fprintf(stderr, "jethost kv: key %s has no value in bucket %s (never put, or deleted)\n", key, bucket);
        return JET_EXIT_FAILURE;
    }
    if (s != NATS_OK) {
        report(s, "get %s from bucket %s", key, bucket);
        return JET_EXIT_FAILURE;
    }
    /* The value as stored, byte for byte: no newline added. */
    gsize len = 0;
    const char *value = jet_kv_value(e, &len);
    fwrite(value, 1, len, stdout);
    kvEntry_Destroy(e);
    return JET_EXIT_OK;
}

static int kv_del(kvStore *kv, const char *bucket, const char *key)
{
    natsStatus s = kvStore_Delete(kv, key);
    if (s != NATS_OK) {
        report(s, "delete %s in bucket %s", key, bucket);
        return JET_EXIT_FAILURE;
    }
    return JET_EXIT_OK;
}

int jet_kv_cli_main(int argc, char **argv)
{
    g_auto(JetCmdConnOptions) co = { 0 };
    gboolean create = FALSE;
    gint replicas = 0;
    g_auto(GStrv) args = NULL;
    /* The words collected apart from the options, "--" dropped, so that
     * `put B K -- -1` stores "-1".  FILENAME: bytes as given, judged here. */
    GOptionEntry entries[] = {
        { "create", 0, 0, G_OPTION_ARG_NONE, &create, "put: create the bucket when it does not exist (history 1, file storage); one that exists is never changed", NULL },
        { "replicas", 0, 0, G_OPTION_ARG_INT, &replicas, "put --create: the new bucket's copies, 1 to 5 (default: the config's [host] replicas with -c, else 1)", "N" },
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &args, NULL, NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("put BUCKET KEY [VALUE] | get BUCKET KEY | del BUCKET KEY - "
                                                         "write, read or delete one KV entry");
    jet_cmd_conn_add_options(ctx, &co, "take the server from this config (embedded included)");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(ctx, "put prints the revision; get prints the value as stored; "
                                          "VALUE absent: standard input. See docs/cli.md.");
    g_autoptr(GError) perr = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &perr)) {
        fprintf(stderr, "jethost: %s\n", perr->message);
        return JET_EXIT_USAGE;
    }
    guint n = args != NULL ? g_strv_length(args) : 0;
    const char *sub = n >= 1 ? args[0] : "";
    KvOp op;
    if (strcmp(sub, "put") == 0)
        op = KV_PUT;
    else if (strcmp(sub, "get") == 0)
        op = KV_GET;
    else if (strcmp(sub, "del") == 0)
        op = KV_DEL;
    else {
        fprintf(stderr, "jethost kv: give put, get or del; " USAGE "\n");
        return JET_EXIT_USAGE;
    }
    if (n < 3 || n > (op == KV_PUT ? 4u : 3u)) {
        fprintf(stderr, "jethost kv %s: wrong number of arguments; " USAGE "\n", sub);
        return JET_EXIT_USAGE;
    }
    if (create && op != KV_PUT) {
        fprintf(stderr, "jethost kv: --create is for put only (get and del never create a bucket)\n");
        return JET_EXIT_USAGE;
    }
    if (replicas != 0 && !create) {
        fprintf(stderr, "jethost kv: --replicas is for put --create only (a bucket that exists is never changed)\n");
        return JET_EXIT_USAGE;
    }
    if (replicas < 0 || replicas > 5) {
        fprintf(stderr, "jethost kv: --replicas %d: give 1 to 5 (the copies a JetStream cluster keeps)\n", replicas);
        return JET_EXIT_USAGE;
    }
    const char *bucket = args[1], *key = args[2];
    if (!arg_ok("BUCKET", bucket, jet_bucket_problem(bucket)) || !arg_ok("KEY", key, key_refusal(bucket, key)))
        return JET_EXIT_USAGE;

    g_autofree char *data = NULL;
    gsize len = 0;
    if (op == KV_PUT) {
        if (n == 4) {
            data = g_strdup(args[3]);
            len = strlen(data);
        } else if ((data = jet_cmd_read_stdin("kv", &len, stderr)) == NULL) {
            return JET_EXIT_FAILURE;
        }
        /* nats.c takes an int length; the server refuses far less. */
        if (len > (gsize)G_MAXINT) {
            fprintf(stderr, "jethost kv: the value is %" G_GSIZE_FORMAT " bytes, more than a message can hold\n", len);
            return JET_EXIT_USAGE;
        }
    }

    g_autoptr(JetConfig) cfg = NULL;
    int rc = JET_EXIT_OK;
    JetConn *conn = jet_cmd_connect("kv", &co, stderr, &cfg, &rc);
    if (conn == NULL)
        return rc;
    kvStore *kv = NULL;
    guint copies = replicas > 0 ? (guint)replicas : cfg != NULL && cfg->host.replicas > 0 ? cfg->host.replicas : 1;
    rc = bucket_open(jet_conn_js(conn), bucket, create, copies, &kv);
    if (rc == JET_EXIT_OK) {
        if (op == KV_PUT)
            rc = kv_put(kv, bucket, key, data, len);
        else if (op == KV_GET)
            rc = kv_get(kv, bucket, key);
        else
            rc = kv_del(kv, bucket, key);
        kvStore_Destroy(kv);
    }
    fflush(stdout);
    jet_cmd_conn_close(conn);
    return rc;
}
