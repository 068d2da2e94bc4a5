#include "consumer_setup.h"
#include "conn.h"
#include "consumer_put.h"
#include "errors.h"
#include "js_api.h"
#include "log.h"
#include "setup_retry.h"
#include "stream_info.h"
#include "stream_names.h"
#include "subject_overlap.h"

#include <string.h>

#define ERR_CONSUMER_NOT_FOUND 10014
#define ERR_STREAM_NOT_FOUND 10059

static gboolean fail(GError **error, const JetBindingConfig *b, const char *what, natsStatus s,
                     jsErrCode jerr)
{
    g_autofree char *why = jet_nats_error(s);
    if (jerr != 0)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: %s: %s [err %d]", b->name, what,
                    why, (int)jerr);
    else
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: %s: %s", b->name, what, why);
    return FALSE;
}

gboolean jet_stream_ensure(jsCtx *js, const JetBindingConfig *b, GError **error)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, js, b->stream, NULL, &jerr);
    if (s == NATS_OK) {
        jsStreamInfo_Destroy(si);
        return TRUE;   /* an existing stream is the operator's: never reshaped */
    }
    if (jerr != ERR_STREAM_NOT_FOUND && s != NATS_NOT_FOUND)
        return fail(error, b, "stream info", s, jerr);
    if (b->kind == JET_KIND_KV) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "binding %s: KV bucket %s does not exist (its stream %s is missing); jethost never creates "
                    "a watched bucket", b->name, b->bucket, b->stream);
        return FALSE;
    }
    if (b->subjects == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "binding %s: stream %s does not exist (set subjects to let jethost create it)",
                    b->name, b->stream);
        return FALSE;
    }
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = b->stream;
    sc.Subjects = (const char **)b->subjects;
    sc.SubjectsLen = (int)g_strv_length(b->subjects);
    sc.Storage = js_FileStorage;
    sc.Replicas = b->replicas > 0 ? (int64_t)b->replicas : 1;
    if (b->duplicate_window_ms > 0)
        sc.Duplicates = (int64_t)MIN(b->duplicate_window_ms, (guint64)(G_MAXINT64 / 1000000)) * 1000000;
    jerr = 0;
    s = js_AddStream(&si, js, &sc, NULL, &jerr);
    if (s != NATS_OK)
        return jet_stream_create_failed(js, b->name, b->stream, (const char *const *)b->subjects, s, jerr, error);
    jet_log(JET_LOG_INFO, b->name, "stream-created", "created stream %s (%d replica%s)", b->stream,
            (int)sc.Replicas, sc.Replicas == 1 ? "" : "s");
    jsStreamInfo_Destroy(si);
    return TRUE;
}

static gint64 int_member(JsonObject *o, const char *name)
{
    JsonNode *n = o != NULL && json_object_has_member(o, name) ? json_object_get_member(o, name) : NULL;
    return n != NULL && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64 ? json_node_get_int(n)
                                                                                               : 0;
}

