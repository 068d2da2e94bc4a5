#include "http_listen.h"
#include "http_head.h"

#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

/* Accepts in one turn of the main loop: a connection's own readiness is
 * seen within a turn or two, long before JET_HTTP_MAX_CONNS newer ones can
 * close it, however fast connections come in. */
#define ACCEPTS_PER_TURN 16
/* What a refused client may still send while its answer reaches it (a
 * close with unread data would reset the connection and could lose the
 * answer): read and dropped, never kept.  A client that writes its body
 * before it reads has several MiB in flight (Linux grows a connection's
 * buffers to 4 MiB sending and 6 MiB receiving): 1 MiB reset such a
 * client at 3.4 MiB sent, before it read its answer (docs/operations.md). */
#define LINGER_MAX (16 * 1024 * 1024)
/* Without a descriptor to accept with, the listener waits this long. */
#define ACCEPT_PAUSE_MS 100

typedef enum { READING, WRITING, LINGERING } ConnState;

typedef struct {
    JetHttpListener *l;
    GSocket *sock;
    GSource *src;
    GList link;              /* in l->conns, oldest deadline first */
    ConnState state;
    gint64 deadline;         /* monotonic µs: closed then */
    char in[JET_HTTP_HEAD_MAX];
    gsize in_len;
    GString *out;
    gsize out_off;
    gboolean close_after;    /* the answer being written is the last one */
    gsize lingered;
} Conn;

struct JetHttpListener {
    GMainContext *ctx;
    GSocket *sock;
    GSource *accept_src;
    GSource *pause_src;
    GSource *timer;
    GQueue conns;            /* of Conn, by deadline: every deadline is a transition + idle */
    guint max_conns;
    gint64 idle_us;
    JetHttpServeFn serve;
    gpointer data;
};

static void conn_watch(Conn *c, GIOCondition cond);
static void arm_timer(JetHttpListener *l);
static void accept_watch(JetHttpListener *l);

static void conn_close(Conn *c)
{
    JetHttpListener *l = c->l;
    g_queue_unlink(&l->conns, &c->link);
    if (c->src != NULL) {
        g_source_destroy(c->src);
        g_source_unref(c->src);
    }
    g_socket_close(c->sock, NULL);
    g_object_unref(c->sock);
    if (c->out != NULL)
        g_string_free(c->out, TRUE);
    g_free(c);
}

/* A new state: its deadline starts now, so the connection goes last. */
static void conn_touch(Conn *c, ConnState state)
{
    JetHttpListener *l = c->l;
    c->state = state;
    c->deadline = g_get_monotonic_time() + l->idle_us;
    g_queue_unlink(&l->conns, &c->link);
    g_queue_push_tail_link(&l->conns, &c->link);
    arm_timer(l);
}

static void answer_format(Conn *c, const JetHttpAnswer *a, gboolean head)
{
    gsize n = a->body != NULL ? strlen(a->body) : 0;
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *date = g_date_time_format(now, "%a, %d %b %Y %H:%M:%S GMT");
    c->out = g_string_sized_new(160 + (head ? 0 : n));
    g_string_append_printf(c->out, "HTTP/1.1 %u %s\r\nServer: jethost\r\nDate: %s\r\n", a->status,
                           jet_http_reason(a->status), date);
    if (a->status == 405)
        g_string_append(c->out, "Allow: GET, HEAD\r\n");
    if (c->close_after)
        g_string_append(c->out, "Connection: close\r\n");
    g_string_append_printf(c->out, "Content-Type: %s\r\nContent-Length: %" G_GSIZE_FORMAT "\r\n\r\n", a->type, n);
    if (!head && n > 0)
        g_string_append_len(c->out, a->body, (gssize)n);
    c->out_off = 0;
}

static void conn_flush(Conn *c);

/* The head in c->in, if whole: answered, or refused and the connection
 * closed after the answer.  Returns FALSE when more bytes are needed. */
static gboolean conn_answer(Conn *c)
{
    JetHttpHead h;
    guint verdict = jet_http_head_read(c->in, c->in_len, &h);
    if (verdict == 0)
        return FALSE;
    JetHttpAnswer a = { verdict, "text/plain", NULL };
    if (verdict == JET_HTTP_ROUTE) {
        g_autofree char *path = g_strndup(c->in + h.path_off, h.path_len);
        c->l->serve(path, &a, c->l->data);
        c->close_after = !h.keep_alive;
        /* A pipelined request waits in the buffer for this answer to go. */
        memmove(c->in, c->in + h.head_len, c->in_len - h.head_len);
        c->in_len -= h.head_len;
    } else {
        a.body = g_strdup_printf("%s\n", jet_http_reason(verdict));
        c->close_after = TRUE;
        c->in_len = 0;
    }
    answer_format(c, &a, h.head);
    g_free(a.body);
    conn_touch(c, WRITING);
    conn_flush(c);
    return TRUE;
}

