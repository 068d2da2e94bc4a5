/* The attempt ledger and crash attribution (docs/retries.md).
 *
 * A JetStream KV bucket remembers, per (stream, consumer, stream sequence),
 * what the delivery count alone cannot say: how many deliveries were real
 * failures, postpones, host releases, and crashes of a host that was handling
 * the message alone.  docs/retries.md tells the whole story; this header is
 * the contract the engine codes against.
 *
 * The bucket
 *   Managed mode (create = TRUE) creates `KV_<bucket>` with history 1 and
 *   MaxAge = max_age_ms: every entry, delete markers included, expires.  A
 *   bucket that already exists with another MaxAge has its MaxAge updated;
 *   any other difference is refused (JET_LEDGER_ERROR_INVALID).  Bind mode
 *   (create = FALSE) uses the bucket as it is (JET_LEDGER_ERROR_MISSING when
 *   there is none).
 *
 * Keys: <enc stream>.<enc consumer>.<stream seq in decimal>
 *   A name is encoded into one key token: [A-Za-z0-9-] stay as they are,
 *   every other byte becomes `_XX` (two upper-case hex digits; '_' itself is
 *   `_5F`), and the empty name is `_`.  That is reversible and keeps common
 *   names readable ("ORDERS", "c-1" are unchanged; "a_b" is "a_5Fb").  An
 *   encoded token longer than JET_LEDGER_TOKEN_MAX bytes is replaced by
 *   `h=<64 hex digits of the name's SHA-256>` (never produced by the escape,
 *   which never writes '='): one-way, but keys stay bounded (two tokens, two
 *   dots and at most 20 digits: < JET_LEDGER_KEY_MAX bytes) whatever the names.
 *
 * What travels on the wire (nats.c 3.4.1, checked by tests/live/ledger.c)
 *   - reads (kvStore_Get) are direct gets, a request without a body to
 *     `$JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>`, because the
 *     bucket allows direct (nats.c creates KV streams with AllowDirect; on a
 *     bound bucket without it, nats.c falls back to
 *     `$JS.API.STREAM.MSG.GET.KV_<bucket>`: jet_ledger_uses_direct_get());
 *   - writes and deletes are JetStream publishes to `$KV.<bucket>.<key>`.
 *   So a test that subscribes to `$KV.<bucket>.>` and
 *   `$JS.API.DIRECT.GET.KV_<bucket>.>` sees every ledger call.
 *
 * Timeouts: every request is bounded by the jsCtx's jsOptions.Wait (nats.c's
 *   default is 5 s); a get is one request, a delete one, an update a read
 *   and a write per attempt, and the first timeout ends it.  The engine should open the
 *   ledger on a jsCtx of its own with a short Wait (e.g. 1 s): a handler
 *   thread waits on the ledger.  A bucket deleted under a running host
 *   makes reads time out after Wait (the server still has interest in
 *   `$JS.API.>`) and writes fail at once ("no responders"): either way
 *   JET_LEDGER_UNREACHABLE, never a hang; jet_ledger_set_cooldown() avoids
 *   paying the Wait on every call while it lasts.
 *   A recreated bucket is usable again through a fresh jet_ledger_open().
 *
 * Thread safety: a JetLedger is immutable after open but for its cool-down
 * clock (under a lock); every call may run from any thread at once (nats.c's
 * kvStore is thread-safe, and the last error text it leaves is per thread).
 * "A recreated bucket is usable again": also through the old handle, once
 * the bucket has the same configuration (tests/live/ledger.c, /ledger/cooldown). */
#ifndef JET_LEDGER_H
#define JET_LEDGER_H

#include <glib.h>
#include <nats/nats.h>

#define JET_LEDGER_DEFAULT_BUCKET  "jethost_ledger"
#define JET_LEDGER_RECORD_VERSION  1
#define JET_LEDGER_REASON_MAX      256   /* bytes, without the NUL */
#define JET_LEDGER_HOLDER_MAX      128   /* bytes, without the NUL */
#define JET_LEDGER_TOKEN_MAX       192   /* an encoded name longer than this is hashed */
#define JET_LEDGER_KEY_MAX         (2 * JET_LEDGER_TOKEN_MAX + 2 + 20 + 1)   /* with the NUL */
#define JET_LEDGER_CAS_ATTEMPTS    10    /* jet_ledger_update(): reads + CAS writes at most */

