#!/bin/sh
# The bash completion (data/jethost.bash): sourced into bash, driven through
# COMP_WORDS and COMP_CWORD as bash would, against the built program.  TAP.
set -u
: "${JET_BUILDDIR:?run through make check}"
comp="$JET_BUILDDIR/data/jethost.bash"
jethost="$JET_BUILDDIR/host/jethost"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/two.conf" <<CONF
[host]
server = embedded

[binding orders]
plugin = template
stream = ORDERS
consumer = billing

[binding audit-log]
plugin = template
stream = AUDIT
consumer = audit
CONF

# complete WORD...: the words of the line, the last the one completed;
# prints COMPREPLY one a line, sorted.
complete_line() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
             _jethost; printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$comp" "$@"
}

n=0
expect() {   # DESCRIPTION EXPECTED-LINES WORD...
    desc=$1 want=$2; shift 2
    got=$(complete_line "$@")
    n=$((n + 1))
    if [ "$got" = "$want" ]; then echo "ok $n - $desc"; else
        echo "not ok $n - $desc"; echo "# wanted: $(echo "$want" | tr '\n' ' ')"; echo "# got:    $(echo "$got" | tr '\n' ' ')"; fi
}

echo "1..9"
cmds=$("$jethost" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p')
expect "the commands of jethost --help" "$(printf '%s\n' $cmds --help --version | sort)" "$jethost" ""
expect "a command's prefix" "check" "$jethost" ch
# Every option of every command's --help, long and short, is offered.
for c in run check; do
    want=$("$jethost" $c --help | grep -o -- '^  \(-[A-Za-z], \)\{0,1\}--[a-z-]*' | tr -d ',' | tr ' ' '\n' | grep . | sort)
    expect "$c: the options of its --help" "$want" "$jethost" $c -
done
expect "run -c completes file names" "$tmp/two.conf" "$jethost" run -c "$tmp/tw"
expect "binding names from the config given with -c" "$(printf 'audit-log\norders')" "$jethost" mock -c "$tmp/two.conf" --binding ""
expect "dlq's subcommands" "$(printf 'list\npurge\nreplay\nrm\nshow\nstats')" "$jethost" dlq ""
expect "dlq --cause: the causes" "$(printf 'malformed\nmalformed-headers\nmax-deliveries')" "$jethost" dlq list --cause ma
expect "kv's subcommand by prefix" "put" "$jethost" kv p
