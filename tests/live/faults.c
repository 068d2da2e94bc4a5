/* The fault matrix (docs/reliability.md, "Every binding kind under every
 * fault"): each workload (a binding kind and its traffic) runs under each
 * fault on a real nats-server, as separate `jethost run` processes, and
 * checkers read the whole history afterwards:
 *
 * - lost: every message published is handled with an ack, or in the DLQ;
 * - false dead letters: the DLQ holds only what the plugin rejected or
 *   exhausted, and the one message the fault made poison;
 * - order: per key (lanes, exclusive, ordered, KV), the first handlings
 *   follow stream order;
 * - overlaps: two processes of an exclusive binding never run handlers at
 *   once, but for a handler a pause froze;
 * - KV: the last revision of each key is handled;
 * - forwards: each message not dead-lettered is in the target stream once;
 * - replays (dlq-replay, an operator's `jethost dlq replay --remove` run
 *   beside the fault and again when it fails): every message or a replay
 *   of it acked or in the DLQ, no DLQ record replayed twice;
 * - recovery: from the fault's end to the first handling after it, within
 *   the fault's bound;
 * - exits: a host ends only as documented (SIGTERM: 0; all workers hung:
 *   5; a plugin's abort()), and gives back its descriptors.
 *
 * fx_gate records each handling (stream seq, verdict, start and end on the
 * monotonic clock) in a directory per host process.  Every random choice
 * comes from the cell's seed, printed with the command that replays the
 * cell alone.  `make check` runs each cell once; `make faults` runs them
 * JET_FAULTS_SEEDS times with more messages (JET_FAULTS_LONG=1). */
#define _GNU_SOURCE
#include "harness.h"
#include "cluster.h"
#include "dlq_record.h"
#include "relay.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAM "ORDERS"
#define BUCKET "faults"
#define CONSUMER "c"

typedef enum { K_DURABLE, K_LANES, K_ORDERED, K_KV } Kind;

typedef struct {
    const char *name;
    Kind kind;
    guint hosts;        /* started at once: the second stands by (exclusive) or shares */
    guint keys;         /* distinct keys of the traffic */
    guint hot_percent;  /* share of the traffic on key k0 */
    gboolean exclusive; /* one process at a time may handle */
    const char *binding;
    gboolean forward;   /* publishes each acked message to FWD (publish-then-ack) */
    gboolean replay;    /* an operator replays the DLQ (`jethost dlq replay --remove`) during the fault */
} Workload;

typedef enum {
    F_KILL,
    F_KILL_IN_HANDLER,
    F_PAUSE_HOST,
    F_RELOAD,
    F_SECOND_HOST,
    F_SERVER_RESTART,
    F_SERVER_PAUSE,
    F_CONN_CUT,
    F_PARTITION,
    F_CONSUMER_DELETED,
    F_DLQ_RECREATED,
    F_STREAM_RECREATED,
    F_HUNG,
    F_CRASHING_PLUGIN,
    F_LEADER_STEPDOWN,
    F_STORE_LOST,
} FaultKind;

typedef struct {
    const char *name;
    FaultKind kind;
    guint recovery_ms;  /* fault end to the first handling after it */
    gboolean cluster;   /* on three nodes, everything R3 (the hosts run with replicas = 3) */
} Fault;

#define COMMON "ack_wait = 2s\nexpires = 2s\nidle_heartbeat = 500ms\nrungs = 100ms\nmax_attempts = 3\n" \
               "option.sleep = 2ms\noption.reject_percent = 2\noption.flaky_percent = 5\n"
#define CLAIM "claim_ttl = 2s\nclaim_heartbeat = 500ms\n"

static const Workload workloads[] = {
    { "durable-1", K_DURABLE, 1, 20, 0, FALSE, "workers = 1\nexclusive = false\n" COMMON, FALSE, FALSE },
    { "durable-4", K_DURABLE, 1, 20, 0, FALSE, "workers = 4\nexclusive = false\n" COMMON, FALSE, FALSE },
    { "durable-batch", K_DURABLE, 1, 20, 0, FALSE, "workers = 2\nexclusive = false\nbatch_max = 10\nbatch_wait = 20ms\n"
      COMMON, FALSE, FALSE },
    { "lanes-uniform", K_LANES, 1, 50, 0, TRUE, "key = subject:2\nworkers = 4\n" CLAIM COMMON, FALSE, FALSE },
    /* With handler batches: what the lanes have ready, one message a key
     * (lanes-uniform and exclusive-2 keep the one-at-a-time path). */
    { "lanes-hot", K_LANES, 1, 50, 50, TRUE, "key = subject:2\nworkers = 4\nbatch_max = 5\n" CLAIM COMMON, FALSE,
      FALSE },
    { "exclusive-2", K_LANES, 2, 20, 0, TRUE, "key = subject:2\nworkers = 2\n" CLAIM COMMON, FALSE, FALSE },
    /* With handler batches: settled in stream order, what follows a
     * message that waits set aside and handed again (the kv row keeps the
     * one-at-a-time path). */
    { "ordered", K_ORDERED, 1, 20, 0, FALSE,
      "kind = ordered\ncheckpoint = kv\nbatch = 10\nbatch_max = 5\nexpires = 2s\nidle_heartbeat = 500ms\n"
      "rungs = 100ms\nmax_attempts = 3\noption.sleep = 2ms\n"
      "option.reject_percent = 2\noption.flaky_percent = 5\n", FALSE, FALSE },
    { "kv", K_KV, 1, 30, 0, FALSE,
      "kind = kv\nexpires = 2s\nidle_heartbeat = 500ms\nrungs = 100ms\nmax_attempts = 3\noption.sleep = 2ms\n"
      "option.flaky_percent = 5\n", FALSE, FALSE },
    { "forward", K_DURABLE, 1, 20, 0, FALSE,
      "workers = 2\nexclusive = false\noption.forward_prefix = fwd\npublish_streams = FWD\n" COMMON, TRUE, FALSE },
    { "retry-heavy", K_DURABLE, 1, 20, 0, FALSE,
      "workers = 2\nexclusive = false\noption.random_percent = 20\noption.postpone_delay = 200ms\n"
      "option.fail_percent = 3\n" COMMON, FALSE, FALSE },
    { "dlq-replay", K_DURABLE, 1, 20, 0, FALSE,
      "workers = 2\nexclusive = false\nack_wait = 2s\nexpires = 2s\nidle_heartbeat = 500ms\nrungs = 100ms\n"
      "max_attempts = 3\noption.sleep = 2ms\noption.reject_percent = 10\noption.flaky_percent = 5\n", FALSE, TRUE },
    /* Last: its place makes it part 2's (make check's halves). */
    { "durable-async", K_DURABLE, 1, 20, 0, FALSE, "workers = 2\nexclusive = false\nmax_in_flight = 20\n"
      "option.async = 30ms\n" COMMON, FALSE, FALSE },
};

static const Fault faults[] = {
    { "kill", F_KILL, 8000, FALSE },
    { "kill-in-handler", F_KILL_IN_HANDLER, 8000, FALSE },
    { "pause-host", F_PAUSE_HOST, 8000, FALSE },
    { "reload", F_RELOAD, 5000, FALSE },
    { "second-host", F_SECOND_HOST, 5000, FALSE },
    { "server-restart", F_SERVER_RESTART, 10000, FALSE },
    { "server-pause", F_SERVER_PAUSE, 8000, FALSE },
    { "connection-cut", F_CONN_CUT, 8000, FALSE },
    { "partition-host", F_PARTITION, 8000, FALSE },
    { "consumer-deleted", F_CONSUMER_DELETED, 8000, FALSE },
    { "dlq-recreated", F_DLQ_RECREATED, 8000, FALSE },
    { "stream-recreated", F_STREAM_RECREATED, 8000, FALSE },
    { "hung-handler", F_HUNG, 0, FALSE },
    { "crashing-plugin", F_CRASHING_PLUGIN, 0, FALSE },
    { "leader-stepdown", F_LEADER_STEPDOWN, 10000, TRUE },
    /* The node's restart, its catching up and the elections: 4-11 s on a
     * quiet machine, 16-17 s in loaded clean-clone runs. */
    { "leader-store-lost", F_STORE_LOST, 25000, TRUE },
};

/* --- one process of jethost ------------------------------------------------ */

typedef struct {
    guint id;            /* its directory: h<id> */
    guint slot;          /* the workload's host it plays (0: the first, the holder) */
    char *name, *dir, *errlog, *extra;
    GSubprocess *proc;
    gboolean supervised; /* started again when it ends on its own */
    gboolean done;       /* exited and accounted for */
    int status;          /* 128 + signal, or the exit code */
    gint64 paused_us;    /* when a pause of it began (0: never), taken before SIGSTOP */
    gint64 resumed_us;   /* when it ended, taken after SIGCONT */
    int fds;             /* open descriptors at the fault's start (-1: not measured) */
    long rss_kib;        /* its resident set then */
    gboolean faster;     /* reloaded with a faster handler (option.sleep 1ms) */
    JetTestRelay *relay; /* connection-cut, partition-host: its way to the server */
} Host;

