/* The keeper's two shared threads, with entries whose visits the test
 * holds and counts: a hanging observation delays no lease, each entry on
 * its own cadence, removal waits for a visit under way and ends every
 * visit, two threads for fifty entries and none once the last has gone,
 * and entries added and removed from several threads at once. */
#include "keeper.h"

#include <glib.h>
#include <string.h>

#define MS G_GINT64_CONSTANT(1000)

typedef struct {
    JetKeeperEntry k;
    gint leases, observes;     /* atomic: visits made */
    gint alive;                /* atomic: 1 from before add until after remove */
    gint bad_visits;           /* atomic: a visit to an entry not alive */
    gint unanswered;           /* atomic: observe() says its request went unanswered */
    GMutex lock;
    GCond cond;
    gboolean hold_observe;     /* the next observation waits for release() */
    gboolean hold_lease;       /* the next lease visit waits for release() */
    gboolean in_visit;         /* a held visit has started */
} Probe;

static void hold_here(Probe *p, gboolean *hold)
{
    g_mutex_lock(&p->lock);
    if (*hold) {
        p->in_visit = TRUE;
        g_cond_broadcast(&p->cond);
        while (*hold)
            g_cond_wait(&p->cond, &p->lock);
        p->in_visit = FALSE;
    }
    g_mutex_unlock(&p->lock);
}

static void on_lease(gpointer data)
{
    Probe *p = data;
    if (!g_atomic_int_get(&p->alive))
        g_atomic_int_inc(&p->bad_visits);
    g_atomic_int_inc(&p->leases);
    hold_here(p, &p->hold_lease);
}

static gboolean on_observe(gpointer data)
{
    Probe *p = data;
    if (!g_atomic_int_get(&p->alive))
        g_atomic_int_inc(&p->bad_visits);
    g_atomic_int_inc(&p->observes);
    hold_here(p, &p->hold_observe);
    return !g_atomic_int_get(&p->unanswered);
}

static void probe_init(Probe *p, gint64 lease_us, gint64 observe_us)
{
    memset(p, 0, sizeof *p);
    g_mutex_init(&p->lock);
    g_cond_init(&p->cond);
    p->k.lease = on_lease;
    p->k.observe = on_observe;
    p->k.owner = p;
    p->k.lease_every_us = lease_us;
    p->k.observe_every_us = observe_us;
}

static void probe_add(Probe *p)
{
    g_atomic_int_set(&p->alive, 1);
    jet_keeper_add(&p->k);
}

static void probe_remove_now(Probe *p)
{
    jet_keeper_remove(&p->k);
    g_atomic_int_set(&p->alive, 0);
}

static gpointer remove_in_thread(gpointer data)
{
    probe_remove_now(data);
    return NULL;
}

/* Fails the test unless p's removal returns within 5 s. */
static void wait_not_alive(Probe *p)
{
    gint64 until = g_get_monotonic_time() + 5000 * MS;
    while (g_atomic_int_get(&p->alive) && g_get_monotonic_time() < until)
        g_usleep(MS);
    g_assert_cmpint(g_atomic_int_get(&p->alive), ==, 0);
}

/* Removes p on another thread: a removal that never returns fails, never
 * hangs, the test. */
static void probe_remove(Probe *p)
{
    GThread *t = g_thread_new("remover", remove_in_thread, p);
    wait_not_alive(p);
    g_thread_join(t);
}

static void probe_clear(Probe *p)
{
    g_assert_cmpint(g_atomic_int_get(&p->bad_visits), ==, 0);
    g_mutex_clear(&p->lock);
    g_cond_clear(&p->cond);
}

/* Waits (5 s at most) until a held visit of p has started. */
static void wait_in_visit(Probe *p)
{
    gint64 until = g_get_monotonic_time() + 5000 * MS;
    g_mutex_lock(&p->lock);
    while (!p->in_visit)
        g_assert_true(g_cond_wait_until(&p->cond, &p->lock, until));
    g_mutex_unlock(&p->lock);
}

static void release(Probe *p)
{
    g_mutex_lock(&p->lock);
    p->hold_observe = p->hold_lease = FALSE;
    g_cond_broadcast(&p->cond);
    g_mutex_unlock(&p->lock);
}

