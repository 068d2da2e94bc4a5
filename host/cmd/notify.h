/* The service manager's notification protocol (sd_notify) for `jethost run`
 * under a Type=notify unit (docs/systemd.md).  Outside systemd
 * (NOTIFY_SOCKET unset) every call does nothing, so the daemon makes them
 * unconditionally. */
#ifndef JET_NOTIFY_H
#define JET_NOTIFY_H

#include <glib.h>

/* Every binding started or stands by: the unit becomes active (and, after a
 * reload, active again). */
void jet_notify_ready(void);
/* A reload began; jet_notify_ready() ends it, successful or not. */
void jet_notify_reloading(void);
/* A drain began: the manager waits for the exit instead of killing early. */
void jet_notify_stopping(void);

/* Pings the watchdog from the default main context at half of
 * WATCHDOG_USEC, when the manager asked for one: a stuck main loop stops
 * the pings and the manager restarts the host.  Returns whether a
 * watchdog is armed; stop removes it (safe when none is). */
gboolean jet_notify_watchdog_start(void);
void jet_notify_watchdog_stop(void);

#endif
