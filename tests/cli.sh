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
cp "$JET_BUILDDIR/plugins/forward/.libs/forward.so" "$tmp/forward.so"
chmod 0644 "$tmp/forward.so"

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
sed 's/^consumer = billing/consumer = billing\nbatch_max = 5/' "$tmp/good.conf" > "$tmp/batchmax.conf"
sed 's/^plugin = template/plugin = missing/' "$tmp/good.conf" > "$tmp/missing.conf"
sed 's/^batch.*//; s/^consumer = billing/consumer = billing\nbatch = ten/' "$tmp/good.conf" > "$tmp/bad.conf"
sed 's|^plugin = template|plugin = /nonexistent/plugins/orders.so|' "$tmp/good.conf" > "$tmp/nopath.conf"
{ cat "$tmp/nopath.conf"; printf 'max_time_to_dead_letter = 1m\n'; } > "$tmp/nopath-bound.conf"
# Three bindings in name order: a fails on its plugin, b passes, c fails on its schedule.
cat > "$tmp/three.conf" <<CONF
[host]
server = nats://127.0.0.1:4222
plugin_dir = $tmp

[binding a]
plugin = /nonexistent/plugins/a.so
stream = A
consumer = a

[binding b]
plugin = template
stream = B
consumer = b

[binding c]
plugin = template
stream = C
consumer = c
max_time_to_dead_letter = 1m
CONF

# A forward into the stream it consumes, and a cycle of two (docs/forwarding.md,
# "A forward that feeds itself").
{ sed -n '1,/^$/p' "$tmp/good.conf"; cat; } > "$tmp/selffeed.conf" <<CONF
[binding enrich]
plugin = forward
stream = ORDERS
consumer = enrich
subjects = orders.>
option.subject = orders.enriched
CONF
{ cat "$tmp/selffeed.conf"; printf 'allow_loop = true\n'; } > "$tmp/selffeed-allowed.conf"
{ sed -n '1,/^$/p' "$tmp/good.conf"; cat; } > "$tmp/cycle.conf" <<CONF
[binding a]
plugin = forward
stream = S1
consumer = a
subjects = one.>
option.subject = two.{token:2}

[binding b]
plugin = forward
stream = S2
consumer = b
subjects = two.>
option.subject = one.back
CONF

# A template the forward plugin cannot use: its validate() refuses it at check.
{ sed -n '1,/^$/p' "$tmp/good.conf"; cat; } > "$tmp/badtemplate.conf" <<CONF
[binding enrich]
plugin = forward
stream = ORDERS
consumer = enrich
option.subject = out.{token:x}
CONF

echo "1..53"
expect 0 "--help lists the commands" "check" -- --help
expect 0 "--version names the plugin ABI" "plugin ABI 1.2" -- --version
expect 2 "an unknown command is a usage error" "unknown command" -- frobnicate
# Without -c: the packaged file under configure's sysconfdir, missing here.
expect 3 "check without -c reads sysconfdir's jethost.conf" "/jethost/jethost.conf" -- check
expect 2 "check with an argument is a usage error" "-c FILE" -- check extra
expect 0 "check accepts a good config" "OK (1 binding)" -- check -c "$tmp/good.conf"
expect 0 "check -v shows plugin options" "option.log_every = 10" -- check -v -c "$tmp/good.conf"
expect 3 "check names a plugin option typo" "option.log_evry: plugin template" -- check -c "$tmp/typo.conf"
expect 3 "check refuses workers for a plugin that is not thread-safe" "not declare JET_PLUGIN_THREAD_SAFE" -- check -c "$tmp/workers.conf"
expect 3 "check refuses batch_max for a plugin without handle_batch" "batch_max: 5 messages at once need a plugin with handle_batch(), and template" -- check -c "$tmp/batchmax.conf"
expect 3 "check names a missing plugin" "missing.so: no such file" -- check -c "$tmp/missing.conf"
{ sed -n '1,/^$/p' "$tmp/good.conf"; printf '[binding m]\nplugin = template\nstream = M\nconsumer = m\nworkes = 4\nbatch = zero\nack_wiat = 5s\n'; } > "$tmp/three.bad.conf"
expect 3 "check reports every config error in one run: the first" "three.bad.conf: \[binding m\] workes: unknown key; did you mean workers?" -- check -c "$tmp/three.bad.conf"
expect 3 "check reports every config error in one run: the last" "three.bad.conf: \[binding m\] ack_wiat: unknown key; did you mean ack_wait?" -- check -c "$tmp/three.bad.conf"
expect 3 "check's summary counts them, on stderr, naming the file once" "three.bad.conf: FAILED: 3 errors in the config" -- check -c "$tmp/three.bad.conf"
expect 3 "check names file, group and key of a bad value" "bad.conf: \[binding orders\] batch:" -- check -c "$tmp/bad.conf"
# --no-plugins: keys and schedules only, for machines without the plugins.
expect 3 "check opens the plugin path" "orders.so: no such file" -- check -c "$tmp/nopath.conf"
expect 0 "check --no-plugins leaves the plugin unopened" \
    "binding orders: plugin /nonexistent/plugins/orders.so not checked (--no-plugins)" \
    -- check --no-plugins -c "$tmp/nopath.conf"