/* Threads of this process named name. */
static guint threads_named(const char *name)
{
    g_autoptr(GDir) d = g_dir_open("/proc/self/task", 0, NULL);
    g_assert_nonnull(d);
    guint n = 0;
    const char *tid;
    while ((tid = g_dir_read_name(d)) != NULL) {
        g_autofree char *path = g_build_filename("/proc/self/task", tid, "comm", NULL);
        g_autofree char *comm = NULL;
        if (!g_file_get_contents(path, &comm, NULL, NULL))
            continue;
        g_strchomp(comm);
        n += strcmp(comm, name) == 0;
    }
    return n;
}

/* Threads named name, once there are want of them (a new thread names
 * itself once it runs): 5 s at most. */
static guint threads_named_become(const char *name, guint want)
{
    gint64 until = g_get_monotonic_time() + 5000 * MS;
    guint n;
    while ((n = threads_named(name)) != want && g_get_monotonic_time() < until)
        g_usleep(5 * MS);
    return n;
}

/* A binding whose consumer-info request hangs (a paused stream leader):
 * every binding's leases, its own too, go on at their cadence. */
static void test_hung_observe_delays_no_lease(void)
{
    Probe a, b;
    probe_init(&a, 20 * MS, 50 * MS);
    probe_init(&b, 20 * MS, 50 * MS);
    a.hold_observe = TRUE;
    probe_add(&a);
    wait_in_visit(&a);   /* an entry is observed at once */
    probe_add(&b);
    gint b_leases = g_atomic_int_get(&b.leases), a_leases = g_atomic_int_get(&a.leases);
    g_usleep(1000 * MS);
    b_leases = g_atomic_int_get(&b.leases) - b_leases;
    a_leases = g_atomic_int_get(&a.leases) - a_leases;
    g_test_message("in 1 s with a's observation hanging: %d lease visits to a, %d to b, %d observations of b",
                   a_leases, b_leases, g_atomic_int_get(&b.observes));
    /* 50 due each; a loaded machine may make fewer, never none. */
    g_assert_cmpint(b_leases, >=, 20);
    g_assert_cmpint(a_leases, >=, 20);
    /* b waits behind a for its observation: one thread observes. */
    g_assert_cmpint(g_atomic_int_get(&b.observes), ==, 0);
    release(&a);
    gint64 until = g_get_monotonic_time() + 5000 * MS;
    while (g_atomic_int_get(&b.observes) == 0 && g_get_monotonic_time() < until)
        g_usleep(5 * MS);
    g_assert_cmpint(g_atomic_int_get(&b.observes), >=, 1);
    probe_remove(&a);
    probe_remove(&b);
    probe_clear(&a);
    probe_clear(&b);
}

/* Each entry on its own cadence: a fast one is not slowed to a slow one's,
 * and none is visited more often than asked (bounds from the time the test
 * actually slept: a loaded machine oversleeps). */
static void test_cadence(void)
{
    Probe fast, slow;
    probe_init(&fast, 10 * MS, 40 * MS);
    probe_init(&slow, 400 * MS, 1000 * MS);
    gint64 t0 = g_get_monotonic_time();
    probe_add(&slow);
    probe_add(&fast);
    g_usleep(1000 * MS);
    gint fl = g_atomic_int_get(&fast.leases), fo = g_atomic_int_get(&fast.observes);
    gint sl = g_atomic_int_get(&slow.leases), so = g_atomic_int_get(&slow.observes);
    gint64 slept = g_get_monotonic_time() - t0;
    probe_remove(&fast);
    probe_remove(&slow);
    g_test_message("in %" G_GINT64_FORMAT " ms: fast %d leases %d observations, slow %d leases %d observations",
                   slept / MS, fl, fo, sl, so);
    g_assert_cmpint(fl, >=, 30);                        /* 100 due */
    g_assert_cmpint(fl, <=, slept / (10 * MS));         /* never more often than asked */
    g_assert_cmpint(fo, >=, 8);                         /* 25 due, the first at once */
    g_assert_cmpint(fo, <=, slept / (40 * MS) + 1);
    g_assert_cmpint(sl, >=, 1);
    g_assert_cmpint(sl, <=, slept / (400 * MS));
    g_assert_cmpint(so, >=, 1);                         /* at once */
    g_assert_cmpint(so, <=, slept / (1000 * MS) + 1);
    probe_clear(&fast);
    probe_clear(&slow);
}

