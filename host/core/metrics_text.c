#include "metrics_text.h"
#include "settle.h"

#include <math.h>
#include <string.h>

void jet_metrics_escape_label(GString *out, const char *value)
{
    for (const char *p = value; *p; p++) {
        if (*p == '\\')
            g_string_append(out, "\\\\");
        else if (*p == '"')
            g_string_append(out, "\\\"");
        else if (*p == '\n')
            g_string_append(out, "\\n");
        else
            g_string_append_c(out, *p);
    }
}

void jet_metrics_escape_help(GString *out, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            g_string_append(out, "\\\\");
        else if (*p == '\n')
            g_string_append(out, "\\n");
        else
            g_string_append_c(out, *p);
    }
}

void jet_metrics_family(GString *out, const char *name, const char *type, const char *help)
{
    g_string_append_printf(out, "# HELP %s ", name);
    jet_metrics_escape_help(out, help);
    g_string_append_printf(out, "\n# TYPE %s %s\n", name, type);
}

/* The shortest text that reads back as the same double, in the C locale
 * whatever the host's: a scraper parses "0,5" as garbage. */
static void append_double(GString *out, double v)
{
    if (isinf(v)) {
        g_string_append(out, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(v)) {
        g_string_append(out, "NaN");
        return;
    }
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int prec = 15; prec <= 17; prec++) {
        char fmt[8];
        g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
        g_ascii_formatd(buf, sizeof buf, fmt, v);
        if (prec == 17 || g_ascii_strtod(buf, NULL) == v)
            break;
    }
    g_string_append(out, buf);
}

static void append_labels(GString *out, const JetMetricLabel *labels, gsize n, const char *le)
{
    if (n == 0 && le == NULL)
        return;
    g_string_append_c(out, '{');
    for (gsize i = 0; i < n; i++) {
        g_string_append_printf(out, "%s%s=\"", i > 0 ? "," : "", labels[i].name);
        jet_metrics_escape_label(out, labels[i].value);
        g_string_append_c(out, '"');
    }
    if (le != NULL)
        g_string_append_printf(out, "%sle=\"%s\"", n > 0 ? "," : "", le);
    g_string_append_c(out, '}');
}

void jet_metrics_sample_u64(GString *out, const char *name, const JetMetricLabel *labels, gsize n_labels,
                            guint64 value)
{
    g_string_append(out, name);
    append_labels(out, labels, n_labels, NULL);
    g_string_append_printf(out, " %" G_GUINT64_FORMAT "\n", value);
}

void jet_metrics_sample_double(GString *out, const char *name, const JetMetricLabel *labels, gsize n_labels,
                               double value)
{
    g_string_append(out, name);
    append_labels(out, labels, n_labels, NULL);
    g_string_append_c(out, ' ');
    append_double(out, value);
    g_string_append_c(out, '\n');
}

void jet_metrics_histogram(GString *out, const char *name, const JetMetricLabel *labels, gsize n_labels,
                           const double *bounds, gsize n_bounds, const guint64 *counts, double sum)
{
    g_autofree char *bucket = g_strconcat(name, "_bucket", NULL);
    guint64 cum = 0;
    for (gsize i = 0; i <= n_bounds; i++) {
        cum += counts[i];
        g_autoptr(GString) le = g_string_new(NULL);
        append_double(le, i < n_bounds ? bounds[i] : INFINITY);
        g_string_append(out, bucket);
        append_labels(out, labels, n_labels, le->str);
        g_string_append_printf(out, " %" G_GUINT64_FORMAT "\n", cum);
    }
    g_autofree char *sum_name = g_strconcat(name, "_sum", NULL);
    g_autofree char *count_name = g_strconcat(name, "_count", NULL);
    jet_metrics_sample_double(out, sum_name, labels, n_labels, sum);
    jet_metrics_sample_u64(out, count_name, labels, n_labels, cum);
}

/* --- the page ----------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *help;
    gsize offset;              /* of the counter in JetStats */
} Counter;

