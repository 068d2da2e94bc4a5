#include "instance.h"
#include "duration.h"
#include "errors.h"
#include "jet_msg.h"
#include "log.h"
#include "plugin_guard.h"

#include <string.h>

struct jet_ctx {
    JetPlugin *plugin;
    const jet_plugin *desc;
    char *binding;
    GHashTable *values;        /* declared name -> value (config or default) */
    void *state;
    gboolean started;
    JetClockFn clock;
    gpointer clock_data;
    gint stopping;             /* atomic */
    int kind;                  /* a jet_binding_kind */
    gboolean in_init;          /* metrics are declared only now */
    /* JET_METRICS_MAX of them, allocated at the first declaration (5.6 KiB
     * a binding otherwise, for the many plugins that declare none); never
     * moved, so a reader needs no lock. */
    JetMetric *metrics;
    gint n_metrics;            /* atomic: declared, in order; never shrinks; set after metrics */
    gint fork_noted;           /* atomic: the plugin guard logged a fork at warning */
};

static const char *type_name(jet_option_type t)
{
    switch (t) {
    case JET_OPT_STRING: return "string";
    case JET_OPT_INT: return "int";
    case JET_OPT_BOOL: return "bool";
    case JET_OPT_DURATION: return "duration";
    }
    return "unknown";
}

static const jet_option *find_option(const jet_plugin *desc, const char *name)
{
    for (const jet_option *o = desc->options; o != NULL && o->name != NULL; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

gboolean jet_option_value_check(const jet_option *opt, const char *value, GError **error)
{
    switch (opt->type) {
    case JET_OPT_STRING:
        return TRUE;
    case JET_OPT_INT: {
        gint64 v;
        if (!g_ascii_string_to_signed(value, 10, G_MININT64, G_MAXINT64, &v, NULL)) {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "'%s' is not an integer", value);
            return FALSE;
        }
        return TRUE;
    }
    case JET_OPT_BOOL:
        if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0) {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "'%s' is not a bool (true or false)", value);
            return FALSE;
        }
        return TRUE;
    case JET_OPT_DURATION: {
        guint64 ms;
        return jet_duration_parse_ms(value, &ms, error);
    }
    }
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "unknown option type");
    return FALSE;
}

static char *accepted_list(const jet_plugin *desc)
{
    GString *s = g_string_new(NULL);
    for (const jet_option *o = desc->options; o != NULL && o->name != NULL; o++)
        g_string_append_printf(s, "%s%s", s->len ? ", " : "", o->name);
    if (s->len == 0)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

static gint64 wall_clock(gpointer data)
{
    (void)data;
    return g_get_real_time() * 1000;
}

JetInstance *jet_instance_new(JetPlugin *plugin, const char *binding,
                              GHashTable *options, GError **error)
{
    const jet_plugin *desc = jet_plugin_descriptor(plugin);
    g_autoptr(GHashTable) values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

    if (options != NULL) {
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, options);
        while (g_hash_table_iter_next(&it, &k, &v)) {
            const jet_option *opt = find_option(desc, k);
            if (opt == NULL) {
                g_autofree char *list = accepted_list(desc);
                g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                            "option.%s: plugin %s (%s) declares no such option (it accepts: %s)",
                            (const char *)k, desc->name, jet_plugin_path(plugin), list);
                return NULL;
            }
            g_autoptr(GError) local = NULL;
            if (!jet_option_value_check(opt, v, &local)) {
                g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                            "option.%s: %s; plugin %s declares it as %s",
                            (const char *)k, local->message, desc->name, type_name(opt->type));
                return NULL;
            }
            g_hash_table_insert(values, g_strdup(k), g_strdup(v));
        }
    }
    for (const jet_option *o = desc->options; o != NULL && o->name != NULL; o++) {
        if (g_hash_table_contains(values, o->name))
            continue;
        if (o->flags & JET_OPTION_REQUIRED) {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "option.%s: plugin %s requires it, not empty (%s)", o->name, desc->name,
                        o->help != NULL ? o->help : "no help given");
            return NULL;
        }
        if (o->default_value != NULL) {
            g_autoptr(GError) local = NULL;
            if (!jet_option_value_check(o, o->default_value, &local)) {
                g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                            "plugin %s: the default of its option %s is invalid: %s",
                            jet_plugin_path(plugin), o->name, local->message);
                return NULL;
            }
            g_hash_table_insert(values, g_strdup(o->name), g_strdup(o->default_value));
        }
    }

    JetInstance *inst = g_new0(JetInstance, 1);
    inst->plugin = plugin;
    inst->desc = desc;
    inst->binding = g_strdup(binding);
    inst->values = g_steal_pointer(&values);
    inst->clock = wall_clock;
    return inst;
}

