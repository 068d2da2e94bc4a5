/* The config loader: every error class, drop-in order, defaults, and the
 * documentation against the key tables. */
#define _GNU_SOURCE   /* setresuid(), setresgid() */
#include "config.h"
#include "errors.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOST "[host]\nserver = nats://127.0.0.1:4222\n"
#define BIND "[binding orders]\nplugin = orders\nstream = ORDERS\nconsumer = billing\n"

typedef struct {
    char *dir;       /* private temporary directory */
    char *main;      /* dir/jethost.conf */
    char *dropins;   /* dir/jethost.d (not created) */
} Fixture;

static void rm_rf(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        const char *name;
        while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            rm_rf(child);
        }
        g_rmdir(path);
    } else {
        g_unlink(path);
    }
}

static void fx_setup(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    fx->dir = g_dir_make_tmp("jet-config-XXXXXX", &err);
    g_assert_no_error(err);
    fx->main = g_build_filename(fx->dir, "jethost.conf", NULL);
    fx->dropins = g_build_filename(fx->dir, "jethost.d", NULL);
}

static void fx_teardown(Fixture *fx, gconstpointer data)
{
    rm_rf(fx->dir);
    g_free(fx->dir);
    g_free(fx->main);
    g_free(fx->dropins);
}

static char *write_file(const char *dir, const char *name, const char *text, int mode)
{
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    char *path = g_build_filename(dir, name, NULL);
    g_assert_true(g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, mode, &err));
    g_assert_no_error(err);
    g_assert_cmpint(g_chmod(path, mode), ==, 0);  /* whatever the umask */
    return path;
}

static void write_main(Fixture *fx, const char *text)
{
    g_free(write_file(fx->dir, "jethost.conf", text, 0644));
}

static JetConfig *load_ok(Fixture *fx, const char *dropins)
{
    g_autoptr(GError) err = NULL;
    JetConfig *cfg = jet_config_load(fx->main, dropins, &err);
    g_assert_no_error(err);
    g_assert_nonnull(cfg);
    return cfg;
}

/* The load fails with one line that starts with "FILE: " + expect. */
static void assert_load_error(const char *main, const char *dropins, const char *file,
                              const char *expect)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JetConfig) cfg = jet_config_load(main, dropins, &err);
    g_assert_null(cfg);
    g_assert_nonnull(err);
    g_test_message("error: %s", err->message);
    g_assert_true(err->domain == JET_ERROR);
    g_assert_null(strchr(err->message, '\n'));
    g_autofree char *want = g_strdup_printf("%s: %s", file, expect);
    if (!g_str_has_prefix(err->message, want))
        g_error("expected '%s...', got '%s'", want, err->message);
}

/* --- error classes -------------------------------------------------------- */

