/* The config: a main key file plus a drop-in directory, read through one
 * declarative table per group (Fluent Bit's config_map).  Each table row
 * names the key, its kind, its default (written as an op would write it and
 * parsed by the same code), its bounds, where it lands in the struct, and
 * its help.  docs/configuration.md lists the same rows (tests/unit/config.c
 * checks that). */
#include "config.h"
#include "jet_msg.h"
#include "json_out.h"
#include "names.h"
#include "duration.h"
#include "errors.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef JET_PLUGIN_DIR
#define PLUGIN_DIR_DEFAULT JET_PLUGIN_DIR
#else
#define PLUGIN_DIR_DEFAULT "/usr/lib/jethost/plugins"
#endif

/* The longest duration whose nanoseconds still fit in an int64 (nats.c). */
#define DURATION_MAX_MS ((gint64)(G_MAXINT64 / 1000000))

#define OPTION_PREFIX "option."
#define BINDING_PREFIX "binding "

typedef enum {
    K_STRING,          /* non-empty text */
    K_NAME,            /* a stream or consumer name */
    K_BUCKET,          /* a KV bucket name */
    K_SUBJECT,         /* a NATS subject; wildcards allowed */
    K_SUBJECT_LITERAL, /* a NATS subject without wildcards */
    K_SUBJECTS,        /* comma-separated subjects -> char ** */
    K_ABSPATH,         /* an absolute path */
    K_FILE,            /* an absolute path to an existing regular file */
    K_SECRET,          /* K_FILE that group and others cannot access */
    K_SERVER,          /* embedded, or nats:// / tls:// URLs */
    K_UINT,            /* guint within [min, max] */
    K_INT64,           /* gint64 within [min, max] */
    K_DURATION,        /* guint64 milliseconds within [min, max] */
    K_RUNGS,           /* comma-separated durations -> guint64 * + count */
    K_MANAGE,          /* create | bind */
    K_BOOL,            /* true | false -> gboolean */
    K_BREAKER,         /* observe | enforce | off */
    K_KIND,            /* durable | ordered */
    K_DELIVER,         /* all | new | last | last_per_subject | from_seq N | from_time T */
    K_CHECKPOINT,      /* none | kv */
    K_NAMES,           /* comma-separated stream names, each once -> char ** */
    K_LANE_KEY,        /* header:NAME | subject:N -> JetLaneKeySpec */
    K_LOG_FORMAT,      /* logfmt | json -> JetLogFormat */
} KeyKind;

static const char *const kind_names[] = {
    [K_STRING] = "string",
    [K_NAME] = "name",
    [K_BUCKET] = "name",
    [K_SUBJECT] = "subject",
    [K_SUBJECT_LITERAL] = "subject",
    [K_SUBJECTS] = "subject list",
    [K_ABSPATH] = "path",
    [K_FILE] = "file",
    [K_SECRET] = "secret file",
    [K_SERVER] = "server",
    [K_UINT] = "int",
    [K_INT64] = "int",
    [K_DURATION] = "duration",
    [K_RUNGS] = "duration list",
    [K_MANAGE] = "create or bind",
    [K_BOOL] = "bool",
    [K_BREAKER] = "observe, enforce or off",
    [K_KIND] = "durable, ordered or kv",
    [K_DELIVER] = "start position",
    [K_CHECKPOINT] = "none or kv",
    [K_NAMES] = "name list",
    [K_LANE_KEY] = "header:NAME or subject:N",
    [K_LOG_FORMAT] = "logfmt or json",
};

typedef struct {
    const char *key;
    KeyKind kind;
    const char *def;     /* default as written, parsed like a value; NULL: none or computed */
    const char *def_doc; /* the default as documented when it is computed */
    gboolean required;
    gint64 min, max;     /* ints: the value; durations: milliseconds */
    gsize offset;
    const char *help;
} KeyDef;

#define H(f) offsetof(JetHostConfig, f)
#define B(f) offsetof(JetBindingConfig, f)
#define NOB 0, 0

static const KeyDef host_keys[] = {
    { "server", K_SERVER, NULL, NULL, TRUE, NOB, H(server),
      "`embedded` (start and supervise a private nats-server on loopback) or comma-separated "
      "`nats://` or `tls://` URLs" },
    { "state_dir", K_ABSPATH, "/var/lib/jethost", NULL, FALSE, NOB, H(state_dir),
      "absolute directory for the host's state (the embedded server's JetStream store)" },
    { "plugin_dir", K_ABSPATH, PLUGIN_DIR_DEFAULT, "JET_PLUGIN_DIR", FALSE, NOB, H(plugin_dir),
      "absolute directory that bare plugin names are resolved against" },
    { "name", K_STRING, NULL, "the hostname", FALSE, NOB, H(name),
      "this host's name in provenance headers" },
    { "nats_server", K_STRING, "nats-server", NULL, FALSE, NOB, H(nats_server),
      "the nats-server binary started for `server = embedded`" },
    { "creds_file", K_SECRET, NULL, NULL, FALSE, NOB, H(creds_file),
      "NATS credentials file (JWT and nkey seed)" },
    { "nkey_seed_file", K_SECRET, NULL, NULL, FALSE, NOB, H(nkey_seed_file),
      "file holding an nkey seed" },
    { "user", K_STRING, NULL, NULL, FALSE, NOB, H(user),
      "user name; needs `password_file`" },
    { "password_file", K_SECRET, NULL, NULL, FALSE, NOB, H(password_file),
      "file holding the password of `user`" },
    { "token_file", K_SECRET, NULL, NULL, FALSE, NOB, H(token_file),
      "file holding an authentication token; not with `user`" },
    { "tls_ca", K_FILE, NULL, NULL, FALSE, NOB, H(tls_ca),
      "CA certificates to verify the server with" },
    { "tls_cert", K_FILE, NULL, NULL, FALSE, NOB, H(tls_cert),
      "client certificate; needs `tls_key`" },
    { "tls_key", K_SECRET, NULL, NULL, FALSE, NOB, H(tls_key),
      "private key of `tls_cert`" },
    { "js_domain", K_NAME, NULL, NULL, FALSE, NOB, H(js_domain),
      "the JetStream domain: the API is `$JS.<domain>.API`; not with `js_api_prefix`" },
    { "js_api_prefix", K_SUBJECT_LITERAL, NULL, NULL, FALSE, NOB, H(js_api_prefix),
      "the JetStream API prefix (an account import's), without a final dot; not with `js_domain`" },
    { "connect_attempts", K_UINT, "5", NULL, FALSE, 1, 100, H(connect_attempts),
      "attempts of the first connection before giving up (later reconnects never give up)" },
    { "connect_timeout", K_DURATION, "2s", NULL, FALSE, 1, DURATION_MAX_MS, H(connect_timeout_ms),
      "timeout of one connection attempt" },
    { "drain_timeout", K_DURATION, "30s", NULL, FALSE, 0, DURATION_MAX_MS, H(drain_timeout_ms),
      "how long a drain (SIGTERM) may take before unfinished work is left to redelivery" },
    { "ledger_bucket", K_BUCKET, "jethost_ledger", NULL, FALSE, NOB, H(ledger_bucket),
      "the attempt ledger's KV bucket (created when any binding is managed)" },
    { "ledger_max_age", K_DURATION, "7d", NULL, FALSE, 1000, DURATION_MAX_MS, H(ledger_max_age_ms),
      "how long a ledger record (and a breaker claim) lives; longer than any retry schedule "
      "(`jethost check` compares)" },
    { "replicas", K_UINT, "1", NULL, FALSE, 1, 5, H(replicas),
      "replicas of every stream and KV bucket the host creates (the DLQ stream, the ledger bucket, the "
      "advisory stream, a managed binding's stream); 3 on a cluster. One that exists is used as it is" },
    { "metrics_listen", K_STRING, NULL, NULL, FALSE, NOB, H(metrics_listen),
      "`ADDR:PORT` to serve /metrics, /healthz and /readyz on (port 0: any free port); unset: off" },
    { "metrics_idle_timeout", K_DURATION, "10s", NULL, FALSE, 100, 3600000, H(metrics_idle_timeout_ms),
      "how long a connection to `metrics_listen` may take to send a whole request head (after it "
      "opens or after the last answer) before the host closes it (docs/operations.md)" },
    { "log_format", K_LOG_FORMAT, "logfmt", NULL, FALSE, NOB, H(log_format),
      "the format of log lines on stderr: logfmt or json, one object a line (docs/logging.md)" },
};

