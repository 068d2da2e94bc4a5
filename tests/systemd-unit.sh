#!/bin/sh
# The generated systemd unit (data/jethost.service): systemd-analyze verify
# finds nothing to say about it, and it names the build's paths and the
# exit code of a config error (docs/systemd.md).  TAP.
set -u
: "${JET_BUILDDIR:?run through make check}"
unit="$JET_BUILDDIR/data/jethost.service"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "1..4"
if [ -z "${SYSTEMD_ANALYZE:-}" ] || [ ! -x "$SYSTEMD_ANALYZE" ]; then
    for i in 1 2 3 4; do echo "not ok $i - systemd-analyze not found (Debian: systemd; ./quickstart installs it)"; done
    exit 1
fi
n=0
check() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; sed 's/^/# /' "$tmp/out"; fi
}

! grep -n '@[a-z_]*@' "$unit" >"$tmp/out" 2>&1
check $? "every @placeholder@ is substituted"

# verify needs ExecStart's binary to exist: the same unit on the built one.
sed "s|^ExecStart=[^ ]*/jethost |ExecStart=$JET_BUILDDIR/host/jethost |" "$unit" >"$tmp/jethost.service"
grep -q "^ExecStart=$JET_BUILDDIR/host/jethost run\$" "$tmp/jethost.service" >"$tmp/out" 2>&1
check $? "ExecStart is \$bindir/jethost run"

# Any line is a warning (an unknown key, a bad value): verify itself exits 0 on those.
"$SYSTEMD_ANALYZE" verify --man=no "$tmp/jethost.service" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ]
check $? "systemd-analyze verify: no error, no warning"

# A config error must not become a restart loop.
code=$(sed -n 's/.*JET_EXIT_CONFIG = \([0-9]*\),.*/\1/p' "$JET_SRCDIR/host/cmd/exit_codes.h")
grep -Eq "^RestartPreventExitStatus=(.* )?$code( |\$)" "$unit" >"$tmp/out" 2>&1
check $? "RestartPreventExitStatus names the config error's exit code ($code)"
