# A 1 ms handler on 1, 2, 4, 8 workers: jethost, the plain nats.c pool and the
# ideal of workers x 1,000/s (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "Workers, 1 ms handler: msgs/s"
set key top left
set xlabel "workers"
set ylabel "msgs/s"
set logscale x 2
set xtics (1, 2, 4, 8)
set xrange [0.8:10]
set yrange [0:*]
set grid
plot datafile using 1:2 with lines dt 2 lw 2 title "ideal (workers x 1,000/s)", \
     '' using 1:3 with linespoints lw 2 pt 7 title "jethost", \
     '' using 1:4 with linespoints lw 2 pt 5 title "nats.c: one Fetch loop a worker"
