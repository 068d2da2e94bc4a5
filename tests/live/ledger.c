/* The attempt ledger (host/io/ledger.c) against a real nats-server: the bucket
 * it creates, records read, created, incremented and deleted, compare-and-set
 * under two racing connections, an unreachable bucket, what crosses the
 * wire, and, through the engine, the delivery-count fallback without it. */
#include "harness.h"
#include "ledger.h"
#include "rig.h"

#include <nats/nats.h>
#include <string.h>

#define BUCKET "jl_test"
#define WAIT_MS 1000

/* A connection and a JetStream context whose requests wait at most wait_ms. */
typedef struct {
    natsConnection *nc;
    jsCtx *js;
} Conn;

static Conn conn_open(const char *url, gint64 wait_ms)
{
    Conn c = { 0 };
    natsOptions *o = NULL;
    g_assert_cmpint(natsOptions_Create(&o), ==, NATS_OK);
    natsOptions_SetURL(o, url);
    natsOptions_SetSendAsap(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 100);
    natsStatus s = natsConnection_Connect(&c.nc, o);
    natsOptions_Destroy(o);
    g_assert_cmpint(s, ==, NATS_OK);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = wait_ms;
    g_assert_cmpint(natsConnection_JetStream(&c.js, c.nc, &jo), ==, NATS_OK);
    return c;
}

static void conn_close(Conn *c)
{
    jsCtx_Destroy(c->js);
    natsConnection_Destroy(c->nc);
}

static JetLedger *open_ok(Conn *c, gboolean create, guint64 max_age_ms)
{
    g_autoptr(GError) err = NULL;
    JetLedger *l = jet_ledger_open(c->js, BUCKET, create, max_age_ms, 1, &err);
    g_assert_no_error(err);
    g_assert_nonnull(l);
    return l;
}

static jsStreamInfo *bucket_info(Conn *c)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, c->js, "KV_" BUCKET, NULL, NULL), ==, NATS_OK);
    return si;
}

static gboolean add_failure(JetLedgerRecord *rec, gpointer data)
{
    (void)data;
    jet_ledger_record_add_failure(rec, g_get_real_time() * 1000, "it failed");
    return TRUE;
}

static gboolean add_postpone(JetLedgerRecord *rec, gpointer data)
{
    (void)data;
    rec->postpones++;
    return TRUE;
}

static gboolean count_calls(JetLedgerRecord *rec, gpointer data)
{
    (*(gint *)data)++;
    rec->failures++;
    return TRUE;
}

static gboolean decline(JetLedgerRecord *rec, gpointer data)
{
    (void)data;
    rec->failures += 100;   /* would be written, but the lease lapsed */
    return FALSE;
}

/* Managed mode creates the bucket with history 1 and MaxAge, direct gets
 * allowed; a changed max_age updates it; bind mode takes it as it is. */
static void test_create_config(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);

    /* bind mode: nothing there yet */
    g_autoptr(GError) err = NULL;
    g_assert_null(jet_ledger_open(c.js, BUCKET, FALSE, 0, 1, &err));
    g_assert_error(err, JET_LEDGER_ERROR, JET_LEDGER_ERROR_MISSING);
    g_clear_error(&err);
    /* managed mode needs a max_age */
    g_assert_null(jet_ledger_open(c.js, BUCKET, TRUE, 0, 1, &err));
    g_assert_error(err, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID);
    g_clear_error(&err);
    g_assert_null(jet_ledger_open(c.js, "bad.name", TRUE, 1000, 1, &err));
    g_assert_error(err, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID);
    g_clear_error(&err);

    JetLedger *l = open_ok(&c, TRUE, 3600000);
    g_assert_cmpstr(jet_ledger_bucket(l), ==, BUCKET);
    g_assert_cmpuint(jet_ledger_max_age_ms(l), ==, 3600000);
    g_assert_true(jet_ledger_uses_direct_get(l));
    jsStreamInfo *si = bucket_info(&c);
    g_assert_cmpint(si->Config->MaxAge, ==, G_GINT64_CONSTANT(3600000) * 1000000);
    g_assert_cmpint(si->Config->MaxMsgsPerSubject, ==, 1);
    g_assert_true(si->Config->AllowDirect);
    g_assert_true(si->Config->AllowRollup);
    g_assert_true(si->Config->DenyDelete);
    g_assert_cmpint(si->Config->SubjectsLen, ==, 1);
    g_assert_cmpstr(si->Config->Subjects[0], ==, "$KV." BUCKET ".>");
    jsStreamInfo_Destroy(si);
    jet_ledger_close(l);

    /* Opening again with the same max_age is a no-op; another max_age wins. */
    l = open_ok(&c, TRUE, 3600000);
    jet_ledger_close(l);
    l = open_ok(&c, TRUE, 7200000);
    g_assert_cmpuint(jet_ledger_max_age_ms(l), ==, 7200000);
    si = bucket_info(&c);
    g_assert_cmpint(si->Config->MaxAge, ==, G_GINT64_CONSTANT(7200000) * 1000000);
    jsStreamInfo_Destroy(si);
    jet_ledger_close(l);

    /* bind mode: as it is, whatever max_age the caller passes */
    l = open_ok(&c, FALSE, 0);
    g_assert_cmpuint(jet_ledger_max_age_ms(l), ==, 7200000);
    jet_ledger_close(l);

    /* A stream by that name that is not a KV bucket is refused. */
    jet_test_stream_create(c.js, "KV_other", "other.>");
    g_assert_null(jet_ledger_open(c.js, "other", TRUE, 1000, 1, &err));
    g_assert_error(err, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID);
    conn_close(&c);
}

