/* Set-up requests asked again: setup_retry.h has the contract. */
#include "setup_retry.h"

#include "errors.h"

gboolean jet_setup_retrying(JetSetupStep step, gpointer data, const char *binding, const char *event,
                            jet_log_level level, guint attempts, const gint *stop, GError **error)
{
    guint64 wait_ms = 100;
    for (guint i = 1;; i++) {
        g_autoptr(GError) local = NULL;
        if (step(data, &local))
            return TRUE;
        if (attempts > 0 && (i >= attempts || g_error_matches(local, JET_ERROR, JET_ERROR_INVALID))) {
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        }
        jet_log(level, binding, event, "attempt %u: %s; next in %" G_GUINT64_FORMAT " ms", i, local->message,
                wait_ms);
        for (guint64 slept = 0; slept < wait_ms; slept += 50) {
            if (stop != NULL && g_atomic_int_get(stop)) {
                g_propagate_error(error, g_steal_pointer(&local));
                return FALSE;
            }
            g_usleep(50000);
        }
        wait_ms = MIN(wait_ms * 2, 5000);
    }
}
