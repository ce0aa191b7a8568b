/* cli/scenario.c — placeholder until implemented. */
