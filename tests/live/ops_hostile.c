/* The ops listener (host/io/http_listen.c) of a `jethost run` under careless
 * and hostile clients: descriptors, memory and connections come back to
 * where they were, refusals come from the head alone with the statuses of
 * docs/operations.md, and a real Prometheus scraping throughout sees the
 * target up. */
#include "harness.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_BYTES (200 * 1024 * 1024)
#define IDLE_CONNS 2000

typedef struct {
    JetTestServer *srv;
    GSubprocess *proc;
    char *errlog;
    int port;
    int pid;
    guint idle_ms;
} Host;

/* 2,000 sockets of our own and more: the soft limit up to the hard one. */
static void raise_nofile(void)
{
    struct rlimit rl;
    g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
    rl.rlim_cur = rl.rlim_max;
    g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &rl), ==, 0);
    g_assert_cmpuint(rl.rlim_cur, >=, IDLE_CONNS + 200);
}

static guint count_fds(int pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/fd", pid);
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    g_assert_nonnull(d);
    guint n = 0;
    while (g_dir_read_name(d) != NULL)
        n++;
    return n;
}

static guint rss_kib(int pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
    g_autofree char *text = jet_test_read_text(path);
    const char *p = strstr(text, "\nVmRSS:");
    g_assert_nonnull(p);
    return (guint)g_ascii_strtoull(p + strlen("\nVmRSS:"), NULL, 10);
}

/* A port a process logs after the text "needle". */
typedef struct {
    const char *path;
    const char *needle;
    int port;
} PortWait;

static gboolean port_logged(gpointer data)
{
    PortWait *w = data;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(w->path, &text, NULL, NULL))
        return FALSE;
    const char *p = strstr(text, w->needle);
    if (p == NULL)
        return FALSE;
    w->port = atoi(p + strlen(w->needle));
    return TRUE;
}

/* nofile: the host's RLIMIT_NOFILE (0: this process's). */
static void host_start_nofile(Host *h, const char *name, guint idle_ms, rlim_t nofile)
{
    h->srv = jet_test_server_start();
    h->idle_ms = idle_ms;
    g_autofree char *plugin = jet_test_plugin_copy("fx_ok");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), name, NULL);
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\nmetrics_listen = 127.0.0.1:0\n"
                                            "metrics_idle_timeout = %ums\n\n"
                                            "[binding b]\nplugin = %s\nstream = S\nconsumer = c\nsubjects = s.>\n",
                                            jet_test_server_url(h->srv), state, idle_ms, plugin);
    struct rlimit was;
    g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &was), ==, 0);
    struct rlimit low = { nofile != 0 ? nofile : was.rlim_cur, was.rlim_max };
    g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &low), ==, 0);   /* inherited by the host */
    h->proc = jet_test_jethost_spawn_config(name, text, &h->errlog);
    g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &was), ==, 0);
    h->pid = atoi(g_subprocess_get_identifier(h->proc));
    PortWait pw = { h->errlog, "and /readyz at http://127.0.0.1:", 0 };
    g_assert_true(jet_test_wait_until(port_logged, &pw, 20000));
    h->port = pw.port;
}

static void host_start(Host *h, const char *name, guint idle_ms)
{
    host_start_nofile(h, name, idle_ms, 0);
}

static void host_stop(Host *h)
{
    jet_test_jethost_stop(h->proc, h->errlog);
    g_object_unref(h->proc);
    g_free(h->errlog);
    jet_test_server_free(h->srv);
}