/* --- errors ----------------------------------------------------------------- */

#define JET_LEDGER_ERROR (jet_ledger_error_quark())
GQuark jet_ledger_error_quark(void);

typedef enum {
    JET_LEDGER_ERROR_UNREACHABLE,  /* timeout, no responders, disconnected, any server error */
    JET_LEDGER_ERROR_CONFLICT,     /* update: JET_LEDGER_CAS_ATTEMPTS compare-and-sets lost */
    JET_LEDGER_ERROR_MISSING,      /* open, bind mode: no such bucket */
    JET_LEDGER_ERROR_INVALID,      /* open: bad bucket name, max_age 0 in managed mode,
                                      an existing stream that is not our bucket */
} JetLedgerErrorCode;

/* TRUE for a JET_LEDGER_ERROR_UNREACHABLE error: the engine falls back to the
 * delivery count (log once, count it, keep processing).  FALSE for NULL. */
gboolean jet_ledger_is_unreachable_error(const GError *error);

/* --- the record ------------------------------------------------------------- */

typedef struct {
    guint32 failures;          /* failed attempts (RETRY, plugin errors, postpones past horizon) */
    guint32 postpones;         /* postpones within the horizon: not attempts */
    guint32 releases;          /* deliveries the host gave back unhandled (drain) */
    gboolean has_first_failure;
    gint64 first_failure_ns;   /* wall clock of the first failure */
    char last_reason[JET_LEDGER_REASON_MAX + 1];   /* "" when none; valid UTF-8 */
    guint32 strikes;           /* deliveries that found the isolation marker set */
    guint32 absolved;          /* unexplained deliveries forgiven when a suspect survived
                                  handling alone (see jet_attribution_decide) */
    gboolean isolated;         /* the isolation marker */
    char isolated_by[JET_LEDGER_HOLDER_MAX + 1];   /* who set it: the host's name */
    gint64 isolated_ns;        /* when (wall clock) */
    guint64 revision;          /* KV revision it was read at; 0 = not stored */
} JetLedgerRecord;

void jet_ledger_record_init(JetLedgerRecord *rec);
/* Copies reason (NULL = "") truncated to JET_LEDGER_REASON_MAX bytes at a
 * UTF-8 character boundary; invalid UTF-8 is repaired first. */
void jet_ledger_record_set_reason(JetLedgerRecord *rec, const char *reason);
/* Records one failure: failures + 1, first_failure_ns = now_ns if unset, the reason. */
void jet_ledger_record_add_failure(JetLedgerRecord *rec, gint64 now_ns, const char *reason);

/* Compact JSON, zero fields left out, e.g.
 *   {"v":1,"f":2,"p":5,"ff":1700000000000000000,"lr":"db down","s":1,
 *    "iso":"host-a","isot":1700000000000000000}
 * keys: v version, f failures, p postpones, r releases, ff first failure ns,
 * lr last reason, s strikes, a absolved, iso marker holder (present = marker
 * set), isot marker time.  The revision is not serialised.  Returns a new
 * string; *len (may be NULL) gets its length. */
char *jet_ledger_record_to_json(const JetLedgerRecord *rec, gsize *len);
/* Parses what to_json wrote.  Unknown keys are ignored; a missing or other
 * version, a non-object, a count that is not an integer in [0, 2^32), or a
 * string that is not a string fails with a GError (G_IO_ERROR_INVALID_DATA).
 * out->revision is left 0. */
gboolean jet_ledger_record_from_json(const char *data, gsize len, JetLedgerRecord *out,
                                     GError **error);

/* --- keys ------------------------------------------------------------------- */

/* Writes the encoded name (one key token) into a new string. */
char *jet_ledger_encode_name(const char *name);
/* Decodes a token made by encode_name; NULL for a hashed token or one that
 * the encoder could not have produced. */
char *jet_ledger_decode_name(const char *token);
/* The record's key (a new string); always a valid KV key. */
char *jet_ledger_key(const char *stream, const char *consumer, guint64 stream_seq);

/* --- the bucket ------------------------------------------------------------- */

typedef struct JetLedger JetLedger;

