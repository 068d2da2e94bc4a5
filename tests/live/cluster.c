/* The host on a three-node cluster under faults (docs/reliability.md).
 *
 * /cluster/fixture checks the fixture of tests/cluster.h itself: leaders
 * found by name, step-downs move them, a paused, killed or stopped node and
 * its restart on the same ports and store.
 *
 * /cluster/faults runs two `jethost run` with [host] replicas = 3 (so the
 * DLQ, ledger and advisory streams they create are R3) on one durable
 * binding of an R3 stream, publishes a batch, and
 * injects one fault per run while the hosts work.  fx_gate sorts messages
 * by a seeded hash of their stream seq: rejected, retried at every delivery
 * (exhausted after max_attempts), retried once, acked; the test computes the
 * same classes.  Per run it asserts: nothing lost (every message acked after
 * its handler said ack, or dead-lettered), the DLQ holds exactly one record
 * per rejected or exhausted message and nothing else, no Term advisory, no
 * stranded capture, and progress after the fault.  Each run prints one row.
 *
 * /cluster/breaker: two hosts, floor_age 2 s in observe mode, a floor
 * pinned by a message failing for ever and more failing messages above it;
 * the ledger's leader and the consumer's step down and the ledger leader's
 * node is killed while stall windows pass.  Every window has one key and
 * one would-quarantine line, by the host the key names; claims go on after.
 *
 * /cluster/exclusive: two hosts on an exclusive binding; the claim bucket's
 * leader steps down and the holder's node is killed.  No two handlings of
 * different hosts overlap in time, nothing is lost, the standby handles
 * only after taking the claim.
 *
 * JET_RELIABILITY=long (make reliability) runs the long matrix: more
 * messages and every fault; JET_RELIABILITY_SEED repeats a run's choices,
 * JET_RELIABILITY_FAULTS=NAME,... runs only those faults and
 * JET_RELIABILITY_KEEP=DIR keeps the hosts' logs of each fault run. */
#define _GNU_SOURCE
#include "cluster.h"
#include "msg_payload.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MAX_ATTEMPTS 3
#define LEDGER_STREAM "KV_jethost_ledger"
#define REJECT_PCT 3
#define FAIL_PCT 2
#define FLAKY_PCT 10

/* ---- the fixture itself ------------------------------------------------- */

typedef struct {
    JetTestCluster *c;
    jsCtx *js;
    const char *stream;
    int not;   /* a leader other than this one */
} LeaderWait;

static gboolean stream_leader_moved(gpointer data)
{
    LeaderWait *w = data;
    int l = jet_test_cluster_stream_leader(w->c, w->js, w->stream);
    return l >= 0 && l != w->not;
}

static gboolean consumer_leader_moved(gpointer data)
{
    LeaderWait *w = data;
    int l = jet_test_cluster_consumer_leader(w->c, w->js, w->stream, "c");
    return l >= 0 && l != w->not;
}

static void test_fixture(void)
{
    g_autoptr(JetTestCluster) c = jet_test_cluster_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_cluster_js_open(c, &nc);
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++) {
        g_assert_nonnull(jet_test_cluster_url(c, i));
        g_assert_cmpint(jet_test_cluster_index(c, jet_test_cluster_name(c, i)), ==, i);
    }
    g_assert_cmpint(jet_test_cluster_index(c, "nowhere"), ==, -1);
    g_assert_cmpint(jet_test_cluster_connected(c, nc), >=, 0);

    jet_test_cluster_stream_create(js, "FX", "fx.>", 3, 0);
    jet_test_publish_n(js, "fx.a", 10);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "c";
    cc.AckPolicy = js_AckExplicit;
    jsConsumerInfo *ci = NULL;
    g_assert_cmpint(js_AddConsumer(&ci, js, "FX", &cc, NULL, NULL), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);

    /* A stream's leader, and a new one after a step-down. */
    int sl = jet_test_cluster_stream_leader(c, js, "FX");
    g_assert_cmpint(sl, >=, 0);
    g_assert_true(jet_test_cluster_stream_stepdown(nc, "FX"));
    LeaderWait w = { c, js, "FX", sl };
    g_assert_true(jet_test_wait_until(stream_leader_moved, &w, 20000));
    int cl = jet_test_cluster_consumer_leader(c, js, "FX", "c");
    g_assert_cmpint(cl, >=, 0);
    g_assert_true(jet_test_cluster_consumer_stepdown(nc, "FX", "c"));
    w.not = cl;
    g_assert_true(jet_test_wait_until(consumer_leader_moved, &w, 20000));
    g_assert_false(jet_test_cluster_stream_stepdown(nc, "NOSUCH"));

    /* The stream leader killed: another node leads, the stream keeps its
     * messages; restarted on its ports, the node answers again. */
    sl = jet_test_cluster_stream_leader(c, js, "FX");
    jet_test_cluster_kill(c, sl);
    g_assert_false(jet_test_cluster_running(c, sl));
    w.not = sl;
    g_assert_true(jet_test_wait_until(stream_leader_moved, &w, 30000));
    g_assert_cmpuint(jet_test_stream_msgs(js, "FX"), ==, 10);
    g_autofree char *url_before = g_strdup(jet_test_cluster_url(c, sl));
    jet_test_cluster_restart(c, sl);
    g_assert_cmpstr(jet_test_cluster_url(c, sl), ==, url_before);
    g_assert_true(jet_test_cluster_wait_ready(c, 60000));

    /* A paused node does not answer, and does again once resumed. */
    int p = (jet_test_cluster_stream_leader(c, js, "FX") + 1) % JET_TEST_CLUSTER_NODES;
    jet_test_cluster_pause(c, p);
    natsConnection *pc = NULL;
    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, jet_test_cluster_url(c, p));
    natsOptions_SetTimeout(o, 300);
    natsOptions_SetAllowReconnect(o, false);
    g_assert_cmpint(natsConnection_Connect(&pc, o), !=, NATS_OK);
    jet_test_cluster_resume(c, p);
    g_assert_cmpint(natsConnection_Connect(&pc, o), ==, NATS_OK);
    natsConnection_Destroy(pc);
    natsOptions_Destroy(o);

    /* Two nodes stopped: no quorum, so no publish is stored; both back, it is. */
    int a = 0, b = 1;
    jet_test_cluster_stop(c, a);
    jet_test_cluster_stop(c, b);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 1000;
    g_assert_cmpint(js_Publish(NULL, js, "fx.a", "q", 1, &po, NULL), !=, NATS_OK);
    jet_test_cluster_restart(c, a);
    jet_test_cluster_restart(c, b);
    g_assert_true(jet_test_cluster_wait_ready(c, 60000));
    w.not = -1;
    g_assert_true(jet_test_wait_until(stream_leader_moved, &w, 30000));
    po.MaxWait = 10000;
    g_assert_cmpint(js_Publish(NULL, js, "fx.a", "q", 1, &po, NULL), ==, NATS_OK);
    /* The timed-out publish may have been stored once quorum came back. */
    g_assert_cmpuint(jet_test_stream_msgs(js, "FX"), >=, 11);
    jet_test_js_close(nc, js);
}

/* ---- the fault runs ----------------------------------------------------- */

/* A stream's configured replicas; -1 when its info cannot be read. */
/* A stream's configured replicas, asked until it answers (up to 60 s):
 * right after a node's restart its info request can time out while the
 * stream elects a leader, which says nothing about its configuration.
 * -1: it never answered. */
static int stream_replicas(jsCtx *js, const char *name)
{
    gint64 until = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    for (;;) {
        jsStreamInfo *si = NULL;
        jsOptions o;
        jsOptions_Init(&o);
        o.Wait = 5000;
        if (js_GetStreamInfo(&si, js, name, &o, NULL) == NATS_OK) {
            int n = (int)si->Config->Replicas;
            jsStreamInfo_Destroy(si);
            return n;
        }
        if (g_get_monotonic_time() >= until)
            return -1;
        g_usleep(250 * 1000);
    }
}