static const KeyDef binding_keys[] = {
    { "plugin", K_STRING, NULL, NULL, TRUE, NOB, B(plugin),
      "the plugin: an absolute path, or a bare name resolved against `plugin_dir`" },
    { "stream", K_NAME, NULL, NULL, FALSE, NOB, B(stream),
      "the stream; required but for `kind = kv` (the bucket's stream)" },
    { "kind", K_KIND, "durable", NULL, FALSE, NOB, B(kind),
      "`durable`: a durable pull consumer, each message acked; `ordered`: the stream in order, "
      "one message at a time, through a consumer the host creates and re-creates itself "
      "(docs/ordered.md)" },
    { "consumer", K_NAME, NULL, NULL, FALSE, NOB, B(consumer),
      "the durable consumer's name; required for `kind = durable`, not allowed for `ordered`" },
    { "deliver", K_DELIVER, NULL, "all", FALSE, NOB, B(deliver),
      "`kind = ordered`: where a binding without a position starts: `all`, `new`, `last`, "
      "`last_per_subject`, `from_seq N` or `from_time T` (RFC 3339)" },
    { "bucket", K_BUCKET, NULL, NULL, FALSE, NOB, B(bucket),
      "`kind = kv`: the KV bucket watched (required there, not allowed elsewhere)" },
    { "keys", K_SUBJECT, ">", NULL, FALSE, NOB, B(keys),
      "`kind = kv`: the keys watched, a key or a wildcard such as `config.*` or `>`" },
    { "initial", K_BOOL, "true", NULL, FALSE, NOB, B(initial),
      "`kind = kv`: `true`: every key's current value first, then the updates; `false`: updates only" },
    { "checkpoint", K_CHECKPOINT, "none", NULL, FALSE, NOB, B(checkpoint),
      "`kind = ordered`: `kv` keeps the position in the host's KV bucket (`[host] ledger_bucket`), so a "
      "restarted host resumes after the last message handled; `none`: a restart begins at `deliver`" },
    { "manage", K_MANAGE, "create", NULL, FALSE, NOB, B(manage),
      "`create`: create or update the consumer (and the stream when `subjects` is set); "
      "`bind`: only check that they exist and fit" },
    { "subjects", K_SUBJECTS, NULL, NULL, FALSE, NOB, B(subjects),
      "comma-separated subjects of the stream, created or updated with it; only with "
      "`manage = create`" },
    { "duplicate_window", K_DURATION, "0", NULL, FALSE, 0, DURATION_MAX_MS, B(duplicate_window_ms),
      "the duplicate window of the stream jethost creates (`subjects`): how long the server drops a publish "
      "whose Nats-Msg-Id it has stored, which publish-then-ack relies on; only with `subjects`" },
    { "filter_subject", K_SUBJECT, NULL, NULL, FALSE, NOB, B(filter_subject),
      "the consumer's filter subject; unset: the whole stream" },
    { "workers", K_UINT, "1", NULL, FALSE, 1, 64, B(workers),
      "handler threads of this binding" },
    { "batch", K_UINT, "10", NULL, FALSE, 1, 10000, B(batch),
      "messages asked for by one pull" },
    { "threshold", K_UINT, "0", NULL, FALSE, 0, 9999, B(threshold),
      "re-pull early when this many of the batch are left; 0 = strictly paced; less than `batch`" },
    { "batch_max", K_UINT, "1", NULL, FALSE, 1, 1000, B(batch_max),
      "deliveries handed to the plugin's handle_batch() at once, each with its own verdict; 1 = handle() one "
      "at a time; at most `batch` (with `key`, one message a key; ordered and KV bindings settle a batch in "
      "stream order; docs/batches.md)" },
    { "batch_wait", K_DURATION, "0", NULL, FALSE, 0, 60000, B(batch_wait_ms),
      "`batch_max`: how long a handler batch waits for more deliveries to fill it; 0 = what has arrived; "
      "at most 1m; not with `key`" },
    { "max_in_flight", K_UINT, "0", NULL, FALSE, 0, 1000, B(max_in_flight),
      "deliveries the plugin may keep pending at once (handle() returns JET_PENDING, msg_complete() settles "
      "them later); 0 = none, JET_PENDING is a plugin error (durable bindings without `key` or `batch_max`; "
      "docs/async.md)" },
    { "max_bytes", K_INT64, "0", NULL, FALSE, 0, G_MAXINT64, B(max_bytes),
      "byte limit of one pull; 0 = none" },
    { "expires", K_DURATION, "30s", NULL, FALSE, 1000, DURATION_MAX_MS, B(expires_ms),
      "how long one pull waits on the server; at least 1s" },
    { "idle_heartbeat", K_DURATION, "5s", NULL, FALSE, 1, DURATION_MAX_MS, B(idle_heartbeat_ms),
      "heartbeat of a waiting pull; more than 0 and at most half of `expires` (the server "
      "requires 2 x heartbeat <= expires)" },
    { "handler_timeout", K_DURATION, "5m", NULL, FALSE, 0, DURATION_MAX_MS, B(handler_timeout_ms),
      "lease limit of one handler call; 0 = none" },
    { "exit_on_any_hung", K_BOOL, "false", NULL, FALSE, NOB, B(exit_on_any_hung),
      "exit the host (code 5) as soon as one handler is past `handler_timeout`, instead of when "
      "every worker of the binding is (an ordered binding waits for its one handler unless this is set)" },
    { "ack_wait", K_DURATION, "30s", NULL, FALSE, 1000, DURATION_MAX_MS, B(ack_wait_ms),
      "the consumer's AckWait (managed mode): the crash fallback; at least 1s" },
    { "max_deliver", K_INT64, "-1", NULL, FALSE, -1, G_MAXINT32, B(max_deliver),
      "the consumer's MaxDeliver (managed mode): -1 = unlimited, else at least 1 and more "
      "than `capture_reserve`" },
    { "max_ack_pending", K_INT64, "1000", NULL, FALSE, 1, G_MAXINT32, B(max_ack_pending),
      "the consumer's MaxAckPending (managed mode)" },
    { "rungs", K_RUNGS, "1s, 5s, 30s, 2m, 10m", NULL, FALSE, 1, DURATION_MAX_MS, B(rungs_ms),
      "the retry ladder: delay before retry k is rung k (the last rung repeats); each more "
      "than 0; never empty" },
    { "max_attempts", K_UINT, "5", NULL, FALSE, 0, G_MAXINT32, B(max_attempts),
      "failures before a message is dead-lettered (`exhausted`); 0 = unlimited" },
    { "postpone_horizon", K_DURATION, "1h", NULL, FALSE, 0, DURATION_MAX_MS, B(postpone_horizon_ms),
      "a postpone within this age of the message (its stream timestamp) is free; past it, a "
      "postpone counts as a failure" },
    { "max_postpone_delay", K_DURATION, "15m", NULL, FALSE, 1, DURATION_MAX_MS,
      B(max_postpone_delay_ms),
      "the longest delay a plugin may postpone by; more than 0" },
    { "capture_reserve", K_UINT, "1", NULL, FALSE, 0, G_MAXINT32, B(capture_reserve),
      "deliveries kept back from a finite `max_deliver` to retry a failed capture" },
    { "crash_limit", K_UINT, "3", NULL, FALSE, 1, G_MAXINT32, B(crash_limit),
      "strikes (host deaths while handling the message alone) before it is captured as `poison`" },
    { "max_hops", K_UINT, "16", NULL, FALSE, 0, 1000000, B(max_hops),
      "a message that host publishes have carried this many times (its `Jethost-Hops` header) is "
      "dead-lettered as `hop-limit` without reaching the plugin: what bounds a publish loop; 0 = no limit "
      "(docs/forwarding.md)" },
    { "max_time_to_dead_letter", K_DURATION, "0", NULL, FALSE, 0, DURATION_MAX_MS,
      B(max_time_to_dead_letter_ms),
      "a bound on the time from first delivery to dead-letter that `jethost check` enforces; 0 = none" },
    { "accept_expiry", K_BOOL, "false", NULL, FALSE, NOB, B(accept_expiry),
      "with `max_attempts = 0` and MaxDeliver unlimited, accept that a message that never "
      "succeeds expires from a stream with a `max_age`, unrecorded; only with `max_attempts = 0`" },
    { "dlq_ttl", K_DURATION, "0", NULL, FALSE, 0, DURATION_MAX_MS, B(dlq_ttl_ms),
      "how long the server keeps each dead-letter record (its `Nats-TTL`, nats-server 2.11 or later, a DLQ "
      "stream with allow_msg_ttl); at least 1s, in whole seconds; 0 = until removed" },
    { "dlq_stream", K_NAME, "JETHOST_DLQ", NULL, FALSE, NOB, B(dlq_stream),
      "the dead-letter stream" },
    { "dlq_subject", K_SUBJECT_LITERAL, NULL, "jethost.dlq.<binding name>", FALSE, NOB,
      B(dlq_subject),
      "the subject captures are published to" },
    { "ledger", K_BOOL, "true", NULL, FALSE, NOB, B(ledger),
      "keep the attempt ledger (failures, first-failure time, strikes) in KV; `false`: the "
      "host falls back to the delivery count" },
    { "publish_reserved", K_BOOL, "false", NULL, FALSE, NOB, B(publish_reserved),
      "let the plugin's publishes (msg_publish) go to the server's namespaces ($JS., $KV., $SYS., ...); "
      "`false`: refused as a plugin error" },
    { "publish_streams", K_NAMES, NULL, NULL, FALSE, NOB, B(publish_streams),
      "comma-separated streams the plugin's publishes land in: `jethost check --server` compares "
      "each one's duplicate window with the binding's worst case (docs/forwarding.md)" },
    { "allow_loop", K_BOOL, "false", NULL, FALSE, NOB, B(allow_loop),
      "accept that the plugin's publishes come back to this binding (its own stream, or a cycle "
      "through other bindings) instead of `jethost check` and `run` refusing it (docs/forwarding.md)" },
    { "floor_age", K_DURATION, "2m", NULL, FALSE, 0, DURATION_MAX_MS, B(floor_age_ms),
      "an ack floor that has not moved for this long while the consumer has delivered past it "
      "is stalled; 0 = the floor monitor and the breaker are off" },
    { "breaker", K_BREAKER, "observe", NULL, FALSE, NOB, B(breaker),
      "`observe`: count and log what the breaker would quarantine; `enforce` (experimental): "
      "capture it with cause `breaker`; `off`: no breaker (the monitor still reports)" },
    { "min_deliveries", K_UINT, "2", NULL, FALSE, 1, G_MAXINT32, B(min_deliveries),
      "the breaker claims a message only once it has been delivered this many times" },
    { "breaker_pause", K_DURATION, "0", NULL, FALSE, 0, 24 * 3600 * 1000, B(breaker_pause_ms),
      "`breaker = enforce`: once the breaker has claimed a message for capture, the consumer "
      "pauses this long (nats-server 2.11+: for every host, by the server; before: this host's "
      "pulls); 0 = no pause, at most 24h" },
    { "exclusive", K_BOOL, "false", NULL, FALSE, NOB, B(exclusive),
      "one active host: hosts running this binding claim it in the host's KV bucket (`[host] "
      "ledger_bucket`); the others stand by and take over when the holder stops or dies" },
    { "claim_heartbeat", K_DURATION, "1s", NULL, FALSE, 100, DURATION_MAX_MS, B(claim_heartbeat_ms),
      "`exclusive = true`: the holder renews its claim this often; at least 100ms, at most half of "
      "`claim_ttl`" },
    { "claim_ttl", K_DURATION, "5s", NULL, FALSE, 200, DURATION_MAX_MS, B(claim_ttl_ms),
      "`exclusive = true`: a standby takes over a claim it has seen unrenewed for this long (by its "
      "own clock); at least twice `claim_heartbeat`" },
    { "pin", K_BOOL, "true", NULL, FALSE, NOB, B(pin),
      "`exclusive = true`, a durable binding the host manages, nats-server 2.11 or later: the consumer is a "
      "pinned priority group, so the server delivers only to the holder's pulls and a paused holder gets "
      "nothing once a standby took over (docs/exclusive.md); `false`: the claim alone" },
    { "key", K_LANE_KEY, NULL, NULL, FALSE, NOB, B(lane_key),
      "per-key lanes (durable only): `header:NAME` or `subject:N` (the Nth token, from 1); messages "
      "with one key are handled one at a time in stream order, different keys in parallel; implies "
      "`exclusive = true` unless it is set (docs/lanes.md)" },
    { "max_lane_held", K_UINT, "1000", NULL, FALSE, 1, 1000000, B(max_lane_held),
      "`key`: deliveries held behind an earlier message of their key (a retried or postponed "
      "head) before the host stops pulling" },
};

/* --- the merged view of all files ---------------------------------------- */

typedef struct {
    char *value;        /* stripped */
    const char *file;   /* where it was last set (owned by Loader.files) */
} Setting;

typedef struct {
    char *group;        /* as written: "host" or "binding NAME" */
    char *name;         /* binding name; NULL for [host] */
    const char *file;   /* the last file that touched the group */
    GHashTable *settings; /* key -> Setting* */
} Section;

