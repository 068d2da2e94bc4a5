#!/bin/sh
# The host's layers hold (docs/architecture.md).  TAP.
#
#   host/core  pure code: never nats.c
#   host/io    on nats.c
#   host/mock  the mock host for plugin authors
#   host/cmd   the daemon, the commands and their exit codes
#
# A file may include headers of its own layer and of these only:
#
#   core -> core
#   io   -> core
#   mock -> core
#   cmd  -> core, io, mock
#
# Headers are found by name (the build puts every layer's folder on the
# include path): a quoted #include of a name that is a header under host/ is
# an arrow to that header's layer.  Also checked: no core file includes a
# nats.c header, every source file under host/ is in a layer, no two layers
# hold a header of the same name, no include leaves its folder by a
# relative path, and the modules (x.c with x.h and x_private.h) include one
# another without a cycle.
#
# Includes are what a file says it uses; calls are what it does.  So the
# same rules are checked a second time on the built objects: each object's
# undefined symbols (nm) that another object of host/ defines are calls to
# it, every call must point down a layer or stay in its own, and no two
# objects may call each other, directly or through others (a circle of
# calls is one module written in several files).
#
# Run alone: JET_SRCDIR=. JET_BUILDDIR=build sh tests/layers.sh
set -u
: "${JET_SRCDIR:?run through make check, or set JET_SRCDIR to the source tree}"
: "${JET_BUILDDIR:?run through make check, or set JET_BUILDDIR to a built tree}"
host=$JET_SRCDIR/host

# Arrows the rule above forbids but the code still needs, one a line:
# "FILE HEADER", FILE relative to host/.  Each says why; each is a step
# still to take (docs/architecture.md, "Next steps").  An exception that no
# longer occurs fails the last test point, so the list only shrinks.
# Empty on purpose: every arrow points down.  Keep the mechanism for the
# day a step has to be taken in two commits.
exceptions='
'

# Circles of calls still to break, one a line: the objects of each, sorted
# (docs/architecture.md, "Next steps").  As with the exceptions above, a
# circle that no longer occurs fails its test point, so the list only
# shrinks.  Empty on purpose: the engine's was the last (its drivers call
# the runner's services, never one another: docs/architecture.md).
circles='
'

allowed() {   # allowed FROM-LAYER TO-LAYER
    case "$1:$2" in
    core:core | io:core | io:io | mock:core | mock:mock | cmd:*) return 0 ;;
    *) return 1 ;;
    esac
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Every .c and .h under host/, relative to host/.
(cd "$host" && find . -type f \( -name '*.c' -o -name '*.h' \) | sed 's|^\./||' | LC_ALL=C sort) > "$tmp/files"
# Every include: "FILE KIND NAME" with KIND q (quoted) or a (angle).
while read -r f; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/q \1/p;
            s/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/a \1/p' "$host/$f" |
        while read -r kind name; do echo "$f $kind $name"; done
done < "$tmp/files" > "$tmp/includes"
# Header name -> its path under host/.
awk -F/ '/\.h$/ { print $NF, $0 }' "$tmp/files" > "$tmp/headers"

echo "1..11"

# 1: every source file is in a layer.
bad=$(grep -v -E '^(core|io|mock|cmd)/[^/]+$' "$tmp/files" | tr '\n' ' ')
if [ -z "$bad" ]; then
    echo "ok 1 - every source file under host/ is in core/, io/, mock/ or cmd/"
else
    echo "not ok 1 - outside the layer folders: $bad"
fi

# 2: a header name means one file.
dups=$(awk '{ print $1 }' "$tmp/headers" | LC_ALL=C sort | uniq -d | tr '\n' ' ')
if [ -z "$dups" ]; then
    echo "ok 2 - no two headers under host/ share a name"
else
    echo "not ok 2 - header names in more than one layer: $dups"
fi

# 3: every arrow points down (or is a listed exception).  "FILE TARGET" for
# each quoted include of a header under host/ (by name, or by a path such as
# "io/capture.h").
awk 'NR == FNR { h[$1] = $2; next }
     $2 == "q" && ($3 in h) { print $1, h[$3]; next }
     $2 == "q" && $3 ~ /^(core|io|mock|cmd)\// { print $1, $3 }' "$tmp/headers" "$tmp/includes" > "$tmp/arrows"
