#!/bin/sh
# What the shipped shared objects export and link.  TAP.
#
#   - every built plugin exports exactly one symbol: jet_plugin_entry;
#   - libjethost-mock, the mock host for plugin authors, sits on host/core
#     alone (docs/mock.md): no nats.c symbol in it, defined or undefined,
#     and no libnats among the libraries it needs.
set -u
: "${JET_BUILDDIR:?run through make check}"
plugins=$(find "$JET_BUILDDIR/plugins" -path '*/.libs/*.so' | sort)
mock=$JET_BUILDDIR/host/.libs/libjethost-mock.so
n=0
for p in $plugins; do n=$((n + 1)); done
# One point per plugin (one "none built" point when there is none), then two.
if [ "$n" -eq 0 ]; then echo "1..3"; else echo "1..$((n + 2))"; fi
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
