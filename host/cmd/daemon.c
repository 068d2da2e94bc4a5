#include "daemon.h"
#include "binding_plugin.h"
#include "advisory.h"
#include "capture.h"
#include "config.h"
#include "conn.h"
#include "consumer_setup.h"
#include "embedded.h"
#include "engine.h"
#include "errors.h"
#include "exclusive.h"
#include "exit_codes.h"
#include "heap.h"
#include "host_api.h"
#include "instance.h"
#include "ledger.h"
#include "log.h"
#include "ops_http.h"
#include "notify.h"
#include "plugin_guard.h"
#include "publish_loop.h"
#include "schedule_facts.h"
#include "setup_retry.h"
#include "stream_names.h"

#include <glib-unix.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* How often free heap pages go back to the kernel (heap.h). */
#define HEAP_TRIM_S 30

typedef struct {
    const JetBindingConfig *b;
    JetPlugin *plugin;
    JetInstance *inst;
    JetConsumerFacts facts;
    JetEngine *engine;
    JetAdvisory *advisory;     /* the MAX_DELIVERIES safety net */
    JetExclusive *excl;        /* exclusive = true: the claimer, which owns the engine */
    struct Daemon *d;
    gboolean failed;           /* refused at start-up: skipped by the later steps */
    gboolean changed;          /* a reload: replaces a binding of the same name */
    gboolean clean_predecessor; /* ... whose engine drained cleanly (engine.h) */
} Binding;

typedef struct Daemon {
    JetConfig *cfg;
    JetConn *conn;
    JetLedger *ledger;
    GPtrArray *bindings;       /* of Binding* */
    GMainLoop *loop;
    guint signals;
    GThread *drainer;
    int exit_code;             /* what an exit without a full drain returns */
    jsCtx *ledger_js;
    /* Reloads (docs/reload.md).  A running binding points into the config it
     * was started with: every config loaded stays until the host exits. */
    GPtrArray *configs;        /* of JetConfig*, cfg last */
    /* The first config's: a claimer thread reads it while a reload may
     * replace cfg, and a reload cannot change it. */
    const char *host_name;
    gboolean reloading;        /* from SIGHUP until the new bindings started */
    gboolean reload_again;     /* SIGHUP while reloading: once more after */
    GPtrArray *retiring;       /* of Binding*: changed or removed, draining */
    GPtrArray *pending;        /* of Binding*: changed or new, started once those drained */
    GThread *retirer;
    GMutex retire_lock;
    GCond retire_cond;
    gboolean retire_busy;      /* the retirer has not finished joining */
    guint reload_counts[4];    /* unchanged, restarted, started, stopped */
    JetEngineStats totals;     /* every binding that stopped, reloads included */
    guint64 advisory_captures;
} Daemon;

static void binding_free(gpointer data)
{
    Binding *bd = data;
    jet_exclusive_free(bd->excl);
    jet_advisory_free(bd->advisory);
    jet_engine_free(bd->engine);
    jet_instance_free(bd->inst);
    g_free(bd);
}

/* Loads a binding's plugin and validates its options; starts it when asked. */
static Binding *binding_prepare(const JetConfig *cfg, const JetBindingConfig *b, gboolean start,
                                GError **error)
{
    JetPlugin *plugin = NULL;
    JetInstance *inst = jet_binding_plugin(cfg, b, start, &plugin, error);
    if (inst == NULL)
        return NULL;
    Binding *bd = g_new0(Binding, 1);
    bd->b = b;
    bd->plugin = plugin;
    bd->inst = inst;
    return bd;
}

static gpointer drain_thread(gpointer data)
{
    Daemon *d = data;
    /* A reload's retiring bindings drain on their own thread: wait for them
     * too, so that nothing is left unsettled at exit. */
    g_mutex_lock(&d->retire_lock);
    while (d->retire_busy)
        g_cond_wait(&d->retire_cond, &d->retire_lock);
    g_mutex_unlock(&d->retire_lock);
    for (guint i = 0; i < d->bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d->bindings, i);
        if (bd->engine != NULL)
            jet_engine_join(bd->engine);
        /* After its drain the holder releases its claim (docs/exclusive.md). */
        jet_exclusive_join(bd->excl);
    }
    for (guint i = 0; i < d->bindings->len; i++)
        jet_advisory_join(((Binding *)g_ptr_array_index(d->bindings, i))->advisory);
    g_main_loop_quit(d->loop);
    return NULL;
}

static gboolean on_drain_timeout(gpointer data)
{
    Daemon *d = data;
    /* Handlers still running: their messages stay unacknowledged and the
     * server redelivers them after AckWait.  Nothing is acked on this path. */
    jet_log(JET_LOG_ERROR, NULL, "exit-now",
            "drain_timeout %" G_GUINT64_FORMAT " ms passed with handlers still running; exiting, their messages "
            "will be redelivered", d->cfg->host.drain_timeout_ms);
    _exit(d->exit_code != JET_EXIT_OK ? d->exit_code : JET_EXIT_FAILURE);
    return G_SOURCE_REMOVE;
}

/* Stops every engine and drains in a thread, bounded by drain_timeout
 * (bound_ms when drain_timeout is 0 and bound_ms is not). */
static void start_drain(Daemon *d, guint64 bound_ms)
{
    jet_notify_stopping();
    for (guint i = 0; i < d->bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d->bindings, i);
        if (bd->engine != NULL)
            jet_engine_stop(bd->engine);
        jet_exclusive_stop(bd->excl);
    }
    d->drainer = g_thread_new("jet-drain", drain_thread, d);
    guint64 limit = d->cfg->host.drain_timeout_ms > 0 ? d->cfg->host.drain_timeout_ms : bound_ms;
    if (limit > 0)
        g_timeout_add((guint)MIN(limit, G_MAXUINT), on_drain_timeout, d);
}

typedef struct {
    Daemon *d;
    char *binding;
    guint workers;
} HungExit;

/* On the main loop: a binding whose every worker is hung can do nothing
 * more; the host drains the rest and exits for its supervisor to restart it
 * (docs/engine.md, "A hung handler"). */