static JsonObject *object_member(JsonObject *o, const char *name)
{
    JsonNode *n = o != NULL && json_object_has_member(o, name) ? json_object_get_member(o, name) : NULL;
    return n != NULL && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

static const char *string_member(JsonObject *o, const char *name)
{
    JsonNode *n = o != NULL && json_object_has_member(o, name) ? json_object_get_member(o, name) : NULL;
    return n != NULL && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? json_node_get_string(n) : NULL;
}

/* The priority group a consumer config names, and whether it pins. */
static void priority_of(JsonObject *c, char group[JET_PIN_GROUP_MAX + 1], gboolean *pinned)
{
    const char *policy = string_member(c, "priority_policy");
    JsonNode *gn = c != NULL && json_object_has_member(c, "priority_groups")
                       ? json_object_get_member(c, "priority_groups") : NULL;
    JsonArray *groups = gn != NULL && JSON_NODE_HOLDS_ARRAY(gn) ? json_node_get_array(gn) : NULL;
    JsonNode *fn = groups != NULL && json_array_get_length(groups) > 0 ? json_array_get_element(groups, 0) : NULL;
    const char *first = fn != NULL && JSON_NODE_HOLDS_VALUE(fn) && json_node_get_value_type(fn) == G_TYPE_STRING
                            ? json_node_get_string(fn) : NULL;
    gboolean any = policy != NULL && *policy && strcmp(policy, "none") != 0 && first != NULL;
    g_strlcpy(group, any ? first : "", JET_PIN_GROUP_MAX + 1);
    *pinned = any && strcmp(policy, "pinned_client") == 0;
}

/* The facts of a consumer info (CONSUMER.INFO, or a create's reply). */
static void fill_facts(JsonObject *info, JetConsumerFacts *facts)
{
    if (facts == NULL)
        return;
    JsonObject *c = jet_consumer_info_config(info);
    facts->ack_wait_ms = int_member(c, "ack_wait") / 1000000;
    facts->max_deliver = int_member(c, "max_deliver");
    facts->max_ack_pending = int_member(c, "max_ack_pending");
    facts->ack_floor_stream = (guint64)MAX(int_member(object_member(info, "ack_floor"), "stream_seq"), 0);
    facts->consumer_created_ns = jet_js_api_time_member(info, "created");
    facts->num_ack_pending = int_member(info, "num_ack_pending");
    facts->delivered_stream = (guint64)MAX(int_member(object_member(info, "delivered"), "stream_seq"), 0);
    priority_of(c, facts->pin_group, &facts->pinned);
}

gboolean jet_consumer_check_fits(const JetBindingConfig *b, JsonObject *config, GError **error)
{
    const char *deliver_subject = string_member(config, "deliver_subject");
    if (deliver_subject != NULL && *deliver_subject) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "binding %s: consumer %s/%s is a push consumer; jethost needs a pull consumer",
                    b->name, b->stream, b->consumer);
        return FALSE;
    }
    if (g_strcmp0(string_member(config, "ack_policy"), "explicit") != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "binding %s: consumer %s/%s does not use explicit acks", b->name, b->stream, b->consumer);
        return FALSE;
    }
    JsonNode *bn = config != NULL && json_object_has_member(config, "backoff")
                       ? json_object_get_member(config, "backoff") : NULL;
    if (bn != NULL && JSON_NODE_HOLDS_ARRAY(bn) && json_array_get_length(json_node_get_array(bn)) > 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "binding %s: consumer %s/%s has a server BackOff; jethost owns the retry ladder "
                    "and two schedulers compose wrongly (remove BackOff from the consumer)",
                    b->name, b->stream, b->consumer);
        return FALSE;
    }
    return TRUE;
}

gboolean jet_consumer_nothing_pending(jsCtx *js, const char *stream, const char *consumer)
{
    jsConsumerInfo *ci = NULL;
    if (consumer == NULL || js_GetConsumerInfo(&ci, js, stream, consumer, NULL, NULL) != NATS_OK)
        return FALSE;
    gboolean none = ci->NumPending == 0;
    jsConsumerInfo_Destroy(ci);
    return none;
}

gboolean jet_filter_check(const JetBindingConfig *b, const jsStreamInfo *si, GError **error)
{
    const char *filter = b->filter_subject;
    const jsStreamConfig *sc = si->Config;
    gsize n = sc != NULL && sc->SubjectsLen > 0 ? (gsize)sc->SubjectsLen : 0;
    if (filter == NULL || jet_filter_fits_subjects(filter, n > 0 ? sc->Subjects : NULL, n))
        return TRUE;
    /* nats.c's array has SubjectsLen entries, no NULL after them. */
    g_autoptr(GString) subjects = g_string_new(NULL);
    for (gsize i = 0; i < n; i++)
        g_string_append_printf(subjects, "%s%s", i > 0 ? ", " : "", sc->Subjects[i]);
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                "binding %s: filter_subject %s matches none of the subjects of stream %s (%s): the consumer "
                "would never receive a message", b->name, filter, b->stream, subjects->str);
    return FALSE;
}

