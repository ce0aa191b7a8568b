/* tests/testlib.c — see testlib.h. */
#include "config.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>

#include <CUnit/Basic.h>
#include <stdio.h>

int
stepsim_test_main (const char *suite, const StepsimTest *tests, gsize n)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite (suite, NULL, NULL);
  if (s == NULL)
    return 1;
  for (gsize i = 0; i < n; i++)
    if (CU_add_test (s, tests[i].name, tests[i].func) == NULL)
      return 1;
  CU_basic_set_mode (CU_BRM_VERBOSE);
  CU_basic_run_tests ();
  unsigned run = CU_get_number_of_tests_run ();
  unsigned failed = CU_get_number_of_tests_failed ();
  printf ("stepsim-tests: %u passed, %u failed\n", run - failed, failed);
  CU_cleanup_registry ();
  return failed == 0 && run == n ? 0 : 1;
}

char *
stepsim_test_srcpath (const char *rel)
{
  return g_build_filename (STEPSIM_SRCDIR, rel, NULL);
}

char *
stepsim_test_tmpdir (const char *tmpl)
{
  g_autoptr (GError) e = NULL;
  g_autofree char *dir = g_dir_make_tmp (tmpl, &e);
  if (dir == NULL)
    g_error ("cannot make a temporary directory: %s", e->message);
  g_autofree char *parent = g_path_get_dirname (dir);
  if (g_chdir (parent) != 0)
    g_error ("cannot change to %s", parent);
  return g_path_get_basename (dir);
}
