#include "consumer_setup.h"
#include "conn.h"
#include "errors.h"
#include "js_api.h"
#include "log.h"
#include "setup_retry.h"
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

static void fill_facts(const jsConsumerInfo *ci, JetConsumerFacts *facts)
{
    if (facts == NULL)
        return;
    facts->ack_wait_ms = ci->Config->AckWait / 1000000;
    facts->max_deliver = ci->Config->MaxDeliver;
    facts->max_ack_pending = ci->Config->MaxAckPending;
    facts->ack_floor_stream = ci->AckFloor.Stream;
    facts->consumer_created_ns = ci->Created;
    facts->num_ack_pending = ci->NumAckPending;
    facts->delivered_stream = ci->Delivered.Stream;
    facts->pin_group[0] = '\0';
    facts->pinned = FALSE;
}

gboolean jet_consumer_check_fits(const JetBindingConfig *b, const jsConsumerInfo *ci, GError **error)
{
    const jsConsumerConfig *cc = ci->Config;
    if (cc->DeliverSubject != NULL && *cc->DeliverSubject) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "binding %s: consumer %s/%s is a push consumer; jethost needs a pull consumer",
                    b->name, b->stream, b->consumer);
        return FALSE;
    }
    if (cc->AckPolicy != js_AckExplicit) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "binding %s: consumer %s/%s does not use explicit acks", b->name, b->stream, b->consumer);
        return FALSE;
    }
    if (cc->BackOffLen > 0) {
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
    if (js_GetStreamInfo(&si, js, b->stream, NULL, NULL) != NATS_OK)
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
    JsonObject *c = json_object_has_member(o, "config") ? json_object_get_object_member(o, "config") : NULL;
    const char *policy = c != NULL && json_object_has_member(c, "priority_policy")
                             ? json_object_get_string_member(c, "priority_policy") : NULL;
    JsonArray *groups = c != NULL && json_object_has_member(c, "priority_groups")
                            ? json_object_get_array_member(c, "priority_groups") : NULL;
    const char *first = groups != NULL && json_array_get_length(groups) > 0
                            ? json_array_get_string_element(groups, 0) : NULL;
    gboolean any = policy != NULL && *policy && strcmp(policy, "none") != 0 && first != NULL;
    g_strlcpy(group, any ? first : "", JET_PIN_GROUP_MAX + 1);
    *pinned = any && strcmp(policy, "pinned_client") == 0;
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

/* Creates or updates the consumer as below, as a pinned priority group: a
 * request of the host's own, since nats.c 3.4 knows no priority fields (and
 * its update would remove them).  The server gives the pin up after
 * expires + claim_ttl without a pull of the holder's: an idle holder, whose
 * pull waits out `expires`, keeps it; a new holder does not wait for that,
 * it takes the pin when it starts (engine_pin.c). */
static gboolean pinned_create(natsConnection *nc, const JetBindingConfig *b, gboolean exists, guint64 start_seq,
                              GError **error)
{
    g_autoptr(JsonBuilder) j = json_builder_new();
    json_builder_begin_object(j);
    json_builder_set_member_name(j, "stream_name");
    json_builder_add_string_value(j, b->stream);
    /* What the host means (nats-server 2.10+; this path runs on 2.11+ only):
     * an update of a consumer deleted since it was read is refused, not
     * made a new consumer from the stream's first message, and a create
     * that finds one made meanwhile with another start is refused, not
     * applied to it; the next attempt reads the consumer again. */
    json_builder_set_member_name(j, "action");
    json_builder_add_string_value(j, exists ? "update" : "create");
    json_builder_set_member_name(j, "config");
    json_builder_begin_object(j);
    json_builder_set_member_name(j, "durable_name");
    json_builder_add_string_value(j, b->consumer);
    json_builder_set_member_name(j, "deliver_policy");
    gboolean from_seq = !exists && start_seq > 1;
    json_builder_add_string_value(j, from_seq ? "by_start_sequence" : "all");
    if (from_seq) {
        json_builder_set_member_name(j, "opt_start_seq");
        json_builder_add_int_value(j, (gint64)start_seq);
    }
    json_builder_set_member_name(j, "ack_policy");
    json_builder_add_string_value(j, "explicit");
    json_builder_set_member_name(j, "ack_wait");
    json_builder_add_int_value(j, (gint64)b->ack_wait_ms * 1000000);
    json_builder_set_member_name(j, "max_deliver");
    json_builder_add_int_value(j, b->max_deliver);
    json_builder_set_member_name(j, "max_ack_pending");
    json_builder_add_int_value(j, b->max_ack_pending);
    if (b->filter_subject != NULL) {
        json_builder_set_member_name(j, "filter_subject");
        json_builder_add_string_value(j, b->filter_subject);
    }
    json_builder_set_member_name(j, "replay_policy");
    json_builder_add_string_value(j, "instant");
    json_builder_set_member_name(j, "priority_groups");
    json_builder_begin_array(j);
    json_builder_add_string_value(j, JET_PIN_GROUP);
    json_builder_end_array(j);
    json_builder_set_member_name(j, "priority_policy");
    json_builder_add_string_value(j, "pinned_client");
    json_builder_set_member_name(j, "priority_timeout");
    guint64 pin_ttl_ms = MIN(b->expires_ms + b->claim_ttl_ms, (guint64)(G_MAXINT64 / 1000000));
    json_builder_add_int_value(j, (gint64)pin_ttl_ms * 1000000);
    json_builder_end_object(j);
    json_builder_end_object(j);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(j);
    json_generator_set_root(gen, root);
    g_autofree char *body = json_generator_to_data(gen, NULL);
    g_autofree char *api = g_strdup_printf("CONSUMER.CREATE.%s.%s", b->stream, b->consumer);
    natsStatus s = NATS_OK;
    JsonObject *o = jet_js_api_request(nc, api, body, 5000, &s);
    if (o == NULL)
        return fail(error, b, exists ? "update consumer (pinned)" : "create consumer (pinned)",
                    s != NATS_OK ? s : NATS_ERR, 0);
    gint64 code = 0;
    const char *why = jet_js_api_error(o, &code);
    if (why != NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "binding %s: %s consumer %s/%s as a pinned priority group: "
                    "%s [err %" G_GINT64_FORMAT "]", b->name, exists ? "update" : "create", b->stream, b->consumer,
                    why, code);
        json_object_unref(o);
        return FALSE;
    }
    json_object_unref(o);
    return TRUE;
}

