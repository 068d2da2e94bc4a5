#define _GNU_SOURCE
#include "plugin_loader.h"
#include "errors.h"
/* The function table plugins get is the caller's (docs/architecture.md). */

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

struct JetPlugin {
    char *path;          /* absolute, canonical */
    void *handle;        /* never dlclose()d */
    jet_plugin desc;     /* normalised copy */
};

static GMutex registry_lock;
static GHashTable *registry;   /* path -> JetPlugin*, never freed */

/* The absolute path the config names, as given: not canonicalised, so its
 * symlinks can still be checked (jet_path_check_as_given). */
static char *plugin_candidate(const char *name_or_path, const char *plugin_dir, GError **error)
{
    char *candidate = NULL;

    if (name_or_path == NULL || *name_or_path == '\0') {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "no plugin named");
        return NULL;
    }
    if (g_path_is_absolute(name_or_path)) {
        candidate = g_strdup(name_or_path);
    } else if (strchr(name_or_path, '/') != NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "plugin '%s': a relative path is never searched for; give an absolute path "
                    "or a bare name from the plugin directory", name_or_path);
        return NULL;
    } else {
        if (plugin_dir == NULL || *plugin_dir == '\0') {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "plugin '%s': a bare name needs plugin_dir in [host]", name_or_path);
            return NULL;
        }
        if (!g_path_is_absolute(plugin_dir)) {
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "plugin directory '%s' is not an absolute path", plugin_dir);
            return NULL;
        }
        g_autofree char *file = g_str_has_suffix(name_or_path, ".so")
                                    ? g_strdup(name_or_path)
                                    : g_strconcat(name_or_path, ".so", NULL);
        candidate = g_build_filename(plugin_dir, file, NULL);
    }
    return candidate;
}

char *jet_plugin_resolve(const char *name_or_path, const char *plugin_dir, GError **error)
{
    g_autofree char *candidate = plugin_candidate(name_or_path, plugin_dir, error);
    if (candidate == NULL)
        return NULL;
    char *canon = realpath(candidate, NULL);
    if (canon == NULL) {
        int e = errno;
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: %s", candidate,
                    e == ENOENT ? "no such file" : g_strerror(e));
        return NULL;
    }
    char *out = g_strdup(canon);
    free(canon);
    return out;
}

static gboolean uid_trusted(uid_t uid, const JetLoadPolicy *policy)
{
    if (policy == NULL || policy->trusted_uids == NULL)
        return uid == 0 || uid == geteuid();
    for (gsize i = 0; i < policy->n_trusted_uids; i++)
        if (policy->trusted_uids[i] == uid)
            return TRUE;
    return FALSE;
}

gboolean jet_path_check_stat(const char *what, const char *path, const struct stat *st,
                             const JetLoadPolicy *policy, GError **error)
{
    if (!uid_trusted(st->st_uid, policy)) {
        g_set_error(error, JET_ERROR, JET_ERROR_PERMISSION,
                    "%s %s is owned by uid %u, neither root nor the user jethost runs as",
                    what, path, (unsigned)st->st_uid);
        return FALSE;
    }
    /* A symlink's own mode is always 0777 and means nothing: who may re-point
     * it is its owner and whoever may write its directory, checked apart. */
    if (S_ISLNK(st->st_mode))
        return TRUE;
    /* The sticky bit protects the entries of a directory, never a file's
     * own bytes: a group- or world-writable file is refused whatever its
     * other bits. */
    gboolean is_dir = S_ISDIR(st->st_mode);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(is_dir && (st->st_mode & S_ISVTX))) {
        g_set_error(error, JET_ERROR, JET_ERROR_PERMISSION,
                    "%s %s is writable by %s (mode %04o): anyone there could replace the plugin",
                    what, path, (st->st_mode & S_IWOTH) ? "others" : "its group",
                    (unsigned)(st->st_mode & 07777));
        return FALSE;
    }
    return TRUE;
}

