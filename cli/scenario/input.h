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
 * there). A leading UTF-8 byte-order mark is dropped. *text is untouched on failure. */
gboolean cli_input_read (const char *path, char **text, gsize *length, GError **error);

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