static const struct {
    const char *text;
    const char *expect;   /* after "MAIN: " */
} bad_configs[] = {
    /* groups */
    { HOST BIND "[hots]\nx = 1\n", "[hots]: unknown group" },
    { HOST BIND "[binding]\nplugin = x\n", "[binding]: a binding name is" },
    { HOST BIND "[binding a.b]\nplugin = x\n", "[binding a.b]: a binding name is" },
    { HOST BIND "[bindings x]\n", "[bindings x]: unknown group" },
    /* unknown keys */
    { HOST "sever = nats://x:1\n" BIND, "[host] sever: unknown key" },
    { HOST BIND "bacth = 10\n", "[binding orders] bacth: unknown key" },
    { HOST BIND "plugin[fr] = x\n", "[binding orders] plugin[fr]: localized keys (KEY[locale]) are not supported" },
    /* written twice in one file: both lines named (GKeyFile would keep the last) */
    { HOST BIND "batch = 10\nbatch = 20\n", "[binding orders] batch: written twice in one file (lines 7 and 8)" },
    { HOST BIND "option.level = a\n# a comment\noption.level = b\n",
      "[binding orders] option.level: written twice in one file (lines 7 and 9)" },
    { HOST BIND "[binding orders]\nbatch = 20\n", "[binding orders]: the group is written twice in one file (lines 3 and 7)" },
    { HOST "[host]\nname = x\n" BIND, "[host]: the group is written twice in one file (lines 1 and 3)" },
    /* required keys */
    { "[host]\nstate_dir = /x\n" BIND, "[host] server: required key is missing" },
    { BIND, "[host] server: required key is missing" },
    { HOST "[binding orders]\nplugin = p\nstream = S\n",
      "[binding orders] consumer: required key is missing" },
    { HOST "[binding orders]\nstream = S\nconsumer = c\n",
      "[binding orders] plugin: required key is missing" },
    { HOST "[binding orders]\nplugin =\nstream = S\nconsumer = c\n",
      "[binding orders] plugin: required, must not be empty" },
    { HOST, "no [binding NAME] group" },
    /* kinds: a durable binding names its consumer; an ordered one has none
     * and refuses what only a durable consumer means */
#define ORD "[binding orders]\nplugin = orders\nstream = ORDERS\nkind = ordered\n"
    { HOST "[binding orders]\nplugin = orders\nstream = ORDERS\n",
      "[binding orders] consumer: required key is missing" },
    { HOST BIND "kind = pull\n", "[binding orders] kind: 'pull' is not durable, ordered or kv" },
    { HOST BIND "deliver = all\n", "[binding orders] deliver: only for kind = ordered" },
    { HOST ORD "consumer = c\n", "[binding orders] consumer: not for kind = ordered" },
    { HOST ORD "deliver = last_per_subject\n",
      "[binding orders] deliver: last_per_subject needs filter_subject: nats-server refuses a last-per-subject "
      "consumer without one (filter_subject = > takes every subject)" },
    { HOST ORD "workers = 2\n", "[binding orders] workers: not for kind = ordered" },
    { HOST ORD "max_deliver = 5\n", "[binding orders] max_deliver: not for kind = ordered" },
    { HOST ORD "ack_wait = 5s\n", "[binding orders] ack_wait: not for kind = ordered" },
    { HOST ORD "breaker = off\n", "[binding orders] breaker: not for kind = ordered" },
    { HOST BIND "checkpoint = kv\n", "[binding orders] checkpoint: only for kind = ordered" },
    { HOST ORD "checkpoint = file\n", "[binding orders] checkpoint: 'file' is not none or kv" },
    { HOST ORD "checkpoint = kv\nledger = false\n",
      "[binding orders] checkpoint: kv keeps the position in the attempt ledger's bucket, and ledger = false" },
#define KV "[binding orders]\nplugin = orders\nkind = kv\n"
#define X10 "xxxxxxxxxx"
#define X100 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10
#define BUCKET253 X100 X100 X10 X10 X10 X10 X10 "xxx"
#define KEYS1021 X100 X100 X100 X100 X100 X100 X100 X100 X100 X100 X10 X10 "x"
    { HOST KV "bucket = CFG\nstream = S\n", "[binding orders] stream: not for kind = kv" },
    { HOST KV "bucket = CFG\nfilter_subject = x\n", "[binding orders] filter_subject: not for kind = kv" },
    { HOST KV "bucket = CFG\ndeliver = all\n", "[binding orders] deliver: not for kind = kv" },
    { HOST KV "bucket = CFG\nworkers = 2\n", "[binding orders] workers: not for kind = ordered" },
    { HOST KV "keys = >\n", "[binding orders] bucket: required key is missing (kind = kv)" },
    { HOST KV "bucket = C.F\n", "[binding orders] bucket: " },
    { HOST KV "bucket = C+F\n", "[binding orders] bucket: 'C+F' is not a KV bucket name" },
    { HOST KV "bucket = CFG\nkeys = a..b\n", "[binding orders] keys: " },
    { HOST BIND "bucket = CFG\n", "[binding orders] bucket: only for kind = kv" },
    { HOST ORD "deliver = from_time 1969-12-31T23:59:59Z\n",
      "[binding orders] deliver: from_time 1969-12-31T23:59:59Z is outside what the server can take" },
    { HOST ORD "deliver = from_time 9999-12-31T23:59:59Z\n",
      "[binding orders] deliver: from_time 9999-12-31T23:59:59Z is outside what the server can take" },
    { HOST ORD "deliver = from_time 2024-01-01T00:00:00Z\rx\n", "[binding orders] deliver: " },
    { HOST ORD "deliver = from_seq 5\rfrom_seq 6\n", "[binding orders] deliver: 'from_seq 5\\x0dfrom_seq 6' is not" },
    { HOST ORD "deliver = from_seq 5\x01\n", "[binding orders] deliver: " },
    { HOST ORD "deliver = \xff\xfe\n", "" },
    { HOST KV "bucket = " BUCKET253 "\n", "[binding orders] bucket: '" BUCKET253 "' is longer than 252 bytes (its stream, KV_<bucket>, may have 255)" },
    { HOST KV "bucket = CFG\nkeys = " KEYS1021 "\n", "[binding orders] keys: the filter $KV.<bucket>.<keys> would be longer than 1024 bytes" },
    { HOST ORD "initial = false\n", "[binding orders] initial: only for kind = kv" },
    { HOST "[binding orders]\nplugin = orders\nkind = ordered\n", "[binding orders] stream: required key is missing" },
    { HOST ORD "deliver = first\n",
      "[binding orders] deliver: 'first' is not all, new, last, last_per_subject, from_seq N or from_time T" },
    { HOST ORD "deliver = from_seq\n", "[binding orders] deliver: 'from_seq' is not all" },
    { HOST ORD "deliver = from_seq 0\n",
      "[binding orders] deliver: from_seq needs a stream sequence of at least 1, not '0'" },
    { HOST ORD "deliver = from_seq -3\n", "[binding orders] deliver: from_seq needs a stream sequence" },
    { HOST ORD "deliver = from_seq 5 6\n", "[binding orders] deliver: 'from_seq 5 6' is not all" },
    { HOST ORD "deliver = from_time yesterday\n",
      "[binding orders] deliver: from_time needs an RFC 3339 time with its zone" },
    { HOST ORD "deliver = from_time 2024-01-01T00:00:00\n",
      "[binding orders] deliver: from_time needs an RFC 3339 time with its zone" },
    /* integers */
    { HOST BIND "batch = ten\n", "[binding orders] batch: 'ten' is not an integer" },
    { HOST BIND "batch = 1.5\n", "[binding orders] batch: '1.5' is not an integer" },
    { HOST BIND "batch = 0\n", "[binding orders] batch: 0 is out of range (1..10000)" },
    { HOST BIND "batch = 10001\n", "[binding orders] batch: 10001 is out of range (1..10000)" },
    { HOST BIND "batch = 99999999999999999999\n", "[binding orders] batch: '99999999999999999999' is out of range" },
    { HOST BIND "workers = 65\n", "[binding orders] workers: 65 is out of range (1..64)" },
    { HOST BIND "workers = -1\n", "[binding orders] workers: -1 is out of range (1..64)" },
    { HOST BIND "max_bytes = -1\n", "[binding orders] max_bytes: -1 is out of range (at least 0)" },
    { HOST BIND "max_ack_pending = 0\n",
      "[binding orders] max_ack_pending: 0 is out of range (at least 1)" },
    { HOST BIND "max_deliver = -2\n", "[binding orders] max_deliver: -2 is out of range" },
    { HOST BIND "crash_limit = 0\n", "[binding orders] crash_limit: 0 is out of range (at least 1)" },
    { HOST BIND "max_attempts = many\n", "[binding orders] max_attempts: 'many' is not an integer" },
    { HOST "connect_attempts = 0\n" BIND, "[host] connect_attempts: 0 is out of range (1..100)" },
    { HOST "connect_attempts = 101\n" BIND, "[host] connect_attempts: 101 is out of range (1..100)" },
    { HOST "replicas = 0\n" BIND, "[host] replicas: 0 is out of range (1..5)" },
    { HOST "replicas = 6\n" BIND, "[host] replicas: 6 is out of range (1..5)" },
    { HOST "replicas = three\n" BIND, "[host] replicas: 'three' is not an integer" },
    { HOST "replicas = 3.0\n" BIND, "[host] replicas: '3.0' is not an integer" },
    { HOST "replicas =\n" BIND, "[host] replicas: '' is not an integer" },
    /* durations */
    { HOST BIND "expires = 30\n", "[binding orders] expires: duration '30' has no unit" },
    { HOST BIND "expires = soon\n", "[binding orders] expires: 'soon' is not a duration" },
    { HOST BIND "expires = 500ms\n", "[binding orders] expires: '500ms' is too short (at least 1s)" },
    { HOST BIND "ack_wait = 999ms\n", "[binding orders] ack_wait: '999ms' is too short (at least 1s)" },
    { HOST BIND "max_postpone_delay = 0\n", "[binding orders] max_postpone_delay: '0' must be more than 0" },
    { HOST BIND "idle_heartbeat = 0\n", "[binding orders] idle_heartbeat: '0' must be more than 0" },
    { HOST BIND "handler_timeout = 5 minutes\n", "[binding orders] handler_timeout: duration '5 minutes' has an unknown unit" },
    { HOST "connect_timeout = 2\n" BIND, "[host] connect_timeout: duration '2' has no unit" },
    { HOST "drain_timeout = 1y\n" BIND, "[host] drain_timeout: duration '1y' has an unknown unit" },
    { HOST "metrics_idle_timeout = 50ms\n" BIND,
      "[host] metrics_idle_timeout: '50ms' is too short (at least 100ms)" },
    { HOST "metrics_idle_timeout = 2h\n" BIND, "[host] metrics_idle_timeout: '2h' is too long" },
    /* manage */
    { HOST BIND "manage = maybe\n", "[binding orders] manage: 'maybe' is not create or bind" },
    /* server */
    { "[host]\nserver = http://127.0.0.1:4222\n" BIND,
      "[host] server: 'http://127.0.0.1:4222' is not a nats:// or tls:// URL" },
    { "[host]\nserver = nats://a:4222, 127.0.0.1:4222\n" BIND,
      "[host] server: '127.0.0.1:4222' is not a nats:// or tls:// URL" },
    { "[host]\nserver = nats://a:4222,,nats://b:4222\n" BIND, "[host] server: 'nats://a:4222,,nats://b:4222' has an empty item" },
    { "[host]\nserver = nats://\n" BIND, "[host] server: 'nats://' is not a valid URL" },
    { "[host]\nserver = nats://bob:secret@a:4222\n" BIND, "[host] server: a URL must not carry credentials" },
    { "[host]\nserver = embedded, nats://a:4222\n" BIND, "[host] server: 'embedded' cannot be mixed with URLs" },
    { "[host]\nserver =\n" BIND, "[host] server: required, must not be empty" },
    /* paths */
    { HOST "state_dir = var/lib/jethost\n" BIND, "[host] state_dir: 'var/lib/jethost' is not an absolute path" },
    { HOST "plugin_dir = plugins\n" BIND, "[host] plugin_dir: 'plugins' is not an absolute path" },
    { HOST "tls_ca = /nonexistent/ca.pem\n" BIND, "[host] tls_ca: /nonexistent/ca.pem: No such file or directory" },
    { HOST "creds_file = /nonexistent/x.creds\n" BIND, "[host] creds_file: secret file /nonexistent/x.creds: No such file or directory" },
    { HOST "token_file = token\n" BIND, "[host] token_file: 'token' is not an absolute path" },
    /* credentials */
    { HOST "user = bob\n" BIND, "[host] user: needs password_file" },
    /* names and subjects */
    { HOST "[binding orders]\nplugin = p\nstream = OR.DERS\nconsumer = c\n",
      "[binding orders] stream: 'OR.DERS' holds '.'" },
    { HOST "[binding orders]\nplugin = p\nstream = S\nconsumer = bill ing\n",
      "[binding orders] consumer: 'bill ing' holds white space" },
    { HOST BIND "dlq_stream = DLQ.*\n", "[binding orders] dlq_stream: 'DLQ.*' holds '.'" },
    { HOST BIND "filter_subject = orders.>.x\n", "[binding orders] filter_subject: subject 'orders.>.x' has '>' before its last token" },
    { HOST BIND "filter_subject = orders..x\n", "[binding orders] filter_subject: subject 'orders..x' has an empty token" },
    { HOST BIND "dlq_subject = dlq.*\n", "[binding orders] dlq_subject: subject 'dlq.*' holds a wildcard" },
    { HOST BIND "subjects = orders.*, a b\n", "[binding orders] subjects: subject 'a b' holds white space" },
    { HOST BIND "subjects = orders.*,\n", "[binding orders] subjects: 'orders.*,' has an empty item" },
    { HOST BIND "publish_streams = FWD, A.B\n", "[binding orders] publish_streams: 'A.B' holds '.'" },
    { HOST BIND "publish_streams = FWD,\n", "[binding orders] publish_streams: 'FWD,' has an empty item" },
    { HOST BIND "publish_streams = FWD, AUDIT, FWD\n", "[binding orders] publish_streams: 'FWD' is named twice" },
    { HOST BIND "publish_streams = F\x01WD\n", "[binding orders] publish_streams: 'F\\x01WD' holds white space or a control character" },
    /* cross-key checks */
    { HOST BIND "threshold = 10\n", "[binding orders] threshold: 10 must be less than batch (10)" },
    { HOST BIND "batch = 5\nthreshold = 7\n", "[binding orders] threshold: 7 must be less than batch (5)" },
    { HOST BIND "batch_max = 11\n", "[binding orders] batch_max: 11 must be at most batch (10), the most one pull brings" },
    { HOST BIND "batch_max = 0\n", "[binding orders] batch_max: 0 is out of range (1..1000)" },
    { HOST BIND "batch_max = 1001\nbatch = 2000\n", "[binding orders] batch_max: 1001 is out of range (1..1000)" },
    { HOST BIND "batch_wait = 10ms\n", "[binding orders] batch_wait: only with batch_max above 1" },
    { HOST BIND "batch_max = 2\nbatch_wait = 61s\n", "[binding orders] batch_wait: " },
    { HOST BIND "batch_max = 2\nbatch_wait = 10ms\nkey = subject:2\n",
      "[binding orders] batch_wait: a binding with `key` hands a batch what its lanes have ready at once "
      "(docs/batches.md)" },
    { HOST "[binding orders]\nplugin = p\nstream = S\nkind = ordered\nbatch = 5\nbatch_max = 6\n",
      "[binding orders] batch_max: 6 must be at most batch (5), the most one pull brings" },
    { HOST BIND "max_in_flight = 1001\n", "[binding orders] max_in_flight: 1001 is out of range (0..1000)" },
    { HOST BIND "max_in_flight = 10\nkey = subject:2\n",
      "[binding orders] max_in_flight: 10: pending deliveries are for durable bindings without `key` or "
      "`batch_max` (lanes and ordered bindings settle one message of a key or a stream at a time; docs/async.md)" },
    { HOST BIND "max_in_flight = 10\nbatch_max = 2\n",
      "[binding orders] max_in_flight: 10: pending deliveries are for durable bindings without `key` or " },
    { HOST "[binding orders]\nplugin = p\nstream = S\nkind = ordered\nmax_in_flight = 1\n",
      "[binding orders] max_in_flight: 1: pending deliveries are for durable bindings" },
    { HOST BIND "max_in_flight = 1000\nworkers = 8\nbatch_max = 1\n"
      "[binding b2]\nplugin = p\nstream = S\nconsumer = c2\nmax_in_flight = 1000\n"
      "[binding b3]\nplugin = p\nstream = S\nconsumer = c3\nmax_in_flight = 1000\n"
      "[binding b4]\nplugin = p\nstream = S\nconsumer = c4\nmax_in_flight = 1000\n"
      "[binding b5]\nplugin = p\nstream = S\nconsumer = c5\nmax_in_flight = 100\n",
      "[binding orders] max_in_flight: 1000: the bindings lend 4112 message handles at once (workers times "
      "batch_max, plus max_in_flight, over all of them), more than the host's 4096" },
    { HOST BIND "idle_heartbeat = 16s\n",
      "[binding orders] idle_heartbeat: idle_heartbeat (16s) must be at most half of expires (30s)" },
    { HOST BIND "expires = 9s\n",
      "[binding orders] expires: idle_heartbeat (5s) must be at most half of expires (9s)" },
    { HOST BIND "max_deliver = 0\n", "[binding orders] max_deliver: 0 is not allowed" },
    { HOST BIND "max_deliver = 1\n",
      "[binding orders] max_deliver: max_deliver (1) must be more than capture_reserve (1)" },
    { HOST BIND "max_deliver = 3\ncapture_reserve = 3\n",
      "[binding orders] max_deliver: max_deliver (3) must be more than capture_reserve (3)" },
    { HOST BIND "manage = bind\nsubjects = orders.>\n",
      "[binding orders] subjects: only with manage = create" },
    /* rungs */
    { HOST BIND "rungs =\n", "[binding orders] rungs: the retry ladder needs at least one rung" },
    { HOST BIND "rungs = 1s,,5s\n", "[binding orders] rungs: '1s,,5s' has an empty item" },
    { HOST BIND "rungs = 1s, 0, 5s\n", "[binding orders] rungs: rung 2: '0' must be more than 0" },
    { HOST BIND "rungs = 0\n", "[binding orders] rungs: '0' must be more than 0" },
    { HOST BIND "rungs = 1s, 5\n", "[binding orders] rungs: rung 2: duration '5' has no unit" },
    /* the floor monitor and the breaker */
    { HOST BIND "breaker = enforced\n",
      "[binding orders] breaker: 'enforced' is not observe, enforce or off" },
    { HOST BIND "breaker = Observe\n",
      "[binding orders] breaker: 'Observe' is not observe, enforce or off" },
    { HOST BIND "breaker =\n",
      "[binding orders] breaker: '' is not observe, enforce or off" },
    { HOST BIND "breaker = enforce\nledger = false\n",
      "[binding orders] breaker: enforce needs the attempt ledger (ledger = false)" },
    { HOST BIND "breaker = enforce\nfloor_age = 0\n",
      "[binding orders] breaker: enforce needs the floor monitor (floor_age = 0 turns it off)" },
    { HOST BIND "breaker_pause = 5s\n",
      "[binding orders] breaker_pause: only with breaker = enforce" },
    { HOST BIND "breaker = off\nbreaker_pause = 1m\n",
      "[binding orders] breaker_pause: only with breaker = enforce" },
    { HOST BIND "breaker = enforce\nbreaker_pause = -1s\n", "[binding orders] breaker_pause:" },
    { HOST BIND "breaker = enforce\nbreaker_pause = 25h\n", "[binding orders] breaker_pause:" },
    { HOST ORD "breaker_pause = 1s\n", "[binding orders] breaker_pause: not for kind = ordered" },
    { HOST BIND "ledger = yes\n", "[binding orders] ledger: 'yes' is not true or false" },
    /* dead-letter records kept for whole seconds */
    { HOST BIND "dlq_ttl = 1500ms\n",
      "[binding orders] dlq_ttl: 1500 ms: the server keeps records for whole seconds, at least 1s" },
    { HOST BIND "dlq_ttl = 500ms\n",
      "[binding orders] dlq_ttl: 500 ms: the server keeps records for whole seconds, at least 1s" },
    { HOST BIND "dlq_ttl = -1s\n", "[binding orders] dlq_ttl:" },
    { HOST BIND "duplicate_window = 1h\n",
      "[binding orders] duplicate_window: only for a stream jethost creates (set subjects)" },
    /* accepting expiry only where it can happen: unlimited attempts */
    { HOST BIND "accept_expiry = true\n",
      "[binding orders] accept_expiry: true is only for max_attempts = 0 (unlimited), and "
      "max_attempts is 5" },
    { HOST BIND "accept_expiry = yes\nmax_attempts = 0\n",
      "[binding orders] accept_expiry: 'yes' is not true or false" },
    { HOST BIND "floor_age = 15\n", "[binding orders] floor_age: duration '15' has no unit" },
    { HOST BIND "min_deliveries = 0\n",
      "[binding orders] min_deliveries: 0 is out of range (at least 1)" },
    /* options */
    { HOST BIND "option.Path = /x\n", "[binding orders] option.Path: an option name is" },
    { HOST BIND "option. = 1\n", "[binding orders] option.: an option name is" },
    { HOST BIND "option.a.b = 1\n", "[binding orders] option.a.b: an option name is" },
    { HOST BIND "options.path = /x\n", "[binding orders] options.path: unknown key" },
};

