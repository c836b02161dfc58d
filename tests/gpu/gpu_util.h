// Helpers shared by the GPU tests that run under tetherrun and report through mp_util.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <initializer_list>

#include "../mp/mp_msg_util.h"
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

// The two-sided messaging tests' start: initWithGpu, then tether_msg_init with the defaults; *r: the world and its ring
// neighbours. false: no GPU (as initWithGpu; main returns 77).
inline bool msgRingWithGpu(mp::MsgRing* r) {
  int ndev = 0;
  if (!initWithGpu(&ndev)) return false;
  r->w = mp::world();
  r->me = tether_my_pe(r->w);
  r->n = tether_n_pes(r->w);
  r->next = (r->me + 1) % r->n;
  r->prev = (r->me + r->n - 1) % r->n;
  MP_OK(tether_msg_init(r->w, nullptr));
  return true;
}

// Loads the test's kernels now (cudaFuncGetAttributes): under CUDA's lazy loading the first launch of a kernel may
// synchronise the context, which then waits for a pending stream or kernel-model wait, whose progress (tether's
// copies) waits for the context: a hang (docs/msg.md "Load your kernels first"; seen in gpu_msg, 2026-12-02).
inline void loadKernels(std::initializer_list<const void*> kernels) {
  cudaFuncAttributes fa;
  for (const void* k : kernels) CK(cudaFuncGetAttributes(&fa, k));
}

// Copies host bytes (pageable or not) to any memory and returns when they have landed. cudaMemcpy from pageable memory
// may return before its DMA lands, and work on a non-blocking stream is not ordered after it: the legacy stream's
// sync waits for the DMA too.
inline void copyLanded(void* dst, const void* src, size_t n) {
  if (!n) return;
  CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, cudaStreamLegacy));
  CK(cudaStreamSynchronize(cudaStreamLegacy));
}

// A symmetric allocation of the given kind (256-byte aligned); failure fails the test.
inline void* symAlloc(tether_t w, tether_seg_kind_t kind, size_t bytes) {
  void* p = nullptr;
  MP_OK(tether_malloc_kind(w, kind, 256, bytes, &p));
  return p;
}

// A CUDA graph of the work f() enqueues on s, captured once (thread-local mode) and instantiated; launch() replays it
// on s. Freed with the object. A failing capture call fails the test; what f's tether calls return is f's to check.
class Graph {
 public:
  template <class F>
  Graph(cudaStream_t s, F&& f) : s_(s) {
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    f();
    CK(cudaStreamEndCapture(s, &graph_));
    CK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  // times replays back to back on s (enqueued; not waited for).
  void launch(int times = 1) const {
    for (int k = 0; k < times; ++k) CK(cudaGraphLaunch(exec_, s_));
  }

 private:
  cudaStream_t s_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// f captured once into a graph on s and replayed `times` times back to back; returns when s is through.
template <class F>
void replay(cudaStream_t s, F&& f, int times) {
  Graph g(s, f);
  g.launch(times);
  CK(cudaStreamSynchronize(s));
}

}  // namespace gpu_test
