/* forward.so under `jethost run` against a real nats-server: the host's
 * publish-then-ack (docs/forwarding.md) end to end.
 *
 *   kills      10,000 messages forwarded from ORDERS to FWD while the host
 *              is SIGKILLed three times, each as soon as the publish of a
 *              message picked at random reaches the server (g_test_rand:
 *              GLib prints what it started from at the top of the output,
 *              so a run can be repeated); every origin acked, FWD
 *              holds each forward exactly once, and the test's own
 *              subscriber counts the duplicates the target's Nats-Msg-Id
 *              window absorbed;
 *   refusals   no stream for the subject, a subject one token past what a
 *              stream covers, a message over the target's max_msg_size:
 *              retried, then dead-lettered (exhausted) with the server's
 *              refusal in Jethost-Reason;
 *   metrics    the plugin-metrics line at stop: forwarded and bad_subject
 *              exact;
 *   ordered    an ordered binding (checkpoint = kv) killed mid-run: FWD is
 *              the stream in order, once each;
 *   check      `jethost check --server` with publish_streams: a short
 *              duplicate window warned, a missing stream an error;
 *   loops      a forward into the stream it consumes, known from the
 *              server alone: `check --server` and `run` refuse it (exit 3,
 *              nothing forwarded), allow_loop accepts it; a managed stream
 *              whose subjects overlap ORDERS (the server's 10065): `run`
 *              exits 3 at once, naming both streams and the binding;
 *   hop-limit  the loop allowed with max_hops = 3: three forwards, each
 *              one hop further, the third dead-lettered as hop-limit. */
#include "forward.h"
#include "harness.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

/* The host's hop count header (docs/forwarding.md). */
#define JET_HOPS_NAME "Jethost-Hops"

/* The target's duplicate window: 2 minutes, the server's default. */
#define DUP_WINDOW_MS G_GINT64_CONSTANT(120000)

/* ------------------------------------------------------------------------ */
/* Streams and messages                                                     */
/* ------------------------------------------------------------------------ */

/* Publishes (async) one message with a header, the payload given. */
static void publish_one(jsCtx *js, const char *subject, const char *hname, const char *hvalue, const void *data,
                        int len)
{
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, subject, NULL, data, len), ==, NATS_OK);
    if (hname != NULL)
        g_assert_cmpint(natsMsgHeader_Set(m, hname, hvalue), ==, NATS_OK);
    g_assert_cmpint(js_PublishMsgAsync(js, &m, NULL), ==, NATS_OK);
}

/* Origin messages 1..n (their seqs on a fresh ORDERS): subject orders.new,
 * header Region r<i % 5>, payload "msg-<i>". */
static void publish_orders(jsCtx *js, guint n)
{
    for (guint i = 1; i <= n; i++) {
        char region[8], data[32];
        g_snprintf(region, sizeof region, "r%u", i % 5);
        int len = g_snprintf(data, sizeof data, "msg-%u", i);
        publish_one(js, "orders.new", "Region", region, data, len);
    }
    jet_test_publish_wait(js);
}

/* The origin seq a forward's payload names ("msg-<i>"), or 0. */
static guint64 payload_seq(natsMsg *m)
{
    char text[32];
    int len = natsMsg_GetDataLength(m);
    if (len <= 4 || len >= (int)sizeof text)
        return 0;
    memcpy(text, natsMsg_GetData(m), (size_t)len);
    text[len] = '\0';
    return g_str_has_prefix(text, "msg-") ? g_ascii_strtoull(text + 4, NULL, 10) : 0;
}

/* Every message of FWD: the origin seq its payload names must be 1..n and
 * its subject fwd.r<i % 5>.new.  Returns how often each origin seq is
 * there (index 0 unused); *in_order: FWD's order is the origin's;
 * *wrong_ids: messages whose Msg-Id is not the host's for that origin and
 * consumer (checked after the counts by the caller, so that a broken id
 * shows as the duplicates it lets through). */
