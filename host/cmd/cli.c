#include "cli.h"
#include "config.h"
#include "conn.h"
#include "daemon.h"
#include "embedded.h"
#include "log.h"
#include "mock_cli.h"
#include "dlq_cli.h"
#include "hdr_block.h"
#include "json_out.h"
#include "nats_raw.h"
#include "replay.h"

#include <errno.h>

#include <glib.h>
#include <jethost/plugin.h>
#include <stdio.h>
#include <string.h>

typedef int (*JetCommandFn)(int argc, char **argv);

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("jethost %s (plugin ABI %d.%d)\n", PACKAGE_VERSION, JET_ABI_MAJOR, JET_ABI_MINOR);
    return JET_EXIT_OK;
}

static gboolean parse_options(GOptionContext *ctx, int *argc, char ***argv)
{
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, argc, argv, &err)) {
        fprintf(stderr, "jethost: %s\n", err->message);
        return FALSE;
    }
    return TRUE;
}

static int cmd_run(int argc, char **argv)
{
    g_autofree char *config = NULL;
    g_autofree char *dropin = NULL;
    GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config, "the config file", "FILE" },
        { "dropin-dir", 'd', 0, G_OPTION_ARG_FILENAME, &dropin, "a drop-in directory of *.conf files", "DIR" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- run the bindings of a config");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!parse_options(ctx, &argc, &argv))
        return JET_EXIT_USAGE;
    if (config == NULL || argc > 1) {
        fprintf(stderr, "jethost run: give the config with -c FILE (and nothing else)\n");
        return JET_EXIT_USAGE;
    }
    return jet_daemon_run(config, dropin);
}

static int cmd_check(int argc, char **argv)
{
    g_autofree char *config = NULL;
    g_autofree char *dropin = NULL;
    gboolean verbose = FALSE;
    gboolean no_plugins = FALSE;
    g_autofree char *server = NULL;
    GOptionEntry entries[] = {
        { "server", 's', 0, G_OPTION_ARG_STRING, &server, "also check against the stream and consumer on this server", "URL" },
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config, "the config file", "FILE" },
        { "dropin-dir", 'd', 0, G_OPTION_ARG_FILENAME, &dropin, "a drop-in directory of *.conf files", "DIR" },
        { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "print each binding and its plugin options", NULL },
        { "no-plugins", 0, 0, G_OPTION_ARG_NONE, &no_plugins, "do not open the plugins: check the keys and the schedules only (the report says which plugins went unchecked)", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- validate a config and load its plugins; with -s, also against a server");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!parse_options(ctx, &argc, &argv))
        return JET_EXIT_USAGE;
    if (config == NULL || argc > 1) {
        fprintf(stderr, "jethost check: give the config with -c FILE\n");
        return JET_EXIT_USAGE;
    }
    return jet_daemon_check(config, dropin, verbose, server, no_plugins);
}

/* One --header argument: "Name: value" (as on the wire) or "Name=value",
 * whichever separator comes first; the value trimmed.  FALSE with a message
 * when it cannot be written as it is (hdr_block.h). */
static gboolean pub_header(const char *arg, GPtrArray *headers)
{
    const char *colon = strchr(arg, ':');
    const char *eq = strchr(arg, '=');
    const char *sep = colon != NULL && (eq == NULL || colon < eq) ? colon : eq;
    g_autofree char *shown = jet_text_escape(arg, strlen(arg), FALSE);
    if (sep == NULL || sep == arg) {
        fprintf(stderr, "jethost pub: --header \"%s\" is not 'NAME: VALUE' or NAME=VALUE\n", shown);
        return FALSE;
    }
    g_autofree char *name = g_strstrip(g_strndup(arg, (gsize)(sep - arg)));
    g_autofree char *value = g_strstrip(g_strdup(sep + 1));
    if (!jet_hdr_name_valid(name)) {
        fprintf(stderr, "jethost pub: --header \"%s\": the name is not a token (letters, digits, "
                        "!#$%%&'*+-.^_`|~)\n", shown);
        return FALSE;
    }
    if (!jet_hdr_value_valid(value)) {
        fprintf(stderr, "jethost pub: --header \"%s\": the value holds a line break\n", shown);
        return FALSE;
    }
    g_ptr_array_add(headers, g_steal_pointer(&name));
    g_ptr_array_add(headers, g_steal_pointer(&value));
    return TRUE;
}

static void pub_print(const char *subject, const jsPubAck *pa)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    jet_json_add_bytes(b, "subject", subject, -1);
    jet_json_add_pub_ack(b, pa->Stream, pa->Sequence, pa->Duplicate);
    json_builder_end_object(b);
    g_autofree char *line = jet_json_line(b);
    printf("%s\n", line);
}

