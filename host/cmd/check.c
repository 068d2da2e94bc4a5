/* `jethost check` (docs/cli.md, "check"): the config, its plugins and each
 * binding's schedule, and with --server the stream and consumer as they are;
 * one report on stdout in config order. */
#include "check.h"
#include "binding_plugin.h"
#include "config.h"
#include "conn.h"
#include "consumer_put.h"
#include "consumer_setup.h"
#include "errors.h"
#include "exit_codes.h"
#include "host_api.h"
#include "publish_loop.h"
#include "schedule_facts.h"
#include "stream_names.h"

#include <stdio.h>
#include <string.h>

/* The duplicate window of a stream that a binding of cfg creates
 * (subjects set), as it would be made: its duplicate_window, else the
 * server's default of 2 minutes.  FALSE when no binding creates it. */
#define SERVER_DUPLICATE_WINDOW_MS G_GUINT64_CONSTANT(120000)
static gboolean config_creates(const JetConfig *cfg, const char *stream, guint64 *window_ms)
{
    for (guint i = 0; i < cfg->bindings->len; i++) {
        const JetBindingConfig *o = g_ptr_array_index(cfg->bindings, i);
        if (o->subjects != NULL && strcmp(o->stream, stream) == 0) {
            *window_ms = o->duplicate_window_ms > 0 ? o->duplicate_window_ms : SERVER_DUPLICATE_WINDOW_MS;
            return TRUE;
        }
    }
    return FALSE;
}

/* The binding's publish_streams, checked against its schedule
 * (docs/forwarding.md): missing streams, short duplicate windows.  A stream
 * the server has is taken as it is; one it lacks, or any without --server,
 * as a binding of the config would create it; without --server a stream
 * the config does not create cannot be judged and is left out. */
static void publish_streams_check(const JetConfig *cfg, JetConn *conn, const JetBindingConfig *b,
                                  JetScheduleReport *report)
{
    guint n = b->publish_streams != NULL ? g_strv_length(b->publish_streams) : 0;
    if (n == 0)
        return;
    g_autofree JetPublishStream *facts = g_new0(JetPublishStream, n);
    g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func(g_free);
    guint known = 0;
    for (guint i = 0; i < n; i++) {
        JetPublishStream *f = &facts[known];
        memset(f, 0, sizeof *f);
        f->name = b->publish_streams[i];
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus st = conn != NULL ? js_GetStreamInfo(&si, jet_conn_js(conn), f->name, NULL, &jerr) : NATS_ERR;
        if (st == NATS_OK) {
            f->found = TRUE;
            f->duplicate_window_ms = (guint64)MAX(si->Config->Duplicates / 1000000, 0);
            jsStreamInfo_Destroy(si);
        } else if (config_creates(cfg, f->name, &f->duplicate_window_ms)) {
            f->found = TRUE;
        } else if (conn == NULL) {
            continue;
        } else if (st != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
            char *why = g_strdup_printf("cannot be read: %s", natsStatus_GetText(st));
            g_ptr_array_add(errors, why);
            f->error = why;
        }
        known++;
    }
    jet_schedule_check_publish_streams(report, facts, known);
}

/* What the server says about a binding's consumer that no run could work
 * with (push, not explicit acks, a BackOff): the consumer setup's own
 * refusal, so check and run call the same things config errors. */
static gboolean live_consumer_fits(JetConn *conn, const JetBindingConfig *b, GError **error)
{
    if (JET_KIND_IS_ORDERED(b->kind))
        return TRUE;   /* its consumer is the host's own */
    gboolean absent = FALSE;
    g_autoptr(JsonObject) info = jet_consumer_info_json(jet_conn_nats(conn), b, &absent, NULL);
    if (info == NULL)
        return TRUE;   /* absent: managed mode creates it, bind mode says so when it runs */
    return jet_consumer_check_fits(b, jet_consumer_info_config(info), error);
}

/* [host] replicas against the servers the connection knows of (the one it
 * reached and those its INFO names in the cluster): a stream or bucket
 * made with more replicas than that is refused by the server
 * (insufficient resources).  A warning, since servers it was not told of
 * may exist. */
static void replicas_check(const JetConfig *cfg, JetConn *conn)
{
    char **servers = NULL;
    int n = 0;
    if (cfg->host.replicas <= 1 || natsConnection_GetServers(jet_conn_nats(conn), &servers, &n) != NATS_OK)
        return;
    for (int i = 0; i < n; i++)
        free(servers[i]);
    free(servers);
    if (n > 0 && (guint)n < cfg->host.replicas)
        printf("host: warning replicas: [host] replicas = %u, but the server knows of %d server%s in its "
               "cluster: every stream and bucket jethost creates would be refused (insufficient resources); "
               "set replicas to at most %d or connect to the cluster\n",
               cfg->host.replicas, n, n == 1 ? "" : "s", n);
}

/* Appends "NAME (why)" to the summary of failed bindings. */
static void failed_add(GString *failed, const char *name, const char *why)
{
    g_string_append_printf(failed, "%s%s (%s)", failed->len ? ", " : "", name, why);
}