typedef struct {
    const Workload *w;
    const Fault *f;
    guint64 seed;
    GRand *rng;
    char *id;            /* workload/fault */
    JetTestServer *srv;  /* or, for a cluster fault: */
    JetTestCluster *cl;
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv;
    char *dir, *plugin;
    guint n;             /* published before the fault */
    guint after;         /* published after it */
    GPtrArray *keys;     /* key of stream seq i at i - 1 */
    GHashTable *last_rev;/* KV: key -> last revision (guint64 *) */
    guint64 special;     /* the seq held, aborted on or hung */
    GPtrArray *hosts;    /* Host *, every process started */
    gint64 fault_start_us, fault_end_us;
    gint64 writes_back_us;   /* when the stream took the workload's writes again after refusing them (the test's
                                publisher; dlq-replay: the replayer run that succeeded); 0: none refused */
    GString *problems;
    guint unexpected_exits, restarts;
    gboolean released;   /* the special seq's gate is open for every process from now */
    /* dlq-recreated: what the DLQ stream held when it was deleted, as a
     * subscriber on its subjects saw the captures (seq -> cause). */
    natsSubscription *dlq_spy;
    GMutex spy_lock;
    GHashTable *spied;
    gboolean spy_open;   /* captures seen count until the stream is deleted */
    gint64 spy_done;     /* callbacks finished */
    /* stream-recreated: the old life's messages (the first life_base of
     * keys), when the new life began (monotonic ns; 0: one life), and the
     * last DLQ and FWD records then (those after are the new life's). */
    guint life_base;
    gint64 life_ns;
    guint64 dlq_mark, fwd_mark;
    /* dlq-replay: the message each stream seq carries (its payload's
     * msg-N: a replay carries its original's, at index seq - 1), and how
     * many replayer runs it took. */
    GArray *origin;
    guint replayer_runs;
    char *replay_log;    /* the last run's stderr */
} Cell;

static void host_free(gpointer p)
{
    Host *h = p;
    jet_test_relay_stop(h->relay);
    g_clear_object(&h->proc);
    g_free(h->name);
    g_free(h->dir);
    g_free(h->errlog);
    g_free(h->extra);
    g_free(h);
}

/* text with every old replaced by new (g_free). */
static char *replaced(const char *text, const char *old, const char *new)
{
    g_auto(GStrv) parts = g_strsplit(text, old, -1);
    return g_strjoinv(new, parts);
}

/* Where the hosts and the test connect: the server, or every node. */
static const char *cell_url(Cell *c)
{
    return c->cl != NULL ? jet_test_cluster_urls(c->cl) : jet_test_server_url(c->srv);
}

static char *host_config(Cell *c, Host *h)
{
    const Workload *w = c->w;
    g_autoptr(GString) t = g_string_new(NULL);
    g_string_append_printf(t, "[host]\nserver = %s\nname = %s\ndrain_timeout = 5s\n%s\n[binding b]\nplugin = %s\n",
                           h->relay != NULL ? jet_test_relay_url(h->relay) : cell_url(c), h->name,
                           c->cl != NULL ? "replicas = 3\n" : "", c->plugin);
    if (w->kind == K_KV)
        g_string_append_printf(t, "bucket = %s\n", BUCKET);
    else
        g_string_append(t, "stream = " STREAM "\n");
    if (w->kind == K_DURABLE || w->kind == K_LANES)
        g_string_append(t, "consumer = " CONSUMER "\n");
    g_autofree char *binding = g_strdup(w->binding);
    if (c->cl != NULL) {
        /* On a cluster the ladder outlasts a node's restart, as
         * docs/reliability.md advises: a node taking clients before its
         * routes are up answers a publish with "no responders" for a
         * moment, which a 200 ms ladder would dead-letter. */
        g_autofree char *longer = replaced(binding, "rungs = 100ms", "rungs = 500ms, 1s, 2s, 4s");
        g_free(binding);
        binding = replaced(longer, "max_attempts = 3", "max_attempts = 6");
    }
    char *sleep = strstr(binding, "option.sleep = 2ms");
    if (h->faster && sleep != NULL)
        sleep[strlen("option.sleep = ")] = '1';
    g_string_append_printf(t, "option.dir = %s\n%s%s", h->dir, binding, h->extra != NULL ? h->extra : "");
    return g_string_free(g_steal_pointer(&t), FALSE);
}

/* Starts a process playing the workload's host slot, with extra binding lines. */
static Host *host_start(Cell *c, guint slot, const char *extra)
{
    Host *h = g_new0(Host, 1);
    h->id = c->hosts->len;
    h->slot = slot;
    h->name = g_strdup_printf("%s-%s-h%u", c->w->name, c->f->name, h->id);
    h->dir = g_strdup_printf("%s/h%u", c->dir, h->id);
    h->extra = g_strdup(extra);
    h->fds = -1;
    if (c->f->kind == F_CONN_CUT || c->f->kind == F_PARTITION)
        h->relay = jet_test_relay_start(jet_test_server_port(c->srv));
    g_assert_cmpint(g_mkdir_with_parents(h->dir, 0700), ==, 0);
    if (c->released) {
        g_autofree char *go = g_strdup_printf("%s/go-%" G_GUINT64_FORMAT, h->dir, c->special);
        g_assert_true(g_file_set_contents(go, "", 0, NULL));
    }
    g_autofree char *text = host_config(c, h);
    h->proc = jet_test_jethost_spawn_config(h->name, text, &h->errlog);
    g_ptr_array_add(c->hosts, h);
    return h;
}

static gboolean host_running(Host *h)
{
    return !h->done && g_subprocess_get_identifier(h->proc) != NULL;
}

static const char *host_pid(Host *h)
{
    return g_subprocess_get_identifier(h->proc);
}

static int host_fds(Host *h)
{
    const char *pid = host_pid(h);
    if (pid == NULL)
        return -1;
    g_autofree char *path = g_strdup_printf("/proc/%s/fd", pid);
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    if (d == NULL)
        return -1;
    int n = 0;
    while (g_dir_read_name(d) != NULL)
        n++;
    return n;
}

/* VmRSS of a running process in KiB; -1 when it cannot be read. */
static long host_rss_kib(Host *h)
{
    const char *pid = host_pid(h);
    if (pid == NULL)
        return -1;
    g_autofree char *path = g_strdup_printf("/proc/%s/status", pid);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return -1;
    const char *line = strstr(text, "VmRSS:");
    return line != NULL ? strtol(line + strlen("VmRSS:"), NULL, 10) : -1;
}

static void problem(Cell *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void problem(Cell *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_test_message("%s: %s", c->id, text);
    g_string_append_printf(c->problems, "%s%s", c->problems->len > 0 ? "; " : "", text);
}

static gboolean log_has(const char *path, const char *needle)
{
    g_autofree char *text = NULL;
    return g_file_get_contents(path, &text, NULL, NULL) && strstr(text, needle) != NULL;
}

/* Waits for the host's log to show needle; FALSE after timeout_ms. */
static gboolean host_logged(Host *h, const char *needle, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    while (!log_has(h->errlog, needle)) {
        if (g_get_monotonic_time() > deadline || !host_running(h))
            return FALSE;
        g_usleep(10 * 1000);
    }
    return TRUE;
}

/* The exits the fault documents: a plugin's abort() and, with every worker
 * hung, code 5; the supervisor (this test, as systemd would) starts the
 * host again. */
static gboolean exit_expected(Cell *c, int status)
{
    if (c->f->kind == F_CRASHING_PLUGIN)
        return status == 128 + SIGABRT;
    if (c->f->kind == F_HUNG)
        return status == 5;
    return FALSE;
}

/* Accounts for hosts that ended on their own, and starts supervised ones again. */
static void supervise(Cell *c)
{
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        if (h->done || host_running(h))
            continue;
        h->status = jet_test_jethost_wait(h->proc, 1000);
        h->done = TRUE;
        if (!exit_expected(c, h->status)) {
            c->unexpected_exits++;
            g_autofree char *log = NULL;
            g_file_get_contents(h->errlog, &log, NULL, NULL);
            problem(c, "host h%u exited with %d", h->id, h->status);
            g_test_message("%s", log != NULL ? log : "");
        }
        if (h->supervised) {
            c->restarts++;
            Host *again = host_start(c, h->slot, h->extra);
            again->supervised = TRUE;
        }
    }
}

/* The live process playing slot (NULL when none). */
static Host *host_of_slot(Cell *c, guint slot)
{
    for (guint i = c->hosts->len; i-- > 0;) {
        Host *h = g_ptr_array_index(c->hosts, i);
        if (h->slot == slot && host_running(h))
            return h;
    }
    return NULL;
}

/* Kills slot's process (SIGKILL) and starts another in its place. */
static void host_kill_restart(Cell *c, guint slot)
{
    Host *h = host_of_slot(c, slot);
    g_assert_nonnull(h);
    g_subprocess_force_exit(h->proc);
    h->status = jet_test_jethost_wait(h->proc, 10000);
    h->done = TRUE;
    g_assert_cmpint(h->status, ==, 128 + SIGKILL);
    Host *again = host_start(c, slot, NULL);
    again->supervised = h->supervised;
}

/* --- traffic ------------------------------------------------------------ */

static const char *pick_key(Cell *c)
{
    static char buf[32];
    guint k = (guint)g_rand_int_range(c->rng, 0, 100) < c->w->hot_percent
                  ? 0
                  : (guint)g_rand_int_range(c->rng, 0, (gint32)c->w->keys);
    snprintf(buf, sizeof buf, "k%u", k);
    return buf;
}