typedef enum {
    JET_LEDGER_FOUND = 0,      /* get: a record was read */
    JET_LEDGER_ABSENT,         /* get: none (never written, deleted, expired, or unparsable) */
    JET_LEDGER_WRITTEN,        /* update: the CAS write landed; delete: the marker landed */
    JET_LEDGER_SKIPPED,        /* update: the mutate function declined (e.g. lease lapsed) */
    JET_LEDGER_CONFLICT,       /* update: every CAS attempt lost (error set) */
    JET_LEDGER_UNREACHABLE,    /* any call: the bucket did not answer (error set) */
} JetLedgerStatus;

const char *jet_ledger_status_name(JetLedgerStatus s);

/* Binds to (create = FALSE) or creates/updates (create = TRUE, max_age_ms > 0)
 * the bucket.  js must outlive the ledger (nats.c keeps a reference). */
JetLedger *jet_ledger_open(jsCtx *js, const char *bucket, gboolean create, guint64 max_age_ms,
                           GError **error);
void jet_ledger_close(JetLedger *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetLedger, jet_ledger_close)

/* After an UNREACHABLE answer, calls in the next cooldown_ms answer
 * UNREACHABLE at once without any I/O (the error says so), then the next
 * call tries the server again.  0 (the default) turns it off.  A deleted
 * bucket makes reads wait out the jsCtx's Wait each time (the server's
 * JetStream API import keeps interest in `$JS.API.>`, so there are no "no
 * responders"); the cool-down keeps a host in fallback from paying that on
 * every failure path. */
void jet_ledger_set_cooldown(JetLedger *l, guint cooldown_ms);

const char *jet_ledger_bucket(const JetLedger *l);
/* The bucket's kvStore (the breaker's claims live in the same bucket). */
kvStore *jet_ledger_kv(JetLedger *l);
/* The bucket's MaxAge as the server reported it at open (0 = never expires:
 * a bound bucket can be like that; a warning was logged). */
guint64 jet_ledger_max_age_ms(const JetLedger *l);
gboolean jet_ledger_uses_direct_get(const JetLedger *l);

/* Reads one record: FOUND (out filled, out->revision set), ABSENT (out
 * initialised; out->revision is the revision of an unparsable value, which
 * was logged as a warning, else 0) or UNREACHABLE (error set). */
JetLedgerStatus jet_ledger_get(JetLedger *l, const char *stream, const char *consumer,
                               guint64 stream_seq, JetLedgerRecord *out, GError **error);

/* Called with the freshest record (initialised, revision 0, when absent) on
 * each attempt; changes it in place and returns TRUE to write it, FALSE to
 * write nothing (JET_LEDGER_SKIPPED).  It may run several times: it must
 * be a function of the record it is given (use the jet_attribution_apply_*
 * helpers and the record helpers above, which are), and it is the place to
 * check the lease fence, right before the write. */
typedef gboolean (*JetLedgerMutateFn)(JetLedgerRecord *rec, gpointer user_data);

/* Read-modify-write with compare-and-set on the revision:
 * kvStore_Update(last = revision read) when there is a record (or an
 * unreadable value); when the key holds nothing, kvStore_Update(last = 0)
 * (Nats-Expected-Last-Subject-Sequence: 0) and, if that loses, nats.c's
 * kvStore_Create, which writes over a delete marker.  On "wrong last sequence" (err
 * 10071; nats.c reports it as a plain NATS_ERR, matched by its text) it
 * reads again and retries, JET_LEDGER_CAS_ATTEMPTS attempts in all, with a
 * short jittered pause.  Returns WRITTEN (out, may be NULL, holds what was
 * written and its new revision), SKIPPED (out holds the record as read),
 * CONFLICT or UNREACHABLE (error set). */
JetLedgerStatus jet_ledger_update(JetLedger *l, const char *stream, const char *consumer,
                                  guint64 stream_seq, JetLedgerMutateFn mutate, gpointer user_data,
                                  JetLedgerRecord *out, GError **error);

/* When the message settles terminally (acked, captured): kvStore_Delete, a
 * delete marker that, with history 1, replaces the record at once and
 * itself expires after max_age.  (A purge would leave the same one marker
 * and also roll up history, which history 1 makes moot.)  Not a CAS: the
 * message is finished, nobody needs the record any more.  WRITTEN or
 * UNREACHABLE (error set); deleting an absent key writes a marker too. */
JetLedgerStatus jet_ledger_delete(JetLedger *l, const char *stream, const char *consumer,
                                  guint64 stream_seq, GError **error);

/* --- crash attribution (pure) ----------------------------------------------- */

