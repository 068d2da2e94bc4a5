/*
 * jethost plugin ABI, version 1.2.
 *
 * A plugin is a shared object that handles messages the host pulls from a
 * NATS JetStream consumer.  It exports exactly one symbol, jet_plugin_entry(),
 * which receives the host's function table and returns the plugin's
 * descriptor.  Everything else a plugin needs is in this file: it builds with
 * a C99 compiler and `pkg-config --cflags jethost-plugin`, and needs neither
 * GLib nor nats.c.
 *
 * The smallest complete plugin is plugins/template/template.c.
 * docs/plugin-guide.md is the guide: write, build, test (on the mock host,
 * <jethost/mock.h>) and ship a plugin.  docs/plugins.md documents the plugins
 * jethost ships (paced, retry, exec, forward).
 *
 * Stability rules, kept for every 1.x release:
 *   - a plugin built against 1.m loads in every host 1.n with n >= m;
 *   - structs only grow at the end, and each carries its size, so a host reads
 *     an older, smaller struct with the missing members treated as absent;
 *   - enums only grow at the end; no value is ever renumbered.
 *
 * Memory: whoever allocates frees.  Strings and buffers the host hands out are
 * owned by the host; the lifetime is stated on each function.  Strings the
 * plugin hands in are copied by the host before the call returns.
 */
#ifndef JETHOST_PLUGIN_H
#define JETHOST_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JET_ABI_MAJOR 1
#define JET_ABI_MINOR 2

/* Longest reason a plugin may attach to a verdict, in bytes, without the NUL. */
#define JET_REASON_MAX 256

/* ------------------------------------------------------------------------ */
/* Handles                                                                  */
/* ------------------------------------------------------------------------ */

/* One delivery of one message.  Borrowed: valid only during the handle() call
 * it is passed to.  Do not keep the pointer, nor any pointer obtained from it,
 * after handle() returns; copy what you need.  One exception (1.2): when
 * handle() returns JET_PENDING, m and what it gave stay valid until the
 * plugin's msg_complete(m, ...) call. */
typedef struct jet_msg jet_msg;

/* One plugin instance, i.e. one binding of the config.  Valid from init() to
 * the end of fini(). */
typedef struct jet_ctx jet_ctx;

/* ------------------------------------------------------------------------ */
/* Verdicts: what handle() returns                                          */
/* ------------------------------------------------------------------------ */

typedef enum jet_verdict {
    /* Done.  The host acknowledges the message. */
    JET_ACK = 0,
    /* Transient failure.  The host walks the binding's retry ladder, and
     * dead-letters the message when the ladder is spent. */
    JET_RETRY = 1,
    /* Not now.  The host releases the message for the delay set with
     * msg_set_delay_ms(), without spending a retry attempt, until the
     * binding's postpone horizon has passed since the message was stored. */
    JET_POSTPONE = 2,
    /* Permanent failure.  The host dead-letters the message now. */
    JET_REJECT = 3,
    /* (1.2) Not decided yet: the plugin keeps m and gives its verdict later
     * with msg_complete(), from any thread, while the worker takes the next
     * message.  Only on a binding with `max_in_flight`; elsewhere a plugin
     * error (docs/async.md). */
    JET_PENDING = 4
} jet_verdict;

/* ------------------------------------------------------------------------ */
/* Binding kinds and KV operations (1.1)                                    */
/* ------------------------------------------------------------------------ */

/* What a binding consumes (docs/configuration.md, `kind`). */
typedef enum jet_binding_kind {
    /* A durable consumer: each message acked on its own, several at once
     * when the binding has workers > 1. */
    JET_BINDING_DURABLE = 0,
    /* The host's ordered consumer: a stream in order, one message at a
     * time; a RETRY or a POSTPONE waits in place (docs/ordered.md). */
    JET_BINDING_ORDERED = 1,
    /* A KV bucket watched: an ordered binding whose messages are the
     * bucket's entries (docs/kv.md). */
    JET_BINDING_KV = 2
} jet_binding_kind;

/* What a KV entry records. */
typedef enum jet_kv_op {
    JET_KV_NONE = 0,    /* not a KV entry (the binding is not kind = kv) */
    JET_KV_PUT = 1,     /* a value was written */
    JET_KV_DELETE = 2,  /* the key was deleted; the payload is empty */
    JET_KV_PURGE = 3    /* the key and its history were purged; the payload is empty */
} jet_kv_op;

