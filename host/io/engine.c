/* The engine's runner (docs/architecture.md, "The engine: a runner and its
 * drivers"): a binding's life, from jet_engine_new to jet_engine_free, the
 * same for every kind.  What a kind adds is its driver's (engine_driver.h),
 * chosen once, at jet_engine_new. */
#include "engine.h"
#include "engine_private.h"
#include "log.h"
#include "nats_raw.h"
#include "stats.h"
#include "sub_end.h"

#include <string.h>

static void on_reconnect(gpointer data)
{
    JetEngine *e = data;
    jet__forget_stream_life(e);
    for (guint i = 0; i < e->n_workers; i++)
        jet__wake_worker(&e->workers[i]);
}

/* --- lifecycle ------------------------------------------------------------ */

JetEngine *jet_engine_new(JetConn *conn, const JetBindingConfig *b, JetInstance *inst,
                          const JetConsumerFacts *facts)
{
    JetEngine *e = g_new0(JetEngine, 1);
    e->conn = conn;
    e->b = b;
    e->inst = inst;
    if (facts != NULL)
        e->facts = *facts;
    else
        e->facts.ack_wait_ms = (gint64)b->ack_wait_ms;
    e->observed_floor = e->facts.ack_floor_stream;
    e->floor_life_ns = e->facts.stream_created_ns;
    e->floor_consumer_ns = e->facts.consumer_created_ns;
    e->num_pending = e->num_ack_pending = -1;
    jet_binding_settle_policy(b, e->facts.max_deliver, &e->policy);
    e->driver = jet__engine_driver(b);
    if (e->driver->acked)
        e->next_subject = g_strdup_printf("%s.CONSUMER.MSG.NEXT.%s.%s", jet_conn_api_prefix(conn), b->stream,
                                          b->consumer);
    g_mutex_init(&e->floor_lock);
    g_mutex_init(&e->pin_lock);
    jet__pin_set(e, e->facts.pin_group, e->facts.pinned);
    g_mutex_init(&e->lease_lock);
    g_mutex_init(&e->recover_lock);
    jet_isolation_init(&e->isolation);
    e->host_name = g_strdup(g_get_host_name());
    if (b->floor_age_ms > 0 && e->driver->acked) {
        JetFloorPolicy fp = { .floor_age_ns = (gint64)b->floor_age_ms * 1000000 };
        e->floor = jet_floor_monitor_new(&fp);
    }
    e->breaker = (JetBreakerPolicy){
        .mode = b->breaker,
        .floor_age_ns = (gint64)b->floor_age_ms * 1000000,
        .min_deliveries = b->min_deliveries,
    };
    g_cond_init(&e->lease_cond);
    g_mutex_init(&e->async_lock);
    g_cond_init(&e->async_cond);
    e->held = g_hash_table_new(g_direct_hash, g_direct_equal);
    e->n_workers = MAX(e->driver->n_workers(b), 1);
    e->workers = g_new0(Worker, e->n_workers);
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        w->eng = e;
        w->index = i;
        g_mutex_init(&w->take_lock);
        g_queue_init(&w->moved);
        g_mutex_init(&w->ack_lock);
    }
    if (e->driver->init != NULL)
        e->driver->init(e);
    jet_conn_on_reconnect(conn, on_reconnect, e);
    return e;
}

void jet_engine_set_ledger(JetEngine *e, JetLedger *ledger, const char *host_name)
{
    e->ledger = e->b->ledger ? ledger : NULL;
    if (host_name != NULL) {
        g_free(e->host_name);
        e->host_name = g_strdup(host_name);
    }
}

void jet_engine_floor_stats(JetEngine *e, JetFloorStats *out)
{
    if (e->floor != NULL)
        jet_floor_monitor_stats(e->floor, out);
    else
        memset(out, 0, sizeof *out);
}

void jet_engine_set_take_hook(JetEngine *e, JetEngineTakeHook fn, gpointer data)
{
    e->take_hook = fn;
    e->take_hook_data = data;
}

void jet_engine_set_hung_hook(JetEngine *e, JetEngineHungHook fn, gpointer data)
{
    e->hung_hook = fn;
    e->hung_hook_data = data;
}

void jet_engine_set_clean_predecessor(JetEngine *e)
{
    e->clean_predecessor = TRUE;
}

gboolean jet_engine_drained_clean(JetEngine *e)
{
    JetEngineStats st;
    jet_engine_stats(e, &st);
    return st.uncertain == 0 && st.stranded == 0;
}

void jet_engine_set_loss_hook(JetEngine *e, JetEngineLossHook fn, gpointer data)
{
    e->loss_hook = fn;
    e->loss_hook_data = data;
}

void jet_engine_set_settle_hook(JetEngine *e, JetEngineSettleHook fn, gpointer data)
{
    e->settle_hook = fn;
    e->settle_hook_data = data;
}

gboolean jet_engine_bind(JetEngine *e, guint attempts, GError **error)
{
    if (e->driver->bind == NULL)
        return TRUE;   /* bound by consumer_setup before the engine existed */
    return e->driver->bind(e, MAX(attempts, 1), error);
}

