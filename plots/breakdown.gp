# plots/breakdown.gp — device memory at the peak for each scenario of a batch, stacked by
# category (plus the allocator's cache and the CUDA context, so a bar's top is device-used
# memory, what nvidia-smi shows), with each GPU's capacity: a dashed line when every
# scenario has the same GPU, else a black mark over each bar at its own GPU's capacity.
#
# Usage: gnuplot -c plots/breakdown.gp IN.tsv OUT.png|OUT.svg [TITLE]
# IN.tsv (made by `stepsim plot breakdown`): header "label <category>… allocator cache
# CUDA context capacity", one row per scenario, values in GiB; a label ending in "(OOM)"
# is a scenario that ran out of memory (its bar: what was held at the failure). All-zero
# columns are left out of the chart and its key; columns keep the colours of memory.gp
# (style.gp linetypes).

if (ARGC < 2) { print 'usage: gnuplot -c breakdown.gp IN.tsv OUT.png|OUT.svg [TITLE]'; exit status 2 }
style_out = ARG2
datafile = ARG1
# Paths are only ever gnuplot strings (no shell, no command text built from them), so any
# path works: spaces, quotes, any length. The script's directory is ARG0 up to its last '/'.
script_dir = '.'
do for [i = strlen(ARG0):1:-1] { if (ARG0[i:i] eq '/') { script_dir = ARG0[1:i-1]; break } }
load script_dir . '/style.gp'
load script_dir . '/xlabels.gp'

chart_title = (ARGC >= 3 && ARG3 ne '') ? ARG3 : 'device memory at the peak'
# Columns: the last one with numbers (column 1 holds the labels; no shell, any path).
ncol = 1
do for [i = 2:256] { stats datafile using (valid(i) ? 1 : 0) nooutput; if (STATS_max == 0) { break }; ncol = i }
stats datafile using 0 nooutput
nrow = STATS_records

set linetype 11 lc rgb '#c7c7c7'
set linetype 12 lc rgb '#555555'

set title chart_title noenhanced
set ylabel 'device memory at the peak (GiB)'
set xlabel 'scenario'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb 'white'
set boxwidth 0.7
set xrange [-0.6:nrow - 0.4]
set yrange [0:*]
set offsets 0, 0, graph 0.06, 0   # headroom above the tallest bar or capacity mark

cmd = ''
do for [i=2:ncol-1] {
  stats datafile using i nooutput
  if (STATS_max > 0) {
    cmd = cmd . sprintf("datafile using %d:xtic(1) lt %d title columnhead(%d), ", i, i - 1, i)
  }
}
if (strlen(cmd) == 0) { print 'breakdown.gp: nothing to plot'; exit status 1 }
stats datafile using ncol nooutput
if (STATS_min == STATS_max) {
  cmd = cmd . sprintf("%g with lines dt 2 lw 2 lc rgb '#000000' title sprintf('capacity %%.1f GiB', %g), ", STATS_max, STATS_max)
} else {
  cmd = cmd . sprintf("datafile using 0:%d:(0.42) with xerrorbars pt -1 lw 3 lc rgb '#000000' title 'capacity of its GPU', ", ncol)
}
eval('plot ' . cmd[1:strlen(cmd)-2])