/* Publishes count messages (or KV writes, purges only when allowed: a
 * purge removes what the watch may not have read), remembering each one's key. */
static void publish(Cell *c, guint count, gboolean purges)
{
    for (guint i = 0; i < count; i++) {
        const char *key = pick_key(c);
        if (c->w->kind == K_KV) {
            guint64 rev = 0;
            int op = g_rand_int_range(c->rng, 0, 100);
            natsStatus s;
            /* "No responders" stored nothing: asked again, as a node that
             * came back takes clients a moment before its routes are up. */
            gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
            for (;;) {
                if (op < 8) {
                    s = kvStore_Delete(c->kv, key);
                    rev = 0;
                } else if (op < 10 && purges) {
                    s = kvStore_Purge(c->kv, key, NULL);
                } else {
                    char val[32];
                    snprintf(val, sizeof val, "v%u", c->keys->len + 1);
                    s = kvStore_PutString(&rev, c->kv, key, val);
                }
                if (s != NATS_NO_RESPONDERS || g_get_monotonic_time() > deadline)
                    break;
                g_usleep(200 * 1000);
            }
            g_assert_cmpint(s, ==, NATS_OK);
            g_ptr_array_add(c->keys, g_strdup(key));
            guint64 *last = g_new(guint64, 1);
            *last = c->keys->len;   /* the bucket's stream holds only these writes: revision = count */
            g_hash_table_replace(c->last_rev, g_strdup(key), last);
            continue;
        }
        g_autofree char *subject = g_strdup_printf("orders.%s", key);
        char data[32];
        int len = snprintf(data, sizeof data, "msg-%u", c->keys->len + 1);
        g_assert_cmpint(js_PublishAsync(c->js, subject, data, len, NULL), ==, NATS_OK);
        g_ptr_array_add(c->keys, g_strdup(key));
    }
    if (c->w->kind != K_KV) {
        gint64 back = jet_test_publish_wait(c->js);
        c->writes_back_us = MAX(c->writes_back_us, back);
    }
}

/* --- the history --------------------------------------------------------- */

typedef JetTestHandling Handling;

static gint by_start(gconstpointer a, gconstpointer b)
{
    const Handling *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Every host's handlings, ordered by start. */
static GArray *read_history(Cell *c)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(Handling));
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        g_autofree char *path = g_build_filename(h->dir, "handled.log", NULL);
        jet_test_read_handlings(path, h->id, a);
    }
    g_array_sort(a, by_start);
    /* A seq of the stream's new life is a message published after the old
     * life's: every checker counts in publication order. */
    for (guint i = 0; c->life_ns != 0 && i < a->len; i++) {
        Handling *x = &g_array_index(a, Handling, i);
        if (x->start_ns >= c->life_ns)
            x->seq += c->life_base;
    }
    return a;
}

/* A stream's info, asked until it answers (up to 60 s): a node that lost
 * its store answers JetStream requests late while it catches up.  NULL:
 * the stream does not exist. */
static jsStreamInfo *stream_info(Cell *c, const char *stream)
{
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    for (;;) {
        jsStreamInfo *si = NULL;
        natsStatus s = js_GetStreamInfo(&si, c->js, stream, NULL, NULL);
        if (s == NATS_OK)
            return si;
        if (s == NATS_NOT_FOUND)
            return NULL;
        if (g_get_monotonic_time() > deadline)
            g_error("%s: stream %s: no info in 60 s: %s", c->id, stream, natsStatus_GetText(s));
        g_usleep(200 * 1000);
    }
}

/* A stored message, asked until the server answers (NULL: not there). */
static natsMsg *stream_get(Cell *c, const char *stream, guint64 seq)
{
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    for (;;) {
        natsMsg *m = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_GetMsg(&m, c->js, stream, seq, NULL, &jerr);
        if (s == NATS_OK)
            return m;
        if (s == NATS_NOT_FOUND || jerr == 10037)
            return NULL;
        if (g_get_monotonic_time() > deadline)
            g_error("%s: %s:%" G_GUINT64_FORMAT ": not read in 60 s: %s", c->id, stream, seq, natsStatus_GetText(s));
        g_usleep(200 * 1000);
    }
}

typedef struct {
    guint records, other;
    GHashTable *causes;   /* seq -> first cause (char *) */
} Dlq;

static void read_dlq(Cell *c, Dlq *d)
{
    d->causes = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    /* Every read asked again until the server answers (a node catching up
     * after a lost store answers late): a record skipped for a timeout
     * would read as a message lost. */
    jsStreamInfo *si = stream_info(c, "JETHOST_DLQ");
    if (si == NULL)
        return;
    guint64 first = si->State.FirstSeq, last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    for (guint64 s = first; s >= 1 && s <= last; s++) {
        natsMsg *m = stream_get(c, "JETHOST_DLQ", s);
        if (m == NULL)
            continue;   /* removed (a replay's --remove) */
        const char *seq = jet_test_msg_header(m, "Jethost-Origin-Seq");
        const char *cause = jet_test_msg_header(m, "Jethost-Cause");
        d->records++;
        gint64 *k = g_new(gint64, 1);
        *k = seq != NULL ? (gint64)g_ascii_strtoull(seq, NULL, 10) : 0;
        if (c->life_ns != 0 && s > c->dlq_mark && *k > 0)
            *k += c->life_base;
        if (!g_hash_table_contains(d->causes, k))
            g_hash_table_insert(d->causes, k, g_strdup(cause != NULL ? cause : "(none)"));
        else
            g_free(k);
        natsMsg_Destroy(m);
    }
}

/* Each seq's handlings: acks, rejects, retries (and whether it was seen). */
typedef struct {
    guint handled, acks, rejects, retries;
} Seen;

static Seen *tally(Cell *c, GArray *hist)
{
    Seen *seen = g_new0(Seen, c->keys->len + 1);
    for (guint i = 0; i < hist->len; i++) {
        Handling *x = &g_array_index(hist, Handling, i);
        if (x->seq < 1 || x->seq > c->keys->len)
            continue;
        Seen *s = &seen[x->seq];
        s->handled++;
        s->acks += x->verdict == 'a';
        s->rejects += x->verdict == 'j';
        s->retries += x->verdict == 'r';
    }
    return seen;
}

/* --- done? ---------------------------------------------------------------- */

/* The records a deleted DLQ stream held (the spy saw them captured) count
 * as dead letters: added to causes. */
static void add_spied(Cell *c, GHashTable *causes)
{
    g_mutex_lock(&c->spy_lock);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, c->spied);
    while (g_hash_table_iter_next(&it, &k, &v))
        if (!g_hash_table_contains(causes, k)) {
            gint64 *key = g_new(gint64, 1);
            *key = *(gint64 *)k;
            g_hash_table_insert(causes, key, g_strdup(v));
        }
    g_mutex_unlock(&c->spy_lock);
}

static void origin_fill(Cell *c);
static gboolean origin_accounted(Cell *c, const Seen *seen, GHashTable *causes, guint64 s);

static gboolean all_accounted(Cell *c)
{
    g_autoptr(GArray) hist = read_history(c);
    g_autofree Seen *seen = tally(c, hist);
    guint64 total = c->keys->len;
    if (c->origin != NULL) {
        /* Replayed records are no longer in the DLQ: each seq is acked, in
         * the DLQ, or accounted for through a replay of it. */
        origin_fill(c);
        Dlq d = { 0 };
        read_dlq(c, &d);
        if (c->spied != NULL)
            add_spied(c, d.causes);
        gboolean all = TRUE;
        for (guint64 s = 1; all && s <= total; s++) {
            gint64 key = (gint64)s;
            all = seen[s].acks > 0 || g_hash_table_contains(d.causes, &key) ||
                  origin_accounted(c, seen, d.causes, s);
        }
        g_hash_table_destroy(d.causes);
        if (!all)
            return FALSE;
        JetTestFloorWait fw = { c->js, STREAM, CONSUMER, total };
        return jet_test_floor_reached(&fw);
    }
    if (c->w->kind == K_KV) {
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, c->last_rev);
        while (g_hash_table_iter_next(&it, &k, &v))
            if (seen[*(guint64 *)v].handled == 0 && *(guint64 *)v != c->special)
                return FALSE;
        return TRUE;
    }
    guint missing = 0;
    for (guint64 s = 1; s <= total; s++)
        missing += seen[s].acks == 0;
    if (missing > 0) {
        /* What the DLQ holds may account for the rest. */
        guint64 dead = jet_test_stream_msgs(c->js, "JETHOST_DLQ");
        if (c->spied != NULL) {
            g_mutex_lock(&c->spy_lock);
            dead += g_hash_table_size(c->spied);
            g_mutex_unlock(&c->spy_lock);
        }
        if (missing > dead)
            return FALSE;
    }
    if (c->w->kind == K_DURABLE || c->w->kind == K_LANES) {
        JetTestFloorWait fw = { c->js, STREAM, CONSUMER, total - c->life_base };
        return jet_test_floor_reached(&fw);
    }
    return TRUE;
}

/* Waits, supervising the hosts, until every message is accounted for. */
static gboolean wait_done(Cell *c, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    for (;;) {
        supervise(c);
        if (all_accounted(c))
            return TRUE;
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50 * 1000);
    }
}