/* Every entry expires, delete markers included: nothing is left after max_age. */
static void test_entries_expire(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 1000);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, NULL, NULL), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 2, add_failure, NULL, NULL, NULL), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_delete(l, "S", "c", 2, NULL), ==, JET_LEDGER_WRITTEN);
    jsStreamInfo *si = bucket_info(&c);
    g_assert_cmpuint(si->State.Msgs, ==, 2);   /* a record and a delete marker */
    jsStreamInfo_Destroy(si);
    gint64 t0 = g_get_monotonic_time();
    guint64 left = 2;
    while (left > 0 && g_get_monotonic_time() - t0 < 10 * G_USEC_PER_SEC) {
        g_usleep(100000);
        si = bucket_info(&c);
        left = si->State.Msgs;
        jsStreamInfo_Destroy(si);
    }
    g_test_message("bucket empty after %" G_GINT64_FORMAT " ms", (g_get_monotonic_time() - t0) / 1000);
    g_assert_cmpuint(left, ==, 0);
    JetLedgerRecord rec;
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 1, &rec, NULL), ==, JET_LEDGER_ABSENT);
    jet_ledger_close(l);
    conn_close(&c);
}

/* Messages this connection has sent so far. */
static guint64 sent_msgs(Conn *c)
{
    natsStatistics *st = NULL;
    g_assert_cmpint(natsStatistics_Create(&st), ==, NATS_OK);
    g_assert_cmpint(natsConnection_GetStats(c->nc, st), ==, NATS_OK);
    uint64_t out = 0;
    g_assert_cmpint(natsStatistics_GetCounts(st, NULL, NULL, &out, NULL, NULL), ==, NATS_OK);
    natsStatistics_Destroy(st);
    return out;
}

/* A write from the record its caller knows sends one message (the write),
 * where a write that reads first sends two; a known record that is not
 * what the key holds (absent while one is there, an old revision) loses
 * the compare-and-set, and the write reads and lands on what is there:
 * nothing is overwritten. */
