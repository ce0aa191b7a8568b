/* sim/recorder.c — placeholder until implemented. */
