/* The schedule check's input from the config and the server: schedule_facts.h. */
#include "schedule_facts.h"

static guint64 ns_to_ms(int64_t ns)
{
    return (guint64)MAX(ns / 1000000, 0);
}

void jet_schedule_facts_read(JetScheduleFacts *f, const JetBindingConfig *b, JetConn *conn, JetLedger *ledger)
{
    g_return_if_fail(f != NULL && b != NULL);
    f->backoff = NULL;
    jet_schedule_input_from_binding(b, &f->in);
    JetScheduleInput *in = &f->in;
    if (ledger != NULL && b->ledger) {
        in->has_ledger = TRUE;
        in->ledger_max_age_ms = jet_ledger_max_age_ms(ledger);
    }
    if (conn == NULL)
        return;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, jet_conn_js(conn), b->stream, NULL, NULL) == NATS_OK) {
        in->has_stream = TRUE;
        in->stream_max_age_ms = ns_to_ms(si->Config->MaxAge);
        jsStreamInfo_Destroy(si);
    }
    jsConsumerInfo *ci = NULL;
    if (b->kind != JET_KIND_DURABLE ||
        js_GetConsumerInfo(&ci, jet_conn_js(conn), b->stream, b->consumer, NULL, NULL) != NATS_OK)
        return;
    const jsConsumerConfig *cc = ci->Config;
    in->has_consumer = TRUE;
    in->consumer_ack_wait_ms = ns_to_ms(cc->AckWait);
    in->consumer_max_deliver = cc->MaxDeliver;
    in->consumer_max_ack_pending = cc->MaxAckPending;
    if (cc->BackOffLen > 0) {
        f->backoff = g_new0(guint64, (gsize)cc->BackOffLen);
        for (int i = 0; i < cc->BackOffLen; i++)
            f->backoff[i] = ns_to_ms(cc->BackOff[i]);
        in->backoff_ms = f->backoff;
        in->n_backoff = (gsize)cc->BackOffLen;
    }
    jsConsumerInfo_Destroy(ci);
}

void jet_schedule_facts_clear(JetScheduleFacts *f)
{
    g_clear_pointer(&f->backoff, g_free);
    f->in.backoff_ms = NULL;
    f->in.n_backoff = 0;
}