static void test_update_from_known(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    g_autoptr(GError) err = NULL;
    JetLedgerRecord absent, w, rec;
    jet_ledger_record_init(&absent);

    guint64 before = sent_msgs(&c);
    g_assert_cmpint(jet_ledger_update_from(l, "S", "c", 1, &absent, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    guint64 known_sent = sent_msgs(&c) - before;
    before = sent_msgs(&c);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 2, add_failure, NULL, NULL, &err), ==, JET_LEDGER_WRITTEN);
    guint64 read_sent = sent_msgs(&c) - before;
    g_test_message("messages sent: %" G_GUINT64_FORMAT " from a known record, %" G_GUINT64_FORMAT
                   " reading first", known_sent, read_sent);
    g_assert_cmpuint(known_sent, ==, 1);
    g_assert_cmpuint(read_sent, ==, 2);

    /* From what it wrote: one message again, the count goes on. */
    before = sent_msgs(&c);
    g_assert_cmpint(jet_ledger_update_from(l, "S", "c", 1, &w, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_cmpuint(sent_msgs(&c) - before, ==, 1);
    g_assert_cmpuint(w.failures, ==, 2);

    /* Known absent, but seq 2 has a record: read after all, counted on. */
    g_assert_cmpint(jet_ledger_update_from(l, "S", "c", 2, &absent, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_cmpuint(w.failures, ==, 2);
    /* An old revision of seq 1 (it has been written since): the same. */
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 1, &rec, &err), ==, JET_LEDGER_FOUND);
    JetLedgerRecord old = rec;
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_postpone, NULL, NULL, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_update_from(l, "S", "c", 1, &old, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_cmpuint(w.failures, ==, 3);
    g_assert_cmpuint(w.postpones, ==, 1);
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 1, &rec, &err), ==, JET_LEDGER_FOUND);
    g_assert_cmpuint(rec.failures, ==, 3);
    g_assert_cmpuint(rec.postpones, ==, 1);
    g_assert_cmpuint(rec.revision, ==, w.revision);

    /* Known absent over a delete marker: written over it. */
    g_assert_cmpint(jet_ledger_delete(l, "S", "c", 2, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_update_from(l, "S", "c", 2, &absent, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpuint(w.failures, ==, 1);
    jet_ledger_close(l);
    conn_close(&c);
}

/* Get absent, update creates, update increments, a declined mutation writes
 * nothing, delete, and a record after a delete starts afresh. */
static void test_record_lifecycle(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    const char *stream = "ORD ERS", *consumer = "c.1";   /* names that need encoding */
    JetLedgerRecord rec;
    g_autoptr(GError) err = NULL;

    g_assert_cmpint(jet_ledger_get(l, stream, consumer, 7, &rec, &err), ==, JET_LEDGER_ABSENT);
    g_assert_no_error(err);
    g_assert_cmpuint(rec.revision, ==, 0);
    g_assert_cmpuint(rec.failures, ==, 0);

    JetLedgerRecord w;
    g_assert_cmpint(jet_ledger_update(l, stream, consumer, 7, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpuint(w.failures, ==, 1);
    g_assert_cmpuint(w.revision, >, 0);
    g_assert_true(w.has_first_failure);
    guint64 r1 = w.revision;
    gint64 first = w.first_failure_ns;

    g_assert_cmpint(jet_ledger_update(l, stream, consumer, 7, add_postpone, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_update(l, stream, consumer, 7, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_cmpuint(w.failures, ==, 2);
    g_assert_cmpuint(w.postpones, ==, 1);
    g_assert_cmpuint(w.revision, >, r1);

    g_assert_cmpint(jet_ledger_get(l, stream, consumer, 7, &rec, &err), ==, JET_LEDGER_FOUND);
    g_assert_cmpuint(rec.failures, ==, 2);
    g_assert_cmpuint(rec.postpones, ==, 1);
    g_assert_cmpint(rec.first_failure_ns, ==, first);
    g_assert_cmpstr(rec.last_reason, ==, "it failed");
    g_assert_cmpuint(rec.revision, ==, w.revision);
    guint64 found_rev = rec.revision;
    /* other sequences, consumers and streams are other records */
    g_assert_cmpint(jet_ledger_get(l, stream, consumer, 8, &rec, NULL), ==, JET_LEDGER_ABSENT);
    g_assert_cmpint(jet_ledger_get(l, stream, "c", 7, &rec, NULL), ==, JET_LEDGER_ABSENT);
    g_assert_cmpint(jet_ledger_get(l, "ORD", consumer, 7, &rec, NULL), ==, JET_LEDGER_ABSENT);

    /* A declined mutation (the lease fence) writes nothing. */
    jsStreamInfo *si = bucket_info(&c);
    guint64 last_seq = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    g_assert_cmpint(jet_ledger_update(l, stream, consumer, 7, decline, NULL, &w, &err), ==, JET_LEDGER_SKIPPED);
    g_assert_cmpuint(w.revision, ==, found_rev);
    g_assert_cmpuint(w.failures, ==, 2);   /* as read, not as the declined mutation left it */
    si = bucket_info(&c);
    g_assert_cmpuint(si->State.LastSeq, ==, last_seq);
    jsStreamInfo_Destroy(si);
    g_assert_cmpint(jet_ledger_get(l, stream, consumer, 7, &rec, NULL), ==, JET_LEDGER_FOUND);
    g_assert_cmpuint(rec.failures, ==, 2);

    /* Terminal settlement: deleted; a later record starts from nothing. */
    g_assert_cmpint(jet_ledger_delete(l, stream, consumer, 7, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpint(jet_ledger_get(l, stream, consumer, 7, &rec, &err), ==, JET_LEDGER_ABSENT);
    g_assert_cmpint(jet_ledger_update(l, stream, consumer, 7, add_failure, NULL, &w, &err), ==,
                    JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpuint(w.failures, ==, 1);
    g_assert_cmpuint(w.postpones, ==, 0);
    jet_ledger_close(l);
    conn_close(&c);
}

/* A value that does not parse is absent (with a warning), and the next
 * write replaces it. */
static void test_unreadable_record(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    kvStore *kv = NULL;
    g_assert_cmpint(js_KeyValue(&kv, c.js, BUCKET), ==, NATS_OK);
    g_autofree char *key = jet_ledger_key("S", "c", 3);
    guint64 rev = 0;
    g_assert_cmpint(kvStore_PutString(&rev, kv, key, "{\"v\":1,\"f\":\"many\""), ==, NATS_OK);
    JetLedgerRecord rec;
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 3, &rec, &err), ==, JET_LEDGER_ABSENT);
    g_assert_no_error(err);
    g_assert_cmpuint(rec.revision, ==, rev);
    g_assert_cmpuint(rec.failures, ==, 0);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 3, add_failure, NULL, &rec, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpuint(rec.failures, ==, 1);
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 3, &rec, &err), ==, JET_LEDGER_FOUND);
    g_assert_cmpuint(rec.failures, ==, 1);
    kvStore_Destroy(kv);
    jet_ledger_close(l);
    conn_close(&c);
}

/* Two hosts (two connections) each add N failures to one record at once:
 * every one lands, none lost. */
#define RACE_N 100

typedef struct {
    JetLedger *l;
    GMutex *lock;
    GCond *cond;
    gint *ready;
    gint mutate_calls;   /* atomic */
    guint written;
    guint other;
    gint this_call;      /* mutate calls in the current update */
    gint worst;          /* the most one update needed */
} Racer;

static gboolean race_mutate(JetLedgerRecord *rec, gpointer data)
{
    Racer *r = data;
    g_atomic_int_inc(&r->mutate_calls);
    r->this_call++;
    rec->failures++;
    return TRUE;
}

static gpointer race_thread(gpointer data)
{
    Racer *r = data;
    g_mutex_lock(r->lock);
    (*r->ready)++;
    g_cond_broadcast(r->cond);
    while (*r->ready < 2)
        g_cond_wait(r->cond, r->lock);
    g_mutex_unlock(r->lock);
    for (guint i = 0; i < RACE_N; i++) {
        g_autoptr(GError) err = NULL;
        r->this_call = 0;
        JetLedgerStatus st = jet_ledger_update(r->l, "S", "c", 1, race_mutate, r, NULL, &err);
        r->worst = MAX(r->worst, r->this_call);
        if (st == JET_LEDGER_WRITTEN)
            r->written++;
        else {
            g_test_message("racer: %s: %s", jet_ledger_status_name(st), err != NULL ? err->message : "");
            r->other++;
        }
        /* Hosts do not rewrite one record in a tight loop: two writers
         * that never pause can starve one another past any bounded retry
         * (seen: 9 and more lost CAS in a row).  Pausing up to 2 ms still
         * collides many times a run; the test asserts that it did. */
        g_usleep((gulong)g_random_int_range(0, 2000));
    }
    return NULL;
}

static void test_cas_race(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c1 = conn_open(jet_test_server_url(srv), 5000);
    Conn c2 = conn_open(jet_test_server_url(srv), 5000);
    GMutex lock;
    GCond cond;
    g_mutex_init(&lock);
    g_cond_init(&cond);
    gint ready = 0;
    Racer a = { .l = open_ok(&c1, TRUE, 3600000), .lock = &lock, .cond = &cond, .ready = &ready };
    Racer b = { .l = open_ok(&c2, FALSE, 0), .lock = &lock, .cond = &cond, .ready = &ready };
    GThread *ta = g_thread_new("racer-a", race_thread, &a);
    GThread *tb = g_thread_new("racer-b", race_thread, &b);
    g_thread_join(ta);
    g_thread_join(tb);
    gint calls = g_atomic_int_get(&a.mutate_calls) + g_atomic_int_get(&b.mutate_calls);
    g_test_message("%d mutate calls for %d writes; at most %d for one", calls, 2 * RACE_N, MAX(a.worst, b.worst));
    g_assert_cmpuint(a.other + b.other, ==, 0);
    g_assert_cmpuint(a.written, ==, RACE_N);
    g_assert_cmpuint(b.written, ==, RACE_N);
    JetLedgerRecord rec;
    g_assert_cmpint(jet_ledger_get(a.l, "S", "c", 1, &rec, NULL), ==, JET_LEDGER_FOUND);
    g_assert_cmpuint(rec.failures, ==, 2 * RACE_N);
    /* The race really happened: some writes lost their compare-and-set and
     * were retried on the fresh record. */
    g_assert_cmpint(calls, >, 2 * RACE_N);
    jet_ledger_close(a.l);
    jet_ledger_close(b.l);
    g_mutex_clear(&lock);
    g_cond_clear(&cond);
    conn_close(&c1);
    conn_close(&c2);
}

static gint64 ms_since(gint64 t0)
{
    return (g_get_monotonic_time() - t0) / 1000;
}

/* The bucket deleted under a running host: every call answers UNREACHABLE
 * at once (no responders), nothing hangs; re-opening works once it exists
 * again. */
static void test_bucket_deleted(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, NULL, NULL), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(js_DeleteKeyValue(c.js, BUCKET), ==, NATS_OK);

    JetLedgerRecord rec;
    g_autoptr(GError) err = NULL;
    /* A direct get for a stream that is gone gets no answer (the server's
     * JetStream API import still has interest): it waits out the context's
     * Wait, and no longer. */
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 1, &rec, &err), ==, JET_LEDGER_UNREACHABLE);
    g_test_message("get: %s (%" G_GINT64_FORMAT " ms)", err->message, ms_since(t0));
    g_assert_true(jet_ledger_is_unreachable_error(err));
    g_assert_cmpint(ms_since(t0), <, WAIT_MS + 1000);
    g_clear_error(&err);

    t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, NULL, &err), ==, JET_LEDGER_UNREACHABLE);
    g_test_message("update: %s (%" G_GINT64_FORMAT " ms)", err->message, ms_since(t0));
    g_assert_true(jet_ledger_is_unreachable_error(err));
    g_assert_cmpint(ms_since(t0), <, WAIT_MS + 1000);
    g_clear_error(&err);

    /* A publish to a subject no stream takes: no responders, at once. */
    t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_ledger_delete(l, "S", "c", 1, &err), ==, JET_LEDGER_UNREACHABLE);
    g_test_message("delete: %s (%" G_GINT64_FORMAT " ms)", err->message, ms_since(t0));
    g_assert_true(jet_ledger_is_unreachable_error(err));
    g_assert_cmpint(ms_since(t0), <, WAIT_MS / 2);
    g_clear_error(&err);

    /* bind mode now says missing; managed mode recreates, and a fresh
     * ledger works (the record went with the bucket) */
    g_assert_null(jet_ledger_open(c.js, BUCKET, FALSE, 0, 1, &err));
    g_assert_error(err, JET_LEDGER_ERROR, JET_LEDGER_ERROR_MISSING);
    g_clear_error(&err);
    JetLedger *l2 = open_ok(&c, TRUE, 3600000);
    g_assert_cmpint(jet_ledger_get(l2, "S", "c", 1, &rec, &err), ==, JET_LEDGER_ABSENT);
    g_assert_cmpint(jet_ledger_update(l2, "S", "c", 1, add_failure, NULL, &rec, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpuint(rec.failures, ==, 1);
    jet_ledger_close(l2);
    jet_ledger_close(l);
    conn_close(&c);
}

/* Counts the ledger's requests the server would see: a responder on the
 * bucket's read and write subjects that never answers. */
typedef struct {
    gint seen;   /* atomic */
} RequestSpy;

static void spied(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    g_atomic_int_inc(&((RequestSpy *)closure)->seen);
    natsMsg_Destroy(m);
}

/* With a cool-down, the first UNREACHABLE asks the server and the calls
 * after it answer at once without asking, until the cool-down ends and the
 * server is asked again.  How the first one fails differs by server: 2.9
 * lets a read of a deleted bucket's stream wait out the Wait (its API
 * import keeps interest), 2.10 and later answer "no responders" at once.
 * The spy stands where the bucket was, so on every server the first call
 * is asked and unanswered (it waits out the Wait), and what the cool-down
 * spares is counted, not timed. */
static void test_cooldown(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    jet_ledger_set_cooldown(l, 2000);
    g_assert_cmpint(js_DeleteKeyValue(c.js, BUCKET), ==, NATS_OK);
    RequestSpy spy = { 0 };
    static const char *const spied_on[] = { "$JS.API.DIRECT.GET.KV_" BUCKET ".>",
                                            "$JS.API.STREAM.MSG.GET.KV_" BUCKET, "$KV." BUCKET ".>" };
    natsSubscription *subs[G_N_ELEMENTS(spied_on)];
    for (gsize i = 0; i < G_N_ELEMENTS(spied_on); i++)
        g_assert_cmpint(natsConnection_Subscribe(&subs[i], c.nc, spied_on[i], spied, &spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(c.nc), ==, NATS_OK);

    JetLedgerRecord rec;
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 1, &rec, &err), ==, JET_LEDGER_UNREACHABLE);
    g_assert_cmpint(ms_since(t0), >=, WAIT_MS - 50);
    g_assert_cmpint(g_atomic_int_get(&spy.seen), ==, 1);
    g_clear_error(&err);
    t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 1, &rec, &err), ==, JET_LEDGER_UNREACHABLE);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, NULL, NULL), ==, JET_LEDGER_UNREACHABLE);
    g_assert_cmpint(jet_ledger_delete(l, "S", "c", 1, NULL), ==, JET_LEDGER_UNREACHABLE);
    g_assert_cmpint(ms_since(t0), <, 100);
    g_assert_true(jet_ledger_is_unreachable_error(err));
    g_test_message("%s", err->message);
    g_clear_error(&err);
    g_assert_cmpint(natsConnection_Flush(c.nc), ==, NATS_OK);
    /* Nothing of those three reached the server. */
    g_assert_cmpint(g_atomic_int_get(&spy.seen), ==, 1);
    for (gsize i = 0; i < G_N_ELEMENTS(subs); i++) {
        natsSubscription_Unsubscribe(subs[i]);
        natsSubscription_Destroy(subs[i]);
    }
    /* the bucket comes back; once the cool-down is over the old handle works */
    JetLedger *l2 = open_ok(&c, TRUE, 3600000);
    g_usleep(2100 * 1000);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, &rec, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpuint(rec.failures, ==, 1);
    jet_ledger_close(l2);
    jet_ledger_close(l);
    conn_close(&c);
}