static guint handled_lines(Cell *c)
{
    g_autoptr(GArray) hist = read_history(c);
    return hist->len;
}

/* Waits until the hosts have handled at least `lines` deliveries. */
static void wait_handled(Cell *c, guint lines)
{
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (handled_lines(c) < lines) {
        supervise(c);
        if (g_get_monotonic_time() > deadline)
            g_error("%s: fewer than %u handlings after 60 s", c->id, lines);
        g_usleep(10 * 1000);
    }
}

/* --- the faults ------------------------------------------------------------ */

static void reconnect(Cell *c)
{
    if (c->kv != NULL)
        kvStore_Destroy(c->kv);
    c->kv = NULL;
    jet_test_js_close(c->nc, c->js);
    c->js = c->cl != NULL ? jet_test_cluster_js_open(c->cl, &c->nc) : jet_test_js_open(cell_url(c), &c->nc);
    if (c->w->kind == K_KV)
        g_assert_cmpint(js_KeyValue(&c->kv, c->js, BUCKET), ==, NATS_OK);
}

static void on_capture(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    Cell *c = closure;
    (void)nc;
    (void)sub;
    const char *seq = NULL, *cause = NULL;
    natsMsgHeader_Get(m, "Jethost-Origin-Seq", &seq);
    natsMsgHeader_Get(m, "Jethost-Cause", &cause);
    g_mutex_lock(&c->spy_lock);
    if (c->spy_open && seq != NULL) {
        gint64 *k = g_new(gint64, 1);
        *k = (gint64)g_ascii_strtoull(seq, NULL, 10);
        g_hash_table_replace(c->spied, k, g_strdup(cause != NULL ? cause : "(none)"));
    }
    c->spy_done++;
    g_mutex_unlock(&c->spy_lock);
    natsMsg_Destroy(m);
}

/* Watches the captures from the cell's start: the records a deleted DLQ
 * stream took with it. */
static void spy_captures(Cell *c)
{
    g_mutex_init(&c->spy_lock);
    c->spied = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    c->spy_open = TRUE;
    g_assert_cmpint(natsConnection_Subscribe(&c->dlq_spy, c->nc, "jethost.dlq.>", on_capture, c), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_SetPendingLimits(c->dlq_spy, -1, -1), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(c->nc), ==, NATS_OK);
}

/* The DLQ stream deleted, and 1 s later created again as the host makes
 * it (an operator restoring it): captures meanwhile find no stream. */
static void recreate_dlq(Cell *c)
{
    /* Captures seen until the stream is gone may be in it; those after it
     * found no stream, and are tried again into the new one. */
    g_assert_cmpint(js_DeleteStream(c->js, "JETHOST_DLQ", NULL, NULL), ==, NATS_OK);
    /* Everything the server sent before its answer has been through the
     * spy's callback before it closes. */
    g_assert_cmpint(natsConnection_Flush(c->nc), ==, NATS_OK);
    for (;;) {
        int pending = 0;
        int64_t delivered = 0;
        natsSubscription_GetPending(c->dlq_spy, &pending, NULL);
        natsSubscription_GetDelivered(c->dlq_spy, &delivered);
        g_mutex_lock(&c->spy_lock);
        gboolean caught_up = pending == 0 && c->spy_done >= delivered;
        if (caught_up)
            c->spy_open = FALSE;
        g_mutex_unlock(&c->spy_lock);
        if (caught_up)
            break;
        g_usleep(1000);
    }
    g_usleep(1000 * 1000);
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "JETHOST_DLQ";
    const char *subjects[] = { "jethost.dlq.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Duplicates = JET_DLQ_DUPLICATE_WINDOW_NS;
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_AddStream(&si, c->js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si);
}

static guint64 last_seq(Cell *c, const char *stream)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, c->js, stream, NULL, NULL) != NATS_OK)
        return 0;
    guint64 last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return last;
}

/* The workload's source: its KV bucket, or its stream. */
static void make_source(Cell *c)
{
    if (c->w->kind == K_KV) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = BUCKET;
        kc.History = 5;
        kc.Replicas = c->cl != NULL ? 3 : 1;
        g_assert_cmpint(js_CreateKeyValue(&c->kv, c->js, &kc), ==, NATS_OK);
    } else if (c->cl != NULL) {
        jet_test_cluster_stream_create(c->js, STREAM, "orders.>", 3, 0);
    } else {
        jet_test_stream_create(c->js, STREAM, "orders.>");
    }
}

/* The stream the workload reads (its KV bucket's, for a KV watch). */
static const char *source_stream(Cell *c)
{
    return c->w->kind == K_KV ? "KV_" BUCKET : STREAM;
}

/* The node leading the source stream now (0 when none can be read). */
static int source_leader(Cell *c)
{
    return MAX(jet_test_cluster_stream_leader(c->cl, c->js, source_stream(c)), 0);
}

/* The stream (or the KV bucket) deleted and made again under its name,
 * its sequences from 1 again, and written to before any host can act:
 * every running process is stopped meanwhile (a consumer made on the new
 * life before anything is in it starts at 1 whatever it asks for; one
 * made after asks from where it says).  Done once everything published so
 * far is accounted for: nothing of the old life is held then, so what the
 * hosts handle from the deletion on is the new life's (read_history). */
static void recreate_stream(Cell *c)
{
    if (!wait_done(c, 90000))
        problem(c, "the stream's first life was not all accounted for in 90 s");
    /* The hosts read the ack floor every 2 s: one reading of the old life's
     * last floor each, so that a host would start a consumer from there. */
    g_usleep(2500 * 1000);
    c->dlq_mark = last_seq(c, "JETHOST_DLQ");
    c->fwd_mark = c->w->forward ? last_seq(c, "FWD") : 0;
    c->life_base = c->keys->len;
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        if (host_running(h)) {
            h->paused_us = g_get_monotonic_time();
            g_subprocess_send_signal(h->proc, SIGSTOP);
        }
    }
    c->life_ns = g_get_monotonic_time() * 1000;
    if (c->w->kind == K_KV) {
        kvStore_Destroy(c->kv);
        c->kv = NULL;
        g_assert_cmpint(js_DeleteKeyValue(c->js, BUCKET), ==, NATS_OK);
    } else {
        g_assert_cmpint(js_DeleteStream(c->js, STREAM, NULL, NULL), ==, NATS_OK);
    }
    make_source(c);
    publish(c, c->after / 2, TRUE);
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        if (h->paused_us != 0 && h->resumed_us == 0) {
            h->resumed_us = g_get_monotonic_time();
            g_subprocess_send_signal(h->proc, SIGCONT);
        }
    }
}

static void delete_consumers(Cell *c)
{
    const char *stream = c->w->kind == K_KV ? "KV_" BUCKET : STREAM;
    jsConsumerNamesList *names = NULL;
    if (js_ConsumerNames(&names, c->js, stream, NULL, NULL) != NATS_OK)
        return;
    for (int i = 0; i < names->Count; i++)
        js_DeleteConsumer(c->js, stream, names->List[i], NULL, NULL);
    jsConsumerNamesList_Destroy(names);
}

static char *gate_file(Host *h, const char *what, guint64 seq)
{
    return g_strdup_printf("%s/%s-%" G_GUINT64_FORMAT, h->dir, what, seq);
}

/* Every process's handler held at the special seq goes on, and every
 * process started from now finds the gate open. */
static void release_all(Cell *c)
{
    if (c->special == 0)
        return;
    c->released = TRUE;
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        g_autofree char *go = gate_file(h, "go", c->special);
        g_file_set_contents(go, "", 0, NULL);
    }
}

static gboolean any_inflight(Cell *c, Host **which)
{
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        g_autofree char *f = gate_file(h, "inflight", c->special);
        if (host_running(h) && g_file_test(f, G_FILE_TEST_EXISTS)) {
            *which = h;
            return TRUE;
        }
    }
    return FALSE;
}

static gboolean any_logged(Cell *c, const char *needle)
{
    for (guint i = 0; i < c->hosts->len; i++)
        if (log_has(((Host *)g_ptr_array_index(c->hosts, i))->errlog, needle))
            return TRUE;
    return FALSE;
}

/* The baseline of each process that runs its binding (a standby, or one
 * still connecting, opens more once it does). */
static void measure_fds(Cell *c)
{
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        if (host_running(h) && log_has(h->errlog, "event=subscribed")) {
            h->fds = host_fds(h);
            h->rss_kib = host_rss_kib(h);
        }
    }
}

/* --- the operator's replay (dlq-replay) ------------------------------------ */

static GSubprocess *replayer_start(Cell *c)
{
    g_free(c->replay_log);
    c->replay_log = g_strdup_printf("%s/replay-%u.stderr", c->dir, c->replayer_runs++);
    const char *log = c->replay_log;
    /* Slow enough to last through the fault: every record there is now.
     * On a cluster, through a node that does not lead the stream (the one
     * a fault kills). */
    const char *url = c->cl != NULL ? jet_test_cluster_url(c->cl, (source_leader(c) + 1) % JET_TEST_CLUSTER_NODES)
                                    : jet_test_server_url(c->srv);
    const char *argv[] = { "dlq", "-s", url, "replay", "--remove", "--yes", "--rate", "10", "--from", "1", NULL };
    return jet_test_jethost_spawn(log, argv);
}

