# Two processes on one durable consumer against one: jethost hosts beside
# plain `rawloop fetch` processes, at batch 10 and 100 (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "Processes on one consumer: aggregate msgs/s"
set key top left
set xlabel "batch"
set ylabel "msgs/s"
set logscale x 10
set xtics (10, 100)
set xrange [6:160]
set yrange [0:*]
set grid
plot datafile using 1:2 with linespoints lw 2 pt 7 title "jethost, 1 process", \
     '' using 1:3 with linespoints lw 2 pt 7 dt 2 title "jethost, 2 processes", \
     '' using 1:4 with linespoints lw 2 pt 5 title "nats.c Fetch, 1 process", \
     '' using 1:5 with linespoints lw 2 pt 5 dt 2 title "nats.c Fetch, 2 processes"
