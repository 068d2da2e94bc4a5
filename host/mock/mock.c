/* The mock host (include/jethost/mock.h): one plugin instance driven by a
 * test, settled by the daemon's own decision code (settle.c), with the strict
 * checks of host_strict.h switched on.
 *
 * What is the daemon's and used as is: the loader and its checks
 * (plugin_loader.c), option validation and init/fini (instance.c), the host
 * function table (host_api.c), the settlement decision (settle.c), the
 * dead-letter record (capture.c's jet_capture_headers) and the config's default policy
 * (config.c's key table).  What is the mock's: the clock, the message
 * builder, recording, and the strict rules the daemon cannot check. */
#include <jethost/mock.h>

#include "capture.h"
#include "config.h"
#include "duration.h"
#include "errors.h"
#include "host_api.h"
#include "host_strict.h"
#include "instance.h"
#include "jet_msg.h"
#include "settle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CLOCK_NS G_GINT64_CONSTANT(1704067200000000000)   /* 2024-01-01T00:00:00Z */
/* When the mock's stream was created (its records carry it, as the
 * daemon's do): 2023-12-01T00:00:00Z, before any message the mock makes. */
#define MOCK_STREAM_CREATED_NS G_GINT64_CONSTANT(1701388800000000000)
#define MOCK_HOST_NAME   "jethost-mock"

/* Rule names (mock.h); static, so a settlement can point at them. */
#define RULE_VERDICT        "verdict"
#define RULE_POSTPONE_DELAY "postpone-delay"
#define RULE_POSTPONE_CAP   "postpone-cap"
#define RULE_REASON_LENGTH  "reason-length"
#define RULE_USE_AFTER      "use-after-handle"
#define RULE_THREAD         "thread"
#define RULE_OPT_UNDECLARED "option-undeclared"
#define RULE_OPT_TYPE       "option-type"
#define RULE_OPT_REQUIRED   "option-required"

typedef enum { MOCK_NEW, MOCK_STARTED, MOCK_STOPPED, MOCK_FAILED } MockState;

typedef struct {
    const char *rule;          /* static */
    char *message;
    char *text;                /* "rule: message" */
} Violation;

typedef struct {
    int level;
    char *line;
} LogLine;

/* One delivery lent to handle(): kept alive, poisoned, until the mock is
 * freed, so a kept pointer is caught instead of reading freed memory. */
typedef struct {
    jet_msg msg;
    JetMsgStrict strict;
    jet_mock *mock;
    char *subject;
    guint8 *data;
    gsize len;
    GPtrArray *headers;        /* char*, name/value alternating */
} Lent;

struct jet_mock {
    JetPlugin *plugin;
    const jet_plugin *desc;
    gboolean thread_safe;
    GHashTable *options;       /* name -> value, as set */

    guint64 *rungs;
    JetSettlePolicy policy;
    char *binding, *stream, *consumer, *dlq_subject;

    JetInstance *inst;
    MockState state;
    gboolean abort_on_violation;
    gboolean log_echo;
    GThread *owner;            /* the thread that drives the mock */

    GMutex lock;               /* what the plugin may reach from any thread: */
    gint64 clock_ns;
    GPtrArray *violations;     /* Violation* */
    GPtrArray *log;            /* LogLine* */
    GPtrArray *calls;          /* char* */

    GPtrArray *lent;           /* Lent*, freed with the mock */
    guint64 next_seq;
    char *error;

    /* The last settlement's dead-letter record. */
    GPtrArray *dlq_strings;
    jet_mock_header *dlq_headers;
};

struct jet_mock_msg {
    char *subject;
    guint8 *data;
    gsize len;
    GPtrArray *headers;        /* char*, name/value alternating */
    guint64 stream_seq, consumer_seq;
    guint32 deliveries;
    gboolean has_enqueued;
    gint64 enqueued_ns;
    guint32 failures, postpones;
    gboolean has_first_failure;
    gint64 first_failure_ns;
    guint32 strikes;
    gboolean breaker_claim;
};

/* --- errors and violations --------------------------------------------- */

const char *jet_mock_strerror(int code)
{
    switch (code) {
    case JET_MOCK_OK: return "ok";
    case JET_MOCK_VIOLATION: return "the plugin broke a strict rule";
    case JET_MOCK_EINVAL: return "invalid argument";
    case JET_MOCK_ESTATE: return "not allowed in this state";
    case JET_MOCK_ELOAD: return "the plugin could not be loaded";
    case JET_MOCK_EOPTION: return "the plugin options do not validate";
    case JET_MOCK_EINIT: return "the plugin's init() failed";
    }
    return "unknown code";
}