typedef enum {
    F_STREAM_STEPDOWN,
    F_CONSUMER_STEPDOWN,
    F_PAUSE_LEADER,
    F_KILL_FOLLOWER,
    F_KILL_HOST_NODE,
    F_KILL_BOTH_HOSTS_NODE,
    F_QUORUM_LOSS,
    F_KILL_DLQ_LEADER,
    F_KILL_HOST_3X,
    F_LEADER_STORE_LOST,
    F_RANDOM,
    F_COUNT
} Fault;

static const char *const fault_names[F_COUNT] = {
    "stream-leader-stepdown", "consumer-leader-stepdown", "pause-stream-leader", "kill-follower-restart",
    "kill-host-node",         "kill-both-hosts-node",     "quorum-loss",         "kill-dlq-leader",
    "kill-host-3x",           "leader-store-lost",        "random-all",
};

typedef struct {
    gboolean lng;
    guint n;                 /* messages a run */
    guint pause_s, quorum_s;
    guint64 seed;
} Mode;

typedef struct {
    const char *fault;
    guint published, handled, lost, dups, dead, expected_dead, dlq_doubles, other_causes;
    guint stranded, uncertain, terms;
    gint64 longest_gap_ms, recovery_ms;
} Row;

/* Term advisories by stream name, counted for the whole test. */
typedef struct {
    GMutex lock;
    GHashTable *by_stream;
} Terms;

static void on_term(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    Terms *t = closure;
    /* $JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.<stream>.<consumer> */
    g_auto(GStrv) tok = g_strsplit(natsMsg_GetSubject(m), ".", -1);
    if (g_strv_length(tok) >= 7) {
        g_mutex_lock(&t->lock);
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(t->by_stream, tok[5]));
        g_hash_table_insert(t->by_stream, g_strdup(tok[5]), GUINT_TO_POINTER(n + 1));
        g_mutex_unlock(&t->lock);
    }
    natsMsg_Destroy(m);
}

static guint terms_of(Terms *t, const char *stream)
{
    g_mutex_lock(&t->lock);
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(t->by_stream, stream));
    g_mutex_unlock(&t->lock);
    return n;
}

typedef struct {
    Terms *t;
    const char *stream;
} TermWait;

static gboolean term_seen(gpointer data)
{
    TermWait *w = data;
    return terms_of(w->t, w->stream) > 0;
}

/* fx_gate's class of a stream seq (tests/fixtures/fx_gate.c, class_verdict). */
static guint64 mix(guint64 x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

enum { C_REJECT, C_FAIL, C_OK };

static int seq_class(guint64 seed, guint64 seq)
{
    guint64 k = mix(mix(seed) ^ seq) % 100;
    return k < REJECT_PCT ? C_REJECT : k < REJECT_PCT + FAIL_PCT ? C_FAIL : C_OK;
}

/* The server's view of progress: messages not yet acked (pending plus ack
 * pending), sampled every 100 ms while a run lasts. */
typedef struct {
    jsCtx *js;
    const char *stream;
    volatile gint stop;
    GMutex lock;
    gint64 last_change;     /* when the count last fell */
    gint64 longest_gap;     /* us */
    gint64 fault_at;        /* 0 until the fault */
    gint64 first_after;     /* first fall after the fault, 0 until then */
    gint64 remaining;
    gint64 remaining_at_fault;   /* the last sample before the fault (-1: none yet) */
    guint answered_after;        /* samples answered after the fault */
    GThread *thread;
} Progress;

/* One sample of what is left; last: the previous sample's (-1: none).
 * FALSE when no answer came. */
static gboolean progress_sample(Progress *p, gint64 *last)
{
    jsConsumerInfo *ci = NULL;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = 500;
    if (js_GetConsumerInfo(&ci, p->js, p->stream, "c", &o, NULL) != NATS_OK)
        return FALSE;
    gint64 rem = (gint64)(ci->NumPending + ci->NumAckPending);
    jsConsumerInfo_Destroy(ci);
    gint64 now = g_get_monotonic_time();
    g_mutex_lock(&p->lock);
    if (p->fault_at > 0)
        p->answered_after++;
    if (*last < 0 || rem < *last) {
        if (*last >= 0 && now - p->last_change > p->longest_gap)
            p->longest_gap = now - p->last_change;
        p->last_change = now;
        if (p->fault_at > 0 && p->first_after == 0 && *last >= 0)
            p->first_after = now;
    } else if (rem == 0) {
        p->last_change = now;   /* done: idle is not a stall */
    }
    p->remaining = rem;
    g_mutex_unlock(&p->lock);
    *last = rem;
    return TRUE;
}

static gpointer progress_run(gpointer data)
{
    Progress *p = data;
    gint64 last = -1;
    while (!g_atomic_int_get(&p->stop)) {
        progress_sample(p, &last);
        g_usleep(100000);
    }
    /* Once more, until an answer comes (up to 10 s): the run can end while
     * no sample gets one (a paused leader, a cluster still electing on a
     * loaded machine), and its progress must not go unseen. */
    for (int i = 0; i < 20 && !progress_sample(p, &last); i++)
        g_usleep(G_USEC_PER_SEC / 2);
    return NULL;
}

static void progress_fault(Progress *p)
{
    g_mutex_lock(&p->lock);
    p->fault_at = g_get_monotonic_time();
    p->remaining_at_fault = p->remaining;
    g_mutex_unlock(&p->lock);
}

/* Handlings so far, from every host's fx_gate log of a run. */
static guint handled_lines(const char *dir)
{
    guint n = 0;
    for (int h = 0; h < 2; h++) {
        g_autofree char *path = g_strdup_printf("%s/h%d/handled.log", dir, h);
        g_autofree char *text = NULL;
        if (jet_test_read_lines(path, &text))
            for (const char *q = text; *q; q++)
                n += *q == '\n';
    }
    return n;
}

typedef struct {
    const char *dir;
    guint want;
} LinesWait;

static gboolean lines_reached(gpointer data)
{
    LinesWait *w = data;
    return handled_lines(w->dir) >= w->want;
}

/* Waits for want more handlings than now (progress), at most timeout_ms. */
static gboolean wait_more(const char *dir, guint more, guint timeout_ms)
{
    LinesWait w = { dir, handled_lines(dir) + more };
    return jet_test_wait_until(lines_reached, &w, timeout_ms);
}

typedef struct {
    JetTestCluster *c;
    jsCtx *js;
    natsConnection *nc;
    Terms *terms;
    Mode mode;
    GRand *rng;
    guint run;
} World;

typedef struct {
    World *w;
    char *dir, *stream, *binding, *plugin;
    int node[2];            /* the node each host's config names */
    GSubprocess *host[2];
    const char *log[2];     /* each host's current stderr log */
    GPtrArray *logs;        /* every stderr log of the run */
    guint spawns;
    guint sleep_ms;         /* fx_gate's time a message */
} Run;

static void host_spawn(Run *r, int h)
{
    g_autofree char *hdir = g_strdup_printf("%s/h%d", r->dir, h);
    g_mkdir_with_parents(hdir, 0700);
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nname = %s-h%d\ndrain_timeout = 5s\nreplicas = 3\n"
        "[binding %s]\nplugin = %s\nstream = %s\nconsumer = c\nworkers = 2\nbatch = 20\nack_wait = 2s\n"
        "idle_heartbeat = 500ms\nexpires = 2s\nmax_attempts = %d\nrungs = 100ms\n"
        "option.dir = %s\noption.sleep = %ums\noption.random_seed = %" G_GUINT64_FORMAT "\n"
        "option.reject_percent = %d\noption.fail_percent = %d\noption.flaky_percent = %d\n",
        jet_test_cluster_url(r->w->c, r->node[h]), r->binding, h, r->binding, r->plugin, r->stream, MAX_ATTEMPTS,
        hdir, r->sleep_ms, r->w->mode.seed, REJECT_PCT, FAIL_PCT, FLAKY_PCT);
    g_autofree char *name = g_strdup_printf("%s-h%d-%u", r->binding, h, ++r->spawns);
    char *errlog = NULL;
    r->host[h] = jet_test_jethost_spawn_config(name, text, &errlog);
    g_ptr_array_add(r->logs, errlog);
    r->log[h] = errlog;
}

