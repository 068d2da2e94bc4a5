/* `jethost run`: load the config and its plugins, start the server if it is
 * embedded, bind every binding, run the engines until a signal, drain. */
#ifndef JET_DAEMON_H
#define JET_DAEMON_H

#include <glib.h>

/* Returns the process exit code (cli.h). */
int jet_daemon_run(const char *config_file, const char *dropin_dir);

/* `jethost check`: the config, its plugins (unless no_plugins) and each
 * binding's schedule; with server_url, also against the stream and consumer
 * as they are.  Prints one report on stdout, in config order, ending in a
 * summary (also on stderr when a binding failed); returns the exit code. */
int jet_daemon_check(const char *config_file, const char *dropin_dir, gboolean verbose,
                     const char *server_url, gboolean no_plugins);

#endif
