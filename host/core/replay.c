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