static void host_kill(Run *r, int h)
{
    g_subprocess_force_exit(r->host[h]);
    g_subprocess_wait(r->host[h], NULL, NULL);
    g_clear_object(&r->host[h]);
}

typedef struct {
    jsCtx *js;
    const char *stream;
    guint64 want;
} DoneWait;

static gboolean run_done(gpointer data)
{
    DoneWait *d = data;
    JetTestFloorWait fw = { d->js, d->stream, "c", d->want };
    return jet_test_floor_reached(&fw);
}

/* Kills node i, waits for progress (or secs), restarts it. */
static void kill_and_restart(Run *r, int i, guint secs)
{
    jet_test_cluster_kill(r->w->c, i);
    g_usleep((gulong)secs * G_USEC_PER_SEC);
    jet_test_cluster_restart(r->w->c, i);
}

static int other_node(GRand *rng, int not1, int not2)
{
    for (;;) {
        int i = g_rand_int_range(rng, 0, JET_TEST_CLUSTER_NODES);
        if (i != not1 && i != not2)
            return i;
    }
}

static void inject(Run *r, Fault f, Progress *prog)
{
    World *w = r->w;
    JetTestCluster *c = w->c;
    LeaderWait lw = { c, w->js, r->stream, -1 };
    g_assert_true(jet_test_wait_until(stream_leader_moved, &lw, 30000));
    int sl = jet_test_cluster_stream_leader(c, w->js, r->stream);
    g_assert_cmpint(sl, >=, 0);
    g_test_message("%s: stream leader %s, hosts on %s and %s", fault_names[f], jet_test_cluster_name(c, sl),
                   jet_test_cluster_name(c, r->node[0]), jet_test_cluster_name(c, r->node[1]));
    progress_fault(prog);
    switch (f) {
    case F_STREAM_STEPDOWN:
        g_assert_true(jet_test_cluster_stream_stepdown(w->nc, r->stream));
        break;
    case F_CONSUMER_STEPDOWN:
        g_assert_true(jet_test_cluster_consumer_stepdown(w->nc, r->stream, "c"));
        break;
    case F_PAUSE_LEADER:
        jet_test_cluster_pause(c, sl);
        g_usleep((gulong)w->mode.pause_s * G_USEC_PER_SEC);
        jet_test_cluster_resume(c, sl);
        break;
    case F_KILL_FOLLOWER:
        kill_and_restart(r, other_node(w->rng, sl, -1), 3);
        break;
    case F_KILL_HOST_NODE:
    case F_KILL_BOTH_HOSTS_NODE:
        kill_and_restart(r, r->node[0], 3);
        break;
    case F_QUORUM_LOSS: {
        int a = other_node(w->rng, -1, -1), b = other_node(w->rng, a, -1);
        jet_test_cluster_stop(c, a);
        jet_test_cluster_stop(c, b);
        g_usleep((gulong)w->mode.quorum_s * G_USEC_PER_SEC);
        jet_test_cluster_restart(c, a);
        jet_test_cluster_restart(c, b);
        break;
    }
    case F_KILL_DLQ_LEADER: {
        int dl = jet_test_cluster_stream_leader(c, w->js, "JETHOST_DLQ");
        g_assert_cmpint(dl, >=, 0);
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();
        g_autofree char *at = g_date_time_format(now, "%H:%M:%S.%f");
        int cl = jet_test_cluster_consumer_leader(c, w->js, r->stream, "c");
        int ll = jet_test_cluster_stream_leader(c, w->js, LEDGER_STREAM);
        g_test_message("DLQ leader %s killed at %s UTC (consumer leader %s, ledger leader %s)",
                       jet_test_cluster_name(c, dl), at, cl >= 0 ? jet_test_cluster_name(c, cl) : "?",
                       ll >= 0 ? jet_test_cluster_name(c, ll) : "?");
        /* How long the cluster itself takes to elect new leaders: what the
         * hosts' stall is compared with. */
        gint64 k0 = g_get_monotonic_time();
        jet_test_cluster_kill(c, dl);
        LeaderWait dw = { c, w->js, "JETHOST_DLQ", dl };
        gboolean dlq_moved = jet_test_wait_until(stream_leader_moved, &dw, 30000);
        gint64 dlq_ms = (g_get_monotonic_time() - k0) / 1000;
        gint64 cons_ms = -1;
        if (cl == dl) {
            LeaderWait cw = { c, w->js, r->stream, dl };
            if (jet_test_wait_until(consumer_leader_moved, &cw, 30000))
                cons_ms = (g_get_monotonic_time() - k0) / 1000;
        }
        g_test_message("DLQ stream leader %s %" G_GINT64_FORMAT " ms after the kill; consumer leader (when it was "
                       "there too) %" G_GINT64_FORMAT " ms", dlq_moved ? "elected" : "NOT elected", dlq_ms, cons_ms);
        gint64 left = 3 * G_USEC_PER_SEC - (g_get_monotonic_time() - k0);
        if (left > 0)
            g_usleep((gulong)left);
        jet_test_cluster_restart(c, dl);
        break;
    }
    case F_KILL_HOST_3X:
        for (int k = 0; k < 3; k++) {
            host_kill(r, 0);
            g_assert_true(wait_more(r->dir, 20, 60000));
            host_spawn(r, 0);
            g_assert_true(wait_more(r->dir, 50, 60000));
            g_test_message("host h0 killed and restarted (%d of 3)", k + 1);
        }
        break;
    case F_LEADER_STORE_LOST:
        /* The stream leader's node killed and started again with an empty
         * store, as after a lost disk: its replicas come back from its peers
         * (R3), and the hosts connected to it reconnect. */
        jet_test_cluster_kill(c, sl);
        jet_test_cluster_wipe_store(c, sl);
        g_usleep(3 * G_USEC_PER_SEC);
        jet_test_cluster_restart(c, sl);
        break;
    case F_RANDOM:
        /* Every other fault once, in a seeded order, back to back. */
        {
            int order[F_RANDOM];
            for (int i = 0; i < F_RANDOM; i++)
                order[i] = i;
            for (int i = F_RANDOM - 1; i > 0; i--) {
                int j = g_rand_int_range(w->rng, 0, i + 1), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            for (int i = 0; i < F_RANDOM; i++) {
                g_assert_true(jet_test_cluster_wait_ready(c, 60000));
                inject(r, (Fault)order[i], prog);
            }
        }
        break;
    default:
        g_assert_not_reached();
    }
}

static void read_dlq(World *w, const char *subject, GHashTable *dlq, guint *records, guint *other)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "JETHOST_DLQ";
    so.Ordered = true;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    /* Right after a node came back (without its store, maybe) the cluster
     * may answer late, or 503, for some seconds: asked again for up to 60 s,
     * as the host's own reads are (docs/engine.md). */
    gint64 until = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    natsStatus st;
    while ((st = js_SubscribeSync(&sub, w->js, subject, NULL, &so, &jerr)) != NATS_OK &&
           g_get_monotonic_time() < until)
        g_usleep(250 * 1000);
    g_assert_cmpint(st, ==, NATS_OK);
    /* As many as the stream holds on the subject: an ordered read can stall
     * for seconds after a node came back (its consumer re-made on a replica
     * catching up), so a pause is no end. */
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Info.SubjectsFilter = subject;
    jsStreamInfo *si = NULL;
    while ((st = js_GetStreamInfo(&si, w->js, "JETHOST_DLQ", &o, NULL)) != NATS_OK && g_get_monotonic_time() < until)
        g_usleep(250 * 1000);
    g_assert_cmpint(st, ==, NATS_OK);
    guint64 want = 0;
    for (int i = 0; si->State.Subjects != NULL && i < si->State.Subjects->Count; i++)
        want += si->State.Subjects->List[i].Msgs;
    jsStreamInfo_Destroy(si);
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    natsMsg *m = NULL;
    for (;;) {
        if (*records >= want || g_get_monotonic_time() > deadline)
            break;
        if (natsSubscription_NextMsg(&m, sub, 2000) != NATS_OK)
            continue;
        const char *seq = jet_test_msg_header(m, "Jethost-Origin-Seq");
        const char *cause = jet_test_msg_header(m, "Jethost-Cause");
        g_assert_nonnull(seq);
        guint64 s = g_ascii_strtoull(seq, NULL, 10);
        int cls = seq_class(w->mode.seed, s);
        if (cause == NULL || !((cls == C_REJECT && strcmp(cause, "rejected") == 0) ||
                               (cls == C_FAIL && strcmp(cause, "exhausted") == 0))) {
            g_test_message("DLQ record of seq %" G_GUINT64_FORMAT ": cause %s", s, cause);
            (*other)++;
        }
        guint64 *k = g_new(guint64, 1);
        *k = s;
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(dlq, k));
        g_hash_table_replace(dlq, k, GUINT_TO_POINTER(n + 1));
        (*records)++;
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(sub);
}

