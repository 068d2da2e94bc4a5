/* `jethost run` under a service manager's notification protocol: a socket
 * standing in for systemd's NOTIFY_SOCKET receives READY=1 once the binding
 * runs, WATCHDOG=1 at half of WATCHDOG_USEC while it runs, and STOPPING=1
 * when SIGTERM starts the drain; without WATCHDOG_USEC no watchdog pings. */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct {
    int fd;
    GString *seen;   /* every datagram, one line each field */
} Listener;

static void listener_open(Listener *l, const char *name)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    /* In the 0700 private directory: only this user can write to it. */
    g_autofree char *path = g_build_filename(jet_test_private_dir(), name, NULL);
    g_assert_cmpuint(strlen(path), <, sizeof sa.sun_path);
    strcpy(sa.sun_path, path);
    unlink(path);
    l->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(l->fd, >=, 0);
    g_assert_cmpint(bind(l->fd, (struct sockaddr *)&sa, sizeof sa), ==, 0);
    l->seen = g_string_new(NULL);
    g_setenv("NOTIFY_SOCKET", path, TRUE);
    /* The test's own supervisor's, if any, would turn the watchdog off. */
    g_unsetenv("WATCHDOG_PID");
}

static void listener_close(Listener *l)
{
    close(l->fd);
    g_string_free(l->seen, TRUE);
    g_unsetenv("NOTIFY_SOCKET");
    g_unsetenv("WATCHDOG_USEC");
}

/* Reads datagrams until one holds the line want (within timeout_ms); every
 * datagram read is kept in l->seen. */
static gboolean await_line(Listener *l, const char *want, guint timeout_ms)
{
    gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    while (g_get_monotonic_time() < end) {
        struct timeval tv = { 0, 50000 };
        setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[4096];
        ssize_t n = recv(l->fd, buf, sizeof buf - 1, 0);
        if (n < 0) {
            g_assert_true(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
            continue;
        }
        buf[n] = '\0';
        g_string_append_printf(l->seen, "%s\n--\n", buf);
        g_auto(GStrv) lines = g_strsplit(buf, "\n", -1);
        for (char **ln = lines; *ln != NULL; ln++)
            if (strcmp(*ln, want) == 0)
                return TRUE;
    }
    return FALSE;
}

static guint count_in(const char *text, const char *line)
{
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **ln = lines; *ln != NULL; ln++)
        n += strcmp(*ln, line) == 0;
    return n;
}

static GSubprocess *start_host(JetTestServer *srv, const char *name, char **errlog)
{
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    jet_test_js_close(nc, js);
    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\n\n"
                                            "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\n",
                                            jet_test_server_url(srv), plugin);
    return jet_test_jethost_spawn_config(name, text, errlog);
}

static void test_ready_watchdog_stopping(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Listener l;
    listener_open(&l, "notify.sock");
    g_setenv("WATCHDOG_USEC", "200000", TRUE);   /* a ping every 100 ms */
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = start_host(srv, "notify", &errlog);

    g_assert_true(await_line(&l, "READY=1", 20000));
    /* Nothing else says stopping before the signal. */
    g_assert_cmpuint(count_in(l.seen->str, "STOPPING=1"), ==, 0);
    /* Several pings within a second, at ~100 ms. */
    for (guint i = 0; i < 5; i++)
        g_assert_true(await_line(&l, "WATCHDOG=1", 1000));
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_true(await_line(&l, "STOPPING=1", 10000));
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
    g_test_message("datagrams:\n%s", l.seen->str);
    g_assert_cmpuint(count_in(l.seen->str, "READY=1"), ==, 1);
    listener_close(&l);
}

static void test_no_watchdog_unasked(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Listener l;
    listener_open(&l, "quiet.sock");
    g_unsetenv("WATCHDOG_USEC");
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = start_host(srv, "quiet", &errlog);

    g_assert_true(await_line(&l, "READY=1", 20000));
    g_assert_false(await_line(&l, "WATCHDOG=1", 500));
    jet_test_jethost_stop(host, errlog);
    g_assert_true(await_line(&l, "STOPPING=1", 1000));
    g_assert_cmpuint(count_in(l.seen->str, "WATCHDOG=1"), ==, 0);
    listener_close(&l);
}

/* A config the host refuses never says READY=1: the manager sees the exit. */
static void test_refused_never_ready(void)
{
    Listener l;
    listener_open(&l, "refused.sock");
    g_autofree char *text = g_strdup("[host]\nserver = nats://127.0.0.1:1\n\n"
                                     "[binding orders]\nplugin = /nonexistent/x.so\nstream = ORDERS\nconsumer = billing\n");
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_config("refused", text, &errlog);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 3);
    g_assert_false(await_line(&l, "READY=1", 200));
    listener_close(&l);
}

/* Outside a service manager libsystemd is never mapped: nobody is told,
 * and it would be a megabyte of the host's memory. */
static void test_no_manager_no_library(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    g_unsetenv("NOTIFY_SOCKET");
    g_unsetenv("WATCHDOG_USEC");
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = start_host(srv, "unmanaged", &errlog);
    g_assert_true(jet_test_wait_log(errlog, "event=running", 20000));
    g_autofree char *maps_path = g_strdup_printf("/proc/%s/maps", g_subprocess_get_identifier(host));
    g_autofree char *maps = NULL;
    g_assert_true(g_file_get_contents(maps_path, &maps, NULL, NULL));
    g_assert_nonnull(strstr(maps, "libnats"));   /* the maps are the host's */
    g_assert_null(strstr(maps, "libsystemd"));
    jet_test_jethost_stop(host, errlog);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/notify/ready-watchdog-stopping", test_ready_watchdog_stopping);
    g_test_add_func("/notify/no-watchdog-unasked", test_no_watchdog_unasked);
    g_test_add_func("/notify/refused-never-ready", test_refused_never_ready);
    g_test_add_func("/notify/no-manager-no-library", test_no_manager_no_library);
    return g_test_run();
}
