/* Loading plugin shared objects safely.
 *
 * A plugin is named by an absolute path or by a bare name resolved against
 * the plugin directory; it is never searched for.  Before loading, the file
 * and every directory above it must be owned by a trusted user and not
 * writable by group or others (a sticky directory excepted).  After loading,
 * the object in memory must be the file that was checked.  Plugins stay
 * resident: a JetPlugin is never unloaded. */
#ifndef JET_PLUGIN_LOADER_H
#define JET_PLUGIN_LOADER_H

#include <glib.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <jethost/plugin.h>

typedef struct JetPlugin JetPlugin;

typedef struct {
    /* Owners a plugin file and its directories may have.  NULL/0: root and
     * the effective user.  Injectable so permission tests behave the same as
     * root and as a user. */
    const uid_t *trusted_uids;
    gsize n_trusted_uids;
    /* Tests only: runs between the checks and dlopen(), so a test can swap
     * the file and prove the after-load identity check. */
    void (*after_check)(const char *path, gpointer user_data);
    gpointer after_check_data;
} JetLoadPolicy;

/* Turns what the config names into an absolute canonical path.  Returns NULL
 * with an error naming what was given and why.  Caller frees. */
char *jet_plugin_resolve(const char *name_or_path, const char *plugin_dir, GError **error);

/* Loads (or finds already loaded) and checks a plugin.  api is the function
 * table its entry point is given: the caller's, so the loader never reaches
 * up into the host functions (host_api.h's jet_plugin_load passes the
 * host's; docs/architecture.md); never NULL.  One table per process: a plugin already
 * loaded keeps the one it was given.  policy may be NULL.  The returned
 * plugin is owned by the process-wide registry: never free it.  Every error
 * is one line naming the path and the cause. */
JetPlugin *jet_plugin_load_with(const jet_host_api *api, const char *name_or_path, const char *plugin_dir,
                                const JetLoadPolicy *policy, GError **error);

/* Checks that path and every directory above it are safe to trust. */
gboolean jet_path_check_trusted(const char *path, const JetLoadPolicy *policy, GError **error);

/* Checks an absolute path as given, before it is canonicalised: every
 * directory on it from /, every symlink met (its owner; its directory is on
 * the path) and, through each symlink, every directory of its target, and
 * the regular file at the end. */
gboolean jet_path_check_as_given(const char *path, const JetLoadPolicy *policy, GError **error);

/* The rule for one file, directory or symlink (what: which, for the
 * message): a trusted owner (policy, or root and the effective user), and
 * not writable by group or others, except a sticky directory. */
gboolean jet_path_check_stat(const char *what, const char *path, const struct stat *st,
                             const JetLoadPolicy *policy, GError **error);

/* The plugin's descriptor, normalised to this host's struct size (members the
 * plugin's ABI predates read as zero).  Valid while the process runs. */
const jet_plugin *jet_plugin_descriptor(const JetPlugin *p);
const char *jet_plugin_path(const JetPlugin *p);
const char *jet_plugin_name(const JetPlugin *p);

/* A plugin linked into the program instead of loaded from a file (the mock
 * host's static mode): calls entry with api and checks the descriptor as
 * jet_plugin_load_with() does.  Its "path" is "linked-in:NAME".  Kept for
 * the life of the process, like a loaded plugin. */
JetPlugin *jet_plugin_from_entry_with(const jet_host_api *api, jet_plugin_entry_fn entry, GError **error);

/* The most of a descriptor the host reads: a larger struct_size is refused
 * unread.  Far above any real jet_plugin, far below running off a mapping. */
#define JET_PLUGIN_DESC_MAX 4096u
/* Plugin names are 1 to this many bytes of [a-z0-9_-]. */
#define JET_PLUGIN_NAME_MAX 64

/* Checks a descriptor as returned by an entry point (exposed for tests of the
 * version rule).  Writes the normalised copy to out. */
gboolean jet_plugin_descriptor_check(const jet_plugin *desc, jet_plugin *out, GError **error);

#endif
