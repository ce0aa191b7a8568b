/* tests/unit/sim/test_tempfiles.c — sim/tempfiles.h's staged outputs: written under staged
 * names, renamed onto theirs together; a set freed before its commit removes what it staged
 * and leaves an earlier file of the same name as it was. */
#include "config.h"
#include "sim/tempfiles.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char *
read_text (const char *path)
{
  char *text = NULL;
  return g_file_get_contents (path, &text, NULL, NULL) ? text : NULL;
}

/* Two outputs: staged names end with the given extension and are not their paths; nothing
 * reaches a path before the commit, both after it, and the staged files are gone. */
static void
test_commit (void)
{
  g_autofree char *dir = g_dir_make_tmp ("stepsim-staged-XXXXXX", NULL);
  g_autofree char *a = g_build_filename (dir, "a.h5", NULL);
  g_autofree char *b = g_build_filename (dir, "b.tsv", NULL);
  g_autoptr (SimStaged) s = sim_staged_new ();
  const char *sa = sim_staged_add (s, a, ".h5"), *sb = sim_staged_add (s, b, NULL);
  CU_ASSERT (g_str_has_suffix (sa, ".h5") && strcmp (sa, a) != 0 && strcmp (sb, b) != 0);
  CU_ASSERT_STRING_EQUAL (sim_staged_path (s, 1), b);
  CU_ASSERT_PTR_NULL (sim_staged_path (s, 2));
  CU_ASSERT (g_file_set_contents (sa, "new a", -1, NULL));
  CU_ASSERT (g_file_set_contents (sb, "new b", -1, NULL));
  CU_ASSERT (!g_file_test (a, G_FILE_TEST_EXISTS) && !g_file_test (b, G_FILE_TEST_EXISTS));
  CU_ASSERT (sim_staged_commit (s, NULL));
  g_autofree char *ta = read_text (a), *tb = read_text (b);
  CU_ASSERT (ta != NULL && strcmp (ta, "new a") == 0);
  CU_ASSERT (tb != NULL && strcmp (tb, "new b") == 0);
  CU_ASSERT (!g_file_test (sa, G_FILE_TEST_EXISTS) && !g_file_test (sb, G_FILE_TEST_EXISTS));
  g_unlink (a);
  g_unlink (b);
  g_rmdir (dir);
}

/* A set freed without its commit (a later output failed): its staged file is removed and
 * the earlier file of that name keeps its content. */
static void
test_discard_keeps_earlier (void)
{
  g_autofree char *dir = g_dir_make_tmp ("stepsim-staged-XXXXXX", NULL);
  g_autofree char *a = g_build_filename (dir, "a.h5", NULL);
  CU_ASSERT (g_file_set_contents (a, "previous", -1, NULL));
  SimStaged *s = sim_staged_new ();
  g_autofree char *sa = g_strdup (sim_staged_add (s, a, ".h5"));
  CU_ASSERT (g_file_set_contents (sa, "new", -1, NULL));
  sim_staged_free (s);
  CU_ASSERT (!g_file_test (sa, G_FILE_TEST_EXISTS));
  g_autofree char *ta = read_text (a);
  CU_ASSERT (ta != NULL && strcmp (ta, "previous") == 0);
  g_unlink (a);
  g_rmdir (dir);
}

/* A name near the file system's limit still gets a temporary name it can hold: a 250-byte
 * base plus ".tmp.<pid>.h5" would pass 255 bytes; the temporary keeps the directory, is at
 * most SIM_TEMPFILES_NAME_MAX bytes, differs from the next one made from the same path, and
 * can be created and renamed onto the path (the path is written, not refused). A short name
 * keeps the plain "<path>.tmp.<pid><suffix>". */
static void
test_long_names (void)
{
  g_autofree char *dir = g_dir_make_tmp ("stepsim-long-XXXXXX", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dir);
  g_autofree char *base = g_strnfill (250, 'c');
  g_autofree char *path = g_build_filename (dir, base, NULL);
  g_autofree char *a = sim_tempfiles_new_path (path, ".h5");
  g_autofree char *b = sim_tempfiles_new_path (path, ".h5");
  g_autofree char *a_dir = g_path_get_dirname (a);
  g_autofree char *a_base = g_path_get_basename (a);
  CU_ASSERT_STRING_EQUAL (a_dir, dir);
  CU_ASSERT (strlen (a_base) <= SIM_TEMPFILES_NAME_MAX);
  CU_ASSERT (g_str_has_suffix (a, ".h5"));
  CU_ASSERT_STRING_NOT_EQUAL (a, b);
  FILE *fp = g_fopen (a, "wb"); /* (g_file_set_contents would add its own ".XXXXXX") */
  CU_ASSERT_PTR_NOT_NULL_FATAL (fp);
  fclose (fp);
  CU_ASSERT_EQUAL (g_rename (a, path), 0);
  CU_ASSERT_TRUE (g_file_test (path, G_FILE_TEST_IS_REGULAR));
  sim_tempfiles_forget (a);
  sim_tempfiles_forget (b);
  g_remove (path);
  g_rmdir (dir);
  g_autofree char *plain = sim_tempfiles_new_path ("out.h5", NULL);
  g_autofree char *want = g_strdup_printf ("out.h5.tmp.%ld", (long) getpid ());
  CU_ASSERT_STRING_EQUAL (plain, want);
  sim_tempfiles_forget (plain);
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "staged outputs renamed together at the commit", test_commit },
    { "staged outputs discarded: the earlier file stays", test_discard_keeps_earlier },
    { "names near the file system's limit get temporaries", test_long_names },
  };
  return STEPSIM_RUN_TESTS ("sim/tempfiles", tests);
}
