EXTRA_DIST += $(wildcard $(srcdir)/scenarios/*.ini)
