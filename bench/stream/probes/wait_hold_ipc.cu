// Probe (2026-12-07): wait_hold.cu's question for CUDA IPC calls, which need a second process. A child process exports
// two cudaMalloc buffers (cudaIpcGetMemHandle); the parent opens the first before, and the second under, a pending
// stream wait (cuStreamWaitValue64 GEQ on a mapped host word, released by a thread after 1.5 s), then closes the
// first under another pending wait. Reports when each call returned. tether's messaging opens a peer's GPU buffers
// this way and closes the oldest when its cache of 64 per peer is full (gpu_cuda.cpp, openRegion).
// Build: nvcc -O2 -arch=sm_90 -std=c++17 -o wait_hold_ipc bench/stream/probes/wait_hold_ipc.cu -lcuda
// Run: ./wait_hold_ipc (one GPU). Results: bench/results/h100/wait_hold_2026-12-07.txt.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#define CK(x)                                                     \
  do {                                                            \
    cudaError_t e_ = (x);                                         \
    if (e_ != cudaSuccess) {                                      \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e_));        \
      std::exit(1);                                               \
    }                                                             \
  } while (0)

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Runs f while a fresh stream waits for *word (released by a thread after 1.5 s); prints when f returned.
void underWait(const char* name, unsigned long long* word, unsigned long long* dword, const std::function<void()>& f) {
  cudaStream_t a = nullptr;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  *word = 0;
  if (cuStreamWaitValue64(reinterpret_cast<CUstream>(a), reinterpret_cast<CUdeviceptr>(dword), 1,
                          CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
    std::printf("cuStreamWaitValue64 failed\n");
    std::exit(1);
  }
  const double t0 = now();
  std::thread release([word] {
    usleep(1500000);
    __atomic_store_n(word, 1ull, __ATOMIC_RELEASE);
  });
  usleep(1000);
  f();
  const double t = now() - t0;
  release.join();
  CK(cudaStreamSynchronize(a));
  CK(cudaStreamDestroy(a));
  std::printf("%-46s | returned at %7.1f ms | %s\n", name, t * 1e3, t > 1.4 ? "BLOCKED until release" : "ok");
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  int toParent[2], toChild[2];
  if (pipe(toParent) || pipe(toChild)) return 1;
  const pid_t kid = fork();  // before any CUDA call in either process
  if (kid == 0) {
    CK(cudaSetDevice(0));
    cudaIpcMemHandle_t h[2];
    for (auto& x : h) {
      void* p = nullptr;
      CK(cudaMalloc(&p, 2 << 20));
      CK(cudaIpcGetMemHandle(&x, p));
    }
    if (write(toParent[1], h, sizeof h) != static_cast<ssize_t>(sizeof h)) _exit(1);
    char done = 0;
    if (read(toChild[0], &done, 1) != 1) _exit(1);  // keep the buffers until the parent is through
    _exit(0);
  }
  cudaIpcMemHandle_t h[2];
  if (read(toParent[0], h, sizeof h) != static_cast<ssize_t>(sizeof h)) return 1;
  CK(cudaSetDevice(0));
  unsigned long long *word = nullptr, *dword = nullptr;
  CK(cudaHostAlloc(&word, 64, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&dword, word, 0));
  void *first = nullptr, *second = nullptr;
  CK(cudaIpcOpenMemHandle(&first, h[0], cudaIpcMemLazyEnablePeerAccess));
  std::printf("opened the first buffer before any wait\n");
  underWait("cudaIpcOpenMemHandle (second buffer)", word, dword,
            [&] { CK(cudaIpcOpenMemHandle(&second, h[1], cudaIpcMemLazyEnablePeerAccess)); });
  underWait("cudaIpcCloseMemHandle (first buffer)", word, dword, [&] { CK(cudaIpcCloseMemHandle(first)); });
  underWait("cudaIpcCloseMemHandle (second buffer)", word, dword, [&] { CK(cudaIpcCloseMemHandle(second)); });
  const char done = 1;
  if (write(toChild[1], &done, 1) != 1) return 1;
  waitpid(kid, nullptr, 0);
  return 0;
}
