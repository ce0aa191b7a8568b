/* cli/report.c — placeholder until implemented. */
