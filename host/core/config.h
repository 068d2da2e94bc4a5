/* The config ops write: a GLib key file plus a drop-in directory.
 *
 *   [host]               the connection, state directory, plugin directory
 *   [binding NAME]       one plugin on one stream's durable consumer
 *
 * Every key is declared in one table per group (config.c) with its type,
 * default and help; docs/configuration.md lists them.  Unknown groups and
 * keys are errors; every error names the file, the group, the key and why. */
#ifndef JET_CONFIG_H
#define JET_CONFIG_H

#include <glib.h>

#include <jethost/plugin.h>
#include "lane_key.h"
#include "log.h"
#include "settle.h"

typedef enum {
    JET_MANAGE_CREATE = 0,   /* create or update the consumer (and the stream when subjects are given) */
    JET_MANAGE_BIND = 1,     /* only check that they exist and fit */
} JetManage;

/* The ack-floor breaker (floor_monitor.h, docs/floor-monitor.md). */
typedef enum {
    JET_BREAKER_MODE_OBSERVE = 0,  /* claim, log and count "would quarantine"; capture nothing */
    JET_BREAKER_MODE_ENFORCE = 1,  /* experimental: a claim is captured with cause `breaker` */
    JET_BREAKER_MODE_OFF = 2,      /* no claims, no KV writes; the monitor still reports */
} JetBreakerMode;

/* What a binding consumes (docs/ordered.md). */
typedef enum {
    JET_KIND_DURABLE = 0,    /* a durable pull consumer, acked per message */
    JET_KIND_ORDERED = 1,    /* the host's own ordered consumer: in stream order, one at a time */
    JET_KIND_KV = 2,         /* a KV bucket watched: an ordered binding on the bucket's stream */
} JetBindingKind;

/* Ordered and KV bindings share the ordered engine (docs/ordered.md, docs/kv.md). */
/* The ABI's jet_binding_kind numbers the kinds the same way. */
G_STATIC_ASSERT((int)JET_KIND_DURABLE == (int)JET_BINDING_DURABLE);
G_STATIC_ASSERT((int)JET_KIND_ORDERED == (int)JET_BINDING_ORDERED);
G_STATIC_ASSERT((int)JET_KIND_KV == (int)JET_BINDING_KV);
#define JET_KIND_IS_ORDERED(k) ((k) == JET_KIND_ORDERED || (k) == JET_KIND_KV)

/* Where an ordered binding starts when it has no position of its own. */
typedef enum {
    JET_DELIVER_ALL = 0,
    JET_DELIVER_NEW,
    JET_DELIVER_LAST,
    JET_DELIVER_LAST_PER_SUBJECT,
    JET_DELIVER_FROM_SEQ,    /* deliver_seq */
    JET_DELIVER_FROM_TIME,   /* deliver_time_ns */
} JetDeliver;

/* Where an ordered binding keeps its position. */
typedef enum {
    JET_CHECKPOINT_NONE = 0, /* in the process: a restart begins at `deliver` */
    JET_CHECKPOINT_KV = 1,   /* in the host's KV bucket (position.h) */
} JetCheckpoint;

typedef struct {
    char *file;              /* the file that defined the group (for messages) */
    char *server;            /* "embedded", or the URLs as written (comma-separated) */
    gboolean embedded;       /* server = embedded */
    char **urls;             /* NULL-terminated, when not embedded */
    char *state_dir;
    char *plugin_dir;
    char *name;              /* this host's name in provenance headers; default: hostname */
    char *nats_server;       /* the nats-server binary for server = embedded */
    /* Credentials: files are checked (not readable by group or others). */
    char *creds_file, *nkey_seed_file, *user, *password_file, *token_file;
    char *tls_ca, *tls_cert, *tls_key;
    /* The JetStream API prefix (at most one): conn.h jet_conn_api_prefix. */
    char *js_domain, *js_api_prefix;
    guint connect_attempts;  /* first connect: attempts before giving up */
    guint64 connect_timeout_ms;
    guint64 drain_timeout_ms;     /* how long a drain may take before unfinished work is left */
    char *ledger_bucket;          /* the attempt ledger's KV bucket */
    guint64 ledger_max_age_ms;    /* every ledger entry expires after this */
    guint replicas;               /* of each stream or bucket the host creates (1..5) */
    char *metrics_listen;         /* ADDR:PORT of the metrics and health endpoints; NULL: off */
    guint64 metrics_idle_timeout_ms;   /* a connection there without a whole request is closed */
    JetLogFormat log_format;      /* lines on stderr (log.h) */
} JetHostConfig;

