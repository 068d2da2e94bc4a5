#!/usr/bin/env bash
# jethost benchmark: what `make bench` runs (see docs/performance.md).
#
# Starts its own nats-server (loopback, port chosen by the server, store in a
# temporary directory; killed at exit), fills a file-store stream with N
# messages of 128 bytes, then measures, alternating the cases and repeating
# REPS times:
#   jethost + the noop plugin (strict pacing, and with an early re-pull
#   threshold), the two plain nats.c loops of rawloop (Fetch and raw pull
#   protocol), and nats.js consume() from ../shared/anchors when nats.js is
#   installed, at batch 1, 10 and 100, each run on a fresh durable consumer;
# then the failure path: jethost with every message REJECTed (capture to the
# DLQ stream, wait for the pub-ack, confirmed ack) beside `rawloop capture`
# doing the same by hand, at batch 10 and 100 on a stream FAIL of N_FAIL
# messages, the DLQ stream re-created before each run;
# then forwarding: jethost with the forward plugin (publish-then-ack: each
# message republished to stream FWD, its pub-ack waited for, then the origin
# acked) beside `rawloop forward` doing the same by hand, at batch 10 and 100
# on a stream ORDERS of N_FWD messages, FWD re-created before each run;
# then the publish-to-handler latency at a steady 1,000 msgs/s beside a core
# request/reply round trip, and jethost's peak RSS with a 1 ms handler over
# two run lengths;
# then the ordered and KV readers: jethost `kind = ordered` (batch 10 and 100,
# and with `checkpoint = kv`) beside nats.c's own ordered push consumer over a
# stream ORD of ORD_N messages, and jethost `kind = kv` beside
# kvStore_WatchAll over a bucket of KV_KEYS keys and KV_UPDATES updates; and
# both with a slow handler (SLOW_SLEEP_US a message) while messages are
# published at full speed, counting what each side handled, twice, or never;
# and the same over a longer run with a faster handler (the sustained part);
# then per-key lanes: jethost with the noop plugin and LANES_WORKERS workers
# on a binding with `key = subject:3` over LANES_KEYS keys, beside the same
# binding without `key`, and rawloop's Fetch and raw pull loops, on a stream
# LANES of LANES_N messages (the lanes part).
# Prints one table and writes it to $JET_BUILDDIR/bench-results.txt.
#
# Env: N (200000), REPS (3), QUICK=1 (N=20000, N_FAIL=2000, REPS=1, shorter
# latency and RSS runs), N_FAIL (20000), N_FWD (20000; QUICK 10000), CASES
# (which parts run, any of "method throughput latency workers payload
# bindings failure capture retry hosts forward rss ordered kv sustained
# lanes"; default all of them,
# but QUICK leaves sustained out; e.g. CASES=failure),
# LAT_N (10000) and LAT_RATE (1000), RSS_SMALL (10000) and
# RSS_LARGE (100000), NATSJS_DIR (a directory where `require('nats')` works;
# default: the first of /tmp/natsjs, /tmp/anchors/js that has it),
# ANCHORS_DIR (default ../shared/anchors beside the source tree), KEEP=1
# keeps the work directory (logs of every run).  The throughput part also
# measures the ceiling: `rawloop ceiling` (an AckNone consumer, no acks, no
# handler) at CEILING_BATCH (1000), and prints jethost's share of it.
# The ordered and KV parts (CASES ordered, kv): ORD_N (N), CKPT_N (20000),
# KV_KEYS (10000), KV_UPDATES (KV_KEYS), SLOW_N (5000), SLOW_KEYS (1000),
# SLOW_UPDATES (4000), SLOW_SLEEP_US (1000), SLOW_LIMIT (SLOW_N / 5: the
# pending-messages limit of the second nats.c slow run).  QUICK=1: ORD_N
# 20000, CKPT_N 2000, KV_KEYS 2000, SLOW_N 1000, SLOW_KEYS 200, SLOW_UPDATES
# 800.
# The sustained part (CASES sustained; left out of QUICK's default): SUS_N
# (150000) messages, and as many KV updates over SUS_KEYS (5000) keys, with
# a SUS_SLEEP_US (100) handler, SUS_REPS (1) times: long enough for nats.c's
# flow-control window to outgrow its default pending limit (65,536 messages).
# The lanes part (CASES lanes): LANES_N (100000; QUICK 20000) messages on
# lanes.k.<i % LANES_KEYS> (LANES_KEYS 100), LANES_WORKERS (4) workers,
# LANES_BATCH (100) for every side.
# The hot-key part (CASES hotkey): HOT_N (20000; QUICK 5000) messages paced at
# HOT_RATE (1000/s), cold-key latency spread over 5000 keys against half the
# traffic on one key and the rest over 1000 keys (4 workers, 1 ms handler).
# The method part (CASES method): the anchor ../shared/anchors/natsbench.c
# (compiled into the work directory, never copied into the tree) alone, with
# no poller at all, beside itself and jethost under the old 5 ms floor poller
# and under the rare one (FLOOR_POLL_MS), at batch 1, 10 and 100.  Every
# floor-timed rate of the other parts is taken by the rare poller:
# FLOOR_POLL_MS (200; QUICK 50; 5 gives the old method).
# The workers part (CASES workers): a 1 ms handler, WRK_COUNTS workers
# ("1 2 4 8"), WRK_PER (3000; QUICK 500) messages a worker, batch WRK_BATCH
# (10) a puller, beside `rawloop workers` (as many plain Fetch loops, each
# sleeping as long a message); the ideal is workers x 1,000/s.
# The payload part (CASES payload): PAY_SIZES ("128 4096 65536 1048576"),
# each size a stream PAY of min(PAY_MAX_N, PAY_MB MiB / size) messages
# (PAY_MAX_N 50000, PAY_MB 256; QUICK 10000 and 32), batch PAY_BATCH (10):
# jethost beside rawloop fetch and raw, in MB/s.
# The bindings part (CASES bindings): BIND_COUNTS ("1 10 50") bindings in
# one jethost, each its own durable consumer of a stream BIND refilled for
# each count with BIND_TOTAL / count messages (BIND_TOTAL 100000; QUICK
# 20000), batch BIND_BATCH (10), beside `rawloop multi` (as many Fetch loops
# in one process); the aggregate rate is counted on the wire by `rawloop
# acks`, and the peak RSS divided by the bindings.
# Latency (CASES latency): LAT_N (60000: a minute at LAT_RATE 1000; QUICK
# 3000), p50, p99, p99.9 and max of each side.
# The retry part (CASES retry): every message fails once, then succeeds: jethost
# with the noop plugin's `option.verdict = retry-once` and `rungs =
# RETRY_RUNG_MS`ms (1; the ledger on, its default) beside `rawloop retry` (KV
# create + delayed NAK of as long, then KV get + ack + KV delete), at batch 10
# and 100 on a stream RETRY of N_RETRY (20000; QUICK 2000) messages; rate =
# messages finally acked a second (the ack floor reaching N_RETRY).
# The capture curve (CASES capture): every message REJECTed and captured, as
# in the failure part, with CAPW_COUNTS ("1 2 4") workers, batch CAPW_BATCH
# (10), on stream FAIL (N_FAIL messages): jethost `workers = W` beside
# `rawloop capture ... W` (W capture loops on the one consumer); the DLQ
# stream must hold exactly N_FAIL records after each run.
# The batch sink (CASES sink): every message appended to a file on the work
# directory's disk and made durable with fdatasync, on a stream SINK of N_SINK
# (20000; QUICK 5000) messages at batch 10 and 100: jethost with the noop
# plugin's `option.sink` one fdatasync a message (`handle()`), jethost with
# `batch_max` = the batch (`handle_batch()`: one fdatasync a batch), and
# `rawloop sink` (fetch a batch, append, one fdatasync, ack each).
# The async part (CASES async): pending deliveries (docs/async.md) on a stream
# ASYNC of N_ASYNC (20000; QUICK 5000) messages, batch 100: jethost with one
# worker, `max_in_flight` = ASYNC_INFLIGHT (100) and the noop plugin's
# `option.async` = ASYNC_MS (10 ms of simulated I/O, completed by the
# plugin's thread), beside `rawloop async` (the same concurrency in plain
# nats.c: fetch what there is room for, one I/O thread acks each message
# ASYNC_MS after it), and jethost handling one message at a time
# (`option.sleep` = ASYNC_MS) on N_ASYNC_SYNC (300) messages.
# The hosts part (CASES hosts): HOSTS_PROCS ("1 2") `jethost run` processes
# with one config (one durable binding, noop plugin) on one consumer, beside
# as many `rawloop fetch` processes on one durable (`rawloop mkcons`, then
# RAWLOOP_BIND=1), at batch 10 and 100, stream HOSTS of N_HOSTS (100000;
# QUICK 20000) messages; rate = the floor's slope; the table gives each
# side's 2-process/1-process ratio.
# With gnuplot (GNUPLOT, or on the PATH), tests/bench/plot.sh draws the
# parts' curves into $JET_BUILDDIR/bench-img (PLOT_DIR).
set -uo pipefail

: "${JET_BUILDDIR:?run through make bench}"
: "${JET_SRCDIR:?run through make bench}"
NATS_SERVER=${NATS_SERVER:-nats-server}

if [ "${QUICK:-0}" = 1 ]; then
    N=${N:-20000}; REPS=${REPS:-1}; N_FAIL=${N_FAIL:-2000}; N_FWD=${N_FWD:-10000}
    LAT_N=${LAT_N:-3000}; RSS_SMALL=${RSS_SMALL:-1000}; RSS_LARGE=${RSS_LARGE:-10000}
    ORD_N=${ORD_N:-20000}; CKPT_N=${CKPT_N:-2000}; KV_KEYS=${KV_KEYS:-2000}
    SLOW_N=${SLOW_N:-1000}; SLOW_KEYS=${SLOW_KEYS:-200}; SLOW_UPDATES=${SLOW_UPDATES:-800}
    LANES_N=${LANES_N:-20000}
    BIND_TOTAL=${BIND_TOTAL:-20000}
    FLOOR_POLL_MS=${FLOOR_POLL_MS:-50}; WRK_PER=${WRK_PER:-500}; PAY_MAX_N=${PAY_MAX_N:-10000}; PAY_MB=${PAY_MB:-32}
    N_RETRY=${N_RETRY:-2000}; N_HOSTS=${N_HOSTS:-20000}; N_SINK=${N_SINK:-5000}
    N_ASYNC=${N_ASYNC:-5000}
fi
N=${N:-200000}
REPS=${REPS:-3}
N_FAIL=${N_FAIL:-20000}
N_FWD=${N_FWD:-20000}
if [ "${QUICK:-0}" = 1 ]; then
    CASES=${CASES:-method throughput latency workers payload bindings failure capture retry sink async hosts forward rss ordered kv lanes hotkey}
    HOT_N=${HOT_N:-5000}
else
    CASES=${CASES:-method throughput latency workers payload bindings failure capture retry sink async hosts forward rss ordered kv sustained lanes hotkey}
fi
CASES=${CASES//,/ }
LAT_N=${LAT_N:-60000}
LAT_RATE=${LAT_RATE:-1000}
HOT_N=${HOT_N:-20000}
HOT_RATE=${HOT_RATE:-1000}
RSS_SMALL=${RSS_SMALL:-10000}
RSS_LARGE=${RSS_LARGE:-100000}
ORD_N=${ORD_N:-$N}
CKPT_N=${CKPT_N:-20000}
KV_KEYS=${KV_KEYS:-10000}
KV_UPDATES=${KV_UPDATES:-$KV_KEYS}
SLOW_N=${SLOW_N:-5000}
SLOW_KEYS=${SLOW_KEYS:-1000}
SLOW_UPDATES=${SLOW_UPDATES:-4000}
SLOW_SLEEP_US=${SLOW_SLEEP_US:-1000}
SLOW_LIMIT=${SLOW_LIMIT:-$((SLOW_N / 5))}
SUS_N=${SUS_N:-150000}
SUS_SLEEP_US=${SUS_SLEEP_US:-100}
SUS_KEYS=${SUS_KEYS:-5000}
SUS_REPS=${SUS_REPS:-1}
LANES_N=${LANES_N:-100000}
LANES_KEYS=${LANES_KEYS:-100}
LANES_WORKERS=${LANES_WORKERS:-4}
LANES_BATCH=${LANES_BATCH:-100}
FLOOR_POLL_MS=${FLOOR_POLL_MS:-200}
WRK_COUNTS=${WRK_COUNTS:-1 2 4 8}
WRK_PER=${WRK_PER:-3000}
WRK_BATCH=${WRK_BATCH:-10}
PAY_SIZES=${PAY_SIZES:-128 4096 65536 1048576}
PAY_MAX_N=${PAY_MAX_N:-50000}
PAY_MB=${PAY_MB:-256}
PAY_BATCH=${PAY_BATCH:-10}
METHOD_BATCHES="1 10 100"
BIND_COUNTS=${BIND_COUNTS:-1 10 50}
BIND_TOTAL=${BIND_TOTAL:-100000}
BIND_BATCH=${BIND_BATCH:-10}
N_RETRY=${N_RETRY:-20000}
N_SINK=${N_SINK:-20000}
N_ASYNC=${N_ASYNC:-20000}
N_ASYNC_SYNC=${N_ASYNC_SYNC:-300}
ASYNC_INFLIGHT=${ASYNC_INFLIGHT:-100}
ASYNC_MS=${ASYNC_MS:-10}
RETRY_RUNG_MS=${RETRY_RUNG_MS:-1}
RETRY_BUCKET=raw_ledger          # rawloop retry's bucket (jethost keeps its own, jethost_ledger)
CAPW_COUNTS=${CAPW_COUNTS:-1 2 4}
CAPW_BATCH=${CAPW_BATCH:-10}
N_HOSTS=${N_HOSTS:-100000}
HOSTS_PROCS=${HOSTS_PROCS:-1 2}
KV_HISTORY=64   # the most a bucket keeps: every update of a run stays in the stream
SIZE=128
BATCHES="1 10 100"
CEILING_BATCH=${CEILING_BATCH:-1000}   # the throughput part's ceiling: rawloop ceiling
FAIL_BATCHES="10 100"
DLQ_STREAM=JETHOST_DLQ             # jethost's managed default ...
DLQ_SUBJECTS='jethost.dlq.>'       # ... and the subjects it would give it
DLQ_SUBJECT=jethost.dlq.bench      # the binding's default dlq_subject
FWD_STREAM=FWD
FWD_SUBJECTS='fwd.>'
FWD_TEMPLATE='fwd.{token:2}'       # orders.new -> fwd.new: the forward plugin's option.subject
FWD_SUBJECT=fwd.new                # where rawloop forward publishes (no template on that side)

RAW=$JET_BUILDDIR/tests/bench/rawloop
RAW_STACK=$JET_BUILDDIR/tests/bench/rawloop-stack
JH=$JET_BUILDDIR/host/jethost
SO=$JET_BUILDDIR/tests/bench/.libs/noop.so
FWD_SO=$JET_BUILDDIR/plugins/forward/.libs/forward.so
OUT=$JET_BUILDDIR/bench-results.txt

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

for f in "$RAW" "$JH" "$SO" "$FWD_SO"; do [ -e "$f" ] || die "$f is missing (run make bench)"; done
want() { [[ " $CASES " == *" $1 "* ]]; }
for c in $CASES; do
    case $c in
        method | throughput | failure | capture | retry | sink | async | hosts | forward | latency | rss | ordered | kv | sustained | lanes | \
            hotkey | workers | payload | bindings) ;;
        *) die "CASES: unknown part '$c' (method throughput latency workers payload bindings failure capture retry sink async hosts forward rss ordered kv sustained lanes hotkey)" ;;
    esac
