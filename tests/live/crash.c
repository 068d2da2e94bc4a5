/* The attempt ledger and crash attribution through the engine, against a
 * real nats-server (docs/retries.md):
 *
 * - the happy path does no ledger I/O (1,000 acked deliveries, not one
 *   message on the ledger's subjects);
 * - postpones are not failures: 5 postpones then RETRY is failure 1 (the
 *   first rung), and the ABI reports 5 postpones;
 * - two hosts on one consumer carry one record between them: every write
 *   lands, in order, none lost (the concurrent compare-and-set itself is
 *   tests/live/ledger.c, /ledger/cas-race);
 * - a plugin that abort()s on one message among 200, 2 workers, the host
 *   restarted after each death: exactly crash_limit + 1 deaths, the message
 *   captured as poison after 3 strikes, every other message acked, no other
 *   record ever holds a strike;
 * - the same under a MaxDeliver of 4 or 6 that `jethost check` approves: the
 *   poison message captured before the server gives up on it, the messages
 *   held beside it handled, no MAX_DELIVERIES advisory;
 * - a handler that hangs: the host exits (code 5) once every worker is hung,
 *   and the message is captured as poison after restarts (1 and 2 workers);
 *   with two hosts nothing waits for the hung one; SIGTERM while one hangs
 *   exits within drain_timeout;
 * - a plugin that faults: the host names the signal, the binding, the plugin
 *   and the stream seq, and its frames, then dies of the signal;
 * - a host killed with no suspect in its hands adds no strike to anything;
 * - the ledger bucket deleted mid-run: processing goes on, the fallback is
 *   logged once and counted. */
#include "rig.h"
#include "ledger.h"
#include "msg_payload.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#define HB "idle_heartbeat = 500ms\nexpires = 2s\n"
#define BUCKET "jethost_ledger"

/* --- a subscriber that keeps what it sees ---------------------------------- */

typedef struct {
    char *subject;
    char *data;
} Seen;

static void seen_free(gpointer p)
{
    Seen *s = p;
    g_free(s->subject);
    g_free(s->data);
    g_free(s);
}

typedef struct {
    GMutex lock;
    GPtrArray *seen;   /* of Seen* */
    GPtrArray *subs;
} Spy;

static void spy_on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    Spy *spy = closure;
    (void)nc;
    (void)sub;
    Seen *s = g_new0(Seen, 1);
    s->subject = g_strdup(natsMsg_GetSubject(m));
    gsize len = 0;
    const char *data = jet_msg_payload(m, &len);
    s->data = g_strndup(data, len);
    g_mutex_lock(&spy->lock);
    g_ptr_array_add(spy->seen, s);
    g_mutex_unlock(&spy->lock);
    natsMsg_Destroy(m);
}

static void spy_start(Spy *spy, natsConnection *nc, const char *const *subjects)
{
    g_mutex_init(&spy->lock);
    spy->seen = g_ptr_array_new_with_free_func(seen_free);
    spy->subs = g_ptr_array_new();
    for (const char *const *s = subjects; *s != NULL; s++) {
        natsSubscription *sub = NULL;
        g_assert_cmpint(natsConnection_Subscribe(&sub, nc, *s, spy_on_msg, spy), ==, NATS_OK);
        g_assert_cmpint(natsSubscription_SetPendingLimits(sub, -1, -1), ==, NATS_OK);
        g_ptr_array_add(spy->subs, sub);
    }
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
}

static guint spy_count(Spy *spy)
{
    g_mutex_lock(&spy->lock);
    guint n = spy->seen->len;
    g_mutex_unlock(&spy->lock);
    return n;
}

static gboolean spy_nonempty(gpointer data)
{
    return spy_count(data) > 0;
}

/* The engine counts an ack, and forgets the ledger record, after the +ACK
 * is on the wire: the floor can pass before either is done. */
static gboolean acked_one(gpointer data)
{
    JetEngineStats st;
    jet_engine_stats(data, &st);
    return st.acked >= 1;
}

static void spy_stop(Spy *spy)
{
    for (guint i = 0; i < spy->subs->len; i++)
        natsSubscription_Destroy(g_ptr_array_index(spy->subs, i));
    g_ptr_array_unref(spy->subs);
    g_ptr_array_unref(spy->seen);
    g_mutex_clear(&spy->lock);
}

/* --- fx_gate's log, every field --------------------------------------------- */

typedef struct {
    guint64 seq;
    guint deliveries;
    char thread[32];
    guint failures, postpones;
    guint host;   /* which log it came from (two-host tests) */
} Handled;

static GArray *handled_full(const char *dir, guint host, GArray *into)
{
    GArray *a = into != NULL ? into : g_array_new(FALSE, TRUE, sizeof(Handled));
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    if (!jet_test_read_lines(path, &text))
        return a;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL; l++) {
        if (**l == '\0')
            continue;
        Handled h = { 0 };
        unsigned long long seq = 0;
        /* "seq deliveries thread monotonic-ns failures postpones" */
        g_assert_cmpint(sscanf(*l, "%llu %u %31s %*d %u %u", &seq, &h.deliveries, h.thread, &h.failures,
                               &h.postpones), ==, 5);
        h.seq = seq;
        h.host = host;
        g_array_append_val(a, h);
    }
    return a;
}

/* --- the ledger bucket, read by the test ---------------------------------- */

static kvStore *ledger_kv(jsCtx *js)
{
    kvStore *kv = NULL;
    g_assert_cmpint(js_KeyValue(&kv, js, BUCKET), ==, NATS_OK);
    return kv;
}

/* The records of ORDERS/c, by stream seq (absent keys and delete markers
 * are not listed). */