/* Per seq: handlings, acks and rejects seen in the plugin's logs. */
typedef struct {
    guint handled, acks, rejects;
} SeqSeen;

static void read_logs(const char *dir, SeqSeen *seen, guint n)
{
    for (int h = 0; h < 2; h++) {
        g_autofree char *path = g_strdup_printf("%s/h%d/handled.log", dir, h);
        g_autofree char *text = NULL;
        if (!jet_test_read_lines(path, &text))
            continue;
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l != NULL && **l; l++) {
            unsigned long long seq = 0;
            char v = 0;
            g_assert_cmpint(sscanf(*l, "%llu %*u %*s %*d %*u %*u %c", &seq, &v), ==, 2);
            if (seq < 1 || seq > n)
                continue;
            seen[seq].handled++;
            seen[seq].acks += v == 'a';
            seen[seq].rejects += v == 'j';
        }
    }
}

static guint count_events(GPtrArray *logs, const char *event)
{
    guint n = 0;
    for (guint i = 0; i < logs->len; i++) {
        g_autofree char *text = NULL;
        if (g_file_get_contents(g_ptr_array_index(logs, i), &text, NULL, NULL))
            n += jet_test_count_lines(text, event);
    }
    return n;
}

/* Messages neither acked by the plugin nor with a DLQ record. */
static guint missing_dead(const SeqSeen *seen, guint n, GHashTable *dlq)
{
    guint missing = 0;
    for (guint64 s = 1; s <= n; s++)
        missing += seen[s].acks == 0 && !g_hash_table_contains(dlq, &s);
    return missing;
}

static void run_fault(World *w, Fault f, Row *row)
{
    JetTestCluster *c = w->c;
    guint n = w->mode.n;
    Run r = { .w = w, .logs = g_ptr_array_new_with_free_func(g_free) };
    w->run++;
    r.stream = g_strdup_printf("R%u", w->run);
    r.binding = g_strdup_printf("b%u", w->run);
    r.dir = g_build_filename(jet_test_private_dir(), r.binding, NULL);
    g_mkdir_with_parents(r.dir, 0700);
    r.plugin = jet_test_plugin_copy("fx_gate");
    /* Every fault back to back lasts about a minute: the batch must last
     * longer, or the later faults hit an idle binding. */
    r.sleep_ms = f == F_RANDOM ? 40 : 3;
    r.node[0] = g_rand_int_range(w->rng, 0, JET_TEST_CLUSTER_NODES);
    r.node[1] = f == F_KILL_BOTH_HOSTS_NODE ? r.node[0] : (r.node[0] + 1) % JET_TEST_CLUSTER_NODES;

    g_autofree char *subject = g_strdup_printf("r%u.>", w->run);
    g_autofree char *pubsubj = g_strdup_printf("r%u.x", w->run);
    jet_test_cluster_stream_create(w->js, r.stream, subject, 3, 0);
    jet_test_publish_n(w->js, pubsubj, n);

    Progress prog = { .js = w->js, .stream = r.stream, .remaining = -1 };
    g_mutex_init(&prog.lock);
    host_spawn(&r, 0);
    host_spawn(&r, 1);
    /* The fault lands while both hosts work: after a fifth of the batch. */
    LinesWait lw = { r.dir, n / 5 };
    if (!jet_test_wait_until(lines_reached, &lw, 60000)) {
        for (guint i = 0; i < r.logs->len; i++) {
            g_autofree char *log = jet_test_read_text(g_ptr_array_index(r.logs, i));
            g_test_message("%s:\n%s", (char *)g_ptr_array_index(r.logs, i), log);
        }
        g_error("%s: the hosts handled %u of %u messages in 60 s", fault_names[f], handled_lines(r.dir), n);
    }
    prog.last_change = g_get_monotonic_time();
    prog.thread = g_thread_new("progress", progress_run, &prog);
    gint64 t0 = g_get_monotonic_time();
    inject(&r, f, &prog);
    /* Whether the cluster is whole again is the server's part: on a loaded
     * machine a node that lost its store has taken more than 60 s to
     * rejoin the meta group (2.10.27).  What is checked is the hosts' part:
     * every message accounted for, with the nodes there are (two of three
     * keep every R3 group's quorum). */
    if (!jet_test_cluster_wait_ready(c, 60000))
        g_test_message("%s: the cluster was not whole 60 s after the fault; the checks go on", fault_names[f]);
    DoneWait dw = { w->js, r.stream, n };
    gboolean done = jet_test_wait_until(run_done, &dw, w->mode.lng ? 300000 : 120000);
    g_atomic_int_set(&prog.stop, 1);
    g_thread_join(prog.thread);
    if (!done) {
        jsConsumerInfo *ci = jet_test_consumer_info(w->js, r.stream, "c");
        g_test_message("%s: not done: ack floor %" G_GUINT64_FORMAT ", pending %" G_GUINT64_FORMAT
                       ", ack pending %" G_GINT64_FORMAT ", redelivered %" G_GINT64_FORMAT,
                       fault_names[f], ci->AckFloor.Stream, ci->NumPending, (gint64)ci->NumAckPending,
                       (gint64)ci->NumRedelivered);
        jsConsumerInfo_Destroy(ci);
    }
    for (int h = 0; h < 2; h++)
        jet_test_jethost_stop(r.host[h], r.log[h]);
    /* JET_RELIABILITY_KEEP=DIR keeps the hosts' logs, which the private
     * directory does not outlive, for tracing a run. */
    const char *keep = g_getenv("JET_RELIABILITY_KEEP");
    for (guint i = 0; keep != NULL && i < r.logs->len; i++) {
        g_autofree char *text = jet_test_read_text(g_ptr_array_index(r.logs, i));
        g_autofree char *base = g_path_get_basename(g_ptr_array_index(r.logs, i));
        g_autofree char *to = g_build_filename(keep, base, NULL);
        g_mkdir_with_parents(keep, 0700);
        g_assert_true(g_file_set_contents(to, text, -1, NULL));
    }

    /* The outcome of every message. */
    SeqSeen *seen = g_new0(SeqSeen, n + 1);
    read_logs(r.dir, seen, n);
    g_autoptr(GHashTable) dlq = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    g_autofree char *dlq_subject = g_strdup_printf("jethost.dlq.%s", r.binding);
    guint records = 0, other = 0;
    read_dlq(w, dlq_subject, dlq, &records, &other);
    /* The DLQ's leader may be a node still catching up (after a fault on
     * the DLQ's own leader a loaded run read 11 of 92 records once): when
     * the run is done, a record missing is read again, new reads starting
     * for 60 s, before it counts as lost; each read says what it found. */
    for (gint64 until = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
         done && missing_dead(seen, n, dlq) > 0 && g_get_monotonic_time() < until;) {
        g_test_message("%s: %u messages neither acked nor in the DLQ's %u records; reading it again in 2 s",
                       fault_names[f], missing_dead(seen, n, dlq), records);
        g_usleep(2 * G_USEC_PER_SEC);
        g_hash_table_remove_all(dlq);
        records = other = 0;
        read_dlq(w, dlq_subject, dlq, &records, &other);
    }
    memset(row, 0, sizeof *row);
    row->fault = fault_names[f];
    row->published = n;
    for (guint64 s = 1; s <= n; s++) {
        int cls = seq_class(w->mode.seed, s);
        gboolean in_dlq = g_hash_table_contains(dlq, &s);
        row->handled += seen[s].handled > 0;
        if (seen[s].acks > 1)
            row->dups += seen[s].acks - 1;
        if (cls != C_OK)
            row->expected_dead++;
        if (seen[s].acks == 0 && !in_dlq) {
            row->lost++;
            if (row->lost <= 10)
                g_test_message("%s: seq %" G_GUINT64_FORMAT " lost (class %d, handled %u times)", fault_names[f], s,
                               cls, seen[s].handled);
        }
        if (cls != C_OK && !in_dlq && row->lost <= 10)
            g_test_message("%s: seq %" G_GUINT64_FORMAT " (class %d) has no DLQ record", fault_names[f], s, cls);
    }
    row->dead = g_hash_table_size(dlq);
    row->dlq_doubles = records - row->dead;
    row->other_causes = other;
    row->stranded = count_events(r.logs, "event=stranded");
    row->uncertain = count_events(r.logs, "event=uncertain");
    row->terms = terms_of(w->terms, r.stream);
    row->longest_gap_ms = prog.longest_gap / 1000;
    row->recovery_ms = prog.first_after > 0 ? (prog.first_after - t0) / 1000 : -1;
    g_test_message("| %-24s | %5u | %5u | %3u | %4u | %4u | %4u | %3u | %3u | %3u | %3u | %6" G_GINT64_FORMAT
                   " | %6" G_GINT64_FORMAT " |",
                   row->fault, row->published, row->handled, row->lost, row->dups, row->dead, row->expected_dead,
                   row->dlq_doubles + row->other_causes, row->stranded, row->uncertain, row->terms,
                   row->longest_gap_ms, row->recovery_ms);
    g_free(seen);
    g_mutex_clear(&prog.lock);

    g_assert_true(done);
    g_assert_cmpuint(row->lost, ==, 0);
    g_assert_cmpuint(row->dead, ==, row->expected_dead);
    g_assert_cmpuint(row->dlq_doubles, ==, 0);
    g_assert_cmpuint(row->other_causes, ==, 0);
    g_assert_cmpuint(row->stranded, ==, 0);
    g_assert_cmpuint(row->terms, ==, 0);
    /* Progress came back after the fault, unless the hosts had finished
     * before it began: on a loaded machine, finding the leader to pause
     * can take longer than the last four fifths of the short batch. */
    if (prog.remaining_at_fault == 0)
        g_test_message("%s: the batch was done before the fault began: no recovery to measure", fault_names[f]);
    else if (prog.answered_after == 0)
        /* The run is done (above), but no sample after the fault was
         * answered, even in the 10 s after the run (a cluster still
         * settling after a paused leader on a loaded machine, seen on
         * 2.15.1): the fall cannot be timed.  The last sample before the
         * fault may be stale for the same reason. */
        g_test_message("%s: no progress sample was answered after the fault: no recovery to measure",
                       fault_names[f]);
    else
        g_assert_cmpint(row->recovery_ms, >=, 0);

    g_ptr_array_unref(r.logs);
    g_free(r.stream);
    g_free(r.binding);
    g_free(r.dir);
    g_free(r.plugin);
}

