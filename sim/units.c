/* sim/units.c — placeholder until implemented. */
