/* `jethost sub`: what a subject carries, or what a stream holds, printed
 * with every header as text or JSON lines (docs/cli.md, "sub"). */
#ifndef JET_SUB_H
#define JET_SUB_H

/* Returns the process exit code (exit_codes.h). */
int jet_sub_main(int argc, char **argv);

#endif
