/* The engine's insides, shared by its files (docs/architecture.md, "The
 * engine: a runner and its drivers"): the runner (engine.c) and its
 * services to the drivers (engine_gate.c, engine_acks.c, engine_inbox.c,
 * engine_health.c, the transport for the settlement executor in
 * engine_transport.c, the exclusive fence and pin in engine_fence.c and
 * engine_pin.c, the breaker's pause in engine_pause.c); the pull loop
 * (engine_pull.c); the drivers (engine_durable.c, engine_lanes.c,
 * ordered.c).  Not for anyone else. */
#ifndef JET_ENGINE_PRIVATE_H
#define JET_ENGINE_PRIVATE_H

#include "ack_subject.h"
#include "engine.h"
#include "engine_driver.h"
#include "executor.h"
#include "floor_monitor.h"
#include "keeper.h"
#include "jet_msg.h"
#include "ledger.h"
#include "settle.h"

#include <nats/nats.h>

/* A pull that ended early with nothing is followed by this pause, so a storm
 * of terminal statuses cannot become a hot loop (docs/engine.md). */
#define GUARD_DELAY_US (500 * 1000)
/* How long a worker waits for its queue before checking deadlines. */
#define TAKE_STEP_US (100 * 1000)
/* Pulls outstanding per worker: the live one and an early re-pull. */
#define MAX_PULLS 4
/* Acks of messages handled while others wait behind them are sent
 * together: once nothing waits, or once the oldest has waited this long
 * (checked before each message, and by the lease keeper behind a slow
 * handler), or when ACK_BATCH_MAX wait.  On a busy consumer the server
 * then reads a run of acks at once, as it does after a plain Fetch loop's
 * batch, instead of being woken for each between its own sends. */
#define ACK_COALESCE_US 1000
#define ACK_BATCH_MAX 128
/* What one pull may ask for when the binding sets no max_bytes: well under
 * the 64 MiB a nats-server buffers for a client before it closes the
 * connection as a slow consumer. */
#define PULL_BYTES_CAP (16 * 1024 * 1024)
#define PULL_MSG_SLACK 4096
/* How often the lease keeper's observer reads the consumer's ack floor (and
 * its longest step between lease visits). */
#define FLOOR_OBSERVE_US (2 * G_USEC_PER_SEC)

/* One message taken off a worker's inbox subscription, with when the host
 * first saw it (taken by the worker, or moved aside by the lease keeper). */
typedef struct JetItem {
    natsMsg *msg;
    gint64 arrived_us;
    /* lease state, guarded by the engine's lease lock while in the held set */
    gint64 extended_us;        /* last +WPI (or arrival) */
    gint64 handler_since_us;   /* 0: buffered */
    gboolean stale;            /* lease lapsed: never NAK'd */
    gboolean is_delivery;
    guint64 stream_seq;        /* parsed at arrival (0 when the subject does not parse) */
    gboolean meta_ok;          /* is_delivery and its reply subject parsed: meta, read once */
    JetAckMeta meta;
    guint worker;              /* the index of the worker that took it */
    /* A handler past handler_timeout is hung (docs/engine.md): it costs its
     * worker, never the binding.  Under the lease lock. */
    gboolean alone;            /* its handler entered the isolation gate alone */
    gboolean in_gate;          /* its handler is between the gate's enter and leave */
    gboolean hung;             /* past handler_timeout: the gate was left on its behalf */
    gboolean hung_counted;     /* counted in its worker's `hung` (until its handler returns) */
    gint64 hung_logged_us;     /* the last handler-hung line */
    gboolean lane_ambiguous;   /* lanes: its key header has two values (dead-lettered) */
    /* max_in_flight (engine_async.c): its delivery, which outlives the
     * worker's handling while the plugin keeps it pending; NULL elsewhere. */
    struct JetPending *pending;
    gboolean gate_elsewhere;   /* pending: its gate entry is no longer its worker's thread's */
    gboolean off_worker;       /* pending: settled by the completion thread, not its worker */
} Item;

/* Crash isolation: a suspect is handled alone.  Ordinary deliveries share
 * it, a suspect takes it alone; a suspect that is waiting holds new
 * deliveries back, so it runs as soon as the handlers in flight finish.
 * (GRWLock gives no such promise: on glibc it prefers readers, and a few
 * busy workers whose handlers overlap can starve a suspect for as long as
 * the backlog lasts.) */
