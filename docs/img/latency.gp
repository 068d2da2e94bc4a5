# Publish-to-handler latency at a steady 1,000 msgs/s: jethost beside the plain
# raw pull loop of the same run (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "Latency at 1,000 msgs/s: p50, p99, p99.9 (microseconds, log scale)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set key top left
set ylabel "microseconds"
set grid ytics
plot datafile using 3:xtic(sprintf("%s b%s", strcol(2), strcol(1))) title "p50", \
     '' using 4 title "p99", \
     '' using 5 title "p99.9"