static void test_faults(void)
{
    const char *env = g_getenv("JET_RELIABILITY");
    Mode mode = { .lng = env != NULL && strcmp(env, "long") == 0 };
    mode.n = mode.lng ? 10000 : 2000;
    mode.pause_s = mode.lng ? 10 : 3;
    mode.quorum_s = 15;
    const char *s = g_getenv("JET_RELIABILITY_SEED");
    mode.seed = s != NULL ? g_ascii_strtoull(s, NULL, 10) : (guint64)g_get_real_time();
    g_test_message("seed %" G_GUINT64_FORMAT " (JET_RELIABILITY_SEED=%" G_GUINT64_FORMAT " repeats it), %s mode",
                   mode.seed, mode.seed, mode.lng ? "long" : "short");

    g_autoptr(JetTestCluster) c = jet_test_cluster_start();
    World w = { .c = c, .mode = mode, .rng = g_rand_new_with_seed((guint32)mode.seed) };
    w.js = jet_test_cluster_js_open(c, &w.nc);

    Terms terms = { .by_stream = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL) };
    g_mutex_init(&terms.lock);
    w.terms = &terms;
    natsSubscription *tsub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&tsub, w.nc, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>", on_term,
                                             &terms), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(w.nc), ==, NATS_OK);

    /* The advisory count is live: one +TERM of our own is seen. */
    jet_test_cluster_stream_create(w.js, "TCANARY", "tcanary.>", 3, 0);
    jet_test_publish_n(w.js, "tcanary.x", 1);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "TCANARY";
    natsSubscription *psub = NULL;
    g_assert_cmpint(js_PullSubscribe(&psub, w.js, "tcanary.x", "c", NULL, &so, NULL), ==, NATS_OK);
    natsMsgList list = { 0 };
    /* A consumer made right after the cluster formed may have no leader
     * yet: its pull gets no responders (seen on 2.15.1 under load) or
     * waits; it is asked again. */
    natsStatus fs = NATS_TIMEOUT;
    for (int attempt = 0; attempt < 20 && (fs == NATS_TIMEOUT || fs == NATS_NO_RESPONDERS); attempt++) {
        if (attempt > 0)
            g_usleep(500 * 1000);
        fs = natsSubscription_Fetch(&list, psub, 1, 5000, NULL);
        if (fs != NATS_OK)
            g_test_message("canary fetch %d: %s", attempt + 1, natsStatus_GetText(fs));
    }
    g_assert_cmpint(fs, ==, NATS_OK);
    g_assert_cmpint(natsMsg_Term(list.Msgs[0], NULL), ==, NATS_OK);
    natsMsgList_Destroy(&list);
    natsSubscription_Destroy(psub);
    TermWait tw = { &terms, "TCANARY" };
    g_assert_true(jet_test_wait_until(term_seen, &tw, 10000));

    static const Fault short_faults[] = { F_STREAM_STEPDOWN, F_CONSUMER_STEPDOWN, F_PAUSE_LEADER,
                                          F_KILL_FOLLOWER,   F_KILL_HOST_NODE,    F_KILL_DLQ_LEADER,
                                          F_LEADER_STORE_LOST };
    guint nf = mode.lng ? F_COUNT : G_N_ELEMENTS(short_faults);
    g_test_message("| fault | published | handled | lost | dups | dead-lettered | rejected+exhausted | "
                   "DLQ doubles/other | stranded | uncertain | Term | longest gap ms | recovery ms |");
    /* JET_RELIABILITY_FAULTS=NAME,... runs only those faults (one traced alone). */
    const char *only = g_getenv("JET_RELIABILITY_FAULTS");
    g_auto(GStrv) wanted = only != NULL && *only ? g_strsplit(only, ",", -1) : NULL;
    for (guint i = 0; i < nf; i++) {
        Fault f = mode.lng ? (Fault)i : short_faults[i];
        if (wanted != NULL && !g_strv_contains((const char *const *)wanted, fault_names[f]))
            continue;
        Row row;
        run_fault(&w, f, &row);
        g_assert_true(jet_test_cluster_wait_ready(c, 60000));
        /* The hosts run with replicas = 3: what they created is R3, as in production. */
        g_assert_cmpint(stream_replicas(w.js, "KV_jethost_ledger"), ==, 3);
        g_assert_cmpint(stream_replicas(w.js, "JETHOST_DLQ"), ==, 3);
    }
    natsSubscription_Destroy(tsub);
    g_hash_table_unref(terms.by_stream);
    g_mutex_clear(&terms.lock);
    g_rand_free(w.rng);
    jet_test_js_close(w.nc, w.js);
}