#define C(n, f, h) { "jethost_" n "_total", h, G_STRUCT_OFFSET(JetStats, f) }
static const Counter counters[] = {
    C("messages_handled", messages, "Deliveries handed to the plugin."),
    C("messages_acked", acked, "Messages acked after their handler."),
    C("messages_retried", retried, "Failures released with a delayed NAK (a retry rung)."),
    C("messages_postponed", postponed, "Messages the plugin postponed (a delayed NAK, not a failure)."),
    C("messages_released", released, "Messages released unhandled (a drain, a hung worker)."),
    C("messages_stranded", stranded, "Messages the host could neither capture nor settle; they need an operator."),
    C("messages_uncertain", uncertain, "Captures whose ack was not confirmed: the record may exist twice."),
    C("pulls", pulls, "Pull requests issued."),
    C("early_pulls", early_pulls, "Pulls issued at the threshold while another was outstanding."),
    C("pulls_with_ack", pulls_with_ack, "Pulls sent in one message with the ack before them (+NXT)."),
    C("missed_heartbeats", missed_heartbeats, "Pulls ended because the server went quiet."),
    C("consumer_recreations", resubscribes, "Times the consumer was found gone and re-created (or waited for)."),
    C("crash_strikes", strikes, "Suspects that found the isolation marker set (a handler ended the host)."),
    C("handlers_hung", hung_handlers, "Handlers that passed handler_timeout."),
    C("completions_refused", completions_refused,
      "msg_complete() calls refused: the delivery was no longer pending (max_in_flight)."),
    C("pending_hung", pending_hung,
      "Pending deliveries past handler_timeout: their lease stopped, settled when completed (max_in_flight)."),
    C("batch_set_aside", set_aside,
      "Ordered and KV batch members handed again because one before them waited in place (a retry, a postpone)."),
};
#undef C

static guint64 stat_at(const JetStats *s, gsize offset)
{
    return *(const guint64 *)((const char *)s + offset);
}

static void histogram_family(GString *out, const char *name, const char *help, const JetMetricsBinding *b, gsize n,
                             gboolean latency)
{
    double bounds[JET_STATS_BOUNDS];
    for (gsize i = 0; i < JET_STATS_BOUNDS; i++)
        bounds[i] = (double)jet_stats_bounds_us[i] / 1e6;
    jet_metrics_family(out, name, "histogram", help);
    for (gsize i = 0; i < n; i++) {
        JetMetricLabel l = { "binding", b[i].name };
        const JetStats *s = &b[i].stats;
        jet_metrics_histogram(out, name, &l, 1, bounds, JET_STATS_BOUNDS, latency ? s->latency_us : s->handler_us,
                              (double)(latency ? s->latency_us_sum : s->handler_us_sum) / 1e6);
    }
}

/* The plugins' metrics: one family per name, jethost_plugin_<name> (a
 * counter's with _total, as the format wants), a series per binding that
 * declares it, labelled with the binding.  The first metric to make a
 * family gives it its type and help; another that would make the same
 * family with the other type is left out of it (one family has one type),
 * so two plugins cannot make the page invalid. */
static char *plugin_family(const JetMetricsPlugin *p)
{
    gboolean total = p->counter && !g_str_has_suffix(p->name, "_total");
    return g_strconcat("jethost_plugin_", p->name, total ? "_total" : "", NULL);
}

static void plugin_families(GString *out, const JetMetricsBinding *b, gsize n)
{
    /* Keyed by the family's name, not the declared one: a counter `x` and
     * a gauge `x_total` would both be jethost_plugin_x_total. */
    g_autoptr(GHashTable) done = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (gsize i = 0; i < n; i++) {
        for (gsize k = 0; k < b[i].n_plugin; k++) {
            const JetMetricsPlugin *first = &b[i].plugin[k];
            char *family = plugin_family(first);
            if (!g_hash_table_add(done, family))
                continue;
            g_autofree char *help = g_strdup_printf("The plugin's: %s", first->help != NULL ? first->help : "");
            jet_metrics_family(out, family, first->counter ? "counter" : "gauge", help);
            for (gsize j = i; j < n; j++) {
                for (gsize q = 0; q < b[j].n_plugin; q++) {
                    const JetMetricsPlugin *p = &b[j].plugin[q];
                    g_autofree char *its = plugin_family(p);
                    if (strcmp(its, family) != 0 || p->counter != first->counter)
                        continue;
                    JetMetricLabel l = { "binding", b[j].name };
                    g_string_append(out, family);
                    append_labels(out, &l, 1, NULL);
                    g_string_append_printf(out, " %" G_GINT64_FORMAT "\n", p->value);
                }
            }
        }
    }
}

