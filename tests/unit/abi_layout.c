/* The ABI cannot change by accident: every 1.0 member of the current
 * header sits where the frozen 1.0 header put it, with its size; the 1.1
 * members come after all of them, in the order they were added; and on
 * LP64 the whole layout is the table below, so a member moved or resized
 * fails here, not in a user's plugin.  No server. */
#include <jethost/mock.h>
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
    g_assert_cmpint(JET_PENDING, ==, 4);
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
    /* The mock's actions too: a test may store or compare the numbers. */
    g_assert_cmpint(JET_MOCK_ACK, ==, 0);
    g_assert_cmpint(JET_MOCK_RETRY, ==, 1);
    g_assert_cmpint(JET_MOCK_POSTPONE, ==, 2);
    g_assert_cmpint(JET_MOCK_CAPTURE, ==, 3);
    g_assert_cmpint(JET_MOCK_HELD, ==, 4);
}

/* 1.2 members: after the last 1.1 member of the descriptor, in this
 * order; the outcome numbers are fixed. */
static void test_appended_12(void)
{
    size_t plugin_11_end = offsetof(jet_plugin, option_size) + sizeof(((jet_plugin *)0)->option_size);
    g_assert_cmpuint(offsetof(jet_plugin, validate), >=, plugin_11_end);
    g_assert_cmpuint(offsetof(jet_plugin, settled), >, offsetof(jet_plugin, validate));
    g_assert_cmpuint(offsetof(jet_plugin, handle_batch), >, offsetof(jet_plugin, settled));
    g_assert_cmpuint(offsetof(jet_host_api, msg_complete), >=,
                     offsetof(jet_host_api, ctx_metric_set) + sizeof(((jet_host_api *)0)->ctx_metric_set));
    g_assert_cmpuint(offsetof(jet_settled, struct_size), ==, 0);
    g_assert_cmpint(JET_SETTLED_ACKED, ==, 0);
    g_assert_cmpint(JET_SETTLED_RETRIED, ==, 1);
    g_assert_cmpint(JET_SETTLED_POSTPONED, ==, 2);
    g_assert_cmpint(JET_SETTLED_DEAD_LETTERED, ==, 3);
    g_assert_cmpint(JET_SETTLED_UNSETTLED, ==, 4);
    g_assert_cmpint(JET_SETTLED_UNCERTAIN, ==, 5);
    g_assert_cmpint(JET_SETTLED_STRANDED, ==, 6);
}

/* The whole layout on LP64 (x86_64, aarch64): every member of every public
 * struct, the plugin ABI's and the mock host's, where it sits and how big
 * it is, and each struct's size.  A change here is an ABI change: a new
 * member goes at the end, and this table grows with it. */