gboolean jet_path_check_trusted(const char *path, const JetLoadPolicy *policy, GError **error)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s: %s", path, g_strerror(errno));
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s is not a regular file", path);
        return FALSE;
    }
    if (!jet_path_check_stat("file", path, &st, policy, error))
        return FALSE;

    g_autofree char *dir = g_path_get_dirname(path);
    for (;;) {
        if (lstat(dir, &st) != 0) {
            g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s: %s", dir, g_strerror(errno));
            return FALSE;
        }
        if (!jet_path_check_stat("directory", dir, &st, policy, error))
            return FALSE;
        if (strcmp(dir, "/") == 0)
            break;
        char *up = g_path_get_dirname(dir);
        g_free(dir);
        dir = up;
    }
    return TRUE;
}

/* Symlinks followed on one path before giving up, as the kernel's ELOOP. */
#define JET_PATH_MAX_LINKS 40

static gboolean lstat_or_fail(const char *path, struct stat *st, GError **error)
{
    if (lstat(path, st) == 0)
        return TRUE;
    g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s: %s", path, g_strerror(errno));
    return FALSE;
}

/* Walks path component by component the way the kernel resolves it, checking
 * each directory and symlink met on the way; a symlink restarts the walk on
 * its target with the rest of the path appended, so the target's directories
 * are checked as well.  "..", met only after real directories, is lexical. */
static gboolean check_walk(const char *path, const JetLoadPolicy *policy, guint links, GError **error)
{
    if (!g_path_is_absolute(path)) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s is not an absolute path", path);
        return FALSE;
    }
    g_auto(GStrv) parts = g_strsplit(path, "/", -1);
    guint n = g_strv_length(parts);
    g_autofree char *cur = g_strdup("/");
    struct stat st;
    if (!lstat_or_fail(cur, &st, error) || !jet_path_check_stat("directory", cur, &st, policy, error))
        return FALSE;
    /* The last non-empty component is the file. */
    guint last = n;
    for (guint i = 0; i < n; i++)
        if (parts[i][0] != '\0' && strcmp(parts[i], ".") != 0)
            last = i;
    for (guint i = 0; i < n; i++) {
        const char *c = parts[i];
        if (c[0] == '\0' || strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            char *up = g_path_get_dirname(cur);
            g_free(cur);
            cur = up;
            continue;
        }
        g_autofree char *next = g_build_filename(cur, c, NULL);
        if (!lstat_or_fail(next, &st, error))
            return FALSE;
        if (S_ISLNK(st.st_mode)) {
            /* Its directory (cur) was checked; its owner may re-point it. */
            if (!jet_path_check_stat("symlink", next, &st, policy, error))
                return FALSE;
            if (++links > JET_PATH_MAX_LINKS) {
                g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s: too many levels of symbolic links", path);
                return FALSE;
            }
            g_autofree char *target = g_file_read_link(next, NULL);
            if (target == NULL) {
                g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s: cannot read the link", next);
                return FALSE;
            }
            g_autofree char *rest = g_strjoinv("/", parts + i + 1);
            g_autofree char *base = g_path_is_absolute(target) ? g_strdup(target)
                                                                : g_build_filename(cur, target, NULL);
            g_autofree char *again = *rest != '\0' ? g_build_filename(base, rest, NULL) : g_strdup(base);
            return check_walk(again, policy, links, error);
        }
        if (i == last) {
            if (!S_ISREG(st.st_mode)) {
                g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s is not a regular file", next);
                return FALSE;
            }
            return jet_path_check_stat("file", next, &st, policy, error);
        }
        if (!S_ISDIR(st.st_mode)) {
            g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s is not a directory", next);
            return FALSE;
        }
        if (!jet_path_check_stat("directory", next, &st, policy, error))
            return FALSE;
        g_free(cur);
        cur = g_steal_pointer(&next);
    }
    g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "%s names no file", path);
    return FALSE;
}

gboolean jet_path_check_as_given(const char *path, const JetLoadPolicy *policy, GError **error)
{
    return check_walk(path, policy, 0, error);
}

/* Finds the device and inode of the file mapped at addr, from /proc/self/maps:
 * what the dynamic linker really loaded, whatever path it was given. */