static gboolean on_all_hung(gpointer data)
{
    HungExit *h = data;
    Daemon *d = h->d;
    jet_log(JET_LOG_ERROR, h->binding, "all-workers-hung",
            "%u worker(s) in handlers past handler_timeout: releasing everything else and exiting "
            "with code %d so that the supervisor restarts the host; the hung messages come back as suspects",
            h->workers, JET_EXIT_HUNG);
    g_free(h->binding);
    g_free(h);
    if (d->signals > 0 || d->exit_code != JET_EXIT_OK)
        return G_SOURCE_REMOVE;   /* already draining */
    d->exit_code = JET_EXIT_HUNG;
    d->signals++;
    /* A hung handler never finishes: never wait for it longer than this. */
    start_drain(d, 10000);
    return G_SOURCE_REMOVE;
}

static void engine_all_hung(JetEngine *e, const char *binding, guint workers, gpointer data)
{
    (void)e;
    HungExit *h = g_new0(HungExit, 1);
    h->d = data;
    h->binding = g_strdup(binding);
    h->workers = workers;
    g_idle_add(on_all_hung, h);
}

static JetEngine *engine_new(Binding *bd, JetConn *conn, JetLedger *ledger, Daemon *d)
{
    JetEngine *e = jet_engine_new(conn, bd->b, bd->inst, &bd->facts);
    jet_engine_set_ledger(e, ledger, d->host_name);
    if (bd->clean_predecessor)
        jet_engine_set_clean_predecessor(e);
    jet_engine_set_hung_hook(e, engine_all_hung, d);
    return e;
}

/* The binding's engine, made once: an ordered binding's before its first
 * bind, a durable one's just before it starts. */
static void binding_engine(Binding *bd, JetConn *conn, JetLedger *ledger, Daemon *d)
{
    if (bd->engine == NULL)
        bd->engine = engine_new(bd, conn, ledger, d);
}

/* An exclusive binding's engine, made and started on the claimer's thread
 * each time its claim is won (docs/exclusive.md). */
static JetEngine *exclusive_won(const gint64 *fence, gpointer data)
{
    Binding *bd = data;
    jet_instance_set_running(bd->inst);   /* a claim won back after a loss: the instance stopped then */
    JetEngine *e = engine_new(bd, bd->d->conn, bd->d->ledger, bd->d);
    jet_engine_set_fence(e, fence);
    jet_engine_start(e);
    return e;
}

/* A binding that passed every step, first part: its safety net stands
 * before the engine's first pull, the pull that makes the server raise an
 * advisory it was holding. */
static void binding_arm(Daemon *d, Binding *bd)
{
    const jet_plugin *desc = jet_plugin_descriptor(bd->plugin);
    JetAdvisoryContext actx = { d->host_name, desc->name, desc->version, bd->b->ledger ? d->ledger : NULL };
    /* An ordered consumer acks nothing: no message can reach MaxDeliver unseen. */
    if (bd->b->kind == JET_KIND_DURABLE)
        bd->advisory = jet_advisory_start(d->conn, bd->b, &actx);
    bd->d = d;
}

/* Second part: it starts handling. */
static void binding_go(Daemon *d, Binding *bd)
{
    if (bd->b->exclusive) {
        /* Only the claim's holder pulls (docs/exclusive.md). */
        bd->excl = jet_exclusive_new(jet_ledger_kv(d->ledger), bd->b, d->host_name, exclusive_won, bd);
        jet_exclusive_start(bd->excl);
    } else {
        binding_engine(bd, d->conn, d->ledger, d);
        jet_engine_start(bd->engine);
    }
}

static void binding_run(Daemon *d, Binding *bd)
{
    binding_arm(d, bd);
    binding_go(d, bd);
}

/* Bindings that cannot start: each is logged as it is found, and the host
 * exits only after every binding has been through every step it could
 * reach (docs/cli.md, "run"). */
typedef struct {
    GString *summary;          /* "NAME (why), ..." */
    guint config;              /* bindings refused for their config (exit 3) */
    guint runtime;             /* bindings that could not bind (exit 1) */
} StartFailures;

static void start_failed(StartFailures *f, Binding *bd, const char *name, gboolean config,
                         const char *why, const char *message)
{
    jet_log(JET_LOG_ERROR, name, "failed", "%s", message);
    if (bd != NULL)
        bd->failed = TRUE;
    if (config)
        f->config++;
    else
        f->runtime++;
    g_string_append_printf(f->summary, "%s%s (%s)", f->summary->len ? ", " : "", name, why);
}

/* The schedule check with the server's facts: a configuration that cannot
 * work is refused before it runs (docs/schedule.md). */
static void start_schedule(Binding *bd, JetConn *conn, JetLedger *ledger, StartFailures *f)
{
    g_auto(JetScheduleFacts) sf = { 0 };
    JetScheduleReport report;
    jet_schedule_facts_read(&sf, bd->b, conn, ledger);
    /* A durable binding's set-up read its stream and consumer moments ago:
     * a read that timed out now does not leave the check without them. */
    if (bd->b->kind == JET_KIND_DURABLE && bd->facts.ack_wait_ms > 0) {
        if (!sf.in.has_stream) {
            sf.in.has_stream = TRUE;
            sf.in.stream_max_age_ms = (guint64)MAX(bd->facts.stream_max_age_ms, 0);
        }
        if (!sf.in.has_consumer) {
            sf.in.has_consumer = TRUE;
            sf.in.consumer_ack_wait_ms = (guint64)bd->facts.ack_wait_ms;
            sf.in.consumer_max_deliver = bd->facts.max_deliver;
            sf.in.consumer_max_ack_pending = bd->facts.max_ack_pending;
        }
    }
    jet_schedule_check(&sf.in, &report);
    for (guint v = 0; v < report.n_violations; v++)
        jet_log(report.violations[v].severity == JET_SCHEDULE_ERROR ? JET_LOG_ERROR : JET_LOG_WARNING,
                bd->b->name, "schedule", "%s: %s", report.violations[v].code, report.violations[v].message);
    if (report.n_errors == 0)
        return;
    g_autoptr(GString) why = g_string_new("schedule:");
    for (guint v = 0; v < report.n_violations; v++)
        if (report.violations[v].severity == JET_SCHEDULE_ERROR)
            g_string_append_printf(why, " %s", report.violations[v].code);
    g_autofree char *msg = g_strdup_printf("binding %s: its retry schedule cannot work with this "
                                           "stream and consumer (see above)", bd->b->name);
    start_failed(f, bd, bd->b->name, TRUE, why->str, msg);
}

