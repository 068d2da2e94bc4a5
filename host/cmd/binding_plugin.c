/* A binding's plugin, as `run` and `check` load it (binding_plugin.h). */
#include "binding_plugin.h"
#include "errors.h"
#include "host_api.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

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
    if (b->batch_max > 1 && desc->handle_batch == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "%s: [binding %s] batch_max: %u messages at once need a plugin with handle_batch(), and %s "
                    "(%s) has none",
                    b->file, b->name, b->batch_max, desc->name, jet_plugin_path(plugin));
        return NULL;
    }
    JetInstance *inst = jet_instance_new(plugin, b->name, b->options, &local);
    if (inst == NULL) {
        g_set_error(error, JET_ERROR, local->code, "%s: [binding %s] %s", b->file, b->name, local->message);
        return NULL;
    }
    jet_instance_set_kind(inst, (int)b->kind);
    if (!jet_instance_validate(inst, &local)) {
        g_set_error(error, JET_ERROR, local->code, "%s: [binding %s] %s", b->file, b->name, local->message);
        jet_instance_free(inst);
        return NULL;
    }
    if (start && !jet_instance_start(inst, &local)) {
        g_set_error(error, JET_ERROR, local->code, "binding %s: %s", b->name, local->message);
        jet_instance_free(inst);
        return NULL;
    }
    *plugin_out = plugin;
    return inst;
}

gboolean jet_binding_plugin_identify(const JetConfig *cfg, JetBindingConfig *b, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autofree char *path = jet_plugin_resolve(b->plugin, cfg->host.plugin_dir, &local);
    if (path == NULL) {
        g_set_error(error, JET_ERROR, local->code, "%s: [binding %s] plugin: %s", b->file, b->name, local->message);
        return FALSE;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "%s: [binding %s] plugin: %s: %s", b->file, b->name, path,
                    g_strerror(e));
        return FALSE;
    }
    g_free(b->plugin_id.path);
    b->plugin_id = (JetFileIdentity){
        .path = g_steal_pointer(&path),
        .dev = (guint64)st.st_dev,
        .ino = (guint64)st.st_ino,
        .size = (gint64)st.st_size,
        .mtime_ns = (gint64)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
    };
    return TRUE;
}
