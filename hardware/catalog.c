/* hardware/catalog.c — placeholder until implemented. */
