#include "cli.h"
#include "config.h"
#include "conn.h"
#include "daemon.h"
#include "embedded.h"
#include "log.h"
#include "mock_cli.h"
#include "pub.h"
#include "sub.h"
#include "check.h"
#include "dlq_cli.h"
#include "kv_cli.h"
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

/* Without -c, the packaged paths (docs/configuration.md): the main file
 * and its drop-in directory under sysconfdir.  With -c, a drop-in directory
 * only when -d names one: a config given by hand is read as given. */
static void default_config(char **config, char **dropin)
{
    if (*config != NULL)
        return;
    *config = g_build_filename(JET_SYSCONFDIR, "jethost", "jethost.conf", NULL);
    if (*dropin == NULL)
        *dropin = g_build_filename(JET_SYSCONFDIR, "jethost", "jethost.d", NULL);
}

static int cmd_run(int argc, char **argv)
{
    g_autofree char *config = NULL;
    g_autofree char *dropin = NULL;
    GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config, "the config file (default: " JET_SYSCONFDIR "/jethost/jethost.conf)", "FILE" },
        { "dropin-dir", 'd', 0, G_OPTION_ARG_FILENAME, &dropin, "a drop-in directory of *.conf files (default without -c: " JET_SYSCONFDIR "/jethost/jethost.d)", "DIR" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- run the bindings of a config");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!parse_options(ctx, &argc, &argv))
        return JET_EXIT_USAGE;
    if (argc > 1) {
        fprintf(stderr, "jethost run: no arguments (the config is -c FILE)\n");
        return JET_EXIT_USAGE;
    }
    default_config(&config, &dropin);
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
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config, "the config file (default: " JET_SYSCONFDIR "/jethost/jethost.conf)", "FILE" },
        { "dropin-dir", 'd', 0, G_OPTION_ARG_FILENAME, &dropin, "a drop-in directory of *.conf files (default without -c: " JET_SYSCONFDIR "/jethost/jethost.d)", "DIR" },
        { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "print each binding and its plugin options", NULL },
        { "no-plugins", 0, 0, G_OPTION_ARG_NONE, &no_plugins, "do not open the plugins: check the keys and the schedules only (the report says which plugins went unchecked)", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- validate a config and load its plugins; with -s, also against a server");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!parse_options(ctx, &argc, &argv))
        return JET_EXIT_USAGE;
    if (argc > 1) {
        fprintf(stderr, "jethost check: no arguments (the config is -c FILE)\n");
        return JET_EXIT_USAGE;
    }
    default_config(&config, &dropin);
    return jet_check_run(config, dropin, verbose, server, no_plugins);
}

static const struct {
    const char *name;
    JetCommandFn fn;
    const char *summary;
} commands[] = {
    { "run", cmd_run, "run the bindings of a config until SIGTERM or SIGINT (SIGHUP reloads it)" },
    { "check", cmd_check, "validate a config and its plugins (-s URL: also against the server)" },
    { "pub", jet_pub_main, "publish a message to JetStream and print the pub-ack" },
    { "sub", jet_sub_main, "print what a subject carries, or what a stream holds (--stream)" },
    { "dlq", jet_dlq_cli_main, "find, count, replay and remove dead-letter records" },
    { "kv", jet_kv_cli_main, "put, get or delete a KV entry (put --create makes the bucket)" },
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
