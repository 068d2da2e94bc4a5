/* JSON and text output of untrusted bytes: json_out.h. */
#include "json_out.h"

#include <string.h>

gboolean jet_json_text_ok(const char *bytes, gsize len)
{
    return bytes != NULL && memchr(bytes, '\0', len) == NULL && g_utf8_validate(bytes, (gssize)len, NULL);
}

void jet_json_add_bytes(JsonBuilder *b, const char *key, const char *bytes, gssize len)
{
    if (bytes == NULL) {
        json_builder_set_member_name(b, key);
        json_builder_add_null_value(b);
        return;
    }
    gsize n = len < 0 ? strlen(bytes) : (gsize)len;
    if (jet_json_text_ok(bytes, n)) {
        g_autofree char *s = g_strndup(bytes, n);
        json_builder_set_member_name(b, key);
        json_builder_add_string_value(b, s);
        return;
    }
    g_autofree char *name = g_strconcat(key, "_base64", NULL);
    g_autofree char *b64 = g_base64_encode((const guchar *)bytes, n);
    json_builder_set_member_name(b, name);
    json_builder_add_string_value(b, b64);
}

char *jet_json_line(JsonBuilder *b)
{
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) g = json_generator_new();
    json_generator_set_root(g, root);
    g_autofree char *text = json_generator_to_data(g, NULL);
    /* json-glib 1.6 escapes control characters below 0x1f but writes 0x1f
     * itself raw, which JSON forbids.  That byte can only be inside a
     * string here, and no UTF-8 sequence contains it, so escaping every
     * occurrence is exact. */
    if (strchr(text, 0x1f) == NULL)
        return g_steal_pointer(&text);
    GString *s = g_string_sized_new(strlen(text) + 16);
    for (const char *p = text; *p; p++) {
        if (*p == 0x1f)
            g_string_append(s, "\\u001f");
        else
            g_string_append_c(s, *p);
    }
    return g_string_free(s, FALSE);
}

/* Characters that move the cursor, reorder or hide text, or end a line in
 * some viewer. */
static gboolean unsafe_char(gunichar c)
{
    switch (g_unichar_type(c)) {
    case G_UNICODE_CONTROL:
    case G_UNICODE_FORMAT:
    case G_UNICODE_LINE_SEPARATOR:
    case G_UNICODE_PARAGRAPH_SEPARATOR:
    case G_UNICODE_SURROGATE:
    case G_UNICODE_UNASSIGNED:
    case G_UNICODE_PRIVATE_USE:
        return TRUE;
    default:
        return FALSE;
    }
}

char *jet_text_escape(const char *bytes, gsize len, gboolean keep_lines)
{
    GString *s = g_string_sized_new(len + 8);
    const char *p = bytes, *end = bytes + len;
    while (p < end) {
        guchar c = (guchar)*p;
        if (c == '\\') {
            g_string_append(s, "\\\\");
            p++;
            continue;
        }
        if (keep_lines && (c == '\n' || c == '\t')) {
            g_string_append_c(s, (char)c);
            p++;
            continue;
        }
        if (c >= 0x20 && c < 0x7f) {
            g_string_append_c(s, (char)c);
            p++;
            continue;
        }
        gsize n = 1;
        if (c >= 0x80) {
            gunichar u = g_utf8_get_char_validated(p, (gssize)(end - p));
            if (u != (gunichar)-1 && u != (gunichar)-2 && !unsafe_char(u)) {
                n = (gsize)(g_utf8_next_char(p) - p);
                g_string_append_len(s, p, (gssize)n);
                p += n;
                continue;
            }
            if (u != (gunichar)-1 && u != (gunichar)-2)
                n = (gsize)(g_utf8_next_char(p) - p);
        }
        for (gsize i = 0; i < n; i++)
            g_string_append_printf(s, "\\x%02x", (guchar)p[i]);
        p += n;
    }
    return g_string_free(s, FALSE);
}

void jet_json_add_pub_ack(JsonBuilder *b, const char *stream, guint64 seq, gboolean duplicate)
{
    jet_json_add_bytes(b, "stream", stream, -1);
    json_builder_set_member_name(b, "seq");
    json_builder_add_int_value(b, (gint64)seq);
    json_builder_set_member_name(b, "duplicate");
    json_builder_add_boolean_value(b, duplicate);
}
