/* Per-key lanes against a real nats-server (docs/lanes.md): per-key order
 * of first successful handling equals stream order under random retries
 * and postpones, one handler at a time per key, parallel keys, the bound,
 * order kept across a killed host, progress after a host killed with a
 * backlog at a bound, and a binding that holds work and does none named.
 *
 * Keys ride in header "Key"; fx_gate's handled.log gives each handling's
 * stream seq, delivery, verdict and start and end times. */
#define _GNU_SOURCE
#include "rig.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    guint64 seq;
    guint deliveries;
    gint64 end_ns, start_ns;
    char verdict;
} Handling;

static GArray *read_handled(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    GArray *a = g_array_new(FALSE, TRUE, sizeof(Handling));
    if (!jet_test_read_lines(path, &text))
        return a;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        Handling h = { 0 };
        unsigned long long s = 0, thread = 0;
        long long end = 0, start = 0;
        unsigned f = 0, p = 0;
        g_assert_cmpint(sscanf(*l, "%llu %u %llx %lld %u %u %c %lld", &s, &h.deliveries, &thread, &end, &f, &p,
                               &h.verdict, &start), ==, 8);
        h.seq = s;
        h.end_ns = end;
        h.start_ns = start;
        g_array_append_val(a, h);
    }
    return a;
}

/* Publishes n messages on orders.new, message i (stream seq i + first)
 * keyed keys[i] (NULL: no Key header). */
static void publish_keyed(jsCtx *js, guint n, char **keys)
{
    for (guint i = 0; i < n; i++) {
        natsMsg *m = NULL;
        char data[32];
        int len = snprintf(data, sizeof data, "msg-%u", i + 1);
        g_assert_cmpint(natsMsg_Create(&m, "orders.new", NULL, data, len), ==, NATS_OK);
        if (keys[i] != NULL)
            natsMsgHeader_Set(m, "Key", keys[i]);
        g_assert_cmpint(js_PublishMsgAsync(js, &m, NULL), ==, NATS_OK);
    }
    jet_test_publish_wait(js);
}

/* n keys "k0".."k<nkeys-1>", drawn from a seeded generator. */
static char **random_keys(GRand *rng, guint n, guint nkeys)
{
    char **keys = g_new0(char *, n + 1);
    for (guint i = 0; i < n; i++)
        keys[i] = g_strdup_printf("k%u", (guint)g_rand_int_range(rng, 0, (gint32)nkeys));
    return keys;
}

static guint64 test_seed(void)
{
    const char *env = g_getenv("JET_LANES_SEED");
    guint64 seed = env != NULL ? g_ascii_strtoull(env, NULL, 10) : (guint64)g_get_real_time();
    g_test_message("seed %" G_GUINT64_FORMAT " (JET_LANES_SEED=%" G_GUINT64_FORMAT " repeats it)", seed, seed);
    return seed;
}

/* Per key: the stream seqs in the order of their first ACK, which must
 * be ascending; and no two handlings of one key overlap in time.  Returns
 * how many distinct seqs were acked. */
static guint check_order(GArray *handled, char **keys, guint64 first_seq)
{
    g_autoptr(GHashTable) acked = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GHashTable) last_of_key = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    for (guint i = 0; i < handled->len; i++) {
        Handling *h = &g_array_index(handled, Handling, i);
        if (h->verdict != 'a' || g_hash_table_contains(acked, &h->seq))
            continue;
        g_hash_table_add(acked, &h->seq);
        const char *key = keys[h->seq - first_seq];
        const char *k = key != NULL ? key : "";
        guint64 *last = g_hash_table_lookup(last_of_key, k);
        if (last != NULL && *last > h->seq)
            g_error("key %s: stream seq %" G_GUINT64_FORMAT " first acked after seq %" G_GUINT64_FORMAT, k, h->seq,
                    *last);
        if (last == NULL) {
            last = g_new(guint64, 1);
            g_hash_table_insert(last_of_key, (gpointer)k, last);
        }
        *last = h->seq;
    }
    /* One at a time per key: sort each key's handlings by start. */
    g_autoptr(GHashTable) end_of_key = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    g_autoptr(GArray) sorted = g_array_copy(handled);
    for (guint i = 1; i < sorted->len; i++)
        for (guint j = i; j > 0 && g_array_index(sorted, Handling, j - 1).start_ns >
                                       g_array_index(sorted, Handling, j).start_ns; j--) {
            Handling t = g_array_index(sorted, Handling, j);
            g_array_index(sorted, Handling, j) = g_array_index(sorted, Handling, j - 1);
            g_array_index(sorted, Handling, j - 1) = t;
        }
    for (guint i = 0; i < sorted->len; i++) {
        Handling *h = &g_array_index(sorted, Handling, i);
        const char *k = keys[h->seq - first_seq] != NULL ? keys[h->seq - first_seq] : "";
        gint64 *end = g_hash_table_lookup(end_of_key, k);
        if (end != NULL && *end > h->start_ns)
            g_error("key %s: stream seq %" G_GUINT64_FORMAT " started while another of its key ran", k, h->seq);
        if (end == NULL) {
            end = g_new(gint64, 1);
            g_hash_table_insert(end_of_key, (gpointer)k, end);
        }
        *end = h->end_ns;
    }
    return g_hash_table_size(acked);
}

