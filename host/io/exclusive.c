/* One active host per exclusive binding: exclusive.h, docs/exclusive.md. */
#include "exclusive.h"
#include "msg_payload.h"
#include "conn.h"
#include "errors.h"
#include "log.h"

#include <string.h>

#define STANDBY_POLL_US (250 * G_TIME_SPAN_MILLISECOND)

struct JetExclusive {
    kvStore *kv;
    const JetBindingConfig *b;
    char *key;
    JetClaimRecord rec;           /* ours: host and run id */
    JetExclusiveStartFn start;
    gpointer start_data;
    GThread *thread;
    /* The fence the engine's workers read (engine.h): moved on by each
     * renewal that got through, closed at once when the claim is lost. */
    gint64 fence_until_us;        /* atomic */

    GMutex lock;                  /* everything below */
    GCond cond;
    gboolean quit;                /* the drain began: no new claim */
    gboolean drained;             /* the engine's drain is over: release */
    JetEngine *engine;            /* running while we hold the claim */
    gboolean holding;
    JetEngineStats acc;           /* engines already stopped */
    JetClaimStats claims;
};

/* nats.c 3.4.1 reports a failed create or compare-and-set as a plain
 * NATS_ERR whose text reads "wrong last sequence" (the server's err 10071). */
static gboolean is_conflict(natsStatus s)
{
    const char *last = nats_GetLastError(NULL);
    return s == NATS_ERR && last != NULL && strstr(last, "wrong last sequence") != NULL;
}

static char *encode(JetExclusive *x, gboolean released)
{
    x->rec.renewed_ms = g_get_real_time() / 1000;
    x->rec.released = released;
    return jet_claim_record_encode(&x->rec);
}

/* Reads the key: FALSE when the server could not say (nothing known). */
static gboolean read_claim(JetExclusive *x, JetClaimSeen *seen, JetClaimRecord *holder, GError **error)
{
    memset(seen, 0, sizeof *seen);
    memset(holder, 0, sizeof *holder);
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, x->kv, x->key);
    if (s == NATS_NOT_FOUND)
        return TRUE;   /* no key, or a delete marker: kvStore_Create writes over either */
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "reading %s: %s", x->key, why);
        return FALSE;
    }
    seen->exists = TRUE;
    seen->revision = kvEntry_Revision(e);
    gsize len = 0;
    const char *v = jet_kv_value(e, &len);
    if (len > 0 && jet_claim_record_decode(v, len, holder) && !holder->released) {
        seen->live = TRUE;
        seen->ours = strcmp(holder->run, x->rec.run) == 0;
    }
    kvEntry_Destroy(e);
    return TRUE;
}

