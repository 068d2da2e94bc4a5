/* A plugin's publishes, checked and queued (forward.h). */
#include "forward.h"
#include "hdr_block.h"
#include "names.h"

#include <jethost/plugin.h>
#include <string.h>

void jet_publish_free(JetPublish *p)
{
    if (p == NULL)
        return;
    g_free(p->subject);
    if (p->headers != NULL)
        g_ptr_array_unref(p->headers);
    if (p->data != NULL)
        g_bytes_unref(p->data);
    g_free(p);
}

void jet_publish_queue_clear(JetPublishQueue *q)
{
    if (q->items != NULL)
        g_ptr_array_unref(q->items);
    g_free(q->refused);
    memset(q, 0, sizeof *q);
}

/* Keeps the first refusal; returns code. */
static int refuse(JetPublishQueue *q, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static int refuse(JetPublishQueue *q, int code, const char *fmt, ...)
{
    if (q->refused == NULL) {
        va_list ap;
        va_start(ap, fmt);
        q->refused = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    return code;
}

/* A plugin's string, bounded and escaped for a reason. */
static char *shown(const char *s)
{
    if (s == NULL)
        return g_strdup("(null)");
    gsize n = strnlen(s, 101);
    g_autofree char *cut = g_strndup(s, MIN(n, 100));
    g_autofree char *esc = g_strescape(cut, NULL);
    return g_strdup_printf("%s%s", esc, n > 100 ? "..." : "");
}

int jet_publish_queue_add(JetPublishQueue *q, const char *subject, const char *const *headers,
                          const void *data, gsize len, gboolean allow_reserved)
{
    guint index = q->items != NULL ? q->items->len : 0;
    if (index >= JET_PUBLISH_MAX_COUNT)
        return refuse(q, JET_ELIMIT, "publish %u: more than %u publishes for one message", index,
                      JET_PUBLISH_MAX_COUNT);
    const char *why = jet_subject_problem(subject, allow_reserved ? JET_SUBJECT_RESERVED : JET_SUBJECT_LITERAL);
    if (why != NULL) {
        g_autofree char *s = shown(subject);
        /* The hint only where it helps: the namespace was the one problem. */
        gboolean only_reserved = !allow_reserved && jet_subject_problem(subject, JET_SUBJECT_RESERVED) == NULL;
        return refuse(q, JET_EINVAL, "publish %u: subject \"%s\" %s%s", index, s, why,
                      only_reserved ? " (publish_reserved = true allows the server's namespaces)" : "");
    }
    if (data == NULL && len > 0)
        return refuse(q, JET_EINVAL, "publish %u: data is NULL with length %zu", index, (size_t)len);
    gsize bytes = q->bytes + len + strlen(subject);
    g_autoptr(GPtrArray) hs = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; headers != NULL && headers[i] != NULL; i += 2) {
        const char *name = headers[i], *value = headers[i + 1];
        if (value == NULL)
            return refuse(q, JET_EINVAL, "publish %u: header list ends after a name (name, value, ..., NULL)",
                          index);
        if (i / 2 >= JET_PUBLISH_MAX_HEADERS)
            return refuse(q, JET_ELIMIT, "publish %u: more than %u headers", index, JET_PUBLISH_MAX_HEADERS);
        if (!jet_hdr_name_valid(name)) {
            g_autofree char *s = shown(name);
            return refuse(q, JET_EINVAL, "publish %u: header name \"%s\" is not a token", index, s);
        }
        if (g_ascii_strncasecmp(name, "Nats-", 5) == 0) {
            g_autofree char *s = shown(name);
            return refuse(q, JET_EINVAL, "publish %u: header %s: Nats-* headers are the host's (it sets "
                          "Nats-Msg-Id itself)", index, s);
        }
        if (!jet_hdr_value_valid(value)) {
            g_autofree char *s = shown(name);
            return refuse(q, JET_EINVAL, "publish %u: header %s: the value holds CR, LF or NUL, or starts or "
                          "ends with a space or tab", index, s);
        }
        bytes += strlen(name) + strlen(value) + 4;
        g_ptr_array_add(hs, g_strdup(name));
        g_ptr_array_add(hs, g_strdup(value));
    }
    if (bytes > JET_PUBLISH_MAX_BYTES)
        return refuse(q, JET_ELIMIT, "publish %u: more than %u bytes published for one message", index,
                      JET_PUBLISH_MAX_BYTES);
    JetPublish *p = g_new0(JetPublish, 1);
    p->subject = g_strdup(subject);
    p->headers = g_steal_pointer(&hs);
    p->data = g_bytes_new(len > 0 ? data : NULL, len);
    if (q->items == NULL)
        q->items = g_ptr_array_new_with_free_func((GDestroyNotify)jet_publish_free);
    g_ptr_array_add(q->items, p);
    q->bytes = bytes;
    return JET_OK;
}

guint32 jet_hops_read(const GPtrArray *headers)
{
    const char *v = headers != NULL ? jet_hdr_get(headers, JET_HOPS_HEADER) : NULL;
    if (v == NULL || *v == '\0' || (v[0] == '0' && v[1] != '\0'))
        return 0;
    guint64 n = 0;
    for (const char *c = v; *c != '\0'; c++) {
        if (!g_ascii_isdigit(*c))
            return 0;
        n = MIN(n * 10 + (guint64)(*c - '0'), (guint64)G_MAXUINT32);
    }
    return (guint32)n;
}

GPtrArray *jet_publish_wire_headers(const JetPublish *p, const char *msg_id, guint32 hops_in)
{
    GPtrArray *h = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(h, g_strdup("Nats-Msg-Id"));
    g_ptr_array_add(h, g_strdup(msg_id));
    g_ptr_array_add(h, g_strdup(JET_HOPS_HEADER));
    g_ptr_array_add(h, g_strdup_printf("%" G_GUINT64_FORMAT, (guint64)hops_in + 1));
    for (guint i = 0; p->headers != NULL && i + 1 < p->headers->len; i += 2) {
        const char *name = g_ptr_array_index(p->headers, i);
        if (g_ascii_strcasecmp(name, JET_HOPS_HEADER) == 0)
            continue;
        g_ptr_array_add(h, g_strdup(name));
        g_ptr_array_add(h, g_strdup(g_ptr_array_index(p->headers, i + 1)));
    }
    return h;
}

char *jet_publish_msg_id(const char *stream, const char *consumer, guint64 seq, gint64 stream_created_ns,
                         guint index)
{
    return g_strdup_printf("jethost-pub:%s.%s:%" G_GUINT64_FORMAT ":%" G_GINT64_FORMAT ":%u", stream,
                           consumer != NULL ? consumer : "", seq, stream_created_ns, index);
}
