/* The keeper: two threads for the whole process that visit every binding
 * that pulls, each on its binding's cadence (docs/engine.md, "Lease").
 *
 *   jet-lease    calls each entry's lease() every lease_every_us: work that
 *                never waits on the server (in-progress acks, what waits
 *                behind a busy handler, hung handlers);
 *   jet-observe  calls each entry's observe() every observe_every_us: work
 *                that may wait for a request's timeout (consumer info, the
 *                attempt ledger).
 *
 * So a binding whose request hangs delays no binding's lease, and the
 * process runs two threads for this however many bindings it has, not one
 * a binding (docs/performance.md, "One lease keeper for every binding").
 *
 * An entry is the owner's memory (embed it); the keeper never frees it.
 * A visit runs on the keeper's thread with no lock of the keeper's held;
 * visits to one entry by the same thread never overlap, and a lease visit
 * may run while the observer visits the same entry. */
#ifndef JET_KEEPER_H
#define JET_KEEPER_H

#include <glib.h>

typedef void (*JetKeeperVisit)(gpointer owner);
/* FALSE: a request went unanswered (a timeout); the entry's next
 * observations come later and later (2, 4, then 8 x observe_every_us) until
 * one is answered, so a few entries that hang do not hold up the others'. */
typedef gboolean (*JetKeeperObserve)(gpointer owner);

typedef struct {
    /* The owner's, set before jet_keeper_add() and not changed after. */
    JetKeeperVisit lease;
    JetKeeperObserve observe;
    gpointer owner;
    gint64 lease_every_us;     /* > 0 */
    gint64 observe_every_us;   /* > 0 */

    /* The keeper's, under its lock. */
    gint64 lease_next_us;
    gint64 observe_next_us;
    guint visits;              /* under way */
    gint64 observe_backoff;    /* 1, 2, 4 or 8 */
    gboolean added;
} JetKeeperEntry;

/* Starts visiting k: observe() at once, lease() after lease_every_us.  The
 * first entry starts the two threads. */
void jet_keeper_add(JetKeeperEntry *k);

/* Observes k as soon as the observer is free, whatever its cadence or
 * backoff (from a lease visit that found work for the observer). */
void jet_keeper_observe_soon(JetKeeperEntry *k);

/* Stops visiting k: returns once no visit to it is under way (do not call
 * it from a visit).  The last entry ends the two threads and joins them.
 * Harmless on an entry never added or already removed. */
void jet_keeper_remove(JetKeeperEntry *k);

#endif