typedef struct {
    GMutex lock;
    GCond cond;
    guint shared;              /* ordinary deliveries in a handler */
    guint waiting;             /* suspects waiting to run alone */
    guint sleepers;            /* threads in g_cond_wait on cond */
    gboolean alone;            /* a suspect is running alone */
} JetIsolation;

static inline void jet_isolation_init(JetIsolation *iso)
{
    g_mutex_init(&iso->lock);
    g_cond_init(&iso->cond);
    iso->shared = iso->waiting = iso->sleepers = 0;
    iso->alone = FALSE;
}

static inline void jet_isolation_clear(JetIsolation *iso)
{
    g_cond_clear(&iso->cond);
    g_mutex_clear(&iso->lock);
}

static inline void jet_isolation_enter(JetIsolation *iso, gboolean alone)
{
    g_mutex_lock(&iso->lock);
    if (alone) {
        iso->waiting++;
        while (iso->alone || iso->shared > 0) {
            iso->sleepers++;
            g_cond_wait(&iso->cond, &iso->lock);
            iso->sleepers--;
        }
        iso->waiting--;
        iso->alone = TRUE;
    } else {
        while (iso->alone || iso->waiting > 0) {
            iso->sleepers++;
            g_cond_wait(&iso->cond, &iso->lock);
            iso->sleepers--;
        }
        iso->shared++;
    }
    g_mutex_unlock(&iso->lock);
}

/* One more shared entry for a thread that holds one already (a handler
 * batch's next message): no suspect can be alone meanwhile, so it never
 * waits, which entering anew could (behind a waiting suspect, which waits
 * for the thread's first entry to leave). */
static inline void jet_isolation_join(JetIsolation *iso)
{
    g_mutex_lock(&iso->lock);
    iso->shared++;
    g_mutex_unlock(&iso->lock);
}

static inline void jet_isolation_leave(JetIsolation *iso, gboolean alone)
{
    g_mutex_lock(&iso->lock);
    if (alone)
        iso->alone = FALSE;
    else
        iso->shared--;
    /* GLib's broadcast is a futex system call even with nobody waiting:
     * on the hot path (every message leaves the gate) only when needed. */
    if (!iso->alone && iso->shared == 0 && iso->sleepers > 0)
        g_cond_broadcast(&iso->cond);
    g_mutex_unlock(&iso->lock);
}

/* The longest pin id the host keeps (the server's are 22 characters). */
#define JET_PIN_ID_MAX 63

typedef struct {
    guint id;
    guint batch;
    guint received;
    gint64 issued_us;
    gint64 deadline_us;
    gboolean active;
    gboolean pin_probe;        /* sent without a pin id, to be given one (engine_pin.c) */
} Pull;

typedef struct JetWorker {
    JetEngine *eng;
    guint index;
    GThread *thread;
    natsSubscription *sub;     /* synchronous: the worker takes its messages itself */
    char *inbox;               /* the prefix; pull N replies to <inbox>.N, <inbox>.0 wakes */
    char *wake_subject;        /* <inbox>.0 */
    /* Taking: the worker holds take_lock while it takes (or waits for) the
     * next message; the lease keeper, when it can get the lock, moves what
     * waits in the subscription into `moved`, so buffered messages are held
     * (their leases extended) while a long handler runs.  Moved messages are
     * older than anything still in the subscription: taken first. */
    GMutex take_lock;
    GQueue moved;              /* of Item*, under take_lock */
    gint n_moved;              /* atomic: the length of `moved` */
    /* Acks decided while more messages waited, not sent yet (ack_lock). */
    GMutex ack_lock;
    char *acks[ACK_BATCH_MAX]; /* reply subjects, owned */
    guint n_acks;
    gint64 acks_since_us;      /* when the oldest was decided */
    gint64 last_heard_us;      /* atomic: anything taken off the inbox */
    Pull pulls[MAX_PULLS];
    guint next_pull_id;
    guint generation;
    gboolean alone_next;       /* fetch one message without a byte budget */
    guint idle_windows;        /* consecutive pulls that ended with nothing */
    guint64 invalid_backoff_ms;
    gint hung;                 /* atomic: how many of its handlers are past handler_timeout (0: none) */
    gpointer driver_state;     /* its driver's own, per worker (an ordered binding's position and consumer) */
    /* Its own counters (stats.h): the hot path shares no lock.  The pad
     * keeps them off the cache line of the fields before them (an
     * alignment attribute would be wrong here: workers are g_new0'd). */
    guint64 stats_pad[8];
    JetStats stats;
} Worker;

