/* sim/engine.c — placeholder until implemented. */