/* A write the server refuses for another reason than the revision (here a
 * bound bucket whose values may be 8 bytes at most) is not a lost
 * compare-and-set: UNREACHABLE after one try, not CONFLICT after ten. */
static void test_write_refused(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = BUCKET;
    kc.History = 1;
    kc.MaxValueSize = 8;
    kvStore *kv = NULL;
    g_assert_cmpint(js_CreateKeyValue(&kv, c.js, &kc), ==, NATS_OK);
    kvStore_Destroy(kv);
    JetLedger *l = open_ok(&c, FALSE, 0);   /* bound: taken as it is (a warning: no max_age) */
    gint calls = 0;
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, count_calls, &calls, NULL, &err), ==, JET_LEDGER_UNREACHABLE);
    g_test_message("%s", err->message);
    g_assert_true(jet_ledger_is_unreachable_error(err));
    g_assert_cmpint(calls, ==, 1);
    jet_ledger_close(l);
    conn_close(&c);
}

/* A server that stops answering (SIGSTOP): calls give up after the
 * context's Wait, UNREACHABLE. */
static void test_server_stalled(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    jet_test_server_pause(srv);
    JetLedgerRecord rec;
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();
    JetLedgerStatus st = jet_ledger_get(l, "S", "c", 1, &rec, &err);
    gint64 took = ms_since(t0);
    g_clear_error(&err);
    t0 = g_get_monotonic_time();
    JetLedgerStatus su = jet_ledger_update(l, "S", "c", 1, add_failure, NULL, NULL, &err);
    gint64 took_u = ms_since(t0);
    jet_test_server_resume(srv);
    g_test_message("get %" G_GINT64_FORMAT " ms, update %" G_GINT64_FORMAT " ms", took, took_u);
    g_assert_cmpint(st, ==, JET_LEDGER_UNREACHABLE);
    g_assert_cmpint(su, ==, JET_LEDGER_UNREACHABLE);
    g_assert_true(jet_ledger_is_unreachable_error(err));
    g_assert_cmpint(took, >=, WAIT_MS - 50);
    g_assert_cmpint(took, <, WAIT_MS + 1000);
    g_assert_cmpint(took_u, <, WAIT_MS + 1000);   /* the read gives up; no write is tried */
    /* and it recovers by itself */
    g_clear_error(&err);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, &rec, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    jet_ledger_close(l);
    conn_close(&c);
}

