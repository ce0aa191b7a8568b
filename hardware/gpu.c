/* hardware/gpu.c — placeholder until implemented. */
