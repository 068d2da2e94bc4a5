/* Scaling lanes out over hosts by partitioning the subject space on the
 * server (docs/lanes.md): nats-server's deterministic subject mapping
 * (2.9+) rewrites orders.<key> to part.<N>.<key>, N a hash of the key, so
 * one key always lands in one of four partitions; one exclusive, keyed
 * binding per partition gives per-key order with the partitions shared out
 * between hosts.
 *
 *   /lanes/partition           host A runs p0,p1, host B p2,p3: all acked,
 *                              per-key order, each key in one partition,
 *                              both hosts busy
 *   /lanes/partition-failover  host C lists all four and stands by; A is
 *                              SIGTERMed and C takes p0,p1 over, order kept
 *
 * Each (host, binding) pair records into a directory of its own, so a
 * handling's partition and host are known from where it was logged. */
#define _GNU_SOURCE
#include "harness.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#define N_PARTS 4

/* The whole point: the server, not the publisher, picks the partition, from
 * the key token alone.  partition(4,1) hashes wildcard 1 into 0..3. */
static const char server_conf[] =
    "mappings = {\n"
    "  \"orders.*\": \"part.{{partition(4,1)}}.{{wildcard(1)}}\"\n"
    "}\n";

typedef struct {
    guint64 seq;
    guint deliveries;
    gint64 end_ns, start_ns;
    char verdict;
    guint part;      /* from the directory it was logged in */
    char host;
} Handling;

typedef struct {
    JetTestServer *srv;
    natsConnection *nc;
    jsCtx *js;
    char *dir;
    char *plugin;
} Part;

static void part_server(Part *p)
{
    g_autofree char *conf = jet_test_write_file("partition-server.conf", server_conf);
    const char *const args[] = { "-c", conf, NULL };
    p->srv = jet_test_server_start_args(args);
    p->js = jet_test_js_open(jet_test_server_url(p->srv), &p->nc);
    jet_test_stream_create(p->js, "PARTS", "part.>");
    static guint n;
    g_autofree char *name = g_strdup_printf("partition-%u", ++n);
    p->dir = g_build_filename(jet_test_private_dir(), name, NULL);
    g_assert_cmpint(g_mkdir(p->dir, 0700), ==, 0);
    p->plugin = jet_test_plugin_copy("fx_gate");
}

static void part_free(Part *p)
{
    jet_test_js_close(p->nc, p->js);
    jet_test_server_free(p->srv);
    g_free(p->dir);
    g_free(p->plugin);
}

static char *gate_dir(Part *p, char host, guint part)
{
    g_autofree char *name = g_strdup_printf("%c-p%u", host, part);
    return g_build_filename(p->dir, name, NULL);
}

/* A host running the partitions listed in parts (e.g. "01"), each an
 * exclusive keyed binding named pN on consumer pN.  The binding names are
 * the claims' names: the same on every host, so two hosts listing one
 * partition agree on who runs it. */
static GSubprocess *spawn_host(Part *p, char host, const char *parts, const char *extra, char **errlog)
{
    GString *text = g_string_new(NULL);
    g_string_append_printf(text, "[host]\nserver = %s\nname = host-%c\n", jet_test_server_url(p->srv), host);
    for (const char *c = parts; *c; c++) {
        guint n = (guint)(*c - '0');
        g_autofree char *dir = gate_dir(p, host, n);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        g_string_append_printf(text,
                               "\n[binding p%u]\nplugin = %s\nstream = PARTS\nconsumer = p%u\n"
                               "filter_subject = part.%u.>\nkey = subject:3\nworkers = 2\nbatch = 20\n"
                               "ack_wait = 5s\nidle_heartbeat = 500ms\nexpires = 2s\n"
                               "claim_heartbeat = 500ms\nclaim_ttl = 2s\noption.dir = %s\n%s",
                               n, p->plugin, n, n, dir, extra);
    }
    static guint spawned;
    g_autofree char *name = g_strdup_printf("partition-host-%c-%u", host, ++spawned);
    GSubprocess *proc = jet_test_jethost_spawn_config(name, text->str, errlog);
    g_string_free(text, TRUE);
    return proc;
}

static guint log_count(const char *errlog, const char *needle)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(errlog, &text, NULL, NULL))
        return 0;
    return jet_test_count_lines(text, needle);
}

typedef struct {
    const char *errlog;
    char needle[64];
} LogWait;

static gboolean log_has(gpointer data)
{
    LogWait *w = data;
    return log_count(w->errlog, w->needle) > 0;
}