static GHashTable *ledger_records(jsCtx *js)
{
    GHashTable *t = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    kvStore *kv = ledger_kv(js);
    kvKeysList keys = { 0 };
    natsStatus s = kvStore_Keys(&keys, kv, NULL);
    if (s == NATS_NOT_FOUND) {
        kvStore_Destroy(kv);
        return t;
    }
    g_assert_cmpint(s, ==, NATS_OK);
    for (int i = 0; i < keys.Count; i++) {
        const char *k = keys.Keys[i];
        if (!g_str_has_prefix(k, "ORDERS.c."))
            continue;
        kvEntry *e = NULL;
        if (kvStore_Get(&e, kv, k) != NATS_OK)
            continue;
        if (kvEntry_Operation(e) != kvOp_Put) {
            kvEntry_Destroy(e);   /* a delete marker: no record (its value is NULL on nats.c 3.14) */
            continue;
        }
        JetLedgerRecord *rec = g_new0(JetLedgerRecord, 1);
        g_autoptr(GError) err = NULL;
        gsize len = 0;
        const char *value = jet_kv_value(e, &len);
        g_assert_true(jet_ledger_record_from_json(value, len, rec, &err));
        kvEntry_Destroy(e);
        gint64 *seq = g_new(gint64, 1);
        *seq = (gint64)g_ascii_strtoull(k + strlen("ORDERS.c."), NULL, 10);
        g_hash_table_insert(t, seq, rec);
    }
    kvKeysList_Destroy(&keys);
    kvStore_Destroy(kv);
    return t;
}

static gboolean no_records(gpointer js)
{
    g_autoptr(GHashTable) recs = ledger_records(js);
    return g_hash_table_size(recs) == 0;
}

/* --- the DLQ ---------------------------------------------------------------- */

static guint64 dlq_msgs(jsCtx *js)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    g_assert_cmpint(js_GetStreamInfo(&si, js, "JETHOST_DLQ", NULL, &jerr), ==, NATS_OK);
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

static const char *hget(natsMsg *m, const char *name)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, name, &v) != NATS_OK)
        return "";
    return v;
}

/* --- a second engine on the rig's server ----------------------------------- */

static void rig_second(Rig *r2, Rig *r, const char *name, const char *extra)
{
    memset(r2, 0, sizeof *r2);
    r2->srv = r->srv;
    r2->dir = g_build_filename(jet_test_private_dir(), name, NULL);
    g_assert_cmpint(g_mkdir(r2->dir, 0700), ==, 0);
    rig_engine(r2, extra);
}

static void rig_second_free(Rig *r2)
{
    rig_stop(r2);
    jet_engine_free(r2->eng);
    jet_instance_free(r2->inst);
    jet_ledger_close(r2->ledger);
    if (r2->ledger_js != NULL)
        jsCtx_Destroy(r2->ledger_js);
    jet_conn_close(r2->conn);
    jet_config_free(r2->cfg);
    g_free(r2->dir);
}

/* --- jethost as a subprocess ----------------------------------------------- */

static GSubprocess *spawn_host_with(Rig *r, const char *name, const char *host_keys, const char *extra,
                                    char **errlog)
{
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nname = %s\n%s\n[binding t]\nplugin = %s\nstream = ORDERS\nconsumer = c\n"
        "ack_wait = 2s\n" HB "option.dir = %s\n%s",
        jet_test_server_url(r->srv), name, host_keys, plugin, r->dir, extra);
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    g_autofree char *errfile = g_strdup_printf("%s.stderr", name);
    *errlog = g_build_filename(jet_test_private_dir(), errfile, NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    return jet_test_jethost_spawn(*errlog, args);
}

static GSubprocess *spawn_host(Rig *r, const char *name, const char *extra, char **errlog)
{
    return spawn_host_with(r, name, "", extra, errlog);
}

typedef struct {
    GSubprocess *host;
    FloorWait fw;
} HostOrFloor;

static gboolean host_exited_or_floor(gpointer data)
{
    HostOrFloor *h = data;
    return g_subprocess_get_identifier(h->host) == NULL || floor_reached(&h->fw);
}

/* ========================================================================== */

/* 1,000 deliveries acked at their first delivery: no ledger read, no ledger
 * write, nothing at all on the bucket's subjects. */
/* The engine's count of acks reached want: it counts an ack once sent, so
 * the server may have it (and the floor moved) a moment before. */
typedef struct {
    Rig *r;
    guint64 want;
} AckedWait;

static gboolean acked_reached(gpointer data)
{
    AckedWait *aw = data;
    JetEngineStats st;
    jet_engine_stats(aw->r->eng, &st);
    return st.acked >= aw->want;
}

static void test_happy_path_silent(void)
{
    Rig r = { 0 };
    rig_server(&r);
    rig_engine(&r, "batch = 50\nack_wait = 2s\n" HB);
    g_assert_nonnull(r.ledger);
    g_assert_true(jet_ledger_uses_direct_get(r.ledger));
    const char *subjects[] = { "$KV." BUCKET ".>", "$JS.API.DIRECT.GET.KV_" BUCKET ".>", NULL };
    Spy spy;
    spy_start(&spy, r.nc, subjects);

    jet_test_publish_n(r.js, "orders.new", 1000);
    FloorWait fw = { &r, 1000 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    AckedWait aw = { &r, 1000 };
    jet_test_wait_until(acked_reached, &aw, 5000);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("acked %" G_GUINT64_FORMAT ", ledger calls seen %u", st.acked, spy_count(&spy));
    g_assert_cmpuint(st.acked, ==, 1000);
    g_autoptr(GArray) dl = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &dl);
    g_assert_cmpuint(seqs->len, ==, 1000);
    for (guint i = 0; i < dl->len; i++)
        g_assert_cmpuint(g_array_index(dl, guint, i), ==, 1);   /* no redelivery */
    g_assert_cmpuint(spy_count(&spy), ==, 0);

    /* The spy is live: one ledger read through the engine's own handle is seen. */
    JetLedgerRecord rec;
    g_assert_cmpint(jet_ledger_get(r.ledger, "ORDERS", "c", 1, &rec, NULL), ==, JET_LEDGER_ABSENT);
    g_assert_true(jet_test_wait_until(spy_nonempty, &spy, 5000));
    spy_stop(&spy);
    rig_free(&r);
}

/* Five postpones, then RETRY, then ACK: the RETRY is failure 1 (the first
 * rung, 200 ms; failure 6 would wait the 30 s rung), and the plugin saw 5
 * postpones and 0 failures at delivery 6, 1 failure at delivery 7. */