typedef struct {
    char *message;        /* "FILE: [GROUP] KEY: why" */
    guint file;           /* index in Loader.files; G_MAXUINT: none */
    guint line;           /* 0: unknown (sorted after the known ones of its file) */
    guint order;          /* when it was found: the tie-break */
} ConfigError;

typedef struct {
    GPtrArray *files;     /* char *, every file read */
    Section *host;
    GHashTable *bindings; /* name -> Section* */
    GHashTable *lines;    /* "FILE\nGROUP\nKEY" -> its line (GUINT_TO_POINTER) */
    GPtrArray *errors;    /* ConfigError*: every error found, reported together */
    GHashTable *dropped;  /* "GROUP\nKEY": left out after an error, to find the next */
} Loader;

static void config_error_free(gpointer p)
{
    ConfigError *e = p;
    g_free(e->message);
    g_free(e);
}

static void setting_free(gpointer p)
{
    Setting *s = p;
    g_free(s->value);
    g_free(s);
}

static Section *section_new(const char *group, const char *name)
{
    Section *s = g_new0(Section, 1);
    s->group = g_strdup(group);
    s->name = g_strdup(name);
    s->settings = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, setting_free);
    return s;
}

static void section_free(gpointer p)
{
    Section *s = p;
    if (s == NULL)
        return;
    g_free(s->group);
    g_free(s->name);
    g_hash_table_unref(s->settings);
    g_free(s);
}

static void loader_clear(Loader *l)
{
    g_clear_pointer(&l->lines, g_hash_table_unref);
    g_clear_pointer(&l->errors, g_ptr_array_unref);
    g_clear_pointer(&l->dropped, g_hash_table_unref);
    g_clear_pointer(&l->files, g_ptr_array_unref);
    g_clear_pointer(&l->host, section_free);
    g_clear_pointer(&l->bindings, g_hash_table_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Loader, loader_clear)

/* --- errors --------------------------------------------------------------- */

static void key_error(GError **error, gint code, const char *file, const char *group,
                      const char *key, const char *fmt, ...) G_GNUC_PRINTF(6, 7);

/* One line: "FILE: [GROUP] KEY: why". */
static void key_error(GError **error, gint code, const char *file, const char *group,
                      const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, JET_ERROR, code, "%s: [%s] %s: %s", file, group, key, why);
}

/* Keeps an error (taking it) to report with the others: the line of
 * FILE's GROUP KEY when the files had it. */
static void note(Loader *l, const char *file, const char *group, const char *key, GError *e)
{
    ConfigError *ce = g_new0(ConfigError, 1);
    ce->message = g_strdup(e->message);
    ce->file = G_MAXUINT;
    for (guint i = 0; file != NULL && i < l->files->len; i++)
        if (strcmp(g_ptr_array_index(l->files, i), file) == 0)
            ce->file = i;
    if (file != NULL && group != NULL && key != NULL) {
        g_autofree char *k = g_strconcat(file, "\n", group, "\n", key, NULL);
        ce->line = GPOINTER_TO_UINT(g_hash_table_lookup(l->lines, k));
    }
    ce->order = l->errors->len;
    g_ptr_array_add(l->errors, ce);
    g_error_free(e);
}

/* The KEY of a "FILE: [GROUP] KEY: why" message (key_error's), or NULL. */
static char *error_key(const char *message, const char *group)
{
    g_autofree char *tag = g_strdup_printf("[%s] ", group);
    const char *at = strstr(message, tag);
    if (at == NULL)
        return NULL;
    at += strlen(tag);
    const char *end = strstr(at, ": ");
    return end != NULL && memchr(at, ' ', (gsize)(end - at)) == NULL ? g_strndup(at, (gsize)(end - at)) : NULL;
}

static gint cmp_error(gconstpointer a, gconstpointer b)
{
    const ConfigError *x = *(const ConfigError *const *)a, *y = *(const ConfigError *const *)b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    guint lx = x->line != 0 ? x->line : G_MAXUINT, ly = y->line != 0 ? y->line : G_MAXUINT;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Every error kept, in file order (file, then line), one a line. */
static void report_errors(Loader *l, GError **error)
{
    g_ptr_array_sort(l->errors, cmp_error);
    g_autoptr(GString) all = g_string_new(NULL);
    for (guint i = 0; i < l->errors->len; i++)
        g_string_append_printf(all, "%s%s", i ? "\n" : "", ((ConfigError *)g_ptr_array_index(l->errors, i))->message);
    g_set_error_literal(error, JET_ERROR, JET_ERROR_INVALID, all->str);
}

/* The closest key of table to an unknown one, when a typo explains it:
 * at most one edit in four characters (at least one). */
static const char *nearest_key(const char *const *keys, const char *key)
{
    const char *best = NULL;
    gsize best_d = MAX(strlen(key) / 4, 1) + 1;
    gsize n = strlen(key);
    for (const char *const *k = keys; *k != NULL; k++) {
        gsize m = strlen(*k);
        g_autofree gsize *row = g_new(gsize, m + 1);
        for (gsize j = 0; j <= m; j++)
            row[j] = j;
        for (gsize i = 1; i <= n; i++) {
            gsize prev = row[0];
            row[0] = i;
            for (gsize j = 1; j <= m; j++) {
                gsize cur = row[j];
                gsize sub = prev + (key[i - 1] != (*k)[j - 1]);
                row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), sub);
                prev = cur;
            }
        }
        if (row[m] < best_d) {
            best_d = row[m];
            best = *k;
        }
    }
    return best;
}

/* --- value checks --------------------------------------------------------- */

static const KeyDef *find_key(const KeyDef *table, gsize n, const char *key)
{
    for (gsize i = 0; i < n; i++)
        if (strcmp(table[i].key, key) == 0)
            return &table[i];
    return NULL;
}

/* An option's name: what a plugin declares (a-z 0-9 _ -). */
static gboolean option_name_ok(const char *s)
{
    if (*s == '\0')
        return FALSE;
    for (const char *p = s; *p; p++)
        if (!g_ascii_isdigit(*p) && !g_ascii_islower(*p) && *p != '_' && *p != '-')
            return FALSE;
    return TRUE;
}

/* A configured subject: wildcards where the key allows them, and the
 * server's namespaces always (a filter on a KV stream is $KV.<bucket>.>). */
static const char *subject_problem(const char *s, gboolean wildcards)
{
    return jet_subject_problem(s, JET_SUBJECT_RESERVED | (wildcards ? JET_SUBJECT_WILDCARDS : 0));
}

/* Splits a comma-separated list into stripped items; an empty item is an
 * error.  Returns NULL on error (why set). */
static GStrv split_list(const char *value, const char **why)
{
    g_auto(GStrv) items = g_strsplit(value, ",", -1);
    for (gsize i = 0; items[i] != NULL; i++) {
        g_strstrip(items[i]);
        if (items[i][0] == '\0') {
            *why = "has an empty item";
            return NULL;
        }
    }
    return g_steal_pointer(&items);
}

static gboolean check_server(const char *value, const char *file, const char *group,
                             const char *key, GError **error)
{
    if (strcmp(value, "embedded") == 0)
        return TRUE;
    const char *why = NULL;
    g_auto(GStrv) urls = split_list(value, &why);
    if (urls == NULL) {
        key_error(error, JET_ERROR_INVALID, file, group, key, "'%s' %s", value, why);
        return FALSE;
    }
    for (gsize i = 0; urls[i] != NULL; i++) {
        const char *u = urls[i];
        if (strcmp(u, "embedded") == 0) {
            key_error(error, JET_ERROR_INVALID, file, group, key,
                      "'embedded' cannot be mixed with URLs");
            return FALSE;
        }
        if (!g_str_has_prefix(u, "nats://") && !g_str_has_prefix(u, "tls://")) {
            key_error(error, JET_ERROR_INVALID, file, group, key,
                      "'%s' is not a nats:// or tls:// URL (or write: embedded)", u);
            return FALSE;
        }
        g_autoptr(GError) local = NULL;
        g_autoptr(GUri) uri = g_uri_parse(u, G_URI_FLAGS_NONE, &local);
        if (uri == NULL || g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0') {
            key_error(error, JET_ERROR_INVALID, file, group, key, "'%s' is not a valid URL%s%s", u,
                      local != NULL ? ": " : " (no host)", local != NULL ? local->message : "");
            return FALSE;
        }
        if (g_uri_get_userinfo(uri) != NULL) {
            /* The URLs are logged; secrets come from files. */
            key_error(error, JET_ERROR_INVALID, file, group, key,
                      "a URL must not carry credentials; use user + password_file, "
                      "token_file, creds_file or nkey_seed_file");
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean parse_int(const KeyDef *d, const char *value, gint64 *out, const char *file,
                          const char *group, GError **error)
{
    gint64 v = 0;
    g_autoptr(GError) local = NULL;
    if (!g_ascii_string_to_signed(value, 10, G_MININT64, G_MAXINT64, &v, &local)) {
        if (g_error_matches(local, G_NUMBER_PARSER_ERROR, G_NUMBER_PARSER_ERROR_OUT_OF_BOUNDS))
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' is out of range", value);
        else
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' is not an integer",
                      value);
        return FALSE;
    }
    if (v < d->min || v > d->max) {
        if (d->max >= G_MAXINT32)
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "%" G_GINT64_FORMAT " is out of range (at least %" G_GINT64_FORMAT ")", v,
                      d->min);
        else
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "%" G_GINT64_FORMAT " is out of range (%" G_GINT64_FORMAT "..%"
                      G_GINT64_FORMAT ")", v, d->min, d->max);
        return FALSE;
    }
    if (v == 0 && d->min == -1) {
        /* -1 means unlimited in such a key, and 0 means nothing useful. */
        key_error(error, JET_ERROR_INVALID, file, group, d->key, "0 is not allowed: -1 (unlimited) or at least 1");
        return FALSE;
    }
    *out = v;
    return TRUE;
}

static gboolean parse_duration(const KeyDef *d, const char *value, guint64 *out,
                               const char *file, const char *group, GError **error)
{
    guint64 ms = 0;
    g_autoptr(GError) local = NULL;
    if (!jet_duration_parse_ms(value, &ms, &local)) {
        key_error(error, JET_ERROR_INVALID, file, group, d->key, "%s", local->message);
        return FALSE;
    }
    if (ms < (guint64)d->min) {
        g_autofree char *min = jet_duration_format_ms((guint64)d->min);
        if (d->min == 1)
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "'%s' must be more than 0", value);
        else
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "'%s' is too short (at least %s)", value, min);
        return FALSE;
    }
    if (ms > (guint64)d->max) {
        key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' is too long", value);
        return FALSE;
    }
    *out = ms;
    return TRUE;
}

static gboolean check_file(const char *path, GError **error)
{
    GStatBuf st;
    if (g_stat(path, &st) != 0) {
        int e = errno;
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "%s: %s", path, g_strerror(e));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "%s is not a regular file", path);
        return FALSE;
    }
    return TRUE;
}

