# plots/gantt.gp — every stream of the selected ranks over one step: one lane per (rank,
# stream), one bar per task, coloured by task kind (compute, recompute, communication,
# offload), so overlap and idle gaps show.
#
# Usage: gnuplot -c plots/gantt.gp IN.tsv OUT.png|OUT.svg [TITLE] [UNIT] [KINDS]
# IN.tsv (made by `stepsim plot gantt`): header "start end lane kind lane_name", one row per
# task: start and end in UNIT ("ms" or "s"), lane (0 = bottom), kind (index into KINDS, the
# space-separated kind names present), lane name ("rank 0 compute").

if (ARGC < 2) { print 'usage: gnuplot -c gantt.gp IN.tsv OUT.png|OUT.svg [TITLE] [UNIT] [KINDS]'; exit status 2 }
style_out = ARG2
datafile = ARG1
# Paths are only ever gnuplot strings (no shell, no command text built from them), so any
# path works: spaces, quotes, any length. The script's directory is ARG0 up to its last '/'.
script_dir = '.'
do for [i = strlen(ARG0):1:-1] { if (ARG0[i:i] eq '/') { script_dir = ARG0[1:i-1]; break } }
load script_dir . '/style.gp'

chart_title = (ARGC >= 3 && ARG3 ne '') ? ARG3 : 'streams over one step'
unit = (ARGC >= 4 && ARG4 ne '') ? ARG4 : 's'
kinds = (ARGC >= 5 && ARG5 ne '') ? ARG5 : 'forward backward recompute optimizer collective offload'

# One colour per task kind, the same in every Gantt chart.
kind_color(k) = k eq 'forward' ? '#1f77b4' : k eq 'backward' ? '#ff7f0e' : \
                k eq 'recompute' ? '#d62728' : k eq 'optimizer' ? '#2ca02c' : \
                k eq 'collective' ? '#9467bd' : k eq 'offload' ? '#8c564b' : '#7f7f7f'

stats datafile using 3 nooutput
nlanes = int(STATS_max) + 1
stats datafile using 2 nooutput
t_end = STATS_max

set title chart_title noenhanced
set xlabel sprintf('time in the step (%s)', unit)
set ylabel 'rank and stream'
set xrange [0:t_end * 1.01]
set yrange [-0.6:nlanes - 0.4]
set ytics nomirror noenhanced
# Lane names as y tics: every task's row carries its lane's name to an invisible point
# (ytic(5)); gnuplot keeps one tic per position, so each lane is labelled once.
set ytics ()
set grid xtics ytics
set style fill solid 0.9 noborder

plot datafile using (0):3:ytic(5) with points ps 0 lc rgb '#FF000000' notitle, \
     for [k=1:words(kinds)] datafile \
     using (($1 + $2) / 2):(column(4) == k - 1 ? $3 : NaN):(($2 - $1) / 2):(0.38) \
     with boxxyerror lc rgb kind_color(word(kinds, k)) title word(kinds, k)
