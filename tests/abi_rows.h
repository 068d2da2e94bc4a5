/* One row per member of the ABI's structs: where it sits and how big it
 * is.  tests/abi_frozen.c fills the rows from the frozen 1.0 header,
 * tests/unit/abi_layout.c from the current one, and compares them. */
#ifndef JET_TEST_ABI_ROWS_H
#define JET_TEST_ABI_ROWS_H

#include <stddef.h>

typedef struct {
    const char *name;      /* "jet_host_api.msg_subject"; "jet_plugin" for the struct itself */
    size_t offset, size;
} JetAbiRow;

/* The 1.0 members, and the two structs' sizes, as the frozen header lays
 * them out; ends with a NULL name. */
extern const JetAbiRow jet_test_abi10_rows[];

#define JET_ABI_ROW(type, member) \
    { #type "." #member, offsetof(type, member), sizeof(((type *)0)->member) }
#define JET_ABI_SIZE(type) { #type, 0, sizeof(type) }

/* Every member of 1.0, in order. */
#define JET_ABI_10_ROWS                                                          \
    JET_ABI_ROW(jet_host_api, struct_size), JET_ABI_ROW(jet_host_api, abi_major), \
    JET_ABI_ROW(jet_host_api, abi_minor), JET_ABI_ROW(jet_host_api, msg_subject), \
    JET_ABI_ROW(jet_host_api, msg_data), JET_ABI_ROW(jet_host_api, msg_header),   \
    JET_ABI_ROW(jet_host_api, msg_headers_each), JET_ABI_ROW(jet_host_api, msg_stream), \
    JET_ABI_ROW(jet_host_api, msg_consumer), JET_ABI_ROW(jet_host_api, msg_stream_seq), \
    JET_ABI_ROW(jet_host_api, msg_consumer_seq), JET_ABI_ROW(jet_host_api, msg_deliveries), \
    JET_ABI_ROW(jet_host_api, msg_enqueued_ns), JET_ABI_ROW(jet_host_api, msg_failures), \
    JET_ABI_ROW(jet_host_api, msg_postpones), JET_ABI_ROW(jet_host_api, msg_first_failure_ns), \
    JET_ABI_ROW(jet_host_api, msg_set_reason), JET_ABI_ROW(jet_host_api, msg_set_delay_ms), \
    JET_ABI_ROW(jet_host_api, ctx_option), JET_ABI_ROW(jet_host_api, ctx_option_int), \
    JET_ABI_ROW(jet_host_api, ctx_option_bool), JET_ABI_ROW(jet_host_api, ctx_option_duration_ms), \
    JET_ABI_ROW(jet_host_api, ctx_name), JET_ABI_ROW(jet_host_api, ctx_log), \
    JET_ABI_ROW(jet_host_api, ctx_now_ns), JET_ABI_ROW(jet_host_api, ctx_stopping), \
    JET_ABI_ROW(jet_plugin, struct_size), JET_ABI_ROW(jet_plugin, abi_major), \
    JET_ABI_ROW(jet_plugin, abi_minor), JET_ABI_ROW(jet_plugin, name), \
    JET_ABI_ROW(jet_plugin, version), JET_ABI_ROW(jet_plugin, flags), \
    JET_ABI_ROW(jet_plugin, options), JET_ABI_ROW(jet_plugin, init), \
    JET_ABI_ROW(jet_plugin, handle), JET_ABI_ROW(jet_plugin, fini), \
    JET_ABI_ROW(jet_option, name), JET_ABI_ROW(jet_option, type), \
    JET_ABI_ROW(jet_option, default_value), JET_ABI_ROW(jet_option, help), \
    JET_ABI_ROW(jet_option, flags), JET_ABI_SIZE(jet_option)

#endif
