#!/bin/sh
# The Debian package (docs/packaging.md), from the release tarball:
#   tests/deb-check.sh TARBALL SRCDIR WORKDIR [build|install]
# build: checks that the tarball holds every file the repository tracks
# (but its own: .ci/, .gitignore, m4/.keep, and debian/, copied in), then
# builds jethost and jethost-dev with dpkg-buildpackage -b -us -uc in
# WORKDIR (out of tree) and runs lintian (no error allowed).  The
# package's server-free tests (debian/rules) are left to a user's build
# with DEB_BUILD_OPTIONS=nocheck unset; set JET_DEB_TESTS=1 to run them
# here too (./quickstart test runs the same tests in two builds already).
# install: as root on a machine where no jethost package is installed,
# installs the packages built there with dpkg -i, checks the
# unit with systemd-analyze verify, runs jethost --version and jethost
# check on the shipped example config, builds the plugin template against
# the installed kit, and purges them.  Both, without a phase.  The phases
# apart let a test run build beside the live tests (CPU only) and install
# after them (dpkg syncs the disk).  Prints one line per step; exit 0 when
# every step it ran passed.
set -eu
tarball=$1 srcdir=$2 work=$3 phase=${4:-all}
step() { printf 'deb-check: %s\n' "$*"; }
fail() { printf 'deb-check: FAILED: %s\n' "$*"; exit 1; }

if [ "$phase" != install ]; then
rm -rf "$work"
mkdir -p "$work"
tar -C "$work" -xzf "$tarball"
tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
if [ -e "$srcdir/.git" ] && command -v git >/dev/null 2>&1; then
    step "the tarball holds every tracked file but .ci/, .gitignore, m4/.keep and debian/"
    git -C "$srcdir" ls-files >"$work/tracked.raw" || fail "git ls-files in $srcdir"
    [ -s "$work/tracked.raw" ] || fail "git ls-files in $srcdir listed nothing"
    grep -v -e '^\.ci/' -e '^\.gitignore$' -e '^m4/\.keep$' -e '^debian/' "$work/tracked.raw" |
        sort >"$work/tracked.list"
    (cd "$tree" && find . -type f | sed 's|^\./||') | sort >"$work/tarball.list"
    comm -23 "$work/tracked.list" "$work/tarball.list" >"$work/missing.list"
    if [ -s "$work/missing.list" ]; then
        sed 's/^/deb-check:   /' "$work/missing.list"
        fail "files missing from the tarball (Makefile.am's EXTRA_DIST or a _SOURCES list)"
    fi
else
    step "no git checkout at $srcdir: the tarball's file list is not compared"
fi
cp -a "$srcdir/debian" "$tree/"
opts="parallel=2 nocheck" words="without its tests"
[ "${JET_DEB_TESTS:-0}" = 1 ] && opts="parallel=2" words="with the server-free tests"
step "dpkg-buildpackage -b -us -uc in $tree, $words (log: $work/build.log)"
(cd "$tree" && DEB_BUILD_OPTIONS="$opts" dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 ||
    { tail -30 "$work/build.log"; fail "dpkg-buildpackage"; }
changes=$(ls "$work"/jethost_*.changes)
step "lintian (errors fail; warnings listed)"
lintian --fail-on error "$changes" >"$work/lintian.log" 2>&1 || { cat "$work/lintian.log"; fail "lintian"; }
sed 's/^/deb-check:   /' "$work/lintian.log"
fi
[ "$phase" != build ] || exit 0
ls "$work"/jethost_*_*.deb >/dev/null 2>&1 || fail "no package built in $work"

if [ "$(id -u)" -ne 0 ]; then
    step "not root: the package is built and checked; installing it is left out"
    exit 0
fi
if dpkg-query -W -f='${Status}' jethost 2>/dev/null | grep -q installed ||
    dpkg-query -W -f='${Status}' jethost-dev 2>/dev/null | grep -q installed; then
    step "a jethost package is installed on this machine already: not replaced, not purged; installing is left out"
    exit 0
fi
purge() { dpkg --purge jethost-dev jethost >>"$work/install.log" 2>&1 || true; }
trap purge EXIT
step "dpkg -i"
dpkg -i "$work"/jethost_*_*.deb "$work"/jethost-dev_*_*.deb >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "dpkg -i"; }
unit=$(dpkg -L jethost | grep '/jethost\.service$')
[ -n "$unit" ] || fail "the package has no jethost.service"
step "systemd-analyze verify $unit"
systemd-analyze verify "$unit" >"$work/verify.log" 2>&1 || { cat "$work/verify.log"; fail "systemd-analyze verify"; }
step "jethost --version: $(jethost --version)"
getent passwd jethost >/dev/null || fail "no jethost user after install"
[ -d /var/lib/jethost ] || fail "no /var/lib/jethost after install"
step "jethost check on the shipped example (demo.conf: the shipped plugins by name)"
jethost check -c /usr/share/doc/jethost/examples/demo.conf >"$work/check.log" 2>&1 ||
    { cat "$work/check.log"; fail "jethost check"; }
step "the plugin template built and tested against the installed kit"
cp -r /usr/share/doc/jethost-dev/plugin-template "$work/template"
make -C "$work/template" -f Makefile.example check >"$work/template.log" 2>&1 ||
    { tail -20 "$work/template.log"; fail "the plugin template"; }
purge
trap - EXIT
[ ! -e /usr/bin/jethost ] || fail "/usr/bin/jethost is still there after the purge"
[ ! -e /var/lib/jethost ] || fail "/var/lib/jethost is still there after the purge"
step "purged: nothing left in /usr/bin or /var/lib"