/* The plugin's own metrics (docs/plugin-metrics.md), one line: name=value
 * in declaration order. */
static void log_plugin_metrics(Binding *bd)
{
    guint n = jet_instance_metric_count(bd->inst);
    if (n == 0)
        return;
    g_autoptr(GString) line = g_string_new(NULL);
    for (guint i = 0; i < n; i++) {
        gint64 v = 0;
        const JetMetric *mt = jet_instance_metric(bd->inst, i, &v);
        g_string_append_printf(line, "%s%s=%" G_GINT64_FORMAT, i > 0 ? " " : "", mt->name, v);
    }
    jet_log(JET_LOG_INFO, bd->b->name, "plugin-metrics", "%s", line->str);
}

/* A binding's last lines, at exit or when a reload stopped it; its counts
 * go into the host's totals. */
static void binding_log_stopped(Daemon *d, Binding *bd)
{
    JetEngineStats st;
    if (bd->excl != NULL) {
        JetClaimStats cs;
        jet_exclusive_stats(bd->excl, &st, &cs);
        jet_log(JET_LOG_INFO, bd->b->name, "claims-stopped",
                "claims won %" G_GUINT64_FORMAT " (taken over from a silent holder %" G_GUINT64_FORMAT
                "), lost %" G_GUINT64_FORMAT ", expired %" G_GUINT64_FORMAT ", renewals %" G_GUINT64_FORMAT
                " (%" G_GUINT64_FORMAT " failed), released %" G_GUINT64_FORMAT,
                cs.won, cs.taken_over, cs.lost, cs.expired, cs.renewals, cs.renew_errors, cs.released);
    } else {
        jet_engine_stats(bd->engine, &st);
    }
    jet_log(JET_LOG_INFO, bd->b->name, "stopped",
            "handled %" G_GUINT64_FORMAT ": acked %" G_GUINT64_FORMAT ", retried %" G_GUINT64_FORMAT
            ", postponed %" G_GUINT64_FORMAT ", released %" G_GUINT64_FORMAT ", dead-lettered %"
            G_GUINT64_FORMAT ", stranded %" G_GUINT64_FORMAT ", uncertain %" G_GUINT64_FORMAT
            "; %" G_GUINT64_FORMAT " pulls, %" G_GUINT64_FORMAT " acks sent in groups; %" G_GUINT64_FORMAT
            " plugin calls on a message after its handle() returned (refused)",
            st.messages, st.acked, st.retried, st.postponed, st.released, st.dead_lettered, st.stranded,
            st.uncertain, st.pulls, st.acks_grouped, st.stale_handles);
    if (st.published > 0 || st.publish_failures > 0)
        jet_log(JET_LOG_INFO, bd->b->name, "publishes-stopped",
                "plugin publishes: %" G_GUINT64_FORMAT " sent with their pub-ack, %" G_GUINT64_FORMAT " failed",
                st.published, st.publish_failures);
    log_plugin_metrics(bd);
    JetAdvisoryStats as;
    jet_advisory_stats(bd->advisory, &as);
    jet_log(JET_LOG_INFO, bd->b->name, "advisories-stopped",
            "MAX_DELIVERIES advisories %" G_GUINT64_FORMAT ": captured %" G_GUINT64_FORMAT
            ", already captured %" G_GUINT64_FORMAT ", lost %" G_GUINT64_FORMAT ", failed %" G_GUINT64_FORMAT
            ", stranded %" G_GUINT64_FORMAT ", invalid %" G_GUINT64_FORMAT,
            as.advisories, as.captured, as.duplicates, as.lost, as.failed, as.stranded, as.invalid);
    d->totals.messages += st.messages;
    d->totals.acked += st.acked;
    d->totals.retried += st.retried;
    d->totals.postponed += st.postponed;
    d->totals.released += st.released;
    d->totals.dead_lettered += st.dead_lettered;
    d->advisory_captures += as.captured;
}

/* The plugin's own metrics, copied for /metrics (docs/plugin-metrics.md). */
static void plugin_metrics(Binding *bd, JetMetricsBinding *m)
{
    guint n = bd->inst != NULL ? jet_instance_metric_count(bd->inst) : 0;
    if (n == 0)
        return;
    m->plugin = g_new0(JetMetricsPlugin, n);
    for (guint i = 0; i < n; i++) {
        gint64 v = 0;
        const JetMetric *mt = jet_instance_metric(bd->inst, i, &v);
        JetMetricsPlugin *p = &m->plugin[m->n_plugin++];
        g_strlcpy(p->name, mt->name, sizeof p->name);
        p->help = g_strdup(mt->help);
        p->counter = mt->type == JET_METRIC_COUNTER;
        p->value = v;
    }
}

/* The figures /metrics and /readyz report, on the main loop. */
static void ops_collect(GArray *out, JetMetricsHost *host, gpointer data)
{
    Daemon *d = data;
    host->reconnects = d->conn != NULL ? jet_conn_generation(d->conn) : 0;
    for (guint i = 0; i < d->bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d->bindings, i);
        JetMetricsBinding m = { .name = bd->b->name, .num_pending = -1, .num_ack_pending = -1 };
        JetEngineHealth health = { 0 };
        JetFloorStats fs = { 0 };
        gboolean running = FALSE;
        if (bd->excl != NULL) {
            jet_exclusive_stats(bd->excl, &m.stats, NULL);
            running = jet_exclusive_engine_health(bd->excl, &health, &fs);
            m.standby = !running;
        } else if (bd->engine != NULL) {
            jet_engine_stats(bd->engine, &m.stats);
            jet_engine_health(bd->engine, &health);
            jet_engine_floor_stats(bd->engine, &fs);
            running = TRUE;
        }
        if (running) {
            m.started = health.started;
            m.recovering = health.recovering;
            m.hung_workers = health.hung_workers;
            m.in_handlers = health.in_handlers;
            m.buffered = health.buffered;
            m.num_pending = health.num_pending;
            m.num_ack_pending = health.num_ack_pending;
            m.has_floor_monitor = bd->b->floor_age_ms > 0 && !JET_KIND_IS_ORDERED(bd->b->kind);
            m.idle_holding = bd->b->floor_age_ms > 0 && health.idle_holding_ms >= (gint64)bd->b->floor_age_ms;
            m.floor_stalled = fs.stalled;
            m.floor_stall_seconds = (double)MAX(fs.stall_age_ns, 0) / 1e9;
        }
        JetAdvisoryStats as = { 0 };
        jet_advisory_stats(bd->advisory, &as);
        m.max_deliveries_captured = as.captured;
        plugin_metrics(bd, &m);
        g_array_append_val(out, m);
    }
}

