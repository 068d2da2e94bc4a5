/* The function table the host passes to every plugin. */
#ifndef JET_HOST_API_H
#define JET_HOST_API_H

#include <jethost/plugin.h>
#include "plugin_loader.h"

/* The process-wide table; static storage. */
const jet_host_api *jet_host_api_table(void);

/* The loader (plugin_loader.h) with this table: what the daemon, the mock
 * host and the tests call.  The table is passed down to the loader, never
 * fetched by it (docs/architecture.md). */
JetPlugin *jet_plugin_load(const char *name_or_path, const char *plugin_dir,
                           const JetLoadPolicy *policy, GError **error);
JetPlugin *jet_plugin_from_entry(jet_plugin_entry_fn entry, GError **error);

#endif