static int fail(jet_mock *m, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static int fail(jet_mock *m, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_free(m->error);
    m->error = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return code;
}

const char *jet_mock_error(const jet_mock *m)
{
    return m != NULL && m->error != NULL ? m->error : "";
}

static void violation_free(gpointer p)
{
    Violation *v = p;
    g_free(v->message);
    g_free(v->text);
    g_free(v);
}

static void violation(jet_mock *m, const char *rule, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void violation(jet_mock *m, const char *rule, const char *fmt, ...)
{
    Violation *v = g_new0(Violation, 1);
    va_list ap;
    va_start(ap, fmt);
    v->rule = rule;
    v->message = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    v->text = g_strdup_printf("%s: %s", rule, v->message);
    if (m->abort_on_violation) {
        fprintf(stderr, "jethost-mock: plugin %s broke the rule \"%s\": %s\n",
                jet_plugin_path(m->plugin), rule, v->message);
        fflush(stderr);
        abort();
    }
    g_mutex_lock(&m->lock);
    g_ptr_array_add(m->violations, v);
    g_mutex_unlock(&m->lock);
}

size_t jet_mock_violation_count(const jet_mock *m)
{
    g_return_val_if_fail(m != NULL, 0);
    g_mutex_lock((GMutex *)&m->lock);
    size_t n = m->violations->len;
    g_mutex_unlock((GMutex *)&m->lock);
    return n;
}

static const Violation *violation_at(const jet_mock *m, size_t i)
{
    g_mutex_lock((GMutex *)&m->lock);
    const Violation *v = i < m->violations->len ? g_ptr_array_index(m->violations, i) : NULL;
    g_mutex_unlock((GMutex *)&m->lock);
    return v;
}

const char *jet_mock_violation_rule(const jet_mock *m, size_t i)
{
    g_return_val_if_fail(m != NULL, NULL);
    const Violation *v = violation_at(m, i);
    return v != NULL ? v->rule : NULL;
}

const char *jet_mock_violation_message(const jet_mock *m, size_t i)
{
    g_return_val_if_fail(m != NULL, NULL);
    const Violation *v = violation_at(m, i);
    return v != NULL ? v->message : NULL;
}

const char *jet_mock_last_violation(const jet_mock *m)
{
    g_return_val_if_fail(m != NULL, NULL);
    size_t n = jet_mock_violation_count(m);
    const Violation *v = n > 0 ? violation_at(m, n - 1) : NULL;
    return v != NULL ? v->text : NULL;
}

void jet_mock_clear_violations(jet_mock *m)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    g_ptr_array_set_size(m->violations, 0);
    g_mutex_unlock(&m->lock);
}

/* --- recording ---------------------------------------------------------- */

static void record_call(jet_mock *m, const char *fn, const char *arg)
{
    char *entry = arg != NULL ? g_strdup_printf("%s(%s)", fn, arg) : g_strdup(fn);
    g_mutex_lock(&m->lock);
    g_ptr_array_add(m->calls, entry);
    g_mutex_unlock(&m->lock);
}

/* The thread rule: a plugin that is not thread-safe is only ever called on
 * one thread, and may call the host only from it. */
static void check_thread(jet_mock *m, const char *fn)
{
    if (!m->thread_safe && g_thread_self() != m->owner)
        violation(m, RULE_THREAD,
                  "%s() called from a second thread; plugin %s does not declare "
                  "JET_PLUGIN_THREAD_SAFE, so every host call must come from the thread that "
                  "calls its init(), handle() and fini()", fn, m->desc->name);
}

size_t jet_mock_log_count(const jet_mock *m)
{
    g_return_val_if_fail(m != NULL, 0);
    g_mutex_lock((GMutex *)&m->lock);
    size_t n = m->log->len;
    g_mutex_unlock((GMutex *)&m->lock);
    return n;
}

const char *jet_mock_log_line(const jet_mock *m, size_t i, int *level)
{
    g_return_val_if_fail(m != NULL, NULL);
    g_mutex_lock((GMutex *)&m->lock);
    const LogLine *l = i < m->log->len ? g_ptr_array_index(m->log, i) : NULL;
    g_mutex_unlock((GMutex *)&m->lock);
    if (level != NULL)
        *level = l != NULL ? l->level : -1;
    return l != NULL ? l->line : NULL;
}

size_t jet_mock_log_contains(const jet_mock *m, const char *needle)
{
    g_return_val_if_fail(m != NULL && needle != NULL, 0);
    size_t n = 0;
    g_mutex_lock((GMutex *)&m->lock);
    for (guint i = 0; i < m->log->len; i++)
        if (strstr(((const LogLine *)g_ptr_array_index(m->log, i))->line, needle) != NULL)
            n++;
    g_mutex_unlock((GMutex *)&m->lock);
    return n;
}

void jet_mock_clear_log(jet_mock *m)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    g_ptr_array_set_size(m->log, 0);
    g_mutex_unlock(&m->lock);
}

