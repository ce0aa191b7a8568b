/* sim/text.h — small text helpers for error messages. */
#pragma once

#include <glib.h>
#include <stdarg.h>

/* Returns the candidate closest to `word` by Levenshtein distance (case-insensitive), or
 * NULL when none is within max(2, strlen(word)/3) edits. `candidates` is a NULL-terminated
 * array (borrowed); the result points into it. Ties go to the earliest candidate. */
const char *sim_text_nearest (const char *word, const char *const *candidates);

/* Appends "; did you mean 'X'?" naming what sim_text_nearest() finds, then the other
 * candidates `word` begins (ignoring case) when there are 1 to SIM_TEXT_MAX_PREFIX_HINTS of
 * them: "; did you mean 'X', 'Y' or 'Z'?" ("H100" → 'H100-SXM' or 'H100-PCIE'; "B200" →
 * 'GB200' or 'B200-SXM'); nothing when neither finds a name.
 * Returns the (possibly reallocated) message. Takes ownership of `message`; caller frees
 * result. */
#define SIM_TEXT_MAX_PREFIX_HINTS 3
char *sim_text_with_hint (char *message, const char *word, const char *const *candidates);

/* 1235814400 → "1,235,814,400" (counts are read digit by digit against papers). Caller
 * frees. */
char *sim_text_group_digits (guint64 n);

/* A copy of `text` fit for a one-line message on a terminal: every byte that is not part of
 * valid UTF-8, and every control character (C0 including tab and new line, DEL, C1), is
 * written as \xNN (backslashes themselves are kept, so applying it twice changes nothing);
 * when the result is longer than `max_chars` characters (0: no limit) its middle is replaced
 * by "…", keeping the head (file, group, key) and the tail, at most `max_chars` characters
 * in all. An escape is never cut. Caller frees. */
char *sim_text_printable (const char *text, gsize max_chars);

/* The first control character (g_unichar_iscntrl: C0 including tab and new line, DEL, C1)
 * of valid UTF-8 `text` (NULL: none), or 0 when it has none: for texts that are printed
 * (scenario names, chart titles). */
gunichar sim_text_first_control (const char *text);

/* Writes `v` into `buf` (at least G_ASCII_DTOSTR_BUF_SIZE bytes) locale-independently with
 * the fewest significant digits (15, 16 or 17) that read back to the same double: 0.1 prints
 * "0.1", not "0.10000000000000001", and every value still round-trips exactly through
 * g_ascii_strtod(). NaN prints "nan". Returns buf. */
char *sim_text_format_double (char *buf, double v);

/* The index of `s` in the NULL-terminated name table `names` (static, borrowed), into *out.
 * FALSE + G_KEY_FILE_ERROR_INVALID_VALUE "unknown WHAT 'S' (expected one of: A, B, …)" when
 * it is not there (NULL `s` included). */
gboolean sim_text_lookup (const char *const *names, const char *what, const char *s, int *out,
                          GError **error);

/* The string value of `key` in `group` (GKeyFile's escapes \s \n \t \r \\ read), not
 * stripped; caller frees. NULL + G_KEY_FILE_ERROR (no group or key in the message: the
 * caller prefixes them) when the key is missing, or when the value holds a backslash that
 * starts no escape: "'80 GiB\': a backslash starts an escape (…)". g_key_file_get_string
 * reports the latter by setting its error and still returning what it read (a value's
 * trailing '\' dropped), so its result alone cannot be trusted. */
char *sim_text_keyfile_string (GKeyFile *kf, const char *group, const char *key,
                               GError **error);

/* What a file that is not a regular file is, from its st_mode, for messages: "a directory",
 * "a device", "a FIFO", "a socket", else "not a plain file". Static string. */
const char *sim_text_file_kind (unsigned mode);

/* The whole file at `path` into *text (NUL-terminated; caller frees) and its length in bytes
 * into *length (may be NULL). FALSE + G_FILE_ERROR "PATH: cannot open: REASON" or "PATH:
 * cannot read: REASON" (REASON strerror's), worded as a scenario file that cannot be read
 * (cli/scenario/input.c), not as GLib's g_file_get_contents ("Failed to open file “PATH”").
 * No size limit: callers check the file's kind and size first. A text file: a NUL byte is
 * refused, G_FILE_ERROR_INVAL "PATH: holds a NUL byte at offset N: not a text file". */
gboolean sim_text_read_file (const char *path, char **text, gsize *length, GError **error);
/* A fast subset of printf for labels built per task (g_strdup_printf was ~1,200 instructions
 * a label): writes `fmt` with its conversions into `buf` (`size` bytes, size ≥ 1) and
 * returns the length written before the terminating NUL, exactly what g_snprintf would
 * write. Knows only %s (non-NULL), %d, %u, %lu where unsigned long is 64 bits (so
 * G_GUINT64_FORMAT) and %%, with no flag, width or precision. Returns -1 — buf's content
 * then unspecified, ap consumed in part — for any other conversion, a NULL string, or a
 * result that does not fit in size − 1 bytes: the caller then formats with g_strdup_vprintf
 * from its own copy of the arguments. */
gssize sim_text_vformat (char *buf, gsize size, const char *fmt, va_list ap);
/* sim_text_vformat with the arguments given directly. */
G_GNUC_PRINTF (3, 4)
gssize sim_text_format (char *buf, gsize size, const char *fmt, ...);
/* `fmt` with its arguments as text: in `buf` (`size` bytes) by sim_text_vformat when it
 * can, else by g_strdup_vprintf into *slow (the caller frees it; untouched otherwise).
 * Returns buf or *slow; NULL only on a programming error (a NULL argument, size 0). */
G_GNUC_PRINTF (4, 5)
const char *sim_text_label (char *buf, gsize size, char **slow, const char *fmt, ...);
/* sim_text_label with a va_list (`ap` is consumed). */
const char *sim_text_vlabel (char *buf, gsize size, char **slow, const char *fmt, va_list ap);