/* Read and dropped until the client closes, the deadline or LINGER_MAX. */
static void conn_linger(Conn *c)
{
    char scratch[4096];
    while (c->lingered < LINGER_MAX) {
        g_autoptr(GError) err = NULL;
        gssize r = g_socket_receive(c->sock, scratch, sizeof scratch, NULL, &err);
        if (r < 0 && g_error_matches(err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
            return;
        if (r <= 0)
            break;   /* the client closed, or the connection failed */
        c->lingered += (gsize)r;
    }
    conn_close(c);
}

static void conn_flush(Conn *c)
{
    while (c->out_off < c->out->len) {
        g_autoptr(GError) err = NULL;
        gssize w = g_socket_send(c->sock, c->out->str + c->out_off, c->out->len - c->out_off, NULL, &err);
        if (w < 0) {
            if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
                conn_watch(c, G_IO_OUT);
                return;
            }
            conn_close(c);
            return;
        }
        c->out_off += (gsize)w;
    }
    g_string_free(c->out, TRUE);
    c->out = NULL;
    if (c->close_after) {
        g_socket_shutdown(c->sock, FALSE, TRUE, NULL);
        conn_touch(c, LINGERING);
        conn_watch(c, G_IO_IN);
        conn_linger(c);
        return;
    }
    conn_touch(c, READING);
    if (!conn_answer(c))
        conn_watch(c, G_IO_IN);
}

static void conn_read(Conn *c)
{
    g_autoptr(GError) err = NULL;
    gssize r = g_socket_receive(c->sock, c->in + c->in_len, sizeof c->in - c->in_len, NULL, &err);
    if (r < 0 && g_error_matches(err, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        return;
    if (r <= 0) {
        conn_close(c);   /* the client closed, or the connection failed */
        return;
    }
    c->in_len += (gsize)r;
    conn_answer(c);
}

static gboolean on_conn(GSocket *sock, GIOCondition cond, gpointer data)
{
    (void)sock;
    (void)cond;
    Conn *c = data;
    switch (c->state) {
    case READING: conn_read(c); break;
    case WRITING: conn_flush(c); break;
    case LINGERING: conn_linger(c); break;
    }
    return G_SOURCE_CONTINUE;
}

/* One source a connection, watching what its state waits for; a hang-up
 * or an error wakes it as well (the read or write then sees it). */
static void conn_watch(Conn *c, GIOCondition cond)
{
    if (c->src != NULL) {
        g_source_destroy(c->src);
        g_source_unref(c->src);
    }
    c->src = g_socket_create_source(c->sock, cond | G_IO_HUP | G_IO_ERR, NULL);
    g_source_set_callback(c->src, G_SOURCE_FUNC(on_conn), c, NULL);
    g_source_attach(c->src, c->l->ctx);
}

static gboolean on_timer(gpointer data)
{
    JetHttpListener *l = data;
    g_source_unref(l->timer);
    l->timer = NULL;
    gint64 now = g_get_monotonic_time();
    while (l->conns.head != NULL && ((Conn *)l->conns.head->data)->deadline <= now)
        conn_close(l->conns.head->data);
    arm_timer(l);
    return G_SOURCE_REMOVE;
}

/* One timer for every deadline: the first one's.  Deadlines only move
 * later, so a timer that fires early just sets itself again. */
static void arm_timer(JetHttpListener *l)
{
    if (l->timer != NULL || l->conns.head == NULL)
        return;
    gint64 wait = ((Conn *)l->conns.head->data)->deadline - g_get_monotonic_time();
    l->timer = g_timeout_source_new((guint)(MAX(wait, 0) / 1000 + 1));
    g_source_set_callback(l->timer, on_timer, l, NULL);
    g_source_attach(l->timer, l->ctx);
}

static gboolean on_pause_end(gpointer data)
{
    JetHttpListener *l = data;
    g_source_unref(l->pause_src);
    l->pause_src = NULL;
    accept_watch(l);
    return G_SOURCE_REMOVE;
}

/* Out of descriptors with no connection to close: the listen queue keeps
 * the clients while the rest of the host frees some. */
static void accept_pause(JetHttpListener *l)
{
    g_source_destroy(l->accept_src);
    g_clear_pointer(&l->accept_src, g_source_unref);
    l->pause_src = g_timeout_source_new(ACCEPT_PAUSE_MS);
    g_source_set_callback(l->pause_src, on_pause_end, l, NULL);
    g_source_attach(l->pause_src, l->ctx);
}

static gboolean on_accept(GSocket *sock, GIOCondition cond, gpointer data)
{
    (void)cond;
    JetHttpListener *l = data;
    for (int i = 0; i < ACCEPTS_PER_TURN; i++) {
        g_autoptr(GError) err = NULL;
        GSocket *s = g_socket_accept(sock, NULL, &err);
        if (s == NULL && g_error_matches(err, G_IO_ERROR, G_IO_ERROR_TOO_MANY_OPEN_FILES)) {
            if (l->conns.head == NULL) {
                accept_pause(l);
                return G_SOURCE_REMOVE;
            }
            conn_close(l->conns.head->data);   /* the oldest makes room */
            continue;
        }
        if (s == NULL)
            break;   /* would block, or the client went before it was accepted */
        /* At the cap the oldest goes: a new probe is always answered. */
        if (l->conns.length >= l->max_conns)
            conn_close(l->conns.head->data);
        g_socket_set_blocking(s, FALSE);
        Conn *c = g_new0(Conn, 1);
        c->l = l;
        c->sock = s;
        c->link.data = c;
        g_queue_push_tail_link(&l->conns, &c->link);
        conn_touch(c, READING);
        conn_watch(c, G_IO_IN);
    }
    return G_SOURCE_CONTINUE;
}

static void accept_watch(JetHttpListener *l)
{
    l->accept_src = g_socket_create_source(l->sock, G_IO_IN, NULL);
    g_source_set_callback(l->accept_src, G_SOURCE_FUNC(on_accept), l, NULL);
    g_source_attach(l->accept_src, l->ctx);
}

/* The cap: JET_HTTP_MAX_CONNS, and a quarter of the descriptor limit at
 * most, so that the listener never takes the descriptors the bindings
 * need. */
static guint max_conns(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return JET_HTTP_MAX_CONNS;
    return (guint)CLAMP(rl.rlim_cur / 4, 1, JET_HTTP_MAX_CONNS);
}

JetHttpListener *jet_http_listen(GSocketAddress *addr, guint64 idle_ms, JetHttpServeFn serve, gpointer data,
                                 GError **error)
{
    g_autoptr(GSocket) sock = g_socket_new(g_socket_address_get_family(addr), G_SOCKET_TYPE_STREAM,
                                           G_SOCKET_PROTOCOL_TCP, error);
    if (sock == NULL)
        return NULL;
    /* Scrapers and probes that come at once wait in the kernel's queue,
     * not in SYN retries (the kernel caps it at net.core.somaxconn). */
    g_socket_set_listen_backlog(sock, SOMAXCONN);
    g_socket_set_blocking(sock, FALSE);
    if (!g_socket_bind(sock, addr, TRUE, error) || !g_socket_listen(sock, error))
        return NULL;
    JetHttpListener *l = g_new0(JetHttpListener, 1);
    l->ctx = g_main_context_ref_thread_default();
    l->sock = g_steal_pointer(&sock);
    g_queue_init(&l->conns);
    l->max_conns = max_conns();
    l->idle_us = (gint64)idle_ms * 1000;
    l->serve = serve;
    l->data = data;
    accept_watch(l);
    return l;
}

GSocketAddress *jet_http_listener_address(JetHttpListener *l)
{
    return g_socket_get_local_address(l->sock, NULL);
}

void jet_http_listener_free(JetHttpListener *l)
{
    if (l == NULL)
        return;
    while (l->conns.head != NULL)
        conn_close(l->conns.head->data);
    GSource *srcs[] = { l->accept_src, l->pause_src, l->timer };
    for (gsize i = 0; i < G_N_ELEMENTS(srcs); i++) {
        if (srcs[i] != NULL) {
            g_source_destroy(srcs[i]);
            g_source_unref(srcs[i]);
        }
    }
    g_socket_close(l->sock, NULL);
    g_object_unref(l->sock);
    g_main_context_unref(l->ctx);
    g_free(l);
}
