/* The rows of tests/abi_rows.h from the frozen 1.0 header (this file is
 * built with tests/abi-1.0 first on the include path). */
#include <jethost/plugin.h>

#include "abi_rows.h"

#if JET_ABI_MINOR != 0
#error "tests/abi_frozen.c must see the frozen 1.0 header"
#endif

const JetAbiRow jet_test_abi10_rows[] = {
    JET_ABI_10_ROWS,
    JET_ABI_SIZE(jet_host_api),
    JET_ABI_SIZE(jet_plugin),
    { NULL, 0, 0 },
};