static guint *read_target(jsCtx *js, guint n, const char *consumer, gboolean *in_order, guint *wrong_ids)
{
    gint64 created = jet_test_stream_created(js, "ORDERS");
    guint64 total = jet_test_stream_msgs(js, "FWD");
    guint *count = g_new0(guint, n + 1);
    *in_order = TRUE;
    *wrong_ids = 0;
    for (guint64 seq = 1; seq <= total; seq++) {
        natsMsg *m = jet_test_stream_get(js, "FWD", seq);
        guint64 o = payload_seq(m);
        if (o < 1 || o > n)
            g_error("FWD seq %" G_GUINT64_FORMAT " names origin %" G_GUINT64_FORMAT, seq, o);
        count[o]++;
        *in_order = *in_order && o == seq;
        g_autofree char *subject = g_strdup_printf("fwd.r%u.new", (guint)(o % 5));
        g_assert_cmpstr(natsMsg_GetSubject(m), ==, subject);
        g_autofree char *id = g_strdup_printf("jethost-pub:ORDERS.%s:%" G_GUINT64_FORMAT ":%" G_GINT64_FORMAT ":0",
                                              consumer, o, created);
        *wrong_ids += g_strcmp0(jet_test_msg_header(m, "Nats-Msg-Id"), id) != 0;
        natsMsg_Destroy(m);
    }
    return count;
}

/* Each origin 1..n in FWD exactly once, under the host's Msg-Id. */
static void assert_once_each(const guint *count, guint n, guint wrong_ids)
{
    for (guint i = 1; i <= n; i++)
        if (count[i] != 1)
            g_error("origin %u is in FWD %u times", i, count[i]);
    g_assert_cmpuint(wrong_ids, ==, 0);
}

/* ------------------------------------------------------------------------ */
/* The host                                                                 */
/* ------------------------------------------------------------------------ */

/* `jethost run` with [host] on url and the caller's binding groups;
 * stderr to a file (*errlog). */
static GSubprocess *spawn_host(const char *name, const char *url, const char *binding, char **errlog)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n%s", url,
                                            state, binding);
    return jet_test_jethost_spawn_config(name, text, errlog);
}

/* A durable forwarding binding "fwd" on ORDERS with short waits. */
static char *durable_binding(const char *extra)
{
    g_autofree char *plugin = jet_test_plugin_copy("forward");
    return g_strdup_printf("[binding fwd]\nplugin = %s\nstream = ORDERS\nconsumer = fwd\nack_wait = 2s\n"
                           "expires = 2s\nidle_heartbeat = 1s\nfloor_age = 0\n"
                           "option.subject = fwd.{header:Region}.{token:2}\n%s", plugin, extra);
}

/* ------------------------------------------------------------------------ */
/* The test's own subscriber on the target's subjects                       */
/* ------------------------------------------------------------------------ */

/* A plain subscriber sees every publish that reaches the server, also those
 * the stream then drops as duplicates of a Nats-Msg-Id it has: what the
 * dedup absorbed is what it saw less what the stream stored.  It also kills
 * the host the moment the publish of origin kill_at arrives: a publish on
 * the server whose origin the host may not have acked yet. */
typedef struct {
    guint n;
    gint *seen;          /* per origin seq, atomic */
    gint total;          /* atomic */
    gint kill_at;        /* atomic: the origin seq whose forward kills the host; 0: none */
    gint kill_pid;       /* atomic: the host to kill, once */
    natsSubscription *sub;
} Observer;

static void observed(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    Observer *o = closure;
    guint64 seq = payload_seq(m);
    if (seq >= 1 && seq <= o->n)
        g_atomic_int_inc(&o->seen[seq]);
    g_atomic_int_inc(&o->total);
    gint pid = g_atomic_int_get(&o->kill_pid);
    if (seq != 0 && seq == (guint64)g_atomic_int_get(&o->kill_at) && pid > 0 &&
        g_atomic_int_compare_and_exchange(&o->kill_pid, pid, 0))
        kill((pid_t)pid, SIGKILL);
    natsMsg_Destroy(m);
}

