/* sd_notify for `jethost run` (notify.h). */
#include "notify.h"

#include "log.h"

#include <dlfcn.h>
#include <systemd/sd-daemon.h>
#include <time.h>

/* The library's name since systemd 209; the header above gives the types. */
#define LIBSYSTEMD "libsystemd.so.0"

static guint watchdog_source;
static gboolean warned;

/* libsystemd and the libraries it brings (compression, gcrypt) are a
 * megabyte of the host's resident memory, and outside a service manager
 * there is nobody to tell: it is opened only when NOTIFY_SOCKET is set
 * (docs/systemd.md, "Outside systemd"). */
static struct {
    gsize once;
    int (*notify)(int unset_environment, const char *state);
    int (*watchdog_enabled)(int unset_environment, uint64_t *usec);
} sd;

static gboolean sd_open(void)
{
    if (g_once_init_enter(&sd.once)) {
        const char *sock = g_getenv("NOTIFY_SOCKET");
        void *lib = sock != NULL && *sock != '\0' ? dlopen(LIBSYSTEMD, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (lib != NULL) {
            /* POSIX's way to a function pointer from dlsym. */
            *(void **)&sd.notify = dlsym(lib, "sd_notify");
            *(void **)&sd.watchdog_enabled = dlsym(lib, "sd_watchdog_enabled");
        }
        if (sock != NULL && *sock != '\0' && (sd.notify == NULL || sd.watchdog_enabled == NULL)) {
            const char *why = dlerror();
            sd.notify = NULL;
            jet_log(JET_LOG_WARNING, NULL, "notify",
                    "NOTIFY_SOCKET is set but %s cannot be used (%s): the service manager is not told the host "
                    "is ready", LIBSYSTEMD, why != NULL ? why : "sd_notify or sd_watchdog_enabled missing");
        }
        g_once_init_leave(&sd.once, 1);
    }
    return sd.notify != NULL;
}

static void send_state(const char *state)
{
    if (!sd_open())
        return;
    /* The environment stays set: the daemon notifies more than once. */
    int r = sd.notify(0, state);
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
    if (watchdog_source != 0 || !sd_open() || sd.watchdog_enabled(0, &usec) <= 0 || usec == 0)
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
