// Probe (2026-12-07): wait_hold.cu's question inside a tether process (1 PE): stream A waits -- tether's on-stream
// wait (tether_signal_wait_until_on_stream GE: a stream memop wait) or a plain cuStreamWaitValue64 -- and one operation
// goes on stream B (event record, a kernel launched before, copies into cudaMalloc or symmetric-heap memory, the first
// and a second typed put, an 8-byte putmem); a thread releases the word after 1 s.
// Build (after cmake --preset default && ninja -C build/default tether):
//   nvcc -std=c++17 -arch=sm_90 -I include -I build/default/include -o wait_hold_tether \
//     bench/stream/probes/wait_hold_tether.cu -L build/default/src -ltether -lcuda -Xlinker
//     -rpath,$PWD/build/default/src
// Run: TETHER_DEVICE_HEAP_SIZE=64M TETHER_DT_CALIBRATION=/dev/null/none ./wait_hold_tether
// Results: bench/results/h100/wait_hold_2026-12-07.txt.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "tether/datatype.h"
#include "tether/tether.h"
#define CK(x)                                         \
  do {                                                \
    cudaError_t e_ = (x);                             \
    if (e_ != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e_)); \
      exit(1);                                        \
    }                                                 \
  } while (0)
#define OK(x)                                             \
  do {                                                    \
    if ((x) != TETHER_SUCCESS) {                          \
      printf("%s failed: %s\n", #x, tether_last_error()); \
      exit(1);                                            \
    }                                                     \
  } while (0)
static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
__global__ void touch(int* p) {
  if (threadIdx.x == 0) atomicAdd(p, 1);
}
int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  tether_t w;
  OK(tether_init(&w));
  void *wordv, *dstv;
  OK(tether_malloc_kind(w, TETHER_SEG_HOST, 256, 64, &wordv));
  OK(tether_malloc_kind(w, TETHER_SEG_DEVICE, 256, 1 << 20, &dstv));
  auto* word = static_cast<uint64_t*>(wordv);
  char* dst = static_cast<char*>(dstv);
  unsigned long long* hword = nullptr;
  CK(cudaHostAlloc(&hword, 64, cudaHostAllocMapped));
  unsigned long long* dhword = nullptr;
  CK(cudaHostGetDevicePointer(&dhword, hword, 0));
  char *src, *back;
  CK(cudaMalloc(&src, 1 << 20));
  CK(cudaMalloc(&back, 1 << 20));
  int* cnt;
  CK(cudaMalloc(&cnt, 64));
  touch<<<1, 32>>>(cnt);
  CK(cudaDeviceSynchronize());
  tether_type_t byte, vec;
  OK(tether_type_basic(TETHER_BASIC_BYTE, &byte));
  OK(tether_type_vector(1000, 24, 48, byte, &vec));
  OK(tether_type_commit(vec));
  struct Case {
    const char* name;
    std::function<void(cudaStream_t)> f;
  };
  Case cases[] = {
      {"event record",
       [&](cudaStream_t b) {
         cudaEvent_t ev;
         CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
         CK(cudaEventRecord(ev, b));
       }},
      {"kernel launched before", [&](cudaStream_t b) { touch<<<1, 32, 0, b>>>(cnt); }},
      {"cudaMemcpyAsync D2D cudaMalloc->cudaMalloc 64 KiB",
       [&](cudaStream_t b) { CK(cudaMemcpyAsync(back, src, 1 << 16, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpyAsync D2D cudaMalloc->heap 64 KiB",
       [&](cudaStream_t b) { CK(cudaMemcpyAsync(dst, src, 1 << 16, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpy2DAsync cudaMalloc->cudaMalloc 24 x 1000",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(back, 24, src, 48, 24, 1000, cudaMemcpyDeviceToDevice, b)); }},
      {"cudaMemcpy2DAsync cudaMalloc->heap 24 x 1000",
       [&](cudaStream_t b) { CK(cudaMemcpy2DAsync(dst, 24, src, 48, 24, 1000, cudaMemcpyDeviceToDevice, b)); }},
      {"tether_put_typed_on_stream (first)",
       [&](cudaStream_t b) { OK(tether_put_typed_on_stream(w, dst, byte, 24000, src, vec, 1, 0, b)); }},
      {"tether_put_typed_on_stream (again)",
       [&](cudaStream_t b) { OK(tether_put_typed_on_stream(w, dst, byte, 24000, src, vec, 1, 0, b)); }},
      {"tether_putmem_on_stream 8 B", [&](cudaStream_t b) { OK(tether_putmem_on_stream(w, dst, src, 8, 0, b)); }},
  };
  for (int mode = 0; mode < 2; ++mode) {
    for (auto& c : cases) {
      cudaStream_t a, b;
      CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
      CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
      *word = 0;
      *hword = 0;
      if (mode == 0)
        OK(tether_signal_wait_until_on_stream(w, word, TETHER_CMP_GE, 1, a));
      else if (cuStreamWaitValue64((CUstream)a, (CUdeviceptr)dhword, 1, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
        printf("wait failed\n");
        return 1;
      }
      const double t0 = now();
      std::thread dog([&] {
        usleep(1000000);
        __atomic_store_n(word, 1ull, __ATOMIC_RELEASE);
        __atomic_store_n(hword, 1ull, __ATOMIC_RELEASE);
      });
      usleep(1000);
      c.f(b);
      const double tEnq = now() - t0;
      double tDone = -1;
      while (now() - t0 < 2.0) {
        if (cudaStreamQuery(b) == cudaSuccess) {
          tDone = now() - t0;
          break;
        }
        usleep(20);
      }
      dog.join();
      CK(cudaStreamSynchronize(a));
      CK(cudaStreamSynchronize(b));
      printf("%-28s | %-52s | enqueue %7.1f ms | B done %7.1f ms | %s\n",
             mode ? "wait: cuStreamWaitValue64" : "wait: tether on-stream", c.name, tEnq * 1e3, tDone * 1e3,
             tEnq > 0.9                 ? "ENQUEUE BLOCKED"
             : tDone > 0.9 || tDone < 0 ? "B BLOCKED"
                                        : "ok");
      CK(cudaStreamDestroy(a));
      CK(cudaStreamDestroy(b));
    }
  }
  OK(tether_finalize(w));
  return 0;
}
