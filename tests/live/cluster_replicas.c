/* [host] replicas on the three-node cluster of tests/cluster.h
 * (docs/reliability.md, "Running on a cluster").
 *
 * /cluster-replicas/created: a host with `replicas = 3` and nothing made
 * for it creates its binding's stream (`subjects`), the DLQ stream, the
 * ledger bucket and the advisory stream with three replicas: each one's
 * Config.Replicas is 3 and its cluster info places it on three servers.  The host handles what is published.
 * `jethost kv put --create` makes a bucket with --replicas 3, and with the
 * config's [host] replicas 3 when it is given none.
 *
 * /cluster-replicas/existing: streams an operator made with three replicas
 * (the ledger bucket, with another max_age; the DLQ stream; the advisory
 * stream) under a host left at `replicas = 1`: the host starts, binds them
 * as they are (still R3; the ledger's max_age set to the host's), logs each
 * difference once (event=replicas-differ) and handles what is published.
 *
 * /cluster-replicas/stream-info-leaderless: an R3 stream whose leader and
 * one more member are stopped: the member left answers a stream info
 * request with its own state and no leader named, which the host does not
 * take (jet_stream_info_led: no answer); with the two back, a leader
 * answers, every message counted.  Asked again the moment the two go, and
 * given them back a second later, the host's read waits through what the
 * member says meanwhile (its own state; 503 "temporarily unavailable"
 * while the cluster has no meta leader) for the leader's answer. */
#define _GNU_SOURCE
#include "cluster.h"

#include "advisory.h"
#include "stream_info.h"

#include <string.h>

#define N_MSGS 20

typedef struct {
    jsCtx *js;
    const char *stream;
} ExistsWait;

static gboolean stream_exists(gpointer data)
{
    ExistsWait *w = data;
    jsStreamInfo *si = NULL;
    natsStatus s = js_GetStreamInfo(&si, w->js, w->stream, NULL, NULL);
    jsStreamInfo_Destroy(si);
    return s == NATS_OK;
}

/* The servers holding a replica of the stream: its leader and its peers
 * (a stream without a leader yet lists every replica as a peer). */
static guint placed_on(const jsStreamInfo *si)
{
    g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
    if (si->Cluster == NULL)
        return 0;
    if (si->Cluster->Leader != NULL && *si->Cluster->Leader)
        g_hash_table_add(names, si->Cluster->Leader);
    for (int i = 0; i < si->Cluster->ReplicasLen; i++)
        g_hash_table_add(names, si->Cluster->Replicas[i]->Name);
    return g_hash_table_size(names);
}

/* Asserts the stream's replicas as configured and as placed. */
static void assert_replicas(jsCtx *js, const char *stream, int want)
{
    ExistsWait ew = { js, stream };
    if (!jet_test_wait_until(stream_exists, &ew, 30000))
        g_error("stream %s was not created within 30 s", stream);
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, stream, NULL, NULL), ==, NATS_OK);
    g_test_message("%s: Config.Replicas %d, on %u servers", stream, (int)si->Config->Replicas, placed_on(si));
    g_assert_cmpint(si->Config->Replicas, ==, want);
    g_assert_cmpuint(placed_on(si), ==, (guint)want);
    jsStreamInfo_Destroy(si);
}

static gint64 max_age_ms(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, stream, NULL, NULL), ==, NATS_OK);
    gint64 ms = si->Config->MaxAge / 1000000;
    jsStreamInfo_Destroy(si);
    return ms;
}

static char *host_config(const JetTestCluster *c, const char *replicas_line, const char *ledger,
                         const char *binding, const char *stream, const char *subjects_line, const char *dlq)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_ok");
    return g_strdup_printf("[host]\nserver = %s\nname = %s\ndrain_timeout = 5s\n%sledger_bucket = %s\n"
                           "[binding %s]\nplugin = %s\nstream = %s\n%sconsumer = c\ndlq_stream = %s\n"
                           "ack_wait = 5s\nidle_heartbeat = 500ms\nexpires = 2s\n",
                           jet_test_cluster_urls(c), binding, replicas_line, ledger, binding, plugin, stream,
                           subjects_line, dlq);
}

static void wait_handled(jsCtx *js, const char *stream, const char *errlog)
{
    JetTestFloorWait fw = { js, stream, "c", N_MSGS };
    if (!jet_test_wait_until(jet_test_floor_reached, &fw, 60000)) {
        g_autofree char *log = jet_test_read_text(errlog);
        g_error("%s: the host did not handle %d messages in 60 s:\n%s", stream, N_MSGS, log);
    }
}

