#!/bin/sh
# The man pages (data/jethost.1, data/jethost.conf.5, made by data/mkman.sh):
# well-formed roff, and the same options, commands and keys as the program's
# --help and docs/configuration.md's tables.  TAP.
set -u
: "${JET_BUILDDIR:?run through make check}"
: "${JET_SRCDIR:?run through make check}"
jethost="$JET_BUILDDIR/host/jethost"
page1="$JET_BUILDDIR/data/jethost.1"
page5="$JET_BUILDDIR/data/jethost.conf.5"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LC_ALL=C
export LC_ALL

n=0
check() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; sed 's/^/# /' "$tmp/out"; fi
}
# A page as plain text: roff's escapes for - and the font changes removed.
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1"; }

echo "1..5"
for p in "$page1" "$page5"; do
    if command -v groff >/dev/null 2>&1; then
        groff -man -ww -z "$p" >"$tmp/out" 2>&1
        [ ! -s "$tmp/out" ]
        check $? "$(basename "$p"): groff -man -ww finds nothing to warn about"
    else
        check 1 "$(basename "$p"): groff not found (Debian: groff-base; ./quickstart installs it)"
    fi
done

# Every command of --help has its section; every option of its --help is in
# it (but -h, --help: every command has it, the page says so once).
: >"$tmp/out"
plain "$page1" >"$tmp/page1.txt"
for c in $("$jethost" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p'); do
    grep -q "^\\\\fB$c\\\\fR\$" "$page1" || echo "command $c not listed" >>"$tmp/out"
    "$jethost" "$c" --help 2>/dev/null | grep -q '^Usage:' || continue
    grep -q "^\.SS \"jethost $c\"" "$page1" || echo "no section for $c" >>"$tmp/out"
    for o in $("$jethost" "$c" --help | sed -n '/^Application Options:/,/^$/p' | grep -o -- '^  \(-[A-Za-z], \)\{0,1\}--[a-z-]*' | tr -d ','); do
        awk -v c="jethost $c" '/^\.SS/ { on = index($0, "\"" c "\"") > 0 } on' "$tmp/page1.txt" |
            grep -q -- "^$o\\b\\|, $o\\b" || echo "$c: option $o not in jethost.1" >>"$tmp/out"
    done
done
[ ! -s "$tmp/out" ]
check $? "jethost.1 has every command and every option of each command's --help"

# The keys: configuration.md's [host] and [binding NAME] tables, in order.
awk '/^## `\[(host|binding NAME)\]`/ { on = 1; next } /^## / { on = 0 }
     on && /^\| `/ { k = $2; gsub(/`/, "", k); print k }' "$JET_SRCDIR/docs/configuration.md" >"$tmp/keys.md"
plain "$page5" | awk '/^\.TP/ { getline; print $1 }' >"$tmp/keys.man"
diff "$tmp/keys.md" "$tmp/keys.man" >"$tmp/out" 2>&1 && [ -s "$tmp/keys.md" ]
check $? "jethost.conf.5 has the keys of configuration.md's tables ($(wc -l <"$tmp/keys.md") keys)"

# What make built is what the generator makes from today's sources.
sysconfdir=$(sed -n 's/^\.I \(.*\)\/jethost\/jethost\.conf$/\1/p' "$page5")
version=$("$jethost" --version | awk '{ print $2 }')
{ sh "$JET_SRCDIR/data/mkman.sh" jethost.1 "$jethost" "$JET_SRCDIR/docs/cli.md" "$version" "$sysconfdir" |
      diff - "$page1"
  sh "$JET_SRCDIR/data/mkman.sh" jethost.conf.5 "$JET_SRCDIR/docs/configuration.md" "$version" "$sysconfdir" |
      diff - "$page5"; } >"$tmp/out" 2>&1
check $? "the built pages are current (data/mkman.sh from the program and the docs)"