gboolean jet_consumer_ensure(natsConnection *nc, jsCtx *js, const JetBindingConfig *b, guint64 start_seq,
                             JetConsumerFacts *facts, GError **error)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s;

    if (b->manage == JET_MANAGE_CREATE && !jet_stream_ensure(js, b, error))
        return FALSE;
    /* The host checks the filter of a consumer it makes, on every server
     * version (only 2.9 refuses a filter outside the stream, 10093). */
    if (!stream_facts(js, b, b->manage != JET_MANAGE_BIND, facts, error))
        return FALSE;

    s = js_GetConsumerInfo(&ci, js, b->stream, b->consumer, NULL, &jerr);
    gboolean exists = (s == NATS_OK);
    if (!exists && jerr != ERR_CONSUMER_NOT_FOUND && jerr != ERR_STREAM_NOT_FOUND && s != NATS_NOT_FOUND)
        return fail(error, b, "consumer info", s, jerr);

    if (b->manage == JET_MANAGE_BIND) {
        if (!exists) {
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                        "binding %s: consumer %s/%s does not exist (manage = bind never creates it)",
                        b->name, b->stream, b->consumer);
            return FALSE;
        }
        gboolean ok = jet_consumer_check_fits(b, ci, error);
        if (ok)
            fill_facts(ci, facts);
        jsConsumerInfo_Destroy(ci);
        /* An operator's consumer may name a priority group: pulls must too. */
        if (ok && facts != NULL)
            jet_consumer_priority(nc, b->stream, b->consumer, facts->pin_group, &facts->pinned);
        return ok;
    }

    if (exists && !jet_consumer_check_fits(b, ci, error)) {
        jsConsumerInfo_Destroy(ci);
        return FALSE;
    }
    jsConsumerInfo_Destroy(ci);
    ci = NULL;

    if (wants_pin(nc, b)) {
        if (!pinned_create(nc, b, exists, start_seq, error))
            return FALSE;
        if (!exists)
            jet_log(JET_LOG_INFO, b->name, "consumer-created",
                    "created durable pull consumer %s/%s starting at stream seq %" G_GUINT64_FORMAT
                    ", a pinned priority group", b->stream, b->consumer, MAX(start_seq, 1));
        jerr = 0;
        s = js_GetConsumerInfo(&ci, js, b->stream, b->consumer, NULL, &jerr);
        if (s != NATS_OK)
            return fail(error, b, "consumer info", s, jerr);
        fill_facts(ci, facts);
        jsConsumerInfo_Destroy(ci);
        if (facts != NULL)
            jet_consumer_priority(nc, b->stream, b->consumer, facts->pin_group, &facts->pinned);
        return TRUE;
    }

    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = b->consumer;
    cc.AckPolicy = js_AckExplicit;
    if (!exists && start_seq > 1) {
        cc.DeliverPolicy = js_DeliverByStartSequence;
        cc.OptStartSeq = start_seq;
    } else {
        cc.DeliverPolicy = js_DeliverAll;
    }
    cc.AckWait = (int64_t)b->ack_wait_ms * 1000000;
    cc.MaxDeliver = b->max_deliver;
    cc.MaxAckPending = b->max_ack_pending;
    cc.FilterSubject = b->filter_subject;
    jerr = 0;
    if (exists)
        s = js_UpdateConsumer(&ci, js, b->stream, &cc, NULL, &jerr);
    else
        s = js_AddConsumer(&ci, js, b->stream, &cc, NULL, &jerr);
    if (s != NATS_OK)
        return fail(error, b, exists ? "update consumer" : "create consumer", s, jerr);
    if (!exists)
        jet_log(JET_LOG_INFO, b->name, "consumer-created",
                "created durable pull consumer %s/%s starting at stream seq %" G_GUINT64_FORMAT,
                b->stream, b->consumer, MAX(start_seq, 1));
    fill_facts(ci, facts);
    jsConsumerInfo_Destroy(ci);
    /* Without a pin the consumer has no priority group: an update by nats.c
     * removes the ones an earlier run (or pin = true) set. */
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
    natsStatus s = js_GetStreamInfo(&si, js, b->stream, NULL, &jerr);
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