static void test_created(void)
{
    g_autoptr(JetTestCluster) c = jet_test_cluster_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_cluster_js_open(c, &nc);

    g_autofree char *text = host_config(c, "replicas = 3\n", "led_a", "ra", "RA", "subjects = ra.>\n", "DLQ_A");
    g_autofree char *errlog = NULL;
    GSubprocess *host = jet_test_jethost_spawn_config("replicas-created", text, &errlog);

    assert_replicas(js, "RA", 3);
    assert_replicas(js, "DLQ_A", 3);
    assert_replicas(js, "KV_led_a", 3);
    assert_replicas(js, JET_ADVISORY_STREAM, 3);
    jet_test_publish_n(js, "ra.x", N_MSGS);
    wait_handled(js, "RA", errlog);
    jet_test_jethost_stop(host, errlog);
    g_object_unref(host);

    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "event=replicas-differ"), ==, 0);

    /* jethost kv put --create: --replicas, else the config's [host] replicas. */
    const char *flag[] = { "kv", "-s", jet_test_cluster_url(c, 0), "put", "--create", "--replicas", "3", "KVA", "k", "v",
                           NULL };
    g_autofree char *out = NULL, *err = NULL;
    int krc = jet_test_jethost_run(flag, &out, &err);
    g_test_message("kv put --create --replicas 3: exit %d: %s", krc, err);
    g_assert_cmpint(krc, ==, 0);
    g_assert_nonnull(strstr(err, "created bucket KVA (history 1, file storage), 3 replicas"));
    assert_replicas(js, "KV_KVA", 3);
    g_autofree char *conf = jet_test_write_file("replicas-kv.conf", text);
    const char *from_config[] = { "kv", "-c", conf, "put", "--create", "KVB", "k", "v", NULL };
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(jet_test_jethost_run(from_config, &out, &err), ==, 0);
    assert_replicas(js, "KV_KVB", 3);

    /* check --server: replicas = 3 fits a cluster of three; a lone server
     * is warned about (a warning: check still passes). */
    const char *check_cluster[] = { "check", "-c", conf, "--server", jet_test_cluster_url(c, 0), "--no-plugins", NULL };
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(jet_test_jethost_run(check_cluster, &out, &err), ==, 0);
    g_assert_null(strstr(out, "warning replicas"));
    g_autoptr(JetTestServer) lone = jet_test_server_start();
    const char *check_lone[] = { "check", "-c", conf, "--server", jet_test_server_url(lone), "--no-plugins", NULL };
    g_free(g_steal_pointer(&out));
    g_free(g_steal_pointer(&err));
    g_assert_cmpint(jet_test_jethost_run(check_lone, &out, &err), ==, 0);
    g_test_message("%s", out);
    g_assert_nonnull(strstr(out, "host: warning replicas: [host] replicas = 3, but the server knows of 1 server in "
                                 "its cluster"));
    jet_test_js_close(nc, js);
}

static void test_existing(void)
{
    g_autoptr(JetTestCluster) c = jet_test_cluster_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_cluster_js_open(c, &nc);

    /* As an operator makes them for a cluster, before the host's first start. */
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = "led_b";
    kc.History = 1;
    kc.TTL = G_GINT64_CONSTANT(3600000) * 1000000;   /* 1h; the host's ledger_max_age is 7d */
    kc.StorageType = js_FileStorage;
    kc.Replicas = 3;
    kvStore *kv = NULL;
    g_assert_cmpint(js_CreateKeyValue(&kv, js, &kc), ==, NATS_OK);
    kvStore_Destroy(kv);
    jet_test_cluster_stream_create(js, "DLQ_B", "jethost.dlq.rb", 3, 2 * 3600 * 1000);
    jet_test_cluster_stream_create(js, JET_ADVISORY_STREAM, JET_ADVISORY_STREAM_SUBJECT, 3, 0);
    jet_test_cluster_stream_create(js, "RB", "rb.>", 3, 0);

    /* replicas left at its default, 1. */
    g_autofree char *text = host_config(c, "", "led_b", "rb", "RB", "", "DLQ_B");
    g_autofree char *errlog = NULL;
    GSubprocess *host = jet_test_jethost_spawn_config("replicas-existing", text, &errlog);
    jet_test_publish_n(js, "rb.x", N_MSGS);
    wait_handled(js, "RB", errlog);
    jet_test_jethost_stop(host, errlog);
    g_object_unref(host);

    assert_replicas(js, "KV_led_b", 3);
    assert_replicas(js, "DLQ_B", 3);
    assert_replicas(js, JET_ADVISORY_STREAM, 3);
    g_assert_cmpint(max_age_ms(js, "KV_led_b"), ==, G_GINT64_CONSTANT(7) * 24 * 3600 * 1000);

    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "event=replicas-differ"), ==, 3);
    g_assert_cmpuint(jet_test_count_lines(log, "event=replicas-differ msg=\"ledger bucket stream KV_led_b has 3 "
                                               "replicas where [host] replicas = 1"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "DLQ stream DLQ_B has 3 replicas"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "advisory stream " JET_ADVISORY_STREAM " has 3 replicas"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "level=error"), ==, 0);
    jet_test_js_close(nc, js);
}

typedef struct {
    jsCtx *js;
    jsStreamInfo *si;
    jsErrCode jerr;
    natsStatus s;
} LedRead;

