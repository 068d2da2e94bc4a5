#!/bin/sh
# Every built plugin exports exactly one symbol: jet_plugin_entry.  TAP.
set -u
: "${JET_BUILDDIR:?run through make check}"
plugins=$(find "$JET_BUILDDIR/plugins" -path '*/.libs/*.so' | sort)
n=0
for p in $plugins; do n=$((n + 1)); done
if [ "$n" -eq 0 ]; then
    echo "1..1"; echo "not ok 1 - no plugin was built"; exit 0
fi
echo "1..$n"
i=0
for p in $plugins; do
    i=$((i + 1))
    syms=$(nm -D --defined-only "$p" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
    if [ "$syms" = "jet_plugin_entry " ]; then
        echo "ok $i - $(basename "$p") exports only jet_plugin_entry"
    else
        echo "not ok $i - $(basename "$p") exports: $syms"
    fi
done
