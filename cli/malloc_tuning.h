/* cli/malloc_tuning.h — the C library allocator's settings for a simulating process. */
#pragma once

/* A simulation allocates and frees many short-lived arrays of a few hundred KiB (a
 * collective's lowered flows over hundreds of ranks, scratch per phase, libhdf5's write
 * buffers). glibc's defaults give the heap's top back to the kernel whenever a free leaves
 * more than 128 KiB there (M_TRIM_THRESHOLD) and serve requests of 128 KiB or more by mmap
 * (M_MMAP_THRESHOLD), so each such array cost a brk or munmap, a TLB flush and fresh page
 * faults: 60 % of a 512-GPU run's time was the kernel's (bench/RESULTS.md). The process
 * keeps what it has allocated instead (up to its peak, which it reaches anyway) and returns
 * it at exit. Call once, first thing in main (stepsim, the benchmarks); no-op off glibc. */
void cli_malloc_tune (void);
