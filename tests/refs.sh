#!/bin/sh
# What the code and docs/architecture.md cite exists.  TAP.
#
#   - docs/architecture.md is drawn from the tree: every module under host/
#     (a .c file, or a header without one that is not a *_private.h) is in
#     its drawing and named in "What each folder holds" as `name`, and
#     every name in the drawing's boxes is a module that exists;
#   - a comment's section citation (docs/x.md, "Section") names a heading
#     of that document, or a paragraph's bold label (**Section**);
#   - a document a comment names (x.md) exists;
#   - a source file a comment names (x.c, x.h) exists in the tree (nats.c's
#     own sources, nats.c, nats.h and src/..., and the C library's headers
#     excepted).
#
# Run alone: JET_SRCDIR=. sh tests/refs.sh
set -u
: "${JET_SRCDIR:?run through make check, or set JET_SRCDIR to the source tree}"
cd "$JET_SRCDIR" || exit 1
arch=docs/architecture.md
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

echo "1..6"
n=0
report() {   # report FILE DESCRIPTION-OK DESCRIPTION-NOT-OK
    n=$((n + 1))
    if [ -s "$1" ]; then
        echo "not ok $n - $3:"
        sed 's/^/#   /' "$1"
    else
        echo "ok $n - $2"
    fi
}

# The modules: x for x.c, x.h for a header without a .c.
for f in host/*/*.c; do basename "$f" .c; done > "$tmp/modules"
for f in host/*/*.h; do
    b=$(basename "$f" .h)
    [ -f "${f%.h}.c" ] && continue
    case $b in *_private) continue ;; esac
    echo "$b.h"
done >> "$tmp/modules"
LC_ALL=C sort -u -o "$tmp/modules" "$tmp/modules"

# The drawing: the first fenced block; the words inside its boxes (between
# a '|' and the next, not after the last one of a line).
awk '/^```/ { if (++fence == 2) exit; next } fence == 1' "$arch" |
    awk -F'|' 'NF > 2 { for (i = 2; i < NF; i += 2) print $i }' |
    tr -s ' \t' '\n\n' | grep -E '^[a-z][a-z0-9_]*(\.h)?$' | LC_ALL=C sort -u > "$tmp/drawn"
# "What each folder holds": every `name` between its heading and the next.
awk '/^## What each folder holds/ { on = 1; next } /^## / { on = 0 } on' "$arch" |
    grep -oE '`[a-z][a-z0-9_]*(\.h)?`' | tr -d '`' | LC_ALL=C sort -u > "$tmp/told"

LC_ALL=C comm -23 "$tmp/modules" "$tmp/drawn" > "$tmp/undrawn"
report "$tmp/undrawn" "every module under host/ is in the drawing of $arch ($(wc -l < "$tmp/modules") modules)" \
    "modules missing from the drawing of $arch"
LC_ALL=C comm -23 "$tmp/modules" "$tmp/told" > "$tmp/untold"
report "$tmp/untold" "every module under host/ is named in $arch, \"What each folder holds\"" \
    "modules not named in $arch, \"What each folder holds\""
LC_ALL=C comm -13 "$tmp/modules" "$tmp/drawn" > "$tmp/gone"
report "$tmp/gone" "every name in the drawing of $arch is a module of the tree" \
    "names in the drawing of $arch that are no module (gone, or misspelt)"

# Comments of host/, include/ and plugins/, one per line, continuation
# stars removed so that a citation broken over lines is whole.
find host include plugins -name '*.[ch]' | LC_ALL=C sort > "$tmp/sources"
while read -r f; do
    perl -0777 -ne 'while (m{/\*.*?\*/|//[^\n]*}gs) { my $c = $&; $c =~ s/\n\s*\*?\s*/ /g; print "$ARGV\t$c\n" }' "$f"
done < "$tmp/sources" > "$tmp/comments"

# Section citations: `x.md, "Section"`.
perl -ne 'my ($f, $c) = split /\t/, $_, 2; while ($c =~ /([A-Za-z_-]+\.md), "([^"]+)"/g) { print "$f\t$1\t$2\n" }' \
    "$tmp/comments" | LC_ALL=C sort -u > "$tmp/citations"
: > "$tmp/badcite"
while IFS="$(printf '\t')" read -r f doc sec; do
    d=docs/$doc
    [ -f "$d" ] || d=$doc
    if [ ! -f "$d" ]; then
        echo "$f: $doc, \"$sec\": no such document" >> "$tmp/badcite"
    elif ! grep -E '^#+ ' "$d" | grep -qF -- "$sec" && ! grep -qF -- "**$sec" "$d"; then
        echo "$f: $doc, \"$sec\": no such heading or bold label" >> "$tmp/badcite"
    fi
done < "$tmp/citations"
report "$tmp/badcite" "every section a comment cites exists ($(wc -l < "$tmp/citations") citations)" \
    "comments citing sections that do not exist"

# Documents: any x.md a comment names.
perl -ne 'my ($f, $c) = split /\t/, $_, 2; while ($c =~ /(?<![\w.\/-])((?:docs\/)?([A-Za-z][\w-]*\.md))\b/g) { print "$f\t$2\n" }' \
    "$tmp/comments" | LC_ALL=C sort -u > "$tmp/docs"
: > "$tmp/nodoc"
while IFS="$(printf '\t')" read -r f doc; do
    [ -f "docs/$doc" ] || [ -f "$doc" ] || echo "$f: $doc" >> "$tmp/nodoc"
done < "$tmp/docs"
report "$tmp/nodoc" "every document a comment names exists ($(wc -l < "$tmp/docs") names)" \
    "comments naming documents that do not exist"

# Source files: any x.c or x.h a comment names, by its file name.
find host include plugins tests -name '*.[ch]' -exec basename {} \; | LC_ALL=C sort -u > "$tmp/files"
perl -ne 'my ($f, $c) = split /\t/, $_, 2; while ($c =~ /(?<![\w\/.-])((?:[\w-]+\/)*([a-z][a-z0-9_]*\.[ch]))(?![\w.])/g) { print "$f\t$1\t$2\n" }' \
    "$tmp/comments" | LC_ALL=C sort -u > "$tmp/named"
: > "$tmp/nofile"
while IFS="$(printf '\t')" read -r f path base; do
    case $path in nats.c | nats.h | src/*) continue ;; esac   # nats.c's own
    case $path in stddef.h | stdint.h | stdarg.h | stdbool.h) continue ;; esac   # the compiler's
    [ -f "/usr/include/$path" ] && continue                    # the C library's
    grep -qxF -- "$base" "$tmp/files" || echo "$f: $path" >> "$tmp/nofile"
done < "$tmp/named"
report "$tmp/nofile" "every source file a comment names exists ($(wc -l < "$tmp/named") names)" \
    "comments naming source files that do not exist"
