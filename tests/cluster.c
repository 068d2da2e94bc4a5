/* The three-node cluster fixture (tests/cluster.h).
 *
 * Ports: each node runs with -p -1 and --cluster nats://127.0.0.1:-1, and
 * nats-server 2.9 writes both chosen ports to its ports file ("nats",
 * "cluster"), so no port is guessed or bound by the test.  The catch is the
 * first node: 2.9 refuses clustered JetStream without a configured route, and
 * no peer's cluster port is known yet.  Its first boot gets a route to port 0,
 * which nothing can listen on (the dial fails at once and is retried in the
 * background, harmlessly); the second node routes to the first, the third to
 * both, and gossip completes the mesh.  Every restart of any node routes to
 * the other two by their known cluster ports, and reuses its own. */
#define _GNU_SOURCE
#include "cluster.h"

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct JetTestCluster {
    JetTestServer *node[JET_TEST_CLUSTER_NODES];
    char *name[JET_TEST_CLUSTER_NODES];
    int cluster_port[JET_TEST_CLUSTER_NODES];
    gboolean paused[JET_TEST_CLUSTER_NODES];
    gboolean down[JET_TEST_CLUSTER_NODES];
    char *urls;
    /* Of this cluster alone: test programs run side by side, and a node of
     * another cluster can get a port that a stopped node of this one had;
     * a route to it is then refused for its name, never merged. */
    char *cluster_name;
};

/* A port a node wrote to its ports file ("cluster", "monitoring"); -1
 * while the file is not there yet (a restarted node writes a new one). */
static int read_port(JetTestServer *s, const char *member)
{
    g_autofree char *file = g_strdup_printf("%s/nats-server_%d.ports", jet_test_server_dir(s),
                                            (int)jet_test_server_pid(s));
    g_autofree char *text = NULL;
    if (!g_file_get_contents(file, &text, NULL, NULL))
        return -1;
    g_autoptr(JsonParser) p = json_parser_new();
    /* Empty while the node writes it: no root yet. */
    JsonNode *root = json_parser_load_from_data(p, text, -1, NULL) ? json_parser_get_root(p) : NULL;
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return -1;
    JsonObject *o = json_node_get_object(root);
    if (o == NULL || !json_object_has_member(o, member))
        return -1;
    JsonArray *a = json_object_get_array_member(o, member);
    if (a == NULL || json_array_get_length(a) == 0)
        return -1;
    const char *colon = strrchr(json_array_get_string_element(a, 0), ':');
    return colon != NULL ? atoi(colon + 1) : -1;
}

/* The arguments of node i: its name, its cluster port (-1 before it has
 * one), and routes to every other node that has one (port 0 when none has). */
static char **node_args(JetTestCluster *c, int i)
{
    GPtrArray *a = g_ptr_array_new();
    g_ptr_array_add(a, g_strdup("-n"));
    g_ptr_array_add(a, g_strdup(c->name[i]));
    g_ptr_array_add(a, g_strdup("--cluster_name"));
    g_ptr_array_add(a, g_strdup(c->cluster_name));
    g_ptr_array_add(a, g_strdup("--cluster"));
    g_ptr_array_add(a, g_strdup_printf("nats://127.0.0.1:%d", c->cluster_port[i] > 0 ? c->cluster_port[i] : -1));
    GString *routes = g_string_new(NULL);
    for (int j = 0; j < JET_TEST_CLUSTER_NODES; j++)
        if (j != i && c->cluster_port[j] > 0)
            g_string_append_printf(routes, "%snats://127.0.0.1:%d", routes->len ? "," : "", c->cluster_port[j]);
    if (routes->len == 0)
        g_string_append(routes, "nats://127.0.0.1:0");
    /* /jsz tells when the meta group has every node (cluster_size). */
    g_ptr_array_add(a, g_strdup("-m"));
    g_ptr_array_add(a, g_strdup("-1"));
    g_ptr_array_add(a, g_strdup("--routes"));
    g_ptr_array_add(a, g_string_free(routes, FALSE));
    g_ptr_array_add(a, NULL);
    return (char **)g_ptr_array_free(a, FALSE);
}