/* Publishes origins 1..n (publish_orders) and starts watching fwd.>. */
static void observer_start(Observer *o, natsConnection *nc, jsCtx *js, guint n)
{
    publish_orders(js, n);
    memset(o, 0, sizeof *o);
    o->n = n;
    o->seen = g_new0(gint, n + 1);
    g_assert_cmpint(natsConnection_Subscribe(&o->sub, nc, "fwd.>", observed, o), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_SetPendingLimits(o->sub, -1, -1), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
}

static void observer_end(Observer *o, natsConnection *nc)
{
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
    /* Every publish counted: none dropped as a slow consumer. */
    int64_t dropped = 0;
    g_assert_cmpint(natsSubscription_GetDropped(o->sub, &dropped), ==, NATS_OK);
    g_assert_cmpint(dropped, ==, 0);
    g_assert_cmpint(natsSubscription_Drain(o->sub), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_WaitForDrainCompletion(o->sub, 10000), ==, NATS_OK);
    natsSubscription_Destroy(o->sub);
    o->sub = NULL;
}

/* The highest origin seq seen so far. */
static guint observer_max(Observer *o)
{
    guint max = 0;
    for (guint i = 1; i <= o->n; i++)
        if (g_atomic_int_get(&o->seen[i]) > 0)
            max = i;
    return max;
}

/* Spawns the host, killed once the forward of origin kill_at is seen. */
static GSubprocess *spawn_to_kill(Observer *o, const char *name, const char *url, const char *binding,
                                  guint kill_at, char **errlog)
{
    g_atomic_int_set(&o->kill_pid, 0);
    g_atomic_int_set(&o->kill_at, (gint)kill_at);
    GSubprocess *host = spawn_host(name, url, binding, errlog);
    /* Long before the host can have forwarded kill_at: it has to connect,
     * bind and work through what lies before it first. */
    g_atomic_int_set(&o->kill_pid, (gint)g_ascii_strtoll(g_subprocess_get_identifier(host), NULL, 10));
    return host;
}

/* ------------------------------------------------------------------------ */
/* The fixture                                                              */
/* ------------------------------------------------------------------------ */

/* The target stream FWD, as a test wants it. */
typedef struct {
    const char *subject;
    gint32 max_msg_size;   /* 0: none */
} Target;

static const Target target_all = { "fwd.>", 0 };
/* One token under fwd., and small. */
static const Target target_narrow = { "fwd.*", 512 };

/* A nats-server, the test's connection, the origin stream ORDERS on
 * orders.> and the target FWD (data: a Target), both with a 2-minute
 * duplicate window. */
typedef struct {
    JetTestServer *srv;
    const char *url;
    natsConnection *nc;
    jsCtx *js;
} Env;

static void env_setup(Env *e, gconstpointer data)
{
    const Target *t = data;
    e->srv = jet_test_server_start();
    e->url = jet_test_server_url(e->srv);
    e->js = jet_test_js_open(e->url, &e->nc);
    jet_test_stream_create_full(e->js, "ORDERS", "orders.>", FALSE, DUP_WINDOW_MS, 0);
    jet_test_stream_create_full(e->js, "FWD", t->subject, FALSE, DUP_WINDOW_MS, t->max_msg_size);
}

static void env_teardown(Env *e, gconstpointer data)
{
    (void)data;
    jet_test_js_close(e->nc, e->js);
    jet_test_server_free(e->srv);
}

/* ------------------------------------------------------------------------ */
/* 10,000 forwards, three kills                                             */
/* ------------------------------------------------------------------------ */

#define KILLS_N 10000

static void test_kills(Env *e, gconstpointer data)
{
    (void)data;
    const char *url = e->url;
    natsConnection *nc = e->nc;
    jsCtx *js = e->js;
    Observer o;
    observer_start(&o, nc, js, KILLS_N);
    /* Four workers and batches of 50: many forwards in flight when the
     * kill comes, in the publish step and in acks waiting to go. */
    g_autofree char *binding = durable_binding("workers = 4\nbatch = 50\nthreshold = 25\n");

    gint64 t0 = g_get_monotonic_time();
    for (guint k = 0; k < 3; k++) {
        guint at = (guint)g_test_rand_int_range((gint32)(1000 + k * 3000), (gint32)(3000 + k * 3000));
        at = MAX(at, observer_max(&o) + 200);
        g_autofree char *name = g_strdup_printf("killed-%u", k);
        g_autofree char *errlog = NULL;
        g_autoptr(GSubprocess) host = spawn_to_kill(&o, name, url, binding, at, &errlog);
        g_assert_cmpint(jet_test_jethost_wait(host, 120000), ==, 128 + SIGKILL);
        g_test_message("kill %u: as the forward of origin %u reached the server (%d publishes seen so far)", k + 1,
                       at, g_atomic_int_get(&o.total));
    }
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) last = spawn_host("last", url, binding, &errlog);
    JetTestFloorWait fw = { js, "ORDERS", "fwd", KILLS_N };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 180000));
    gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
    jet_test_jethost_stop(last, errlog);
    observer_end(&o, nc);

    /* Each forward exactly once; each origin seen at least once. */
    gboolean in_order = FALSE;
    guint wrong_ids = 0;
    g_autofree guint *count = read_target(js, KILLS_N, "fwd", &in_order, &wrong_ids);
    assert_once_each(count, KILLS_N, wrong_ids);
    guint redone = 0;
    for (guint i = 1; i <= KILLS_N; i++) {
        g_assert_cmpint(o.seen[i], >=, 1);
        redone += o.seen[i] > 1;
    }
    g_assert_cmpuint(jet_test_stream_msgs(js, "FWD"), ==, KILLS_N);
    guint absorbed = (guint)g_atomic_int_get(&o.total) - KILLS_N;
    /* A run that sent nothing twice would prove nothing about the window:
     * each kill lands on a forward the server has and whose origin is
     * most likely not acked yet (seen: 7 to 16 over three kills). */
    g_assert_cmpuint(absorbed, >=, 1);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "fwd");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, KILLS_N);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    g_assert_cmpuint(ci->NumPending, ==, 0);
    g_test_message("%u forwards in %" G_GINT64_FORMAT " ms over 3 kills; %u publishes sent again, for %u origins, "
                   "absorbed by the duplicate window", KILLS_N, took_ms, absorbed, redone);
    jsConsumerInfo_Destroy(ci);
    g_free(o.seen);
}