static gboolean on_signal(gpointer data)
{
    Daemon *d = data;
    d->signals++;
    if (d->signals == 1) {
        jet_notify_stopping();
        /* Stop first, then say so: a test may act on the log line. */
        for (guint i = 0; i < d->bindings->len; i++) {
            Binding *bd = g_ptr_array_index(d->bindings, i);
            if (bd->engine != NULL)
                jet_engine_stop(bd->engine);
            jet_exclusive_stop(bd->excl);
            jet_advisory_stop(bd->advisory);
        }
        jet_log(JET_LOG_INFO, NULL, "draining",
                "stopping: finishing the messages in handlers, releasing the rest (a second signal exits at once)");
        d->drainer = g_thread_new("jet-drain", drain_thread, d);
        if (d->cfg->host.drain_timeout_ms > 0)
            g_timeout_add((guint)MIN(d->cfg->host.drain_timeout_ms, G_MAXUINT), on_drain_timeout, d);
    } else {
        /* Prompt exit: whatever is unfinished stays unacknowledged and the
         * server redelivers it.  Nothing is acked on this path. */
        jet_log(JET_LOG_WARNING, NULL, "exit-now", "second signal: exiting now; unfinished messages will be redelivered");
        _exit(JET_EXIT_FAILURE);
    }
    return G_SOURCE_CONTINUE;
}

/* --- SIGHUP: reload (docs/reload.md) -------------------------------------- */

/* One log line for each line of a config's errors (jet_config_load
 * reports them all, one a line). */
static void log_config_errors(const char *event, const char *errors, const char *after)
{
    g_auto(GStrv) lines = g_strsplit(errors, "\n", -1);
    for (char **line = lines; *line != NULL; line++)
        jet_log(JET_LOG_ERROR, NULL, event, "%s%s", *line, after);
}

static void reload_refused(const char *why)
{
    log_config_errors("reload-refused", why, "; nothing changed, every binding runs as before");
    jet_notify_ready();   /* the reload is over, as systemd's reload protocol wants it said */
}

static Binding *binding_named(GPtrArray *bindings, const char *name)
{
    for (guint i = 0; i < bindings->len; i++) {
        Binding *bd = g_ptr_array_index(bindings, i);
        if (strcmp(bd->b->name, name) == 0)
            return bd;
    }
    return NULL;
}

/* Whether a binding of cfg uses the attempt ledger's bucket (its ledger,
 * or an exclusive binding's claim, which lives there); *create when one
 * of those is managed (the bucket is then created). */
static gboolean ledger_wanted(const JetConfig *cfg, gboolean *create)
{
    gboolean want = FALSE;
    *create = FALSE;
    for (guint i = 0; i < cfg->bindings->len; i++) {
        const JetBindingConfig *b = g_ptr_array_index(cfg->bindings, i);
        gboolean uses = b->ledger || b->exclusive;
        want |= uses;
        *create |= uses && b->manage == JET_MANAGE_CREATE;
    }
    return want;
}

typedef struct {
    jsCtx *js;
    const JetConfig *cfg;
    gboolean create;
    JetLedger *ledger;
} LedgerOpen;

/* One attempt; a bucket that is not there in bind mode, or not ours, is a
 * config error that asking again cannot mend. */
static gboolean ledger_open_step(gpointer data, GError **error)
{
    LedgerOpen *o = data;
    g_autoptr(GError) local = NULL;
    o->ledger = jet_ledger_open(o->js, o->cfg->host.ledger_bucket, o->create, o->cfg->host.ledger_max_age_ms,
                                o->cfg->host.replicas, &local);
    if (o->ledger != NULL)
        return TRUE;
    gboolean config = g_error_matches(local, JET_LEDGER_ERROR, JET_LEDGER_ERROR_INVALID) ||
                      g_error_matches(local, JET_LEDGER_ERROR, JET_LEDGER_ERROR_MISSING);
    g_set_error(error, JET_ERROR, config ? JET_ERROR_INVALID : JET_ERROR_SERVER, "the attempt ledger (bucket %s): %s",
                o->cfg->host.ledger_bucket, local->message);
    return FALSE;
}

/* The attempt ledger, on a JetStream context of its own (*js, made the
 * first time) with a short wait: a handler thread waits on it, and an
 * unreachable ledger must fall back quickly, not hang.  Opening it is asked
 * again as a binding's consumer is: a connection lost for a moment at
 * start-up is not a reason to exit (docs/engine.md, "Start-up"). */
static JetLedger *ledger_open(JetConn *conn, const JetConfig *cfg, gboolean create, jsCtx **js, GError **error)
{
    if (*js == NULL) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = 1000;
        jo.Prefix = jet_conn_api_prefix(conn);
        natsStatus s = natsConnection_JetStream(js, jet_conn_nats(conn), &jo);
        if (s != NATS_OK) {
            *js = NULL;
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "the attempt ledger (bucket %s): %s",
                        cfg->host.ledger_bucket, natsStatus_GetText(s));
            return NULL;
        }
    }
    LedgerOpen o = { *js, cfg, create, NULL };
    if (!jet_setup_retrying(ledger_open_step, &o, NULL, "ledger-retry", JET_LOG_WARNING, 5, NULL, error))
        return NULL;
    jet_ledger_set_cooldown(o.ledger, 2000);
    g_autoptr(GError) behind = NULL;
    if (!jet_ledger_forget_behind(o.ledger, jet_conn_nats(conn), jet_conn_api_prefix(conn), &behind))
        jet_log(JET_LOG_WARNING, NULL, "ledger-forget-waits",
                "%s: finished messages' records are deleted waiting for each answer",
                behind != NULL ? behind->message : "the attempt ledger");
    return o.ledger;
}