static int cmd_pub(int argc, char **argv)
{
    g_autofree char *server = NULL;
    g_autofree char *config = NULL;
    g_autofree char *dropin = NULL;
    g_autofree char *data = NULL;
    g_autofree char *msg_id = NULL;
    g_auto(GStrv) headers = NULL;
    gint count = 1;
    /* FILENAME kinds: payload and headers are bytes, not text in the
     * locale's encoding. */
    GOptionEntry entries[] = {
        { "server", 's', 0, G_OPTION_ARG_STRING, &server, "the server URL (default: $NATS_URL, or nats://127.0.0.1:4222)", "URL" },
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config, "take the server from this config (embedded included)", "FILE" },
        { "dropin-dir", 'd', 0, G_OPTION_ARG_FILENAME, &dropin, "the config's drop-in directory", "DIR" },
        { "data", 0, 0, G_OPTION_ARG_FILENAME, &data, "the payload (default: standard input)", "TEXT" },
        { "header", 'H', 0, G_OPTION_ARG_FILENAME_ARRAY, &headers, "a header, repeatable, kept in order", "'NAME: VALUE'" },
        { "msg-id", 0, 0, G_OPTION_ARG_FILENAME, &msg_id, "set Nats-Msg-Id (de-duplication)", "ID" },
        { "count", 'n', 0, G_OPTION_ARG_INT, &count, "publish it this many times (default 1)", "N" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("SUBJECT - publish to JetStream and print the pub-ack");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!parse_options(ctx, &argc, &argv))
        return JET_EXIT_USAGE;
    if (argc != 2 || count < 1) {
        fprintf(stderr, "jethost pub: give exactly one SUBJECT\n");
        return JET_EXIT_USAGE;
    }
    const char *subject = argv[1];
    const char *why = jet_subject_refusal(subject);
    if (why != NULL) {
        g_autofree char *shown = jet_text_escape(subject, strlen(subject), FALSE);
        fprintf(stderr, "jethost pub: subject \"%s\" %s\n", shown, why);
        return JET_EXIT_USAGE;
    }
    /* The block is written once, in the order given; the Msg-Id first so
     * the server reads it (it takes a name's first occurrence). */
    g_autoptr(GPtrArray) hdrs = g_ptr_array_new_with_free_func(g_free);
    if (msg_id != NULL) {
        if (*msg_id == '\0' || !jet_hdr_value_valid(msg_id)) {
            fprintf(stderr, "jethost pub: --msg-id must be non-empty, on one line, without spaces around it\n");
            return JET_EXIT_USAGE;
        }
        g_ptr_array_add(hdrs, g_strdup("Nats-Msg-Id"));
        g_ptr_array_add(hdrs, g_strdup(msg_id));
    }
    for (gchar **h = headers; h != NULL && *h != NULL; h++)
        if (!pub_header(*h, hdrs))
            return JET_EXIT_USAGE;
    g_autoptr(GError) err = NULL;
    gsize block_len = 0;
    g_autofree char *block = jet_hdr_write(hdrs, &block_len, &err);
    if (block == NULL && err != NULL) {
        fprintf(stderr, "jethost pub: %s\n", err->message);
        return JET_EXIT_USAGE;
    }
    gsize len = 0;
    if (data == NULL) {
        g_autoptr(GIOChannel) in = g_io_channel_unix_new(0);
        g_io_channel_set_encoding(in, NULL, NULL);
        if (g_io_channel_read_to_end(in, &data, &len, &err) != G_IO_STATUS_NORMAL) {
            fprintf(stderr, "jethost pub: reading standard input: %s\n", err->message);
            return JET_EXIT_FAILURE;
        }
    } else {
        len = strlen(data);
    }
    g_autoptr(JetConfig) cfg = NULL;
    if (config != NULL && (cfg = jet_config_load(config, dropin, &err)) == NULL) {
        fprintf(stderr, "jethost pub: %s\n", err->message);
        return JET_EXIT_FAILURE;
    }
    /* As `run` connects: every URL, the credentials, TLS and API prefix. */
    JetConn *conn = jet_conn_open_config(cfg, server, &err);
    if (conn == NULL) {
        fprintf(stderr, "jethost pub: %s\n", err->message);
        return JET_EXIT_FAILURE;
    }
    int rc = JET_EXIT_OK;
    for (gint i = 0; i < count && rc == JET_EXIT_OK; i++) {
        natsMsg *m = jet_nats_msg_new_raw(subject, block, block_len, data, len, &err);
        if (m == NULL) {
            fprintf(stderr, "jethost pub: %s\n", err->message);
            rc = JET_EXIT_FAILURE;
            break;
        }
        /* No publish options: they would re-encode the block (nats_raw.h). */
        jsPubAck *pa = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_PublishMsg(&pa, jet_conn_js(conn), m, NULL, &jerr);
        natsMsg_Destroy(m);
        if (s != NATS_OK) {
            g_autofree char *why_pub = jet_nats_error(s);
            fprintf(stderr, "jethost pub: %s: %s%s\n", subject, why_pub,
                    s == NATS_NO_RESPONDERS ? " (no stream captures this subject)" : "");
            rc = JET_EXIT_FAILURE;
            break;
        }
        if (pa == NULL || pa->Stream == NULL || *pa->Stream == '\0') {
            fprintf(stderr, "jethost pub: %s: the reply is not a JetStream pub-ack (it names no stream)\n", subject);
            jsPubAck_Destroy(pa);
            rc = JET_EXIT_FAILURE;
            break;
        }
        pub_print(subject, pa);
        jsPubAck_Destroy(pa);
    }
    fflush(stdout);
    jet_conn_close(conn);
    return rc;
}