size_t jet_mock_call_count(const jet_mock *m, const char *fn)
{
    g_return_val_if_fail(m != NULL, 0);
    size_t n = 0, fn_len = fn != NULL ? strlen(fn) : 0;
    g_mutex_lock((GMutex *)&m->lock);
    for (guint i = 0; i < m->calls->len; i++) {
        const char *c = g_ptr_array_index(m->calls, i);
        if (fn == NULL || strcmp(c, fn) == 0 ||
            (strncmp(c, fn, fn_len) == 0 && c[fn_len] == '(' && strchr(fn, '(') == NULL))
            n++;
    }
    g_mutex_unlock((GMutex *)&m->lock);
    return n;
}

const char *jet_mock_call_name(const jet_mock *m, size_t i)
{
    g_return_val_if_fail(m != NULL, NULL);
    g_mutex_lock((GMutex *)&m->lock);
    const char *c = i < m->calls->len ? g_ptr_array_index(m->calls, i) : NULL;
    g_mutex_unlock((GMutex *)&m->lock);
    return c;
}

void jet_mock_clear_calls(jet_mock *m)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    g_ptr_array_set_size(m->calls, 0);
    g_mutex_unlock(&m->lock);
}

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
    record_call(m, fn, arg);
    check_thread(m, fn);
    if (arg == NULL || !g_str_has_prefix(fn, "ctx_option"))
        return;
    const jet_option *o = declared(m->desc, arg);
    if (o == NULL) {
        g_autofree char *list = declared_list(m->desc);
        violation(m, RULE_OPT_UNDECLARED,
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
        violation(m, RULE_OPT_TYPE,
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

/* --- lent messages -------------------------------------------------------- */

static gboolean lent_call(const JetMsgStrict *s, const jet_msg *jm, const char *fn)
{
    Lent *l = s->data;
    jet_mock *m = l->mock;
    (void)jm;
    record_call(m, fn, NULL);
    if (g_atomic_int_get(&l->msg.poisoned)) {
        violation(m, RULE_USE_AFTER,
                  "%s() on the jet_msg of stream seq %" G_GUINT64_FORMAT " after its handle() "
                  "returned: the handle is borrowed for the duration of handle() only (copy what "
                  "you need); the mock refused the call", fn, l->msg.stream_seq);
        return FALSE;
    }
    check_thread(m, fn);
    return TRUE;
}

static GPtrArray *headers_copy(const GPtrArray *src)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; src != NULL && i < src->len; i++)
        g_ptr_array_add(a, g_strdup(g_ptr_array_index(src, i)));
    return a;
}

static Lent *lent_new(jet_mock *m, const jet_mock_msg *b)
{
    Lent *l = g_new0(Lent, 1);
    l->mock = m;
    l->subject = g_strdup(b->subject);
    l->len = b->len;
    l->data = b->len > 0 ? g_memdup2(b->data, b->len) : NULL;
    l->headers = headers_copy(b->headers);

    jet_msg *jm = &l->msg;
    jm->subject = l->subject;
    jm->data = l->data;
    jm->len = l->len;
    jm->headers = l->headers;
    jm->stream = m->stream;
    jm->consumer = m->consumer;
    jm->stream_seq = b->stream_seq;
    jm->consumer_seq = b->consumer_seq;
    jm->deliveries = b->deliveries;
    jm->has_enqueued = b->has_enqueued;
    jm->enqueued_ns = b->enqueued_ns;
    jm->failures = b->failures;
    jm->postpones = b->postpones;
    jm->has_first_failure = b->has_first_failure;
    jm->first_failure_ns = b->first_failure_ns;
    jet_msg_reset_verdict(jm);
    l->strict.call = lent_call;
    l->strict.data = l;
    jm->strict = &l->strict;
    g_ptr_array_add(m->lent, l);
    return l;
}

/* After handle(): every further call through the handle is refused, and the
 * bytes it lent are overwritten, so a pointer kept from msg_subject() or
 * msg_data() reads garbage in the test rather than the right answer. */
static void lent_poison(Lent *l)
{
    g_atomic_int_set(&l->msg.poisoned, TRUE);
    if (l->subject != NULL)
        memset(l->subject, '?', strlen(l->subject));
    if (l->data != NULL)
        memset(l->data, 0xA5, l->len);
    for (guint i = 0; i < l->headers->len; i++) {
        char *s = g_ptr_array_index(l->headers, i);
        memset(s, '?', strlen(s));
    }
}

static void lent_free(gpointer p)
{
    Lent *l = p;
    g_free(l->subject);
    g_free(l->data);
    g_ptr_array_unref(l->headers);
    g_free(l);
}

/* --- policy ---------------------------------------------------------------- */

static gboolean parse_uint(const char *v, guint64 min, guint64 max, guint64 *out)
{
    return g_ascii_string_to_unsigned(v, 10, min, max, out, NULL);
}

static int policy_set(jet_mock *m, const char *key, const char *value)
{
    g_autoptr(GError) err = NULL;
    guint64 u = 0;
    if (strcmp(key, "rungs") == 0) {
        g_auto(GStrv) items = g_strsplit(value, ",", -1);
        guint n = g_strv_length(items);
        g_autofree guint64 *rungs = g_new0(guint64, MAX(n, 1));
        for (guint i = 0; i < n; i++) {
            g_strstrip(items[i]);
            if (!jet_duration_parse_ms(items[i], &rungs[i], &err))
                return fail(m, JET_MOCK_EINVAL, "policy rungs: rung %u: %s", i + 1, err->message);
            if (rungs[i] == 0)
                return fail(m, JET_MOCK_EINVAL, "policy rungs: rung %u is 0; each must be more than 0", i + 1);
        }
        if (n == 0 || (n == 1 && items[0][0] == '\0'))
            return fail(m, JET_MOCK_EINVAL, "policy rungs: the ladder is empty");
        g_free(m->rungs);
        m->rungs = g_steal_pointer(&rungs);
        m->policy.rungs_ms = m->rungs;
        m->policy.n_rungs = n;
    } else if (strcmp(key, "max_attempts") == 0) {
        if (!parse_uint(value, 0, G_MAXINT32, &u))
            return fail(m, JET_MOCK_EINVAL, "policy max_attempts: '%s' is not an integer >= 0", value);
        m->policy.max_attempts = (guint)u;
    } else if (strcmp(key, "postpone_horizon") == 0) {
        if (!jet_duration_parse_ms(value, &u, &err))
            return fail(m, JET_MOCK_EINVAL, "policy postpone_horizon: %s", err->message);
        m->policy.postpone_horizon_ms = u;
    } else if (strcmp(key, "max_postpone_delay") == 0) {
        if (!jet_duration_parse_ms(value, &u, &err))
            return fail(m, JET_MOCK_EINVAL, "policy max_postpone_delay: %s", err->message);
        if (u == 0)
            return fail(m, JET_MOCK_EINVAL, "policy max_postpone_delay: must be more than 0");
        m->policy.max_postpone_delay_ms = u;
    } else if (strcmp(key, "capture_reserve") == 0) {
        if (!parse_uint(value, 0, G_MAXINT32, &u))
            return fail(m, JET_MOCK_EINVAL, "policy capture_reserve: '%s' is not an integer >= 0", value);
        m->policy.capture_reserve = (guint)u;
    } else if (strcmp(key, "crash_limit") == 0) {
        if (!parse_uint(value, 1, G_MAXINT32, &u))
            return fail(m, JET_MOCK_EINVAL, "policy crash_limit: '%s' is not an integer >= 1", value);
        m->policy.crash_limit = (guint)u;
    } else if (strcmp(key, "max_deliver") == 0) {
        gint64 d = 0;
        if (!g_ascii_string_to_signed(value, 10, -1, G_MAXINT32, &d, NULL) || d == 0)
            return fail(m, JET_MOCK_EINVAL,
                        "policy max_deliver: '%s' is not -1 (unlimited) or an integer >= 1", value);
        m->policy.max_deliver = d;
    } else {
        return fail(m, JET_MOCK_EINVAL,
                    "policy: unknown key '%s' (known: rungs, max_attempts, postpone_horizon, "
                    "max_postpone_delay, max_deliver, capture_reserve, crash_limit)", key);
    }
    return JET_MOCK_OK;
}

/* The daemon's defaults are the config's (config.c's key table): read them
 * from there, so the mock cannot drift from what an unconfigured binding
 * gets. */
static void policy_defaults(jet_mock *m)
{
    jet_settle_policy_init_default(&m->policy);
    JetConfigKeyInfo info;
    for (gsize i = 0; jet_config_key_info("binding", i, &info); i++) {
        if (info.default_text == NULL)
            continue;
        const char *k = info.key;
        if (strcmp(k, "rungs") == 0 || strcmp(k, "max_attempts") == 0 ||
            strcmp(k, "postpone_horizon") == 0 || strcmp(k, "max_postpone_delay") == 0 ||
            strcmp(k, "max_deliver") == 0 || strcmp(k, "capture_reserve") == 0 ||
            strcmp(k, "crash_limit") == 0) {
            int rc = policy_set(m, k, info.default_text);
            g_warn_if_fail(rc == JET_MOCK_OK);
        }
    }
}

int jet_mock_set_policy(jet_mock *m, const char *key, const char *value)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (key == NULL || value == NULL)
        return fail(m, JET_MOCK_EINVAL, "jet_mock_set_policy: key and value must not be NULL");
    if (m->state != MOCK_NEW)
        return fail(m, JET_MOCK_ESTATE, "jet_mock_set_policy: the mock has already started");
    return policy_set(m, key, value);
}