done
want rss && { [ "$RSS_LARGE" -le "$N" ] || die "RSS_LARGE ($RSS_LARGE) must not exceed N ($N)"; }
want ordered && { [ "$CKPT_N" -le "$ORD_N" ] || die "CKPT_N ($CKPT_N) must not exceed ORD_N ($ORD_N)"; }
# A revision superseded before a slow watcher reads it would be skipped by
# right, and counting could no longer tell a loss from KV semantics.
{ [ "$KV_UPDATES" -le $(((KV_HISTORY - 1) * KV_KEYS)) ] && [ "$SLOW_UPDATES" -le $(((KV_HISTORY - 1) * SLOW_KEYS)) ] &&
    [ "$SUS_N" -le $(((KV_HISTORY - 1) * SUS_KEYS)) ]; } ||
    die "KV_UPDATES, SLOW_UPDATES and SUS_N must stay within $((KV_HISTORY - 1)) updates a key of their buckets"

# --- nats.js peer (optional) -------------------------------------------------
ANCHORS_DIR=${ANCHORS_DIR:-$(cd "$JET_SRCDIR/.." && pwd)/shared/anchors}
NODE_MODULES=""
if command -v node >/dev/null && [ -f "$ANCHORS_DIR/consume.js" ]; then
    for d in ${NATSJS_DIR:-} /tmp/natsjs /tmp/anchors/js; do
        if [ -d "$d/node_modules/nats" ] && (cd "$d" && node -e "require('nats')" 2>/dev/null); then
            NODE_MODULES=$d/node_modules
            break
        fi
    done
fi

# --- work directory and server -------------------------------------------------
WORK=$(mktemp -d /tmp/jethost-bench.XXXXXX) || die "mktemp failed"
chmod 700 "$WORK"
SPID=""
CHILD=""
PROCS=()   # the hosts part's processes
cleanup() {
    [ -n "$CHILD" ] && kill -KILL "$CHILD" 2>/dev/null
    local p
    for p in "${PROCS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    if [ -n "$SPID" ]; then kill -TERM "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; fi
    if [ "${KEEP:-0}" = 1 ]; then say "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$NATS_SERVER" -js -a 127.0.0.1 -p -1 --ports_file_dir "$WORK" -sd "$WORK/store" >"$WORK/server.log" 2>&1 &
SPID=$!
URL=""
for _ in $(seq 200); do
    if [ -s "$WORK/nats-server_$SPID.ports" ]; then
        URL=$(sed -n 's/.*"nats":\["\([^"]*\)".*/\1/p' "$WORK/nats-server_$SPID.ports")
        [ -n "$URL" ] && break
    fi
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.05
done
[ -n "$URL" ] || { cat "$WORK/server.log" >&2; die "nats-server did not start"; }

mkdir -m 700 "$WORK/plugins" "$WORK/state" "$WORK/runs"
cp "$SO" "$WORK/plugins/noop.so" && chmod 600 "$WORK/plugins/noop.so"
cp "$FWD_SO" "$WORK/plugins/forward.so" && chmod 600 "$WORK/plugins/forward.so"

# The anchor: the project's figures are ratios to this plain Fetch loop, so it
# runs in the same invocation, built here from where it lives.
NATSBENCH=""
if [ -f "$ANCHORS_DIR/natsbench.c" ]; then
    # shellcheck disable=SC2046 # pkg-config's flags are separate words
    if "${CC:-cc}" -O2 -o "$WORK/natsbench" "$ANCHORS_DIR/natsbench.c" $(pkg-config --cflags --libs libnats) -lpthread \
        2>"$WORK/natsbench.err"; then
        NATSBENCH=$WORK/natsbench
    else
        say "natsbench.c did not build (no anchor column): $(head -3 "$WORK/natsbench.err")"
    fi
fi
want method && [ -z "$NATSBENCH" ] && die "CASES method needs $ANCHORS_DIR/natsbench.c"

RESULTS=$WORK/results.txt   # label batch rep rate rss_kb total_rate cpu_ns_per_msg
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
: >"$RESULTS"

now_ns() { date +%s%N; }
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" "$2" | head -1; }
floor_timeout() { echo $((120 + $1 / 500)); }

# host_conf BINDING: the [host] group and the start of the binding's group
# (the plugin: $RUN_PLUGIN, default noop)
host_conf() {
    printf '[host]\nserver = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n' "$URL" "$WORK/state"
    printf '[binding %s]\nplugin = %s\n' "$1" "${RUN_PLUGIN:-$WORK/plugins/noop.so}"
}

# jethost_conf FILE STREAM CONSUMER BATCH THRESHOLD [option lines...]
jethost_conf() {
    local file=$1 stream=$2 consumer=$3 batch=$4 threshold=$5
    shift 5
    {
        host_conf bench
        printf 'stream = %s\nconsumer = %s\n' "$stream" "$consumer"
        printf 'batch = %s\nthreshold = %s\nexpires = 30s\nidle_heartbeat = 5s\n' "$batch" "$threshold"
        printf 'ack_wait = 30s\nmax_ack_pending = 1000\nmax_deliver = -1\n'
        local line
        for line in "$@"; do printf '%s\n' "$line"; done
    } >"$file"
}

# run_jethost LABEL BATCH THRESHOLD REP NMSG [option lines...]
# Starts jethost, waits until the consumer's ack floor reaches NMSG, reads its
# VmHWM, stops it with SIGTERM.  Records the floor rate.  The stream is
# $RUN_STREAM (default BENCH).
run_jethost() {
    local label=$1 batch=$2 threshold=$3 rep=$4 n=$5
    shift 5
    local stream=${RUN_STREAM:-BENCH}
    local c=${label}_b${batch}_r${rep}
    local d=$WORK/runs/$c
    mkdir -p "$d"
    jethost_conf "$d/jethost.conf" "$stream" "$c" "${RUN_BATCH:-$batch}" "$threshold" "$@"
    local t0
    t0=$(now_ns)
    JETHOST_LOG_LEVEL=warning "$JH" run -c "$d/jethost.conf" 2>"$d/jethost.log" &
    CHILD=$!
    RAWLOOP_POLL_MS=${POLL:-$FLOOR_POLL_MS} "$RAW" floor "$URL" "$stream" "$c" "$n" "$t0" "$(floor_timeout "$n")" \
        >"$d/floor.out" 2>"$d/floor.err"
    local frc=$?
    local rss cpu
    rss=$(awk '/^VmHWM:/{print $2}' "/proc/$CHILD/status" 2>/dev/null)
    # user + system CPU of the whole process (all threads) over its run, per message
    cpu=$(awk -v t="$CLK_TCK" -v n="$n" '{printf "%.0f", ($14 + $15) / t * 1e9 / n}' "/proc/$CHILD/stat" 2>/dev/null)
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD"
    local jrc=$?
    CHILD=""
    "$RAW" del "$URL" "$stream" "$c" >/dev/null 2>&1
    if [ "$frc" -ne 0 ] || [ "$jrc" -ne 0 ]; then
        say "$c: FAILED (floor rc $frc, jethost rc $jrc); log: $d/jethost.log"
        tail -5 "$d/jethost.log" >&2
        echo "$label $batch $rep FAIL ${rss:--} - -" >>"$RESULTS"
        return 1
    fi
    local rate total
    rate=$(field rate "$d/floor.out")
    total=$(field rate_total "$d/floor.out")
    echo "$label $batch $rep $rate ${rss:--} $total ${cpu:--}" >>"$RESULTS"
    say "$(printf '%-18s batch %3s rep %s: %8s msgs/s  rss %s kB  cpu %s ns/msg' "$label" "$batch" "$rep" "$rate" "${rss:--}" "${cpu:--}")"
}

# run_client LABEL BATCH REP cmd...  (the command consumes N from BENCH with
# consumer @C@ and exits; $RUN_STREAM and $RUN_N override BENCH and N)
run_client() {
    local label=$1 batch=$2 rep=$3
    shift 3
    local stream=${RUN_STREAM:-BENCH} n=${RUN_N:-$N}
    local c=${label}_b${batch}_r${rep}
    local d=$WORK/runs/$c
    mkdir -p "$d"
    local args=("${@//@C@/$c}")
    local t0
    t0=$(now_ns)
    "${args[@]}" >"$d/client.out" 2>"$d/client.err" &
    CHILD=$!
    RAWLOOP_POLL_MS=${POLL:-$FLOOR_POLL_MS} "$RAW" floor "$URL" "$stream" "$c" "$n" "$t0" "$(floor_timeout "$n")" \
        >"$d/floor.out" 2>"$d/floor.err"
    local frc=$?
    wait "$CHILD"
    local crc=$?
    CHILD=""
    "$RAW" del "$URL" "$stream" "$c" >/dev/null 2>&1
    local rss cpu
    rss=$(field rss_kb "$d/client.out")
    [ -z "$rss" ] && [ -s "$d/rss" ] && rss=$(cat "$d/rss")
    cpu=$(field cpu_ms "$d/client.out")
    [ -n "$cpu" ] && cpu=$(awk -v c="$cpu" -v n="$n" 'BEGIN {printf "%.0f", c * 1e6 / n}')
    if [ "$frc" -ne 0 ] || [ "$crc" -ne 0 ]; then
        say "$c: FAILED (floor rc $frc, client rc $crc)"
        tail -5 "$d/client.err" >&2
        echo "$label $batch $rep FAIL ${rss:--} - -" >>"$RESULTS"
        return 1
    fi
    local rate total own
    rate=$(field rate "$d/floor.out")
    total=$(field rate_total "$d/floor.out")
    # the client's own timing (first pull to last ack), poller-free
    own=$(field rate "$d/client.out")
    echo "$label $batch $rep $rate ${rss:--} $total ${cpu:--} ${own:--}" >>"$RESULTS"
    say "$(printf '%-18s batch %3s rep %s: %8s msgs/s  rss %s kB  cpu %s ns/msg  own %s' "$label" "$batch" "$rep" "$rate" \
        "${rss:--}" "${cpu:--}" "${own:--}")"
}

# run_anchor LABEL BATCH REP [floor]: natsbench pull (SendAsap, as every
# client here connects) on BENCH; with "floor", timed by the floor poller
# too, else alone: no poller, only its own timing.
run_anchor() {
    local label=$1 batch=$2 rep=$3 c=${1}_b${2}_r${3}
    local d=$WORK/runs/$c timecmd=()
    mkdir -p "$d"
    [ -x /usr/bin/time ] && timecmd=(/usr/bin/time -f %M -o "$d/rss")
    if [ "${4:-}" = floor ]; then
        run_client "$label" "$batch" "$rep" env NATSBENCH_SENDASAP=1 "${timecmd[@]}" \
            "$NATSBENCH" "$URL" pull BENCH @C@ "$N" "$batch" ack
        return
    fi
    if ! env NATSBENCH_SENDASAP=1 "${timecmd[@]}" "$NATSBENCH" "$URL" pull BENCH "$c" "$N" "$batch" ack \
        >"$d/client.out" 2>"$d/client.err"; then
        say "$c: FAILED"; tail -5 "$d/client.err" >&2
        echo "$label $batch $rep FAIL - - - -" >>"$RESULTS"
        return 1
    fi
    local own
    own=$(field rate "$d/client.out")
    echo "$label $batch $rep $own $(cat "$d/rss" 2>/dev/null || echo -) $(field rate_floor "$d/client.out") - $own" >>"$RESULTS"
    say "$(printf '%-18s batch %3s rep %s: %8s msgs/s (own timing, no poller)' "$label" "$batch" "$rep" "$own")"
}

run_node() {
    local batch=$1 rep=$2 c=nodejs_b${1}_r${2}
    local timecmd=()
    mkdir -p "$WORK/runs/$c"
    [ -x /usr/bin/time ] && timecmd=(/usr/bin/time -f %M -o "$WORK/runs/$c/rss")
    run_client nodejs "$batch" "$rep" env NODE_PATH="$NODE_MODULES" "${timecmd[@]}" \
        node "$ANCHORS_DIR/consume.js" "$URL" BENCH @C@ "$N" "$batch" ack
}

# into_target TARGET SUBJECTS COUNT LABEL BATCH REP cmd...: one run that
# republishes COUNT messages into stream TARGET, the stream re-created first
# so every run starts from the same empty stream and duplicate window;
# afterwards it must hold exactly COUNT messages (one per message: nothing
# lost, nothing doubled), or the run does not count.
into_target() {
    local target=$1 subjects=$2 count=$3 label=$4 batch=$5 rep=$6 rc
    shift 6
    local c=${label}_b${batch}_r${rep}
    "$RAW" dlq "$URL" "$target" "$subjects" >/dev/null 2>"$WORK/target.err" ||
        { cat "$WORK/target.err" >&2; say "$c: could not create stream $target"; echo "$label $batch $rep FAIL - - -" >>"$RESULTS"; return 1; }
    "$@"
    rc=$?
    [ "$rc" -eq 0 ] || return $rc
    local records
    records=$("$RAW" msgs "$URL" "$target" 2>/dev/null | sed -n 's/.* msgs=\([0-9]*\).*/\1/p')
    if [ "$records" != "$count" ]; then
        say "$c: stream $target holds ${records:-?} messages, not $count"
        # the run does not count: its rate line goes, a FAIL line takes its place
        sed -i "/^$label $batch $rep /d" "$RESULTS"
        echo "$label $batch $rep FAIL - - -" >>"$RESULTS"
        return 1
    fi
}

# run_failure LABEL BATCH REP: one failure-path run on stream FAIL (N_FAIL
# messages) into the DLQ stream.
run_failure() {
    local label=$1 batch=$2 rep=$3
    if [ "$label" = jethost_fail ]; then
        RUN_STREAM=FAIL into_target "$DLQ_STREAM" "$DLQ_SUBJECTS" "$N_FAIL" "$label" "$batch" "$rep" \
            run_jethost jethost_fail "$batch" 0 "$rep" "$N_FAIL" "option.verdict = reject"
    else
        RUN_STREAM=FAIL RUN_N=$N_FAIL into_target "$DLQ_STREAM" "$DLQ_SUBJECTS" "$N_FAIL" "$label" "$batch" "$rep" \
            run_client capture "$batch" "$rep" "$RAW" capture "$URL" FAIL @C@ "$N_FAIL" "$batch" "$DLQ_SUBJECT"
    fi
}

# run_forward LABEL BATCH REP: one forwarding run, stream ORDERS (N_FWD
# messages) into stream FWD.
run_forward() {
    local label=$1 batch=$2 rep=$3
    if [ "$label" = jethost_fwd ]; then
        RUN_STREAM=ORDERS RUN_PLUGIN=$WORK/plugins/forward.so \
            into_target "$FWD_STREAM" "$FWD_SUBJECTS" "$N_FWD" "$label" "$batch" "$rep" \
            run_jethost jethost_fwd "$batch" 0 "$rep" "$N_FWD" "option.subject = $FWD_TEMPLATE"
    else
        RUN_STREAM=ORDERS RUN_N=$N_FWD into_target "$FWD_STREAM" "$FWD_SUBJECTS" "$N_FWD" "$label" "$batch" "$rep" \
            run_client fwd_raw "$batch" "$rep" "$RAW" forward "$URL" ORDERS @C@ "$N_FWD" "$batch" "$FWD_SUBJECT"
    fi
}

threshold_for() { case $1 in 10) echo 5 ;; 100) echo 50 ;; *) echo 0 ;; esac; }

