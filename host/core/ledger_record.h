/* The attempt ledger's record, its keys and crash attribution: the pure half
 * of the ledger (docs/retries.md), no nats.c.  The KV bucket that stores the
 * records is host/io/ledger.h, which includes this header.
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
 * Thread safety: every function here works on the caller's data only. */
#ifndef JET_LEDGER_RECORD_H
#define JET_LEDGER_RECORD_H

#include <glib.h>

#define JET_LEDGER_RECORD_VERSION  1
#define JET_LEDGER_REASON_MAX      256   /* bytes, without the NUL */
#define JET_LEDGER_HOLDER_MAX      128   /* bytes, without the NUL */
#define JET_LEDGER_TOKEN_MAX       192   /* an encoded name longer than this is hashed */
#define JET_LEDGER_KEY_MAX         (2 * JET_LEDGER_TOKEN_MAX + 2 + 20 + 1)   /* with the NUL */

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

/* --- what the bucket answers ------------------------------------------------ */

/* The answers of jet_ledger_get/update/delete (host/io/ledger.h). */
typedef enum {
    JET_LEDGER_FOUND = 0,      /* get: a record was read */
    JET_LEDGER_ABSENT,         /* get: none (never written, deleted, expired, or unparsable) */
    JET_LEDGER_WRITTEN,        /* update: the CAS write landed; delete: the marker landed */
    JET_LEDGER_SKIPPED,        /* update: the mutate function declined (e.g. lease lapsed) */
    JET_LEDGER_CONFLICT,       /* update: every CAS attempt lost (error set) */
    JET_LEDGER_UNREACHABLE,    /* any call: the bucket did not answer (error set) */
    JET_LEDGER_QUEUED,         /* forget: the delete is on its way; its answer is not awaited */
} JetLedgerStatus;

const char *jet_ledger_status_name(JetLedgerStatus s);

/* The mutate function of jet_ledger_update() (host/io/ledger.h).  Called
 * with the freshest record (initialised, revision 0, when absent) on each
 * attempt; changes it in place and returns TRUE to write it, FALSE to
 * write nothing (JET_LEDGER_SKIPPED).  It may run several times: it must
 * be a function of the record it is given (use the jet_attribution_apply_*
 * helpers and the record helpers above, which are), and it is the place to
 * check the lease fence, right before the write. */
typedef gboolean (*JetLedgerMutateFn)(JetLedgerRecord *rec, gpointer user_data);

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
