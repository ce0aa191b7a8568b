/* cli/malloc_tuning.c — see cli/malloc_tuning.h. */
#include "config.h"
#include "cli/malloc_tuning.h"

#include <stdint.h>
#include <stdlib.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#if defined(__GLIBC__) && defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#if defined(__GLIBC__) && defined(__linux__) && defined(MADV_HUGEPAGE)                       \
    && __GLIBC_PREREQ(2, 33)
#define HEAP_HUGE 1
/* HEAP_PAD: B the heap grows by beyond a request (M_TOP_PAD), so that the range given huge
 * pages is one stretch. HUGE_PAGE: a transparent huge page on x86-64 and arm64 with 4 KiB
 * pages, to which the range is cut (with larger base pages the kernel's huge pages are
 * larger: fewer fit, the advice stays valid). HEAP_SKIP: the least room between the heap's
 * end and the first boundary advised, more than the heap holds free at start-up. */
#define HEAP_PAD ((size_t) 64 << 20)
#define HUGE_PAGE ((uintptr_t) 2 << 20)
#define HEAP_SKIP ((uintptr_t) 1 << 20)

static gboolean heap_huge;
static void *heap_filler; /* the heap below its first advised boundary, never used */

static void
heap_huge_pages (void)
{
  mallopt (M_TOP_PAD, (int) HEAP_PAD);
  char *lo = sbrk (0);
  if (lo == (char *) -1)
    return;
  /* the top chunk ends at the break (its size: mallinfo2's keepcost) */
  uintptr_t top = (uintptr_t) lo - mallinfo2 ().keepcost;
  uintptr_t a = ((uintptr_t) lo + HEAP_SKIP + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  /* one block from the top's start to just below a: more than the top holds, so the heap
   * grows (by it + pad), and malloc writes the new top's header below a. A page of [a, b)
   * written before the advice would leave its 2 MiB in small pages. volatile: a block
   * nobody reads is otherwise left out by the compiler. */
  char *volatile filler = malloc (a - 64 - top - 2 * sizeof (size_t));
  char *hi = sbrk (0);
  if (filler == NULL || hi == (char *) -1 || hi < lo + HEAP_PAD || (uintptr_t) filler >= a)
    {
      free (filler);
      return; /* the heap did not grow by brk (valgrind, sanitizers: another allocator) */
    }
  heap_filler = filler; /* kept; its pages are never touched, so they cost no memory */
  uintptr_t b = (uintptr_t) hi & ~(HUGE_PAGE - 1);
  heap_huge = b > a && madvise ((void *) a, b - a, MADV_HUGEPAGE) == 0;
}
#endif

void
cli_malloc_tune (void)
{
#ifdef __GLIBC__
  mallopt (M_TRIM_THRESHOLD, 512 << 20);
  mallopt (M_MMAP_THRESHOLD, 64 << 20);
#endif
#ifdef HEAP_HUGE
  heap_huge_pages ();
#endif
}

gboolean
cli_malloc_heap_huge (void)
{
#ifdef HEAP_HUGE
  return heap_huge;
#else
  return FALSE;
#endif
}