/* Three fresh nodes under a name never used before; TRUE once they elected
 * a JetStream meta leader within timeout_ms. */
static gboolean cluster_try(JetTestCluster *c, guint timeout_ms)
{
    static gint started;
    c->cluster_name = g_strdup_printf("jettest-%d-%d", (int)getpid(), g_atomic_int_add(&started, 1));
    GString *urls = g_string_new(NULL);
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++) {
        c->name[i] = g_strdup_printf("n%d", i);
        g_auto(GStrv) args = node_args(c, i);
        c->node[i] = jet_test_server_start_plain((const char *const *)args);
        c->cluster_port[i] = read_port(c->node[i], "cluster");
        g_assert_cmpint(c->cluster_port[i], >, 0);
        g_string_append_printf(urls, "%s%s", urls->len ? "," : "", jet_test_server_url(c->node[i]));
    }
    c->urls = g_string_free(urls, FALSE);
    /* Every node now has a port: restarts route to the other two. */
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++) {
        g_auto(GStrv) args = node_args(c, i);
        jet_test_server_set_args(c->node[i], (const char *const *)args);
    }
    return jet_test_cluster_wait_ready(c, timeout_ms);
}

static void cluster_stop(JetTestCluster *c)
{
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++) {
        jet_test_server_free(c->node[i]);
        c->node[i] = NULL;
        g_clear_pointer(&c->name[i], g_free);
        c->cluster_port[i] = 0;
        c->down[i] = c->paused[i] = FALSE;
    }
    g_clear_pointer(&c->urls, g_free);
    g_clear_pointer(&c->cluster_name, g_free);
}

JetTestCluster *jet_test_cluster_start(void)
{
    JetTestCluster *c = g_new0(JetTestCluster, 1);
    /* 60 s: three clusters of three and a build at low priority share two
     * cores in ./quickstart test; 2.10 once took more than 30 s there.  A
     * cluster that formed no meta group in that time (2.10.27 on a loaded
     * 2-core machine, no host involved yet) is made again once, from new
     * nodes, and said so: what the tests check starts after this. */
    if (!cluster_try(c, 60000)) {
        g_test_message("the cluster %s elected no JetStream meta leader within 60 s: started again from new "
                       "nodes", c->urls);
        cluster_stop(c);
        if (!cluster_try(c, 60000))
            g_error("the cluster %s elected no JetStream meta leader within 60 s, twice", c->urls);
    }
    g_test_message("cluster %s: cluster ports %d, %d, %d", c->urls, c->cluster_port[0], c->cluster_port[1],
                   c->cluster_port[2]);
    return c;
}

void jet_test_cluster_free(JetTestCluster *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++) {
        jet_test_server_free(c->node[i]);
        g_free(c->name[i]);
    }
    g_free(c->urls);
    g_free(c->cluster_name);
    g_free(c);
}

const char *jet_test_cluster_url(const JetTestCluster *c, int i) { return jet_test_server_url(c->node[i]); }
const char *jet_test_cluster_name(const JetTestCluster *c, int i) { return c->name[i]; }
const char *jet_test_cluster_urls(const JetTestCluster *c) { return c->urls; }
JetTestServer *jet_test_cluster_node(const JetTestCluster *c, int i) { return c->node[i]; }
gboolean jet_test_cluster_running(const JetTestCluster *c, int i) { return !c->down[i] && !c->paused[i]; }

int jet_test_cluster_index(const JetTestCluster *c, const char *name)
{
    for (int i = 0; name != NULL && i < JET_TEST_CLUSTER_NODES; i++)
        if (strcmp(c->name[i], name) == 0)
            return i;
    return -1;
}

int jet_test_cluster_connected(const JetTestCluster *c, natsConnection *nc)
{
    char buf[256];
    if (natsConnection_GetConnectedUrl(nc, buf, sizeof buf) != NATS_OK || buf[0] == '\0')
        return -1;
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++)
        if (strcmp(buf, jet_test_server_url(c->node[i])) == 0)
            return i;
    return -1;
}

/* A node's JetStream answers account info without an error: it reaches a
 * meta leader. */
