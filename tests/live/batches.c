/* Handler batches (handle_batch(), docs/batches.md) against a real
 * nats-server: per-message verdicts settled as handle()'s, a batch that
 * fails as a whole, redeliveries on their own, and batches no larger than
 * batch_max nor held past batch_wait. */
#include "rig.h"

#include <string.h>

/* DIR/batches.log: "<n> <first seq> <last seq>" per handle_batch() call. */
static GArray *batch_sizes(Rig *r)
{
    GArray *sizes = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autofree char *path = g_build_filename(r->dir, "batches.log", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return sizes;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (lines[i][0] == '\0')
            continue;
        guint n = (guint)g_ascii_strtoull(lines[i], NULL, 10);
        g_array_append_val(sizes, n);
    }
    return sizes;
}

/* Each seq's handlings and the verdict letters of its deliveries, from
 * handled.log (column 7). */
static guint handlings_of(Rig *r, guint64 seq, char *verdicts, gsize len)
{
    g_autofree char *path = g_build_filename(r->dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    guint n = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], " ", -1);
        if (g_strv_length(f) < 7 || g_ascii_strtoull(f[0], NULL, 10) != seq)
            continue;
        if (n + 1 < len)
            verdicts[n] = f[6][0];
        n++;
    }
    verdicts[MIN(n, len - 1)] = '\0';
    return n;
}

/* 200 messages in batches of up to 10 (pulls of 20): one rejected, one
 * postponed at its first delivery, one retried until its attempts are
 * spent.  Each verdict is settled as handle()'s: the rejected one
 * dead-lettered at once, the postponed one acked at its second delivery,
 * the retried one dead-lettered as exhausted after 3; their deliveries
 * after the first through handle(), alone; every batch at most 10. */
