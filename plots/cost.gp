# plots/cost.gp — cost against time to train of every plan of a batch that fits (both axes
# logarithmic), each point numbered and listed on the right with its label (hardware and
# stack), the Pareto front (no other plan is both faster and cheaper) joined and ringed.
#
# Usage: gnuplot -c plots/cost.gp IN.tsv OUT.png|OUT.svg TITLE CAPTION STYLE.gp UNIT
# IN.tsv (made by `stepsim plot cost`): header "time cost front number label label_x
# label_y", one row per plan in time order (time in UNIT: hours or days; label_x/y: where
# its number goes, placed clear of the others by stepsim); then (index 1) the Pareto
# front's rows alone. CAPTION says how many rows were left out (OOM). STYLE.gp is
# plots/style.gp, passed in so that no path goes through a shell.

if (ARGC < 6) { print 'usage: gnuplot -c cost.gp IN.tsv OUT.png|OUT.svg TITLE CAPTION STYLE.gp UNIT'; exit status 2 }
style_out = ARG2
load ARG5
if (style_out[strlen(style_out)-3:] eq '.svg') {
  set terminal svg size 1400,760 dynamic enhanced font 'Helvetica,12' background rgb 'white'
} else {
  set terminal pngcairo size 1400,760 enhanced font 'Helvetica,11' background rgb 'white'
}
set output style_out

stats ARG1 index 0 using 1:2 nooutput
n = STATS_records
xlo = STATS_min_x / 1.6; xhi = STATS_max_x * 1.6
ylo = STATS_min_y / 1.6; yhi = STATS_max_y * 1.6

set multiplot title ARG3 noenhanced font ',13'

# --- the chart, left --------------------------------------------------------------------
set lmargin at screen 0.08
set rmargin at screen 0.56
set tmargin at screen 0.90
set bmargin at screen 0.16
set logscale xy
set xrange [xlo:xhi]
set yrange [ylo:yhi]
set xlabel sprintf('time to train (%s, log scale)', ARG6)
set ylabel 'cost (in the currency of the scenarios'' [cost], log scale)'
# 1-2-5 ticks on both log axes (gnuplot's default log ticks are decades only); an axis
# spanning less than a decade (plans close in cost or time) gets 1-1.5-2-3-4-5-7 ticks, so
# it has more than one
xm = (xhi / xlo < 10) ? "1 1.5 2 3 4 5 7" : "1 2 5"
ym = (yhi / ylo < 10) ? "1 1.5 2 3 4 5 7" : "1 2 5"
set xtics () ; set ytics ()
do for [e = -4:7] {
  do for [m in xm] {
    v = real(m) * 10.0**e
    if (v >= xlo && v <= xhi) { set xtics add (sprintf('%g', v) v) }
  }
  do for [m in ym] {
    v = real(m) * 10.0**e
    if (v >= ylo && v <= yhi) { set ytics add (sprintf('%g', v) v) }
  }
}
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4'
set key inside left top box opaque
set label 1 ARG4 noenhanced at screen 0.08, screen 0.05 left font ',10' tc rgb '#444444'
plot ARG1 index 1 using 1:2 with lines lw 2 lc rgb '#d62728' title 'Pareto front', \
     ARG1 index 0 using 1:2 with points pt 7 ps 1.1 lc rgb '#1f77b4' title 'plan (number: list on the right)', \
     ARG1 index 1 using 1:2 with points pt 6 ps 2.0 lw 2 lc rgb '#d62728' notitle, \
     ARG1 index 0 using 6:7:(sprintf('%d', $4)) with labels font ',9' notitle

# --- the list of plans, right -------------------------------------------------------------
unset label 1
unset logscale
unset grid
unset key
unset border
unset tics
unset xlabel
unset ylabel
set lmargin at screen 0.58
set rmargin at screen 0.99
set tmargin at screen 0.90
set bmargin at screen 0.05
set xrange [0:1]
set yrange [n + 0.5:0.5]
list_font = n > 30 ? ',8' : ',10'
tu = ARG6 eq 'hours' ? 'h' : 'd'
plot ARG1 index 0 using (0):4:(sprintf('%2d  %s%s  (%.3g %s, %.4g)', $4, ($3 == 1 ? '* ' : ''), \
       stringcolumn(5), $1, tu, $2)) with labels left noenhanced font list_font notitle
unset multiplot