/* ------------------------------------------------------------------------ */
/* A target that refuses                                                    */
/* ------------------------------------------------------------------------ */

/* Each origin names its target in header To; FWD covers fwd.* and takes
 * at most 512 bytes.  The first three are refused by the server on every
 * delivery: retried on the ladder, then dead-lettered as exhausted with
 * the refusal in the record; the fourth is forwarded. */
static void test_refusals(Env *e, gconstpointer data)
{
    (void)data;
    const char *url = e->url;
    jsCtx *js = e->js;
    static const struct {
        const char *to;
        gsize size;
        const char *reasons[3];
    } cases[] = {
        { "nowhere.x", 10, { "publish failed: publish 1 of 1 to nowhere.x: ", "No responders available for request",
                             "(no stream captures this subject)" } },
        { "fwd.a.b", 10, { "publish failed: publish 1 of 1 to fwd.a.b: ", "No responders available for request",
                           "(no stream captures this subject)" } },
        { "fwd.big", 2000, { "publish failed: publish 1 of 1 to fwd.big: ", "message size exceeds maximum allowed",
                             "(JetStream error 10054)" } },
        { "fwd.ok", 10, { NULL } },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *payload = g_strnfill(cases[i].size, 'x');
        publish_one(js, "orders.new", "To", cases[i].to, payload, (int)cases[i].size);
    }
    jet_test_publish_wait(js);

    g_autofree char *plugin = jet_test_plugin_copy("forward");
    g_autofree char *binding = g_strdup_printf(
        "[binding fwd]\nplugin = %s\nstream = ORDERS\nconsumer = fwd\nack_wait = 2s\nexpires = 2s\n"
        "idle_heartbeat = 1s\nfloor_age = 0\nrungs = 100ms, 200ms\nmax_attempts = 3\n"
        "option.subject = {header:To}\n", plugin);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host("refusals", url, binding, &errlog);
    JetTestStreamWait dw = { js, "JETHOST_DLQ", 3 };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &dw, 30000));
    JetTestFloorWait fw = { js, "ORDERS", "fwd", G_N_ELEMENTS(cases) };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 30000));
    jet_test_jethost_stop(host, errlog);

    g_assert_cmpuint(jet_test_stream_msgs(js, "JETHOST_DLQ"), ==, 3);
    for (guint64 seq = 1; seq <= 3; seq++) {
        natsMsg *rec = jet_test_stream_get(js, "JETHOST_DLQ", seq);
        guint64 origin = g_ascii_strtoull(jet_test_msg_header(rec, "Jethost-Origin-Seq"), NULL, 10);
        g_assert_cmpuint(origin, >=, 1);
        g_assert_cmpuint(origin, <=, 3);
        const char *reason = jet_test_msg_header(rec, "Jethost-Reason");
        g_test_message("origin %" G_GUINT64_FORMAT " (to %s): %s", origin, cases[origin - 1].to, reason);
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Cause"), ==, "exhausted");
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Failures"), ==, "3");
        for (guint r = 0; r < 3; r++)
            g_assert_nonnull(strstr(reason, cases[origin - 1].reasons[r]));
        g_assert_cmpint(natsMsg_GetDataLength(rec), ==, (int)cases[origin - 1].size);
        natsMsg_Destroy(rec);
    }
    g_assert_cmpuint(jet_test_stream_msgs(js, "FWD"), ==, 1);
    natsMsg *ok = jet_test_stream_get(js, "FWD", 1);
    g_assert_cmpstr(natsMsg_GetSubject(ok), ==, "fwd.ok");
    natsMsg_Destroy(ok);

    /* The ladder walked: each refused origin failed three times. */
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_cmpuint(jet_test_count_lines(log, "event=dead-lettered"), ==, 3);
    /* One stored: the nine refused publishes are not counted (the plugin
     * counts in settled(), not when it queues). */
    g_assert_nonnull(strstr(log, "event=plugin-metrics msg=\"forwarded=1 duplicates=0 bad_subject=0\""));
}