/* The ledger, for a reload that adds the first binding to use it. */
static gboolean reload_ledger(Daemon *d, const JetConfig *cfg, GError **error)
{
    gboolean create = FALSE;
    if (!ledger_wanted(cfg, &create) || d->ledger != NULL)
        return TRUE;
    d->ledger = ledger_open(d->conn, cfg, create, &d->ledger_js, error);
    return d->ledger != NULL;
}

/* The schedule check with the config's own values, as `jethost check`
 * without a server makes it: an error there refuses the reload before
 * anything stops.  The server's facts are checked again at the start. */
static gboolean reload_schedule_ok(const JetBindingConfig *b, GError **error)
{
    g_auto(JetScheduleFacts) sf = { 0 };
    JetScheduleReport report;
    jet_schedule_facts_read(&sf, b, NULL, NULL);
    jet_schedule_check(&sf.in, &report);
    if (report.n_errors == 0)
        return TRUE;
    g_autoptr(GString) why = g_string_new(NULL);
    for (guint v = 0; v < report.n_violations; v++)
        if (report.violations[v].severity == JET_SCHEDULE_ERROR)
            g_string_append_printf(why, "%s%s: %s", why->len ? "; " : "", report.violations[v].code,
                                   report.violations[v].message);
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "%s: [binding %s] schedule: %s", b->file, b->name, why->str);
    return FALSE;
}

/* Forwards that would come back to the binding that made them, with the
 * streams as the server has them, are refused before anything is made
 * (docs/forwarding.md, "A forward that feeds itself"). */
static void start_loops(Daemon *d, JetConn *conn, StartFailures *f)
{
    g_autoptr(GPtrArray) loops = jet_publish_loops(d->cfg, jet_stream_subjects, conn);
    for (guint i = 0; i < loops->len; i++) {
        const JetPublishLoop *l = g_ptr_array_index(loops, i);
        g_autofree char *msg = g_strdup_printf("binding %s: publish loop: %s", l->binding, l->message);
        start_failed(f, binding_named(d->bindings, l->binding), l->binding, TRUE, "publish loop", msg);
    }
}

/* One binding's start on the server, at start-up and at a reload alike,
 * in two steps: binding_setup needs no ledger, binding_bind does (an
 * ordered binding's position may be there).  At start-up every binding is
 * set up before the ledger opens, so that a ledger that cannot open still
 * leaves every binding's own failure named.  A failure is recorded in f
 * and on bd; the rest of the bindings go on. */

/* Its consumer (a durable binding) or its stream (an ordered one that
 * names subjects), and its dead-letter stream. */
static void binding_setup(JetConn *conn, Binding *bd, StartFailures *f)
{
    g_autoptr(GError) local = NULL;
    natsConnection *nc = jet_conn_nats(conn);
    jsCtx *js = jet_conn_js(conn);
    const JetBindingConfig *b = bd->b;
    /* A consumer that does not fit (JET_ERROR_INVALID) is a config error,
     * found at once; anything else was retried and is a runtime failure.
     * A stream an ordered binding makes is made here all the same, in
     * config order, as a durable binding's is (a binding after it may use
     * it); a failure is its first bind's to report, after its attempts. */
    if (JET_KIND_IS_ORDERED(b->kind)) {
        if (b->subjects != NULL)
            jet_stream_ensure(js, b, NULL);
    } else if (!jet_consumer_ensure_retrying(nc, js, b, 0, 0, 5, NULL, &bd->facts, &local)) {
        gboolean config = g_error_matches(local, JET_ERROR, JET_ERROR_INVALID);
        start_failed(f, bd, b->name, config, config ? "consumer does not fit" : "cannot bind", local->message);
        return;
    }
    /* Dead-letter streams: created in managed mode; in bind mode a missing
     * one is reported, and captures keep their messages until it exists.
     * local names the binding and the stream; a config error (a DLQ stream
     * that cannot keep dlq_ttl) stops a bind-mode binding too.  Managed
     * mode asks again a few times before it gives up: a stream being
     * deleted and re-created at this instant is refused for a moment. */
    if (!jet_dlq_stream_ensure_retrying(nc, js, b, b->manage == JET_MANAGE_CREATE ? 5 : 1, &local)) {
        gboolean config = g_error_matches(local, JET_ERROR, JET_ERROR_INVALID);
        if (b->manage == JET_MANAGE_CREATE || config) {
            start_failed(f, bd, b->name, config, "dead-letter stream", local->message);
            return;
        }
        jet_log(JET_LOG_ERROR, b->name, "dlq-missing", "%s; captures will fail and keep their messages until it exists",
                local->message);
    }
}

/* An ordered binding's first bind, and the schedule check with the
 * server's facts. */
static void binding_bind(Daemon *d, JetConn *conn, Binding *bd, StartFailures *f)
{
    g_autoptr(GError) local = NULL;
    const JetBindingConfig *b = bd->b;
    /* An ordered binding's stream, position record and first consumer, in 5
     * attempts as a durable binding's consumer (docs/engine.md).  An
     * exclusive one binds when its claim is won: a standby makes no
     * consumer.  A checkpoint that does not parse, or a filter that matches
     * none of the stream's subjects: waiting mends neither, and each exits
     * 1 as a binding that cannot bind (docs/ordered.md, "The first bind"). */
    if (JET_KIND_IS_ORDERED(b->kind) && !b->exclusive) {
        binding_engine(bd, conn, d->ledger, d);
        if (!jet_engine_bind(bd->engine, 5, &local)) {
            start_failed(f, bd, b->name, FALSE,
                         g_error_matches(local, JET_ERROR, JET_ERROR_INVALID) ? "cannot bind as configured"
                                                                              : "cannot bind",
                         local->message);
            return;
        }
    }
    start_schedule(bd, conn, d->ledger, f);
}

static void binding_start(Daemon *d, JetConn *conn, Binding *bd, StartFailures *f)
{
    binding_setup(conn, bd, f);
    if (!bd->failed)
        binding_bind(d, conn, bd, f);
}

