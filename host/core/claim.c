/* An exclusive binding's claim, the pure half: claim.h, docs/exclusive.md. */
#include "claim.h"
#include "names.h"

#include <json-glib/json-glib.h>
#include <string.h>

char *jet_claim_key(const char *binding)
{
    if (jet_binding_name_problem(binding) != NULL)
        return NULL;
    return g_strconcat("claim.", binding, NULL);
}

void jet_claim_new_run(char out[JET_CLAIM_RUN_LEN + 1])
{
    for (int i = 0; i < JET_CLAIM_RUN_LEN; i += 8)
        g_snprintf(out + i, 9, "%08" G_GINT32_MODIFIER "x", (guint32)g_random_int());
    out[JET_CLAIM_RUN_LEN] = '\0';
}

char *jet_claim_record_encode(const JetClaimRecord *r)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "host");
    json_builder_add_string_value(b, r->host);
    json_builder_set_member_name(b, "run");
    json_builder_add_string_value(b, r->run);
    json_builder_set_member_name(b, "renewed_ms");
    json_builder_add_int_value(b, r->renewed_ms);
    json_builder_set_member_name(b, "state");
    json_builder_add_string_value(b, r->released ? "released" : "held");
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    return json_to_string(root, FALSE);
}

static gboolean run_ok(const char *run)
{
    if (strlen(run) != JET_CLAIM_RUN_LEN)
        return FALSE;
    for (const char *p = run; *p; p++)
        if (!g_ascii_isxdigit(*p) || g_ascii_isupper(*p))
            return FALSE;
    return TRUE;
}

gboolean jet_claim_record_decode(const char *data, gsize len, JetClaimRecord *out)
{
    memset(out, 0, sizeof *out);
    if (data == NULL || len == 0 || len > G_MAXSSIZE)
        return FALSE;
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, data, (gssize)len, NULL))
        return FALSE;
    JsonNode *root = json_parser_get_root(p);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return FALSE;
    JsonObject *o = json_node_get_object(root);
    JsonNode *host = json_object_get_member(o, "host");
    JsonNode *run = json_object_get_member(o, "run");
    JsonNode *state = json_object_get_member(o, "state");
    JsonNode *renewed = json_object_get_member(o, "renewed_ms");
    if (host == NULL || run == NULL || state == NULL || json_node_get_value_type(host) != G_TYPE_STRING ||
        json_node_get_value_type(run) != G_TYPE_STRING || json_node_get_value_type(state) != G_TYPE_STRING)
        return FALSE;
    const char *h = json_node_get_string(host), *r = json_node_get_string(run), *s = json_node_get_string(state);
    gboolean released;
    if (g_strcmp0(s, "held") == 0)
        released = FALSE;
    else if (g_strcmp0(s, "released") == 0)
        released = TRUE;
    else
        return FALSE;
    if (*h == '\0' || strlen(h) >= sizeof out->host || !run_ok(r))
        return FALSE;
    if (renewed != NULL && json_node_get_value_type(renewed) != G_TYPE_INT64)
        return FALSE;
    g_strlcpy(out->host, h, sizeof out->host);
    g_strlcpy(out->run, r, sizeof out->run);
    out->renewed_ms = renewed != NULL ? json_node_get_int(renewed) : 0;
    out->released = released;
    return TRUE;
}

JetClaimMove jet_claim_standby_decide(JetClaimWatch *w, const JetClaimSeen *seen, gint64 now_us,
                                      gint64 ttl_us)
{
    if (!seen->exists) {
        w->valid = FALSE;
        return JET_CLAIM_CREATE;
    }
    if (!seen->live || seen->ours) {
        w->valid = FALSE;
        return JET_CLAIM_TAKE;
    }
    if (!w->valid || w->revision != seen->revision) {
        /* A new revision: the holder is alive as of now, by our clock. */
        w->valid = TRUE;
        w->revision = seen->revision;
        w->since_us = now_us;
        return JET_CLAIM_STAND_BY;
    }
    /* A clock that went back (it does not, being monotonic) never takes early. */
    if (now_us >= w->since_us && now_us - w->since_us >= ttl_us)
        return JET_CLAIM_TAKE;
    return JET_CLAIM_STAND_BY;
}

gint64 jet_claim_fence_us(gint64 ok_sent_us, gint64 heartbeat_us, gint64 ttl_us)
{
    return ok_sent_us + (ttl_us > heartbeat_us ? ttl_us - heartbeat_us : 0);
}

JetClaimHolderMove jet_claim_holder_decide(gint64 ok_sent_us, gint64 tried_us, gint64 now_us,
                                           gint64 heartbeat_us, gint64 ttl_us)
{
    if (now_us < ok_sent_us || now_us >= jet_claim_fence_us(ok_sent_us, heartbeat_us, ttl_us))
        return JET_CLAIM_EXPIRED;
    if (now_us < tried_us || now_us - tried_us >= heartbeat_us)
        return JET_CLAIM_RENEW;
    return JET_CLAIM_HOLD;
}