/* Plugin metrics (1.1): what ctx_metric_declare() declares. */
typedef enum jet_metric_type {
    JET_METRIC_COUNTER = 0,  /* only ever grows: ctx_metric_add() */
    JET_METRIC_GAUGE = 1     /* a value that goes up and down: ctx_metric_set() */
} jet_metric_type;

/* ------------------------------------------------------------------------ */
/* After the settlement (1.2): what the descriptor's settled() is told      */
/* ------------------------------------------------------------------------ */

/* How a delivery ended.  What the host did, after the server answered
 * where it asks for an answer (docs/plugin-guide.md, "After the
 * settlement"). */
typedef enum jet_settled_outcome {
    /* Acked, after every msg_publish() of it was stored.  The ack is sent,
     * or queued to go with the next ones within milliseconds, and is not
     * itself confirmed: if it is lost, the message comes back. */
    JET_SETTLED_ACKED = 0,
    /* Another try after delay_ms: a rung of the retry ladder (a failed
     * publish is one).  A durable binding gives it back to the server; an
     * ordered or KV binding tries it again in place. */
    JET_SETTLED_RETRIED = 1,
    /* The same without spending an attempt (JET_POSTPONE). */
    JET_SETTLED_POSTPONED = 2,
    /* Its dead-letter record is stored and the server confirmed the ack. */
    JET_SETTLED_DEAD_LETTERED = 3,
    /* Not settled by this delivery, and it comes again: its lease lapsed
     * (nothing was sent: the server may already have handed it to another
     * host; delay_ms 0), or its capture failed and it was given back to be
     * captured at a later delivery (after delay_ms). */
    JET_SETTLED_UNSETTLED = 4,
    /* Its dead-letter record is stored, but the server did not confirm the
     * ack: if it comes again, its capture finds the record and it is
     * acked then. */
    JET_SETTLED_UNCERTAIN = 5,
    /* Neither acked nor dead-lettered, for good: too large for the
     * dead-letter stream, or not captured on its last delivery.  It stays
     * unacked on the consumer until an operator acts (event=stranded,
     * docs/dead-letters.md). */
    JET_SETTLED_STRANDED = 6
} jet_settled_outcome;

/* Borrowed for the settled() call. */
typedef struct jet_settled {
    uint32_t struct_size;     /* sizeof as the host filled it: a member added
                                 later is there only when this covers it */
    int outcome;              /* a jet_settled_outcome */
    int handled;              /* 1: handle() ran for this delivery; 0: settled
                                 without it (poison, breaker, hop limit, ...) */
    int verdict;              /* what handle() returned; -1 when it did not run */
    uint64_t stream_seq;
    uint32_t deliveries;      /* this delivery's count, as msg_deliveries() */
    uint32_t published;       /* msg_publish() calls the target stream stored */
    uint32_t duplicates;      /* of those, how many an earlier delivery had
                                 stored already (the stream's duplicate window) */
    uint64_t delay_ms;        /* RETRIED, POSTPONED, UNSETTLED: when it comes again */
    const char *reason;       /* the settlement's reason, or "" */
} jet_settled;

/* ------------------------------------------------------------------------ */
/* Return codes of host functions                                           */
/* ------------------------------------------------------------------------ */

#define JET_OK          0
#define JET_EINVAL     (-1)  /* an argument is NULL or out of range */
#define JET_ETOOLONG   (-2)  /* a reason longer than JET_REASON_MAX */
#define JET_ENOTFOUND  (-3)  /* no such header, option or value */
#define JET_ESTATE     (-4)  /* not allowed now (1.1: e.g. declaring a metric after init()) */
#define JET_ELIMIT     (-5)  /* over a documented limit (1.1: publishes, metrics) */

/* ------------------------------------------------------------------------ */
/* Log levels for ctx_log()                                                 */
/* ------------------------------------------------------------------------ */

typedef enum jet_log_level {
    JET_LOG_ERROR = 0,
    JET_LOG_WARNING = 1,
    JET_LOG_INFO = 2,
    JET_LOG_DEBUG = 3
} jet_log_level;

/* ------------------------------------------------------------------------ */
/* Options a plugin accepts                                                 */
/* ------------------------------------------------------------------------ */