gboolean jet_instance_validate(JetInstance *inst, GError **error)
{
    if (inst->desc->validate == NULL)
        return TRUE;
    char err[512] = "";
    jet_guard_enter(inst->binding, inst->desc->name, 0, &inst->fork_noted);
    int rc = inst->desc->validate(inst, err, sizeof err);
    jet_guard_leave();
    if (rc == 0)
        return TRUE;
    err[sizeof err - 1] = '\0';
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "plugin %s (%s) refuses its options: %s", inst->desc->name,
                jet_plugin_path(inst->plugin), err[0] ? err : "(the plugin gave no reason)");
    return FALSE;
}

gboolean jet_instance_start(JetInstance *inst, GError **error)
{
    char err[512] = "";
    void *state = NULL;
    inst->in_init = TRUE;
    int rc = inst->desc->init(inst, &state, err, sizeof err);
    inst->in_init = FALSE;
    if (rc != 0) {
        err[sizeof err - 1] = '\0';
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: init failed: %s",
                    jet_plugin_path(inst->plugin), err[0] ? err : "(the plugin gave no reason)");
        return FALSE;
    }
    inst->state = state;
    inst->started = TRUE;
    return TRUE;
}

/* --- plugin metrics (docs/plugin-metrics.md) --- */

static gboolean metric_name_valid(const char *name)
{
    if (name == NULL || name[0] == '\0' || strlen(name) > JET_METRIC_NAME_MAX || g_ascii_isdigit(name[0]))
        return FALSE;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || g_ascii_isdigit(*p) || *p == '_'))
            return FALSE;
    return TRUE;
}

int jet__ctx_metric_declare(jet_ctx *c, const char *name, int type, const char *help)
{
    if (c == NULL || !metric_name_valid(name) || (type != JET_METRIC_COUNTER && type != JET_METRIC_GAUGE))
        return JET_EINVAL;
    if (!c->in_init)
        return JET_ESTATE;
    gint n = g_atomic_int_get(&c->n_metrics);
    for (gint i = 0; i < n; i++)
        if (strcmp(c->metrics[i].name, name) == 0)
            return JET_EINVAL;
    if (n >= JET_METRICS_MAX)
        return JET_ELIMIT;
    if (c->metrics == NULL)
        c->metrics = g_new0(JetMetric, JET_METRICS_MAX);
    JetMetric *mt = &c->metrics[n];
    g_strlcpy(mt->name, name, sizeof mt->name);
    mt->type = type;
    /* One line, bounded: it goes into exposition formats. */
    g_autofree char *h = g_strndup(help != NULL ? help : "", 200);
    g_strdelimit(h, "\r\n\t", ' ');
    mt->help = g_steal_pointer(&h);
    mt->value = 0;
    g_atomic_int_set(&c->n_metrics, n + 1);
    return n;
}

int jet__ctx_metric_update(jet_ctx *c, int id, int type, gint64 value)
{
    if (c == NULL || id < 0 || id >= g_atomic_int_get(&c->n_metrics) || c->metrics[id].type != type)
        return JET_EINVAL;
    if (type == JET_METRIC_COUNTER)
        __atomic_add_fetch(&c->metrics[id].value, value, __ATOMIC_RELAXED);
    else
        __atomic_store_n(&c->metrics[id].value, value, __ATOMIC_RELAXED);
    return JET_OK;
}

guint jet_instance_metric_count(const JetInstance *inst)
{
    return (guint)g_atomic_int_get(&((JetInstance *)inst)->n_metrics);
}