static void test_errors(Fixture *fx, gconstpointer data)
{
    for (gsize i = 0; i < G_N_ELEMENTS(bad_configs); i++) {
        write_main(fx, bad_configs[i].text);
        assert_load_error(fx->main, NULL, fx->main, bad_configs[i].expect);
    }
}

static void test_file_errors(Fixture *fx, gconstpointer data)
{
    /* A missing main file, and a file GKeyFile cannot parse: the file is named. */
    assert_load_error(fx->main, NULL, fx->main, "");
    write_main(fx, HOST BIND "this line is not a key\n");
    assert_load_error(fx->main, NULL, fx->main, "");
    write_main(fx, "server = embedded\n" HOST BIND);
    assert_load_error(fx->main, NULL, fx->main, "");

    /* A drop-in directory that is a file. */
    write_main(fx, HOST BIND);
    g_autofree char *notdir = write_file(fx->dir, "notdir", "", 0644);
    assert_load_error(fx->main, notdir, notdir, "");

    /* A FIFO as the main file or a drop-in: refused at once, never read
     * (reading one would block for ever). */
    g_autofree char *fifo = g_build_filename(fx->dir, "fifo.conf", NULL);
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    g_autoptr(GError) err = NULL;
    g_autoptr(JetConfig) none = jet_config_load(fifo, NULL, &err);
    g_assert_null(none);
    g_autofree char *want = g_strdup_printf("%s is not a regular file", fifo);
    g_assert_cmpstr(err->message, ==, want);
    g_clear_error(&err);
    g_autofree char *dfifo = g_build_filename(fx->dropins, "50-fifo.conf", NULL);
    g_assert_cmpint(g_mkdir_with_parents(fx->dropins, 0700), ==, 0);
    g_assert_cmpint(mkfifo(dfifo, 0600), ==, 0);
    g_autoptr(JetConfig) none2 = jet_config_load(fx->main, fx->dropins, &err);
    g_assert_null(none2);
    g_autofree char *want2 = g_strdup_printf("%s is not a regular file", dfifo);
    g_assert_cmpstr(err->message, ==, want2);
}

/* --- secrets -------------------------------------------------------------- */

static void test_secret_files(Fixture *fx, gconstpointer data)
{
    g_autofree char *creds = write_file(fx->dir, "nats.creds", "creds\n", 0644);
    g_autofree char *text = g_strdup_printf(HOST "creds_file = %s\n" BIND, creds);
    write_main(fx, text);
    g_autofree char *want = g_strdup_printf(
        "[host] creds_file: secret file %s is accessible by group or others (mode 0644)", creds);
    assert_load_error(fx->main, NULL, fx->main, want);

    g_autoptr(GError) err = NULL;
    g_assert_false(jet_secret_file_check(creds, &err));
    g_assert_error(err, JET_ERROR, JET_ERROR_PERMISSION);
    g_clear_error(&err);

    g_assert_cmpint(g_chmod(creds, 0604), ==, 0);
    assert_load_error(fx->main, NULL, fx->main, "[host] creds_file: secret file");
    g_assert_cmpint(g_chmod(creds, 0620), ==, 0);
    assert_load_error(fx->main, NULL, fx->main, "[host] creds_file: secret file");

    /* Mode 0600 but another user's: whoever owns it can change it.  (The
     * tests run as root, who can give a file away.) */
    g_assert_cmpint(g_chmod(creds, 0600), ==, 0);
    g_assert_cmpint(geteuid(), ==, 0);
    g_assert_cmpint(chown(creds, 65534, 65534), ==, 0);
    g_assert_false(jet_secret_file_check(creds, &err));
    g_assert_error(err, JET_ERROR, JET_ERROR_PERMISSION);
    g_assert_nonnull(strstr(err->message, "owned by uid 65534"));
    g_clear_error(&err);
    g_assert_cmpint(chown(creds, 0, 0), ==, 0);

    g_assert_true(jet_secret_file_check(creds, &err));
    g_assert_no_error(err);
    g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
    g_assert_cmpstr(cfg->host.creds_file, ==, creds);

    /* A directory is not a secret file. */
    g_assert_false(jet_secret_file_check(fx->dir, &err));
    g_assert_nonnull(err);
}

static void test_credentials(Fixture *fx, gconstpointer data)
{
    g_autofree char *pw = write_file(fx->dir, "pw", "secret\n", 0600);
    g_autofree char *tok = write_file(fx->dir, "token", "t\n", 0600);
    g_autofree char *key = write_file(fx->dir, "key.pem", "k\n", 0600);
    g_autofree char *cert = write_file(fx->dir, "cert.pem", "c\n", 0644);

    g_autofree char *t1 = g_strdup_printf(HOST "user = bob\npassword_file = %s\ntoken_file = %s\n" BIND,
                                          pw, tok);
    write_main(fx, t1);
    assert_load_error(fx->main, NULL, fx->main, "[host] token_file: cannot be used with user");

    g_autofree char *t2 = g_strdup_printf(HOST "password_file = %s\n" BIND, pw);
    write_main(fx, t2);
    assert_load_error(fx->main, NULL, fx->main, "[host] password_file: needs user");

    g_autofree char *t3 = g_strdup_printf(HOST "tls_cert = %s\n" BIND, cert);
    write_main(fx, t3);
    assert_load_error(fx->main, NULL, fx->main, "[host] tls_cert: tls_cert and tls_key go together");

    /* The key is a secret; the certificate is not. */
    g_autofree char *t4 = g_strdup_printf(HOST "tls_cert = %s\ntls_key = %s\n" BIND, cert, cert);
    write_main(fx, t4);
    assert_load_error(fx->main, NULL, fx->main, "[host] tls_key: secret file");

    g_autofree char *t5 = g_strdup_printf(
        "[host]\nserver = tls://nats.example:4443\nuser = bob\npassword_file = %s\n"
        "tls_ca = %s\ntls_cert = %s\ntls_key = %s\n" BIND, pw, cert, cert, key);
    write_main(fx, t5);
    g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
    g_assert_cmpstr(cfg->host.user, ==, "bob");
    g_assert_cmpstr(cfg->host.password_file, ==, pw);
    g_assert_cmpstr(cfg->host.tls_ca, ==, cert);
    g_assert_cmpstr(cfg->host.tls_cert, ==, cert);
    g_assert_cmpstr(cfg->host.tls_key, ==, key);
    g_assert_null(cfg->host.token_file);
}

/* --- defaults and values -------------------------------------------------- */

static void test_defaults(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND);
    g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
    g_assert_cmpstr(cfg->main_file, ==, fx->main);
    g_assert_null(cfg->dropin_dir);

    const JetHostConfig *h = &cfg->host;
    g_assert_cmpstr(h->file, ==, fx->main);
    g_assert_cmpstr(h->server, ==, "nats://127.0.0.1:4222");
    g_assert_false(h->embedded);
    g_assert_cmpuint(g_strv_length(h->urls), ==, 1);
    g_assert_cmpstr(h->urls[0], ==, "nats://127.0.0.1:4222");
    g_assert_cmpstr(h->state_dir, ==, "/var/lib/jethost");
#ifdef JET_PLUGIN_DIR
    g_assert_cmpstr(h->plugin_dir, ==, JET_PLUGIN_DIR);
#else
    g_assert_cmpstr(h->plugin_dir, ==, "/usr/lib/jethost/plugins");
