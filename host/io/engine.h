/* The paced pull engine: one binding's workers pulling from its durable
 * consumer, handing each message to the plugin and settling it.
 *
 * Pacing: each worker has at most one pull outstanding (two with an early
 * re-pull threshold), and issues the next only after every message of the
 * previous one was handled and settled, so the client never holds more than
 * batch (+ threshold) messages.  Subscriptions have no pending limits:
 * boundedness comes from the pull, never from a drop.
 *
 * Taking: each worker reads its inbox through a synchronous subscription
 * itself (no hand-off between threads per message).  While a handler runs,
 * the lease keeper moves what waits behind it aside, so it is held too.
 *
 * Lease: the lease keeper (keeper.h: two threads for every binding) sends
 * in-progress acks for every message the host holds longer than a third of
 * AckWait, buffered or in a handler, until the handler passes the binding's
 * time limit; then the delivery is stale and is never released with a NAK.
 *
 * Acks: the ack of a message handled quickly while others wait behind it is
 * sent with theirs, once nothing waits or within ACK_COALESCE_US (1 ms)
 * (the keeper sends any held up behind a slow handler).  Only acks with no
 * ledger record to forget after them wait; every other settlement goes at
 * once.  See docs/engine.md. */
#ifndef JET_ENGINE_H
#define JET_ENGINE_H

#include <glib.h>
#include "config.h"
#include "conn.h"
#include "consumer_setup.h"
#include "floor_monitor.h"
#include "instance.h"
#include "ledger.h"
#include "settle.h"
#include "stats.h"

typedef struct JetEngine JetEngine;

/* Counters, per binding (stats.h).  Read with jet_engine_stats(): the sum
 * over the binding's workers. */
typedef JetStats JetEngineStats;

/* Called by a worker with each message it takes, before the handler runs
 * (tests use it to hold a handshake with the fixture plugin). */
typedef void (*JetEngineTakeHook)(guint worker, guint held, gpointer data);

/* Called by a worker once per delivery the executor settled, after acting
 * on it (tests compare it with the mock host's settlement: tests/live/parity.c):
 * the message's stream seq, the server's delivery count, and the action
 * settle.c decided (kind, delay, cause, failure number, reason).  A stale
 * delivery's action is reported too, though a NAK is then not sent.  Not
 * called for a malformed delivery (no decision) or one released unhandled
 * at a drain.  Set it before jet_engine_start(); it runs on worker
 * threads. */
typedef void (*JetEngineSettleHook)(guint64 stream_seq, guint32 deliveries, const JetSettleAction *a,
                                    gpointer data);

/* Tests only: called with each delivery an ordered binding takes, before
 * the host looks at it; TRUE makes the host act as if it never arrived (a
 * delivery lost between the server and the host).  Set it before
 * jet_engine_start(); it runs on the worker thread. */
typedef gboolean (*JetEngineLossHook)(guint64 stream_seq, guint64 consumer_seq, gpointer data);
void jet_engine_set_loss_hook(JetEngine *e, JetEngineLossHook fn, gpointer data);

/* binding and inst must outlive the engine.  facts: what setup learnt of
 * the consumer. */
JetEngine *jet_engine_new(JetConn *conn, const JetBindingConfig *binding, JetInstance *inst,
                          const JetConsumerFacts *facts);
/* An ordered binding's first bind (docs/engine.md, "Liveness and recovery"):
 * its stream (created in managed mode), its position record (with the
 * ledger: jet_engine_set_ledger first), its first consumer; `attempts`
 * attempts, 100 ms doubling, before FALSE with the last error (at once for
 * a checkpoint that does not parse).  Before jet_engine_start; without it
 * the worker binds by itself, retrying until the engine stops.  TRUE for a
 * durable binding, bound by consumer_setup.h. */
gboolean jet_engine_bind(JetEngine *e, guint attempts, GError **error);
void jet_engine_set_take_hook(JetEngine *e, JetEngineTakeHook fn, gpointer data);
void jet_engine_set_settle_hook(JetEngine *e, JetEngineSettleHook fn, gpointer data);

/* Called once, from the lease keeper's thread, when every worker of the
 * binding is in a handler past handler_timeout (one, with exit_on_any_hung):
 * the host should exit so that its supervisor restarts it (the hung
 * messages then come back as suspects, docs/engine.md). */
typedef void (*JetEngineHungHook)(JetEngine *e, const char *binding, guint hung_workers, gpointer data);
void jet_engine_set_hung_hook(JetEngine *e, JetEngineHungHook fn, gpointer data);

/* The attempt ledger (borrowed; NULL: none, the delivery count is all the
 * engine knows) and this host's name, for the isolation marker, breaker
 * claims and provenance.  Before jet_engine_start(). */
void jet_engine_set_ledger(JetEngine *e, JetLedger *ledger, const char *host_name);

/* An exclusive binding's fence (docs/exclusive.md, "The fence"): *until_us
 * is a monotonic time (g_get_monotonic_time), written by the claim's
 * thread and read atomically; at or past it no worker hands a message to
 * the handler: it waits until the fence moves on (a renewal confirmed) or
 * the engine stops (then what it holds is released unhandled).  until_us
 * must outlive the engine.  Before jet_engine_start(); without it, no
 * fence. */
void jet_engine_set_fence(JetEngine *e, const gint64 *until_us);

/* The floor monitor's counters and gauges (zero when floor_age is 0). */
void jet_engine_floor_stats(JetEngine *e, JetFloorStats *out);

/* A reload restarts a binding: once the old engine is joined,
 * jet_engine_drained_clean() says whether it ended with every message it
 * held settled or released, each release recorded (nothing uncertain or
 * stranded).  The new engine is then told, before jet_engine_start():
 * what it finds unacked at start was released by that engine, not left by
 * a run that died, so it skips the careful start (docs/reload.md). */
gboolean jet_engine_drained_clean(JetEngine *e);
void jet_engine_set_clean_predecessor(JetEngine *e);

/* Starts the workers and the lease keeper. */
void jet_engine_start(JetEngine *e);

/* Asks the workers to drain: the message in a handler finishes and is
 * settled, messages pulled but not handled are released at once, no new
 * pull is issued.  Returns at once; jet_engine_join() waits. */
void jet_engine_stop(JetEngine *e);
void jet_engine_join(JetEngine *e);
void jet_engine_free(JetEngine *e);

void jet_engine_stats(JetEngine *e, JetEngineStats *out);

/* What the health endpoints report of a binding, read at once (any thread). */
typedef struct {
    gboolean started;          /* its workers run */
    gboolean recovering;       /* its consumer is gone: being re-created, or waited for (manage = bind) */
    guint hung_workers;        /* workers in a handler past handler_timeout */
    guint in_handlers;         /* messages in a handler */
    guint buffered;            /* messages held, not yet in a handler */
    gint64 num_pending;        /* the consumer's, as the lease keeper last read it (-1: not yet) */
    gint64 num_ack_pending;
    /* How long it has held messages (buffered > 0) with no handling ending
     * since the oldest of them arrived: a binding that holds work and does
     * none of it (docs/operations.md, /readyz).  0 while it holds none. */
    gint64 idle_holding_ms;
    /* What is left of the breaker's pause of this host's pulls (a server
     * without the consumer pause), at least 1 until the workers pull
     * again; 0 when none. */
    gint64 pulls_paused_ms;
} JetEngineHealth;
void jet_engine_health(JetEngine *e, JetEngineHealth *out);
const char *jet_engine_binding(const JetEngine *e);

#endif
