/* tests/unit/cli/test_malloc_tuning.c — the process allocator's settings (cli/malloc_tuning.h):
 * on Linux with glibc's heap, the heap is advised for transparent huge pages from its first
 * 2 MiB boundary on, and the blocks allocated after cli_malloc_tune lie in that range. */
#include "config.h"
#include "cli/malloc_tuning.h"
#include "tests/testlib.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)                      \
    || __has_feature(memory_sanitizer)
#define OTHER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OTHER_ALLOCATOR 1
#endif

/* Whether cli_malloc_tune can advise here: glibc's heap on a Linux kernel with THP. */
static gboolean
expect_huge (void)
{
#if defined(__GLIBC__) && defined(__linux__) && !defined(OTHER_ALLOCATOR)
  return g_file_test ("/sys/kernel/mm/transparent_hugepage/enabled", G_FILE_TEST_EXISTS);
#else
  return FALSE;
#endif
}

/* The VmFlags line of the mapping of /proc/self/smaps that holds `p` (new string), or NULL. */
static char *
vm_flags_of (const void *p)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents ("/proc/self/smaps", &text, NULL, NULL))
    return NULL;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  gboolean inside = FALSE;
  for (guint i = 0; lines[i] != NULL; i++)
    {
      unsigned long lo, hi;
      if (sscanf (lines[i], "%lx-%lx ", &lo, &hi) == 2 && strchr (lines[i], '-') != NULL
          && g_ascii_isxdigit (lines[i][0]))
        inside = (uintptr_t) p >= lo && (uintptr_t) p < hi;
      else if (inside && g_str_has_prefix (lines[i], "VmFlags:"))
        return g_strdup (lines[i]);
    }
  return NULL;
}

static void
test_heap_huge (void)
{
  if (!expect_huge ())
    {
      CU_ASSERT_FALSE (cli_malloc_heap_huge ()); /* nothing advised where it cannot be */
      return;
    }
  CU_ASSERT_TRUE_FATAL (cli_malloc_heap_huge ());
  /* blocks made after the tuning, small and large (below M_MMAP_THRESHOLD: on the heap) */
  const gsize sizes[] = { 64, 4096, 256 << 10, 8 << 20 };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      char *volatile p = g_malloc (sizes[i]);
      memset (p, 1, sizes[i]);
      g_autofree char *flags = vm_flags_of (p);
      CU_ASSERT_PTR_NOT_NULL_FATAL (flags);
      g_auto (GStrv) words = g_strsplit (flags, " ", -1);
      CU_ASSERT_TRUE (g_strv_contains ((const char *const *) words, "hg"));
      g_free (p);
    }
}

int
main (void)
{
  cli_malloc_tune (); /* as stepsim's main: first */
  const StepsimTest tests[] = {
    { "the heap after the tuning is advised for huge pages", test_heap_huge },
  };
  return STEPSIM_RUN_TESTS ("cli/malloc_tuning", tests);
}