/* The stream's facts, and whether the filter of a consumer the host makes
 * can match it.  A stream that does not answer here is left to the
 * consumer's own request to report. */
static gboolean stream_facts(jsCtx *js, const JetBindingConfig *b, gboolean check_filter, JetConsumerFacts *facts,
                             GError **error)
{
    jsStreamInfo *si = NULL;
    /* A leader's: a member's own creation time, during an election, would
     * be taken for the stream's life (stream_info.h); none in 2 s leaves
     * the life unknown, as a stream that does not answer. */
    if (jet_stream_info_led(&si, js, b->stream, 2000, NULL, NULL) != NATS_OK)
        return TRUE;
    if (facts != NULL) {
        facts->stream_max_age_ms = si->Config->MaxAge / 1000000;
        facts->stream_created_ns = si->Created;
    }
    gboolean ok = !check_filter || jet_filter_check(b, si, error);
    jsStreamInfo_Destroy(si);
    return ok;
}

int jet_consumer_exists(jsCtx *js, const JetBindingConfig *b, guint64 *ack_floor, gint64 *created_ns)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetConsumerInfo(&ci, js, b->stream, b->consumer, NULL, &jerr);
    if (s == NATS_OK) {
        if (ack_floor != NULL)
            *ack_floor = ci->AckFloor.Stream;
        if (created_ns != NULL)
            *created_ns = ci->Created;
        jsConsumerInfo_Destroy(ci);
        return 1;
    }
    if (jerr == ERR_CONSUMER_NOT_FOUND || jerr == ERR_STREAM_NOT_FOUND || s == NATS_NOT_FOUND)
        return 0;
    return -1;
}

gboolean jet_consumer_priority(natsConnection *nc, const char *stream, const char *consumer,
                               char group[JET_PIN_GROUP_MAX + 1], gboolean *pinned)
{
    g_autofree char *api = g_strdup_printf("CONSUMER.INFO.%s.%s", stream, consumer);
    JsonObject *o = jet_js_api_request(nc, api, "", 5000, NULL);
    if (o == NULL || jet_js_api_error(o, NULL) != NULL) {
        if (o != NULL)
            json_object_unref(o);
        return FALSE;
    }
    priority_of(jet_consumer_info_config(o), group, pinned);
    json_object_unref(o);
    return TRUE;
}

/* Whether this binding's consumer is made a pinned priority group: an
 * exclusive durable binding that wants it, on a server that has them
 * (API level 1: nats-server 2.11). */
static gboolean wants_pin(natsConnection *nc, const JetBindingConfig *b)
{
    return b->exclusive && b->pin && b->kind == JET_KIND_DURABLE && jet_js_api_level(nc) >= 1;
}

