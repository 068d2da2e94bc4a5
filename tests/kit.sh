#!/bin/sh
# The plugin author kit as an author gets it: `make install` into a temporary
# DESTDIR, then plugins/template/ copied out of the tree and built with its
# Makefile.example and pkg-config only, its tests run against the installed
# libjethost-mock.  Also what an author copies from the docs: README's two
# build lines, the template's compiler flags with POSIX calls, and what the
# install leaves in the plugin directory.  TAP.
set -u
: "${JET_BUILDDIR:?run through make check}"
: "${JET_SRCDIR:?run through make check}"

echo "1..12"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jethost-kit.XXXXXX") || { echo "Bail out! mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
log=$tmp/log

show() { sed 's/^/# /' "$1"; }
fail_rest() {   # $1: first test left, $2: why
    i=$1
    while [ "$i" -le 12 ]; do echo "not ok $i - skipped: $2"; i=$((i + 1)); done
    exit 0
}

# 1: install.  MAKEFLAGS from `make check` (e.g. TESTS=...) do not matter to
# install; DESTDIR keeps the configured prefix, so nothing is relinked.
if make -C "$JET_BUILDDIR" install DESTDIR="$dest" >"$log" 2>&1; then
    echo "ok 1 - make install DESTDIR=..."
else
    show "$log"; echo "not ok 1 - make install DESTDIR=..."; fail_rest 2 "install failed"
fi

# 2: both .pc files, the headers and the library are installed.
pc=$(find "$dest" -name jethost-mock.pc | head -n 1)
pcdir=$(dirname "${pc:-/nonexistent/x}")
if [ -n "$pc" ] && [ -f "$pcdir/jethost-plugin.pc" ] &&
   [ -n "$(find "$dest" -path '*/include/jethost/mock.h')" ] &&
   [ -n "$(find "$dest" -path '*/include/jethost/plugin.h')" ] &&
   [ -n "$(find "$dest" -name 'libjethost-mock.so*')" ]; then
    echo "ok 2 - headers, libjethost-mock and both .pc files installed"
else
    find "$dest" | sed 's/^/# /'; echo "not ok 2 - kit incomplete"; fail_rest 3 "kit incomplete"
fi

# Only the kit's own .pc files are looked at, so the build cannot pick up
# another jethost installed on this machine; the kit needs no other package.
PKG_CONFIG_PATH=$pcdir
PKG_CONFIG_LIBDIR=$pcdir
PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
libdir=$(dirname "$pcdir")
# No LD_LIBRARY_PATH: a test program must find libjethost-mock by the rpath
# its build line gave it, as it must on the author's machine.
unset LD_LIBRARY_PATH

# 3: the installed library exports the mock API and nothing else.
so=$(find "$libdir" -name 'libjethost-mock.so.*' -type f | head -n 1)
other=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^jet_mock_' | tr '\n' ' ')
if [ -z "$other" ] && nm -D --defined-only "$so" | grep -q ' jet_mock_deliver$'; then
    echo "ok 3 - libjethost-mock exports only jet_mock_*"
else
    echo "not ok 3 - libjethost-mock also exports: $other"
fi

# 4: the template, copied out of the tree, builds with Makefile.example.
src=$tmp/src
mkdir -p "$src"
cp "$JET_SRCDIR/plugins/template/template.c" "$JET_SRCDIR/plugins/template/test_template.c" "$src/"
cp "$JET_SRCDIR/plugins/template/Makefile.example" "$src/Makefile"
# Under the sanitizer build the installed library is instrumented: so must
# the author's program be.
if (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make CFLAGS="-O1 -g ${JET_SAN_FLAGS:-}" \
        LDFLAGS="${JET_SAN_FLAGS:-}" all test_template) >"$log" 2>&1; then
    echo "ok 4 - template.so and test_template build with pkg-config only"
else
    show "$log"; echo "not ok 4 - the template does not build out of tree"; fail_rest 5 "no build"
fi

