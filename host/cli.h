/* The command line: `jethost run|check|pub|...`.  Exit codes are listed in
 * docs/cli.md. */
#ifndef JET_CLI_H
#define JET_CLI_H

enum {
    JET_EXIT_OK = 0,
    JET_EXIT_FAILURE = 1,   /* a runtime failure (a binding could not start, the server is gone) */
    JET_EXIT_USAGE = 2,     /* bad command line */
    JET_EXIT_CONFIG = 3,    /* the config or a plugin is invalid */
    JET_EXIT_PLUGIN = 4,    /* a plugin ended the process: exit() inside handle() */
    JET_EXIT_HUNG = 5,      /* every worker of a binding was in a handler past handler_timeout */
};

int jet_cli_main(int argc, char **argv);

#endif