gboolean jet_consumer_ensure(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, guint64 start_seq,
                             JetConsumerFacts *facts, GError **error)
{
    if (b->manage == JET_MANAGE_CREATE && !jet_stream_ensure(js, b, error))
        return FALSE;
    /* The host checks the filter of a consumer it makes, on every server
     * version (only 2.9 refuses a filter outside the stream, 10093). */
    if (!stream_facts(js, b, b->manage != JET_MANAGE_BIND, facts, error))
        return FALSE;

    gboolean absent = FALSE;
    g_autoptr(JsonObject) info = jet_consumer_info_json(nc, b, &absent, error);
    if (info == NULL && !absent)
        return FALSE;
    JsonObject *current = jet_consumer_info_config(info);
    if (info != NULL && current == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: consumer %s/%s: the server's info has no "
                    "config", b->name, b->stream, b->consumer);
        return FALSE;
    }
    if (info != NULL && !jet_consumer_check_fits(b, current, error))
        return FALSE;

    if (b->manage == JET_MANAGE_BIND) {
        if (info == NULL) {
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                        "binding %s: consumer %s/%s does not exist (manage = bind never creates it)",
                        b->name, b->stream, b->consumer);
            return FALSE;
        }
        /* An operator's consumer may name a priority group: pulls must too. */
        fill_facts(info, facts);
        return TRUE;
    }

    gboolean pinned = wants_pin(nc, b);
    g_autoptr(JsonObject) now = jet_consumer_put(nc, b, current, start_seq, pinned, error);
    if (now == NULL)
        return FALSE;
    if (info == NULL)
        jet_log(JET_LOG_INFO, b->name, "consumer-created",
                "created durable pull consumer %s/%s starting at stream seq %" G_GUINT64_FORMAT "%s", b->stream,
                b->consumer, MAX(start_seq, 1), pinned ? ", a pinned priority group" : "");
    fill_facts(now, facts);
    return TRUE;
}

typedef struct {
    natsConnection *nc;
    jsCtx *js;
    const JetBindingConfig *b;
    guint64 start_seq;
    gint64 life_ns;
    JetConsumerFacts *facts;
} EnsureArgs;

typedef enum { LIFE_SAME, LIFE_OTHER, LIFE_GONE, LIFE_UNKNOWN } Life;

/* Whether the stream is still the life life_ns. */
static Life stream_life(jsCtx *js, const JetBindingConfig *b, gint64 life_ns)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    /* A member's own creation time, during an election, is no life of the
     * stream's (stream_info.h): unknown, asked again at the next attempt. */
    natsStatus s = jet_stream_info_led(&si, js, b->stream, 0, NULL, &jerr);
    if (s != NATS_OK)
        return jerr == ERR_STREAM_NOT_FOUND || s == NATS_NOT_FOUND ? LIFE_GONE : LIFE_UNKNOWN;
    Life l = si->Created == life_ns ? LIFE_SAME : LIFE_OTHER;
    jsStreamInfo_Destroy(si);
    return l;
}

static gboolean ensure_step(gpointer data, GError **error)
{
    EnsureArgs *a = data;
    guint64 start = a->start_seq;
    if (start > 1 && a->life_ns != 0 && a->b->manage == JET_MANAGE_CREATE) {
        Life l = stream_life(a->js, a->b, a->life_ns);
        if (l == LIFE_UNKNOWN) {
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: stream %s info: no answer", a->b->name,
                        a->b->stream);
            return FALSE;
        }
        /* Gone: whatever stream this attempt finds (or makes, with
         * subjects) is a new life; a not-found that was only a moment's
         * (a cluster catching up) is asked again at the next attempt. */
        if (l != LIFE_SAME) {
            jet_log(JET_LOG_WARNING, a->b->name, "stream-new-life",
                    "stream %s %s: its sequences begin again, so consumer %s is made from its first message, not "
                    "from stream seq %" G_GUINT64_FORMAT " of its previous life", a->b->stream,
                    l == LIFE_GONE ? "is gone" : "was deleted and made again", a->b->consumer, start);
            start = 1;
            if (l == LIFE_OTHER)
                a->start_seq = 1;   /* the next attempts too */
        }
    }
    return jet_consumer_ensure(a->nc, a->js, a->b, start, a->facts, error);
}

gboolean jet_consumer_ensure_retrying(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, guint64 start_seq,
                                      gint64 life_ns, guint attempts, const gint *stop, JetConsumerFacts *facts,
                                      GError **error)
{
    EnsureArgs a = { nc, js, b, start_seq, life_ns, facts };
    /* Loud: in bind mode this is an operator's consumer gone missing. */
    return jet_setup_retrying(ensure_step, &a, b->name, "resubscribing",
                              b->manage == JET_MANAGE_BIND ? JET_LOG_ERROR : JET_LOG_WARNING, attempts, stop, error);
}