static gboolean node_js_ready(const char *url)
{
    natsConnection *nc = NULL;
    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url);
    natsOptions_SetTimeout(o, 500);
    natsOptions_SetAllowReconnect(o, false);
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK)
        return FALSE;
    natsMsg *reply = NULL;
    s = natsConnection_RequestString(&reply, nc, "$JS.API.INFO", "", 1000);
    gboolean ok = s == NATS_OK && natsMsg_GetDataLength(reply) > 0 &&
                  g_strstr_len(natsMsg_GetData(reply), natsMsg_GetDataLength(reply), "\"error\"") == NULL;
    natsMsg_Destroy(reply);
    natsConnection_Destroy(nc);
    return ok;
}

/* The node's /jsz: a meta leader is elected and the meta group counts
 * every node; R3 placement fails before that. */
static gboolean node_meta_complete(JetTestServer *s)
{
    g_autoptr(GSocketClient) sc = g_socket_client_new();
    g_socket_client_set_timeout(sc, 2);
    g_socket_client_set_enable_proxy(sc, FALSE);
    int port = read_port(s, "monitoring");
    if (port <= 0)
        return FALSE;
    g_autoptr(GSocketConnection) conn = g_socket_client_connect_to_host(sc, "127.0.0.1", (guint16)port, NULL, NULL);
    if (conn == NULL)
        return FALSE;
    const char req[] = "GET /jsz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
    if (!g_output_stream_write_all(out, req, sizeof req - 1, NULL, NULL, NULL))
        return FALSE;
    GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(conn));
    g_autoptr(GByteArray) buf = g_byte_array_new();
    guint8 chunk[4096];
    gssize n;
    while ((n = g_input_stream_read(in, chunk, sizeof chunk, NULL, NULL)) > 0)
        g_byte_array_append(buf, chunk, (guint)n);
    g_byte_array_append(buf, (const guint8 *)"", 1);
    const char *body = strstr((const char *)buf->data, "\r\n\r\n");
    if (body == NULL)
        return FALSE;
    g_autoptr(JsonParser) p = json_parser_new();
    /* An empty body (a node still starting) parses to no root. */
    JsonNode *root = json_parser_load_from_data(p, body + 4, -1, NULL) ? json_parser_get_root(p) : NULL;
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return FALSE;
    JsonObject *o = json_node_get_object(root);
    if (o == NULL || !json_object_has_member(o, "meta_cluster"))
        return FALSE;
    JsonObject *m = json_object_get_object_member(o, "meta_cluster");
    return m != NULL && json_object_has_member(m, "leader") && *json_object_get_string_member(m, "leader") &&
           json_object_get_int_member_with_default(m, "cluster_size", 0) == JET_TEST_CLUSTER_NODES;
}

static gboolean all_ready(gpointer data)
{
    JetTestCluster *c = data;
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++)
        if (jet_test_cluster_running(c, i) && !node_meta_complete(c->node[i]))
            return FALSE;
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++)
        if (jet_test_cluster_running(c, i) && !node_js_ready(jet_test_server_url(c->node[i])))
            return FALSE;
    return TRUE;
}

gboolean jet_test_cluster_wait_ready(JetTestCluster *c, guint timeout_ms)
{
    return jet_test_wait_until(all_ready, c, timeout_ms);
}

int jet_test_cluster_stream_leader(JetTestCluster *c, jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = 2000;
    if (js_GetStreamInfo(&si, js, stream, &o, NULL) != NATS_OK)
        return -1;
    int i = si->Cluster != NULL ? jet_test_cluster_index(c, si->Cluster->Leader) : -1;
    jsStreamInfo_Destroy(si);
    return i;
}

int jet_test_cluster_consumer_leader(JetTestCluster *c, jsCtx *js, const char *stream, const char *consumer)
{
    jsConsumerInfo *ci = NULL;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = 2000;
    if (js_GetConsumerInfo(&ci, js, stream, consumer, &o, NULL) != NATS_OK)
        return -1;
    int i = ci->Cluster != NULL ? jet_test_cluster_index(c, ci->Cluster->Leader) : -1;
    jsConsumerInfo_Destroy(ci);
    return i;
}