/* What each call puts on the wire, seen by a plain subscriber: reads are
 * direct gets on $JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>, writes
 * and deletes publish to $KV.<bucket>.<key>.  Nothing else, and silence when
 * nothing is called. */
typedef struct {
    GMutex lock;
    GPtrArray *subjects;
} Spy;

static void spy_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    Spy *s = closure;
    (void)nc;
    (void)sub;
    g_mutex_lock(&s->lock);
    g_ptr_array_add(s->subjects, g_strdup(natsMsg_GetSubject(m)));
    g_mutex_unlock(&s->lock);
    natsMsg_Destroy(m);
}

static guint spy_count(Spy *s)
{
    g_mutex_lock(&s->lock);
    guint n = s->subjects->len;
    g_mutex_unlock(&s->lock);
    return n;
}

typedef struct {
    Spy *s;
    guint n;
} SpyWait;

static gboolean spy_has(gpointer data)
{
    SpyWait *w = data;
    return spy_count(w->s) >= w->n;
}

static gint sort_strings(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Waits for n subjects in all, then a quiet 200 ms to catch extras. */
static void spy_expect(Spy *s, const char *const *want)
{
    guint n = g_strv_length((char **)want);
    SpyWait w = { s, n };
    g_assert_true(jet_test_wait_until(spy_has, &w, 5000));
    g_usleep(200000);
    g_mutex_lock(&s->lock);
    for (guint i = 0; i < s->subjects->len; i++)
        g_test_message("seen: %s", (const char *)g_ptr_array_index(s->subjects, i));
    g_assert_cmpuint(s->subjects->len, ==, n);
    /* Two subscriptions deliver on two threads: compare as multisets. */
    g_autoptr(GPtrArray) expected = g_ptr_array_new();
    for (guint i = 0; i < n; i++)
        g_ptr_array_add(expected, (gpointer)want[i]);
    g_ptr_array_sort(expected, sort_strings);
    g_ptr_array_sort(s->subjects, sort_strings);
    for (guint i = 0; i < n; i++)
        g_assert_cmpstr(g_ptr_array_index(s->subjects, i), ==, g_ptr_array_index(expected, i));
    g_ptr_array_set_size(s->subjects, 0);
    g_mutex_unlock(&s->lock);
}

static void test_wire_subjects(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    Conn watch = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    Spy spy;
    g_mutex_init(&spy.lock);
    spy.subjects = g_ptr_array_new_with_free_func(g_free);
    natsSubscription *s1 = NULL, *s2 = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&s1, watch.nc, "$KV." BUCKET ".>", spy_msg, &spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Subscribe(&s2, watch.nc, "$JS.API.DIRECT.GET.KV_" BUCKET ".>", spy_msg, &spy),
                    ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(watch.nc), ==, NATS_OK);

#define GET "$JS.API.DIRECT.GET.KV_" BUCKET ".$KV." BUCKET ".ORDERS.c.42"
#define PUT "$KV." BUCKET ".ORDERS.c.42"
    /* silence while nothing is called */
    g_usleep(300000);
    g_assert_cmpuint(spy_count(&spy), ==, 0);

    JetLedgerRecord rec;
    g_assert_cmpint(jet_ledger_get(l, "ORDERS", "c", 42, &rec, NULL), ==, JET_LEDGER_ABSENT);
    spy_expect(&spy, (const char *const[]){ GET, NULL });
    g_assert_cmpint(jet_ledger_update(l, "ORDERS", "c", 42, add_failure, NULL, NULL, NULL), ==, JET_LEDGER_WRITTEN);
    spy_expect(&spy, (const char *const[]){ GET, PUT, NULL });
    g_assert_cmpint(jet_ledger_get(l, "ORDERS", "c", 42, &rec, NULL), ==, JET_LEDGER_FOUND);
    spy_expect(&spy, (const char *const[]){ GET, NULL });
    g_assert_cmpint(jet_ledger_delete(l, "ORDERS", "c", 42, NULL), ==, JET_LEDGER_WRITTEN);
    spy_expect(&spy, (const char *const[]){ PUT, NULL });
#undef GET
#undef PUT

    natsSubscription_Destroy(s1);
    natsSubscription_Destroy(s2);
    g_ptr_array_unref(spy.subjects);
    g_mutex_clear(&spy.lock);
    jet_ledger_close(l);
    conn_close(&watch);
    conn_close(&c);
}

