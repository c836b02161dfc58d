// Helpers shared by the GPU tests that run under tetherrun and report through mp_util.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#include "../mp/mp_util.h"

// A failed CUDA call fails the test (mp::fail: PE, file, line, the call, CUDA's message).
#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) ::mp::fail(__FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
  } while (0)

namespace gpu_test {

// mp::init(), then whether a GPU is visible (*ndev = how many). Without one, PE 0 prints "SKIP: no GPU visible", the
// instance is finalised and the caller's main returns 77 (ctest's skip code for these tests).
inline bool initWithGpu(int* ndev) {
  mp::init();
  *ndev = 0;
  if (cudaGetDeviceCount(ndev) == cudaSuccess && *ndev > 0) return true;
  if (tether_my_pe(mp::world()) == 0) std::printf("SKIP: no GPU visible\n");
  mp::finish();
  return false;
}

// A symmetric allocation of the given kind (256-byte aligned); failure fails the test.
inline void* symAlloc(tether_t w, tether_seg_kind_t kind, size_t bytes) {
  void* p = nullptr;
  MP_OK(tether_malloc_kind(w, kind, 256, bytes, &p));
  return p;
}

}  // namespace gpu_test