struct JetEngine {
    /* A pull's byte budget without the binding's max_bytes (docs/engine.md,
     * "A pull's byte budget"): the largest delivery seen so far, its
     * payload and headers (atomic); how many pulls the binding has out at
     * once; set (atomic) once the consumer refused a host's budget. */
    gint largest_seen;
    guint pulls_out;
    gint budget_refused;
    const JetDriver *driver;   /* what its kind adds (engine_driver.h) */
    JetConn *conn;
    const JetBindingConfig *b;
    JetInstance *inst;
    JetConsumerFacts facts;
    JetSettlePolicy policy;
    char *next_subject;        /* <API prefix>.CONSUMER.MSG.NEXT.<stream>.<consumer> */
    Worker *workers;
    guint n_workers;
    gint stopping;             /* atomic */

    /* Counters of threads that are not a worker (stats.h). */
    guint64 shared_stats_pad[8];
    JetStats shared_stats;
    /* The settlement sequence (executor.h), on jet__engine_transport (or
     * an ordered binding's, kept in transport). */
    JetExecutor *executor;
    JetTransport transport;

    /* The set of messages the host holds, and its lease keeper: the
     * process's shared one (keep), or an ordered binding's own thread
     * (keeper, lease_cond, keeper_quit). */
    GMutex lease_lock;
    GHashTable *held;          /* Item* set */
    GThread *keeper;
    GCond lease_cond;
    gboolean keeper_quit;
    JetKeeperEntry keep;       /* the shared keeper's visits (keeper.h) */
    gint64 extend_every_us;    /* a held message's +WPI at most this often: AckWait / 3 */

    JetEngineTakeHook take_hook;
    gpointer take_hook_data;
    JetEngineSettleHook settle_hook;
    gpointer settle_hook_data;
    JetEngineLossHook loss_hook;
    gpointer loss_hook_data;
    const gint64 *fence;          /* jet_engine_set_fence; NULL: none */
    gint64 progress_us;           /* atomic: when the last handling ended (or the start) */
    gboolean idle_logged;         /* the lease keeper's: binding-idle was logged */
    gint fence_logged;            /* atomic: the closed fence was logged */
    /* The server's pin (engine_pin.c), on a consumer that is a pinned
     * priority group: the id its deliveries carry, "" while unknown, and
     * whether a pull without one is out (one at a time: the server pins
     * the first such pull and keeps every other one waiting). */
    gint pin_mode;                /* atomic: PIN_NONE, PIN_GROUP or PIN_PINNED (engine_pin.c) */
    GMutex pin_lock;              /* the three below */
    char pin_group[JET_PIN_GROUP_MAX + 1];
    char pin_id[JET_PIN_ID_MAX + 1];
    gboolean pin_probe_out;

    /* Settlement: the ledger (NULL: none or not configured), crash
     * isolation (a suspect takes it alone: no other message of the
     * binding is in a handler meanwhile), the floor monitor and breaker. */
    JetLedger *ledger;
    JetIsolation isolation;
    JetFloorMonitor *floor;
    JetBreakerPolicy breaker;
    char *host_name;
    gint64 capture_max_payload;   /* atomic; 0 = not read yet */
    gint64 stream_created_ns;     /* atomic; the origin stream's creation time, 0 = read it again */

    /* Careful mode (docs/retries.md, "What crashes cost"): while a suspect
     * may be near, one worker pulls one message at a time, so a death
     * burns a delivery of nothing but the message in hand. */
    gint64 careful_until_us;      /* atomic: after a suspect */
    gboolean clean_predecessor;    /* the binding's previous engine in this process drained cleanly */
    gint64 start_careful_until_us; /* atomic: after start, while messages held at start may come back... */
    guint64 start_careful_floor;  /* ...until the ack floor reaches the last delivered at start */
    gint suspects_running;        /* atomic: suspects between take and settlement */

    /* Every worker hung: the host must exit for its supervisor to restart
     * it (the daemon's hook); called once, from the lease keeper. */
    JetEngineHungHook hung_hook;
    gpointer hung_hook_data;
    gboolean hung_fired;

    /* Recovery: one worker at a time re-creates or waits for the consumer. */
    GMutex recover_lock;
    GMutex floor_lock;         /* the two below change together */
    guint64 observed_floor;    /* the last ack floor seen in consumer info (read atomically) */
    gint64 floor_life_ns;      /* the stream's life that floor counts in: its creation time (0: not known) */
    gint64 floor_consumer_ns;  /* the consumer that floor is of: its creation time (0: not known) */
    gint64 observed_at_us;