static guint64 dlq_count(jsCtx *js)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, js, "JETHOST_DLQ", NULL, NULL) != NATS_OK)
        return 0;
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

#define N_ORDER 10000

/* 10,000 messages over 100 keys, 4 workers, a 1 ms handler that retries or
 * postpones 5 % of deliveries: per key, first successful handling in
 * stream order, never two at once; everything acked or dead-lettered. */
static void test_order_random(void)
{
    guint64 seed = test_seed();
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    Rig r = { 0 };
    rig_server(&r);
    g_auto(GStrv) keys = random_keys(rng, N_ORDER, 100);
    publish_keyed(r.js, N_ORDER, keys);
    g_autofree char *extra = g_strdup_printf(
        "key = header:Key\nworkers = 4\nbatch = 50\nack_wait = 2s\nrungs = 100ms\nmax_attempts = 5\n"
        "option.sleep = 1ms\noption.random_percent = 5\noption.random_seed = %" G_GUINT64_FORMAT "\n"
        "option.postpone_delay = 150ms\n", seed);
    rig_engine(&r, extra);
    FloorWait fw = { &r, N_ORDER };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 240000));
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_autoptr(GArray) handled = read_handled(r.dir);
    guint acked = check_order(handled, keys, 1);
    guint64 dead = dlq_count(r.js);
    g_test_message("%u handlings, %u acked, %" G_GUINT64_FORMAT " dead-lettered, %" G_GUINT64_FORMAT " retried, %"
                   G_GUINT64_FORMAT " postponed, %" G_GUINT64_FORMAT " waited in a lane", handled->len, acked, dead,
                   st.retried, st.postponed, st.lane_waits);
    g_assert_cmpuint(acked + dead, ==, N_ORDER);
    g_assert_cmpuint(st.retried + st.postponed, >, 0);
    g_assert_cmpuint(st.lane_waits, >, 0);
    rig_free(&r);
}

/* One key, 4 workers: exactly one at a time, in stream order. */
static void test_single_key(void)
{
    Rig r = { 0 };
    rig_server(&r);
    char **keys = g_new0(char *, 301);
    for (guint i = 0; i < 300; i++)
        keys[i] = g_strdup("only");
    publish_keyed(r.js, 300, keys);
    rig_engine(&r, "key = header:Key\nworkers = 4\nbatch = 20\noption.sleep = 1ms\n");
    FloorWait fw = { &r, 300 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&r);
    g_autoptr(GArray) handled = read_handled(r.dir);
    g_assert_cmpuint(handled->len, ==, 300);
    for (guint i = 0; i < handled->len; i++)
        g_assert_cmpuint(g_array_index(handled, Handling, i).seq, ==, i + 1);
    g_assert_cmpuint(check_order(handled, keys, 1), ==, 300);
    g_strfreev(keys);
    rig_free(&r);
}

/* Time until n keyed messages are all acked with `workers` workers. */
static gint64 run_timed(guint workers, guint n, char **keys)
{
    Rig r = { 0 };
    rig_server(&r);
    publish_keyed(r.js, n, keys);
    g_autofree char *extra = g_strdup_printf("key = header:Key\nworkers = %u\nbatch = 100\noption.sleep = 1ms\n",
                                             workers);
    gint64 t0 = g_get_monotonic_time();
    rig_engine(&r, extra);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 120000));
    gint64 us = g_get_monotonic_time() - t0;
    rig_stop(&r);
    rig_free(&r);
    return us;
}