#endif
    g_assert_cmpstr(h->name, ==, g_get_host_name());
    g_assert_cmpstr(h->nats_server, ==, "nats-server");
    g_assert_null(h->creds_file);
    g_assert_null(h->nkey_seed_file);
    g_assert_null(h->user);
    g_assert_null(h->password_file);
    g_assert_null(h->token_file);
    g_assert_null(h->tls_ca);
    g_assert_null(h->tls_cert);
    g_assert_null(h->tls_key);
    g_assert_cmpuint(h->connect_attempts, ==, 5);
    g_assert_cmpuint(h->replicas, ==, 1);
    g_assert_cmpuint(h->connect_timeout_ms, ==, 2000);
    g_assert_cmpuint(h->drain_timeout_ms, ==, 30000);
    g_assert_cmpuint(h->metrics_idle_timeout_ms, ==, 10000);

    g_assert_cmpuint(cfg->bindings->len, ==, 1);
    const JetBindingConfig *b = g_ptr_array_index(cfg->bindings, 0);
    g_assert_true(jet_config_binding(cfg, "orders") == b);
    g_assert_cmpuint(b->replicas, ==, 1);
    g_assert_null(jet_config_binding(cfg, "nope"));
    g_assert_cmpstr(b->name, ==, "orders");
    g_assert_cmpstr(b->file, ==, fx->main);
    g_assert_cmpstr(b->plugin, ==, "orders");
    g_assert_cmpstr(b->stream, ==, "ORDERS");
    g_assert_cmpstr(b->consumer, ==, "billing");
    g_assert_cmpint(b->manage, ==, JET_MANAGE_CREATE);
    g_assert_null(b->subjects);
    g_assert_null(b->publish_streams);
    g_assert_null(b->filter_subject);
    g_assert_cmpuint(b->workers, ==, 1);
    g_assert_cmpuint(b->batch, ==, 10);
    g_assert_cmpuint(b->threshold, ==, 0);
    g_assert_cmpint(b->max_bytes, ==, 0);
    g_assert_cmpuint(b->expires_ms, ==, 30000);
    g_assert_cmpuint(b->idle_heartbeat_ms, ==, 5000);
    g_assert_cmpuint(b->handler_timeout_ms, ==, 300000);
    g_assert_cmpuint(b->ack_wait_ms, ==, 30000);
    g_assert_cmpint(b->max_deliver, ==, -1);
    g_assert_cmpint(b->max_ack_pending, ==, 1000);
    static const guint64 ladder[] = { 1000, 5000, 30000, 120000, 600000 };
    g_assert_cmpuint(b->n_rungs, ==, G_N_ELEMENTS(ladder));
    for (gsize i = 0; i < G_N_ELEMENTS(ladder); i++)
        g_assert_cmpuint(b->rungs_ms[i], ==, ladder[i]);
    g_assert_cmpuint(b->max_attempts, ==, 5);
    g_assert_cmpuint(b->postpone_horizon_ms, ==, 3600000);
    g_assert_cmpuint(b->max_postpone_delay_ms, ==, 900000);
    g_assert_cmpuint(b->capture_reserve, ==, 1);
    g_assert_cmpuint(b->crash_limit, ==, 3);
    g_assert_cmpstr(b->dlq_stream, ==, "JETHOST_DLQ");
    g_assert_cmpstr(b->dlq_subject, ==, "jethost.dlq.orders");
    g_assert_true(b->ledger);
    g_assert_cmpuint(b->floor_age_ms, ==, 120000);
    g_assert_cmpint(b->breaker, ==, JET_BREAKER_MODE_OBSERVE);
    g_assert_cmpuint(b->min_deliveries, ==, 2);
    g_assert_false(b->accept_expiry);
    g_assert_nonnull(b->options);
    g_assert_cmpuint(g_hash_table_size(b->options), ==, 0);
}

static void test_values(Fixture *fx, gconstpointer data)
{
    write_main(fx,
        "# comments are fine\n"
        "[host]\n"
        "server = nats://a.example:4222 ,tls://b.example:4443\n"
        "state_dir = /srv/jethost\n"
        "plugin_dir = /opt/jethost/plugins\n"
        "name = worker-7\n"
        "nats_server = /usr/sbin/nats-server\n"
        "connect_attempts = 100\n"
        "replicas = 5\n"
        "connect_timeout = 250ms\n"
        "drain_timeout = 0\n"
        "metrics_idle_timeout = 1500ms\n"
        "[binding orders]\n"
        "plugin = /opt/jethost/orders.so\n"
        "stream = ORDERS\n"
        "consumer = billing\n"
        "subjects = orders.*, orders.eu.>\n"
        "publish_streams = FWD ,AUDIT\n"
        "filter_subject = orders.eu.>\n"
        "workers = 64\n"
        "batch = 10000\n"
        "threshold = 9999\n"
        "max_bytes = 1048576\n"
        "expires = 1m\n"
        "idle_heartbeat = 30s\n"
        "handler_timeout = 0\n"
        "ack_wait = 2h\n"
        "max_deliver = 2\n"
        "max_ack_pending = 1\n"
        "rungs =   250ms ,2s,1m  \n"
        "max_attempts = 0\n"
        "postpone_horizon = 1d\n"
        "max_postpone_delay = 1ms\n"
        "capture_reserve = 1\n"
        "crash_limit = 1\n"
        "dlq_stream = DLQ\n"
        "dlq_subject = dlq.orders\n"
        "ledger = true\n"
        "floor_age = 20m\n"
        "breaker = enforce\n"
        "min_deliveries = 3\n"
        "option.path = /var/spool/orders\n"
        "option.max_rows = 10\n"
        "option.with-dash =  a b  \n"
        "[binding audit]\n"
        "plugin = audit\n"
        "stream = AUDIT\n"
        "consumer = audit\n"
        "manage = bind\n"
        "max_deliver = 1\n"
        "capture_reserve = 0\n"
        "ledger = false\n"
        "floor_age = 0\n"
        "breaker = off\n"
        "filter_subject =\n");
    g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
    const JetHostConfig *h = &cfg->host;
    g_assert_cmpstr(h->server, ==, "nats://a.example:4222 ,tls://b.example:4443");
    g_assert_cmpuint(g_strv_length(h->urls), ==, 2);
    g_assert_cmpstr(h->urls[0], ==, "nats://a.example:4222");
    g_assert_cmpstr(h->urls[1], ==, "tls://b.example:4443");
    g_assert_cmpstr(h->state_dir, ==, "/srv/jethost");
    g_assert_cmpstr(h->plugin_dir, ==, "/opt/jethost/plugins");
    g_assert_cmpstr(h->name, ==, "worker-7");
    g_assert_cmpstr(h->nats_server, ==, "/usr/sbin/nats-server");
    g_assert_cmpuint(h->connect_attempts, ==, 100);
    g_assert_cmpuint(h->replicas, ==, 5);
    g_assert_cmpuint(h->connect_timeout_ms, ==, 250);
    g_assert_cmpuint(h->drain_timeout_ms, ==, 0);
    g_assert_cmpuint(h->metrics_idle_timeout_ms, ==, 1500);

    /* Sorted by name. */
    g_assert_cmpuint(cfg->bindings->len, ==, 2);
    const JetBindingConfig *a = g_ptr_array_index(cfg->bindings, 0);
    const JetBindingConfig *b = g_ptr_array_index(cfg->bindings, 1);
    /* The streams made for every binding get [host] replicas. */
    g_assert_cmpuint(a->replicas, ==, 5);
    g_assert_cmpuint(b->replicas, ==, 5);
    g_assert_cmpstr(a->name, ==, "audit");
    g_assert_cmpstr(b->name, ==, "orders");

    g_assert_cmpint(a->manage, ==, JET_MANAGE_BIND);
    g_assert_cmpint(a->max_deliver, ==, 1);
    g_assert_null(a->filter_subject);   /* empty: unset */
    g_assert_cmpstr(a->dlq_subject, ==, "jethost.dlq.audit");
    g_assert_false(a->ledger);
    g_assert_cmpuint(a->floor_age_ms, ==, 0);
    g_assert_cmpint(a->breaker, ==, JET_BREAKER_MODE_OFF);

    g_assert_cmpstr(b->plugin, ==, "/opt/jethost/orders.so");
    g_assert_cmpuint(g_strv_length(b->subjects), ==, 2);
    g_assert_cmpstr(b->subjects[0], ==, "orders.*");
    g_assert_cmpstr(b->subjects[1], ==, "orders.eu.>");
    g_assert_cmpuint(g_strv_length(b->publish_streams), ==, 2);
    g_assert_cmpstr(b->publish_streams[0], ==, "FWD");
    g_assert_cmpstr(b->publish_streams[1], ==, "AUDIT");
    g_assert_cmpstr(b->filter_subject, ==, "orders.eu.>");
    g_assert_cmpuint(b->workers, ==, 64);
    g_assert_cmpuint(b->batch, ==, 10000);
    g_assert_cmpuint(b->threshold, ==, 9999);
    g_assert_cmpint(b->max_bytes, ==, 1048576);
    g_assert_cmpuint(b->expires_ms, ==, 60000);
    g_assert_cmpuint(b->idle_heartbeat_ms, ==, 30000);
    g_assert_cmpuint(b->handler_timeout_ms, ==, 0);
    g_assert_cmpuint(b->ack_wait_ms, ==, 7200000);
    g_assert_cmpint(b->max_deliver, ==, 2);
    g_assert_cmpint(b->max_ack_pending, ==, 1);
    g_assert_cmpuint(b->n_rungs, ==, 3);
    g_assert_cmpuint(b->rungs_ms[0], ==, 250);
    g_assert_cmpuint(b->rungs_ms[1], ==, 2000);
    g_assert_cmpuint(b->rungs_ms[2], ==, 60000);
    g_assert_cmpuint(b->max_attempts, ==, 0);
    g_assert_cmpuint(b->postpone_horizon_ms, ==, 86400000);
    g_assert_cmpuint(b->max_postpone_delay_ms, ==, 1);
    g_assert_cmpuint(b->capture_reserve, ==, 1);
    g_assert_cmpuint(b->crash_limit, ==, 1);
    g_assert_cmpstr(b->dlq_stream, ==, "DLQ");
    g_assert_cmpstr(b->dlq_subject, ==, "dlq.orders");
    g_assert_true(b->ledger);
    g_assert_cmpuint(b->floor_age_ms, ==, 1200000);
    g_assert_cmpint(b->breaker, ==, JET_BREAKER_MODE_ENFORCE);
    g_assert_cmpuint(b->min_deliveries, ==, 3);

    g_assert_cmpuint(g_hash_table_size(b->options), ==, 3);
    g_assert_cmpstr(g_hash_table_lookup(b->options, "path"), ==, "/var/spool/orders");
    g_assert_cmpstr(g_hash_table_lookup(b->options, "max_rows"), ==, "10");
    g_assert_cmpstr(g_hash_table_lookup(b->options, "with-dash"), ==, "a b");
    g_assert_null(g_hash_table_lookup(b->options, "option.path"));
    g_assert_cmpuint(g_hash_table_size(a->options), ==, 0);
}

static void test_embedded(Fixture *fx, gconstpointer data)
{
    write_main(fx, "[host]\nserver = embedded\n" BIND);
    g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
    g_assert_true(cfg->host.embedded);
    g_assert_null(cfg->host.urls);
    g_assert_cmpstr(cfg->host.server, ==, "embedded");
}

/* --- drop-ins ------------------------------------------------------------- */