#if UINTPTR_MAX == 0xffffffffffffffffu
static const JetAbiRow lp64[] = {
        { "jet_host_api.struct_size", 0, 4 },
        { "jet_host_api.abi_major", 4, 2 },
        { "jet_host_api.abi_minor", 6, 2 },
        { "jet_host_api.msg_subject", 8, 8 },
        { "jet_host_api.msg_data", 16, 8 },
        { "jet_host_api.msg_header", 24, 8 },
        { "jet_host_api.msg_headers_each", 32, 8 },
        { "jet_host_api.msg_stream", 40, 8 },
        { "jet_host_api.msg_consumer", 48, 8 },
        { "jet_host_api.msg_stream_seq", 56, 8 },
        { "jet_host_api.msg_consumer_seq", 64, 8 },
        { "jet_host_api.msg_deliveries", 72, 8 },
        { "jet_host_api.msg_enqueued_ns", 80, 8 },
        { "jet_host_api.msg_failures", 88, 8 },
        { "jet_host_api.msg_postpones", 96, 8 },
        { "jet_host_api.msg_first_failure_ns", 104, 8 },
        { "jet_host_api.msg_set_reason", 112, 8 },
        { "jet_host_api.msg_set_delay_ms", 120, 8 },
        { "jet_host_api.ctx_option", 128, 8 },
        { "jet_host_api.ctx_option_int", 136, 8 },
        { "jet_host_api.ctx_option_bool", 144, 8 },
        { "jet_host_api.ctx_option_duration_ms", 152, 8 },
        { "jet_host_api.ctx_name", 160, 8 },
        { "jet_host_api.ctx_log", 168, 8 },
        { "jet_host_api.ctx_now_ns", 176, 8 },
        { "jet_host_api.ctx_stopping", 184, 8 },
        { "jet_host_api.ctx_kind", 192, 8 },
        { "jet_host_api.msg_kind", 200, 8 },
        { "jet_host_api.msg_kv_key", 208, 8 },
        { "jet_host_api.msg_kv_op", 216, 8 },
        { "jet_host_api.msg_kv_revision", 224, 8 },
        { "jet_host_api.msg_ctx", 232, 8 },
        { "jet_host_api.msg_publish", 240, 8 },
        { "jet_host_api.ctx_metric_declare", 248, 8 },
        { "jet_host_api.ctx_metric_add", 256, 8 },
        { "jet_host_api.ctx_metric_set", 264, 8 },
        { "jet_host_api.msg_complete", 272, 8 },
        { "jet_host_api", 0, 280 },
        { "jet_plugin.struct_size", 0, 4 },
        { "jet_plugin.abi_major", 4, 2 },
        { "jet_plugin.abi_minor", 6, 2 },
        { "jet_plugin.name", 8, 8 },
        { "jet_plugin.version", 16, 8 },
        { "jet_plugin.flags", 24, 4 },
        { "jet_plugin.options", 32, 8 },
        { "jet_plugin.init", 40, 8 },
        { "jet_plugin.handle", 48, 8 },
        { "jet_plugin.fini", 56, 8 },
        { "jet_plugin.kv_initial_done", 64, 8 },
        { "jet_plugin.option_size", 72, 4 },
        { "jet_plugin.validate", 80, 8 },
        { "jet_plugin.settled", 88, 8 },
        { "jet_plugin.handle_batch", 96, 8 },
        { "jet_plugin", 0, 104 },
        { "jet_settled.struct_size", 0, 4 },
        { "jet_settled.outcome", 4, 4 },
        { "jet_settled.handled", 8, 4 },
        { "jet_settled.verdict", 12, 4 },
        { "jet_settled.stream_seq", 16, 8 },
        { "jet_settled.deliveries", 24, 4 },
        { "jet_settled.published", 28, 4 },
        { "jet_settled.duplicates", 32, 4 },
        { "jet_settled.delay_ms", 40, 8 },
        { "jet_settled.reason", 48, 8 },
        { "jet_settled", 0, 56 },
        { "jet_option.name", 0, 8 },
        { "jet_option.type", 8, 4 },
        { "jet_option.default_value", 16, 8 },
        { "jet_option.help", 24, 8 },
        { "jet_option.flags", 32, 4 },
        { "jet_option", 0, 40 },
        { "jet_mock_header.name", 0, 8 },
        { "jet_mock_header.value", 8, 8 },
        { "jet_mock_header", 0, 16 },
        { "jet_mock_settlement.action", 0, 4 },
        { "jet_mock_settlement.action_name", 8, 8 },
        { "jet_mock_settlement.delay_ms", 16, 8 },
        { "jet_mock_settlement.cause", 24, 8 },
        { "jet_mock_settlement.outcome", 32, 8 },
        { "jet_mock_settlement.is_failure", 40, 4 },
        { "jet_mock_settlement.failure_number", 44, 4 },
        { "jet_mock_settlement.plugin_error", 48, 4 },
        { "jet_mock_settlement.reason", 52, 320 },
        { "jet_mock_settlement.handled", 372, 4 },
        { "jet_mock_settlement.verdict", 376, 4 },
        { "jet_mock_settlement.now_ns", 384, 8 },
        { "jet_mock_settlement.stream_seq", 392, 8 },
        { "jet_mock_settlement.deliveries", 400, 4 },
        { "jet_mock_settlement.violation", 408, 8 },
        { "jet_mock_settlement.dlq_subject", 416, 8 },
        { "jet_mock_settlement.n_dlq_headers", 424, 8 },
        { "jet_mock_settlement.dlq_headers", 432, 8 },
        { "jet_mock_settlement.n_publishes", 440, 8 },
        { "jet_mock_settlement.publishes", 448, 8 },
        { "jet_mock_settlement.held_behind", 456, 8 },
        { "jet_mock_settlement", 0, 464 },
        { "jet_mock_publish.subject", 0, 8 },
        { "jet_mock_publish.n_headers", 8, 8 },
        { "jet_mock_publish.headers", 16, 8 },
        { "jet_mock_publish.data", 24, 8 },
        { "jet_mock_publish.len", 32, 8 },
        { "jet_mock_publish.result", 40, 8 },
        { "jet_mock_publish", 0, 48 },
};

