/* The server-free half of `jethost dlq replay`: replay.h. */
#include "replay.h"

#include "dlq_record.h"

#include <string.h>

#define MSG_ID_HDR "Nats-Msg-Id"
/* What earlier versions' replays carried instead of Jethost-Replay-Of: it
 * describes an older replay, not this one. */
#define OLD_REPLAYED_FROM "Jethost-Replayed-From"

static gboolean has_prefix_ci(const char *s, const char *prefix)
{
    return g_ascii_strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static const char *const reserved[] = {
    "$JS.", "$JSC.", "$KV.", "$O.", "$SYS.", "$NRG.", "$MQTT.", "_INBOX.",
};

const char *jet_subject_refusal(const char *subject)
{
    return jet_subject_check(subject, FALSE);
}

const char *jet_subject_check(const char *subject, gboolean allow_reserved)
{
    if (subject == NULL || *subject == '\0')
        return "is empty";
    if (!g_utf8_validate(subject, -1, NULL))
        return "is not valid UTF-8";
    for (const char *p = subject; *p; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        if (g_unichar_isspace(c) || g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT)
            return "holds whitespace or a control character";
        if (c == '*' || c == '>')
            return "holds a wildcard ('*' or '>'): give a literal subject";
    }
    gsize len = strlen(subject);
    if (subject[0] == '.' || subject[len - 1] == '.' || strstr(subject, "..") != NULL)
        return "has an empty token";
    for (gsize i = 0; i < G_N_ELEMENTS(reserved) && !allow_reserved; i++)
        if (has_prefix_ci(subject, reserved[i]))
            return "is in a namespace reserved for the server ($JS., $JSC., $KV., $O., $SYS., $NRG., $MQTT., "
                   "_INBOX.)";
    return NULL;
}

const char *jet_stream_name_refusal(const char *name)
{
    if (name == NULL || *name == '\0')
        return "is empty";
    gsize len = strlen(name);
    if (len > 255)
        return "is longer than 255 bytes";
    for (gsize i = 0; i < len; i++) {
        guchar c = (guchar)name[i];
        if (c <= 0x20 || c >= 0x7f)
            return "holds a byte that is not printable ASCII";
        if (strchr(".*>/\\", c) != NULL)
            return "holds '.', '*', '>', '/' or '\\'";
    }
    return NULL;
}

gboolean jet_replay_captured_by(const char *const *patterns, gsize n, const char *subject)
{
    for (gsize i = 0; patterns != NULL && i < n; i++)
        if (patterns[i] != NULL && jet_subject_matches(patterns[i], subject))
            return TRUE;
    return FALSE;
}

char *jet_replay_msg_id(const char *dlq_stream, guint64 dlq_seq, gint64 life_ns, gint64 again_ns)
{
    GString *id = g_string_new(JET_REPLAY_MSG_ID_PREFIX);
    g_string_append_printf(id, "%s:%" G_GUINT64_FORMAT, dlq_stream, dlq_seq);
    if (life_ns > 0)
        g_string_append_printf(id, ":%" G_GINT64_FORMAT, life_ns);
    if (again_ns > 0)
        g_string_append_printf(id, ":again-%" G_GINT64_FORMAT, again_ns);
    return g_string_free(id, FALSE);
}

static void add(GPtrArray *h, const char *name, const char *value)
{
    g_ptr_array_add(h, g_strdup(name));
    g_ptr_array_add(h, g_strdup(value));
}

GPtrArray *jet_replay_headers(const GPtrArray *record_headers, const char *dlq_stream, guint64 dlq_seq,
                              const char *msg_id)
{
    g_return_val_if_fail(dlq_stream != NULL && msg_id != NULL, NULL);
    GPtrArray *h = g_ptr_array_new_with_free_func(g_free);
    add(h, MSG_ID_HDR, msg_id);
    for (guint i = 0; record_headers != NULL && i + 1 < record_headers->len; i += 2) {
        const char *name = g_ptr_array_index(record_headers, i);
        g_autofree char *restored = jet_capture_restored_name(name);
        if (restored != NULL)
            name = restored;
        else if (has_prefix_ci(name, "Jethost-"))
            continue;   /* provenance */
        if (has_prefix_ci(name, "Nats-") || g_ascii_strcasecmp(name, JET_HDR_REPLAY_OF) == 0 ||
            g_ascii_strcasecmp(name, OLD_REPLAYED_FROM) == 0)
            continue;
        add(h, name, g_ptr_array_index(record_headers, i + 1));
    }
    g_autofree char *of = g_strdup_printf("%s:%" G_GUINT64_FORMAT, dlq_stream, dlq_seq);
    add(h, JET_HDR_REPLAY_OF, of);
    return h;
}