    /* For the health endpoints (jet_engine_health), all atomic. */
    gint started;              /* jet_engine_start ran */
    gint recovering;           /* a worker is re-creating (or waiting for) the consumer */
    gint consumer_missing;     /* the last consumer info read found no consumer */
    gint64 num_pending;        /* as the last consumer info read said; -1: never read */
    gint64 num_ack_pending;

    /* The driver's own state (engine_driver.h: made by its init, freed by
     * its fini); only the driver reads it. */
    gpointer driver_state;

    /* The breaker's pause on a server without the consumer pause: no
     * worker pulls before this monotonic time (0: none).  Atomic. */
    gint64 paused_until_us;

    /* max_in_flight (engine_async.c): deliveries the plugin keeps pending,
     * their completions, and the thread that settles them. */
    gint in_flight;               /* atomic */
    GMutex async_lock;            /* with async_cond: a worker waits for a free place or a suspect's completion */
    GCond async_cond;
    GAsyncQueue *completions;     /* of JetPending*, completed or given up */
    GThread *completer;
    gboolean completer_quit;      /* under async_lock: quit once nothing is pending */
    gint pending_hung_now;        /* atomic: pending deliveries past handler_timeout, not settled yet */
    /* The transport's handle() for a delivery that may be kept pending
     * (set with the completion thread: jet__handle_async). */
    int (*handle_pending)(JetEngine *e, Item *it, jet_msg *m, const JetMsgOwner *owner);
};

/* The counters a delivery's work adds to: its worker's. */
static inline JetStats *jet__stats_of(JetEngine *e, const Item *it)
{
    return it != NULL && it->worker < e->n_workers ? &e->workers[it->worker].stats : &e->shared_stats;
}


static inline gint64 now_us(void)
{
    return g_get_monotonic_time();
}

/* An exclusive binding's fence (jet_engine_set_fence): TRUE while no
 * handler may start.  jet__fence_wait waits while it is closed and the
 * engine runs: TRUE once it is open, FALSE when the engine stops first. */
gboolean jet__fence_closed(JetEngine *e);
gboolean jet__fence_wait(JetEngine *e);

/* A handling ended (settled or not): the binding did some of its work. */
static inline void jet__progress(JetEngine *e)
{
    __atomic_store_n(&e->progress_us, now_us(), __ATOMIC_RELAXED);
}

/* Sends a settlement body to a delivery's reply subject (fire and forget). */
void jet__publish_ack(JetEngine *e, const char *reply, const char *body);
/* Acks a delivery handled by the fast path (no ledger record, not a
 * suspect).  While more messages wait behind it, the ack waits too, to go
 * with theirs (see ACK_COALESCE_US); otherwise it goes now. */
void jet__ack_soon(JetEngine *e, Item *it);
void jet__publish_nak_delay(JetEngine *e, const char *reply, guint64 delay_ms);
/* engine_transport.c: a delivery as the executor sees it (stream and
 * consumer copied into the caller's buffers of JET_NAME_BUF bytes), and
 * the tests' hook and debug line after its settlement. */
#define JET_NAME_BUF 256
void jet__delivery_init(JetEngine *e, JetDelivery *d, Item *it, const JetAckMeta *meta, char *stream,
                        char *consumer);
void jet__settled(JetEngine *e, const JetDelivery *d, const JetExecuted *done);

/* engine_async.c (docs/async.md).  jet__deliver for a binding with
 * max_in_flight: TRUE when the plugin keeps the delivery pending (the item
 * is then the completion's to free). */
gboolean jet__deliver_async(JetEngine *e, Item *it, const JetAckMeta *meta);
/* The transport's handle() on such a binding: lends m with its completion
 * attached, and what handle() returned made into what the executor gets
 * (JET_PENDING: kept; an early completion's verdict; else as returned). */
int jet__handle_async(JetEngine *e, Item *it, jet_msg *m, const JetMsgOwner *owner);
/* Before taking a delivery: waits while max_in_flight are pending; FALSE
 * when the binding stops meanwhile (the caller releases the item). */
gboolean jet__async_admit(JetEngine *e);
/* The lease keeper, under the lease lock, for a pending item past
 * handler_timeout (limit_us): a handle() still running is a hung
 * handler's (IN_HANDLER: the caller's to report); a completed one goes on
 * to its settlement (SETTLING: its lease still extended); one still
 * pending is hung (HUNG: its lease stopped here, reported once and then
 * now and again). */
