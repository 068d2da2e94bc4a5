/* One active host per exclusive binding (docs/exclusive.md): the claim's
 * KV I/O and the thread that keeps it.
 *
 * Each exclusive binding has a claimer thread.  Standing by, it reads the
 * binding's claim key every min(claim_heartbeat, 250 ms) and decides with
 * host/core/claim.h; once it wins (create-only write, or compare-and-set on
 * the revision it saw) it asks the daemon for a running engine.  Holding, it
 * renews the key by compare-and-set on the revision it last wrote, every
 * claim_heartbeat.  A renewal that finds the key changed (someone took it),
 * or no renewal getting through for claim_ttl - claim_heartbeat, stops the
 * engine at once (a drain: the message in a handler finishes and is
 * settled, the rest is released) and the thread stands by again.
 *
 * At a drain (jet_exclusive_stop, then jet_exclusive_join) the claimer goes
 * on renewing while the engine drains, then writes the record as released
 * (compare-and-set), so that a standby takes it at its next read. */
#ifndef JET_EXCLUSIVE_H
#define JET_EXCLUSIVE_H

#include <glib.h>
#include <nats/nats.h>

#include "claim.h"
#include "config.h"
#include "engine.h"

typedef struct JetExclusive JetExclusive;

/* Called on the claimer's thread once the claim is won: returns the
 * binding's engine, made and started (NULL: it could not start; the claim
 * is then given back).  fence: the claim's fence, to hand to
 * jet_engine_set_fence() before the engine starts (it outlives every
 * engine of this claimer).  Never called after jet_exclusive_stop(). */
typedef JetEngine *(*JetExclusiveStartFn)(const gint64 *fence, gpointer data);

/* kv: the host's bucket (borrowed; it must outlive the claimer).  host_name
 * goes into the record. */
JetExclusive *jet_exclusive_new(kvStore *kv, const JetBindingConfig *b, const char *host_name,
                                JetExclusiveStartFn start, gpointer data);
void jet_exclusive_start(JetExclusive *x);
/* The drain begins: no new claim, the engine (if running) is asked to stop.
 * Returns at once. */
void jet_exclusive_stop(JetExclusive *x);
/* After stop: waits for the engine's drain, releases the claim, ends the
 * thread. */
void jet_exclusive_join(JetExclusive *x);
void jet_exclusive_free(JetExclusive *x);

/* The engine counters summed over every engine this claimer ran, and the
 * claim's own counters. */
void jet_exclusive_stats(JetExclusive *x, JetEngineStats *engine, JetClaimStats *claims);
/* TRUE while this host holds the claim (tests, logs). */
gboolean jet_exclusive_holding(JetExclusive *x);
/* The running engine's health and floor stats; FALSE (nothing filled) while
 * standing by. */
gboolean jet_exclusive_engine_health(JetExclusive *x, JetEngineHealth *health, JetFloorStats *floor);

#endif
