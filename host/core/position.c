#include "position.h"
#include "ledger_record.h"

#include <gio/gio.h>
#include <string.h>
#include <json-glib/json-glib.h>

char *jet_ordered_consumer_name(const char *binding, guint32 run_id, guint serial)
{
    /* "jethost_ord_" 12 + "_" + 8 + "_" + at most 10 digits = 32. */
    const int room = 255 - 32;
    return g_strdup_printf("jethost_ord_%.*s_%08x_%u", room, binding, run_id, serial);
}

char *jet_position_key(const char *binding)
{
    g_autofree char *token = jet_ledger_encode_name(binding);
    return g_strconcat("ordered.", token, NULL);
}

char *jet_position_to_json(const JetPosition *p, gsize *len)
{
    /* life only when known: a record without it reads as before. */
    g_autofree char *life = p->life > 0 ? g_strdup_printf(",\"life\":%" G_GINT64_FORMAT, p->life) : g_strdup("");
    /* n only for a span: a precise mark reads as an older host's. */
    g_autofree char *n = p->n > 1 ? g_strdup_printf(",\"n\":%u", p->n) : g_strdup("");
    char *s = g_strdup_printf("{\"v\":%d,\"pos\":%" G_GUINT64_FORMAT ",\"in\":%" G_GUINT64_FORMAT "%s,\"s\":%u%s}",
                              JET_POSITION_VERSION, p->pos, p->in, n, p->strikes, life);
    if (len != NULL)
        *len = strlen(s);
    return s;
}

static gboolean bad(GError **error, const char *why)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "ordered checkpoint: %s", why);
    return FALSE;
}

/* A non-negative integer member up to max; absent is 0. */
static gboolean member(JsonObject *o, const char *key, guint64 max, guint64 *out, GError **error)
{
    *out = 0;
    JsonNode *n = json_object_get_member(o, key);
    if (n == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
        return bad(error, "a count is not an integer");
    gint64 v = json_node_get_int(n);
    if (v < 0 || (guint64)v > max)
        return bad(error, "a count is out of range");
    *out = (guint64)v;
    return TRUE;
}

gboolean jet_position_from_json(const char *data, gsize len, JetPosition *out, GError **error)
{
    /* Anyone who can write the bucket can write this key: a record is a
     * few dozen bytes, so anything longer (however it nests) is refused
     * unparsed, and so is a NUL inside it. */
    if (data == NULL || len > JET_POSITION_MAX_BYTES)
        return bad(error, "longer than a checkpoint can be");
    if (memchr(data, '\0', len) != NULL)
        return bad(error, "holds a NUL byte");
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, data, (gssize)len, NULL))
        return bad(error, "not JSON");
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return bad(error, "not an object");
    JsonObject *o = json_node_get_object(root);
    guint64 v = 0, pos = 0, in = 0, s = 0, life = 0, n = 1;
    if (!member(o, "v", G_MAXINT64, &v, error) || !member(o, "pos", G_MAXINT64, &pos, error) ||
        !member(o, "in", G_MAXINT64, &in, error) || !member(o, "s", G_MAXUINT32, &s, error) ||
        !member(o, "life", G_MAXINT64, &life, error))
        return FALSE;
    if (json_object_has_member(o, "n") && !member(o, "n", JET_POSITION_MAX_SPAN, &n, error))
        return FALSE;
    if (v != JET_POSITION_VERSION)
        return bad(error, "another version");
    if (in != 0 && in <= pos)
        return bad(error, "the message in the handler is at or before the position");
    /* A span is only ever written with a message going to the handler, and
     * names none to strike: anything else is not this host's record. */
    if (n == 0)
        return bad(error, "a span of no messages");
    if (n > 1 && (in == 0 || s != 0))
        return bad(error, "a span without a message in the handler, or with strikes");
    out->pos = pos;
    out->in = in;
    out->strikes = (guint32)s;
    out->life = (gint64)life;
    out->n = (guint32)n;
    return TRUE;
}

void jet_position_crashed(const JetPosition *p, guint64 *crashed, guint32 *strikes)
{
    if (p->n > 1) {
        *crashed = 0;
        *strikes = 0;
        return;
    }
    *crashed = p->in;
    *strikes = p->in != 0 && p->strikes < G_MAXUINT32 ? p->strikes + 1 : 0;
}

gboolean jet_position_other_life(gint64 life_then, guint64 pos, gint64 life_now, guint64 last_now)
{
    if (life_then != 0 && life_now != 0 && life_then != life_now)
        return TRUE;
    /* Within one life the last sequence never goes down (a purge keeps
     * it), so a stream whose last is below what was handled is new, even
     * where its creation time is unknown or the same (a store lost). */
    return last_now < pos;
}

gboolean jet_position_fell_back(gint64 life_then, guint64 pos, gint64 life_now, guint64 last_now)
{
    gboolean lives_differ = life_then != 0 && life_now != 0 && life_then != life_now;
    return !lives_differ && last_now < pos;
}

void jet_position_start(const JetPosition *p, gint64 life, gboolean resume, JetPositionStart *out)
{
    memset(out, 0, sizeof *out);
    /* Sequences start again in a re-created stream: its seq 42 is not the
     * message the record names, and its position is not where this stream's
     * messages are handled up to. */
    out->other_life = jet_position_other_life(p->life, p->pos, life, G_MAXUINT64);
    if (out->other_life)
        return;
    out->resume_after = resume ? p->pos : 0;
    jet_position_crashed(p, &out->crashed, &out->strikes);
    /* A span names no culprit: its messages are handled again one precise
     * mark each, so that a second death names it (docs/ordered.md, "Span
     * marks"). */
    if (p->n > 1) {
        out->careful_from = p->in;
        out->careful_n = p->n;
    }
}