static void test_postpones_are_not_failures(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const char *subjects[] = { "$JS.ACK.ORDERS.c.>", NULL };
    Spy spy;
    spy_start(&spy, r.nc, subjects);
    rig_engine(&r, "batch = 1\nack_wait = 2s\n" HB "rungs = 200ms, 30s\nmax_attempts = 10\n"
                   "option.verdicts = postpone,postpone,postpone,postpone,postpone,retry,ack\n"
                   "option.postpone_delay = 100ms\n");
    jet_test_publish_n(r.js, "orders.new", 1);
    FloorWait fw = { &r, 1 };
    gboolean done = jet_test_wait_until(floor_reached, &fw, 10000);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);

    /* What the engine told the server, in order (lease extensions aside). */
    g_autoptr(GPtrArray) naks = g_ptr_array_new();
    g_mutex_lock(&spy.lock);
    for (guint i = 0; i < spy.seen->len; i++) {
        Seen *s = g_ptr_array_index(spy.seen, i);
        if (g_str_has_prefix(s->data, "-NAK"))
            g_ptr_array_add(naks, s->data);
    }
    g_mutex_unlock(&spy.lock);
    for (guint i = 0; i < naks->len; i++)
        g_test_message("settlement %u: %s", i + 1, (const char *)g_ptr_array_index(naks, i));
    g_assert_cmpuint(naks->len, >=, 6);
    for (guint i = 0; i < 5; i++)
        g_assert_cmpstr(g_ptr_array_index(naks, i), ==, "-NAK {\"delay\": 100000000}");
    g_assert_cmpstr(g_ptr_array_index(naks, 5), ==, "-NAK {\"delay\": 200000000}");   /* rung 1 */
    g_assert_true(done);

    g_assert_true(jet_test_wait_until(acked_one, r.eng, 10000));

    g_autoptr(GArray) h = handled_full(r.dir, 0, NULL);
    g_assert_cmpuint(h->len, ==, 7);
    for (guint i = 0; i < h->len; i++) {
        Handled *x = &g_array_index(h, Handled, i);
        g_assert_cmpuint(x->deliveries, ==, i + 1);
        g_assert_cmpuint(x->postpones, ==, MIN(i, 5));
        g_assert_cmpuint(x->failures, ==, i == 6 ? 1 : 0);
    }
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.postponed, ==, 5);
    g_assert_cmpuint(st.retried, ==, 1);
    g_assert_cmpuint(st.acked, ==, 1);
    /* Settled: the record is gone (its delete was not waited for). */
    rig_wait_record_gone(&r, "ORDERS", "c", 1);
    spy_stop(&spy);
    rig_free(&r);
}

/* Two hosts (two engines, two connections) on one consumer; every message
 * fails three times, then is acked.  Its deliveries wander between the
 * hosts, and each delivery finds the failures of all earlier ones,
 * whichever host recorded them: every write landed, in order, none lost. */
static void test_two_hosts_one_record(void)
{
    const char *keys = "batch = 1\nack_wait = 2s\n" HB "rungs = 50ms\nmax_attempts = 10\n"
                       "option.verdicts = retry,retry,retry,ack\n";
    Rig a = { 0 }, b;
    rig_server(&a);
    rig_engine(&a, keys);
    rig_second(&b, &a, "gate-b", keys);
    const guint n = 30;
    jet_test_publish_n(a.js, "orders.new", n);
    FloorWait fw = { &a, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&a);
    rig_stop(&b);

    g_autoptr(GArray) h = handled_full(a.dir, 0, NULL);
    handled_full(b.dir, 1, h);
    guint shared = 0;
    for (guint64 seq = 1; seq <= n; seq++) {
        gboolean seen[5] = { FALSE };
        guint hosts = 0;
        for (guint i = 0; i < h->len; i++) {
            Handled *x = &g_array_index(h, Handled, i);
            if (x->seq != seq)
                continue;
            g_assert_cmpuint(x->deliveries, >=, 1);
            g_assert_cmpuint(x->deliveries, <=, 4);
            g_assert_false(seen[x->deliveries]);
            seen[x->deliveries] = TRUE;
            /* delivery d finds the d - 1 failures before it */
            g_assert_cmpuint(x->failures, ==, x->deliveries - 1);
            g_assert_cmpuint(x->postpones, ==, 0);
            hosts |= 1u << x->host;
        }
        for (guint d = 1; d <= 4; d++)
            g_assert_true(seen[d]);
        shared += hosts == 3;
    }
    g_test_message("%u of %u messages had deliveries on both hosts", shared, n);
    g_assert_cmpuint(shared, >=, 1);
    JetEngineStats sa, sb;
    jet_engine_stats(a.eng, &sa);
    jet_engine_stats(b.eng, &sb);
    g_assert_cmpuint(sa.retried + sb.retried, ==, 3 * n);
    g_assert_cmpuint(sa.acked + sb.acked, ==, n);
    g_assert_cmpuint(sa.ledger_fallbacks + sb.ledger_fallbacks, ==, 0);
    /* All settled, all deleted (the deletes not waited for). */
    g_assert_true(jet_test_wait_until(no_records, a.js, 5000));
    rig_second_free(&b);
    rig_free(&a);
}

/* The line of a log that holds needle (the first; NULL if none). */
static G_GNUC_UNUSED char *log_line(const char *log, const char *needle)
{
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    for (char **l = lines; *l != NULL; l++)
        if (strstr(*l, needle) != NULL)
            return g_strdup(*l);
    return NULL;
}

/* A plugin that faults on stream seq 3 (option FAULT_OPTION: a write
 * through a null pointer, or a recursion that overflows its thread's
 * stack): the host says where before it dies, on one line the signal, the
 * thread, the binding, the plugin and the stream seq, then its frames, the
 * plugin's among them; it dies of SIGSEGV as it would have (128 + 11 for a
 * supervisor), and the next host handles that message as a suspect. */
