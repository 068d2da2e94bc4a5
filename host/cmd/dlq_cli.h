/* `jethost dlq list|show|replay`: read and replay dead-letter records
 * (docs/dead-letters.md).  Wired into `jethost` by cli.c. */
#ifndef JET_DLQ_CLI_H
#define JET_DLQ_CLI_H

#include <stdio.h>

/* argv[0] is "dlq".  Exit codes as in cli.h: 0 ok, 1 a runtime failure
 * (server, missing record, a record refused or not acked: the other records
 * are still replayed), 2 bad usage (a --to subject that is not literal or is
 * reserved included), 3 bad config.  Does not call nats_Close(): the caller
 * does. */
int jet_dlq_cli_main(int argc, char **argv);

/* The same, writing records to out and messages to err (for tests). */
int jet_dlq_cli_run(int argc, char **argv, FILE *out, FILE *err);

#endif
