# SPDX-License-Identifier: MIT
# Plots for docs/results (issue #4 experiments 1-4), from data/*.csv as
# written by summarize.py. Run from docs/results: gnuplot plots.gp
set datafile separator ','
set terminal pngcairo size 1000,600
set key top right

set output 'e1-incast-ccdf.png'
set title 'Exp. 1: 15-to-1 incast + permutation, 16-host star: FCT CCDF (all flows, seeds 1-5 pooled)'
set xlabel 'flow completion time (us)'
set ylabel 'CCDF'
set logscale xy
set format y '%g'
plot for [c in 'window-sack swift-sack timely-sack dcqcn-sack hint-sack eqds-sack none-sack dcqcn-gbn'] \
	'data/e1-ccdf-'.c.'.csv' every ::1 using 1:2 with lines lw 2 title c
unset logscale

set output 'e2-loss.png'
set title 'Exp. 2: goodput kept vs random loss (one 64 MiB flow, 100G pair, 10 us delay)'
set xlabel 'loss per packet per link (%)'
set ylabel 'goodput kept (% of loss-free)'
set logscale x
set yrange [0:105]
plot for [m in 'sack,window gbn,window sack,none gbn,none'] \
	'data/e2-loss.csv' every ::1 using ((strcol(1).','.strcol(2)) eq m && $3 > 0 ? $3 : 1/0):6 \
	with linespoints lw 2 title m
unset logscale
set yrange [*:*]

set output 'e3-ecmp.png'
set title 'Exp. 3: permutation on 8x8 leaf-spine, goodput to the last completion (median of 5 seeds)'
set style data histograms
set style histogram clustered
set style fill solid 0.8
set boxwidth 0.9
set ylabel 'Gbit/s'
set xlabel 'spines, cc, paths, dupthresh'
set xtics rotate by -30
set rmargin 16                 # room for the last rotated label
plot 'data/e3-ecmp.csv' every ::1 using 7:xticlabels(strcol(1).' '.strcol(3).' p'.strcol(4).' d'.strcol(5)) notitle
unset rmargin
set style data lines
set xtics norotate

set output 'e4-fair.png'
set title 'Exp. 4: 8 flows to one host, one every 2 ms: per-flow throughput (seed 1)'
set xlabel 'time (us)'
set ylabel 'Gbit/s'
set multiplot layout 2,3
set key off
do for [c in 'window swift timely dcqcn hint eqds none'] {
	set title c
	plot for [i=3:10] 'data/e4-tput-'.c.'.csv' every ::1 using 1:i with lines
}
unset multiplot
