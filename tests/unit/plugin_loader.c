/* The plugin loader: every refusal docs/loader.md names, each with a
 * fixture that breaks exactly one rule. */
#include "harness.h"
#include "errors.h"
#include "host_api.h"
#include "instance.h"
#include "plugin_loader.h"

#include <elf.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Trust only the test's own user (and root), whoever runs it. */
static uid_t me[2];
static JetLoadPolicy policy = { me, 2, NULL, NULL };

static void assert_refused(const char *path, JetLoadPolicy *pol, const char *needle)
{
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, pol, &err);
    g_assert_null(p);
    g_assert_nonnull(err);
    g_test_message("refusal: %s", err->message);
    g_assert_nonnull(strstr(err->message, path));
    if (strstr(err->message, needle) == NULL)
        g_error("expected '%s' in: %s", needle, err->message);
    g_assert_null(strchr(err->message, '\n'));
}

static void test_loads_template(void)
{
    g_autofree char *path = jet_test_plugin_copy("template");
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(jet_plugin_name(p), ==, "template");
    g_assert_cmpstr(jet_plugin_path(p), ==, path);
    const jet_plugin *d = jet_plugin_descriptor(p);
    g_assert_cmpuint(d->abi_major, ==, JET_ABI_MAJOR);
    g_assert_cmpuint(d->struct_size, ==, sizeof(jet_plugin));

    g_autoptr(JetInstance) inst = jet_instance_new(p, "t", NULL, &err);
    g_assert_no_error(err);
    g_assert_true(jet_instance_start(inst, &err));
    g_assert_no_error(err);
}

static void test_missing_file(void)
{
    g_autofree char *path = g_build_filename(jet_test_private_dir(), "nope.so", NULL);
    assert_refused(path, &policy, "no such file");
}

static void test_not_shared_object(void)
{
    g_autofree char *path = g_build_filename(jet_test_private_dir(), "text.so", NULL);
    g_assert_true(g_file_set_contents_full(path, "not an ELF file\n", -1,
                                           G_FILE_SET_CONTENTS_NONE, 0644, NULL));
    assert_refused(path, &policy, "not a loadable shared object");
}

static void test_no_entry(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_noentry");
    assert_refused(path, &policy, "no jet_plugin_entry symbol");
}

static void test_abi_major(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_abi_major");
    assert_refused(path, &policy, "built for plugin ABI 2.0; this host speaks 1.2");
}

static void test_abi_minor_newer(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_abi_minor");
    assert_refused(path, &policy, "built for plugin ABI 1.9; this host speaks 1.2");
}

static void test_abi_frozen_10(void)
{
    /* Built against tests/abi-1.0/jethost/plugin.h, the header as released. */
    g_autofree char *path = jet_test_plugin_copy("fx_abi10");
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
    g_assert_no_error(err);
    g_autoptr(JetInstance) inst = jet_instance_new(p, "old", NULL, &err);
    g_assert_no_error(err);
    g_assert_true(jet_instance_start(inst, &err));
}

static void test_abi_frozen_11(void)
{
    /* Built against tests/abi-1.1/jethost/plugin.h, the 1.1 header as
     * released: its descriptor ends before 1.2's members, read as absent. */
    g_autofree char *path = jet_test_plugin_copy("fx_abi11");
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
    g_assert_no_error(err);
    const jet_plugin *d = jet_plugin_descriptor(p);
    g_assert_cmpuint(d->abi_minor, ==, 1);
    g_assert_null(d->validate);
    g_assert_null(d->settled);
    g_autoptr(JetInstance) inst = jet_instance_new(p, "old11", NULL, &err);
    g_assert_no_error(err);
    g_assert_true(jet_instance_validate(inst, &err));
    g_assert_true(jet_instance_start(inst, &err));
}

static void test_descriptor_rules(void)
{
    jet_plugin d = { JET_PLUGIN_HEADER, .name = "x", .handle = (int (*)(void *, jet_msg *))1,
                     .init = (int (*)(jet_ctx *, void **, char *, size_t))1 };
    jet_plugin out;
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_plugin_descriptor_check(&d, &out, &err));

    /* A smaller (older) struct than 1.0's is refused. */
    d.struct_size = offsetof(jet_plugin, handle);
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_nonnull(strstr(err->message, "smaller"));
    g_clear_error(&err);

    /* A larger struct from a newer header is read when its extra bytes are zero. */
    struct { jet_plugin p; uint64_t extra; } big;
    memset(&big, 0, sizeof big);
    big.p = (jet_plugin){ JET_PLUGIN_HEADER, .name = "x", .handle = d.handle, .init = d.init };
    big.p.struct_size = sizeof big;
    g_assert_true(jet_plugin_descriptor_check(&big.p, &out, &err));
    g_assert_cmpuint(out.struct_size, ==, sizeof(jet_plugin));
    big.extra = 1;
    g_assert_false(jet_plugin_descriptor_check(&big.p, &out, &err));
    g_assert_nonnull(strstr(err->message, "does not know"));
    g_clear_error(&err);

    d.struct_size = sizeof d;
    d.abi_minor = JET_ABI_MINOR;
    d.name = NULL;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_clear_error(&err);

    g_assert_false(jet_plugin_descriptor_check(NULL, &out, &err));
}

/* Option entries read with the descriptor's option_size: 0 is 1.0's
 * layout; a larger entry (a newer header) is copied into this host's when
 * its extra bytes are zero; a smaller or absurd one is refused. */