static void test_verdicts(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_publish_n(r.js, "orders.new", 200);
    rig_engine(&r, "batch = 20\nbatch_max = 10\nrungs = 100ms\nmax_attempts = 3\n"
                   "option.seq_verdicts = 37=reject,71=retry\noption.postpone_first_seq = 58\n"
                   "option.postpone_delay = 100ms\n");
    FloorWait fw = { &r, 200 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_wait_dead_lettered(&r, 2);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_test_message("acked %" G_GUINT64_FORMAT " retried %" G_GUINT64_FORMAT " postponed %" G_GUINT64_FORMAT
                   " dead %" G_GUINT64_FORMAT " messages %" G_GUINT64_FORMAT, st.acked, st.retried, st.postponed,
                   st.dead_lettered, st.messages);
    g_assert_cmpuint(st.acked, ==, 198);
    g_assert_cmpuint(st.dead_lettered, ==, 2);
    g_assert_cmpuint(st.retried, ==, 2);
    g_assert_cmpuint(st.postponed, ==, 1);
    char v[8];
    g_assert_cmpuint(handlings_of(&r, 37, v, sizeof v), ==, 1);
    g_assert_cmpstr(v, ==, "j");
    g_assert_cmpuint(handlings_of(&r, 58, v, sizeof v), ==, 2);
    g_assert_cmpstr(v, ==, "pa");
    g_assert_cmpuint(handlings_of(&r, 71, v, sizeof v), ==, 3);
    g_assert_cmpstr(v, ==, "rrr");
    g_autoptr(GArray) sizes = batch_sizes(&r);
    guint total = 0, max = 0;
    for (guint i = 0; i < sizes->len; i++) {
        guint n = g_array_index(sizes, guint, i);
        total += n;
        max = MAX(max, n);
    }
    g_test_message("%u batches, %u messages, the largest %u", sizes->len, total, max);
    /* Every first delivery went through handle_batch(), none after. */
    g_assert_cmpuint(total, ==, 200);
    g_assert_cmpuint(max, <=, 10);
    g_assert_cmpuint(sizes->len, <, 100);
    rig_free(&r);
}

/* A batch that fails as a whole (handle_batch() returns 7 when seq 13 is in
 * it): each of its messages is retried with the return value as its reason;
 * delivered again, each comes on its own through handle() and is acked, so
 * no message fails twice for another's sake. */
typedef struct {
    GMutex lock;
    char reason13[320];   /* seq 13's first settlement's reason */
} Reasons;

static void keep_reason(guint64 stream_seq, guint32 deliveries, const JetSettleAction *a, gpointer data)
{
    Reasons *rs = data;
    if (stream_seq != 13 || deliveries != 1)
        return;
    g_mutex_lock(&rs->lock);
    g_strlcpy(rs->reason13, a->reason, sizeof rs->reason13);
    g_mutex_unlock(&rs->lock);
}

static void test_batch_fails(void)
{
    Rig r = { 0 };
    rig_server(&r);
    Reasons rs = { 0 };
    g_mutex_init(&rs.lock);
    r.settle_hook = keep_reason;
    r.settle_data = &rs;
    jet_test_publish_n(r.js, "orders.new", 40);
    /* batch_wait: the batch holding 13 gathers the whole pull it came in
     * (without it a loaded machine could hand 13 over alone). */
    rig_engine(&r, "batch = 10\nbatch_max = 10\nbatch_wait = 500ms\nrungs = 100ms\noption.batch_fail_seq = 13\n");
    FloorWait fw = { &r, 40 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.acked, ==, 40);
    g_assert_cmpuint(st.dead_lettered, ==, 0);
    /* The failed batch was the one holding 13, with 11 and 12 at least
     * (the first pull's ten are 1..10). */
    g_assert_cmpuint(st.retried, >=, 3);
    g_assert_cmpuint(st.retried, <=, 10);
    char v[8];
    /* Seq 13 reached the plugin once, through handle() on its second
     * delivery (the failed batch's call never got to the messages). */
    g_assert_cmpuint(handlings_of(&r, 13, v, sizeof v), ==, 1);
    g_assert_cmpstr(v, ==, "a");
    g_mutex_lock(&rs.lock);
    g_assert_nonnull(strstr(rs.reason13, "handle_batch() returned 7 for the batch of "));
    g_mutex_unlock(&rs.lock);
    g_mutex_clear(&rs.lock);
    g_autoptr(GArray) sizes = batch_sizes(&r);
    guint total = 0;
    for (guint i = 0; i < sizes->len; i++)
        total += g_array_index(sizes, guint, i);
    g_assert_cmpuint(total, ==, 40);
    rig_free(&r);
}

/* batch_wait: with one message at a time arriving (batch = 1 is refused
 * for batch_max 4, so pulls of 4 and a slow publisher), a batch waits up to
 * 300 ms to fill; without it, it takes what has arrived. */
static void test_batch_wait(void)
{
    Rig r = { 0 };
    rig_server(&r);
    rig_engine(&r, "batch = 4\nbatch_max = 4\nbatch_wait = 300ms\n");
    for (int i = 0; i < 4; i++) {
        g_assert_cmpint(js_Publish(NULL, r.js, "orders.new", "x", 1, NULL, NULL), ==, NATS_OK);
        g_usleep(30 * 1000);
    }
    FloorWait fw = { &r, 4 };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 20000));
    rig_stop(&r);
    g_autoptr(GArray) sizes = batch_sizes(&r);
    g_assert_cmpuint(sizes->len, ==, 1);
    g_assert_cmpuint(g_array_index(sizes, guint, 0), ==, 4);
    rig_free(&r);
}

/* Batches on lanes (key = subject:2, 20 keys, 2 runners): a batch holds
 * what the lanes have ready, one message a key at most; per key the first
 * handlings follow stream order, and a key whose message 37 was postponed
 * at its first delivery hands out nothing more until 37 is acked (its
 * redelivery comes alone, through handle(), and is handled by the other
 * runner while one runner's batch is held in the plugin). */