: > "$tmp/up"
: > "$tmp/used"
while read -r f target; do
    from=${f%%/*}
    to=${target%%/*}
    allowed "$from" "$to" && continue
    if printf '%s\n' "$exceptions" | grep -qxF "$f $target"; then
        echo "$f $target" >> "$tmp/used"
        continue
    fi
    echo "$f includes $target ($from -> $to)" >> "$tmp/up"
done < "$tmp/arrows"
if [ -s "$tmp/up" ]; then
    echo "not ok 3 - includes that point up or across (docs/architecture.md):"
    sed 's/^/#   /' "$tmp/up"
else
    echo "ok 3 - every include points down a layer or stays in its own"
fi

# 4: core never includes nats.c.
nats=$(awk '$1 ~ /^core\// && $3 ~ /^nats\// { print $1 " <" $3 ">" }' "$tmp/includes" | tr '\n' ' ')
if [ -z "$nats" ]; then
    echo "ok 4 - no file in host/core includes a nats.c header"
else
    echo "not ok 4 - core files on nats.c: $nats"
fi

# 5: no cycle between modules.  A module is a file's name without .c/.h and
# without a _private suffix; an edge is a quoted include of another module's
# header.  The transitive closure (Warshall) over a few dozen modules.
<"$tmp/arrows" \
awk '
function mod(p) { sub(/^.*\//, "", p); sub(/\.[ch]$/, "", p); sub(/_private$/, "", p); return p }
{ a = mod($1); b = mod($2); if (a != b) { e[a, b] = 1 }; m[a] = 1; m[b] = 1 }
END {
    for (k in m) for (i in m) if ((i, k) in e) for (j in m) if ((k, j) in e) e[i, j] = 1
    for (i in m) if ((i, i) in e) {
        line = i ":"
        for (j in m) if (j != i && (i, j) in e && (j, i) in e) line = line " " j
        print line
    }
}' | LC_ALL=C sort > "$tmp/cycles"
if [ -s "$tmp/cycles" ]; then
    echo "not ok 5 - include cycles (each module: those it reaches and is reached by):"
    sed 's/^/#   /' "$tmp/cycles"
else
    echo "ok 5 - no include cycle between modules"
fi

# 6: every listed exception still occurs (trivially so when the list is
# empty).
stale=
for e in $(printf '%s\n' "$exceptions" | sed '/^[[:space:]]*$/d' | tr ' ' ':'); do
    grep -qxF "$(echo "$e" | tr ':' ' ')" "$tmp/used" 2>/dev/null || stale="$stale $(echo "$e" | tr ':' ' ');"
done
if [ -z "$(printf '%s\n' "$exceptions" | sed '/^[[:space:]]*$/d')" ]; then
    echo "ok 6 - no exception is listed"
elif [ -z "$stale" ]; then
    echo "ok 6 - every listed exception is still needed"
else
    echo "not ok 6 - listed exceptions that no longer occur (remove them):$stale"
fi

# 7: no relative include leaves its folder ("../io/x.h" would hide an arrow
# from the include path the build gives each layer).
rel=$(awk '$2 == "q" && $3 ~ /(^|\/)\.\.\// { print $1 " \"" $3 "\"" }' "$tmp/includes" | tr '\n' ' ')
if [ -z "$rel" ]; then
    echo "ok 7 - no include leaves its folder by a relative path"
else
    echo "not ok 7 - relative includes that leave their folder: $rel"
fi

# The calls: "D OBJECT SYMBOL" and "U OBJECT SYMBOL" for every object of a
# source file under host/ (libtool keeps them in .libs/; an object whose
# source is gone is a stale leftover of an earlier build and left out).
: > "$tmp/symbols"
for o in $(find "$JET_BUILDDIR/host" -name '*.o' | LC_ALL=C sort); do
    d=$(dirname "$o"); d=${d%/.libs}; layer=$(basename "$d")
    m=$(basename "$o" .o); m=${m#lib*_la-}; m=${m#jethost-}
    [ -f "$host/$layer/$m.c" ] || continue
    nm -P --defined-only "$o" | awk -v m="$layer/$m" '$2 ~ /^[TDBRCGSVW]$/ { print "D", m, $1 }' >> "$tmp/symbols"
    nm -P -u "$o" | awk -v m="$layer/$m" '{ print "U", m, $1 }' >> "$tmp/symbols"
done
awk '$1 == "D" { def[$3] = $2; next }
     $1 == "U" { use[++n] = $2 " " $3 }
     END { for (i = 1; i <= n; i++) { split(use[i], a, " "); if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]] } }' \
    "$tmp/symbols" | LC_ALL=C sort -u > "$tmp/calls"
objects=$(awk '$1 == "D" { print $2 }' "$tmp/symbols" | sort -u | wc -l)

# 8: every call points down a layer or stays in its own.
: > "$tmp/upcalls"
while read -r from to; do
    allowed "${from%%/*}" "${to%%/*}" || echo "$from calls $to" >> "$tmp/upcalls"
done < "$tmp/calls"
if [ "$objects" -lt 20 ]; then
    echo "not ok 8 - only $objects objects with symbols under $JET_BUILDDIR/host: build first"
elif [ -s "$tmp/upcalls" ]; then
    echo "not ok 8 - calls that point up or across (docs/architecture.md):"
    sed 's/^/#   /' "$tmp/upcalls"
else
    echo "ok 8 - every call between $objects objects points down a layer or stays in its own ($(wc -l < "$tmp/calls") pairs)"
fi

# 9: no circle of calls but the listed ones.  Each circle is printed once,
# as its sorted objects (a strongly connected set, by Warshall's closure).
awk '{ e[$1, $2] = 1; m[$1] = 1; m[$2] = 1 }
END {
    for (k in m) for (i in m) if ((i, k) in e) for (j in m) if ((k, j) in e) e[i, j] = 1
    for (i in m) if ((i, i) in e) {
        n = 0
        for (j in m) if (j == i || ((i, j) in e && (j, i) in e)) set[++n] = j
        for (x = 2; x <= n; x++) { v = set[x]; for (y = x - 1; y >= 1 && set[y] > v; y--) set[y + 1] = set[y]; set[y + 1] = v }
        line = set[1]
        for (x = 2; x <= n; x++) line = line " " set[x]
        print line
        delete set
    }
}' "$tmp/calls" | LC_ALL=C sort -u > "$tmp/circles"
printf '%s\n' "$circles" | sed '/^[[:space:]]*$/d' | LC_ALL=C sort > "$tmp/circles.listed"
new_circles=$(LC_ALL=C comm -23 "$tmp/circles" "$tmp/circles.listed")
if [ -z "$new_circles" ]; then
    echo "ok 9 - no circle of calls between objects but the $(wc -l < "$tmp/circles.listed") listed"
else
    echo "not ok 9 - circles of calls (each: the objects that call one another):"
    printf '%s\n' "$new_circles" | sed 's/^/#   /'
fi

# 10: every listed circle still occurs.
gone=$(LC_ALL=C comm -13 "$tmp/circles" "$tmp/circles.listed")
if [ -z "$gone" ]; then
    echo "ok 10 - every listed circle still occurs"
else
    echo "not ok 10 - listed circles that no longer occur (remove them from the list):"
    printf '%s\n' "$gone" | sed 's/^/#   /'
fi

# 11: the engine's drivers (docs/architecture.md, "The engine: a runner and
# its drivers"): the objects that define a jet__driver_* table are reached
# only through engine_kinds, which picks one, and none reaches another,
# directly or through others.
awk '$1 == "D" && $3 ~ /^jet__driver_/ { print $2 }' "$tmp/symbols" | LC_ALL=C sort -u > "$tmp/drivers"
drivers_bad=$(awk 'NR == FNR { drv[$1] = 1; next }
    { e[$1, $2] = 1; m[$1] = 1; m[$2] = 1; if (($2 in drv) && $1 != "io/engine_kinds") print $1 " calls the driver " $2 }
    END {
        for (k in m) for (i in m) if ((i, k) in e) for (j in m) if ((k, j) in e) e[i, j] = 1
        for (i in drv) for (j in drv) if (i != j && (i, j) in e) print "the driver " i " reaches the driver " j
    }' "$tmp/drivers" "$tmp/calls")
if [ "$(wc -l < "$tmp/drivers")" -lt 2 ]; then
    echo "not ok 11 - fewer than two drivers (jet__driver_*) found: build first"
elif [ -z "$drivers_bad" ]; then
    echo "ok 11 - the $(wc -l < "$tmp/drivers") drivers are reached only through engine_kinds and never reach one another"
else
    echo "not ok 11 - the engine's drivers:"
    printf '%s\n' "$drivers_bad" | sed 's/^/#   /'
fi
