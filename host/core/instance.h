/* A plugin instance: one binding's jet_ctx.  Validates the binding's plugin
 * options against the plugin's declared table, runs init() and fini(), and
 * carries what the host functions read (options, clock, stop flag, logger). */
#ifndef JET_INSTANCE_H
#define JET_INSTANCE_H

#include <glib.h>
#include "plugin_loader.h"

typedef struct jet_ctx JetInstance;

/* A metric a plugin declared (plugin.h, ctx_metric_declare). */
#define JET_METRICS_MAX 64
#define JET_METRIC_NAME_MAX 64
typedef struct {
    char name[JET_METRIC_NAME_MAX + 1];
    int type;                  /* jet_metric_type */
    char *help;                /* one line, at most 200 bytes */
    gint64 value;              /* atomic */
} JetMetric;

typedef gint64 (*JetClockFn)(gpointer data);

/* Validates options (name -> value as written; may be NULL) against the
 * plugin's table: an undeclared option, a value of the wrong type or a
 * missing required one is an error naming the option.  Does not run init(). */
JetInstance *jet_instance_new(JetPlugin *plugin, const char *binding,
                              GHashTable *options, GError **error);

/* Runs the plugin's validate() (1.2), when it has one: the options
 * checked by the plugin's own rules, with no side effect.  A refusal is a
 * config error (JET_ERROR_INVALID) quoting the plugin's message.  Call it
 * after jet_instance_set_kind(), before jet_instance_start(). */
gboolean jet_instance_validate(JetInstance *inst, GError **error);

/* Runs the plugin's init(); on failure the error quotes the plugin's message. */
gboolean jet_instance_start(JetInstance *inst, GError **error);

/* Runs fini() if init() succeeded, and frees the instance. */
void jet_instance_free(JetInstance *inst);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetInstance, jet_instance_free)

/* Replaces the wall clock (the mock host drives time). */
void jet_instance_set_clock(JetInstance *inst, JetClockFn fn, gpointer data);
/* Marks the host as stopping; plugins read it with ctx_stopping(). */
void jet_instance_set_stopping(JetInstance *inst);
/* Clears it: an exclusive binding's engine starts again on the same
 * instance when the host wins the claim back (docs/exclusive.md). */
void jet_instance_set_running(JetInstance *inst);

/* The binding's kind, a jet_binding_kind (ctx_kind(), msg_kind());
 * JET_BINDING_DURABLE until set.  Set it before jet_instance_start(). */
void jet_instance_set_kind(JetInstance *inst, int kind);

/* Tells the plugin a KV watch caught up (the descriptor's kv_initial_done,
 * when it has one), inside the plugin guard like handle().  Call it on the
 * thread that calls handle(), between two calls. */
void jet_instance_kv_initial_done(JetInstance *inst);

/* Tells the plugin how a delivery ended (the descriptor's settled(),
 * 1.2, when it has one and init() succeeded), inside the plugin guard like
 * handle(), on the thread that handled it. */
void jet_instance_settled(JetInstance *inst, const jet_settled *s);

/* The metrics the plugin declared, in order; value (may be NULL) gets the
 * current value.  NULL past the last. */
guint jet_instance_metric_count(const JetInstance *inst);
const JetMetric *jet_instance_metric(const JetInstance *inst, guint i, gint64 *value);

/* Calls handle() and returns what it returned, unchecked; inside the plugin
 * guard (plugin_guard.h) once the daemon has installed it. */
int jet_instance_handle(JetInstance *inst, jet_msg *m);
/* Calls handle_batch() (which the descriptor must have) on msgs[0..n-1],
 * n >= 1, and returns what it returned; verdicts[i] as the plugin left
 * them, unchecked.  Inside the plugin guard as jet_instance_handle. */
int jet_instance_handle_batch(JetInstance *inst, jet_msg *const *msgs, size_t n, int *verdicts);

const jet_plugin *jet_instance_descriptor(const JetInstance *inst);
JetPlugin *jet_instance_plugin(const JetInstance *inst);
const char *jet_instance_binding(const JetInstance *inst);
gint64 jet_instance_now_ns(const JetInstance *inst);

/* Checks one option value against its declared type; used by `jethost check`
 * as well.  Returns FALSE with a message naming the expected form. */
gboolean jet_option_value_check(const jet_option *opt, const char *value, GError **error);

/* For host_api.c: what the host functions read from a jet_ctx. */
const char *jet__ctx_option(const jet_ctx *c, const char *name);
int jet__ctx_option_typed(const jet_ctx *c, const char *name, jet_option_type type,
                          const char **value);
int jet__ctx_stopping(const jet_ctx *c);
int jet__ctx_kind(const jet_ctx *c);
int jet__ctx_metric_declare(jet_ctx *c, const char *name, int type, const char *help);
int jet__ctx_metric_update(jet_ctx *c, int id, int type, gint64 value);

#endif
