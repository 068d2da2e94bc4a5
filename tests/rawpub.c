/* The NATS protocol by hand, for tests: rawpub.h. */
#include "rawpub.h"

#include <gio/gio.h>
#include <string.h>

/* Bounds each read and each wait for an answer: long enough for a loaded
 * machine, short enough that a lost answer fails the test. */
#define RAWPUB_TIMEOUT_S 10

struct JetRawPub {
    GSocketConnection *conn;
    GDataInputStream *in;
    GOutputStream *out;
    char *inbox;      /* this connection's reply subjects are <inbox>.<n> */
    guint next_reply;
};

/* One protocol line from the server, with the payload when it is a MSG or
 * an HMSG (hdr_len bytes of header block, then the data). */
typedef struct {
    char *line;
    char *subject;
    char *payload;
    gsize hdr_len;
    gsize len;
} Frame;

static void frame_clear(Frame *f)
{
    g_free(f->line);
    g_free(f->subject);
    g_free(f->payload);
    memset(f, 0, sizeof *f);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Frame, frame_clear)

static gboolean send_bytes(JetRawPub *p, const void *bytes, gsize len, GError **error)
{
    gsize written = 0;
    return g_output_stream_write_all(p->out, bytes, len, &written, NULL, error);
}

static gboolean send_text(JetRawPub *p, const char *text, GError **error)
{
    return send_bytes(p, text, strlen(text), error);
}

static gboolean parse_size(const char *s, gsize *out, GError **error)
{
    guint64 v = 0;
    if (s == NULL || !g_ascii_string_to_unsigned(s, 10, 0, G_MAXINT32, &v, error))
        return FALSE;
    *out = (gsize)v;
    return TRUE;
}

/* MSG <subject> <sid> [reply] <size> / HMSG <subject> <sid> [reply] <hdr> <size> */
static gboolean read_payload(JetRawPub *p, Frame *f, gboolean with_hdr, GError **error)
{
    g_auto(GStrv) tok = g_strsplit(f->line, " ", -1);
    guint n = g_strv_length(tok);
    guint min = with_hdr ? 5 : 4;
    if (n < min || n > min + 1) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "malformed line from the server: %s", f->line);
        return FALSE;
    }
    f->subject = g_strdup(tok[1]);
    if (with_hdr && !parse_size(tok[n - 2], &f->hdr_len, error))
        return FALSE;
    if (!parse_size(tok[n - 1], &f->len, error))
        return FALSE;
    if (f->hdr_len > f->len) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "header size past the message size: %s", f->line);
        return FALSE;
    }
    f->payload = g_malloc(f->len + 2);
    gsize got = 0;
    if (!g_input_stream_read_all(G_INPUT_STREAM(p->in), f->payload, f->len + 2, &got, NULL, error))
        return FALSE;
    if (got != f->len + 2 || memcmp(f->payload + f->len, "\r\n", 2) != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "truncated message after: %s", f->line);
        return FALSE;
    }
    f->payload[f->len] = '\0';
    return TRUE;
}

/* The next line that is not housekeeping (PING answered; INFO and +OK
 * skipped), with its payload read when it is a message. */
static gboolean read_frame(JetRawPub *p, Frame *f, GError **error)
{
    for (;;) {
        frame_clear(f);
        gsize len = 0;
        GError *e = NULL;
        f->line = g_data_input_stream_read_line(p->in, &len, NULL, &e);
        if (f->line == NULL) {
            if (e != NULL)
                g_propagate_error(error, e);
            else
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED, "the server closed the connection");
            return FALSE;
        }
        if (strcmp(f->line, "PING") == 0) {
            if (!send_text(p, "PONG\r\n", error))
                return FALSE;
            continue;
        }
        if (g_str_has_prefix(f->line, "INFO ") || strcmp(f->line, "+OK") == 0)
            continue;
        if (g_str_has_prefix(f->line, "-ERR")) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "server: %s", f->line);
            return FALSE;
        }
        if (g_str_has_prefix(f->line, "MSG "))
            return read_payload(p, f, FALSE, error);
        if (g_str_has_prefix(f->line, "HMSG "))
            return read_payload(p, f, TRUE, error);
        return TRUE;
    }
}

static gboolean past(gint64 deadline, const char *what, GError **error)
{
    if (g_get_monotonic_time() < deadline)
        return FALSE;
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "no %s within %d s", what, RAWPUB_TIMEOUT_S);
    return TRUE;
}

static gint64 deadline_from_now(void)
{
    return g_get_monotonic_time() + (gint64)RAWPUB_TIMEOUT_S * G_USEC_PER_SEC;
}

/* Messages that arrive meanwhile are late replies: dropped. */
static gboolean ping_pong(JetRawPub *p, GError **error)
{
    if (!send_text(p, "PING\r\n", error))
        return FALSE;
    gint64 deadline = deadline_from_now();
    for (;;) {
        g_auto(Frame) f = { 0 };
        if (!read_frame(p, &f, error))
            return FALSE;
        if (strcmp(f.line, "PONG") == 0)
            return TRUE;
        if (past(deadline, "PONG", error))
            return FALSE;
    }
}

