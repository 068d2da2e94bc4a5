/* server = embedded: a private nats-server child on loopback, with JetStream
 * storing under state_dir, supervised (restarted if it dies) and stopped on
 * exit.  It dies with the host even when the host crashes (parent-death
 * signal), and a pid file lets the next host find and replace an orphan, so
 * two servers never share one store. */
#ifndef JET_EMBEDDED_H
#define JET_EMBEDDED_H

#include <glib.h>

typedef struct JetEmbedded JetEmbedded;

/* Starts the server and waits until it answers.  Call from the main thread
 * (the parent-death signal is tied to the thread that spawns).  Supervision
 * runs on the thread-default main context. */
JetEmbedded *jet_embedded_start(const char *nats_server, const char *state_dir, GError **error);
const char *jet_embedded_url(const JetEmbedded *e);
/* Stops it (SIGTERM, then SIGKILL after 5 s) and removes the pid file. */
void jet_embedded_stop(JetEmbedded *e);

/* The URL a running embedded server of state_dir listens on (from its url
 * file), for `jethost pub`.  Caller frees; NULL with an error when none. */
char *jet_embedded_read_url(const char *state_dir, GError **error);

/* The client URL a nats-server started with `--ports_file_dir dir` wrote
 * to its ports file (`nats-server_<pid>.ports`), or NULL while it has not
 * (yet) written a complete one.  Caller frees. */
char *jet_nats_ports_url(const char *dir, const char *pid);

#endif
