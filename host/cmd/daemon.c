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
#include "host_api.h"
#include "instance.h"
#include "ledger.h"
#include "log.h"
#include "notify.h"
#include "plugin_guard.h"
#include "schedule.h"

#include <glib-unix.h>
#include <stdio.h>
#include <unistd.h>

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
} Daemon;

static void binding_free(gpointer data)
{
    Binding *bd = data;
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
    jet_engine_set_ledger(e, ledger, d->cfg->host.name);
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
static JetEngine *exclusive_won(gpointer data)
{
    Binding *bd = data;
    jet_instance_set_running(bd->inst);   /* a claim won back after a loss: the instance stopped then */
    JetEngine *e = engine_new(bd, bd->d->conn, bd->d->ledger, bd->d);
    jet_engine_start(e);
    return e;
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

/* The step a binding reached, schedule check included, with the server's
 * facts: a configuration that cannot work is refused before it runs
 * (docs/schedule.md). */
static void start_schedule(Binding *bd, JetLedger *ledger, StartFailures *f)
{
    JetScheduleInput in;
    JetScheduleReport report;
    jet_schedule_input_from_binding(bd->b, &in);
    in.has_stream = TRUE;
    in.stream_max_age_ms = (guint64)MAX(bd->facts.stream_max_age_ms, 0);
    in.has_consumer = bd->b->kind == JET_KIND_DURABLE;
    in.consumer_ack_wait_ms = bd->facts.ack_wait_ms;
    in.consumer_max_deliver = bd->facts.max_deliver;
    in.consumer_max_ack_pending = bd->facts.max_ack_pending;
    if (ledger != NULL && bd->b->ledger) {
        in.has_ledger = TRUE;
        in.ledger_max_age_ms = jet_ledger_max_age_ms(ledger);
    }
    jet_schedule_check(&in, &report);
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

int jet_daemon_run(const char *config_file, const char *dropin_dir)
{
    g_autoptr(GError) err = NULL;
    Daemon d = { 0 };
    JetEmbedded *embedded = NULL;
    JetConn *conn = NULL;
    jsCtx *ledger_js = NULL;
    JetLedger *ledger = NULL;
    g_auto(GStrv) urls = NULL;
    int rc = JET_EXIT_OK;

    d.cfg = jet_config_load(config_file, dropin_dir, &err);
    if (d.cfg == NULL) {
        jet_log(JET_LOG_ERROR, NULL, "config", "%s", err->message);
        return JET_EXIT_CONFIG;
    }
    d.bindings = g_ptr_array_new_with_free_func(binding_free);
    d.loop = g_main_loop_new(NULL, FALSE);
    guint sig_term = g_unix_signal_add(SIGTERM, on_signal, &d);
    guint sig_int = g_unix_signal_add(SIGINT, on_signal, &d);

    StartFailures fails = { g_string_new(NULL), 0, 0 };

    /* Every binding loads and starts, or the host exits naming every one
     * that did not.  Plugins first: nothing reaches the server for a config
     * that cannot run. */
    for (guint i = 0; i < d.cfg->bindings->len; i++) {
        const JetBindingConfig *b = g_ptr_array_index(d.cfg->bindings, i);
        g_autoptr(GError) local = NULL;
        Binding *bd = binding_prepare(d.cfg, b, TRUE, &local);
        if (bd == NULL)
            start_failed(&fails, NULL, b->name, TRUE, "plugin", local->message);
        else
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
    /* A consumer that does not fit (JET_ERROR_INVALID) is a config error,
     * found at once; anything else was retried and is a runtime failure.
     * An ordered binding binds once the ledger is open (below): where its
     * consumer starts may be in its position record.  A stream it makes is
     * made here all the same, in config order, as a durable binding's is
     * (a binding after it may use it); a failure is its first bind's to
     * report, after its attempts. */
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        g_autoptr(GError) local = NULL;
        if (JET_KIND_IS_ORDERED(bd->b->kind)) {
            if (bd->b->subjects != NULL)
                jet_stream_ensure(jet_conn_js(conn), bd->b, NULL);
            continue;
        }
        if (!jet_consumer_ensure_retrying(jet_conn_js(conn), bd->b, 0, 5, NULL, &bd->facts, &local)) {
            gboolean config = g_error_matches(local, JET_ERROR, JET_ERROR_INVALID);
            start_failed(&fails, bd, bd->b->name, config,
                         config ? "consumer does not fit" : "cannot bind", local->message);
        }
    }
    /* Dead-letter streams: created in managed mode; in bind mode a missing
     * one is reported, and captures keep their messages until it exists. */
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        g_autoptr(GError) local = NULL;
        if (bd->failed || jet_dlq_stream_ensure(jet_conn_js(conn), bd->b, &local))
            continue;
        if (bd->b->manage == JET_MANAGE_CREATE)   /* local names the binding and the stream */
            start_failed(&fails, bd, bd->b->name, FALSE, "dead-letter stream", local->message);
        else
            jet_log(JET_LOG_ERROR, bd->b->name, "dlq-missing",
                    "%s; captures will fail and keep their messages until it exists", local->message);
    }

    /* The attempt ledger, on a JetStream context of its own with a short
     * wait: a handler thread waits on it, and an unreachable ledger must
     * fall back quickly, not hang. */
    gboolean want_ledger = FALSE, create_ledger = FALSE;
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        /* An exclusive binding's claim lives in the same bucket. */
        gboolean uses = bd->b->ledger || bd->b->exclusive;
        want_ledger |= uses;
        create_ledger |= uses && bd->b->manage == JET_MANAGE_CREATE;
    }
    if (want_ledger) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = 1000;
        jo.Prefix = jet_conn_api_prefix(conn);
        natsConnection_JetStream(&ledger_js, jet_conn_nats(conn), &jo);
        ledger = jet_ledger_open(ledger_js, d.cfg->host.ledger_bucket, create_ledger,
                                 d.cfg->host.ledger_max_age_ms, &err);
        if (ledger == NULL) {
            jet_log(JET_LOG_ERROR, NULL, "failed", "the attempt ledger (bucket %s): %s", d.cfg->host.ledger_bucket,
                    err->message);
            if (fails.config == 0 && fails.runtime == 0) {
                rc = JET_EXIT_FAILURE;
                goto out;
            }
            goto refused;   /* still name the bindings that failed before */
        }
        jet_ledger_set_cooldown(ledger, 2000);
    }

    /* Ordered bindings: their stream, position record and first consumer,
     * in 5 attempts as a durable binding's consumer (docs/engine.md). */
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        g_autoptr(GError) local = NULL;
        /* An exclusive one binds when its claim is won: a standby makes no
         * consumer. */
        if (bd->failed || !JET_KIND_IS_ORDERED(bd->b->kind) || bd->b->exclusive)
            continue;
        binding_engine(bd, conn, ledger, &d);
        /* A checkpoint that does not parse is no config error, but waiting
         * does not mend it either: an operator must say where to start. */
        if (!jet_engine_bind(bd->engine, 5, &local))
            start_failed(&fails, bd, bd->b->name, FALSE,
                         g_error_matches(local, JET_ERROR, JET_ERROR_INVALID) ? "checkpoint unreadable" : "cannot bind",
                         local->message);
    }
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        if (!bd->failed)
            start_schedule(bd, ledger, &fails);
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
    d.ledger = ledger;
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        /* The safety net stands before the engine's first pull, the pull
         * that makes the server raise an advisory it was holding. */
        const jet_plugin *desc = jet_plugin_descriptor(bd->plugin);
        JetAdvisoryContext actx = { d.cfg->host.name, desc->name, desc->version, bd->b->ledger ? ledger : NULL };
        /* An ordered consumer acks nothing: no message can reach MaxDeliver unseen. */
        if (bd->b->kind == JET_KIND_DURABLE)
            bd->advisory = jet_advisory_start(conn, bd->b, &actx);
        bd->d = &d;
        if (bd->b->exclusive) {
            /* Only the claim's holder pulls (docs/exclusive.md). */
            bd->excl = jet_exclusive_new(jet_ledger_kv(ledger), bd->b, d.cfg->host.name, exclusive_won, bd);
            jet_exclusive_start(bd->excl);
        } else {
            binding_engine(bd, conn, ledger, &d);
            jet_engine_start(bd->engine);
        }
    }
    jet_log(JET_LOG_INFO, NULL, "running", "jethost %s running %u binding(s)", PACKAGE_VERSION, d.bindings->len);
    /* The supervisor's side: active now, and a stuck main loop restarts us. */
    jet_notify_ready();
    jet_notify_watchdog_start();

    g_main_loop_run(d.loop);
    if (d.drainer != NULL)
        g_thread_join(d.drainer);
    if (d.exit_code != JET_EXIT_OK)
        rc = d.exit_code;   /* drained after all (a hung handler returned) */
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
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
    }

out:
    jet_notify_watchdog_stop();
    g_string_free(fails.summary, TRUE);
    g_source_remove(sig_term);
    g_source_remove(sig_int);
    /* Engines first (they use the connection), then plugins' fini. */
    for (guint i = 0; i < d.bindings->len; i++) {
        Binding *bd = g_ptr_array_index(d.bindings, i);
        jet_exclusive_free(bd->excl);
        bd->excl = NULL;
        jet_engine_free(bd->engine);
        bd->engine = NULL;
    }
    g_ptr_array_unref(d.bindings);
    jet_ledger_close(ledger);
    if (ledger_js != NULL)
        jsCtx_Destroy(ledger_js);
    jet_conn_close(conn);
    jet_embedded_stop(embedded);
    g_main_loop_unref(d.loop);
    jet_config_free(d.cfg);
    if (rc == JET_EXIT_OK)
        jet_log(JET_LOG_INFO, NULL, "exit", "drained; exiting");
    return rc;
}