/* Waits for "binding=pN event=EVENT" in a host's log for each N in parts. */
static void wait_event(const char *errlog, const char *parts, const char *event)
{
    for (const char *c = parts; *c; c++) {
        LogWait w = { errlog, { 0 } };
        g_snprintf(w.needle, sizeof w.needle, "binding=p%c event=%s", *c, event);
        if (!jet_test_wait_until(log_has, &w, 30000)) {
            g_autofree char *log = NULL;
            g_file_get_contents(errlog, &log, NULL, NULL);
            g_error("no '%s' within 30 s; log:\n%s", w.needle, log != NULL ? log : "");
        }
    }
}

static void read_handled(GArray *into, const char *dir, char host, guint part)
{
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    if (!jet_test_read_lines(path, &text))
        return;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        Handling h = { .part = part, .host = host };
        unsigned long long s = 0, thread = 0;
        long long end = 0, start = 0;
        unsigned f = 0, pp = 0;
        g_assert_cmpint(sscanf(*l, "%llu %u %llx %lld %u %u %c %lld", &s, &h.deliveries, &thread, &end, &f, &pp,
                               &h.verdict, &start), ==, 8);
        h.seq = s;
        h.end_ns = end;
        h.start_ns = start;
        g_array_append_val(into, h);
    }
}

/* Every handling of the hosts in `hosts` over all partitions. */
static GArray *read_all(Part *p, const char *hosts)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(Handling));
    for (const char *h = hosts; *h; h++)
        for (guint n = 0; n < N_PARTS; n++) {
            g_autofree char *dir = gate_dir(p, *h, n);
            read_handled(a, dir, *h, n);
        }
    return a;
}

static gint by_end(gconstpointer a, gconstpointer b)
{
    const Handling *x = a, *y = b;
    return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static gint by_start(gconstpointer a, gconstpointer b)
{
    const Handling *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* The partition the server put each key in, from the stream's per-subject
 * counts (part.<N>.<key>): each key in exactly one partition, and as many
 * messages there as were published with it.  Returns key -> partition. */
static GHashTable *key_partitions(jsCtx *js, char **keys, guint n, guint64 *per_part)
{
    g_autoptr(GHashTable) published = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < n; i++)
        g_hash_table_insert(published, keys[i],
                            GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(published, keys[i])) + 1));
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Info.SubjectsFilter = "part.>";
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, "PARTS", &o, NULL), ==, NATS_OK);
    g_assert_cmpuint(si->State.Msgs, ==, n);
    g_assert_nonnull(si->State.Subjects);
    GHashTable *part_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int i = 0; i < si->State.Subjects->Count; i++) {
        const jsStreamStateSubject *s = &si->State.Subjects->List[i];
        g_auto(GStrv) tok = g_strsplit(s->Subject, ".", -1);
        g_assert_cmpuint(g_strv_length(tok), ==, 3);
        g_assert_cmpstr(tok[0], ==, "part");
        guint part = (guint)g_ascii_strtoull(tok[1], NULL, 10);
        g_assert_cmpuint(part, <, N_PARTS);
        if (g_hash_table_contains(part_of, tok[2]))
            g_error("key %s is in two partitions", tok[2]);
        g_hash_table_insert(part_of, g_strdup(tok[2]), GUINT_TO_POINTER(part));
        g_assert_cmpuint(s->Msgs, ==, GPOINTER_TO_UINT(g_hash_table_lookup(published, tok[2])));
        per_part[part] += s->Msgs;
    }
    g_assert_cmpuint(g_hash_table_size(part_of), ==, g_hash_table_size(published));
    jsStreamInfo_Destroy(si);
    return part_of;
}

/* Message i (stream seq i + 1) on orders.<keys[i]>. */
static void publish_keys(jsCtx *js, char **keys, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *subject = g_strdup_printf("orders.%s", keys[i]);
        char data[32];
        int len = snprintf(data, sizeof data, "msg-%u", i + 1);
        g_assert_cmpint(js_PublishAsync(js, subject, data, len, NULL), ==, NATS_OK);
    }
    jet_test_publish_wait(js);
}

static guint64 test_seed(void)
{
    const char *env = g_getenv("JET_LANES_SEED");
    guint64 seed = env != NULL ? g_ascii_strtoull(env, NULL, 10) : (guint64)g_get_real_time();
    g_test_message("seed %" G_GUINT64_FORMAT " (JET_LANES_SEED=%" G_GUINT64_FORMAT " repeats it)", seed, seed);
    return seed;
}

static char **random_keys(GRand *rng, guint n, guint nkeys)
{
    char **keys = g_new0(char *, n + 1);
    for (guint i = 0; i < n; i++)
        keys[i] = g_strdup_printf("k%u", (guint)g_rand_int_range(rng, 0, (gint32)nkeys));
    return keys;
}

