# gnuplot scripts: plots/ in the tree, $(pkgdatadir)/plots installed.
plotsdir = $(pkgdatadir)/plots
dist_plots_DATA = plots/style.gp plots/memory.gp plots/gantt.gp plots/breakdown.gp \
	plots/steptime.gp plots/sweep.gp plots/penalty.gp plots/cost.gp plots/xlabels.gp
