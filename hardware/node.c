/* hardware/node.c — placeholder until implemented. */