static const struct {
    const char *name;
    JetCommandFn fn;
    const char *summary;
} commands[] = {
    { "run", cmd_run, "run the bindings of a config until SIGTERM or SIGINT" },
    { "check", cmd_check, "validate a config and its plugins (-s URL: also against the server)" },
    { "pub", cmd_pub, "publish a message to JetStream and print the pub-ack" },
    { "dlq", jet_dlq_cli_main, "list, show and replay dead-letter records" },
    { "mock", jet_mock_cli_main, "run a plugin on the mock host: JSON lines in, settlements out" },
    { "version", cmd_version, "print the version and the plugin ABI version" },
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: jethost COMMAND [OPTION...]\n\nCommands:\n");
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`jethost COMMAND --help` describes a command; docs/cli.md lists exit codes.\n");
}

int jet_cli_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return JET_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return JET_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        return cmd_version(argc - 1, argv + 1);
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (strcmp(cmd, commands[i].name) == 0) {
            g_autofree char *prg = g_strdup_printf("jethost %s", cmd);
            g_set_prgname(prg);
            int rc = commands[i].fn(argc - 1, argv + 1);
            nats_Close();
            return rc;
        }
    }
    fprintf(stderr, "jethost: unknown command '%s'\n", cmd);
    usage(stderr);
    return JET_EXIT_USAGE;
}