/* --- the delivery-count fallback, through the engine ------------------- */

typedef struct {
    guint64 seq;
    guint32 deliveries;
    JetActionKind kind;
    JetCaptureCause cause;
    guint32 failure_number;
} Settled;

typedef struct {
    GMutex lock;
    GArray *settled;   /* of Settled, in the order the worker settled them */
} SettleLog;

static void on_settle(guint64 stream_seq, guint32 deliveries, const JetSettleAction *a, gpointer data)
{
    SettleLog *log = data;
    Settled s = { stream_seq, deliveries, a->kind, a->cause, a->failure_number };
    g_mutex_lock(&log->lock);
    g_array_append_val(log->settled, s);
    g_mutex_unlock(&log->lock);
}

static gboolean captured(gpointer data)
{
    SettleLog *log = data;
    g_mutex_lock(&log->lock);
    gboolean seen = FALSE;
    for (guint i = 0; i < log->settled->len; i++)
        seen |= g_array_index(log->settled, Settled, i).kind == JET_ACTION_CAPTURE;
    g_mutex_unlock(&log->lock);
    return seen;
}

/* Without the ledger every earlier delivery counts as a failure
 * (docs/retries.md, "When the ledger is unreachable"): a message that always
 * fails, max_attempts 3, retries at deliveries 1 and 2 and is captured as
 * exhausted at delivery 3, never later. */
static void run_fallback(gboolean delete_bucket)
{
    Rig r = { 0 };
    rig_server(&r);
    SettleLog log;
    g_mutex_init(&log.lock);
    log.settled = g_array_new(FALSE, FALSE, sizeof(Settled));
    r.settle_hook = on_settle;
    r.settle_data = &log;
    jet_test_stderr_begin(delete_bucket ? "fallback-unreachable.log" : "fallback-off.log");
    rig_engine(&r, delete_bucket ? "batch = 1\nmax_attempts = 3\nrungs = 100ms\noption.verdict = retry\n"
                                 : "ledger = false\nbatch = 1\nmax_attempts = 3\nrungs = 100ms\n"
                                   "option.verdict = retry\n");
    if (delete_bucket) {
        g_assert_nonnull(r.ledger);
        g_assert_cmpint(js_DeleteStream(r.js, "KV_jethost_ledger", NULL, NULL), ==, NATS_OK);
    } else {
        g_assert_null(r.ledger);
    }
    jet_test_publish_n(r.js, "orders.new", 1);
    gboolean got = jet_test_wait_until(captured, &log, 30000);
    FloorWait fw = { &r, 1 };
    gboolean acked = got && jet_test_wait_until(floor_reached, &fw, 10000);
    rig_stop(&r);
    g_autofree char *text = jet_test_stderr_end();
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);

    g_mutex_lock(&log.lock);
    for (guint i = 0; i < log.settled->len; i++) {
        Settled *s = &g_array_index(log.settled, Settled, i);
        g_test_message("seq %" G_GUINT64_FORMAT " delivery %u: kind %d cause %s failure %u", s->seq, s->deliveries,
                       s->kind, jet_cause_name(s->cause), s->failure_number);
    }
    g_assert_true(got);
    g_assert_true(acked);
    g_assert_cmpuint(log.settled->len, ==, 3);
    for (guint i = 0; i < 3; i++) {
        Settled *s = &g_array_index(log.settled, Settled, i);
        g_assert_cmpuint(s->seq, ==, 1);
        g_assert_cmpuint(s->deliveries, ==, i + 1);
        g_assert_cmpuint(s->failure_number, ==, i + 1);
        g_assert_cmpint(s->kind, ==, i < 2 ? JET_ACTION_RETRY : JET_ACTION_CAPTURE);
        g_assert_cmpint(s->cause, ==, i < 2 ? JET_CAUSE_NONE : JET_CAUSE_EXHAUSTED);
    }
    g_mutex_unlock(&log.lock);
    g_assert_cmpuint(st.dead_lettered, ==, 1);
    if (delete_bucket) {
        g_assert_cmpuint(st.ledger_fallbacks, >=, 1);
        g_assert_cmpuint(jet_test_count_lines(text, "event=ledger-fallback"), >=, 1);
    }

    /* The record in the DLQ says so too. */
    natsMsg *m = NULL;
    g_assert_cmpint(js_GetMsg(&m, r.js, "JETHOST_DLQ", 1, NULL, NULL), ==, NATS_OK);
    const char *cause = NULL;
    g_assert_cmpint(natsMsgHeader_Get(m, "Jethost-Cause", &cause), ==, NATS_OK);
    g_assert_cmpstr(cause, ==, "exhausted");
    natsMsg_Destroy(m);
    g_array_unref(log.settled);
    g_mutex_clear(&log.lock);
    rig_free(&r);
}