/* ---- shared by the breaker and exclusive runs --------------------------- */

static guint64 seed_of(const char *what)
{
    const char *s = g_getenv("JET_RELIABILITY_SEED");
    guint64 seed = s != NULL ? g_ascii_strtoull(s, NULL, 10) : (guint64)g_get_real_time();
    g_test_message("%s: seed %" G_GUINT64_FORMAT " (JET_RELIABILITY_SEED=%" G_GUINT64_FORMAT " repeats it)", what,
                   seed, seed);
    return seed;
}

/* `jethost run` with [host] replicas = 3 on node's URL; binding holds the
 * [binding NAME] section. */
static GSubprocess *spawn_host(JetTestCluster *c, int node, const char *name, const char *binding, char **errlog)
{
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nname = %s\ndrain_timeout = 5s\nreplicas = 3\n%s",
                                            jet_test_cluster_url(c, node), name, binding);
    return jet_test_jethost_spawn_config(name, text, errlog);
}

static guint log_lines(const char *path, const char *needle)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    return jet_test_count_lines(text, needle);
}

typedef struct {
    const char *path, *needle;
    guint n;
} LogWait;

static gboolean log_reached(gpointer data)
{
    LogWait *w = data;
    return log_lines(w->path, w->needle) >= w->n;
}

/* Kills the node leading a stream (another when it has none now), waits
 * secs, restarts it and waits for the cluster. */
static int kill_leader_restart(JetTestCluster *c, jsCtx *js, const char *stream, guint secs)
{
    int n = jet_test_cluster_stream_leader(c, js, stream);
    if (n < 0)
        n = 0;
    g_test_message("node %s (leader of %s) killed", jet_test_cluster_name(c, n), stream);
    jet_test_cluster_kill(c, n);
    g_usleep((gulong)secs * G_USEC_PER_SEC);
    jet_test_cluster_restart(c, n);
    g_assert_true(jet_test_cluster_wait_ready(c, 60000));
    return n;
}

/* ---- the breaker's windows across hosts --------------------------------- */

#define BRK_FAILING 16      /* messages failing for ever: one claimable per window */

typedef struct {
    guint64 seq, floor;
    guint window;
    char host[64];
} BrkClaim;

/* The window keys breaker.BRK.c.<floor>.<n> of the ledger bucket; NULL when
 * the bucket cannot be read now. */
static GArray *brk_claims(jsCtx *js)
{
    kvStore *kv = NULL;
    if (js_KeyValue(&kv, js, "jethost_ledger") != NATS_OK)
        return NULL;
    kvKeysList keys = { 0 };
    natsStatus s = kvStore_Keys(&keys, kv, NULL);
    if (s != NATS_OK) {
        kvStore_Destroy(kv);
        return s == NATS_NOT_FOUND ? g_array_new(FALSE, TRUE, sizeof(BrkClaim)) : NULL;
    }
    GArray *a = g_array_new(FALSE, TRUE, sizeof(BrkClaim));
    /* nats.c gathers the keys with an ordered consumer that starts over
     * when a leader changes under it, and keeps what it had: a key can come
     * twice, which would count a claim twice. */
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (int i = 0; i < keys.Count; i++) {
        if (!g_str_has_prefix(keys.Keys[i], "breaker.BRK.c.") || !g_hash_table_add(seen, keys.Keys[i]))
            continue;
        kvEntry *e = NULL;
        if (kvStore_Get(&e, kv, keys.Keys[i]) != NATS_OK) {
            g_array_unref(a);
            a = NULL;
            break;
        }
        BrkClaim b = { 0 };
        unsigned long long seq = 0, floor = 0, kfloor = 0;
        unsigned win = 0, kwin = 0;
        gsize vlen = 0;
        const char *raw = jet_kv_value(e, &vlen);
        g_autofree char *value = g_strndup(raw, vlen);
        g_assert_cmpint(sscanf(value, "{\"seq\":%llu,\"host\":\"%63[^\"]\",\"floor\":%llu,\"window\":%u}",
                               &seq, b.host, &floor, &win), ==, 4);
        g_assert_cmpint(sscanf(keys.Keys[i], "breaker.BRK.c.%llu.%u", &kfloor, &kwin), ==, 2);
        g_assert_cmpuint(kfloor, ==, floor);
        g_assert_cmpuint(kwin, ==, win);
        b.seq = seq;
        b.floor = floor;
        b.window = win;
        g_array_append_val(a, b);
        kvEntry_Destroy(e);
    }
    kvKeysList_Destroy(&keys);
    kvStore_Destroy(kv);
    return a;
}

typedef struct {
    jsCtx *js;
    guint want;
} ClaimWait;

static gboolean claims_reached(gpointer data)
{
    ClaimWait *w = data;
    GArray *a = brk_claims(w->js);
    gboolean ok = a != NULL && a->len >= w->want;
    if (a != NULL)
        g_array_unref(a);
    return ok;
}

static guint brk_count(jsCtx *js)
{
    for (int i = 0; i < 50; i++) {
        GArray *a = brk_claims(js);
        if (a != NULL) {
            guint n = a->len;
            g_array_unref(a);
            return n;
        }
        g_usleep(200000);
    }
    g_error("the ledger bucket's keys could not be read for 10 s");
}

static void brk_wait(jsCtx *js, guint want, guint timeout_ms, const char *after)
{
    ClaimWait cw = { js, want };
    gint64 t0 = g_get_monotonic_time();
    gboolean ok = jet_test_wait_until(claims_reached, &cw, timeout_ms);
    g_test_message("%s: %u claims %s after %" G_GINT64_FORMAT " ms", after, want, ok ? "reached" : "NOT reached",
                   (g_get_monotonic_time() - t0) / 1000);
    g_assert_true(ok);
}

/* "stream seq N ... stall window W" of each would-quarantine line of a log. */
static void brk_logged(const char *path, GArray *out)
{
    g_autofree char *text = jet_test_read_text(path);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL; l++) {
        if (strstr(*l, "event=would-quarantine ") == NULL)
            continue;
        const char *q = strstr(*l, "stream seq "), *w = strstr(*l, "stall window ");
        g_assert_nonnull(q);
        g_assert_nonnull(w);
        BrkClaim b = { 0 };
        b.seq = g_ascii_strtoull(q + strlen("stream seq "), NULL, 10);
        b.window = (guint)g_ascii_strtoull(w + strlen("stall window "), NULL, 10);
        g_array_append_val(out, b);
    }
}