gboolean jet_secret_file_check(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, FALSE);

    GStatBuf st;
    if (g_stat(path, &st) != 0) {
        int e = errno;
        g_set_error(error, JET_ERROR, e == EACCES ? JET_ERROR_PERMISSION : JET_ERROR_INVALID,
                    "secret file %s: %s", path, g_strerror(e));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "secret file %s is not a regular file",
                    path);
        return FALSE;
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PERMISSION,
                    "secret file %s is accessible by group or others (mode %04o); "
                    "refused: chmod 600 it", path, (unsigned)(st.st_mode & 07777));
        return FALSE;
    }
    /* Whoever owns it can change it, or make it readable to others. */
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PERMISSION,
                    "secret file %s is owned by uid %u, not by the user jethost runs as (uid %u) or root; "
                    "refused", path, (unsigned)st.st_uid, (unsigned)geteuid());
        return FALSE;
    }
    if (g_access(path, R_OK) != 0) {
        int e = errno;
        g_set_error(error, JET_ERROR, JET_ERROR_PERMISSION, "secret file %s: %s", path,
                    g_strerror(e));
        return FALSE;
    }
    return TRUE;
}

/* Parses one value (from a file, or a default) into base + d->offset. */
/* "... [group] rungs: why" becomes "... [group] rungs: rung 2: why" when
 * the ladder has more than one rung. */
static void name_rung(GError **error, const char *key, gsize rung, gsize n)
{
    if (n < 2 || error == NULL || *error == NULL)
        return;
    g_autofree char *needle = g_strdup_printf("] %s: ", key);
    char *at = strstr((*error)->message, needle);
    if (at == NULL)
        return;
    gsize head = (gsize)(at - (*error)->message) + strlen(needle);
    char *msg = g_strdup_printf("%.*srung %" G_GSIZE_FORMAT ": %s", (int)head, (*error)->message, rung,
                                (*error)->message + head);
    g_free((*error)->message);
    (*error)->message = msg;
}

/* deliver = all | new | last | last_per_subject | from_seq N | from_time T */
static gboolean parse_deliver(const KeyDef *d, const char *value, gpointer base, const char *file,
                              const char *group, GError **error)
{
    JetBindingConfig *b = base;
    static const struct {
        const char *word;
        JetDeliver deliver;
    } plain[] = {
        { "all", JET_DELIVER_ALL },
        { "new", JET_DELIVER_NEW },
        { "last", JET_DELIVER_LAST },
        { "last_per_subject", JET_DELIVER_LAST_PER_SUBJECT },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(plain); i++) {
        if (strcmp(value, plain[i].word) == 0) {
            b->deliver = plain[i].deliver;
            return TRUE;
        }
    }
    g_auto(GStrv) words = g_strsplit_set(value, " \t", -1);
    guint n = 0;
    const char *w[3] = { NULL, NULL, NULL };
    for (char **p = words; *p != NULL; p++)
        if (**p != '\0' && n < 3)
            w[n++] = *p;
    if (n == 2 && strcmp(w[0], "from_seq") == 0) {
        guint64 seq = 0;
        if (!g_ascii_string_to_unsigned(w[1], 10, 1, G_MAXUINT64, &seq, NULL)) {
            g_autofree char *shown = jet_text_escape(w[1], strlen(w[1]), FALSE);
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "from_seq needs a stream sequence of at least 1, not '%s'", shown);
            return FALSE;
        }
        b->deliver = JET_DELIVER_FROM_SEQ;
        b->deliver_seq = seq;
        return TRUE;
    }
    if (n == 2 && strcmp(w[0], "from_time") == 0) {
        g_autoptr(GDateTime) t = g_date_time_new_from_iso8601(w[1], NULL);
        if (t == NULL) {
            g_autofree char *shown = jet_text_escape(w[1], strlen(w[1]), FALSE);
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "from_time needs an RFC 3339 time with its zone (like 2024-01-01T00:00:00Z), not '%s'",
                      shown);
            return FALSE;
        }
        /* Nanoseconds since 1970 in a gint64, as the server takes them:
         * 1970 to 2262. */
        gint64 unix_s = g_date_time_to_unix(t);
        if (unix_s < 0 || unix_s > G_MAXINT64 / G_GINT64_CONSTANT(1000000000) - 1) {
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "from_time %s is outside what the server can take (1970 to 2262)", w[1]);
            return FALSE;
        }
        b->deliver = JET_DELIVER_FROM_TIME;
        b->deliver_time_ns = unix_s * G_GINT64_CONSTANT(1000000000) + (gint64)g_date_time_get_microsecond(t) * 1000;
        return TRUE;
    }
    /* Shown escaped: a control byte in a value must not reach a terminal. */
    g_autofree char *shown = jet_text_escape(value, strlen(value), FALSE);
    key_error(error, JET_ERROR_INVALID, file, group, d->key,
              "'%s' is not all, new, last, last_per_subject, from_seq N or from_time T", shown);
    return FALSE;
}

/* The keys whose value is one word of a few: each word and the value it
 * stands for, in the order an error lists them.  Every such field is an
 * enum or a gboolean, stored as an int. */
typedef struct {
    const char *word;
    int value;
} EnumWord;

static const EnumWord manage_words[] = { { "create", JET_MANAGE_CREATE }, { "bind", JET_MANAGE_BIND }, { 0 } };
static const EnumWord bool_words[] = { { "true", TRUE }, { "false", FALSE }, { 0 } };
static const EnumWord kind_words[] = {
    { "durable", JET_KIND_DURABLE }, { "ordered", JET_KIND_ORDERED }, { "kv", JET_KIND_KV }, { 0 },
};
static const EnumWord checkpoint_words[] = { { "none", JET_CHECKPOINT_NONE }, { "kv", JET_CHECKPOINT_KV }, { 0 } };
static const EnumWord log_format_words[] = { { "logfmt", JET_LOG_FORMAT_LOGFMT }, { "json", JET_LOG_FORMAT_JSON }, { 0 } };
static const EnumWord breaker_words[] = {
    { "observe", JET_BREAKER_MODE_OBSERVE }, { "enforce", JET_BREAKER_MODE_ENFORCE }, { "off", JET_BREAKER_MODE_OFF },
    { 0 },
};
static const EnumWord *const enum_words[] = {
    [K_MANAGE] = manage_words, [K_BOOL] = bool_words, [K_KIND] = kind_words,
    [K_CHECKPOINT] = checkpoint_words, [K_LOG_FORMAT] = log_format_words, [K_BREAKER] = breaker_words,
};
G_STATIC_ASSERT(sizeof(JetManage) == sizeof(int) && sizeof(gboolean) == sizeof(int) &&
                sizeof(JetBindingKind) == sizeof(int) && sizeof(JetCheckpoint) == sizeof(int) &&
                sizeof(JetLogFormat) == sizeof(int) && sizeof(JetBreakerMode) == sizeof(int));

/* One word of the key's table, exactly (case counts); an error names the
 * words in order: "'yes' is not true or false". */
static gboolean parse_enum(const KeyDef *d, const char *value, gpointer field, const char *file, const char *group,
                           GError **error)
{
    const EnumWord *words = enum_words[d->kind];
    gsize n = 0;
    for (; words[n].word != NULL; n++) {
        if (strcmp(value, words[n].word) == 0) {
            *(int *)field = words[n].value;
            return TRUE;
        }
    }
    g_autoptr(GString) list = g_string_new(NULL);
    for (gsize i = 0; i < n; i++)
        g_string_append_printf(list, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", words[i].word);
    g_autofree char *shown = jet_text_escape(value, strlen(value), FALSE);
    key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' is not %s", shown, list->str);
    return FALSE;
}

static gboolean parse_value(const KeyDef *d, const char *value, gpointer base, const char *file,
                            const char *group, GError **error)
{
    gpointer field = (char *)base + d->offset;
    const char *why = NULL;
    gint64 v = 0;

    switch (d->kind) {
    case K_STRING:
        if (*value == '\0') {
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "must not be empty");
            return FALSE;
        }
        break;
    case K_NAME:
    case K_BUCKET:
        why = d->kind == K_NAME ? jet_name_problem(value) : jet_bucket_problem(value);
        if (why != NULL) {
            /* Escaped: a control byte must not reach a terminal. */
            g_autofree char *shown = jet_text_escape(value, strlen(value), FALSE);
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' %s", shown, why);
            return FALSE;
        }
        break;
    case K_SUBJECT:
    case K_SUBJECT_LITERAL:
        why = subject_problem(value, d->kind == K_SUBJECT);
        if (why != NULL) {
            g_autofree char *shown = jet_text_escape(value, strlen(value), FALSE);
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "subject '%s' %s", shown, why);
            return FALSE;
        }
        break;
    case K_SUBJECTS: {
        g_auto(GStrv) items = split_list(value, &why);
        if (items == NULL) {
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' %s", value, why);
            return FALSE;
        }
        for (gsize i = 0; items[i] != NULL; i++) {
            why = subject_problem(items[i], TRUE);
            if (why != NULL) {
                g_autofree char *shown = jet_text_escape(items[i], strlen(items[i]), FALSE);
                key_error(error, JET_ERROR_INVALID, file, group, d->key, "subject '%s' %s", shown, why);
                return FALSE;
            }
        }
        *(char ***)field = g_steal_pointer(&items);
        return TRUE;
    }
    case K_NAMES: {
        g_auto(GStrv) items = split_list(value, &why);
        if (items == NULL) {
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' %s", value, why);
            return FALSE;
        }
        for (gsize i = 0; items[i] != NULL; i++) {
            why = jet_name_problem(items[i]);
            if (why != NULL) {
                /* Escaped: a control byte must not reach a terminal. */
                g_autofree char *shown = jet_text_escape(items[i], strlen(items[i]), FALSE);
                key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' %s", shown, why);
                return FALSE;
            }
            for (gsize j = 0; j < i; j++) {
                if (strcmp(items[i], items[j]) == 0) {
                    key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' is named twice", items[i]);
                    return FALSE;
                }
            }
        }
        g_strfreev(*(char ***)field);
        *(char ***)field = g_steal_pointer(&items);
        return TRUE;
    }
    case K_ABSPATH:
    case K_FILE:
    case K_SECRET:
        if (!g_path_is_absolute(value)) {
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "'%s' is not an absolute path", value);
            return FALSE;
        }
        if (d->kind != K_ABSPATH) {
            g_autoptr(GError) local = NULL;
            gboolean ok = d->kind == K_SECRET ? jet_secret_file_check(value, &local)
                                              : check_file(value, &local);
            if (!ok) {
                key_error(error, local->code, file, group, d->key, "%s", local->message);
                return FALSE;
            }
        }
        break;
    case K_SERVER:
        if (!check_server(value, file, group, d->key, error))
            return FALSE;
        break;
    case K_UINT:
        if (!parse_int(d, value, &v, file, group, error))
            return FALSE;
        *(guint *)field = (guint)v;
        return TRUE;
    case K_INT64:
        if (!parse_int(d, value, &v, file, group, error))
            return FALSE;
        *(gint64 *)field = v;
        return TRUE;
    case K_DURATION:
        return parse_duration(d, value, (guint64 *)field, file, group, error);
    case K_RUNGS: {
        if (*value == '\0') {
            key_error(error, JET_ERROR_INVALID, file, group, d->key,
                      "the retry ladder needs at least one rung (like 1s, 5s, 30s)");
            return FALSE;
        }
        g_auto(GStrv) items = split_list(value, &why);
        if (items == NULL) {
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s' %s", value, why);
            return FALSE;
        }
        gsize n = g_strv_length(items);
        g_autofree guint64 *rungs = g_new0(guint64, n);
        for (gsize i = 0; i < n; i++) {
            if (!parse_duration(d, items[i], &rungs[i], file, group, error)) {
                name_rung(error, d->key, i + 1, n);
                return FALSE;
            }
        }
        JetBindingConfig *b = base;
        g_free(b->rungs_ms);
        b->rungs_ms = g_steal_pointer(&rungs);
        b->n_rungs = n;
        return TRUE;
    }
    case K_MANAGE:
    case K_BOOL:
    case K_KIND:
    case K_CHECKPOINT:
    case K_LOG_FORMAT:
    case K_BREAKER:
        return parse_enum(d, value, field, file, group, error);
    case K_DELIVER:
        return parse_deliver(d, value, base, file, group, error);
    case K_LANE_KEY: {
        const char *lane_why = NULL;
        if (!jet_lane_key_parse(value, (JetLaneKeySpec *)field, &lane_why)) {
            g_autofree char *shown = jet_text_escape(value, strlen(value), FALSE);
            key_error(error, JET_ERROR_INVALID, file, group, d->key, "'%s': %s", shown, lane_why);
            return FALSE;
        }
        return TRUE;
    }
    }
    /* The string kinds land here. */
    char **slot = field;
    g_free(*slot);
    *slot = g_strdup(value);
    return TRUE;
}