/* A file by its canonical path and what stat() says of it: a file
 * replaced or rewritten in place changes inode, size or mtime.  No content
 * hash: reading a large plugin on every reload buys nothing a rewrite in
 * place does not already show in its mtime. */
typedef struct {
    char *path;              /* NULL: not known */
    guint64 dev, ino;
    gint64 size, mtime_ns;
} JetFileIdentity;

typedef struct {
    char *name;              /* from [binding NAME] */
    char *file;              /* the file that defined it (last one to touch it) */
    char *plugin;            /* as written: absolute path or bare name */
    JetBindingKind kind;
    char *stream;
    char *consumer;          /* durable: the consumer; NULL for an ordered binding */
    JetDeliver deliver;      /* ordered: where to start */
    guint64 deliver_seq;
    gint64 deliver_time_ns;
    JetCheckpoint checkpoint;   /* ordered: where the position is kept */
    char *bucket;            /* kv: the bucket (stream KV_<bucket>) */
    char *keys;              /* kv: the keys watched, a key or a wildcard (filter $KV.<bucket>.<keys>) */
    gboolean initial;        /* kv: the current values first, then updates (else updates only) */
    JetManage manage;
    char **subjects;         /* NULL or NULL-terminated: the stream's subjects (managed) */
    char *filter_subject;    /* NULL: the whole stream */

    /* Pull engine */
    guint workers;
    guint batch;
    guint threshold;         /* early re-pull when this many are left; 0 = strictly paced */
    guint batch_max;         /* deliveries one handle_batch() call takes; 1: handle() one at a time */
    guint64 batch_wait_ms;   /* how long a handler batch waits to fill; 0: what has arrived */
    guint max_in_flight;     /* deliveries a plugin may keep pending (JET_PENDING) at once; 0: none */
    gint64 max_bytes;        /* 0 = none */
    guint64 expires_ms;
    guint64 idle_heartbeat_ms;
    guint64 handler_timeout_ms;   /* lease limit; 0 = none */
    gboolean exit_on_any_hung;    /* exit when one handler is hung, not when all are */

    /* Consumer settings (managed mode) */
    guint64 ack_wait_ms;
    gint64 max_deliver;      /* -1 = unlimited */
    gint64 max_ack_pending;

    /* Settlement */
    guint64 *rungs_ms;       /* the retry ladder */
    gsize n_rungs;
    guint max_attempts;      /* 0 = unlimited */
    guint64 postpone_horizon_ms;
    guint64 max_postpone_delay_ms;
    guint capture_reserve;
    guint crash_limit;
    guint max_hops;          /* 0 = no limit */
    guint64 max_time_to_dead_letter_ms;   /* a bound the schedule check enforces; 0 = none */
    gboolean accept_expiry;  /* max_attempts 0: a never-succeeding message may expire unrecorded */
    guint64 duplicate_window_ms;   /* of the stream jethost creates (subjects); 0 = the server's */
    guint64 dlq_ttl_ms;      /* each record's Nats-TTL, whole seconds; 0 = kept until removed */
    char *dlq_stream;
    char *dlq_subject;
    guint replicas;          /* [host] replicas, copied: the streams made for this binding */
    gboolean ledger;         /* the attempt ledger (KV); default TRUE */
    gboolean publish_reserved;   /* msg_publish may reach $JS., $KV., ... (docs/forwarding.md) */
    char **publish_streams;      /* the streams its publishes land in, for `jethost check --server`
                                    (docs/forwarding.md); NULL when unset */
    gboolean allow_loop;         /* publishes may come back to this binding (docs/forwarding.md) */

    /* Floor monitor and breaker */
    guint64 floor_age_ms;    /* stalled at this age; 0 = monitor (and breaker) off */
    JetBreakerMode breaker;
    guint min_deliveries;    /* the breaker claims only from this delivery on */
    guint64 breaker_pause_ms;   /* enforce: after a capture, the consumer pauses this long; 0 = not */

    /* One active host per binding (docs/exclusive.md) */
    gboolean exclusive;      /* claim the binding in the host's KV bucket before pulling */
    guint64 claim_heartbeat_ms;   /* the holder renews the claim this often */
    guint64 claim_ttl_ms;    /* a standby takes a claim not renewed for this long */
    gboolean pin;            /* on nats-server 2.11+, a pinned priority group fences the holder too */

    /* Per-key lanes (docs/lanes.md) */
    JetLaneKeySpec lane_key; /* `key`; kind OFF: no lanes */
    guint max_lane_held;     /* deliveries held behind their lane's head before pulls stop */

    /* option.NAME keys: name (without the prefix) -> value as written */
    GHashTable *options;

    /* The plugin file as found on disk, for a reload to see that it changed
     * (jet_binding_config_equal).  The config reader leaves it empty: whoever
     * resolves the plugin fills it (the daemon, binding_plugin.h). */
    JetFileIdentity plugin_id;
} JetBindingConfig;

