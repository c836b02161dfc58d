/* Where msg_bench's buffers live: host memory (every build: msg_mem_host.c) or GPU memory from cudaMalloc (CUDA
 * builds: msg_mem_cuda.c, in the *_gpu binaries). The benchmark touches buffers only through these calls, outside the
 * timed region: fill (from a host pattern), clear, read back for the check.
 *
 * Contracts: mm_init once after mb_init (the CUDA side picks GPU local_rank % GPUs and creates nothing else);
 * mm_gpus() = GPUs usable by this process (0 in host-only builds, or without a GPU); mm_alloc(MB_DEVICE_MEM, ...)
 * needs mm_gpus() > 0. Every failure prints the call and ends the process with exit status 2. Copies are synchronous
 * (complete on return, ordered after the legacy default stream's earlier work). */
#ifndef TETHER_BENCH_MSG_MEM_H
#define TETHER_BENCH_MSG_MEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void mm_init(int local_rank);
int mm_gpus(void);
const char* mm_detail(void); /* "host only" or the GPU's name and index: one line */
void* mm_alloc(int mem, size_t bytes); /* page-aligned, every byte written (zero) */
void mm_free(int mem, void* p);
void mm_write(int mem, void* dst, const void* src, size_t n); /* host src -> buffer */
void mm_read(int mem, void* dst, const void* src, size_t n);  /* buffer -> host dst */
void mm_zero(int mem, void* dst, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_BENCH_MSG_MEM_H */
