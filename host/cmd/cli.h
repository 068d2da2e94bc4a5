/* The command line: `jethost run|check|pub|...`.  Exit codes: exit_codes.h and
 * docs/cli.md. */
#ifndef JET_CLI_H
#define JET_CLI_H

#include "exit_codes.h"

int jet_cli_main(int argc, char **argv);

#endif
