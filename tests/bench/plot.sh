#!/usr/bin/env bash
# Draws the bench's curves: tests/bench/plot.sh DATA_DIR OUT_DIR
# DATA_DIR holds what run.sh wrote ($JET_BUILDDIR/bench-data: method.dat,
# latency.dat, workers.dat, payload.dat, bindings.dat, retry.dat, capture.dat,
# hosts.dat); each that is there is drawn with its
# script docs/img/<name>.gp into OUT_DIR/<name>.png.  docs/img holds the
# committed PNGs: `tests/bench/plot.sh build/bench-data docs/img` refreshes
# them from a run.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: plot.sh DATA_DIR OUT_DIR" >&2; exit 1; }
data=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
gp_dir=$here/../../docs/img
GNUPLOT=${GNUPLOT:-gnuplot}
mkdir -p "$out" || exit 1
rc=0
for dat in "$data"/*.dat; do
    [ -f "$dat" ] || continue
    name=$(basename "$dat" .dat)
    [ -f "$gp_dir/$name.gp" ] || continue
    # the scripts read their data and write their image through these two
    if "$GNUPLOT" -e "datafile='$dat'; outfile='$out/$name.png'" "$gp_dir/$name.gp"; then
        printf 'bench: drew %s\n' "$out/$name.png" >&2
    else
        rc=1
    fi
done
exit $rc
