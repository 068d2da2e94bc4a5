/* The Prometheus text exposition (format 0.0.4) of the host's counters, and
 * the readiness decision the probes report (docs/operations.md).  Pure: the
 * HTTP side (host/io/ops_http) gathers the figures and serves the text. */
#ifndef JET_METRICS_TEXT_H
#define JET_METRICS_TEXT_H

#include <glib.h>
#include "stats.h"

typedef struct {
    const char *name;
    const char *value;
} JetMetricLabel;

/* A label value as the format wants it: \\, \" and \n escaped. */
void jet_metrics_escape_label(GString *out, const char *value);
/* HELP text: \\ and \n escaped (a quote is literal there). */
void jet_metrics_escape_help(GString *out, const char *text);
/* The # HELP and # TYPE lines that open a family (type: counter, gauge,
 * histogram). */
void jet_metrics_family(GString *out, const char *name, const char *type, const char *help);
/* One sample line: name{labels} value. */
void jet_metrics_sample_u64(GString *out, const char *name, const JetMetricLabel *labels, gsize n_labels,
                            guint64 value);
void jet_metrics_sample_double(GString *out, const char *name, const JetMetricLabel *labels, gsize n_labels,
                               double value);
/* A histogram's series: name_bucket{labels,le} (cumulative, +Inf last),
 * name_sum and name_count.  counts: n_bounds + 1 non-cumulative slots,
 * the last for values above every bound; bounds and sum in the unit of
 * the metric. */
void jet_metrics_histogram(GString *out, const char *name, const JetMetricLabel *labels, gsize n_labels,
                           const double *bounds, gsize n_bounds, const guint64 *counts, double sum);

/* A metric a binding's plugin declared (docs/plugin-metrics.md), copied
 * when the page is collected, so that it outlives a reload. */
#define JET_METRICS_PLUGIN_NAME_MAX 64
typedef struct {
    char name[JET_METRICS_PLUGIN_NAME_MAX + 1];
    char *help;                        /* owned */
    gboolean counter;                  /* else a gauge */
    gint64 value;
} JetMetricsPlugin;

/* One binding as the endpoints see it. */
typedef struct {
    const char *name;
    JetStats stats;
    guint64 max_deliveries_captured;   /* captured from MAX_DELIVERIES advisories */
    /* Its state: an exclusive binding that does not hold the claim stands
     * by and has no engine, so none of what follows is known. */
    gboolean standby;
    gboolean started;
    gboolean recovering;               /* its consumer is gone: being re-created or waited for */
    guint hung_workers;
    guint in_handlers, buffered;
    gint64 num_pending, num_ack_pending;   /* -1: not read yet */
    gboolean has_floor_monitor;        /* floor_age is set */
    gboolean idle_holding;             /* holds messages and ended no handling for floor_age */
    gboolean floor_stalled;
    double floor_stall_seconds;
    JetMetricsPlugin *plugin;          /* owned (jet_metrics_binding_clear): its plugin's metrics */
    gsize n_plugin;
} JetMetricsBinding;

/* Frees what a JetMetricsBinding owns (a GArray's clear function). */
void jet_metrics_binding_clear(gpointer binding);

typedef struct {
    guint64 reconnects;
} JetMetricsHost;

/* The whole /metrics page. */
void jet_metrics_render(GString *out, const JetMetricsHost *host, const JetMetricsBinding *b, gsize n);

/* Why a binding is not ready, or NULL when it is.  A standby is ready:
 * standing by is its job (docs/operations.md). */
const char *jet_metrics_not_ready(const JetMetricsBinding *b);

#endif
