/* models/arch.c — placeholder until implemented. */