typedef struct {
    char *main_file;
    char *dropin_dir;        /* NULL when none */
    JetHostConfig host;
    GPtrArray *bindings;     /* of JetBindingConfig*, in name order */
} JetConfig;

/* Reads main_file, then dropin_dir/\*.conf in name order (dropin_dir may be
 * NULL; a missing directory is not an error).  A group or key in a later file
 * overrides the same key of an earlier one.  Returns NULL with one error
 * naming file, group, key and cause. */
/* [host] metrics_listen: "ADDR:PORT", a numeric address (IPv6 in brackets),
 * port 0..65535; addr (freed by the caller) and port may be NULL. */
gboolean jet_config_listen_parse(const char *text, char **addr, guint16 *port);

JetConfig *jet_config_load(const char *main_file, const char *dropin_dir, GError **error);
void jet_config_free(JetConfig *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetConfig, jet_config_free)

const JetBindingConfig *jet_config_binding(const JetConfig *cfg, const char *name);

/* Refuses a secret file that group or others can read (as ssh does). */
gboolean jet_secret_file_check(const char *path, GError **error);

/* The declared keys of a group ("host" or "binding"), for documentation and
 * `jethost check`: fills *out with key i and returns TRUE, or returns FALSE
 * past the last key.  The strings are static. */
typedef struct {
    const char *key;
    const char *type;          /* as documented: string, path, int, duration, ... */
    const char *default_text;  /* as documented; NULL when required or unset by default */
    gboolean required;
    const char *help;
} JetConfigKeyInfo;

gboolean jet_config_key_info(const char *group, gsize i, JetConfigKeyInfo *out);

/* One [binding NAME] from key/value pairs (settings: key -> value, as they
 * would be written in a file) rather than from files: the same key table,
 * defaults and checks, so what a file would refuse is refused here too, and
 * what it would default to is the default here.  Errors name source as the
 * file.  The mock host builds its binding so.  Free with
 * jet_config_binding_free. */
JetBindingConfig *jet_config_binding_from_pairs(const char *source, const char *name, GHashTable *settings,
                                                GError **error);
void jet_config_binding_free(JetBindingConfig *b);
/* One key's value checked as jet_config_binding_from_pairs would check it,
 * alone (checks across keys need the whole binding). */
gboolean jet_config_binding_value_check(const char *source, const char *name, const char *key, const char *value,
                                        GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetBindingConfig, jet_config_binding_free)

/* Whether two bindings would run the same way: every key, the options and
 * the plugin file's identity, but not `file` (moving a binding unchanged
 * into another drop-in does not change it).  Pure. */
gboolean jet_binding_config_equal(const JetBindingConfig *a, const JetBindingConfig *b);

/* The first [host] key whose change a running host cannot apply (it would
 * need another connection, ledger or identity), or NULL when every change
 * can be applied (drain_timeout, plugin_dir, connect_attempts).  Pure. */
const char *jet_host_config_restart_key(const JetHostConfig *a, const JetHostConfig *b);

/* The settlement policy of a binding: its keys, with the consumer's
 * MaxDeliver as the server reported it (max_deliver; 0 = not known, the
 * binding's own is used). */
void jet_binding_settle_policy(const JetBindingConfig *b, gint64 max_deliver, JetSettlePolicy *out);

#endif
