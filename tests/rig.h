/* A paced engine running in the test process against a real nats-server,
 * on stream ORDERS (orders.>) and consumer "c", with the fx_gate plugin. */
#ifndef JET_TEST_RIG_H
#define JET_TEST_RIG_H

#include "harness.h"
#include "config.h"
#include "conn.h"
#include "consumer_setup.h"
#include "engine.h"
#include "instance.h"

typedef struct {
    JetTestServer *srv;
    const char *const *server_args;   /* extra nats-server arguments, set before rig_server */
    natsConnection *nc;
    jsCtx *js;
    char *dir;             /* fx_gate's directory */
    JetConfig *cfg;
    JetConn *conn;
    JetInstance *inst;
    JetConsumerFacts facts;
    JetEngine *eng;
    jsCtx *ledger_js;
    JetLedger *ledger;     /* when the binding's ledger is on */
    guint bound;           /* batch + threshold */
    JetEngineSettleHook settle_hook;   /* set before rig_engine*(): installed on the engine */
    gpointer settle_data;
    gint over_bound;       /* atomic: takes that found more held */
    const char *engine_url;   /* set before rig_engine*(): where the engine connects (a relay), not srv */
    gboolean ordered;      /* set before rig_engine*(): an ordered binding (no consumer "c") */
    const char *kv_bucket; /* set before rig_engine*(): a kind = kv binding watching this bucket */
    JetEngineLossHook loss_hook;   /* set before rig_engine*(): installed on the engine */
    gpointer loss_data;
    JetEngineHungHook hung_hook;   /* set before rig_engine*(): installed on the engine */
    gpointer hung_data;
} Rig;

/* Starts the server, the test's own connection and the stream. */
void rig_server(Rig *r);
/* Starts the engine with extra binding keys ("key = value\n" lines). */
void rig_engine(Rig *r, const char *extra);
/* The same with another built plugin (a name for jet_test_plugin_copy), whose
 * options go in extra. */
void rig_engine_plugin(Rig *r, const char *plugin_name, const char *extra);
void rig_stop(Rig *r);
/* Stops the engine and frees it with its plugin instance, ledger,
 * connection and config: rig_engine() may start another. */
void rig_engine_end(Rig *r);
/* The fixture plugin's handshake (option.block_seq = SEQ): waits until
 * stream seq SEQ is in its handler (fails the test after 20 s), and lets
 * it go on. */
void rig_wait_inflight(Rig *r, guint64 seq);
void rig_let_go(Rig *r, guint64 seq);
/* Waits (5 s at most, else fails) until the ledger holds no record for
 * stream/consumer/seq: a finished message's record is deleted without the
 * engine waiting for the answer. */
void rig_wait_record_gone(Rig *r, const char *stream, const char *consumer, guint64 seq);
void rig_free(Rig *r);
/* fx_gate's handled.log: stream seqs in order, and their delivery counts. */
GArray *handled_seqs(Rig *r, GArray **deliveries);

typedef struct {
    Rig *r;
    guint64 floor;
} FloorWait;
/* The consumer's ack floor reached fw->floor with nothing pending an ack. */
gboolean floor_reached(gpointer data);
/* The engine counted at least N dead letters (fails the test after 10 s).
 * The server moves the floor when it takes an ack; the host counts a dead
 * letter when that ack's confirmation reaches it, a moment later. */
void rig_wait_dead_lettered(Rig *r, guint64 n);

#endif