/* --- life cycle ------------------------------------------------------------ */

static gint64 mock_clock(gpointer data)
{
    jet_mock *m = data;
    g_mutex_lock(&m->lock);
    gint64 now = m->clock_ns;
    g_mutex_unlock(&m->lock);
    return now;
}

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
    m->violations = g_ptr_array_new_with_free_func(violation_free);
    m->log = g_ptr_array_new_with_free_func(NULL);
    m->calls = g_ptr_array_new_with_free_func(g_free);
    m->lent = g_ptr_array_new_with_free_func(lent_free);
    m->dlq_strings = g_ptr_array_new_with_free_func(g_free);
    policy_defaults(m);
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
        return fail(m, JET_MOCK_EINVAL, "jet_mock_set_option: name and value must not be NULL");
    if (m->state != MOCK_NEW)
        return fail(m, JET_MOCK_ESTATE, "jet_mock_set_option: the mock has already started");
    const char *n = g_str_has_prefix(name, "option.") ? name + strlen("option.") : name;
    g_hash_table_insert(m->options, g_strdup(n), g_strdup(value));
    return JET_MOCK_OK;
}

int jet_mock_set_binding(jet_mock *m, const char *binding, const char *stream, const char *consumer)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (m->state != MOCK_NEW)
        return fail(m, JET_MOCK_ESTATE, "jet_mock_set_binding: the mock has already started");
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
            violation(m, RULE_OPT_UNDECLARED, "option.%s: plugin %s declares no such option "
                      "(it declares: %s)", (const char *)k, m->desc->name, list);
            return fail(m, JET_MOCK_EOPTION, "%s: option.%s: plugin %s declares no such option "
                        "(it declares: %s)", RULE_OPT_UNDECLARED, (const char *)k, m->desc->name, list);
        }
        g_autoptr(GError) err = NULL;
        if (!jet_option_value_check(o, v, &err)) {
            violation(m, RULE_OPT_TYPE, "option.%s: %s; plugin %s declares it as %s",
                      (const char *)k, err->message, m->desc->name, opt_type_name(o->type));
            return fail(m, JET_MOCK_EOPTION, "%s: option.%s: %s; plugin %s declares it as %s",
                        RULE_OPT_TYPE, (const char *)k, err->message, m->desc->name,
                        opt_type_name(o->type));
        }
    }
    for (const jet_option *o = m->desc->options; o != NULL && o->name != NULL; o++) {
        if ((o->flags & JET_OPTION_REQUIRED) && !g_hash_table_contains(m->options, o->name)) {
            violation(m, RULE_OPT_REQUIRED, "option.%s: plugin %s requires it (%s)", o->name,
                      m->desc->name, o->help != NULL ? o->help : "no help given");
            return fail(m, JET_MOCK_EOPTION, "%s: option.%s: plugin %s requires it",
                        RULE_OPT_REQUIRED, o->name, m->desc->name);
        }
    }
    return JET_MOCK_OK;
}

