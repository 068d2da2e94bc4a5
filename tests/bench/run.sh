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
# then the publish-to-handler latency at a steady 1,000 msgs/s beside a core
# request/reply round trip, and jethost's peak RSS with a 1 ms handler over
# two run lengths.  Prints one table and writes it to
# $JET_BUILDDIR/bench-results.txt.
#
# Env: N (200000), REPS (3), QUICK=1 (N=20000, N_FAIL=2000, REPS=1, shorter
# latency and RSS runs), N_FAIL (20000), CASES (which parts run, any of
# "throughput failure latency rss"; default all of them, e.g. CASES=failure),
# LAT_N (10000) and LAT_RATE (1000), RSS_SMALL (10000) and
# RSS_LARGE (100000), NATSJS_DIR (a directory where `require('nats')` works;
# default: the first of /tmp/natsjs, /tmp/anchors/js that has it),
# ANCHORS_DIR (default ../shared/anchors beside the source tree), KEEP=1
# keeps the work directory (logs of every run).
set -uo pipefail

: "${JET_BUILDDIR:?run through make bench}"
: "${JET_SRCDIR:?run through make bench}"
NATS_SERVER=${NATS_SERVER:-nats-server}

if [ "${QUICK:-0}" = 1 ]; then
    N=${N:-20000}; REPS=${REPS:-1}; N_FAIL=${N_FAIL:-2000}
    LAT_N=${LAT_N:-2000}; RSS_SMALL=${RSS_SMALL:-1000}; RSS_LARGE=${RSS_LARGE:-10000}
fi
N=${N:-200000}
REPS=${REPS:-3}
N_FAIL=${N_FAIL:-20000}
CASES=${CASES:-throughput failure latency rss}
CASES=${CASES//,/ }
LAT_N=${LAT_N:-10000}
LAT_RATE=${LAT_RATE:-1000}
RSS_SMALL=${RSS_SMALL:-10000}
RSS_LARGE=${RSS_LARGE:-100000}
SIZE=128
BATCHES="1 10 100"
FAIL_BATCHES="10 100"
DLQ_STREAM=JETHOST_DLQ             # jethost's managed default ...
DLQ_SUBJECTS='jethost.dlq.>'       # ... and the subjects it would give it
DLQ_SUBJECT=jethost.dlq.bench      # the binding's default dlq_subject

RAW=$JET_BUILDDIR/tests/bench/rawloop
JH=$JET_BUILDDIR/host/jethost
SO=$JET_BUILDDIR/tests/bench/.libs/noop.so
OUT=$JET_BUILDDIR/bench-results.txt

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

for f in "$RAW" "$JH" "$SO"; do [ -e "$f" ] || die "$f is missing (run make bench)"; done
want() { [[ " $CASES " == *" $1 "* ]]; }
for c in $CASES; do
    case $c in throughput | failure | latency | rss) ;; *) die "CASES: unknown part '$c' (throughput failure latency rss)" ;; esac
