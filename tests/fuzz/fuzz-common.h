/* tests/fuzz/fuzz-common.h — what the libFuzzer harnesses of tests/fuzz/ share: a private
 * scratch directory per process and writing the input there as a file, since the parsers
 * under test read user files by path (cli/input.h, H5Fopen).
 *
 * Each harness defines LLVMFuzzerTestOneInput (and may define LLVMFuzzerInitialize); the
 * input bytes are arbitrary and of any length. A harness must never abort on bad input:
 * the loaders' contract is an error (GError), so any crash, sanitizer report, leak or
 * timeout libFuzzer reports is a bug in the code under test (README, "Testing").
 */
#pragma once

#include <glib.h>
#include <glib/gstdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv);

/* The process's scratch directory (created on first use, removed at exit): in $TMPDIR, or
 * /dev/shm when it exists (the harnesses write one file per execution). Static string. */
static inline const char *
fuzz_scratch_dir (void)
{
  static char *dir;
  if (dir == NULL)
    {
      const char *base = g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" : g_get_tmp_dir ();
      char *tmpl = g_build_filename (base, "stepsim-fuzz-XXXXXX", NULL);
      dir = g_mkdtemp (tmpl);
      if (dir == NULL)
        abort (); /* the harness cannot run at all: not a finding */
    }
  return dir;
}

/* Writes `data` to `path` (whole file, replaced); aborts if it cannot (not a finding). */
static inline void
fuzz_write_file (const char *path, const uint8_t *data, size_t size)
{
  if (!g_file_set_contents (path, (const char *) data, (gssize) size, NULL))
    abort ();
}

/* `data` as a NUL-terminated string (a copy; embedded NULs are kept, so the C string may be
 * shorter than `size`). Caller frees. */
static inline char *
fuzz_strndup (const uint8_t *data, size_t size)
{
  char *s = g_malloc (size + 1);
  memcpy (s, data, size);
  s[size] = '\0';
  return s;
}
