/* cli/malloc_tuning.c — see cli/malloc_tuning.h. */
#include "config.h"
#include "cli/malloc_tuning.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

void
cli_malloc_tune (void)
{
#ifdef __GLIBC__
  mallopt (M_TRIM_THRESHOLD, 512 << 20);
  mallopt (M_MMAP_THRESHOLD, 64 << 20);
#endif
}
