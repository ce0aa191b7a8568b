# plots/style.gp — shared look of every stepsim chart. Loaded by each figure script with
#   load sprintf('%s/style.gp', dir)
# The caller defines style_out first. Sets the terminal from the output file's extension (.png or .svg), fonts, grid, and one
# colour per memory category / task kind (linetypes 1..10) so charts agree with each other.

# The caller sets style_out (the output path) before loading this file.
# style_terminal(W, H): the command that sets the terminal at W × H pixels (a figure may
# enlarge its canvas later, e.g. plots/xlabels.gp for long scenario labels).
style_svg = style_out[strlen(style_out)-3:] eq '.svg'
style_terminal(w, h) = style_svg \
  ? sprintf("set terminal svg size %d,%d dynamic enhanced font 'Helvetica,12' background rgb 'white'", w, h) \
  : sprintf("set terminal pngcairo size %d,%d enhanced font 'Helvetica,11' background rgb 'white'", w, h)
eval(style_terminal(1100, 620))
set output style_out

set border 3 lw 1 lc rgb '#444444'
set tics nomirror out
set grid ytics lc rgb '#dddddd' lw 1 dt 1
set key outside right top vertical Left reverse noenhanced samplen 2 spacing 1.1 box lc rgb '#cccccc'
set datafile separator "\t"
set datafile columnheaders

# Category colours, in the order of the ledger's categories (models/memory/ledger.h):
# weights, master_weights, gradients, optimizer_state, activations, workspace,
# comm_buffers, offload_staging, lora, quantization.
set linetype 1  lc rgb '#1f77b4'
set linetype 2  lc rgb '#aec7e8'
set linetype 3  lc rgb '#ff7f0e'
set linetype 4  lc rgb '#2ca02c'
set linetype 5  lc rgb '#d62728'
set linetype 6  lc rgb '#9467bd'
set linetype 7  lc rgb '#8c564b'
set linetype 8  lc rgb '#e377c2'
set linetype 9  lc rgb '#7f7f7f'
set linetype 10 lc rgb '#bcbd22'
