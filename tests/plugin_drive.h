/* Driving a shipped plugin without a server, through the core calls only:
 * jet_plugin_load + jet_instance_new + jet_instance_start, then a struct
 * jet_msg filled by hand and jet_instance_handle.  Header-only helpers for
 * tests/unit/plugin_*.c. */
#ifndef JET_TEST_PLUGIN_DRIVE_H
#define JET_TEST_PLUGIN_DRIVE_H

#include "harness.h"
#include "host_api.h"
#include "instance.h"
#include "jet_msg.h"

#include <stdarg.h>
#include <string.h>

/* Loads a private copy of the built plugin NAME, once per test program. */
static inline JetPlugin *drive_plugin(const char *name)
{
    g_autofree char *path = jet_test_plugin_copy(name);
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, NULL, &err);
    g_assert_no_error(err);
    g_assert_nonnull(p);
    return p;
}

/* Options as key, value, ..., NULL. */
static inline GHashTable *drive_options_v(va_list ap)
{
    GHashTable *opts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    const char *k;
    while ((k = va_arg(ap, const char *)) != NULL) {
        const char *v = va_arg(ap, const char *);
        g_hash_table_insert(opts, g_strdup(k), g_strdup(v));
    }
    return opts;
}

/* Creates and starts an instance; the test fails when either step does. */
static inline JetInstance *drive_start(JetPlugin *p, ...)
{
    va_list ap;
    va_start(ap, p);
    g_autoptr(GHashTable) opts = drive_options_v(ap);
    va_end(ap);
    g_autoptr(GError) err = NULL;
    JetInstance *inst = jet_instance_new(p, "b", opts, &err);
    g_assert_no_error(err);
    g_assert_true(jet_instance_start(inst, &err));
    g_assert_no_error(err);
    return inst;
}

/* Creates and starts an instance that must fail (at validation or in
 * init()); returns the error message (caller frees). */
static inline char *drive_start_error(JetPlugin *p, ...)
{
    va_list ap;
    va_start(ap, p);
    g_autoptr(GHashTable) opts = drive_options_v(ap);
    va_end(ap);
    g_autoptr(GError) err = NULL;
    JetInstance *inst = jet_instance_new(p, "b", opts, &err);
    if (inst != NULL) {
        gboolean ok = jet_instance_start(inst, &err);
        jet_instance_free(inst);
        g_assert_false(ok);
    }
    g_assert_nonnull(err);
    g_test_message("refused: %s", err->message);
    return g_strdup(err->message);
}

/* A first delivery of a message with no headers. */
static inline void drive_msg_init(jet_msg *m, const char *subject, const void *data, size_t len)
{
    memset(m, 0, sizeof *m);
    m->subject = subject;
    m->data = data;
    m->len = len;
    m->stream = "ORDERS";
    m->consumer = "worker";
    m->stream_seq = 1;
    m->consumer_seq = 1;
    m->deliveries = 1;
}

/* Adds a header (the strings must outlive the message). */
static inline void drive_msg_header(jet_msg *m, const char *name, const char *value)
{
    if (m->headers == NULL)
        m->headers = g_ptr_array_new();
    g_ptr_array_add(m->headers, (gpointer)name);
    g_ptr_array_add(m->headers, (gpointer)value);
}

static inline void drive_msg_clear(jet_msg *m)
{
    if (m->headers != NULL)
        g_ptr_array_unref(m->headers);
    m->headers = NULL;
}

/* One handle() call with a fresh verdict. */
static inline int drive_handle(JetInstance *inst, jet_msg *m)
{
    jet_msg_reset_verdict(m);
    return jet_instance_handle(inst, m);
}

static inline void drive_assert_contains(const char *haystack, const char *needle)
{
    if (haystack == NULL || strstr(haystack, needle) == NULL)
        g_error("expected '%s' in: %s", needle, haystack != NULL ? haystack : "(null)");
}

#endif