/* Waits for the replayer; a run that failed (the server restarted or
 * paused under it, or it was killed) is run again, as an operator would,
 * for up to 90 s (a node that lost its store has answered "no responders"
 * for the stream's subjects that long): what it replayed already is not
 * replayed twice (docs/dead-letters.md, "Once"). */
static void replayer_finish(Cell *c, GSubprocess *p)
{
    gint64 start = g_get_monotonic_time(), until = start + 90 * G_USEC_PER_SEC, run_start = start;
    for (guint tries = 0;; tries++) {
        int status = jet_test_jethost_wait(p, 120000);
        g_object_unref(p);
        /* Its summary even when it succeeded: "replayed 0 of 0" right after
         * a fault is a story too. */
        g_autofree char *text = NULL;
        g_file_get_contents(c->replay_log, &text, NULL, NULL);
        g_test_message("%s: the replay exited %d:\n%s", c->id, status, text != NULL ? text : "");
        if (status == 0) {
            if (tries > 0 && g_get_monotonic_time() - start > 10 * G_USEC_PER_SEC)
                g_test_message("%s: the replay succeeded at run %u, %" G_GINT64_FORMAT " s after the first", c->id,
                               tries + 1, (g_get_monotonic_time() - start) / G_USEC_PER_SEC);
            /* Its writes (the replays the host then handles) could go only
             * from this run on: the cluster's time before, not the host's. */
            if (tries > 0)
                c->writes_back_us = MAX(c->writes_back_us, run_start);
            return;
        }
        if (g_get_monotonic_time() > until) {
            problem(c, "the replay failed %u times in 90 s (last exit %d)", tries + 1, status);
            return;
        }
        g_usleep(1000 * 1000);
        run_start = g_get_monotonic_time();
        p = replayer_start(c);
    }
}

/* Each published message is its own original. */
static void origin_fill(Cell *c)
{
    if (c->origin == NULL)
        return;
    for (guint64 n = c->origin->len + 1; n <= c->keys->len; n++)
        g_array_append_val(c->origin, n);
}

/* The replays the stream now holds, after what was published: each one's
 * key and original, and no DLQ record replayed twice. */
static void absorb_replays(Cell *c)
{
    jsStreamInfo *si = stream_info(c, STREAM);
    g_assert_nonnull(si);
    guint64 last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    g_autoptr(GHashTable) of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    origin_fill(c);
    for (guint64 s = c->keys->len + 1; s <= last; s++) {
        natsMsg *m = stream_get(c, STREAM, s);
        g_assert_nonnull(m);
        const char *subject = natsMsg_GetSubject(m);
        g_ptr_array_add(c->keys, g_strdup(g_str_has_prefix(subject, "orders.") ? subject + 7 : subject));
        g_autofree char *data = g_strndup(natsMsg_GetData(m), (gsize)natsMsg_GetDataLength(m));
        guint64 n = g_str_has_prefix(data, "msg-") ? g_ascii_strtoull(data + 4, NULL, 10) : 0;
        if (n < 1 || n >= s)
            problem(c, "stream seq %" G_GUINT64_FORMAT " is no replay of a message published (payload %s)", s, data);
        else
            n = g_array_index(c->origin, guint64, n - 1);
        g_array_append_val(c->origin, n);
        const char *replay_of = jet_test_msg_header(m, "Jethost-Replay-Of");
        if (replay_of == NULL)
            problem(c, "stream seq %" G_GUINT64_FORMAT " has no Jethost-Replay-Of", s);
        else if (!g_hash_table_add(of, g_strdup(replay_of)))
            problem(c, "DLQ record %s replayed twice (again at stream seq %" G_GUINT64_FORMAT ")", replay_of, s);
        natsMsg_Destroy(m);
    }
    g_test_message("%s: %u replays in %u replayer runs", c->id, g_hash_table_size(of), c->replayer_runs);
    /* A DLQ stream deleted under it can leave nothing to replay. */
    if (g_hash_table_size(of) == 0 && c->f->kind != F_DLQ_RECREATED)
        problem(c, "nothing was replayed");
}

/* Whether seq s's message (or a replay of it, or its original) was acked
 * or is in the DLQ: a record the replay removed is accounted for by the
 * replay it made. */
static gboolean origin_accounted(Cell *c, const Seen *seen, GHashTable *causes, guint64 s)
{
    if (c->origin == NULL)
        return FALSE;
    guint64 n = g_array_index(c->origin, guint64, s - 1);
    for (guint64 t = 1; t <= c->origin->len && t <= c->keys->len; t++) {
        if (g_array_index(c->origin, guint64, t - 1) != n)
            continue;
        gint64 key = (gint64)t;
        if (seen[t].acks > 0 || g_hash_table_contains(causes, &key))
            return TRUE;
    }
    return FALSE;
}

static void apply_fault(Cell *c)
{
    const Workload *w = c->w;
    c->fault_start_us = g_get_monotonic_time();
    measure_fds(c);
    Host *h0 = host_of_slot(c, 0);
    switch (c->f->kind) {
    case F_KILL:
        host_kill_restart(c, 0);
        break;
    case F_KILL_IN_HANDLER: {
        Host *in = NULL;
        gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
        while (!any_inflight(c, &in)) {
            supervise(c);
            if (g_get_monotonic_time() > deadline)
                g_error("%s: seq %" G_GUINT64_FORMAT " never in a handler", c->id, c->special);
            g_usleep(5 * 1000);
        }
        c->fault_start_us = g_get_monotonic_time();
        guint slot = in->slot;
        g_subprocess_force_exit(in->proc);
        in->status = jet_test_jethost_wait(in->proc, 10000);
        in->done = TRUE;
        /* The next process finds the gate open: only the first handling is held. */
        release_all(c);
        Host *again = host_start(c, slot, NULL);
        again->supervised = TRUE;
        break;
    }
    case F_PAUSE_HOST: {
        /* Past ack_wait and claim_ttl (2 s each) and a claim round. */
        h0->paused_us = g_get_monotonic_time();
        g_subprocess_send_signal(h0->proc, SIGSTOP);
        g_usleep(4500 * 1000);
        h0->resumed_us = g_get_monotonic_time();   /* before: what starts after SIGCONT is later */
        g_subprocess_send_signal(h0->proc, SIGCONT);
        break;
    }
    case F_RELOAD: {
        h0->faster = TRUE;
        g_autofree char *text = host_config(c, h0);
        g_autofree char *file = g_strdup_printf("%s.conf", h0->name);
        g_free(jet_test_write_file(file, text));
        g_subprocess_send_signal(h0->proc, SIGHUP);
        if (!host_logged(h0, "event=reloaded", 10000))
            problem(c, "no event=reloaded within 10 s");
        break;
    }
    case F_SECOND_HOST: {
        Host *h = host_start(c, 2, NULL);
        /* It takes part, or stands by, for a while. */
        if (!host_logged(h, w->exclusive ? "event=standing-by" : "event=subscribed", 10000))
            problem(c, "the second host neither ran its binding nor stood by within 10 s");
        g_usleep(1500 * 1000);
        g_subprocess_send_signal(h->proc, SIGTERM);
        h->status = jet_test_jethost_wait(h->proc, 20000);
        h->done = TRUE;
        if (h->status != 0)
            problem(c, "the second host exited %d on SIGTERM", h->status);
        break;
    }
    case F_SERVER_RESTART:
        jet_test_server_kill(c->srv);
        g_usleep(500 * 1000);
        jet_test_server_restart(c->srv);
        reconnect(c);
        break;
    case F_SERVER_PAUSE:
        jet_test_server_pause(c->srv);
        g_usleep(3000 * 1000);
        jet_test_server_resume(c->srv);
        break;
    case F_CONN_CUT: {
        /* Every host's connection closed under it three times, at moments
         * from the seed, while the server runs on: pulls, acks and their
         * confirmations in flight are lost with the connection. */
        guint cut = 0;
        for (int i = 0; i < 3; i++) {
            for (guint k = 0; k < c->hosts->len; k++) {
                Host *h = g_ptr_array_index(c->hosts, k);
                cut += host_running(h) ? jet_test_relay_cut(h->relay) : 0;
            }
            g_usleep((gulong)g_rand_int_range(c->rng, 50, 1000) * 1000);
        }
        g_test_message("%s: %u connections cut", c->id, cut);
        if (cut == 0)
            problem(c, "the relay had no connection to cut");
        for (guint i = 0; i < c->hosts->len; i++) {
            Host *h = g_ptr_array_index(c->hosts, i);
            if (host_running(h) && !host_logged(h, "event=reconnected", 10000))
                problem(c, "h%u did not log event=reconnected within 10 s of the cuts", h->id);
        }
        break;
    }
    case F_PARTITION:
        /* The first host (an exclusive binding's holder) cut off from the
         * server past ack_wait and claim_ttl, running on meanwhile: unlike
         * a pause, its handlers are not frozen, so none may start once its
         * claim can have moved. */
        jet_test_relay_block(h0->relay, TRUE);
        g_usleep(4500 * 1000);
        jet_test_relay_block(h0->relay, FALSE);
        /* The standby took the binding over meanwhile. */
        for (guint i = 0; w->exclusive && i < c->hosts->len; i++) {
            Host *h = g_ptr_array_index(c->hosts, i);
            if (h->slot == 1 && !host_logged(h, "event=taken-over", 1000))
                problem(c, "the standby h%u did not take the binding over during the partition", h->id);
        }
        if (host_running(h0) && !host_logged(h0, "event=reconnected", 10000))
            problem(c, "h%u did not log event=reconnected within 10 s of the partition's end", h0->id);
        break;
    case F_CONSUMER_DELETED:
        delete_consumers(c);
        break;
    case F_DLQ_RECREATED:
        recreate_dlq(c);
        break;
    case F_STREAM_RECREATED:
        recreate_stream(c);
        break;
    case F_LEADER_STEPDOWN: {
        /* Every group the hosts use elects a new leader: the source
         * stream's, the consumer's, the attempt ledger's and the DLQ's. */
        const char *stream = source_stream(c);
        guint moved = jet_test_cluster_stream_stepdown(c->nc, stream);
        if (w->kind == K_DURABLE || w->kind == K_LANES)
            moved += jet_test_cluster_consumer_stepdown(c->nc, stream, CONSUMER);
        moved += jet_test_cluster_stream_stepdown(c->nc, "KV_jethost_ledger");
        moved += jet_test_cluster_stream_stepdown(c->nc, "JETHOST_DLQ");
        g_test_message("%s: %u leaders stepped down", c->id, moved);
        if (moved == 0)
            problem(c, "no leader stepped down");
        break;
    }
    case F_STORE_LOST: {
        /* The source stream's leader killed, its disk lost, and started
         * again: its replicas come back from the other two. */
        int leader = source_leader(c);
        jet_test_cluster_kill(c->cl, leader);
        jet_test_cluster_wipe_store(c->cl, leader);
        g_usleep(1000 * 1000);
        jet_test_cluster_restart(c->cl, leader);
        /* The checkers judge the hosts; a node slow to rejoin is the
         * server's part (two of three keep every group's quorum). */
        if (!jet_test_cluster_wait_ready(c->cl, 60000))
            g_test_message("%s: the cluster was not whole 60 s after node %d came back", c->id, leader);
        g_test_message("%s: node %d lost its store", c->id, leader);
        break;
    }
    case F_HUNG:
    case F_CRASHING_PLUGIN: {
        /* The fault is in the plugin from the start: it begins when the
         * host sees it (a death, or a handler reported hung). */
        gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
        while (c->restarts == 0 && !(c->f->kind == F_HUNG && any_logged(c, "event=handler-hung"))) {
            supervise(c);
            if (g_get_monotonic_time() > deadline)
                g_error("%s: the plugin's fault never showed", c->id);
            g_usleep(10 * 1000);
        }
        c->fault_start_us = g_get_monotonic_time();
        measure_fds(c);   /* the processes now running have connected */
        if (c->f->kind == F_HUNG) {
            /* A hang that ends: the handler returns 2 s after it was
             * reported (a worker's hang costs the worker until then). */
            g_usleep(2000 * 1000);
            release_all(c);
        }
        break;
    }
    }
    c->fault_end_us = g_get_monotonic_time();
}

