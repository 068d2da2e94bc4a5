/* The host functions a plugin calls.  Each checks its arguments: a plugin
 * passing NULL, or a jet_msg whose handle() has returned (jet_msg.h), gets
 * JET_EINVAL, NULL or 0, never a crash in the host. */
#include "host_api.h"
#include "instance.h"
#include "jet_msg.h"
#include "log.h"
#include "duration.h"
#include "host_strict.h"

#include <string.h>

/* The ctx observer is the mock host's (host_strict.h); the daemon never
 * sets it, so each ctx function pays one predictable branch. */
static const JetCtxObserver *ctx_observer;

#define CTX_GUARD(c, fn, arg)                                                       \
    do {                                                                            \
        const JetCtxObserver *obs_ = g_atomic_pointer_get(&ctx_observer);           \
        if (G_UNLIKELY(obs_ != NULL))                                               \
            obs_->call((c), (fn), (arg));                                           \
    } while (0)

void jet__host_api_set_ctx_observer(const JetCtxObserver *obs)
{
    g_atomic_pointer_set(&ctx_observer, obs);
}

static const char *msg_subject(const jet_msg *h)
{
    JetMsgPin *pin;
    const jet_msg *m = jet__msg_enter(h, "msg_subject", &pin);
    if (m == NULL)
        return NULL;
    const char *r = m->subject;
    jet__msg_leave(pin);
    return r;
}

static const void *msg_data(const jet_msg *h, size_t *len)
{
    JetMsgPin *pin;
    const jet_msg *m = jet__msg_enter(h, "msg_data", &pin);
    if (m == NULL) {
        if (len != NULL) *len = 0;
        return NULL;
    }
    if (len != NULL)
        *len = m->len;
    const void *r = m->data != NULL ? m->data : "";
    jet__msg_leave(pin);
    return r;
}

static const char *msg_header(const jet_msg *h, const char *name)
{
    if (name == NULL)
        return NULL;
    JetMsgPin *pin;
    const jet_msg *m = jet__msg_enter(h, "msg_header", &pin);
    if (m == NULL)
        return NULL;
    const char *r = NULL;
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2) {
        if (strcmp(g_ptr_array_index(m->headers, i), name) == 0) {
            r = g_ptr_array_index(m->headers, i + 1);
            break;
        }
    }
    jet__msg_leave(pin);
    return r;
}

static int msg_headers_each(const jet_msg *h, int (*fn)(void *, const char *, const char *), void *ud)
{
    if (fn == NULL)
        return JET_EINVAL;
    JetMsgPin *pin;
    const jet_msg *m = jet__msg_enter(h, "msg_headers_each", &pin);
    if (m == NULL)
        return JET_EINVAL;
    int rc = 0;
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2) {
        rc = fn(ud, g_ptr_array_index(m->headers, i), g_ptr_array_index(m->headers, i + 1));
        if (rc != 0)
            break;
    }
    jet__msg_leave(pin);
    return rc;
}

