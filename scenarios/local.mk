EXTRA_DIST += $(wildcard $(srcdir)/scenarios/*.ini) $(wildcard $(srcdir)/scenarios/*.json)
