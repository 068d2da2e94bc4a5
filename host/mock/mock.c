/* The mock host (include/jethost/mock.h): one plugin instance driven by a
 * test, settled by the daemon's own settlement sequence, with the strict
 * checks of host_strict.h switched on.
 *
 * What is the daemon's and used as is: the loader and its checks
 * (plugin_loader.c), option validation and init/fini (instance.c), the host
 * function table (host_api.c), the binding's keys, defaults and checks
 * (config.c), and the whole settlement (executor.c: the ledger steps, crash
 * attribution, the decision in settle.c, capture-then-ack and the
 * dead-letter record of dlq_record.c), run on a transport in memory
 * (mock_deliver.c).  What is the mock's: the clock (mock_clock.c), the
 * message builder (mock_msg.c), recording and the strict rules the daemon
 * cannot check (mock_record.c, and the ctx observer here). */
#include "mock_private.h"
#include "errors.h"
#include "host_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the ctx observer: every mock's jet_ctx, process-wide --------------- */

static GMutex registry_lock;
static GHashTable *registry;   /* jet_ctx* -> jet_mock* */

static jet_mock *mock_of_ctx(const jet_ctx *c)
{
    jet_mock *m = NULL;
    g_mutex_lock(&registry_lock);
    if (registry != NULL && c != NULL)
        m = g_hash_table_lookup(registry, c);
    g_mutex_unlock(&registry_lock);
    return m;
}