/* Fills base from the section through the table: set keys, else defaults. */
static gboolean fill(const KeyDef *table, gsize n, const Section *sec, gpointer base,
                     GError **error)
{
    for (gsize i = 0; i < n; i++) {
        const KeyDef *d = &table[i];
        const Setting *s = g_hash_table_lookup(sec->settings, d->key);
        gboolean has_default = d->def != NULL || d->def_doc != NULL;
        if (s != NULL && (*s->value != '\0' || d->required || has_default)) {
            if (d->required && *s->value == '\0') {
                key_error(error, JET_ERROR_INVALID, s->file, sec->group, d->key,
                          "required, must not be empty");
                return FALSE;
            }
            if (!parse_value(d, s->value, base, s->file, sec->group, error))
                return FALSE;
        } else if (s == NULL && d->required) {
            key_error(error, JET_ERROR_INVALID, sec->file, sec->group, d->key,
                      "required key is missing");
            return FALSE;
        } else if (s == NULL && d->def != NULL) {
            /* A default is parsed like a value, so a bad one cannot slip in. */
            if (!parse_value(d, d->def, base, sec->file, sec->group, error))
                return FALSE;
        }
        /* Else: an optional key without a default stays unset (NULL); an
         * empty value of such a key means the same. */
    }
    return TRUE;
}

/* The file to blame for KEY: where it was set, else where the group was. */
static const char *blame(const Section *sec, const char *key)
{
    const Setting *s = g_hash_table_lookup(sec->settings, key);
    return s != NULL ? s->file : sec->file;
}

static gboolean is_set(const Section *sec, const char *key)
{
    const Setting *s = g_hash_table_lookup(sec->settings, key);
    return s != NULL && *s->value != '\0';
}

/* --- [host] --------------------------------------------------------------- */

gboolean jet_config_listen_parse(const char *text, char **addr, guint16 *port)
{
    const char *colon = strrchr(text, ':');
    if (colon == NULL || colon == text || colon[1] == '\0')
        return FALSE;
    g_autofree char *host = g_strndup(text, (gsize)(colon - text));
    gsize n = strlen(host);
    /* A name would need a resolver on the main loop, and "listen on
     * everything" should be said as 0.0.0.0, never implied. */
    gboolean bracketed = host[0] == '[';
    if (bracketed) {
        if (n < 3 || host[n - 1] != ']')
            return FALSE;
        host[n - 1] = '\0';
        memmove(host, host + 1, n - 1);
    }
    /* Without brackets, "::1:80" could be read two ways. */
    if ((strchr(host, ':') != NULL) != bracketed)
        return FALSE;
    unsigned char buf[16];
    if (inet_pton(strchr(host, ':') != NULL ? AF_INET6 : AF_INET, host, buf) != 1)
        return FALSE;
    guint64 v = 0;
    if (!g_ascii_string_to_unsigned(colon + 1, 10, 0, 65535, &v, NULL))
        return FALSE;
    if (addr != NULL)
        *addr = g_steal_pointer(&host);
    if (port != NULL)
        *port = (guint16)v;
    return TRUE;
}

static void host_clear(JetHostConfig *h)
{
    g_free(h->file);
    g_free(h->server);
    g_strfreev(h->urls);
    g_free(h->state_dir);
    g_free(h->plugin_dir);
    g_free(h->name);
    g_free(h->nats_server);
    g_free(h->creds_file);
    g_free(h->nkey_seed_file);
    g_free(h->user);
    g_free(h->password_file);
    g_free(h->token_file);
    g_free(h->tls_ca);
    g_free(h->tls_cert);
    g_free(h->tls_key);
    g_free(h->ledger_bucket);
    g_free(h->js_domain);
    g_free(h->js_api_prefix);
    g_free(h->metrics_listen);
    memset(h, 0, sizeof *h);
}

static gboolean host_build(const Section *sec, JetHostConfig *h, GError **error)
{
    h->file = g_strdup(sec->file);
    if (!fill(host_keys, G_N_ELEMENTS(host_keys), sec, h, error))
        return FALSE;

    if (strcmp(h->server, "embedded") == 0) {
        h->embedded = TRUE;
    } else {
        const char *why = NULL;
        h->urls = split_list(h->server, &why);
        g_assert(h->urls != NULL); /* check_server accepted it */
    }
    if (h->name == NULL)
        h->name = g_strdup(g_get_host_name());

    if (h->user != NULL && h->password_file == NULL) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "user"), sec->group, "user",
                  "needs password_file");
        return FALSE;
    }
    if (h->password_file != NULL && h->user == NULL) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "password_file"), sec->group,
                  "password_file", "needs user");
        return FALSE;
    }
    if (h->token_file != NULL && h->user != NULL) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "token_file"), sec->group, "token_file",
                  "cannot be used with user (a token or a user and password, not both)");
        return FALSE;
    }
    if ((h->tls_cert == NULL) != (h->tls_key == NULL)) {
        const char *key = h->tls_cert != NULL ? "tls_cert" : "tls_key";
        key_error(error, JET_ERROR_INVALID, blame(sec, key), sec->group, key,
                  "tls_cert and tls_key go together");
        return FALSE;
    }
    if (h->js_domain != NULL && h->js_api_prefix != NULL) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "js_domain"), sec->group, "js_domain",
                  "cannot be used with js_api_prefix (a domain is the prefix $JS.<domain>.API)");
        return FALSE;
    }
    if (h->metrics_listen != NULL && !jet_config_listen_parse(h->metrics_listen, NULL, NULL)) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "metrics_listen"), sec->group, "metrics_listen",
                  "must be ADDR:PORT with a numeric address (an IPv6 one in brackets) and a port 0..65535");
        return FALSE;
    }
    if (h->embedded && (h->js_domain != NULL || h->js_api_prefix != NULL)) {
        const char *key = h->js_domain != NULL ? "js_domain" : "js_api_prefix";
        key_error(error, JET_ERROR_INVALID, blame(sec, key), sec->group, key,
                  "cannot be used with server = embedded (the embedded server answers only $JS.API)");
        return FALSE;
    }
    return TRUE;
}

/* --- [binding NAME] ------------------------------------------------------- */

static void binding_free(gpointer p)
{
    JetBindingConfig *b = p;
    if (b == NULL)
        return;
    g_free(b->name);
    g_free(b->file);
    g_free(b->plugin);
    g_free(b->stream);
    g_free(b->consumer);
    g_strfreev(b->subjects);
    g_strfreev(b->publish_streams);
    g_free(b->filter_subject);
    g_free(b->rungs_ms);
    g_free(b->dlq_stream);
    g_free(b->dlq_subject);
    g_free(b->bucket);
    g_free(b->keys);
    g_clear_pointer(&b->options, g_hash_table_unref);
    g_free(b->plugin_id.path);
    g_free(b);
}


/* A KV binding names a bucket and what it watches; the stream, its filter
 * and where it starts follow from them (docs/kv.md). */
static gboolean kv_keys_fit(const Section *sec, JetBindingConfig *b, GError **error)
{
    static const char *const derived[] = { "stream", "subjects", "filter_subject", "deliver" };
    for (gsize i = 0; i < G_N_ELEMENTS(derived); i++) {
        if (is_set(sec, derived[i])) {
            key_error(error, JET_ERROR_INVALID, blame(sec, derived[i]), sec->group, derived[i],
                      "not for kind = kv (the bucket gives the stream and its filter, and `initial` says where "
                      "it starts)");
            return FALSE;
        }
    }
    if (b->bucket == NULL) {
        key_error(error, JET_ERROR_INVALID, sec->file, sec->group, "bucket", "required key is missing (kind = kv)");
        return FALSE;
    }
    /* What the server will be asked for must fit its limits, or check would
     * approve a binding the server refuses (the bucket's own: K_BUCKET). */
    if (strlen("$KV.") + strlen(b->bucket) + 1 + strlen(b->keys) > JET_SUBJECT_MAX) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "keys"), sec->group, "keys",
                  "the filter $KV.<bucket>.<keys> would be longer than %d bytes", JET_SUBJECT_MAX);
        return FALSE;
    }
    b->stream = g_strconcat("KV_", b->bucket, NULL);
    b->filter_subject = g_strconcat("$KV.", b->bucket, ".", b->keys, NULL);
    b->deliver = b->initial ? JET_DELIVER_LAST_PER_SUBJECT : JET_DELIVER_NEW;
    return TRUE;
}

/* What a binding's kind allows (docs/ordered.md): a durable binding names
 * its consumer; an ordered one has none of its own (the host creates and
 * re-creates it), handles one message at a time, and retries in place, so
 * the durable consumer's keys mean nothing to it and are refused rather
 * than ignored. */