int jet_mock_start(jet_mock *m)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (m->state != MOCK_NEW)
        return fail(m, JET_MOCK_ESTATE, "jet_mock_start: the mock was already started");
    if (m->policy.max_deliver > 0 && m->policy.max_deliver <= (gint64)m->policy.capture_reserve)
        return fail(m, JET_MOCK_EINVAL,
                    "policy: max_deliver (%" G_GINT64_FORMAT ") must be more than capture_reserve (%u)",
                    m->policy.max_deliver, m->policy.capture_reserve);
    int rc = check_options(m);
    if (rc != JET_MOCK_OK) {
        m->state = MOCK_FAILED;
        return rc;
    }
    g_autoptr(GError) err = NULL;
    m->inst = jet_instance_new(m->plugin, m->binding, m->options, &err);
    if (m->inst == NULL) {
        m->state = MOCK_FAILED;
        return fail(m, JET_MOCK_EOPTION, "%s", err->message);
    }
    m->dlq_subject = g_strdup_printf("jethost.dlq.%s", m->binding);
    jet_instance_set_clock(m->inst, mock_clock, m);
    registry_add(m->inst, m);
    m->owner = g_thread_self();
    if (!jet_instance_start(m->inst, &err)) {
        registry_remove(m->inst);
        g_clear_pointer(&m->inst, jet_instance_free);
        m->state = MOCK_FAILED;
        return fail(m, JET_MOCK_EINIT, "%s", err->message);
    }
    m->state = MOCK_STARTED;
    return JET_MOCK_OK;
}

