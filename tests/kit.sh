#!/bin/sh
# The plugin author kit as an author gets it: `make install` into a temporary
# DESTDIR, then plugins/template/ copied out of the tree and built with its
# Makefile.example and pkg-config only, its tests run against the installed
# libjethost-mock.  TAP.
set -u
: "${JET_BUILDDIR:?run through make check}"
: "${JET_SRCDIR:?run through make check}"

echo "1..6"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jethost-kit.XXXXXX") || { echo "Bail out! mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
log=$tmp/log

show() { sed 's/^/# /' "$1"; }
fail_rest() {   # $1: first test left, $2: why
    i=$1
    while [ "$i" -le 6 ]; do echo "not ok $i - skipped: $2"; i=$((i + 1)); done
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
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

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