void jet_metrics_render(GString *out, const JetMetricsHost *host, const JetMetricsBinding *b, gsize n)
{
    jet_metrics_family(out, "jethost_reconnects_total", "counter", "Reconnects of the host's NATS connection.");
    jet_metrics_sample_u64(out, "jethost_reconnects_total", NULL, 0, host->reconnects);

    for (gsize c = 0; c < G_N_ELEMENTS(counters); c++) {
        jet_metrics_family(out, counters[c].name, "counter", counters[c].help);
        for (gsize i = 0; i < n; i++) {
            JetMetricLabel l = { "binding", b[i].name };
            jet_metrics_sample_u64(out, counters[c].name, &l, 1, stat_at(&b[i].stats, counters[c].offset));
        }
    }

    /* Every cause, zeros included: an alert on a rate needs the series to
     * exist before the first capture. */
    jet_metrics_family(out, "jethost_messages_dead_lettered_total", "counter",
                       "Messages captured to the dead-letter stream and acked, by cause.");
    for (gsize i = 0; i < n; i++) {
        for (int cause = JET_CAUSE_REJECTED; cause <= JET_CAUSE_LAST; cause++) {
            JetMetricLabel l[2] = { { "binding", b[i].name }, { "cause", jet_cause_name((JetCaptureCause)cause) } };
            guint64 v = b[i].stats.dead_lettered_cause[cause];
            if (cause == JET_CAUSE_MAX_DELIVERIES)
                v += b[i].max_deliveries_captured;
            jet_metrics_sample_u64(out, "jethost_messages_dead_lettered_total", l, 2, v);
        }
    }

    struct {
        const char *name, *help;
    } gauges[] = {
        { "jethost_binding_ready", "1 when the binding is ready (/readyz), else 0." },
        { "jethost_binding_standby", "1 while an exclusive binding stands by for its claim." },
        { "jethost_messages_in_handlers", "Messages in a handler now." },
        { "jethost_messages_buffered", "Messages pulled and held, waiting for a handler." },
        { "jethost_ack_floor", "The consumer's ack floor (stream sequence) as last read." },
    };
    for (gsize g = 0; g < G_N_ELEMENTS(gauges); g++) {
        jet_metrics_family(out, gauges[g].name, "gauge", gauges[g].help);
        for (gsize i = 0; i < n; i++) {
            JetMetricLabel l = { "binding", b[i].name };
            guint64 v = 0;
            switch (g) {
            case 0: v = jet_metrics_not_ready(&b[i]) == NULL; break;
            case 1: v = b[i].standby; break;
            case 2: v = b[i].in_handlers; break;
            case 3: v = b[i].buffered; break;
            default: v = b[i].stats.observed_floor; break;
            }
            jet_metrics_sample_u64(out, gauges[g].name, &l, 1, v);
        }
    }

    /* Only what was measured: a binding without floor_age or whose
     * consumer was never read has no such series (absent, not zero). */
    jet_metrics_family(out, "jethost_floor_stalled", "gauge", "1 while the ack floor has stalled past floor_age.");
    for (gsize i = 0; i < n; i++)
        if (b[i].has_floor_monitor) {
            JetMetricLabel l = { "binding", b[i].name };
            jet_metrics_sample_u64(out, "jethost_floor_stalled", &l, 1, b[i].floor_stalled);
        }
    jet_metrics_family(out, "jethost_floor_stall_seconds", "gauge",
                       "How long the ack floor has not moved while messages wait (0: moving).");
    for (gsize i = 0; i < n; i++)
        if (b[i].has_floor_monitor) {
            JetMetricLabel l = { "binding", b[i].name };
            jet_metrics_sample_double(out, "jethost_floor_stall_seconds", &l, 1, b[i].floor_stall_seconds);
        }
    jet_metrics_family(out, "jethost_consumer_num_pending", "gauge",
                       "Messages the consumer has yet to deliver, as last read (every 2 s).");
    for (gsize i = 0; i < n; i++)
        if (b[i].num_pending >= 0) {
            JetMetricLabel l = { "binding", b[i].name };
            jet_metrics_sample_u64(out, "jethost_consumer_num_pending", &l, 1, (guint64)b[i].num_pending);
        }
    jet_metrics_family(out, "jethost_consumer_num_ack_pending", "gauge",
                       "Messages delivered and not yet acked, fleet-wide, as last read (every 2 s).");
    for (gsize i = 0; i < n; i++)
        if (b[i].num_ack_pending >= 0) {
            JetMetricLabel l = { "binding", b[i].name };
            jet_metrics_sample_u64(out, "jethost_consumer_num_ack_pending", &l, 1, (guint64)b[i].num_ack_pending);
        }

    histogram_family(out, "jethost_handler_seconds", "Time in the plugin's handle().", b, n, FALSE);
    histogram_family(out, "jethost_publish_to_handle_seconds",
                     "From the message's stream timestamp to its handler's start.", b, n, TRUE);
    plugin_families(out, b, n);
}

void jet_metrics_binding_clear(gpointer binding)
{
    JetMetricsBinding *b = binding;
    for (gsize i = 0; i < b->n_plugin; i++)
        g_free(b->plugin[i].help);
    g_clear_pointer(&b->plugin, g_free);
    b->n_plugin = 0;
}

const char *jet_metrics_not_ready(const JetMetricsBinding *b)
{
    if (b->standby)
        return NULL;
    if (!b->started)
        return "not started yet";
    if (b->recovering)
        return "consumer being re-created";
    if (b->hung_workers > 0)
        return "a handler hung past handler_timeout";
    if (b->idle_holding)
        return "holds messages and has handled none for floor_age";
    if (b->floor_stalled)
        return "ack floor stalled past floor_age";
    return NULL;
}
