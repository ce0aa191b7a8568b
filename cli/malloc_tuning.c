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

#if defined(__GLIBC__) && defined(__linux__) && defined(MADV_HUGEPAGE)
#define HEAP_HUGE 1
/* HEAP_PAD: B the heap grows by beyond a request (M_TOP_PAD), so that the range given huge
 * pages is one stretch. HUGE_PAGE: a transparent huge page on x86-64 and arm64 with 4 KiB
 * pages, to which the range is cut (with larger base pages the kernel's huge pages are
 * larger: fewer fit, the advice stays valid). HEAP_GROW: a request the heap's top cannot
 * serve at start-up (its top is ~128 KiB then), larger than the stretch below the first
 * huge-page boundary. */
#define HEAP_PAD ((size_t) 64 << 20)
#define HUGE_PAGE ((uintptr_t) 2 << 20)
#define HEAP_GROW ((size_t) 4 << 20)

static gboolean heap_huge;
static void *heap_filler; /* the heap below its first huge-page boundary, never used */

static void
heap_huge_pages (void)
{
  mallopt (M_TOP_PAD, (int) HEAP_PAD);
  char *lo = sbrk (0);
  /* volatile: a block nobody reads is otherwise left out by the compiler, with its free */
  char *volatile grow = malloc (HEAP_GROW); /* carved from the top: the heap grows */
  char *hi = sbrk (0);
  if (grow == NULL || lo == (char *) -1 || hi == (char *) -1 || hi < lo + HEAP_PAD)
    {
      free (grow);
      return; /* the heap did not grow by brk (valgrind, sanitizers: another allocator) */
    }
  uintptr_t a = ((uintptr_t) lo + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  uintptr_t b = (uintptr_t) hi & ~(HUGE_PAGE - 1);
  /* the block starts where the top did: kept up to the boundary (realloc shrinks in place,
   * the rest goes back to the top), every later block lies above it, in huge pages; its
   * pages are never touched, so they cost no memory */
  if ((uintptr_t) grow < a && a - (uintptr_t) grow > 4096)
    heap_filler = realloc (grow, a - (uintptr_t) grow - 2 * sizeof (size_t));
  else
    free (grow);
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
