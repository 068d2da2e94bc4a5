/* The host functions a plugin calls.  Each checks its arguments: a plugin
 * passing NULL, or a jet_msg whose handle() has returned (jet_msg.h), gets
 * JET_EINVAL, NULL or 0, never a crash in the host. */
#include "host_api.h"
#include "instance.h"
#include "jet_msg.h"
#include "log.h"
#include "duration.h"
#include "host_strict.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* Strict mode (host_strict.h): the mock host's checks.  The daemon never sets
 * a jet_msg's strict pointer nor the ctx observer, so each function below
 * pays one predictable branch and nothing else. */
#define MSG_STRICT_OK(m, fn) \
    (G_LIKELY((m)->strict == NULL) || (m)->strict->call((m)->strict, (m), (fn)))

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
    /* Not freed: a copy (the mock's lent one) shares the original's. */
    memset(&m->publishes, 0, sizeof m->publishes);
}

/* --- lent handles (jet_msg.h) ------------------------------------------------
 *
 * A handle is region + slot * span + (tick mod ticks) * 8: the address alone
 * says which slot and which lend, so a kept handle is told from the current
 * one even after its slot is lent again (until the tick wraps, after `ticks`
 * more lends on that worker: millions on a 64-bit host).  The range is
 * reserved PROT_NONE and never mapped: no handle is ever a real object, and
 * a plugin dereferencing one faults at once instead of reading a message. */

#define SLOTS 1024u
#define HANDLE_ALIGN 8u

typedef struct {
    guint64 state;     /* atomic: (tick << 1) | 1 while lent */
    gint pins;         /* atomic: host calls running through a handle of it */
    jet_msg *msg;      /* atomic; read only by a call pinned on a valid handle */
    /* Under owner_lock: */
    gboolean taken;    /* a thread lends with it */
    JetMsgOwner owner;
    guint64 logged;    /* 1 + the tick last logged as stale; 0: none */
} Slot;

static Slot slots[SLOTS];
static GMutex owner_lock;
static uintptr_t region;   /* 0: not reserved; handles are then the messages */
static uintptr_t span;     /* bytes of the range per slot */

static void reserve_region(void)
{
    static gsize once;
    if (!g_once_init_enter(&once))
        return;
    /* Address space only (nothing is ever mapped there); smaller when a
     * limit on it (RLIMIT_AS) refuses the first. */
    for (unsigned shift = sizeof(void *) >= 8 ? 34 : 26; shift >= 20; shift--) {
        size_t size = (size_t)1 << shift;
        void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            region = (uintptr_t)p;
            span = size / SLOTS;
            break;
        }
    }
    if (region == 0)
        jet_log(JET_LOG_WARNING, NULL, "handles", "no address range for message handles: a plugin "
                "keeping a jet_msg after handle() goes undetected");
    g_once_init_leave(&once, 1);
}

static inline guint64 ticks_per_slot(void)
{
    return span / HANDLE_ALIGN;
}

/* Which slot and tick a handle names; FALSE for anything else (a jet_msg
 * itself: the mock host's, a test's, NULL). */
static inline gboolean decode(const jet_msg *h, Slot **s, guint64 *tick)
{
    uintptr_t a = (uintptr_t)h;
    uintptr_t base = __atomic_load_n(&region, __ATOMIC_ACQUIRE);
    if (base == 0 || a < base || a - base >= span * SLOTS)
        return FALSE;
    uintptr_t off = a - base;
    *s = &slots[off / span];
    *tick = (off % span) / HANDLE_ALIGN;
    return TRUE;
}

static void slot_release(gpointer p)
{
    Slot *s = p;
    g_mutex_lock(&owner_lock);
    s->taken = FALSE;
    memset(&s->owner, 0, sizeof s->owner);
    g_mutex_unlock(&owner_lock);
}

/* Each lending thread keeps one slot until it exits. */
static GPrivate thread_slot = G_PRIVATE_INIT(slot_release);

static Slot *slot_claim(void)
{
    Slot *s = g_private_get(&thread_slot);
    if (s != NULL)
        return s;
    g_mutex_lock(&owner_lock);
    for (guint i = 0; i < SLOTS && s == NULL; i++) {
        if (!slots[i].taken) {
            s = &slots[i];
            s->taken = TRUE;
        }
    }
    g_mutex_unlock(&owner_lock);
    if (s != NULL)
        g_private_set(&thread_slot, s);
    return s;
}