static const jet_option *declared(const jet_plugin *desc, const char *name)
{
    for (const jet_option *o = desc->options; o != NULL && o->name != NULL; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

static char *declared_list(const jet_plugin *desc)
{
    GString *s = g_string_new(NULL);
    for (const jet_option *o = desc->options; o != NULL && o->name != NULL; o++)
        g_string_append_printf(s, "%s%s", s->len ? ", " : "", o->name);
    if (s->len == 0)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

static const char *opt_type_name(jet_option_type t)
{
    switch (t) {
    case JET_OPT_STRING: return "string";
    case JET_OPT_INT: return "int";
    case JET_OPT_BOOL: return "bool";
    case JET_OPT_DURATION: return "duration";
    }
    return "unknown";
}

static void observe_ctx_call(const jet_ctx *c, const char *fn, const char *arg)
{
    jet_mock *m = mock_of_ctx(c);
    if (m == NULL)
        return;
    jet__mock_record_call(m, fn, arg);
    jet__mock_check_thread(m, fn);
    if (arg == NULL || !g_str_has_prefix(fn, "ctx_option"))
        return;
    const jet_option *o = declared(m->desc, arg);
    if (o == NULL) {
        g_autofree char *list = declared_list(m->desc);
        jet__mock_violation(m, RULE_OPT_UNDECLARED,
                  "%s(\"%s\"): plugin %s declares no such option (it declares: %s); the "
                  "daemon would answer %s", fn, arg, m->desc->name, list,
                  strcmp(fn, "ctx_option") == 0 ? "NULL" : "JET_EINVAL");
        return;
    }
    jet_option_type want = JET_OPT_STRING;
    if (strcmp(fn, "ctx_option_int") == 0)
        want = JET_OPT_INT;
    else if (strcmp(fn, "ctx_option_bool") == 0)
        want = JET_OPT_BOOL;
    else if (strcmp(fn, "ctx_option_duration_ms") == 0)
        want = JET_OPT_DURATION;
    else
        return;   /* ctx_option reads any type as text */
    if (o->type != want)
        jet__mock_violation(m, RULE_OPT_TYPE,
                  "%s(\"%s\"): the option is declared as %s, not %s; the daemon would answer "
                  "JET_EINVAL", fn, arg, opt_type_name(o->type), opt_type_name(want));
}

static gboolean observe_ctx_log(const jet_ctx *c, jet_log_level level, const char *line)
{
    jet_mock *m = mock_of_ctx(c);
    if (m == NULL)
        return TRUE;
    LogLine *l = g_new0(LogLine, 1);
    l->level = level;
    l->line = g_strdup(line);
    g_mutex_lock(&m->lock);
    g_ptr_array_add(m->log, l);
    g_mutex_unlock(&m->lock);
    return m->log_echo;
}

static const JetCtxObserver observer = {
    .call = observe_ctx_call,
    .log = observe_ctx_log,
};

static void registry_add(jet_ctx *c, jet_mock *m)
{
    g_mutex_lock(&registry_lock);
    if (registry == NULL)
        registry = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_hash_table_insert(registry, c, m);
    jet__host_api_set_ctx_observer(&observer);
    g_mutex_unlock(&registry_lock);
}

static void registry_remove(jet_ctx *c)
{
    g_mutex_lock(&registry_lock);
    if (registry != NULL) {
        g_hash_table_remove(registry, c);
        if (g_hash_table_size(registry) == 0)
            jet__host_api_set_ctx_observer(NULL);
    }
    g_mutex_unlock(&registry_lock);
}

/* --- policy ---------------------------------------------------------------- */

/* The binding keys a test may set: the settlement's.  Their syntax, checks
 * and defaults are the config's (config.c's key table), so the mock cannot
 * drift from what a binding in a file gets. */
static const char *const policy_keys[] = {
    "rungs", "max_attempts", "postpone_horizon", "max_postpone_delay", "max_deliver", "capture_reserve",
    "crash_limit", "max_hops", "kind", "bucket", "key", "batch", "batch_max", "max_in_flight", "handler_timeout",
    NULL,
};

int jet_mock_set_policy(jet_mock *m, const char *key, const char *value)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (key == NULL || value == NULL)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_set_policy: key and value must not be NULL");
    if (m->state != MOCK_NEW)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_set_policy: the mock has already started");
    if (!g_strv_contains(policy_keys, key)) {
        g_autofree char *known = g_strjoinv(", ", (char **)policy_keys);
        return jet__mock_fail(m, JET_MOCK_EINVAL, "policy: unknown key '%s' (known: %s)", key, known);
    }
    g_autoptr(GError) err = NULL;
    if (!jet_config_binding_value_check("jet_mock_set_policy", m->binding, key, value, &err))
        return jet__mock_fail(m, JET_MOCK_EINVAL, "%s", err->message);
    g_hash_table_insert(m->settings, g_strdup(key), g_strdup(value));
    return JET_MOCK_OK;
}

/* The binding as a config file would give it: the policy keys set, the
 * names, and every other key at its default.  Checks across keys (e.g.
 * max_deliver against capture_reserve) happen here. */
static int build_binding(jet_mock *m)
{
    g_autoptr(GHashTable) pairs = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, m->settings);
    while (g_hash_table_iter_next(&it, &k, &v))
        g_hash_table_insert(pairs, k, v);
    g_hash_table_insert(pairs, "plugin", (gpointer)m->desc->name);
    /* What each kind names as the daemon's config would: a KV watch its
     * bucket (the stream follows), an ordered binding no consumer. */
    const char *kind = g_hash_table_lookup(m->settings, "kind");
    gboolean kv = g_strcmp0(kind, "kv") == 0, ordered = kv || g_strcmp0(kind, "ordered") == 0;
    if (!kv)
        g_hash_table_insert(pairs, "stream", m->stream);
    if (!ordered)
        g_hash_table_insert(pairs, "consumer", m->consumer);
    g_autoptr(GError) err = NULL;
    m->config = jet_config_binding_from_pairs("jet_mock_set_policy", m->binding, pairs, &err);
    if (m->config == NULL)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "%s", err->message);
    if (m->config->batch_max > 1 && m->desc->handle_batch == NULL) {
        g_clear_pointer(&m->config, jet_config_binding_free);
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_set_policy: batch_max: messages at once need a plugin "
                              "with handle_batch(), and %s has none", m->desc->name);
    }
    jet_binding_settle_policy(m->config, 0, &m->policy);
    if (JET_KIND_IS_ORDERED(m->config->kind)) {
        /* The daemon's ordered consumers change names; its deliveries
         * carry the binding's name instead (docs/ordered.md). */
        g_free(m->stream);
        m->stream = g_strdup(m->config->stream);
        g_free(m->consumer);
        m->consumer = g_strdup(m->binding);
    }
    return JET_MOCK_OK;
}

/* --- life cycle ------------------------------------------------------------ */