#define LANE_KEYS 20
#define LANE_N 600

static guint key_of(guint64 seq)
{
    return (guint)((seq - 1) % LANE_KEYS);
}

typedef struct {
    Rig *r;
    guint64 seq;
} RedeliveryWait;

/* rw->seq's second delivery was handled. */
static gboolean redelivered(gpointer data)
{
    RedeliveryWait *rw = data;
    g_autoptr(GArray) deliveries = NULL;
    g_autoptr(GArray) seqs = handled_seqs(rw->r, &deliveries);
    for (guint i = 0; i < seqs->len; i++)
        if (g_array_index(seqs, guint64, i) == rw->seq && g_array_index(deliveries, guint, i) == 2)
            return TRUE;
    return FALSE;
}

static void test_lanes(void)
{
    Rig r = { 0 };
    rig_server(&r);
    for (guint i = 0; i < LANE_N; i++) {
        char subject[32];
        g_snprintf(subject, sizeof subject, "orders.k%u", i % LANE_KEYS);
        g_assert_cmpint(js_Publish(NULL, r.js, subject, "x", 1, NULL, NULL), ==, NATS_OK);
    }
    rig_engine(&r, "key = subject:2\nworkers = 3\nbatch = 50\nbatch_max = 10\nrungs = 100ms\noption.sleep = 1ms\n"
                   "option.postpone_first_seq = 37\noption.postpone_delay = 300ms\noption.block_seq = 200\n");
    /* While one runner's batch is held in the plugin (seq 200's), the
     * other goes on: 37's redelivery among what it handles. */
    rig_wait_inflight(&r, 200);
    RedeliveryWait rw = { &r, 37 };
    g_assert_true(jet_test_wait_until(redelivered, &rw, 20000));
    rig_let_go(&r, 200);
    FloorWait fw = { &r, LANE_N };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 60000));
    rig_stop(&r);

    /* Each batch: one message a key. */
    g_autofree char *path = g_build_filename(r.dir, "batches.log", NULL);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    guint batches = 0, largest = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], " ", -1);
        if (g_strv_length(f) < 4)
            continue;
        g_auto(GStrv) seqs = g_strsplit(f[3], ",", -1);
        gboolean seen[LANE_KEYS] = { FALSE };
        for (guint k = 0; seqs[k] != NULL; k++) {
            guint key = key_of(g_ascii_strtoull(seqs[k], NULL, 10));
            if (seen[key])
                g_error("batch '%s' holds two messages of key k%u", lines[i], key);
            seen[key] = TRUE;
        }
        batches++;
        largest = MAX(largest, g_strv_length(seqs));
    }
    g_test_message("%u batches, the largest %u", batches, largest);
    g_assert_cmpuint(largest, >, 1);

    /* Per key, first handlings in stream order; 37's key waits for it. */
    g_autoptr(GArray) deliveries = NULL;
    g_autoptr(GArray) seqs = handled_seqs(&r, &deliveries);
    guint64 last[LANE_KEYS] = { 0 };
    gint at_37_acked = -1, at_57 = -1;
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        guint d = g_array_index(deliveries, guint, i);
        if (s == 37 && d == 2)
            at_37_acked = (gint)i;
        if (s == 57 && d == 1)
            at_57 = (gint)i;
        if (d != 1)
            continue;
        g_assert_cmpuint(s, >, last[key_of(s)]);
        last[key_of(s)] = s;
    }
    g_assert_cmpint(at_37_acked, >=, 0);
    g_assert_cmpint(at_57, >, at_37_acked);
    g_assert_cmpuint(seqs->len, ==, LANE_N + 1);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/batches/verdicts", test_verdicts);
    g_test_add_func("/batches/batch-fails", test_batch_fails);
    g_test_add_func("/batches/batch-wait", test_batch_wait);
    g_test_add_func("/batches/lanes", test_lanes);
    return g_test_run();
}
