# 1, 10 and 50 bindings in one host: the aggregate rate and the peak RSS per
# binding, jethost beside as many plain Fetch loops in one process
# (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "Bindings in one host: aggregate msgs/s (left), peak RSS per binding (right)"
set key top center
set xlabel "bindings"
set ylabel "msgs/s (all bindings)"
set y2label "MiB per binding"
set logscale x
set xtics (1, 10, 16, 50)
set xrange [0.8:70]
set yrange [0:*]
set y2range [0:*]
set ytics nomirror
set y2tics
set grid
plot datafile using 1:2 with linespoints lw 2 pt 7 title "jethost msgs/s", \
     '' using 1:3 with linespoints lw 2 pt 5 title "nats.c msgs/s", \
     '' using 1:4 axes x1y2 with linespoints dt 2 lw 2 pt 7 title "jethost MiB/binding", \
     '' using 1:5 axes x1y2 with linespoints dt 2 lw 2 pt 5 title "nats.c MiB/loop"