typedef struct {
    jet_option o;
    uint64_t extra;
} WideOption;

static void test_option_size(void)
{
    static const jet_option plain[] = {
        { .name = "a", .type = JET_OPT_INT, .default_value = "1" },
        { .name = "b", .type = JET_OPT_BOOL },
        { .name = NULL },
    };
    jet_plugin d = { JET_PLUGIN_HEADER, .name = "x", .handle = (int (*)(void *, jet_msg *))1,
                     .init = (int (*)(jet_ctx *, void **, char *, size_t))1, .options = plain };
    jet_plugin out;
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_true(out.options == plain);
    d.option_size = 0;   /* a 1.0 plugin */
    g_assert_true(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_true(out.options == plain);

    static WideOption wide[3];
    memset(wide, 0, sizeof wide);
    wide[0].o = (jet_option){ .name = "a", .type = JET_OPT_INT, .default_value = "1" };
    wide[1].o = (jet_option){ .name = "b", .type = JET_OPT_DURATION };
    d.options = &wide[0].o;
    d.option_size = sizeof(WideOption);
    g_assert_true(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_true(out.options != &wide[0].o);
    g_assert_cmpstr(out.options[1].name, ==, "b");
    g_assert_cmpint(out.options[1].type, ==, JET_OPT_DURATION);
    g_assert_null(out.options[2].name);
    g_assert_cmpuint(out.option_size, ==, sizeof(jet_option));
    wide[1].extra = 1;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_nonnull(strstr(err->message, "option entry 1 sets members this host does not know"));
    g_clear_error(&err);

    d.options = plain;
    d.option_size = sizeof(jet_option) - 8;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_nonnull(strstr(err->message, "option entries are"));
    g_clear_error(&err);
    d.option_size = 100000;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_clear_error(&err);

    /* A table with no end is refused at a bound, not read for ever. */
    static jet_option endless[300];
    for (guint i = 0; i < G_N_ELEMENTS(endless); i++)
        endless[i] = (jet_option){ .name = "n", .type = JET_OPT_STRING };
    d.options = endless;
    d.option_size = sizeof(jet_option);
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_nonnull(strstr(err->message, "more than 256 entries"));
}


/* Writes the first len bytes of contents, or all of it patched, as a plugin
 * file in the private directory. */
static char *write_plugin_file(const char *name, const char *contents, gsize len)
{
    g_autoptr(GError) err = NULL;
    char *path = g_build_filename(jet_test_private_dir(), name, NULL);
    g_file_set_contents_full(path, contents, (gssize)len, G_FILE_SET_CONTENTS_NONE, 0644, &err);
    g_assert_no_error(err);
    g_assert_cmpint(chmod(path, 0644), ==, 0);
    return path;
}

/* A cut-short plugin made dlopen() fault with SIGBUS; each cut is refused by
 * the ELF check instead, and the process lives on to check the next. */
static void test_elf_truncated(void)
{
    g_autofree char *src = jet_test_plugin_copy("template");
    g_autofree char *contents = NULL;
    gsize len = 0;
    g_autoptr(GError) err = NULL;
    g_assert_true(g_file_get_contents(src, &contents, &len, &err));
    g_assert_cmpuint(len, >, 8001);
    const gsize cuts[] = { 64, 1000, 4096, 8000, len / 2, len - 1 };
    guint segment_refusals = 0;
    for (gsize i = 0; i < G_N_ELEMENTS(cuts); i++) {
        g_autofree char *name = g_strdup_printf("cut-%" G_GSIZE_FORMAT ".so", cuts[i]);
        g_autofree char *path = write_plugin_file(name, contents, cuts[i]);
        g_autofree char *tail = g_strdup_printf("past the end of the file (%" G_GSIZE_FORMAT " bytes)",
                                                cuts[i]);
        assert_refused(path, &policy, tail);
        JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
        g_assert_null(p);
        g_assert_nonnull(strstr(err->message, "truncated: "));
        if (strstr(err->message, "(PT_LOAD) ends at byte") != NULL)
            segment_refusals++;
        g_clear_error(&err);
    }
    /* The cuts inside the loadable segments are caught by the segment check,
     * the one that stands between the file and the SIGBUS. */
    g_assert_cmpuint(segment_refusals, >=, 2);
    /* Shorter than the ELF header itself. */
    g_autofree char *tiny = write_plugin_file("tiny.so", contents, 20);
    assert_refused(tiny, &policy, "truncated: the ELF header needs");
    /* The whole file still loads. */
    g_autofree char *whole = write_plugin_file("whole.so", contents, len);
    JetPlugin *p = jet_plugin_load(whole, NULL, &policy, &err);
    g_assert_no_error(err);
    g_assert_nonnull(p);
}

static void test_elf_header(void)
{
    g_autofree char *src = jet_test_plugin_copy("template");
    g_autofree char *contents = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(src, &contents, &len, NULL));
    g_assert_cmpuint(len, >=, 64);
    unsigned char *b = (unsigned char *)contents;
    unsigned char orig[20];
    memcpy(orig, b, sizeof orig);

    /* e_machine sits at byte 18 in both classes; any other machine is refused. */
    uint16_t machine;
    memcpy(&machine, b + 18, 2);
    uint16_t other = machine == EM_S390 ? EM_SPARC : EM_S390;
    memcpy(b + 18, &other, 2);
    g_autofree char *m = write_plugin_file("machine.so", contents, len);
    assert_refused(m, &policy, "built for ELF machine");
    memcpy(b, orig, sizeof orig);

    b[EI_CLASS] = b[EI_CLASS] == ELFCLASS64 ? ELFCLASS32 : ELFCLASS64;
    g_autofree char *c = write_plugin_file("class.so", contents, len);
    assert_refused(c, &policy, "ELF class");
    memcpy(b, orig, sizeof orig);

    b[EI_DATA] = b[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
    g_autofree char *d = write_plugin_file("data.so", contents, len);
    assert_refused(d, &policy, "ELF data encoding");
    memcpy(b, orig, sizeof orig);

    uint16_t exec = ET_EXEC;
    memcpy(b + 16, &exec, 2);
    g_autofree char *t = write_plugin_file("type.so", contents, len);
    assert_refused(t, &policy, "not ET_DYN");
    memcpy(b, orig, sizeof orig);

    b[1] = 'X';
    g_autofree char *n = write_plugin_file("magic.so", contents, len);
    assert_refused(n, &policy, "not an ELF file");
}

/* A struct_size far larger than any header makes must be refused without
 * reading it: the descriptor sits right before a page nothing may touch, so
 * reading past the cap faults. */
static void test_descriptor_huge_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    g_assert_cmpint(page, >=, (long)JET_PLUGIN_DESC_MAX);
    unsigned char *mem = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert_true(mem != MAP_FAILED);
    g_assert_cmpint(mprotect(mem + page, (size_t)page, PROT_NONE), ==, 0);
    /* Placed so that exactly JET_PLUGIN_DESC_MAX bytes are readable. */
    jet_plugin *d = (jet_plugin *)(void *)(mem + page - JET_PLUGIN_DESC_MAX);
    *d = (jet_plugin){ JET_PLUGIN_HEADER, .name = "x", .handle = (int (*)(void *, jet_msg *))1,
                       .init = (int (*)(jet_ctx *, void **, char *, size_t))1 };
    jet_plugin out;
    g_autoptr(GError) err = NULL;

    d->struct_size = 0xFFFFFFFFu;
    g_assert_false(jet_plugin_descriptor_check(d, &out, &err));
    g_test_message("refusal: %s", err->message);
    g_assert_nonnull(strstr(err->message, "struct_size 4294967295"));
    g_clear_error(&err);

    d->struct_size = JET_PLUGIN_DESC_MAX + 1;
    g_assert_false(jet_plugin_descriptor_check(d, &out, &err));
    g_assert_nonnull(strstr(err->message, "struct_size 4097"));
    g_clear_error(&err);

    /* At the cap, with the unknown tail zero, it is read (up to the guard
     * page and no further) and accepted. */
    d->struct_size = JET_PLUGIN_DESC_MAX;
    g_assert_true(jet_plugin_descriptor_check(d, &out, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(out.struct_size, ==, sizeof(jet_plugin));
    /* A non-zero byte at its very end is a member this host does not know. */
    mem[page - 1] = 1;
    g_assert_false(jet_plugin_descriptor_check(d, &out, &err));
    g_assert_nonnull(strstr(err->message, "does not know"));
    g_clear_error(&err);
    g_assert_cmpint(munmap(mem, (size_t)page * 2), ==, 0);
}

static void test_plugin_names(void)
{
    jet_plugin d = { JET_PLUGIN_HEADER, .handle = (int (*)(void *, jet_msg *))1,
                     .init = (int (*)(jet_ctx *, void **, char *, size_t))1 };
    jet_plugin out;
    g_autoptr(GError) err = NULL;
    char max[JET_PLUGIN_NAME_MAX + 1], over[JET_PLUGIN_NAME_MAX + 2];
    memset(max, 'a', JET_PLUGIN_NAME_MAX);
    max[JET_PLUGIN_NAME_MAX] = '\0';
    memset(over, 'b', JET_PLUGIN_NAME_MAX + 1);
    over[JET_PLUGIN_NAME_MAX + 1] = '\0';

    const char *good[] = { "a", "fx_misuse-2", "0", max };
    for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
        d.name = good[i];
        g_assert_true(jet_plugin_descriptor_check(&d, &out, &err));
        g_assert_no_error(err);
    }
    static const struct {
        const char *name, *shown;
    } bad[] = {
        { "", "its name '' " },
        { "Fx", "its name 'Fx' " },
        { "a b", "its name 'a b' " },
        { "../x", "its name '../x' " },
        { "x.so", "its name 'x.so' " },
        { "x\ny\x1b", "its name 'x\\ny\\033' " },
        { "caf\xc3\xa9", "its name 'caf\\303\\251' " },
        { "q'\"", "its name 'q'\\\"' " },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        d.name = bad[i].name;
        g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
        g_test_message("refusal: %s", err->message);
        if (strstr(err->message, bad[i].shown) == NULL)
            g_error("expected \"%s\" in: %s", bad[i].shown, err->message);
        g_assert_nonnull(strstr(err->message, "[a-z0-9_-]"));
        g_assert_null(strchr(err->message, '\n'));
        g_clear_error(&err);
    }
    /* Too long: shown cut at the limit, marked as cut. */
    d.name = over;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_autofree char *shown = g_strdup_printf("'%.*s...'", JET_PLUGIN_NAME_MAX, over);
    g_assert_nonnull(strstr(err->message, shown));
    g_clear_error(&err);
}

/* The host table's side of the promise: a plugin reads a member added after
 * 1.0 only when the table's struct_size covers it (JET_HOST_HAS), so a
 * smaller table, as an older host's would be, reads with the missing members
 * absent.  The table this host hands out is its full size and version. */
static void test_host_table_size(void)
{
    const jet_host_api *h = jet_host_api_table();
    g_assert_cmpuint(h->struct_size, ==, sizeof(jet_host_api));
    g_assert_cmpuint(h->abi_major, ==, JET_ABI_MAJOR);
    g_assert_cmpuint(h->abi_minor, ==, JET_ABI_MINOR);
    g_assert_true(JET_HOST_HAS(h, ctx_stopping));
    g_assert_nonnull(h->ctx_stopping);

    jet_host_api older = *h;
    older.struct_size = offsetof(jet_host_api, ctx_now_ns);
    g_assert_true(JET_HOST_HAS(&older, msg_subject));
    g_assert_true(JET_HOST_HAS(&older, ctx_log));
    g_assert_false(JET_HOST_HAS(&older, ctx_now_ns));
    g_assert_false(JET_HOST_HAS(&older, ctx_stopping));
    /* One byte short of a member is not having it. */
    older.struct_size = offsetof(jet_host_api, ctx_stopping) + sizeof older.ctx_stopping - 1;
    g_assert_false(JET_HOST_HAS(&older, ctx_stopping));
    g_assert_true(JET_HOST_HAS(&older, ctx_now_ns));
}

static void test_init_failure(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
    g_assert_no_error(err);
    g_autoptr(GHashTable) opts = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(opts, "fail_init", "true");
    g_hash_table_insert(opts, "label", "quoted");
    g_autoptr(JetInstance) inst = jet_instance_new(p, "b", opts, &err);
    g_assert_no_error(err);
    g_assert_false(jet_instance_start(inst, &err));
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, path));
    g_assert_nonnull(strstr(err->message, "init failed: fixture asked to fail (label quoted)"));
}

