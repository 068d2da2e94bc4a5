/* `jethost check`. */
#ifndef JET_CHECK_H
#define JET_CHECK_H

#include <glib.h>

/* The config, its plugins (unless no_plugins) and each binding's schedule;
 * with server_url, also against the stream and consumer as they are.
 * Prints one report on stdout, in config order, ending in a summary (also
 * on stderr when a binding failed); returns the exit code
 * (exit_codes.h). */
int jet_check_run(const char *config_file, const char *dropin_dir, gboolean verbose, const char *server_url,
                  gboolean no_plugins);

#endif