static void fault_reported(const char *fault_option, const char *where)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 5);
    g_autofree char *errlog = NULL;
    g_autofree char *extra = g_strdup_printf("batch = 1\noption.%s = 3\n", fault_option);
    g_autoptr(GSubprocess) host = spawn_host(&r, "fault-0", extra, &errlog);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 128 + SIGSEGV);
    g_autofree char *log = jet_test_read_text(errlog);
    g_test_message("%s", log);
    g_assert_cmpuint(jet_test_count_lines(log, "event=fatal-signal"), ==, 1);
    g_autofree char *line = log_line(log, "event=fatal-signal");
    g_assert_nonnull(strstr(line, " level=crit binding=t event=fatal-signal "));
    g_assert_nonnull(strstr(line, where));
    g_assert_nonnull(strstr(line, " on thread jet-t-0, in plugin fx_gate's handle()"));
    g_assert_nonnull(strstr(line, "handle() of stream seq 3:"));
    g_assert_cmpuint(jet_test_count_lines(log, "event=fatal-frame"), >=, 3);
    g_autofree char *frame = log_line(log, ".so (+0x");
    g_assert_nonnull(frame);
    g_assert_nonnull(strstr(frame, "event=fatal-frame"));
    g_assert_nonnull(strstr(frame, "fx_gate"));

    g_autofree char *errlog2 = NULL;
    g_autoptr(GSubprocess) again = spawn_host(&r, "fault-1", "batch = 1\n", &errlog2);
    FloorWait fw = { &r, 5 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 20000));
    jet_test_jethost_stop(again, errlog2);
    g_autofree char *log2 = jet_test_read_text(errlog2);
    g_assert_cmpuint(jet_test_count_lines(log2, "event=suspect"), >=, 1);
    g_assert_cmpuint(jet_test_count_lines(log2, "event=fatal"), ==, 0);
    rig_free(&r);
}

static G_GNUC_UNUSED void test_fault_reported(void)
{
    fault_reported("segv_seq", "SIGSEGV at 0x0 on thread");
}

/* The handler runs on a stack of its own: an overflow is reported too. */
static G_GNUC_UNUSED void test_fault_overflow(void)
{
    fault_reported("overflow_seq", "SIGSEGV at 0x");
}

/* A fault signal sent from outside (kill -BUS): said as sent, by whom, on
 * a thread that ran no handler; the host dies of it (128 + 7), it does not
 * go on. */
static G_GNUC_UNUSED void test_fault_sent(void)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    Rig r = { 0 };
    rig_server(&r);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host(&r, "sent-0", "", &errlog);
    g_assert_true(jet_test_wait_log(errlog, "event=running", 20000));
    g_subprocess_send_signal(host, SIGBUS);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 128 + SIGBUS);
    g_autofree char *log = jet_test_read_text(errlog);
    g_test_message("%s", log);
    g_autofree char *line = log_line(log, "event=fatal-signal");
    g_assert_nonnull(line);
    g_autofree char *sent = g_strdup_printf("SIGBUS sent by pid %d on thread ", (int)getpid());
    g_assert_nonnull(strstr(line, sent));
    g_assert_nonnull(strstr(line, ", not in a plugin's handle()"));
    g_assert_cmpuint(jet_test_count_lines(log, "event=fatal-frame"), >=, 1);
    rig_free(&r);
}

/* fx_gate abort()s on one message among 200, 2 workers; the test restarts
 * the host after each death, as a supervisor would. */
static void test_poison_abort(void)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 200;
    /* Never near the end of its pull (the stream is filled first, so pulls
     * take runs of 10 from it): messages after k in its own pull are held
     * when it kills the host, so there are bystanders to attribute. */
    const guint64 k = (guint64)g_test_rand_int_range(2, 18) * 10 + (guint64)g_test_rand_int_range(1, 6);
    g_test_message("abort() on stream seq %" G_GUINT64_FORMAT, k);
    const char *subjects[] = { "$KV." BUCKET ".ORDERS.c.>", NULL };
    Spy writes;
    spy_start(&writes, r.nc, subjects);
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *extra = g_strdup_printf("workers = 2\nbatch = 10\noption.sleep = 5ms\noption.abort_seq = %" G_GUINT64_FORMAT "\n", k);

    guint deaths = 0, suspects = 0;
    for (;;) {
        g_autofree char *name = g_strdup_printf("poison-%u", deaths);
        g_autofree char *errlog = NULL;
        g_autoptr(GSubprocess) host = spawn_host(&r, name, extra, &errlog);
        HostOrFloor hf = { host, { &r, n } };
        g_assert_true(jet_test_wait_until(host_exited_or_floor, &hf, 60000));
        if (g_subprocess_get_identifier(host) != NULL) {
            g_subprocess_send_signal(host, SIGTERM);
            g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
            g_autofree char *log = NULL;
            g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
            suspects += jet_test_count_lines(log, "event=suspect");
            break;
        }
        g_assert_cmpint(jet_test_jethost_wait(host, 1000), ==, 128 + SIGABRT);
        deaths++;
        g_autofree char *log = NULL;
        g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
        suspects += jet_test_count_lines(log, "event=suspect");
        g_test_message("death %u (%u suspects handled alone so far)", deaths, suspects);
        g_assert_cmpuint(deaths, <=, 4);   /* crash_limit + 1 */
        /* Only the aborting message has a marker or a strike; its strikes
         * are the deaths it caused while handled alone. */
        g_autoptr(GHashTable) recs = ledger_records(r.js);
        GHashTableIter it;
        gpointer key, val;
        g_hash_table_iter_init(&it, recs);
        while (g_hash_table_iter_next(&it, &key, &val)) {
            guint64 seq = (guint64)*(gint64 *)key;
            JetLedgerRecord *rec = val;
            g_test_message("  record %" G_GUINT64_FORMAT ": strikes %u, marker %s", seq, rec->strikes,
                           rec->isolated ? rec->isolated_by : "-");
            if (seq != k) {
                g_assert_cmpuint(rec->strikes, ==, 0);
                g_assert_false(rec->isolated);
            }
        }
        gint64 kk = (gint64)k;
        JetLedgerRecord *rk = g_hash_table_lookup(recs, &kk);
        if (deaths == 1) {
            g_assert_null(rk);   /* handled beside others: nothing to attribute yet */
        } else {
            g_assert_nonnull(rk);
            g_assert_true(rk->isolated);
            g_assert_cmpuint(rk->strikes, ==, deaths - 2);
        }
    }
    g_test_message("%u deaths", deaths);
    g_assert_cmpuint(deaths, ==, 4);

    /* Captured as poison without running the handler a fifth time. */
    g_assert_cmpuint(dlq_msgs(r.js), ==, 1);
    natsMsg *m = NULL;
    g_assert_cmpint(js_GetMsg(&m, r.js, "JETHOST_DLQ", 1, NULL, NULL), ==, NATS_OK);
    g_test_message("DLQ: cause %s, reason \"%s\", deliveries %s", hget(m, "Jethost-Cause"),
                   hget(m, "Jethost-Reason"), hget(m, "Jethost-Deliveries"));
    g_assert_cmpstr(hget(m, "Jethost-Cause"), ==, "poison");
    g_autofree char *kstr = g_strdup_printf("%" G_GUINT64_FORMAT, k);
    g_assert_cmpstr(hget(m, "Jethost-Origin-Seq"), ==, kstr);
    g_assert_cmpstr(hget(m, "Jethost-Deliveries"), ==, "5");
    g_assert_nonnull(strstr(hget(m, "Jethost-Reason"), "crashed the host 3 times"));
    g_assert_cmpstr(hget(m, "Jethost-Crash-Strikes"), ==, "3");
    natsMsg_Destroy(m);

    /* Every other message acked; the handler ran k four times. */
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, n);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    jsConsumerInfo_Destroy(ci);
    g_autoptr(GArray) h = handled_full(r.dir, 0, NULL);
    g_autofree guint *count = g_new0(guint, n + 1);
    for (guint i = 0; i < h->len; i++)
        count[g_array_index(h, Handled, i).seq]++;
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(count[s], >=, 1);
    g_assert_cmpuint(count[k], ==, 4);

    /* No other record ever held a strike: every write, as the server got it. */
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    g_autofree char *kkey = g_strdup_printf("$KV." BUCKET ".ORDERS.c.%" G_GUINT64_FORMAT, k);
    guint others = 0, max_k_strikes = 0;
    g_mutex_lock(&writes.lock);
    for (guint i = 0; i < writes.seen->len; i++) {
        Seen *s = g_ptr_array_index(writes.seen, i);
        if (*s->data == '\0')
            continue;   /* a delete marker */
        JetLedgerRecord rec;
        g_assert_true(jet_ledger_record_from_json(s->data, strlen(s->data), &rec, NULL));
        if (strcmp(s->subject, kkey) == 0) {
            max_k_strikes = MAX(max_k_strikes, rec.strikes);
        } else {
            others++;
            g_assert_cmpuint(rec.strikes, ==, 0);
        }
    }
    g_mutex_unlock(&writes.lock);
    g_test_message("%u record writes for other messages, none with a strike; %" G_GUINT64_FORMAT
                   " wrote up to %u strikes (the third is the capture)", others, k, max_k_strikes);
    g_assert_cmpuint(max_k_strikes, ==, 2);
    /* Bystanders were suspects too (held when a host died), handled alone
     * with the marker set, and survived: written, never struck. */
    g_assert_cmpuint(suspects, >, 3);
    g_assert_cmpuint(others, >=, 1);
    g_autoptr(GHashTable) recs = ledger_records(r.js);
    g_assert_cmpuint(g_hash_table_size(recs), ==, 0);
    spy_stop(&writes);
    rig_free(&r);
}

