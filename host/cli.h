/* The command line: `jethost run|check|pub|...`.  Exit codes are listed in
 * docs/cli.md. */
#ifndef JET_CLI_H
#define JET_CLI_H

enum {
    JET_EXIT_OK = 0,
    JET_EXIT_FAILURE = 1,   /* a runtime failure (a binding could not start, the server is gone) */
    JET_EXIT_USAGE = 2,     /* bad command line */
    JET_EXIT_CONFIG = 3,    /* the config or a plugin is invalid */
};

int jet_cli_main(int argc, char **argv);

#endif
