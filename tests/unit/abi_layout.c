/* The ABI cannot change by accident: every 1.0 member of the current
 * header sits where the frozen 1.0 header put it, with its size; the 1.1
 * members come after all of them, in the order they were added; and on
 * LP64 the whole layout is the table below, so a member moved or resized
 * fails here, not in a user's plugin.  No server. */
#include <jethost/plugin.h>

#include "abi_rows.h"

#include <glib.h>
#include <stdint.h>
#include <string.h>

static const JetAbiRow current_10[] = { JET_ABI_10_ROWS };

static void test_frozen_10(void)
{
    gsize n = 0;
    for (const JetAbiRow *f = jet_test_abi10_rows; f->name != NULL; f++, n++) {
        if (strcmp(f->name, "jet_host_api") == 0 || strcmp(f->name, "jet_plugin") == 0)
            continue;   /* the structs grew; their members did not move */
        gboolean found = FALSE;
        for (gsize i = 0; i < G_N_ELEMENTS(current_10); i++) {
            if (strcmp(current_10[i].name, f->name) != 0)
                continue;
            found = TRUE;
            g_test_message("%s: %zu+%zu", f->name, f->offset, f->size);
            g_assert_cmpuint(current_10[i].offset, ==, f->offset);
            g_assert_cmpuint(current_10[i].size, ==, f->size);
        }
        g_assert_true(found);
    }
    g_assert_cmpuint(n, ==, G_N_ELEMENTS(current_10) + 2);
}

/* 1.1 members: appended after the last 1.0 member, in this order. */
static void test_appended_11(void)
{
    size_t host_10_end = offsetof(jet_host_api, ctx_stopping) + sizeof(((jet_host_api *)0)->ctx_stopping);
    static const JetAbiRow host_11[] = {
        JET_ABI_ROW(jet_host_api, ctx_kind), JET_ABI_ROW(jet_host_api, msg_kind),
        JET_ABI_ROW(jet_host_api, msg_kv_key), JET_ABI_ROW(jet_host_api, msg_kv_op),
        JET_ABI_ROW(jet_host_api, msg_kv_revision), JET_ABI_ROW(jet_host_api, msg_ctx),
        JET_ABI_ROW(jet_host_api, msg_publish), JET_ABI_ROW(jet_host_api, ctx_metric_declare),
        JET_ABI_ROW(jet_host_api, ctx_metric_add), JET_ABI_ROW(jet_host_api, ctx_metric_set),
    };
    size_t at = host_10_end;
    for (gsize i = 0; i < G_N_ELEMENTS(host_11); i++) {
        g_assert_cmpuint(host_11[i].offset, >=, at);
        at = host_11[i].offset + host_11[i].size;
    }
    g_assert_cmpuint(sizeof(jet_host_api), >=, at);
    size_t plugin_10_end = offsetof(jet_plugin, fini) + sizeof(((jet_plugin *)0)->fini);
    g_assert_cmpuint(offsetof(jet_plugin, kv_initial_done), >=, plugin_10_end);
    g_assert_cmpuint(offsetof(jet_plugin, option_size), >, offsetof(jet_plugin, kv_initial_done));
    /* The enums keep their numbers. */
    g_assert_cmpint(JET_ACK, ==, 0);
    g_assert_cmpint(JET_REJECT, ==, 3);
    g_assert_cmpint(JET_BINDING_DURABLE, ==, 0);
    g_assert_cmpint(JET_BINDING_ORDERED, ==, 1);
    g_assert_cmpint(JET_BINDING_KV, ==, 2);
    g_assert_cmpint(JET_KV_NONE, ==, 0);
    g_assert_cmpint(JET_KV_PUT, ==, 1);
    g_assert_cmpint(JET_KV_DELETE, ==, 2);
    g_assert_cmpint(JET_KV_PURGE, ==, 3);
    g_assert_cmpint(JET_METRIC_COUNTER, ==, 0);
    g_assert_cmpint(JET_METRIC_GAUGE, ==, 1);
    g_assert_cmpint(JET_ESTATE, ==, -4);
    g_assert_cmpint(JET_ELIMIT, ==, -5);
}

/* The whole layout on LP64 (x86_64, aarch64): sizes of the structs and
 * where the last member of each version sits. */
static void test_lp64(void)
{
#if UINTPTR_MAX == 0xffffffffffffffffu
    g_assert_cmpuint(offsetof(jet_host_api, msg_subject), ==, 8);
    g_assert_cmpuint(offsetof(jet_host_api, ctx_stopping), ==, 8 + 22 * 8);
    g_assert_cmpuint(offsetof(jet_host_api, ctx_kind), ==, 8 + 23 * 8);
    g_assert_cmpuint(offsetof(jet_host_api, msg_kv_revision), ==, 8 + 27 * 8);
    g_assert_cmpuint(offsetof(jet_host_api, msg_ctx), ==, 8 + 28 * 8);
    g_assert_cmpuint(offsetof(jet_host_api, ctx_metric_set), ==, 8 + 32 * 8);
    g_assert_cmpuint(sizeof(jet_host_api), ==, 8 + 33 * 8);
    g_assert_cmpuint(offsetof(jet_plugin, name), ==, 8);
    g_assert_cmpuint(offsetof(jet_plugin, fini), ==, 56);
    g_assert_cmpuint(offsetof(jet_plugin, kv_initial_done), ==, 64);
    g_assert_cmpuint(offsetof(jet_plugin, option_size), ==, 72);
    g_assert_cmpuint(sizeof(jet_plugin), ==, 80);
    g_assert_cmpuint(sizeof(jet_option), ==, 40);
#else
    g_test_skip("not an LP64 build");
#endif
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/abi/frozen-1.0-members-unmoved", test_frozen_10);
    g_test_add_func("/abi/1.1-appended", test_appended_11);
    g_test_add_func("/abi/lp64-layout", test_lp64);
    return g_test_run();
}
