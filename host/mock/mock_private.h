/* The mock host's insides, shared by the mock's API (mock.c) and its
 * settlement (mock_deliver.c).  Not for anyone else. */
#ifndef JET_MOCK_PRIVATE_H
#define JET_MOCK_PRIVATE_H

#include <jethost/mock.h>

#include "config.h"
#include "executor.h"
#include "host_strict.h"
#include "instance.h"
#include "jet_msg.h"
#include "lane_key.h"
#include "lanes.h"
#include "ledger_record.h"
#include "settle.h"

#define DEFAULT_CLOCK_NS G_GINT64_CONSTANT(1704067200000000000)   /* 2024-01-01T00:00:00Z */
/* When the mock's stream was created (its records carry it, as the
 * daemon's do): 2023-12-01T00:00:00Z, before any message the mock makes. */
#define MOCK_STREAM_CREATED_NS G_GINT64_CONSTANT(1701388800000000000)
#define MOCK_HOST_NAME   "jethost-mock"

/* Rule names (mock.h); static, so a settlement can point at them. */
#define RULE_VERDICT        "verdict"
#define RULE_POSTPONE_DELAY "postpone-delay"
#define RULE_POSTPONE_CAP   "postpone-cap"
#define RULE_REASON_LENGTH  "reason-length"
#define RULE_USE_AFTER      "use-after-handle"
#define RULE_THREAD         "thread"
#define RULE_OPT_UNDECLARED "option-undeclared"
#define RULE_OPT_TYPE       "option-type"
#define RULE_OPT_REQUIRED   "option-required"
#define RULE_PUBLISH        "publish"

typedef enum { MOCK_NEW, MOCK_STARTED, MOCK_STOPPED, MOCK_FAILED } MockState;

typedef struct {
    const char *rule;          /* static */
    char *message;
    char *text;                /* "rule: message" */
} Violation;

typedef struct {
    int level;
    char *line;
} LogLine;

/* One delivery lent to handle(): kept alive, poisoned, until the mock is
 * freed, so a kept pointer is caught instead of reading freed memory. */
typedef struct {
    jet_msg msg;
    JetMsgStrict strict;
    jet_mock *mock;
    char *subject;
    guint8 *data;
    gsize len;
    GPtrArray *headers;        /* char*, name/value alternating */
    /* A pending delivery's (atomic): its plugin may call from any thread
     * until it completes it; after, calls are refused (a violation, or
     * quietly once the host gave it up). */
    gint pending;
    gint completed;
    gint given_up;
} Lent;

struct jet_mock {
    JetPlugin *plugin;
    const jet_plugin *desc;
    gboolean thread_safe;
    GHashTable *options;       /* name -> value, as set */

    /* The binding: its settlement keys as set (key -> value), built with
     * the config's own table at start (jet_config_binding_from_pairs). */
    GHashTable *settings;
    char *binding, *stream, *consumer;
    JetBindingConfig *config;      /* from start */
    JetSettlePolicy policy;        /* config's */
    JetExecutor *executor;         /* the daemon's settlement sequence, on jet__mock_transport */
    struct MockRun *run;           /* the delivery in progress */

    JetInstance *inst;
    MockState state;
    gboolean abort_on_violation;
    gboolean log_echo;
    GThread *owner;            /* the thread that drives the mock */

    GMutex lock;               /* what the plugin may reach from any thread: */
    gint64 clock_ns;
    GPtrArray *violations;     /* Violation* */
    GPtrArray *log;            /* LogLine* */
    GPtrArray *calls;          /* char* */

    GPtrArray *lent;           /* Lent*, freed with the mock */
    guint64 next_seq;
    char *error;

    /* The last call's dead-letter records: their strings (GPtrArray* of
     * char*, one a record) and header arrays (jet_mock_header*), kept
     * until the next delivery. */
    GPtrArray *dlq_strings;
    GPtrArray *dlq_headers;

