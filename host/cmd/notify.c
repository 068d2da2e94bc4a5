/* sd_notify for `jethost run` (notify.h). */
#include "notify.h"

#include "log.h"

#include <systemd/sd-daemon.h>
#include <time.h>

static guint watchdog_source;
static gboolean warned;

static void send_state(const char *state)
{
    /* The environment stays set: the daemon notifies more than once. */
    int r = sd_notify(0, state);
    /* Once: a broken socket would otherwise fill the log from the watchdog. */
    if (r < 0 && !warned) {
        warned = TRUE;
        jet_log(JET_LOG_WARNING, NULL, "notify", "cannot notify the service manager: %s", g_strerror(-r));
    }
}

void jet_notify_ready(void)
{
    send_state("READY=1\nSTATUS=running");
}

void jet_notify_reloading(void)
{
    /* Type=notify-reload (systemd 253) wants the monotonic time of the
     * request beside RELOADING=1 to tell this reload from an older one. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g_autofree char *state = g_strdup_printf("RELOADING=1\nMONOTONIC_USEC=%" G_GUINT64_FORMAT "\nSTATUS=reloading",
                                             (guint64)ts.tv_sec * G_USEC_PER_SEC + (guint64)ts.tv_nsec / 1000);
    send_state(state);
}

void jet_notify_stopping(void)
{
    send_state("STOPPING=1\nSTATUS=draining");
}

static gboolean on_watchdog(gpointer data)
{
    (void)data;
    send_state("WATCHDOG=1");
    return G_SOURCE_CONTINUE;
}

gboolean jet_notify_watchdog_start(void)
{
    uint64_t usec = 0;
    /* 0 without WATCHDOG_USEC, or when WATCHDOG_PID names another process
     * (a child that inherited the variables). */
    if (watchdog_source != 0 || sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return FALSE;
    guint64 ms = MAX(usec / 2000, 1);
    watchdog_source = g_timeout_add((guint)MIN(ms, G_MAXUINT), on_watchdog, NULL);
    jet_log(JET_LOG_DEBUG, NULL, "watchdog", "pinging the service manager's watchdog every %" G_GUINT64_FORMAT " ms",
            ms);
    /* The first ping at once: the manager's timer runs from READY=1. */
    send_state("WATCHDOG=1");
    return TRUE;
}

void jet_notify_watchdog_stop(void)
{
    if (watchdog_source != 0)
        g_source_remove(watchdog_source);
    watchdog_source = 0;
}