/* 100 keys, a 1 ms handler: 4 workers at least 3 times one worker. */
static void test_throughput(void)
{
    guint64 seed = test_seed();
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    const guint n = 3000;
    g_auto(GStrv) keys = random_keys(rng, n, 100);
    gint64 one = run_timed(1, n, keys);
    gint64 four = run_timed(4, n, keys);
    g_test_message("%u messages, 100 keys, 1 ms handler: 1 worker %" G_GINT64_FORMAT " ms, 4 workers %" G_GINT64_FORMAT
                   " ms: %.2fx", n, one / 1000, four / 1000, (double)one / (double)four);
    g_assert_cmpfloat((double)one / (double)four, >=, 3.0);
}

typedef struct {
    Rig *r;
    guint64 max_pending;
    guint64 seq;
} PendingWatch;

static gboolean seq_acked(gpointer data)
{
    PendingWatch *pw = data;
    jsConsumerInfo *ci = jet_test_consumer_info(pw->r->js, "ORDERS", "c");
    pw->max_pending = MAX(pw->max_pending, (guint64)ci->NumAckPending);
    gboolean done = ci->AckFloor.Stream >= pw->seq && ci->NumAckPending == 0;
    jsConsumerInfo_Destroy(ci);
    return done;
}

/* The bound: key A's head postponed 4 s while A floods; pulls stop at
 * max_lane_held, the other keys' messages already held go on, and A is
 * handled in stream order once its head is back. */
static void test_bound(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 400;
    char **keys = g_new0(char *, n + 1);
    for (guint i = 0; i < n; i++)
        keys[i] = g_strdup(i % 8 == 1 ? "B" : "A");   /* seq 1 is A's head */
    publish_keyed(r.js, n, keys);
    jet_test_stderr_begin("lanes-bound");
    rig_engine(&r, "key = header:Key\nworkers = 2\nbatch = 20\nmax_lane_held = 40\nack_wait = 2s\n"
                   "floor_age = 1s\noption.postpone_first_seq = 1\noption.postpone_delay = 4s\n");
    /* While the head is away: B's messages among those held are handled,
     * and what the server counts as pending stays near the bound. */
    PendingWatch pw = { &r, 0, 0 };
    gint64 until = g_get_monotonic_time() + 3 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < until) {
        seq_acked(&pw);
        g_usleep(100 * 1000);
    }
    g_autoptr(GArray) early = read_handled(r.dir);
    guint b_done = 0;
    for (guint i = 0; i < early->len; i++) {
        Handling *h = &g_array_index(early, Handling, i);
        g_assert_cmpstr(keys[h->seq - 1], ==, h->seq == 1 ? "A" : "B");   /* no A handled but the head */
        b_done += h->seq != 1;
    }
    g_test_message("while A's head was away: %u of B handled, at most %" G_GUINT64_FORMAT " pending", b_done,
                   pw.max_pending);
    g_assert_cmpuint(b_done, >, 0);
    /* Held behind A's head: at most max_lane_held, plus the head, plus
     * B's that are ready or in hand. */
    g_assert_cmpuint(pw.max_pending, <=, 40 + 1 + 20);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.lane_bound, >=, 1);
    pw.seq = n;
    g_assert_true(jet_test_wait_until(seq_acked, &pw, 60000));
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();
    /* The floor monitor names the lane that holds the floor. */
    g_assert_cmpuint(jet_test_count_lines(log, "holds the floor in lane A: given back to the server"), >=, 1);
    g_autoptr(GArray) handled = read_handled(r.dir);
    g_assert_cmpuint(check_order(handled, keys, 1), ==, n);
    g_strfreev(keys);
    rig_free(&r);
}

/* A message whose key header has two values fits no lane honestly: it is
 * dead-lettered, and the rest go on. */
static void test_ambiguous_key(void)
{
    Rig r = { 0 };
    rig_server(&r);
    char *keys[] = { "A", NULL, "A", NULL };
    publish_keyed(r.js, 1, keys);
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, "orders.new", NULL, "two", 3), ==, NATS_OK);
    natsMsgHeader_Add(m, "Key", "A");
    natsMsgHeader_Add(m, "Key", "B");
    g_assert_cmpint(js_PublishMsgAsync(r.js, &m, NULL), ==, NATS_OK);
    jet_test_publish_wait(r.js);
    publish_keyed(r.js, 1, keys + 2);
    rig_engine(&r, "key = header:Key\nworkers = 2\n");
    FloorWait fw = { &r, 3 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    rig_stop(&r);
    g_assert_cmpuint(dlq_count(r.js), ==, 1);
    natsMsg *rec = NULL;
    g_assert_cmpint(js_GetMsg(&rec, r.js, "JETHOST_DLQ", 1, NULL, NULL), ==, NATS_OK);
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Origin-Seq"), ==, "2");
    g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Cause"), ==, "malformed-headers");
    g_assert_nonnull(strstr(jet_test_msg_header(rec, "Jethost-Reason"), "two different values"));
    natsMsg_Destroy(rec);
    g_autoptr(GArray) handled = read_handled(r.dir);
    g_assert_cmpuint(handled->len, ==, 2);
    rig_free(&r);
}