expect 3 "check --no-plugins still checks the schedule" "orders (schedule: max-time-exceeded)" \
    -- check --no-plugins -c "$tmp/nopath-bound.conf"
# The breaker line says where it really can claim: on the defaults, only at the last attempt.
expect 3 "check runs the plugin's validate(): a bad template is a config error, named" \
    "badtemplate.conf: \[binding enrich\] plugin forward (.*forward.so) refuses its options: " \
    -- check -c "$tmp/badtemplate.conf"
expect 3 "check refuses a forward into the stream it consumes" \
    "binding enrich: error: publish-loop: binding enrich publishes orders.enriched into stream ORDERS (subjects orders.>), which binding enrich consumes" \
    -- check -c "$tmp/selffeed.conf"
expect 3 "check names the self-feeding binding in its summary" "FAILED: 1 of 1 binding: enrich (publish-loop)" \
    -- check -c "$tmp/selffeed.conf"
expect 0 "check accepts the self-feeding binding with allow_loop = true" "OK (1 binding)" \
    -- check -c "$tmp/selffeed-allowed.conf"
expect 3 "check refuses a cycle through two bindings, naming both sides" \
    "binding a publishes two.\* into stream S2 (subjects two.>), which binding b consumes; binding b publishes one.back into stream S1 (subjects one.>), which binding a consumes" \
    -- check -c "$tmp/cycle.conf"
expect 0 "check -v says the default breaker claims only at the last attempt" \
    "can claim only at delivery 5, the last attempt, before its handler runs" -- check -v -c "$tmp/good.conf"

# One report on stdout, in binding order; stderr has the summary line only.
"$jethost" check -v -c "$tmp/three.conf" >"$tmp/out" 2>"$tmp/err"; rc=$?
order=$(grep -n '^binding [abc]: ' "$tmp/out" | sed 's/^[0-9]*:binding \([abc]\): \([a-z]*\).*/\1 \2/' | tr '\n' ',')
summary="three.conf: FAILED: 2 of 3 bindings: a (plugin), c (schedule: max-time-exceeded)"
if [ "$rc" -eq 3 ] && [ "$order" = "a error,a schedule,b schedule,b plugin,c schedule,c plugin," ] &&
   [ "$(tail -n 1 "$tmp/out")" = "$tmp/$summary" ] && [ "$(cat "$tmp/err")" = "jethost check: $tmp/$summary" ]; then
    ok "check writes one ordered report on stdout and the summary on stderr"
else
    echo "# exit $rc, order '$order'"; notok "check writes one ordered report on stdout and the summary on stderr"
fi
# pub refuses what it cannot publish faithfully before it connects.
expect 2 "pub refuses a wildcard subject" "wildcard" -- pub --data x 'orders.*'
expect 2 "pub refuses the server's API subjects" "reserved for the server" -- pub --data x '$JS.API.STREAM.PURGE.ORDERS'
expect 2 "pub refuses a header name that is not a token" "not a token" -- pub --data x -H 'Bad Name: x' orders.new
# kv refuses a bad command line, bucket or key before it connects: the
# server given is one nobody listens on, so a late refusal would be exit 1.
nobody=nats://127.0.0.1:1
long_bucket=$(printf '%0300d' 0 | tr 0 B)
long_key=$(printf '%01100d' 0 | tr 0 k)
expect 0 "--help lists kv" "kv  *put, get or delete a KV entry" -- --help
expect 2 "dlq --from after --until (sequences) matches nothing: a usage error" \
    '--from "20" comes after --until "10"' -- dlq -s "$nobody" list --from 20 --until 10
expect 2 "dlq --from after --until (times ago) matches nothing: a usage error" \
    '--from "1h" comes after --until "2h"' -- dlq -s "$nobody" list --from 1h --until 2h
expect 2 "dlq rm with a reversed range says so" \
    "range \"20-10\": the range's first sequence comes after its last (give 10-20)" -- dlq -s "$nobody" rm 20-10
expect 2 "kv without put, get or del is a usage error" "give put, get or del" -- kv -s "$nobody"
expect 2 "kv put without a key is a usage error" "kv put: wrong number of arguments" -- kv -s "$nobody" put CFG
expect 2 "kv get takes no value" "kv get: wrong number of arguments" -- kv -s "$nobody" get CFG app.theme dark
expect 2 "kv --replicas is for put --create only" "--replicas is for put --create only" \
    -- kv -s "$nobody" put --replicas 3 CFG app.theme dark