/* One binding's part of the report, on stdout (docs/cli.md, "check"). */
static gboolean check_binding(const JetConfig *cfg, const JetBindingConfig *b, JetConn *conn,
                              gboolean verbose, gboolean no_plugins, const GPtrArray *loops, GString *failed)
{
    g_autoptr(GString) why = g_string_new(NULL);
    for (guint i = 0; i < loops->len; i++) {
        const JetPublishLoop *l = g_ptr_array_index(loops, i);
        if (strcmp(l->binding, b->name) != 0)
            continue;
        printf("binding %s: error: publish-loop: %s\n", b->name, l->message);
        if (why->len == 0)
            g_string_append(why, "publish-loop");
    }
    JetPlugin *plugin = NULL;
    JetInstance *inst = NULL;
    if (no_plugins) {
        printf("binding %s: plugin %s not checked (--no-plugins): not opened, its %u option%s "
               "not validated\n", b->name, b->plugin, g_hash_table_size(b->options),
               g_hash_table_size(b->options) == 1 ? "" : "s");
    } else {
        g_autoptr(GError) local = NULL;
        /* init() is not run: check has no side effects a plugin might have. */
        inst = jet_binding_plugin(cfg, b, FALSE, &plugin, &local);
        if (inst == NULL) {
            printf("binding %s: error: %s\n", b->name, local->message);
            g_string_append(why, "plugin");
        }
    }
    if (conn != NULL) {
        g_autoptr(GError) local = NULL;
        if (!live_consumer_fits(conn, b, &local)) {
            printf("binding %s: error: %s\n", b->name, local->message);
            g_string_append_printf(why, "%sconsumer", why->len ? ", " : "");
        }
    }

    /* The schedule, from the config alone without a server (check runs in
     * fleet CI), with the stream and consumer as they are with one. */
    g_auto(JetScheduleFacts) sf = { 0 };
    JetScheduleReport report;
    jet_schedule_facts_read(&sf, b, conn, NULL);
    jet_schedule_check(&sf.in, &report);
    publish_streams_check(cfg, conn, b, &report);
    if (verbose || report.n_errors > 0 || report.n_warnings > 0) {
        g_autofree char *text = jet_schedule_report_format(&report);
        printf("binding %s: schedule\n%s", b->name, text);
    }
    if (report.n_errors > 0) {
        g_string_append_printf(why, "%sschedule:", why->len ? ", " : "");
        for (gsize v = 0; v < report.n_violations; v++)
            if (report.violations[v].severity == JET_SCHEDULE_ERROR)
                g_string_append_printf(why, " %s", report.violations[v].code);
    }
    if (verbose && inst != NULL) {
        const jet_plugin *d = jet_plugin_descriptor(plugin);
        printf("binding %s: plugin %s %s (%s) on %s/%s\n", b->name, d->name, d->version,
               jet_plugin_path(plugin), b->stream, b->consumer != NULL ? b->consumer : "(ordered)");
        for (const jet_option *o = d->options; o != NULL && o->name != NULL; o++)
            printf("  option.%s = %s   # %s\n", o->name,
                   jet__ctx_option(inst, o->name) != NULL ? jet__ctx_option(inst, o->name) : "(unset)",
                   o->help != NULL ? o->help : "");
    }
    jet_instance_free(inst);
    if (why->len > 0)
        failed_add(failed, b->name, why->str);
    return why->len == 0;
}

int jet_check_run(const char *config_file, const char *dropin_dir, gboolean verbose, const char *server_url,
                  gboolean no_plugins)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JetConfig) cfg = jet_config_load(config_file, dropin_dir, &err);
    if (cfg == NULL) {
        /* No bindings to report on: the errors are the report, each once,
         * in file order; the summary on stderr only counts them. */
        g_auto(GStrv) lines = g_strsplit(err->message, "\n", -1);
        for (char **line = lines; *line != NULL; line++)
            printf("%s\n", *line);
        fflush(stdout);
        guint n = g_strv_length(lines);
        fprintf(stderr, "jethost check: %s: FAILED: %u error%s in the config (listed on stdout)\n", config_file, n,
                n == 1 ? "" : "s");
        return JET_EXIT_CONFIG;
    }
    JetConn *conn = NULL;
    if (server_url != NULL) {
        const char *urls[] = { server_url, NULL };
        conn = jet_conn_open(urls, &cfg->host, 2, &err);
        if (conn == NULL) {
            fprintf(stderr, "jethost: --server: %s\n", err->message);
            return JET_EXIT_FAILURE;
        }
    }
    /* One report, in config order, on stdout: the failing bindings among
     * the others, then a summary of the failures. */
    g_autoptr(GString) failed = g_string_new(NULL);
    guint n_failed = 0;
    /* Without --server only the streams the config creates are known. */
    if (conn != NULL)
        replicas_check(cfg, conn);
    g_autoptr(GPtrArray) loops = jet_publish_loops(cfg, conn != NULL ? jet_stream_subjects : NULL, conn);
    for (guint i = 0; i < cfg->bindings->len; i++)
        n_failed += !check_binding(cfg, g_ptr_array_index(cfg->bindings, i), conn, verbose,
                                   no_plugins, loops, failed);
    jet_conn_close(conn);
    guint n = cfg->bindings->len;
    const char *unchecked = no_plugins ? "; plugins not checked (--no-plugins)" : "";
    if (n_failed == 0) {
        printf("%s: OK (%u binding%s)%s\n", config_file, n, n == 1 ? "" : "s", unchecked);
        return JET_EXIT_OK;
    }
    g_autofree char *summary = g_strdup_printf("%s: FAILED: %u of %u binding%s: %s%s", config_file,
                                               n_failed, n, n == 1 ? "" : "s", failed->str,
                                               unchecked);
    printf("%s\n", summary);
    fflush(stdout);
    /* The same line on stderr, for logs that keep only stderr. */
    fprintf(stderr, "jethost check: %s\n", summary);
    return JET_EXIT_CONFIG;
}