typedef enum { JET_ASYNC_IN_HANDLER, JET_ASYNC_SETTLING, JET_ASYNC_HUNG } JetAsyncPast;
JetAsyncPast jet__async_past_limit(JetEngine *e, Item *it, gint64 now, gint64 limit_us);
/* The keeper, under the lease lock: every place of max_in_flight held by a
 * hung pending delivery (or one, with exit_on_any_hung) is a binding that
 * can do nothing more: the host is told, once, as for every worker hung. */
void jet__async_every_place_hung(JetEngine *e);
void jet__async_start(JetEngine *e);
/* After the workers are joined: waits until nothing is pending. */
void jet__async_join(JetEngine *e);

/* A handler that was past handler_timeout has returned (under the lease
 * lock): its worker counts it no more.  TRUE when it was counted (the
 * caller logs it, out of the lock). */
gboolean jet__handler_uncount(JetEngine *e, Item *it);
void jet__handler_returned_log(JetEngine *e, Item *it);

/* Removes the item from the held set; returns whether its lease lapsed. */
gboolean jet__release_hold(JetEngine *e, Item *it);

/* engine_transport.c: the executor's transport on this engine, and the
 * deliveries handed to it: one delivery handled and settled; a delivery
 * whose $JS.ACK subject does not parse, captured with cause malformed
 * (with what can be read), then acked; a host release (drain) recorded in
 * the ledger before the NAK. */
extern const JetTransport jet__engine_transport;
/* The transport of a driver that acks (a driver table's `transport`). */
void jet__engine_transport_init(JetEngine *e, JetTransport *t);
void jet__deliver(JetEngine *e, Item *it, const JetAckMeta *meta, JetExecuted *out);
/* Handles and settles items[0..n-1] (their metadata metas) with one
 * handle_batch() call (executor.h, jet_executor_deliver_batch); outs (may
 * be NULL) gets each one's report. */
void jet__deliver_batch(JetEngine *e, Item *const *items, const JetAckMeta *metas, guint n, JetExecuted *outs);
void jet__capture_malformed(JetEngine *e, Item *it);
void jet__record_release(JetEngine *e, Item *it, const JetAckMeta *meta);
/* The delivery's header block as the server sent it, parsed by the host's
 * rules (docs/headers.md): NULL, or why it cannot be trusted (caller frees). */
char *jet__read_headers(JetEngine *e, natsMsg *m, guint64 stream_seq, JetHdrParse *out);
/* engine_pin.c: pulls on a pinned priority group (docs/exclusive.md, "The
 * server's fence").  Each is a no-op on a consumer without a group. */
/* Whether this worker may pull now: FALSE while another worker's pull
 * without a pin id is out.  *probe: the pull goes without one; else id
 * gets the pin it carries ("" on a consumer that is not pinned). */
/* The breaker's pause (docs/floor-monitor.md, "The pause").
 * jet__breaker_pause: after an enforcing breaker's claim, on the worker
 * that made it: the consumer paused by the server for every host, or
 * (a server before 2.11, or a refusal) this host's pulls held.
 * jet__pulls_paused: TRUE while this host's pulls are held; the first
 * call after the time logs the end. */
void jet__breaker_pause(JetEngine *e);
gboolean jet__pulls_paused(JetEngine *e);

gboolean jet__pin_may_pull(Worker *w, gboolean *probe, char id[JET_PIN_ID_MAX + 1]);
/* The pull request's priority fields (",\"group\":...") for buf, with id
 * when it is not empty. */
void jet__pin_fields(JetEngine *e, const char *id, char *buf, gsize size);
/* The expiry of a pull sent without a pin id (of one message: the pin
 * comes with it).  Short, so that one left waiting by a host that then
 * paused has expired before a standby can take the claim. */
guint64 jet__pin_probe_expires_ms(const JetEngine *e);
/* A delivery: the pin it carries, when none is known yet. */
void jet__pin_learn(JetEngine *e, natsMsg *m, guint64 stream_seq);
/* A pull is over: a probe that brought no pin lets the next one go. */
void jet__pin_pull_over(JetEngine *e, const Pull *p);
/* 423: the pin this host sent is not the server's (it expired, or another
 * holder's pull took it): forgotten; the next pull asks for one. */
void jet__pin_refused(Worker *w, int code, const char *desc);
/* The holder's start: the server's pin is taken from whoever held it, so
 * that a paused holder's waiting pulls get nothing more. */
