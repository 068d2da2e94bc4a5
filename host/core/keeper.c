/* The keeper's two threads (keeper.h has what they promise). */
#include "keeper.h"

/* One pair of threads.  quit is theirs alone: a pair being ended while the
 * next starts (the last binding leaves as a new one joins, on a reload)
 * never takes the other's flag for its own. */
typedef struct {
    GThread *lease, *observer;
    gboolean quit;             /* under keeper.lock */
} Crew;

static struct {
    GMutex lock;               /* everything here, and the entries' keeper fields */
    GCond wake;                /* an entry added, or the crew quits */
    GCond visit_done;          /* a visit ended: a leaving entry waits for its own */
    GPtrArray *entries;        /* JetKeeperEntry*, not owned */
    Crew *crew;                /* NULL while no entry is kept */
} keeper;

/* A thread with nothing due looks again after this at the latest. */
#define IDLE_WAKE_US G_USEC_PER_SEC
/* An entry whose observations go unanswered is observed every 2, 4, 8
 * times its cadence, no less often. */
#define OBSERVE_BACKOFF_MAX 8

typedef enum { LEASE, OBSERVE } Visit;

static gint64 *next_of(JetKeeperEntry *k, Visit v)
{
    return v == LEASE ? &k->lease_next_us : &k->observe_next_us;
}

/* Under keeper.lock: the entry whose visit is most overdue, else NULL with
 * *wake_us the earliest one due.  Most overdue first: an entry visited
 * just now never comes before one still waiting. */
static JetKeeperEntry *due(Visit v, gint64 now, gint64 *wake_us)
{
    JetKeeperEntry *first = NULL;
    *wake_us = now + IDLE_WAKE_US;
    for (guint i = 0; i < keeper.entries->len; i++) {
        JetKeeperEntry *k = g_ptr_array_index(keeper.entries, i);
        gint64 next = *next_of(k, v);
        if (next <= now && (first == NULL || next < *next_of(first, v)))
            first = k;
        *wake_us = MIN(*wake_us, next);
    }
    return first;
}

static void run(Crew *crew, Visit v)
{
    g_mutex_lock(&keeper.lock);
    while (!crew->quit) {
        gint64 wake_us;
        JetKeeperEntry *k = due(v, g_get_monotonic_time(), &wake_us);
        if (k == NULL) {
            g_cond_wait_until(&keeper.wake, &keeper.lock, wake_us);
            continue;
        }
        k->visits++;
        g_mutex_unlock(&keeper.lock);
        gboolean answered = TRUE;
        if (v == LEASE)
            k->lease(k->owner);
        else
            answered = k->observe(k->owner);
        g_mutex_lock(&keeper.lock);
        gint64 every_us = k->lease_every_us;
        if (v == OBSERVE) {
            /* An entry whose request went unanswered waits longer each time
             * (to OBSERVE_BACKOFF_MAX x its cadence), so a few that hang
             * take a bounded share of the observer from the others. */
            k->observe_backoff = answered ? 1 : MIN(k->observe_backoff * 2, OBSERVE_BACKOFF_MAX);
            every_us = k->observe_every_us * k->observe_backoff;
        }
        *next_of(k, v) = g_get_monotonic_time() + every_us;
        k->visits--;
        g_cond_broadcast(&keeper.visit_done);
    }
    g_mutex_unlock(&keeper.lock);
}

static gpointer lease_main(gpointer crew)
{
    run(crew, LEASE);
    return NULL;
}

static gpointer observer_main(gpointer crew)
{
    run(crew, OBSERVE);
    return NULL;
}

void jet_keeper_add(JetKeeperEntry *k)
{
    g_return_if_fail(k != NULL && k->lease != NULL && k->observe != NULL);
    g_return_if_fail(k->lease_every_us > 0 && k->observe_every_us > 0);
    g_mutex_lock(&keeper.lock);
    if (k->added) {
        g_mutex_unlock(&keeper.lock);
        return;
    }
    /* Added again while its removal waits for a visit: after that visit. */
    while (k->visits > 0)
        g_cond_wait(&keeper.visit_done, &keeper.lock);
    if (keeper.entries == NULL)
        keeper.entries = g_ptr_array_new();
    gint64 now = g_get_monotonic_time();
    k->observe_next_us = now;
    k->lease_next_us = now + k->lease_every_us;
    k->visits = 0;
    k->observe_backoff = 1;
    k->added = TRUE;
    g_ptr_array_add(keeper.entries, k);
    if (keeper.crew == NULL) {
        Crew *crew = g_new0(Crew, 1);
        crew->lease = g_thread_new("jet-lease", lease_main, crew);
        crew->observer = g_thread_new("jet-observe", observer_main, crew);
        keeper.crew = crew;
    }
    g_cond_broadcast(&keeper.wake);
    g_mutex_unlock(&keeper.lock);
}

void jet_keeper_observe_soon(JetKeeperEntry *k)
{
    g_mutex_lock(&keeper.lock);
    if (k->added && k->observe_next_us > g_get_monotonic_time()) {
        k->observe_next_us = g_get_monotonic_time();
        g_cond_broadcast(&keeper.wake);
    }
    g_mutex_unlock(&keeper.lock);
}

void jet_keeper_remove(JetKeeperEntry *k)
{
    if (k == NULL)
        return;
    Crew *ended = NULL;
    g_mutex_lock(&keeper.lock);
    if (!k->added) {
        g_mutex_unlock(&keeper.lock);
        return;
    }
    g_ptr_array_remove(keeper.entries, k);
    k->added = FALSE;
    while (k->visits > 0)
        g_cond_wait(&keeper.visit_done, &keeper.lock);
    /* A removal that waited for a visit may find the crew already ended
     * (another removal took the last entry meanwhile), or a new one. */
    if (keeper.entries->len == 0 && keeper.crew != NULL) {
        ended = keeper.crew;
        keeper.crew = NULL;
        ended->quit = TRUE;
        g_cond_broadcast(&keeper.wake);
    }
    g_mutex_unlock(&keeper.lock);
    if (ended != NULL) {
        g_thread_join(ended->lease);
        g_thread_join(ended->observer);
        g_free(ended);
    }
}