static void reload_begin(Daemon *d);

/* A changed or new binding's start, as at start-up but alone: init(),
 * then binding_start.  A failure leaves it stopped, logged; the rest runs. */
static gboolean reload_start_binding(Daemon *d, Binding *bd)
{
    g_autoptr(GError) local = NULL;
    StartFailures f = { g_string_new(NULL), 0, 0 };
    if (!jet_instance_start(bd->inst, &local)) {
        g_autofree char *msg = g_strdup_printf("binding %s: %s", bd->b->name, local->message);
        start_failed(&f, bd, bd->b->name, TRUE, "plugin", msg);
    } else {
        binding_start(d, d->conn, bd, &f);
    }
    g_string_free(f.summary, TRUE);
    if (bd->failed)
        return FALSE;
    binding_run(d, bd);
    jet_log(JET_LOG_INFO, bd->b->name, "started", "binding %s %s with the new config", bd->b->name,
            bd->changed ? "restarted" : "started");
    return TRUE;
}

/* On the main loop once the retiring bindings drained: their last lines and
 * fini(), then the new and changed bindings start. */
static gboolean reload_finish(gpointer data)
{
    Daemon *d = data;
    if (d->retirer == NULL)
        return G_SOURCE_REMOVE;   /* the host's exit took it over */
    g_thread_join(d->retirer);
    d->retirer = NULL;
    for (guint i = 0; i < d->retiring->len; i++) {
        Binding *old = g_ptr_array_index(d->retiring, i);
        binding_log_stopped(d, old);
        /* Its successor finds what it released unacked: no crash left it. */
        for (guint j = 0; old->engine != NULL && !old->b->exclusive && j < d->pending->len; j++) {
            Binding *next = g_ptr_array_index(d->pending, j);
            if (strcmp(next->b->name, old->b->name) == 0)
                next->clean_predecessor = jet_engine_drained_clean(old->engine);
        }
    }
    g_ptr_array_set_size(d->retiring, 0);   /* engines, then the plugins' fini() */
    guint failed = 0;
    if (d->signals == 0) {
        for (guint i = 0; i < d->pending->len; i++) {
            Binding *bd = g_ptr_array_steal_index(d->pending, i--);
            if (reload_start_binding(d, bd)) {
                g_ptr_array_add(d->bindings, bd);
            } else {
                failed++;
                binding_free(bd);
            }
        }
        jet_log(failed > 0 ? JET_LOG_ERROR : JET_LOG_INFO, NULL, "reloaded",
                "reloaded %s: unchanged %u, restarted %u, started %u, stopped %u, failed %u; running %u binding(s)",
                d->cfg->main_file, d->reload_counts[0], d->reload_counts[1], d->reload_counts[2],
                d->reload_counts[3], failed, d->bindings->len);
    }
    g_ptr_array_set_size(d->pending, 0);   /* a drain began: they never start */
    d->reloading = FALSE;
    if (d->signals == 0)
        jet_notify_ready();
    if (d->reload_again && d->signals == 0) {
        d->reload_again = FALSE;
        jet_notify_reloading();
        reload_begin(d);
    }
    return G_SOURCE_REMOVE;
}

static gpointer retire_thread(gpointer data)
{
    Daemon *d = data;
    for (guint i = 0; i < d->retiring->len; i++) {
        Binding *bd = g_ptr_array_index(d->retiring, i);
        if (bd->engine != NULL)
            jet_engine_join(bd->engine);
        jet_exclusive_join(bd->excl);   /* releases its claim after the drain */
        jet_advisory_join(bd->advisory);
    }
    g_mutex_lock(&d->retire_lock);
    d->retire_busy = FALSE;
    g_cond_broadcast(&d->retire_cond);
    g_mutex_unlock(&d->retire_lock);
    g_idle_add(reload_finish, d);
    return NULL;
}

/* Everything that can refuse the reload happens before anything stops: the
 * files, [host], every plugin and its options, the schedules, the ledger. */
static void reload_begin(Daemon *d)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JetConfig) cfg = jet_config_load(d->cfg->main_file, d->cfg->dropin_dir, &err);
    if (cfg == NULL) {
        reload_refused(err->message);
        return;
    }
    const char *key = jet_host_config_restart_key(&d->cfg->host, &cfg->host);
    if (key != NULL) {
        g_autofree char *why = g_strdup_printf("%s: [host] %s changed: a running host cannot apply it, restart "
                                               "the host to apply it", cfg->host.file, key);
        reload_refused(why);
        return;
    }
    for (guint i = 0; i < cfg->bindings->len; i++) {
        JetBindingConfig *b = g_ptr_array_index(cfg->bindings, i);
        if (!jet_binding_plugin_identify(cfg, b, &err)) {
            reload_refused(err->message);
            return;
        }
        /* A plugin stays resident once loaded: a file rewritten in place
         * would still run the old code under its new name. */
        for (guint j = 0; j < d->bindings->len; j++) {
            const JetFileIdentity *old = &((Binding *)g_ptr_array_index(d->bindings, j))->b->plugin_id;
            const JetFileIdentity *now = &b->plugin_id;
            if (g_strcmp0(old->path, now->path) == 0 &&
                (old->dev != now->dev || old->ino != now->ino || old->size != now->size ||
                 old->mtime_ns != now->mtime_ns)) {
                g_autofree char *why = g_strdup_printf(
                    "%s: [binding %s] plugin: %s changed on disk since it was loaded: a loaded plugin cannot be "
                    "replaced, restart the host to load it (or install it under a new file name)",
                    b->file, b->name, now->path);
                reload_refused(why);
                return;
            }
        }
    }
    g_autoptr(GPtrArray) pending = g_ptr_array_new_with_free_func(binding_free);
    guint unchanged = 0, restarted = 0;
    for (guint i = 0; i < cfg->bindings->len; i++) {
        const JetBindingConfig *b = g_ptr_array_index(cfg->bindings, i);
        Binding *old = binding_named(d->bindings, b->name);
        if (old != NULL && jet_binding_config_equal(old->b, b)) {
            unchanged++;
            continue;
        }
        Binding *bd = binding_prepare(cfg, b, FALSE, &err);
        if (bd == NULL) {
            reload_refused(err->message);
            return;
        }
        bd->changed = old != NULL;
        restarted += old != NULL;
        g_ptr_array_add(pending, bd);
        if (!reload_schedule_ok(b, &err)) {
            reload_refused(err->message);
            return;
        }
    }
    if (!reload_ledger(d, cfg, &err)) {
        reload_refused(err->message);
        return;
    }

    /* Committed.  Unchanged bindings keep running on the config they
     * started with; changed and removed ones drain as at SIGTERM. */
    guint removed = 0;
    for (guint i = 0; i < d->bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d->bindings, i);
        const JetBindingConfig *b = jet_config_binding(cfg, bd->b->name);
        if (b != NULL && jet_binding_config_equal(bd->b, b))
            continue;
        if (b == NULL) {
            removed++;
            jet_log(JET_LOG_INFO, bd->b->name, "removing", "binding %s is no longer in the config: draining it",
                    bd->b->name);
        } else {
            jet_log(JET_LOG_INFO, bd->b->name, "restarting",
                    "binding %s changed: draining it, then starting it with the new config", bd->b->name);
        }
        if (bd->engine != NULL)
            jet_engine_stop(bd->engine);
        jet_exclusive_stop(bd->excl);
        jet_advisory_stop(bd->advisory);
        g_ptr_array_add(d->retiring, g_ptr_array_steal_index(d->bindings, i--));
    }
    d->reload_counts[0] = unchanged;
    d->reload_counts[1] = restarted;
    d->reload_counts[2] = pending->len - restarted;
    d->reload_counts[3] = removed;
    while (pending->len > 0)
        g_ptr_array_add(d->pending, g_ptr_array_steal_index(pending, 0));
    d->cfg = cfg;
    g_ptr_array_add(d->configs, g_steal_pointer(&cfg));
    d->reloading = TRUE;
    g_mutex_lock(&d->retire_lock);
    d->retire_busy = TRUE;
    g_mutex_unlock(&d->retire_lock);
    d->retirer = g_thread_new("jet-reload", retire_thread, d);
}