void jet__pin_take(JetEngine *e);
/* The consumer's group as the engine starts (facts), or as read again from
 * the server after it refused a pull for its group, or re-created it. */
void jet__pin_set(JetEngine *e, const char *group, gboolean pinned);
void jet__pin_reread(JetEngine *e);
/* Whether pulls name a group (and must not be merged with an ack). */
gboolean jet__pin_grouped(JetEngine *e);
/* A hung handler is said again every handler_timeout (at least 1 s, at
 * most 1 min) while it runs (under the lease lock; docs/engine.md). */
void jet__hung_still(JetEngine *e, Item *it, gint64 now, gint64 limit_us);
/* engine_gate.c.  A handler past handler_timeout (under the lease lock):
 * its lease stops, it leaves the isolation gate, its worker's waiting
 * messages are released, and it is reported at once and then
 * periodically; every worker hung tells the host (the hung hook), once. */
void jet__handler_hung(JetEngine *e, Item *it, gint64 now, gint64 limit_us);
void jet__every_worker_hung(JetEngine *e);
/* The handler of it is entering the isolation gate (alone for a suspect) /
 * has returned.  gate_leave says whether the worker must leave the gate
 * itself (FALSE when the lease keeper left it on behalf of a hung handler). */
void jet__gate_enter(JetEngine *e, Item *it, gboolean alone);
gboolean jet__gate_left_for_it(JetEngine *e, Item *it);
/* A pending delivery's gate entry leaves its worker's thread (away) or
 * comes back to it (completed during handle()): the worker's next delivery
 * enters the gate on its own, and the completion thread leaves it. */
void jet__gate_hand_over(JetEngine *e, Item *it, gboolean away);

/* A suspect is about to be handled (begin) or has been settled (end):
 * careful mode holds from begin until AckWait x 2 after the last end.
 * jet__careful: whether it holds now; jet__careful_worker: the one worker
 * that pulls meanwhile; jet__careful_span_us: AckWait x 2. */
void jet__suspect_begin(JetEngine *e);
void jet__suspect_end(JetEngine *e);
gboolean jet__careful(JetEngine *e);
guint jet__careful_worker(JetEngine *e);
gint64 jet__careful_span_us(JetEngine *e);

/* engine_acks.c: acks that wait are sent when due (after ACK_COALESCE_US,
 * or after_us: returns how long until they are, 0 when none wait) / now;
 * what waits for a worker, not yet taken; what its pulls still owe. */
void jet__acks_due(Worker *w);
gint64 jet__acks_due_after(Worker *w, gint64 after_us);
void jet__acks_flush(Worker *w);
guint jet__waiting_msgs(Worker *w);
guint jet__owed(const Worker *w);

/* engine_inbox.c: a worker's inbox subscription, made before its thread
 * starts; a wake-up for a worker waiting on it (a stop, a reconnect). */
void jet__worker_inbox(Worker *w);
void jet__wake_worker(Worker *w);

/* engine_pull.c: the pull loop, for the drivers that pull.  The workers'
 * threads (runner_main for workers 1..n of a driver whose worker 0 routes)
 * and the lease keeper; the loop itself; an item never handled released
 * (NAK, recorded) and freed; a pull's last ack sent with the next pull. */
void jet__pull_start_workers(JetEngine *e, GThreadFunc runner_main);
/* Joins the shared keeper (keeper.h): its lease visit moves aside what
 * waits, sends acks due, +WPI and marks hung handlers; its observation
 * reads consumer info (the ack floor, the floor monitor, idleness) and
 * releases what waits behind a hung handler.  jet_engine_join() takes it
 * out. */
void jet__pull_start_keeper(JetEngine *e);
gpointer jet__pull_main(gpointer worker);
/* A pull's byte budget: max_bytes when set; else, when batch messages as
 * large as the largest seen (plus PULL_MSG_SLACK for subjects) could pass
 * PULL_BYTES_CAP shared by pulls_out pulls, that share (at least one such
 * message); else 0 (none). */
gint64 jet__pull_bytes(gint64 max_bytes, guint batch, guint pulls_out, gint64 largest);
void jet__release_item(Worker *w, Item *it);

gboolean jet__ack_with_next_pull(Worker *w, const char *reply);

/* The origin stream may have been deleted and re-created (a recovery, a
 * reconnect): its creation time is read again before the next capture. */
void jet__forget_stream_life(JetEngine *e);

#endif