static gboolean kind_keys_fit(const Section *sec, JetBindingConfig *b, GError **error)
{
    if (b->kind != JET_KIND_KV && b->stream == NULL) {
        key_error(error, JET_ERROR_INVALID, sec->file, sec->group, "stream", "required key is missing");
        return FALSE;
    }
    if (b->kind != JET_KIND_KV) {
        static const char *const kv_only[] = { "bucket", "keys", "initial" };
        for (gsize i = 0; i < G_N_ELEMENTS(kv_only); i++) {
            if (is_set(sec, kv_only[i])) {
                key_error(error, JET_ERROR_INVALID, blame(sec, kv_only[i]), sec->group, kv_only[i],
                          "only for kind = kv");
                return FALSE;
            }
        }
    }
    if (b->kind == JET_KIND_DURABLE) {
        if (b->consumer == NULL) {
            key_error(error, JET_ERROR_INVALID, sec->file, sec->group, "consumer", "required key is missing");
            return FALSE;
        }
        if (b->lane_key.kind != JET_LANE_KEY_OFF && !is_set(sec, "exclusive"))
            b->exclusive = TRUE;   /* order across hosts needs one of them at a time */
        static const char *const ordered_only[] = { "deliver", "checkpoint" };
        for (gsize i = 0; i < G_N_ELEMENTS(ordered_only); i++) {
            if (is_set(sec, ordered_only[i])) {
                key_error(error, JET_ERROR_INVALID, blame(sec, ordered_only[i]), sec->group, ordered_only[i],
                          "only for kind = ordered (a durable consumer resumes where it was acked)");
                return FALSE;
            }
        }
        return TRUE;
    }
    static const char *const durable_only[] = {
        "consumer", "workers", "threshold", "ack_wait", "max_deliver", "max_ack_pending", "capture_reserve",
        "floor_age", "breaker", "min_deliveries", "breaker_pause", "key", "max_lane_held", "pin",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(durable_only); i++) {
        if (is_set(sec, durable_only[i])) {
            key_error(error, JET_ERROR_INVALID, blame(sec, durable_only[i]), sec->group, durable_only[i],
                      "not for kind = ordered (the host creates its own consumer, handles one message at a "
                      "time and retries in place; docs/ordered.md)");
            return FALSE;
        }
    }
    if (b->kind == JET_KIND_ORDERED && b->deliver == JET_DELIVER_LAST_PER_SUBJECT && b->filter_subject == NULL) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "deliver"), sec->group, "deliver",
                  "last_per_subject needs filter_subject: nats-server refuses a last-per-subject consumer "
                  "without one (filter_subject = > takes every subject)");
        return FALSE;
    }
    if (b->kind == JET_KIND_KV && !kv_keys_fit(sec, b, error))
        return FALSE;
    if (b->checkpoint == JET_CHECKPOINT_KV && !b->ledger) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "checkpoint"), sec->group, "checkpoint",
                  "kv keeps the position in the attempt ledger's bucket, and ledger = false; set ledger = true "
                  "or checkpoint = none");
        return FALSE;
    }
    return TRUE;
}

static JetBindingConfig *binding_build(const Section *sec, GError **error)
{
    g_autoptr(JetBindingConfig) b = g_new0(JetBindingConfig, 1);
    b->name = g_strdup(sec->name);
    b->file = g_strdup(sec->file);
    b->options = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    b->replicas = 1;   /* [host]'s default; jet_config_load copies the file's */
    if (!fill(binding_keys, G_N_ELEMENTS(binding_keys), sec, b, error))
        return NULL;
    if (b->dlq_subject == NULL)
        b->dlq_subject = g_strconcat("jethost.dlq.", b->name, NULL);

    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, sec->settings);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        const char *key = k;
        const Setting *s = v;
        /* An empty value means unset, as for every key: the plugin's
         * default applies, a required option is then missing, and a drop-in
         * can unset what the main file set. */
        if (g_str_has_prefix(key, OPTION_PREFIX) && *s->value != '\0')
            g_hash_table_insert(b->options, g_strdup(key + strlen(OPTION_PREFIX)),
                                g_strdup(s->value));
    }

    /* Cross-key checks. */
    if (!kind_keys_fit(sec, b, error))
        return NULL;
    if (b->batch_wait_ms > 0 && b->lane_key.kind != JET_LANE_KEY_OFF) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "batch_wait"), sec->group, "batch_wait",
                  "a binding with `key` hands a batch what its lanes have ready at once (docs/batches.md)");
        return NULL;
    }
    if (b->batch_max > b->batch) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "batch_max"), sec->group, "batch_max",
                  "%u must be at most batch (%u), the most one pull brings", b->batch_max, b->batch);
        return NULL;
    }
    if (b->max_in_flight > 0 && (b->kind != JET_KIND_DURABLE || b->lane_key.kind != JET_LANE_KEY_OFF ||
                                 b->batch_max > 1)) {
        const char *key = "max_in_flight";
        key_error(error, JET_ERROR_INVALID, blame(sec, key), sec->group, key,
                  "%u: pending deliveries are for durable bindings without `key` or `batch_max` (lanes and ordered "
                  "bindings settle one message of a key or a stream at a time; docs/async.md)", b->max_in_flight);
        return NULL;
    }
    if (b->batch_wait_ms > 0 && b->batch_max == 1) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "batch_wait"), sec->group, "batch_wait",
                  "only with batch_max above 1");
        return NULL;
    }
    if (b->threshold >= b->batch) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "threshold"), sec->group, "threshold",
                  "%u must be less than batch (%u)", b->threshold, b->batch);
        return NULL;
    }
    if (b->idle_heartbeat_ms > b->expires_ms / 2) {
        const char *key = is_set(sec, "idle_heartbeat") ? "idle_heartbeat" : "expires";
        g_autofree char *hb = jet_duration_format_ms(b->idle_heartbeat_ms);
        g_autofree char *ex = jet_duration_format_ms(b->expires_ms);
        key_error(error, JET_ERROR_INVALID, blame(sec, key), sec->group, key,
                  "idle_heartbeat (%s) must be at most half of expires (%s): the server "
                  "requires 2 x heartbeat <= expires", hb, ex);
        return NULL;
    }
    if (b->max_deliver > 0 && b->max_deliver <= (gint64)b->capture_reserve) {
        const char *key = is_set(sec, "max_deliver") ? "max_deliver" : "capture_reserve";
        key_error(error, JET_ERROR_INVALID, blame(sec, key), sec->group, key,
                  "max_deliver (%" G_GINT64_FORMAT ") must be more than capture_reserve (%u): "
                  "the host keeps that many deliveries back to capture a message",
                  b->max_deliver, b->capture_reserve);
        return NULL;
    }
    if (b->accept_expiry && b->max_attempts != 0) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "accept_expiry"), sec->group,
                  "accept_expiry", "true is only for max_attempts = 0 (unlimited), and "
                  "max_attempts is %u: a finite ladder dead-letters a message before the "
                  "stream's max_age must (the schedule check compares them)", b->max_attempts);
        return NULL;
    }
    if (b->dlq_ttl_ms % 1000 != 0) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "dlq_ttl"), sec->group, "dlq_ttl",
                  "%" G_GUINT64_FORMAT " ms: the server keeps records for whole seconds, at least 1s "
                  "(or 0: until removed)", b->dlq_ttl_ms);
        return NULL;
    }
    if (b->breaker == JET_BREAKER_MODE_ENFORCE && !b->ledger) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "breaker"), sec->group, "breaker",
                  "enforce needs the attempt ledger (ledger = false): the breaker claims a "
                  "message by its first-failure time, which only the ledger keeps; set "
                  "ledger = true or breaker = observe");
        return NULL;
    }
    if (b->breaker == JET_BREAKER_MODE_ENFORCE && b->floor_age_ms == 0) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "breaker"), sec->group, "breaker",
                  "enforce needs the floor monitor (floor_age = 0 turns it off); set floor_age "
                  "or breaker = observe");
        return NULL;
    }
    if (b->breaker_pause_ms > 0 && b->breaker != JET_BREAKER_MODE_ENFORCE) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "breaker_pause"), sec->group, "breaker_pause",
                  "only with breaker = enforce (the pause follows a capture, which only enforce makes); "
                  "set breaker = enforce or breaker_pause = 0");
        return NULL;
    }
    if (b->claim_heartbeat_ms > b->claim_ttl_ms / 2) {
        const char *key = is_set(sec, "claim_heartbeat") ? "claim_heartbeat" : "claim_ttl";
        g_autofree char *hb = jet_duration_format_ms(b->claim_heartbeat_ms);
        g_autofree char *ttl = jet_duration_format_ms(b->claim_ttl_ms);
        key_error(error, JET_ERROR_INVALID, blame(sec, key), sec->group, key,
                  "claim_heartbeat (%s) must be at most half of claim_ttl (%s): the holder stops one "
                  "heartbeat before a standby may take over, and needs a renewal in between "
                  "(docs/exclusive.md)", hb, ttl);
        return NULL;
    }
    if (b->duplicate_window_ms > 0 && b->subjects == NULL) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "duplicate_window"), sec->group, "duplicate_window",
                  "only for a stream jethost creates (set subjects): an existing stream's window is the "
                  "operator's to set");
        return NULL;
    }
    if (b->subjects != NULL && b->manage != JET_MANAGE_CREATE) {
        key_error(error, JET_ERROR_INVALID, blame(sec, "subjects"), sec->group, "subjects",
                  "only with manage = create (a bound stream is not changed)");
        return NULL;
    }
    return g_steal_pointer(&b);
}

/* --- reading files -------------------------------------------------------- */

/* What GKeyFile reads past in silence, found in the text: localized keys
 * (KEY[locale]), which g_key_file_get_keys hides, so "plugin[fr] = x" would
 * be ignored; and a group or a key written twice in one file, which it
 * merges, last one winning.  Drop-ins still override the main file key by
 * key: that is a second file, never a second line. */
static gboolean scan_lines(const char *file, const char *data, GHashTable *lines_of, GError **error)
{
    g_auto(GStrv) lines = g_strsplit(data, "\n", -1);
    g_autofree char *group = g_strdup("");
    /* group -> line; "group\nkey" -> line */
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (gsize i = 0; lines[i] != NULL; i++) {
        const char *line = lines[i];
        guint lineno = (guint)i + 1;
        while (g_ascii_isspace(*line))
            line++;
        if (*line == '#' || *line == '\0')
            continue;
        if (*line == '[') {
            const char *end = strrchr(line, ']');
            g_free(group);
            group = end != NULL ? g_strndup(line + 1, (gsize)(end - line - 1)) : g_strdup("");
            guint first = GPOINTER_TO_UINT(g_hash_table_lookup(seen, group));
            if (first != 0) {
                g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                            "%s: [%s]: the group is written twice in one file (lines %u and %u); "
                            "write each group once (a drop-in file may override it)",
                            file, group, first, lineno);
                return FALSE;
            }
            g_hash_table_insert(seen, g_strdup(group), GUINT_TO_POINTER(lineno));
            continue;
        }
        const char *eq = strchr(line, '=');
        if (eq == NULL)
            continue;
        g_autofree char *key = g_strstrip(g_strndup(line, (gsize)(eq - line)));
        if (strchr(key, '[') != NULL) {
            key_error(error, JET_ERROR_INVALID, file, group, key,
                      "localized keys (KEY[locale]) are not supported");
            return FALSE;
        }
        g_autofree char *gk = g_strconcat(group, "\n", key, NULL);
        guint first = GPOINTER_TO_UINT(g_hash_table_lookup(seen, gk));
        if (first != 0) {
            key_error(error, JET_ERROR_INVALID, file, group, key,
                      "written twice in one file (lines %u and %u); the first would be ignored", first,
                      lineno);
            return FALSE;
        }
        g_hash_table_insert(seen, g_steal_pointer(&gk), GUINT_TO_POINTER(lineno));
        g_hash_table_replace(lines_of, g_strconcat(file, "\n", group, "\n", key, NULL), GUINT_TO_POINTER(lineno));
    }
    return TRUE;
}

