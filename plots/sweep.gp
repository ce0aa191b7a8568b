# plots/sweep.gp — one metric of a batch against one numeric sweep axis (e.g. tokens/s
# against GPU count, peak memory against micro-batch), one line per value of a second axis.
#
# Usage: gnuplot -c plots/sweep.gp IN.tsv OUT.png|OUT.svg [TITLE] [YLABEL] [XLABEL]
# IN.tsv (made by `stepsim plot sweep`): blocks separated by two blank lines, each with a
# header "x<TAB><line title>" and rows "x<TAB>y" sorted by x, y already in YLABEL's unit.

if (ARGC < 2) { print 'usage: gnuplot -c sweep.gp IN.tsv OUT.png|OUT.svg [TITLE] [YLABEL] [XLABEL]'; exit status 2 }
style_out = ARG2
datafile = ARG1
# Paths are only ever gnuplot strings (no shell, no command text built from them), so any
# path works: spaces, quotes, any length. The script's directory is ARG0 up to its last '/'.
script_dir = '.'
do for [i = strlen(ARG0):1:-1] { if (ARG0[i:i] eq '/') { script_dir = ARG0[1:i-1]; break } }
load script_dir . '/style.gp'

chart_title = (ARGC >= 3 && ARG3 ne '') ? ARG3 : 'sweep'
set title chart_title noenhanced
set ylabel ((ARGC >= 4 && ARG4 ne '') ? ARG4 : 'value') noenhanced
set xlabel ((ARGC >= 5 && ARG5 ne '') ? ARG5 : 'axis') noenhanced
set grid xtics ytics
# Strong, distinct colours for the lines (the light category colours of style.gp are for areas).
set linetype 31 lc rgb '#1f77b4'
set linetype 32 lc rgb '#d62728'
set linetype 33 lc rgb '#2ca02c'
set linetype 34 lc rgb '#ff7f0e'
set linetype 35 lc rgb '#9467bd'
set linetype 36 lc rgb '#8c564b'
set linetype 37 lc rgb '#e377c2'
set linetype 38 lc rgb '#17becf'
set yrange [0:*]
set offsets graph 0.02, graph 0.02, graph 0.05, 0

stats datafile using 1 nooutput
nblocks = STATS_blocks
# An axis of whole numbers (micro-batches, GPUs, layers) spanning less than 10 gets a tick
# at every whole number: gnuplot's own steps of 0.5 there drew micro-batch 1.5 (QA). Wider
# spans get whole-number steps from gnuplot already.
x_span = STATS_max - STATS_min
stats datafile using (column(1) == floor(column(1)) ? 0 : 1) nooutput
if (STATS_max == 0 && x_span < 10) { set xtics 1 }
# Line titles are never clipped: read each block's header as data to find the longest; past
# 40 characters the key goes below the plot, one title a line, and the canvas grows to the
# longest title (7 px a character, Helvetica 11–12 pt averaging ~6.5 px) and the lines.
set datafile nocolumnheaders
stats datafile every ::0::0 using (strlen(strcol(2))) nooutput
set datafile columnheaders
key_longest = STATS_max
if (key_longest > 40) {
  key_w = 7.0 * key_longest + 120
  eval(style_terminal(int(key_w > 1100 ? key_w : 1100), 620 + 20 * nblocks))
  set key below vertical maxcols 1
}
# A third column "OOM" (1 on a point out of memory: the step as planned, which cannot run)
# rings those points in black, with one key entry.
stats datafile using (valid(3) && column(3) > 0 ? 1 : 0) nooutput
has_oom = STATS_max > 0
if (has_oom) {
  plot for [i=0:nblocks-1] datafile index i using 1:2 with linespoints lw 2 pt 7 ps 1.1 lt 31 + i % 8 title columnhead(2), \
       for [i=0:nblocks-1] datafile index i using 1:($3 > 0 ? $2 : NaN) with points pt 6 ps 2.4 lw 2 lc rgb '#000000' title (i == 0 ? 'out of memory (OOM)' : '')
} else {
  plot for [i=0:nblocks-1] datafile index i using 1:2 with linespoints lw 2 pt 7 ps 1.1 lt 31 + i % 8 title columnhead(2)
}