static gboolean mapped_file_identity(const void *addr, dev_t *dev, ino_t *ino)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (f == NULL)
        return FALSE;
    char line[4096];
    gboolean found = FALSE;
    uintptr_t a = (uintptr_t)addr;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long start, end, maj, min, inode;
        if (sscanf(line, "%lx-%lx %*s %*s %lx:%lx %lu", &start, &end, &maj, &min, &inode) != 5)
            continue;
        if (a >= start && a < end) {
            *dev = makedev(maj, min);
            *ino = (ino_t)inode;
            found = TRUE;
            break;
        }
    }
    fclose(f);
    return found;
}

/* Names end up in log lines, metrics labels and file names: keep them to a
 * small alphabet so none of those needs quoting. */
static gboolean name_valid(const char *name)
{
    gsize len = strnlen(name, JET_PLUGIN_NAME_MAX + 1);
    if (len == 0 || len > JET_PLUGIN_NAME_MAX)
        return FALSE;
    for (gsize i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return FALSE;
    }
    return TRUE;
}

/* A plugin's option table read with its own entry size (the descriptor's
 * option_size): entries of this host's size are used as they are; larger
 * ones (a newer header) are copied into this host's layout once, their
 * extra bytes required to be zero, and kept for the life of the process,
 * like the plugin itself (plugins are never unloaded). */
#define JET_OPTIONS_MAX 256u
#define JET_OPTION_SIZE_MAX 256u

static const jet_option *options_normalised(const jet_plugin *d, GError **error)
{
    size_t size = d->option_size == 0 ? sizeof(jet_option) : d->option_size;
    if (d->options == NULL)
        return NULL;
    if (size < sizeof(jet_option) || size > JET_OPTION_SIZE_MAX) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "its option entries are %u bytes; this host reads %zu up to %u", d->option_size,
                    sizeof(jet_option), JET_OPTION_SIZE_MAX);
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)d->options;
    guint n = 0;
    while (((const jet_option *)(const void *)(base + (size_t)n * size))->name != NULL) {
        if (++n > JET_OPTIONS_MAX) {
            g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "its option table has more than %u entries "
                        "(or no NULL name ending it)", JET_OPTIONS_MAX);
            return NULL;
        }
    }
    if (size == sizeof(jet_option))
        return d->options;
    for (guint i = 0; i < n; i++)
        for (size_t b = sizeof(jet_option); b < size; b++)
            if (base[(size_t)i * size + b] != 0) {
                g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "its option entry %u sets members this host "
                            "does not know (byte %zu of %zu)", i, b, size);
                return NULL;
            }
    static GMutex lock;
    static GHashTable *copies;   /* options pointer -> normalised array; never freed */
    g_mutex_lock(&lock);
    if (copies == NULL)
        copies = g_hash_table_new(g_direct_hash, g_direct_equal);
    jet_option *copy = g_hash_table_lookup(copies, d->options);
    if (copy == NULL) {
        copy = g_new0(jet_option, n + 1);
        for (guint i = 0; i < n; i++)
            memcpy(&copy[i], base + (size_t)i * size, sizeof(jet_option));
        g_hash_table_insert(copies, (gpointer)d->options, copy);
    }
    g_mutex_unlock(&lock);
    return copy;
}