/* An entry whose observations go unanswered is observed less and less
 * often (2, 4, 8 x its cadence), and at its cadence again once answered. */
static void test_unanswered_backs_off(void)
{
    Probe p;
    probe_init(&p, 1000 * MS, 20 * MS);
    g_atomic_int_set(&p.unanswered, 1);
    gint64 t0 = g_get_monotonic_time();
    probe_add(&p);
    g_usleep(1000 * MS);
    gint backed = g_atomic_int_get(&p.observes);
    gint64 slept = g_get_monotonic_time() - t0;
    g_atomic_int_set(&p.unanswered, 0);
    /* At most 8 x 20 ms until the next, then every 20 ms again. */
    gint before = g_atomic_int_get(&p.observes);
    g_usleep(1000 * MS);
    gint again = g_atomic_int_get(&p.observes) - before;
    probe_remove(&p);
    g_test_message("in %" G_GINT64_FORMAT " ms unanswered: %d observations; in the next second: %d", slept / MS,
                   backed, again);
    /* Unanswered: at 0, 40, 120, 280, 440, ... ms (8 x 20 from the fourth
     * on): about 8 in a second, against 50 answered. */
    g_assert_cmpint(backed, >=, 3);
    g_assert_cmpint(backed, <=, 4 + (slept - 280 * MS) / (160 * MS));
    g_assert_cmpint(again, >=, 15);
    probe_clear(&p);
}

/* A binding's engine is freed once remove returns: remove waits for the
 * visit under way, and no visit comes after it. */
static void test_remove_waits_for_visit(void)
{
    Probe p, other;
    probe_init(&p, 10 * MS, 10 * MS);
    probe_init(&other, 10 * MS, 10 * MS);
    probe_add(&other);   /* so the threads do not end with p */
    p.hold_lease = TRUE;
    probe_add(&p);
    wait_in_visit(&p);
    GThread *t = g_thread_new("remover", remove_in_thread, &p);
    g_usleep(200 * MS);
    g_assert_cmpint(g_atomic_int_get(&p.alive), ==, 1);   /* remove has not returned */
    release(&p);
    g_thread_join(t);
    g_assert_cmpint(g_atomic_int_get(&p.alive), ==, 0);
    gint leases = g_atomic_int_get(&p.leases), observes = g_atomic_int_get(&p.observes);
    g_usleep(100 * MS);
    g_assert_cmpint(g_atomic_int_get(&p.leases), ==, leases);
    g_assert_cmpint(g_atomic_int_get(&p.observes), ==, observes);
    g_assert_cmpint(g_atomic_int_get(&other.leases), >, 0);
    probe_remove(&other);
    probe_remove(&p);   /* twice: harmless */
    probe_clear(&p);
    probe_clear(&other);
}

/* Waits (5 s at most) until a removal under way has taken p out of the
 * keeper's list (it may still wait for a visit). */
static void wait_out_of_keeper(Probe *p)
{
    gint64 until = g_get_monotonic_time() + 5000 * MS;
    while (__atomic_load_n(&p->k.added, __ATOMIC_ACQUIRE) && g_get_monotonic_time() < until)
        g_usleep(MS);
    g_assert_false(__atomic_load_n(&p->k.added, __ATOMIC_ACQUIRE));
}

/* Two bindings leave at once while one's observation hangs (two exclusive
 * claims lost in one network fault): the first removal waits for that
 * visit while the second ends the threads; the first must find them ended. */
