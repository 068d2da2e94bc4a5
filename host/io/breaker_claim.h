/* The breaker's claim: at most one per stall window per consumer, across
 * every host, kept on the server as a create-only KV key per window
 * (docs/floor-monitor.md).
 *
 *   key    breaker.<stream>.<consumer>.<floor>.<n>   (names encoded as key tokens)
 *   value  {"seq":N,"host":"...","floor":F,"window":n}
 *
 * The bucket is the caller's (the ledger bucket is the natural home); its
 * max_age bounds how long a claim is remembered, so it must outlive the
 * longest stall whose windows should stay counted.  Observe mode claims
 * too: what it counts is what enforce would have captured. */
#ifndef JET_BREAKER_CLAIM_H
#define JET_BREAKER_CLAIM_H

#include "floor_monitor.h"

#include <glib.h>
#include <nats/nats.h>

/* The claim's KV key (caller frees).  A name's bytes outside A-Z a-z 0-9
 * _ - are written as =XX (upper-case hex), so every name is one valid key
 * token and two names never share an encoding. */
char *jet_breaker_claim_key(const char *stream, const char *consumer,
                            const JetBreakerWindow *w);

/* Who holds a window, read back from its key. */
typedef struct {
    guint64 seq;
    char host[128];
} JetBreakerClaimHolder;

/* Claims window w of (stream, consumer) for seq on behalf of host, with
 * kvStore_Create.  JET_BREAKER_CLAIMED: this call created the key.
 * JET_BREAKER_ALREADY_CLAIMED: the key exists (nats.c 3.4.1 reports that as
 * a plain NATS_ERR whose text reads "wrong last sequence", err 10071); when
 * holder is not NULL it is filled from the key (zeroed if it cannot be
 * read).  JET_BREAKER_CLAIM_ERROR: anything else, with error set; nothing
 * is known, and the caller tries again with a later delivery. */
JetBreakerClaimResult jet_breaker_claim(kvStore *kv, const char *stream, const char *consumer,
                                        const JetBreakerWindow *w, guint64 seq,
                                        const char *host, JetBreakerClaimHolder *holder,
                                        GError **error);

/* Observe mode, across hosts: a message counted as would-quarantine is
 * marked with a create-only key (value: the host), so that a later window,
 * on any host, does not count it again (enforce would have captured it at
 * the first claim).
 *
 *   key    breaker-counted.<stream>.<consumer>.<seq>
 *
 * jet_breaker_mark_counted: TRUE when the key exists now (made here or
 * before).  jet_breaker_was_counted: 1 marked, 0 not, -1 not known (the
 * caller goes on as if not marked: a double count, never a lost one). */
char *jet_breaker_counted_key(const char *stream, const char *consumer, guint64 seq);
gboolean jet_breaker_mark_counted(kvStore *kv, const char *stream, const char *consumer, guint64 seq,
                                  const char *host, GError **error);
int jet_breaker_was_counted(kvStore *kv, const char *stream, const char *consumer, guint64 seq);

#endif
