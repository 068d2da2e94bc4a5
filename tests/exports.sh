#!/bin/sh
# What the shipped shared objects export and link.  TAP.
#
#   - every built plugin exports exactly one symbol: jet_plugin_entry;
#   - libjethost-mock, the mock host for plugin authors, sits on host/core
#     alone (docs/mock.md): no nats.c symbol in it, defined or undefined,
#     and no libnats among the libraries it needs;
#   - jethost measures a header block with nats.c's public
#     natsMsgHeader_EncodedLength where nats.h declares it (nats.c 3.14+),
#     else with the undeclared natsMsgHeader_encodedLen (host/io/nats_raw.h).
set -u
: "${JET_BUILDDIR:?run through make check}"
plugins=$(find "$JET_BUILDDIR/plugins" -path '*/.libs/*.so' | sort)
mock=$JET_BUILDDIR/host/.libs/libjethost-mock.so
n=0
for p in $plugins; do n=$((n + 1)); done
# One point per plugin (one "none built" point when there is none), then two.
if [ "$n" -eq 0 ]; then echo "1..4"; else echo "1..$((n + 3))"; fi
i=0
if [ "$n" -eq 0 ]; then
    i=$((i + 1)); echo "not ok $i - no plugin was built"
fi
for p in $plugins; do
    i=$((i + 1))
    syms=$(nm -D --defined-only "$p" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
    if [ "$syms" = "jet_plugin_entry " ]; then
        echo "ok $i - $(basename "$p") exports only jet_plugin_entry"
    else
        echo "not ok $i - $(basename "$p") exports: $syms"
    fi
done

# nats.c's names: nats*, js*, kv*, stan* (jsCtx, js_PublishMsg, kvStore_Get,
# natsConnection_Request, ...) and its protobuf pb__*; json_* (json-glib) is
# not one.  Defined or undefined: either means the mock carries io code.
i=$((i + 1))
if [ ! -f "$mock" ]; then
    echo "not ok $i - $mock was not built"
else
    nats=$(nm -D "$mock" | awk '{ print $NF }' | sed 's/@.*//' |
        grep -E '^(nats|js[A-Z_]|kv[A-Z]|stan[A-Z_]|pb__)' | sort -u | head -n 10 | tr '\n' ' ')
    if [ -z "$nats" ]; then
        echo "ok $i - libjethost-mock.so has no nats.c symbol"
    else
        echo "not ok $i - libjethost-mock.so has nats.c symbols: $nats..."
    fi
fi
i=$((i + 1))
if [ ! -f "$mock" ]; then
    echo "not ok $i - $mock was not built"
else
    needed=$(readelf -d "$mock" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' | tr '\n' ' ' | sed 's/ $//')
    case "$needed" in
    *libnats*) echo "not ok $i - libjethost-mock.so needs libnats: $needed" ;;
    "") echo "not ok $i - readelf found no NEEDED entry in libjethost-mock.so" ;;
    *) echo "ok $i - libjethost-mock.so needs no libnats ($needed)" ;;
    esac
fi

# What configure found in nats.h (its DEFS in the build's Makefile) decides
# the symbol the built host must refer to; the header on libnats's include
# path is named beside it (a build may have read another: CPPFLAGS).
i=$((i + 1))
host=$JET_BUILDDIR/host/jethost
inc=$(pkg-config --cflags-only-I libnats 2>/dev/null | sed 's/-I//g')
header=
for d in $inc /usr/include /usr/local/include; do
    if [ -f "$d/nats/nats.h" ]; then header=$d/nats/nats.h; break; fi
done
if grep -q 'HAVE_DECL_NATSMSGHEADER_ENCODEDLENGTH=1' "$JET_BUILDDIR/Makefile"; then found=yes; else found=no; fi
if [ -n "$header" ] && grep -q 'natsMsgHeader_EncodedLength *(' "$header"; then declared=yes; else declared=no; fi
if [ "$found" = yes ]; then want=natsMsgHeader_EncodedLength; not=natsMsgHeader_encodedLen
else want=natsMsgHeader_encodedLen; not=natsMsgHeader_EncodedLength; fi
if [ ! -f "$host" ]; then
    echo "not ok $i - $host was not built"
else
    undef=$(nm -u "$host" | awk '{ print $NF }' | sed 's/@.*//')
    if ! echo "$undef" | grep -qx "$want" || echo "$undef" | grep -qx "$not"; then
        echo "not ok $i - jethost should refer to $want (configure found the public one: $found), not $not"
    else
        echo "ok $i - jethost measures header blocks with $want (configure: $found; ${header:-no header found}: $declared)"
    fi
fi
