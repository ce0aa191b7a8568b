dist_pkgdata_DATA += plots/style.gp plots/memory.gp
