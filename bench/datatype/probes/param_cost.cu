// Probe (not built by CMake): host cost of cudaLaunchKernel by kernel-parameter size (0, 24, 312, 1024 bytes) and the
// event-timed time of one launch. It checks whether the elem descriptor's ~290 B of parameters slow a small pack.
// Run: nvcc -O2 -arch=sm_90 -o /tmp/pc bench/datatype/probes/param_cost.cu && /tmp/pc
// Result of 2026-11-24: bench/results/h200/experiments/param_cost.txt.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
template <int N> struct P { char b[N]; };
__global__ void k0() {}
template <int N> __global__ void kn(P<N> p) { if (p.b[0] == 123 && threadIdx.x == 999) printf("x"); }
template <typename F> double hostUs(F f, int n) {
  for (int i = 0; i < 100; ++i) f();
  cudaDeviceSynchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  cudaDeviceSynchronize();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}
template <typename F> double eventUs(F f, int n, cudaStream_t s) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  float best = 1e9;
  for (int i = 0; i < n; ++i) { cudaEventRecord(a, s); f(); cudaEventRecord(b, s); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); if (ms < best) best = ms; }
  return best * 1e3;
}
int main() {
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  P<24> p24{}; P<312> p312{}; P<1024> p1k{};
  auto f0 = [&] { k0<<<512, 256, 0, s>>>(); };
  auto f24 = [&] { kn<24><<<512, 256, 0, s>>>(p24); };
  auto f312 = [&] { kn<312><<<512, 256, 0, s>>>(p312); };
  auto f1k = [&] { kn<1024><<<512, 256, 0, s>>>(p1k); };
  for (int rep = 0; rep < 2; ++rep) {
    std::printf("host us/launch (10000, no sync): 0 B %.3f, 24 B %.3f, 312 B %.3f, 1024 B %.3f\n", hostUs(f0, 10000),
                hostUs(f24, 10000), hostUs(f312, 10000), hostUs(f1k, 10000));
    std::printf("event us, one launch (best of 300): 0 B %.2f, 24 B %.2f, 312 B %.2f, 1024 B %.2f\n", eventUs(f0, 300, s),
                eventUs(f24, 300, s), eventUs(f312, 300, s), eventUs(f1k, 300, s));
  }
  return 0;
}