static void test_dropin_order(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND "batch = 20\noption.level = main\noption.keep = yes\n");
    /* Created in reverse, so the directory's own order is not the answer. */
    g_autofree char *b20 = write_file(fx->dropins, "20-b.conf",
                                      "[binding orders]\nbatch = 40\noption.level = b\n", 0644);
    g_autofree char *a10 = write_file(fx->dropins, "10-a.conf",
                                      "[binding orders]\nbatch = 30\nworkers = 4\n"
                                      "option.level = a\n", 0644);
    /* Not *.conf, or hidden: never read (each would be an error if it were). */
    g_free(write_file(fx->dropins, "30-c.conf.disabled", "[nonsense]\n", 0644));
    g_free(write_file(fx->dropins, "README", "not a key file\n", 0644));
    g_free(write_file(fx->dropins, ".99-editor.conf", "[nonsense]\n", 0644));
    g_free(write_file(fx->dropins, "40-d.conf~", "[nonsense]\n", 0644));

    g_autoptr(JetConfig) cfg = load_ok(fx, fx->dropins);
    g_assert_cmpstr(cfg->dropin_dir, ==, fx->dropins);
    const JetBindingConfig *b = jet_config_binding(cfg, "orders");
    g_assert_nonnull(b);
    g_assert_cmpuint(b->batch, ==, 40);           /* 20-b.conf is read last */
    g_assert_cmpuint(b->workers, ==, 4);          /* 10-a.conf, not overridden */
    g_assert_cmpstr(b->plugin, ==, "orders");     /* main file, not overridden */
    g_assert_cmpstr(b->file, ==, b20);            /* the last file to touch it */
    g_assert_cmpstr(g_hash_table_lookup(b->options, "level"), ==, "b");
    g_assert_cmpstr(g_hash_table_lookup(b->options, "keep"), ==, "yes");
    g_assert_cmpstr(cfg->host.file, ==, fx->main);
}

/* An empty value means unset, option.NAME included: the plugin's default
 * applies (checked by the instance), and a drop-in can unset what the main
 * file set; the same key in two files is an override, not a duplicate. */
static void test_empty_options(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND "option.level = main\noption.keep = yes\noption.blank =\n");
    g_free(write_file(fx->dropins, "10-a.conf", "[binding orders]\noption.keep =\nbatch = 30\n", 0644));
    g_autoptr(JetConfig) cfg = load_ok(fx, fx->dropins);
    const JetBindingConfig *b = jet_config_binding(cfg, "orders");
    g_assert_cmpstr(g_hash_table_lookup(b->options, "level"), ==, "main");
    g_assert_false(g_hash_table_contains(b->options, "keep"));    /* unset by the drop-in */
    g_assert_false(g_hash_table_contains(b->options, "blank"));   /* empty: unset */
    g_assert_cmpuint(b->batch, ==, 30);
}

static void test_dropin_adds(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND);
    g_autofree char *add = write_file(fx->dropins, "audit.conf",
                                      "[binding audit]\nplugin = audit\nstream = AUDIT\n"
                                      "consumer = audit\n"
                                      "[host]\nname = from-dropin\n", 0644);
    g_autoptr(JetConfig) cfg = load_ok(fx, fx->dropins);
    g_assert_cmpuint(cfg->bindings->len, ==, 2);
    const JetBindingConfig *a = g_ptr_array_index(cfg->bindings, 0);
    g_assert_cmpstr(a->name, ==, "audit");
    g_assert_cmpstr(a->file, ==, add);
    const JetBindingConfig *o = g_ptr_array_index(cfg->bindings, 1);
    g_assert_cmpstr(o->name, ==, "orders");
    g_assert_cmpstr(o->file, ==, fx->main);
    g_assert_cmpstr(cfg->host.name, ==, "from-dropin");
    g_assert_cmpstr(cfg->host.file, ==, add);
}

/* The breaker's cross-key checks name the file that set `breaker`; observe
 * and off load without a ledger (the schedule check warns instead). */
static void test_breaker_keys(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND "ledger = false\n");
    g_autoptr(JetConfig) ok = load_ok(fx, NULL);
    g_assert_cmpint(jet_config_binding(ok, "orders")->breaker, ==, JET_BREAKER_MODE_OBSERVE);
    g_assert_false(jet_config_binding(ok, "orders")->ledger);

    g_autofree char *enf = write_file(fx->dropins, "50-enforce.conf",
                                      "[binding orders]\nbreaker = enforce\n", 0644);
    assert_load_error(fx->main, fx->dropins, enf,
                      "[binding orders] breaker: enforce needs the attempt ledger");
    g_autofree char *off = write_file(fx->dropins, "60-off.conf",
                                      "[binding orders]\nbreaker = off\n", 0644);
    g_autoptr(JetConfig) cfg = load_ok(fx, fx->dropins);
    g_assert_cmpint(jet_config_binding(cfg, "orders")->breaker, ==, JET_BREAKER_MODE_OFF);
    g_unlink(off);
    g_autofree char *led = write_file(fx->dropins, "70-ledger.conf",
                                      "[binding orders]\nledger = true\nfloor_age = 1h\n", 0644);
    g_autoptr(JetConfig) cfg2 = load_ok(fx, fx->dropins);
    g_assert_cmpint(jet_config_binding(cfg2, "orders")->breaker, ==, JET_BREAKER_MODE_ENFORCE);
    g_assert_cmpuint(jet_config_binding(cfg2, "orders")->floor_age_ms, ==, 3600000);
}

/* accept_expiry goes with max_attempts = 0, whichever file sets either. */
static void test_accept_expiry(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND "max_attempts = 0\naccept_expiry = true\n");
    g_autoptr(JetConfig) ok = load_ok(fx, NULL);
    g_assert_true(jet_config_binding(ok, "orders")->accept_expiry);
    g_assert_cmpuint(jet_config_binding(ok, "orders")->max_attempts, ==, 0);
    g_autofree char *fin = write_file(fx->dropins, "50-finite.conf",
                                      "[binding orders]\nmax_attempts = 3\n", 0644);
    assert_load_error(fx->main, fx->dropins, fx->main,
                      "[binding orders] accept_expiry: true is only for max_attempts = 0");
    g_autofree char *off = write_file(fx->dropins, "60-off.conf",
                                      "[binding orders]\naccept_expiry = false\n", 0644);
    g_autoptr(JetConfig) cfg = load_ok(fx, fx->dropins);
    g_assert_false(jet_config_binding(cfg, "orders")->accept_expiry);
    g_assert_cmpuint(jet_config_binding(cfg, "orders")->max_attempts, ==, 3);
}

static void test_dropin_only_bindings(Fixture *fx, gconstpointer data)
{
    /* The bindings may all come from drop-ins. */
    write_main(fx, HOST);
    g_free(write_file(fx->dropins, "orders.conf", BIND, 0644));
    g_autoptr(JetConfig) cfg = load_ok(fx, fx->dropins);
    g_assert_cmpuint(cfg->bindings->len, ==, 1);

    /* A missing drop-in directory is fine; then no binding is an error. */
    g_autofree char *missing = g_build_filename(fx->dir, "absent.d", NULL);
    assert_load_error(fx->main, missing, fx->main, "no [binding NAME] group");
}

static void test_dropin_errors(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND);
    /* The error names the drop-in that set the bad value ... */
    g_autofree char *bad = write_file(fx->dropins, "50-bad.conf",
                                      "[binding orders]\nbatch = ten\n", 0644);
    assert_load_error(fx->main, fx->dropins, bad, "[binding orders] batch: 'ten' is not an integer");

    /* ... and a later drop-in overrides it (only the value in effect counts). */
    g_autofree char *fix = write_file(fx->dropins, "60-fix.conf",
                                      "[binding orders]\nbatch = 12\n", 0644);
    g_autoptr(JetConfig) cfg = load_ok(fx, fx->dropins);
    g_assert_cmpuint(jet_config_binding(cfg, "orders")->batch, ==, 12);

    /* A cross-key check names the file of the key it blames. */
    g_autofree char *thr = write_file(fx->dropins, "70-thr.conf",
                                      "[binding orders]\nthreshold = 12\n", 0644);
    assert_load_error(fx->main, fx->dropins, thr,
                      "[binding orders] threshold: 12 must be less than batch (12)");
    g_unlink(thr);

    /* Unknown groups and keys in a drop-in name the drop-in. */
    g_autofree char *grp = write_file(fx->dropins, "80-grp.conf", "[hosts]\n", 0644);
    assert_load_error(fx->main, fx->dropins, grp, "[hosts]: unknown group");
    g_unlink(grp);
    g_autofree char *key = write_file(fx->dropins, "80-key.conf", "[host]\nsevrer = embedded\n", 0644);
    assert_load_error(fx->main, fx->dropins, key, "[host] sevrer: unknown key");
    g_unlink(key);
    g_autofree char *syn = write_file(fx->dropins, "80-syn.conf", "[host\n", 0644);
    assert_load_error(fx->main, fx->dropins, syn, "");
    g_unlink(syn);

    /* A missing required key is blamed on the last file of the group. */
    g_autofree char *nb = write_file(fx->dropins, "90-new.conf",
                                     "[binding zeta]\nplugin = z\nstream = Z\n", 0644);
    assert_load_error(fx->main, fx->dropins, nb, "[binding zeta] consumer: required key is missing");
}

/* --- documentation -------------------------------------------------------- */

static char *srcdir_file(const char *rel)
{
    const char *srcdir = g_getenv("JET_SRCDIR");
    if (srcdir == NULL)
        return NULL;
    return g_build_filename(srcdir, rel, NULL);
}

static void test_doc_matches_tables(void)
{
    g_autofree char *path = srcdir_file("docs/configuration.md");
    if (path == NULL)
        g_error("JET_SRCDIR is not set: run the tests through make check");
    g_autofree char *doc = NULL;
    g_autoptr(GError) err = NULL;
    g_assert_true(g_file_get_contents(path, &doc, NULL, &err));
    g_assert_no_error(err);
    g_auto(GStrv) lines = g_strsplit(doc, "\n", -1);

    g_autoptr(GHashTable) known = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_add(known, (gpointer)"option.NAME");
    static const char *const groups[] = { "host", "binding" };
    for (gsize g = 0; g < G_N_ELEMENTS(groups); g++) {
        JetConfigKeyInfo info;
        for (gsize i = 0; jet_config_key_info(groups[g], i, &info); i++) {
            g_hash_table_add(known, (gpointer)info.key);
            /* A table row "| `key` | type | default | meaning |". */
            g_autofree char *head = g_strdup_printf("| `%s` |", info.key);
            const char *row = NULL;
            for (gsize l = 0; lines[l] != NULL && row == NULL; l++)
                if (g_str_has_prefix(lines[l], head))
                    row = lines[l];
            if (row == NULL)
                g_error("docs/configuration.md has no row for [%s] %s", groups[g], info.key);
            g_autofree char *type = g_strdup_printf("| %s |", info.type);
            if (strstr(row, type) == NULL)
                g_error("docs/configuration.md: %s: type should be %s: %s", info.key, info.type, row);
            const char *def = info.required ? "required" : info.default_text;
            if (def != NULL && strstr(row, def) == NULL)
                g_error("docs/configuration.md: %s: default should be %s: %s", info.key, def, row);
        }
    }
    /* And no row for a key the tables do not have. */
    for (gsize l = 0; lines[l] != NULL; l++) {
        if (!g_str_has_prefix(lines[l], "| `"))
            continue;
        const char *start = lines[l] + 3;
        const char *end = strchr(start, '`');
        g_assert_nonnull(end);
        g_autofree char *key = g_strndup(start, (gsize)(end - start));
        if (!g_hash_table_contains(known, key))
            g_error("docs/configuration.md documents '%s', which no table declares", key);
    }
}