# 5: the template exports only jet_plugin_entry.
syms=$(nm -D --defined-only "$src/template.so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | tr '\n' ' ')
if [ "$syms" = "jet_plugin_entry " ]; then
    echo "ok 5 - template.so exports only jet_plugin_entry"
else
    echo "not ok 5 - template.so exports: $syms"
fi

# 6: its tests pass against the installed kit (their TAP becomes comments).
if (cd "$src" && ./test_template) >"$log" 2>&1 && ldd "$src/test_template" | grep -q "$libdir"; then
    show "$log"; echo "ok 6 - the template's tests pass on the installed mock host"
else
    show "$log"; ldd "$src/test_template" | sed 's/^/# /'
    echo "not ok 6 - the template's tests fail on the installed mock host"
fi

# 7: README's two build lines, as written, on the template's sources: the
# test program runs without LD_LIBRARY_PATH.
readme=$tmp/readme
mkdir -p "$readme"
cp "$JET_SRCDIR/plugins/template/template.c" "$readme/my.c"
cp "$JET_SRCDIR/plugins/template/test_template.c" "$readme/test_my.c"
lines=$(sed -n '/^## Writing a plugin/,/^## /p' "$JET_SRCDIR/README.md" | grep '^cc ')
if [ "$(printf '%s\n' "$lines" | grep -c '^cc ')" -ne 2 ]; then
    printf '%s\n' "$lines" | sed 's/^/# /'
    echo "not ok 7 - README's Writing a plugin has not two cc lines"
elif (cd "$readme" && printf '%s\n' "$lines" | sed "s|\$| ${JET_SAN_FLAGS:-}|" | sh -e &&
      ./test_my) >"$log" 2>&1; then
    echo "ok 7 - README's build lines give a test program that runs as built"
else
    show "$log"; echo "not ok 7 - README's build lines: the test program does not run"
fi

# 8: the template's flags (strict C11) still declare POSIX: a plugin built
# with Makefile.example may call mkstemp(), strdup() and clock_gettime().
cp "$src/template.c" "$src/posix.c"
cat >>"$src/posix.c" <<'EOC'

#include <time.h>
#include <unistd.h>

int posix_probe(void);
int posix_probe(void)
{
    char path[] = "/tmp/jethost-kit-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        unlink(path);
        close(fd);
    }
    struct timespec ts;
    char *s = strdup("x");
    free(s);
    return clock_gettime(CLOCK_MONOTONIC, &ts) + (fd < 0);
}
EOC
if (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make PLUGIN=posix CFLAGS="-O1 -g ${JET_SAN_FLAGS:-}" \
        LDFLAGS="${JET_SAN_FLAGS:-}" posix.so) >"$log" 2>&1; then
    echo "ok 8 - Makefile.example's flags declare POSIX functions (mkstemp, strdup, clock_gettime)"
else
    show "$log"; echo "not ok 8 - a plugin calling mkstemp() does not build with Makefile.example"
fi

# 12 (run here, printed last): a plugin with a library of its own names it
# once, in DEPS, and Makefile.example adds its pkg-config flags to the
# plugin and links it.  The library is a stand-in installed beside the kit
# (the staged pkg-config sees only that tree): a header, a define, libm.
mkdir -p "$dest/kitdep/include"
printf '#define KITDEP_SCALE 2.0\ndouble cos(double);\n' >"$dest/kitdep/include/kitdep.h"
printf 'Name: kitdep\nDescription: a stand-in\nVersion: 1\nCflags: -I/kitdep/include -DKITDEP_ON=1\nLibs: -lm\n' \
    >"$pcdir/kitdep.pc"
cp "$src/template.c" "$src/withdeps.c"
cat >>"$src/withdeps.c" <<'EOC'

#include <kitdep.h>

double kitdep_probe(double x);
double kitdep_probe(double x)
{
    return KITDEP_ON * KITDEP_SCALE * cos(x);
}
EOC
if (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make PLUGIN=withdeps DEPS=kitdep \
        CFLAGS="-O1 -g ${JET_SAN_FLAGS:-}" LDFLAGS="-Wl,--no-as-needed ${JET_SAN_FLAGS:-}" withdeps.so) >"$log" 2>&1 &&
   objdump -p "$src/withdeps.so" | grep -q 'NEEDED.*libm\.so'; then
    ok12="ok 12 - DEPS = kitdep: the plugin builds with its flags and links its library"
else
    show "$log"; ok12="not ok 12 - a plugin with DEPS = kitdep does not build with its flags or link its library"
fi
rm -f "$pcdir/kitdep.pc"
rm -rf "$dest/kitdep"

# 9: the plugin directory holds the shipped plugins' .so files only: no
# .la files and no template (its sources are installed as an example).
plugdir=$(pkg-config --variable=plugindir jethost-plugin)
found=$(cd "$plugdir" 2>/dev/null && ls -A | tr '\n' ' ')
example=$(find "$dest" -path '*/doc/*/plugin-template/Makefile.example')
if [ "$found" = "exec.so forward.so paced.so retry.so " ] && [ -n "$example" ] &&
   [ -f "$(dirname "$example")/template.c" ] && [ -f "$(dirname "$example")/test_template.c" ]; then
    echo "ok 9 - the plugin directory holds exec.so forward.so paced.so retry.so only; the template is an example"
else
    find "$dest" -type f | sed "s|^$dest|# |"
    echo "not ok 9 - the plugin directory holds: $found; template example: ${example:-none}"
fi

# 10: make uninstall takes the plugins away too.
if make -C "$JET_BUILDDIR" uninstall DESTDIR="$dest" >"$log" 2>&1 &&
   [ -z "$(find "$dest" -type f)" ]; then
    echo "ok 10 - make uninstall DESTDIR=... leaves no file"
else
    show "$log"; find "$dest" -type f | sed "s|^$dest|# left: |"
    echo "not ok 10 - make uninstall DESTDIR=... leaves files"
fi

# 11: where the docs describe the install, a staged install (DESTDIR) says
# that pkg-config needs PKG_CONFIG_SYSROOT_DIR (as this script sets above).
missing=
for f in README.md docs/plugin-guide.md plugins/template/Makefile.example; do
    grep -q 'PKG_CONFIG_SYSROOT_DIR' "$JET_SRCDIR/$f" || missing="$missing $f"
done
if [ -z "$missing" ]; then
    echo "ok 11 - the install docs say PKG_CONFIG_SYSROOT_DIR for make install DESTDIR=..."
else
    echo "not ok 11 - no word of PKG_CONFIG_SYSROOT_DIR in:$missing"
fi

echo "$ok12"