/* ------------------------------------------------------------------------ */
/* The plugin's counters at stop                                            */
/* ------------------------------------------------------------------------ */

static void test_metrics(Env *e, gconstpointer data)
{
    (void)data;
    const char *url = e->url;
    jsCtx *js = e->js;
    const guint good = 300, bad = 7;
    publish_orders(js, good);
    for (guint i = 0; i < bad; i++)
        publish_one(js, "orders.new", NULL, NULL, "no region", 9);   /* no Region header */
    jet_test_publish_wait(js);

    /* Origin 1's forward already in FWD, under the id the host gives it
     * (as if an earlier run stored it and died before its ack): the
     * stream answers "duplicate"; origin 1 counts as forwarded, and as a
     * duplicate. */
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, "ORDERS", NULL, NULL), ==, NATS_OK);
    g_autofree char *id = jet_publish_msg_id("ORDERS", "fwd", 1, si->Created, 0);
    jsStreamInfo_Destroy(si);
    publish_one(js, "fwd.r1.new", "Nats-Msg-Id", id, "msg-1", 5);
    jet_test_publish_wait(js);

    g_autofree char *binding = durable_binding("workers = 2\noption.on_bad_subject = reject\n");
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host("metrics", url, binding, &errlog);
    JetTestFloorWait fw = { js, "ORDERS", "fwd", good + bad };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 60000));
    jet_test_jethost_stop(host, errlog);

    g_autofree char *log = jet_test_read_text(errlog);
    g_autofree char *want = g_strdup_printf("binding=fwd event=plugin-metrics msg=\"forwarded=%u duplicates=1 "
                                            "bad_subject=%u\"", good, bad);
    if (jet_test_count_lines(log, want) != 1)
        g_error("no line with '%s' in:\n%s", want, log);
    g_assert_cmpuint(jet_test_stream_msgs(js, "FWD"), ==, good);
    g_assert_cmpuint(jet_test_stream_msgs(js, "JETHOST_DLQ"), ==, bad);
    natsMsg *rec = jet_test_stream_get(js, "JETHOST_DLQ", 1);
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Cause"), ==, "rejected");
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Reason"), ==, "bad subject: {header:Region}: the message has no header Region");
    natsMsg_Destroy(rec);
}

/* ------------------------------------------------------------------------ */
/* An ordered binding                                                       */
/* ------------------------------------------------------------------------ */

#define ORDERED_N 2000

/* Killed as a forward reaches the server, restarted where its checkpoint
 * says: FWD is ORDERS in order, each once (a forward sent again after the
 * restart is absorbed by its Msg-Id, which names the binding). */