static void add(guint64 *counter)
{
    __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* Stops and drains the engine we ran, keeping its counters. */
static void stop_engine(JetExclusive *x)
{
    g_mutex_lock(&x->lock);
    JetEngine *e = x->engine;
    x->engine = NULL;
    x->holding = FALSE;
    g_mutex_unlock(&x->lock);
    if (e == NULL)
        return;
    jet_engine_stop(e);
    jet_engine_join(e);
    JetEngineStats st;
    jet_engine_stats(e, &st);
    jet_engine_free(e);
    g_mutex_lock(&x->lock);
    jet_stats_merge(&x->acc, &st);
    g_mutex_unlock(&x->lock);
}

static void fence_set(JetExclusive *x, gint64 until_us)
{
    __atomic_store_n(&x->fence_until_us, until_us, __ATOMIC_RELEASE);
}

/* Tells the engine we run to stop, without waiting for its drain. */
static void halt_engine(JetExclusive *x)
{
    g_mutex_lock(&x->lock);
    if (x->engine != NULL)
        jet_engine_stop(x->engine);
    g_mutex_unlock(&x->lock);
}

/* Won: starts the engine, unless the drain began meanwhile.  FALSE: the
 * claim should be given back at once. */
static gboolean begin(JetExclusive *x)
{
    g_mutex_lock(&x->lock);
    gboolean ok = FALSE;
    if (!x->quit) {
        x->engine = x->start(&x->fence_until_us, x->start_data);
        ok = x->engine != NULL;
        x->holding = ok;
    }
    g_mutex_unlock(&x->lock);
    return ok;
}

/* Writes the record as released (compare-and-set): a standby takes it at
 * its next read instead of waiting out claim_ttl. */
static void release(JetExclusive *x, guint64 rev)
{
    g_autofree char *value = encode(x, TRUE);
    uint64_t nrev = 0;
    natsStatus s = kvStore_Update(&nrev, x->kv, x->key, value, (int)strlen(value), rev);
    if (s == NATS_OK) {
        add(&x->claims.released);
        jet_log(JET_LOG_INFO, x->b->name, "claim-released", "released %s (revision %" G_GUINT64_FORMAT
                ") for a standby to take at once", x->key, (guint64)nrev);
    } else if (is_conflict(s)) {
        jet_log(JET_LOG_INFO, x->b->name, "claim-released", "%s was already taken by another host", x->key);
    } else {
        g_autofree char *why = jet_nats_error(s);
        jet_log(JET_LOG_WARNING, x->b->name, "claim-released",
                "could not release %s (%s): a standby takes it after claim_ttl", x->key, why);
    }
}

static gpointer claimer_main(gpointer data)
{
    JetExclusive *x = data;
    const JetBindingConfig *b = x->b;
    const gint64 hb_us = (gint64)b->claim_heartbeat_ms * G_TIME_SPAN_MILLISECOND;
    const gint64 ttl_us = (gint64)b->claim_ttl_ms * G_TIME_SPAN_MILLISECOND;
    const gint64 step_us = MIN(hb_us, STANDBY_POLL_US);
    gboolean holding = FALSE, read_failing = FALSE, renew_failing = FALSE;
    guint64 my_rev = 0;
    gint64 ok_sent_us = 0, tried_us = 0;
    JetClaimWatch watch = { 0 };
    char logged_holder[sizeof x->rec.run] = "";   /* the run last logged as standing by behind */

    for (;;) {
        g_mutex_lock(&x->lock);
        gboolean quit = x->quit, drained = x->drained;
        g_mutex_unlock(&x->lock);
        if (quit && (!holding || drained)) {
            if (holding)
                release(x, my_rev);
            break;
        }
        gint64 now = g_get_monotonic_time();
        if (holding) {
            JetClaimHolderMove m = jet_claim_holder_decide(ok_sent_us, tried_us, now, hb_us, ttl_us);
            if (m == JET_CLAIM_EXPIRED) {
                /* Past the fence a standby may start at any moment: the
                 * engine stops before the key is read. */
                fence_set(x, G_MININT64);
                halt_engine(x);
                /* A host paused past claim_ttl (SIGSTOP, a frozen VM) wakes
                 * here, not at a failed renewal: the key says whether a
                 * standby took it meanwhile, and then saying it stopped
                 * "before a standby may take it" would hide the overlap. */
                JetClaimSeen seen;
                JetClaimRecord other;
                if (read_claim(x, &seen, &other, NULL) && seen.live && !seen.ours) {
                    add(&x->claims.lost);
                    jet_log(JET_LOG_WARNING, b->name, "claim-lost",
                            "%s was taken while no renewal of ours got through for %" G_GINT64_FORMAT " ms (this "
                            "host paused, or could not reach the server; now held by %s, run %s): stopping the "
                            "binding at once, releasing what it holds; standing by", x->key,
                            (now - ok_sent_us) / 1000, other.host, other.run);
                } else {
                    add(&x->claims.expired);
                    jet_log(JET_LOG_ERROR, b->name, "claim-expired",
                            "no renewal of %s got through for %" G_GINT64_FORMAT " ms (claim_ttl - claim_heartbeat): "
                            "stopping the binding before a standby may take it", x->key, (now - ok_sent_us) / 1000);
                }
                holding = FALSE;
                stop_engine(x);
                watch.valid = FALSE;
                logged_holder[0] = '\0';
            } else if (m == JET_CLAIM_RENEW) {
                tried_us = now;
                g_autofree char *value = encode(x, FALSE);
                uint64_t nrev = 0;
                natsStatus s = kvStore_Update(&nrev, x->kv, x->key, value, (int)strlen(value), my_rev);
                if (s == NATS_OK) {
                    my_rev = nrev;
                    ok_sent_us = now;
                    fence_set(x, jet_claim_fence_us(ok_sent_us, hb_us, ttl_us));
                    add(&x->claims.renewals);
                    if (renew_failing)
                        jet_log(JET_LOG_INFO, b->name, "claim-renewed", "renewing %s again", x->key);
                    renew_failing = FALSE;
                } else if (is_conflict(s)) {
                    fence_set(x, G_MININT64);
                    add(&x->claims.lost);
                    JetClaimSeen seen;
                    JetClaimRecord other;
                    read_claim(x, &seen, &other, NULL);
                    jet_log(JET_LOG_WARNING, b->name, "claim-lost",
                            "%s changed under us (now held by %s): stopping the binding at once, releasing what "
                            "it holds; standing by", x->key, other.host[0] ? other.host : "nobody");
                    holding = FALSE;
                    stop_engine(x);
                    watch.valid = FALSE;
                    logged_holder[0] = '\0';
                } else {
                    add(&x->claims.renew_errors);
                    if (!renew_failing) {
                        g_autofree char *why = jet_nats_error(s);
                        jet_log(JET_LOG_WARNING, b->name, "claim-renew-failed",
                                "renewing %s: %s; retrying every claim_heartbeat", x->key, why);
                    }
                    renew_failing = TRUE;
                }
            }
        } else if (!quit) {
            JetClaimSeen seen;
            JetClaimRecord holder;
            g_autoptr(GError) err = NULL;
            if (!read_claim(x, &seen, &holder, &err)) {
                if (!read_failing)
                    jet_log(JET_LOG_WARNING, b->name, "claim-read-failed", "%s; standing by", err->message);
                read_failing = TRUE;
            } else {
                read_failing = FALSE;
                gboolean silent = watch.valid && watch.revision == seen.revision;
                gint64 waited_us = silent ? now - watch.since_us : 0;
                JetClaimMove m = jet_claim_standby_decide(&watch, &seen, now, ttl_us);
                if (m == JET_CLAIM_STAND_BY && strcmp(logged_holder, holder.run) != 0) {
                    g_strlcpy(logged_holder, holder.run, sizeof logged_holder);
                    jet_log(JET_LOG_INFO, b->name, "standing-by",
                            "%s is held by %s (run %s): not pulling; taking over if it is not renewed for %"
                            G_GUINT64_FORMAT " ms", x->key, holder.host, holder.run, b->claim_ttl_ms);
                } else if (m != JET_CLAIM_STAND_BY) {
                    gint64 sent = g_get_monotonic_time();
                    g_autofree char *value = encode(x, FALSE);
                    uint64_t nrev = 0;
                    natsStatus s = m == JET_CLAIM_CREATE
                                       ? kvStore_Create(&nrev, x->kv, x->key, value, (int)strlen(value))
                                       : kvStore_Update(&nrev, x->kv, x->key, value, (int)strlen(value),
                                                        seen.revision);
                    if (s == NATS_OK) {
                        my_rev = nrev;
                        ok_sent_us = tried_us = sent;
                        fence_set(x, jet_claim_fence_us(ok_sent_us, hb_us, ttl_us));
                        holding = TRUE;
                        add(&x->claims.won);
                        if (seen.live && !seen.ours) {
                            add(&x->claims.taken_over);
                            jet_log(JET_LOG_WARNING, b->name, "taken-over",
                                    "%s: %s (run %s) did not renew for %" G_GINT64_FORMAT " ms; this host (run %s) "
                                    "holds it now and starts the binding", x->key, holder.host, holder.run,
                                    waited_us / 1000, x->rec.run);
                        } else {
                            jet_log(JET_LOG_INFO, b->name, "claimed",
                                    "%s: this host (%s, run %s) holds it (revision %" G_GUINT64_FORMAT
                                    ") and starts the binding%s", x->key, x->rec.host, x->rec.run, (guint64)nrev,
                                    !seen.exists ? ""
                                    : seen.ours  ? ", taken back from a record of this run (its claim had "
                                                   "expired, or a renewal's answer was lost)"
                                                 : ", taken from a released claim");
                        }
                        if (!begin(x)) {
                            holding = FALSE;
                            release(x, my_rev);
                        }
                        logged_holder[0] = '\0';
                    } else if (is_conflict(s)) {
                        watch.valid = FALSE;   /* another standby won: read it again */
                    } else {
                        g_autofree char *why = jet_nats_error(s);
                        jet_log(JET_LOG_WARNING, b->name, "claim-failed", "claiming %s: %s", x->key, why);
                    }
                }
            }
        }
        g_mutex_lock(&x->lock);
        if (!(x->quit && (!holding || x->drained)))
            g_cond_wait_until(&x->cond, &x->lock, g_get_monotonic_time() + step_us);
        g_mutex_unlock(&x->lock);
    }
    return NULL;
}

JetExclusive *jet_exclusive_new(kvStore *kv, const JetBindingConfig *b, const char *host_name,
                                JetExclusiveStartFn start, gpointer data)
{
    g_return_val_if_fail(kv != NULL && b != NULL && start != NULL, NULL);
    JetExclusive *x = g_new0(JetExclusive, 1);
    x->kv = kv;
    x->b = b;
    x->key = jet_claim_key(b->name);
    g_return_val_if_fail(x->key != NULL, NULL);
    g_strlcpy(x->rec.host, host_name != NULL ? host_name : g_get_host_name(), sizeof x->rec.host);
    jet_claim_new_run(x->rec.run);
    x->start = start;
    x->start_data = data;
    x->fence_until_us = G_MININT64;   /* closed until a claim is won */
    g_mutex_init(&x->lock);
    g_cond_init(&x->cond);
    return x;
}

void jet_exclusive_start(JetExclusive *x)
{
    g_autofree char *name = g_strdup_printf("jet-%s-claim", x->b->name);
    x->thread = g_thread_new(name, claimer_main, x);
}

void jet_exclusive_stop(JetExclusive *x)
{
    if (x == NULL)
        return;
    g_mutex_lock(&x->lock);
    x->quit = TRUE;
    if (x->engine != NULL)
        jet_engine_stop(x->engine);
    g_cond_signal(&x->cond);
    g_mutex_unlock(&x->lock);
}

void jet_exclusive_join(JetExclusive *x)
{
    if (x == NULL || x->thread == NULL)
        return;
    stop_engine(x);
    g_mutex_lock(&x->lock);
    x->drained = TRUE;
    g_cond_signal(&x->cond);
    g_mutex_unlock(&x->lock);
    g_thread_join(x->thread);
    x->thread = NULL;
}

void jet_exclusive_free(JetExclusive *x)
{
    if (x == NULL)
        return;
    jet_exclusive_stop(x);
    jet_exclusive_join(x);
    g_free(x->key);
    g_mutex_clear(&x->lock);
    g_cond_clear(&x->cond);
    g_free(x);
}

void jet_exclusive_stats(JetExclusive *x, JetEngineStats *engine, JetClaimStats *claims)
{
    g_mutex_lock(&x->lock);
    if (engine != NULL) {
        *engine = x->acc;
        if (x->engine != NULL) {
            JetEngineStats st;
            jet_engine_stats(x->engine, &st);
            jet_stats_merge(engine, &st);
        }
    }
    if (claims != NULL)
        *claims = x->claims;
    g_mutex_unlock(&x->lock);
}

gboolean jet_exclusive_holding(JetExclusive *x)
{
    g_mutex_lock(&x->lock);
    gboolean h = x->holding;
    g_mutex_unlock(&x->lock);
    return h;
}

gboolean jet_exclusive_engine_health(JetExclusive *x, JetEngineHealth *health, JetFloorStats *floor)
{
    g_mutex_lock(&x->lock);
    gboolean running = x->engine != NULL;
    if (running) {
        jet_engine_health(x->engine, health);
        jet_engine_floor_stats(x->engine, floor);
    }
    g_mutex_unlock(&x->lock);
    return running;
}
