/* msg_mem.h for builds without CUDA: host memory only (MB_DEVICE_MEM is refused with exit status 2). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_backend.h"
#include "msg_mem.h"

void mm_init(int local_rank) { (void)local_rank; }
int mm_gpus(void) { return 0; }
const char* mm_detail(void) { return "host memory only (not a CUDA build)"; }

void* mm_alloc(int mem, size_t bytes) {
  if (mem != MB_HOST_MEM) {
    fprintf(stderr, "msg_bench: GPU buffers need the CUDA build (tether_bench_msg_gpu)\n");
    exit(2);
  }
  const size_t alloc = (bytes + 4095) / 4096 * 4096 + 4096; /* a multiple of the page, never 0 */
  void* p = aligned_alloc(4096, alloc);
  if (!p) {
    fprintf(stderr, "msg_bench: allocation of %zu bytes failed\n", alloc);
    exit(2);
  }
  memset(p, 0, alloc); /* touch every page */
  return p;
}
void mm_free(int mem, void* p) { (void)mem, free(p); }
void mm_write(int mem, void* dst, const void* src, size_t n) { (void)mem, memcpy(dst, src, n); }
void mm_read(int mem, void* dst, const void* src, size_t n) { (void)mem, memcpy(dst, src, n); }
void mm_zero(int mem, void* dst, size_t n) { (void)mem, memset(dst, 0, n); }