/* Each partition's consumer done: ack floor at its last message, nothing
 * pending or left. */
typedef struct {
    jsCtx *js;
    guint64 last[N_PARTS];
} AllDone;

static gboolean all_done(gpointer data)
{
    AllDone *d = data;
    for (guint n = 0; n < N_PARTS; n++) {
        char consumer[8];
        g_snprintf(consumer, sizeof consumer, "p%u", n);
        JetTestFloorWait fw = { d->js, "PARTS", consumer, d->last[n] };
        if (!jet_test_floor_reached(&fw))
            return FALSE;
    }
    return TRUE;
}

/* Across every log: each handling in the partition of its key; per key,
 * first acks in stream order and never two handlings at once (monotonic
 * clocks are one clock across the processes of a machine); every message
 * acked.  Counts each host's handlings in counts[host letter]. */
static void check_all(GArray *handled, char **keys, guint n, GHashTable *part_of, guint counts[256])
{
    g_array_sort(handled, by_end);
    g_autoptr(GHashTable) last_of_key = g_hash_table_new(g_str_hash, g_str_equal);
    g_autofree gboolean *acked = g_new0(gboolean, n + 1);
    guint n_acked = 0;
    for (guint i = 0; i < handled->len; i++) {
        Handling *h = &g_array_index(handled, Handling, i);
        g_assert_cmpuint(h->seq, >=, 1);
        g_assert_cmpuint(h->seq, <=, n);
        const char *key = keys[h->seq - 1];
        guint want = GPOINTER_TO_UINT(g_hash_table_lookup(part_of, key));
        if (h->part != want)
            g_error("seq %" G_GUINT64_FORMAT " (key %s, partition %u) handled by binding p%u", h->seq, key, want,
                    h->part);
        counts[(guchar)h->host]++;
        if (h->verdict != 'a' || acked[h->seq])
            continue;
        acked[h->seq] = TRUE;
        n_acked++;
        guint64 last = GPOINTER_TO_SIZE(g_hash_table_lookup(last_of_key, key));
        if (last > h->seq)
            g_error("key %s: stream seq %" G_GUINT64_FORMAT " first acked after seq %" G_GUINT64_FORMAT, key, h->seq,
                    last);
        g_hash_table_insert(last_of_key, (gpointer)key, GSIZE_TO_POINTER(h->seq));
    }
    g_assert_cmpuint(n_acked, ==, n);
    g_array_sort(handled, by_start);
    g_autoptr(GHashTable) end_of_key = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    for (guint i = 0; i < handled->len; i++) {
        Handling *h = &g_array_index(handled, Handling, i);
        const char *key = keys[h->seq - 1];
        gint64 *end = g_hash_table_lookup(end_of_key, key);
        if (end != NULL && *end > h->start_ns)
            g_error("key %s: stream seq %" G_GUINT64_FORMAT " (host %c) started while another of its key ran", key,
                    h->seq, h->host);
        if (end == NULL) {
            end = g_new(gint64, 1);
            g_hash_table_insert(end_of_key, (gpointer)key, end);
        }
        *end = h->end_ns;
    }
}

typedef struct {
    Part *p;
    const char *hosts;
    guint lines;
} HandledWait;

static gboolean handled_some(gpointer data)
{
    HandledWait *w = data;
    g_autoptr(GArray) a = read_all(w->p, w->hosts);
    return a->len >= w->lines;
}

#define N_MSGS 4000
#define N_KEYS 200

