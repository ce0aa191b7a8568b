/* models/cost.c — placeholder until implemented. */
