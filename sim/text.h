/* sim/text.h — small text helpers for error messages. */
#pragma once

#include <glib.h>

/* Returns the candidate closest to `word` by Levenshtein distance (case-insensitive), or
 * NULL when none is within max(2, strlen(word)/3) edits. `candidates` is a NULL-terminated
 * array (borrowed); the result points into it. Ties go to the earliest candidate. */
const char *sim_text_nearest (const char *word, const char *const *candidates);

/* Appends "; did you mean 'X'?" to `message` when sim_text_nearest() finds X, and returns
 * the (possibly reallocated) message. Takes ownership of `message`; caller frees result. */
char *sim_text_with_hint (char *message, const char *word, const char *const *candidates);

/* 1235814400 → "1,235,814,400" (counts are read digit by digit against papers). Caller
 * frees. */
char *sim_text_group_digits (guint64 n);
