/* Capture-then-ack: the DLQ record as a message, publishing it, verifying a
 * duplicate and the confirmed ack.  capture.h has the contract (the record
 * itself is core's dlq_record.c, the DLQ stream dlq_stream.c);
 * docs/dead-letters.md the operator's view. */
#include "capture.h"

#include "conn.h"
#include "errors.h"
#include "hdr_block.h"
#include "log.h"
#include "js_api.h"
#include "nats_raw.h"
#include "replies.h"
#include "stream_msg.h"

#include <inttypes.h>
#include <string.h>

#define ERR_MSG_SIZE_EXCEEDED 10054
#define ERR_HEADER_SIZE_EXCEEDED 10097

#define MSG_ID_HDR "Nats-Msg-Id"
/* Larger than any pub-ack a server writes (a 255-byte stream name, a domain). */
#define PUB_ACK_MAX_BYTES 4096

/* --- building ------------------------------------------------------------- */

GPtrArray *jet_capture_msg_headers(natsMsg *m)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    const char **keys = NULL;
    int count = 0;
    if (m == NULL || natsMsgHeader_Keys(m, &keys, &count) != NATS_OK)
        return out;
    for (int i = 0; i < count; i++) {
        const char **values = NULL;
        int nv = 0;
        if (natsMsgHeader_Values(m, keys[i], &values, &nv) != NATS_OK)
            continue;
        for (int j = 0; j < nv; j++) {
            g_ptr_array_add(out, g_strdup(keys[i]));
            g_ptr_array_add(out, g_strdup(values[j] != NULL ? values[j] : ""));
        }
        free((void *)values);
    }
    free((void *)keys);
    return out;
}

/* The record's header block (g_free) and its length; NULL with error as
 * jet_capture_build says. */
static char *build_block(const char *dlq_subject, int len, const GPtrArray *original, const GArray *defects,
                         const JetCaptureFacts *f, gint64 max_payload, JetCaptureBuild *result, gsize *block_len,
                         GError **error)
{
    if (result != NULL)
        memset(result, 0, sizeof *result);
    *block_len = 0;
    if (dlq_subject == NULL || *dlq_subject == '\0') {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_INVALID, "no DLQ subject");
        return NULL;
    }
    g_autoptr(GPtrArray) hs = jet_capture_headers(len, original, defects, f, max_payload, result, error);
    if (hs == NULL)
        return NULL;
    g_autoptr(GError) werr = NULL;
    char *block = jet_hdr_write(hs, block_len, &werr);
    if (block == NULL && werr != NULL) {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_INVALID, "building the DLQ message: %s",
                    werr->message);
        return NULL;
    }
    return block != NULL ? block : g_strdup("");
}

natsMsg *jet_capture_build(const char *dlq_subject, const char *data, int len, const GPtrArray *original,
                           const GArray *defects, const JetCaptureFacts *f, gint64 max_payload,
                           JetCaptureBuild *result, GError **error)
{
    g_return_val_if_fail(f != NULL, NULL);
    g_return_val_if_fail(len >= 0 && (len == 0 || data != NULL), NULL);
    gsize block_len = 0;
    g_autofree char *block = build_block(dlq_subject, len, original, defects, f, max_payload, result, &block_len,
                                         error);
    if (block == NULL)
        return NULL;
    return jet_nats_msg_new_raw(dlq_subject, block, block_len, data, (gsize)len, error);
}

/* --- publishing ------------------------------------------------------------ */

/* A publish's result as an outcome: s and jerr as js_PublishMsg gives them,
 * why the server's words (NULL: nats.c's text for s). */
static JetCaptureOutcome publish_outcome(const char *subject, natsStatus s, jsErrCode jerr, const char *why,
                                         gint64 timeout_ms, GError **error)
{
    g_autofree char *text = why != NULL ? g_strdup(why) : jet_nats_error(s);
    if (s == NATS_MAX_PAYLOAD || jerr == ERR_MSG_SIZE_EXCEEDED || jerr == ERR_HEADER_SIZE_EXCEEDED) {
        g_set_error(error, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE,
                    "capture to %s refused for size: %s [err %d]", subject, text, (int)jerr);
        return JET_CAPTURE_TOO_LARGE;
    }
    if (s == NATS_NO_RESPONDERS)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "capture to %s: no responders: no stream captures the subject (is the DLQ stream missing?)",
                    subject);
    else if (s == NATS_TIMEOUT)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s: no pub-ack within %" G_GINT64_FORMAT " ms",
                    subject, timeout_ms);
    else if (jerr != 0)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s refused: %s [err %d]", subject, text,
                    (int)jerr);
    else
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s failed: %s", subject, text);
    return JET_CAPTURE_FAILED;
}

