/* A kind of binding, as the engine runs it (docs/architecture.md, "The
 * engine: a runner and its drivers").
 *
 * The runner (engine.c) owns what every binding has: its threads' start,
 * stop and drain, the settlement executor and its transport, the hooks,
 * counters and health, the isolation gate.  A driver is what one kind
 * adds: how many workers, what they run, where a delivery goes.  The
 * runner calls its driver through this table and never asks which kind it
 * runs; a driver calls the runner's services (engine_private.h), the pull
 * loop (engine_pull.c) if it pulls, and never another driver.  A new kind
 * is a new file with its table, and one line in engine_kinds.c. */
#ifndef JET_ENGINE_DRIVER_H
#define JET_ENGINE_DRIVER_H

#include "ack_subject.h"
#include "config.h"
#include "executor.h"

#include <glib.h>

typedef struct JetEngine JetEngine;

/* The engine's worker and held delivery (engine_private.h). */
struct JetWorker;
struct JetItem;

typedef struct JetDriver {
    const char *kind;            /* "durable", "lanes", "ordered": for logs */
    /* Its consumer is acked: messages are leased while held, the ack floor
     * tells how far the fleet got, and the floor monitor watches it.  An
     * ordered read acks nothing. */
    gboolean acked;
    /* Worker 0 pulls and routes, and runs no handler; the others run. */
    gboolean first_routes;

    /* The workers the binding runs (at least 1). */
    guint (*n_workers)(const JetBindingConfig *b);
    /* Its own state, made with the engine and freed with it (after every
     * thread is joined).  NULL: none. */
    void (*init)(JetEngine *e);
    void (*fini)(JetEngine *e);
    /* The first bind (jet_engine_bind): attempts 0 retries until the
     * engine stops.  NULL: bound before the engine existed. */
    gboolean (*bind)(JetEngine *e, guint attempts, GError **error);
    /* The executor's transport for this kind. */
    void (*transport)(JetEngine *e, JetTransport *t);
    /* Starts the workers' threads and whatever watches them. */
    void (*start)(JetEngine *e);
    /* Every worker is joined: what the driver still holds is given back. */
    void (*joined)(JetEngine *e);

    /* The pull loop's hooks (engine_pull.c), for a driver that pulls; each
     * NULL: as a durable binding does. */
    /* Before the first pull, on worker 0. */
    void (*pull_start)(struct JetWorker *w);
    /* One pull at a time, of this size (0: none now; *wait_ms: how long to
     * wait for a message before asking again); NULL: batch + threshold. */
    guint (*pull_size)(struct JetWorker *w, gint64 *wait_ms);
    /* A delivery taken off the inbox; NULL: handled on this worker. */
    void (*take)(struct JetWorker *w, struct JetItem *it, const JetAckMeta *meta);
    /* After each turn of the loop. */
    void (*turn)(struct JetWorker *w);
    /* The consumer was made again (its delivery count starts over). */
    void (*consumer_new)(JetEngine *e);
    /* The ack floor the lease keeper read. */
    void (*floor)(JetEngine *e, guint64 floor);
    /* What holds stream seq `seq` back, for a stall's log line (caller
     * frees), or NULL. */
    char *(*describe)(JetEngine *e, guint64 seq);
    /* Deliveries ready for a worker without an inbox (a runner). */
    guint (*ready)(JetEngine *e);
    /* The ack of a pull's last message, sent with the next pull: FALSE
     * when it was not (docs/engine.md, "Acks sent together"). */
    gboolean (*ack_with_pull)(struct JetWorker *w, const char *reply);
} JetDriver;

/* The drivers (engine_durable.c, engine_lanes.c, ordered.c). */
extern const JetDriver jet__driver_durable;
extern const JetDriver jet__driver_lanes;
extern const JetDriver jet__driver_ordered;

/* The driver of a binding (engine_kinds.c). */
const JetDriver *jet__engine_driver(const JetBindingConfig *b);

#endif
