/* The attempt ledger's KV bucket (docs/retries.md).
 *
 * A JetStream KV bucket remembers, per (stream, consumer, stream sequence),
 * what the delivery count alone cannot say: how many deliveries were real
 * failures, postpones, host releases, and crashes of a host that was handling
 * the message alone.  docs/retries.md tells the whole story; this header
 * and host/core/ledger_record.h are the contract the engine codes against.
 *
 * The bucket
 *   Managed mode (create = TRUE) creates `KV_<bucket>` with history 1 and
 *   MaxAge = max_age_ms: every entry, delete markers included, expires.  A
 *   bucket that already exists with another MaxAge has its MaxAge updated;
 *   any other difference is refused (JET_LEDGER_ERROR_INVALID).  Bind mode
 *   (create = FALSE) uses the bucket as it is (JET_LEDGER_ERROR_MISSING when
 *   there is none).
 *
 * Keys, the record and crash attribution are pure and live in
 * host/core/ledger_record.h (included here).
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

#include "ledger_record.h"

#define JET_LEDGER_DEFAULT_BUCKET  "jethost_ledger"
#define JET_LEDGER_CAS_ATTEMPTS    10    /* jet_ledger_update(): reads + CAS writes at most */

/* --- the bucket ------------------------------------------------------------- */

typedef struct JetLedger JetLedger;

/* Binds to (create = FALSE) or creates/updates (create = TRUE, max_age_ms > 0)
 * the bucket.  Managed, a missing bucket is created with `replicas`
 * replicas; one that exists (a KV bucket by its subjects) is bound to as it
 * is, only its max_age set, whatever its replicas, placement or storage.
 * js must outlive the ledger (nats.c keeps a reference). */
JetLedger *jet_ledger_open(jsCtx *js, const char *bucket, gboolean create, guint64 max_age_ms, guint replicas,
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

/* Read-modify-write with compare-and-set on the revision:
 * kvStore_Update(last = revision read) when there is a record (or an
 * unreadable value); when the key holds nothing, kvStore_Update(last = 0)
 * (Nats-Expected-Last-Subject-Sequence: 0) and, if that loses, nats.c's
 * kvStore_Create, which writes over a delete marker.  On "wrong last sequence" (err
 * 10071; nats.c reports it as a plain NATS_ERR, matched by its text) it
 * reads again and retries, JET_LEDGER_CAS_ATTEMPTS attempts in all, with a
 * short jittered pause.  Returns WRITTEN (out, may be NULL, holds what was
 * written and its new revision), SKIPPED (out holds the record as read),
 * CONFLICT or UNREACHABLE (error set).  mutate may run once per attempt:
 * see JetLedgerMutateFn (host/core/ledger_record.h). */
JetLedgerStatus jet_ledger_update(JetLedger *l, const char *stream, const char *consumer,
                                  guint64 stream_seq, JetLedgerMutateFn mutate, gpointer user_data,
                                  JetLedgerRecord *out, GError **error);

/* The same, from known: the record as the caller last read or wrote it
 * (revision 0: nothing there), so the first attempt writes without reading
 * first; a known that is not what the key holds loses the compare-and-set
 * and the next attempt reads (at once, no pause).  known NULL: as
 * jet_ledger_update. */
JetLedgerStatus jet_ledger_update_from(JetLedger *l, const char *stream, const char *consumer, guint64 stream_seq,
                                       const JetLedgerRecord *known, JetLedgerMutateFn mutate, gpointer user_data,
                                       JetLedgerRecord *out, GError **error);

/* When the message settles terminally (acked, captured): kvStore_Delete, a
 * delete marker that, with history 1, replaces the record at once and
 * itself expires after max_age.  (A purge would leave the same one marker
 * and also roll up history, which history 1 makes moot.)  Not a CAS: the
 * message is finished, nobody needs the record any more.  WRITTEN or
 * UNREACHABLE (error set); deleting an absent key writes a marker too. */
JetLedgerStatus jet_ledger_delete(JetLedger *l, const char *stream, const char *consumer,
                                  guint64 stream_seq, GError **error);

/* Lets jet_ledger_forget() send its deletes without waiting for their
 * answers: they go out on a JetStream context of its own on nc, with
 * api_prefix (NULL: "$JS.API"), which must be the one js had at open, and
 * nats.c's thread reads the answers, logging a delete that failed (event
 * ledger-forget-failed, one line in ten seconds at most).
 * jet_ledger_close() waits up to 2 s for the ones still out.  FALSE (error
 * set) when that context cannot be made; the ledger then deletes as before.
 * docs/retries.md, "Forgetting without waiting". */
gboolean jet_ledger_forget_behind(JetLedger *l, natsConnection *nc, const char *api_prefix, GError **error);

/* A record is no longer needed and the caller knows its revision (> 0).
 * Set up with jet_ledger_forget_behind(): deleted only if the key still
 * holds that revision (Nats-Expected-Last-Subject-Sequence), so a delete
 * that arrives late can never remove a record written after it; QUEUED
 * when sent without waiting, or, when nats.c did not take it (too many
 * out), WRITTEN or UNREACHABLE (error set) after waiting.  Losing to a
 * later write is not an error: that record is someone's to keep.  Not set
 * up: jet_ledger_delete(). */
JetLedgerStatus jet_ledger_forget(JetLedger *l, const char *stream, const char *consumer, guint64 stream_seq,
                                  guint64 revision, GError **error);

/* Deletes of jet_ledger_forget() that did not land (an error, no answer in
 * time, or still out at close), since open. */
guint jet_ledger_forgets_failed(JetLedger *l);

#endif
