/* tests/fuzz/fuzz-common.h — what the libFuzzer harnesses of tests/fuzz/ share: a private
 * scratch directory per process and writing the input there as a file, since the parsers
 * under test read user files by path (cli/scenario/input.h, H5Fopen).
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

static char *fuzz_scratch;

/* Removes `path`: a file or link, or a directory with what it holds (links not followed). */
static inline void
fuzz_remove_tree (const char *path)
{
  GDir *d = g_file_test (path, G_FILE_TEST_IS_SYMLINK) ? NULL : g_dir_open (path, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      char *child = g_build_filename (path, name, NULL);
      fuzz_remove_tree (child);
      g_free (child);
    }
  if (d != NULL)
    {
      g_dir_close (d);
      g_rmdir (path);
    }
  else
    g_unlink (path);
}

static inline void
fuzz_remove_scratch (void)
{
  if (fuzz_scratch != NULL)
    fuzz_remove_tree (fuzz_scratch);
}

/* The process's scratch directory (created on first use, removed at exit): in $TMPDIR, or
 * /dev/shm when it exists (the harnesses write one file per execution). Static string. */
static inline const char *
fuzz_scratch_dir (void)
{
  char *dir = fuzz_scratch;
  if (dir == NULL)
    {
      const char *base = g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" : g_get_tmp_dir ();
      char *tmpl = g_build_filename (base, "stepsim-fuzz-XXXXXX", NULL);
      dir = g_mkdtemp (tmpl);
      if (dir == NULL)
        abort (); /* the harness cannot run at all: not a finding */
      fuzz_scratch = dir;
      atexit (fuzz_remove_scratch);
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
