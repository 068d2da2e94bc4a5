/* The process exit codes of every jethost command (docs/cli.md).  Only the
 * command layer (host/cmd/) reads them: the layers below return errors and
 * leave the number to the command (docs/architecture.md). */
#ifndef JET_EXIT_CODES_H
#define JET_EXIT_CODES_H

#include "plugin_guard.h"

enum {
    JET_EXIT_OK = 0,
    JET_EXIT_FAILURE = 1,   /* a runtime failure (a binding could not start, the server is gone) */
    JET_EXIT_USAGE = 2,     /* bad command line */
    JET_EXIT_CONFIG = 3,    /* the config or a plugin is invalid */
    JET_EXIT_PLUGIN = JET_GUARD_EXIT, /* a plugin ended the process: exit() inside handle();
                                         the plugin guard exits with it (plugin_guard.h) */
    JET_EXIT_HUNG = 5,      /* every worker of a binding was in a handler past handler_timeout */
};

#endif