static void copy_err(char *err, size_t err_len, const char *text)
{
    if (err != NULL && err_len > 0)
        g_strlcpy(err, text, err_len);
}

static jet_mock *mock_new(JetPlugin *p)
{
    jet_mock *m = g_new0(jet_mock, 1);
    m->plugin = p;
    m->desc = jet_plugin_descriptor(p);
    m->thread_safe = (m->desc->flags & JET_PLUGIN_THREAD_SAFE) != 0;
    m->options = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    m->binding = g_strdup("mock");
    m->stream = g_strdup("MOCK");
    m->consumer = g_strdup("mock");
    m->abort_on_violation = TRUE;
    m->owner = g_thread_self();
    g_mutex_init(&m->lock);
    m->clock_ns = DEFAULT_CLOCK_NS;
    m->violations = g_ptr_array_new_with_free_func(jet__mock_violation_free);
    m->log = g_ptr_array_new_with_free_func(NULL);
    m->calls = g_ptr_array_new_with_free_func(g_free);
    m->lent = g_ptr_array_new_with_free_func(jet__mock_lent_free);
    m->pending = g_ptr_array_new();
    m->pending_done = g_ptr_array_new_with_free_func(jet__mock_pending_free);
    g_queue_init(&m->completed);
    m->dlq_strings = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
    m->dlq_headers = g_ptr_array_new_with_free_func(g_free);
    m->pub_strings = g_ptr_array_new_with_free_func(g_free);
    m->pub_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    m->publishes = g_array_new(FALSE, TRUE, sizeof(jet_mock_publish));
    m->pub_headers = g_array_new(FALSE, TRUE, sizeof(jet_mock_header));
    m->settings = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return m;
}

jet_mock *jet_mock_new_from_path(const char *so_path, char *err, size_t err_len)
{
    if (so_path == NULL) {
        copy_err(err, err_len, "jet_mock_new_from_path: no path");
        return NULL;
    }
    g_autoptr(GError) error = NULL;
    g_autofree char *abs = g_canonicalize_filename(so_path, NULL);
    JetPlugin *p = jet_plugin_load(abs, NULL, NULL, &error);
    if (p == NULL) {
        copy_err(err, err_len, error->message);
        return NULL;
    }
    return mock_new(p);
}

jet_mock *jet_mock_new_static(jet_plugin_entry_fn entry, char *err, size_t err_len)
{
    if (entry == NULL) {
        copy_err(err, err_len, "jet_mock_new_static: no entry function");
        return NULL;
    }
    g_autoptr(GError) error = NULL;
    JetPlugin *p = jet_plugin_from_entry(entry, &error);
    if (p == NULL) {
        copy_err(err, err_len, error->message);
        return NULL;
    }
    return mock_new(p);
}

int jet_mock_set_option(jet_mock *m, const char *name, const char *value)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (name == NULL || value == NULL)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_set_option: name and value must not be NULL");
    if (m->state != MOCK_NEW)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_set_option: the mock has already started");
    const char *n = g_str_has_prefix(name, "option.") ? name + strlen("option.") : name;
    g_hash_table_insert(m->options, g_strdup(n), g_strdup(value));
    return JET_MOCK_OK;
}

int jet_mock_set_binding(jet_mock *m, const char *binding, const char *stream, const char *consumer)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (m->state != MOCK_NEW)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_set_binding: the mock has already started");
    if (binding != NULL) {
        g_free(m->binding);
        m->binding = g_strdup(binding);
    }
    if (stream != NULL) {
        g_free(m->stream);
        m->stream = g_strdup(stream);
    }
    if (consumer != NULL) {
        g_free(m->consumer);
        m->consumer = g_strdup(consumer);
    }
    return JET_MOCK_OK;
}

void jet_mock_set_abort_on_violation(jet_mock *m, int on)
{
    g_return_if_fail(m != NULL);
    m->abort_on_violation = on != 0;
}

void jet_mock_set_log_echo(jet_mock *m, int on)
{
    g_return_if_fail(m != NULL);
    m->log_echo = on != 0;
}

/* The daemon refuses these in jet_instance_new(); checking them here first
 * names the rule.  jet_instance_new() still runs and has the last word. */