gboolean jet_plugin_descriptor_check(const jet_plugin *desc, jet_plugin *out, GError **error)
{
    memset(out, 0, sizeof *out);
    if (desc == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "its entry point returned no descriptor");
        return FALSE;
    }
    if (desc->abi_major != JET_ABI_MAJOR || desc->abi_minor > JET_ABI_MINOR) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "it was built for plugin ABI %u.%u; this host speaks %u.%u "
                    "(the major must match and the minor be at most the host's)",
                    desc->abi_major, desc->abi_minor, JET_ABI_MAJOR, JET_ABI_MINOR);
        return FALSE;
    }
    size_t minimum = offsetof(jet_plugin, fini) + sizeof desc->fini;
    if (desc->struct_size < minimum) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "its descriptor is %u bytes, smaller than ABI 1.0's %zu",
                    desc->struct_size, minimum);
        return FALSE;
    }
    /* struct_size is the plugin's word for how far the host may read; a bogus
     * one must not send the host reading through the plugin's memory. */
    if (desc->struct_size > JET_PLUGIN_DESC_MAX) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "its descriptor claims struct_size %u bytes, more than the %u any header "
                    "could produce", desc->struct_size, (unsigned)JET_PLUGIN_DESC_MAX);
        return FALSE;
    }
    size_t n = MIN((size_t)desc->struct_size, sizeof *out);
    /* A larger descriptor comes from a newer header; its extra members must be
     * zero (unset), or the plugin relies on something this host lacks. */
    for (size_t i = sizeof *out; i < desc->struct_size; i++) {
        if (((const unsigned char *)desc)[i] != 0) {
            g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                        "its descriptor sets members this host does not know (byte %zu of %u)",
                        i, desc->struct_size);
            return FALSE;
        }
    }
    memcpy(out, desc, n);
    out->struct_size = sizeof *out;
    if (out->name == NULL || out->handle == NULL || out->init == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "its descriptor lacks a name, init() or handle()");
        return FALSE;
    }
    if (!name_valid(out->name)) {
        /* Bounded and escaped: the name is the plugin's bytes, not ours. */
        gsize len = strnlen(out->name, JET_PLUGIN_NAME_MAX + 1);
        g_autofree char *shown = g_strndup(out->name, MIN(len, JET_PLUGIN_NAME_MAX));
        g_autofree char *esc = g_strescape(shown, NULL);
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "its name '%s%s' is not 1 to %d characters of [a-z0-9_-]", esc,
                    len > JET_PLUGIN_NAME_MAX ? "..." : "", JET_PLUGIN_NAME_MAX);
        return FALSE;
    }
    if (out->options != NULL) {
        g_autoptr(GError) local = NULL;
        const jet_option *opts = options_normalised(out, &local);
        if (opts == NULL) {
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        }
        out->options = opts;
        out->option_size = sizeof(jet_option);
    }
    for (const jet_option *o = out->options; o != NULL && o->name != NULL; o++) {
        if ((unsigned)o->type > JET_OPT_DURATION) {
            g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                        "its option '%s' has an unknown type %d", o->name, (int)o->type);
            return FALSE;
        }
    }
    return TRUE;
}

/* --- checking the ELF file before dlopen() ------------------------------ */

/* The dynamic linker maps a plugin's segments and touches them; a segment that
 * runs past the end of the file faults with SIGBUS inside dlopen() and takes
 * the whole host down.  So the file's structure is checked here, from the
 * file itself, before the linker sees it. */

#if UINTPTR_MAX > 0xFFFFFFFFu
#define HOST_ELFCLASS ELFCLASS64
#else
#define HOST_ELFCLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif

/* The machine this host was built for, read from its own executable so no
 * table of compiler macros has to be kept.  0 when it cannot be read. */
static uint16_t host_machine(void)
{
    static gsize once;
    static uint16_t machine;
    if (g_once_init_enter(&once)) {
        ElfW(Ehdr) eh;
        int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
                memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0)
                machine = eh.e_machine;
            close(fd);
        }
        g_once_init_leave(&once, 1);
    }
    return machine;
}

/* A table of n entries of entsize bytes at off must end within size.  Writes
 * where it ends (saturated) to *end. */
static gboolean range_within(guint64 off, guint64 n, guint64 entsize, guint64 size, guint64 *end)
{
    if (n != 0 && entsize > (G_MAXUINT64 - off) / n) {
        *end = G_MAXUINT64;
        return FALSE;
    }
    *end = off + n * entsize;
    return *end <= size;
}

