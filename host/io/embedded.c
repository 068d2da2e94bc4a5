#define _GNU_SOURCE
#include "embedded.h"
#include "errors.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <nats/nats.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

struct JetEmbedded {
    char *binary;
    char *state_dir;
    char *dir;          /* state_dir/nats */
    char *pid_file, *url_file, *lock_file;
    int lock_fd;
    char *url;
    int port;
    GSubprocess *proc;
    GCancellable *cancel;
    gboolean stopping;
    guint restarts;
};

/* The server dies with jethost, and lives in a process group of its own:
 * a Ctrl-C in jethost's terminal reaches jethost, which drains and then
 * stops the server, never the server in the middle of the drain. */
static void child_setup(gpointer data)
{
    (void)data;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    setpgid(0, 0);
}

char *jet_nats_ports_url(const char *dir, const char *pid)
{
    g_autofree char *file = g_strdup_printf("%s/nats-server_%s.ports", dir, pid);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(file, &text, NULL, NULL))
        return NULL;
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, text, -1, NULL))
        return NULL;
    JsonNode *root = json_parser_get_root(p);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return NULL;
    JsonObject *o = json_node_get_object(root);
    if (!json_object_has_member(o, "nats"))
        return NULL;
    JsonArray *a = json_object_get_array_member(o, "nats");
    if (a == NULL || json_array_get_length(a) == 0)
        return NULL;
    return g_strdup(json_array_get_string_element(a, 0));
}

static gboolean answers(const char *url)
{
    natsConnection *nc = NULL;
    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url);
    natsOptions_SetTimeout(o, 500);
    natsOptions_SetAllowReconnect(o, false);
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK)
        return FALSE;
    natsMsg *reply = NULL;
    s = natsConnection_RequestString(&reply, nc, "$JS.API.INFO", "", 1000);
    natsMsg_Destroy(reply);
    natsConnection_Destroy(nc);
    return s == NATS_OK;
}

/* A nats-server left by a host that died without its parent-death signal
 * reaching it (or a SIGKILL'd one): it would share our store. */
static void replace_orphan(JetEmbedded *e)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(e->pid_file, &text, NULL, NULL))
        return;
    pid_t pid = (pid_t)atoi(text);
    if (pid <= 1)
        return;
    g_autofree char *cmdline_path = g_strdup_printf("/proc/%d/cmdline", (int)pid);
    g_autofree char *cmdline = NULL;
    gsize len = 0;
    if (!g_file_get_contents(cmdline_path, &cmdline, &len, NULL))
        return;   /* gone already */
    /* Only a nats-server on our own store is ours to stop. */
    gboolean ours = FALSE;
    for (gsize i = 0; i < len; i += strlen(cmdline + i) + 1)
        if (strcmp(cmdline + i, e->dir) == 0 || g_str_has_prefix(cmdline + i, e->dir))
            ours = TRUE;
    if (!ours)
        return;
    jet_log(JET_LOG_WARNING, NULL, "embedded-orphan",
            "stopping nats-server pid %d left by a previous run on %s", (int)pid, e->dir);
    kill(pid, SIGTERM);
    for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
        g_usleep(50000);
    if (kill(pid, 0) == 0)
        kill(pid, SIGKILL);
    for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
        g_usleep(20000);
}

static void on_server_exit(GObject *source, GAsyncResult *res, gpointer data);

static gboolean spawn(JetEmbedded *e, GError **error)
{
    g_autofree char *store = g_build_filename(e->dir, "store", NULL);
    g_autofree char *port = e->port > 0 ? g_strdup_printf("%d", e->port) : g_strdup("-1");
    g_autofree char *log = g_build_filename(e->dir, "nats-server.log", NULL);
    const char *argv[] = { e->binary, "-js", "-a", "127.0.0.1", "-p", port, "--ports_file_dir", e->dir,
                           "-sd", store, "-l", log, NULL };
    g_autoptr(GSubprocessLauncher) l =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
    g_subprocess_launcher_set_child_setup(l, child_setup, NULL, NULL);
    g_autoptr(GError) local = NULL;
    e->proc = g_subprocess_launcher_spawnv(l, argv, &local);
    if (e->proc == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "server = embedded: cannot start %s: %s",
                    e->binary, local->message);
        return FALSE;
    }
    const char *pid = g_subprocess_get_identifier(e->proc);
    g_file_set_contents(e->pid_file, pid, -1, NULL);

    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < deadline) {
        if (g_subprocess_get_identifier(e->proc) == NULL)
            break;
        if (e->url == NULL)
            e->url = jet_nats_ports_url(e->dir, pid);
        if (e->url != NULL && answers(e->url)) {
            if (e->port <= 0) {
                const char *colon = strrchr(e->url, ':');
                e->port = colon != NULL ? atoi(colon + 1) : 0;
            }
            g_file_set_contents(e->url_file, e->url, -1, NULL);
            g_subprocess_wait_async(e->proc, e->cancel, on_server_exit, e);
            return TRUE;
        }
        g_usleep(20000);
    }
    g_set_error(error, JET_ERROR, JET_ERROR_FAILED,
                "server = embedded: %s did not start answering within 30 s (its log: %s)", e->binary, log);
    g_subprocess_force_exit(e->proc);
    g_clear_object(&e->proc);
    return FALSE;
}

