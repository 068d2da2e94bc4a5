/* A binding's plugin, as `run` and `check` load it (binding_plugin.h). */
#include "binding_plugin.h"
#include "errors.h"
#include "host_api.h"

JetInstance *jet_binding_plugin(const JetConfig *cfg, const JetBindingConfig *b, gboolean start, JetPlugin **plugin_out,
                                GError **error)
{
    g_autoptr(GError) local = NULL;
    JetPlugin *plugin = jet_plugin_load(b->plugin, cfg->host.plugin_dir, NULL, &local);
    if (plugin == NULL) {
        g_set_error(error, JET_ERROR, local->code, "%s: [binding %s] plugin: %s", b->file, b->name,
                    local->message);
        return NULL;
    }
    const jet_plugin *desc = jet_plugin_descriptor(plugin);
    if (b->workers > 1 && !(desc->flags & JET_PLUGIN_THREAD_SAFE)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "%s: [binding %s] workers: %u workers need a thread-safe plugin, and %s (%s) does "
                    "not declare JET_PLUGIN_THREAD_SAFE",
                    b->file, b->name, b->workers, desc->name, jet_plugin_path(plugin));
        return NULL;
    }
    JetInstance *inst = jet_instance_new(plugin, b->name, b->options, &local);
    if (inst == NULL) {
        g_set_error(error, JET_ERROR, local->code, "%s: [binding %s] %s", b->file, b->name, local->message);
        return NULL;
    }
    jet_instance_set_kind(inst, (int)b->kind);
    if (start && !jet_instance_start(inst, &local)) {
        g_set_error(error, JET_ERROR, local->code, "binding %s: %s", b->name, local->message);
        jet_instance_free(inst);
        return NULL;
    }
    *plugin_out = plugin;
    return inst;
}
