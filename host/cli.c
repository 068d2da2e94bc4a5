#include "cli.h"
#include "log.h"

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

static const struct {
    const char *name;
    JetCommandFn fn;
    const char *summary;
} commands[] = {
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
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "jethost: unknown command '%s'\n", cmd);
    usage(stderr);
    return JET_EXIT_USAGE;
}