/* --- the checkers ---------------------------------------------------------- */

static void check_lost_and_dlq(Cell *c, GArray *hist, Dlq *d, guint *lost, guint *false_dlq)
{
    g_autofree Seen *seen = tally(c, hist);
    *lost = *false_dlq = 0;
    if (c->w->kind == K_KV) {
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, c->last_rev);
        while (g_hash_table_iter_next(&it, &k, &v)) {
            guint64 rev = *(guint64 *)v;
            gint64 key = (gint64)rev;
            if (seen[rev].handled == 0 && !g_hash_table_contains(d->causes, &key)) {
                (*lost)++;
                problem(c, "key %s: its last revision %" G_GUINT64_FORMAT " was never handled", (char *)k, rev);
            }
        }
    } else {
        for (guint64 s = 1; s <= c->keys->len; s++) {
            gint64 key = (gint64)s;
            if (seen[s].acks == 0 && !g_hash_table_contains(d->causes, &key) &&
                !origin_accounted(c, seen, d->causes, s)) {
                (*lost)++;
                if (*lost <= 5)
                    problem(c, "seq %" G_GUINT64_FORMAT " neither acked nor dead-lettered (%u handlings: %u "
                            "rejects, %u retries)", s, seen[s].handled, seen[s].rejects, seen[s].retries);
            }
        }
    }
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, d->causes);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        guint64 s = (guint64)*(gint64 *)k;
        const char *cause = v;
        gboolean ok = s >= 1 && s <= c->keys->len &&
                      ((strcmp(cause, "rejected") == 0 && seen[s].rejects > 0) ||
                       (strcmp(cause, "exhausted") == 0 && seen[s].retries > 0) ||
                       (strcmp(cause, "poison") == 0 && s == c->special &&
                        (c->f->kind == F_CRASHING_PLUGIN || c->f->kind == F_HUNG)));
        if (!ok) {
            (*false_dlq)++;
            problem(c, "false dead letter: seq %" G_GUINT64_FORMAT " as %s", s, cause);
        }
    }
}

/* A forwarding workload: every message not dead-lettered is in FWD once
 * (its Nats-Msg-Id keeps a redelivery's publish out, within the
 * duplicate window), and none that was. */
static void check_forwards(Cell *c, Dlq *d, guint *lost, guint *dups)
{
    *dups = 0;
    if (!c->w->forward)
        return;
    g_autofree guint *copies = g_new0(guint, c->keys->len + 1);
    jsStreamInfo *si = stream_info(c, "FWD");
    g_assert_nonnull(si);
    guint64 first = si->State.FirstSeq, last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    for (guint64 s = first; s >= 1 && s <= last; s++) {
        natsMsg *m = stream_get(c, "FWD", s);
        if (m == NULL)
            continue;
        guint64 seq = g_ascii_strtoull(natsMsg_GetSubject(m) + strlen("fwd."), NULL, 10);
        if (c->life_ns != 0 && s > c->fwd_mark)
            seq += c->life_base;
        if (seq >= 1 && seq <= c->keys->len)
            copies[seq]++;
        natsMsg_Destroy(m);
    }
    for (guint64 s = 1; s <= c->keys->len; s++) {
        gint64 key = (gint64)s;
        gboolean dead = g_hash_table_contains(d->causes, &key);
        if (copies[s] > 1 && ++*dups <= 5)
            problem(c, "seq %" G_GUINT64_FORMAT " forwarded %u times", s, copies[s]);
        if (!dead && copies[s] == 0 && ++*lost <= 5)
            problem(c, "seq %" G_GUINT64_FORMAT " acked but never forwarded", s);
        if (dead && copies[s] > 0)
            problem(c, "seq %" G_GUINT64_FORMAT " dead-lettered and forwarded", s);
    }
}

/* The handlings of key k (the first 80), for the first order break: which
 * host handled what, when, with which verdict. */
static void show_key(Cell *c, GArray *hist, const char *k)
{
    for (guint i = 0, shown = 0; i < hist->len && shown < 80; i++) {
        const Handling *y = &g_array_index(hist, Handling, i);
        if (y->seq < 1 || y->seq > c->keys->len ||
            (c->w->kind != K_ORDERED && strcmp(g_ptr_array_index(c->keys, y->seq - 1), k) != 0))
            continue;
        g_test_message("key %s: h%u handled seq %" G_GUINT64_FORMAT " (delivery %u) at %" G_GINT64_FORMAT
                       " ms: %c", k, y->host, y->seq, y->deliveries, y->start_ns / 1000000, y->verdict);
        shown++;
    }
}

/* The non-empty lines of fx_gate's log `file`, over every process's dir. */
static GPtrArray *host_log_lines(Cell *c, const char *file)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        g_autofree char *path = g_build_filename(h->dir, file, NULL);
        g_autofree char *text = NULL;
        if (!g_file_get_contents(path, &text, NULL, NULL))
            continue;
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (guint k = 0; lines[k] != NULL; k++)
            if (lines[k][0] != '\0')
                g_ptr_array_add(out, g_strdup(lines[k]));
    }
    return out;
}

/* A workload with handler batches: the plugin was handed batches, some of
 * more than one message (fx_gate's batches.log). */
static void check_batches(Cell *c)
{
    if (strstr(c->w->binding, "batch_max") == NULL)
        return;
    g_autoptr(GPtrArray) lines = host_log_lines(c, "batches.log");
    guint largest = 0;
    for (guint k = 0; k < lines->len; k++)
        largest = MAX(largest, (guint)g_ascii_strtoull(g_ptr_array_index(lines, k), NULL, 10));
    if (lines->len == 0 || largest < 2)
        problem(c, "handle_batch() was called %u times, the largest batch %u", lines->len, largest);
}

/* A workload with pending deliveries: the plugin completed some with
 * msg_complete() accepted (fx_gate's async.log: "<seq> <delivery> <rc>"). */
static void check_async(Cell *c)
{
    if (strstr(c->w->binding, "max_in_flight") == NULL)
        return;
    g_autoptr(GPtrArray) lines = host_log_lines(c, "async.log");
    guint completed = 0;
    for (guint k = 0; k < lines->len; k++) {
        g_auto(GStrv) f = g_strsplit(g_ptr_array_index(lines, k), " ", -1);
        completed += g_strv_length(f) >= 3 && strcmp(f[2], "0") == 0;
    }
    g_test_message("pending deliveries completed %u, refused %u", completed, lines->len - completed);
    if (completed == 0)
        problem(c, "no pending delivery was completed");
}

