/* The NATS header block: the host's strict parser and writer.  hdr_block.h
 * has the grammar; docs/headers.md the reasons. */
#include "hdr_block.h"

#include "errors.h"

#include <string.h>

#define HDR_LINE_LEN 8   /* "NATS/1.0" */

/* RFC 9110 tchar. */
static gboolean is_tchar(guchar c)
{
    if (g_ascii_isalnum(c))
        return TRUE;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static gboolean is_ows(guchar c)
{
    return c == ' ' || c == '\t';
}

static gboolean name_valid_len(const char *name, gsize len)
{
    if (len == 0)
        return FALSE;
    for (gsize i = 0; i < len; i++)
        if (!is_tchar((guchar)name[i]))
            return FALSE;
    return TRUE;
}

gboolean jet_hdr_name_valid(const char *name)
{
    return name != NULL && name_valid_len(name, strlen(name));
}

gboolean jet_hdr_value_valid(const char *value)
{
    if (value == NULL)
        return FALSE;
    gsize len = strlen(value);
    for (gsize i = 0; i < len; i++)
        if (value[i] == '\r' || value[i] == '\n')
            return FALSE;
    return len == 0 || (!is_ows((guchar)value[0]) && !is_ows((guchar)value[len - 1]));
}

char *jet_hdr_escape(const char *bytes, gsize len, gsize max_in)
{
    GString *s = g_string_sized_new(MIN(len, max_in) + 8);
    gsize n = MIN(len, max_in);
    for (gsize i = 0; i < n; i++) {
        guchar c = (guchar)bytes[i];
        if (c >= 0x21 && c <= 0x7e && c != '\\' && c != '"' && c != ',')
            g_string_append_c(s, (char)c);
        else
            g_string_append_printf(s, "\\x%02x", c);
    }
    if (len > n)
        g_string_append(s, "...");
    return g_string_free(s, FALSE);
}

char *jet_hdr_defect_describe(const JetHdrDefect *d)
{
    if (d->line == 0)
        return *d->text ? g_strdup_printf("block \"%s\" (%s)", d->text, d->why)
                        : g_strdup_printf("block (%s)", d->why);
    return g_strdup_printf("line %u \"%s\" (%s)", d->line, d->text, d->why);
}

static void defect_clear(gpointer p)
{
    JetHdrDefect *d = p;
    g_free(d->text);
}

static void add_defect(JetHdrParse *out, guint line, const char *text, gsize len, const char *why)
{
    JetHdrDefect d = { line, jet_hdr_escape(text != NULL ? text : "", text != NULL ? len : 0,
                                            JET_HDR_DEFECT_TEXT_MAX), why };
    g_array_append_val(out->defects, d);
}

void jet_hdr_parse_clear(JetHdrParse *p)
{
    if (p == NULL)
        return;
    g_clear_pointer(&p->headers, g_ptr_array_unref);
    g_clear_pointer(&p->defects, g_array_unref);
}

/* One header line (no CR LF).  Returns the defect's reason, or NULL when
 * the line was added. */
static const char *parse_line(JetHdrParse *out, const char *l, gsize n)
{
    if (is_ows((guchar)l[0]))
        return "continuation line (starts with a space or tab)";
    const char *colon = memchr(l, ':', n);
    for (gsize i = 0; i < n; i++) {
        if (l[i] == '\0')
            return "NUL byte";
        if (l[i] == '\r' || l[i] == '\n')
            return "bare CR or LF";
    }
    if (colon == NULL)
        return "no colon";
    gsize name_len = (gsize)(colon - l);
    if (name_len == 0)
        return "empty name";
    if (!name_valid_len(l, name_len))
        return "name has a character outside the token set";
    const char *v = colon + 1, *end = l + n;
    while (v < end && is_ows((guchar)*v))
        v++;
    while (end > v && is_ows((guchar)end[-1]))
        end--;
    g_ptr_array_add(out->headers, g_strndup(l, name_len));
    g_ptr_array_add(out->headers, g_strndup(v, (gsize)(end - v)));
    return NULL;
}

gboolean jet_hdr_parse(const char *block, gsize len, JetHdrParse *out)
{
    g_return_val_if_fail(out != NULL, FALSE);
    out->headers = g_ptr_array_new_with_free_func(g_free);
    out->defects = g_array_new(FALSE, TRUE, sizeof(JetHdrDefect));
    g_array_set_clear_func(out->defects, defect_clear);
    if (block == NULL || len == 0)
        return TRUE;

    const char *p = block, *end = block + len;
    guint line = 0;
    gboolean ended = FALSE;
    while (p < end) {
        /* A line ends at the first CR LF; a bare CR or LF stays inside it
         * (and makes it a defect). */
        const char *q = p;
        while (q + 1 < end && !(q[0] == '\r' && q[1] == '\n'))
            q++;
        gboolean has_crlf = q + 1 < end;
        gsize n = has_crlf ? (gsize)(q - p) : (gsize)(end - p);
        line++;
        if (!has_crlf) {
            add_defect(out, line, p, n, "no CR LF at its end");
            break;
        }
        if (line == 1) {
            if (n < HDR_LINE_LEN || memcmp(p, JET_HDR_LINE, HDR_LINE_LEN) != 0)
                add_defect(out, line, p, n, "first line is not NATS/1.0");
            else if (n > HDR_LINE_LEN)
                add_defect(out, line, p, n, "status after NATS/1.0");
        } else if (n == 0) {
            ended = TRUE;
            p = q + 2;
            break;
        } else {
            const char *why = parse_line(out, p, n);
            if (why != NULL)
                add_defect(out, line, p, n, why);
        }
        p = q + 2;
    }
    if (!ended)
        add_defect(out, 0, NULL, 0, "truncated: no blank line at the end");
    else if (p < end)
        add_defect(out, 0, p, (gsize)(end - p), "bytes after the blank line");
    return out->defects->len == 0;
}

const char *jet_hdr_get(const GPtrArray *headers, const char *name)
{
    for (guint i = 0; headers != NULL && i + 1 < headers->len; i += 2)
        if (g_ascii_strcasecmp(g_ptr_array_index(headers, i), name) == 0)
            return g_ptr_array_index(headers, i + 1);
    return NULL;
}

gsize jet_hdr_encoded_len(const GPtrArray *headers)
{
    if (headers == NULL || headers->len < 2)
        return 0;
    gsize n = JET_HDR_FRAME_BYTES;
    for (guint i = 0; i + 1 < headers->len; i += 2) {
        const char *v = g_ptr_array_index(headers, i + 1);
        n += strlen(g_ptr_array_index(headers, i)) + 2 + strlen(v) + 2;
    }
    return n;
}

char *jet_hdr_write(const GPtrArray *headers, gsize *len, GError **error)
{
    g_return_val_if_fail(len != NULL, NULL);
    *len = 0;
    if (headers == NULL || headers->len == 0)
        return NULL;
    /* A name without its value is refused, not dropped. */
    for (guint i = 0; i < headers->len; i += 2) {
        const char *name = g_ptr_array_index(headers, i);
        const char *value = i + 1 < headers->len ? g_ptr_array_index(headers, i + 1) : NULL;
        if (!jet_hdr_name_valid(name)) {
            g_autofree char *e = jet_hdr_escape(name != NULL ? name : "", name != NULL ? strlen(name) : 0, 64);
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "header name \"%s\" is not a token (letters, digits, !#$%%&'*+-.^_`|~)", e);
            return NULL;
        }
        if (!jet_hdr_value_valid(value)) {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "header %s: the value %s", name,
                        value == NULL ? "is missing" : "holds CR or LF, or starts or ends with a space or tab");
            return NULL;
        }
    }
    GString *s = g_string_sized_new(jet_hdr_encoded_len(headers));
    g_string_append(s, JET_HDR_LINE "\r\n");
    for (guint i = 0; i + 1 < headers->len; i += 2) {
        const char *v = g_ptr_array_index(headers, i + 1);
        g_string_append(s, g_ptr_array_index(headers, i));
        /* "name: " even before an empty value, as Go's textproto and
         * nats.c write it. */
        g_string_append(s, ": ");
        g_string_append(s, v);
        g_string_append(s, "\r\n");
    }
    g_string_append(s, "\r\n");
    *len = s->len;
    return g_string_free(s, FALSE);
}
