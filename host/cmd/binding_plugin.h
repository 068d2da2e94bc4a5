/* A binding's plugin loaded (plugin_loader.h, with the loader's checks), its
 * options validated and its instance made, the same way for `jethost run`
 * and `jethost check`. */
#ifndef JET_BINDING_PLUGIN_H
#define JET_BINDING_PLUGIN_H

#include <glib.h>

#include "config.h"
#include "instance.h"
#include "plugin_loader.h"

/* The instance (init() run when start), and the plugin in *plugin_out; NULL
 * with an error naming the file, the binding and the cause.  workers > 1
 * needs a plugin that declares JET_PLUGIN_THREAD_SAFE. */
JetInstance *jet_binding_plugin(const JetConfig *cfg, const JetBindingConfig *b, gboolean start, JetPlugin **plugin_out,
                                GError **error);

/* Fills b->plugin_id: the plugin's canonical path (resolved against
 * plugin_dir) and the file's stat.  FALSE with an error naming the binding
 * when it cannot be resolved or read. */
gboolean jet_binding_plugin_identify(const JetConfig *cfg, JetBindingConfig *b, GError **error);

#endif
