// GPU test (2+ PEs, one GPU each when available): each PE's kernel stores into the NEXT PE's host symmetric segment
// through the pointer tether_ptr() returns (tether registers HOST segments with CUDA, so the GPU reaches it), then
// publishes with a system-scope release on the next PE's signal word. The next PE checks twice: its CPU through
// tether_signal_wait_until, and its own GPU through an acquire-spinning kernel. This is the visibility contract the
// device and stream models build on: a signal seen means the data is there, across processes and across the GPU.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tether/tether.h"

#define CK(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define TK(x)                                                                                                   \
  do {                                                                                                          \
    if ((x) != TETHER_SUCCESS) {                                                                                \
      std::fprintf(stderr, "FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, tether_last_error());                 \
      std::exit(1);                                                                                             \
    }                                                                                                           \
  } while (0)

constexpr int kN = 1 << 16;

__global__ void writeAndSignal(int* peerBuf, unsigned long long* peerSig, int me, unsigned long long round) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < kN; i += gridDim.x * blockDim.x)
    peerBuf[i] = me * 1000003 + i + static_cast<int>(round);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    atomicAdd_system(peerSig, 1ull);  // the last block's add completes the count the reader waits for
  }
}

__global__ void waitAndCheck(const int* buf, unsigned long long* sig, unsigned long long expect, int prev,
                             unsigned long long round, int* errors) {
  if (threadIdx.x == 0) {
    unsigned long long v;
    do {
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(sig) : "memory");
    } while (v < expect);
  }
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < kN; i += gridDim.x * blockDim.x) {
    int want = prev * 1000003 + i + static_cast<int>(round);
    int got;
    asm volatile("ld.relaxed.sys.global.s32 %0, [%1];" : "=r"(got) : "l"(buf + i) : "memory");
    if (got != want) atomicAdd(errors, 1);
  }
}

int main() {
  // Progress visible through tetherrun's pipe even if the run hangs (as mp::lineBufferedOutput, which this test does
  // not include).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::setvbuf(stderr, nullptr, _IONBF, 0);
  tether_t w = nullptr;
  TK(tether_init(&w));
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    if (me == 0) std::printf("SKIP: no GPU visible\n");
    tether_finalize(w);
    return 77;
  }
  CK(cudaSetDevice(tether_local_pe(w) % ndev));
  const int next = (me + 1) % n, prev = (me + n - 1) % n;

  // One symmetric block: kN ints + a 64-bit signal word (kept 8-byte aligned at the end).
  const size_t bytes = kN * sizeof(int) + sizeof(unsigned long long);
  void* p = nullptr;
  TK(tether_calloc(w, 1, bytes, &p));
  int* buf = static_cast<int*>(p);
  auto* sig = reinterpret_cast<unsigned long long*>(buf + kN);
  int* peerBuf = static_cast<int*>(tether_ptr(w, buf, next));
  if (!peerBuf) {
    std::fprintf(stderr, "FAIL: tether_ptr to PE %d is NULL\n", next);
    return 1;
  }
  auto* peerSig = reinterpret_cast<unsigned long long*>(peerBuf + kN);
  // tether registers every HOST segment view with CUDA (mapped, portable): no cudaHostRegister needed here.
  int *dPeerBuf, *dBuf;
  unsigned long long* dPeerSig;
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dPeerBuf), peerBuf, 0));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dPeerSig), peerSig, 0));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dBuf), buf, 0));
  int* dErrors;
  CK(cudaMalloc(&dErrors, sizeof(int)));
  TK(tether_barrier_all(w));

  const int blocks = 8, threads = 256;
  int failures = 0;
  for (unsigned long long round = 1; round <= 20; ++round) {
    CK(cudaMemset(dErrors, 0, sizeof(int)));
    writeAndSignal<<<blocks, threads>>>(dPeerBuf, dPeerSig, me, round);
    CK(cudaGetLastError());
    // GPU-side check of what prev's GPU wrote into my segment.
    waitAndCheck<<<blocks, threads>>>(dBuf, reinterpret_cast<unsigned long long*>(dBuf + kN),
                                      round * blocks, prev, round, dErrors);
    CK(cudaGetLastError());
    // CPU-side check through the C API.
    uint64_t seen = 0;
    TK(tether_signal_wait_until(w, reinterpret_cast<uint64_t*>(sig), TETHER_CMP_GE, round * blocks, &seen));
    for (int i = 0; i < kN; ++i)
      if (buf[i] != prev * 1000003 + i + static_cast<int>(round)) {
        std::fprintf(stderr, "FAIL PE %d round %llu: buf[%d] = %d, expected %d\n", me, round, i, buf[i],
                     prev * 1000003 + i + static_cast<int>(round));
        return 1;
      }
    CK(cudaDeviceSynchronize());
    int errors = 0;
    CK(cudaMemcpy(&errors, dErrors, sizeof errors, cudaMemcpyDeviceToHost));
    failures += errors;
    TK(tether_barrier_all(w));  // nobody starts round+1 before everyone checked round
  }
  CK(cudaFree(dErrors));
  if (failures) {
    std::fprintf(stderr, "FAIL PE %d: GPU saw %d stale elements\n", me, failures);
    return 1;
  }
  TK(tether_barrier_all(w));
  if (me == 0) std::printf("gpu_host_heap: %d PEs, GPU stores into peers' host segments seen by CPU and GPU: OK\n", n);
  TK(tether_finalize(w));
  return 0;
}
