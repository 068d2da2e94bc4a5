/* `jethost run`: load the config and its plugins, start the server if it is
 * embedded, bind every binding, run the engines until a signal, drain. */
#ifndef JET_DAEMON_H
#define JET_DAEMON_H

#include <glib.h>

/* `jethost run`: returns the process exit code (exit_codes.h). */
int jet_daemon_run(const char *config_file, const char *dropin_dir);

#endif
