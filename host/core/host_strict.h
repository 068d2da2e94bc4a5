/* Strict-mode hooks of the host function table, for the mock host.
 *
 * The daemon never sets either hook: every host function then pays one
 * predictable branch (a NULL pointer in the jet_msg it already reads, or one
 * process-wide pointer for jet_ctx calls) and behaves exactly as before.  The
 * mock host (host/mock/mock.c) sets them to record host calls and log lines and to
 * enforce rules as a failed test: a jet_msg used after its handle() returned
 * (the daemon refuses that too, through its lent handles: jet_msg.h), a call
 * from a second thread by a plugin that is not thread-safe, an option read
 * that the plugin never declared. */
#ifndef JET_HOST_STRICT_H
#define JET_HOST_STRICT_H

#include <glib.h>
#include <jethost/plugin.h>

/* Set on a jet_msg by the mock host (jet_msg.strict); NULL in the daemon. */
typedef struct JetMsgStrict JetMsgStrict;
struct JetMsgStrict {
    /* Called first by every host function taking that jet_msg (fn: its name
     * in jet_host_api).  Returns FALSE when the call must not proceed (the
     * borrow has ended): the function then returns its error value (NULL, 0
     * or JET_EINVAL) without touching the message. */
    gboolean (*call)(const JetMsgStrict *s, const jet_msg *m, const char *fn);
    gpointer data;
};

/* Process-wide observer of the jet_ctx functions; NULL in the daemon. */
typedef struct {
    /* Called first by every ctx_* host function (fn: its name; arg: the
     * option name for the ctx_option* readers, else NULL). */
    void (*call)(const jet_ctx *c, const char *fn, const char *arg);
    /* Called with each formatted ctx_log() line; returns TRUE when the host
     * should also write it to its log. */
    gboolean (*log)(const jet_ctx *c, jet_log_level level, const char *line);
} JetCtxObserver;

/* Installs (or, with NULL, removes) the observer.  The pointer must stay
 * valid while installed (static storage). */
void jet__host_api_set_ctx_observer(const JetCtxObserver *obs);

#endif