/* The plain field readers: NULL-safe, checked, one line each. */
#define MSG_FIELD(type, fn, field, fail)                \
    static type fn(const jet_msg *h)                    \
    {                                                   \
        JetMsgPin *pin;                                      \
        const jet_msg *m = jet__msg_enter(h, #fn, &pin);     \
        if (m == NULL)                                  \
            return fail;                                \
        type r = m->field;                              \
        jet__msg_leave(pin);                                 \
        return r;                                       \
    }

MSG_FIELD(const char *, msg_stream, stream, NULL)
MSG_FIELD(const char *, msg_consumer, consumer, NULL)
MSG_FIELD(uint64_t, msg_stream_seq, stream_seq, 0)
MSG_FIELD(uint64_t, msg_consumer_seq, consumer_seq, 0)
MSG_FIELD(uint32_t, msg_deliveries, deliveries, 0)
MSG_FIELD(uint32_t, msg_failures, failures, 0)
MSG_FIELD(uint32_t, msg_postpones, postpones, 0)
MSG_FIELD(int, msg_kind, kind, JET_EINVAL)
MSG_FIELD(const char *, msg_kv_key, kv_key, NULL)
MSG_FIELD(int, msg_kv_op, kv_op, JET_KV_NONE)
MSG_FIELD(uint64_t, msg_kv_revision, kv_revision, 0)
MSG_FIELD(jet_ctx *, msg_ctx, ctx, NULL)

static int msg_publish(jet_msg *h, const char *subject, const char *const *headers, const void *data, size_t len)
{
    JetMsgPin *pin;
    jet_msg *m = jet__msg_enter(h, "msg_publish", &pin);
    if (m == NULL)
        return JET_EINVAL;
    int rc = jet_publish_queue_add(&m->publishes, subject, headers, data, len, m->publish_reserved);
    jet__msg_leave(pin);
    return rc;
}

/* docs/async.md.  The phase and the verdict change in one atomic step:
 * during handle() to EARLY (the worker settles it when handle() returns
 * JET_PENDING), after it PENDING to DONE, handed back to the host. */
static int msg_complete(jet_msg *h, int verdict)
{
    if (h == NULL || verdict < JET_ACK || verdict > JET_REJECT)
        return JET_EINVAL;
    JetMsgPin *pin;
    jet_msg *m = jet__msg_enter(h, "msg_complete", &pin);
    if (m == NULL)
        return JET_ESTATE;   /* no longer lent: refused and counted by the lender */
    JetMsgAsync *a = m->async;
    int rc = JET_ESTATE;
    if (a != NULL) {
        gint from = JET_MSG_ASYNC_IN_HANDLE;
        if (g_atomic_int_compare_and_exchange(&a->state, from, JET_MSG_ASYNC_STATE(JET_MSG_ASYNC_EARLY, verdict))) {
            rc = JET_OK;
        } else {
            from = JET_MSG_ASYNC_PENDING;
            if (g_atomic_int_compare_and_exchange(&a->state, from,
                                                  JET_MSG_ASYNC_STATE(JET_MSG_ASYNC_DONE, verdict))) {
                a->completed(a, h);
                rc = JET_OK;
            } else {
                a->refused(a);
            }
        }
    }
    jet__msg_leave(pin);
    return rc;
}

static int msg_enqueued_ns(const jet_msg *h, int64_t *unix_ns)
{
    if (unix_ns == NULL)
        return 0;
    JetMsgPin *pin;
    const jet_msg *m = jet__msg_enter(h, "msg_enqueued_ns", &pin);
    if (m == NULL)
        return 0;
    int r = m->has_enqueued;
    if (r)
        *unix_ns = m->enqueued_ns;
    jet__msg_leave(pin);
    return r;
}

static int msg_first_failure_ns(const jet_msg *h, int64_t *unix_ns)
{
    if (unix_ns == NULL)
        return 0;
    JetMsgPin *pin;
    const jet_msg *m = jet__msg_enter(h, "msg_first_failure_ns", &pin);
    if (m == NULL)
        return 0;
    int r = m->has_first_failure;
    if (r)
        *unix_ns = m->first_failure_ns;
    jet__msg_leave(pin);
    return r;
}

static int msg_set_reason(jet_msg *h, const char *reason)
{
    if (reason == NULL)
        return JET_EINVAL;
    JetMsgPin *pin;
    jet_msg *m = jet__msg_enter(h, "msg_set_reason", &pin);
    if (m == NULL)
        return JET_EINVAL;
    size_t n = strlen(reason);
    if (n > JET_REASON_MAX) {
        /* Kept truncated for the log, and flagged: settlement treats it as a
         * plugin error, never as the verdict the plugin meant. */
        m->reason_too_long = TRUE;
        n = JET_REASON_MAX;
    }
    memcpy(m->reason, reason, n);
    m->reason[n] = '\0';
    m->has_reason = TRUE;
    int rc = m->reason_too_long ? JET_ETOOLONG : JET_OK;
    jet__msg_leave(pin);
    return rc;
}

static int msg_set_delay_ms(jet_msg *h, uint64_t delay_ms)
{
    JetMsgPin *pin;
    jet_msg *m = jet__msg_enter(h, "msg_set_delay_ms", &pin);
    if (m == NULL)
        return JET_EINVAL;
    m->delay_ms = delay_ms;
    m->has_delay = TRUE;
    jet__msg_leave(pin);
    return delay_ms > 0 ? JET_OK : JET_EINVAL;
}

static const char *ctx_option(const jet_ctx *c, const char *name)
{
    CTX_GUARD(c, "ctx_option", name);
    return jet__ctx_option(c, name);
}

static int ctx_option_int(const jet_ctx *c, const char *name, int64_t *out)
{
    CTX_GUARD(c, "ctx_option_int", name);
    const char *v = NULL;
    int rc = jet__ctx_option_typed(c, name, JET_OPT_INT, &v);
    if (rc == JET_OK && out != NULL) {
        gint64 x = 0;
        g_ascii_string_to_signed(v, 10, G_MININT64, G_MAXINT64, &x, NULL);
        *out = x;
    }
    return rc;
}

static int ctx_option_bool(const jet_ctx *c, const char *name, int *out)
{
    CTX_GUARD(c, "ctx_option_bool", name);
    const char *v = NULL;
    int rc = jet__ctx_option_typed(c, name, JET_OPT_BOOL, &v);
    if (rc == JET_OK && out != NULL)
        *out = strcmp(v, "true") == 0;
    return rc;
}

static int ctx_option_duration_ms(const jet_ctx *c, const char *name, uint64_t *out)
{
    CTX_GUARD(c, "ctx_option_duration_ms", name);
    const char *v = NULL;
    int rc = jet__ctx_option_typed(c, name, JET_OPT_DURATION, &v);
    if (rc == JET_OK && out != NULL) {
        guint64 ms = 0;
        jet_duration_parse_ms(v, &ms, NULL);
        *out = ms;
    }
    return rc;
}

static const char *ctx_name(const jet_ctx *c)
{
    CTX_GUARD(c, "ctx_name", NULL);
    return c != NULL ? jet_instance_binding(c) : NULL;
}

static void ctx_log(jet_ctx *c, jet_log_level level, const char *fmt, ...)
{
    CTX_GUARD(c, "ctx_log", NULL);
    if (fmt == NULL)
        return;
    if ((unsigned)level > JET_LOG_DEBUG)
        level = JET_LOG_INFO;
    const char *binding = c != NULL ? jet_instance_binding(c) : NULL;
    va_list ap;
    va_start(ap, fmt);
    const JetCtxObserver *obs = g_atomic_pointer_get(&ctx_observer);
    if (G_UNLIKELY(obs != NULL && obs->log != NULL)) {
        g_autofree char *line = g_strdup_vprintf(fmt, ap);
        if (obs->log(c, level, line))
            jet_log(level, binding, "plugin", "%s", line);
    } else {
        jet_logv(level, binding, "plugin", fmt, ap);
    }
    va_end(ap);
}

static int64_t ctx_now_ns(const jet_ctx *c)
{
    CTX_GUARD(c, "ctx_now_ns", NULL);
    return c != NULL ? jet_instance_now_ns(c) : g_get_real_time() * 1000;
}

static int ctx_stopping(const jet_ctx *c)
{
    CTX_GUARD(c, "ctx_stopping", NULL);
    return jet__ctx_stopping(c);
}

static int ctx_kind(const jet_ctx *c)
{
    CTX_GUARD(c, "ctx_kind", NULL);
    return jet__ctx_kind(c);
}

static int ctx_metric_declare(jet_ctx *c, const char *name, int type, const char *help)
{
    CTX_GUARD(c, "ctx_metric_declare", name);
    return jet__ctx_metric_declare(c, name, type, help);
}

static int ctx_metric_add(jet_ctx *c, int id, uint64_t n)
{
    CTX_GUARD(c, "ctx_metric_add", NULL);
    return jet__ctx_metric_update(c, id, JET_METRIC_COUNTER, (gint64)MIN(n, (uint64_t)G_MAXINT64));
}

static int ctx_metric_set(jet_ctx *c, int id, int64_t value)
{
    CTX_GUARD(c, "ctx_metric_set", NULL);
    return jet__ctx_metric_update(c, id, JET_METRIC_GAUGE, value);
}

static const jet_host_api table = {
    .struct_size = sizeof(jet_host_api),
    .abi_major = JET_ABI_MAJOR,
    .abi_minor = JET_ABI_MINOR,
    .msg_subject = msg_subject,
    .msg_data = msg_data,
    .msg_header = msg_header,
    .msg_headers_each = msg_headers_each,
    .msg_stream = msg_stream,
    .msg_consumer = msg_consumer,
    .msg_stream_seq = msg_stream_seq,
    .msg_consumer_seq = msg_consumer_seq,
    .msg_deliveries = msg_deliveries,
    .msg_enqueued_ns = msg_enqueued_ns,
    .msg_failures = msg_failures,
    .msg_postpones = msg_postpones,
    .msg_first_failure_ns = msg_first_failure_ns,
    .msg_set_reason = msg_set_reason,
    .msg_set_delay_ms = msg_set_delay_ms,
    .ctx_option = ctx_option,
    .ctx_option_int = ctx_option_int,
    .ctx_option_bool = ctx_option_bool,
    .ctx_option_duration_ms = ctx_option_duration_ms,
    .ctx_name = ctx_name,
    .ctx_log = ctx_log,
    .ctx_now_ns = ctx_now_ns,
    .ctx_stopping = ctx_stopping,
    .ctx_kind = ctx_kind,
    .msg_kind = msg_kind,
    .msg_kv_key = msg_kv_key,
    .msg_kv_op = msg_kv_op,
    .msg_kv_revision = msg_kv_revision,
    .msg_ctx = msg_ctx,
    .msg_publish = msg_publish,
    .ctx_metric_declare = ctx_metric_declare,
    .ctx_metric_add = ctx_metric_add,
    .ctx_metric_set = ctx_metric_set,
    .msg_complete = msg_complete,
};

const jet_host_api *jet_host_api_table(void)
{
    return &table;
}

JetPlugin *jet_plugin_load(const char *name_or_path, const char *plugin_dir,
                           const JetLoadPolicy *policy, GError **error)
{
    return jet_plugin_load_with(&table, name_or_path, plugin_dir, policy, error);
}

JetPlugin *jet_plugin_from_entry(jet_plugin_entry_fn entry, GError **error)
{
    return jet_plugin_from_entry_with(&table, entry, error);
}