int jet_mock_stop(jet_mock *m)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (m->state != MOCK_STARTED)
        return m->state == MOCK_STOPPED ? JET_MOCK_OK
                                        : fail(m, JET_MOCK_ESTATE, "jet_mock_stop: not started");
    size_t before = jet_mock_violation_count(m);
    m->owner = g_thread_self();
    jet_ctx *c = m->inst;
    g_clear_pointer(&m->inst, jet_instance_free);   /* runs fini() */
    registry_remove(c);
    m->state = MOCK_STOPPED;
    return jet_mock_violation_count(m) > before ? JET_MOCK_VIOLATION : JET_MOCK_OK;
}

void jet_mock_free(jet_mock *m)
{
    if (m == NULL)
        return;
    jet_mock_stop(m);
    g_hash_table_unref(m->options);
    g_free(m->rungs);
    g_free(m->binding);
    g_free(m->stream);
    g_free(m->consumer);
    g_free(m->dlq_subject);
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
    g_free(m->dlq_headers);
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

/* --- the clock ----------------------------------------------------------- */

void jet_mock_clock_set_ns(jet_mock *m, int64_t unix_ns)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    m->clock_ns = unix_ns;
    g_mutex_unlock(&m->lock);
}

void jet_mock_clock_advance_ms(jet_mock *m, uint64_t ms)
{
    g_return_if_fail(m != NULL);
    g_mutex_lock(&m->lock);
    guint64 step = ms > (guint64)G_MAXINT64 / 1000000 ? (guint64)G_MAXINT64 : ms * 1000000;
    m->clock_ns = m->clock_ns > G_MAXINT64 - (gint64)step ? G_MAXINT64 : m->clock_ns + (gint64)step;
    g_mutex_unlock(&m->lock);
}

int64_t jet_mock_clock_ns(const jet_mock *m)
{
    g_return_val_if_fail(m != NULL, 0);
    return mock_clock((gpointer)m);
}

/* --- messages ------------------------------------------------------------ */

jet_mock_msg *jet_mock_msg_new(jet_mock *m, const char *subject)
{
    g_return_val_if_fail(m != NULL && subject != NULL, NULL);
    jet_mock_msg *b = g_new0(jet_mock_msg, 1);
    b->subject = g_strdup(subject);
    b->headers = g_ptr_array_new_with_free_func(g_free);
    m->next_seq++;
    b->stream_seq = m->next_seq;
    b->consumer_seq = m->next_seq;
    b->deliveries = 1;
    b->has_enqueued = TRUE;
    b->enqueued_ns = jet_mock_clock_ns(m);
    return b;
}

void jet_mock_msg_free(jet_mock_msg *b)
{
    if (b == NULL)
        return;
    g_free(b->subject);
    g_free(b->data);
    g_ptr_array_unref(b->headers);
    g_free(b);
}

void jet_mock_msg_set_data(jet_mock_msg *b, const void *data, size_t len)
{
    g_return_if_fail(b != NULL && (data != NULL || len == 0));
    g_free(b->data);
    b->data = len > 0 ? g_memdup2(data, len) : NULL;
    b->len = len;
}

void jet_mock_msg_set_text(jet_mock_msg *b, const char *text)
{
    g_return_if_fail(b != NULL && text != NULL);
    jet_mock_msg_set_data(b, text, strlen(text));
}

void jet_mock_msg_add_header(jet_mock_msg *b, const char *name, const char *value)
{
    g_return_if_fail(b != NULL && name != NULL && value != NULL);
    g_ptr_array_add(b->headers, g_strdup(name));
    g_ptr_array_add(b->headers, g_strdup(value));
}

void jet_mock_msg_set_header(jet_mock_msg *b, const char *name, const char *value)
{
    g_return_if_fail(b != NULL && name != NULL && value != NULL);
    for (guint i = 0; i + 1 < b->headers->len;) {
        if (strcmp(g_ptr_array_index(b->headers, i), name) == 0)
            g_ptr_array_remove_range(b->headers, i, 2);
        else
            i += 2;
    }
    jet_mock_msg_add_header(b, name, value);
}

void jet_mock_msg_set_seq(jet_mock_msg *b, uint64_t stream_seq, uint64_t consumer_seq)
{
    g_return_if_fail(b != NULL);
    b->stream_seq = stream_seq;
    b->consumer_seq = consumer_seq;
}

void jet_mock_msg_set_deliveries(jet_mock_msg *b, uint32_t deliveries)
{
    g_return_if_fail(b != NULL && deliveries >= 1);
    b->deliveries = deliveries;
}

void jet_mock_msg_set_enqueued_ns(jet_mock_msg *b, int64_t unix_ns)
{
    g_return_if_fail(b != NULL);
    b->has_enqueued = TRUE;
    b->enqueued_ns = unix_ns;
}

void jet_mock_msg_clear_enqueued(jet_mock_msg *b)
{
    g_return_if_fail(b != NULL);
    b->has_enqueued = FALSE;
    b->enqueued_ns = 0;
}

