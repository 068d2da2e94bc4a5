# The retry path: every message fails once (ledger write, delayed NAK) and is
# acked on its redelivery; jethost beside `rawloop retry`, at batch 10 and 100
# (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "Retry path (every message fails once): messages finally acked /s"
set key top left
set xlabel "batch"
set ylabel "msgs/s"
set logscale x 10
set xtics (10, 100)
set xrange [6:160]
set yrange [0:*]
set grid
plot datafile using 1:2 with linespoints lw 2 pt 7 title "jethost (retry-once, ledger on)", \
     '' using 1:3 with linespoints lw 2 pt 5 title "nats.c: KV create + NAK, then KV get + ack + KV delete"