static gboolean elf_check(const char *path, GError **error)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: %s", path, g_strerror(errno));
        return FALSE;
    }
    struct stat st;
    gboolean ok = FALSE;
    ElfW(Ehdr) eh;
    ElfW(Phdr) *ph = NULL;
    if (fstat(fd, &st) != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: %s", path, g_strerror(errno));
        goto out;
    }
    guint64 size = (guint64)st.st_size;
    memset(&eh, 0, sizeof eh);
    ssize_t got = pread(fd, &eh, sizeof eh, 0);
    if (got < 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: %s", path, g_strerror(errno));
        goto out;
    }
    if ((size_t)got < SELFMAG || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: not an ELF file", path);
        goto out;
    }
    if ((size_t)got < EI_NIDENT) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: truncated: the ELF header needs "
                    "%zu bytes, the file has %" G_GUINT64_FORMAT, path, sizeof eh, size);
        goto out;
    }
    if (eh.e_ident[EI_CLASS] != HOST_ELFCLASS) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: ELF class %u (%s), this host is %s",
                    path, eh.e_ident[EI_CLASS],
                    eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit"
                    : eh.e_ident[EI_CLASS] == ELFCLASS64 ? "64-bit" : "unknown",
                    HOST_ELFCLASS == ELFCLASS64 ? "64-bit" : "32-bit");
        goto out;
    }
    if (eh.e_ident[EI_DATA] != HOST_ELFDATA) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: ELF data encoding %u, this host's is %u "
                    "(byte order differs)", path, eh.e_ident[EI_DATA], HOST_ELFDATA);
        goto out;
    }
    if ((size_t)got < sizeof eh) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: truncated: the ELF header needs "
                    "%zu bytes, the file has %" G_GUINT64_FORMAT, path, sizeof eh, size);
        goto out;
    }
    if (eh.e_type != ET_DYN) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: ELF type %u, not ET_DYN (%u)",
                    path, eh.e_type, ET_DYN);
        goto out;
    }
    uint16_t mine = host_machine();
    if (mine != 0 && eh.e_machine != mine) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: built for ELF machine %u, "
                    "this host is machine %u", path, eh.e_machine, mine);
        goto out;
    }
    if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(ElfW(Phdr))) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: %u program headers of %u bytes "
                    "(expected at least one of %zu)", path, eh.e_phnum, eh.e_phentsize,
                    sizeof(ElfW(Phdr)));
        goto out;
    }
    guint64 end;
    if (!range_within(eh.e_phoff, eh.e_phnum, eh.e_phentsize, size, &end)) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: truncated: the program header table "
                    "ends at byte %" G_GUINT64_FORMAT " past the end of the file (%" G_GUINT64_FORMAT
                    " bytes)", path, end, size);
        goto out;
    }
    size_t ph_bytes = (size_t)eh.e_phnum * sizeof *ph;
    ph = g_malloc(ph_bytes);
    errno = 0;
    if (pread(fd, ph, ph_bytes, (off_t)eh.e_phoff) != (ssize_t)ph_bytes) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: cannot read its program headers: %s", path,
                    errno != 0 ? g_strerror(errno) : "short read");
        goto out;
    }
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        if (!range_within(ph[i].p_offset, 1, ph[i].p_filesz, size, &end)) {
            g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                        "plugin %s: not a loadable shared object: truncated: program header %u "
                        "(PT_LOAD) ends at byte %" G_GUINT64_FORMAT " past the end of the file (%"
                        G_GUINT64_FORMAT " bytes)", path, i, end, size);
            goto out;
        }
    }
    /* e_shnum 0 with a non-zero offset means the count lives in entry 0;
     * that entry, at least, must be there. */
    if (eh.e_shoff != 0 &&
        !range_within(eh.e_shoff, eh.e_shnum != 0 ? eh.e_shnum : 1, eh.e_shentsize, size, &end)) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: not a loadable shared object: truncated: the section header table "
                    "ends at byte %" G_GUINT64_FORMAT " past the end of the file (%" G_GUINT64_FORMAT
                    " bytes)", path, end, size);
        goto out;
    }
    ok = TRUE;
out:
    g_free(ph);
    close(fd);
    return ok;
}

