#!/usr/bin/env bash
# The jethost demo: an embedded nats-server, the shipped plugins, sample
# messages published with `jethost pub`, the host supervised and restarted
# when a poison message kills it (as systemd would), and what became of each
# message, read back from the logs, the audit file and the dead-letter stream.
# Then a KV watch (docs/kv.md): a bucket written with `jethost kv`, a
# `kind = kv` binding added in a drop-in, the host restarted on the same
# store, the current values handled, then an update and a delete as they
# happen.
# Usage: demo.sh BUILD_DIR   (./quickstart demo calls it)
set -uo pipefail
build=${1:?usage: demo.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
jethost="$build/host/jethost"
conf="$src/docs/examples/demo.conf"

# Everything the demo starts lives in one private directory, removed at the end.
state=$(mktemp -d /tmp/jethost-demo.XXXXXX)
chmod 0700 "$state"
host_pid=
cleanup() {
    if [ -n "$host_pid" ] && kill -0 "$host_pid" 2>/dev/null; then
        kill -TERM "$host_pid"; wait "$host_pid" 2>/dev/null
    fi
    # A host killed by abort() leaves its embedded server to the parent-death
    # signal; make sure nothing outlives the demo.
    pkill -f -- "$state/nats" 2>/dev/null
    rm -rf "$state"
}
trap cleanup EXIT

# Plugins are loaded only from a directory nobody else can write to.
mkdir -m 0700 "$state/plugins" "$state/conf.d"
for p in paced retry; do
    cp "$build/plugins/$p/.libs/$p.so" "$state/plugins/"
done
chmod 0644 "$state/plugins/"*.so

# docs/examples/demo.conf as shipped, plus a drop-in pointing at this run's directories.
cat > "$state/conf.d/10-demo-run.conf" <<CONF
[host]
state_dir = $state
plugin_dir = $state/plugins

[binding audit]
option.path = $state/audit.jsonl
CONF
run() { "$jethost" "$@" -c "$conf" -d "$state/conf.d"; }

echo "== jethost check"
run check || exit 1

log="$state/jethost.log"
start_host() {
    JETHOST_LOG_LEVEL=debug "$jethost" run -c "$conf" -d "$state/conf.d" 2>>"$log" &
    host_pid=$!
}
echo "== jethost run (embedded nats-server, state in $state)"
start_host
for _ in $(seq 1 300); do [ -s "$state/nats/url" ] && break; sleep 0.1; done
[ -s "$state/nats/url" ] || { echo "the embedded server did not start:"; cat "$log"; exit 1; }

echo "== jethost pub"
pub() {
    local i
    for i in $(seq 1 50); do
        run pub "$@" 2>/dev/null && return 0
        sleep 0.1   # the bindings create the stream as they start
    done
    run pub "$@"
}
pub demo.orders.1 --data '{"order": 1}' || exit 1
pub demo.orders.2 --data '{"order": 2}' -H 'Jethost-Fault: fail=2' || exit 1
pub demo.orders.3 --data '{"order": 3}' -H 'Jethost-Fault: postpone=1s;times=1' || exit 1
pub demo.orders.4 --data '{"order": 4}' -H 'Jethost-Fault: reject;reason=order 4 has no customer' || exit 1
pub demo.orders.5 --data '{"order": 5}' -H 'Jethost-Fault: fail' || exit 1
# Last: it kills the host (and the embedded server with it) as soon as it is handled.
pub demo.orders.6 --data '{"order": 6}' -H 'Jethost-Fault: abort' || exit 1

# Supervise: restart the host when the poison message kills it, until the
# orders binding has settled all six (four acked or dead-lettered... see below).
done_yet() {
    # 3 acked (1, 2, 3) and 3 dead-lettered (4 rejected, 5 exhausted, 6 poison).
    [ "$(grep -c 'binding=orders event=settled.*: ack' "$log")" -ge 3 ] &&
    [ "$(grep -c 'binding=orders event=dead-lettered' "$log")" -ge 3 ]
}
restarts=0
for _ in $(seq 1 600); do
    done_yet && break
    if ! kill -0 "$host_pid" 2>/dev/null; then
        { wait "$host_pid"; } 2>/dev/null; rc=$?
        restarts=$((restarts + 1))
        echo "   (the host died with status $rc; restarting it, as a supervisor would: restart $restarts)"
        start_host
    fi
    sleep 0.1
done

echo "== what became of each message (binding orders)"
grep 'binding=orders event=settled' "$log" | sed -e 's/.*msg="//' -e 's/"$//' | sed 's/^/  /'
echo "== the audit binding wrote every message to audit.jsonl (paced.so)"
head -c 400 "$state/audit.jsonl" | head -2 | sed 's/^/  /'
wc -l < "$state/audit.jsonl" | sed 's/^/  lines: /'
echo "== the crash attribution that made seq 6 poison"
grep -E 'binding=orders event=(suspect|dead-lettered)' "$log" | grep -E 'seq 6' | sed -e 's/.*msg="//' -e 's/"$//' | sed 's/^/  /'
echo "== the dead-letter stream (jethost dlq list)"
run dlq list | sed 's/^/  /'

# A KV watch.  jethost never creates a watched bucket: `jethost kv put
# --create` makes it, on the running host's embedded server.
echo "== jethost kv put: bucket SETTINGS (--create makes it), four puts, app.theme twice"
kv_put() {
    local rev
    rev=$(run kv put "$@" 2>"$state/kv.err") || { cat "$state/kv.err"; echo "jethost kv put failed"; exit 1; }
    sed 's/^/  /' "$state/kv.err"
    echo "  ${*: -2:1} = ${*: -1}: revision $rev"
}
kv_put --create SETTINGS app.theme dark
kv_put SETTINGS app.lang en
kv_put SETTINGS app.timeout 30s
kv_put SETTINGS app.theme light
echo "== a drop-in with a kind = kv binding (paced.so writes each entry to settings.jsonl)"
cat > "$state/conf.d/20-settings.conf" <<CONF
[binding settings]
plugin = paced
kind = kv
bucket = SETTINGS
keys = app.>
expires = 5s
idle_heartbeat = 1s
option.path = $state/settings.jsonl
option.fsync = never
CONF
sed 's/^/  /' "$state/conf.d/20-settings.conf"
echo "== restarting the host (SIGTERM, then run again: the embedded store persists in $state/nats)"
kill -TERM "$host_pid"
wait "$host_pid"; rc=$?
host_pid=
[ "$rc" -eq 0 ] || { echo "the host exited $rc on SIGTERM; the log is below"; cat "$log"; exit 1; }
start_host
settings="$state/settings.jsonl"
# settings_lines N: wait (up to 20 s) until the watch has written N lines.
settings_lines() {
    local i
    for i in $(seq 1 200); do
        [ -f "$settings" ] && [ "$(wc -l < "$settings")" -ge "$1" ] && return 0
        kill -0 "$host_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "the KV watch wrote $(cat "$settings" 2>/dev/null | wc -l) of $1 lines; the log is below"
    cat "$log"
    exit 1
}
# One line a KV entry: its revision (the stream sequence), key, and value or operation.
show_settings() {
    # paced writes a KV entry's key, operation and revision last (docs/plugins.md).
    sed -E -e 's/.*"payload":"(.*)","kv":\{"key":"([^"]*)","op":"put","revision":([0-9]+)\}\}$/  revision \3: \2 = \1/' \
           -e 's/.*"kv":\{"key":"([^"]*)","op":"([a-z]+)","revision":([0-9]+)\}\}$/  revision \3: \1 (\2)/'
}
settings_lines 3
echo "== the current values, handled by the watch (revision 1 was replaced by 4: only the current value comes)"
head -n 1 "$settings" | sed 's/^/  /'
tail -n +2 "$settings" | show_settings
grep 'binding=settings event=kv-initial-done' "$log" | tail -1 | sed -e 's/.*msg="//' -e 's/"$//' | sed 's/^/  /'
echo "== while it runs: jethost kv put SETTINGS app.timeout 45s; jethost kv del SETTINGS app.lang"
kv_put SETTINGS app.timeout 45s
run kv del SETTINGS app.lang || exit 1
echo "  app.lang deleted"
settings_lines 5
echo "== the watch handles them as they arrive"
tail -n 2 "$settings" | show_settings
# In revision order, each once: 2, 3, 4 (the current values), then 5 and 6.
revisions=$(sed -E 's/.*"stream_seq":([0-9]+).*/\1/' "$settings" | tr '\n' ' ')
if [ "$revisions" != "2 3 4 5 6 " ]; then
    echo "the KV watch handled revisions $revisions, not 2 3 4 5 6; the log is below"; cat "$log"; exit 1
fi

echo "== stopping (SIGTERM drains: in-flight messages finish, the rest are released)"
kill -TERM "$host_pid"
wait "$host_pid"; rc=$?
host_pid=
# The last run's lines: one a binding (audit, orders, settings), then the exit.
grep -E 'event=(stopped|exit)' "$log" | tail -4 | sed -e 's/.*binding=\([a-z]*\).*msg="/\1: /' -e 's/.*msg="//' -e 's/"$//' | sed 's/^/  /'
if pgrep -f -- "$state/nats" >/dev/null; then echo "a nats-server was left behind"; exit 1; fi
if ! done_yet; then echo "not every message was settled; the log is below"; cat "$log"; exit 1; fi
echo "== done (jethost exited $rc after $restarts restart(s); the embedded server is stopped)"
exit "$rc"
