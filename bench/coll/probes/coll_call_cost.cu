// coll_call_cost: where the time of one small team collective goes at 1 PE (issue #21), on the GPU and on the host.
// GPU rows: the GPU time of one operation queued behind a 300 us spin kernel (so the host's enqueue is off the clock):
// event to event around it, best and median of 200. Host rows: microseconds per call of the host's own work.
// Kernels here use the device API from the header (tether/device.cuh) at block scope, 1 block of 512 threads, like
// the stream forms' one-block launch; the library rows call libtether.
//   nvcc -O2 -arch=sm_90 -std=c++17 -Iinclude -Ibuild/default/include -o /tmp/coll_call_cost bench/coll/probes/coll_call_cost.cu \
//        -Lbuild/default/src -ltether -Xlinker -rpath=$PWD/build/default/src
//   TETHER_DEVICE_HEAP_SIZE=64M /tmp/coll_call_cost
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "../../cuda_check.h"  // CK, TK

#include "tether/device.cuh"
#include "tether/tether.h"

namespace dv = tether::device;


__global__ void spin(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}
__global__ void empty() {}
__global__ void fences2() {  // what two team syncs cost at 1 PE: fence + block barriers
  asm volatile("fence.sc.sys;" ::: "memory");
  __syncthreads();
  __syncthreads();
  asm volatile("fence.sc.sys;" ::: "memory");
  __syncthreads();
  __syncthreads();
}
__global__ void leaderFences2() {  // the same, the fence by one thread between the block barriers
  for (int k = 0; k < 2; ++k) {
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("fence.sc.sys;" ::: "memory");
    __syncthreads();
  }
}
__global__ void leaderAcqRel2() {
  for (int k = 0; k < 2; ++k) {
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("fence.acq_rel.sys;" ::: "memory");
    __syncthreads();
  }
}
__global__ void syncs2(tether_device_handle_t h, tether_device_team_t t) {
  dv::team_sync<dv::Scope::Block>(h, t);
  dv::team_sync<dv::Scope::Block>(h, t);
}
__global__ void __launch_bounds__(512) allreduceBlock(tether_device_handle_t h, tether_device_team_t t, float* d, const float* s, size_t n) {
  dv::team_allreduce<dv::Scope::Block>(h, t, d, s, n, dv::RedOp::Sum);
}
__global__ void __launch_bounds__(512) allreduceGrid(tether_device_handle_t h, tether_device_team_t t, float* d, const float* s, size_t n) {
  dv::team_allreduce<dv::Scope::Grid>(h, t, d, s, n, dv::RedOp::Sum);
}

cudaStream_t st;
cudaEvent_t e0, e1;

void gpuRow(const char* name, const std::function<void()>& op) {
  std::vector<double> us;
  for (int i = 0; i < 200; ++i) {
    spin<<<1, 1, 0, st>>>(300000);
    CK(cudaEventRecord(e0, st));
    op();
    CK(cudaGetLastError());
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    us.push_back(1e3 * ms);
  }
  std::sort(us.begin(), us.end());
  std::printf("GPU  %-62s best %7.3f  median %7.3f us\n", name, us.front(), us[us.size() / 2]);
}
void hostRow(const char* name, const std::function<void()>& op, bool syncEach) {
  std::vector<double> us;
  for (int b = 0; b < 7; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) op();
    CK(cudaGetLastError());
    const auto t1 = std::chrono::steady_clock::now();
    CK(cudaStreamSynchronize(st));
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 1000);
  }
  std::sort(us.begin(), us.end());
  std::printf("HOST %-62s best %7.3f  median %7.3f us%s\n", name, us.front(), us[us.size() / 2],
              syncEach ? "" : " (enqueue only)");
}