/* Runs jethost, restarted after each exit as a supervisor would, until the
 * ack floor reaches n; then stops it with SIGTERM (exit 0).  Every exit on
 * its own must have status want_status, and there are at most max_exits.
 * Returns how many there were. */
static guint supervise(Rig *r, const char *prefix, const char *host_keys, const char *extra, guint n, int want_status,
                       guint max_exits, const char *want_line)
{
    guint exits = 0;
    for (;;) {
        g_autofree char *name = g_strdup_printf("%s-%u", prefix, exits);
        g_autofree char *errlog = NULL;
        g_autoptr(GSubprocess) host = spawn_host_with(r, name, host_keys, extra, &errlog);
        HostOrFloor hf = { host, { r, n } };
        g_assert_true(jet_test_wait_until(host_exited_or_floor, &hf, 60000));
        if (g_subprocess_get_identifier(host) != NULL) {
            g_subprocess_send_signal(host, SIGTERM);
            g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
            /* The summary a drained host leaves counts dead letters too. */
            g_autofree char *log = NULL;
            g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
            g_assert_cmpuint(jet_test_count_lines(log, "event=stopped msg=\"handled "), ==, 1);
            /* The binding's stopped line and the host's exit line. */
            g_assert_cmpuint(jet_test_count_lines(log, ", dead-lettered "), ==, 2);
            g_assert_cmpuint(jet_test_count_lines(log, "event=exit msg=\"drained; exiting: handled "), ==, 1);
            return exits;
        }
        g_assert_cmpint(jet_test_jethost_wait(host, 1000), ==, want_status);
        if (want_line != NULL) {
            g_autofree char *log = NULL;
            g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
            g_assert_cmpuint(jet_test_count_lines(log, want_line), >=, 1);
        }
        exits++;
        g_test_message("%s: exit %u", prefix, exits);
        g_assert_cmpuint(exits, <=, max_exits);
    }
}

/* The poison message k, and nothing else, dead-lettered; the ack floor at
 * n with nothing pending; every message handled.  Returns each seq's
 * handlings (1..n), and in *max_deliveries (may be NULL) the most
 * deliveries any other message was handled at. */
static guint *poison_only(Rig *r, guint64 k, guint n, guint *max_deliveries)
{
    g_assert_cmpuint(dlq_msgs(r->js), ==, 1);
    natsMsg *m = NULL;
    g_assert_cmpint(js_GetMsg(&m, r->js, "JETHOST_DLQ", 1, NULL, NULL), ==, NATS_OK);
    g_test_message("DLQ: cause %s, reason \"%s\", deliveries %s", hget(m, "Jethost-Cause"),
                   hget(m, "Jethost-Reason"), hget(m, "Jethost-Deliveries"));
    g_autofree char *kstr = g_strdup_printf("%" G_GUINT64_FORMAT, k);
    g_assert_cmpstr(hget(m, "Jethost-Origin-Seq"), ==, kstr);
    g_assert_cmpstr(hget(m, "Jethost-Cause"), ==, "poison");
    natsMsg_Destroy(m);

    jsConsumerInfo *ci = jet_test_consumer_info(r->js, "ORDERS", "c");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, n);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    jsConsumerInfo_Destroy(ci);
    g_autoptr(GArray) h = handled_full(r->dir, 0, NULL);
    guint *count = g_new0(guint, n + 1);
    for (guint i = 0; i < h->len; i++) {
        Handled *x = &g_array_index(h, Handled, i);
        count[x->seq]++;
        if (x->seq != k && max_deliveries != NULL)
            *max_deliveries = MAX(*max_deliveries, x->deliveries);
    }
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(count[s], >=, 1);
    return count;
}