static gboolean stepdown(natsConnection *nc, const char *subject)
{
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_RequestString(&reply, nc, subject, "", 5000);
    gboolean ok = s == NATS_OK &&
                  g_strstr_len(natsMsg_GetData(reply), natsMsg_GetDataLength(reply), "\"success\":true") != NULL;
    if (!ok)
        g_test_message("%s: %s", subject, s == NATS_OK ? natsMsg_GetData(reply) : natsStatus_GetText(s));
    natsMsg_Destroy(reply);
    return ok;
}

gboolean jet_test_cluster_stream_stepdown(natsConnection *nc, const char *stream)
{
    g_autofree char *subject = g_strdup_printf("$JS.API.STREAM.LEADER.STEPDOWN.%s", stream);
    return stepdown(nc, subject);
}

gboolean jet_test_cluster_consumer_stepdown(natsConnection *nc, const char *stream, const char *consumer)
{
    g_autofree char *subject = g_strdup_printf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", stream, consumer);
    return stepdown(nc, subject);
}

void jet_test_cluster_pause(JetTestCluster *c, int i)
{
    jet_test_server_pause(c->node[i]);
    c->paused[i] = TRUE;
}

void jet_test_cluster_resume(JetTestCluster *c, int i)
{
    jet_test_server_resume(c->node[i]);
    c->paused[i] = FALSE;
}

void jet_test_cluster_kill(JetTestCluster *c, int i)
{
    jet_test_server_kill(c->node[i]);
    c->down[i] = TRUE;
}

void jet_test_cluster_stop(JetTestCluster *c, int i)
{
    jet_test_server_stop(c->node[i]);
    c->down[i] = TRUE;
}

void jet_test_cluster_wipe_store(JetTestCluster *c, int i)
{
    g_assert_true(c->down[i]);
    jet_test_server_wipe_store(c->node[i]);
}

void jet_test_cluster_restart(JetTestCluster *c, int i)
{
    jet_test_server_restart(c->node[i]);
    c->down[i] = FALSE;
}

void jet_test_cluster_stream_create(jsCtx *js, const char *name, const char *subject, int replicas,
                                    gint64 duplicate_window_ms)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name;
    const char *subjects[] = { subject };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Replicas = replicas;
    sc.Duplicates = duplicate_window_ms * G_GINT64_CONSTANT(1000000);
    /* A node that has just joined may not count as a peer for placement
     * yet (10005, no suitable peers), on a loaded machine for seconds: asked
     * again for up to 30 s.  An attempt that timed out may have made the
     * stream: 10058 (the name is in use) after one is success. */
    gint64 until = g_get_monotonic_time() + 30 * G_TIME_SPAN_SECOND;
    for (guint attempt = 1;; attempt++) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_AddStream(&si, js, &sc, NULL, &jerr);
        jsStreamInfo_Destroy(si);
        if (s == NATS_OK || (attempt > 1 && jerr == 10058))
            return;
        gboolean again = jerr == 10005 || s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS;
        if (!again || g_get_monotonic_time() > until)
            g_error("create stream %s (R%d), attempt %u: %s (err %d)", name, replicas, attempt, natsStatus_GetText(s),
                    (int)jerr);
        g_usleep(500 * 1000);
    }
}

jsCtx *jet_test_cluster_js_open(const JetTestCluster *c, natsConnection **nc)
{
    natsOptions *o = NULL;
    g_assert_cmpint(natsOptions_Create(&o), ==, NATS_OK);
    const char *servers[JET_TEST_CLUSTER_NODES];
    for (int i = 0; i < JET_TEST_CLUSTER_NODES; i++)
        servers[i] = jet_test_server_url(c->node[i]);
    natsOptions_SetServers(o, servers, JET_TEST_CLUSTER_NODES);
    natsOptions_SetSendAsap(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 100);
    natsStatus s = natsConnection_Connect(nc, o);
    natsOptions_Destroy(o);
    g_assert_cmpint(s, ==, NATS_OK);
    return jet_test_js_context(*nc);
}