static gpointer led_read(gpointer data)
{
    LedRead *lr = data;
    lr->s = jet_stream_info_led(&lr->si, lr->js, "LL", 60000, NULL, &lr->jerr);
    return NULL;
}

/* The member left of a group with no leader answers for itself. */
static void test_stream_info_leaderless(void)
{
    g_autoptr(JetTestCluster) c = jet_test_cluster_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_cluster_js_open(c, &nc);
    jet_test_cluster_stream_create(js, "LL", "ll.>", 3, 0);
    jet_test_publish_n(js, "ll.x", N_MSGS);
    int leader = jet_test_cluster_stream_leader(c, js, "LL");
    g_assert_cmpint(leader, >=, 0);
    int keep = (leader + 1) % 3, other = (leader + 2) % 3;
    natsConnection *nk = NULL;
    jsCtx *jk = jet_test_js_open(jet_test_cluster_url(c, keep), &nk);
    jet_test_cluster_stop(c, leader);
    jet_test_cluster_stop(c, other);

    /* What the server does (a member counts its group leaderless some
     * seconds after the leader goes, and after its first 10 s). */
    guint leaderless = 0, other_answers = 0;
    gint64 until = g_get_monotonic_time() + 40 * G_USEC_PER_SEC;
    while (leaderless == 0 && g_get_monotonic_time() < until) {
        jsStreamInfo *si = NULL;
        if (js_GetStreamInfo(&si, jk, "LL", NULL, NULL) == NATS_OK) {
            if (jet_stream_info_from_member(si))
                leaderless++;
            else
                other_answers++;
            jsStreamInfo_Destroy(si);
        }
        if (leaderless == 0)
            g_usleep(200 * 1000);
    }
    g_test_message("node %d left alone: %u leaderless answer(s), %u with a leader", keep, leaderless, other_answers);
    g_assert_cmpuint(leaderless, >, 0);

    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = jet_stream_info_led(&si, jk, "LL", 1000, NULL, &jerr);
    g_test_message("while leaderless: %s (err %d)", natsStatus_GetText(s), (int)jerr);
    g_assert_cmpint(s, !=, NATS_OK);
    g_assert_null(si);

    jet_test_cluster_restart(c, leader);
    jet_test_cluster_restart(c, other);
    /* Until the cluster has its meta leader again, the member answers 503
     * ("temporarily unavailable"), late: asked again, not an answer. */
    s = jet_stream_info_led(&si, jk, "LL", 60000, NULL, &jerr);
    if (s != NATS_OK)
        g_test_message("after the restarts: %s (err %d)", natsStatus_GetText(s), (int)jerr);
    g_assert_cmpint(s, ==, NATS_OK);
    g_assert_false(jet_stream_info_from_member(si));
    g_assert_cmpuint(si->State.Msgs, ==, N_MSGS);
    g_test_message("back: leader %s, %" G_GUINT64_FORMAT " messages", si->Cluster->Leader, si->State.Msgs);
    jsStreamInfo_Destroy(si);

    /* Asked the moment the two go again, and given them back a second
     * later: what the member says meanwhile (its own state, or 503 while
     * the cluster has no meta leader) is asked again; the answer is the
     * leader's, with every message. */
    int leader2 = jet_test_cluster_stream_leader(c, jk, "LL");
    g_assert_cmpint(leader2, >=, 0);
    int keep2 = (leader2 + 1) % 3, other2 = (leader2 + 2) % 3;
    natsConnection *nk2 = NULL;
    jsCtx *jk2 = jet_test_js_open(jet_test_cluster_url(c, keep2), &nk2);
    jet_test_cluster_stop(c, leader2);
    jet_test_cluster_stop(c, other2);
    /* Restarted from this thread: a server dies with the thread that
     * started it (die_with_parent). */
    LedRead lr = { .js = jk2 };
    gint64 t0 = g_get_monotonic_time();
    GThread *t = g_thread_new("led-read", led_read, &lr);
    g_usleep(G_USEC_PER_SEC);
    jet_test_cluster_restart(c, leader2);
    jet_test_cluster_restart(c, other2);
    g_thread_join(t);
    g_test_message("asked while they went: %s (err %d) after %.1f s", natsStatus_GetText(lr.s), (int)lr.jerr,
                   (g_get_monotonic_time() - t0) / 1e6);
    g_assert_cmpint(lr.s, ==, NATS_OK);
    g_assert_false(jet_stream_info_from_member(lr.si));
    g_assert_cmpuint(lr.si->State.Msgs, ==, N_MSGS);
    jsStreamInfo_Destroy(lr.si);
    jet_test_js_close(nk2, jk2);
    jet_test_js_close(nk, jk);
    jet_test_js_close(nc, js);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cluster-replicas/created", test_created);
    g_test_add_func("/cluster-replicas/existing", test_existing);
    g_test_add_func("/cluster-replicas/stream-info-leaderless", test_stream_info_leaderless);
    return g_test_run();
}
