/* Pulls on a pinned priority group (docs/exclusive.md, "The server's
 * fence"): nats-server 2.11 and later deliver a pinned_client consumer's
 * messages only to pulls that carry the pin id it gave, and refuse others
 * with 423.  The holder of an exclusive binding takes the pin when it
 * starts, so the pulls a paused holder left waiting get nothing more.
 *
 * The server pins the first pull that comes without an id; every other
 * id-less pull then waits until it expires.  So the workers send one such
 * pull at a time, and the rest carry the id its deliveries bring. */
#include "engine_private.h"
#include "js_api.h"

#include <string.h>

enum { PIN_NONE, PIN_GROUP, PIN_PINNED };

static gboolean pinned(JetEngine *e)
{
    return g_atomic_int_get(&e->pin_mode) == PIN_PINNED;
}

gboolean jet__pin_grouped(JetEngine *e)
{
    return g_atomic_int_get(&e->pin_mode) != PIN_NONE;
}

void jet__pin_set(JetEngine *e, const char *group, gboolean is_pinned)
{
    g_mutex_lock(&e->pin_lock);
    gboolean same = g_strcmp0(e->pin_group, group != NULL ? group : "") == 0;
    g_strlcpy(e->pin_group, group != NULL ? group : "", sizeof e->pin_group);
    if (!same || !is_pinned) {
        e->pin_id[0] = '\0';
        e->pin_probe_out = FALSE;
    }
    g_atomic_int_set(&e->pin_mode, e->pin_group[0] == '\0' ? PIN_NONE : is_pinned ? PIN_PINNED : PIN_GROUP);
    g_mutex_unlock(&e->pin_lock);
}

void jet__pin_reread(JetEngine *e)
{
    if (JET_KIND_IS_ORDERED(e->b->kind))
        return;
    char group[JET_PIN_GROUP_MAX + 1] = "";
    gboolean is_pinned = FALSE;
    if (!jet_consumer_priority(jet_conn_nats(e->conn), e->b->stream, e->b->consumer, group, &is_pinned))
        return;
    gint before = g_atomic_int_get(&e->pin_mode);
    jet__pin_set(e, group, is_pinned);
    gint after = g_atomic_int_get(&e->pin_mode);
    if (before != after)
        jet_log(JET_LOG_INFO, e->b->name, "pin-group",
                "the consumer's priority group is now %s%s%s: pulls follow it", group[0] ? group : "none",
                is_pinned ? ", pinned" : "", group[0] && !is_pinned ? ", not pinned" : "");
}

gboolean jet__pin_may_pull(Worker *w, gboolean *probe, char id[JET_PIN_ID_MAX + 1])
{
    JetEngine *e = w->eng;
    *probe = FALSE;
    id[0] = '\0';
    if (!pinned(e))
        return TRUE;
    gboolean ok = TRUE;
    g_mutex_lock(&e->pin_lock);
    if (e->pin_id[0] == '\0') {
        ok = !e->pin_probe_out;
        if (ok)
            *probe = e->pin_probe_out = TRUE;
    } else {
        g_strlcpy(id, e->pin_id, JET_PIN_ID_MAX + 1);
    }
    g_mutex_unlock(&e->pin_lock);
    return ok;
}

guint64 jet__pin_probe_expires_ms(const JetEngine *e)
{
    /* A standby takes the claim claim_ttl - claim_heartbeat (at least half
     * of claim_ttl) after the holder's last renewal at the earliest. */
    return CLAMP(e->b->claim_ttl_ms / 4, 100, MAX(e->b->expires_ms, 100));
}

void jet__pin_fields(JetEngine *e, const char *id, char *buf, gsize size)
{
    buf[0] = '\0';
    if (!jet__pin_grouped(e))
        return;
    g_mutex_lock(&e->pin_lock);
    /* Group names are [A-Za-z0-9/_=-] (the server refuses others); pin ids
     * are checked when learned: neither needs JSON escaping. */
    if (e->pin_group[0] != '\0' && id != NULL && *id)
        snprintf(buf, size, ",\"group\":\"%s\",\"id\":\"%s\"", e->pin_group, id);
    else if (e->pin_group[0] != '\0')
        snprintf(buf, size, ",\"group\":\"%s\"", e->pin_group);
    g_mutex_unlock(&e->pin_lock);
}