static JetCaptureOutcome not_a_pub_ack(const char *subject, GError **error)
{
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "capture to %s: the reply is not a stream's pub-ack", subject);
    return JET_CAPTURE_FAILED;
}

JetCaptureOutcome jet_capture_publish(jsCtx *js, natsMsg *dlq_msg, gint64 timeout_ms, JetCapturePubAck *ack,
                                      GError **error)
{
    if (ack != NULL)
        memset(ack, 0, sizeof *ack);
    g_return_val_if_fail(js != NULL && dlq_msg != NULL, JET_CAPTURE_FAILED);
    const char *subject = natsMsg_GetSubject(dlq_msg);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = timeout_ms > 0 ? timeout_ms : 5000;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, js, dlq_msg, &po, &jerr);
    if (s != NATS_OK)
        return publish_outcome(subject, s, jerr, NULL, po.MaxWait, error);
    /* Whatever answered must be a stream's pub-ack. */
    gboolean named = pa->Stream != NULL && *pa->Stream != '\0' && pa->Sequence > 0;
    if (named && ack != NULL) {
        ack->duplicate = pa->Duplicate;
        ack->seq = pa->Sequence;
        g_strlcpy(ack->stream, pa->Stream, sizeof ack->stream);
    }
    jsPubAck_Destroy(pa);
    return named ? JET_CAPTURE_CAPTURED : not_a_pub_ack(subject, error);
}

/* The same publish with the answer read by this thread (replies.h): the
 * record (block, data) to subject, the pub-ack parsed here.  No reply inbox
 * can be made: js_PublishMsg as above. */
static JetCaptureOutcome publish_direct(natsConnection *nc, jsCtx *js, const char *subject, const char *block,
                                        gsize block_len, const char *data, int len, gint64 timeout_ms,
                                        JetCapturePubAck *ack, GError **error)
{
    memset(ack, 0, sizeof *ack);
    timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
    JetReplies *r = jet_replies_here(nc, NULL);
    natsMsg *m = jet_nats_msg_new_raw_reply(subject, r != NULL ? jet_replies_subject(r) : NULL, block, block_len,
                                            data, (gsize)len, error);
    if (m == NULL)
        return JET_CAPTURE_FAILED;
    if (r == NULL) {
        JetCaptureOutcome res = jet_capture_publish(js, m, timeout_ms, ack, error);
        natsMsg_Destroy(m);
        return res;
    }
    natsStatus s = jet_replies_publish(r, m);
    if (block_len > 1024)
        natsMsg_Destroy(m);   /* many headers: not kept for later */
    else
        jet_replies_free_later(nc, m);
    natsMsg *reply = NULL;
    if (s == NATS_OK)
        s = jet_replies_wait(r, timeout_ms, &reply);
    if (s != NATS_OK)
        return publish_outcome(subject, s, 0, NULL, timeout_ms, error);
    /* A pub-ack is a few hundred bytes; anything much larger is not one,
     * and is not parsed (json-glib recurses into nested arrays). */
    g_autoptr(JsonParser) p = json_parser_new_immutable();
    gboolean parsed = natsMsg_GetDataLength(reply) <= PUB_ACK_MAX_BYTES &&
                      json_parser_load_from_data(p, natsMsg_GetData(reply), natsMsg_GetDataLength(reply), NULL);
    jet_replies_free_later(nc, reply);
    JsonNode *root = parsed ? json_parser_get_root(p) : NULL;
    JsonObject *o = root != NULL && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    if (o == NULL)
        return not_a_pub_ack(subject, error);
    gint64 code = 0;
    const char *why = jet_js_api_error(o, &code);
    if (why != NULL)
        return publish_outcome(subject, NATS_ERR, (jsErrCode)code, why, timeout_ms, error);
    /* Whatever answered may be no stream: every member is read by its type. */
    JsonNode *sn = json_object_get_member(o, "stream"), *qn = json_object_get_member(o, "seq"),
             *dn = json_object_get_member(o, "duplicate");
    const char *stream = sn != NULL && json_node_get_value_type(sn) == G_TYPE_STRING ? json_node_get_string(sn) : NULL;
    gint64 seq = qn != NULL && json_node_get_value_type(qn) == G_TYPE_INT64 ? json_node_get_int(qn) : 0;
    gboolean dup_typed = dn == NULL || json_node_get_value_type(dn) == G_TYPE_BOOLEAN;
    if (stream == NULL || *stream == '\0' || seq <= 0 || !dup_typed)
        return not_a_pub_ack(subject, error);
    ack->duplicate = dn != NULL && json_node_get_boolean(dn);
    ack->seq = (guint64)seq;
    g_strlcpy(ack->stream, stream, sizeof ack->stream);
    return JET_CAPTURE_CAPTURED;
}