static JetPlugin *load_checked(const jet_host_api *api, const char *path, const JetLoadPolicy *policy, GError **error)
{
    g_autoptr(GError) local = NULL;
    struct stat st;

    if (!jet_path_check_trusted(path, policy, &local)) {
        g_set_error(error, JET_ERROR, local->code, "plugin %s: refused: %s", path, local->message);
        return NULL;
    }
    if (stat(path, &st) != 0) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: %s", path, g_strerror(errno));
        return NULL;
    }
    if (!elf_check(path, error))
        return NULL;
    if (policy != NULL && policy->after_check != NULL)
        policy->after_check(path, policy->after_check_data);

    dlerror();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == NULL) {
        const char *why = dlerror();
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: not a loadable shared object: %s",
                    path, why != NULL ? why : "unknown error");
        return NULL;
    }
    jet_plugin_entry_fn entry;
    *(void **)&entry = dlsym(handle, JET_PLUGIN_ENTRY_SYMBOL);
    if (entry == NULL) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN,
                    "plugin %s: no %s symbol: not a jethost plugin", path, JET_PLUGIN_ENTRY_SYMBOL);
        return NULL;
    }

    dev_t dev;
    ino_t ino;
    if (!mapped_file_identity(*(void **)&entry, &dev, &ino) || dev != st.st_dev || ino != st.st_ino) {
        g_set_error(error, JET_ERROR, JET_ERROR_PERMISSION,
                    "plugin %s: refused: the object loaded is not the file that was checked "
                    "(was it replaced while loading?)", path);
        return NULL;
    }

    JetPlugin *p = g_new0(JetPlugin, 1);
    p->path = g_strdup(path);
    p->handle = handle;
    const jet_plugin *desc = entry(api);
    if (!jet_plugin_descriptor_check(desc, &p->desc, &local)) {
        g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "plugin %s: %s", path, local->message);
        g_free(p->path);
        g_free(p);
        return NULL;
    }
    return p;
}

JetPlugin *jet_plugin_load_with(const jet_host_api *api, const char *name_or_path, const char *plugin_dir,
                                const JetLoadPolicy *policy, GError **error)
{
    g_autofree char *given = plugin_candidate(name_or_path, plugin_dir, error);
    if (given == NULL)
        return NULL;
    g_autofree char *path = jet_plugin_resolve(name_or_path, plugin_dir, error);
    if (path == NULL)
        return NULL;
    /* The path as the config gives it, before anything is loaded: a symlink
     * or a directory on it that others may change would let them choose
     * which library's constructors run (docs/loader.md).  Checked on every
     * load, a plugin already resident included. */
    g_autoptr(GError) local = NULL;
    if (!jet_path_check_as_given(given, policy, &local)) {
        g_set_error(error, JET_ERROR, local->code, "plugin %s: refused: %s", given, local->message);
        return NULL;
    }

    g_mutex_lock(&registry_lock);
    if (registry == NULL)
        registry = g_hash_table_new(g_str_hash, g_str_equal);
    JetPlugin *p = g_hash_table_lookup(registry, path);
    if (p == NULL) {
        p = load_checked(api, path, policy, error);
        if (p != NULL)
            g_hash_table_insert(registry, p->path, p);
    } else if (!jet_path_check_trusted(path, policy, &local)) {
        /* Loaded earlier, but the file's safety changed since: say so. */
        g_set_error(error, JET_ERROR, local->code, "plugin %s: refused: %s", path, local->message);
        p = NULL;
    }
    g_mutex_unlock(&registry_lock);
    return p;
}

const jet_plugin *jet_plugin_descriptor(const JetPlugin *p)
{
    return &p->desc;
}

const char *jet_plugin_path(const JetPlugin *p)
{
    return p->path;
}

const char *jet_plugin_name(const JetPlugin *p)
{
    return p->desc.name;
}

/* --- plugins linked into the program (the mock host's static mode) ------- */

static GHashTable *linked;   /* entry function -> JetPlugin*, never freed */

JetPlugin *jet_plugin_from_entry_with(const jet_host_api *api, jet_plugin_entry_fn entry, GError **error)
{
    g_return_val_if_fail(api != NULL && entry != NULL, NULL);
    g_mutex_lock(&registry_lock);
    if (linked == NULL)
        linked = g_hash_table_new(g_direct_hash, g_direct_equal);
    JetPlugin *p = g_hash_table_lookup(linked, *(gpointer *)&entry);
    if (p == NULL) {
        g_autoptr(GError) local = NULL;
        jet_plugin desc;
        if (!jet_plugin_descriptor_check(entry(api), &desc, &local)) {
            g_set_error(error, JET_ERROR, JET_ERROR_PLUGIN, "linked-in plugin: %s", local->message);
        } else {
            p = g_new0(JetPlugin, 1);
            p->path = g_strdup_printf("linked-in:%s", desc.name);
            p->desc = desc;
            g_hash_table_insert(linked, *(gpointer *)&entry, p);
        }
    }
    g_mutex_unlock(&registry_lock);
    return p;
}
