/* models/hf_config.c — placeholder until implemented. */