static const char *nonempty(const char *s)
{
    return s != NULL && *s ? s : NULL;
}

/* A provenance header of the record against what this capture would write. */
static gboolean prov_equal(const GPtrArray *hs, const char *name, const char *want, GString *why)
{
    const char *got = jet_hdr_get(hs, name);
    if (g_strcmp0(got, want) == 0)
        return TRUE;
    g_autofree char *g = got != NULL ? jet_hdr_escape(got, strlen(got), 64) : g_strdup("(none)");
    g_string_append_printf(why, "%s%s is %s, not %s", why->len ? "; " : "", name, g, want != NULL ? want : "(none)");
    return FALSE;
}

JetCaptureDup jet_capture_verify_duplicate(natsConnection *nc, const JetCapturePubAck *ack, const char *msg_id,
                                           const JetCaptureFacts *f, char **why_out, GError **error)
{
    g_return_val_if_fail(nc != NULL && ack != NULL && f != NULL && why_out != NULL, JET_CAPTURE_DUP_UNVERIFIED);
    *why_out = NULL;
    g_autoptr(JetStoredMsg) rec = NULL;
    JetStoredStatus st = jet_stream_msg_get(nc, ack->stream, ack->seq, 5000, &rec, error);
    if (st == JET_STORED_ERROR)
        return JET_CAPTURE_DUP_UNVERIFIED;
    if (st == JET_STORED_ABSENT) {
        *why_out = g_strdup_printf("the record it names (%s:%" G_GUINT64_FORMAT ") was removed", ack->stream,
                                   ack->seq);
        return JET_CAPTURE_DUP_COLLISION;
    }
    g_auto(JetHdrParse) p = { 0 };
    gsize hlen = 0;
    const char *h = rec->hdrs != NULL ? g_bytes_get_data(rec->hdrs, &hlen) : NULL;
    jet_hdr_parse(h, hlen, &p);
    g_autoptr(GString) why = g_string_new(NULL);
    g_autofree char *seq = f->stream_seq > 0 ? g_strdup_printf("%" G_GUINT64_FORMAT, f->stream_seq) : NULL;
    g_autofree char *created = f->stream_created_ns > 0 ? jet_time_format_ns(f->stream_created_ns) : NULL;
    gboolean same = prov_equal(p.headers, MSG_ID_HDR, msg_id, why);
    same = prov_equal(p.headers, JET_HDR_ORIGIN_STREAM, nonempty(f->stream), why) && same;
    same = prov_equal(p.headers, JET_HDR_ORIGIN_STREAM_CREATED, created, why) && same;
    same = prov_equal(p.headers, JET_HDR_ORIGIN_CONSUMER, nonempty(f->consumer), why) && same;
    same = prov_equal(p.headers, JET_HDR_ORIGIN_SEQ, seq, why) && same;
    if (same)
        return JET_CAPTURE_DUP_SAME;
    *why_out = g_strdup_printf("the record it names (%s:%" G_GUINT64_FORMAT ") is another message's: %s",
                               ack->stream, ack->seq, why->str);
    return JET_CAPTURE_DUP_COLLISION;
}

