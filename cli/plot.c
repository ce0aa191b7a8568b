/* cli/plot.c — placeholder until implemented. */
