// Probe (issue #22, stream rows): the host's issue cost and the stream's throughput of back-to-back 8-byte transfers
// on one stream of one GPU, by mechanism -- cudaMemcpyAsync (cudaMemcpyDefault, DeviceToDevice, after a
// cudaSetDevice), the driver's cuMemcpyAsync / cuMemcpyDtoDAsync, into a VMM mapping (as tether's DEVICE heap maps
// peers), from pinned host memory, a one-thread copy kernel and a stream memop write (cuStreamWriteValue64) -- to see
// which part of tether_putmem_on_stream's cost is the driver's. One process, no tether.
// Build and run: nvcc -O2 -std=c++17 -arch=sm_90 -o issue_probe bench/stream/probes/issue_probe.cu -lcuda
//                ./issue_probe [calls per round, default 20000]
// Prints per mechanism the median over 5 rounds (and [min, max]) of the CPU time per call (issue) and of the time per
// call until the stream is through (total). Results: bench/results/h200/stream_issue_probe_2026-12-06.txt.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e = (x);                                                            \
    if (e != cudaSuccess) {                                                         \
      std::printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)
#define CU(x)                                                      \
  do {                                                             \
    CUresult r = (x);                                              \
    if (r != CUDA_SUCCESS) {                                       \
      std::printf("CU %d at %s:%d\n", (int)r, __FILE__, __LINE__); \
      std::exit(1);                                                \
    }                                                              \
  } while (0)

__global__ void copy8(unsigned long long* d, const unsigned long long* s) { *d = *s; }

using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

int main(int argc, char** argv) {
  const int N = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = 5;
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  unsigned long long *src, *dst;
  CK(cudaMalloc(&src, 4096));
  CK(cudaMalloc(&dst, 4096));
  CK(cudaMemset(src, 1, 4096));
  // A VMM allocation as the destination (as tether's DEVICE heap maps peers' memory).
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle h;
  CU(cuMemCreate(&h, gran, &prop, 0));
  CUdeviceptr vmm;
  CU(cuMemAddressReserve(&vmm, gran, 0, 0, 0));
  CU(cuMemMap(vmm, gran, 0, h, 0));
  CUmemAccessDesc acc{};
  acc.location = prop.location;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU(cuMemSetAccess(vmm, gran, &acc, 1));
  unsigned long long* hostPinned;
  CK(cudaMallocHost(&hostPinned, 4096));
  void* dstv = reinterpret_cast<void*>(vmm);
  CUstream cs = reinterpret_cast<CUstream>(st);
  struct Row {
    const char* name;
    std::vector<double> issue, total;
  };
  std::vector<Row> rows;
  auto run = [&](const char* name, auto&& f) {
    Row r{name, {}, {}};
    for (int i = 0; i < 200; ++i) f();  // warm-up
    CK(cudaStreamSynchronize(st));
    for (int k = 0; k < rounds; ++k) {
      auto t0 = clk::now();
      for (int i = 0; i < N; ++i) f();
      auto t1 = clk::now();
      CK(cudaStreamSynchronize(st));
      auto t2 = clk::now();
      r.issue.push_back(us(t0, t1) / N);
      r.total.push_back(us(t0, t2) / N);
    }
    rows.push_back(r);
  };
  run("cudaMemcpyAsync Default D->D", [&] { CK(cudaMemcpyAsync(dst, src, 8, cudaMemcpyDefault, st)); });
  run("cudaMemcpyAsync DeviceToDevice", [&] { CK(cudaMemcpyAsync(dst, src, 8, cudaMemcpyDeviceToDevice, st)); });
  run("cudaSetDevice + cudaMemcpyAsync Default", [&] {
    CK(cudaSetDevice(0));
    CK(cudaMemcpyAsync(dst, src, 8, cudaMemcpyDefault, st));
  });
  run("cuMemcpyAsync D->D", [&] { CU(cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, 8, cs)); });
  run("cuMemcpyDtoDAsync", [&] { CU(cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, 8, cs)); });
  run("cudaMemcpyAsync Default D->VMM", [&] { CK(cudaMemcpyAsync(dstv, src, 8, cudaMemcpyDefault, st)); });
  run("cuMemcpyAsync D->VMM", [&] { CU(cuMemcpyAsync(vmm, (CUdeviceptr)src, 8, cs)); });
  run("cudaMemcpyAsync Default H(pinned)->D", [&] { CK(cudaMemcpyAsync(dst, hostPinned, 8, cudaMemcpyDefault, st)); });
  run("kernel copy8<<<1,1>>>", [&] { copy8<<<1, 1, 0, st>>>(dst, src); });
  run("cuStreamWriteValue64", [&] { CU(cuStreamWriteValue64(cs, (CUdeviceptr)dst, 7, 0)); });
  run("cudaSetDevice only", [&] { CK(cudaSetDevice(0)); });
  int dev = 0;
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  int drv = 0;
  CK(cudaDriverGetVersion(&drv));
  std::printf(
      "# issue_probe: %s, driver %d, %d back-to-back calls x %d rounds on one non-blocking stream; per call: "
      "issue = CPU time of the calls, total = until the stream is through (median of rounds, [min, max])\n",
      p.name, drv, N, rounds);
  std::printf("%-42s %10s %22s %10s %22s\n", "mechanism", "issue_us", "", "total_us", "");
  for (auto& r : rows) {
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    auto mn = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    auto mx = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    std::printf("%-42s %10.3f   [%7.3f, %7.3f]   %10.3f   [%7.3f, %7.3f]\n", r.name, med(r.issue), mn(r.issue),
                mx(r.issue), med(r.total), mn(r.total), mx(r.total));
  }
  return 0;
}
