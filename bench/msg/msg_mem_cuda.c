/* msg_mem.h for CUDA builds (the *_gpu binaries): host buffers as msg_mem_host.c (pageable, page-aligned: what an
 * application passes), GPU buffers from cudaMalloc on GPU local_rank % GPUs (not symmetric, not registered). Copies
 * are synchronous cudaMemcpy / cudaMemset (legacy default stream), outside every timed region. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_backend.h"
#include "msg_mem.h"

static int gpus;
static char detail[400] = "no GPU visible";

static void ck(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "msg_bench: %s failed: %s\n", call, cudaGetErrorString(e));
  exit(2);
}

void mm_init(int local_rank) {
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1) {
    gpus = 0;
    (void)cudaGetLastError();
    return;
  }
  const int dev = local_rank % gpus;
  ck(cudaSetDevice(dev), "cudaSetDevice");
  struct cudaDeviceProp prop;
  ck(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  snprintf(detail, sizeof detail, "GPU %d of %d: %.256s, CUDA runtime %d.%d, driver %d.%d", dev, gpus, prop.name,
           rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10);
}

int mm_gpus(void) { return gpus; }
const char* mm_detail(void) { return detail; }

void* mm_alloc(int mem, size_t bytes) {
  const size_t alloc = (bytes + 4095) / 4096 * 4096 + 4096; /* a multiple of the page, never 0 */
  void* p = NULL;
  if (mem == MB_DEVICE_MEM) {
    if (!gpus) {
      fprintf(stderr, "msg_bench: GPU buffers asked for, but no GPU is visible\n");
      exit(2);
    }
    ck(cudaMalloc(&p, alloc), "cudaMalloc");
    ck(cudaMemset(p, 0, alloc), "cudaMemset");
    ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return p;
  }
  p = aligned_alloc(4096, alloc);
  if (!p) {
    fprintf(stderr, "msg_bench: allocation of %zu bytes failed\n", alloc);
    exit(2);
  }
  memset(p, 0, alloc); /* touch every page */
  return p;
}

void mm_free(int mem, void* p) {
  if (mem == MB_DEVICE_MEM) ck(cudaFree(p), "cudaFree");
  else free(p);
}

void mm_write(int mem, void* dst, const void* src, size_t n) {
  if (mem == MB_DEVICE_MEM) {
    /* From pageable memory cudaMemcpy may return before its DMA lands: wait, as the contract says (msg_mem.h). */
    ck(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  } else {
    memcpy(dst, src, n);
  }
}

void mm_read(int mem, void* dst, const void* src, size_t n) {
  if (mem == MB_DEVICE_MEM) ck(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  else memcpy(dst, src, n);
}

void mm_zero(int mem, void* dst, size_t n) {
  if (mem == MB_DEVICE_MEM) {
    ck(cudaMemset(dst, 0, n), "cudaMemset");
    ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  } else {
    memset(dst, 0, n);
  }
}