/* --- forgets not waited for ------------------------------------------------ */

/* The delete markers that cross the wire, as "<subject> expect=<seq>". */
typedef struct {
    GMutex lock;
    GPtrArray *seen;
} DelSpy;

static void del_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    DelSpy *s = closure;
    const char *op = NULL, *expect = NULL;
    if (natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && g_strcmp0(op, "DEL") == 0) {
        natsMsgHeader_Get(m, "Nats-Expected-Last-Subject-Sequence", &expect);
        g_mutex_lock(&s->lock);
        g_ptr_array_add(s->seen, g_strdup_printf("%s expect=%s", natsMsg_GetSubject(m), expect != NULL ? expect : "-"));
        g_mutex_unlock(&s->lock);
    }
    natsMsg_Destroy(m);
}

typedef struct {
    DelSpy *s;
    guint n;
} DelWait;

static gboolean dels_seen(gpointer data)
{
    DelWait *w = data;
    g_mutex_lock(&w->s->lock);
    gboolean ok = w->s->seen->len >= w->n;
    g_mutex_unlock(&w->s->lock);
    return ok;
}

/* Waits for n markers on the spy's own connection, then a moment for any
 * more, and checks there are exactly n. */
static void dels_expect(DelSpy *s, guint n)
{
    DelWait w = { s, n };
    g_assert_true(jet_test_wait_until(dels_seen, &w, 5000));
    g_usleep(200000);
    g_mutex_lock(&s->lock);
    g_assert_cmpuint(s->seen->len, ==, n);
    g_mutex_unlock(&s->lock);
}

typedef struct {
    JetLedger *l;
    guint64 seq;
} KeyWait;

static gboolean key_absent(gpointer data)
{
    KeyWait *w = data;
    JetLedgerRecord rec;
    return jet_ledger_get(w->l, "S", "c", w->seq, &rec, NULL) == JET_LEDGER_ABSENT;
}

static gboolean one_forget_failed(gpointer data)
{
    return jet_ledger_forgets_failed(data) >= 1;
}

/* A finished message's record is deleted without the caller waiting, and
 * only if it is still the revision the caller knew: a delete that comes
 * late never removes a record written after it.  One that nobody takes is
 * counted and logged; the call still returns at once. */
