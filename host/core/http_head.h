/* The head of an HTTP/1.x request as the ops listener reads it: bytes in,
 * one decision out, no I/O (docs/operations.md, "Limits").  Nothing past
 * the head is ever read: a request that announces a body is refused from
 * its head alone. */
#ifndef JET_HTTP_HEAD_H
#define JET_HTTP_HEAD_H

#include <glib.h>

/* The request line, its line end included: past it, 414. */
#define JET_HTTP_LINE_MAX 4096
/* The whole head, the empty line that ends it included: past it, 431.
 * It is also all a connection ever buffers of what it is sent. */
#define JET_HTTP_HEAD_MAX 8192
/* Header fields in one head: past it, 431. */
#define JET_HTTP_FIELDS_MAX 64

/* jet_http_head_read's answer for a request to route. */
#define JET_HTTP_ROUTE 200

typedef struct {
    gsize head_len;          /* bytes of the head: the next request starts there */
    gboolean head;           /* HEAD, not GET: answer without the body */
    gsize path_off, path_len;  /* the path in the buffer, the query left out */
    gboolean keep_alive;     /* the client keeps the connection open after the answer */
} JetHttpHead;

/* Reads the head at the start of buf (len bytes).  0: not whole yet, read
 * more.  JET_HTTP_ROUTE: a GET or a HEAD of an origin-form target without
 * a body, *h filled.  Anything else is the status to refuse it with, and
 * the connection is closed after it: 400 (malformed, a NUL byte, no Host on
 * HTTP/1.1), 405 (a method other than GET and HEAD, OPTIONS * included),
 * 413 (a GET or HEAD announcing a body), 414, 431, 505 (not HTTP/1.0 or 1.1,
 * the HTTP/2 preface). */
guint jet_http_head_read(const char *buf, gsize len, JetHttpHead *h);

/* The reason phrase of the statuses the listener sends. */
const char *jet_http_reason(guint status);

#endif