static void test_options(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
    g_assert_no_error(err);
    static const struct {
        const char *key, *value, *needle;
    } bad[] = {
        { "lable", "x", "option.lable: plugin fx" },
        { "count", "three", "option.count: 'three' is not an integer" },
        { "count", "3.5", "not an integer" },
        { "loud", "yes", "option.loud: 'yes' is not a bool" },
        { "pause", "10", "has no unit" },
        { "pause", "5 parsecs", "unknown unit" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GHashTable) opts = g_hash_table_new(g_str_hash, g_str_equal);
        g_hash_table_insert(opts, (char *)bad[i].key, (char *)bad[i].value);
        JetInstance *inst = jet_instance_new(p, "b", opts, &err);
        g_assert_null(inst);
        g_assert_nonnull(err);
        if (strstr(err->message, bad[i].needle) == NULL)
            g_error("expected '%s' in: %s", bad[i].needle, err->message);
        g_clear_error(&err);
    }
    /* Good values, read back typed; defaults fill the rest. */
    g_autoptr(GHashTable) opts = g_hash_table_new(g_str_hash, g_str_equal);
    g_hash_table_insert(opts, "count", "-7");
    g_hash_table_insert(opts, "pause", "2m");
    g_autoptr(JetInstance) inst = jet_instance_new(p, "b", opts, &err);
    g_assert_no_error(err);
    g_assert_true(jet_instance_start(inst, &err));
}