/* A plugin that abort()s on one message, under a MaxDeliver that leaves
 * little room (configurations `jethost check` approves): the host restarted
 * after each death until the ack floor reaches the end.  The poison message
 * is captured before the server runs out of deliveries for it; the messages
 * held beside it when it first killed the host are handled, not captured
 * and not driven dark (after a death the host pulls one message at a time
 * while suspects may be near, so later deaths burn nothing but the suspect);
 * the server never publishes a MAX_DELIVERIES advisory. */
typedef struct {
    const char *name;
    const char *keys;
    guint max_deaths;
} Tight;

static const Tight tight[] = {
    { "max-deliver-4", "max_deliver = 4\nmax_attempts = 3\nworkers = 1\n", 2 },
    { "max-deliver-6", "max_deliver = 6\ncrash_limit = 5\nworkers = 2\n", 4 },
};

static void test_poison_tight(gconstpointer data)
{
    const Tight *t = data;
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 100;
    /* Early in its pull, so messages after it in the same pull are held
     * when it first kills the host. */
    const guint64 k = (guint64)g_test_rand_int_range(1, 8) * 10 + (guint64)g_test_rand_int_range(1, 7);
    g_test_message("%s: abort() on stream seq %" G_GUINT64_FORMAT, t->name, k);
    const char *subjects[] = { "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>", NULL };
    Spy advisories;
    spy_start(&advisories, r.nc, subjects);
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *extra = g_strdup_printf("%sbatch = 10\nrungs = 200ms\noption.abort_seq = %" G_GUINT64_FORMAT "\n",
                                             t->keys, k);
    guint deaths = supervise(&r, t->name, "", extra, n, 128 + SIGABRT, t->max_deaths, NULL);
    g_assert_cmpuint(deaths, >=, 1);

    guint max_deliveries = 0;
    g_autofree guint *count = poison_only(&r, k, n, &max_deliveries);
    g_test_message("bystanders: at most %u deliveries", max_deliveries);

    /* The server never gave up on anything. */
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);
    g_assert_cmpuint(spy_count(&advisories), ==, 0);
    spy_stop(&advisories);
    rig_free(&r);
}

/* A plugin that abort()s in the middle of a handler batch (handle_batch(),
 * batches of 10): the whole batch was in the handler, so each of its
 * messages comes back unexplained and goes through handle() alone with the
 * isolation marker set; the batch-mates pass, the aborting one strikes until
 * it is captured as poison.  The batch taken apart to find the one message
 * (docs/batches.md); nothing else dead-lettered. */
static void test_poison_batch(void)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 100;
    const guint64 k = (guint64)g_test_rand_int_range(1, 8) * 10 + (guint64)g_test_rand_int_range(2, 9);
    g_test_message("abort() on stream seq %" G_GUINT64_FORMAT " inside a batch", k);
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *extra = g_strdup_printf("batch = 10\nbatch_max = 10\nrungs = 200ms\noption.abort_seq = %"
                                             G_GUINT64_FORMAT "\n", k);
    guint deaths = supervise(&r, "batch", "", extra, n, 128 + SIGABRT, 4, NULL);
    g_test_message("%u deaths", deaths);
    g_assert_cmpuint(deaths, ==, 4);   /* in its batch, then crash_limit (3) times alone */

    /* The aborting message: once in its batch, three times alone; each of
     * its batch-mates before it was handled in the batch and once more
     * alone. */
    g_autofree guint *count = poison_only(&r, k, n, NULL);
    g_assert_cmpuint(count[k], ==, 4);
    guint64 first = (k - 1) / 10 * 10 + 1;
    for (guint64 s2 = first; s2 < k; s2++)
        g_assert_cmpuint(count[s2], ==, 2);
    rig_free(&r);
}

/* SIGTERM while one handler hangs: the host exits within drain_timeout
 * (code 1: a handler did not finish), everything but the hung message is
 * settled or released, and the next host finishes the stream. */
static void test_sigterm_while_hung(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 30;
    const guint64 k = 7;
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *extra = g_strdup_printf("workers = 2\nbatch = 5\nhandler_timeout = 1s\noption.block_seq = %"
                                             G_GUINT64_FORMAT "\n", k);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = spawn_host_with(&r, "term-hung", "drain_timeout = 2s\n", extra, &errlog);
    rig_wait_inflight(&r, k);
    for (int i = 0; i < 2000; i++) {
        g_autofree char *log = NULL;
        if (g_file_get_contents(errlog, &log, NULL, NULL) && jet_test_count_lines(log, "event=handler-hung") > 0)
            break;
        g_usleep(10000);
    }
    gint64 t0 = g_get_monotonic_time();
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 10000), ==, 1);
    gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
    g_test_message("exited %" G_GINT64_FORMAT " ms after SIGTERM", took_ms);
    g_assert_cmpint(took_ms, <, 5000);
    /* The next host (no hang) finishes everything. */
    rig_let_go(&r, k);
    g_autofree char *errlog2 = NULL;
    g_autoptr(GSubprocess) next = spawn_host(&r, "term-hung-next", "workers = 2\nbatch = 5\n", &errlog2);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    g_subprocess_send_signal(next, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(next, 20000), ==, 0);
    rig_free(&r);
}

/* Two hosts on one consumer, one worker each; host A's handler hangs on
 * seq k.  Nothing waits for A: what A pulled behind k is released at once
 * and host B handles the whole rest of the stream. */
typedef struct {
    Rig *a, *b;
    guint64 n, k;
} TwoHosts;

static gboolean others_handled(gpointer data)
{
    TwoHosts *t = data;
    g_autoptr(GArray) h = handled_full(t->a->dir, 0, NULL);
    handled_full(t->b->dir, 1, h);
    g_autofree gboolean *seen = g_new0(gboolean, t->n + 1);
    for (guint i = 0; i < h->len; i++) {
        Handled *x = &g_array_index(h, Handled, i);
        if (x->seq <= t->n)
            seen[x->seq] = TRUE;
    }
    for (guint64 s = 1; s <= t->n; s++)
        if (s != t->k && !seen[s])
            return FALSE;
    return TRUE;
}

static gboolean released_behind(gpointer data)
{
    JetEngineStats st;
    jet_engine_stats(data, &st);
    return st.released_behind_hung >= 1;
}