expect 2 "kv --replicas out of range" "--replicas 9: give 1 to 5" -- kv -s "$nobody" put --create --replicas 9 CFG k v
expect 2 "kv --create is for put only" "--create is for put only" -- kv -s "$nobody" del --create CFG app.theme
expect 2 "kv refuses a key with a space" 'KEY "app theme" is not a KV key' -- kv -s "$nobody" put CFG 'app theme' x
expect 2 "kv refuses a key with a control byte, shown escaped" 'KEY "app\\x01theme" is not a KV key' \
    -- kv -s "$nobody" put CFG "$(printf 'app\001theme')" x
expect 2 "kv refuses an empty key" 'KEY "" is empty' -- kv -s "$nobody" get CFG ''
expect 2 "kv refuses an empty token in a key" 'KEY "app..theme" has an empty token' -- kv -s "$nobody" del CFG app..theme
expect 2 "kv refuses a key whose subject is too long" "longer than 1024 bytes" -- kv -s "$nobody" put CFG "$long_key" x
expect 2 "kv refuses a 300-byte bucket name" "is longer than 252 bytes" -- kv -s "$nobody" put "$long_bucket" k x
expect 2 "kv refuses a bucket name with a dot" 'BUCKET "C.FG" is not a KV bucket name' -- kv -s "$nobody" get C.FG k
# One rule for names (docs/configuration.md, "Names and subjects"): a
# dlq_stream the config takes, the dead-letter commands take too; each gets
# as far as connecting (exit 1), not a refusal of the name (2 or 3).
printf '[host]\nserver = %s\nplugin_dir = %s\nconnect_attempts = 1\n\n[binding orders]\nplugin = template\nstream = ORDERS\nconsumer = billing\ndlq_stream = DLQ-\303\251\n' \
    "$nobody" "$tmp" > "$tmp/utf8.conf"
expect 1 "dlq takes the config's UTF-8 dlq_stream" "cannot connect" -- dlq -c "$tmp/utf8.conf" -d "$tmp/none.d" stats
expect 1 "dlq --stream takes a UTF-8 name whatever the locale" "cannot connect" \
    -- dlq -s "$nobody" stats --stream "$(printf 'DLQ-\303\251')"
expect 2 "sub --stream refuses a name with a dot, saying why" "holds '.'" -- sub -s "$nobody" --stream DLQ.x

# Logs (docs/logging.md).  A server nobody listens on: run logs its connect
# failures and exits 1, with no server needed.
cat > "$tmp/json.conf" <<CONF
[host]
server = $nobody
plugin_dir = $tmp
connect_attempts = 1
connect_timeout = 200ms
log_format = json

[binding orders]
plugin = template
stream = ORDERS
consumer = billing
CONF
sed 's/^log_format = json/log_format = yaml/' "$tmp/json.conf" > "$tmp/yaml.conf"
grep -v '^log_format' "$tmp/json.conf" > "$tmp/logfmt.conf"
if command -v python3 >/dev/null 2>&1; then
    "$jethost" run -c "$tmp/json.conf" -d "$tmp/none.d" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" -eq 1 ] && python3 -c '
import json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
assert lines[-1] == b"" and len(lines) >= 3, lines
for raw in lines[:-1]:
    o = json.loads(raw.decode("utf-8"))
    assert list(o)[:2] == ["ts", "level"] and list(o)[-1] == "msg", o
    assert o["ts"].endswith("Z") and o["level"] in ("debug", "info", "warning", "error"), o
assert any(json.loads(l).get("event") == "connect" for l in lines[:-1])
' "$tmp/err"; then ok "run with log_format = json writes one JSON object a line"; else
        echo "# exit $rc"; notok "run with log_format = json writes one JSON object a line"; fi
else
    notok "run with log_format = json writes one JSON object a line: python3 not found (./quickstart installs it)"
fi
expect 1 "run logs logfmt by default" 'level=error event=connect msg="connect attempt 1 of 1' \
    -- run -c "$tmp/logfmt.conf" -d "$tmp/none.d"
expect 3 "run refuses an unknown log_format" "log_format: 'yaml' is not logfmt or json" \
    -- run -c "$tmp/yaml.conf" -d "$tmp/none.d"
export JETHOST_LOG_LEVEL=verbose
expect 3 "run refuses an unknown JETHOST_LOG_LEVEL" \
    "JETHOST_LOG_LEVEL is 'verbose', which is not a log level (debug, info, warning or error)" \
    -- run -c "$tmp/logfmt.conf" -d "$tmp/none.d"
unset JETHOST_LOG_LEVEL
# JOURNAL_STREAM naming something other than stderr (inherited, or stderr
# redirected): the lines stay on stderr.
export JOURNAL_STREAM=1:1
expect 1 "run with a JOURNAL_STREAM that is not its stderr logs to stderr" \
    'level=error event=connect msg=' -- run -c "$tmp/logfmt.conf" -d "$tmp/none.d"
unset JOURNAL_STREAM