static void test_examples_load(void)
{
    static const char *const examples[] = { "docs/examples/demo.conf", "docs/examples/orders.conf" };
    for (gsize i = 0; i < G_N_ELEMENTS(examples); i++) {
        g_autofree char *path = srcdir_file(examples[i]);
        if (path == NULL)
            g_error("JET_SRCDIR is not set: run the tests through make check");
        g_autoptr(GError) err = NULL;
        g_autoptr(JetConfig) cfg = jet_config_load(path, NULL, &err);
        g_assert_no_error(err);
        g_assert_cmpuint(cfg->bindings->len, >=, 1);
    }
}

/* --- rules at their edges ---------------------------------------------------- */

/* js_domain is a name, js_api_prefix a literal subject; either, never both,
 * and neither with the embedded server. */
static void test_js_domain(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST "js_domain = hub\n" BIND);
    g_autoptr(JetConfig) dom = load_ok(fx, NULL);
    g_assert_cmpstr(dom->host.js_domain, ==, "hub");
    g_assert_null(dom->host.js_api_prefix);
    write_main(fx, HOST "js_api_prefix = JS.acme.API\n" BIND);
    g_autoptr(JetConfig) pre = load_ok(fx, NULL);
    g_assert_cmpstr(pre->host.js_api_prefix, ==, "JS.acme.API");
    g_assert_null(pre->host.js_domain);

    const struct {
        const char *text, *expect;
    } bad[] = {
        { HOST "js_domain = a.b\n" BIND, "[host] js_domain: 'a.b' holds '.'" },
        { HOST "js_api_prefix = JS.>\n" BIND, "[host] js_api_prefix: subject 'JS.>' holds a wildcard" },
        { HOST "js_domain = hub\njs_api_prefix = JS.acme.API\n" BIND,
          "[host] js_domain: cannot be used with js_api_prefix" },
        { "[host]\nserver = embedded\njs_domain = hub\n" BIND,
          "[host] js_domain: cannot be used with server = embedded" },
        { "[host]\nserver = embedded\njs_api_prefix = JS.acme.API\n" BIND,
          "[host] js_api_prefix: cannot be used with server = embedded" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        write_main(fx, bad[i].text);
        assert_load_error(fx->main, NULL, fx->main, bad[i].expect);
    }
}

/* Lengths at their edges: a name (stream, consumer, domain, binding) of 255
 * bytes is taken and of 256 refused, a subject of 1024 taken and of 1025
 * refused: past them the server would fail what check approved. */
static void test_length_limits(Fixture *fx, gconstpointer data)
{
    g_autofree char *n255 = g_strnfill(255, 'a'), *n256 = g_strnfill(256, 'a');
    /* "x." repeated, ending in "x": 1023 or 1025 bytes; plus one "x" = 1024. */
    g_autoptr(GString) s1024 = g_string_new(NULL), s1025 = g_string_new(NULL);
    while (s1024->len < 1022)
        g_string_append(s1024, "x.");
    g_string_append(s1024, "xx");
    while (s1025->len < 1024)
        g_string_append(s1025, "x.");
    g_string_append(s1025, "x");
    g_assert_cmpuint(s1024->len, ==, 1024);
    g_assert_cmpuint(s1025->len, ==, 1025);

    const char *keys[] = { "stream", "consumer" };
    for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
        g_autofree char *ok = g_strdup_printf(HOST "[binding orders]\nplugin = orders\n%s = %s\n%s = x\n",
                                              keys[i], n255, keys[1 - i]);
        write_main(fx, ok);
        g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
        g_autofree char *bad = g_strdup_printf(HOST "[binding orders]\nplugin = orders\n%s = %s\n%s = x\n",
                                               keys[i], n256, keys[1 - i]);
        write_main(fx, bad);
        g_autofree char *want = g_strdup_printf("[binding orders] %s: '%s' is longer than 255 bytes", keys[i], n256);
        assert_load_error(fx->main, NULL, fx->main, want);
    }
    g_autofree char *dom_ok = g_strdup_printf(HOST "js_domain = %s\n" BIND, n255);
    write_main(fx, dom_ok);
    g_autoptr(JetConfig) d = load_ok(fx, NULL);
    g_autofree char *dom_bad = g_strdup_printf(HOST "js_domain = %s\n" BIND, n256);
    write_main(fx, dom_bad);
    g_autofree char *dom_want = g_strdup_printf("[host] js_domain: '%s' is longer than 255 bytes", n256);
    assert_load_error(fx->main, NULL, fx->main, dom_want);

    g_autofree char *pre_ok = g_strdup_printf(HOST "js_api_prefix = %s\n" BIND, s1024->str);
    write_main(fx, pre_ok);
    g_autoptr(JetConfig) p = load_ok(fx, NULL);
    g_autofree char *pre_bad = g_strdup_printf(HOST "js_api_prefix = %s\n" BIND, s1025->str);
    write_main(fx, pre_bad);
    g_autofree char *pre_want = g_strdup_printf("[host] js_api_prefix: subject '%s' is longer than 1024 bytes",
                                                s1025->str);
    assert_load_error(fx->main, NULL, fx->main, pre_want);
    g_autofree char *dlq_bad = g_strdup_printf(HOST BIND "dlq_subject = %s\n", s1025->str);
    write_main(fx, dlq_bad);
    assert_load_error(fx->main, NULL, fx->main, "[binding orders] dlq_subject: subject 'x.x");

    g_autofree char *bind_ok = g_strdup_printf(HOST "[binding %s]\nplugin = orders\nstream = S\nconsumer = c\n", n255);
    write_main(fx, bind_ok);
    g_autoptr(JetConfig) b = load_ok(fx, NULL);
    g_autofree char *bind_bad = g_strdup_printf(HOST "[binding %s]\nplugin = orders\nstream = S\nconsumer = c\n", n256);
    write_main(fx, bind_bad);
    g_autofree char *bind_want = g_strdup_printf("[binding %s]: a binding name is 1 to 255 of", n256);
    assert_load_error(fx->main, NULL, fx->main, bind_want);
}

/* accept_expiry with any finite ladder is refused, the shortest included. */
static void test_accept_expiry_one(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST BIND "max_attempts = 1\naccept_expiry = true\n");
    assert_load_error(fx->main, NULL, fx->main,
                      "[binding orders] accept_expiry: true is only for max_attempts = 0 (unlimited), "
                      "and max_attempts is 1");
}

/* The secret-file rules for a user other than root (the tests run as root,
 * for whom access() grants every read): the real and effective ids become
 * nobody's for the checks, root stays the saved id to come back to. */
static void test_secret_files_other_user(Fixture *fx, gconstpointer data)
{
    const uid_t nobody = 65534;
    g_assert_cmpint(geteuid(), ==, 0);
    g_assert_cmpint(g_chmod(fx->dir, 0711), ==, 0);
    /* nobody must reach fx->dir: GLib 2.80 and later put the temporary
     * directory inside the test's own private one (0700), so every folder
     * above it that the test made is opened for searching. */
    g_autofree char *up = g_path_get_dirname(fx->dir);
    for (GStatBuf st; g_stat(up, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0001) == 0 && strcmp(up, "/") != 0;) {
        g_assert_cmpint(g_chmod(up, (st.st_mode & 07777) | 0111), ==, 0);
        char *next = g_path_get_dirname(up);
        g_free(up);
        up = next;
    }
    g_autofree char *own = write_file(fx->dir, "own.creds", "c\n", 0600);
    g_autofree char *wo = write_file(fx->dir, "write-only.creds", "c\n", 0200);
    g_autofree char *closed = g_build_filename(fx->dir, "closed", NULL);
    g_autofree char *hidden = write_file(closed, "hidden.creds", "c\n", 0600);
    g_assert_cmpint(chown(own, nobody, nobody), ==, 0);
    g_assert_cmpint(chown(wo, nobody, nobody), ==, 0);

    g_assert_cmpint(setresgid(nobody, nobody, 0), ==, 0);
    g_assert_cmpint(setresuid(nobody, nobody, 0), ==, 0);
    g_autoptr(GError) e_own = NULL, e_wo = NULL, e_hidden = NULL;
    gboolean ok_own = jet_secret_file_check(own, &e_own);
    gboolean ok_wo = jet_secret_file_check(wo, &e_wo);
    gboolean ok_hidden = jet_secret_file_check(hidden, &e_hidden);
    g_assert_cmpint(setresuid(0, 0, 0), ==, 0);
    g_assert_cmpint(setresgid(0, 0, 0), ==, 0);

    /* Its own file, mode 0600: accepted. */
    g_assert_no_error(e_own);
    g_assert_true(ok_own);
    /* Its own file that it may not read: refused as a permission problem. */
    g_assert_false(ok_wo);
    g_assert_error(e_wo, JET_ERROR, JET_ERROR_PERMISSION);
    g_assert_nonnull(strstr(e_wo->message, wo));
    /* A file in a directory it may not search: the same. */
    g_assert_false(ok_hidden);
    g_assert_error(e_hidden, JET_ERROR, JET_ERROR_PERMISSION);
    g_assert_nonnull(strstr(e_hidden->message, hidden));
}