static void test_hung_two_hosts(void)
{
    Rig a = { 0 }, b;
    rig_server(&a);
    const guint64 n = 60, k = 2;
    jet_test_publish_n(a.js, "orders.new", n);
    g_autofree char *ka = g_strdup_printf("batch = 5\nack_wait = 2s\nhandler_timeout = 1s\n" HB
                                          "option.block_seq = %" G_GUINT64_FORMAT "\n", k);
    rig_engine(&a, ka);
    rig_wait_inflight(&a, k);
    /* B starts only now: A holds k and what it pulled behind it. */
    rig_second(&b, &a, "gate-hung-b", "batch = 5\nack_wait = 2s\n" HB);
    TwoHosts t = { &a, &b, n, k };
    g_assert_true(jet_test_wait_until(others_handled, &t, 30000));
    /* A counts its releases after it has sent them: B can handle them
     * before the count is in (seen under load). */
    g_assert_true(jet_test_wait_until(released_behind, a.eng, 10000));
    JetEngineStats sa;
    jet_engine_stats(a.eng, &sa);
    g_test_message("A: hung %" G_GUINT64_FORMAT ", released behind it %" G_GUINT64_FORMAT, sa.hung_handlers,
                   sa.released_behind_hung);
    g_assert_cmpuint(sa.hung_handlers, ==, 1);
    g_assert_cmpuint(sa.released_behind_hung, >=, 1);
    /* The hung message itself went to B after AckWait and is handled there
     * (fx_gate in B does not block it); A's stale delivery is acked when it
     * is let go: the floor reaches the end. */
    rig_let_go(&a, k);
    FloorWait fw = { &a, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    rig_stop(&a);
    rig_stop(&b);
    rig_second_free(&b);
    rig_free(&a);
}

/* A handler that never returns on one message: the host ends itself (code
 * 5) once every worker is hung, its supervisor (this loop) restarts it, the
 * hung message comes back as a suspect each time, and after crash_limit
 * strikes it is captured as poison; everything else is handled. */
static void test_hang_poison(gconstpointer data)
{
    const guint workers = GPOINTER_TO_UINT(data);
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 40;
    const guint64 k = (guint64)g_test_rand_int_range(2, 30);
    g_test_message("%u worker(s); hangs on stream seq %" G_GUINT64_FORMAT, workers, k);
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *extra = g_strdup_printf("workers = %u\nbatch = 5\nhandler_timeout = 1s\noption.block_seq = %"
                                             G_GUINT64_FORMAT "\n", workers, k);
    guint exits = supervise(&r, "hang", "drain_timeout = 2s\n", extra, n, 5, 5, "event=all-workers-hung");
    g_assert_cmpuint(exits, >=, workers == 1 ? 4 : 2);
    g_assert_cmpuint(dlq_msgs(r.js), ==, 1);
    natsMsg *m = NULL;
    g_assert_cmpint(js_GetMsg(&m, r.js, "JETHOST_DLQ", 1, NULL, NULL), ==, NATS_OK);
    g_autofree char *kstr = g_strdup_printf("%" G_GUINT64_FORMAT, k);
    g_assert_cmpstr(hget(m, "Jethost-Origin-Seq"), ==, kstr);
    g_assert_cmpstr(hget(m, "Jethost-Cause"), ==, "poison");
    natsMsg_Destroy(m);
    jsConsumerInfo *ci = jet_test_consumer_info(r.js, "ORDERS", "c");
    g_assert_cmpuint(ci->AckFloor.Stream, ==, n);
    g_assert_cmpint(ci->NumAckPending, ==, 0);
    jsConsumerInfo_Destroy(ci);
    rig_free(&r);
}

/* kill -9 while an ordinary message (not a suspect) is in the handler and
 * others wait in the buffer: no marker is set anywhere, so no strike. */
static void test_killed_between_suspects(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 100;
    const char *subjects[] = { "$KV." BUCKET ".ORDERS.c.>", NULL };
    Spy writes;
    spy_start(&writes, r.nc, subjects);
    jet_test_publish_n(r.js, "orders.new", n);

    g_autofree char *err1 = NULL;
    g_autoptr(GSubprocess) h1 = spawn_host(&r, "between-1", "batch = 10\noption.block_seq = 25\n", &err1);
    g_autofree char *inflight = g_build_filename(r.dir, "inflight-25", NULL);
    g_assert_true(jet_test_wait_file(inflight, 30000));
    g_subprocess_force_exit(h1);
    g_assert_cmpint(jet_test_jethost_wait(h1, 10000), ==, 128 + SIGKILL);
    g_autofree char *go = g_build_filename(r.dir, "go-25", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));

    g_autofree char *err2 = NULL;
    g_autoptr(GSubprocess) h2 = spawn_host(&r, "between-2", "batch = 10\n", &err2);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    g_subprocess_send_signal(h2, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(h2, 20000), ==, 0);
    g_assert_cmpint(natsConnection_Flush(r.nc), ==, NATS_OK);

    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(err2, &log, NULL, NULL));
    guint suspects = jet_test_count_lines(log, "event=suspect");
    guint strikes = jet_test_count_lines(log, "one strike");
    g_test_message("after the kill: %u suspects handled alone, %u strikes", suspects, strikes);
    /* The message in the handler and those buffered were suspects, each
     * handled alone once, and survived. */
    g_assert_cmpuint(suspects, >=, 1);
    g_assert_cmpuint(strikes, ==, 0);
    guint isolated = 0;
    g_mutex_lock(&writes.lock);
    for (guint i = 0; i < writes.seen->len; i++) {
        Seen *s = g_ptr_array_index(writes.seen, i);
        if (*s->data == '\0')
            continue;
        JetLedgerRecord rec;
        g_assert_true(jet_ledger_record_from_json(s->data, strlen(s->data), &rec, NULL));
        g_assert_cmpuint(rec.strikes, ==, 0);
        isolated += rec.isolated;
    }
    g_mutex_unlock(&writes.lock);
    g_assert_cmpuint(isolated, ==, suspects);
    g_assert_cmpuint(dlq_msgs(r.js), ==, 0);
    g_autoptr(GHashTable) recs = ledger_records(r.js);
    g_assert_cmpuint(g_hash_table_size(recs), ==, 0);
    g_autoptr(GArray) seqs = handled_seqs(&r, NULL);
    g_autofree guint *count = g_new0(guint, n + 1);
    for (guint i = 0; i < seqs->len; i++)
        count[g_array_index(seqs, guint64, i)]++;
    for (guint64 s = 1; s <= n; s++)
        g_assert_cmpuint(count[s], >=, 1);
    spy_stop(&writes);
    rig_free(&r);
}

