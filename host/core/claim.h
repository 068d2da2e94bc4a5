/* An exclusive binding's claim: the pure half (docs/exclusive.md).
 *
 * Hosts that run the same binding with `exclusive = true` agree on one
 * holder through a key of the host's KV bucket:
 *
 *   key    claim.<binding>            (a binding name is already a key token)
 *   value  {"host":"...","run":"<32 hex>","renewed_ms":N,"state":"held"|"released"}
 *
 * Every write is create-only or compare-and-set on the revision read or
 * last written (host/io/exclusive.c); this file decides which, from
 * revisions and this host's monotonic clock only.  `renewed_ms` (wall
 * clock) is for people reading the key: no decision compares clocks of two
 * hosts. */
#ifndef JET_CLAIM_H
#define JET_CLAIM_H

#include <glib.h>

#define JET_CLAIM_RUN_LEN 32     /* hex digits of a run id */

typedef struct {
    char host[128];
    char run[JET_CLAIM_RUN_LEN + 1];
    gint64 renewed_ms;           /* wall clock of the write, for people; never compared */
    gboolean released;           /* the holder let it go at its drain: take at once */
} JetClaimRecord;

/* "claim.<binding>" (caller frees); NULL for a name that is not one key
 * token (config.c allows A-Z a-z 0-9 _ - only, so never for a binding). */
char *jet_claim_key(const char *binding);
/* A fresh random run id: JET_CLAIM_RUN_LEN lower-case hex digits. */
void jet_claim_new_run(char out[JET_CLAIM_RUN_LEN + 1]);
/* The record as JSON (caller frees). */
char *jet_claim_record_encode(const JetClaimRecord *r);
/* FALSE for anything that is not a record written by jet_claim_record_encode
 * (not JSON, not an object, no host or run, a run of the wrong shape, an
 * unknown state); out is then zeroed. */
gboolean jet_claim_record_decode(const char *data, gsize len, JetClaimRecord *out);

/* --- a standby's decision --------------------------------------------------- */

/* What one read of the key showed. */
typedef struct {
    gboolean exists;             /* a value is there (a delete marker or no key: FALSE) */
    guint64 revision;            /* its revision when it exists */
    gboolean live;               /* a record that names a holder (not released, not unreadable) */
    gboolean ours;               /* ... and the holder is this run */
} JetClaimSeen;

/* What a standby remembers between reads: the last revision and when, by
 * its own monotonic clock, it first saw it. */
typedef struct {
    gboolean valid;
    guint64 revision;
    gint64 since_us;
} JetClaimWatch;

typedef enum {
    JET_CLAIM_STAND_BY = 0,      /* someone holds it and renews: wait */
    JET_CLAIM_CREATE,            /* nothing there: create-only write */
    JET_CLAIM_TAKE,              /* CAS on seen.revision: released, unreadable, ours, or silent for ttl */
} JetClaimMove;

/* Updates *w with what was seen at now_us and says what to do.  A live
 * record of another run is taken only once the standby has seen the same
 * revision for ttl_us by its own clock (the first sight of a revision
 * starts the wait; so does a restart).  A released or unreadable record, or
 * one naming this very run (a renewal whose answer was lost), is taken at
 * once, still by CAS on its revision. */
JetClaimMove jet_claim_standby_decide(JetClaimWatch *w, const JetClaimSeen *seen, gint64 now_us,
                                      gint64 ttl_us);

/* --- the holder's decision -------------------------------------------------- */

typedef enum {
    JET_CLAIM_HOLD = 0,          /* nothing to do yet */
    JET_CLAIM_RENEW,             /* CAS on the revision last written */
    JET_CLAIM_EXPIRED,           /* no renewal got through in time: stop the binding */
} JetClaimHolderMove;

/* ok_sent_us: when the last renewal that succeeded was sent (or the claim
 * was won); tried_us: when the last attempt was made, successful or not.
 * EXPIRED once ttl - heartbeat has passed since ok_sent_us: a standby can
 * take the key ttl after it saw that revision, which was written after it
 * was sent, so the holder stops at least one heartbeat before anyone may
 * start.  RENEW once heartbeat has passed since tried_us. */
JetClaimHolderMove jet_claim_holder_decide(gint64 ok_sent_us, gint64 tried_us, gint64 now_us,
                                           gint64 heartbeat_us, gint64 ttl_us);

/* The holder's fence: the monotonic time from which it may start no
 * handler, the same bound at which jet_claim_holder_decide says EXPIRED
 * (ok_sent_us + ttl - heartbeat).  Checked by every worker before it hands
 * a message to a handler, so a holder that wakes from a pause starts
 * nothing before its claim thread has run (docs/exclusive.md, "The fence"). */
gint64 jet_claim_fence_us(gint64 ok_sent_us, gint64 heartbeat_us, gint64 ttl_us);

/* Counters of one exclusive binding (relaxed atomics when shared). */
typedef struct {
    guint64 won;                 /* claims made: created, or taken from a released key */
    guint64 taken_over;          /* of them, taken from a silent holder (ttl passed) */
    guint64 lost;                /* someone else holds it: a renewal found the key changed, or the
                                    key read once no renewal had got through for ttl - heartbeat */
    guint64 expired;             /* no renewal got through for ttl - heartbeat and the key did not
                                    name another holder (or could not be read): stopped unsure */
    guint64 renewals;            /* renewals written */
    guint64 renew_errors;        /* renewals that failed for another reason (retried) */
    guint64 released;            /* released at a drain */
} JetClaimStats;

#endif