# One case of one batch, by name.
run_case() {
    local name=$1 batch=$2 rep=$3
    case $name in
        jethost) run_jethost jethost "$batch" 0 "$rep" "$N" ;;
        jethost_thr) run_jethost jethost_thr "$batch" "$(threshold_for "$batch")" "$rep" "$N" ;;
        fetch) run_client fetch "$batch" "$rep" "$RAW" fetch "$URL" BENCH @C@ "$N" "$batch" ;;
        anchor) run_anchor anchor "$batch" "$rep" floor ;;
        m_alone) run_anchor m_alone "$batch" "$rep" ;;
        m_anchor_p5) POLL=5 run_anchor m_anchor_p5 "$batch" "$rep" floor ;;
        m_anchor_rare) run_anchor m_anchor_rare "$batch" "$rep" floor ;;
        m_jh_p5) POLL=5 run_jethost m_jh_p5 "$batch" 0 "$rep" "$N" ;;
        m_jh_rare) run_jethost m_jh_rare "$batch" 0 "$rep" "$N" ;;
        # workers: the batch column carries the worker count
        wrk_jh) RUN_STREAM=WRK RUN_BATCH=$WRK_BATCH run_jethost wrk_jh "$batch" 0 "$rep" "$((batch * WRK_PER))" \
            "workers = $batch" "option.sleep = 1ms" ;;
        wrk_raw) RUN_STREAM=WRK RUN_N=$((batch * WRK_PER)) run_client wrk_raw "$batch" "$rep" \
            "$RAW" workers "$URL" WRK @C@ "$((batch * WRK_PER))" "$WRK_BATCH" "$batch" 1000 ;;
        # payload: the batch column carries the size; PAY_COUNT is set per size
        pay_jh) RUN_STREAM=PAY RUN_BATCH=$PAY_BATCH run_jethost pay_jh "$batch" 0 "$rep" "$PAY_COUNT" ;;
        pay_fetch) RUN_STREAM=PAY RUN_N=$PAY_COUNT run_client pay_fetch "$batch" "$rep" \
            "$RAW" fetch "$URL" PAY @C@ "$PAY_COUNT" "$PAY_BATCH" ;;
        pay_raw) RUN_STREAM=PAY RUN_N=$PAY_COUNT run_client pay_raw "$batch" "$rep" \
            "$RAW" raw "$URL" PAY @C@ "$PAY_COUNT" "$PAY_BATCH" ;;
        raw) run_client raw "$batch" "$rep" "$RAW" raw "$URL" BENCH @C@ "$N" "$batch" ;;
        # what the server can deliver: AckNone, no acks, no handler
        ceiling) run_client ceiling "$batch" "$rep" "$RAW" ceiling "$URL" BENCH @C@ "$N" "$batch" ;;
        jethost_fail) run_failure jethost_fail "$batch" "$rep" ;;
        capture) run_failure capture "$batch" "$rep" ;;
        jethost_fwd) run_forward jethost_fwd "$batch" "$rep" ;;
        # retry: every message fails once (ledger written, delayed NAK), then is acked
        retry_jh) RUN_STREAM=RETRY run_jethost retry_jh "$batch" 0 "$rep" "$N_RETRY" "option.verdict = retry-once" \
            "rungs = ${RETRY_RUNG_MS}ms" ;;
        retry_raw) RUN_STREAM=RETRY RUN_N=$N_RETRY run_client retry_raw "$batch" "$rep" \
            "$RAW" retry "$URL" RETRY @C@ "$N_RETRY" "$batch" "$RETRY_BUCKET" "$RETRY_RUNG_MS" ;;
        # the batch sink: an fdatasync a message, or a batch
        sink_jh1) RUN_STREAM=SINK run_jethost sink_jh1 "$batch" 0 "$rep" "$N_SINK" \
            "option.sink = $WORK/sink_jh1_b${batch}_r${rep}.out" ;;
        sink_jhb) RUN_STREAM=SINK run_jethost sink_jhb "$batch" 0 "$rep" "$N_SINK" "batch_max = $batch" \
            "option.sink = $WORK/sink_jhb_b${batch}_r${rep}.out" ;;
        sink_raw) RUN_STREAM=SINK RUN_N=$N_SINK run_client sink_raw "$batch" "$rep" \
            "$RAW" sink "$URL" SINK @C@ "$N_SINK" "$batch" "$WORK/sink_raw_b${batch}_r${rep}.out" 0 ;;
        # pending deliveries: simulated I/O in flight, or one message at a time
        async_jh) RUN_STREAM=ASYNC run_jethost async_jh "$batch" 0 "$rep" "$N_ASYNC" \
            "max_in_flight = $ASYNC_INFLIGHT" "option.async = ${ASYNC_MS}ms" ;;
        async_raw) RUN_STREAM=ASYNC RUN_N=$N_ASYNC run_client async_raw "$batch" "$rep" \
            "$RAW" async "$URL" ASYNC @C@ "$N_ASYNC" "$batch" "$ASYNC_INFLIGHT" "$ASYNC_MS" ;;
        async_sync) RUN_STREAM=ASYNC run_jethost async_sync "$batch" 0 "$rep" "$N_ASYNC_SYNC" \
            "option.sleep = ${ASYNC_MS}ms" ;;
        # the capture curve: the batch column carries the worker count
        capw_jh) RUN_STREAM=FAIL RUN_BATCH=$CAPW_BATCH into_target "$DLQ_STREAM" "$DLQ_SUBJECTS" "$N_FAIL" capw_jh "$batch" \
            "$rep" run_jethost capw_jh "$batch" 0 "$rep" "$N_FAIL" "option.verdict = reject" "workers = $batch" ;;
        capw_raw) RUN_STREAM=FAIL RUN_N=$N_FAIL into_target "$DLQ_STREAM" "$DLQ_SUBJECTS" "$N_FAIL" capw_raw "$batch" \
            "$rep" run_client capw_raw "$batch" "$rep" "$RAW" capture "$URL" FAIL @C@ "$N_FAIL" "$CAPW_BATCH" \
            "$DLQ_SUBJECT" "$batch" ;;
        # The subject's third token is the key (lanes.k.<i>).  The lanes
        # case is the keyless one plus `key`: the same workers, the same
        # batch, so the ratio of the two is what lanes cost.
        lanes_key) RUN_STREAM=LANES run_jethost lanes_key "$batch" 0 "$rep" "$LANES_N" \
            "workers = $LANES_WORKERS" "key = subject:3" ;;
        lanes_nokey) RUN_STREAM=LANES run_jethost lanes_nokey "$batch" 0 "$rep" "$LANES_N" \
            "workers = $LANES_WORKERS" ;;
        lanes_fetch) RUN_STREAM=LANES RUN_N=$LANES_N run_client lanes_fetch "$batch" "$rep" \
            "$RAW" fetch "$URL" LANES @C@ "$LANES_N" "$batch" ;;
        lanes_raw) RUN_STREAM=LANES RUN_N=$LANES_N run_client lanes_raw "$batch" "$rep" \
            "$RAW" raw "$URL" LANES @C@ "$LANES_N" "$batch" ;;
        fwd_raw) run_forward fwd_raw "$batch" "$rep" ;;
        nodejs)
            # consume.js runs from its own directory (never copied here)
            local here=$PWD
            cd "$ANCHORS_DIR" && run_node "$batch" "$rep"
            local rc=$?
            cd "$here" || return 1
            return $rc
            ;;
    esac
}

# --- ordered and KV readers -------------------------------------------------------
# One reader a run: jethost with one `kind = ordered` or `kind = kv` binding
# and the noop plugin counting stream seqs 1..EXPECT (option.expect), or one
# of rawloop's nats.c readers (ordered, kvwatch); both count with
# tests/bench/tally.h.  Their consumers ack nothing, so there is no ack floor
# to poll: the readers time themselves, and each run's RESULT line lands in
# $d/result (the plugin's report file, or rawloop's stdout).

# has_line FILE TEXT: FILE has a line containing TEXT (builtins only: the
# polling must not take CPU from the run it watches).
has_line() {
    local l
    [ -f "$1" ] || return 1
    while IFS= read -r l || [ -n "$l" ]; do [[ $l == *"$2"* ]] && return 0; done <"$1"
    return 1
}

# wait_line FILE TEXT TIMEOUT_S PID: until FILE has TEXT; 1 after TIMEOUT_S,
# or when PID ended without writing it.
wait_line() {
    local end=$((SECONDS + $3))
    until has_line "$1" "$2"; do
        kill -0 "$4" 2>/dev/null || { has_line "$1" "$2"; return; }
        [ "$SECONDS" -ge "$end" ] && return 1
        sleep 0.05
    done
}

# fieldof KEY LINE
fieldof() { [[ " $2 " =~ \ $1=([^ ]*)\  ]] && printf '%s' "${BASH_REMATCH[1]}"; }