/* Ordered bindings: the kind, where they start, and no consumer. */
static void test_ordered_keys(Fixture *fx, gconstpointer data)
{
    (void)data;
    static const struct {
        const char *value;
        JetDeliver deliver;
        guint64 seq;
        gint64 time_ns;
    } cases[] = {
        { NULL, JET_DELIVER_ALL, 0, 0 },
        { "all", JET_DELIVER_ALL, 0, 0 },
        { "new", JET_DELIVER_NEW, 0, 0 },
        { "last", JET_DELIVER_LAST, 0, 0 },
        { "last_per_subject\nfilter_subject = >", JET_DELIVER_LAST_PER_SUBJECT, 0, 0 },
        { "from_seq 1", JET_DELIVER_FROM_SEQ, 1, 0 },
        { "from_seq  18446744073709551615", JET_DELIVER_FROM_SEQ, G_MAXUINT64, 0 },
        { "from_time 2024-01-01T00:00:00Z", JET_DELIVER_FROM_TIME, 0, G_GINT64_CONSTANT(1704067200000000000) },
        { "from_time 2024-01-01T01:00:00.5+01:00", JET_DELIVER_FROM_TIME, 0,
          G_GINT64_CONSTANT(1704067200500000000) },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf(HOST ORD "%s%s\n", cases[i].value != NULL ? "deliver = " : "",
                                                cases[i].value != NULL ? cases[i].value : "");
        write_main(fx, text);
        g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
        const JetBindingConfig *b = jet_config_binding(cfg, "orders");
        g_assert_cmpint(b->kind, ==, JET_KIND_ORDERED);
        g_assert_null(b->consumer);
        g_assert_cmpint(b->deliver, ==, cases[i].deliver);
        g_assert_cmpuint(b->deliver_seq, ==, cases[i].seq);
        g_assert_cmpint(b->deliver_time_ns, ==, cases[i].time_ns);
        g_assert_cmpint(b->checkpoint, ==, JET_CHECKPOINT_NONE);
    }
    write_main(fx, HOST KV "bucket = CFG\nkeys = app.*\n");
    g_autoptr(JetConfig) w = load_ok(fx, NULL);
    const JetBindingConfig *wb = jet_config_binding(w, "orders");
    g_assert_cmpint(wb->kind, ==, JET_KIND_KV);
    g_assert_cmpstr(wb->stream, ==, "KV_CFG");
    g_assert_cmpstr(wb->filter_subject, ==, "$KV.CFG.app.*");
    g_assert_cmpint(wb->deliver, ==, JET_DELIVER_LAST_PER_SUBJECT);
    write_main(fx, HOST KV "bucket = CFG\ninitial = false\n");
    g_autoptr(JetConfig) w2 = load_ok(fx, NULL);
    g_assert_cmpstr(jet_config_binding(w2, "orders")->filter_subject, ==, "$KV.CFG.>");
    g_assert_cmpint(jet_config_binding(w2, "orders")->deliver, ==, JET_DELIVER_NEW);
    write_main(fx, HOST ORD "checkpoint = kv\n");
    g_autoptr(JetConfig) kv = load_ok(fx, NULL);
    g_assert_cmpint(jet_config_binding(kv, "orders")->checkpoint, ==, JET_CHECKPOINT_KV);
    /* A hung handler is reported on an ordered binding too (docs/ordered.md). */
    write_main(fx, HOST ORD "handler_timeout = 2s\nexit_on_any_hung = true\n");
    g_autoptr(JetConfig) hung = load_ok(fx, NULL);
    g_assert_cmpuint(jet_config_binding(hung, "orders")->handler_timeout_ms, ==, 2000);
    g_assert_true(jet_config_binding(hung, "orders")->exit_on_any_hung);
    write_main(fx, HOST KV "bucket = CFG\nhandler_timeout = 0\n");
    g_autoptr(JetConfig) kv_hung = load_ok(fx, NULL);
    g_assert_cmpuint(jet_config_binding(kv_hung, "orders")->handler_timeout_ms, ==, 0);
    write_main(fx, HOST BIND);
    g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
    g_assert_cmpint(jet_config_binding(cfg, "orders")->kind, ==, JET_KIND_DURABLE);
}

/* An empty value of a key with a default is an error, not the default: a
 * computed default (name, the hostname) included. */
static void test_empty_computed_default(Fixture *fx, gconstpointer data)
{
    write_main(fx, HOST "name =\n" BIND);
    assert_load_error(fx->main, NULL, fx->main, "[host] name: must not be empty");
}

/* --- per-key lanes ------------------------------------------------------------ */

/* `key` as written, and what it implies for `exclusive`. */
static void test_lane_key(Fixture *fx, gconstpointer data)
{
    (void)data;
    write_main(fx, HOST BIND);
    g_autoptr(JetConfig) off = load_ok(fx, NULL);
    const JetBindingConfig *ob = jet_config_binding(off, "orders");
    g_assert_cmpint(ob->lane_key.kind, ==, JET_LANE_KEY_OFF);
    g_assert_false(ob->exclusive);
    g_assert_cmpuint(ob->max_lane_held, ==, 1000);

    write_main(fx, HOST BIND "key = header:Account-Id\n");
    g_autoptr(JetConfig) hdr = load_ok(fx, NULL);
    const JetBindingConfig *hb = jet_config_binding(hdr, "orders");
    g_assert_cmpint(hb->lane_key.kind, ==, JET_LANE_KEY_HEADER);
    g_assert_cmpstr(hb->lane_key.header, ==, "Account-Id");
    /* Order across hosts needs one host at a time. */
    g_assert_true(hb->exclusive);

    write_main(fx, HOST BIND "key = subject:3\n");
    g_autoptr(JetConfig) subj = load_ok(fx, NULL);
    const JetBindingConfig *sb = jet_config_binding(subj, "orders");
    g_assert_cmpint(sb->lane_key.kind, ==, JET_LANE_KEY_SUBJECT);
    g_assert_cmpuint(sb->lane_key.token, ==, 3);
    g_assert_true(sb->exclusive);

    /* Set either way, exclusive is what it says. */
    write_main(fx, HOST BIND "key = subject:1\nexclusive = false\n");
    g_autoptr(JetConfig) shared = load_ok(fx, NULL);
    g_assert_false(jet_config_binding(shared, "orders")->exclusive);
    g_assert_cmpint(jet_config_binding(shared, "orders")->lane_key.kind, ==, JET_LANE_KEY_SUBJECT);
    write_main(fx, HOST BIND "key = subject:1\nexclusive = true\n");
    g_autoptr(JetConfig) excl = load_ok(fx, NULL);
    g_assert_true(jet_config_binding(excl, "orders")->exclusive);

    /* exclusive = false in a drop-in still counts as set. */
    write_main(fx, HOST BIND "key = header:A\n");
    g_free(write_file(fx->dropins, "50-shared.conf", "[binding orders]\nexclusive = false\n", 0644));
    g_autoptr(JetConfig) dropped = load_ok(fx, fx->dropins);
    g_assert_false(jet_config_binding(dropped, "orders")->exclusive);
}

static void test_lane_key_errors(Fixture *fx, gconstpointer data)
{
    (void)data;
    static const struct {
        const char *line;
        const char *expect;   /* after "MAIN: " */
    } bad[] = {
        { "key = header:a b\n", "[binding orders] key: 'header:a b': header:NAME needs a header name" },
        { "key = header:\n", "[binding orders] key: 'header:': header:NAME needs a header name" },
        { "key = header:a:b\n", "[binding orders] key: 'header:a:b': header:NAME" },
        { "key = subject:0\n", "[binding orders] key: 'subject:0': subject:N needs a token number from 1" },
        { "key = subject:256\n", "[binding orders] key: 'subject:256': subject:N" },
        { "key = subject:-1\n", "[binding orders] key: 'subject:-1': subject:N" },
        { "key = subject:1x\n", "[binding orders] key: 'subject:1x': subject:N" },
        { "key = account\n", "[binding orders] key: 'account': must be header:NAME or subject:N" },
        /* Control bytes in the value are escaped in the message. */
        { "key = header:a\x01\x1b[2J\n", "[binding orders] key: 'header:a\\x01\\x1b[2J': header:NAME" },
        { "key = header:a\\tb\n", "[binding orders] key: 'header:a\\x09b': header:NAME" },
        /* Not UTF-8: refused before it is read, still named. */
        { "key = \xff\n", "[binding orders] key: " },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *text = g_strconcat(HOST BIND, bad[i].line, NULL);
        write_main(fx, text);
        assert_load_error(fx->main, NULL, fx->main, bad[i].expect);
    }
    /* A bad key in a drop-in names the drop-in. */
    write_main(fx, HOST BIND "key = header:A\n");
    g_autofree char *dropin = write_file(fx->dropins, "50-key.conf", "[binding orders]\nkey = subject:x\n", 0644);
    assert_load_error(fx->main, fx->dropins, dropin, "[binding orders] key: 'subject:x': subject:N");
}

/* Lanes are for durable bindings: an ordered binding is one at a time
 * already, a kv one has no keyed work to spread. */
static void test_lane_key_kinds(Fixture *fx, gconstpointer data)
{
    (void)data;
    write_main(fx, HOST ORD "key = header:A\n");
    assert_load_error(fx->main, NULL, fx->main, "[binding orders] key: not for kind = ordered");
    write_main(fx, HOST ORD "max_lane_held = 5\n");
    assert_load_error(fx->main, NULL, fx->main, "[binding orders] max_lane_held: not for kind = ordered");
    write_main(fx, HOST KV "bucket = CFG\nkey = subject:2\n");
    assert_load_error(fx->main, NULL, fx->main, "[binding orders] key: not for kind");
    write_main(fx, HOST KV "bucket = CFG\nmax_lane_held = 5\n");
    assert_load_error(fx->main, NULL, fx->main, "[binding orders] max_lane_held: not for kind");
    /* Named in the drop-in that set it. */
    write_main(fx, HOST ORD);
    g_autofree char *dropin = write_file(fx->dropins, "50-key.conf", "[binding orders]\nkey = subject:1\n", 0644);
    assert_load_error(fx->main, fx->dropins, dropin, "[binding orders] key: not for kind = ordered");
}

static void test_max_lane_held(Fixture *fx, gconstpointer data)
{
    (void)data;
    static const struct {
        const char *value;
        guint want;
    } ok[] = { { "1", 1 }, { "2", 2 }, { "1000", 1000 }, { "999999", 999999 }, { "1000000", 1000000 } };
    for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
        g_autofree char *text = g_strdup_printf(HOST BIND "key = subject:1\nmax_lane_held = %s\n", ok[i].value);
        write_main(fx, text);
        g_autoptr(JetConfig) cfg = load_ok(fx, NULL);
        g_assert_cmpuint(jet_config_binding(cfg, "orders")->max_lane_held, ==, ok[i].want);
    }
    static const struct {
        const char *value;
        const char *expect;
    } bad[] = {
        { "0", "[binding orders] max_lane_held: 0 is out of range (1..1000000)" },
        { "1000001", "[binding orders] max_lane_held: 1000001 is out of range (1..1000000)" },
        { "-1", "[binding orders] max_lane_held: " },
        { "ten", "[binding orders] max_lane_held: 'ten' is not an integer" },
        { "99999999999999999999", "[binding orders] max_lane_held: " },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *text = g_strdup_printf(HOST BIND "key = subject:1\nmax_lane_held = %s\n", bad[i].value);
        write_main(fx, text);
        assert_load_error(fx->main, NULL, fx->main, bad[i].expect);
    }
}

/* --- comparing configs for a reload --------------------------------------- */

static JetBindingConfig *pairs_binding(const char *source, const char *const *kv)
{
    g_autoptr(GHashTable) settings = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(settings, "plugin", "orders");
    g_hash_table_insert(settings, "stream", "ORDERS");
    g_hash_table_insert(settings, "consumer", "billing");
    g_hash_table_insert(settings, "option.level", "3");
    for (const char *const *p = kv; p != NULL && *p != NULL; p += 2)
        g_hash_table_insert(settings, (gpointer)p[0], (gpointer)p[1]);
    g_autoptr(GError) err = NULL;
    JetBindingConfig *b = jet_config_binding_from_pairs(source, "orders", settings, &err);
    g_assert_no_error(err);
    return b;
}

/* Every key, one at a time, makes a binding differ; the file it came from
 * does not. */
