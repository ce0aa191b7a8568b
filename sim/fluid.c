/* sim/fluid.c — placeholder until implemented. */