    /* The last settlement's publishes (forward.h), and the failures asked
     * for the next ones (jet_mock_fail_publishes). */
    GPtrArray *pub_strings;        /* char*: what publishes[] and pub_headers point into */
    GArray *publishes;             /* jet_mock_publish */
    GArray *pub_headers;           /* jet_mock_header, every publish's in a row */
    char *pub_fail_reason;
    guint pub_fail_count;
    /* The fault point for the next delivery (jet_mock_inject_fault); 0: none. */
    int fault;
    guint fault_k;
    GHashTable *pub_ids;           /* Nats-Msg-Id -> gint64* mock time it was stored: the
                                      targets' duplicate window (mock_deliver.c) */

    /* Per-key lanes (the policy `key`; mock_lanes.c): NULL without one. */
    JetLanes *lanes;               /* the daemon's table; its items are LaneItem* */
    GHashTable *lane_of;           /* guint64* seq -> GBytes* its lane's key ("" for the keyless
                                      lane), for every sequence the table holds */
    GPtrArray *released;           /* LaneItem*: their turn came (taken from the table, so their
                                      lane stays held), waiting for jet_mock_deliver_held() */

    /* Pending deliveries (max_in_flight; mock_deliver.c): every one not
     * settled yet, and those completed or given up in that order (under
     * lock: the plugin's threads complete them). */
    GPtrArray *pending;            /* struct MockPending* */
    GPtrArray *pending_done;       /* settled ones, freed with the mock (a plugin thread may still be in
                                      msg_complete() on one) */
    GQueue completed;              /* struct MockPending*, under lock */
};

/* A message the mock keeps in its lane: a copy, since the caller may free
 * its builder once jet_mock_deliver() returns. */
typedef struct {
    jet_mock_msg *msg;
    guint64 seq;
} LaneItem;

struct jet_mock_msg {
    char *subject;
    guint8 *data;
    gsize len;
    GPtrArray *headers;        /* char*, name/value alternating */
    guint64 stream_seq, consumer_seq;
    guint32 deliveries;
    gboolean has_enqueued;
    gint64 enqueued_ns;
    guint32 failures, postpones;
    gboolean has_first_failure;
    gint64 first_failure_ns;
    guint32 strikes;
    guint32 absolved;
    guint32 releases;
    /* The isolation marker a settlement left set (a suspect whose host
     * died with it: a fault point), with who set it and when. */
    gboolean isolated;
    char isolated_by[JET_LEDGER_HOLDER_MAX + 1];
    gint64 isolated_ns;
    gboolean breaker_claim;
    /* What the last settlement wrote to its ledger record, for
     * jet_mock_msg_redeliver to carry to the next delivery. */
    JetLedgerRecord written;
    gboolean has_written;
};

/* One delivery through the executor: the message and what the transport
 * saw happen to it. */
typedef struct MockRun {
    const jet_mock_msg *msg;
    JetLedgerRecord rec;           /* the message's ledger record, as the transport keeps it */
    gboolean rec_found;
    gboolean captured_too_large;
    /* Fault points (jet_mock_inject_fault): the host is gone from here on
     * (nothing is stored, sent or told), or its ack did not arrive. */
    int fault;
    guint fault_k;
    guint stored;                  /* publishes stored so far */
    gboolean crashed;
    gboolean ack_lost;
    /* Its outputs: the dead-letter record's strings (owned, NULL: none) and
     * its publishes, in the mock's array from pub_first on. */
    GPtrArray *dlq;
    guint pub_first, n_pubs;
    gboolean batched;              /* handed to handle_batch() (a first delivery of a batch) */
    struct MockPending *pending;   /* max_in_flight: where its completion goes; NULL: none */
    gboolean lapsed;               /* pending past handler_timeout (or at the stop): its lease stopped */
} MockRun;

/* The files of the mock call downwards only (tests/layers.sh): mock.c (the
 * API and the life cycle) -> mock_lanes.c -> mock_deliver.c (one run) ->
 * mock_msg.c, mock_record.c, mock_clock.c. */