/* The type of a plugin option.  The host parses and validates the value
 * before init() runs, so a typo in an option is a config error. */
typedef enum jet_option_type {
    JET_OPT_STRING = 0,
    JET_OPT_INT = 1,      /* a signed 64-bit decimal integer */
    JET_OPT_BOOL = 2,     /* true or false */
    JET_OPT_DURATION = 3  /* "250ms", "30s", "5m", "1h"; read in milliseconds */
} jet_option_type;

/* Option flags. */
#define JET_OPTION_REQUIRED (1u << 0)  /* the config must set it */

/* One accepted option.  The plugin's table ends with an entry whose name is
 * NULL.  In the config, option NAME is written `option.NAME = value` inside
 * the binding's group. */
typedef struct jet_option {
    const char *name;           /* [a-z0-9_-]+ */
    jet_option_type type;
    const char *default_value;  /* as it would be written in the config; NULL:
                                   unset unless configured */
    const char *help;           /* one line, shown by `jethost check -v` */
    uint32_t flags;             /* JET_OPTION_* */
} jet_option;

/* ------------------------------------------------------------------------ */
/* The host's function table                                                */
/* ------------------------------------------------------------------------ */

/* Owned by the host; valid from jet_plugin_entry() until the process exits.
 * Members are only ever added at the end: before calling a member added after
 * 1.0, check that host->struct_size covers it (JET_HOST_HAS). */