done
want rss && { [ "$RSS_LARGE" -le "$N" ] || die "RSS_LARGE ($RSS_LARGE) must not exceed N ($N)"; }

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
cleanup() {
    [ -n "$CHILD" ] && kill -KILL "$CHILD" 2>/dev/null
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

RESULTS=$WORK/results.txt   # label batch rep rate rss_kb total_rate cpu_ns_per_msg
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
: >"$RESULTS"

now_ns() { date +%s%N; }
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" "$2" | head -1; }
floor_timeout() { echo $((120 + $1 / 500)); }

# jethost_conf FILE STREAM CONSUMER BATCH THRESHOLD [option lines...]
jethost_conf() {
    local file=$1 stream=$2 consumer=$3 batch=$4 threshold=$5
    shift 5
    {
        printf '[host]\nserver = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n' "$URL" "$WORK/state"
        printf '[binding bench]\nplugin = %s\nstream = %s\nconsumer = %s\n' "$WORK/plugins/noop.so" "$stream" "$consumer"
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
    jethost_conf "$d/jethost.conf" "$stream" "$c" "$batch" "$threshold" "$@"
    local t0
    t0=$(now_ns)
    JETHOST_LOG_LEVEL=warning "$JH" run -c "$d/jethost.conf" 2>"$d/jethost.log" &
    CHILD=$!
    "$RAW" floor "$URL" "$stream" "$c" "$n" "$t0" "$(floor_timeout "$n")" >"$d/floor.out" 2>"$d/floor.err"
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
    "$RAW" floor "$URL" "$stream" "$c" "$n" "$t0" "$(floor_timeout "$n")" >"$d/floor.out" 2>"$d/floor.err"
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
    local rate total
    rate=$(field rate "$d/floor.out")
    total=$(field rate_total "$d/floor.out")
    echo "$label $batch $rep $rate ${rss:--} $total ${cpu:--}" >>"$RESULTS"
    say "$(printf '%-18s batch %3s rep %s: %8s msgs/s  rss %s kB  cpu %s ns/msg' "$label" "$batch" "$rep" "$rate" "${rss:--}" "${cpu:--}")"
}

run_node() {
    local batch=$1 rep=$2 c=nodejs_b${1}_r${2}
    local timecmd=()
    mkdir -p "$WORK/runs/$c"
    [ -x /usr/bin/time ] && timecmd=(/usr/bin/time -f %M -o "$WORK/runs/$c/rss")
    run_client nodejs "$batch" "$rep" env NODE_PATH="$NODE_MODULES" "${timecmd[@]}" \
        node "$ANCHORS_DIR/consume.js" "$URL" BENCH @C@ "$N" "$batch" ack
}

# run_failure LABEL BATCH REP: one failure-path run on stream FAIL (N_FAIL
# messages), the DLQ stream re-created first so every run starts from the
# same empty stream and duplicate window; afterwards the DLQ must hold exactly
# N_FAIL records (one per message: nothing lost, nothing doubled).
run_failure() {
    local label=$1 batch=$2 rep=$3 rc
    local c=${label}_b${batch}_r${rep}
    "$RAW" dlq "$URL" "$DLQ_STREAM" "$DLQ_SUBJECTS" >/dev/null 2>"$WORK/dlq.err" ||
        { cat "$WORK/dlq.err" >&2; say "$c: could not create the DLQ stream"; echo "$label $batch $rep FAIL - - -" >>"$RESULTS"; return 1; }
    if [ "$label" = jethost_fail ]; then
        RUN_STREAM=FAIL run_jethost jethost_fail "$batch" 0 "$rep" "$N_FAIL" "option.verdict = reject"
    else
        RUN_STREAM=FAIL RUN_N=$N_FAIL run_client capture "$batch" "$rep" "$RAW" capture "$URL" FAIL @C@ "$N_FAIL" "$batch" "$DLQ_SUBJECT"
    fi
    rc=$?
    [ "$rc" -eq 0 ] || return $rc
    local records
    records=$("$RAW" msgs "$URL" "$DLQ_STREAM" 2>/dev/null | sed -n 's/.* msgs=\([0-9]*\).*/\1/p')
    if [ "$records" != "$N_FAIL" ]; then
        say "$c: the DLQ stream holds ${records:-?} records, not $N_FAIL"
        # the run does not count: its rate line goes, a FAIL line takes its place
        sed -i "/^$label $batch $rep /d" "$RESULTS"
        echo "$label $batch $rep FAIL - - -" >>"$RESULTS"
        return 1
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
        raw) run_client raw "$batch" "$rep" "$RAW" raw "$URL" BENCH @C@ "$N" "$batch" ;;
        jethost_fail) run_failure jethost_fail "$batch" "$rep" ;;
        capture) run_failure capture "$batch" "$rep" ;;
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
    if want throughput || want rss; then
        echo "workload: file stream, N=$N x $SIZE B, fresh durable per run, REPS=$REPS, server $URL"
    else
        echo "workload: REPS=$REPS, server $URL"
    fi
    want failure && echo "failure:  stream FAIL, N_FAIL=$N_FAIL x $SIZE B, every message REJECTed; DLQ stream $DLQ_STREAM ($DLQ_SUBJECTS, file, 2 h duplicate window) re-created per run"
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
if want throughput || want rss; then
    fill BENCH bench.x "$N" "$WORK/fill.out"
    FILL_RATE=$(field rate "$WORK/fill.out")
fi
want failure && fill FAIL fail.x "$N_FAIL" "$WORK/fill-fail.out"