static int check_options(jet_mock *m)
{
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, m->options);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        const jet_option *o = declared(m->desc, k);
        if (o == NULL) {
            g_autofree char *list = declared_list(m->desc);
            jet__mock_violation(m, RULE_OPT_UNDECLARED, "option.%s: plugin %s declares no such option "
                      "(it declares: %s)", (const char *)k, m->desc->name, list);
            return jet__mock_fail(m, JET_MOCK_EOPTION, "%s: option.%s: plugin %s declares no such option "
                        "(it declares: %s)", RULE_OPT_UNDECLARED, (const char *)k, m->desc->name, list);
        }
        g_autoptr(GError) err = NULL;
        if (!jet_option_value_check(o, v, &err)) {
            jet__mock_violation(m, RULE_OPT_TYPE, "option.%s: %s; plugin %s declares it as %s",
                      (const char *)k, err->message, m->desc->name, opt_type_name(o->type));
            return jet__mock_fail(m, JET_MOCK_EOPTION, "%s: option.%s: %s; plugin %s declares it as %s",
                        RULE_OPT_TYPE, (const char *)k, err->message, m->desc->name,
                        opt_type_name(o->type));
        }
    }
    for (const jet_option *o = m->desc->options; o != NULL && o->name != NULL; o++) {
        if ((o->flags & JET_OPTION_REQUIRED) && !g_hash_table_contains(m->options, o->name)) {
            jet__mock_violation(m, RULE_OPT_REQUIRED, "option.%s: plugin %s requires it (%s)", o->name,
                      m->desc->name, o->help != NULL ? o->help : "no help given");
            return jet__mock_fail(m, JET_MOCK_EOPTION, "%s: option.%s: plugin %s requires it",
                        RULE_OPT_REQUIRED, o->name, m->desc->name);
        }
    }
    return JET_MOCK_OK;
}

int jet_mock_start(jet_mock *m)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    m->fault = 0;   /* a fault armed before the start is spent by it */
    if (m->state != MOCK_NEW)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_start: the mock was already started");
    int rc = build_binding(m);
    if (rc != JET_MOCK_OK)
        return rc;
    rc = check_options(m);
    if (rc != JET_MOCK_OK) {
        m->state = MOCK_FAILED;
        return rc;
    }
    g_autoptr(GError) err = NULL;
    m->inst = jet_instance_new(m->plugin, m->binding, m->options, &err);
    if (m->inst == NULL) {
        m->state = MOCK_FAILED;
        return jet__mock_fail(m, JET_MOCK_EOPTION, "%s", err->message);
    }
    jet_instance_set_clock(m->inst, jet__mock_clock, m);
    jet_instance_set_kind(m->inst, (int)m->config->kind);
    m->executor = jet_executor_new(m->config, &m->policy, m->inst, MOCK_HOST_NAME, "mock",
                                   &jet__mock_transport, m);
    registry_add(m->inst, m);
    m->owner = g_thread_self();
    if (!jet_instance_validate(m->inst, &err)) {
        registry_remove(m->inst);
        g_clear_pointer(&m->inst, jet_instance_free);
        g_clear_pointer(&m->executor, jet_executor_free);
        m->state = MOCK_FAILED;
        return jet__mock_fail(m, JET_MOCK_EOPTION, "%s", err->message);
    }
    if (!jet_instance_start(m->inst, &err)) {
        registry_remove(m->inst);
        g_clear_pointer(&m->inst, jet_instance_free);
        m->state = MOCK_FAILED;
        return jet__mock_fail(m, JET_MOCK_EINIT, "%s", err->message);
    }
    jet__mock_lanes_start(m);
    m->state = MOCK_STARTED;
    return JET_MOCK_OK;
}

int jet_mock_stop(jet_mock *m)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    m->fault = 0;
    if (m->state != MOCK_STARTED)
        return m->state == MOCK_STOPPED ? JET_MOCK_OK
                                        : jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_stop: not started");
    size_t before = jet_mock_violation_count(m);
    m->owner = g_thread_self();
    jet_ctx *c = m->inst;
    jet__mock_pending_stop(m);   /* what is pending is settled first, as a daemon's drain does */
    g_clear_pointer(&m->executor, jet_executor_free);
    g_clear_pointer(&m->inst, jet_instance_free);   /* runs fini() */
    registry_remove(c);
    jet__mock_lanes_stop(m);   /* what was held is never handled now, as in a daemon that stops */
    m->state = MOCK_STOPPED;
    return jet_mock_violation_count(m) > before ? JET_MOCK_VIOLATION : JET_MOCK_OK;
}