jet_msg *jet_msg_lend(jet_msg *m, const JetMsgOwner *owner)
{
    reserve_region();
    if (region == 0)
        return m;
    Slot *s = slot_claim();
    if (s == NULL)
        return m;
    if (owner != NULL && memcmp(&s->owner, owner, sizeof *owner) != 0) {
        g_mutex_lock(&owner_lock);
        s->owner = *owner;
        g_mutex_unlock(&owner_lock);
    }
    guint64 tick = (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) >> 1) + 1;
    __atomic_store_n(&s->msg, m, __ATOMIC_RELAXED);
    __atomic_store_n(&s->state, (tick << 1) | 1, __ATOMIC_SEQ_CST);
    uintptr_t h = region + (uintptr_t)(s - slots) * span + (uintptr_t)(tick % ticks_per_slot()) * HANDLE_ALIGN;
    return (jet_msg *)h;
}

void jet_msg_unlend(jet_msg *handle)
{
    Slot *s;
    guint64 tick;
    if (!decode(handle, &s, &tick))
        return;
    guint64 st = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST);
    __atomic_store_n(&s->state, st & ~(guint64)1, __ATOMIC_SEQ_CST);
    /* A call that pinned before the store above may still be reading the
     * message; one after it sees the lend over and leaves the message alone.
     * Waiting is rare (a plugin's own thread calling at this instant). */
    while (__atomic_load_n(&s->pins, __ATOMIC_SEQ_CST) != 0)
        g_thread_yield();
    __atomic_store_n(&s->msg, NULL, __ATOMIC_RELAXED);
}

guint64 jet_msg_lent_seq(const jet_msg *m)
{
    Slot *s;
    guint64 tick;
    if (decode(m, &s, &tick)) {
        const jet_msg *real = __atomic_load_n(&s->msg, __ATOMIC_RELAXED);
        return real != NULL ? real->stream_seq : 0;
    }
    return m != NULL ? m->stream_seq : 0;
}

/* A call through a handle whose handle() has returned: refused, counted, and
 * logged once per handle. */
static void stale_call(Slot *s, guint64 tick, const char *fn)
{
    g_mutex_lock(&owner_lock);
    JetMsgOwner o = s->owner;
    gboolean first = s->logged != tick + 1;
    s->logged = tick + 1;
    if (first)
        jet_log(JET_LOG_ERROR, o.binding, "stale-handle",
                "plugin %s called %s() on a jet_msg after its handle() returned: refused (a plugin "
                "error; the handle is borrowed for the duration of handle() only: copy what you keep)",
                o.plugin != NULL ? o.plugin : "(unknown)", fn);
    if (o.stale != NULL)
        o.stale(o.data, fn);
    g_mutex_unlock(&owner_lock);
}

/* The message behind h, pinned until msg_leave(): NULL (the call must return
 * its error value) for NULL, a handle no longer lent, or a message the mock
 * host's strict checks refuse. */
static jet_msg *msg_enter(const jet_msg *h, const char *fn, Slot **pinned)
{
    Slot *s;
    guint64 tick;
    *pinned = NULL;
    if (h == NULL)
        return NULL;
    if (G_LIKELY(decode(h, &s, &tick))) {
        __atomic_add_fetch(&s->pins, 1, __ATOMIC_SEQ_CST);
        guint64 st = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST);
        if (G_UNLIKELY(!(st & 1) || (st >> 1) % ticks_per_slot() != tick)) {
            __atomic_sub_fetch(&s->pins, 1, __ATOMIC_SEQ_CST);
            stale_call(s, tick, fn);
            return NULL;
        }
        *pinned = s;
        h = __atomic_load_n(&s->msg, __ATOMIC_RELAXED);
    }
    jet_msg *m = (jet_msg *)h;
    if (!MSG_STRICT_OK(m, fn)) {
        if (*pinned != NULL)
            __atomic_sub_fetch(&(*pinned)->pins, 1, __ATOMIC_SEQ_CST);
        *pinned = NULL;
        return NULL;
    }
    return m;
}

