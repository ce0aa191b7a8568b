/* tests/unit/cli/test_input.c — input files (cli/scenario/input.h) and what the scenario and sweep
 * loaders make of bad ones: a device, FIFO or directory refused before reading (never a read
 * without end, never a block), the 16 MiB limit, NUL bytes and bytes that are not UTF-8
 * (a binary file) refused with the file and line named, nothing echoed raw. */
#include "config.h"
#include "cli/scenario/input.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/sweep.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmpdir;

static char *
tmp_path (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* cli_input_read on `path` fails with a message starting with the path and holding `needle`. */
static void
expect_refused (const char *path, const char *needle)
{
  g_autoptr (GError) e = NULL;
  char *text = NULL;
  CU_ASSERT_FALSE (cli_input_read (path, &text, NULL, &e));
  CU_ASSERT_PTR_NULL (text);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  gboolean ok = g_str_has_prefix (e->message, path) && strstr (e->message, needle) != NULL;
  if (!ok)
    g_printerr ("\n  %s: '%s' (wanted '%s')\n", path, e->message, needle);
  CU_ASSERT_TRUE (ok);
}

static void
test_regular_file (void)
{
  g_autofree char *p = tmp_path ("ok.ini");
  g_assert (g_file_set_contents (p, "[a]\nb = µs\n", -1, NULL));
  g_autofree char *text = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE (cli_input_read (p, &text, &len, NULL));
  CU_ASSERT_STRING_EQUAL (text, "[a]\nb = µs\n");
  CU_ASSERT_EQUAL (len, strlen ("[a]\nb = µs\n"));
  /* an empty file is read as empty text (no NUL scan of a NULL buffer) */
  g_autofree char *empty = tmp_path ("empty.ini");
  g_assert (g_file_set_contents (empty, "", 0, NULL));
  g_autofree char *t0 = NULL;
  CU_ASSERT_TRUE (cli_input_read (empty, &t0, &len, NULL));
  CU_ASSERT_STRING_EQUAL (t0, "");
  CU_ASSERT_EQUAL (len, 0);
  /* a byte-order mark first (Windows editors) is dropped: GKeyFile would not read "[a]" */
  g_autofree char *bom = tmp_path ("bom.ini");
  g_assert (g_file_set_contents (bom, "\xEF\xBB\xBF[a]\nb = 1\n", -1, NULL));
  g_autofree char *t2 = NULL;
  CU_ASSERT_TRUE (cli_input_read (bom, &t2, &len, NULL));
  CU_ASSERT_STRING_EQUAL (t2, "[a]\nb = 1\n");
  CU_ASSERT_EQUAL (len, 10);
}

static void
test_not_regular (void)
{
  expect_refused ("/dev/zero", "not a regular file of at most 16 MiB (it is a device)");
  expect_refused (tmpdir, "it is a directory");
  g_autofree char *fifo = tmp_path ("fifo.ini");
  CU_ASSERT_EQUAL_FATAL (mkfifo (fifo, 0600), 0);
  expect_refused (fifo, "it is a FIFO"); /* without a writer: must not block */
  g_autofree char *missing = tmp_path ("missing.ini");
  expect_refused (missing, "cannot open");
}

static void
test_too_large (void)
{
  g_autofree char *p = tmp_path ("big.ini");
  g_assert (g_file_set_contents (p, "[a]\n", -1, NULL));
  CU_ASSERT_EQUAL_FATAL (truncate (p, CLI_INPUT_MAX_BYTES + 1), 0); /* sparse */
  expect_refused (p, "not a regular file of at most 16 MiB");
  CU_ASSERT_EQUAL_FATAL (truncate (p, CLI_INPUT_MAX_BYTES), 0);
  expect_refused (p, "NUL byte at offset 4"); /* within the limit: read, then refused */
}

static void
test_binary (void)
{
  g_autofree char *p = tmp_path ("bin.ini");
  g_assert (g_file_set_contents (p, "[model]\nx = 1\n\x7f" "ELF\x02\x01\xff\xfe", -1, NULL));
  expect_refused (p, "line 3: byte 0xFF is not UTF-8");
}

/* The loaders go through it: their messages name the file and echo nothing raw. */
static void
test_loaders (void)
{
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (cli_scenario_load ("/dev/zero", NULL, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_TRUE (g_str_has_prefix (e->message, "/dev/zero: not a regular file"));
  g_clear_error (&e);
  CU_ASSERT_PTR_NULL (cli_sweep_load ("/dev/zero", &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_TRUE (g_str_has_prefix (e->message, "/dev/zero: not a regular file"));
  g_clear_error (&e);
  /* A line GKeyFile cannot parse, with control characters in it: quoted escaped. */
  g_autofree char *p = tmp_path ("ctl.ini");
  g_assert (g_file_set_contents (p, "[model]\n\x01\x1b[31m garbage\n", -1, NULL));
  CU_ASSERT_PTR_NULL (cli_scenario_load (p, NULL, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "\\x01\\x1B[31m garbage"));
  for (const char *c = e->message; *c != '\0'; c++)
    CU_ASSERT_FALSE (g_ascii_iscntrl (*c));
}

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-input-XXXXXX");
  const StepsimTest tests[] = {
    { "a regular text file is read whole", test_regular_file },
    { "device, directory, FIFO, missing file refused", test_not_regular },
    { "more than 16 MiB refused; a NUL byte refused", test_too_large },
    { "a binary file refused with its line", test_binary },
    { "scenario and sweep loaders use it; messages printable", test_loaders },
  };
  int rc = STEPSIM_RUN_TESTS ("cli/input", tests);
  g_autoptr (GDir) d = g_dir_open (tmpdir, 0, NULL);
  for (const char *n; d != NULL && (n = g_dir_read_name (d)) != NULL;)
    {
      g_autofree char *f = g_build_filename (tmpdir, n, NULL);
      g_unlink (f);
    }
  g_rmdir (tmpdir);
  g_free (tmpdir);
  return rc;
}