static void test_forget_behind(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    Conn watch = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    DelSpy spy;
    g_mutex_init(&spy.lock);
    spy.seen = g_ptr_array_new_with_free_func(g_free);
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&sub, watch.nc, "$KV." BUCKET ".>", del_msg, &spy), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(watch.nc), ==, NATS_OK);

    g_autoptr(GError) err = NULL;
    JetLedgerRecord old, now, other, rec;
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, &old, NULL), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 1, add_failure, NULL, &now, NULL), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 2, add_failure, NULL, &other, NULL), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpuint(now.revision, >, old.revision);

    /* Not set up: it waits, as a delete. */
    JetLedgerRecord nine;
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 9, add_failure, NULL, &nine, NULL), ==, JET_LEDGER_WRITTEN);
    g_assert_cmpint(jet_ledger_forget(l, "S", "c", 9, nine.revision, &err), ==, JET_LEDGER_WRITTEN);
    g_assert_no_error(err);
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 9, &rec, NULL), ==, JET_LEDGER_ABSENT);
    dels_expect(&spy, 1);
    g_mutex_lock(&spy.lock);
    g_ptr_array_set_size(spy.seen, 0);
    g_mutex_unlock(&spy.lock);

    g_assert_true(jet_ledger_forget_behind(l, c.nc, NULL, &err));
    g_assert_no_error(err);

    gint64 t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_ledger_forget(l, "S", "c", 1, old.revision, &err), ==, JET_LEDGER_QUEUED);
    g_assert_cmpint(jet_ledger_forget(l, "S", "c", 2, other.revision, &err), ==, JET_LEDGER_QUEUED);
    g_assert_no_error(err);
    g_test_message("two forgets queued in %" G_GINT64_FORMAT " ms", ms_since(t0));
    KeyWait gone = { l, 2 };
    g_assert_true(jet_test_wait_until(key_absent, &gone, 5000));
    /* One connection, one stream: the first was settled before the second. */
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 1, &rec, NULL), ==, JET_LEDGER_FOUND);
    g_assert_cmpuint(rec.revision, ==, now.revision);
    g_assert_cmpuint(rec.failures, ==, 2);
    g_assert_cmpuint(jet_ledger_forgets_failed(l), ==, 0);   /* losing to a later write is no failure */
    dels_expect(&spy, 2);
    g_mutex_lock(&spy.lock);
    g_autofree char *want1 = g_strdup_printf("$KV." BUCKET ".S.c.1 expect=%" G_GUINT64_FORMAT, old.revision);
    g_autofree char *want2 = g_strdup_printf("$KV." BUCKET ".S.c.2 expect=%" G_GUINT64_FORMAT, other.revision);
    g_assert_cmpstr(g_ptr_array_index(spy.seen, 0), ==, want1);
    g_assert_cmpstr(g_ptr_array_index(spy.seen, 1), ==, want2);
    g_mutex_unlock(&spy.lock);

    /* The right revision: gone. */
    g_assert_cmpint(jet_ledger_forget(l, "S", "c", 1, now.revision, &err), ==, JET_LEDGER_QUEUED);
    gone.seq = 1;
    g_assert_true(jet_test_wait_until(key_absent, &gone, 5000));

    /* Refused (the bucket's stream sealed): counted and logged with the
     * server's reason on nats.c's thread, the caller long gone on. */
    g_assert_cmpint(jet_ledger_update(l, "S", "c", 3, add_failure, NULL, &rec, NULL), ==, JET_LEDGER_WRITTEN);
    jsStreamInfo *si = bucket_info(&c);
    si->Config->Sealed = true;
    jsStreamInfo *sealed = NULL;
    g_assert_cmpint(js_UpdateStream(&sealed, c.js, si->Config, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(sealed);
    jsStreamInfo_Destroy(si);
    jet_test_stderr_begin("forget-behind");
    t0 = g_get_monotonic_time();
    g_assert_cmpint(jet_ledger_forget(l, "S", "c", 3, rec.revision, &err), ==, JET_LEDGER_QUEUED);
    gint64 took_ms = ms_since(t0);
    gboolean counted = jet_test_wait_until(one_forget_failed, l, 10000);
    g_autofree char *log = jet_test_stderr_end();
    g_test_message("%s", log);
    g_assert_cmpint(took_ms, <, WAIT_MS / 2);
    g_assert_true(counted);
    g_assert_cmpuint(jet_ledger_forgets_failed(l), ==, 1);
    g_assert_nonnull(strstr(log, "event=ledger-forget-failed"));
    g_assert_nonnull(strstr(log, "$KV." BUCKET ".S.c.3"));
    g_assert_nonnull(strstr(log, "(err "));   /* the server's refusal, not a timeout */
    g_assert_cmpint(jet_ledger_get(l, "S", "c", 3, &rec, NULL), ==, JET_LEDGER_FOUND);

    jet_ledger_close(l);
    natsSubscription_Destroy(sub);
    g_ptr_array_unref(spy.seen);
    g_mutex_clear(&spy.lock);
    conn_close(&watch);
    conn_close(&c);
}

/* Forgets still out when the ledger closes are waited for; on a paused
 * server, for two seconds and no longer, and the ones given up on are
 * logged.  Either way every call returned at once. */
static void test_forget_behind_close(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    Conn c = conn_open(jet_test_server_url(srv), WAIT_MS);
    JetLedger *l = open_ok(&c, TRUE, 3600000);
    g_assert_true(jet_ledger_forget_behind(l, c.nc, NULL, NULL));
    JetLedgerRecord rec[200];
    for (guint64 seq = 1; seq <= 200; seq++)
        g_assert_cmpint(jet_ledger_update(l, "S", "c", seq, add_failure, NULL, &rec[seq - 1], NULL), ==,
                        JET_LEDGER_WRITTEN);
    for (guint64 seq = 1; seq <= 100; seq++)
        g_assert_cmpint(jet_ledger_forget(l, "S", "c", seq, rec[seq - 1].revision, NULL), ==, JET_LEDGER_QUEUED);
    jet_ledger_close(l);
    l = open_ok(&c, FALSE, 0);
    JetLedgerRecord got;
    for (guint64 seq = 1; seq <= 100; seq++)
        g_assert_cmpint(jet_ledger_get(l, "S", "c", seq, &got, NULL), ==, JET_LEDGER_ABSENT);
    g_assert_true(jet_ledger_forget_behind(l, c.nc, NULL, NULL));

    jet_test_server_pause(srv);
    gint64 t0 = g_get_monotonic_time();
    for (guint64 seq = 101; seq <= 200; seq++)
        g_assert_cmpint(jet_ledger_forget(l, "S", "c", seq, rec[seq - 1].revision, NULL), ==, JET_LEDGER_QUEUED);
    gint64 queued_ms = ms_since(t0);
    jet_test_stderr_begin("forget-close");
    t0 = g_get_monotonic_time();
    jet_ledger_close(l);
    gint64 closed_ms = ms_since(t0);
    g_autofree char *log = jet_test_stderr_end();
    jet_test_server_resume(srv);
    g_test_message("100 forgets queued on a paused server in %" G_GINT64_FORMAT " ms; closed in %" G_GINT64_FORMAT
                   " ms: %s", queued_ms, closed_ms, log);
    g_assert_cmpint(queued_ms, <, 500);
    g_assert_cmpint(closed_ms, >=, 1900);
    g_assert_cmpint(closed_ms, <, 4500);
    g_assert_nonnull(strstr(log, "event=ledger-forget-failed"));
    g_assert_nonnull(strstr(log, "100 delete(s)"));
    conn_close(&c);
}

static void test_fallback_ledger_off(void)
{
    run_fallback(FALSE);
}

static void test_fallback_ledger_unreachable(void)
{
    run_fallback(TRUE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ledger/create-config", test_create_config);
    g_test_add_func("/ledger/entries-expire", test_entries_expire);
    g_test_add_func("/ledger/record-lifecycle", test_record_lifecycle);
    g_test_add_func("/ledger/update-from-known", test_update_from_known);
    g_test_add_func("/ledger/unreadable-record", test_unreadable_record);
    g_test_add_func("/ledger/cas-race", test_cas_race);
    g_test_add_func("/ledger/bucket-deleted", test_bucket_deleted);
    g_test_add_func("/ledger/cooldown", test_cooldown);
    g_test_add_func("/ledger/write-refused", test_write_refused);
    g_test_add_func("/ledger/server-stalled", test_server_stalled);
    g_test_add_func("/ledger/wire-subjects", test_wire_subjects);
    g_test_add_func("/ledger/forget-behind", test_forget_behind);
    g_test_add_func("/ledger/forget-behind-close", test_forget_behind_close);
    g_test_add_func("/ledger/fallback-off", test_fallback_ledger_off);
    g_test_add_func("/ledger/fallback-unreachable", test_fallback_ledger_unreachable);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