static GSubprocess *spawn_host(Rig *r, const char *name, const char *extra, char **errlog)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nname = %s\n\n[binding t]\nplugin = %s\nstream = ORDERS\nconsumer = c\n"
        "key = header:Key\nworkers = 4\nbatch = 20\nack_wait = 2s\nidle_heartbeat = 500ms\nexpires = 2s\n"
        "rungs = 100ms\nclaim_heartbeat = 500ms\nclaim_ttl = 2s\noption.dir = %s\n%s",
        jet_test_server_url(r->srv), name, plugin, r->dir, extra);
    return jet_test_jethost_spawn_config(name, text, errlog);
}

/* The host killed with messages of several lanes in hand (one in a
 * handler, heads given back, successors waiting), then started again at
 * once (no claim to wait for: exclusive = false, one host at a time), so
 * it pulls new messages before the dead run's come back after AckWait:
 * per-key order holds across the restart. */
static void test_kill_restart(void)
{
    guint64 seed = test_seed();
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 2000;
    g_auto(GStrv) keys = random_keys(rng, n, 20);
    publish_keyed(r.js, n, keys);
    g_autofree char *opts = g_strdup_printf("exclusive = false\noption.sleep = 1ms\noption.random_percent = 5\noption.random_seed = %"
                                            G_GUINT64_FORMAT "\noption.postpone_delay = 300ms\n", seed);
    g_autofree char *first = g_strdup_printf("%soption.block_seq = 700\n", opts);
    g_autofree char *err1 = NULL;
    g_autoptr(GSubprocess) h1 = spawn_host(&r, "lanes-kill-1", first, &err1);
    g_autofree char *inflight = g_build_filename(r.dir, "inflight-700", NULL);
    g_assert_true(jet_test_wait_file(inflight, 60000));
    g_subprocess_force_exit(h1);
    g_assert_cmpint(jet_test_jethost_wait(h1, 10000), ==, 128 + SIGKILL);
    g_autofree char *go = g_build_filename(r.dir, "go-700", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_test_message("killed with %" G_GINT64_FORMAT " unacked (ack floor %" G_GUINT64_FORMAT ", delivered %"
                   G_GUINT64_FORMAT ")", ci->NumAckPending, ci->AckFloor.Stream, ci->Delivered.Stream);
    g_assert_cmpint(ci->NumAckPending, >, 1);
    jsConsumerInfo_Destroy(ci);

    g_autofree char *err2 = NULL;
    g_autoptr(GSubprocess) h2 = spawn_host(&r, "lanes-kill-2", opts, &err2);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 180000));
    jet_test_jethost_stop(h2, err2);
    g_autofree char *log2 = jet_test_read_text(err2);
    g_assert_cmpuint(jet_test_count_lines(log2, "event=lanes-recover"), ==, 1);
    g_autoptr(GArray) handled = read_handled(r.dir);
    guint acked = check_order(handled, keys, 1);
    g_assert_cmpuint(acked + dlq_count(r.js), ==, n);
    rig_free(&r);
}


/* A binding that holds messages and handles none for floor_age is named:
 * one key, its head postponed 6 s, floor_age 1 s. */
