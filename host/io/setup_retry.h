/* One set-up request to the server (a consumer, a stream), asked again when
 * the server refuses it for a moment: a leader being elected, a stream
 * being deleted or re-created by someone else at the same instant
 * (docs/engine.md, "Start-up"). */
#ifndef JET_SETUP_RETRY_H
#define JET_SETUP_RETRY_H

#include <glib.h>

#include "log.h"

/* One attempt: TRUE when done; FALSE with the reason in error.  A
 * JET_ERROR_INVALID reason is a config error that waiting cannot mend. */
typedef gboolean (*JetSetupStep)(gpointer data, GError **error);

/* Runs step until it succeeds, with backoff from 100 ms doubling to 5 s:
 * `attempts` times, or, with attempts 0, until *stop becomes non-zero.
 * With attempts > 0, a JET_ERROR_INVALID failure is not retried.  Each
 * failed attempt but the last is logged at `level` with `event` for
 * `binding`; the last failure is the one returned in error. */
gboolean jet_setup_retrying(JetSetupStep step, gpointer data, const char *binding, const char *event,
                            jet_log_level level, guint attempts, const gint *stop, GError **error);

#endif