static void test_required_option(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_required");
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
    g_assert_no_error(err);
    JetInstance *inst = jet_instance_new(p, "b", NULL, &err);
    g_assert_null(inst);
    g_assert_nonnull(strstr(err->message, "option.must: plugin fx requires it"));
}

static void test_untrusted_owner(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    struct stat st;
    g_assert_cmpint(stat(path, &st), ==, 0);
    /* Trust everybody who owns the directories above, but not the file's owner. */
    uid_t others[] = { st.st_uid + 1 };
    JetLoadPolicy strict = { others, 1, NULL, NULL };
    assert_refused(path, &strict, "is owned by uid");
}

static void test_file_writable(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    g_assert_cmpint(chmod(path, 0664), ==, 0);
    assert_refused(path, &policy, "writable by its group");
    g_assert_cmpint(chmod(path, 0646), ==, 0);
    assert_refused(path, &policy, "writable by others");
}

static void test_dir_writable_and_sticky(void)
{
    g_autofree char *dir = g_build_filename(jet_test_private_dir(), "shared", NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_autofree char *src = jet_test_plugin_copy("fx_ok");
    g_autofree char *path = g_build_filename(dir, "fx.so", NULL);
    g_assert_cmpint(rename(src, path), ==, 0);

    g_assert_cmpint(chmod(dir, 0777), ==, 0);
    assert_refused(path, &policy, "directory");
    assert_refused(path, &policy, "writable by others");

    /* Sticky, like /tmp: others cannot replace a file they do not own. */
    g_assert_cmpint(chmod(dir, 01777), ==, 0);
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(path, NULL, &policy, &err);
    g_assert_no_error(err);
    g_assert_nonnull(p);
    g_assert_cmpint(chmod(dir, 0700), ==, 0);
}

/* A fresh directory in the private one, with the given mode. */
static char *make_dir(const char *parent, const char *name, mode_t mode)
{
    char *dir = g_build_filename(parent != NULL ? parent : jet_test_private_dir(), name, NULL);
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    g_assert_cmpint(chmod(dir, mode), ==, 0);
    return dir;
}

/* Moves a fresh copy of the built plugin into dir as file; returns its path. */
static char *plugin_in(const char *dir, const char *plugin, const char *file)
{
    g_autofree char *src = jet_test_plugin_copy(plugin);
    char *path = g_build_filename(dir, file, NULL);
    g_assert_cmpint(rename(src, path), ==, 0);
    return path;
}

static char *ctor_mark(void)
{
    char *mark = g_build_filename(jet_test_private_dir(), "ctor-ran", NULL);
    g_unlink(mark);
    g_assert_true(g_setenv("JET_FX_CTOR_MARK", mark, TRUE));
    return mark;
}

/* A symlink in a world-writable, non-sticky directory: anyone may re-point
 * it, so it is refused though its target is safe, and refused before
 * dlopen(): the library's constructor never runs. */
static void test_symlink_in_open_dir(void)
{
    g_autofree char *mark = ctor_mark();
    g_autofree char *good = make_dir(NULL, "safe", 0700);
    g_autofree char *open = make_dir(NULL, "open", 0777);
    g_autofree char *target = plugin_in(good, "fx_ctor", "fx.so");

    g_autofree char *link = g_build_filename(open, "p.so", NULL);
    g_assert_cmpint(symlink(target, link), ==, 0);
    assert_refused(link, &policy, "writable by others");
    assert_refused(link, &policy, open);
    /* A relative link is checked the same way. */
    g_autofree char *rel = g_build_filename(open, "rel.so", NULL);
    g_assert_cmpint(symlink("../safe/fx.so", rel), ==, 0);
    assert_refused(rel, &policy, open);
    /* A symlinked directory in it, named as a path or as plugin_dir. */
    g_autofree char *dlink = g_build_filename(open, "dir", NULL);
    g_assert_cmpint(symlink(good, dlink), ==, 0);
    g_autofree char *via = g_build_filename(dlink, "fx.so", NULL);
    assert_refused(via, &policy, open);
    g_autoptr(GError) err = NULL;
    g_assert_null(jet_plugin_load("fx", dlink, &policy, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->message, "writable by others"));
    g_clear_error(&err);
    g_assert_false(g_file_test(mark, G_FILE_TEST_EXISTS));

    /* Once the directory is closed, the same link loads, and the
     * constructor shows that it would have run. */
    g_assert_cmpint(chmod(open, 0755), ==, 0);
    JetPlugin *p = jet_plugin_load(link, NULL, &policy, &err);
    g_assert_no_error(err);
    g_assert_nonnull(p);
    g_assert_cmpstr(jet_plugin_path(p), ==, target);
    g_assert_true(g_file_test(mark, G_FILE_TEST_EXISTS));
    /* Resident now; a path through an open directory is still refused. */
    g_assert_cmpint(chmod(open, 0777), ==, 0);
    assert_refused(link, &policy, open);
    g_unsetenv("JET_FX_CTOR_MARK");
}

/* The link is safe where it lies, its target's directory is not. */
static void test_symlink_to_open_dir(void)
{
    g_autofree char *good = make_dir(NULL, "safe2", 0700);
    g_autofree char *open = make_dir(NULL, "open2", 0700);
    g_autofree char *target = plugin_in(open, "fx_ok", "fx.so");
    g_assert_cmpint(chmod(open, 0777), ==, 0);
    g_autofree char *link = g_build_filename(good, "p.so", NULL);
    g_assert_cmpint(symlink(target, link), ==, 0);
    assert_refused(link, &policy, open);
}

/* In a sticky directory (like /tmp) a symlink is as safe as its owner. */
static void test_symlink_owner_in_sticky_dir(void)
{
    g_autofree char *good = make_dir(NULL, "safe3", 0700);
    g_autofree char *sticky = make_dir(NULL, "sticky", 01777);
    g_autofree char *target = plugin_in(good, "fx_ok", "fx.so");
    g_autofree char *mine = g_build_filename(sticky, "mine.so", NULL);
    g_assert_cmpint(symlink(target, mine), ==, 0);
    g_autoptr(GError) err = NULL;
    g_assert_nonnull(jet_plugin_load(mine, NULL, &policy, &err));
    g_assert_no_error(err);
    if (geteuid() != 0) {
        /* Only root can make a symlink owned by someone else: as a user the
         * case ends here (CI runs it as root, whole). */
        g_test_message("not root: the other user's symlink is not made");
        return;
    }
    g_autofree char *theirs = g_build_filename(sticky, "theirs.so", NULL);
    g_assert_cmpint(symlink(target, theirs), ==, 0);
    g_assert_cmpint(lchown(theirs, 65534, 65534), ==, 0);
    assert_refused(theirs, &policy, "symlink");
    assert_refused(theirs, &policy, "is owned by uid 65534");
}

/* A private directory inside a world-writable one: whoever may write the
 * parent may rename the private directory away and put their own there. */
static void test_dir_above_open(void)
{
    g_autofree char *mark = ctor_mark();
    g_autofree char *top = make_dir(NULL, "top", 0700);
    g_autofree char *inner = make_dir(top, "inner", 0700);
    g_autofree char *path = plugin_in(inner, "fx_ctor", "fx.so");
    g_assert_cmpint(chmod(top, 0777), ==, 0);
    assert_refused(path, &policy, "writable by others");
    assert_refused(path, &policy, top);
    g_assert_false(g_file_test(mark, G_FILE_TEST_EXISTS));
    g_unsetenv("JET_FX_CTOR_MARK");
}

/* The sticky bit exempts a directory, never a plugin file. */
static void test_file_sticky_writable(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    g_assert_cmpint(chmod(path, 01666), ==, 0);
    assert_refused(path, &policy, "writable by others (mode 1666)");
    g_assert_cmpint(chmod(path, 01664), ==, 0);
    assert_refused(path, &policy, "writable by its group (mode 1664)");
    g_assert_cmpint(chmod(path, 01646), ==, 0);
    assert_refused(path, &policy, "writable by others");
}

/* An older major is refused like a newer one, naming both versions. */
static void test_abi_major_older(void)
{
    jet_plugin d = { JET_PLUGIN_HEADER, .name = "x", .handle = (int (*)(void *, jet_msg *))1,
                     .init = (int (*)(jet_ctx *, void **, char *, size_t))1 };
    /* Minor 0: only the major may refuse it. */
    d.abi_major = 0;
    d.abi_minor = 0;
    jet_plugin out;
    g_autoptr(GError) err = NULL;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_test_message("refusal: %s", err->message);
    g_autofree char *want = g_strdup_printf("built for plugin ABI 0.0; this host speaks %u.%u", JET_ABI_MAJOR,
                                            JET_ABI_MINOR);
    g_assert_nonnull(strstr(err->message, want));
}

/* The rule `jethost run` applies (no policy): root and the effective user
 * are trusted, anyone else is not.  The decision on a stat made here, as any
 * user; and, as root, on a real file given away. */
static void test_default_owner_rule(void)
{
    uid_t other = geteuid() == 65534 ? 65533 : 65534;
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_mode = S_IFREG | 0644;
    g_autoptr(GError) err = NULL;
    st.st_uid = 0;
    g_assert_true(jet_path_check_stat("file", "/x.so", &st, NULL, &err));
    st.st_uid = geteuid();
    g_assert_true(jet_path_check_stat("file", "/x.so", &st, NULL, &err));
    g_assert_no_error(err);
    st.st_uid = other;
    g_assert_false(jet_path_check_stat("file", "/x.so", &st, NULL, &err));
    g_autofree char *want = g_strdup_printf("file /x.so is owned by uid %u", (unsigned)other);
    g_assert_nonnull(strstr(err->message, want));
    g_clear_error(&err);
    st.st_mode = S_IFDIR | 0755;
    g_assert_false(jet_path_check_stat("directory", "/d", &st, NULL, &err));
    g_clear_error(&err);

    if (geteuid() != 0) {
        g_test_message("giving a file away needs root: the rule was checked on a stat only");
        return;
    }
    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    g_assert_cmpint(chown(path, other, other), ==, 0);
    g_autofree char *need = g_strdup_printf("is owned by uid %u", (unsigned)other);
    assert_refused(path, NULL, need);
    g_autofree char *dir = make_dir(NULL, "theirs", 0755);
    g_autofree char *inside = plugin_in(dir, "fx_ok", "fx.so");
    g_assert_cmpint(chown(dir, other, other), ==, 0);
    assert_refused(inside, NULL, "directory");
    assert_refused(inside, NULL, need);
}

static void swap_file(const char *path, gpointer data)
{
    /* Another (valid) plugin takes the checked file's place. */
    g_assert_cmpint(rename((const char *)data, path), ==, 0);
}

static void test_swapped_after_check(void)
{
    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    g_autofree char *other = jet_test_plugin_copy("template");
    JetLoadPolicy swapping = { me, 2, swap_file, other };
    assert_refused(path, &swapping, "not the file that was checked");
}

static void test_resolve(void)
{
    g_autoptr(GError) err = NULL;
    g_assert_null(jet_plugin_resolve("plugins/x.so", "/usr/lib", &err));
    g_assert_nonnull(strstr(err->message, "never searched for"));
    g_clear_error(&err);
    g_assert_null(jet_plugin_resolve("x", NULL, &err));
    g_assert_nonnull(strstr(err->message, "plugin_dir"));
    g_clear_error(&err);

    g_autofree char *path = jet_test_plugin_copy("fx_ok");
    g_autofree char *base = g_path_get_basename(path);
    g_autofree char *name = g_strndup(base, strlen(base) - 3);
    /* A bare name, with or without .so, through a symlinked directory: the
     * canonical path comes back. */
    g_autofree char *link = g_build_filename(jet_test_private_dir(), "via-link", NULL);
    g_assert_cmpint(symlink(jet_test_private_dir(), link), ==, 0);
    g_autofree char *r1 = jet_plugin_resolve(name, link, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(r1, ==, path);
    g_autofree char *r2 = jet_plugin_resolve(base, link, &err);
    g_assert_cmpstr(r2, ==, path);
}

/* --- rules at their edges ---------------------------------------------------- */

/* Every one of name, init() and handle() is required, and the minor
 * version is at most the host's. */
static void test_descriptor_required_members(void)
{
    jet_plugin out;
    g_autoptr(GError) err = NULL;
    jet_plugin d = { JET_PLUGIN_HEADER, .name = "x", .handle = (int (*)(void *, jet_msg *))1,
                     .init = (int (*)(jet_ctx *, void **, char *, size_t))1 };
    g_assert_true(jet_plugin_descriptor_check(&d, &out, &err));
    d.init = NULL;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_nonnull(strstr(err->message, "lacks a name, init() or handle()"));
    g_clear_error(&err);
    d.init = (int (*)(jet_ctx *, void **, char *, size_t))1;
    d.handle = NULL;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_nonnull(strstr(err->message, "lacks a name, init() or handle()"));
    g_clear_error(&err);
    /* The first minor this host does not speak. */
    d.handle = (int (*)(void *, jet_msg *))1;
    d.abi_minor = JET_ABI_MINOR + 1;
    g_assert_false(jet_plugin_descriptor_check(&d, &out, &err));
    g_assert_nonnull(strstr(err->message, "the minor be at most the host's"));
}

/* Headers that only the ELF check refuses, each a one-field change to the
 * template plugin: shorter than e_ident, no program headers, a section
 * count of 0 (which means "in entry 0") with that entry past the end, and
 * the other ELF class; and one it accepts. */
static void test_elf_header_edges(void)
{
    g_autofree char *src = jet_test_plugin_copy("template");
    g_autofree char *contents = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(src, &contents, &len, NULL));
    g_assert_cmpuint(len, >=, sizeof(Elf64_Ehdr));
    g_assert_cmpint(contents[EI_CLASS], ==, ELFCLASS64);
    g_autofree char *orig = g_memdup2(contents, len);

    /* Cut after the class byte: the data byte is missing, not wrong. */
    g_autofree char *tiny = write_plugin_file("ident.so", contents, EI_DATA);
    assert_refused(tiny, &policy, "truncated: the ELF header needs");

    Elf64_Ehdr eh;
    memcpy(&eh, contents, sizeof eh);
    eh.e_phnum = 0;
    memcpy(contents, &eh, sizeof eh);
    g_autofree char *noph = write_plugin_file("noph.so", contents, len);
    assert_refused(noph, &policy, "0 program headers");
    memcpy(contents, orig, len);

    memcpy(&eh, contents, sizeof eh);
    g_assert_cmpuint(eh.e_shentsize, >, 8);
    eh.e_shnum = 0;
    eh.e_shoff = len - 8;
    memcpy(contents, &eh, sizeof eh);
    g_autofree char *nosh = write_plugin_file("nosh.so", contents, len);
    assert_refused(nosh, &policy, "the section header table ends at byte");
    memcpy(contents, orig, len);

    /* The other class: refused by the check itself, naming both. */
    contents[EI_CLASS] = ELFCLASS32;
    g_autofree char *c32 = write_plugin_file("class32.so", contents, len);
    assert_refused(c32, &policy, "ELF class 1 (32-bit), this host is 64-bit");
    memcpy(contents, orig, len);

    /* Only loadable segments must lie within the file: the stack segment
     * maps nothing, so where its offset points does not matter. */
    memcpy(&eh, contents, sizeof eh);
    gboolean patched = FALSE;
    for (guint i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        gsize at = (gsize)eh.e_phoff + (gsize)i * sizeof ph;
        g_assert_cmpuint(at + sizeof ph, <=, len);
        memcpy(&ph, contents + at, sizeof ph);
        if (ph.p_type != PT_GNU_STACK)
            continue;
        ph.p_offset = len + 4096;
        memcpy(contents + at, &ph, sizeof ph);
        patched = TRUE;
    }
    g_assert_true(patched);
    g_autofree char *stack = write_plugin_file("stack.so", contents, len);
    g_autoptr(GError) err = NULL;
    JetPlugin *p = jet_plugin_load(stack, NULL, &policy, &err);
    g_assert_no_error(err);
    g_assert_nonnull(p);
}

/* A chain of symlinks is followed as the kernel follows it: 40 links and
 * no more. */
static void test_symlink_chain(void)
{
    g_autofree char *dir = make_dir(NULL, "chain", 0700);
    g_autofree char *prev = plugin_in(dir, "template", "p.so");
    g_autoptr(GError) err = NULL;
    for (guint i = 1; i <= 41; i++) {
        g_autofree char *name = g_strdup_printf("l%u.so", i);
        char *link = g_build_filename(dir, name, NULL);
        g_assert_cmpint(symlink(prev, link), ==, 0);
        g_free(prev);
        prev = link;
        if (i == 40) {
            g_assert_true(jet_path_check_as_given(link, &policy, &err));
            g_assert_no_error(err);
        }
    }
    g_assert_false(jet_path_check_as_given(prev, &policy, &err));
    g_assert_nonnull(strstr(err->message, "too many levels of symbolic links"));
}

/* The path as given names a file: a directory is refused, here too. */
static void test_as_given_directory(void)
{
    g_autofree char *dir = make_dir(NULL, "plain", 0755);
    g_autoptr(GError) err = NULL;
    g_assert_false(jet_path_check_as_given(dir, &policy, &err));
    g_assert_nonnull(strstr(err->message, "is not a regular file"));
}

/* The default owner rule as a user other than root sees it: root's files and
 * its own are trusted, nobody else's (as root, both rules are one). */
static void test_default_owner_rule_other_user(void)
{
    /* As root the test takes another id for a moment; as a user it is one. */
    gboolean as_root = geteuid() == 0;
    const uid_t self = as_root ? 65534 : geteuid();
    const uid_t other = self == 65533 ? 65532 : 65533;
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_mode = S_IFREG | 0644;
    g_autoptr(GError) e_root = NULL, e_own = NULL, e_other = NULL;
    if (as_root)
        g_assert_cmpint(seteuid(self), ==, 0);
    st.st_uid = 0;
    gboolean root_ok = jet_path_check_stat("file", "/x.so", &st, NULL, &e_root);
    st.st_uid = self;
    gboolean own_ok = jet_path_check_stat("file", "/x.so", &st, NULL, &e_own);
    st.st_uid = other;
    gboolean other_ok = jet_path_check_stat("file", "/x.so", &st, NULL, &e_other);
    if (as_root)
        g_assert_cmpint(seteuid(0), ==, 0);
    g_assert_no_error(e_root);
    g_assert_true(root_ok);
    g_assert_no_error(e_own);
    g_assert_true(own_ok);
    g_assert_false(other_ok);
    g_autofree char *owned = g_strdup_printf("is owned by uid %u", (unsigned)other);
    g_assert_nonnull(strstr(e_other->message, owned));
}

/* plugin_dir must be absolute, and jet_path_check_trusted, asked alone,
 * checks every directory above the file as well as the file. */
static void test_dir_rules_alone(void)
{
    g_autoptr(GError) err = NULL;
    g_assert_null(jet_plugin_resolve("x", "plugins", &err));
    g_assert_nonnull(strstr(err->message, "plugin directory 'plugins' is not an absolute path"));
    g_clear_error(&err);

    g_autofree char *open = make_dir(NULL, "open-alone", 0777);
    g_autofree char *inside = plugin_in(open, "fx_ok", "fx.so");
    g_assert_false(jet_path_check_trusted(inside, &policy, &err));
    g_assert_nonnull(strstr(err->message, "writable by others"));
    g_assert_nonnull(strstr(err->message, open));
    g_clear_error(&err);
    g_assert_cmpint(chmod(open, 0755), ==, 0);
    g_assert_true(jet_path_check_trusted(inside, &policy, &err));
    g_assert_no_error(err);
}

/* Symlinks in safe directories are followed, not refused: a relative link
 * (resolved from its own directory) and a symlinked directory with the rest
 * of the path after it. */
static void test_symlinks_in_safe_dirs(void)
{
    g_autofree char *safe = make_dir(NULL, "safe-links", 0755);
    g_autofree char *real = make_dir(safe, "real", 0755);
    g_autofree char *target = plugin_in(real, "fx_ok", "fx.so");
    g_autofree char *rel = g_build_filename(safe, "rel.so", NULL);
    g_assert_cmpint(symlink("real/fx.so", rel), ==, 0);
    g_autofree char *dlink = g_build_filename(safe, "dir", NULL);
    g_assert_cmpint(symlink("real", dlink), ==, 0);
    g_autofree char *via = g_build_filename(dlink, "fx.so", NULL);
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_path_check_as_given(rel, &policy, &err));
    g_assert_no_error(err);
    g_assert_true(jet_path_check_as_given(via, &policy, &err));
    g_assert_no_error(err);
    JetPlugin *p = jet_plugin_load(via, NULL, &policy, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(jet_plugin_path(p), ==, target);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    me[0] = 0;
    me[1] = geteuid();
    g_test_add_func("/loader/loads-template", test_loads_template);
    g_test_add_func("/loader/missing-file", test_missing_file);
    g_test_add_func("/loader/not-shared-object", test_not_shared_object);
    g_test_add_func("/loader/no-entry", test_no_entry);
    g_test_add_func("/loader/abi-major", test_abi_major);
    g_test_add_func("/loader/abi-minor-newer", test_abi_minor_newer);
    g_test_add_func("/loader/abi-frozen-1.0", test_abi_frozen_10);
    g_test_add_func("/loader/abi-frozen-1.1", test_abi_frozen_11);
    g_test_add_func("/loader/option-size", test_option_size);
    g_test_add_func("/loader/descriptor-rules", test_descriptor_rules);
    g_test_add_func("/loader/elf-truncated", test_elf_truncated);
    g_test_add_func("/loader/elf-header", test_elf_header);
    g_test_add_func("/loader/descriptor-huge-size", test_descriptor_huge_size);
    g_test_add_func("/loader/plugin-names", test_plugin_names);
    g_test_add_func("/loader/host-table-size", test_host_table_size);
    g_test_add_func("/loader/init-failure", test_init_failure);
    g_test_add_func("/loader/options", test_options);
    g_test_add_func("/loader/required-option", test_required_option);
    g_test_add_func("/loader/untrusted-owner", test_untrusted_owner);
    g_test_add_func("/loader/file-writable", test_file_writable);
    g_test_add_func("/loader/dir-writable-and-sticky", test_dir_writable_and_sticky);
    g_test_add_func("/loader/swapped-after-check", test_swapped_after_check);
    g_test_add_func("/loader/symlink-in-open-dir", test_symlink_in_open_dir);
    g_test_add_func("/loader/symlink-to-open-dir", test_symlink_to_open_dir);
    g_test_add_func("/loader/symlink-owner-in-sticky-dir", test_symlink_owner_in_sticky_dir);
    g_test_add_func("/loader/dir-above-open", test_dir_above_open);
    g_test_add_func("/loader/file-sticky-writable", test_file_sticky_writable);
    g_test_add_func("/loader/abi-major-older", test_abi_major_older);
    g_test_add_func("/loader/default-owner-rule", test_default_owner_rule);
    g_test_add_func("/loader/resolve", test_resolve);
    g_test_add_func("/loader/descriptor-required-members", test_descriptor_required_members);
    g_test_add_func("/loader/elf-header-edges", test_elf_header_edges);
    g_test_add_func("/loader/symlink-chain", test_symlink_chain);
    g_test_add_func("/loader/as-given-directory", test_as_given_directory);
    g_test_add_func("/loader/default-owner-rule-other-user", test_default_owner_rule_other_user);
    g_test_add_func("/loader/dir-rules-alone", test_dir_rules_alone);
    g_test_add_func("/loader/symlinks-in-safe-dirs", test_symlinks_in_safe_dirs);
    return g_test_run();
}
