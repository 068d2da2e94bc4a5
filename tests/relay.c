/* The cuttable TCP relay of relay.h: a thread accepts, two threads copy
 * each connection's bytes, one per direction. */
#define _GNU_SOURCE   /* accept4 */
#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
    int client, server;
    GThread *up, *down;
    gint alive;   /* copiers still running */
} Pair;

struct JetTestRelay {
    int listen_fd;
    int target_port;
    char *url;
    GMutex lock;
    GPtrArray *pairs;   /* Pair *, guarded by lock */
    GThread *acceptor;
    gint stopping;
    gint blocked;
    /* jet_test_relay_cut_on's, guarded by needle_lock: never lock, which
     * jet_test_relay_cut holds while it joins the copier threads. */
    GMutex needle_lock;
    char *needle;
    guint cuts_left, cuts_made;
};

typedef struct {
    JetTestRelay *relay;
    Pair *pair;
    int from, to;
    gboolean up;        /* client to server */
    gsize tail_len;     /* the end of the last read, for a needle split over two */
    char scan[256 + 65536];
} Copy;

#define NEEDLE_MAX 256

/* Whether these bytes from the client (after the end of the last read)
 * are the ones to cut on; counts the cut. */
static gboolean cut_here(Copy *c, const char *buf, gsize n)
{
    JetTestRelay *r = c->relay;
    gboolean cut = FALSE;
    g_mutex_lock(&r->needle_lock);
    if (r->cuts_left > 0) {
        gsize nl = strlen(r->needle);
        memcpy(c->scan + c->tail_len, buf, n);
        gsize len = c->tail_len + n;
        if (memmem(c->scan, len, r->needle, nl) != NULL) {
            cut = TRUE;
            r->cuts_left--;
            r->cuts_made++;
        }
        c->tail_len = MIN(len, nl - 1);
        memmove(c->scan, c->scan + len - c->tail_len, c->tail_len);
    }
    g_mutex_unlock(&r->needle_lock);
    return cut;
}

static gpointer copy_main(gpointer data)
{
    Copy *c = data;
    char buf[65536];
    for (;;) {
        ssize_t n = read(c->from, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (c->up && cut_here(c, buf, (gsize)n))
            break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(c->to, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                goto done;
            off += w;
        }
    }
done:
    /* One direction ended: the connection is over for both. */
    shutdown(c->pair->client, SHUT_RDWR);
    shutdown(c->pair->server, SHUT_RDWR);
    g_atomic_int_dec_and_test(&c->pair->alive);
    g_free(c);
    return NULL;
}

static void pair_free(Pair *p)
{
    shutdown(p->client, SHUT_RDWR);
    shutdown(p->server, SHUT_RDWR);
    g_thread_join(p->up);
    g_thread_join(p->down);
    close(p->client);
    close(p->server);
    g_free(p);
}

static int connect_target(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Pairs whose copiers have both ended are joined and closed. */
static void reap(JetTestRelay *r)
{
    g_mutex_lock(&r->lock);
    for (guint i = r->pairs->len; i-- > 0;) {
        Pair *p = g_ptr_array_index(r->pairs, i);
        if (g_atomic_int_get(&p->alive) == 0) {
            g_ptr_array_remove_index_fast(r->pairs, i);
            pair_free(p);
        }
    }
    g_mutex_unlock(&r->lock);
}

static gpointer accept_main(gpointer data)
{
    JetTestRelay *r = data;
    while (!g_atomic_int_get(&r->stopping)) {
        struct pollfd pfd = { .fd = r->listen_fd, .events = POLLIN };
        int ready = poll(&pfd, 1, 100);
        reap(r);
        if (ready <= 0)
            continue;
        int client = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        if (g_atomic_int_get(&r->blocked)) {
            close(client);
            continue;
        }
        int server = connect_target(g_atomic_int_get(&r->target_port));
        if (server < 0) {
            close(client);   /* the server is down: as a refused connect */
            continue;
        }
        int one = 1;
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        Pair *p = g_new0(Pair, 1);
        p->client = client;
        p->server = server;
        p->alive = 2;
        Copy *up = g_new0(Copy, 1), *down = g_new0(Copy, 1);
        up->relay = down->relay = r;
        up->pair = down->pair = p;
        up->from = down->to = client;
        up->to = down->from = server;
        up->up = TRUE;
        g_mutex_lock(&r->lock);
        p->up = g_thread_new("relay-up", copy_main, up);
        p->down = g_thread_new("relay-down", copy_main, down);
        g_ptr_array_add(r->pairs, p);
        g_mutex_unlock(&r->lock);
    }
    return NULL;
}

void jet_test_relay_retarget(JetTestRelay *r, int target_port)
{
    g_atomic_int_set(&r->target_port, target_port);
}

JetTestRelay *jet_test_relay_start(int target_port)
{
    JetTestRelay *r = g_new0(JetTestRelay, 1);
    r->target_port = target_port;
    r->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(r->listen_fd, >=, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    g_assert_cmpint(bind(r->listen_fd, (struct sockaddr *)&a, sizeof a), ==, 0);
    g_assert_cmpint(listen(r->listen_fd, 64), ==, 0);
    socklen_t len = sizeof a;
    g_assert_cmpint(getsockname(r->listen_fd, (struct sockaddr *)&a, &len), ==, 0);
    r->url = g_strdup_printf("nats://127.0.0.1:%d", ntohs(a.sin_port));
    g_mutex_init(&r->lock);
    g_mutex_init(&r->needle_lock);
    r->pairs = g_ptr_array_new();
    r->acceptor = g_thread_new("relay-accept", accept_main, r);
    return r;
}

const char *jet_test_relay_url(const JetTestRelay *r)
{
    return r->url;
}

guint jet_test_relay_cut(JetTestRelay *r)
{
    g_mutex_lock(&r->lock);
    guint n = 0;
    for (guint i = 0; i < r->pairs->len; i++) {
        Pair *p = g_ptr_array_index(r->pairs, i);
        n += g_atomic_int_get(&p->alive) > 0;
        pair_free(p);
    }
    g_ptr_array_set_size(r->pairs, 0);
    g_mutex_unlock(&r->lock);
    return n;
}

void jet_test_relay_block(JetTestRelay *r, gboolean blocked)
{
    g_atomic_int_set(&r->blocked, blocked ? 1 : 0);
    if (blocked)
        jet_test_relay_cut(r);
}

void jet_test_relay_cut_on(JetTestRelay *r, const char *needle, guint times)
{
    g_assert_true(needle != NULL && *needle != '\0' && strlen(needle) < NEEDLE_MAX);
    g_mutex_lock(&r->needle_lock);
    g_free(r->needle);
    r->needle = g_strdup(needle);
    r->cuts_left = times;
    g_mutex_unlock(&r->needle_lock);
}

guint jet_test_relay_cuts_made(JetTestRelay *r)
{
    g_mutex_lock(&r->needle_lock);
    guint n = r->cuts_made;
    g_mutex_unlock(&r->needle_lock);
    return n;
}

void jet_test_relay_stop(JetTestRelay *r)
{
    if (r == NULL)
        return;
    g_atomic_int_set(&r->stopping, 1);
    g_thread_join(r->acceptor);
    jet_test_relay_cut(r);
    close(r->listen_fd);
    g_ptr_array_free(r->pairs, TRUE);
    g_mutex_clear(&r->lock);
    g_mutex_clear(&r->needle_lock);
    g_free(r->needle);
    g_free(r->url);
    g_free(r);
}
