#!/bin/sh
# The command line without a server: --help, --version, check's verdicts and
# exit codes (docs/cli.md).  TAP.
set -u
: "${JET_BUILDDIR:?run through make check}"
jethost="$JET_BUILDDIR/host/jethost"
tmp=$(mktemp -d)
chmod 0700 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cp "$JET_BUILDDIR/plugins/template/.libs/template.so" "$tmp/template.so"
chmod 0644 "$tmp/template.so"

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/out" "$tmp/err"; }
# expect CODE DESCRIPTION PATTERN-IN-OUTPUT -- ARGS...
expect() {
    code=$1 desc=$2 pattern=$3; shift 4
    "$jethost" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -eq "$code" ] && grep -q -- "$pattern" "$tmp/out" "$tmp/err"; then ok "$desc"; else
        echo "# exit $rc (wanted $code), wanted '$pattern'"; notok "$desc"; fi
}

cat > "$tmp/good.conf" <<CONF
[host]
server = nats://127.0.0.1:4222
plugin_dir = $tmp

[binding orders]
plugin = template
stream = ORDERS
consumer = billing
option.log_every = 10
CONF
sed 's/option.log_every = 10/option.log_evry = 10/' "$tmp/good.conf" > "$tmp/typo.conf"
sed 's/^consumer = billing/consumer = billing\nworkers = 4/' "$tmp/good.conf" > "$tmp/workers.conf"
sed 's/^plugin = template/plugin = missing/' "$tmp/good.conf" > "$tmp/missing.conf"
sed 's/^batch.*//; s/^consumer = billing/consumer = billing\nbatch = ten/' "$tmp/good.conf" > "$tmp/bad.conf"

echo "1..13"
expect 0 "--help lists the commands" "check" -- --help
expect 0 "--version names the plugin ABI" "plugin ABI 1.0" -- --version
expect 2 "an unknown command is a usage error" "unknown command" -- frobnicate
expect 2 "check without -c is a usage error" "-c FILE" -- check
expect 0 "check accepts a good config" "OK (1 binding)" -- check -c "$tmp/good.conf"
expect 0 "check -v shows plugin options" "option.log_every = 10" -- check -v -c "$tmp/good.conf"
expect 3 "check names a plugin option typo" "option.log_evry: plugin template" -- check -c "$tmp/typo.conf"
expect 3 "check refuses workers for a plugin that is not thread-safe" "not declare JET_PLUGIN_THREAD_SAFE" -- check -c "$tmp/workers.conf"
expect 3 "check names a missing plugin" "missing.so: no such file" -- check -c "$tmp/missing.conf"
expect 3 "check names file, group and key of a bad value" "bad.conf: \[binding orders\] batch:" -- check -c "$tmp/bad.conf"
# pub refuses what it cannot publish faithfully before it connects.
expect 2 "pub refuses a wildcard subject" "wildcard" -- pub --data x 'orders.*'
expect 2 "pub refuses the server's API subjects" "reserved for the server" -- pub --data x '$JS.API.STREAM.PURGE.ORDERS'
expect 2 "pub refuses a header name that is not a token" "not a token" -- pub --data x -H 'Bad Name: x' orders.new