# run_reader LABEL BATCH REP EXPECT MARK TIMEOUT_S jethost BINDING-LINES...
# run_reader LABEL BATCH REP EXPECT MARK TIMEOUT_S rawloop COMMAND...
# With FEED (an array) set, the feed runs once the reader is ready (its
# consumer exists; with MARK > 0, once seqs 1..MARK are handled): the
# messages published while it reads.  Once 1..EXPECT are handled, or after
# TIMEOUT_S, jethost is stopped (after LINGER, as rawloop reads on for as
# long to count late duplicates); rawloop stops itself.  Appends to RESULTS:
#   label batch rep rate rss_kb spawn_rate cpu_ns_per_msg handled dups missing
#   backwards consumers dropped slow_errors max_pending mark_ms mark_rate
#   upd_rate feed_rate
run_reader() {
    local label=$1 batch=$2 rep=$3 expect=$4 mark=$5 timeout=$6 side=$7
    shift 7
    local c=${label}_b${batch}_r${rep}
    local d=$WORK/runs/$c
    mkdir -p "$d"
    local result=$d/result cue_file cue pid t0 rss="" cpu_ms="" rc
    t0=$(now_ns)
    if [ "$side" = jethost ]; then
        {
            host_conf "$c"
            printf '%s\n' "$@" "option.expect = $expect" "option.mark = $mark" "option.report = $result"
        } >"$d/jethost.conf"
        JETHOST_LOG_LEVEL=info "$JH" run -c "$d/jethost.conf" 2>"$d/jethost.log" &
        cue_file=$d/jethost.log cue=event=ordered-consumer
    else
        "$@" >"$result" 2>"$d/client.err" &
        cue_file=$result cue=READY
    fi
    pid=$!
    CHILD=$pid
    [ "$mark" -gt 0 ] && cue_file=$result cue=mark=1
    local ok=1
    if [ "${#FEED[@]}" -gt 0 ]; then
        if wait_line "$cue_file" "$cue" "$timeout" "$pid"; then
            "${FEED[@]}" >"$d/feed.out" 2>"$d/feed.err" || { ok=0; say "$c: the feed failed"; cat "$d/feed.err" >&2; }
        else
            ok=0
            say "$c: the reader never got ready ($cue)"
        fi
    fi
    if [ "$side" = jethost ]; then
        wait_line "$result" done=1 "$timeout" "$pid" && sleep "$LINGER"
        rss=$(awk '/^VmHWM:/{print $2}' "/proc/$pid/status" 2>/dev/null)
        cpu_ms=$(awk -v t="$CLK_TCK" '{printf "%.0f", ($14 + $15) * 1000 / t}' "/proc/$pid/stat" 2>/dev/null)
        kill -TERM "$pid" 2>/dev/null
        wait "$pid"
        rc=$?
    else
        wait_line "$result" RESULT "$((timeout + 30))" "$pid" || kill -TERM "$pid" 2>/dev/null
        wait "$pid"
        rc=$?
    fi
    CHILD=""
    local line="" l
    if [ -f "$result" ]; then
        while IFS= read -r l; do [[ $l == RESULT* ]] && line=$l; done <"$result"
    fi
    if [ "$rc" -ne 0 ] || [ -z "$line" ] || [ "$ok" != 1 ]; then
        say "$c: FAILED (reader rc $rc); logs in $d"
        tail -5 "$d"/*.log "$d"/*.err 2>/dev/null >&2
        echo "$label $batch $rep FAIL - - -" >>"$RESULTS"
        return 1
    fi
    [ -z "$rss" ] && rss=$(fieldof rss_kb "$line")
    [ -z "$cpu_ms" ] && cpu_ms=$(fieldof cpu_ms "$line")
    local handled dups missing backwards consumers done_ns mark_ns
    handled=$(fieldof handled "$line") dups=$(fieldof dups "$line") missing=$(fieldof missing "$line")
    backwards=$(fieldof backwards "$line") consumers=$(fieldof consumers "$line")
    done_ns=$(fieldof done_ns "$line") mark_ns=$(fieldof mark_ns "$line")
    # kvStore_WatchAll does not show its consumer: nothing counted there
    [ "$consumers" = 0 ] && consumers=-
    local cpu spawn_rate mark_ms
    cpu=$(awk -v c="$cpu_ms" -v n="$handled" 'BEGIN {if (c ~ /^[0-9]+$/ && n > 0) printf "%.0f", c * 1e6 / n; else printf "-"}')
    spawn_rate=$(awk -v n="$expect" -v a="$t0" -v b="$done_ns" 'BEGIN {if (b > a) printf "%.0f", n * 1e9 / (b - a); else printf "-"}')
    mark_ms=$(awk -v a="$t0" -v b="$mark_ns" 'BEGIN {if (b > a) printf "%.0f", (b - a) / 1e6; else printf "-"}')
    local feed_rate=-
    [ -s "$d/feed.out" ] && feed_rate=$(field rate "$d/feed.out")
    echo "$label $batch $rep $(fieldof rate "$line") ${rss:--} $spawn_rate $cpu $handled $dups $missing $backwards" \
        "$consumers $(fieldof dropped "$line" || echo -) $(fieldof slow_errors "$line" || echo -)" \
        "$(fieldof max_pending "$line" || echo -) $mark_ms $(fieldof mark_rate "$line") $(fieldof upd_rate "$line")" \
        "${feed_rate:--}" >>"$RESULTS"
    say "$(printf '%-12s batch %3s rep %s: %8s msgs/s  handled %s dups %s missing %s  rss %s kB' "$label" "$batch" \
        "$rep" "$(fieldof rate "$line")" "$handled" "$dups" "$missing" "${rss:--}")"
    # jethost must hand over every message once and in order; the nats.c
    # readers' losses are what the table reports, not a failure of the run
    if [ "$side" = jethost ] && { [ "$missing" != 0 ] || [ "$dups" != 0 ] || [ "$backwards" != 0 ]; }; then
        say "$c: jethost handled 1..$expect with $missing missing, $dups twice, $backwards out of order"
        return 1
    fi
}
LINGER=0.2

# slow_timeout N SLEEP_US: a reader's time limit: its messages at the slow
# handler's pace (nanosleep overshoots by tens of microseconds), doubled, plus
# start-up.
slow_timeout() { echo $((30 + $1 * ($2 + 500) * 2 / 1000000)); }

# ordered_reader LABEL BATCH REP STREAM SUBJECT N SLEEP_US LIMIT [LINES...]:
# stream seqs 1..N of STREAM read in order, SLEEP_US a message in the
# handler: by rawloop ordered when LABEL names a nats.c case (*_nc*; its
# pending-messages limit LIMIT, 0 for the library's), else by jethost with a
# `kind = ordered` binding at BATCH (LINES added to it).
ordered_reader() {
    local label=$1 batch=$2 rep=$3 stream=$4 subject=$5 n=$6 sleep_us=$7 limit=$8 t
    shift 8
    t=$(slow_timeout "$n" "$sleep_us")
    if [[ $label == *_nc* ]]; then
        run_reader "$label" 0 "$rep" "$n" 0 "$t" rawloop env RAWLOOP_PENDING_MSGS="$limit" \
            "$RAW" ordered "$URL" "$stream" "$subject" "$n" "$sleep_us"
    else
        run_reader "$label" "$batch" "$rep" "$n" 0 "$t" jethost "stream = $stream" "kind = ordered" "deliver = all" \
            "batch = $batch" "expires = 30s" "idle_heartbeat = 5s" "option.sleep_us = $sleep_us" "$@"
    fi
}

# slow_ordered LABEL BATCH REP N SLEEP_US LIMIT: an ordered reader of an empty
# stream SLOW, N messages published at full speed once it is ready.
slow_ordered() {
    "$RAW" publish "$URL" SLOW slow.x 0 "$SIZE" >/dev/null 2>"$WORK/slow.err" ||
        { cat "$WORK/slow.err" >&2; return 1; }
    FEED=("$RAW" send "$URL" slow.x 0 "$4" "$SIZE")
    ordered_reader "$1" "$2" "$3" SLOW slow.x "$4" "$5" "$6"
}

# kv_reader LABEL BATCH REP BUCKET KEYS UPDATES SLEEP_US: a watch of a fresh
# bucket of KEYS keys, UPDATES published at full speed once their current
# values are handled; by rawloop kvwatch for a nats.c case (*_nc*), else by
# jethost with a `kind = kv` binding at BATCH.
kv_reader() {
    local label=$1 batch=$2 rep=$3 bucket=$4 keys=$5 updates=$6 sleep_us=$7
    local n=$((keys + updates)) t
    t=$(slow_timeout "$n" "$sleep_us")
    kv_fill "$bucket" "$keys" || return 1
    FEED=("$RAW" send "$URL" "\$KV.$bucket.k" "$keys" "$updates" "$SIZE")
    if [[ $label == *_nc* ]]; then
        run_reader "$label" 0 "$rep" "$n" "$keys" "$t" rawloop "$RAW" kvwatch "$URL" "$bucket" "$keys" "$n" "$sleep_us"
    else
        run_reader "$label" "$batch" "$rep" "$n" "$keys" "$t" jethost "kind = kv" "bucket = $bucket" "batch = $batch" \
            "expires = 30s" "idle_heartbeat = 5s" "option.sleep_us = $sleep_us"
    fi
}

# kv_fill BUCKET KEYS: the bucket afresh, each key put once (revisions 1..KEYS)
kv_fill() {
    if ! "$RAW" kvbucket "$URL" "$1" "$KV_HISTORY" >/dev/null 2>"$WORK/kv.err" ||
        ! "$RAW" send "$URL" "\$KV.$1.k" "$2" "$2" "$SIZE" >/dev/null 2>>"$WORK/kv.err"; then
        cat "$WORK/kv.err" >&2
        say "bucket $1 could not be filled"
        return 1
    fi
}

# One ordered or KV case of one repetition, by name.
run_reader_case() {
    local name=$1 rep=$2
    FEED=()
    case $name in
        ord_jh10 | ord_jh100) ordered_reader ord_jh "${name#ord_jh}" "$rep" ORD ord.x "$ORD_N" 0 0 ;;
        ord_ckpt) ordered_reader ord_ckpt 100 "$rep" ORD ord.x "$CKPT_N" 0 0 "checkpoint = kv" ;;
        ord_nc) ordered_reader ord_nc 0 "$rep" ORD ord.x "$ORD_N" 0 0 ;;
        kv_jh10 | kv_jh100) kv_reader kv_jh "${name#kv_jh}" "$rep" KVB "$KV_KEYS" "$KV_UPDATES" 0 ;;
        kv_nc) kv_reader kv_nc 0 "$rep" KVB "$KV_KEYS" "$KV_UPDATES" 0 ;;
        slow_jh) slow_ordered slow_jh 10 "$rep" "$SLOW_N" "$SLOW_SLEEP_US" 0 ;;
        slow_nc) slow_ordered slow_nc 0 "$rep" "$SLOW_N" "$SLOW_SLEEP_US" 0 ;;
        slow_nc_lim) slow_ordered slow_nc_lim 0 "$rep" "$SLOW_N" "$SLOW_SLEEP_US" "$SLOW_LIMIT" ;;
        kvslow_jh) kv_reader kvslow_jh 10 "$rep" KVS "$SLOW_KEYS" "$SLOW_UPDATES" "$SLOW_SLEEP_US" ;;
        kvslow_nc) kv_reader kvslow_nc 0 "$rep" KVS "$SLOW_KEYS" "$SLOW_UPDATES" "$SLOW_SLEEP_US" ;;
        sus_jh) slow_ordered sus_jh 10 "$rep" "$SUS_N" "$SUS_SLEEP_US" 0 ;;
        sus_nc) slow_ordered sus_nc 0 "$rep" "$SUS_N" "$SUS_SLEEP_US" 0 ;;
        kvsus_jh) kv_reader kvsus_jh 10 "$rep" KVL "$SUS_KEYS" "$SUS_N" "$SUS_SLEEP_US" ;;
        kvsus_nc) kv_reader kvsus_nc 0 "$rep" KVL "$SUS_KEYS" "$SUS_N" "$SUS_SLEEP_US" ;;
    esac
}

# --- environment -------------------------------------------------------------
ENV_TXT=$WORK/env.txt
{
    echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "machine:  $(nproc) CPU, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(uname -sr)"
    echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at start)"
    echo "versions: $("$NATS_SERVER" --version 2>&1 | head -1), libnats $(pkg-config --modversion libnats 2>/dev/null || echo '?'), $("$JH" version)"
    if [ -n "$NODE_MODULES" ]; then
        echo "nats.js:  $(node --version) nats $(cd "$NODE_MODULES/.." && node -e 'console.log(require("nats/package.json").version)') ($ANCHORS_DIR/consume.js)"
    else
        echo "nats.js:  not installed (npm install nats@2 in /tmp/natsjs, or set NATSJS_DIR): no peer column"
    fi
    if want throughput || want rss || want method; then
        echo "workload: file stream, N=$N x $SIZE B, fresh durable per run, REPS=$REPS, server $URL"
    else
        echo "workload: REPS=$REPS, server $URL"
    fi
    want forward && echo "forward:  stream ORDERS, N_FWD=$N_FWD x $SIZE B, forwarded to $FWD_STREAM ($FWD_SUBJECTS, file, 2 h duplicate window) re-created per run; jethost option.subject = $FWD_TEMPLATE"
    want failure && echo "failure:  stream FAIL, N_FAIL=$N_FAIL x $SIZE B, every message REJECTed; DLQ stream $DLQ_STREAM ($DLQ_SUBJECTS, file, 2 h duplicate window) re-created per run"
    want ordered && echo "ordered:  stream ORD, ORD_N=$ORD_N x $SIZE B (file), checkpoint runs CKPT_N=$CKPT_N; slow: SLOW_N=$SLOW_N, SLOW_SLEEP_US=$SLOW_SLEEP_US, SLOW_LIMIT=$SLOW_LIMIT"
    want sustained && echo "sustain:  SUS_N=$SUS_N, SUS_KEYS=$SUS_KEYS, SUS_SLEEP_US=$SUS_SLEEP_US, SUS_REPS=$SUS_REPS"
    want lanes && echo "lanes:    stream LANES, LANES_N=$LANES_N x $SIZE B on lanes.k.<i % $LANES_KEYS>, LANES_WORKERS=$LANES_WORKERS, LANES_BATCH=$LANES_BATCH"
    want kv && echo "kv:       KV_KEYS=$KV_KEYS, KV_UPDATES=$KV_UPDATES; slow: SLOW_KEYS=$SLOW_KEYS, SLOW_UPDATES=$SLOW_UPDATES, SLOW_SLEEP_US=$SLOW_SLEEP_US"
    echo "method:   floor polled every 5 ms until it first moves, then every FLOOR_POLL_MS=$FLOOR_POLL_MS ms (last step interpolated)"
    if [ -n "$NATSBENCH" ]; then echo "anchor:   $ANCHORS_DIR/natsbench.c (pull ... ack, NATSBENCH_SENDASAP=1), built in the work directory"
    else echo "anchor:   natsbench.c not found or not built: no anchor column"; fi
    want workers && echo "workers:  stream WRK, WRK_PER=$WRK_PER messages a worker, workers $WRK_COUNTS, WRK_BATCH=$WRK_BATCH, 1 ms handler"
    want bindings && echo "bindings: stream BIND, BIND_TOTAL=$BIND_TOTAL messages split over $BIND_COUNTS bindings, BIND_BATCH=$BIND_BATCH; rate: acks counted on the wire"
    want async && echo "async:    stream ASYNC, N_ASYNC=$N_ASYNC x $SIZE B, $ASYNC_MS ms of simulated I/O each, $ASYNC_INFLIGHT in flight (one at a time: $N_ASYNC_SYNC)"
    want sink && echo "sink:     stream SINK, N_SINK=$N_SINK x $SIZE B, appended to a file in $WORK and fdatasync'd a message or a batch"
    want retry && echo "retry:    stream RETRY, N_RETRY=$N_RETRY x $SIZE B, each failing once: jethost rungs = ${RETRY_RUNG_MS}ms (ledger on), rawloop retry NAK delay ${RETRY_RUNG_MS} ms, bucket $RETRY_BUCKET"
    want capture && echo "capture:  stream FAIL, N_FAIL=$N_FAIL x $SIZE B, every message REJECTed, workers $CAPW_COUNTS, CAPW_BATCH=$CAPW_BATCH; $DLQ_STREAM re-created per run"
    want hosts && echo "hosts:    stream HOSTS, N_HOSTS=$N_HOSTS x $SIZE B, processes $HOSTS_PROCS on one durable consumer"
    want payload && echo "payload:  stream PAY, sizes $PAY_SIZES, min(PAY_MAX_N=$PAY_MAX_N, PAY_MB=$PAY_MB MiB / size) messages, PAY_BATCH=$PAY_BATCH"
    echo "cases:    $CASES"
} >"$ENV_TXT"
cat "$ENV_TXT" >&2

# --- fill ----------------------------------------------------------------------
# fill STREAM SUBJECT COUNT OUTFILE
fill() {
    say "filling stream $1 with $3 messages"
    local ok=0
    for _ in 1 2 3 4 5; do
        if "$RAW" publish "$URL" "$1" "$2" "$3" "$SIZE" >"$4" 2>"$WORK/fill.err"; then ok=1; break; fi
        sleep 0.5
    done
    [ "$ok" = 1 ] || { cat "$WORK/fill.err" >&2; die "filling stream $1 failed"; }
}
FILL_RATE=-
if want throughput || want rss || want method; then
    fill BENCH bench.x "$N" "$WORK/fill.out"
    FILL_RATE=$(field rate "$WORK/fill.out")
fi
{ want failure || want capture; } && fill FAIL fail.x "$N_FAIL" "$WORK/fill-fail.out"
want retry && fill RETRY retry.x "$N_RETRY" "$WORK/fill-retry.out"
want sink && fill SINK sink.x "$N_SINK" "$WORK/fill-sink.out"
want async && fill ASYNC async.x "$N_ASYNC" "$WORK/fill-async.out"
want hosts && fill HOSTS hosts.x "$N_HOSTS" "$WORK/fill-hosts.out"
if want retry; then
    "$RAW" kvbucket "$URL" "$RETRY_BUCKET" 1 >/dev/null 2>"$WORK/kv.err" || { cat "$WORK/kv.err" >&2; die "bucket $RETRY_BUCKET"; }
fi
want forward && fill ORDERS orders.new "$N_FWD" "$WORK/fill-orders.out"
want ordered && fill ORD ord.x "$ORD_N" "$WORK/fill-ord.out"
# The lanes stream: made empty, then filled with keyed subjects, message i
# on lanes.k.<i % LANES_KEYS> (round robin: every key has a message in each
# run of LANES_KEYS, as many lanes busy as there can be).
if want lanes; then
    fill LANES 'lanes.>' 0 "$WORK/fill-lanes.out"
    say "filling stream LANES with $LANES_N messages over $LANES_KEYS keys"
    "$RAW" send "$URL" lanes.k "$LANES_KEYS" "$LANES_N" "$SIZE" >"$WORK/fill-lanes-send.out" 2>"$WORK/fill.err" ||
        { cat "$WORK/fill.err" >&2; die "filling stream LANES failed"; }
    lanes_msgs=$("$RAW" msgs "$URL" LANES 2>/dev/null | sed -n 's/.* msgs=\([0-9]*\).*/\1/p')
    [ "$lanes_msgs" = "$LANES_N" ] || die "stream LANES holds ${lanes_msgs:-?} messages, not $LANES_N"
fi

if want workers; then
    wmax=0
    for w in $WRK_COUNTS; do [ "$w" -gt "$wmax" ] && wmax=$w; done
    fill WRK wrk.x "$((wmax * WRK_PER))" "$WORK/fill-wrk.out"
fi

# --- the method: the anchor alone, and under the 5 ms and the rare poller -------
fails=0
want method && for rep in $(seq "$REPS"); do
    for batch in $METHOD_BATCHES; do
        cases=(m_alone m_anchor_p5 m_anchor_rare m_jh_p5 m_jh_rare)
        k=${#cases[@]}
        for i in $(seq 0 $((k - 1))); do
            run_case "${cases[$(((i + rep - 1) % k))]}" "$batch" "$rep" || fails=$((fails + 1))
        done
    done
done

# --- throughput, alternating -----------------------------------------------------
want throughput && for rep in $(seq "$REPS"); do
    for batch in $BATCHES; do
        cases=(jethost)
        [ "$(threshold_for "$batch")" -gt 0 ] && cases+=(jethost_thr)
        cases+=(fetch raw)
        [ -n "$NATSBENCH" ] && cases+=(anchor)
        [ -n "$NODE_MODULES" ] && cases+=(nodejs)
        # rotate the order each repetition, so no case always runs first
        k=${#cases[@]}
        for i in $(seq 0 $((k - 1))); do
            run_case "${cases[$(((i + rep - 1) % k))]}" "$batch" "$rep" || fails=$((fails + 1))
        done
    done
    run_case ceiling "$CEILING_BATCH" "$rep" || fails=$((fails + 1))
done

# --- workers: a 1 ms handler on 1..8 workers -----------------------------------------
want workers && for rep in $(seq "$REPS"); do
    for w in $WRK_COUNTS; do
        if [ $((rep % 2)) = 1 ]; then cases=(wrk_jh wrk_raw); else cases=(wrk_raw wrk_jh); fi
        for c in "${cases[@]}"; do run_case "$c" "$w" "$rep" || fails=$((fails + 1)); done
    done
done

# --- payload sizes: one stream PAY a size, refilled ----------------------------------
pay_count() { local c=$((PAY_MB * 1048576 / $1)); [ "$c" -gt "$PAY_MAX_N" ] && c=$PAY_MAX_N; echo "$c"; }
want payload && for size in $PAY_SIZES; do
    PAY_COUNT=$(pay_count "$size")
    say "filling stream PAY with $PAY_COUNT messages of $size B"
    "$RAW" publish "$URL" PAY pay.x "$PAY_COUNT" "$size" >"$WORK/fill-pay.out" 2>"$WORK/fill.err" ||
        { cat "$WORK/fill.err" >&2; die "filling stream PAY failed"; }
    for rep in $(seq "$REPS"); do
        cases=(pay_jh pay_fetch pay_raw)
        for i in 0 1 2; do
            run_case "${cases[$(((i + rep - 1) % 3))]}" "$size" "$rep" || fails=$((fails + 1))
        done
    done
done

# --- bindings: K bindings in one host, acks counted on the wire ----------------------
# acks_wait APID PID: the ack counter's status, once it has counted them all;
# if PID (the client) ends first, a failure then (the counter would wait
# out its timeout for acks that will not come), after 3 s for the last acks.
acks_wait() {
    while kill -0 "$1" 2>/dev/null; do
        if ! kill -0 "$2" 2>/dev/null; then
            sleep 3
            kill -TERM "$1" 2>/dev/null
            break
        fi
        sleep 0.1
    done
    wait "$1"
}

# run_bindings LABEL K REP: jethost with K bindings (LABEL bind_jh) or rawloop
# multi with K loops (bind_raw), each of the K consumers taking all of stream
# BIND ($BIND_EACH messages); timed by `rawloop acks` until K x BIND_EACH acks.
run_bindings() {
    local label=$1 k=$2 rep=$3 c=${1}_b${2}_r${3} total=$(($2 * BIND_EACH)) i
    local d=$WORK/runs/$c
    mkdir -p "$d"
    "$RAW" acks "$URL" BIND "$total" "$(floor_timeout "$total")" >"$d/acks.out" 2>"$d/acks.err" &
    local apid=$!
    wait_line "$d/acks.out" READY 30 "$apid" || { say "$c: the ack counter never got ready"; return 1; }
    local rss="" cpu="" own="" rc
    if [ "$label" = bind_jh ]; then
        {
            printf '[host]\nserver = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n' "$URL" "$WORK/state"
            for i in $(seq 0 $((k - 1))); do
                printf '[binding b%s]\nplugin = %s\nstream = BIND\nconsumer = %s_%s\n' "$i" "$WORK/plugins/noop.so" "$c" "$i"
                printf 'batch = %s\nthreshold = 0\nexpires = 30s\nidle_heartbeat = 5s\n' "$BIND_BATCH"
                printf 'ack_wait = 30s\nmax_ack_pending = 1000\nmax_deliver = -1\n\n'
            done
        } >"$d/jethost.conf"
        JETHOST_LOG_LEVEL=warning "$JH" run -c "$d/jethost.conf" 2>"$d/jethost.log" &
        CHILD=$!
        acks_wait "$apid" "$CHILD"
        rc=$?
        rss=$(awk '/^VmHWM:/{print $2}' "/proc/$CHILD/status" 2>/dev/null)
        cpu=$(awk -v t="$CLK_TCK" -v n="$total" '{printf "%.0f", ($14 + $15) / t * 1e9 / n}' "/proc/$CHILD/stat" 2>/dev/null)
        kill -TERM "$CHILD" 2>/dev/null
        wait "$CHILD" || rc=$((rc ? rc : 1))
        CHILD=""
        for i in $(seq 0 $((k - 1))); do "$RAW" del "$URL" BIND "${c}_$i" >/dev/null 2>&1; done
    else
        local prog=$RAW
        [ "$label" = bind_stack ] && prog=$RAW_STACK
        "$prog" multi "$URL" BIND "$c" "$k" "$BIND_EACH" "$BIND_BATCH" >"$d/client.out" 2>"$d/client.err" &
        CHILD=$!
        acks_wait "$apid" "$CHILD"
        rc=$?
        wait "$CHILD" || rc=$((rc ? rc : 1))
        CHILD=""
        rss=$(field rss_kb "$d/client.out")
        cpu=$(field cpu_ms "$d/client.out")
        [ -n "$cpu" ] && cpu=$(awk -v c="$cpu" -v n="$total" 'BEGIN {printf "%.0f", c * 1e6 / n}')
        own=$(field rate "$d/client.out")
    fi
    if [ "$rc" -ne 0 ]; then
        say "$c: FAILED (rc $rc); logs in $d"
        tail -3 "$d"/*.err "$d"/*.log 2>/dev/null >&2
        echo "$label $k $rep FAIL - - - -" >>"$RESULTS"
        return 1
    fi
    local rate
    rate=$(field rate "$d/acks.out")
    echo "$label $k $rep $rate ${rss:--} - ${cpu:--} ${own:--}" >>"$RESULTS"
    say "$(printf '%-18s bindings %2s rep %s: %8s msgs/s (acks on the wire)  rss %s kB  cpu %s ns/msg' "$label" "$k" "$rep" \
        "$rate" "${rss:--}" "${cpu:--}")"
}
want bindings && for k in $BIND_COUNTS; do
    BIND_EACH=$((BIND_TOTAL / k))
    fill BIND bind.x "$BIND_EACH" "$WORK/fill-bind.out"
    for rep in $(seq "$REPS"); do
        if [ $((rep % 2)) = 1 ]; then cases=(bind_jh bind_raw); else cases=(bind_raw bind_jh); fi
        # One binding's floor: the plain loop carrying jethost's libraries.
        [ "$k" = 1 ] && cases+=(bind_stack)
        for c in "${cases[@]}"; do run_bindings "$c" "$k" "$rep" || fails=$((fails + 1)); done
    done
done

# --- lanes, alternating -------------------------------------------------------------
want lanes && for rep in $(seq "$REPS"); do
    cases=(lanes_key lanes_nokey lanes_fetch lanes_raw)
    k=${#cases[@]}
    for i in $(seq 0 $((k - 1))); do
        run_case "${cases[$(((i + rep - 1) % k))]}" "$LANES_BATCH" "$rep" || fails=$((fails + 1))
    done
done

# --- the failure path and forwarding, alternating ---------------------------------
# pair_reps PART CASE CASE: REPS repetitions at batch 10 and 100, the two
# cases' order rotating from one repetition to the next
pair_reps() {
    local part=$1 rep batch i
    shift
    want "$part" || return 0
    local pair=("$@")
    for rep in $(seq "$REPS"); do
        for batch in $FAIL_BATCHES; do
            for i in 0 1; do
                run_case "${pair[$(((i + rep - 1) % 2))]}" "$batch" "$rep" || fails=$((fails + 1))
            done
        done
    done
}
pair_reps failure jethost_fail capture
pair_reps retry retry_jh retry_raw
# the batch sink: three cases, their order rotating
want sink && for rep in $(seq "$REPS"); do
    for batch in $FAIL_BATCHES; do
        cases=(sink_jhb sink_raw sink_jh1)
        for i in 0 1 2; do
            run_case "${cases[$(((i + rep - 1) % 3))]}" "$batch" "$rep" || fails=$((fails + 1))
            rm -f "$WORK"/sink_*.out
        done
    done
done
# pending deliveries: three cases at batch 100, their order rotating
want async && for rep in $(seq "$REPS"); do
    cases=(async_jh async_raw async_sync)
    for i in 0 1 2; do
        run_case "${cases[$(((i + rep - 1) % 3))]}" 100 "$rep" || fails=$((fails + 1))
    done
done
pair_reps forward jethost_fwd fwd_raw

# --- the capture path as a curve: W workers, alternating ---------------------------
want capture && for rep in $(seq "$REPS"); do
    for w in $CAPW_COUNTS; do
        if [ $((rep % 2)) = 1 ]; then cases=(capw_jh capw_raw); else cases=(capw_raw capw_jh); fi
        for c in "${cases[@]}"; do run_case "$c" "$w" "$rep" || fails=$((fails + 1)); done
    done
done

# --- hosts: K processes on one consumer ----------------------------------------------
# run_hosts SIDE K BATCH REP: K `jethost run` processes with one config (SIDE
# jh), or K `rawloop fetch` processes bound to one consumer made beforehand
# (SIDE raw), on stream HOSTS; timed by the rare floor poller until N_HOSTS.
# Each process still running then has its VmHWM and CPU read from /proc and
# is stopped (SIGTERM); a rawloop that ended by itself reports its own.
# Recorded: label hosts_<side><K>, the larger peak RSS of the processes, the
# CPU of them all per message.
run_hosts() {
    local side=$1 k=$2 batch=$3 rep=$4 label=hosts_$1$2 i p
    local c=${label}_b${batch}_r${rep}
    local d=$WORK/runs/$c
    mkdir -p "$d"
    PROCS=()
    if [ "$side" = raw ]; then
        "$RAW" mkcons "$URL" HOSTS "$c" >/dev/null 2>"$d/mkcons.err" ||
            { say "$c: could not create the consumer"; cat "$d/mkcons.err" >&2; echo "$label $batch $rep FAIL - - -" >>"$RESULTS"; return 1; }
    else
        jethost_conf "$d/jethost.conf" HOSTS "$c" "$batch" 0
    fi
    local t0
    t0=$(now_ns)
    for i in $(seq "$k"); do
        if [ "$side" = raw ]; then
            RAWLOOP_BIND=1 "$RAW" fetch "$URL" HOSTS "$c" "$N_HOSTS" "$batch" >"$d/client.$i.out" 2>"$d/client.$i.err" &
        else
            JETHOST_LOG_LEVEL=warning "$JH" run -c "$d/jethost.conf" 2>"$d/jethost.$i.log" &
        fi
        PROCS+=($!)
    done
    RAWLOOP_POLL_MS=$FLOOR_POLL_MS "$RAW" floor "$URL" HOSTS "$c" "$N_HOSTS" "$t0" "$(floor_timeout "$N_HOSTS")" \
        >"$d/floor.out" 2>"$d/floor.err"
    local frc=$? rc=0 rss=0 cpu_s=0 r u
    i=0
    for p in "${PROCS[@]}"; do
        i=$((i + 1))
        r=$(awk '/^VmHWM:/{print $2}' "/proc/$p/status" 2>/dev/null)
        u=$(awk -v t="$CLK_TCK" '{printf "%.3f", ($14 + $15) / t}' "/proc/$p/stat" 2>/dev/null)
        if [ -n "$r" ] && [ -n "$u" ]; then
            kill -TERM "$p" 2>/dev/null
            wait "$p"
            local prc=$?
            # a rawloop stopped by SIGTERM (143) is how it ends here
            [ "$prc" -eq 0 ] || { [ "$side" = raw ] && [ "$prc" -eq 143 ]; } || rc=$prc
        else
            wait "$p" || rc=$?
            r=$(field rss_kb "$d/client.$i.out")
            u=$(field cpu_ms "$d/client.$i.out")
            [ -n "$u" ] && u=$(awk -v c="$u" 'BEGIN {printf "%.3f", c / 1000}')
        fi
        [ -n "$r" ] && [ "$r" -gt "$rss" ] && rss=$r
        cpu_s=$(awk -v a="$cpu_s" -v b="${u:-0}" 'BEGIN {printf "%.3f", a + b}')
    done
    PROCS=()
    "$RAW" del "$URL" HOSTS "$c" >/dev/null 2>&1
    if [ "$frc" -ne 0 ] || [ "$rc" -ne 0 ]; then
        say "$c: FAILED (floor rc $frc, process rc $rc); logs in $d"
        tail -3 "$d"/*.log "$d"/*.err 2>/dev/null >&2
        echo "$label $batch $rep FAIL ${rss:--} - -" >>"$RESULTS"
        return 1
    fi
    local rate total cpu
    rate=$(field rate "$d/floor.out")
    total=$(field rate_total "$d/floor.out")
    cpu=$(awk -v c="$cpu_s" -v n="$N_HOSTS" 'BEGIN {printf "%.0f", c * 1e9 / n}')
    echo "$label $batch $rep $rate $rss $total $cpu" >>"$RESULTS"
    say "$(printf '%-18s batch %3s rep %s: %8s msgs/s  rss %s kB (largest)  cpu %s ns/msg (all processes)' "$label" \
        "$batch" "$rep" "$rate" "$rss" "$cpu")"
}
want hosts && for rep in $(seq "$REPS"); do
    for batch in $FAIL_BATCHES; do
        cases=()
        for k in $HOSTS_PROCS; do cases+=("jh $k" "raw $k"); done
        n_cases=${#cases[@]}
        for i in $(seq 0 $((n_cases - 1))); do
            # shellcheck disable=SC2086 # "side k"
            run_hosts ${cases[$(((i + rep - 1) % n_cases))]} "$batch" "$rep" || fails=$((fails + 1))
        done
    done
done

# --- latency at a steady rate, beside a core round trip ---------------------------
if want latency; then
say "core request/reply round trip, $LAT_N at $LAT_RATE/s"
"$RAW" rtt "$URL" "$LAT_N" "$LAT_RATE" "$SIZE" >"$WORK/rtt.out" 2>"$WORK/rtt.err" || { fails=$((fails + 1)); cat "$WORK/rtt.err" >&2; }
fi

# run_latency BATCH: jethost on a fresh stream LAT, publisher paced at LAT_RATE.
run_latency() {
    local batch=$1 d=$WORK/runs/latency_b$1
    mkdir -p "$d"
    "$RAW" publish "$URL" LAT lat.x 0 "$SIZE" >/dev/null 2>"$d/stream.err" || return 1
    jethost_conf "$d/jethost.conf" LAT lat_b"$batch" "$batch" 0 "option.latency_file = $d/latency.txt"
    JETHOST_LOG_LEVEL=info "$JH" run -c "$d/jethost.conf" 2>"$d/jethost.log" &
    CHILD=$!
    local i
    for i in $(seq 100); do grep -q 'subscribed' "$d/jethost.log" 2>/dev/null && break; sleep 0.05; done
    sleep 0.5
    "$RAW" pace "$URL" lat.x "$LAT_N" "$LAT_RATE" "$SIZE" >"$d/pace.out" 2>"$d/pace.err"
    local prc=$?
    "$RAW" floor "$URL" LAT lat_b"$batch" "$LAT_N" "$(now_ns)" 60 >"$d/floor.out" 2>"$d/floor.err"
    local frc=$?
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD"
    local jrc=$?
    CHILD=""
    if [ "$prc" -ne 0 ] || [ "$frc" -ne 0 ] || [ "$jrc" -ne 0 ]; then
        say "latency batch $batch: FAILED (pace $prc, floor $frc, jethost $jrc)"
        return 1
    fi
    "$RAW" pctl "$d/latency.txt" >"$d/latency.out"
}
# run_latency_raw BATCH: the plain peer: `rawloop raw` (strictly paced, same
# pulls) on a fresh stream LAT, recording publish -> receipt.
run_latency_raw() {
    local batch=$1 d=$WORK/runs/latency_raw_b$1
    mkdir -p "$d"
    "$RAW" publish "$URL" LAT lat.x 0 "$SIZE" >/dev/null 2>"$d/stream.err" || return 1
    RAWLOOP_LATENCY_FILE="$d/latency.txt" "$RAW" raw "$URL" LAT latraw_b"$batch" "$LAT_N" "$batch" \
        >"$d/client.out" 2>"$d/client.err" &
    CHILD=$!
    sleep 1   # its consumer, subscription and first pull: as jethost gets 0.5 s after subscribing
    "$RAW" pace "$URL" lat.x "$LAT_N" "$LAT_RATE" "$SIZE" >"$d/pace.out" 2>"$d/pace.err"
    local prc=$?
    wait "$CHILD"
    local crc=$?
    CHILD=""
    if [ "$prc" -ne 0 ] || [ "$crc" -ne 0 ]; then
        say "raw latency batch $batch: FAILED (pace $prc, rawloop $crc)"
        return 1
    fi
    "$RAW" pctl "$d/latency.txt" >"$d/latency.out"
}
LAT_BATCHES="1 10"
want latency && for batch in $LAT_BATCHES; do
    say "jethost latency, batch $batch, $LAT_N at $LAT_RATE/s"
    run_latency "$batch" || fails=$((fails + 1))
    say "raw pull loop latency, batch $batch, $LAT_N at $LAT_RATE/s"
    run_latency_raw "$batch" || fails=$((fails + 1))
done

# --- per-key lanes with one hot key ------------------------------------------------
# run_hotkey LABEL HOT_PERCENT KEYS: jethost with `key = subject:2`, 4 workers
# and a 1 ms handler on a fresh stream HOT, HOT_N messages paced at HOT_RATE:
# HOT_PERCENT of them on hot.hot, the rest over KEYS cold keys.  What is
# recorded is publish -> handler entry of the cold keys alone.
run_hotkey() {
    local label=$1 hot=$2 keys=$3 d=$WORK/runs/hotkey_$1
    mkdir -p "$d"
    "$RAW" publish "$URL" HOT 'hot.>' 0 "$SIZE" >/dev/null 2>"$d/stream.err" || return 1
    jethost_conf "$d/jethost.conf" HOT "hot_$label" 10 0 "workers = 4" "key = subject:2" "option.sleep = 1ms" \
        "option.latency_file = $d/latency.txt" "option.latency_skip = .hot"
    JETHOST_LOG_LEVEL=info "$JH" run -c "$d/jethost.conf" 2>"$d/jethost.log" &
    CHILD=$!
    local i
    for i in $(seq 100); do grep -q 'subscribed' "$d/jethost.log" 2>/dev/null && break; sleep 0.05; done
    sleep 0.5
    "$RAW" pace "$URL" hot "$HOT_N" "$HOT_RATE" "$SIZE" "$hot" "$keys" >"$d/pace.out" 2>"$d/pace.err"
    local prc=$?
    "$RAW" floor "$URL" HOT "hot_$label" "$HOT_N" "$(now_ns)" 120 >"$d/floor.out" 2>"$d/floor.err"
    local frc=$?
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD"
    local jrc=$?
    CHILD=""
    if [ "$prc" -ne 0 ] || [ "$frc" -ne 0 ] || [ "$jrc" -ne 0 ]; then
        say "hot key $label: FAILED (pace $prc, floor $frc, jethost $jrc)"
        return 1
    fi
    "$RAW" pctl "$d/latency.txt" >"$d/latency.out"
}
want hotkey && {
    say "lanes, $HOT_N at $HOT_RATE/s spread over 5000 keys"
    run_hotkey spread 0 5000 || fails=$((fails + 1))
    say "lanes, $HOT_N at $HOT_RATE/s, half on one key, the rest over 1000 keys"
    run_hotkey hot 50 1000 || fails=$((fails + 1))
}

# --- peak RSS with a 1 ms handler -------------------------------------------------
want rss && for n in "$RSS_SMALL" "$RSS_LARGE"; do
    say "jethost peak RSS, 1 ms handler, $n messages"
    run_jethost rss"$n" 10 0 1 "$n" "option.sleep = 1ms" || fails=$((fails + 1))
done

# --- ordered and KV readers, alternating -------------------------------------------
# reader_reps PART CASES...: REPS repetitions, the order rotating
reader_reps() {
    local part=$1 rep i k
    shift
    want "$part" || return 0
    local cases=("$@")
    k=${#cases[@]}
    for rep in $(seq "$REPS"); do
        for i in $(seq 0 $((k - 1))); do
            run_reader_case "${cases[$(((i + rep - 1) % k))]}" "$rep" || fails=$((fails + 1))
        done
    done
}
reader_reps ordered ord_jh10 ord_jh100 ord_ckpt ord_nc
reader_reps kv kv_jh10 kv_jh100 kv_nc
reader_reps ordered slow_jh slow_nc slow_nc_lim
reader_reps kv kvslow_jh kvslow_nc
REPS=$SUS_REPS reader_reps sustained sus_jh sus_nc kvsus_jh kvsus_nc
SERVER_HWM=$(awk '/^VmHWM:/{print $2}' "/proc/$SPID/status" 2>/dev/null)

# --- the table -------------------------------------------------------------------
# pctl_of KEY FILE: one field of a RESULT line; pctls FILE: p50 p99 p99.9 max, aligned
pctl_of() { [ -f "$2" ] && sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" "$2" | head -1; }
pctls() { printf '%-8s %-8s %-8s %-8s' "$(pctl_of p50_us "$1")" "$(pctl_of p99_us "$1")" "$(pctl_of p999_us "$1")" "$(pctl_of max_us "$1")"; }
# beyond LABEL K1 K: KiB of peak RSS each of the K - K1 bindings (loops) past K1 adds (medians)
beyond() {
    awk -v a="$(colmed "$1" "$2" 5)" -v b="$(colmed "$1" "$3" 5)" -v k1="$2" -v k="$3" \
        'BEGIN {if (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ && k > k1) printf "%.0f", (b - a) / (k - k1); else printf "-"}'
}
perk() { awk -v r="$1" -v k="$2" 'BEGIN {if (r ~ /^[0-9.]+$/) printf "%.2f", r / 1024 / k; else printf "-"}'; }
mbs() { awk -v r="$1" -v z="$2" 'BEGIN {if (r ~ /^[0-9.]+$/) printf "%.1f", r * z / 1e6; else printf "-"}'; }
# stats LABEL BATCH COLUMN -> "median min max" over the repetitions (numeric rows)
stats() {
    awk -v l="$1" -v b="$2" -v c="$3" '$1 == l && $2 == b && $c ~ /^[0-9.]+$/ {print $c}' "$RESULTS" | sort -n |
        awk '{v[NR] = $1} END {if (NR == 0) {print "- - -"; exit}
             m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f %.0f %.0f\n", m, v[1], v[NR]}'
}
cell() {
    local s
    read -r med lo hi <<<"$(stats "$1" "$2" 4)"
    if [ "$med" = "-" ]; then s="-"
    elif [ "$REPS" -gt 1 ]; then s="$med [$lo-$hi]"
    else s="$med"; fi
    printf '%s' "$s"
}
rsscell() {
    read -r med lo hi <<<"$(stats "$1" "$2" 5)"
    if [ "$med" = "-" ]; then printf -- '-'; else awk -v m="$med" -v l="$lo" -v h="$hi" 'BEGIN {printf (l == h ? "%.1f" : "%.1f (%.1f-%.1f)"), m / 1024, l / 1024, h / 1024}'; fi
}
med() { stats "$1" "$2" 4 | cut -d' ' -f1; }
cpumed() { stats "$1" "$2" 7 | cut -d' ' -f1; }
cpucell() { awk -v v="$(cpumed "$1" "$2")" 'BEGIN {if (v ~ /^[0-9.]+$/) printf "%.1f", v / 1000; else printf "-"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else printf "-"}'; }
# colcell LABEL BATCH COLUMN: "median [min-max]" of any column; colmed: the median
colcell() {
    read -r med lo hi <<<"$(stats "$1" "$2" "$3")"
    if [ "$med" = "-" ] || [ "$REPS" -le 1 ] || [ "$lo" = "$hi" ]; then printf '%s' "$med"; else printf '%s [%s-%s]' "$med" "$lo" "$hi"; fi
}
colmed() { stats "$1" "$2" "$3" | cut -d' ' -f1; }
# vals LABEL BATCH COLUMN: every repetition's value, in order, a/b/c
vals() { awk -v l="$1" -v b="$2" -v c="$3" '$1 == l && $2 == b {printf "%s%s", (n++ ? "/" : ""), $c} END {if (!n) printf "-"}' "$RESULTS"; }
nsus() { awk -v v="$1" 'BEGIN {if (v ~ /^[0-9.]+$/) printf "%.1f", v / 1000; else printf "-"}'; }
# reader_row NAME LABEL BATCH NATSC_LABEL: msgs/s, spawn rate, RSS, CPU, and the rate over nats.c's
reader_row() {
    printf '%-44s %-24s %-14s %-18s %-8s %-8s\n' "$1" "$(colcell "$2" "$3" 4)" "$(colmed "$2" "$3" 6)" "$(rsscell "$2" "$3")" \
        "$(nsus "$(colmed "$2" "$3" 7)")" "$(ratio "$(colmed "$2" "$3" 4)" "$(colmed "$4" 0 4)")"
}
kv_row() {
    printf '%-30s %-16s %-24s %-24s %-18s %-8s\n' "$1" "$(colcell "$2" "$3" 16)" "$(colcell "$2" "$3" 17)" \
        "$(colcell "$2" "$3" 18)" "$(rsscell "$2" "$3")" "$(nsus "$(colmed "$2" "$3" 7)")"
}
SLOW_FMT='%-40s %-16s %-7s %-16s %-12s %-10s %-16s %-12s %-16s %-14s %s\n'
slow_row() {
    # shellcheck disable=SC2059 # one format for the header and the rows
    printf "$SLOW_FMT" "$1" "$(vals "$2" "$3" 8)" "$(vals "$2" "$3" 9)" \
        "$(vals "$2" "$3" 10)" "$(vals "$2" "$3" 11)" "$(vals "$2" "$3" 12)" "$(vals "$2" "$3" 13)" "$(vals "$2" "$3" 14)" \
        "$(vals "$2" "$3" 15)" "$(rsscell "$2" "$3")" "$(colmed "$2" "$3" 4)"
}

{
    echo "jethost benchmark (tests/bench/run.sh)"
    cat "$ENV_TXT"
    if want throughput || want failure || want forward || want rss || want lanes || want workers || want payload; then
    echo "rate = messages / time between the first and the last movement of the consumer's ack floor (server-side,"
    echo "       polled every 5 ms until it first moves, then every $FLOOR_POLL_MS ms, the last step interpolated at the"
    echo "       slope so far; process start, connect and consumer creation excluded alike)"
    fi
    if want method; then
    echo
    echo "method: the anchor (natsbench.c pull, SendAsap) timed by itself (first fetch to last ack call) alone, and"
    echo "under the 5 ms floor poller and the ${FLOOR_POLL_MS} ms one (its own timing [the poller's figure]); jethost by"
    echo "each poller.  msgs/s median [min-max]:"
    printf '%-6s %-22s %-30s %-30s %-9s %-9s %-22s %-22s %-9s\n' batch "anchor alone" "anchor, 5 ms poll" \
        "anchor, $FLOOR_POLL_MS ms poll" "5ms/alone" "rare/alone" "jethost, 5 ms poll" "jethost, $FLOOR_POLL_MS ms poll" "jh rare/5"
    for b in $METHOD_BATCHES; do
        printf '%-6s %-22s %-30s %-30s %-9s %-9s %-22s %-22s %-9s\n' "$b" "$(colcell m_alone "$b" 8)" \
            "$(colcell m_anchor_p5 "$b" 8) [$(colmed m_anchor_p5 "$b" 4)]" \
            "$(colcell m_anchor_rare "$b" 8) [$(colmed m_anchor_rare "$b" 4)]" \
            "$(ratio "$(colmed m_anchor_p5 "$b" 8)" "$(colmed m_alone "$b" 8)")" \
            "$(ratio "$(colmed m_anchor_rare "$b" 8)" "$(colmed m_alone "$b" 8)")" \
            "$(cell m_jh_p5 "$b")" "$(cell m_jh_rare "$b")" "$(ratio "$(med m_jh_rare "$b")" "$(med m_jh_p5 "$b")")"
    done
    fi
    [ "$FILL_RATE" != - ] && echo "fill:     js_PublishAsync $FILL_RATE msgs/s"
    if want throughput; then
    echo
    printf '%-6s %-24s %-30s %-24s %-24s' batch "jethost msgs/s" "jethost+threshold" "nats.c Fetch" "raw pull protocol"
    [ -n "$NODE_MODULES" ] && printf ' %-24s' "nats.js consume()"
    [ -n "$NATSBENCH" ] && printf ' %-30s %-9s' "anchor natsbench own [floor]" "jh/anchor"
    printf ' %-9s %-9s %-9s %-8s\n' "jh/Fetch" "jh/raw" "jh/faster" "thr/jh"
    for b in $BATCHES; do
        t=$(threshold_for "$b")
        if [ "$t" -gt 0 ]; then thr="$(cell jethost_thr "$b") (t=$t)"; else thr="-"; fi
        printf '%-6s %-24s %-30s %-24s %-24s' "$b" "$(cell jethost "$b")" "$thr" "$(cell fetch "$b")" "$(cell raw "$b")"
        [ -n "$NODE_MODULES" ] && printf ' %-24s' "$(cell nodejs "$b")"
        # jethost over the anchor as the same poller times both
        [ -n "$NATSBENCH" ] && printf ' %-30s %-9s' "$(colcell anchor "$b" 8) [$(colmed anchor "$b" 4)]" \
            "$(ratio "$(med jethost "$b")" "$(colmed anchor "$b" 4)")"
        jm=$(med jethost "$b"); fm=$(med fetch "$b"); rm=$(med raw "$b")
        faster=$(awk -v f="$fm" -v r="$rm" 'BEGIN {print (f + 0 > r + 0) ? f : r}')
        printf ' %-9s %-9s %-9s %-8s\n' "$(ratio "$jm" "$fm")" "$(ratio "$jm" "$rm")" "$(ratio "$jm" "$faster")" \
            "$([ "$t" -gt 0 ] && ratio "$(med jethost_thr "$b")" "$jm" || echo -)"
    done
    echo
    cm=$(med ceiling "$CEILING_BATCH")
    printf 'ceiling: %s msgs/s, the raw pull loop on an AckNone consumer at batch %s, no acks, no handler;\n' \
        "$(cell ceiling "$CEILING_BATCH")" "$CEILING_BATCH"
    printf 'jethost as a share of it:'
    for b in $BATCHES; do printf ' batch %s %s;' "$b" "$(ratio "$(med jethost "$b")" "$cm")"; done
    echo
    echo
    printf 'peak RSS, MiB (median over reps):\n'
    printf '%-6s %-16s %-18s %-16s %-16s' batch jethost jethost+threshold Fetch raw
    [ -n "$NODE_MODULES" ] && printf ' %-16s' "nats.js"
    echo
    for b in $BATCHES; do
        printf '%-6s %-16s %-18s %-16s %-16s' "$b" "$(rsscell jethost "$b")" "$(rsscell jethost_thr "$b")" \
            "$(rsscell fetch "$b")" "$(rsscell raw "$b")"
        [ -n "$NODE_MODULES" ] && printf ' %-16s' "$(rsscell nodejs "$b")"
        echo
    done
    echo
    printf 'CPU per message, microseconds (user + system of the whole client process over its run, median over reps):\n'
    printf '%-6s %-10s %-18s %-10s %-10s %-9s %-9s\n' batch jethost jethost+threshold Fetch raw "jh/Fetch" "jh/raw"
    for b in $BATCHES; do
        printf '%-6s %-10s %-18s %-10s %-10s %-9s %-9s\n' "$b" "$(cpucell jethost "$b")" "$(cpucell jethost_thr "$b")" \
            "$(cpucell fetch "$b")" "$(cpucell raw "$b")" \
            "$(ratio "$(cpumed jethost "$b")" "$(cpumed fetch "$b")")" "$(ratio "$(cpumed jethost "$b")" "$(cpumed raw "$b")")"
    done
    fi
    if want failure; then
    echo
    echo "failure path, $N_FAIL messages each run, every one REJECTed: capture to $DLQ_STREAM, wait for the pub-ack, then"
    echo "the ack as a request (confirmed); one message at a time.  msgs/s median [min-max], peak RSS MiB:"
    printf '%-6s %-24s %-24s %-8s %-16s %-16s\n' batch "jethost (reject)" "nats.c capture loop" "jh/raw" "RSS jethost" "RSS raw"
    for b in $FAIL_BATCHES; do
        printf '%-6s %-24s %-24s %-8s %-16s %-16s\n' "$b" "$(cell jethost_fail "$b")" "$(cell capture "$b")" \
            "$(ratio "$(med jethost_fail "$b")" "$(med capture "$b")")" "$(rsscell jethost_fail "$b")" "$(rsscell capture "$b")"
    done
    echo "target: jh/raw >= 0.5"
    fi
    if want capture; then
    echo
    echo "capture curve: $N_FAIL messages each run, every one REJECTed and captured to $DLQ_STREAM (pub-ack, confirmed ack),"
    echo "batch $CAPW_BATCH a puller; jethost \`workers = W\` beside rawloop capture with W loops on the one consumer; msgs/s median [min-max]:"
    printf '%-8s %-22s %-22s %-8s %-18s %-18s %-10s %-10s\n' workers "jethost (reject)" "nats.c W x capture" "jh/raw" \
        "RSS jh" "RSS raw" "CPU jh us" "CPU raw us"
    for w in $CAPW_COUNTS; do
        printf '%-8s %-22s %-22s %-8s %-18s %-18s %-10s %-10s\n' "$w" "$(cell capw_jh "$w")" "$(cell capw_raw "$w")" \
            "$(ratio "$(med capw_jh "$w")" "$(med capw_raw "$w")")" "$(rsscell capw_jh "$w")" "$(rsscell capw_raw "$w")" \
            "$(cpucell capw_jh "$w")" "$(cpucell capw_raw "$w")"
    done
    fi
    if want retry; then
    echo
    echo "retry path, $N_RETRY messages each run, every one failing once: the failure written to a KV bucket, a delayed NAK"
    echo "(${RETRY_RUNG_MS} ms), then on the redelivery the ack and the entry deleted; msgs finally acked /s, median [min-max]:"
    printf '%-6s %-24s %-24s %-8s %-16s %-16s %-10s %-10s %-8s\n' batch "jethost (retry-once)" "nats.c retry loop" "jh/raw" \
        "RSS jethost" "RSS raw" "CPU jh us" "CPU raw us" "cpu jh/raw"
    for b in $FAIL_BATCHES; do
        printf '%-6s %-24s %-24s %-8s %-16s %-16s %-10s %-10s %-8s\n' "$b" "$(cell retry_jh "$b")" "$(cell retry_raw "$b")" \
            "$(ratio "$(med retry_jh "$b")" "$(med retry_raw "$b")")" "$(rsscell retry_jh "$b")" "$(rsscell retry_raw "$b")" \
            "$(cpucell retry_jh "$b")" "$(cpucell retry_raw "$b")" "$(ratio "$(cpumed retry_jh "$b")" "$(cpumed retry_raw "$b")")"
    done
    echo "(CPU per message: user + system of the whole process over its run / messages, i.e. per two deliveries)"
    fi
    if want sink; then
    echo
    echo "batch sink, $N_SINK messages each run, each appended to a file and made durable (fdatasync) before its ack;"
    echo "msgs acked /s, median [min-max]:"
    printf '%-6s %-24s %-24s %-24s %-9s %-9s %-10s %-10s\n' batch "jethost, one a message" "jethost handle_batch" \
        "nats.c, one a batch" "jhb/raw" "jhb/jh1" "CPU jhb us" "CPU raw us"
    for b in $FAIL_BATCHES; do
        printf '%-6s %-24s %-24s %-24s %-9s %-9s %-10s %-10s\n' "$b" "$(cell sink_jh1 "$b")" "$(cell sink_jhb "$b")" \
            "$(cell sink_raw "$b")" "$(ratio "$(med sink_jhb "$b")" "$(med sink_raw "$b")")" \
            "$(ratio "$(med sink_jhb "$b")" "$(med sink_jh1 "$b")")" "$(cpucell sink_jhb "$b")" "$(cpucell sink_raw "$b")"
    done
    fi
    if want async; then
    echo
    echo "pending deliveries, $ASYNC_MS ms of simulated I/O a message, batch 100, one worker; msgs acked /s, median [min-max]:"
    printf '%-26s %-26s %-26s %-9s %-9s %-10s %-10s\n' "jethost, $ASYNC_INFLIGHT in flight" "nats.c, $ASYNC_INFLIGHT in flight" \
        "jethost, one at a time" "jh/raw" "jh/sync" "CPU jh us" "CPU raw us"
    printf '%-26s %-26s %-26s %-9s %-9s %-10s %-10s\n' "$(cell async_jh 100)" "$(cell async_raw 100)" \
        "$(cell async_sync 100)" "$(ratio "$(med async_jh 100)" "$(med async_raw 100)")" \
        "$(ratio "$(med async_jh 100)" "$(med async_sync 100)")" "$(cpucell async_jh 100)" "$(cpucell async_raw 100)"
    fi
    if want hosts; then
    echo
    echo "hosts: $N_HOSTS messages each run, K processes on one durable consumer (jethost: one config, one binding, noop"
    echo "plugin; nats.c: rawloop fetch bound to it); aggregate msgs/s (floor slope), median [min-max]; RSS: the largest process"
    printf '%-6s %-6s %-22s %-22s %-8s %-16s %-16s %-10s %-10s\n' batch procs jethost "nats.c Fetch" "jh/raw" "RSS jh" "RSS raw" \
        "CPU jh us" "CPU raw us"
    for b in $FAIL_BATCHES; do
        for k in $HOSTS_PROCS; do
            printf '%-6s %-6s %-22s %-22s %-8s %-16s %-16s %-10s %-10s\n' "$b" "$k" "$(cell "hosts_jh$k" "$b")" \
                "$(cell "hosts_raw$k" "$b")" "$(ratio "$(med "hosts_jh$k" "$b")" "$(med "hosts_raw$k" "$b")")" \
                "$(rsscell "hosts_jh$k" "$b")" "$(rsscell "hosts_raw$k" "$b")" "$(cpucell "hosts_jh$k" "$b")" \
                "$(cpucell "hosts_raw$k" "$b")"
        done
        printf '%-6s 2/1    %-22s %-22s\n' "$b" "$(ratio "$(med hosts_jh2 "$b")" "$(med hosts_jh1 "$b")")" \
            "$(ratio "$(med hosts_raw2 "$b")" "$(med hosts_raw1 "$b")")"
    done
    fi
    if want forward; then
    echo
    echo "forwarding, $N_FWD messages each run from ORDERS to $FWD_STREAM: each republished under a Nats-Msg-Id, the"
    echo "pub-ack waited for, then the origin acked (plain ack); one message at a time.  msgs/s median [min-max]:"
    printf '%-6s %-24s %-24s %-8s %-16s %-16s %-10s %-10s %-8s\n' batch "jethost + forward" "nats.c forward loop" "jh/raw" \
        "RSS jethost" "RSS raw" "CPU jh us" "CPU raw us" "cpu jh/raw"
    for b in $FAIL_BATCHES; do
        printf '%-6s %-24s %-24s %-8s %-16s %-16s %-10s %-10s %-8s\n' "$b" "$(cell jethost_fwd "$b")" "$(cell fwd_raw "$b")" \
            "$(ratio "$(med jethost_fwd "$b")" "$(med fwd_raw "$b")")" "$(rsscell jethost_fwd "$b")" "$(rsscell fwd_raw "$b")" \
            "$(cpucell jethost_fwd "$b")" "$(cpucell fwd_raw "$b")" \
            "$(ratio "$(cpumed jethost_fwd "$b")" "$(cpumed fwd_raw "$b")")"
    done
    fi
    if want lanes; then
    echo
    echo "lanes: $LANES_N messages each run over $LANES_KEYS keys (lanes.k.<i % $LANES_KEYS>), batch $LANES_BATCH; jethost with the"
    echo "noop plugin and $LANES_WORKERS workers, with key = subject:3 (exclusive implied) and without; msgs/s median [min-max]:"
    b=$LANES_BATCH
    printf '%-24s %-24s %-24s %-24s %-9s %-9s %-9s %-10s %-10s\n' "jethost key" "jethost no key" "nats.c Fetch" \
        "raw pull protocol" "key/nokey" "key/raw" "nokey/raw" "CPU key us" "CPU nokey"
    printf '%-24s %-24s %-24s %-24s %-9s %-9s %-9s %-10s %-10s\n' "$(cell lanes_key "$b")" "$(cell lanes_nokey "$b")" \
        "$(cell lanes_fetch "$b")" "$(cell lanes_raw "$b")" \
        "$(ratio "$(med lanes_key "$b")" "$(med lanes_nokey "$b")")" "$(ratio "$(med lanes_key "$b")" "$(med lanes_raw "$b")")" \
        "$(ratio "$(med lanes_nokey "$b")" "$(med lanes_raw "$b")")" "$(cpucell lanes_key "$b")" "$(cpucell lanes_nokey "$b")"
    printf 'peak RSS MiB: key %s, no key %s, Fetch %s, raw %s\n' "$(rsscell lanes_key "$b")" "$(rsscell lanes_nokey "$b")" \
        "$(rsscell lanes_fetch "$b")" "$(rsscell lanes_raw "$b")"
    fi
    if want hotkey; then
    echo
    echo "lanes with a hot key: $HOT_N messages at $HOT_RATE/s, key = subject:2, 4 workers, 1 ms handler;"
    echo "publish -> handler entry of the cold keys, microseconds:"
    printf '  %-46s %-8s %-8s %-8s %-8s %s\n' "" p50 p99 p99.9 max "p99 hot/spread (target <= 3)"
    printf '  %-46s %s\n' "spread over 5000 keys" "$(pctls "$WORK/runs/hotkey_spread/latency.out")"
    printf '  %-46s %s %s\n' "50 % on one key, the rest over 1000 keys" "$(pctls "$WORK/runs/hotkey_hot/latency.out")" \
        "$(ratio "$(pctl_of p99_us "$WORK/runs/hotkey_hot/latency.out")" "$(pctl_of p99_us "$WORK/runs/hotkey_spread/latency.out")")"
    fi
    if want latency; then
    echo
    echo "latency at a steady $LAT_RATE msgs/s, $LAT_N messages ($((LAT_N / LAT_RATE)) s) a run, microseconds:"
    printf '  %-46s %-8s %-8s %-8s %-8s %s\n' "" p50 p99 p99.9 max "p99 jh/raw (target <= 1.2)"
    printf '  %-46s %s\n' "core request/reply round trip (rawloop rtt)" "$(pctls "$WORK/rtt.out")"
    for b in $LAT_BATCHES; do
        printf '  %-46s %s %s\n' "jethost publish -> handler entry, batch $b" "$(pctls "$WORK/runs/latency_b$b/latency.out")" \
            "$(ratio "$(pctl_of p99_us "$WORK/runs/latency_b$b/latency.out")" "$(pctl_of p99_us "$WORK/runs/latency_raw_b$b/latency.out")")"
        printf '  %-46s %s\n' "raw pull loop publish -> receipt, batch $b" "$(pctls "$WORK/runs/latency_raw_b$b/latency.out")"
    done
    fi
    if want workers; then
    echo
    echo "workers: a 1 ms handler (sleep), $WRK_PER messages a worker, batch $WRK_BATCH a puller; jethost \`workers = W\` beside"
    echo "rawloop workers (W plain Fetch loops on the one consumer); msgs/s median [min-max]:"
    printf '%-8s %-8s %-22s %-22s %-9s %-9s %-9s %-18s %-18s\n' workers ideal jethost "nats.c W x Fetch" "jh/ideal" \
        "raw/ideal" "jh/raw" "RSS jh" "RSS raw"
    for w in $WRK_COUNTS; do
        printf '%-8s %-8s %-22s %-22s %-9s %-9s %-9s %-18s %-18s\n' "$w" "$((w * 1000))" "$(cell wrk_jh "$w")" \
            "$(cell wrk_raw "$w")" "$(ratio "$(med wrk_jh "$w")" "$((w * 1000))")" "$(ratio "$(med wrk_raw "$w")" "$((w * 1000))")" \
            "$(ratio "$(med wrk_jh "$w")" "$(med wrk_raw "$w")")" "$(rsscell wrk_jh "$w")" "$(rsscell wrk_raw "$w")"
    done
    fi
    if want bindings; then
    echo
    echo "bindings in one host: $BIND_TOTAL messages a run split over the bindings (each its own consumer of all of stream"
    echo "BIND), batch $BIND_BATCH; aggregate msgs/s counted on the wire (rawloop acks), median [min-max]; peak RSS MiB, and per binding:"
    echo "(+KiB: what each binding or loop beyond the first adds to the peak RSS, against the first count's median)"
    printf '%-9s %-22s %-22s %-8s %-18s %-12s %-10s %-18s %-12s %-10s %-10s %-10s\n' bindings jethost "nats.c K x Fetch" "jh/raw" \
        "RSS jh" "jh/binding" "jh +KiB" "RSS raw" "raw/loop" "raw +KiB" "CPU jh us" "CPU raw us"
    k1=${BIND_COUNTS%% *}
    for k in $BIND_COUNTS; do
        printf '%-9s %-22s %-22s %-8s %-18s %-12s %-10s %-18s %-12s %-10s %-10s %-10s\n' "$k" "$(cell bind_jh "$k")" \
            "$(cell bind_raw "$k")" "$(ratio "$(med bind_jh "$k")" "$(med bind_raw "$k")")" "$(rsscell bind_jh "$k")" \
            "$(perk "$(colmed bind_jh "$k" 5)" "$k")" "$(beyond bind_jh "$k1" "$k")" "$(rsscell bind_raw "$k")" \
            "$(perk "$(colmed bind_raw "$k" 5)" "$k")" "$(beyond bind_raw "$k1" "$k")" "$(cpucell bind_jh "$k")" \
            "$(cpucell bind_raw "$k")"
    done
    if [ -n "$(colmed bind_stack 1 5 | grep '^[0-9]')" ]; then
        echo "one binding's floor: one Fetch loop in a process carrying jethost's libraries (GLib, GObject, GIO, json-glib),"
        printf '  started as jethost starts them (rawloop-stack): peak RSS %s MiB; jethost with one binding adds %s KiB to it\n' \
            "$(rsscell bind_stack 1)" "$(awk -v j="$(colmed bind_jh 1 5)" -v f="$(colmed bind_stack 1 5)" \
            'BEGIN {if (j ~ /^[0-9]+$/ && f ~ /^[0-9]+$/) printf "%d", j - f; else printf "-"}')"
    fi
    fi
    if want payload; then
    echo
    echo "payload sizes, batch $PAY_BATCH, min($PAY_MAX_N, $PAY_MB MiB / size) messages a run; MB/s (10^6 B) of payload, median:"
    printf '%-9s %-7s %-12s %-12s %-12s %-9s %-9s %-18s %-18s %-18s\n' size msgs "jethost" "nats.c Fetch" "raw pull" \
        "jh/Fetch" "jh/raw" "RSS jh" "RSS Fetch" "RSS raw"
    for z in $PAY_SIZES; do
        printf '%-9s %-7s %-12s %-12s %-12s %-9s %-9s %-18s %-18s %-18s\n' "$z" "$(pay_count "$z")" \
            "$(mbs "$(med pay_jh "$z")" "$z")" "$(mbs "$(med pay_fetch "$z")" "$z")" "$(mbs "$(med pay_raw "$z")" "$z")" \
            "$(ratio "$(med pay_jh "$z")" "$(med pay_fetch "$z")")" "$(ratio "$(med pay_jh "$z")" "$(med pay_raw "$z")")" \
            "$(rsscell pay_jh "$z")" "$(rsscell pay_fetch "$z")" "$(rsscell pay_raw "$z")"
    done
    fi
    if want rss; then
    echo
    echo "jethost peak RSS with a 1 ms handler (batch 10):"
    for n in "$RSS_SMALL" "$RSS_LARGE"; do
        printf '  %-10s messages: %s MiB (rate %s msgs/s)\n' "$n" "$(rsscell rss"$n" 10)" "$(med rss"$n" 10)"
    done
    fi
    if want ordered; then
    echo
    echo "ordered: stream ORD, $ORD_N x $SIZE B, read from the start by one reader a run; msgs/s from the first message"
    echo "handled to the last, timed in the reader (no acks, so no ack floor); median [min-max]; spawn->last: from starting"
    echo "the process (connect, consumer creation included); CPU: user + system of the whole process / messages handled"
    printf '%-44s %-24s %-14s %-18s %-8s %-8s\n' reader "msgs/s" "spawn->last" "peak RSS MiB" "CPU us" "/nats.c"
    reader_row "jethost kind=ordered, batch 10" ord_jh 10 ord_nc
    reader_row "jethost kind=ordered, batch 100" ord_jh 100 ord_nc
    reader_row "jethost + checkpoint=kv, batch 100 ($CKPT_N)" ord_ckpt 100 ord_nc
    reader_row "nats.c ordered push (js_SubscribeSync)" ord_nc 0 ord_nc
    echo "checkpoint=kv / no checkpoint (batch 100): $(ratio "$(colmed ord_ckpt 100 4)" "$(colmed ord_jh 100 4)")"
    fi
    if want kv; then
    echo
    echo "kv watch: a bucket of $KV_KEYS keys ($SIZE B, history $KV_HISTORY), watched from its current values; once they are all"
    echo "handled, $KV_UPDATES updates are published at full speed (rawloop send: $(colmed kv_nc 0 19) msgs/s by its own count,"
    echo "pub-acks included; updates/s near that figure are the publisher's pace, not the reader's limit)"
    printf '%-30s %-16s %-24s %-24s %-18s %-8s\n' reader "initial-done ms" "current values/s" "updates/s" "peak RSS MiB" "CPU us"
    kv_row "jethost kind=kv, batch 10" kv_jh 10
    kv_row "jethost kind=kv, batch 100" kv_jh 100
    kv_row "nats.c kvStore_WatchAll" kv_nc 0
    echo "initial-done ms: from starting the process to the last current value handled"
    fi
    if want ordered || want kv; then
    echo
    echo "slow handler ($SLOW_SLEEP_US us a message), publishing at full speed once the reader is ready; one value per repetition:"
    # shellcheck disable=SC2059
    printf "$SLOW_FMT" reader handled twice missing "out of order" consumers dropped "slow errors" "max pending" \
        "peak RSS MiB" "msgs/s"
    if want ordered; then
    echo "ordered: $SLOW_N messages into an empty stream"
    slow_row "jethost kind=ordered, batch 10" slow_jh 10
    slow_row "nats.c ordered push, default limits" slow_nc 0
    slow_row "nats.c ordered push, pending limit $SLOW_LIMIT" slow_nc_lim 0
    fi
    if want kv; then
    echo "kv: $SLOW_KEYS keys, then $SLOW_UPDATES updates once their current values are handled"
    slow_row "jethost kind=kv, batch 10" kvslow_jh 10
    slow_row "nats.c kvStore_WatchAll" kvslow_nc 0
    fi
    fi
    if want sustained; then
    echo
    echo "sustained: a $SUS_SLEEP_US us handler, publishing at full speed once the reader is ready; $SUS_REPS run(s) each:"
    # shellcheck disable=SC2059
    printf "$SLOW_FMT" reader handled twice missing "out of order" consumers dropped "slow errors" "max pending" \
        "peak RSS MiB" "msgs/s"
    echo "ordered: $SUS_N messages into an empty stream"
    slow_row "jethost kind=ordered, batch 10" sus_jh 10
    slow_row "nats.c ordered push, default limits" sus_nc 0
    echo "kv: $SUS_KEYS keys, then $SUS_N updates once their current values are handled"
    slow_row "jethost kind=kv, batch 10" kvsus_jh 10
    slow_row "nats.c kvStore_WatchAll" kvsus_nc 0
    fi
    echo "nats-server peak RSS over the run: $(awk -v k="${SERVER_HWM:-0}" 'BEGIN {printf "%.0f", k / 1024}') MiB"
    [ "$fails" -gt 0 ] && echo "FAILED runs: $fails (see the log above; KEEP=1 keeps every run's logs)"
} >"$OUT"
cat "$OUT"
cp "$RESULTS" "$JET_BUILDDIR/bench-runs.txt"

# --- the curves' data (medians), and their plots ---------------------------------------
# only this run's parts: a curve is never drawn from an earlier run's data
DAT=$JET_BUILDDIR/bench-data
mkdir -p "$DAT" && rm -f "$DAT"/*.dat
if want method; then
    {
        echo "# batch anchor_alone anchor_own_5ms anchor_own_rare anchor_floor_5ms anchor_floor_rare jethost_5ms jethost_rare"
        for b in $METHOD_BATCHES; do
            echo "$b $(colmed m_alone "$b" 8) $(colmed m_anchor_p5 "$b" 8) $(colmed m_anchor_rare "$b" 8)" \
                "$(colmed m_anchor_p5 "$b" 4) $(colmed m_anchor_rare "$b" 4) $(med m_jh_p5 "$b") $(med m_jh_rare "$b")"
        done
    } >"$DAT/method.dat"
fi
if want latency; then
    {
        echo "# batch side p50_us p99_us p999_us max_us"
        for b in $LAT_BATCHES; do
            for side in jethost raw; do
                f=$WORK/runs/latency_b$b/latency.out
                [ "$side" = raw ] && f=$WORK/runs/latency_raw_b$b/latency.out
                echo "$b $side $(pctl_of p50_us "$f") $(pctl_of p99_us "$f") $(pctl_of p999_us "$f") $(pctl_of max_us "$f")"
            done
        done
    } >"$DAT/latency.dat"
fi
if want workers; then
    {
        echo "# workers ideal jethost nats_c"
        for w in $WRK_COUNTS; do echo "$w $((w * 1000)) $(med wrk_jh "$w") $(med wrk_raw "$w")"; done
    } >"$DAT/workers.dat"
fi
if want bindings; then
    {
        echo "# bindings jethost_rate nats_c_rate jethost_rss_mib_per_binding nats_c_rss_mib_per_loop"
        for k in $BIND_COUNTS; do
            echo "$k $(med bind_jh "$k") $(med bind_raw "$k") $(perk "$(colmed bind_jh "$k" 5)" "$k") $(perk "$(colmed bind_raw "$k" 5)" "$k")"
        done
    } >"$DAT/bindings.dat"
fi
if want retry; then
    {
        echo "# batch jethost nats_c"
        for b in $FAIL_BATCHES; do echo "$b $(med retry_jh "$b") $(med retry_raw "$b")"; done
    } >"$DAT/retry.dat"
fi
if want capture; then
    {
        echo "# workers jethost nats_c"
        for w in $CAPW_COUNTS; do echo "$w $(med capw_jh "$w") $(med capw_raw "$w")"; done
    } >"$DAT/capture.dat"
fi
if want hosts; then
    {
        echo "# batch jethost_1 jethost_2 nats_c_1 nats_c_2"
        for b in $FAIL_BATCHES; do
            echo "$b $(med hosts_jh1 "$b") $(med hosts_jh2 "$b") $(med hosts_raw1 "$b") $(med hosts_raw2 "$b")"
        done
    } >"$DAT/hosts.dat"
fi
if want payload; then
    {
        echo "# size_bytes jethost_MBps fetch_MBps raw_MBps"
        for z in $PAY_SIZES; do
            echo "$z $(mbs "$(med pay_jh "$z")" "$z") $(mbs "$(med pay_fetch "$z")" "$z") $(mbs "$(med pay_raw "$z")" "$z")"
        done
    } >"$DAT/payload.dat"
fi
GNUPLOT=${GNUPLOT:-$(command -v gnuplot || true)}
if want method || want latency || want workers || want payload || want bindings || want retry || want capture ||
    want hosts; then
    if [ -n "$GNUPLOT" ]; then
        GNUPLOT=$GNUPLOT bash "$JET_SRCDIR/tests/bench/plot.sh" "$DAT" "${PLOT_DIR:-$JET_BUILDDIR/bench-img}" ||
            say "plotting failed"
    else
        say "no gnuplot: curves not drawn (data in $DAT)"
    fi
fi
[ "$fails" -eq 0 ]