void jet_mock_free(jet_mock *m)
{
    if (m == NULL)
        return;
    jet_mock_stop(m);
    g_hash_table_unref(m->options);
    g_hash_table_unref(m->settings);
    g_clear_pointer(&m->config, jet_config_binding_free);
    g_free(m->binding);
    g_free(m->stream);
    g_free(m->consumer);
    g_ptr_array_unref(m->pending);   /* settled by the stop */
    g_ptr_array_unref(m->pending_done);
    g_queue_clear(&m->completed);
    g_ptr_array_unref(m->lent);
    g_ptr_array_unref(m->violations);
    for (guint i = 0; i < m->log->len; i++) {
        LogLine *l = g_ptr_array_index(m->log, i);
        g_free(l->line);
        g_free(l);
    }
    g_ptr_array_unref(m->log);
    g_ptr_array_unref(m->calls);
    g_ptr_array_unref(m->dlq_strings);
    g_ptr_array_unref(m->pub_strings);
    g_hash_table_unref(m->pub_ids);
    g_array_unref(m->publishes);
    g_array_unref(m->pub_headers);
    g_free(m->pub_fail_reason);
    g_ptr_array_unref(m->dlq_headers);
    g_free(m->error);
    g_mutex_clear(&m->lock);
    g_free(m);
}

void jet_mock_set_stopping(jet_mock *m)
{
    g_return_if_fail(m != NULL);
    if (m->inst != NULL)
        jet_instance_set_stopping(m->inst);
}

/* --- what the test asks of the binding -------------------------------- */

int jet_mock_fail_publishes(jet_mock *m, const char *reason, unsigned count)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    g_free(m->pub_fail_reason);
    m->pub_fail_reason = g_strdup(reason != NULL && *reason ? reason : "publish failed (jet_mock_fail_publishes)");
    m->pub_fail_count = count;
    return JET_MOCK_OK;
}

int jet_mock_inject_fault(jet_mock *m, jet_mock_fault fault, unsigned k)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (fault != JET_MOCK_FAULT_CRASH_AFTER_PUBLISH && fault != JET_MOCK_FAULT_ACK_LOST)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_inject_fault: %d is no fault point", (int)fault);
    m->fault = (int)fault;
    m->fault_k = fault == JET_MOCK_FAULT_CRASH_AFTER_PUBLISH ? k : 0;
    return JET_MOCK_OK;
}

int64_t jet_mock_metric(const jet_mock *m, const char *name, int *found)
{
    if (found != NULL)
        *found = 0;
    g_return_val_if_fail(m != NULL && name != NULL, 0);
    for (guint i = 0; m->inst != NULL && i < jet_instance_metric_count(m->inst); i++) {
        gint64 v = 0;
        const JetMetric *mt = jet_instance_metric(m->inst, i, &v);
        if (strcmp(mt->name, name) == 0) {
            if (found != NULL)
                *found = 1;
            return v;
        }
    }
    return 0;
}

int jet_mock_kv_initial_done(jet_mock *m)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (m->state != MOCK_STARTED)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_kv_initial_done: not started");
    if (m->config->kind != JET_KIND_KV)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_kv_initial_done: the binding is not kind = kv");
    size_t before = jet_mock_violation_count(m);
    m->owner = g_thread_self();
    jet_instance_kv_initial_done(m->inst);
    return jet_mock_violation_count(m) > before ? JET_MOCK_VIOLATION : JET_MOCK_OK;
}

/* --- delivering: the lanes when the binding has a key, else one run ------ */

static int deliver(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out)
{
    if (out != NULL)
        memset(out, 0, sizeof *out);
    if (b == NULL || out == NULL)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver: message and settlement must not be NULL");
    if (m->state != MOCK_STARTED)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_deliver: the mock is not started (jet_mock_start)");
    ((jet_mock_msg *)b)->has_written = FALSE;
    if (m->lanes != NULL)
        return jet__mock_lanes_deliver(m, b, out);
    return jet__mock_run(m, b, NULL, out);
}

