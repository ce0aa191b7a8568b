/* sim/h5out.c — placeholder until implemented. */
