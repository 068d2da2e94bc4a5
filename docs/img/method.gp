# The bench's own method: the anchor (natsbench.c) timed by itself, alone and
# under each floor poller, and jethost under each poller (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "What the floor poller costs: msgs/s by batch"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left
set ylabel "msgs/s"
set yrange [0:*]
set grid ytics
plot datafile using 2:xtic(1) title "anchor alone (no poller)", \
     '' using 3 title "anchor under the 5 ms poller", \
     '' using 4 title "anchor under the rare poller", \
     '' using 7 title "jethost, 5 ms poller", \
     '' using 8 title "jethost, rare poller"
