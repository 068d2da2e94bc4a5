/* `jethost kv put|get|del`: write, read and delete the entries of a KV
 * bucket (docs/cli.md, "kv"), such as the ones a `kind = kv` binding
 * watches (docs/kv.md). */
#ifndef JET_KV_CLI_H
#define JET_KV_CLI_H

/* Returns the process exit code (exit_codes.h). */
int jet_kv_cli_main(int argc, char **argv);

#endif
