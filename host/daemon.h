/* `jethost run`: load the config and its plugins, start the server if it is
 * embedded, bind every binding, run the engines until a signal, drain. */
#ifndef JET_DAEMON_H
#define JET_DAEMON_H

#include <glib.h>

/* Returns the process exit code (cli.h). */
int jet_daemon_run(const char *config_file, const char *dropin_dir);

/* `jethost check`: the config and its plugins, without a server.  Prints the
 * problems on stderr; returns the exit code. */
int jet_daemon_check(const char *config_file, const char *dropin_dir, gboolean verbose);

#endif