static void test_idle_named(void)
{
    Rig r = { 0 };
    rig_server(&r);
    char **keys = g_new0(char *, 41);
    for (guint i = 0; i < 40; i++)
        keys[i] = g_strdup("A");
    publish_keyed(r.js, 40, keys);
    jet_test_stderr_begin("binding-idle");
    rig_engine(&r, "key = header:Key\nworkers = 2\nbatch = 10\nack_wait = 2s\nfloor_age = 1s\n"
                   "option.postpone_first_seq = 1\noption.postpone_delay = 6s\n");
    JetEngineHealth h = { 0 };
    gint64 until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < until) {
        jet_engine_health(r.eng, &h);
        if (h.idle_holding_ms >= 1000)
            break;
        g_usleep(50 * 1000);
    }
    g_test_message("holding %u, idle %" G_GINT64_FORMAT " ms", h.buffered, h.idle_holding_ms);
    g_assert_cmpint(h.idle_holding_ms, >=, 1000);
    g_assert_cmpuint(h.buffered, >, 0);
    FloorWait fw = { &r, 40 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    jet_engine_health(r.eng, &h);
    g_assert_cmpint(h.idle_holding_ms, ==, 0);   /* nothing held any more */
    rig_stop(&r);
    g_autofree char *log = jet_test_stderr_end();
    g_assert_cmpuint(jet_test_count_lines(log, "event=binding-idle "), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "holds the floor in lane A: given back to the server"), >=, 1);
    g_strfreev(keys);
    rig_free(&r);
}

typedef struct {
    const char *name;
    guint n;            /* backlog */
    guint nkeys;        /* 1: one key */
    const char *conf;   /* binding keys of both runs */
    const char *first;  /* the first run's extra keys */
    guint kill_at_pending;  /* kill once the consumer has this many unacked (0: when block_seq is in the handler) */
    guint rekills;          /* then hosts started and killed again at 1000 unacked */
    guint limit_s;          /* the next host's time to the end (0: 120 s) */
} CrashCase;

static gboolean pending_at_least(gpointer data)
{
    PendingWatch *pw = data;
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, pw->r->js, "ORDERS", "c", NULL, NULL) != NATS_OK)
        return FALSE;   /* not made yet */
    gboolean ok = (guint64)ci->NumAckPending >= pw->seq;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

typedef struct {
    const char *dir;
    guint lines;
} LogLines;

static gboolean log_has_lines(gpointer data);

static GSubprocess *spawn_bare(Rig *r, const char *name, const char *keys, char **errlog)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nname = %s\n\n[binding t]\nplugin = %s\nstream = ORDERS\nconsumer = c\n"
        "exclusive = false\noption.dir = %s\n%s", jet_test_server_url(r->srv), name, plugin, r->dir, keys);
    return jet_test_jethost_spawn_config(name, text, errlog);
}

/* The host killed with a backlog at a bound (max_lane_held, MaxAckPending):
 * the next host makes progress and keeps per-key order. */
