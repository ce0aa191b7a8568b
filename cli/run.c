/* cli/run.c — placeholder until implemented. */
