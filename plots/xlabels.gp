# plots/xlabels.gp — x tic labels that are never clipped, for the bar charts of a batch
# (breakdown, steptime, penalty: one bar per scenario, labelled from column 1 of `datafile`).
#
# Loaded after style.gp with `datafile` set. Short labels (at most 30 characters) are slanted
# by 25° as before; longer ones stand upright (90°), so they need height, not width. The
# margins are set from the longest label in pixels, and the canvas grows by what the
# default margins (24 characters left, 10 lines below) cannot hold. A character is taken as
# 7 px wide (Helvetica 11–12 pt averages ~6.5 px; the excess is a safety margin).

stats datafile using (strlen(strcol(1))) nooutput
xl_longest = STATS_max
xl_char = 7.0
xl_slanted = xl_longest <= 30
# extent of the longest label left of and below its tic (px), plus the x axis title
xl_left = xl_slanted ? 0.906 * xl_longest * xl_char + 20 : 0
xl_down = (xl_slanted ? 0.423 * xl_longest * xl_char : xl_longest * xl_char) + 60
xl_left = xl_left > 170 ? xl_left : 170.0
xl_down = xl_down > 170 ? xl_down : 170.0
xl_width = 1100 + (xl_left - 170)
xl_height = 620 + (xl_down - 170)
eval(style_terminal(int(xl_width), int(xl_height)))
if (xl_slanted) {
  set xtics rotate by 25 right noenhanced
} else {
  set xtics rotate by 90 right noenhanced
}
set lmargin at screen xl_left / xl_width
set bmargin at screen xl_down / xl_height