int jet_mock_deliver_sized(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out, size_t out_size)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (out != NULL && out_size < JET_MOCK_SETTLEMENT_SIZE_1_0) {
        memset(out, 0, out_size);
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver: a settlement of %zu bytes is smaller than any "
                              "header ever made it (%zu)", out_size, (size_t)JET_MOCK_SETTLEMENT_SIZE_1_0);
    }
    jet_mock_settlement full;
    int rc = deliver(m, b, out != NULL ? &full : NULL);
    m->fault = 0;   /* a fault is for one call, whether it ran the message or not */
    if (out != NULL)
        jet__mock_settlement_out(&full, out, out_size);
    return rc;
}

int jet_mock_settle_completed_sized(jet_mock *m, jet_mock_settlement *out, size_t out_size)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (out == NULL || out_size < JET_MOCK_SETTLEMENT_SIZE_1_0) {
        if (out != NULL)
            memset(out, 0, out_size);
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_settle_completed: the settlement must not be NULL, "
                              "and at least %zu bytes", (size_t)JET_MOCK_SETTLEMENT_SIZE_1_0);
    }
    jet_mock_settlement full;
    memset(&full, 0, sizeof full);
    int rc = m->state == MOCK_STARTED
                 ? jet__mock_settle_completed(m, &full)
                 : jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_settle_completed: the mock is not started");
    jet__mock_settlement_out(&full, out, out_size);
    return rc;
}

size_t jet_mock_pending(const jet_mock *m)
{
    g_return_val_if_fail(m != NULL, 0);
    return jet__mock_pending_count((jet_mock *)m);
}

int jet_mock_deliver_batch_sized(jet_mock *m, const jet_mock_msg *const *msgs, size_t n, jet_mock_settlement *outs,
                                 size_t out_size)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (outs != NULL && n > 0 && out_size > 0 && n <= G_MAXSIZE / out_size)
        memset(outs, 0, n * out_size);
    if (msgs == NULL || outs == NULL || out_size < JET_MOCK_SETTLEMENT_SIZE_1_0)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver_batch: messages and settlements must not be "
                              "NULL, settlements at least %zu bytes", (size_t)JET_MOCK_SETTLEMENT_SIZE_1_0);
    if (m->state != MOCK_STARTED)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_deliver_batch: the mock is not started (jet_mock_start)");
    if (m->fault != 0) {
        m->fault = 0;
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_deliver_batch: a fault point is for one message "
                              "(jet_mock_deliver); it is dropped");
    }
    if (m->desc->handle_batch == NULL)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver_batch: plugin %s has no handle_batch()",
                              m->desc->name);
    if (n == 0 || n > m->config->batch_max)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver_batch: %zu messages, and the binding's batch_max "
                              "is %u (set it with jet_mock_set_policy)", n, m->config->batch_max);
    for (size_t i = 0; i < n; i++) {
        if (msgs[i] == NULL)
            return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver_batch: message %zu is NULL", i);
        if (JET_KIND_IS_ORDERED(m->config->kind) && msgs[i]->deliveries > 1)
            return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver_batch: message %zu is delivery %u; an "
                                  "ordered or KV binding hands a redelivery alone (jet_mock_deliver)", i,
                                  msgs[i]->deliveries);
    }
    g_autofree jet_mock_settlement *full = g_new0(jet_mock_settlement, n);
    int rc = m->lanes != NULL ? jet__mock_lanes_deliver_batch(m, msgs, n, full)
                              : jet__mock_run_batch(m, msgs, n, NULL, full);
    for (size_t i = 0; i < n; i++)
        jet__mock_settlement_out(&full[i], (jet_mock_settlement *)(void *)((char *)outs + i * out_size), out_size);
    return rc;
}

/* The symbol a binary built against a header without the size calls. */
int (jet_mock_deliver)(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out)
{
    return jet_mock_deliver_sized(m, b, out, JET_MOCK_SETTLEMENT_SIZE_1_0);
}
