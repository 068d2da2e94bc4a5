#include "http_head.h"

#include <string.h>

/* RFC 9110 tchar: what a method and a field name are made of. */
static gboolean is_tchar(char c)
{
    return g_ascii_isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static gboolean is_token(const char *p, gsize n)
{
    if (n == 0)
        return FALSE;
    for (gsize i = 0; i < n; i++)
        if (!is_tchar(p[i]))
            return FALSE;
    return TRUE;
}

/* The line at p (up to end) without its line end; *next is past it. */
static gsize line_len(const char *p, const char *end, const char **next)
{
    const char *nl = memchr(p, '\n', (gsize)(end - p));
    *next = nl + 1;
    gsize n = (gsize)(nl - p);
    return n > 0 && p[n - 1] == '\r' ? n - 1 : n;
}

/* Whether the comma-separated list v (n bytes) holds the token want. */
static gboolean list_has(const char *v, gsize n, const char *want)
{
    gsize wn = strlen(want);
    const char *end = v + n;
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
            v++;
        const char *e = v;
        while (e < end && *e != ',' && *e != ' ' && *e != '\t')
            e++;
        if ((gsize)(e - v) == wn && g_ascii_strncasecmp(v, want, wn) == 0)
            return TRUE;
        v = e;
    }
    return FALSE;
}

static gboolean name_is(const char *p, gsize n, const char *name)
{
    return n == strlen(name) && g_ascii_strncasecmp(p, name, n) == 0;
}

/* The end of the head (past its empty line) within the first max bytes,
 * or 0. */
static gsize head_end(const char *buf, gsize len)
{
    for (gsize i = 0; i + 1 < len; i++) {
        if (buf[i] != '\n')
            continue;
        if (buf[i + 1] == '\n')
            return i + 2;
        if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

typedef struct {
    guint hosts;
    gboolean body, close, keep_alive;
} Fields;

/* The fields between p and end; a status on a refusal, else 0. */
static guint read_fields(const char *p, const char *end, Fields *f)
{
    guint count = 0;
    while (p < end) {
        const char *next;
        gsize n = line_len(p, end, &next);
        if (n == 0)
            break;   /* the empty line: the head ends */
        if (++count > JET_HTTP_FIELDS_MAX)
            return 431;
        const char *colon = memchr(p, ':', n);
        /* No colon, space before it, or a folded line (obsolete, RFC 9112 5.2). */
        if (colon == NULL || !is_token(p, (gsize)(colon - p)))
            return 400;
        gsize nn = (gsize)(colon - p);
        const char *v = colon + 1, *ve = p + n;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        gsize vn = (gsize)(ve - v);
        if (name_is(p, nn, "host")) {
            f->hosts++;
        } else if (name_is(p, nn, "connection")) {
            f->close |= list_has(v, vn, "close");
            f->keep_alive |= list_has(v, vn, "keep-alive");
        } else if (name_is(p, nn, "transfer-encoding")) {
            f->body = TRUE;
        } else if (name_is(p, nn, "content-length")) {
            if (vn == 0)
                return 400;
            for (gsize i = 0; i < vn; i++)
                if (!g_ascii_isdigit(v[i]))
                    return 400;
            for (gsize i = 0; i < vn; i++)
                f->body |= v[i] != '0';
        }
        p = next;
    }
    return 0;
}

guint jet_http_head_read(const char *buf, gsize len, JetHttpHead *h)
{
    memset(h, 0, sizeof *h);
    const char *nl = memchr(buf, '\n', MIN(len, (gsize)JET_HTTP_LINE_MAX));
    if (nl == NULL)
        return len >= JET_HTTP_LINE_MAX ? 414 : 0;
    gsize end = head_end(buf, MIN(len, (gsize)JET_HTTP_HEAD_MAX));
    if (end == 0)
        return len >= JET_HTTP_HEAD_MAX ? 431 : 0;
    if (memchr(buf, '\0', end) != NULL)
        return 400;

    /* METHOD SP TARGET SP HTTP/x.y */
    const char *fields;
    gsize n = line_len(buf, buf + end, &fields);
    const char *sp1 = memchr(buf, ' ', n);
    const char *sp2 = sp1 != NULL ? memchr(sp1 + 1, ' ', n - (gsize)(sp1 + 1 - buf)) : NULL;
    if (sp2 == NULL || !is_token(buf, (gsize)(sp1 - buf)) || sp2 == sp1 + 1)
        return 400;
    const char *target = sp1 + 1, *version = sp2 + 1;
    gsize tn = (gsize)(sp2 - target), vn = n - (gsize)(version - buf);
    for (gsize i = 0; i < tn; i++)
        if ((guchar)target[i] <= 0x20 || (guchar)target[i] >= 0x7f)
            return 400;
    if (vn != 8 || strncmp(version, "HTTP/", 5) != 0 || !g_ascii_isdigit(version[5]) || version[6] != '.' ||
        !g_ascii_isdigit(version[7]))
        return 400;
    gboolean v11 = strncmp(version, "HTTP/1.1", 8) == 0;
    if (!v11 && strncmp(version, "HTTP/1.0", 8) != 0)
        return 505;

    Fields f = { 0, FALSE, FALSE, FALSE };
    guint refused = read_fields(fields, buf + end, &f);
    if (refused != 0)
        return refused;
    if (v11 && f.hosts != 1)
        return 400;
    gsize mn = (gsize)(sp1 - buf);
    gboolean get = mn == 3 && memcmp(buf, "GET", 3) == 0;
    gboolean head = mn == 4 && memcmp(buf, "HEAD", 4) == 0;
    if (!get && !head)
        return 405;
    if (f.body)
        return 413;
    if (target[0] != '/')
        return 400;
    h->head_len = end;
    h->head = head;
    h->path_off = (gsize)(target - buf);
    const char *q = memchr(target, '?', tn);
    h->path_len = q != NULL ? (gsize)(q - target) : tn;
    h->keep_alive = v11 ? !f.close : f.keep_alive && !f.close;
    return JET_HTTP_ROUTE;
}

const char *jet_http_reason(guint status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}