static void test_breaker(void)
{
    guint64 seed = seed_of("breaker");
    GRand *rng = g_rand_new_with_seed((guint32)seed);
    g_autoptr(JetTestCluster) c = jet_test_cluster_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_cluster_js_open(c, &nc);
    jet_test_cluster_stream_create(js, "BRK", "brk.>", 3, 0);
    /* Seq 1 fails for ever and pins the floor at 0; so do BRK_FAILING - 1
     * more among the others, so every window has a message not yet counted
     * (observe counts a message once, as enforce would capture it once). */
    guint n = 3 * BRK_FAILING + 10;
    gboolean *failing = g_new0(gboolean, n + 1);
    g_autoptr(GString) sv = g_string_new("1=retry");
    failing[1] = TRUE;
    for (guint k = 1; k < BRK_FAILING; k++) {
        guint seq;
        do
            seq = (guint)g_rand_int_range(rng, 2, (gint32)n + 1);
        while (failing[seq]);
        failing[seq] = TRUE;
        g_string_append_printf(sv, ",%u=retry", seq);
    }
    g_test_message("failing seqs: %s", sv->str);
    jet_test_publish_n(js, "brk.x", n);

    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "brk", NULL);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    GSubprocess *host[2];
    char *log[2];
    char names[2][16];
    for (int h = 0; h < 2; h++) {
        g_autofree char *hdir = g_strdup_printf("%s/h%d", dir, h);
        g_mkdir_with_parents(hdir, 0700);
        /* floor_age 2 s with a 300 ms rung and no attempt limit: the ladder
         * reaches floor_age (room for the breaker), a window every ~2 s. */
        g_autofree char *binding = g_strdup_printf(
            "[binding brk]\nplugin = %s\nstream = BRK\nconsumer = c\nworkers = 2\nbatch = 10\nack_wait = 2s\n"
            "idle_heartbeat = 500ms\nexpires = 2s\nmax_attempts = 0\nrungs = 300ms\n"
            "floor_age = 2s\nbreaker = observe\nmin_deliveries = 2\n"
            "option.dir = %s\noption.seq_verdicts = %s\n",
            plugin, hdir, sv->str);
        g_snprintf(names[h], sizeof names[h], "brk-h%d", h);
        host[h] = spawn_host(c, h, names[h], binding, &log[h]);
    }
    gint64 t0 = g_get_monotonic_time();
    brk_wait(js, 1, 60000, "start");
    g_assert_cmpint(stream_replicas(js, LEDGER_STREAM), ==, 3);

    /* Each fault while windows pass; after each, the next claim comes. */
    guint k = brk_count(js);
    g_assert_true(jet_test_cluster_stream_stepdown(nc, LEDGER_STREAM));
    g_test_message("ledger stream leader stepped down at %u claims", k);
    brk_wait(js, k + 1, 30000, "after the ledger leader's step-down");
    k = brk_count(js);
    g_assert_true(jet_test_cluster_consumer_stepdown(nc, "BRK", "c"));
    g_test_message("consumer leader stepped down at %u claims", k);
    brk_wait(js, k + 1, 30000, "after the consumer leader's step-down");
    k = brk_count(js);
    kill_leader_restart(c, js, LEDGER_STREAM, 3);
    guint at_fault_end = brk_count(js);
    g_test_message("ledger leader's node killed and restarted: %u claims before, %u after", k, at_fault_end);
    brk_wait(js, at_fault_end + 2, 60000, "after the kill");
    gint64 elapsed_ms = (g_get_monotonic_time() - t0) / 1000;
    for (int h = 0; h < 2; h++)
        jet_test_jethost_stop(host[h], log[h]);

    g_autoptr(GArray) claims = NULL;
    for (int i = 0; i < 50 && claims == NULL; i++)
        if ((claims = brk_claims(js)) == NULL)
            g_usleep(200000);
    g_assert_nonnull(claims);
    /* Per window: the key, and the would-quarantine line of the host the key
     * names, for that seq and window; no other line anywhere. */
    GArray *logged[2];
    guint per_host[2] = { 0, 0 };
    for (int h = 0; h < 2; h++) {
        logged[h] = g_array_new(FALSE, TRUE, sizeof(BrkClaim));
        brk_logged(log[h], logged[h]);
    }
    guint nw = claims->len;
    gboolean *window_seen = g_new0(gboolean, nw);
    gboolean *seq_counted = g_new0(gboolean, n + 1);
    guint unlogged = 0;
    for (guint i = 0; i < nw; i++) {
        BrkClaim *b = &g_array_index(claims, BrkClaim, i);
        g_test_message("window %u of floor %" G_GUINT64_FORMAT ": seq %" G_GUINT64_FORMAT " by %s", b->window,
                       b->floor, b->seq, b->host);
        g_assert_cmpuint(b->floor, ==, 0);
        g_assert_cmpuint(b->window, <, nw);          /* windows 0..nw-1, each one key */
        g_assert_false(window_seen[b->window]);
        window_seen[b->window] = TRUE;
        g_assert_cmpuint(b->seq, <=, n);
        g_assert_true(failing[b->seq]);
        g_assert_false(seq_counted[b->seq]);          /* a message counted once */
        seq_counted[b->seq] = TRUE;
        int h = strcmp(b->host, names[0]) == 0 ? 0 : 1;
        g_assert_cmpstr(b->host, ==, names[h]);
        per_host[h]++;
        guint lines = 0;
        for (guint j = 0; j < logged[h]->len; j++) {
            BrkClaim *l = &g_array_index(logged[h], BrkClaim, j);
            lines += l->window == b->window && l->seq == b->seq;
        }
        if (lines == 0)
            unlogged++;
        g_assert_cmpuint(lines, <=, 1);
    }
    guint lines_total = logged[0]->len + logged[1]->len;
    g_test_message("| breaker | %u windows in %" G_GINT64_FORMAT " ms | %u by h0, %u by h1 | %u logged, %u keys not "
                   "logged | %u after the kill |",
                   nw, elapsed_ms, per_host[0], per_host[1], lines_total, unlogged, nw - at_fault_end);
    /* Every logged line is one of the keys' windows, by the host that holds it. */
    g_assert_cmpuint(unlogged, ==, 0);
    g_assert_cmpuint(lines_total, ==, nw);
    g_assert_cmpuint(nw, >=, at_fault_end + 2);
    for (int h = 0; h < 2; h++) {
        g_assert_cmpuint(logged[h]->len, ==, per_host[h]);
        g_array_unref(logged[h]);
        g_free(log[h]);
        g_object_unref(host[h]);
    }
    g_free(window_seen);
    g_free(seq_counted);
    g_free(failing);
    g_rand_free(rng);
    jet_test_js_close(nc, js);
}

/* ---- an exclusive binding under leader moves ---------------------------- */

typedef struct {
    guint64 seq;
    gint64 end, start;
    int host;
    char v;
} Handling;

static gint by_start(gconstpointer a, gconstpointer b)
{
    const Handling *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void read_handlings(const char *dir, GArray *out)
{
    for (int h = 0; h < 2; h++) {
        g_autofree char *path = g_strdup_printf("%s/h%d/handled.log", dir, h);
        g_autofree char *text = NULL;
        if (!jet_test_read_lines(path, &text))
            continue;
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l != NULL && **l; l++) {
            unsigned long long seq = 0;
            long long end = 0, start = 0;
            char v = 0;
            g_assert_cmpint(sscanf(*l, "%llu %*u %*s %lld %*u %*u %c %lld", &seq, &end, &v, &start), ==, 4);
            Handling x = { seq, end, start, h, v };
            g_array_append_val(out, x);
        }
    }
}