void jet_engine_start(JetEngine *e)
{
    /* Before the first delivery: are empty messages' blocks read as
     * delivered (nats_raw.h)?  Once per process. */
    jet_nats_raw_probe(jet_conn_nats(e->conn));
    /* Lanes pull on one worker for all its runners, one pull at a time;
     * a durable worker has two out with a threshold. */
    e->pulls_out = e->driver->take != NULL ? 1u : e->n_workers * (e->b->threshold > 0 ? 2u : 1u);
    jet__progress(e);
    g_atomic_int_set(&e->started, 1);
    e->driver->transport(e, &e->transport);
    e->executor = jet_executor_new(e->b, &e->policy, e->inst, e->host_name,
                                   e->ledger != NULL ? jet_ledger_bucket(e->ledger) : NULL, &e->transport, e);
    /* What a previous run held when it ended comes back within AckWait:
     * if that run died, some of it is a suspect.  Careful until it is all
     * settled (the floor passes what had been delivered) or AckWait x 2. */
    if (e->facts.num_ack_pending > 0 && e->clean_predecessor) {
        jet_log(JET_LOG_INFO, e->b->name, "restart-released",
                "%" G_GINT64_FORMAT " message(s) held unacked at start, up to stream seq %" G_GUINT64_FORMAT
                ": released by this binding's previous engine in this process (a reload), their releases "
                "recorded; pulling as usual", e->facts.num_ack_pending, e->facts.delivered_stream);
    } else if (e->facts.num_ack_pending > 0) {
        e->start_careful_until_us = now_us() + jet__careful_span_us(e);
        e->start_careful_floor = e->facts.delivered_stream;
        jet_log(JET_LOG_INFO, e->b->name, "careful",
                "%" G_GINT64_FORMAT " message(s) were held unacked at start, up to stream seq %" G_GUINT64_FORMAT
                ": pulling one message at a time until the ack floor passes it or %" G_GINT64_FORMAT " ms have "
                "passed, as some may come back as suspects", e->facts.num_ack_pending, e->facts.delivered_stream,
                jet__careful_span_us(e) / 1000);
    }
    jet__async_start(e);
    e->driver->start(e);
}

void jet_engine_stop(JetEngine *e)
{
    g_atomic_int_set(&e->stopping, 1);
    jet_instance_set_stopping(e->inst);
    for (guint i = 0; i < e->n_workers; i++)
        jet__wake_worker(&e->workers[i]);
}

void jet_engine_join(JetEngine *e)
{
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        if (w->thread != NULL) {
            g_thread_join(w->thread);
            w->thread = NULL;
        }
    }
    if (e->driver->joined != NULL)
        e->driver->joined(e);
    /* Drain: what the plugin keeps pending is completed (or given up by
     * the lease keeper, which runs until then). */
    jet__async_join(e);
    jet_keeper_remove(&e->keep);
    if (e->keeper != NULL) {
        g_mutex_lock(&e->lease_lock);
        e->keeper_quit = TRUE;
        g_cond_signal(&e->lease_cond);
        g_mutex_unlock(&e->lease_lock);
        g_thread_join(e->keeper);
        e->keeper = NULL;
    }
}

void jet_engine_free(JetEngine *e)
{
    if (e == NULL)
        return;
    jet_engine_stop(e);
    jet_engine_join(e);
    jet_conn_off_reconnect(e->conn, on_reconnect, e);
    for (guint i = 0; i < e->n_workers; i++) {
        Worker *w = &e->workers[i];
        jet_sub_end_destroy(jet_conn_nats(e->conn), w->sub);
        Item *it;
        while ((it = g_queue_pop_head(&w->moved)) != NULL) {
            if (it->is_delivery)
                jet__release_hold(e, it);
            natsMsg_Destroy(it->msg);
            g_free(it);
        }
        g_mutex_clear(&w->take_lock);
        for (guint k = 0; k < w->n_acks; k++)
            g_free(w->acks[k]);   /* never started, or its drain could not send them */
        g_mutex_clear(&w->ack_lock);
        g_free(w->wake_subject);
        g_free(w->inbox);
    }
    if (e->driver->fini != NULL)
        e->driver->fini(e);
    g_free(e->workers);
    g_hash_table_unref(e->held);
    g_mutex_clear(&e->floor_lock);
    g_mutex_clear(&e->pin_lock);
    jet_executor_free(e->executor);
    g_mutex_clear(&e->lease_lock);
    g_mutex_clear(&e->recover_lock);
    jet_isolation_clear(&e->isolation);
    jet_floor_monitor_free(e->floor);
    g_free(e->host_name);
    g_cond_clear(&e->lease_cond);
    g_mutex_clear(&e->async_lock);
    g_cond_clear(&e->async_cond);
    jet_msg_forget_owner(e);   /* a late completion through a kept handle must not reach e */
    g_free(e->next_subject);
    g_free(e);
}

const char *jet_engine_binding(const JetEngine *e)
{
    return e->b->name;
}

