/* cli/malloc_tuning.h — the C library allocator's settings for a simulating process. */
#pragma once

#include <glib.h>

/* A simulation allocates and frees many short-lived arrays of a few hundred KiB (a
 * collective's lowered flows over hundreds of ranks, scratch per phase, libhdf5's write
 * buffers). glibc's defaults give the heap's top back to the kernel whenever a free leaves
 * more than 128 KiB there (M_TRIM_THRESHOLD) and serve requests of 128 KiB or more by mmap
 * (M_MMAP_THRESHOLD), so each such array cost a brk or munmap, a TLB flush and fresh page
 * faults: 60 % of a 512-GPU run's time was the kernel's (bench/RESULTS.md). The process
 * keeps what it has allocated instead (up to its peak, which it reaches anyway) and returns
 * it at exit.
 * On Linux the main heap then grows by 64 MiB at a time (M_TOP_PAD), and its first 64 MiB
 * from a 2 MiB boundary 1–3 MiB past its start-up end are advised for transparent huge
 * pages (MADV_HUGEPAGE; the bytes below that boundary are held by one block never used nor
 * touched): a page fault costs ~10 µs on a virtual machine, and the 8-GPU bench's process
 * touched ~800 heap pages of 4 KiB, a third of its time (bench/RESULTS.md, 2026-12-07
 * h-s8). Memory is still given only as it is touched, in 2 MiB steps; growth past those
 * 64 MiB and other threads' arenas are left as they were. Where the kernel has no huge
 * pages the advice changes nothing; under an allocator that is not glibc's heap (valgrind,
 * sanitizers) nothing is advised. Call once, first thing in main (stepsim, the benchmarks),
 * from the main thread; no-op off glibc. */
void cli_malloc_tune (void);

/* TRUE once cli_malloc_tune has advised the heap for huge pages (the kernel took the advice;
 * whether a page is huge is still its choice), FALSE otherwise. */
gboolean cli_malloc_heap_huge (void);