/* Per key, first handlings in stream order. */
static guint check_order(Cell *c, GArray *hist)
{
    if (c->w->kind == K_DURABLE)
        return 0;
    g_autoptr(GHashTable) first = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GHashTable) last_of_key = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    guint breaks = 0;
    for (guint i = 0; i < hist->len; i++) {
        Handling *x = &g_array_index(hist, Handling, i);
        if (x->seq < 1 || x->seq > c->keys->len || g_hash_table_contains(first, &x->seq))
            continue;
        g_hash_table_add(first, &x->seq);
        const char *k = c->w->kind == K_ORDERED ? "" : g_ptr_array_index(c->keys, x->seq - 1);
        guint64 *last = g_hash_table_lookup(last_of_key, k);
        if (last != NULL && *last > x->seq) {
            if (++breaks <= 5)
                problem(c, "key %s: seq %" G_GUINT64_FORMAT " first handled after seq %" G_GUINT64_FORMAT, k, x->seq,
                        *last);
            if (breaks == 1)
                show_key(c, hist, k);
            continue;
        }
        if (last == NULL) {
            last = g_new(guint64, 1);
            g_hash_table_insert(last_of_key, (gpointer)k, last);
        }
        *last = x->seq;
    }
    return breaks;
}

static Host *host_by_id(Cell *c, guint id)
{
    return g_ptr_array_index(c->hosts, id);
}

/* A handling the pause froze: begun before the process could run again
 * (by then the host had passed its fence; the signal may land a moment
 * after the timestamp), and not over before the pause. */
static gboolean frozen(Host *h, const Handling *x)
{
    return h->paused_us != 0 && x->start_ns / 1000 < h->resumed_us && x->end_ns / 1000 > h->paused_us;
}

/* Handlings of two processes of an exclusive binding at once, but for one
 * its process's pause froze. */
static guint check_overlaps(Cell *c, GArray *hist)
{
    if (!c->w->exclusive)
        return 0;
    guint overlaps = 0;
    for (guint i = 0; i < hist->len; i++) {
        Handling *x = &g_array_index(hist, Handling, i);
        Host *hx = host_by_id(c, x->host);
        if (frozen(hx, x))
            continue;
        for (guint j = i + 1; j < hist->len; j++) {
            Handling *y = &g_array_index(hist, Handling, j);
            if (y->start_ns >= x->end_ns)
                break;
            if (y->host == x->host)
                continue;
            Host *hy = host_by_id(c, y->host);
            if (frozen(hy, y))
                continue;
            if (++overlaps <= 5)
                problem(c, "h%u handled seq %" G_GUINT64_FORMAT " while h%u handled seq %" G_GUINT64_FORMAT, y->host,
                        y->seq, x->host, x->seq);
        }
    }
    return overlaps;
}

/* Milliseconds from the fault's end to the first handling that started
 * after it; -1 when none did (nothing was left). */
/* From the fault's end, or from when the stream took writes again if it
 * refused the workload's for longer (a node back without its store: the
 * cluster's time, not the host's), to the first handling after. */
static gint64 recovery_ms(Cell *c, GArray *hist)
{
    gint64 from = MAX(c->fault_end_us, c->writes_back_us);
    for (guint i = 0; i < hist->len; i++) {
        Handling *x = &g_array_index(hist, Handling, i);
        if (x->start_ns / 1000 >= from)
            return (x->start_ns / 1000 - from) / 1000;
    }
    return -1;
}

/* Descriptors of a process that lived through the fault, back where they were. */
static void check_fds(Cell *c)
{
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        if (h->fds < 0 || !host_running(h))
            continue;
        int now = host_fds(h);
        for (int tries = 0; now > h->fds + 2 && tries < 50; tries++) {
            g_usleep(100 * 1000);
            now = host_fds(h);
        }
        if (now > h->fds + 2)
            problem(c, "h%u holds %d descriptors, %d before the fault", h->id, now, h->fds);
        /* What a fault leaves behind, not the allocator's own growth: twice
         * the resident set, and 16 MiB of room. */
        long rss = host_rss_kib(h);
        if (h->rss_kib > 0 && rss > 2 * h->rss_kib + 16 * 1024)
            problem(c, "h%u resident %ld KiB, %ld before the fault", h->id, rss, h->rss_kib);
    }
}

/* --- a cell ---------------------------------------------------------------- */

typedef struct {
    const Workload *w;
    const Fault *f;
} CellSpec;

static guint64 cell_seed(guint run)
{
    const char *env = g_getenv("JET_FAULTS_SEED");
    if (env != NULL)
        return g_ascii_strtoull(env, NULL, 10) + run;
    return (guint64)g_get_real_time();
}

static void write_report(Cell *c, guint published, guint handled, guint lost, guint false_dlq, guint breaks,
                         guint overlaps, guint dups, gint64 rec, guint dead)
{
    g_autofree char *rec_text = rec >= 0 ? g_strdup_printf("%" G_GINT64_FORMAT, rec) : g_strdup("-");
    g_autofree char *row = g_strdup_printf(
        "| %s | %s | %u | %u | %u | %u | %u | %u | %u | %u | %s | %u | %u | %" G_GUINT64_FORMAT " |\n", c->w->name,
        c->f->name, published, handled, lost, dead, false_dlq, breaks, overlaps, dups, rec_text, c->restarts,
        c->unexpected_exits, c->seed);
    g_test_message("%s", row);
    const char *report = g_getenv("JET_FAULTS_REPORT");
    if (report != NULL) {
        FILE *f = fopen(report, "a");
        if (f != NULL) {
            fputs(row, f);
            fclose(f);
        }
    }
}

/* The end of each process's log, for a cell that failed (all of it with
 * JET_FAULTS_SHOW=1). */
static void show_logs(Cell *c)
{
    gboolean all = g_getenv("JET_FAULTS_SHOW") != NULL;
    const char *stream = c->w->kind == K_KV ? "KV_" BUCKET : STREAM;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, c->js, stream, NULL, NULL) == NATS_OK) {
        g_test_message("stream %s: first seq %" G_GUINT64_FORMAT ", last %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                       " messages", stream, si->State.FirstSeq, si->State.LastSeq, si->State.Msgs);
        jsStreamInfo_Destroy(si);
    }
    jsConsumerNamesList *names = NULL;
    if (js_ConsumerNames(&names, c->js, stream, NULL, NULL) == NATS_OK) {
        for (int i = 0; i < names->Count; i++) {
            jsConsumerInfo *ci = NULL;
            if (js_GetConsumerInfo(&ci, c->js, stream, names->List[i], NULL, NULL) != NATS_OK)
                continue;
            g_test_message("consumer %s: delivered %" G_GUINT64_FORMAT ", ack floor %" G_GUINT64_FORMAT
                           ", pending %" G_GUINT64_FORMAT ", ack pending %" G_GINT64_FORMAT
                           ", waiting %" G_GINT64_FORMAT, ci->Name, ci->Delivered.Stream, ci->AckFloor.Stream, ci->NumPending, ci->NumAckPending,
                           ci->NumWaiting);
            jsConsumerInfo_Destroy(ci);
        }
        jsConsumerNamesList_Destroy(names);
    }
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        g_autofree char *text = NULL;
        if (!g_file_get_contents(h->errlog, &text, NULL, NULL))
            continue;
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        guint n = g_strv_length(lines), from = all || n < 25 ? 0 : n - 25;
        g_autofree char *tail = g_strjoinv("\n", lines + from);
        g_test_message("--- h%u (%s), from line %u:\n%s", h->id, h->name, from + 1, tail);
    }
}

