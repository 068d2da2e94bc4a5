# The capture path as a curve: every message REJECTed, captured to the DLQ
# stream (pub-ack), then acked with confirmation, on 1, 2, 4 workers; jethost
# beside as many plain capture loops on the one consumer (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "Capture path, batch 10: msgs/s by workers"
set key top left
set xlabel "workers"
set ylabel "msgs/s"
set logscale x 2
set xtics (1, 2, 4, 8)
set xrange [0.8:5]
set yrange [0:*]
set grid
plot datafile using 1:2 with linespoints lw 2 pt 7 title "jethost (reject)", \
     '' using 1:3 with linespoints lw 2 pt 5 title "nats.c: one capture loop a worker"