static gboolean respawn(gpointer data)
{
    JetEmbedded *e = data;
    g_autoptr(GError) err = NULL;
    if (e->stopping)
        return G_SOURCE_REMOVE;
    if (!spawn(e, &err)) {
        jet_log(JET_LOG_ERROR, NULL, "embedded-failed", "%s; trying again in 1 s", err->message);
        g_timeout_add_seconds(1, respawn, e);
    } else {
        jet_log(JET_LOG_INFO, NULL, "embedded-restarted", "nats-server restarted at %s", e->url);
    }
    return G_SOURCE_REMOVE;
}

static void on_server_exit(GObject *source, GAsyncResult *res, gpointer data)
{
    GSubprocess *proc = G_SUBPROCESS(source);
    if (!g_subprocess_wait_finish(proc, res, NULL))
        return;   /* cancelled: we are stopping it */
    JetEmbedded *e = data;
    if (e->stopping || e->proc != proc)
        return;
    g_clear_object(&e->proc);
    e->restarts++;
    jet_log(JET_LOG_ERROR, NULL, "embedded-died", "the embedded nats-server exited; restarting it (restart %u)",
            e->restarts);
    /* The same port, so the connection's reconnect finds it. */
    g_timeout_add(e->restarts > 3 ? 1000 : 100, respawn, e);
}

JetEmbedded *jet_embedded_start(const char *nats_server, const char *state_dir, GError **error)
{
    JetEmbedded *e = g_new0(JetEmbedded, 1);
    e->binary = g_strdup(nats_server != NULL ? nats_server : "nats-server");
    e->state_dir = g_strdup(state_dir);
    e->dir = g_build_filename(state_dir, "nats", NULL);
    e->pid_file = g_build_filename(e->dir, "nats-server.pid", NULL);
    e->url_file = g_build_filename(e->dir, "url", NULL);
    e->lock_file = g_build_filename(e->dir, "jethost.lock", NULL);
    e->lock_fd = -1;
    e->cancel = g_cancellable_new();

    if (g_mkdir_with_parents(e->dir, 0700) != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "state_dir %s: cannot create %s: %s", state_dir,
                    e->dir, g_strerror(errno));
        jet_embedded_stop(e);
        return NULL;
    }
    /* One host per store: a second jethost on the same state_dir is refused. */
    e->lock_fd = open(e->lock_file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED,
                    "state_dir %s is in use by another jethost (lock %s held)", state_dir, e->lock_file);
        jet_embedded_stop(e);
        return NULL;
    }
    replace_orphan(e);
    /* Old ports files would name ports of servers long gone. */
    g_autoptr(GDir) d = g_dir_open(e->dir, 0, NULL);
    const char *n;
    while (d != NULL && (n = g_dir_read_name(d)) != NULL) {
        if (g_str_has_suffix(n, ".ports")) {
            g_autofree char *p = g_build_filename(e->dir, n, NULL);
            g_unlink(p);
        }
    }
    if (!spawn(e, error)) {
        jet_embedded_stop(e);
        return NULL;
    }
    jet_log(JET_LOG_INFO, NULL, "embedded-started", "embedded nats-server at %s, store %s/store", e->url, e->dir);
    return e;
}

const char *jet_embedded_url(const JetEmbedded *e)
{
    return e->url;
}

void jet_embedded_stop(JetEmbedded *e)
{
    if (e == NULL)
        return;
    e->stopping = TRUE;
    g_cancellable_cancel(e->cancel);
    if (e->proc != NULL) {
        g_subprocess_send_signal(e->proc, SIGTERM);
        gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
        while (g_subprocess_get_identifier(e->proc) != NULL && g_get_monotonic_time() < deadline)
            g_usleep(20000);
        if (g_subprocess_get_identifier(e->proc) != NULL)
            g_subprocess_force_exit(e->proc);
        g_subprocess_wait(e->proc, NULL, NULL);
        g_clear_object(&e->proc);
        g_unlink(e->pid_file);
        g_unlink(e->url_file);
    }
    if (e->lock_fd >= 0)
        close(e->lock_fd);
    g_clear_object(&e->cancel);
    g_free(e->binary);
    g_free(e->state_dir);
    g_free(e->dir);
    g_free(e->pid_file);
    g_free(e->url_file);
    g_free(e->lock_file);
    g_free(e->url);
    g_free(e);
}

char *jet_embedded_read_url(const char *state_dir, GError **error)
{
    g_autofree char *file = g_build_filename(state_dir, "nats", "url", NULL);
    char *text = NULL;
    if (!g_file_get_contents(file, &text, NULL, NULL)) {
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED,
                    "no embedded server is running for state_dir %s (no %s)", state_dir, file);
        return NULL;
    }
    return g_strstrip(text);
}
