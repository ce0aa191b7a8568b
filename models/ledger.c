/* models/ledger.c — placeholder until implemented. */
