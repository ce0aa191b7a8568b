# plots/penalty.gp — throughput penalty of each scenario (technique stack) against the
# baseline stack: 100 × (1 − tokens/s ÷ baseline tokens/s); red bars cost throughput,
# green ones gain it.
#
# Usage: gnuplot -c plots/penalty.gp IN.tsv OUT.png|OUT.svg [TITLE]
# IN.tsv (made by `stepsim plot penalty`): header "label penalty", one row per scenario (%);
# a third column "note", when there, is printed instead of the figure where it is not "-"
# ("OOM", "baseline OOM": rows without a penalty, drawn at 0).

if (ARGC < 2) { print 'usage: gnuplot -c penalty.gp IN.tsv OUT.png|OUT.svg [TITLE]'; exit status 2 }
style_out = ARG2
datafile = ARG1
# Paths are only ever gnuplot strings (no shell, no command text built from them), so any
# path works: spaces, quotes, any length. The script's directory is ARG0 up to its last '/'.
script_dir = '.'
do for [i = strlen(ARG0):1:-1] { if (ARG0[i:i] eq '/') { script_dir = ARG0[1:i-1]; break } }
load script_dir . '/style.gp'
load script_dir . '/xlabels.gp'

chart_title = (ARGC >= 3 && ARG3 ne '') ? ARG3 : 'throughput penalty against the baseline'
stats datafile using 0 nooutput
nrow = STATS_records
stats datafile using 2 nooutput
has_note = STATS_columns >= 3

set title chart_title noenhanced
set ylabel 'throughput penalty against the baseline (%)'
set xlabel 'scenario'
set xrange [-0.6:nrow - 0.4]
set style fill solid 0.85 noborder
set boxwidth 0.7
set key off
set xzeroaxis lt -1 lw 1

# A note ("OOM", "baseline OOM") stands upright from the axis, where a bar would be: set
# level, two on neighbouring bars ran into one another (QA: "baseline OOMbaseline OOM").
plot datafile using 0:2:($2 > 0 ? 0xd62728 : 0x2ca02c):xtic(1) with boxes lc rgb variable notitle, \
     datafile using 0:2:(has_note && strcol(3) ne '-' ? '' : sprintf('%.1f%%', $2)) with labels offset 0, char 0.8 noenhanced notitle, \
     datafile using 0:(0):(has_note && strcol(3) ne '-' ? strcol(3) : '') with labels rotate by 90 left offset 0, char 0.5 noenhanced notitle
