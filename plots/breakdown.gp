# plots/breakdown.gp — device memory at the peak for each scenario of a batch, stacked by
# category (plus the allocator's cache and the CUDA context, so a bar's top is device-used
# memory, what nvidia-smi shows), with the GPU's capacity as a dashed line.
#
# Usage: gnuplot -c plots/breakdown.gp IN.tsv OUT.png|OUT.svg [TITLE] [CAPACITY_GIB]
# IN.tsv (made by `stepsim plot breakdown`): header "label <category>… allocator cache
# CUDA context", one row per scenario, values in GiB. All-zero columns are left out of the
# chart and its key; columns keep the colours of memory.gp (style.gp linetypes).

if (ARGC < 2) { print 'usage: gnuplot -c breakdown.gp IN.tsv OUT.png|OUT.svg [TITLE] [CAPACITY_GIB]'; exit status 2 }
style_out = ARG2
script_dir = system(sprintf("dirname '%s'", ARG0))
load sprintf('%s/style.gp', script_dir)

chart_title = (ARGC >= 3 && ARG3 ne '') ? ARG3 : 'device memory at the peak'
capacity = (ARGC >= 4 && ARG4 ne '') ? real(ARG4) : 0
ncol = int(system(sprintf("head -n 1 '%s' | awk -F'\t' '{print NF}'", ARG1)))
nrow = int(system(sprintf("tail -n +2 '%s' | grep -c .", ARG1)))

set linetype 11 lc rgb '#c7c7c7'
set linetype 12 lc rgb '#555555'

set title chart_title noenhanced
set ylabel 'device memory at the peak (GiB)'
set xlabel 'scenario'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb 'white'
set boxwidth 0.7
set xtics rotate by 25 right noenhanced
set lmargin 24
set xrange [-0.6:nrow - 0.4]
set yrange [0:*]
set bmargin 10

cmd = ''
do for [i=2:ncol] {
  stats ARG1 using i nooutput
  if (STATS_max > 0) {
    cmd = cmd . sprintf("'%s' using %d:xtic(1) lt %d title columnhead(%d), ", ARG1, i, i - 1, i)
  }
}
if (strlen(cmd) == 0) { print 'breakdown.gp: nothing to plot'; exit status 1 }
if (capacity > 0) {
  set yrange [0:*]
  cmd = cmd . sprintf("%g with lines dt 2 lw 2 lc rgb '#000000' title sprintf('capacity %%.1f GiB', %g), ", capacity, capacity)
}
eval('plot ' . cmd[1:strlen(cmd)-2])
