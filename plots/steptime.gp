# plots/steptime.gp — where the step time goes, per scenario (rank 0): forward, backward,
# recompute, optimizer, exposed communication, offload stalls and pipeline bubble stacked,
# with the simulated step time as a marker (streams overlap, so the stack can exceed it).
#
# Usage: gnuplot -c plots/steptime.gp IN.tsv OUT.png|OUT.svg [TITLE] [UNIT]
# IN.tsv (made by `stepsim plot steptime`): header "label forward backward recompute
# optimizer exposed communication offload stall pipeline bubble step time", one row per
# scenario, times in UNIT ("ms" or "s"). All-zero parts are left out of the chart.

if (ARGC < 2) { print 'usage: gnuplot -c steptime.gp IN.tsv OUT.png|OUT.svg [TITLE] [UNIT]'; exit status 2 }
style_out = ARG2
datafile = ARG1
# Paths are only ever gnuplot strings (no shell, no command text built from them), so any
# path works: spaces, quotes, any length. The script's directory is ARG0 up to its last '/'.
script_dir = '.'
do for [i = strlen(ARG0):1:-1] { if (ARG0[i:i] eq '/') { script_dir = ARG0[1:i-1]; break } }
load script_dir . '/style.gp'
load script_dir . '/xlabels.gp'

chart_title = (ARGC >= 3 && ARG3 ne '') ? ARG3 : 'step time breakdown'
unit = (ARGC >= 4 && ARG4 ne '') ? ARG4 : 's'
# Columns: the last one with numbers (column 1 holds the labels; no shell, any path).
ncol = 1
do for [i = 2:256] { stats datafile using (valid(i) ? 1 : 0) nooutput; if (STATS_max == 0) { break }; ncol = i }
stats datafile using 0 nooutput
nrow = STATS_records

# Same colours as the Gantt chart's task kinds.
set linetype 21 lc rgb '#1f77b4'
set linetype 22 lc rgb '#ff7f0e'
set linetype 23 lc rgb '#d62728'
set linetype 24 lc rgb '#2ca02c'
set linetype 25 lc rgb '#9467bd'
set linetype 26 lc rgb '#8c564b'
set linetype 27 lc rgb '#bcbd22'

set title chart_title noenhanced
set ylabel sprintf('time per step (%s)', unit)
set xlabel 'scenario'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb 'white'
set boxwidth 0.7
set xrange [-0.6:nrow - 0.4]
set yrange [0:*]

cmd = ''
do for [i=2:ncol-1] {
  stats datafile using i nooutput
  if (STATS_max > 0) {
    cmd = cmd . sprintf("datafile using %d:xtic(1) lt %d title columnhead(%d), ", i, 19 + i, i)
  }
}
if (strlen(cmd) == 0) { print 'steptime.gp: nothing to plot'; exit status 1 }
cmd = cmd . sprintf("datafile using 0:%d with points pt 7 ps 1.3 lc rgb '#000000' title 'step time', ", ncol)
eval('plot ' . cmd[1:strlen(cmd)-2])