typedef struct jet_host_api {
    uint32_t struct_size;
    uint16_t abi_major, abi_minor;

    /* --- reading a message; m is the borrowed handle passed to handle() --- */

    /* The subject the message was published to.  Valid during handle(). */
    const char *(*msg_subject)(const jet_msg *m);
    /* The payload; *len receives its length (may be 0).  Not NUL-terminated.
     * Valid during handle(). */
    const void *(*msg_data)(const jet_msg *m, size_t *len);
    /* The first value of header `name` (exact match), or NULL.  Valid during
     * handle(). */
    const char *(*msg_header)(const jet_msg *m, const char *name);
    /* Calls fn for every header until fn returns non-zero; returns that
     * value, or 0.  Headers come in the order of the message's header block,
     * a repeated name once per line; a value may be empty ("") and is not
     * always UTF-8.  A message whose block the host cannot read faithfully
     * never reaches handle() (docs/headers.md).  The strings are valid
     * during the call.
     * Changed in 1.1, for 1.0 hosts too: 1.0 said "every header value, in
     * order" without saying which order, and its first hosts gave nats.c's
     * (by name, not as sent); every host since gives the block's order, the
     * only one a plugin can rely on.  tests/abi-1.0 keeps the 1.0 words. */
    int (*msg_headers_each)(const jet_msg *m,
                            int (*fn)(void *ud, const char *name, const char *value),
                            void *ud);
    /* The stream and consumer the message came from.  Valid during handle(). */
    const char *(*msg_stream)(const jet_msg *m);
    const char *(*msg_consumer)(const jet_msg *m);
    /* The message's sequence in its stream, and this delivery's in the consumer. */
    uint64_t (*msg_stream_seq)(const jet_msg *m);
    uint64_t (*msg_consumer_seq)(const jet_msg *m);
    /* The server's delivery count: 1 on the first delivery.  It also counts
     * postpones, host releases and crashes; msg_failures() counts only real
     * failed attempts. */
    uint32_t (*msg_deliveries)(const jet_msg *m);
    /* When the stream stored the message, in Unix nanoseconds.  Returns 1 and
     * sets *unix_ns when known, 0 when not. */
    int (*msg_enqueued_ns)(const jet_msg *m, int64_t *unix_ns);
    /* Failed attempts recorded before this delivery (0 on a first delivery),
     * and postpones recorded before this delivery. */
    uint32_t (*msg_failures)(const jet_msg *m);
    uint32_t (*msg_postpones)(const jet_msg *m);
    /* When the first failure was recorded.  Returns 1 and sets *unix_ns when
     * there was one, 0 when not. */
    int (*msg_first_failure_ns)(const jet_msg *m, int64_t *unix_ns);

    /* --- qualifying the verdict --- */

    /* Attaches a reason to the verdict (logged, and written to the dead-letter
     * record).  The host copies it.  Returns JET_ETOOLONG, and records the
     * misuse as a plugin error, when it is longer than JET_REASON_MAX. */
    int (*msg_set_reason)(jet_msg *m, const char *reason);
    /* The delay of a JET_POSTPONE, in milliseconds; must be positive and at
     * most the binding's max_postpone_delay, or the postpone is a plugin error
     * (a failure, never an ack). */
    int (*msg_set_delay_ms)(jet_msg *m, uint64_t delay_ms);

    /* --- the instance --- */

    /* The validated value of an option declared by the plugin, as written in
     * the config or its default; NULL when unset.  Valid until fini() returns. */
    const char *(*ctx_option)(const jet_ctx *c, const char *name);
    /* Typed readers: return JET_OK and set *out, JET_ENOTFOUND when unset,
     * JET_EINVAL when the option is not declared with that type. */
    int (*ctx_option_int)(const jet_ctx *c, const char *name, int64_t *out);
    int (*ctx_option_bool)(const jet_ctx *c, const char *name, int *out);
    int (*ctx_option_duration_ms)(const jet_ctx *c, const char *name, uint64_t *out);
    /* The binding's name, from the config.  Valid until fini() returns. */
    const char *(*ctx_name)(const jet_ctx *c);
    /* Writes one log line, attributed to the binding.  printf format. */
    void (*ctx_log)(jet_ctx *c, jet_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /* The host's wall clock, in Unix nanoseconds.  Use it instead of the
     * system clock so the mock host can drive time in tests. */
    int64_t (*ctx_now_ns)(const jet_ctx *c);
    /* Non-zero once the host is stopping: a long handler should finish soon.
     * The message in hand will still be settled. */
    int (*ctx_stopping)(const jet_ctx *c);

    /* --- 1.1 and later: check JET_HOST_HAS(host, member) before calling --- */

    /* The kind of the binding, a jet_binding_kind: from init() on, so a
     * plugin can refuse a kind it was not written for. */
    int (*ctx_kind)(const jet_ctx *c);
    /* The kind of the binding m came from, a jet_binding_kind. */
    int (*msg_kind)(const jet_msg *m);
    /* kind = kv: the entry's key (the subject without `$KV.<bucket>.`),
     * NULL on other kinds.  Valid during handle(). */
    const char *(*msg_kv_key)(const jet_msg *m);
    /* kind = kv: what the entry records, a jet_kv_op; JET_KV_NONE on other
     * kinds.  An entry whose operation the host cannot read never reaches
     * handle(): it is dead-lettered (docs/kv.md). */
    int (*msg_kv_op)(const jet_msg *m);
    /* kind = kv: the entry's revision (its stream sequence), 0 on other
     * kinds.  Revisions of one watch only ever increase. */
    uint64_t (*msg_kv_revision)(const jet_msg *m);

    /* The context of m's binding, the jet_ctx its init() got: no need to
     * keep it in the plugin's state.  Valid during handle(). */
    jet_ctx *(*msg_ctx)(const jet_msg *m);

    /* Queues a JetStream publish as part of handling m (docs/forwarding.md).
     * Nothing is sent during handle(): when handle() returns JET_ACK the
     * host publishes every queued message, in order, waits for each
     * pub-ack, and only then acks m.  A publish that fails or that the
     * server refuses turns the verdict into a JET_RETRY with the server's
     * reason; with any other verdict the queue is dropped.  Each publish
     * carries a Nats-Msg-Id made from m (its stream, consumer, sequence and
     * the publish's index), so a redelivery of m after a crash publishes
     * nothing twice within the target stream's duplicate window.
     *   subject: a plain subject; no wildcards, and no $JS., $KV. or $SYS.
     *            subject unless the binding sets publish_reserved = true.
     *   headers: NULL, or name, value, name, value, ..., NULL; the host's
     *            header rules apply, and Nats-* names are the host's.
     *   data:    len bytes (data may be NULL when len is 0).
     * Everything is copied.  Returns JET_OK, or JET_EINVAL / JET_ELIMIT for
     * a publish the host refuses: that is a plugin error, and the delivery
     * is a failure whatever handle() returns (never an ack without the
     * forward).  At most 256 publishes of at most 8 MiB in all per
     * delivery. */
    int (*msg_publish)(jet_msg *m, const char *subject, const char *const *headers,
                       const void *data, size_t len);

    /* Declares a metric of this binding, during init() only: name is
     * [a-z_][a-z0-9_]* (at most 64 bytes), help one line.  Returns its id
     * (>= 0) for the calls below, or JET_EINVAL (a bad or repeated name),
     * JET_ESTATE (after init()), JET_ELIMIT (more than 64 metrics).  The
     * host shows them with its own figures, labelled with the binding
     * (docs/plugin-metrics.md). */
    int (*ctx_metric_declare)(jet_ctx *c, const char *name, int type, const char *help);
    /* Adds n to a counter; from any thread. */
    int (*ctx_metric_add)(jet_ctx *c, int id, uint64_t n);
    /* Sets a gauge; from any thread. */
    int (*ctx_metric_set)(jet_ctx *c, int id, int64_t value);

    /* --- 1.2 and later --- */

    /* Completes a delivery whose handle() returned JET_PENDING, with its
     * verdict (JET_ACK, JET_RETRY, JET_POSTPONE or JET_REJECT), from any
     * thread; set its reason, delay and publishes on m first.  The verdict
     * is then settled as handle()'s would have been.  After the call m is
     * no longer the plugin's: a later call through it is refused as a
     * stale handle.  A call during handle() is allowed too (the I/O was
     * quick): it counts once handle() returns JET_PENDING.
     * One still pending at `handler_timeout` is a hung handler: its lease
     * stops (the server delivers it again), but m stays valid and its late
     * completion is settled as a hung handler's return is (docs/async.md).
     * Returns JET_OK; JET_EINVAL for NULL or a verdict that is not one of
     * the four; JET_ESTATE when m is not pending: completed already (the
     * host counts it), or on a binding without `max_in_flight`. */
    int (*msg_complete)(jet_msg *m, int verdict);
} jet_host_api;

/* True when the host table has member `member` (for members added after 1.0). */
#define JET_HOST_HAS(host, member) \
    ((host)->struct_size >= offsetof(jet_host_api, member) + sizeof((host)->member))

/* ------------------------------------------------------------------------ */
/* The plugin's descriptor                                                  */
/* ------------------------------------------------------------------------ */

/* Capability flags. */
#define JET_PLUGIN_THREAD_SAFE (1u << 0)  /* handle() may run on several threads
                                             at once (workers > 1) */

/* Static storage in the plugin; start it with JET_PLUGIN_HEADER. */
typedef struct jet_plugin {
    uint32_t struct_size;
    uint16_t abi_major, abi_minor;  /* the ABI the plugin was built against */
    const char *name;               /* short, [a-z0-9_-]+ */
    const char *version;            /* the plugin's own version */
    uint32_t flags;                 /* JET_PLUGIN_* */
    const jet_option *options;      /* NULL, or ends with a NULL name */

    /* Called once per binding, before any message.  Allocate the instance's
     * state and store it in *state (the plugin owns it; fini() frees it).
     * Return 0, or non-zero with a one-line cause written to err (at most
     * err_len bytes with the NUL): the host refuses the binding and quotes it. */
    int (*init)(jet_ctx *c, void **state, char *err, size_t err_len);

    /* Handles one delivery and returns a jet_verdict.  m is borrowed for this
     * call (with JET_PENDING: until msg_complete()).  Runs on one thread at a
     * time per binding unless the plugin sets JET_PLUGIN_THREAD_SAFE.
     * Anything but a jet_verdict is a plugin error, treated as a failure. */
    int (*handle)(void *state, jet_msg *m);

    /* Called once, after the last handle() of the binding.  May be NULL. */
    void (*fini)(void *state);

    /* --- 1.1 and later --- */

    /* kind = kv: called once per start of the binding, when the watch has
     * caught up: after the handle() of the last value that was current when
     * it started (at once for an empty bucket, or with initial = false);
     * what follows are updates.  Called again if the bucket is deleted and
     * created again while the watch runs: the new bucket's current values
     * come first, then this, then its updates.  On the thread that calls
     * handle(), never during one.  May be NULL; never called on other
     * kinds. */
    void (*kv_initial_done)(void *state);

    /* sizeof(jet_option) as the plugin was built, so the option entry can
     * grow in a later release; 0 means 1.0's layout.  JET_PLUGIN_HEADER
     * sets it. */
    uint32_t option_size;

    /* --- 1.2 and later --- */

    /* Checks the binding's options, before init() and with no side effect:
     * `jethost check` calls it too, so a bad option is refused where the
     * config is checked, not first at `run`.  Read the options with the
     * ctx_option readers; ctx_name and ctx_kind answer too; nothing else of
     * the host is set up yet.  Return 0, or non-zero with a one-line cause
     * written to err (at most err_len bytes with the NUL): the host refuses
     * the binding as a config error and quotes it.  May be NULL. */
    int (*validate)(const jet_ctx *c, char *err, size_t err_len);

    /* Called once for every delivery the host settled, after the settlement
     * (the ack sent or queued, the NAK sent, or the dead-letter record
     * stored and its ack confirmed; s->outcome says which): count here what
     * really happened, e.g. the publishes a stream stored, not what
     * handle() queued.  Also for a delivery settled without handle()
     * (s->handled 0).  Not for one the host gives back unhandled as it stops
     * or reloads (it comes again), nor for a batch member an ordered binding
     * set aside (it comes again, see handle_batch), nor for one whose
     * metadata it cannot read (dead-lettered as malformed,
     * docs/dead-letters.md).  On the worker
     * that handled the delivery, right after it, under the same threading
     * rules as handle(); s is borrowed for the call.  Keep it short: the
     * worker takes no other message meanwhile.  May be NULL. */
    void (*settled)(void *state, const jet_settled *s);

    /* Handles several first deliveries at once: a sink that writes them to
     * a database or a file in one go.  msgs[0..n-1] in the order the server
     * delivered them, 1 <= n <= the binding's `batch_max`; write one
     * jet_verdict per message to verdicts[i] (each is JET_RETRY before the
     * call).  Each message keeps its own reason, delay and publishes
     * (msg_set_reason(msgs[i], ...)), and each verdict is settled as
     * handle()'s would be.  Return 0; anything else fails the whole batch:
     * each message is retried, the return value named as its reason, and
     * what it queued is not published.  The messages are borrowed for the
     * call, as handle()'s, under handle()'s threading rules.
     *
     * On an ordered or KV binding the verdicts are settled in stream order
     * up to the first that waits (a RETRY, a POSTPONE): that message is
     * handled again on its own, and the ones after it are set aside, their
     * verdicts and publishes dropped, and handed again once it is settled,
     * so nothing is settled or published out of stream order.
     *
     * Called when the binding sets batch_max above 1 (refused without
     * this).  handle() is still required: a message delivered again (a
     * retry, a postpone, one a host died with) comes on its own, through
     * handle(), so that one message cannot fail a batch twice and a batch
     * that killed the host is taken apart (docs/batches.md).  May be NULL. */
    int (*handle_batch)(void *state, jet_msg *const *msgs, size_t n, int *verdicts);
} jet_plugin;

/* Fills struct_size and the ABI version; start every descriptor with it:
 *     static const jet_plugin plugin = { JET_PLUGIN_HEADER, .name = "x", ... }; */
#define JET_PLUGIN_HEADER \
    .struct_size = sizeof(jet_plugin), .abi_major = JET_ABI_MAJOR, .abi_minor = JET_ABI_MINOR, \
    .option_size = sizeof(jet_option)

/* The host table in a plugin, without writing it by hand (1.1):
 *     JET_HOST_DEFINE;                       at file scope: `jet_host`
 *     ... jet_plugin_entry(const jet_host_api *h) { JET_HOST_INIT(h); ... }
 * then jet_host->msg_subject(m) and so on. */
#define JET_HOST_DEFINE static const jet_host_api *jet_host
#define JET_HOST_INIT(h) (jet_host = (h))

#if defined(__GNUC__)
#define JET_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define JET_PLUGIN_EXPORT
#endif

/* The one symbol a plugin exports.  The host calls it once, right after
 * loading, and keeps the returned descriptor (which must stay valid while the
 * process runs: plugins are never unloaded).  Keep `host` for later calls. */
#define JET_PLUGIN_ENTRY_SYMBOL "jet_plugin_entry"
typedef const jet_plugin *(*jet_plugin_entry_fn)(const jet_host_api *host);
JET_PLUGIN_EXPORT const jet_plugin *jet_plugin_entry(const jet_host_api *host);

#ifdef __cplusplus
}
#endif

#endif /* JETHOST_PLUGIN_H */
