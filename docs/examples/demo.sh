#!/usr/bin/env bash
# The jethost demo: an embedded nats-server, the shipped plugins, sample
# messages published with `jethost pub`, and what became of each.
# Usage: demo.sh BUILD_DIR   (./quickstart demo calls it)
set -uo pipefail
build=${1:?usage: demo.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
jethost="$build/host/jethost"

# Everything the demo starts lives in one private directory, removed at the end.
state=$(mktemp -d /tmp/jethost-demo.XXXXXX)
chmod 0700 "$state"
host_pid=
cleanup() {
    if [ -n "$host_pid" ] && kill -0 "$host_pid" 2>/dev/null; then
        kill -TERM "$host_pid"; wait "$host_pid" 2>/dev/null
    fi
    rm -rf "$state"
}
trap cleanup EXIT

# Plugins are loaded only from a directory nobody else can write to.
mkdir -m 0700 "$state/plugins" "$state/conf.d"
cp "$build/plugins/template/.libs/template.so" "$state/plugins/"
chmod 0644 "$state/plugins/"*.so

# docs/examples/demo.conf as shipped, plus a drop-in pointing at this run's directories.
cat > "$state/conf.d/10-demo-run.conf" <<CONF
[host]
state_dir = $state
plugin_dir = $state/plugins

[binding demo]
option.log_every = 1
option.reject_subject = demo.bad
CONF

echo "== jethost check"
"$jethost" check -c "$src/docs/examples/demo.conf" -d "$state/conf.d" -v || exit 1

echo "== jethost run (embedded nats-server, state in $state)"
JETHOST_LOG_LEVEL=debug "$jethost" run -c "$src/docs/examples/demo.conf" -d "$state/conf.d" 2>"$state/jethost.log" &
host_pid=$!
for _ in $(seq 1 300); do [ -s "$state/nats/url" ] && break; sleep 0.1; done
[ -s "$state/nats/url" ] || { echo "the embedded server did not start:"; cat "$state/jethost.log"; exit 1; }

echo "== jethost pub"
pub() {
    local i
    for i in $(seq 1 50); do
        "$jethost" pub -c "$src/docs/examples/demo.conf" -d "$state/conf.d" "$@" 2>/dev/null && return 0
        sleep 0.1   # the binding creates the stream as it starts
    done
    "$jethost" pub -c "$src/docs/examples/demo.conf" -d "$state/conf.d" "$@"
}
pub demo.orders.1 --data '{"order": 1}' || exit 1
pub demo.orders.2 --data '{"order": 2}' -H Tenant=acme || exit 1
pub demo.bad --data 'not an order' || exit 1
pub demo.orders.3 --data '{"order": 3}' || exit 1

# Wait until the four deliveries are settled.
for _ in $(seq 1 100); do
    [ "$(grep -c 'event=settled' "$state/jethost.log")" -ge 4 ] && break
    sleep 0.1
done

echo "== what became of each message"
grep 'event=settled' "$state/jethost.log" | sed -e 's/.*msg="//' -e 's/"$//' | sort -n -k2 | sed 's/^/  /'

echo "== stopping (SIGTERM drains: in-flight messages finish, the rest are released)"
kill -TERM "$host_pid"
wait "$host_pid"; rc=$?
host_pid=
grep -E 'event=(stopped|exit)' "$state/jethost.log" | sed -e 's/.*msg="//' -e 's/"$//' | sed 's/^/  /'
if pgrep -f "$state/nats" >/dev/null; then echo "a nats-server was left behind"; exit 1; fi
echo "== done (jethost exited $rc; the embedded server is stopped)"
exit "$rc"
