/* What a mock records and lends: its error text, the strict rules a
 * plugin broke, the host calls and log lines it saw, and the copies of
 * messages it lends to handle() (mock_private.h). */
#include "mock_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int jet__mock_fail(jet_mock *m, int code, const char *fmt, ...)
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

void jet__mock_violation_free(gpointer p)
{
    Violation *v = p;
    g_free(v->message);
    g_free(v->text);
    g_free(v);
}

void jet__mock_violation(jet_mock *m, const char *rule, const char *fmt, ...)
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

void jet__mock_record_call(jet_mock *m, const char *fn, const char *arg)
{
    char *entry = arg != NULL ? g_strdup_printf("%s(%s)", fn, arg) : g_strdup(fn);
    g_mutex_lock(&m->lock);
    g_ptr_array_add(m->calls, entry);
    g_mutex_unlock(&m->lock);
}

/* The thread rule: a plugin that is not thread-safe is only ever called on
 * one thread, and may call the host only from it. */
void jet__mock_check_thread(jet_mock *m, const char *fn)
{
    if (!m->thread_safe && g_thread_self() != m->owner)
        jet__mock_violation(m, RULE_THREAD,
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

/* --- lent messages -------------------------------------------------------- */

static gboolean lent_call(const JetMsgStrict *s, const jet_msg *jm, const char *fn)
{
    Lent *l = s->data;
    jet_mock *m = l->mock;
    (void)jm;
    jet__mock_record_call(m, fn, NULL);
    if (g_atomic_int_get(&l->given_up))
        return FALSE;   /* given up at the stop: refused without a violation */
    if (g_atomic_int_get(&l->completed)) {
        jet__mock_violation(m, RULE_USE_AFTER,
                  "%s() on the jet_msg of stream seq %" G_GUINT64_FORMAT " after its msg_complete(): a completed "
                  "delivery is the host's again; the mock refused the call", fn, l->msg.stream_seq);
        return FALSE;
    }
    if (g_atomic_int_get(&l->pending))
        return TRUE;   /* pending: the plugin may complete it from any thread (docs/async.md) */
    if (g_atomic_int_get(&l->msg.poisoned)) {
        jet__mock_violation(m, RULE_USE_AFTER,
                  "%s() on the jet_msg of stream seq %" G_GUINT64_FORMAT " after its handle() "
                  "returned: the handle is borrowed for the duration of handle() only (copy what "
                  "you need); the mock refused the call", fn, l->msg.stream_seq);
        return FALSE;
    }
    jet__mock_check_thread(m, fn);
    return TRUE;
}

GPtrArray *jet__mock_headers_copy(const GPtrArray *src)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; src != NULL && i < src->len; i++)
        g_ptr_array_add(a, g_strdup(g_ptr_array_index(src, i)));
    return a;
}

Lent *jet__mock_lent_new(jet_mock *m, const jet_msg *src)
{
    Lent *l = g_new0(Lent, 1);
    l->mock = m;
    l->subject = g_strdup(src->subject);
    l->len = src->len;
    l->data = src->len > 0 ? g_memdup2(src->data, src->len) : NULL;
    l->headers = jet__mock_headers_copy(src->headers);

    jet_msg *jm = &l->msg;
    *jm = *src;
    jm->subject = l->subject;
    if (src->kv_key != NULL && src->subject != NULL)
        jm->kv_key = l->subject + (src->kv_key - src->subject);   /* poisoned with the subject */
    jm->data = l->data;
    jm->headers = l->headers;
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
void jet__mock_lent_poison(Lent *l)
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

void jet__mock_lent_free(gpointer p)
{
    Lent *l = p;
    g_free(l->subject);
    g_free(l->data);
    g_ptr_array_unref(l->headers);
    g_free(l);
}