static void run_cell(const CellSpec *spec, guint run)
{
    gboolean longer = g_getenv("JET_FAULTS_LONG") != NULL;
    Cell cell = { .w = spec->w, .f = spec->f }, *c = &cell;
    c->seed = cell_seed(run);
    c->rng = g_rand_new_with_seed((guint32)(c->seed ^ (c->seed >> 32)));
    c->id = g_strdup_printf("%s/%s", c->w->name, c->f->name);
    g_test_message("%s: seed %" G_GUINT64_FORMAT "; alone: %sJET_FAULTS_SEED=%" G_GUINT64_FORMAT
                   " tests/live/faults.test -p /faults/%s", c->id, c->seed, c->f->cluster ? "JET_FAULTS_CLUSTER=1 " : "",
                   c->seed, c->id);
    c->problems = g_string_new(NULL);
    c->hosts = g_ptr_array_new_with_free_func(host_free);
    c->keys = g_ptr_array_new_with_free_func(g_free);
    c->last_rev = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    if (spec->w->replay)
        c->origin = g_array_new(FALSE, FALSE, sizeof(guint64));
    c->n = longer ? 2000 : 300;
    c->after = c->n / 3;
    if (c->f->cluster) {
        c->cl = jet_test_cluster_start();
        c->js = jet_test_cluster_js_open(c->cl, &c->nc);
    } else {
        c->srv = jet_test_server_start();
        c->js = jet_test_js_open(jet_test_server_url(c->srv), &c->nc);
    }
    c->dir = g_strdup_printf("%s/%s-%s-%u", jet_test_private_dir(), c->w->name, c->f->name, run);
    g_assert_cmpint(g_mkdir_with_parents(c->dir, 0700), ==, 0);
    c->plugin = jet_test_plugin_copy("fx_gate");
    make_source(c);
    if (c->w->forward && c->cl != NULL)
        jet_test_cluster_stream_create(c->js, "FWD", "fwd.>", 3, 0);
    else if (c->w->forward)
        jet_test_stream_create(c->js, "FWD", "fwd.>");
    if (c->f->kind == F_DLQ_RECREATED)
        spy_captures(c);
    publish(c, c->n, FALSE);
    /* The message the fault acts on, in the first half of the backlog; on a
     * KV watch, a key's value (the watch begins with the last of each). */
    c->special = (guint64)g_rand_int_range(c->rng, (gint32)c->n / 4, (gint32)c->n / 2);
    if (c->w->kind == K_KV)
        c->special = *(guint64 *)g_hash_table_lookup(c->last_rev, g_ptr_array_index(c->keys, c->special - 1));
    g_autofree char *plugin_fault = NULL;
    switch (c->f->kind) {
    case F_KILL_IN_HANDLER:
        plugin_fault = g_strdup_printf("option.block_seq = %" G_GUINT64_FORMAT "\n", c->special);
        break;
    case F_HUNG:
        plugin_fault = g_strdup_printf("option.block_seq = %" G_GUINT64_FORMAT "\nhandler_timeout = 1s\n%s",
                                       c->special, c->w->kind == K_ORDERED || c->w->kind == K_KV
                                                       ? "exit_on_any_hung = true\n" : "");
        break;
    case F_CRASHING_PLUGIN:
        plugin_fault = g_strdup_printf("option.abort_seq = %" G_GUINT64_FORMAT "\n", c->special);
        break;
    default:
        c->special = 0;
        break;
    }
    for (guint slot = 0; slot < c->w->hosts; slot++) {
        Host *h = host_start(c, slot, plugin_fault);
        h->supervised = TRUE;
        /* The first holds the claim before the second starts. */
        if (slot == 0 && c->w->hosts > 1)
            g_assert_true(host_logged(h, "event=subscribed", 20000));
    }
    if (c->f->kind != F_HUNG && c->f->kind != F_CRASHING_PLUGIN && c->f->kind != F_KILL_IN_HANDLER)
    {
        /* A KV watch begins with one value per key. */
        guint first = c->w->kind == K_KV ? g_hash_table_size(c->last_rev) : c->n;
        wait_handled(c, (guint)g_rand_int_range(c->rng, (gint32)first / 5, (gint32)first / 2));
    }
    GSubprocess *replayer = NULL;
    if (c->w->replay) {
        /* The operator replays what the DLQ holds while the fault happens. */
        gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
        while (jet_test_stream_msgs(c->js, "JETHOST_DLQ") < 3 && g_get_monotonic_time() < deadline) {
            supervise(c);
            g_usleep(20 * 1000);
        }
        replayer = replayer_start(c);
    }
    apply_fault(c);
    if (replayer != NULL) {
        if (c->f->kind == F_KILL || c->f->kind == F_KILL_IN_HANDLER) {
            /* The replayer dies too, mid-run, and is run again. */
            g_subprocess_force_exit(replayer);
        }
        replayer_finish(c, replayer);
        absorb_replays(c);
    }
    publish(c, c->after, TRUE);
    origin_fill(c);
    gboolean done = wait_done(c, longer ? 300000 : 90000);
    release_all(c);
    if (!done) {
        problem(c, "not every message accounted for after the fault");
        show_logs(c);
    }
    check_fds(c);
    for (guint i = 0; i < c->hosts->len; i++) {
        Host *h = g_ptr_array_index(c->hosts, i);
        if (!host_running(h))
            continue;
        g_subprocess_send_signal(h->proc, SIGTERM);
        h->status = jet_test_jethost_wait(h->proc, 20000);
        h->done = TRUE;
        if (h->status != 0)
            problem(c, "h%u exited %d on SIGTERM", h->id, h->status);
    }
    if (c->nc == NULL || natsConnection_IsClosed(c->nc))
        reconnect(c);
    g_autoptr(GArray) hist = read_history(c);
    Dlq d = { 0 };
    read_dlq(c, &d);
    if (c->spied != NULL) {
        /* The records the deleted stream held count as dead letters. */
        natsSubscription_Destroy(c->dlq_spy);
        add_spied(c, d.causes);
        g_hash_table_destroy(c->spied);
        g_mutex_clear(&c->spy_lock);
    }
    guint lost, false_dlq;
    check_lost_and_dlq(c, hist, &d, &lost, &false_dlq);
    guint dups = 0;
    check_forwards(c, &d, &lost, &dups);
    guint breaks = check_order(c, hist);
    guint overlaps = check_overlaps(c, hist);
    check_batches(c);
    check_async(c);
    gint64 rec = recovery_ms(c, hist);
    if (c->f->recovery_ms > 0 && rec > (gint64)c->f->recovery_ms)
        problem(c, "recovery took %" G_GINT64_FORMAT " ms, more than %u", rec, c->f->recovery_ms);
    g_autofree Seen *seen = tally(c, hist);
    guint handled = 0;
    for (guint s = 1; s <= c->keys->len; s++)
        handled += seen[s].handled > 0;
    write_report(c, c->keys->len, handled, lost, false_dlq, breaks, overlaps, dups, rec, g_hash_table_size(d.causes));
    if (c->problems->len > 0)
        show_logs(c);
    if (c->problems->len > 0)
        g_test_fail_printf("%s (seed %" G_GUINT64_FORMAT "): %s; alone: %sJET_FAULTS_SEED=%" G_GUINT64_FORMAT
                           " tests/live/faults.test -p /faults/%s", c->id, c->seed, c->problems->str,
                           c->f->cluster ? "JET_FAULTS_CLUSTER=1 " : "", c->seed, c->id);
    g_hash_table_destroy(d.causes);
    if (c->kv != NULL)
        kvStore_Destroy(c->kv);
    jet_test_js_close(c->nc, c->js);
    jet_test_server_free(c->srv);
    jet_test_cluster_free(c->cl);
    g_ptr_array_unref(c->hosts);
    g_ptr_array_unref(c->keys);
    g_hash_table_destroy(c->last_rev);
    if (c->origin != NULL)
        g_array_unref(c->origin);
    g_free(c->replay_log);
    g_string_free(c->problems, TRUE);
    g_rand_free(c->rng);
    g_free(c->dir);
    g_free(c->plugin);
    g_free(c->id);
}

static void test_cell(gconstpointer data)
{
    const char *env = g_getenv("JET_FAULTS_SEEDS");
    guint runs = env != NULL ? (guint)g_ascii_strtoull(env, NULL, 10) : 1;
    for (guint run = 0; run < MAX(runs, 1); run++)
        run_cell(data, run);
}

int main(int argc, char **argv)
{
    /* One cell's failure does not hide the others': the whole matrix runs. */
    char **args = g_new0(char *, argc + 2);
    for (int i = 0; i < argc; i++)
        args[i] = argv[i];
    args[argc++] = (char *)"--keep-going";
    argv = args;
    g_test_init(&argc, &argv, NULL);
    static CellSpec specs[G_N_ELEMENTS(workloads) * G_N_ELEMENTS(faults)];
    guint n = 0;
    /* make check runs two halves side by side: part 1 the workloads at
     * even places, part 2 the others (unset or 0: all). */
    const char *part_env = g_getenv("JET_FAULTS_PART");
    /* JET_FAULTS_PART=cluster: the cells on a three-node cluster alone,
     * one after the other (make check's third program).  In the halves,
     * three more servers per half beside the suite's own clusters made a
     * cluster test elect no meta leader in 60 s (docs/reliability.md). */
    gboolean only_cluster = g_strcmp0(part_env, "cluster") == 0;
    guint part = part_env != NULL && !only_cluster ? (guint)g_ascii_strtoull(part_env, NULL, 10) : 0;
    /* Elsewhere the cluster cells run with `make faults` (JET_FAULTS_LONG)
     * or JET_FAULTS_CLUSTER=1, never in a half (their third program has
     * them). */
    gboolean cluster = only_cluster || (part == 0 && (g_getenv("JET_FAULTS_LONG") != NULL ||
                                                      g_strcmp0(g_getenv("JET_FAULTS_CLUSTER"), "1") == 0));
    for (guint i = 0; i < G_N_ELEMENTS(workloads); i++)
        for (guint j = 0; j < G_N_ELEMENTS(faults); j++) {
            if (part > 0 && i % 2 != part - 1)
                continue;
            if (only_cluster && !faults[j].cluster)
                continue;
            /* The stream deleted under a replay takes the replays made so
             * far with it, after their records were removed: the operator's
             * loss, not the host's (docs/reliability.md). */
            if (workloads[i].replay && faults[j].kind == F_STREAM_RECREATED)
                continue;
            if (faults[j].cluster && !cluster)
                continue;
            specs[n] = (CellSpec){ &workloads[i], &faults[j] };
            g_autofree char *path = g_strdup_printf("/faults/%s/%s", workloads[i].name, faults[j].name);
            g_test_add_data_func(path, &specs[n], test_cell);
            n++;
        }
    return g_test_run();
}