static void test_exclusive(void)
{
    guint64 seed = seed_of("exclusive");
    GRand *rng = g_rand_new_with_seed((guint32)seed);
    g_autoptr(JetTestCluster) c = jet_test_cluster_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_cluster_js_open(c, &nc);
    jet_test_cluster_stream_create(js, "EXC", "exc.>", 3, 0);
    const guint n1 = 1500, n2 = 500;
    jet_test_publish_n(js, "exc.x", n1);

    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "exc", NULL);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    int node[2];
    node[0] = g_rand_int_range(rng, 0, JET_TEST_CLUSTER_NODES);
    node[1] = (node[0] + 1) % JET_TEST_CLUSTER_NODES;
    GSubprocess *host[2];
    char *log[2];
    for (int h = 0; h < 2; h++) {
        g_autofree char *hdir = g_strdup_printf("%s/h%d", dir, h);
        g_mkdir_with_parents(hdir, 0700);
        g_autofree char *binding = g_strdup_printf(
            "[binding exc]\nplugin = %s\nstream = EXC\nconsumer = c\nworkers = 2\nbatch = 20\nack_wait = 2s\n"
            "idle_heartbeat = 500ms\nexpires = 1s\nfloor_age = 0\n"
            "exclusive = true\nclaim_ttl = 2s\nclaim_heartbeat = 500ms\n"
            "option.dir = %s\noption.sleep = 4ms\n",
            plugin, hdir);
        g_autofree char *name = g_strdup_printf("exc-h%d", h);
        host[h] = spawn_host(c, node[h], name, binding, &log[h]);
        /* h0 holds the claim, h1 stands by: a handshake on their logs. */
        LogWait lw = { log[h], h == 0 ? "event=claimed" : "event=standing-by", 1 };
        g_assert_true(jet_test_wait_until(log_reached, &lw, 30000));
    }
    g_assert_cmpint(stream_replicas(js, LEDGER_STREAM), ==, 3);
    g_assert_true(wait_more(dir, 200, 60000));

    g_assert_true(jet_test_cluster_stream_stepdown(nc, LEDGER_STREAM));
    g_test_message("claim bucket's stream leader stepped down");
    g_assert_true(wait_more(dir, 200, 60000));

    /* The holder's node killed for 3 s: its connection moves to another
     * node, or its renewals stop for claim_ttl - claim_heartbeat and it
     * stops the binding; then the standby takes over. */
    g_test_message("holder's node %s killed", jet_test_cluster_name(c, node[0]));
    gint64 kill_at = g_get_monotonic_time();
    jet_test_cluster_kill(c, node[0]);
    g_usleep(3 * G_USEC_PER_SEC);
    jet_test_cluster_restart(c, node[0]);
    g_assert_true(jet_test_cluster_wait_ready(c, 60000));
    /* Right after the restart: the server may refuse some of these while
     * leaders settle; jet_test_publish_wait sends those again (they were
     * once lost unseen here, and the test waited for them for ever). */
    jet_test_publish_n(js, "exc.x", n2);
    DoneWait dw = { js, "EXC", n1 + n2 };
    gboolean done = jet_test_wait_until(run_done, &dw, 120000);
    if (!done) {
        jsConsumerInfo *ci = jet_test_consumer_info(js, "EXC", "c");
        g_test_message("not done: ack floor %" G_GUINT64_FORMAT ", delivered %" G_GUINT64_FORMAT ", pending %"
                       G_GUINT64_FORMAT ", ack pending %" G_GINT64_FORMAT ", waiting %" G_GINT64_FORMAT
                       ", consumer leader %s; logs %s %s",
                       ci->AckFloor.Stream, ci->Delivered.Stream, ci->NumPending, (gint64)ci->NumAckPending,
                       (gint64)ci->NumWaiting, ci->Cluster != NULL ? ci->Cluster->Leader : "?", log[0], log[1]);
        jsConsumerInfo_Destroy(ci);
    }
    g_assert_true(done);
    /* The standby first: a holder stopped first releases its claim, and a
     * standby still running claims it before its own stop (seen under
     * load), which the counts below would take for a takeover. */
    for (int h = 1; h >= 0; h--)
        jet_test_jethost_stop(host[h], log[h]);

    g_autoptr(GArray) hs = g_array_new(FALSE, TRUE, sizeof(Handling));
    read_handlings(dir, hs);
    g_array_sort(hs, by_start);
    /* Never two hosts in a handler at once: a handling starts after every
     * earlier-started one of the other host has ended. */
    gint64 last_end[2] = { 0, 0 };
    guint overlaps = 0, by[2] = { 0, 0 }, after_kill[2] = { 0, 0 };
    gboolean *acked = g_new0(gboolean, n1 + n2 + 1);
    gint64 kill_ns = kill_at * 1000;
    gint64 first_h1 = 0;
    for (guint i = 0; i < hs->len; i++) {
        Handling *x = &g_array_index(hs, Handling, i);
        if (x->start < last_end[1 - x->host]) {
            if (overlaps++ < 5)
                g_test_message("h%d began seq %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT
                               " us before h%d's handling ended", x->host, x->seq,
                               (last_end[1 - x->host] - x->start) / 1000, 1 - x->host);
        }
        last_end[x->host] = MAX(last_end[x->host], x->end);
        by[x->host]++;
        if (x->start >= kill_ns)
            after_kill[x->host]++;
        if (x->host == 1 && first_h1 == 0)
            first_h1 = x->start;
        if (x->seq >= 1 && x->seq <= n1 + n2 && x->v == 'a')
            acked[x->seq] = TRUE;
    }
    /* The longest time without a handling starting, from the kill on. */
    gint64 gap = 0, prev = kill_ns;
    for (guint i = 0; i < hs->len; i++) {
        Handling *x = &g_array_index(hs, Handling, i);
        if (x->start < kill_ns)
            continue;
        gap = MAX(gap, x->start - prev);
        prev = x->start;
    }
    guint lost = 0;
    for (guint s = 1; s <= n1 + n2; s++)
        lost += !acked[s];
    guint expired = log_lines(log[0], "event=claim-expired") + log_lines(log[0], "event=claim-lost");
    guint taken = log_lines(log[1], "event=taken-over") + log_lines(log[1], "event=claimed");
    g_test_message("| exclusive | %u published | h0 %u, h1 %u handlings (after the kill: %u, %u) | lost %u | "
                   "overlaps %u | holder lost its claim %u times, standby claimed %u times; h1's first "
                   "handling %" G_GINT64_FORMAT " ms after the kill | longest gap after the kill %" G_GINT64_FORMAT
                   " ms |",
                   n1 + n2, by[0], by[1], after_kill[0], after_kill[1], lost, overlaps, expired, taken,
                   first_h1 > 0 ? (first_h1 - kill_ns) / 1000000 : -1, gap / 1000000);
    g_assert_cmpuint(overlaps, ==, 0);
    g_assert_cmpuint(lost, ==, 0);
    /* The standby handles only after a takeover, and only once the
     * holder's own claim was gone.  A holder whose renewals failed may win
     * its claim back first: a record naming its own run is taken at once,
     * the other host waits claim_ttl (docs/exclusive.md).  A standby may
     * also take the claim and lose it again before its engine handled
     * anything (a leader moving under both hosts, seen on 2.15.1): no
     * overlap and nothing lost is what holds then. */
    if (by[1] > 0) {
        g_assert_cmpuint(taken, >=, 1);
        g_assert_cmpuint(expired, >=, 1);
    } else if (taken > 0) {
        g_test_message("the standby claimed %u time(s) and handled nothing before the claim moved back", taken);
    }
    g_assert_cmpuint(after_kill[0] + after_kill[1], >, 0);
    g_free(acked);
    for (int h = 0; h < 2; h++) {
        g_free(log[h]);
        g_object_unref(host[h]);
    }
    g_rand_free(rng);
    jet_test_js_close(nc, js);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cluster/fixture", test_fixture);
    g_test_add_func("/cluster/faults", test_faults);
    g_test_add_func("/cluster/breaker", test_breaker);
    g_test_add_func("/cluster/exclusive", test_exclusive);
    return g_test_run();
}
