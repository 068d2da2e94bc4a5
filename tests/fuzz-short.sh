#!/bin/sh
# The header block fuzzer (tests/fuzz/hdr_block_fuzz.c) for a bounded number
# of inputs from the committed corpus.  TAP.  Without clang or libFuzzer it
# fails rather than skips: the quickstart installs both, so their absence is
# a broken setup, not an optional test.
#   FUZZ_RUNS     inputs to try (default 150000)
#   FUZZ_SECONDS  upper bound on the run's time (default 20)
set -u
: "${JET_BUILDDIR:?run through make check}"
: "${JET_SRCDIR:?run through make check}"
runs=${FUZZ_RUNS:-150000}
secs=${FUZZ_SECONDS:-20}
fuzzer="$JET_BUILDDIR/tests/fuzz/hdr_block_fuzz"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "1..2"
# make check builds it first (check_DATA), with clang and libFuzzer.
if [ -x "$fuzzer" ]; then
    echo "ok 1 - the fuzzer is built with clang and libFuzzer"
else
    echo "not ok 1 - the fuzzer is built with clang and libFuzzer (packages clang, libclang-rt-14-dev; make fuzz)"
    echo "not ok 2 - up to $runs inputs or ${secs}s without a finding: not run, the fuzzer is missing"
    exit 0
fi

mkdir "$tmp/corpus"
# Leaks count as findings here, unlike in the rest of make check.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$fuzzer" -runs="$runs" -max_total_time="$secs" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$tmp/" \
    "$tmp/corpus" "$JET_SRCDIR/tests/fuzz/corpus" >"$tmp/run" 2>&1
rc=$?
done_line=$(grep '^Done [0-9]* runs' "$tmp/run")
if [ "$rc" -eq 0 ] && [ -n "$done_line" ]; then
    echo "ok 2 - up to $runs inputs or ${secs}s without a finding ($done_line)"
else
    echo "not ok 2 - up to $runs inputs or ${secs}s without a finding (exit $rc)"
    tail -n 40 "$tmp/run" | sed 's/^/# /'
    for f in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-*; do
        [ -f "$f" ] || continue
        mkdir -p "$JET_BUILDDIR/tests/fuzz"
        cp "$f" "$JET_BUILDDIR/tests/fuzz/"
        echo "# input kept as $JET_BUILDDIR/tests/fuzz/$(basename "$f"):"
        od -A d -c "$f" | head -n 20 | sed 's/^/#   /'
    done
fi