static gboolean on_reload(gpointer data)
{
    Daemon *d = data;
    if (d->signals > 0)
        return G_SOURCE_CONTINUE;   /* draining: nothing more starts */
    if (d->reloading) {
        /* The files may have changed again since this reload read them. */
        jet_log(JET_LOG_INFO, NULL, "reload-queued", "SIGHUP during a reload: reloading again once it is done");
        d->reload_again = TRUE;
        return G_SOURCE_CONTINUE;
    }
    jet_log(JET_LOG_INFO, NULL, "reloading", "SIGHUP: reading %s again", d->cfg->main_file);
    jet_notify_reloading();
    reload_begin(d);
    return G_SOURCE_CONTINUE;
}

int jet_daemon_run(const char *config_file, const char *dropin_dir)
{
    g_autoptr(GError) err = NULL;
    Daemon d = { 0 };
    JetEmbedded *embedded = NULL;
    JetConn *conn = NULL;
    JetOpsHttp *ops = NULL;
    g_auto(GStrv) urls = NULL;
    int rc = JET_EXIT_OK;

    jet_guard_fatal_install();
    jet_heap_tune();
    if (!jet_log_level_from_env(&err)) {
        jet_log(JET_LOG_ERROR, NULL, "config", "%s", err->message);
        return JET_EXIT_CONFIG;
    }
    d.cfg = jet_config_load(config_file, dropin_dir, &err);
    if (d.cfg == NULL) {
        log_config_errors("config", err->message, "");
        return JET_EXIT_CONFIG;
    }
    d.configs = g_ptr_array_new_with_free_func((GDestroyNotify)jet_config_free);
    g_ptr_array_add(d.configs, d.cfg);
    d.host_name = d.cfg->host.name;
    jet_log_set_format(d.cfg->host.log_format);
    d.bindings = g_ptr_array_new_with_free_func(binding_free);
    d.retiring = g_ptr_array_new_with_free_func(binding_free);
    d.pending = g_ptr_array_new_with_free_func(binding_free);
    g_mutex_init(&d.retire_lock);
    g_cond_init(&d.retire_cond);
    d.loop = g_main_loop_new(NULL, FALSE);
    guint sig_term = g_unix_signal_add(SIGTERM, on_signal, &d);
    guint sig_int = g_unix_signal_add(SIGINT, on_signal, &d);
    /* From now on, not only once running: SIGHUP's default would kill the
     * host without a drain.  One that comes during start-up reloads once
     * the bindings run. */
    guint sig_hup = g_unix_signal_add(SIGHUP, on_reload, &d);

    StartFailures fails = { g_string_new(NULL), 0, 0 };

    /* Every binding loads and starts, or the host exits naming every one
     * that did not.  Plugins first: nothing reaches the server for a config
     * that cannot run. */
    for (guint i = 0; i < d.cfg->bindings->len; i++) {
        const JetBindingConfig *b = g_ptr_array_index(d.cfg->bindings, i);
        g_autoptr(GError) local = NULL;
        Binding *bd = binding_prepare(d.cfg, b, TRUE, &local);
        if (bd == NULL) {
            start_failed(&fails, NULL, b->name, TRUE, "plugin", local->message);
            continue;
        }
        /* What a reload compares the plugin file with.  Not known (the file
         * went since it was loaded): a reload then restarts the binding. */
        jet_binding_plugin_identify(d.cfg, (JetBindingConfig *)b, NULL);
        g_ptr_array_add(d.bindings, bd);
    }
    if (fails.config > 0)
        goto refused;

    if (d.cfg->host.embedded) {
        embedded = jet_embedded_start(d.cfg->host.nats_server, d.cfg->host.state_dir, &err);
        if (embedded == NULL) {
            jet_log(JET_LOG_ERROR, NULL, "failed", "%s", err->message);
            rc = JET_EXIT_FAILURE;
            goto out;
        }
        urls = g_new0(char *, 2);
        urls[0] = g_strdup(jet_embedded_url(embedded));
    } else {
        urls = g_strdupv(d.cfg->host.urls);
    }
    conn = jet_conn_open((const char *const *)urls, &d.cfg->host, d.cfg->host.connect_attempts, &err);
    if (conn == NULL) {
        for (guint i = 0; i < d.bindings->len; i++) {
            Binding *bd = g_ptr_array_index(d.bindings, i);
            jet_log(JET_LOG_ERROR, bd->b->name, "failed", "binding %s: cannot bind: %s", bd->b->name, err->message);
        }
        rc = JET_EXIT_FAILURE;
        goto out;
    }
    start_loops(&d, conn, &fails);
    if (fails.config > 0)
        goto refused;
    for (guint i = 0; i < d.bindings->len; i++)
        binding_setup(conn, g_ptr_array_index(d.bindings, i), &fails);
    gboolean create_ledger = FALSE;
    if (ledger_wanted(d.cfg, &create_ledger)) {
        d.ledger = ledger_open(conn, d.cfg, create_ledger, &d.ledger_js, &err);
        if (d.ledger == NULL) {
            jet_log(JET_LOG_ERROR, NULL, "failed", "%s", err->message);
            if (fails.config == 0 && fails.runtime == 0) {
                rc = JET_EXIT_FAILURE;
                goto out;
            }
            goto refused;   /* still name the bindings that failed before */
        }
    }
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        if (!bd->failed)
            binding_bind(&d, conn, bd, &fails);
    }
