/* A durable binding (docs/engine.md): every worker runs the pull loop
 * (engine_pull.c) on the one durable consumer, handles what its own pulls
 * bring, and acks it; a pull's last ack goes with the next pull. */
#include "engine_private.h"
#include "log.h"

static guint durable_workers(const JetBindingConfig *b)
{
    return MAX(b->workers, 1);
}

static void durable_start(JetEngine *e)
{
    jet__pull_start_workers(e, NULL);
    jet_log(JET_LOG_INFO, e->b->name, "subscribed", "%u worker(s) on %s/%s, batch %u", e->n_workers, e->b->stream,
            e->b->consumer, e->b->batch);
    jet__pull_start_keeper(e);
}

const JetDriver jet__driver_durable = {
    .kind = "durable",
    .acked = TRUE,
    .n_workers = durable_workers,
    .transport = jet__engine_transport_init,
    .start = durable_start,
    .ack_with_pull = jet__ack_with_next_pull,
};