void jet_mock_msg_set_ledger(jet_mock_msg *b, uint32_t failures, uint32_t postpones)
{
    g_return_if_fail(b != NULL);
    b->failures = failures;
    b->postpones = postpones;
}

void jet_mock_msg_set_first_failure_ns(jet_mock_msg *b, int64_t unix_ns)
{
    g_return_if_fail(b != NULL);
    b->has_first_failure = TRUE;
    b->first_failure_ns = unix_ns;
}

void jet_mock_msg_clear_first_failure(jet_mock_msg *b)
{
    g_return_if_fail(b != NULL);
    b->has_first_failure = FALSE;
    b->first_failure_ns = 0;
}

void jet_mock_msg_set_strikes(jet_mock_msg *b, uint32_t strikes)
{
    g_return_if_fail(b != NULL);
    b->strikes = strikes;
}

void jet_mock_msg_set_breaker_claim(jet_mock_msg *b, int claimed)
{
    g_return_if_fail(b != NULL);
    b->breaker_claim = claimed != 0;
}

int jet_mock_msg_redeliver(jet_mock_msg *b, const jet_mock_settlement *s)
{
    g_return_val_if_fail(b != NULL && s != NULL, JET_MOCK_EINVAL);
    if (s->action != JET_MOCK_RETRY && s->action != JET_MOCK_POSTPONE)
        return JET_MOCK_ESTATE;
    if (b->deliveries < G_MAXUINT32)
        b->deliveries++;
    if (s->is_failure) {
        if (b->failures < G_MAXUINT32)
            b->failures++;
        if (!b->has_first_failure) {
            b->has_first_failure = TRUE;
            b->first_failure_ns = s->now_ns;
        }
    }
    if (s->action == JET_MOCK_POSTPONE && b->postpones < G_MAXUINT32)
        b->postpones++;
    return JET_MOCK_OK;
}

/* --- delivering ------------------------------------------------------------ */

static const char *outcome_name(JetActionKind k)
{
    switch (k) {
    case JET_ACTION_ACK: return "acked";
    case JET_ACTION_RETRY: return "retried";
    case JET_ACTION_POSTPONE: return "postponed";
    case JET_ACTION_CAPTURE: return "dead-lettered";
    }
    return "unknown";
}

/* Which rule a plugin error broke, in the order settle.c weighs them. */
static const char *plugin_error_rule(const JetSettlePolicy *p, const JetSettleFacts *f)
{
    int v = f->verdict;
    if (v != JET_ACK && v != JET_RETRY && v != JET_POSTPONE && v != JET_REJECT)
        return RULE_VERDICT;
    if (f->reason_too_long || (f->reason != NULL && strlen(f->reason) > JET_REASON_MAX))
        return RULE_REASON_LENGTH;
    if (v == JET_POSTPONE && (!f->has_delay || f->delay_ms == 0))
        return RULE_POSTPONE_DELAY;
    if (v == JET_POSTPONE && f->delay_ms > p->max_postpone_delay_ms)
        return RULE_POSTPONE_CAP;
    return RULE_VERDICT;   /* not reached while settle.c keeps this list */
}

/* The dead-letter record: the daemon's own jet_capture_headers() (capture.c)
 * on the mock message's headers, with the facts the executor would give it.  The mock knows no server, so no max_payload: only
 * the 64 KiB header-block limit applies (docs/mock.md). */
static void fill_dlq(jet_mock *m, const jet_mock_msg *b, const JetSettleFacts *f,
                     const JetSettleAction *a, jet_mock_settlement *out)
{
    /* The headers in the order they were added (the daemon reads a
     * delivery's in block order); a header with no name cannot come from a
     * server and is left out. */
    g_autoptr(GPtrArray) orig = g_ptr_array_new();
    for (guint i = 0; i + 1 < b->headers->len; i += 2) {
        if (*(const char *)g_ptr_array_index(b->headers, i) == '\0')
            continue;
        g_ptr_array_add(orig, g_ptr_array_index(b->headers, i));
        g_ptr_array_add(orig, g_ptr_array_index(b->headers, i + 1));
    }
    JetCaptureFacts c = {
        .stream = m->stream,
        .stream_created_ns = MOCK_STREAM_CREATED_NS,
        .consumer = m->consumer,
        .subject = b->subject,
        .stream_seq = b->stream_seq,
        .deliveries = f->deliveries,
        .postpones = f->postpones,
        .has_enqueued = b->has_enqueued,
        .enqueued_ns = b->enqueued_ns,
        .plugin_name = m->desc->name,
        .plugin_version = m->desc->version,
        .host = MOCK_HOST_NAME,
        .binding = m->binding,
    };
    jet_capture_facts_settled(&c, a, f->failures, b->has_first_failure, b->first_failure_ns, f->now_ns);
    g_autoptr(GError) err = NULL;
    GPtrArray *hs = jet_capture_headers((int)MIN(b->len, (gsize)G_MAXINT), orig, NULL, &c, 0, NULL, &err);
    if (hs == NULL) {
        /* Too large even without the original headers: the daemon keeps it
         * on the consumer, never truncated, never acked. */
        out->outcome = "stranded";
        return;
    }
    g_ptr_array_unref(m->dlq_strings);
    m->dlq_strings = hs;
    gsize n = m->dlq_strings->len / 2;
    m->dlq_headers = g_new0(jet_mock_header, n + 1);
    for (gsize i = 0; i < n; i++) {
        m->dlq_headers[i].name = g_ptr_array_index(m->dlq_strings, 2 * i);
        m->dlq_headers[i].value = g_ptr_array_index(m->dlq_strings, 2 * i + 1);
    }
    out->dlq_subject = m->dlq_subject;
    out->n_dlq_headers = n;
    out->dlq_headers = m->dlq_headers;
}