static gboolean read_file(Loader *l, const char *path, GError **error)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) local = NULL;
    g_autofree char *data = NULL;
    gsize len = 0;
    /* A FIFO or a device would block the read, or never end. */
    if (!check_file(path, error))
        return FALSE;
    if (!g_file_get_contents(path, &data, &len, &local) ||
        !g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &local)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "%s: %s", path, local->message);
        return FALSE;
    }
    if (!scan_lines(path, data, l->lines, error))
        return FALSE;
    g_ptr_array_add(l->files, g_strdup(path));
    const char *file = g_ptr_array_index(l->files, l->files->len - 1);

    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    for (gsize gi = 0; groups[gi] != NULL; gi++) {
        const char *group = groups[gi];
        Section *sec = NULL;
        const KeyDef *table = NULL;
        gsize n = 0;
        if (strcmp(group, "host") == 0) {
            if (l->host == NULL)
                l->host = section_new(group, NULL);
            sec = l->host;
            table = host_keys;
            n = G_N_ELEMENTS(host_keys);
        } else if (g_str_has_prefix(group, BINDING_PREFIX) || strcmp(group, "binding") == 0) {
            const char *name = group + strlen("binding");
            name += *name == ' ';
            if (jet_binding_name_problem(name) != NULL) {
                g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                            "%s: [%s]: a binding name is 1 to 255 of A-Z a-z 0-9 _ - "
                            "(write [binding NAME])", file, group);
                return FALSE;
            }
            sec = g_hash_table_lookup(l->bindings, name);
            if (sec == NULL) {
                sec = section_new(group, name);
                g_hash_table_insert(l->bindings, sec->name, sec);
            }
            table = binding_keys;
            n = G_N_ELEMENTS(binding_keys);
        } else {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "%s: [%s]: unknown group (expected [host] or [binding NAME])", file,
                        group);
            return FALSE;
        }
        sec->file = file;

        g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);
        for (gsize ki = 0; keys != NULL && keys[ki] != NULL; ki++) {
            const char *key = keys[ki];
            /* A key that cannot be read is noted and left out, so that the
             * rest of the files is still checked (one report of them all). */
            GError *bad = NULL;
            if (table == binding_keys && g_str_has_prefix(key, OPTION_PREFIX)) {
                if (!option_name_ok(key + strlen(OPTION_PREFIX)))
                    key_error(&bad, JET_ERROR_INVALID, file, group, key,
                              "an option name is one or more of a-z 0-9 _ - "
                              "(write option.NAME)");
            } else if (find_key(table, n, key) == NULL) {
                g_autofree const char **names = g_new0(const char *, n + 1);
                for (gsize i = 0; i < n; i++)
                    names[i] = table[i].key;
                const char *near = nearest_key(names, key);
                if (near != NULL)
                    key_error(&bad, JET_ERROR_INVALID, file, group, key, "unknown key; did you mean %s?", near);
                else
                    key_error(&bad, JET_ERROR_INVALID, file, group, key, "unknown key");
            }
            g_autoptr(GError) kerr = NULL;
            g_autofree char *value = bad == NULL ? g_key_file_get_string(kf, group, key, &kerr) : NULL;
            if (bad == NULL && value == NULL)
                key_error(&bad, JET_ERROR_INVALID, file, group, key, "%s", kerr->message);
            if (bad != NULL) {
                note(l, file, group, key, bad);
                continue;
            }
            Setting *s = g_new0(Setting, 1);
            s->value = g_strstrip(g_steal_pointer(&value));
            s->file = file;
            g_hash_table_replace(sec->settings, g_strdup(key), s);
        }
    }
    return TRUE;
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* dir/\*.conf in byte order of their names; dot files are skipped, as a
 * shell glob would. */
static gboolean read_dropins(Loader *l, const char *dir, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(GDir) d = g_dir_open(dir, 0, &local);
    if (d == NULL) {
        if (g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            return TRUE;
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "%s: %s", dir, local->message);
        return FALSE;
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL)
        if (name[0] != '.' && g_str_has_suffix(name, ".conf"))
            g_ptr_array_add(names, g_strdup(name));
    g_ptr_array_sort(names, cmp_str);
    for (guint i = 0; i < names->len; i++) {
        g_autofree char *path = g_build_filename(dir, g_ptr_array_index(names, i), NULL);
        if (!read_file(l, path, error))
            return FALSE;
    }
    return TRUE;
}

static gint cmp_section(gconstpointer a, gconstpointer b)
{
    const Section *x = *(const Section *const *)a;
    const Section *y = *(const Section *const *)b;
    return strcmp(x->name, y->name);
}

/* Whether key is one the group cannot do without (dropping it to look for
 * more errors would only add "required key is missing"). */
static gboolean key_required(const Section *sec, const char *key)
{
    const KeyDef *d = sec->name == NULL ? find_key(host_keys, G_N_ELEMENTS(host_keys), key)
                                        : find_key(binding_keys, G_N_ELEMENTS(binding_keys), key);
    return d != NULL && d->required;
}

/* Whether message names a key dropped from sec, as a whole word: an error
 * that dropping it caused ("required key is missing", "tls_cert and
 * tls_key go together"). */
static gboolean caused_by_drop(const Loader *l, const Section *sec, const char *message)
{
    /* Past "FILE: [GROUP] ": a path may hold a key's name too. */
    g_autofree char *tag = g_strdup_printf("[%s] ", sec->group);
    const char *at_tag = strstr(message, tag);
    if (at_tag != NULL)
        message = at_tag + strlen(tag);
    g_autofree char *prefix = g_strconcat(sec->group, "\n", NULL);
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, l->dropped);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
        if (!g_str_has_prefix(k, prefix))
            continue;
        const char *key = (const char *)k + strlen(prefix);
        gsize n = strlen(key);
        for (const char *at = strstr(message, key); n > 0 && at != NULL; at = strstr(at + 1, key)) {
            gboolean starts = at == message || !(g_ascii_isalnum(at[-1]) || at[-1] == '_' || at[-1] == '.');
            gboolean ends = !(g_ascii_isalnum(at[n]) || at[n] == '_' || at[n] == '.');
            if (starts && ends)
                return TRUE;
        }
    }
    return FALSE;
}

/* After an error in sec: note it, and drop the key it names so that the
 * next build finds the next error.  FALSE when there is no going on: the
 * error names no key that is set, or a required one. */
static gboolean note_and_drop(Loader *l, Section *sec, GError *e)
{
    g_autofree char *key = error_key(e->message, sec->group);
    g_autofree char *gk = g_strconcat(sec->group, "\n", key != NULL ? key : "", NULL);
    if (caused_by_drop(l, sec, e->message)) {
        /* Only what dropping a key caused (one needed with another): the
         * error that dropped it is reported already. */
        g_error_free(e);
        return FALSE;
    }
    g_hash_table_add(l->dropped, g_steal_pointer(&gk));
    note(l, blame(sec, key != NULL ? key : ""), sec->group, key, e);
    if (key == NULL || key_required(sec, key) || !g_hash_table_contains(sec->settings, key))
        return FALSE;
    g_hash_table_remove(sec->settings, key);
    return TRUE;
}

JetConfig *jet_config_load(const char *main_file, const char *dropin_dir, GError **error)
{
    g_return_val_if_fail(main_file != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    g_auto(Loader) l = { 0 };
    l.files = g_ptr_array_new_with_free_func(g_free);
    l.bindings = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, section_free);
    l.lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    l.errors = g_ptr_array_new_with_free_func(config_error_free);
    l.dropped = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    /* A file that cannot be read as a whole ends the reading; every error
     * of a key is noted and the rest still checked, then all are reported
     * together, in file order (docs/configuration.md, "Errors"). */
    GError *fatal = NULL;
    if (!read_file(&l, main_file, &fatal) || (dropin_dir != NULL && !read_dropins(&l, dropin_dir, &fatal))) {
        note(&l, NULL, NULL, NULL, fatal);
        report_errors(&l, error);
        return NULL;
    }

    g_autoptr(JetConfig) cfg = g_new0(JetConfig, 1);
    cfg->main_file = g_strdup(main_file);
    cfg->dropin_dir = g_strdup(dropin_dir);
    cfg->bindings = g_ptr_array_new_with_free_func(binding_free);

    if (l.host == NULL) {
        l.host = section_new("host", NULL);
        l.host->file = main_file;
    }
    for (guint round = 0;; round++) {
        GError *e = NULL;
        if (host_build(l.host, &cfg->host, &e))
            break;
        host_clear(&cfg->host);
        memset(&cfg->host, 0, sizeof cfg->host);
        if (!note_and_drop(&l, l.host, e) || round >= 64) {
            report_errors(&l, error);
            return NULL;
        }
    }

    if (g_hash_table_size(l.bindings) == 0) {
        GError *e = NULL;
        if (dropin_dir != NULL)
            g_set_error(&e, JET_ERROR, JET_ERROR_INVALID,
                        "%s: no [binding NAME] group (nor in %s/*.conf): at least one binding "
                        "is required", main_file, dropin_dir);
        else
            g_set_error(&e, JET_ERROR, JET_ERROR_INVALID,
                        "%s: no [binding NAME] group: at least one binding is required",
                        main_file);
        note(&l, NULL, NULL, NULL, e);
        report_errors(&l, error);
        return NULL;
    }
    /* In name order, so that a run reports the same way every time. */
    g_autoptr(GPtrArray) sections = g_ptr_array_new();
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, l.bindings);
    while (g_hash_table_iter_next(&it, NULL, &v))
        g_ptr_array_add(sections, v);
    g_ptr_array_sort(sections, cmp_section);
    /* Message handles lent at once, over every binding: a pending delivery
     * keeps its handle, and one with no handle left makes its worker wait
     * for it (docs/async.md). */
    guint handles = 0;
    Section *last_async = NULL;
    const JetBindingConfig *last_async_b = NULL;
    for (guint i = 0; i < sections->len; i++) {
        Section *sec = g_ptr_array_index(sections, i);
        for (guint round = 0; round <= 64; round++) {
            GError *e = NULL;
            JetBindingConfig *b = binding_build(sec, &e);
            if (b != NULL) {
                b->replicas = cfg->host.replicas;
                g_ptr_array_add(cfg->bindings, b);
                handles += b->workers * b->batch_max + b->max_in_flight;
                if (b->max_in_flight > 0) {
                    last_async = sec;
                    last_async_b = b;
                }
                break;
            }
            if (!note_and_drop(&l, sec, e))
                break;
        }
    }
    if (last_async != NULL && handles > JET_MSG_HANDLE_SLOTS) {
        GError *he = NULL;
        key_error(&he, JET_ERROR_INVALID, blame(last_async, "max_in_flight"), last_async->group, "max_in_flight",
                  "%u: the bindings lend %u message handles at once (workers times batch_max, plus max_in_flight, "
                  "over all of them), more than the host's %u", last_async_b->max_in_flight, handles,
                  JET_MSG_HANDLE_SLOTS);
        note(&l, blame(last_async, "max_in_flight"), last_async->group, "max_in_flight", he);
    }
    if (l.errors->len > 0) {
        report_errors(&l, error);
        return NULL;
    }
    return g_steal_pointer(&cfg);
}