/* Suspects redelivered to a host whose other workers are busy: each is
 * handled alone as soon as the handlers in flight finish, because new
 * messages are held back meanwhile (docs/retries.md) -- not whenever the
 * busy workers happen to be between messages all at once. */
static void test_suspect_not_starved(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const guint n = 1500;
    jet_test_publish_n(r.js, "orders.new", n);
    g_autofree char *err1 = NULL;
    g_autoptr(GSubprocess) h1 = spawn_host(&r, "starve-1", "batch = 10\noption.block_seq = 5\n", &err1);
    g_autofree char *inflight = g_build_filename(r.dir, "inflight-5", NULL);
    g_assert_true(jet_test_wait_file(inflight, 30000));
    g_subprocess_force_exit(h1);
    g_assert_cmpint(jet_test_jethost_wait(h1, 10000), ==, 128 + SIGKILL);
    g_autofree char *go = g_build_filename(r.dir, "go-5", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    g_autoptr(GArray) before = handled_full(r.dir, 0, NULL);

    g_autofree char *err2 = NULL;
    g_autoptr(GSubprocess) h2 = spawn_host(&r, "starve-2", "workers = 6\nbatch = 10\noption.sleep = 20ms\n", &err2);
    FloorWait fw = { &r, n };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 90000));
    g_subprocess_send_signal(h2, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(h2, 20000), ==, 0);

    /* Where, among the second host's handler calls, the suspects ran. */
    g_autoptr(GArray) h = handled_full(r.dir, 0, NULL);
    guint total = h->len - before->len, n_suspects = 0, last = 0;
    for (guint i = before->len; i < h->len; i++) {
        Handled *x = &g_array_index(h, Handled, i);
        if (x->deliveries >= 2) {
            n_suspects++;
            last = i - before->len + 1;
        }
    }
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(err2, &log, NULL, NULL));
    g_test_message("%u suspects (%u logged), the last handled as call %u of %u", n_suspects,
                   jet_test_count_lines(log, "event=suspect"), last, total);
    g_assert_cmpuint(n_suspects, >=, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=suspect"), ==, n_suspects);
    /* They come back after AckWait (2 s), some 600 calls into the
     * backlog, and run within a few handler times of that (the calls in
     * flight finish first); starved, they run whenever all the busy
     * workers happen to be between messages at once: later, often near
     * the end. */
    g_assert_cmpuint(last, <, total / 2);
    rig_free(&r);
}

/* The first ten settled: the floor is there and the engine has counted
 * them (it counts an ack after sending it, so the server can see the floor
 * first). */
static gboolean first_ten_settled(gpointer data)
{
    FloorWait *fw = data;
    JetEngineStats st;
    jet_engine_stats(fw->r->eng, &st);
    return st.acked >= 10 && floor_reached(fw);
}

/* The bucket deleted under a running engine: every message still settles,
 * the fallback is counted and logged once. */
static void test_ledger_deleted(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_stderr_begin("ledger-deleted.log");
    rig_engine(&r, "batch = 5\nack_wait = 2s\n" HB "rungs = 100ms\noption.verdicts = retry,ack\n");
    jet_test_publish_n(r.js, "orders.new", 10);
    FloorWait fw = { &r, 10 };
    gboolean first = jet_test_wait_until(first_ten_settled, &fw, 30000);
    JetEngineStats st0;
    jet_engine_stats(r.eng, &st0);

    g_assert_cmpint(js_DeleteKeyValue(r.js, BUCKET), ==, NATS_OK);
    jet_test_publish_n(r.js, "orders.new", 20);
    fw.floor = 30;
    gboolean second = jet_test_wait_until(floor_reached, &fw, 90000);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    rig_free(&r);
    g_autofree char *log = jet_test_stderr_end();

    g_test_message("before: %" G_GUINT64_FORMAT " fallbacks; after: %" G_GUINT64_FORMAT " fallbacks, acked %"
                   G_GUINT64_FORMAT ", retried %" G_GUINT64_FORMAT, st0.ledger_fallbacks, st.ledger_fallbacks,
                   st.acked, st.retried);
    g_assert_true(first);
    g_assert_cmpuint(st0.ledger_fallbacks, ==, 0);
    g_assert_true(second);
    g_assert_cmpuint(st.acked, ==, 30);
    g_assert_cmpuint(st.retried, ==, 30);
    g_assert_cmpuint(st.ledger_fallbacks, >, 0);
    g_assert_cmpuint(jet_test_count_lines(log, "event=ledger-fallback"), ==, 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/crash/happy-path-silent", test_happy_path_silent);
    g_test_add_func("/crash/postpones-are-not-failures", test_postpones_are_not_failures);
    g_test_add_func("/crash/two-hosts-one-record", test_two_hosts_one_record);
    g_test_add_func("/crash/poison-abort", test_poison_abort);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* Under a sanitizer the sanitizer reports the fault (plugin_guard.h). */
    g_test_add_func("/crash/fault-reported", test_fault_reported);
    g_test_add_func("/crash/fault-overflow", test_fault_overflow);
    g_test_add_func("/crash/fault-sent", test_fault_sent);
#endif
    g_test_add_func("/crash/poison-batch", test_poison_batch);
    g_test_add_data_func("/crash/hang-poison/workers-1", GUINT_TO_POINTER(1), test_hang_poison);
    g_test_add_data_func("/crash/hang-poison/workers-2", GUINT_TO_POINTER(2), test_hang_poison);
    g_test_add_func("/crash/sigterm-while-hung", test_sigterm_while_hung);
    g_test_add_func("/crash/hung-two-hosts", test_hung_two_hosts);
    for (gsize i = 0; i < G_N_ELEMENTS(tight); i++) {
        g_autofree char *path = g_strdup_printf("/crash/poison-tight/%s", tight[i].name);
        g_test_add_data_func(path, &tight[i], test_poison_tight);
    }
    g_test_add_func("/crash/killed-between-suspects", test_killed_between_suspects);
    g_test_add_func("/crash/suspect-not-starved", test_suspect_not_starved);
    g_test_add_func("/crash/ledger-deleted", test_ledger_deleted);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
