/* The host functions a plugin calls.  Each checks its arguments: a plugin
 * passing NULL gets JET_EINVAL or NULL, never a crash in the host. */
#include "host_api.h"
#include "instance.h"
#include "jet_msg.h"
#include "log.h"
#include "duration.h"
#include "host_strict.h"

#include <string.h>

/* Strict mode (host_strict.h): the mock host's checks.  The daemon never sets
 * a jet_msg's strict pointer nor the ctx observer, so each function below
 * pays one predictable branch and nothing else. */
#define MSG_GUARD(m, fn, fail)                                                      \
    do {                                                                            \
        if (G_UNLIKELY((m)->strict != NULL) && !(m)->strict->call((m)->strict, (m), (fn))) \
            return fail;                                                            \
    } while (0)

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


void jet_msg_reset_verdict(jet_msg *m)
{
    m->reason[0] = '\0';
    m->has_reason = FALSE;
    m->reason_too_long = FALSE;
    m->delay_ms = 0;
    m->has_delay = FALSE;
}

static const char *msg_subject(const jet_msg *m)
{
    if (m == NULL)
        return NULL;
    MSG_GUARD(m, "msg_subject", NULL);
    return m->subject;
}

static const void *msg_data(const jet_msg *m, size_t *len)
{
    if (m == NULL) {
        if (len != NULL) *len = 0;
        return NULL;
    }
    if (G_UNLIKELY(m->strict != NULL) && !m->strict->call(m->strict, m, "msg_data")) {
        if (len != NULL) *len = 0;
        return NULL;
    }
    if (len != NULL)
        *len = m->len;
    return m->data != NULL ? m->data : "";
}

static const char *msg_header(const jet_msg *m, const char *name)
{
    if (m == NULL || name == NULL)
        return NULL;
    MSG_GUARD(m, "msg_header", NULL);
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2)
        if (strcmp(g_ptr_array_index(m->headers, i), name) == 0)
            return g_ptr_array_index(m->headers, i + 1);
    return NULL;
}

static int msg_headers_each(const jet_msg *m, int (*fn)(void *, const char *, const char *), void *ud)
{
    if (m == NULL || fn == NULL)
        return JET_EINVAL;
    MSG_GUARD(m, "msg_headers_each", JET_EINVAL);
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2) {
        int rc = fn(ud, g_ptr_array_index(m->headers, i), g_ptr_array_index(m->headers, i + 1));
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The plain field readers: NULL-safe, guarded, one line each. */
#define MSG_FIELD(type, fn, field, fail)          \
    static type fn(const jet_msg *m)              \
    {                                             \
        if (m == NULL)                            \
            return fail;                          \
        MSG_GUARD(m, #fn, fail);                  \
        return m->field;                          \
    }

MSG_FIELD(const char *, msg_stream, stream, NULL)
MSG_FIELD(const char *, msg_consumer, consumer, NULL)
MSG_FIELD(uint64_t, msg_stream_seq, stream_seq, 0)
MSG_FIELD(uint64_t, msg_consumer_seq, consumer_seq, 0)
MSG_FIELD(uint32_t, msg_deliveries, deliveries, 0)
MSG_FIELD(uint32_t, msg_failures, failures, 0)
MSG_FIELD(uint32_t, msg_postpones, postpones, 0)

static int msg_enqueued_ns(const jet_msg *m, int64_t *unix_ns)
{
    if (m == NULL || unix_ns == NULL)
        return 0;
    MSG_GUARD(m, "msg_enqueued_ns", 0);
    if (!m->has_enqueued)
        return 0;
    *unix_ns = m->enqueued_ns;
    return 1;
}

static int msg_first_failure_ns(const jet_msg *m, int64_t *unix_ns)
{
    if (m == NULL || unix_ns == NULL)
        return 0;
    MSG_GUARD(m, "msg_first_failure_ns", 0);
    if (!m->has_first_failure)
        return 0;
    *unix_ns = m->first_failure_ns;
    return 1;
}

static int msg_set_reason(jet_msg *m, const char *reason)
{
    if (m == NULL || reason == NULL)
        return JET_EINVAL;
    MSG_GUARD(m, "msg_set_reason", JET_EINVAL);
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
    return m->reason_too_long ? JET_ETOOLONG : JET_OK;
}

static int msg_set_delay_ms(jet_msg *m, uint64_t delay_ms)
{
    if (m == NULL)
        return JET_EINVAL;
    MSG_GUARD(m, "msg_set_delay_ms", JET_EINVAL);
    m->delay_ms = delay_ms;
    m->has_delay = TRUE;
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
};

const jet_host_api *jet_host_api_table(void)
{
    return &table;
}
