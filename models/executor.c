/* models/executor.c — placeholder until implemented. */