static char *describe(const JetSettleAction *a)
{
    if (a->kind == JET_ACTION_RETRY || a->kind == JET_ACTION_POSTPONE)
        return g_strdup_printf("%s in %" G_GUINT64_FORMAT " ms", jet_action_name(a->kind), a->delay_ms);
    if (a->kind == JET_ACTION_CAPTURE)
        return g_strdup_printf("capture (%s)", jet_cause_name(a->cause));
    return g_strdup(jet_action_name(a->kind));
}

int jet_mock_deliver(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (out != NULL)
        memset(out, 0, sizeof *out);
    if (b == NULL || out == NULL)
        return fail(m, JET_MOCK_EINVAL, "jet_mock_deliver: message and settlement must not be NULL");
    if (m->state != MOCK_STARTED)
        return fail(m, JET_MOCK_ESTATE, "jet_mock_deliver: the mock is not started (jet_mock_start)");
    g_ptr_array_set_size(m->dlq_strings, 0);
    g_clear_pointer(&m->dlq_headers, g_free);

    size_t before = jet_mock_violation_count(m);
    JetSettleFacts f = {
        .verdict = -1,
        .deliveries = b->deliveries,
        .has_enqueued = b->has_enqueued,
        .enqueued_ns = b->enqueued_ns,
        .now_ns = jet_mock_clock_ns(m),
        .failures = b->failures,
        .postpones = b->postpones,
        .strikes = b->strikes,
        .breaker_claim = b->breaker_claim,
    };
    JetSettleAction a;
    out->verdict = -1;
    if (!jet_settle_before_handle(&m->policy, &f, &a)) {
        Lent *l = lent_new(m, b);
        m->owner = g_thread_self();
        int verdict = jet_instance_handle(m->inst, &l->msg);
        lent_poison(l);
        f.verdict = verdict;
        f.has_delay = l->msg.has_delay;
        f.delay_ms = l->msg.delay_ms;
        f.reason_too_long = l->msg.reason_too_long;
        f.reason = l->msg.has_reason ? l->msg.reason : NULL;
        f.now_ns = jet_mock_clock_ns(m);
        jet_settle_decide(&m->policy, &f, &a);
        out->handled = 1;
        out->verdict = verdict;
    }

    out->action = (jet_mock_action)a.kind;
    out->action_name = jet_action_name(a.kind);
    out->delay_ms = a.delay_ms;
    out->cause = jet_cause_name(a.cause);
    out->outcome = outcome_name(a.kind);
    out->is_failure = a.is_failure;
    out->failure_number = a.failure_number;
    out->plugin_error = a.plugin_error;
    g_strlcpy(out->reason, a.reason, sizeof out->reason);
    out->now_ns = f.now_ns;
    out->stream_seq = b->stream_seq;
    out->deliveries = b->deliveries;
    if (a.kind == JET_ACTION_CAPTURE)
        fill_dlq(m, b, &f, &a, out);

    if (a.plugin_error) {
        g_autofree char *what = describe(&a);
        violation(m, plugin_error_rule(&m->policy, &f),
                  "handle() of stream seq %" G_GUINT64_FORMAT ": %s; the daemon counts it as a "
                  "failed attempt (%s), never as an ack", b->stream_seq, a.reason, what);
    }
    size_t after = jet_mock_violation_count(m);
    if (after > before) {
        out->violation = jet_mock_violation_rule(m, before);
        return JET_MOCK_VIOLATION;
    }
    return JET_MOCK_OK;
}

const char *jet_mock_settlement_header(const jet_mock_settlement *s, const char *name)
{
    g_return_val_if_fail(s != NULL && name != NULL, NULL);
    for (size_t i = 0; i < s->n_dlq_headers; i++)
        if (strcmp(s->dlq_headers[i].name, name) == 0)
            return s->dlq_headers[i].value;
    return NULL;
}