gboolean jet_ack_confirmed(natsConnection *nc, const char *reply_subject, gint64 timeout_ms, GError **error)
{
    g_return_val_if_fail(nc != NULL, FALSE);
    if (reply_subject == NULL || *reply_subject == '\0') {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "no reply subject to ack");
        return FALSE;
    }
    natsMsg *reply = NULL;
    natsStatus s = jet_replies_request(nc, reply_subject, "+ACK", 4, timeout_ms > 0 ? timeout_ms : 5000, &reply);
    if (s == NATS_OK) {
        jet_replies_free_later(nc, reply);
        return TRUE;
    }
    if (s == NATS_NO_RESPONDERS)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER,
                    "ack not confirmed: no responders (the consumer is gone)");
    else if (s == NATS_TIMEOUT)
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "ack not confirmed: no reply within %" G_GINT64_FORMAT " ms",
                    timeout_ms > 0 ? timeout_ms : 5000);
    else {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "ack not confirmed: %s", why);
    }
    return FALSE;
}

/* --- one capture, stored and verified -------------------------------------- */

JetCaptureOutcome jet_capture_store(natsConnection *nc, jsCtx *js, const char *dlq_subject, const char *data,
                                    int len, const JetHdrParse *orig, JetCaptureFacts *facts, gint64 max_payload,
                                    gint64 timeout_ms, const JetCaptureHooks *hooks, JetCaptureStored *out,
                                    GError **error)
{
    static const JetCaptureHooks none = { 0 };
    const JetCaptureHooks *h = hooks != NULL ? hooks : &none;
    JetCaptureStored local;
    JetCaptureStored *o = out != NULL ? out : &local;
    memset(o, 0, sizeof *o);
    g_return_val_if_fail(nc != NULL && js != NULL && facts != NULL, JET_CAPTURE_FAILED);
    g_return_val_if_fail(len >= 0 && (len == 0 || data != NULL), JET_CAPTURE_FAILED);
    for (int attempt = 0; attempt < JET_CAPTURE_STORE_ATTEMPTS; attempt++) {
        g_autoptr(GError) err = NULL;
        g_auto(JetCaptureBuild) build = { 0 };
        gsize block_len = 0;
        g_autofree char *block = build_block(dlq_subject, len, orig != NULL ? orig->headers : NULL,
                                             orig != NULL ? orig->defects : NULL, facts, max_payload, &build,
                                             &block_len, &err);
        if (block == NULL) {
            JetCaptureOutcome res = g_error_matches(err, JET_CAPTURE_ERROR, JET_CAPTURE_ERROR_TOO_LARGE)
                                        ? JET_CAPTURE_TOO_LARGE
                                        : JET_CAPTURE_FAILED;
            g_propagate_error(error, g_steal_pointer(&err));
            return res;
        }
        if (build.headers_dropped && attempt == 0 && h->headers_dropped != NULL)
            h->headers_dropped(h->data);
        JetCapturePubAck ack;
        JetCaptureOutcome res = publish_direct(nc, js, dlq_subject, block, block_len, data, len, timeout_ms, &ack,
                                               &err);
        if (res == JET_CAPTURE_FAILED && h->publish_failed != NULL && h->publish_failed(h->data, err)) {
            g_clear_error(&err);
            res = publish_direct(nc, js, dlq_subject, block, block_len, data, len, timeout_ms, &ack, &err);
        }
        if (res != JET_CAPTURE_CAPTURED) {
            g_propagate_error(error, g_steal_pointer(&err));
            return res;
        }
        o->seq = ack.seq;
        g_strlcpy(o->stream, ack.stream, sizeof o->stream);
        if (!ack.duplicate || build.msg_id == NULL)
            return JET_CAPTURE_CAPTURED;
        g_autofree char *why = NULL;
        JetCaptureDup d = jet_capture_verify_duplicate(nc, &ack, build.msg_id, facts, &why, &err);
        if (d == JET_CAPTURE_DUP_SAME) {
            o->duplicate = TRUE;
            return JET_CAPTURE_CAPTURED;
        }
        o->seq = 0;
        o->stream[0] = '\0';
        if (d == JET_CAPTURE_DUP_UNVERIFIED) {
            g_prefix_error(&err, "the pub-ack says duplicate and the record it names could not be checked: ");
            g_propagate_error(error, g_steal_pointer(&err));
            return JET_CAPTURE_FAILED;
        }
        o->collisions++;
        if (h->collision != NULL)
            h->collision(h->data, build.msg_id, ack.seq, why);
        facts->msg_id_after = ack.seq;
    }
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "%d captures in a row collided with other records",
                JET_CAPTURE_STORE_ATTEMPTS);
    return JET_CAPTURE_FAILED;
}
