# plots/memory.gp — memory of one rank over the step, stacked by category, with the GPU's
# capacity as a dashed line and, after an out-of-memory, the moment it happened.
#
# Usage: gnuplot -c plots/memory.gp IN.tsv OUT.png|OUT.svg [CAPACITY_GIB] [TITLE] [OOM_TIME]
#        [OOM_TEXT]
# OOM_TIME (s) and OOM_TEXT (lines: the failing request's size, category and task, then the
# live buffers; `stepsim plot memory` passes them from /summary) draw a red line at the OOM
# (in the key) and the text below the chart. After it the stack is the step as planned (what it
# would need).
# IN.tsv is `stepsim export RUN.h5 /series/rank0/memory`: a header line "time<TAB>weights
# <TAB>…", then change points (time in s, bytes per category, each a step function).
# Categories that stay at zero are left out of the chart and its key.

if (ARGC < 2) { print 'usage: gnuplot -c memory.gp IN.tsv OUT.png|OUT.svg [CAPACITY_GIB] [TITLE] [OOM_TIME] [OOM_TEXT]'; exit status 2 }
style_out = ARG2
datafile = ARG1
# Paths are only ever gnuplot strings (no shell, no command text built from them), so any
# path works: spaces, quotes, any length. The script's directory is ARG0 up to its last '/'.
script_dir = '.'
do for [i = strlen(ARG0):1:-1] { if (ARG0[i:i] eq '/') { script_dir = ARG0[1:i-1]; break } }
load script_dir . '/style.gp'

capacity = (ARGC >= 3 && ARG3 ne '') ? real(ARG3) : 0
chart_title = (ARGC >= 4) ? ARG4 : 'memory over one step'
stats datafile nooutput
ncol = STATS_columns
GiB = 1024.0**3

set title chart_title noenhanced
set xlabel 'time in the step (s)'
set ylabel 'allocated memory (GiB)'
set yrange [0:*]
set style fill solid 1.0 noborder

# Cumulative sum of categories 2..i: the top edge of category i in the stack.
cum(i) = sum [c=2:i] column(c)

cmd = ''
do for [i=ncol:2:-1] {
  stats datafile using i nooutput
  if (STATS_max > 0) {
    cmd = cmd . sprintf("datafile using 1:(cum(%d)/GiB) with fillsteps lt %d title columnhead(%d), ", i, i-1, i)
  }
}
# The axis shows both the capacity and the highest stack, so an OOM's overshoot stays
# visible above the capacity line.
stats datafile using (cum(ncol)/GiB) nooutput
top = (STATS_max > capacity ? STATS_max : capacity)
if (top > 0) { set yrange [0:top*1.08] }
if (capacity > 0) {
  cmd = cmd . sprintf("%g with lines dt 2 lw 2 lc rgb '#000000' title sprintf('capacity %%.1f GiB', %g), ", capacity, capacity)
}
# The OOM: a red line at its time, named in the key, and its text (the request, then
# the live buffers, a line each) in a box below the x axis's label, in a bottom margin grown
# by its lines (the canvas grows as much): inside the plot it would cover the stack, the
# line or the key.
if (ARGC >= 5 && ARG5 ne '') {
  oom_t = real(ARG5)
  oom_text = ARGC >= 6 ? ARG6 : 'OOM'
  oom_lines = 1
  do for [i = 1:strlen(oom_text)] { if (oom_text[i:i] eq "\n") { oom_lines = oom_lines + 1 } }
  eval(style_terminal(1100, 620 + 16 * (oom_lines + 2)))
  set bmargin oom_lines + 6
  set arrow 1 from oom_t, graph 0 to oom_t, graph 1 nohead lw 2 lc rgb '#d62728' front
  cmd = cmd . sprintf("NaN with lines lw 2 lc rgb '#d62728' title 'OOM at t = %.4g s', ", oom_t)
  set label 1 oom_text at character 2, character (oom_lines + 1) left front noenhanced \
      tc rgb '#d62728' boxed
  set style textbox opaque fc rgb '#ffffff' border lc rgb '#d62728'
}
if (strlen(cmd) == 0) { print 'memory.gp: nothing to plot'; exit status 1 }
eval('plot ' . cmd[1:strlen(cmd)-2])