static int tcp_open(int port, gboolean blocking)
{
    int fd = socket(AF_INET, SOCK_STREAM | (blocking ? 0 : SOCK_NONBLOCK), 0);
    g_assert_cmpint(fd, >=, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((guint16)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    g_assert_true(rc == 0 || (!blocking && errno == EINPROGRESS));
    return fd;
}

static void send_all(int fd, const char *p, gsize n)
{
    while (n > 0) {
        gssize w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        g_assert_cmpint(w, >, 0);
        p += w;
        n -= (gsize)w;
    }
}

/* One byte or the end, within ms: 1, 0 at the end, -1 on a timeout. */
static int read_some(int fd, char *buf, gsize n, int ms, gssize *got)
{
    struct pollfd p = { fd, POLLIN, 0 };
    int rc = poll(&p, 1, ms);
    if (rc == 0)
        return -1;
    *got = recv(fd, buf, n, 0);
    if (*got < 0 && errno == ECONNRESET)
        *got = 0;
    g_assert_cmpint(*got, >=, 0);
    return *got > 0 ? 1 : 0;
}

typedef struct {
    guint status;
    char *head;    /* the status line and fields */
    char *body;
} Answer;

static void answer_clear(Answer *a)
{
    g_free(a->head);
    g_free(a->body);
    memset(a, 0, sizeof *a);
}

/* Reads one answer (no body for a HEAD) through the buffer in, which
 * keeps what follows it (pipelined answers); FALSE when the connection
 * ended or nothing came within 10 s first. */
static gboolean read_answer_in(int fd, gboolean head_only, Answer *a, GString *in)
{
    for (;;) {
        const char *end = strstr(in->str, "\r\n\r\n");
        if (end != NULL) {
            gsize hn = (gsize)(end - in->str);
            g_autofree char *head = g_strndup(in->str, hn);
            const char *cl = strstr(head, "\r\nContent-Length: ");
            g_assert_nonnull(cl);
            gsize bn = head_only ? 0 : g_ascii_strtoull(cl + 18, NULL, 10);
            if (in->len >= hn + 4 + bn) {
                a->status = (guint)g_ascii_strtoull(in->str + strlen("HTTP/1.1 "), NULL, 10);
                a->head = g_steal_pointer(&head);
                a->body = g_strndup(in->str + hn + 4, bn);
                g_string_erase(in, 0, (gssize)(hn + 4 + bn));
                return TRUE;
            }
        }
        char buf[16384];
        gssize got = 0;
        if (read_some(fd, buf, sizeof buf, 10000, &got) <= 0)
            return FALSE;
        g_string_append_len(in, buf, got);
    }
}

static gboolean read_answer(int fd, gboolean head_only, Answer *a)
{
    g_autoptr(GString) in = g_string_new(NULL);
    return read_answer_in(fd, head_only, a, in);
}

/* The server ends the connection within ms. */
static gboolean ends_within(int fd, int ms)
{
    char buf[4096];
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        gssize got = 0;
        int left = (int)((until - g_get_monotonic_time()) / 1000);
        int rc = read_some(fd, buf, sizeof buf, MAX(left, 0), &got);
        if (rc == 0)
            return TRUE;
        if (rc < 0)
            return FALSE;
    }
}

static guint get(int port, const char *path, char **body)
{
    int fd = tcp_open(port, TRUE);
    g_autofree char *req = g_strdup_printf("GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    send_all(fd, req, strlen(req));
    Answer a = { 0 };
    g_assert_true(read_answer(fd, FALSE, &a));
    close(fd);
    if (body != NULL)
        *body = g_steal_pointer(&a.body);
    guint status = a.status;
    answer_clear(&a);
    return status;
}

typedef struct {
    int pid;
    guint want;
} FdWait;

static gboolean fds_at_most(gpointer data)
{
    FdWait *w = data;
    return count_fds(w->pid) <= w->want;
}

/* The descriptors come back to the baseline, without waiting for the idle
 * timeout: a connection the client closes is closed at once. */
static void fds_back(Host *h, guint baseline, guint slack, const char *what)
{
    FdWait fw = { h->pid, baseline + slack };
    guint wait_ms = MIN(h->idle_ms / 2, 10000);
    if (!jet_test_wait_until(fds_at_most, &fw, wait_ms))
        g_error("%s: the host has %u descriptors open, %u before (waited %u ms)", what, count_fds(h->pid),
                baseline, wait_ms);
    g_test_message("%s: %u descriptors, %u before", what, count_fds(h->pid), baseline);
}

/* 1,000 keep-alive connections, each used twice and closed by the client,
 * 50 open at a time (under the cap of open connections). */
static void keepalive_phase(Host *h, guint baseline, guint slack)
{
    const char *req = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    for (int round = 0; round < 20; round++) {
        int fds[50];
        for (int i = 0; i < 50; i++)
            fds[i] = tcp_open(h->port, TRUE);
        for (int use = 0; use < 2; use++) {
            for (int i = 0; i < 50; i++)
                send_all(fds[i], req, strlen(req));
            for (int i = 0; i < 50; i++) {
                Answer a = { 0 };
                g_assert_true(read_answer(fds[i], FALSE, &a));
                g_assert_cmpuint(a.status, ==, 200);
                g_assert_cmpstr(a.body, ==, "ok\n");
                g_assert_null(strstr(a.head, "Connection: close"));
                answer_clear(&a);
            }
        }
        for (int i = 0; i < 50; i++)
            close(fds[i]);
    }
    fds_back(h, baseline, slack, "1,000 keep-alive connections closed by the client");
}

/* A body of 200 MiB announced and streamed while the answer has not come:
 * refused from the head, next to nothing of it kept.  The first `blind`
 * bytes are sent without looking for the answer, as a client does that
 * writes its body before it reads (a loaded machine's test client too):
 * the host must not reset the connection meanwhile, which would lose the
 * answer. */
static void body_phase_blind(Host *h, const char *head, guint want, gsize blind)
{
    guint before = rss_kib(h->pid);
    int fd = tcp_open(h->port, FALSE);
    struct pollfd p = { fd, POLLOUT, 0 };
    g_assert_cmpint(poll(&p, 1, 10000), ==, 1);
    send_all(fd, head, strlen(head));
    static char chunk[65536];
    memset(chunk, 'x', sizeof chunk);
    gsize sent = 0;
    while (sent < blind) {
        p.events = POLLOUT;
        g_assert_cmpint(poll(&p, 1, 10000), ==, 1);
        gssize w = send(fd, chunk, MIN(sizeof chunk, blind - sent), MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN)
            continue;
        if (w < 0)
            g_error("%.*s: the host ended the connection after %" G_GSIZE_FORMAT " bytes of the body: %s",
                    (int)MIN(strcspn(head, "\r"), 60), head, sent, g_strerror(errno));
        sent += (gsize)w;
    }
    gboolean answered = FALSE;
    while (sent < BODY_BYTES) {
        p.events = POLLIN | POLLOUT;
        g_assert_cmpint(poll(&p, 1, 10000), ==, 1);
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            answered = TRUE;
            break;   /* the answer (or the end): the test stops sending */
        }
        gssize w = send(fd, chunk, MIN(sizeof chunk, BODY_BYTES - sent), MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN)
            continue;
        if (w < 0)
            break;
        sent += (gsize)w;
    }
    g_assert_true(answered);
    Answer a = { 0 };
    g_assert_true(read_answer(fd, FALSE, &a));
    g_assert_cmpuint(a.status, ==, want);
    g_assert_nonnull(strstr(a.head, "\r\nConnection: close"));
    g_assert_true(ends_within(fd, 10000));
    close(fd);
    guint after = rss_kib(h->pid);
    g_test_message("%.*s: %u after %" G_GSIZE_FORMAT " bytes sent; RSS %u KiB -> %u KiB",
                   (int)MIN(strcspn(head, "\r"), 60), head, a.status, sent, before, after);
    g_assert_cmpuint(after, <, before + 1024);
    answer_clear(&a);
}

static void body_phase(Host *h, const char *head, guint want)
{
    body_phase_blind(h, head, want, 0);
}

static void bodies_phase(Host *h)
{
    g_autofree char *cl = g_strdup_printf("Content-Length: %d\r\n\r\n", BODY_BYTES);
    g_autofree char *post = g_strconcat("POST /metrics HTTP/1.1\r\nHost: t\r\n", cl, NULL);
    g_autofree char *getb = g_strconcat("GET /metrics HTTP/1.1\r\nHost: t\r\n", cl, NULL);
    body_phase(h, post, 405);
    body_phase(h, getb, 413);
    body_phase(h, "PUT /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", 405);
    body_phase(h, "GET /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", 413);
    body_phase_blind(h, post, 405, 8 * 1024 * 1024);
}

/* 2,000 connections that send nothing, or half a head, and never close:
 * a probe is answered within 1 s all the same, and every one of them is
 * closed by the host by the idle timeout (the oldest sooner, for newer
 * ones past the cap). */
static void idle_phase(Host *h, guint baseline, guint slack)
{
    int *fds = g_new(int, IDLE_CONNS);
    for (int i = 0; i < IDLE_CONNS; i++)
        fds[i] = tcp_open(h->port, FALSE);
    gint64 t_open = g_get_monotonic_time();
    for (int i = 0; i < IDLE_CONNS; i += 2) {
        struct pollfd p = { fds[i], POLLOUT, 0 };
        if (poll(&p, 1, 5000) == 1 && !(p.revents & (POLLERR | POLLHUP)))
            (void)!send(fds[i], "GET /healthz HTTP/1.1\r\nHo", 25, MSG_NOSIGNAL);
    }
    gint64 t0 = g_get_monotonic_time();
    g_autofree char *body = NULL;
    g_assert_cmpuint(get(h->port, "/healthz", &body), ==, 200);
    double took = (double)(g_get_monotonic_time() - t0) / 1e6;
    g_test_message("/healthz behind %d idle connections: %.3f s", IDLE_CONNS, took);
    g_assert_cmpfloat(took, <, 1.0);

    /* Every one ended by the host: read or reset, never left open. */
    guint ended = 0, early = 0;
    gboolean *done = g_new0(gboolean, IDLE_CONNS);
    struct pollfd *pf = g_new(struct pollfd, IDLE_CONNS);
    gint64 until = t_open + (gint64)(h->idle_ms + 5000) * 1000;
    while (ended < IDLE_CONNS && g_get_monotonic_time() < until) {
        for (int i = 0; i < IDLE_CONNS; i++)
            pf[i] = (struct pollfd){ done[i] ? -1 : fds[i], POLLIN, 0 };
        if (poll(pf, IDLE_CONNS, 200) <= 0)
            continue;
        for (int i = 0; i < IDLE_CONNS; i++) {
            if (done[i] || pf[i].revents == 0)
                continue;
            char buf[512];
            gssize got = recv(fds[i], buf, sizeof buf, 0);
            if (got > 0)
                g_error("an idle connection was sent %.*s", (int)got, buf);
            done[i] = TRUE;
            ended++;
            early += g_get_monotonic_time() < t_open + (gint64)h->idle_ms * 1000;
        }
    }
    g_test_message("%u of %d idle connections ended by the host, %u before the idle timeout (the cap)", ended,
                   IDLE_CONNS, early);
    g_assert_cmpuint(ended, ==, IDLE_CONNS);
    for (int i = 0; i < IDLE_CONNS; i++)
        close(fds[i]);
    g_free(fds);
    g_free(done);
    g_free(pf);
    fds_back(h, baseline, slack, "2,000 idle connections");
}

static guint host_baseline(Host *h)
{
    g_assert_cmpuint(get(h->port, "/healthz", NULL), ==, 200);
    return count_fds(h->pid);
}

/* A phase twice on one host: nothing left from the first round, and the
 * memory back to where it was. */
static void twice(const char *name, guint idle_ms, void (*phase)(Host *, guint, guint))
{
    raise_nofile();
    Host h;
    host_start(&h, name, idle_ms);
    guint base = host_baseline(&h), rss0 = rss_kib(h.pid);
    phase(&h, base, 0);
    phase(&h, base, 0);
    g_test_message("RSS %u KiB -> %u KiB", rss0, rss_kib(h.pid));
    g_assert_cmpuint(rss_kib(h.pid), <, rss0 + 1024);
    host_stop(&h);
}

static void test_keepalive(void)
{
    twice("keepalive", 60000, keepalive_phase);
}

static void test_idle(void)
{
    twice("idle", 2000, idle_phase);
}

static void test_bodies(void)
{
    Host h;
    host_start(&h, "bodies", 60000);
    (void)host_baseline(&h);
    bodies_phase(&h);
    host_stop(&h);
}

/* The host at `ulimit -n 128`: 150 requests on connections of their own,
 * then 200 connections held open at once (the cap there is 32), and every
 * endpoint still answers; the descriptors come back. */
static void test_low_nofile(void)
{
    raise_nofile();
    Host h;
    host_start_nofile(&h, "low-nofile", 60000, 128);
    g_autofree char *limits_path = g_strdup_printf("/proc/%d/limits", h.pid);
    g_autofree char *limits = jet_test_read_text(limits_path);
    g_assert_true(g_regex_match_simple("^Max open files +128 ", limits, G_REGEX_MULTILINE, 0));
    guint base = host_baseline(&h);
    for (int i = 0; i < 150; i++)
        g_assert_cmpuint(get(h.port, "/healthz", NULL), ==, 200);
    fds_back(&h, base, 0, "150 requests at ulimit -n 128");
    int fds[200];
    for (int i = 0; i < 200; i++)
        fds[i] = tcp_open(h.port, TRUE);
    gint64 t0 = g_get_monotonic_time();
    static const char *const paths[] = { "/healthz", "/metrics", "/readyz" };
    for (gsize i = 0; i < G_N_ELEMENTS(paths); i++)
        g_assert_cmpuint(get(h.port, paths[i], NULL), ==, 200);
    double took = (double)(g_get_monotonic_time() - t0) / 1e6;
    g_test_message("three endpoints behind 200 open connections at ulimit -n 128: %.3f s", took);
    g_assert_cmpfloat(took, <, 1.0);
    for (int i = 0; i < 200; i++)
        close(fds[i]);
    fds_back(&h, base, 0, "200 connections at ulimit -n 128");
    host_stop(&h);
}

/* Each refused from its head with its status, the connection then closed. */
static void test_refusals(void)
{
    Host h;
    host_start(&h, "refusals", 60000);
    GString *long_line = g_string_new("GET /");
    for (int i = 0; i < 5000; i++)
        g_string_append_c(long_line, 'a');
    g_string_append(long_line, " HTTP/1.1\r\nHost: t\r\n\r\n");
    GString *big_field = g_string_new("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ");
    for (int i = 0; i < 9000; i++)
        g_string_append_c(big_field, 'a');
    g_string_append(big_field, "\r\n\r\n");
    GString *many = g_string_new("GET /healthz HTTP/1.1\r\nHost: t\r\n");
    for (int i = 0; i < 100; i++)
        g_string_append_printf(many, "X-%d: 1\r\n", i);
    g_string_append(many, "\r\n");
    static const char nul[] = "GET /heal\0thz HTTP/1.1\r\nHost: t\r\n\r\n";
    const struct {
        const char *req;
        gsize len;             /* 0: strlen */
        guint status;
        gboolean closed;
    } cases[] = {
        { "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n", 0, 405, TRUE },
        { "DELETE /metrics HTTP/1.1\r\nHost: t\r\n\r\n", 0, 405, TRUE },
        { "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 0, 405, TRUE },
        { "GET /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 0, 413, TRUE },
        { long_line->str, 0, 414, TRUE },
        { big_field->str, 0, 431, TRUE },
        { many->str, 0, 431, TRUE },
        { "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0, 505, TRUE },
        { "GET /healthz HTTP/1.1\r\n\r\n", 0, 400, TRUE },
        { nul, sizeof nul - 1, 400, TRUE },
        { "GET /healthz HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n", 0, 400, TRUE },
        { "GET http://t/healthz HTTP/1.1\r\nHost: t\r\n\r\n", 0, 400, TRUE },
        { "GET /../../etc/passwd HTTP/1.1\r\nHost: t\r\n\r\n", 0, 404, FALSE },
        { "GET /healthz?x=1 HTTP/1.1\r\nHost: t\r\n\r\n", 0, 200, FALSE },
        { "GET /healthz HTTP/1.0\r\n\r\n", 0, 200, TRUE },
        { "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 0, 200, TRUE },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        int fd = tcp_open(h.port, TRUE);
        send_all(fd, cases[i].req, cases[i].len != 0 ? cases[i].len : strlen(cases[i].req));
        Answer a = { 0 };
        g_assert_true(read_answer(fd, FALSE, &a));
        g_test_message("%.*s -> %.*s", (int)MIN(strcspn(cases[i].req, "\r"), 60), cases[i].req,
                       (int)strcspn(a.head, "\r"), a.head);
        g_assert_cmpuint(a.status, ==, cases[i].status);
        if (a.status == 405)
            g_assert_nonnull(strstr(a.head, "\r\nAllow: GET, HEAD"));
        g_assert_true(ends_within(fd, cases[i].closed ? 5000 : 200) == cases[i].closed);
        close(fd);
        answer_clear(&a);
    }
    /* A 1 MiB field, sent while the answer has not come. */
    g_autofree char *mib = g_strnfill(1024 * 1024, 'a');
    g_autofree char *huge = g_strconcat("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ", mib, NULL);
    body_phase(&h, huge, 431);

    /* HEAD: the fields of the GET, no body; two requests in one write. */
    int fd = tcp_open(h.port, TRUE);
    const char *two = "HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
    send_all(fd, two, strlen(two));
    Answer a = { 0 };
    g_autoptr(GString) in = g_string_new(NULL);
    g_assert_true(read_answer_in(fd, TRUE, &a, in));
    g_assert_cmpuint(a.status, ==, 200);
    g_assert_nonnull(strstr(a.head, "Content-Type: text/plain; version=0.0.4"));
    answer_clear(&a);
    g_assert_true(read_answer_in(fd, FALSE, &a, in));
    g_assert_cmpuint(a.status, ==, 200);
    g_assert_cmpstr(a.body, ==, "ok\n");
    answer_clear(&a);
    close(fd);

    /* HEAD of /healthz and /readyz: the GET's status and length, no body
     * (the GET pipelined after each must come right after its fields). */
    static const char *const probes[] = { "/healthz", "/readyz" };
    for (gsize i = 0; i < G_N_ELEMENTS(probes); i++) {
        fd = tcp_open(h.port, TRUE);
        g_autofree char *req = g_strdup_printf("HEAD %s HTTP/1.1\r\nHost: t\r\n\r\nGET %s HTTP/1.1\r\nHost: t\r\n\r\n",
                                               probes[i], probes[i]);
        send_all(fd, req, strlen(req));
        g_string_truncate(in, 0);
        Answer ha = { 0 }, ga = { 0 };
        g_assert_true(read_answer_in(fd, TRUE, &ha, in));
        g_assert_true(read_answer_in(fd, FALSE, &ga, in));
        g_test_message("HEAD %s -> %.*s; GET -> %u, %zu bytes", probes[i], (int)strcspn(ha.head, "\r"), ha.head,
                       ga.status, strlen(ga.body));
        g_assert_cmpuint(ha.status, ==, ga.status);
        g_assert_cmpuint(ha.status, !=, 405);
        g_assert_cmpuint(strlen(ga.body), >, 0);
        /* /readyz's 503 names ages that move between the two answers:
         * there, a length that is not 0 is what can be checked. */
        const char *cl = strstr(ha.head, "\r\nContent-Length: ");
        g_assert_nonnull(cl);
        guint64 head_len = g_ascii_strtoull(cl + strlen("\r\nContent-Length: "), NULL, 10);
        if (ga.status == 200)
            g_assert_cmpuint(head_len, ==, strlen(ga.body));
        else
            g_assert_cmpuint(head_len, >, 0);
        g_assert_true(g_str_has_prefix(ga.head, "HTTP/1.1 "));
        answer_clear(&ha);
        answer_clear(&ga);
        close(fd);
    }
    g_string_free(long_line, TRUE);
    g_string_free(big_field, TRUE);
    g_string_free(many, TRUE);
    host_stop(&h);
}

typedef struct {
    GSubprocess *proc;
    char *log;
    int port;
} Prometheus;

/* Prometheus scraping the host every second. */
static void prometheus_start(Prometheus *p, int target)
{
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "prom", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *yml = g_strdup_printf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                           "scrape_configs:\n  - job_name: ops\n    static_configs:\n"
                                           "      - targets: ['127.0.0.1:%d']\n", target);
    g_autofree char *conf = g_build_filename(dir, "prometheus.yml", NULL);
    g_assert_true(g_file_set_contents(conf, yml, -1, NULL));
    p->log = g_build_filename(dir, "log", NULL);
    g_autofree char *a_conf = g_strconcat("--config.file=", conf, NULL);
    g_autofree char *a_data = g_strconcat("--storage.tsdb.path=", dir, "/data", NULL);
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
    g_subprocess_launcher_set_stderr_file_path(l, p->log);
    g_autoptr(GError) err = NULL;
    p->proc = g_subprocess_launcher_spawn(l, &err, "prometheus", a_conf, a_data,
                                          "--web.listen-address=127.0.0.1:0", NULL);
    g_assert_no_error(err);
    g_autofree char *address = jet_test_prometheus_address(p->log, 20000);
    g_assert_nonnull(address);
    g_assert_true(g_str_has_prefix(address, "127.0.0.1:"));
    p->port = atoi(address + strlen("127.0.0.1:"));
}

/* The value of an instant query's one sample, -1 without one (or before
 * Prometheus answers queries). */
static double prometheus_query(Prometheus *p, const char *query)
{
    g_autofree char *esc = g_uri_escape_string(query, NULL, FALSE);
    g_autofree char *path = g_strconcat("/api/v1/query?query=", esc, NULL);
    g_autofree char *body = NULL;
    if (get(p->port, path, &body) != 200)
        return -1;   /* 503 while it starts */
    g_autoptr(JsonParser) jp = json_parser_new();
    g_assert_true(json_parser_load_from_data(jp, body, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(jp));
    JsonArray *res = json_object_get_array_member(json_object_get_object_member(o, "data"), "result");
    if (json_array_get_length(res) == 0)
        return -1;
    JsonArray *v = json_object_get_array_member(json_array_get_object_element(res, 0), "value");
    return g_ascii_strtod(json_array_get_string_element(v, 1), NULL);
}

static gboolean prometheus_up(gpointer data)
{
    return prometheus_query(data, "up") == 1;
}

/* Every phase above while Prometheus scrapes every second: every scrape
 * in that time found the target up. */
static void test_prometheus(void)
{
    raise_nofile();
    Host h;
    host_start(&h, "prom-host", 2000);
    Prometheus p = { 0 };
    prometheus_start(&p, h.port);
    g_assert_true(jet_test_wait_until(prometheus_up, &p, 30000));
    guint base = host_baseline(&h);
    gint64 t0 = g_get_monotonic_time();
    keepalive_phase(&h, base, 1);
    bodies_phase(&h);
    idle_phase(&h, base, 1);
    g_usleep(2 * G_USEC_PER_SEC);   /* scrapes after the last phase too */
    guint secs = (guint)((g_get_monotonic_time() - t0) / G_USEC_PER_SEC);
    g_autofree char *min_q = g_strdup_printf("min_over_time(up[%us])", secs);
    g_autofree char *count_q = g_strdup_printf("count_over_time(up[%us])", secs);
    double min_up = prometheus_query(&p, min_q), scrapes = prometheus_query(&p, count_q);
    g_test_message("over %u s of hostile clients: %g scrapes, min(up) = %g", secs, scrapes, min_up);
    g_assert_cmpfloat(min_up, ==, 1);
    g_assert_cmpfloat(scrapes, >=, secs / 2);
    g_subprocess_force_exit(p.proc);
    g_assert_true(g_subprocess_wait(p.proc, NULL, NULL));
    g_object_unref(p.proc);
    g_free(p.log);
    host_stop(&h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ops/keepalive", test_keepalive);
    g_test_add_func("/ops/bodies", test_bodies);
    g_test_add_func("/ops/idle", test_idle);
    g_test_add_func("/ops/refusals", test_refusals);
    g_test_add_func("/ops/low-nofile", test_low_nofile);
    g_test_add_func("/ops/prometheus", test_prometheus);
    return g_test_run();
}
