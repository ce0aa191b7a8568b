/* models/stack.c — placeholder until implemented. */