/* A pin id as the server makes them: a nuid, 22 characters of [0-9A-Za-z];
 * anything else is not put into a pull request. */
static gboolean pin_id_valid(const char *v)
{
    gsize n = v != NULL ? strlen(v) : 0;
    if (n == 0 || n > JET_PIN_ID_MAX)
        return FALSE;
    for (gsize i = 0; i < n; i++)
        if (!g_ascii_isalnum(v[i]))
            return FALSE;
    return TRUE;
}

void jet__pin_learn(JetEngine *e, natsMsg *m, guint64 stream_seq)
{
    if (!pinned(e))
        return;
    g_mutex_lock(&e->pin_lock);
    gboolean known = e->pin_id[0] != '\0';
    g_mutex_unlock(&e->pin_lock);
    if (known)
        return;
    g_auto(JetHdrParse) hdrs = { 0 };
    g_autofree char *bad = jet__read_headers(e, m, stream_seq, &hdrs);
    const char *id = hdrs.headers != NULL ? jet_hdr_get(hdrs.headers, "Nats-Pin-Id") : NULL;
    if (!pin_id_valid(id))
        return;
    g_mutex_lock(&e->pin_lock);
    gboolean fresh = e->pin_id[0] == '\0';
    if (fresh) {
        g_strlcpy(e->pin_id, id, sizeof e->pin_id);
        e->pin_probe_out = FALSE;
    }
    g_mutex_unlock(&e->pin_lock);
    if (fresh) {
        JET_STAT_ADD(&e->shared_stats, pins_learned, 1);
        jet_log(JET_LOG_INFO, e->b->name, "pinned",
                "the server pinned this host's pulls (pin %s): it delivers to no other client's", id);
    }
}

void jet__pin_pull_over(JetEngine *e, const Pull *p)
{
    if (!p->pin_probe)
        return;
    g_mutex_lock(&e->pin_lock);
    e->pin_probe_out = FALSE;
    g_mutex_unlock(&e->pin_lock);
}

void jet__pin_refused(Worker *w, int code, const char *desc)
{
    JetEngine *e = w->eng;
    JET_STAT_ADD(&w->stats, pins_refused, 1);
    g_mutex_lock(&e->pin_lock);
    gboolean had = e->pin_id[0] != '\0';
    e->pin_id[0] = '\0';
    g_mutex_unlock(&e->pin_lock);
    if (had)
        jet_log(JET_LOG_INFO, e->b->name, "pin-lost",
                "worker %u: %d %s: the server's pin is no longer this host's (no pull of ours for the pin's "
                "timeout, expires + claim_ttl, or another holder took it); asking for it again", w->index, code,
                desc != NULL ? desc : "");
}

void jet__pin_take(JetEngine *e)
{
    if (!pinned(e) || !e->b->exclusive)
        return;
    char group[JET_PIN_GROUP_MAX + 1];
    g_mutex_lock(&e->pin_lock);
    g_strlcpy(group, e->pin_group, sizeof group);
    g_mutex_unlock(&e->pin_lock);
    g_autofree char *api = g_strdup_printf("CONSUMER.UNPIN.%s.%s", e->b->stream, e->b->consumer);
    g_autofree char *body = g_strdup_printf("{\"group\":\"%s\"}", group);
    natsStatus s = NATS_OK;
    JsonObject *o = jet_js_api_request(jet_conn_nats(e->conn), api, body, 5000, &s);
    const char *why = o != NULL ? jet_js_api_error(o, NULL) : natsStatus_GetText(s);
    if (why == NULL)
        jet_log(JET_LOG_INFO, e->b->name, "pin-taken",
                "the consumer's pin (group %s) was taken from whoever held it: their waiting pulls get nothing "
                "more, the next pull of this host's is pinned", group);
    else
        jet_log(JET_LOG_WARNING, e->b->name, "pin-taken",
                "could not take the consumer's pin (group %s): %s; a previous holder keeps it until it has not "
                "pulled for claim_ttl", group, why);
    if (o != NULL)
        json_object_unref(o);
}
