#include "sock_cork.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct JetSockCork {
    GMutex lock;
    int fd;                       /* -1: not found (bursts go uncorked) */
    guint generation;             /* of the connection when fd was found */
    gboolean looked;              /* fd is the answer for generation */
    struct sockaddr_storage local;   /* fd's local address when found */
    socklen_t local_len;
    guint open;                   /* bursts open */
    gboolean corked;
};

JetSockCork *jet_sock_cork_new(void)
{
    JetSockCork *k = g_new0(JetSockCork, 1);
    g_mutex_init(&k->lock);
    k->fd = -1;
    return k;
}

void jet_sock_cork_free(JetSockCork *k)
{
    if (k == NULL)
        return;
    g_mutex_clear(&k->lock);
    g_free(k);
}

/* The local address of fd as text and port; FALSE if fd is not a
 * connected TCP socket over IPv4 or IPv6. */
static gboolean local_of(int fd, struct sockaddr_storage *ss, socklen_t *len, char *ip, gsize ip_size, int *port)
{
    *len = sizeof *ss;
    int type = 0;
    socklen_t tlen = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM)
        return FALSE;
    if (getsockname(fd, (struct sockaddr *)ss, len) != 0)
        return FALSE;
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &plen) != 0)
        return FALSE;   /* a listener, or not connected */
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        *port = ntohs(a->sin_port);
        return inet_ntop(AF_INET, &a->sin_addr, ip, (socklen_t)ip_size) != NULL;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        *port = ntohs(a->sin6_port);
        return inet_ntop(AF_INET6, &a->sin6_addr, ip, (socklen_t)ip_size) != NULL;
    }
    return FALSE;
}

/* Scans the process's descriptors for the one socket whose local address
 * is the connection's; -1 when none or more than one matches. */
static int find_fd(natsConnection *nc, struct sockaddr_storage *ss, socklen_t *ss_len)
{
    char *want_ip = NULL;
    int want_port = 0;
    if (natsConnection_GetLocalIPAndPort(nc, &want_ip, &want_port) != NATS_OK || want_ip == NULL)
        return -1;
    int found = -1, matches = 0;
    GDir *dir = g_dir_open("/proc/self/fd", 0, NULL);
    const char *name;
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
        char *end = NULL;
        long fd = strtol(name, &end, 10);
        if (end == name || *end != '\0' || fd < 0 || fd > G_MAXINT)
            continue;
        struct sockaddr_storage s;
        socklen_t slen;
        char ip[INET6_ADDRSTRLEN];
        int port = 0;
        if (!local_of((int)fd, &s, &slen, ip, sizeof ip, &port) || port != want_port || strcmp(ip, want_ip) != 0)
            continue;
        matches++;
        found = (int)fd;
        *ss = s;
        *ss_len = slen;
    }
    if (dir != NULL)
        g_dir_close(dir);
    free(want_ip);
    return matches == 1 ? found : -1;
}

int jet_sock_find(natsConnection *nc)
{
    struct sockaddr_storage ss;
    socklen_t len;
    return find_fd(nc, &ss, &len);
}

/* Still the socket found?  A reconnect closes it, and its number may be
 * given to another socket since. */
static gboolean still_ours(JetSockCork *k)
{
    struct sockaddr_storage s;
    socklen_t len = sizeof s;
    return getsockname(k->fd, (struct sockaddr *)&s, &len) == 0 && len == k->local_len &&
           memcmp(&s, &k->local, len) == 0;
}

static void set_cork(JetSockCork *k, int on)
{
    if (setsockopt(k->fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on) == 0)
        k->corked = on != 0;
}

void jet_sock_cork_begin(JetSockCork *k, natsConnection *nc, guint generation)
{
    g_mutex_lock(&k->lock);
    if (k->open++ == 0) {
        if (!k->looked || k->generation != generation || (k->fd >= 0 && !still_ours(k))) {
            k->fd = find_fd(nc, &k->local, &k->local_len);
            k->generation = generation;
            k->looked = TRUE;
        }
        if (k->fd >= 0)
            set_cork(k, 1);
    }
    g_mutex_unlock(&k->lock);
}

void jet_sock_cork_end(JetSockCork *k)
{
    g_mutex_lock(&k->lock);
    g_assert(k->open > 0);
    if (--k->open == 0 && k->corked)
        set_cork(k, 0);
    g_mutex_unlock(&k->lock);
}