int main() {
  tether_t w;
  TK(tether_init(&w));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  void *a = nullptr, *b = nullptr;
  TK(tether_malloc_kind(w, TETHER_SEG_DEVICE, 256, 1 << 20, &a));
  TK(tether_malloc_kind(w, TETHER_SEG_DEVICE, 256, 1 << 20, &b));
  CK(cudaMemset(a, 0, 1 << 20));
  CK(cudaDeviceSynchronize());
  tether_device_handle_t h;
  TK(tether_device_handle(w, &h));
  tether_team_t team = tether_team_world(w);
  tether_device_team_t t;
  TK(tether_team_device_view(team, &h, &t));
  float* d = static_cast<float*>(b);
  const float* s = static_cast<const float*>(a);
  auto lib = [&] { TK(tether_team_allreduce_on_stream(team, d, s, 2, TETHER_FLOAT, TETHER_RED_SUM, st)); };
  auto libSync = [&] { TK(tether_team_sync_on_stream(team, st)); };
  for (int i = 0; i < 50; ++i) lib(), libSync();
  CK(cudaStreamSynchronize(st));
  std::printf("# 1 PE (%d PEs), one block of 512 threads, float sum of 2 elements (8 B)\n", tether_n_pes(w));
  for (unsigned th : {512u, 128u, 32u}) {
    char name[120];
    std::snprintf(name, sizeof name, "empty<<<1,%u>>>", th);
    gpuRow(name, [&] { empty<<<1, th, 0, st>>>(); });
    std::snprintf(name, sizeof name, "every thread: fence.sc.sys + 2 __syncthreads, twice <<<1,%u>>>", th);
    gpuRow(name, [&] { fences2<<<1, th, 0, st>>>(); });
    std::snprintf(name, sizeof name, "barrier, thread 0 fence.sc.sys, barrier; twice <<<1,%u>>>", th);
    gpuRow(name, [&] { leaderFences2<<<1, th, 0, st>>>(); });
    std::snprintf(name, sizeof name, "barrier, thread 0 fence.acq_rel.sys, barrier; twice <<<1,%u>>>", th);
    gpuRow(name, [&] { leaderAcqRel2<<<1, th, 0, st>>>(); });
    std::snprintf(name, sizeof name, "device::team_sync<Block> twice <<<1,%u>>>", th);
    gpuRow(name, [&] { syncs2<<<1, th, 0, st>>>(h, t); });
    std::snprintf(name, sizeof name, "device::team_allreduce<Block> 8 B <<<1,%u>>> (this file's kernel)", th);
    gpuRow(name, [&] { allreduceBlock<<<1, th, 0, st>>>(h, t, d, s, 2); });
    std::snprintf(name, sizeof name, "device::team_allreduce<Grid> 8 B <<<1,%u>>> (this file's kernel)", th);
    gpuRow(name, [&] { allreduceGrid<<<1, th, 0, st>>>(h, t, d, s, 2); });
  }
  gpuRow("tether_team_allreduce_on_stream 8 B (libtether: collGroupKernel)", lib);
  gpuRow("tether_team_sync_on_stream (libtether: collGroupKernel)", libSync);
  hostRow("empty<<<1,512>>>", [&] { empty<<<1, 512, 0, st>>>(); }, false);
  hostRow("allreduceGrid<<<1,512>>> (this file's kernel)", [&] { allreduceGrid<<<1, 512, 0, st>>>(h, t, d, s, 2); },
          false);
  hostRow("tether_team_allreduce_on_stream 8 B", lib, false);
  hostRow("tether_team_sync_on_stream", libSync, false);
  hostRow("tether_team_allreduce 8 B on DEVICE objects (host form)",
          [&] { TK(tether_team_allreduce(team, d, s, 2, TETHER_FLOAT, TETHER_RED_SUM)); }, true);
  hostRow("tether_team_allreduce_on_stream 8 B + cudaStreamSynchronize", [&] {
    lib();
    CK(cudaStreamSynchronize(st));
  }, true);
  TK(tether_free(w, a));
  TK(tether_free(w, b));
  TK(tether_finalize(w));
  return 0;
}
