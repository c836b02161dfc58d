// host_call_cost: what the CUDA calls on a host collective's path cost on the host of this machine (issue #21: the
// host form on GPU memory; no libtether). One process, the current GPU, a non-blocking stream s, an idle legacy
// default stream. Each row: microseconds per call (or per pair), best and median of 7 batches of 2000.
//   nvcc -O2 -arch=sm_90 -Iinclude -Ibuild/default/include -o /tmp/host_call_cost bench/coll/probes/host_call_cost.cu && /tmp/host_call_cost
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../cuda_check.h"  // CK, TK


__global__ void empty() {}

template <typename F>
void row(const char* name, F f, cudaStream_t s) {
  constexpr int kBatches = 7, kCalls = 2000;
  std::vector<double> us;
  for (int b = 0; b < kBatches; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    CK(cudaStreamSynchronize(s));
    CK(cudaDeviceSynchronize());
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  std::sort(us.begin(), us.end());
  std::printf("%-58s best %7.3f  median %7.3f us\n", name, us.front(), us[us.size() / 2]);
}

int main() {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  empty<<<1, 1, 0, s>>>();
  CK(cudaStreamSynchronize(s));
  row("cudaSetDevice(same device)", [] { CK(cudaSetDevice(0)); }, s);
  row("cudaStreamSynchronize(legacy stream), idle", [] { CK(cudaStreamSynchronize(cudaStreamLegacy)); }, s);
  row("cudaStreamSynchronize(s), idle", [&] { CK(cudaStreamSynchronize(s)); }, s);
  row("cudaEventRecord(legacy) + cudaStreamWaitEvent(s)", [&] {
    CK(cudaEventRecord(ev, cudaStreamLegacy));
    CK(cudaStreamWaitEvent(s, ev, 0));
  }, s);
  row("empty<<<1,1,0,s>>> (no sync)", [&] { empty<<<1, 1, 0, s>>>(); }, s);
  row("empty<<<1,512,0,s>>> + cudaStreamSynchronize(s)", [&] {
    empty<<<1, 512, 0, s>>>();
    CK(cudaStreamSynchronize(s));
  }, s);
  row("sync(legacy) + empty<<<1,512,0,s>>> + sync(s)", [&] {
    CK(cudaStreamSynchronize(cudaStreamLegacy));
    empty<<<1, 512, 0, s>>>();
    CK(cudaStreamSynchronize(s));
  }, s);
  row("record(legacy) + wait(s) + empty<<<1,512,0,s>>> + sync(s)", [&] {
    CK(cudaEventRecord(ev, cudaStreamLegacy));
    CK(cudaStreamWaitEvent(s, ev, 0));
    empty<<<1, 512, 0, s>>>();
    CK(cudaStreamSynchronize(s));
  }, s);
  CK(cudaEventDestroy(ev));
  CK(cudaStreamDestroy(s));
  return 0;
}
