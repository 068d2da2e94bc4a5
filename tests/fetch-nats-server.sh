#!/bin/sh
# Fetches Debian's nats-server of another suite for a manual run of the
# tests against it (docs/testing.md, "Other nats-server and nats.c
# versions"), without touching the machine's apt configuration: a private
# one derived from the machine's own sources, the suite name replaced.
#
#   tests/fetch-nats-server.sh SUITE DESTDIR     e.g. trixie /tmp/nats-2.10
#
# Prints the path of the extracted binary; exits non-zero saying why when
# it cannot fetch.  A DESTDIR that already holds a binary that runs is a
# cache: nothing is fetched again (make check-servers keeps one under the
# build directory).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 SUITE DESTDIR (SUITE: trixie, sid, ...)" >&2; exit 2; }
suite=$1
dest=$2
die() { echo "fetch-nats-server: $*" >&2; exit 1; }

for bin in "$dest/usr/sbin/nats-server" "$dest/usr/bin/nats-server"; do
    if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
        echo "$bin"
        exit 0
    fi
done
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
    die "apt-get and dpkg-deb are needed to fetch Debian's $suite nats-server"

work=$(mktemp -d "${TMPDIR:-/tmp}/fetch-nats.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"

# The machine's Debian sources, deb822 or one-line, security suites left out
# (they have no such suite for sid); the mirror stays the machine's own.
src=$work/sources
if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    for f in /etc/apt/sources.list.d/*.sources; do
        awk -v s="$suite" 'BEGIN { RS = ""; ORS = "\n\n" }
             /debian-security/ { next }
             /URIs:[^\n]*debian/ { sub(/Suites:[^\n]*/, "Suites: " s); print }' "$f"
    done >"$src.sources"
    [ -s "$src.sources" ] && list=$src.sources
fi
if [ -z "${list:-}" ]; then
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk -v s="$suite" '$1 == "deb" && $0 !~ /security/ && $0 ~ /debian/ {
             for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { $(i + 1) = s; print; exit } }' >"$src.list"
    [ -s "$src.list" ] && list=$src.list
fi
[ -n "${list:-}" ] || die "no Debian source in /etc/apt/sources.list(.d) to derive a $suite one from"

apt() {
    apt-get -q -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- \
        -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Debug::NoLocking=1 \
        -o APT::Sandbox::User=root "$@"
}
apt update >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; die "apt-get update for $suite failed"; }
# The suite's own version: a machine with a newer nats-server installed
# would otherwise ask for that one, which the suite does not have.
(cd "$work" && apt download "nats-server/$suite") >"$work/download.log" 2>&1 ||
    { cat "$work/download.log" >&2; die "no nats-server package in $suite"; }
deb=$(ls "$work"/nats-server_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || die "apt-get download left no .deb"
mkdir -p "$dest"
dpkg-deb -x "$deb" "$dest" || die "cannot extract $deb into $dest"
bin=$dest/usr/sbin/nats-server
[ -x "$bin" ] || bin=$dest/usr/bin/nats-server
[ -x "$bin" ] || die "$deb holds no nats-server binary"
"$bin" --version >&2 || die "$bin does not run here"
echo "$bin"
