// The GPU-side helpers that the messaging applications (jacobi2d.cu, halo3d.cu; docs/msg.md "Applications") share:
// the CUDA error check, allocation, the requests an iteration leaves for the host to free one iteration late, the
// block count of a cooperative launch and the timed loop (CUDA events on the solver's stream, process CPU time).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "jacobi2d_common.h"

#define J2D_CUDA(call)                                                                                \
  do {                                                                                                \
    const cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) j2d::die(__FILE__, __LINE__, #call, "CUDA error", cudaGetErrorString(e_)); \
  } while (0)

namespace j2d {

template <class T>
T* gpuAlloc(size_t elements) {
  void* p = nullptr;
  J2D_CUDA(cudaMalloc(&p, elements * sizeof(T)));
  return static_cast<T*>(p);
}

// Whether this process sees a GPU (the applications exit 77, ctest's SKIP, when not).
inline bool gpuVisible() {
  int ndev = 0;
  return cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
}

// The requests of one iteration that the host has not freed yet (stream and kernel models free them one iteration
// late). 64: two per halo for up to 26 halos (halo3d), and 8 for jacobi2d's four.
struct Pending {
  static constexpr size_t kMax = 64;
  tether_request_t reqs[kMax];
  size_t n = 0;
};

inline void freeRequests(tether_t w, Pending* p) {
  if (p->n) J2D_CHECK(tether_msg_waitall(w, p->n, p->reqs, nullptr));
  p->n = 0;
}

// Blocks of a cooperative launch of `kernel` with `threads` threads a block: at most one per SM (a cooperative grid
// must be resident at once, and PEs may share the GPU), at most what `work` items need, at least 1. Dies when the GPU
// has no cooperative launch.
template <class Kernel>
int cooperativeBlocks(Kernel kernel, int threads, long work) {
  int dev = 0, coop = 0, sms = 0, perSm = 0;
  J2D_CUDA(cudaGetDevice(&dev));
  J2D_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop) die(__FILE__, __LINE__, "cudaDevAttrCooperativeLaunch", "the kernel model needs cooperative launch",
                 "this GPU has none");
  J2D_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  J2D_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, 0));
  long blocks = std::min<long>(sms, static_cast<long>(perSm) * sms);
  blocks = std::min(blocks, (work + threads - 1) / threads);
  return static_cast<int>(std::max(1L, blocks));
}

struct Timing {
  double iterUs;  // median time of one timed iteration
  double cpuUs;   // process CPU time per timed iteration
};

// Runs step(k) for k = 0 .. warmup + iters - 1 and times the last iters: per iteration, the interval between CUDA
// events recorded on `stream` at the iteration's start (the GPU's timeline: it includes every host wait that delays
// the stream), and the process CPU time over the timed loop (every thread, tether's progress thread included) up to
// the end of the stream and the freeing of both iterations' pending requests.
template <class Step>
Timing timeIterations(tether_t w, cudaStream_t stream, int warmup, int iters, Pending* pending, Step step) {
  std::vector<cudaEvent_t> marks(static_cast<size_t>(iters) + 1);
  for (cudaEvent_t& e : marks) J2D_CUDA(cudaEventCreate(&e));
  const int total = warmup + iters;
  double cpu0 = 0;
  for (int k = 0; k < total; ++k) {
    if (k == warmup) cpu0 = cpuTimeUs();
    if (k >= warmup) J2D_CUDA(cudaEventRecord(marks[static_cast<size_t>(k - warmup)], stream));
    step(k);
  }
  J2D_CUDA(cudaEventRecord(marks.back(), stream));
  J2D_CUDA(cudaStreamSynchronize(stream));  // first: the kernel model's last kernel uses its requests' descriptors
  freeRequests(w, &pending[0]);
  freeRequests(w, &pending[1]);
  const double cpuUs = (cpuTimeUs() - cpu0) / iters;
  std::vector<double> us;
  for (size_t t = 0; t + 1 < marks.size(); ++t) {
    float ms = 0;
    J2D_CUDA(cudaEventElapsedTime(&ms, marks[t], marks[t + 1]));
    us.push_back(1000.0 * ms);
  }
  for (cudaEvent_t e : marks) J2D_CUDA(cudaEventDestroy(e));
  return Timing{median(us), cpuUs};
}

}  // namespace j2d
