/* models/plan.c — placeholder until implemented. */