static void test_two_removals_at_once(void)
{
    Probe a, b;
    probe_init(&a, 10 * MS, 10 * MS);
    probe_init(&b, 10 * MS, 10 * MS);
    a.hold_observe = TRUE;
    probe_add(&a);
    wait_in_visit(&a);
    probe_add(&b);
    GThread *ta = g_thread_new("remover-a", remove_in_thread, &a);
    wait_out_of_keeper(&a);   /* its removal now waits for the visit */
    GThread *tb = g_thread_new("remover-b", remove_in_thread, &b);
    /* b was the last: its removal ends the threads, and waits for the
     * observer, still in a's visit. */
    wait_out_of_keeper(&b);
    release(&a);
    /* Both return (a regression fails here within 5 s, never hangs). */
    wait_not_alive(&a);
    wait_not_alive(&b);
    g_thread_join(ta);
    g_thread_join(tb);
    g_assert_cmpuint(threads_named_become("jet-lease", 0), ==, 0);
    probe_clear(&a);
    probe_clear(&b);
}

/* Two threads for fifty entries, none once the last has gone, and two
 * again for the next. */
#define MANY 50
static void test_two_threads(void)
{
    g_assert_cmpuint(threads_named_become("jet-lease", 0), ==, 0);
    Probe *ps = g_new0(Probe, MANY);
    for (guint i = 0; i < MANY; i++) {
        probe_init(&ps[i], 20 * MS, 50 * MS);
        probe_add(&ps[i]);
    }
    g_assert_cmpuint(threads_named_become("jet-lease", 1), ==, 1);
    g_assert_cmpuint(threads_named_become("jet-observe", 1), ==, 1);
    g_usleep(300 * MS);
    for (guint i = 0; i < MANY; i++) {
        g_assert_cmpint(g_atomic_int_get(&ps[i].observes), >=, 1);
        g_assert_cmpint(g_atomic_int_get(&ps[i].leases), >=, 1);
        probe_remove(&ps[i]);
        probe_clear(&ps[i]);
    }
    g_assert_cmpuint(threads_named_become("jet-lease", 0), ==, 0);
    g_assert_cmpuint(threads_named_become("jet-observe", 0), ==, 0);
    Probe again;
    probe_init(&again, 10 * MS, 10 * MS);
    probe_add(&again);
    g_assert_cmpuint(threads_named_become("jet-lease", 1), ==, 1);
    gint64 until = g_get_monotonic_time() + 5000 * MS;
    while (g_atomic_int_get(&again.leases) == 0 && g_get_monotonic_time() < until)
        g_usleep(5 * MS);
    g_assert_cmpint(g_atomic_int_get(&again.leases), >=, 1);
    probe_remove(&again);
    probe_clear(&again);
    g_free(ps);
}

/* Bindings come and go from several threads (a reload, a failing
 * binding): the last leaving while the next joins included.  A visit to an
 * entry after its removal returned is counted as bad by the probe. */
#define CHURN_THREADS 4
#define CHURN_ROUNDS 300
static gpointer churn(gpointer data)
{
    GRand *rand = data;
    Probe p;
    for (guint i = 0; i < CHURN_ROUNDS; i++) {
        probe_init(&p, 1 + g_rand_int_range(rand, 0, 3) * MS, 1 + g_rand_int_range(rand, 0, 3) * MS);
        probe_add(&p);
        g_usleep(g_rand_int_range(rand, 0, 3000));
        probe_remove(&p);
        probe_clear(&p);
    }
    g_rand_free(rand);
    return NULL;
}

static void test_churn(void)
{
    guint32 seed = (guint32)g_test_rand_int();
    g_test_message("seed %" G_GUINT32_FORMAT, seed);
    GThread *t[CHURN_THREADS];
    for (guint i = 0; i < CHURN_THREADS; i++)
        t[i] = g_thread_new("churn", churn, g_rand_new_with_seed(seed + i));
    for (guint i = 0; i < CHURN_THREADS; i++)
        g_thread_join(t[i]);
    g_assert_cmpuint(threads_named_become("jet-lease", 0), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/keeper/hung-observe-delays-no-lease", test_hung_observe_delays_no_lease);
    g_test_add_func("/keeper/cadence", test_cadence);
    g_test_add_func("/keeper/remove-waits-for-visit", test_remove_waits_for_visit);
    g_test_add_func("/keeper/two-removals-at-once", test_two_removals_at_once);
    g_test_add_func("/keeper/unanswered-backs-off", test_unanswered_backs_off);
    g_test_add_func("/keeper/two-threads", test_two_threads);
    g_test_add_func("/keeper/churn", test_churn);
    return g_test_run();
}
