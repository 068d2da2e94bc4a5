/* A three-node nats-server cluster for tests, built on the single-server
 * fixture of harness.h: each node on 127.0.0.1, client and cluster ports
 * chosen by the server (read back from its ports file), JetStream on each,
 * a store of its own, dying with the test process.  See docs/testing.md,
 * "The cluster fixture". */
#ifndef JET_TEST_CLUSTER_H
#define JET_TEST_CLUSTER_H

#include "harness.h"

#define JET_TEST_CLUSTER_NODES 3

typedef struct JetTestCluster JetTestCluster;

/* Starts three nodes and waits until the cluster has a meta leader and
 * every node's JetStream answers; a test fails when it cannot. */
JetTestCluster *jet_test_cluster_start(void);
void jet_test_cluster_free(JetTestCluster *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetTestCluster, jet_test_cluster_free)

/* Node i's client URL and server name (-n); every node's URL, comma-separated. */
const char *jet_test_cluster_url(const JetTestCluster *c, int i);
const char *jet_test_cluster_name(const JetTestCluster *c, int i);
const char *jet_test_cluster_urls(const JetTestCluster *c);
JetTestServer *jet_test_cluster_node(const JetTestCluster *c, int i);
/* The node of a server name; -1 for none. */
int jet_test_cluster_index(const JetTestCluster *c, const char *name);
/* The node a connection is on now; -1 when it is not connected. */
int jet_test_cluster_connected(const JetTestCluster *c, natsConnection *nc);

/* Whether, within timeout_ms, every running node sees a meta leader and a
 * meta group of all three nodes (its /jsz, -m -1), and its JetStream
 * answers. */
gboolean jet_test_cluster_wait_ready(JetTestCluster *c, guint timeout_ms);

/* The node leading a stream (its info's Cluster.Leader), or a stream's
 * consumer; -1 when there is none now or the info cannot be read. */
int jet_test_cluster_stream_leader(JetTestCluster *c, jsCtx *js, const char *stream);
int jet_test_cluster_consumer_leader(JetTestCluster *c, jsCtx *js, const char *stream, const char *consumer);
/* Asks the leader to step down; returns whether the server said yes. */
gboolean jet_test_cluster_stream_stepdown(natsConnection *nc, const char *stream);
gboolean jet_test_cluster_consumer_stepdown(natsConnection *nc, const char *stream, const char *consumer);

/* SIGSTOP (waits until stopped) / SIGCONT; kill -9; SIGTERM and wait;
 * start again on the same client and cluster ports and store, with routes
 * to the other two (waits until it takes connections, not for JetStream). */
void jet_test_cluster_pause(JetTestCluster *c, int i);
void jet_test_cluster_resume(JetTestCluster *c, int i);
void jet_test_cluster_kill(JetTestCluster *c, int i);
void jet_test_cluster_stop(JetTestCluster *c, int i);
void jet_test_cluster_restart(JetTestCluster *c, int i);
/* Node i, killed or stopped, loses its store (jet_test_server_wipe_store). */
void jet_test_cluster_wipe_store(JetTestCluster *c, int i);
gboolean jet_test_cluster_running(const JetTestCluster *c, int i);

/* Creates a file-store stream of `replicas` replicas on one subject pattern,
 * with a duplicate window in ms (0: the server's default). */
void jet_test_cluster_stream_create(jsCtx *js, const char *name, const char *subject, int replicas,
                                    gint64 duplicate_window_ms);

/* Connects to every node's URL (reconnecting for ever, 100 ms apart). */
jsCtx *jet_test_cluster_js_open(const JetTestCluster *c, natsConnection **nc);

#endif