const JetMetric *jet_instance_metric(const JetInstance *inst, guint i, gint64 *value)
{
    if (i >= jet_instance_metric_count(inst))
        return NULL;
    if (value != NULL)
        *value = __atomic_load_n(&inst->metrics[i].value, __ATOMIC_RELAXED);
    return &inst->metrics[i];
}

void jet_instance_free(JetInstance *inst)
{
    if (inst == NULL)
        return;
    if (inst->started && inst->desc->fini != NULL)
        inst->desc->fini(inst->state);
    g_hash_table_unref(inst->values);
    for (gint i = 0; i < inst->n_metrics; i++)
        g_free(inst->metrics[i].help);
    g_free(inst->metrics);
    g_free(inst->binding);
    g_free(inst);
}

void jet_instance_set_clock(JetInstance *inst, JetClockFn fn, gpointer data)
{
    inst->clock = fn != NULL ? fn : wall_clock;
    inst->clock_data = data;
}

void jet_instance_set_stopping(JetInstance *inst)
{
    g_atomic_int_set(&inst->stopping, 1);
}

void jet_instance_set_running(JetInstance *inst)
{
    g_atomic_int_set(&inst->stopping, 0);
}

int jet_instance_handle(JetInstance *inst, jet_msg *m)
{
    jet_guard_enter(inst->binding, inst->desc->name, jet_msg_lent_seq(m), &inst->fork_noted);
    int verdict = inst->desc->handle(inst->state, m);
    /* A child the plugin forked does not come back from this. */
    jet_guard_leave();
    return verdict;
}

int jet_instance_handle_batch(JetInstance *inst, jet_msg *const *msgs, size_t n, int *verdicts)
{
    jet_guard_enter(inst->binding, inst->desc->name, jet_msg_lent_seq(msgs[0]), &inst->fork_noted);
    int rc = inst->desc->handle_batch(inst->state, msgs, n, verdicts);
    jet_guard_leave();
    return rc;
}

void jet_instance_kv_initial_done(JetInstance *inst)
{
    if (!inst->started || inst->desc->kv_initial_done == NULL)
        return;
    jet_guard_enter(inst->binding, inst->desc->name, 0, &inst->fork_noted);
    inst->desc->kv_initial_done(inst->state);
    jet_guard_leave();
}

void jet_instance_settled(JetInstance *inst, const jet_settled *s)
{
    if (!inst->started || inst->desc->settled == NULL)
        return;
    jet_guard_enter(inst->binding, inst->desc->name, s->stream_seq, &inst->fork_noted);
    inst->desc->settled(inst->state, s);
    jet_guard_leave();
}

void jet_instance_set_kind(JetInstance *inst, int kind) { inst->kind = kind; }

const jet_plugin *jet_instance_descriptor(const JetInstance *inst) { return inst->desc; }
JetPlugin *jet_instance_plugin(const JetInstance *inst) { return inst->plugin; }
const char *jet_instance_binding(const JetInstance *inst) { return inst->binding; }
gint64 jet_instance_now_ns(const JetInstance *inst) { return inst->clock(inst->clock_data); }

/* --- host functions over jet_ctx, used by host_api.c --- */

const char *jet__ctx_option(const jet_ctx *c, const char *name)
{
    if (c == NULL || name == NULL)
        return NULL;
    return g_hash_table_lookup(c->values, name);
}

int jet__ctx_option_typed(const jet_ctx *c, const char *name, jet_option_type type,
                          const char **value)
{
    if (c == NULL || name == NULL)
        return JET_EINVAL;
    const jet_option *o = find_option(c->desc, name);
    if (o == NULL || o->type != type)
        return JET_EINVAL;
    *value = g_hash_table_lookup(c->values, name);
    return *value != NULL ? JET_OK : JET_ENOTFOUND;
}

int jet__ctx_kind(const jet_ctx *c)
{
    return c != NULL ? c->kind : JET_EINVAL;
}

int jet__ctx_stopping(const jet_ctx *c)
{
    return c != NULL && g_atomic_int_get(&((jet_ctx *)c)->stopping);
}