# --- throughput, alternating -----------------------------------------------------
fails=0
want throughput && for rep in $(seq "$REPS"); do
    for batch in $BATCHES; do
        cases=(jethost)
        [ "$(threshold_for "$batch")" -gt 0 ] && cases+=(jethost_thr)
        cases+=(fetch raw)
        [ -n "$NODE_MODULES" ] && cases+=(nodejs)
        # rotate the order each repetition, so no case always runs first
        k=${#cases[@]}
        for i in $(seq 0 $((k - 1))); do
            run_case "${cases[$(((i + rep - 1) % k))]}" "$batch" "$rep" || fails=$((fails + 1))
        done
    done
done

# --- the failure path, alternating ------------------------------------------------
want failure && for rep in $(seq "$REPS"); do
    for batch in $FAIL_BATCHES; do
        cases=(jethost_fail capture)
        k=${#cases[@]}
        for i in $(seq 0 $((k - 1))); do
            run_case "${cases[$(((i + rep - 1) % k))]}" "$batch" "$rep" || fails=$((fails + 1))
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

# --- peak RSS with a 1 ms handler -------------------------------------------------
want rss && for n in "$RSS_SMALL" "$RSS_LARGE"; do
    say "jethost peak RSS, 1 ms handler, $n messages"
    run_jethost rss"$n" 10 0 1 "$n" "option.sleep = 1ms" || fails=$((fails + 1))
done
SERVER_HWM=$(awk '/^VmHWM:/{print $2}' "/proc/$SPID/status" 2>/dev/null)

# --- the table -------------------------------------------------------------------
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

{
    echo "jethost benchmark (tests/bench/run.sh)"
    cat "$ENV_TXT"
    echo "rate = messages / time between the first and the last movement of the consumer's ack floor"
    echo "       (server-side, polled every 5 ms; process start, connect and consumer creation excluded alike)"
    echo "fill:     js_PublishAsync $FILL_RATE msgs/s"
    if want throughput; then
    echo
    printf '%-6s %-24s %-30s %-24s %-24s' batch "jethost msgs/s" "jethost+threshold" "nats.c Fetch" "raw pull protocol"
    [ -n "$NODE_MODULES" ] && printf ' %-24s' "nats.js consume()"
    printf ' %-9s %-9s %-9s %-8s\n' "jh/Fetch" "jh/raw" "jh/faster" "thr/jh"
    for b in $BATCHES; do
        t=$(threshold_for "$b")
        if [ "$t" -gt 0 ]; then thr="$(cell jethost_thr "$b") (t=$t)"; else thr="-"; fi
        printf '%-6s %-24s %-30s %-24s %-24s' "$b" "$(cell jethost "$b")" "$thr" "$(cell fetch "$b")" "$(cell raw "$b")"
        [ -n "$NODE_MODULES" ] && printf ' %-24s' "$(cell nodejs "$b")"
        jm=$(med jethost "$b"); fm=$(med fetch "$b"); rm=$(med raw "$b")
        faster=$(awk -v f="$fm" -v r="$rm" 'BEGIN {print (f + 0 > r + 0) ? f : r}')
        printf ' %-9s %-9s %-9s %-8s\n' "$(ratio "$jm" "$fm")" "$(ratio "$jm" "$rm")" "$(ratio "$jm" "$faster")" \
            "$([ "$t" -gt 0 ] && ratio "$(med jethost_thr "$b")" "$jm" || echo -)"
    done
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
    if want latency; then
    echo
    echo "latency at a steady $LAT_RATE msgs/s, $LAT_N messages (p50 / p99 / max, microseconds):"
    printf '  %-52s %s\n' "core request/reply round trip (rawloop rtt)" \
        "$(awk '/RESULT/{for (i = 1; i <= NF; i++) {split($i, kv, "="); r[kv[1]] = kv[2]} printf "%s / %s / %s", r["p50_us"], r["p99_us"], r["max_us"]}' "$WORK/rtt.out" 2>/dev/null)"
    for b in $LAT_BATCHES; do
        printf '  %-52s %s\n' "jethost publish -> handler entry, batch $b" \
            "$(awk '/RESULT/{for (i = 1; i <= NF; i++) {split($i, kv, "="); r[kv[1]] = kv[2]} printf "%s / %s / %s", r["p50_us"], r["p99_us"], r["max_us"]}' "$WORK/runs/latency_b$b/latency.out" 2>/dev/null)"
        printf '  %-52s %s\n' "raw pull loop publish -> receipt, batch $b" \
            "$(awk '/RESULT/{for (i = 1; i <= NF; i++) {split($i, kv, "="); r[kv[1]] = kv[2]} printf "%s / %s / %s", r["p50_us"], r["p99_us"], r["max_us"]}' "$WORK/runs/latency_raw_b$b/latency.out" 2>/dev/null)"
    done
    fi
    if want rss; then
    echo
    echo "jethost peak RSS with a 1 ms handler (batch 10):"
    for n in "$RSS_SMALL" "$RSS_LARGE"; do
        printf '  %-10s messages: %s MiB (rate %s msgs/s)\n' "$n" "$(rsscell rss"$n" 10)" "$(med rss"$n" 10)"
    done
    fi
    echo "nats-server peak RSS over the run: $(awk -v k="${SERVER_HWM:-0}" 'BEGIN {printf "%.0f", k / 1024}') MiB"
    [ "$fails" -gt 0 ] && echo "FAILED runs: $fails (see the log above; KEEP=1 keeps every run's logs)"
} >"$OUT"
cat "$OUT"
cp "$RESULTS" "$JET_BUILDDIR/bench-runs.txt"
[ "$fails" -eq 0 ]