static void test_ordered(Env *e, gconstpointer data)
{
    (void)data;
    const char *url = e->url;
    natsConnection *nc = e->nc;
    jsCtx *js = e->js;
    Observer o;
    observer_start(&o, nc, js, ORDERED_N);
    g_autofree char *plugin = jet_test_plugin_copy("forward");
    g_autofree char *binding = g_strdup_printf(
        "[binding ofwd]\nplugin = %s\nstream = ORDERS\nkind = ordered\ncheckpoint = kv\nbatch = 50\n"
        "expires = 2s\nidle_heartbeat = 1s\noption.subject = fwd.{header:Region}.{token:2}\n", plugin);

    guint at = (guint)g_test_rand_int_range(300, 1500);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) first = spawn_to_kill(&o, "ordered-killed", url, binding, at, &errlog);
    g_assert_cmpint(jet_test_jethost_wait(first, 60000), ==, 128 + SIGKILL);
    g_test_message("killed as the forward of origin %u reached the server", at);
    g_autofree char *errlog2 = NULL;
    g_autoptr(GSubprocess) second = spawn_host("ordered", url, binding, &errlog2);
    JetTestStreamWait full = { js, "FWD", ORDERED_N };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &full, 60000));
    jet_test_jethost_stop(second, errlog2);
    observer_end(&o, nc);

    gboolean in_order = FALSE;
    guint wrong_ids = 0;
    g_autofree guint *count = read_target(js, ORDERED_N, "ofwd", &in_order, &wrong_ids);
    assert_once_each(count, ORDERED_N, wrong_ids);
    g_assert_cmpuint(jet_test_stream_msgs(js, "FWD"), ==, ORDERED_N);
    g_assert_true(in_order);
    g_test_message("%d publishes sent again after the restart, absorbed", g_atomic_int_get(&o.total) - ORDERED_N);
    g_free(o.seen);
}

/* ------------------------------------------------------------------------ */
/* jethost check --server and publish_streams                               */
/* ------------------------------------------------------------------------ */

/* Runs `jethost check -c CONF --server URL` on the binding; its exit code
 * and stdout. */
static int check_with_more(const char *url, const char *name, const char *publish_streams, const char *more,
                           char **out)
{
    g_autofree char *plugin = jet_test_plugin_copy("forward");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\n\n[binding fwd]\nplugin = %s\nstream = ORDERS\nconsumer = fwd\n"
        "rungs = 1s\nmax_attempts = 2\npostpone_horizon = 0\nack_wait = 2s\nfloor_age = 0\n"
        "option.subject = fwd.{token:2}\npublish_streams = %s\n\n%s", url, plugin, publish_streams,
        more != NULL ? more : "");
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    const char *args[] = { "check", "-c", conf, "--server", url, NULL };
    int rc = jet_test_jethost_run(args, out, NULL);
    g_test_message("check %s: exit %d\n%s", publish_streams, rc, *out);
    return rc;
}

static int check_with(const char *url, const char *name, const char *publish_streams, char **out)
{
    return check_with_more(url, name, publish_streams, NULL, out);
}

static gboolean stream_exists(gpointer data)
{
    JetTestStreamWait *w = data;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, w->js, w->stream, NULL, NULL) != NATS_OK)
        return FALSE;
    jsStreamInfo_Destroy(si);
    return TRUE;
}

/* The binding's worst case is 1s (ladder) + 3 x 2s (crash fallback) = 7s:
 * FWD's 2 minutes pass, SHORT's 7s (equal) and 5s warn, a stream that is
 * not there is an error. */
static void test_check(Env *e, gconstpointer data)
{
    (void)data;
    const char *url = e->url;
    jsCtx *js = e->js;
    jet_test_stream_create_full(js, "SHORT", "short.>", FALSE, 7000, 0);
    jet_test_stream_create_full(js, "SHORTER", "shorter.>", FALSE, 5000, 0);
    jet_test_stream_create_full(js, "LONGER", "longer.>", FALSE, 7001, 0);

    g_autofree char *out = NULL;
    g_assert_cmpint(check_with(url, "fine", "FWD, LONGER", &out), ==, 0);
    g_assert_null(strstr(out, "publish-"));

    g_free(g_steal_pointer(&out));
    g_assert_cmpint(check_with(url, "short", "FWD, SHORT, SHORTER", &out), ==, 0);
    g_assert_nonnull(strstr(out, "warning publish-dedup-window: publish_streams: duplicate window of SHORT (7s), "
                                 "SHORTER (5s) not longer than the worst case 7s (ladder 1s + postpone horizon 0 + "
                                 "last postpone 0 + crash fallback 6s)"));
    g_assert_null(strstr(out, "FWD ("));

    g_free(g_steal_pointer(&out));
    g_assert_cmpint(check_with(url, "missing", "FWD, NOPE", &out), ==, 3);
    g_assert_nonnull(strstr(out, "error   publish-stream-missing: publish_streams: not on the server: NOPE "
                                 "(does not exist);"));
    g_assert_nonnull(strstr(out, "FAILED: 1 of 1 binding: fwd (schedule: publish-stream-missing)"));

    /* A stream another binding of the config creates, not on the server
     * yet: judged by the duplicate_window it will be made with. */
    g_autofree char *plugin = jet_test_plugin_copy("forward");
    g_autofree char *sink = g_strdup_printf("[binding sink]\nplugin = %s\nstream = MADE\nconsumer = sink\n"
                                            "subjects = made.>\nduplicate_window = 5s\nack_wait = 2s\n"
                                            "floor_age = 0\noption.subject = elsewhere.{token:2}\n", plugin);
    g_free(g_steal_pointer(&out));
    g_assert_cmpint(check_with_more(url, "made", "FWD, MADE", sink, &out), ==, 0);
    g_assert_nonnull(strstr(out, "warning publish-dedup-window: publish_streams: duplicate window of MADE (5s)"));
    g_assert_null(strstr(out, "publish-stream-missing"));
    /* And made so by run. */
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host("made", url, sink, &errlog);
    JetTestStreamWait sw = { js, "MADE", 0 };
    g_assert_true(jet_test_wait_until(stream_exists, &sw, 20000));
    jet_test_jethost_stop(host, errlog);
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, "MADE", NULL, NULL), ==, NATS_OK);
    g_assert_cmpint(si->Config->Duplicates, ==, G_GINT64_CONSTANT(5000000000));
    jsStreamInfo_Destroy(si);
}

