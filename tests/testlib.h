/* tests/testlib.h — the tiny harness shared by every CUnit binary.
 *
 * Each tests/unit/<folder>/test_<module>.c defines a table of StepsimTest and calls
 * stepsim_test_main(); the binary runs them in one CUnit suite (basic mode), prints
 * CUnit's summary and a machine-readable line "stepsim-tests: P passed, F failed" that
 * tests/run-tests.sh adds up. Exit status is 0 only if every test passed.
 */
#pragma once

#include <CUnit/CUnit.h>
#include <glib.h>

typedef struct
{
  const char *name;
  void (*func) (void);
} StepsimTest;

/* Runs `n` tests as suite `suite`; returns the process exit status. */
int stepsim_test_main (const char *suite, const StepsimTest *tests, gsize n);

/* Absolute path of `rel` inside the source tree (STEPSIM_SRCDIR). Caller frees. */
char *stepsim_test_srcpath (const char *rel);

/* A new directory in the temporary directory (TMPDIR or /tmp), named from `tmpl`
 * ("stepsim-x-XXXXXX"), returned relative to the working directory, which becomes the
 * temporary directory: the file names built on it, and so the messages tests assert on,
 * are as short whatever TMPDIR is (a long one pushed keys out of capped messages). Files
 * of the source tree stay reachable (stepsim_test_srcpath is absolute). Caller frees;
 * aborts when the directory cannot be made. */
char *stepsim_test_tmpdir (const char *tmpl);

/* Asserts |actual − expected| ≤ rel_tol·|expected| (+1e-300), printing both on failure. */
#define STEPSIM_ASSERT_REL(actual, expected, rel_tol)                                          \
  do {                                                                                         \
    double _a = (actual), _e = (expected);                                                     \
    gboolean _ok = fabs (_a - _e) <= (rel_tol) * fabs (_e) + 1e-300;                           \
    if (!_ok)                                                                                  \
      g_printerr ("\n  %s:%d: %s = %.17g, expected %.17g (rel tol %g)\n", __FILE__, __LINE__,  \
                  #actual, _a, _e, (double) (rel_tol));                                        \
    CU_ASSERT (_ok);                                                                           \
  } while (0)

#define STEPSIM_RUN_TESTS(suite, table) stepsim_test_main (suite, table, G_N_ELEMENTS (table))
