/* host/core/http_head.c: the ops listener's decision on a request head,
 * at the edges of each cap. */
#include "http_head.h"

#include <string.h>

static guint read_head(const char *text, gsize len, JetHttpHead *h)
{
    return jet_http_head_read(text, len != 0 ? len : strlen(text), h);
}

static void test_route(void)
{
    JetHttpHead h;
    const char *two = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\n";
    g_assert_cmpuint(read_head(two, 0, &h), ==, JET_HTTP_ROUTE);
    g_assert_cmpuint(h.head_len, ==, strlen("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"));
    g_assert_cmpuint(h.path_len, ==, strlen("/metrics"));
    g_assert_cmpint(memcmp(two + h.path_off, "/metrics", h.path_len), ==, 0);
    g_assert_true(h.keep_alive);
    g_assert_false(h.head);

    g_assert_cmpuint(read_head("HEAD / HTTP/1.1\nHost: a\nConnection: Keep-Alive, Close\n\n", 0, &h), ==,
                     JET_HTTP_ROUTE);
    g_assert_true(h.head);
    g_assert_false(h.keep_alive);
    g_assert_cmpuint(read_head("GET / HTTP/1.0\r\n\r\n", 0, &h), ==, JET_HTTP_ROUTE);
    g_assert_false(h.keep_alive);
    g_assert_cmpuint(read_head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, &h), ==, JET_HTTP_ROUTE);
    g_assert_true(h.keep_alive);
    g_assert_cmpuint(read_head("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 000\r\n\r\n", 0, &h), ==,
                     JET_HTTP_ROUTE);
}

static void test_refused(void)
{
    static const struct {
        const char *text;
        guint want;
    } cases[] = {
        { "", 0 },
        { "GET / HTTP/1.1\r\nHost: a\r\n", 0 },
        { "GET / HTTP/1.1\r\nHost: a\r\n\r", 0 },
        { "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 405 },
        { "POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n", 405 },
        { "get / HTTP/1.1\r\nHost: a\r\n\r\n", 405 },
        { "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n", 413 },
        { "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 413 },
        { "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nHost: a\r\n x\r\n\r\n", 400 },
        { "GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n", 400 },
        { "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400 },
        { "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400 },
        { "GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400 },
        { "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400 },
        { "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505 },
        { "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505 },
        { "GET / HTTPS/1.1\r\nHost: a\r\n\r\n", 400 },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        JetHttpHead h;
        guint got = read_head(cases[i].text, strlen(cases[i].text), &h);
        if (got != cases[i].want)
            g_error("%s: %u, want %u", cases[i].text, got, cases[i].want);
    }
    JetHttpHead h;
    static const char nul[] = "GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n";
    g_assert_cmpuint(read_head(nul, sizeof nul - 1, &h), ==, 400);
}

/* s fits its cap exactly: it is read; one byte more at insert_at and it
 * is refused with status; cut a byte short of the cap, it is waited for. */
static void cap_edges(GString *s, gsize insert_at, gsize cap, guint status)
{
    JetHttpHead h;
    g_assert_cmpuint(read_head(s->str, s->len, &h), ==, JET_HTTP_ROUTE);
    g_string_insert_c(s, (gssize)insert_at, 'a');
    g_assert_cmpuint(read_head(s->str, s->len, &h), ==, status);
    g_assert_cmpuint(read_head(s->str, cap - 1, &h), ==, 0);
}

static void test_caps(void)
{
    GString *s = g_string_new("GET /");
    while (s->len < JET_HTTP_LINE_MAX - strlen(" HTTP/1.1\r\n"))
        g_string_append_c(s, 'a');
    g_string_append(s, " HTTP/1.1\r\nHost: a\r\n\r\n");
    cap_edges(s, 5, JET_HTTP_LINE_MAX, 414);

    g_string_assign(s, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
    while (s->len < JET_HTTP_HEAD_MAX - 4)
        g_string_append_c(s, 'b');
    g_string_append(s, "\r\n\r\n");
    cap_edges(s, 30, JET_HTTP_HEAD_MAX, 431);

    JetHttpHead h;
    g_string_assign(s, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 1; i < JET_HTTP_FIELDS_MAX; i++)
        g_string_append_printf(s, "X-%d: 1\r\n", i);
    g_string_append(s, "\r\n");
    g_assert_cmpuint(read_head(s->str, s->len, &h), ==, JET_HTTP_ROUTE);
    g_string_insert(s, (gssize)s->len - 2, "X-last: 1\r\n");
    g_assert_cmpuint(read_head(s->str, s->len, &h), ==, 431);
    g_string_free(s, TRUE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/http-head/route", test_route);
    g_test_add_func("/http-head/refused", test_refused);
    g_test_add_func("/http-head/caps", test_caps);
    return g_test_run();
}
