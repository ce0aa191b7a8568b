/* cli/scenario/input.h — reading the text files the command takes as input (scenarios, sweeps, the
 * scenario a `collective` run names), with the limits of hf_config (models/arch/hf_config.c):
 * a regular file of at most 16 MiB. A device, FIFO or directory (/dev/zero, a pipe) is
 * refused before any byte is read, so a bad path is one error, never a read without end. */
#pragma once

#include <glib.h>

enum
{
  CLI_INPUT_MAX_BYTES = 16 * 1024 * 1024, /* as the hf_config limit */
};

/* Reads all of `path` into *text (NUL-terminated, caller frees; *length bytes without the
 * NUL, `length` may be NULL). FALSE + G_FILE_ERROR whose message starts with the path when
 * the file cannot be opened or read, is not a regular file, is larger than
 * CLI_INPUT_MAX_BYTES, or holds a NUL byte (not a text file: GKeyFile would silently stop
 * there). A leading UTF-8 byte-order mark is dropped. *text is untouched on failure. Under an
 * input memo (below), a path read successfully before is answered from its kept text. */
gboolean cli_input_read (const char *path, char **text, gsize *length, GError **error);

/* A memo of inputs for a command that loads the same files over and over (stepsim batch:
 * every scenario of a sweep reads its base scenario and its hf_config, ~3.5 % of a sweep of
 * small scenarios in opening, reading and parsing them again, bench/RESULTS.md). Between
 * cli_input_memo_begin() and cli_input_memo_end(), cli_input_read() keeps the text of each
 * file it reads successfully, by path (the string as given), and answers later reads of that
 * path with a copy of it; callers keep what they parse from a file the same way
 * (cli_input_memo_keep). So each file is read once, as it was at its first read: a file
 * edited while the command runs does not change its later scenarios. A read or parse that
 * fails is never kept: it fails again, with the same message, at every call. Thread-safe.
 * Begin and end are called from one thread, around the work (not nested). */
void cli_input_memo_begin (void);
void cli_input_memo_end (void); /* frees everything kept */

/* What was kept under (`kind`, `path`) (borrowed, valid until cli_input_memo_end), or NULL
 * when nothing was or no memo is active. */
gconstpointer cli_input_memo_lookup (const char *kind, const char *path);

/* Keeps `value` (taken; freed with `free_value` at the memo's end) under (`kind`, `path`)
 * when a memo is active and nothing is kept there yet; else frees it at once. */
void cli_input_memo_keep (const char *kind, const char *path, gpointer value,
                          GDestroyNotify free_value);

/* NULL when `path` is a regular file (following links); else what it is, for a message:
 * "no such file", "is a directory, not a file", "is a device, not a file", "is a FIFO, not
 * a file", "is not a regular file" or "cannot be read" (static strings). */
const char *cli_input_path_problem (const char *path);

/* Reads `path` with cli_input_read() and parses it into `kf` (GKeyFile syntax only: no
 * schema). FALSE + an error whose message starts with the path. */
gboolean cli_input_load_keyfile (GKeyFile *kf, const char *path, GError **error);

/* The file name of `path` without its directory and last extension ("a/s1.ini" → "s1"):
 * the stem outputs, default names and scenario names are made from (a leaf here, so the
 * loader and the output checks both use it and neither calls the other back). Caller frees. */
char *cli_file_stem (const char *path);
