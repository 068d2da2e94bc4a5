# Payload sizes 128 B to 1 MiB: MB/s of payload, jethost beside the plain
# nats.c Fetch and raw pull loops (tests/bench/plot.sh).
set terminal pngcairo size 900,520 font ",10"
set output outfile
set title "Payload size: MB/s of payload (batch 10)"
set key top left
set xlabel "payload bytes"
set ylabel "MB/s"
set logscale x 2
set logscale y
set xtics ("128" 128, "4 KiB" 4096, "64 KiB" 65536, "1 MiB" 1048576)
set grid
plot datafile using 1:2 with linespoints lw 2 pt 7 title "jethost", \
     '' using 1:3 with linespoints lw 2 pt 5 title "nats.c Fetch", \
     '' using 1:4 with linespoints lw 2 pt 9 title "raw pull protocol"