refused:
    if (fails.config > 0 || fails.runtime > 0) {
        guint n = d.cfg->bindings->len, nf = fails.config + fails.runtime;
        rc = fails.config > 0 ? JET_EXIT_CONFIG : JET_EXIT_FAILURE;
        jet_log(JET_LOG_ERROR, NULL, "not-started",
                "%u of %u binding%s cannot start: %s; exiting with code %d (%s)", nf, n,
                n == 1 ? "" : "s", fails.summary->str, rc,
                rc == JET_EXIT_CONFIG ? "a config error" : "could not bind");
        goto out;
    }
    /* After every plugin's load and init(), before the first handle(): atexit
     * hooks run last-registered first, so ours runs before any a plugin
     * registered so far, while nothing has been torn down yet. */
    jet_guard_install();
    d.conn = conn;
    /* Before the bindings start, so a probe sees them start; a port taken
     * fails the host before anything is pulled. */
    if (d.cfg->host.metrics_listen != NULL) {
        ops = jet_ops_http_start(d.cfg->host.metrics_listen, d.cfg->host.metrics_idle_timeout_ms, ops_collect,
                                 &d, &err);
        if (ops == NULL) {
            jet_log(JET_LOG_ERROR, NULL, "failed", "%s", err->message);
            rc = JET_EXIT_FAILURE;
            goto out;
        }
    }
    /* Every binding's set-up first, then every engine at once: set up one
     * by one behind bindings already pulling, the last of 50 started 1.7 s
     * after the first on 2 busy cores; with nothing pulling yet the whole
     * set-up takes a fraction of that (docs/engine.md, "Start-up"). */
    for (guint i = 0; i < d.bindings->len; i++)
        binding_arm(&d, g_ptr_array_index(d.bindings, i));
    for (guint i = 0; i < d.bindings->len; i++)
        binding_go(&d, g_ptr_array_index(d.bindings, i));
    jet_log(JET_LOG_INFO, NULL, "running", "jethost %s running %u binding(s)", PACKAGE_VERSION, d.bindings->len);
    /* The supervisor's side: active now, and a stuck main loop restarts us. */
    jet_notify_ready();
    jet_notify_watchdog_start();
    guint heap_trim = jet_heap_trim_start(HEAP_TRIM_S);

    g_main_loop_run(d.loop);
    if (heap_trim != 0)
        g_source_remove(heap_trim);
    if (d.drainer != NULL)
        g_thread_join(d.drainer);
    /* A reload's drain ended with the host's, before it could finish. */
    if (d.retirer != NULL) {
        g_thread_join(d.retirer);
        d.retirer = NULL;
        for (guint i = 0; i < d.retiring->len; i++)
            binding_log_stopped(&d, g_ptr_array_index(d.retiring, i));
    }
    if (d.exit_code != JET_EXIT_OK)
        rc = d.exit_code;   /* drained after all (a hung handler returned) */
    for (guint i = 0; i < d.bindings->len; i++)
        binding_log_stopped(&d, g_ptr_array_index(d.bindings, i));

out:
    jet_ops_http_free(ops);
    jet_notify_watchdog_stop();
    g_string_free(fails.summary, TRUE);
    g_source_remove(sig_term);
    g_source_remove(sig_int);
    g_source_remove(sig_hup);
    while (g_idle_remove_by_data(&d))
        ;   /* a reload_finish queued as the loop quit: handled above */
    /* Engines first (they use the connection), then plugins' fini. */
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        jet_exclusive_free(bd->excl);
        bd->excl = NULL;
        jet_engine_free(bd->engine);
        bd->engine = NULL;
    }
    g_ptr_array_unref(d.retiring);
    g_ptr_array_unref(d.pending);
    g_ptr_array_unref(d.bindings);
    jet_ledger_close(d.ledger);
    if (d.ledger_js != NULL)
        jsCtx_Destroy(d.ledger_js);
    jet_conn_close(conn);
    jet_embedded_stop(embedded);
    g_main_loop_unref(d.loop);
    g_ptr_array_unref(d.configs);
    g_mutex_clear(&d.retire_lock);
    g_cond_clear(&d.retire_cond);
    if (rc == JET_EXIT_OK)
        jet_log(JET_LOG_INFO, NULL, "exit",
                "drained; exiting: handled %" G_GUINT64_FORMAT ": acked %" G_GUINT64_FORMAT ", retried %"
                G_GUINT64_FORMAT ", postponed %" G_GUINT64_FORMAT ", released %" G_GUINT64_FORMAT
                ", dead-lettered %" G_GUINT64_FORMAT " (and %" G_GUINT64_FORMAT
                " captured from MAX_DELIVERIES advisories), over every binding this run, reloads included",
                d.totals.messages, d.totals.acked, d.totals.retried, d.totals.postponed, d.totals.released,
                d.totals.dead_lettered, d.advisory_captures);
    return rc;
}