static const JetAbiRow current_all[] = {
        JET_ABI_ROW(jet_host_api, struct_size),
        JET_ABI_ROW(jet_host_api, abi_major),
        JET_ABI_ROW(jet_host_api, abi_minor),
        JET_ABI_ROW(jet_host_api, msg_subject),
        JET_ABI_ROW(jet_host_api, msg_data),
        JET_ABI_ROW(jet_host_api, msg_header),
        JET_ABI_ROW(jet_host_api, msg_headers_each),
        JET_ABI_ROW(jet_host_api, msg_stream),
        JET_ABI_ROW(jet_host_api, msg_consumer),
        JET_ABI_ROW(jet_host_api, msg_stream_seq),
        JET_ABI_ROW(jet_host_api, msg_consumer_seq),
        JET_ABI_ROW(jet_host_api, msg_deliveries),
        JET_ABI_ROW(jet_host_api, msg_enqueued_ns),
        JET_ABI_ROW(jet_host_api, msg_failures),
        JET_ABI_ROW(jet_host_api, msg_postpones),
        JET_ABI_ROW(jet_host_api, msg_first_failure_ns),
        JET_ABI_ROW(jet_host_api, msg_set_reason),
        JET_ABI_ROW(jet_host_api, msg_set_delay_ms),
        JET_ABI_ROW(jet_host_api, ctx_option),
        JET_ABI_ROW(jet_host_api, ctx_option_int),
        JET_ABI_ROW(jet_host_api, ctx_option_bool),
        JET_ABI_ROW(jet_host_api, ctx_option_duration_ms),
        JET_ABI_ROW(jet_host_api, ctx_name),
        JET_ABI_ROW(jet_host_api, ctx_log),
        JET_ABI_ROW(jet_host_api, ctx_now_ns),
        JET_ABI_ROW(jet_host_api, ctx_stopping),
        JET_ABI_ROW(jet_host_api, ctx_kind),
        JET_ABI_ROW(jet_host_api, msg_kind),
        JET_ABI_ROW(jet_host_api, msg_kv_key),
        JET_ABI_ROW(jet_host_api, msg_kv_op),
        JET_ABI_ROW(jet_host_api, msg_kv_revision),
        JET_ABI_ROW(jet_host_api, msg_ctx),
        JET_ABI_ROW(jet_host_api, msg_publish),
        JET_ABI_ROW(jet_host_api, ctx_metric_declare),
        JET_ABI_ROW(jet_host_api, ctx_metric_add),
        JET_ABI_ROW(jet_host_api, ctx_metric_set),
        JET_ABI_ROW(jet_host_api, msg_complete),
        JET_ABI_SIZE(jet_host_api),
        JET_ABI_ROW(jet_plugin, struct_size),
        JET_ABI_ROW(jet_plugin, abi_major),
        JET_ABI_ROW(jet_plugin, abi_minor),
        JET_ABI_ROW(jet_plugin, name),
        JET_ABI_ROW(jet_plugin, version),
        JET_ABI_ROW(jet_plugin, flags),
        JET_ABI_ROW(jet_plugin, options),
        JET_ABI_ROW(jet_plugin, init),
        JET_ABI_ROW(jet_plugin, handle),
        JET_ABI_ROW(jet_plugin, fini),
        JET_ABI_ROW(jet_plugin, kv_initial_done),
        JET_ABI_ROW(jet_plugin, option_size),
        JET_ABI_ROW(jet_plugin, validate),
        JET_ABI_ROW(jet_plugin, settled),
        JET_ABI_ROW(jet_plugin, handle_batch),
        JET_ABI_SIZE(jet_plugin),
        JET_ABI_ROW(jet_settled, struct_size),
        JET_ABI_ROW(jet_settled, outcome),
        JET_ABI_ROW(jet_settled, handled),
        JET_ABI_ROW(jet_settled, verdict),
        JET_ABI_ROW(jet_settled, stream_seq),
        JET_ABI_ROW(jet_settled, deliveries),
        JET_ABI_ROW(jet_settled, published),
        JET_ABI_ROW(jet_settled, duplicates),
        JET_ABI_ROW(jet_settled, delay_ms),
        JET_ABI_ROW(jet_settled, reason),
        JET_ABI_SIZE(jet_settled),
        JET_ABI_ROW(jet_option, name),
        JET_ABI_ROW(jet_option, type),
        JET_ABI_ROW(jet_option, default_value),
        JET_ABI_ROW(jet_option, help),
        JET_ABI_ROW(jet_option, flags),
        JET_ABI_SIZE(jet_option),
        JET_ABI_ROW(jet_mock_header, name),
        JET_ABI_ROW(jet_mock_header, value),
        JET_ABI_SIZE(jet_mock_header),
        JET_ABI_ROW(jet_mock_settlement, action),
        JET_ABI_ROW(jet_mock_settlement, action_name),
        JET_ABI_ROW(jet_mock_settlement, delay_ms),
        JET_ABI_ROW(jet_mock_settlement, cause),
        JET_ABI_ROW(jet_mock_settlement, outcome),
        JET_ABI_ROW(jet_mock_settlement, is_failure),
        JET_ABI_ROW(jet_mock_settlement, failure_number),
        JET_ABI_ROW(jet_mock_settlement, plugin_error),
        JET_ABI_ROW(jet_mock_settlement, reason),
        JET_ABI_ROW(jet_mock_settlement, handled),
        JET_ABI_ROW(jet_mock_settlement, verdict),
        JET_ABI_ROW(jet_mock_settlement, now_ns),
        JET_ABI_ROW(jet_mock_settlement, stream_seq),
        JET_ABI_ROW(jet_mock_settlement, deliveries),
        JET_ABI_ROW(jet_mock_settlement, violation),
        JET_ABI_ROW(jet_mock_settlement, dlq_subject),
        JET_ABI_ROW(jet_mock_settlement, n_dlq_headers),
        JET_ABI_ROW(jet_mock_settlement, dlq_headers),
        JET_ABI_ROW(jet_mock_settlement, n_publishes),
        JET_ABI_ROW(jet_mock_settlement, publishes),
        JET_ABI_ROW(jet_mock_settlement, held_behind),
        JET_ABI_SIZE(jet_mock_settlement),
        JET_ABI_ROW(jet_mock_publish, subject),
        JET_ABI_ROW(jet_mock_publish, n_headers),
        JET_ABI_ROW(jet_mock_publish, headers),
        JET_ABI_ROW(jet_mock_publish, data),
        JET_ABI_ROW(jet_mock_publish, len),
        JET_ABI_ROW(jet_mock_publish, result),
        JET_ABI_SIZE(jet_mock_publish),
};

static void test_lp64(void)
{
    g_assert_cmpuint(G_N_ELEMENTS(lp64), ==, G_N_ELEMENTS(current_all));
    for (gsize i = 0; i < G_N_ELEMENTS(lp64); i++) {
        g_assert_cmpstr(current_all[i].name, ==, lp64[i].name);
        if (current_all[i].offset != lp64[i].offset || current_all[i].size != lp64[i].size)
            g_error("%s: offset %zu size %zu, pinned %zu and %zu", lp64[i].name, current_all[i].offset,
                    current_all[i].size, lp64[i].offset, lp64[i].size);
    }
}
#endif

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/abi/frozen-1.0-members-unmoved", test_frozen_10);
    g_test_add_func("/abi/1.1-appended", test_appended_11);
    g_test_add_func("/abi/1.2-appended", test_appended_12);
#if UINTPTR_MAX == 0xffffffffffffffffu
    /* The pinned table is LP64's; another platform pins its own. */
    g_test_add_func("/abi/lp64-layout", test_lp64);
#endif
    return g_test_run();
}