static void crash_at_bound_run(const CrashCase *cc, guint64 seed)
{
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    Rig r = { 0 };
    rig_server(&r);
    g_auto(GStrv) keys = random_keys(rng, cc->n, cc->nkeys);
    publish_keyed(r.js, cc->n, keys);
    g_autofree char *first = g_strdup_printf("%s%s", cc->conf, cc->first);
    g_autofree char *err1 = NULL;
    g_autoptr(GSubprocess) h1 = spawn_bare(&r, "lanes-crash-1", first, &err1);
    if (cc->kill_at_pending > 0) {
        /* With the first message postponed, only its key's lane stays
         * unacked once the others drain: a count past that key's messages
         * never comes. */
        guint head_key = 0;
        for (guint i = 0; i < cc->n; i++)
            head_key += g_strcmp0(keys[i], keys[0]) == 0;
        guint kill_at = MIN(cc->kill_at_pending, head_key);
        if (kill_at < cc->kill_at_pending)
            g_test_message("%u messages have the postponed key %s: killed once %u are unacked", head_key, keys[0],
                           kill_at);
        PendingWatch pw = { &r, 0, kill_at };
        g_assert_true(jet_test_wait_until(pending_at_least, &pw, 60000));
    } else {
        g_autofree char *inflight = g_build_filename(r.dir, "inflight-37", NULL);
        g_assert_true(jet_test_wait_file(inflight, 60000));
    }
    g_subprocess_force_exit(h1);
    g_assert_cmpint(jet_test_jethost_wait(h1, 10000), ==, 128 + SIGKILL);
    g_autofree char *go = g_build_filename(r.dir, "go-37", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    for (guint k = 0; k < cc->rekills; k++) {
        g_autofree char *errk = NULL;
        g_autoptr(GSubprocess) hk = spawn_bare(&r, "lanes-crash-k", cc->conf, &errk);
        /* Killed while handling: once it has handled a few of its own. */
        g_autoptr(GArray) before = read_handled(r.dir);
        LogLines more = { r.dir, before->len + 3 };
        gboolean moved = jet_test_wait_until(log_has_lines, &more, 60000);
        g_subprocess_force_exit(hk);
        g_assert_cmpint(jet_test_jethost_wait(hk, 10000), ==, 128 + SIGKILL);
        if (!moved) {
            g_autofree char *logk = jet_test_read_text(errk);
            g_test_message("%s", logk);
        }
        g_assert_true(moved);
    }
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_test_message("%s: killed with %" G_GINT64_FORMAT " unacked (ack floor %" G_GUINT64_FORMAT ", delivered %"
                   G_GUINT64_FORMAT ")", cc->name, ci->NumAckPending, ci->AckFloor.Stream, ci->Delivered.Stream);
    jsConsumerInfo_Destroy(ci);
    g_autofree char *err2 = NULL;
    g_autoptr(GSubprocess) h2 = spawn_bare(&r, "lanes-crash-2", cc->conf, &err2);
    FloorWait fw = { &r, cc->n };
    gint64 t0 = g_get_monotonic_time();
    gboolean done = jet_test_wait_until(floor_reached, &fw, (cc->limit_s > 0 ? cc->limit_s : 120) * 1000);
    g_test_message("%s: the next host took %.1f s", cc->name, (g_get_monotonic_time() - t0) / 1e6);
    jet_test_jethost_stop(h2, err2);
    if (!done || g_getenv("JET_LANES_SHOW") != NULL) {
        g_autofree char *log2 = jet_test_read_text(err2);
        g_test_message("%s", log2);
    }
    g_assert_true(done);
    g_autoptr(GArray) handled = read_handled(r.dir);
    guint acked = check_order(handled, keys, 1);
    g_assert_cmpuint(acked + dlq_count(r.js), ==, cc->n);
    rig_free(&r);
}

static void test_crash_at_bound(gconstpointer data)
{
    crash_at_bound_run(data, test_seed());
}

/* The same with bounds, batch, workers, AckWait, key and kill point drawn
 * from the seed: the class, not the examples above.  The config is logged
 * with the seed; JET_LANES_SEED=N repeats it. */
static void test_crash_at_bound_random(void)
{
    guint64 seed = test_seed();
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)(seed ^ 0x5eed));
    guint workers = (guint)g_rand_int_range(rng, 2, 9);
    guint batch = (guint)g_rand_int_range(rng, 1, 301);
    guint map = (guint)g_rand_int_range(rng, MAX(batch, 50), 1201);
    guint held = (guint)g_rand_int_range(rng, 1, 1201);
    guint ack_wait = (guint)g_rand_int_range(rng, 1, 3);
    gboolean subject_key = g_rand_boolean(rng);
    gboolean in_handler = g_rand_int_range(rng, 0, 4) == 0;
    guint kill_at = in_handler ? 0 : (guint)g_rand_int_range(rng, 1, (gint32)MIN(map, held) + 1);
    /* Half the cases hand the plugin batches of what the lanes have ready. */
    guint batch_max = batch >= 2 && g_rand_boolean(rng) ? (guint)g_rand_int_range(rng, 2, (gint32)MIN(batch, 10) + 1)
                                                        : 1;
    g_autofree char *conf = g_strdup_printf("key = %s\nworkers = %u\nbatch = %u\nmax_ack_pending = %u\n"
                                            "max_lane_held = %u\nack_wait = %us\noption.sleep = 1ms\n"
                                            "batch_max = %u\n",
                                            subject_key ? "subject:2" : "header:Key", workers, batch, map, held,
                                            ack_wait, batch_max);
    CrashCase cc = {
        .name = "random",
        .n = 3000,
        .nkeys = subject_key ? 1 : (g_rand_boolean(rng) ? 1 : 20),
        .conf = conf,
        .first = in_handler ? "option.block_seq = 37\n" : "option.postpone_first_seq = 1\noption.postpone_delay = 20s\n",
        .kill_at_pending = kill_at,
        .rekills = (guint)g_rand_int_range(rng, 0, 2),
    };
    g_autofree char *shown = g_strescape(conf, NULL);
    g_test_message("random case: %s keys %u, %s, rekills %u", shown, cc.nkeys,
                   in_handler ? "killed with seq 37 in a handler" : "killed at a pending count", cc.rekills);
    if (kill_at > 0)
        g_test_message("killed once %u are unacked", kill_at);
    crash_at_bound_run(&cc, seed);
}