void jet_config_free(JetConfig *cfg)
{
    if (cfg == NULL)
        return;
    g_free(cfg->main_file);
    g_free(cfg->dropin_dir);
    host_clear(&cfg->host);
    g_clear_pointer(&cfg->bindings, g_ptr_array_unref);
    g_free(cfg);
}

const JetBindingConfig *jet_config_binding(const JetConfig *cfg, const char *name)
{
    g_return_val_if_fail(cfg != NULL && name != NULL, NULL);
    for (guint i = 0; i < cfg->bindings->len; i++) {
        const JetBindingConfig *b = g_ptr_array_index(cfg->bindings, i);
        if (strcmp(b->name, name) == 0)
            return b;
    }
    return NULL;
}

gboolean jet_config_key_info(const char *group, gsize i, JetConfigKeyInfo *out)
{
    g_return_val_if_fail(group != NULL && out != NULL, FALSE);
    const KeyDef *table;
    gsize n;
    if (strcmp(group, "host") == 0) {
        table = host_keys;
        n = G_N_ELEMENTS(host_keys);
    } else if (strcmp(group, "binding") == 0) {
        table = binding_keys;
        n = G_N_ELEMENTS(binding_keys);
    } else {
        g_return_val_if_reached(FALSE);
    }
    if (i >= n)
        return FALSE;
    const KeyDef *d = &table[i];
    out->key = d->key;
    out->type = kind_names[d->kind];
    out->default_text = d->def_doc != NULL ? d->def_doc : d->def;
    out->required = d->required;
    out->help = d->help;
    return TRUE;
}

/* --- one binding without a file ------------------------------------------ */

JetBindingConfig *jet_config_binding_from_pairs(const char *source, const char *name, GHashTable *settings,
                                                GError **error)
{
    g_return_val_if_fail(source != NULL && name != NULL && settings != NULL, NULL);
    g_autofree char *group = g_strdup_printf("binding %s", name);
    Section *sec = section_new(group, name);
    sec->file = source;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, settings);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        const char *key = k;
        if (!g_str_has_prefix(key, OPTION_PREFIX) &&
            find_key(binding_keys, G_N_ELEMENTS(binding_keys), key) == NULL) {
            key_error(error, JET_ERROR_INVALID, source, group, key, "unknown key");
            section_free(sec);
            return NULL;
        }
        Setting *s = g_new0(Setting, 1);
        s->value = g_strstrip(g_strdup(v));
        s->file = source;
        g_hash_table_replace(sec->settings, g_strdup(key), s);
    }
    JetBindingConfig *b = binding_build(sec, error);
    section_free(sec);
    return b;
}

void jet_config_binding_free(JetBindingConfig *b)
{
    binding_free(b);
}

void jet_binding_settle_policy(const JetBindingConfig *b, gint64 max_deliver, JetSettlePolicy *out)
{
    *out = (JetSettlePolicy){
        .rungs_ms = b->rungs_ms,
        .n_rungs = b->n_rungs,
        .max_attempts = b->max_attempts,
        .postpone_horizon_ms = b->postpone_horizon_ms,
        .max_postpone_delay_ms = b->max_postpone_delay_ms,
        .capture_reserve = b->capture_reserve,
        .max_deliver = max_deliver != 0 ? max_deliver : b->max_deliver,
        .crash_limit = b->crash_limit,
        .max_hops = b->max_hops,
    };
}

gboolean jet_config_binding_value_check(const char *source, const char *name, const char *key, const char *value,
                                        GError **error)
{
    g_autofree char *group = g_strdup_printf("binding %s", name);
    const KeyDef *d = find_key(binding_keys, G_N_ELEMENTS(binding_keys), key);
    if (d == NULL) {
        key_error(error, JET_ERROR_INVALID, source, group, key, "unknown key");
        return FALSE;
    }
    g_autofree char *v = g_strstrip(g_strdup(value));
    JetBindingConfig *scratch = g_new0(JetBindingConfig, 1);
    gboolean ok = parse_value(d, v, scratch, source, group, error);
    binding_free(scratch);
    return ok;
}

/* --- comparing two configs (a reload) ------------------------------------- */

static gboolean strv_equal0(char *const *a, char *const *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return g_strv_equal((const char *const *)a, (const char *const *)b);
}

static gboolean options_equal(GHashTable *a, GHashTable *b)
{
    guint na = a != NULL ? g_hash_table_size(a) : 0, nb = b != NULL ? g_hash_table_size(b) : 0;
    if (na != nb)
        return FALSE;
    if (na == 0)
        return TRUE;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, a);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        gpointer other;
        if (!g_hash_table_lookup_extended(b, k, NULL, &other) || g_strcmp0(v, other) != 0)
            return FALSE;
    }
    return TRUE;
}

static gboolean identity_equal(const JetFileIdentity *a, const JetFileIdentity *b)
{
    return g_strcmp0(a->path, b->path) == 0 && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns;
}

/* Field by field, never memcmp: the struct holds pointers and padding.  A
 * key added to JetBindingConfig must be added here, or a reload would leave
 * a binding running with the old value (tests/unit/config.c changes each). */
gboolean jet_binding_config_equal(const JetBindingConfig *a, const JetBindingConfig *b)
{
    g_return_val_if_fail(a != NULL && b != NULL, FALSE);
#define SAME_STR(f) (g_strcmp0(a->f, b->f) == 0)
#define SAME(f) (a->f == b->f)
    return SAME_STR(name) && SAME_STR(plugin) && SAME(kind) && SAME_STR(stream) && SAME_STR(consumer) &&
           SAME(deliver) && SAME(deliver_seq) && SAME(deliver_time_ns) && SAME(checkpoint) && SAME_STR(bucket) &&
           SAME_STR(keys) && SAME(initial) && SAME(manage) && strv_equal0(a->subjects, b->subjects) &&
           SAME_STR(filter_subject) && SAME(workers) && SAME(batch) && SAME(threshold) && SAME(batch_max) && SAME(batch_wait_ms) && SAME(max_in_flight) && SAME(max_bytes) &&
           SAME(expires_ms) && SAME(idle_heartbeat_ms) && SAME(handler_timeout_ms) && SAME(exit_on_any_hung) &&
           SAME(ack_wait_ms) && SAME(max_deliver) && SAME(max_ack_pending) && SAME(n_rungs) &&
           (a->n_rungs == 0 || memcmp(a->rungs_ms, b->rungs_ms, a->n_rungs * sizeof *a->rungs_ms) == 0) &&
           SAME(max_attempts) && SAME(postpone_horizon_ms) && SAME(max_postpone_delay_ms) && SAME(capture_reserve) &&
           SAME(crash_limit) && SAME(max_hops) && SAME(max_time_to_dead_letter_ms) && SAME(accept_expiry) && SAME_STR(dlq_stream) && SAME(dlq_ttl_ms) && SAME(duplicate_window_ms) &&
           SAME_STR(dlq_subject) && SAME(replicas) && SAME(ledger) && SAME(publish_reserved) &&
           strv_equal0(a->publish_streams, b->publish_streams) && SAME(allow_loop) && SAME(floor_age_ms) && SAME(breaker) && SAME(breaker_pause_ms) &&
           SAME(min_deliveries) && SAME(exclusive) && SAME(claim_heartbeat_ms) && SAME(claim_ttl_ms) && SAME(pin) &&
           SAME(lane_key.kind) && strcmp(a->lane_key.header, b->lane_key.header) == 0 &&
           SAME(lane_key.token) && SAME(max_lane_held) && options_equal(a->options, b->options) &&
           identity_equal(&a->plugin_id, &b->plugin_id);
}

/* drain_timeout is read at each drain, plugin_dir at each plugin load and
 * connect_attempts only at the first connect: those apply as they are.
 * Everything else shapes the one connection, the ledger or the host's name
 * in claims and records, all made once. */
const char *jet_host_config_restart_key(const JetHostConfig *a, const JetHostConfig *b)
{
    g_return_val_if_fail(a != NULL && b != NULL, NULL);
    if (!SAME_STR(server) || !SAME(embedded) || !strv_equal0(a->urls, b->urls))
        return "server";
    if (!SAME_STR(state_dir))
        return "state_dir";
    if (!SAME_STR(name))
        return "name";
    if (!SAME_STR(nats_server))
        return "nats_server";
    if (!SAME_STR(creds_file))
        return "creds_file";
    if (!SAME_STR(nkey_seed_file))
        return "nkey_seed_file";
    if (!SAME_STR(user))
        return "user";
    if (!SAME_STR(password_file))
        return "password_file";
    if (!SAME_STR(token_file))
        return "token_file";
    if (!SAME_STR(tls_ca))
        return "tls_ca";
    if (!SAME_STR(tls_cert))
        return "tls_cert";
    if (!SAME_STR(tls_key))
        return "tls_key";
    if (!SAME_STR(js_domain))
        return "js_domain";
    if (!SAME_STR(js_api_prefix))
        return "js_api_prefix";
    if (!SAME(connect_timeout_ms))
        return "connect_timeout";
    if (!SAME_STR(ledger_bucket))
        return "ledger_bucket";
    if (!SAME(ledger_max_age_ms))
        return "ledger_max_age";
    if (!SAME(replicas))
        return "replicas";   /* one count for every stream this process creates, reload or not */
    if (!SAME_STR(metrics_listen))
        return "metrics_listen";   /* the listener is bound once, before the first pull */
    if (!SAME(metrics_idle_timeout_ms))
        return "metrics_idle_timeout";   /* given to that listener when it is bound */
    if (!SAME(log_format))
        return "log_format";
    return NULL;
#undef SAME
#undef SAME_STR
}
