/* What the commands that talk to a server for an operator (pub, dlq, kv)
 * share: the -s URL, -c FILE and -d DIR options, loading the config,
 * connecting with it as `run` does (docs/cli.md, "Connecting"), and reading
 * a payload from standard input. */
#ifndef JET_CMD_COMMON_H
#define JET_CMD_COMMON_H

#include "config.h"
#include "conn.h"

#include <glib.h>
#include <stdio.h>

typedef struct {
    char *server;   /* -s URL */
    char *config;   /* -c FILE */
    char *dropin;   /* -d DIR */
} JetCmdConnOptions;

/* Adds -s, -c and -d to ctx's main group (before the command's own
 * options), filling o; config_help says what the command takes from the
 * config. */
void jet_cmd_conn_add_options(GOptionContext *ctx, JetCmdConnOptions *o, const char *config_help);
void jet_cmd_conn_options_clear(JetCmdConnOptions *o);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(JetCmdConnOptions, jet_cmd_conn_options_clear)

/* Loads the config when -c was given (*cfg stays NULL otherwise).
 * JET_EXIT_OK, or JET_EXIT_CONFIG after writing "jethost CMD: why" to
 * err. */
int jet_cmd_conn_load(const char *cmd, const JetCmdConnOptions *o, FILE *err, JetConfig **cfg);

/* Connects as `run` does with cfg (may be NULL), -s replacing only the
 * URLs; NULL after writing "jethost CMD: why" to err (JET_EXIT_FAILURE). */
JetConn *jet_cmd_conn_open(const char *cmd, const JetConfig *cfg, const JetCmdConnOptions *o, FILE *err);

/* Both, for a command that needs nothing else of the config: the
 * connection, or NULL with *rc the exit code.  *cfg (NULL without -c) is
 * the caller's, and kept until the connection is closed. */
JetConn *jet_cmd_connect(const char *cmd, const JetCmdConnOptions *o, FILE *err, JetConfig **cfg, int *rc);

/* Flushes, closes and frees c (NULL is fine).  jet_conn_close() alone frees
 * the JetConn while nats.c may still be about to run its disconnected
 * callback, which writes into it (ASan: heap-use-after-free in conn.c
 * on_disconnected): the connection is closed first, and the callback (which
 * clears the connected flag first thing) waited for.  The real fix belongs
 * in conn.c (wait for the closed callback). */
void jet_cmd_conn_close(JetConn *c);

/* All of standard input, as bytes (a NUL after them, not counted in
 * *len); NULL after writing "jethost CMD: reading standard input: why" to
 * err (JET_EXIT_FAILURE). */
char *jet_cmd_read_stdin(const char *cmd, gsize *len, FILE *err);

#endif
