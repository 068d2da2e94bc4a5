#!/bin/sh
# Runs ./quickstart on another Debian release, in a chroot made by
# debootstrap (docs/testing.md, "Other Debian releases"):
#
#   tests/debian-chroot.sh SUITE DIR [demo|test]     e.g. trixie /var/tmp/trixie test
#
# DIR is made once (debootstrap, minbase, from the machine's own Debian
# mirror) and kept: a second run reuses it and its installed packages.  The
# chroot gets the machine's apt settings (apt.conf.d, resolv.conf), so it
# reaches the mirror as the machine does; proc, sys and dev are bound for
# the run and unbound after.  The work tree is cloned fresh into
# DIR/work/jethost from this repository's HEAD, so what runs is what is
# committed.  Its output: the quickstart's, ending "N passed, N failed" for
# test.  Needs root and debootstrap.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 SUITE DIR [demo|test]" >&2; exit 2; }
suite=$1
dir=$2
what=${3:-test}
die() { echo "debian-chroot: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap and chroot)"
command -v debootstrap >/dev/null || die "debootstrap is needed (apt-get install debootstrap)"
src=$(cd "$(dirname "$0")/.." && pwd)

mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ && /debian/ && !/security/ { print $2; exit }')
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && /debian/ && !/security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -n 1)
[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list(.d)"

if [ ! -x "$dir/bin/bash" ]; then
    echo "debian-chroot: debootstrap $suite into $dir from $mirror" >&2
    debootstrap --variant=minbase --include=ca-certificates,git "$suite" "$dir" "$mirror" >&2 ||
        die "debootstrap $suite failed"
fi
mkdir -p "$dir/etc/apt/apt.conf.d"
cp /etc/apt/apt.conf.d/* "$dir/etc/apt/apt.conf.d/" 2>/dev/null || true
cp /etc/resolv.conf "$dir/etc/resolv.conf"

mounted=
cleanup() {
    for m in $mounted; do umount "$dir/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
for m in proc sys dev dev/pts; do
    mountpoint -q "$dir/$m" && continue
    mount --bind "/$m" "$dir/$m"
    mounted="$m $mounted"
done

rm -rf "$dir/work/jethost"
mkdir -p "$dir/work"
git clone -q "$src" "$dir/work/jethost"
echo "debian-chroot: $(chroot "$dir" cat /etc/debian_version), commit $(git -C "$src" rev-parse --short HEAD)" >&2
chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 CI=true PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /work/jethost && ./quickstart $what"
