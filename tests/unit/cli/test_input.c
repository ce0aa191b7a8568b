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

/* The input memo (stepsim batch): between begin and end a path read once is answered from
 * its first text, so an edit in between is not seen; a failed read is not kept (the file
 * made afterwards is read); outside a memo, and after its end, every read sees the file as
 * it is. */
static void
test_memo_text (void)
{
  g_autofree char *p = tmp_path ("memo.ini");
  g_autofree char *missing = tmp_path ("memo-later.ini");
  g_autofree char *t = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL;
  gsize len = 0;
  g_assert (g_file_set_contents (p, "[a]\nb = 1\n", -1, NULL));
  CU_ASSERT_TRUE (cli_input_read (p, &t, NULL, NULL));
  g_assert (g_file_set_contents (p, "[a]\nb = 22\n", -1, NULL));
  CU_ASSERT_TRUE (cli_input_read (p, &t1, NULL, NULL)); /* no memo: the file as it is */
  CU_ASSERT_STRING_EQUAL (t1, "[a]\nb = 22\n");
  cli_input_memo_begin ();
  CU_ASSERT_TRUE (cli_input_read (p, &t2, NULL, NULL));
  g_assert (g_file_set_contents (p, "[a]\nb = 333\n", -1, NULL));
  g_clear_pointer (&t2, g_free);
  CU_ASSERT_TRUE (cli_input_read (p, &t2, &len, NULL)); /* the first read's text, a copy */
  CU_ASSERT_STRING_EQUAL (t2, "[a]\nb = 22\n");
  CU_ASSERT_EQUAL (len, strlen ("[a]\nb = 22\n"));
  expect_refused (missing, "cannot open");
  g_assert (g_file_set_contents (missing, "[c]\n", -1, NULL));
  CU_ASSERT_TRUE (cli_input_read (missing, &t3, NULL, NULL)); /* the failure was not kept */
  CU_ASSERT_STRING_EQUAL (t3, "[c]\n");
  cli_input_memo_end ();
  CU_ASSERT_TRUE (cli_input_read (p, &t4, NULL, NULL));
  CU_ASSERT_STRING_EQUAL (t4, "[a]\nb = 333\n");
}

static guint n_freed;

static void
count_free (gpointer data)
{
  n_freed++;
  g_free (data);
}

/* keep/lookup: by kind and path; the first value kept stays (a second is freed at once);
 * nothing is kept without a memo; the memo's end frees what it kept. */
static void
test_memo_keep (void)
{
  n_freed = 0;
  cli_input_memo_keep ("k", "a", g_strdup ("no memo"), count_free);
  CU_ASSERT_EQUAL (n_freed, 1);
  CU_ASSERT_PTR_NULL (cli_input_memo_lookup ("k", "a"));
  cli_input_memo_begin ();
  cli_input_memo_keep ("k", "a", g_strdup ("first"), count_free);
  cli_input_memo_keep ("k", "a", g_strdup ("second"), count_free);
  CU_ASSERT_EQUAL (n_freed, 2);
  cli_input_memo_keep ("other", "a", g_strdup ("other kind"), count_free);
  CU_ASSERT_STRING_EQUAL (cli_input_memo_lookup ("k", "a"), "first");
  CU_ASSERT_STRING_EQUAL (cli_input_memo_lookup ("other", "a"), "other kind");
  CU_ASSERT_PTR_NULL (cli_input_memo_lookup ("k", "b"));
  cli_input_memo_end ();
  CU_ASSERT_EQUAL (n_freed, 4);
  CU_ASSERT_PTR_NULL (cli_input_memo_lookup ("k", "a"));
}

/* The scenario loader under a memo parses an hf_config once: a config edited between two
 * loads (hidden_size 2048 → 4096) still gives the first one's model; after the memo's end
 * the edit is seen. A config that fails to load is not kept: fixed, it loads. */
static void
test_memo_hf_config (void)
{
  g_autofree char *src = stepsim_test_srcpath ("models/configs/llama-3.2-1b.json");
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autofree char *json = NULL, *ini = NULL;
  g_assert (g_file_get_contents (src, &json, NULL, NULL));
  g_assert (g_file_get_contents (s1, &ini, NULL, NULL));
  g_autofree char *cfg = tmp_path ("memo-cfg.json");
  g_autofree char *sc = tmp_path ("memo-sc.ini");
  /* S1 with its config a file beside it */
  g_autoptr (GString) mine = g_string_new (ini);
  g_assert (g_string_replace (mine, "hf_config = llama-3.2-1b\n", "hf_config = memo-cfg.json\n",
                              1) == 1);
  g_assert (g_file_set_contents (sc, mine->str, -1, NULL));
  g_autoptr (GString) big = g_string_new (json);
  g_assert (g_string_replace (big, "\"hidden_size\": 2048", "\"hidden_size\": 4096", 1) == 1);
  cli_input_memo_begin ();
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (cli_scenario_load (sc, NULL, &e)); /* no config yet */
  CU_ASSERT_PTR_NOT_NULL (e);
  g_assert (g_file_set_contents (cfg, json, -1, NULL));
  g_autoptr (CliScenario) a = cli_scenario_load (sc, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->arch->hidden_size, 2048);
  g_assert (g_file_set_contents (cfg, big->str, -1, NULL));
  g_autoptr (CliScenario) b = cli_scenario_load (sc, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_EQUAL (b->arch->hidden_size, 2048);
  cli_input_memo_end ();
  g_autoptr (CliScenario) c = cli_scenario_load (sc, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_EQUAL (c->arch->hidden_size, 4096);
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
    { "input memo: a path is read once, failures are not kept", test_memo_text },
    { "input memo: kept values by kind and path, freed at the end", test_memo_keep },
    { "input memo: an hf_config is parsed once per memo", test_memo_hf_config },
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