static inline void msg_leave(Slot *pinned)
{
    if (pinned != NULL)
        __atomic_sub_fetch(&pinned->pins, 1, __ATOMIC_SEQ_CST);
}

static const char *msg_subject(const jet_msg *h)
{
    Slot *pin;
    const jet_msg *m = msg_enter(h, "msg_subject", &pin);
    if (m == NULL)
        return NULL;
    const char *r = m->subject;
    msg_leave(pin);
    return r;
}

static const void *msg_data(const jet_msg *h, size_t *len)
{
    Slot *pin;
    const jet_msg *m = msg_enter(h, "msg_data", &pin);
    if (m == NULL) {
        if (len != NULL) *len = 0;
        return NULL;
    }
    if (len != NULL)
        *len = m->len;
    const void *r = m->data != NULL ? m->data : "";
    msg_leave(pin);
    return r;
}

static const char *msg_header(const jet_msg *h, const char *name)
{
    if (name == NULL)
        return NULL;
    Slot *pin;
    const jet_msg *m = msg_enter(h, "msg_header", &pin);
    if (m == NULL)
        return NULL;
    const char *r = NULL;
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2) {
        if (strcmp(g_ptr_array_index(m->headers, i), name) == 0) {
            r = g_ptr_array_index(m->headers, i + 1);
            break;
        }
    }
    msg_leave(pin);
    return r;
}

static int msg_headers_each(const jet_msg *h, int (*fn)(void *, const char *, const char *), void *ud)
{
    if (fn == NULL)
        return JET_EINVAL;
    Slot *pin;
    const jet_msg *m = msg_enter(h, "msg_headers_each", &pin);
    if (m == NULL)
        return JET_EINVAL;
    int rc = 0;
    for (guint i = 0; m->headers != NULL && i + 1 < m->headers->len; i += 2) {
        rc = fn(ud, g_ptr_array_index(m->headers, i), g_ptr_array_index(m->headers, i + 1));
        if (rc != 0)
            break;
    }
    msg_leave(pin);
    return rc;
}

/* The plain field readers: NULL-safe, checked, one line each. */
#define MSG_FIELD(type, fn, field, fail)                \
    static type fn(const jet_msg *h)                    \
    {                                                   \
        Slot *pin;                                      \
        const jet_msg *m = msg_enter(h, #fn, &pin);     \
        if (m == NULL)                                  \
            return fail;                                \
        type r = m->field;                              \
        msg_leave(pin);                                 \
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
    Slot *pin;
    jet_msg *m = msg_enter(h, "msg_publish", &pin);
    if (m == NULL)
        return JET_EINVAL;
    int rc = jet_publish_queue_add(&m->publishes, subject, headers, data, len, m->publish_reserved);
    msg_leave(pin);
    return rc;
}

static int msg_enqueued_ns(const jet_msg *h, int64_t *unix_ns)
{
    if (unix_ns == NULL)
        return 0;
    Slot *pin;
    const jet_msg *m = msg_enter(h, "msg_enqueued_ns", &pin);
    if (m == NULL)
        return 0;
    int r = m->has_enqueued;
    if (r)
        *unix_ns = m->enqueued_ns;
    msg_leave(pin);
    return r;
}

static int msg_first_failure_ns(const jet_msg *h, int64_t *unix_ns)
{
    if (unix_ns == NULL)
        return 0;
    Slot *pin;
    const jet_msg *m = msg_enter(h, "msg_first_failure_ns", &pin);
    if (m == NULL)
        return 0;
    int r = m->has_first_failure;
    if (r)
        *unix_ns = m->first_failure_ns;
    msg_leave(pin);
    return r;
}

static int msg_set_reason(jet_msg *h, const char *reason)
{
    if (reason == NULL)
        return JET_EINVAL;
    Slot *pin;
    jet_msg *m = msg_enter(h, "msg_set_reason", &pin);
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
    msg_leave(pin);
    return rc;
}

static int msg_set_delay_ms(jet_msg *h, uint64_t delay_ms)
{
    Slot *pin;
    jet_msg *m = msg_enter(h, "msg_set_delay_ms", &pin);
    if (m == NULL)
        return JET_EINVAL;
    m->delay_ms = delay_ms;
    m->has_delay = TRUE;
    msg_leave(pin);
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
