#include "breaker_claim.h"
#include "msg_payload.h"
#include "conn.h"
#include "errors.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* One name as one key token: A-Z a-z 0-9 _ - as they are, every other byte
 * (including '=' itself and '.') as =XX. */
static void append_token(GString *s, const char *name)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (g_ascii_isalnum(*p) || *p == '_' || *p == '-')
            g_string_append_c(s, (char)*p);
        else
            g_string_append_printf(s, "=%02X", *p);
    }
}

char *jet_breaker_claim_key(const char *stream, const char *consumer,
                            const JetBreakerWindow *w)
{
    g_return_val_if_fail(stream != NULL && *stream && consumer != NULL && *consumer && w != NULL,
                         NULL);
    GString *s = g_string_new("breaker.");
    append_token(s, stream);
    g_string_append_c(s, '.');
    append_token(s, consumer);
    g_string_append_printf(s, ".%" G_GUINT64_FORMAT ".%u", w->floor, w->n);
    return g_string_free(s, FALSE);
}

static char *claim_value(const JetBreakerWindow *w, guint64 seq, const char *host)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "seq");
    json_builder_add_int_value(b, (gint64)seq);
    json_builder_set_member_name(b, "host");
    json_builder_add_string_value(b, host);
    json_builder_set_member_name(b, "floor");
    json_builder_add_int_value(b, (gint64)w->floor);
    json_builder_set_member_name(b, "window");
    json_builder_add_int_value(b, w->n);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return json_to_string(root, FALSE);
}

static void read_holder(kvStore *kv, const char *key, JetBreakerClaimHolder *holder)
{
    memset(holder, 0, sizeof *holder);
    kvEntry *e = NULL;
    if (kvStore_Get(&e, kv, key) != NATS_OK)
        return;
    g_autoptr(JsonParser) p = json_parser_new();
    gsize len = 0;
    const char *data = jet_kv_value(e, &len);
    if (json_parser_load_from_data(p, data, (gssize)len, NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p))) {
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        gint64 seq = json_object_get_int_member_with_default(o, "seq", 0);
        holder->seq = seq > 0 ? (guint64)seq : 0;
        const char *h = json_object_get_string_member_with_default(o, "host", "");
        g_strlcpy(holder->host, h != NULL ? h : "", sizeof holder->host);
    }
    kvEntry_Destroy(e);
}

JetBreakerClaimResult jet_breaker_claim(kvStore *kv, const char *stream, const char *consumer,
                                        const JetBreakerWindow *w, guint64 seq,
                                        const char *host, JetBreakerClaimHolder *holder,
                                        GError **error)
{
    g_return_val_if_fail(kv != NULL && w != NULL && host != NULL, JET_BREAKER_CLAIM_ERROR);
    g_return_val_if_fail(error == NULL || *error == NULL, JET_BREAKER_CLAIM_ERROR);
    g_autofree char *key = jet_breaker_claim_key(stream, consumer, w);
    g_return_val_if_fail(key != NULL, JET_BREAKER_CLAIM_ERROR);
    g_autofree char *value = claim_value(w, seq, host);

    uint64_t rev = 0;
    natsStatus s = kvStore_Create(&rev, kv, key, value, (int)strlen(value));
    if (s == NATS_OK)
        return JET_BREAKER_CLAIMED;
    /* nats.c 3.4.1: a create on an existing key is a plain NATS_ERR whose
     * text reads "wrong last sequence" (err 10071): match the text. */
    const char *last = nats_GetLastError(NULL);
    if (s == NATS_ERR && last != NULL && strstr(last, "wrong last sequence") != NULL) {
        if (holder != NULL)
            read_holder(kv, key, holder);
        return JET_BREAKER_ALREADY_CLAIMED;
    }
    g_autofree char *why = jet_nats_error(s);
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "breaker claim %s: %s", key, why);
    return JET_BREAKER_CLAIM_ERROR;
}

char *jet_breaker_counted_key(const char *stream, const char *consumer, guint64 seq)
{
    g_return_val_if_fail(stream != NULL && *stream && consumer != NULL && *consumer, NULL);
    GString *s = g_string_new("breaker-counted.");
    append_token(s, stream);
    g_string_append_c(s, '.');
    append_token(s, consumer);
    g_string_append_printf(s, ".%" G_GUINT64_FORMAT, seq);
    return g_string_free(s, FALSE);
}

gboolean jet_breaker_mark_counted(kvStore *kv, const char *stream, const char *consumer, guint64 seq,
                                  const char *host, GError **error)
{
    g_return_val_if_fail(kv != NULL && host != NULL, FALSE);
    g_autofree char *key = jet_breaker_counted_key(stream, consumer, seq);
    g_return_val_if_fail(key != NULL, FALSE);
    uint64_t rev = 0;
    natsStatus s = kvStore_Create(&rev, kv, key, host, (int)strlen(host));
    const char *last = nats_GetLastError(NULL);
    if (s == NATS_OK || (s == NATS_ERR && last != NULL && strstr(last, "wrong last sequence") != NULL))
        return TRUE;   /* another host marked it first: the same fact */
    g_autofree char *why = jet_nats_error(s);
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "breaker mark %s: %s", key, why);
    return FALSE;
}

int jet_breaker_was_counted(kvStore *kv, const char *stream, const char *consumer, guint64 seq)
{
    g_return_val_if_fail(kv != NULL, -1);
    g_autofree char *key = jet_breaker_counted_key(stream, consumer, seq);
    g_return_val_if_fail(key != NULL, -1);
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, kv, key);
    kvEntry_Destroy(e);
    if (s == NATS_OK)
        return 1;
    return s == NATS_NOT_FOUND ? 0 : -1;
}