JetRawPub *jet_rawpub_connect(int port, GError **error)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_socket_client_set_timeout(client, RAWPUB_TIMEOUT_S);
    /* A loopback test server: no proxy, and no proxy resolver (GIO's GNOME
     * one, installed with glib-networking, aborts without GSettings schemas). */
    g_socket_client_set_enable_proxy(client, FALSE);
    GSocketConnection *conn = g_socket_client_connect_to_host(client, "127.0.0.1", (guint16)port, NULL, error);
    if (conn == NULL)
        return NULL;
    g_autoptr(JetRawPub) p = g_new0(JetRawPub, 1);
    p->conn = conn;
    p->in = g_data_input_stream_new(g_io_stream_get_input_stream(G_IO_STREAM(conn)));
    g_data_input_stream_set_newline_type(p->in, G_DATA_STREAM_NEWLINE_TYPE_CR_LF);
    p->out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
    p->inbox = g_strdup_printf("_INBOX.%08x%08x", g_random_int(), g_random_int());

    gsize len = 0;
    g_autofree char *info = g_data_input_stream_read_line(p->in, &len, NULL, error);
    if (info == NULL) {
        if (error != NULL && *error == NULL)
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED, "the server closed the connection");
        return NULL;
    }
    if (!g_str_has_prefix(info, "INFO ")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "expected INFO, got: %s", info);
        return NULL;
    }
    g_autofree char *hello = g_strdup_printf(
        "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,\"protocol\":1}\r\n"
        "SUB %s.* 1\r\n",
        p->inbox);
    if (!send_text(p, hello, error) || !ping_pong(p, error))
        return NULL;
    return g_steal_pointer(&p);
}

void jet_rawpub_close(JetRawPub *p)
{
    if (p == NULL)
        return;
    g_clear_object(&p->in);
    if (p->conn != NULL)
        g_io_stream_close(G_IO_STREAM(p->conn), NULL, NULL);
    g_clear_object(&p->conn);
    g_free(p->inbox);
    g_free(p);
}

/* One write per message: HPUB (or PUB when there is no block) and its
 * bytes. */
static gboolean publish(JetRawPub *p, const char *subject, const char *reply, const char *hdr_block, gsize hdr_len,
                        const void *data, gsize data_len, GError **error)
{
    g_autoptr(GByteArray) b = g_byte_array_sized_new((guint)(hdr_len + data_len + 128));
    g_autofree char *head = NULL;
    if (hdr_len > 0)
        head = g_strdup_printf("HPUB %s%s%s %" G_GSIZE_FORMAT " %" G_GSIZE_FORMAT "\r\n", subject,
                               reply != NULL ? " " : "", reply != NULL ? reply : "", hdr_len, hdr_len + data_len);
    else
        head = g_strdup_printf("PUB %s%s%s %" G_GSIZE_FORMAT "\r\n", subject, reply != NULL ? " " : "",
                               reply != NULL ? reply : "", data_len);
    g_byte_array_append(b, (const guint8 *)head, (guint)strlen(head));
    if (hdr_len > 0)
        g_byte_array_append(b, (const guint8 *)hdr_block, (guint)hdr_len);
    if (data_len > 0)
        g_byte_array_append(b, data, (guint)data_len);
    g_byte_array_append(b, (const guint8 *)"\r\n", 2);
    return send_bytes(p, b->data, b->len, error);
}

gboolean jet_rawpub_hpub(JetRawPub *p, const char *subject, const char *hdr_block, gsize hdr_len, const void *data,
                         gsize data_len, GError **error)
{
    g_return_val_if_fail(p != NULL && subject != NULL, FALSE);
    return publish(p, subject, NULL, hdr_block, hdr_len, data, data_len, error);
}

gboolean jet_rawpub_hpub_acked(JetRawPub *p, const char *subject, const char *hdr_block, gsize hdr_len,
                               const void *data, gsize data_len, char **ack, GError **error)
{
    g_return_val_if_fail(p != NULL && subject != NULL && ack != NULL, FALSE);
    *ack = NULL;
    g_autofree char *reply = g_strdup_printf("%s.%u", p->inbox, ++p->next_reply);
    if (!publish(p, subject, reply, hdr_block, hdr_len, data, data_len, error))
        return FALSE;
    gint64 deadline = deadline_from_now();
    for (;;) {
        g_auto(Frame) f = { 0 };
        if (!read_frame(p, &f, error))
            return FALSE;
        if (f.subject != NULL && strcmp(f.subject, reply) == 0) {
            /* A status-only message (NATS/1.0 503): nothing stores this
             * subject. */
            if (f.hdr_len > 0 && f.len == f.hdr_len) {
                g_autofree char *status = g_strndup(f.payload, MIN(f.hdr_len, (gsize)32));
                g_strdelimit(status, "\r\n", ' ');
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "no ack for %s: status %s", subject,
                            g_strstrip(status));
                return FALSE;
            }
            *ack = g_strndup(f.payload + f.hdr_len, f.len - f.hdr_len);
            return TRUE;
        }
        if (past(deadline, "pub-ack", error))
            return FALSE;
    }
}

gboolean jet_rawpub_flush(JetRawPub *p, GError **error)
{
    g_return_val_if_fail(p != NULL, FALSE);
    return ping_pong(p, error);
}