static gboolean log_has_lines(gpointer data)
{
    LogLines *ll = data;
    g_autoptr(GArray) h = read_handled(ll->dir);
    return h->len >= ll->lines;
}

/* Milliseconds until `needle` shows in the log at path (fails after 20 s). */
static gint64 ms_until_logged(const char *path, const char *needle)
{
    gint64 t0 = g_get_monotonic_time();
    for (;;) {
        g_autofree char *text = NULL;
        if (g_file_get_contents(path, &text, NULL, NULL) && strstr(text, needle) != NULL)
            return (g_get_monotonic_time() - t0) / 1000;
        if (g_get_monotonic_time() - t0 > 20 * G_USEC_PER_SEC)
            g_error("%s: no '%s' after 20 s", path, needle);
        g_usleep(10 * 1000);
    }
}

/* Two hosts, exclusive (implied by key): one handles.  Killed (SIGKILL),
 * the standby takes over within claim_ttl plus one pull window; stopped
 * (SIGTERM), a standby takes over within a second.  Per-key order holds
 * across both hand-overs. */
static void test_exclusive_handover(void)
{
    guint64 seed = test_seed();
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 1200;
    g_auto(GStrv) keys = random_keys(rng, 2 * n, 30);
    g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;
    g_autoptr(GSubprocess) h1 = spawn_host(&r, "lanes-a", "option.sleep = 2ms\n", &e1);
    /* The first host holds the claim before the second starts. */
    ms_until_logged(e1, "event=subscribed");
    g_autoptr(GSubprocess) h2 = spawn_host(&r, "lanes-b", "option.sleep = 2ms\n", &e2);
    publish_keyed(r.js, n, keys);
    LogLines some = { r.dir, 300 };
    g_assert_true(jet_test_wait_until(log_has_lines, &some, 60000));
    g_subprocess_force_exit(h1);
    g_assert_cmpint(jet_test_jethost_wait(h1, 10000), ==, 128 + SIGKILL);
    gint64 kill_ms = ms_until_logged(e2, "event=subscribed");
    g_test_message("SIGKILL: the standby pulled %" G_GINT64_FORMAT " ms later (claim_ttl 2 s, expires 2 s)", kill_ms);
    g_assert_cmpint(kill_ms, <=, 2000 + 2000 + 1000);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 120000));

    g_autoptr(GSubprocess) h3 = spawn_host(&r, "lanes-c", "option.sleep = 2ms\n", &e3);
    ms_until_logged(e3, "event=standing-by");
    publish_keyed(r.js, n, keys + n);
    LogLines more = { r.dir, n + 300 };
    g_assert_true(jet_test_wait_until(log_has_lines, &more, 60000));
    g_subprocess_send_signal(h2, SIGTERM);
    gint64 term_ms = ms_until_logged(e3, "event=subscribed");
    g_test_message("SIGTERM: the standby pulled %" G_GINT64_FORMAT " ms later", term_ms);
    g_assert_cmpint(jet_test_jethost_wait(h2, 20000), ==, 0);
    g_assert_cmpint(term_ms, <=, 1000 + 500);   /* one second, and the test's own polling on a loaded machine */
    FloorWait all = { &r, 2 * n };
    g_assert_true(jet_test_wait_until(floor_reached, &all, 120000));
    jet_test_jethost_stop(h3, e3);
    g_autoptr(GArray) handled = read_handled(r.dir);
    g_assert_cmpuint(check_order(handled, keys, 1) + dlq_count(r.js), ==, 2 * n);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/lanes/order-random", test_order_random);
    g_test_add_func("/lanes/single-key", test_single_key);
    g_test_add_func("/lanes/throughput", test_throughput);
    g_test_add_func("/lanes/bound", test_bound);
    g_test_add_func("/lanes/ambiguous-key", test_ambiguous_key);
    g_test_add_func("/lanes/kill-restart", test_kill_restart);
    g_test_add_func("/lanes/exclusive-handover", test_exclusive_handover);
    g_test_add_func("/lanes/idle-named", test_idle_named);
    /* The host killed with a backlog at a bound, and its neighbours (other
     * bounds, batches, worker counts, a key from the subject); the first
     * six run in make check, all of them with JET_LANES_LONG=1. */
    static const CrashCase cases[] = {
        /* name, backlog, keys, both runs' keys, the first run's, kill at N unacked (0: seq 37 in a handler),
         * hosts started and killed again while handling */
        { "bound-below-pending", 3000, 1, "key = header:Key\nworkers = 4\nack_wait = 2s\nmax_lane_held = 50\n"
          "option.sleep = 1ms\n", "option.postpone_first_seq = 1\noption.postpone_delay = 20s\n", 51, 1, 0 },
        { "rekill-in-recovery", 3000, 1, "key = header:Key\nworkers = 4\nack_wait = 5s\noption.sleep = 1ms\n",
          "option.postpone_first_seq = 1\noption.postpone_delay = 3s\n", 1000, 2, 0 },
        { "subject-key-batch-1-workers-8", 2000, 1, "key = subject:2\nworkers = 8\nbatch = 1\nack_wait = 2s\n"
          "max_ack_pending = 300\nmax_lane_held = 200\noption.sleep = 1ms\n",
          "option.postpone_first_seq = 1\noption.postpone_delay = 20s\n", 200, 1, 0 },
        /* The postponed head falls due after the others' AckWait: the
         * server sends it back behind all of them, one pull at a time. */
        { "head-behind-redeliveries", 3000, 1, "key = subject:2\nworkers = 7\nbatch = 10\nmax_ack_pending = 734\n"
          "max_lane_held = 502\nack_wait = 1s\noption.sleep = 1ms\n",
          "option.postpone_first_seq = 1\noption.postpone_delay = 20s\n", 230, 1, 0 },
        /* Every unacked message a suspect, at the bound: each one's
         * settlement must let the next pull go at once (a lane paced at
         * 100 or 300 ms a suspect took 45 s or over two minutes). */
        { "suspects-at-bound", 3000, 1, "key = subject:2\nworkers = 5\nbatch = 90\nmax_ack_pending = 1154\n"
          "max_lane_held = 474\nack_wait = 2s\noption.sleep = 1ms\n", "option.block_seq = 37\n", 0, 0, 30 },
        /* A bound of 4 on one key: the bound clears each time a handling
         * settles, and the router must see it then (a take step of
         * 100 ms a turn made the next host take 79 s). */
        { "bound-4-one-key", 3000, 1, "key = header:Key\nworkers = 4\nbatch = 21\nmax_ack_pending = 203\n"
          "max_lane_held = 4\nack_wait = 2s\noption.sleep = 1ms\n", "option.block_seq = 37\n", 0, 0, 30 },
        { "batch-500-hot-and-cold", 3000, 50, "key = header:Key\nworkers = 4\nbatch = 500\nack_wait = 2s\n"
          "option.sleep = 1ms\noption.random_percent = 3\noption.postpone_delay = 1s\n",
          "option.block_seq = 37\n", 0, 2, 0 },
        { "one-key-postponed-head", 3000, 1, "key = header:Key\nworkers = 4\nack_wait = 2s\noption.sleep = 1ms\n",
          "option.postpone_first_seq = 1\noption.postpone_delay = 20s\n", 1000, 0, 0 },
        { "one-key-postpone-3s", 3000, 1, "key = header:Key\nworkers = 4\nack_wait = 2s\noption.sleep = 1ms\n",
          "option.postpone_first_seq = 1\noption.postpone_delay = 3s\n", 1000, 0, 0 },
        { "one-key-in-handler", 3000, 1, "key = header:Key\nworkers = 4\nack_wait = 2s\noption.sleep = 1ms\n",
          "option.block_seq = 37\n", 0, 1, 0 },
        { "pending-below-bound", 3000, 1, "key = header:Key\nworkers = 2\nack_wait = 2s\nmax_ack_pending = 100\n"
          "option.sleep = 1ms\n", "option.postpone_first_seq = 1\noption.postpone_delay = 20s\n", 100, 1, 0 },
        { "batch-above-pending", 2000, 20, "key = header:Key\nworkers = 4\nbatch = 500\nack_wait = 2s\n"
          "max_ack_pending = 100\noption.sleep = 1ms\n", "option.block_seq = 37\n", 0, 1, 0 },
    };
    g_test_add_func("/lanes/crash-at-bound/random", test_crash_at_bound_random);
    guint n_cases = g_getenv("JET_LANES_LONG") != NULL ? G_N_ELEMENTS(cases) : 6;
    for (guint i = 0; i < n_cases; i++) {
        g_autofree char *path = g_strdup_printf("/lanes/crash-at-bound/%s", cases[i].name);
        g_test_add_data_func(path, &cases[i], test_crash_at_bound);
    }
    return g_test_run();
}