/* Runs `jethost ARGS... -c` on [host] + binding, returns its exit code and
 * (*log) what it printed on stdout and stderr. */
static int host_says(const char *url, const char *name, const char *binding, gboolean check, char **log)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\nplugin_dir = %s\n\n%s", url,
                                            state, jet_test_private_dir(), binding);
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    const char *check_args[] = { "check", "-c", conf, "--server", url, NULL };
    const char *run_args[] = { "run", "-c", conf, NULL };
    g_autofree char *out = NULL, *err = NULL;
    int rc = jet_test_jethost_run(check ? check_args : run_args, &out, &err);
    *log = g_strconcat(out != NULL ? out : "", err != NULL ? err : "", NULL);
    g_test_message("%s %s: exit %d\n%s", check ? "check" : "run", name, rc, *log);
    return rc;
}

static void test_loops(Env *e, gconstpointer data)
{
    (void)data;
    /* By its bare name, as an operator names it: the check knows the
     * shipped plugin so. */
    g_autofree char *copy = jet_test_plugin_copy("forward");
    g_autofree char *dst = g_build_filename(jet_test_private_dir(), "forward.so", NULL);
    g_assert_cmpint(g_rename(copy, dst), ==, 0);
    const char *plugin = "forward";
    /* ORDERS is the server's (orders.>): the config does not say. */
    g_autofree char *self = g_strdup_printf("[binding enrich]\nplugin = %s\nstream = ORDERS\nconsumer = enrich\n"
                                            "option.subject = orders.enriched\n", plugin);
    const char *loop = "binding enrich publishes orders.enriched into stream ORDERS (subjects orders.>), "
                       "which binding enrich consumes";
    g_autofree char *log = NULL;
    g_assert_cmpint(host_says(e->url, "self", self, TRUE, &log), ==, 3);
    g_assert_nonnull(strstr(log, loop));
    g_assert_nonnull(strstr(log, "FAILED: 1 of 1 binding: enrich (publish-loop)"));
    g_free(g_steal_pointer(&log));
    publish_orders(e->js, 1);
    g_assert_cmpint(host_says(e->url, "self", self, FALSE, &log), ==, 3);
    g_assert_nonnull(strstr(log, loop));
    g_assert_nonnull(strstr(log, "enrich (publish loop); exiting with code 3 (a config error)"));
    g_assert_null(strstr(log, "event=running"));
    g_assert_cmpuint(jet_test_stream_msgs(e->js, "ORDERS"), ==, 1);   /* nothing forwarded */

    g_autofree char *allowed = g_strconcat(self, "allow_loop = true\n", NULL);
    g_free(g_steal_pointer(&log));
    g_assert_cmpint(host_says(e->url, "allowed", allowed, TRUE, &log), ==, 0);

    /* A sink stream the config creates over ORDERS' subjects: the server
     * refuses it (10065); no retry, no other binding blamed. */
    g_autofree char *sink = g_strdup_printf(
        "[binding enrich]\nplugin = %s\nstream = ORDERS\nconsumer = enrich\noption.subject = audit.{token:2}\n\n"
        "[binding sink]\nplugin = %s\nstream = SINK\nconsumer = sink\nsubjects = audit.>, orders.enriched\n"
        "option.subject = fwd.{token:2}\n", plugin, plugin);
    g_free(g_steal_pointer(&log));
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(host_says(e->url, "sink", sink, FALSE, &log), ==, 3);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
    g_assert_nonnull(strstr(log, "binding sink: create stream SINK (subjects audit.>, orders.enriched): its subjects "
                                 "overlap those of stream ORDERS (orders.>) on the server: a config error, not "
                                 "retried"));
    g_assert_nonnull(strstr(log, "[err 10065]"));
    g_assert_cmpuint(jet_test_count_lines(log, "event=resubscribing"), ==, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=enrich event=failed"), ==, 0);
    g_assert_nonnull(strstr(log, "1 of 2 bindings cannot start: sink ("));
}

/* ------------------------------------------------------------------------ */
/* A loop that is meant: bounded by the hop count                           */
/* ------------------------------------------------------------------------ */

/* allow_loop with max_hops = 3 on a forward into the stream it consumes:
 * one order makes three forwards, each carrying the host's count one up;
 * the third comes back with Jethost-Hops 3 and is dead-lettered as
 * hop-limit, unhandled, and the loop ends. */
static void test_hop_limit(Env *e, gconstpointer data)
{
    (void)data;
    jsCtx *js = e->js;
    g_autofree char *plugin = jet_test_plugin_copy("forward");
    /* A count the host did not write ("0" is padded to none) is no count. */
    publish_one(js, "orders.new", JET_HOPS_NAME, "00", "msg-1", 5);
    jet_test_publish_wait(js);
    g_autofree char *binding = g_strdup_printf(
        "[binding enrich]\nplugin = %s\nstream = ORDERS\nconsumer = enrich\nack_wait = 2s\nexpires = 2s\n"
        "idle_heartbeat = 1s\nfloor_age = 0\noption.subject = orders.enriched\nallow_loop = true\nmax_hops = 3\n",
        plugin);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host("hop-limit", e->url, binding, &errlog);
    JetTestStreamWait dw = { js, "JETHOST_DLQ", 1 };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &dw, 30000));
    JetTestFloorWait fw = { js, "ORDERS", "enrich", 4 };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 30000));
    jet_test_jethost_stop(host, errlog);

    /* The order and its three forwards, each one hop further. */
    g_assert_cmpuint(jet_test_stream_msgs(js, "ORDERS"), ==, 4);
    for (guint64 seq = 2; seq <= 4; seq++) {
        natsMsg *m = jet_test_stream_get(js, "ORDERS", seq);
        g_assert_cmpstr(natsMsg_GetSubject(m), ==, "orders.enriched");
        g_autofree char *hops = g_strdup_printf("%" G_GUINT64_FORMAT, seq - 1);
        g_assert_cmpstr(jet_test_msg_header(m, JET_HOPS_NAME), ==, hops);
        natsMsg_Destroy(m);
    }
    g_assert_cmpuint(jet_test_stream_msgs(js, "JETHOST_DLQ"), ==, 1);
    natsMsg *rec = jet_test_stream_get(js, "JETHOST_DLQ", 1);
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Cause"), ==, "hop-limit");
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Origin-Seq"), ==, "4");
    g_assert_nonnull(strstr(jet_test_msg_header(rec, "Jethost-Reason"), "max_hops 3"));
    /* The delivery's own headers, renamed as every Jethost- one is. */
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Orig-Jethost-Hops"), ==, "3");
    natsMsg_Destroy(rec);
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_nonnull(strstr(log, "event=plugin-metrics msg=\"forwarded=3 duplicates=0 bad_subject=0\""));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/forward/kills", Env, &target_all, env_setup, test_kills, env_teardown);
    g_test_add("/forward/refusals", Env, &target_narrow, env_setup, test_refusals, env_teardown);
    g_test_add("/forward/metrics", Env, &target_all, env_setup, test_metrics, env_teardown);
    g_test_add("/forward/ordered", Env, &target_all, env_setup, test_ordered, env_teardown);
    g_test_add("/forward/check", Env, &target_all, env_setup, test_check, env_teardown);
    g_test_add("/forward/loops", Env, &target_all, env_setup, test_loops, env_teardown);
    g_test_add("/forward/hop-limit", Env, &target_all, env_setup, test_hop_limit, env_teardown);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