static void test_binding_equal(void)
{
    g_autoptr(JetBindingConfig) base = pairs_binding("a.conf", NULL);
    g_autoptr(JetBindingConfig) same = pairs_binding("b.conf", NULL);
    g_assert_true(jet_binding_config_equal(base, base));
    g_assert_true(jet_binding_config_equal(base, same));
    static const char *const changes[][2] = {
        { "plugin", "/opt/other.so" }, { "stream", "OTHER" }, { "consumer", "other" },
        { "manage", "bind" }, { "subjects", "orders.>" }, { "filter_subject", "orders.eu" },
        { "workers", "2" }, { "batch", "5" }, { "threshold", "3" }, { "max_bytes", "1000" },
        { "expires", "20s" }, { "idle_heartbeat", "4s" }, { "handler_timeout", "1m" },
        { "exit_on_any_hung", "true" }, { "ack_wait", "20s" }, { "max_deliver", "10" },
        { "max_ack_pending", "10" }, { "rungs", "1s, 5s" }, { "rungs", "1s, 5s, 30s, 2m, 11m" },
        { "max_attempts", "4" }, { "postpone_horizon", "2h" }, { "max_postpone_delay", "1m" },
        { "capture_reserve", "2" }, { "crash_limit", "4" }, { "max_time_to_dead_letter", "1d" },
        { "max_hops", "3" }, { "dlq_ttl", "30d" },
        { "dlq_stream", "DLQ" }, { "dlq_subject", "dlq.x" }, { "ledger", "false" },
        { "publish_reserved", "true" }, { "publish_streams", "OUT" }, { "floor_age", "1m" },
        { "breaker", "off" }, { "min_deliveries", "3" }, { "exclusive", "true" },
        { "claim_heartbeat", "2s" }, { "claim_ttl", "10s" }, { "key", "subject:2" },
        { "max_lane_held", "10" }, { "option.level", "4" }, { "option.extra", "x" }, { "batch_max", "2" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(changes); i++) {
        const char *kv[] = { changes[i][0], changes[i][1], NULL };
        g_autoptr(JetBindingConfig) other = pairs_binding("a.conf", kv);
        if (jet_binding_config_equal(base, other))
            g_error("%s = %s: compared equal", changes[i][0], changes[i][1]);
        g_assert_false(jet_binding_config_equal(other, base));
    }
    /* The kinds' own keys, against an ordered binding. */
    g_autoptr(GHashTable) settings = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(settings, "plugin", "orders");
    g_hash_table_insert(settings, "stream", "ORDERS");
    g_hash_table_insert(settings, "kind", "ordered");
    g_autoptr(JetBindingConfig) o1 = jet_config_binding_from_pairs("a.conf", "orders", settings, NULL);
    g_hash_table_insert(settings, "deliver", "from_seq 7");
    g_autoptr(JetBindingConfig) o2 = jet_config_binding_from_pairs("a.conf", "orders", settings, NULL);
    g_hash_table_insert(settings, "checkpoint", "kv");
    g_autoptr(JetBindingConfig) o3 = jet_config_binding_from_pairs("a.conf", "orders", settings, NULL);
    g_assert_nonnull(o1);
    g_assert_nonnull(o2);
    g_assert_nonnull(o3);
    g_assert_false(jet_binding_config_equal(o1, o2));
    g_assert_false(jet_binding_config_equal(o2, o3));
    g_assert_false(jet_binding_config_equal(o1, base));

    /* The plugin file: the same name, but a file replaced, rewritten or
     * found elsewhere is another plugin. */
    base->plugin_id = (JetFileIdentity){ g_strdup("/opt/p.so"), 1, 2, 300, 400 };
    same->plugin_id = (JetFileIdentity){ g_strdup("/opt/p.so"), 1, 2, 300, 400 };
    g_assert_true(jet_binding_config_equal(base, same));
    same->plugin_id.ino = 3;
    g_assert_false(jet_binding_config_equal(base, same));
    same->plugin_id.ino = 2;
    same->plugin_id.size = 301;
    g_assert_false(jet_binding_config_equal(base, same));
    same->plugin_id.size = 300;
    same->plugin_id.mtime_ns = 401;
    g_assert_false(jet_binding_config_equal(base, same));
    same->plugin_id.mtime_ns = 400;
    g_free(same->plugin_id.path);
    same->plugin_id.path = g_strdup("/opt/q.so");
    g_assert_false(jet_binding_config_equal(base, same));
    g_clear_pointer(&same->plugin_id.path, g_free);
    g_assert_false(jet_binding_config_equal(base, same));
}

/* Which [host] changes a running host applies, and which need a restart. */
static void test_host_restart_key(Fixture *fx, gconstpointer data)
{
    (void)data;
    write_main(fx, HOST BIND);
    g_autoptr(JetConfig) a = load_ok(fx, NULL);
    g_assert_null(jet_host_config_restart_key(&a->host, &a->host));
    static const char *const cases[][2] = {
        { "drain_timeout = 1s\n", NULL },
        { "plugin_dir = /tmp\n", NULL },
        { "connect_attempts = 9\n", NULL },
        { "name = elsewhere\n", "name" },
        { "connect_timeout = 9s\n", "connect_timeout" },
        { "ledger_bucket = other\n", "ledger_bucket" },
        { "ledger_max_age = 1d\n", "ledger_max_age" },
        { "js_domain = hub\n", "js_domain" },
        { "replicas = 3\n", "replicas" },
        { "metrics_idle_timeout = 3s\n", "metrics_idle_timeout" },
        { "state_dir = /tmp/elsewhere\n", "state_dir" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strconcat(HOST, cases[i][0], BIND, NULL);
        write_main(fx, text);
        g_autoptr(JetConfig) b = load_ok(fx, NULL);
        g_assert_cmpstr(jet_host_config_restart_key(&a->host, &b->host), ==, cases[i][1]);
    }
    write_main(fx, "[host]\nserver = nats://127.0.0.1:4223\n" BIND);
    g_autoptr(JetConfig) c = load_ok(fx, NULL);
    g_assert_cmpstr(jet_host_config_restart_key(&a->host, &c->host), ==, "server");
}

/* Every error of the files in one load, each once, in file order (the
 * main file, then the drop-ins by name; by line within a file), a typo'd
 * key with the nearest key; an error that dropping a bad key would cause
 * is not reported on top of it. */
static void test_all_errors(Fixture *fx, gconstpointer data)
{
    (void)data;
    write_main(fx, "[host]\nserver = nats://127.0.0.1:4222\nreplicas = 9\n\n"
                   "[binding zeta]\nplugin = orders\nstream = ORDERS\nconsumer = z\nworkes = 4\n\n"
                   "[binding alpha]\nplugin = orders\nstream = ORDERS\nconsumer = a\nbatch = zero\n"
                   "ack_wiat = 5s\nkind = kv\nbucket = C.F\n");
    g_free(write_file(fx->dropins, "10-more.conf", "[binding beta]\nplugin = orders\nstream = B.X\nconsumer = b\n"
                                                   "breaker = enforced\n", 0644));
    g_autoptr(GError) err = NULL;
    g_autoptr(JetConfig) cfg = jet_config_load(fx->main, fx->dropins, &err);
    g_assert_null(cfg);
    g_test_message("%s", err->message);
    g_auto(GStrv) lines = g_strsplit(err->message, "\n", -1);
    g_autofree char *dropin = g_build_filename(fx->dropins, "10-more.conf", NULL);
    const struct {
        const char *file, *text;
    } want[] = {
        { fx->main, "[host] replicas:" },
        { fx->main, "[binding zeta] workes: unknown key; did you mean workers?" },
        { fx->main, "[binding alpha] consumer: not for kind" },
        { fx->main, "[binding alpha] batch: 'zero' is not an integer" },
        { fx->main, "[binding alpha] ack_wiat: unknown key; did you mean ack_wait?" },
        { fx->main, "[binding alpha] bucket: 'C.F' is not a KV bucket name" },
        { dropin, "[binding beta] stream:" },
        { dropin, "[binding beta] breaker: 'enforced' is not observe, enforce or off" },
    };
    g_assert_cmpuint(g_strv_length(lines), ==, G_N_ELEMENTS(want));
    for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *prefix = g_strdup_printf("%s: %s", want[i].file, want[i].text);
        if (!g_str_has_prefix(lines[i], prefix))
            g_error("line %" G_GSIZE_FORMAT ": wanted '%s...', got '%s'", i + 1, prefix, lines[i]);
    }
    /* Far from every key: no guess. */
    write_main(fx, HOST BIND "zzzzzzzz = 1\n");
    g_clear_error(&err);
    g_assert_null(jet_config_load(fx->main, NULL, &err));
    g_assert_true(g_str_has_suffix(err->message, "[binding orders] zzzzzzzz: unknown key"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
#define ADD(path, fn) g_test_add(path, Fixture, NULL, fx_setup, fn, fx_teardown)
    ADD("/config/errors", test_errors);
    ADD("/config/file-errors", test_file_errors);
    ADD("/config/secret-files", test_secret_files);
    ADD("/config/credentials", test_credentials);
    ADD("/config/defaults", test_defaults);
    ADD("/config/values", test_values);
    ADD("/config/embedded", test_embedded);
    ADD("/config/dropin/order", test_dropin_order);
    ADD("/config/dropin/adds", test_dropin_adds);
    ADD("/config/dropin/only-bindings", test_dropin_only_bindings);
    ADD("/config/dropin/errors", test_dropin_errors);
    ADD("/config/breaker-keys", test_breaker_keys);
    ADD("/config/accept-expiry", test_accept_expiry);
    ADD("/config/empty-options", test_empty_options);
    ADD("/config/ordered-keys", test_ordered_keys);
#undef ADD
    g_test_add_func("/config/doc-matches-tables", test_doc_matches_tables);
    g_test_add_func("/config/examples-load", test_examples_load);
    g_test_add("/config/js-domain", Fixture, NULL, fx_setup, test_js_domain, fx_teardown);
    g_test_add("/config/all-errors", Fixture, NULL, fx_setup, test_all_errors, fx_teardown);
    g_test_add("/config/length-limits", Fixture, NULL, fx_setup, test_length_limits, fx_teardown);
    g_test_add("/config/accept-expiry-one", Fixture, NULL, fx_setup, test_accept_expiry_one, fx_teardown);
    g_test_add("/config/secret-files-other-user", Fixture, NULL, fx_setup, test_secret_files_other_user,
               fx_teardown);
    g_test_add("/config/empty-computed-default", Fixture, NULL, fx_setup, test_empty_computed_default,
               fx_teardown);
    g_test_add("/config/lanes/key", Fixture, NULL, fx_setup, test_lane_key, fx_teardown);
    g_test_add("/config/lanes/key-errors", Fixture, NULL, fx_setup, test_lane_key_errors, fx_teardown);
    g_test_add("/config/lanes/key-kinds", Fixture, NULL, fx_setup, test_lane_key_kinds, fx_teardown);
    g_test_add("/config/lanes/max-lane-held", Fixture, NULL, fx_setup, test_max_lane_held, fx_teardown);
    g_test_add_func("/config/reload/binding-equal", test_binding_equal);
    g_test_add("/config/reload/host-restart-key", Fixture, NULL, fx_setup, test_host_restart_key, fx_teardown);
    return g_test_run();
}