/* 4000 messages over 200 keys; A runs partitions 0 and 1, B 2 and 3. */
static void test_partition(void)
{
    guint64 seed = test_seed();
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    Part p = { 0 };
    part_server(&p);
    g_auto(GStrv) keys = random_keys(rng, N_MSGS, N_KEYS);
    publish_keys(p.js, keys, N_MSGS);
    guint64 per_part[N_PARTS] = { 0 };
    g_autoptr(GHashTable) part_of = key_partitions(p.js, keys, N_MSGS, per_part);
    AllDone done = { p.js, { 0 } };
    for (guint i = 0; i < N_MSGS; i++) {
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(part_of, keys[i]));
        done.last[n] = i + 1;
    }
    g_test_message("per partition: %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %"
                   G_GUINT64_FORMAT, per_part[0], per_part[1], per_part[2], per_part[3]);
    for (guint n = 0; n < N_PARTS; n++)
        g_assert_cmpuint(per_part[n], >, 0);

    g_autofree char *ea = NULL, *eb = NULL;
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(GSubprocess) a = spawn_host(&p, 'A', "01", "option.sleep = 1ms\n", &ea);
    g_autoptr(GSubprocess) b = spawn_host(&p, 'B', "23", "option.sleep = 1ms\n", &eb);
    g_assert_true(jet_test_wait_until(all_done, &done, 60000));
    gint64 ms = (g_get_monotonic_time() - t0) / 1000;
    jet_test_jethost_stop(a, ea);
    jet_test_jethost_stop(b, eb);
    /* Each host claimed its own and nothing else. */
    for (guint n = 0; n < N_PARTS; n++) {
        g_autofree char *claimed = g_strdup_printf("binding=p%u event=claimed", n);
        g_assert_cmpuint(log_count(n < 2 ? ea : eb, claimed), ==, 1);
    }

    g_autoptr(GArray) handled = read_all(&p, "AB");
    guint counts[256] = { 0 };
    check_all(handled, keys, N_MSGS, part_of, counts);
    g_test_message("%u handlings in %" G_GINT64_FORMAT " ms from start: host A %u, host B %u", handled->len, ms,
                   counts['A'], counts['B']);
    g_assert_cmpuint(counts['A'], >, 0);
    g_assert_cmpuint(counts['B'], >, 0);
    part_free(&p);
}

/* Every partition listed on a third host C, started once A and B hold
 * theirs: it stands by on all four.  A drained by SIGTERM releases p0 and
 * p1; C takes them and finishes them in per-key order, and never runs p2
 * or p3, which B still holds. */
static void test_partition_failover(void)
{
    guint64 seed = test_seed();
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    Part p = { 0 };
    part_server(&p);
    g_autofree char *ea = NULL, *eb = NULL, *ec = NULL;
    const char *slow = "option.sleep = 2ms\n";
    g_autoptr(GSubprocess) a = spawn_host(&p, 'A', "01", slow, &ea);
    g_autoptr(GSubprocess) b = spawn_host(&p, 'B', "23", slow, &eb);
    wait_event(ea, "01", "claimed");
    wait_event(eb, "23", "claimed");
    g_autoptr(GSubprocess) c = spawn_host(&p, 'C', "0123", slow, &ec);
    wait_event(ec, "0123", "standing-by");

    g_auto(GStrv) keys = random_keys(rng, N_MSGS, N_KEYS);
    publish_keys(p.js, keys, N_MSGS);
    guint64 per_part[N_PARTS] = { 0 };
    g_autoptr(GHashTable) part_of = key_partitions(p.js, keys, N_MSGS, per_part);
    AllDone done = { p.js, { 0 } };
    for (guint i = 0; i < N_MSGS; i++)
        done.last[GPOINTER_TO_UINT(g_hash_table_lookup(part_of, keys[i]))] = i + 1;

    /* A stops with a good share of p0 and p1 still to do. */
    guint a_part = (guint)(per_part[0] + per_part[1]);
    HandledWait hw = { &p, "A", a_part / 5 };
    g_assert_true(jet_test_wait_until(handled_some, &hw, 60000));
    jet_test_jethost_stop(a, ea);
    wait_event(ec, "01", "claimed");
    g_assert_true(jet_test_wait_until(all_done, &done, 60000));
    /* C first: B's drain releases p2 and p3, which a C still standing by
     * would take at once. */
    jet_test_jethost_stop(c, ec);
    jet_test_jethost_stop(b, eb);

    g_assert_cmpuint(log_count(ea, "event=claim-released"), ==, 2);
    g_assert_cmpuint(log_count(ec, "binding=p2 event=claimed"), ==, 0);
    g_assert_cmpuint(log_count(ec, "binding=p3 event=claimed"), ==, 0);
    g_autoptr(GArray) handled = read_all(&p, "ABC");
    guint counts[256] = { 0 };
    check_all(handled, keys, N_MSGS, part_of, counts);
    guint c_late = 0;
    for (guint i = 0; i < handled->len; i++) {
        Handling *h = &g_array_index(handled, Handling, i);
        if (h->host == 'C')
            g_assert_cmpuint(h->part, <, 2);
        c_late += h->host == 'C';
    }
    g_test_message("partitions 0+1: %u messages; handlings: A %u, B %u, C %u", a_part, counts['A'], counts['B'],
                   counts['C']);
    g_assert_cmpuint(counts['A'], >, 0);
    g_assert_cmpuint(counts['B'], >, 0);
    g_assert_cmpuint(c_late, >, 0);
    part_free(&p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/lanes/partition", test_partition);
    g_test_add_func("/lanes/partition-failover", test_partition_failover);
    return g_test_run();
}