/* mock_record.c: what a mock records and lends. */
/* Sets m's error text; returns code. */
int jet__mock_fail(jet_mock *m, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Records a violation of rule (abort()s when the mock is so set). */
void jet__mock_violation(jet_mock *m, const char *rule, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
void jet__mock_violation_free(gpointer violation);
/* A host call the plugin made (fn, and its argument or NULL), and the
 * thread rule checked on it. */
void jet__mock_record_call(jet_mock *m, const char *fn, const char *arg);
void jet__mock_check_thread(jet_mock *m, const char *fn);
/* A copy of jm lent to handle() with the strict checks on; kept, poisoned
 * after the call, until the mock is freed. */
Lent *jet__mock_lent_new(jet_mock *m, const jet_msg *jm);
void jet__mock_lent_poison(Lent *l);
void jet__mock_lent_free(gpointer lent);
/* A deep copy of a list of header names and values. */
GPtrArray *jet__mock_headers_copy(const GPtrArray *src);

/* mock_clock.c: the clock as the executor and the instance read it (data:
 * the jet_mock). */
gint64 jet__mock_clock(gpointer data);

/* mock_deliver.c: the executor's transport in memory. */
extern const JetTransport jet__mock_transport;
/* One delivery of b through the daemon's settlement sequence, lanes aside;
 * malformed: NULL, or why its headers cannot be trusted (it is then
 * dead-lettered unhandled, cause malformed-headers).  Fills *out. */
/* What a caller of the mock's first releases has room for: the settlement
 * before held_behind (1.0), and with it (1.1, jet_mock_deliver_held). */
#define JET_MOCK_SETTLEMENT_SIZE_1_0 offsetof(jet_mock_settlement, held_behind)
#define JET_MOCK_SETTLEMENT_SIZE_1_1 (offsetof(jet_mock_settlement, held_behind) + sizeof(uint64_t))
/* Writes full into the caller's out, out_size bytes of it: the library's
 * size at most, zeros past it. */
void jet__mock_settlement_out(const jet_mock_settlement *full, jet_mock_settlement *out, size_t out_size);

int jet__mock_run(jet_mock *m, const jet_mock_msg *b, const char *malformed, jet_mock_settlement *out);
/* msgs[0..n-1] as one handler batch (jet_executor_deliver_batch; in
 * stream order on an ordered or KV binding), each settlement in outs[i]
 * (full size).  malformed: NULL, or why each message is dead-lettered
 * without its handler (NULL for most). */
int jet__mock_run_batch(jet_mock *m, const jet_mock_msg *const *msgs, size_t n, const char *const *malformed,
                        jet_mock_settlement *outs);

/* Pending deliveries (max_in_flight): how many are kept (those past
 * handler_timeout given up first); the earliest completed one settled into
 * out (full size; JET_MOCK_ESTATE when none); at a stop, every one settled
 * (those not completed given up). */
size_t jet__mock_pending_count(jet_mock *m);
int jet__mock_settle_completed(jet_mock *m, jet_mock_settlement *out);
void jet__mock_pending_stop(jet_mock *m);
void jet__mock_pending_free(gpointer pending);

/* mock_msg.c: a deep copy of a builder. */
jet_mock_msg *jet__mock_msg_copy(const jet_mock_msg *b);

/* mock_lanes.c: the lanes, from jet_mock_start() to jet_mock_stop(). */
void jet__mock_lanes_start(jet_mock *m);
void jet__mock_lanes_stop(jet_mock *m);
/* jet_mock_deliver() with a `key`: runs b, or keeps it in its lane. */
int jet__mock_lanes_deliver(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out);
/* jet_mock_deliver_batch() with a `key`: the messages whose lane's turn
 * came run as one batch; the others are kept, held (outs[i] full size). */
int jet__mock_lanes_deliver_batch(jet_mock *m, const jet_mock_msg *const *msgs, size_t n, jet_mock_settlement *outs);

#endif