typedef enum {
    /* Not a suspect: handle it with the others, as usual. */
    JET_ATTRIBUTION_NORMAL = 0,
    /* Handle it alone, with the isolation marker set around the handler. */
    JET_ATTRIBUTION_SUSPECT,
    /* strikes >= crash_limit: capture as `poison` without running the handler. */
    JET_ATTRIBUTION_POISON,
} JetAttributionKind;

typedef struct {
    JetAttributionKind kind;
    guint32 unexplained;   /* deliveries no record explains, floored at zero */
    gboolean strike;       /* this delivery found the marker set: one strike */
    guint32 strikes;       /* strikes including this delivery's: for the settle facts */
    guint32 absolve_to;    /* SUSPECT: `absolved` once it survives (absolved + unexplained) */
} JetAttribution;

/* Decides, from the record read at this delivery (NULL when absent, or when
 * nothing was read because deliveries == 1), the server's delivery count and
 * the binding's crash_limit (0 = poison off):
 *
 *   strike      = rec && rec->isolated
 *   strikes     = rec->strikes + strike
 *   unexplained = deliveries - 1 - failures - postpones - releases
 *                 - strikes - absolved, floored at zero (counts can go
 *                 backwards after a server crash: never trust a negative)
 *   POISON   if crash_limit > 0 and strikes >= crash_limit
 *   SUSPECT  else if strike or unexplained > 0
 *   NORMAL   else
 *
 * Strikes and absolved are subtracted so that each delivery is explained
 * once: the death that earned a strike is not "unexplained" again, and a
 * suspect that survived is not a suspect at its next (explained) delivery.
 *
 * What the engine does and writes, per kind:
 *
 * NORMAL: handle it with the others.  Afterwards, as for any delivery:
 *   RETRY / failure   -> update: jet_ledger_record_add_failure()
 *   POSTPONE          -> update: postpones + 1
 *   released at drain -> update: releases + 1
 *   ACK / capture     -> delete, after the server settlement, if a record
 *                        was found (nothing when deliveries == 1: the happy
 *                        path does no ledger I/O)
 *
 * SUSPECT: wait until no other message of the binding is in flight (hold
 *   new ones), then BEFORE the handler:
 *     update: jet_attribution_apply_isolate(rec, att, host, now)
 *   (one write: the strike, if any, and the marker).  If that write is not
 *   WRITTEN (unreachable, lease lapsed), the record is as it was: handle it
 *   alone all the same (a death now costs a strike only if an earlier
 *   marker is still set, which is then right: it was handled alone).  Run the handler.
 *   The handler returned, so the marker must go, and go first, before any
 *   other I/O (a host killed after this point must not earn a strike):
 *   RETRY / failure   -> update: jet_attribution_apply_survived() + add_failure
 *   POSTPONE          -> update: jet_attribution_apply_survived() + postpones + 1
 *   ACK / capture     -> delete, BEFORE the server settlement
 *   then settle and let the other messages go.
 *
 * POISON: do not run the handler; capture (cause poison, facts.strikes =
 *   att.strikes), then delete after the capture's ack.  If the capture
 *   fails and the message is kept, write nothing: the next delivery decides
 *   POISON again (strikes only grow).
 *
 * A host killed between messages (no suspect in its hands) has no marker set
 * anywhere, so it adds no strike to anything: the messages it held become
 * unexplained, hence suspects, each handled alone at its next delivery.
 *
 * Every write above goes through jet_ledger_update(), whose mutate function
 * first checks the lease: a holder whose lease lapsed writes nothing.
 * deliveries == 0 is treated as 1. */
void jet_attribution_decide(const JetLedgerRecord *rec, guint32 deliveries, guint crash_limit,
                            JetAttribution *out);

const char *jet_attribution_kind_name(JetAttributionKind kind);

/* Mutations for a SUSPECT, idempotent so that a CAS retry on a fresh record
 * (another host may have written the same thing) counts nothing twice:
 *   isolate:  strikes = MAX(strikes, att->strikes); marker set (holder, now)
 *   survived: absolved = MAX(absolved, att->absolve_to); marker cleared */
void jet_attribution_apply_isolate(JetLedgerRecord *rec, const JetAttribution *att,
                                   const char *holder, gint64 now_ns);
void jet_attribution_apply_survived(JetLedgerRecord *rec, const JetAttribution *att);

#endif
