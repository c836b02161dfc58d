// Probe (issue #7, small-pack overhead): where the host time of one small GPU pack goes. It times, on the calling
// thread, each piece of a tether_type_pack_async call that hits the decision cache, against an empty kernel launch:
//   api        tether_type_pack_async (argument checks, then gpuPack)
//   gpuPack    tether::dt::gpuPack called directly (no C API layer)
//   ptrattr    one cuPointerGetAttributes(MEMORY_TYPE) through the driver entry point (gpuPack asks two per call)
//   getdevice  cudaGetDevice; lasterror: cudaGetLastError (one each per call)
//   launchNNN  a <<<1, 256>>> launch of a kernel taking NNN bytes of parameters (the elem descriptor is ~290 B)
//   elem-like  a launch with the elem kernel's five parameters (two pointers, two counters, 296 B)
//   copy2d     a 64 x 40 B cudaMemcpy2DAsync, and the same by the driver's cuMemcpy2DAsync
//   drvNNN     the same kernel launched by the driver's cuLaunchKernel (entry point; CUfunction by
//              cudaGetFuncBySymbol), to see what the runtime's launch path adds
// and the event-timed time of one call as dt_bench's small rows measure it (events around the call, best of 300).
// Types: the 1 KiB struct of dt_bench's latency row and a 64 x 40 B vector.
// Host times: mean per call of 1000 enqueued back to back, the stream synchronised between batches; the rows of one
// line are measured in turn, 9 rounds, and each keeps its best (the machine's state drifts by ~0.3 us).
// Run: build/default/bench/datatype/tether_probe_dt_host (needs a GPU; prints one table).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "datatype/handle.h"
#include "tether/datatype.h"

namespace {

template <int N>
struct Params {
  char b[N];
};
__global__ void emptyKernel() {}
// The elem kernel's signature: two buffers, a unit range and the descriptor.
__global__ void elemLike(char* user, char* packed, uint32_t t0, uint32_t t1, Params<296> d) {
  if (threadIdx.x == 0 && d.b[0] == 123 && t0 < t1) packed[0] = user[0];
}
template <int N>
__global__ void paramKernel(Params<N> p, char* out) {
  if (threadIdx.x == 0 && p.b[0] == 123) out[0] = p.b[N - 1];
}

cudaStream_t gStream;

template <typename F>
double hostUs(F&& f) {
  CK(cudaStreamSynchronize(gStream));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) f();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 1000.0;
  CK(cudaStreamSynchronize(gStream));
  return us;
}
// Best host time per call of each of fs, measured in turn over 9 rounds.
template <typename... F>
std::vector<double> hostRounds(F&&... fs) {
  std::vector<double> best(sizeof...(fs), 1e30);
  for (int r = 0; r < 9; ++r) {
    size_t i = 0;
    ((best[i] = std::min(best[i], hostUs(fs)), ++i), ...);
  }
  return best;
}

template <typename F>
double eventUs(F&& f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  float best = 1e30f;
  for (int i = 0; i < 300; ++i) {
    CK(cudaEventRecord(a, gStream));
    f();
    CK(cudaEventRecord(b, gStream));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return best * 1e3;
}

void probeType(const char* name, tether_type_t t, const unsigned char* user, unsigned char* packed) {
  int64_t size = 0;
  DTK(tether_type_size(t, &size));
  auto api = [&] {
    int64_t done = 0;
    DTK(tether_type_pack_async(t, 1, user, 0, size, packed, &done, gStream));
  };
  tether::dt::GpuPackRequest r;
  r.c = t->canonical.get();
  r.count = 1;
  r.src = user;
  r.dst = packed;
  r.len = size;
  r.stream = gStream;
  tether::dt::Scheme used = tether::dt::Scheme::Auto;
  auto direct = [&] {
    if (!tether::dt::gpuPack(r, &t->gpu, &used).isOk()) {
      std::fprintf(stderr, "gpuPack failed\n");
      std::exit(2);
    }
  };
  direct();
  CK(cudaStreamSynchronize(gStream));
  const std::vector<double> h = hostRounds([] { emptyKernel<<<1, 256, 0, gStream>>>(); }, api, direct);
  const double empty = h[0], a = h[1], g = h[2];
  const double ea = eventUs(api), ee = eventUs([] { emptyKernel<<<1, 256, 0, gStream>>>(); });
  std::printf("%-10s %6lld B  scheme %-6s  host us/call: empty launch %.3f, api %.3f (+%.3f), gpuPack %.3f (+%.3f); "
              "event us: empty %.2f, api %.2f\n",
              name, static_cast<long long>(size), tether::dt::schemeName(used), empty, a, a - empty, g, g - empty, ee,
              ea);
}

}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "no GPU\n");
    return 77;
  }
  CK(cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking));
  unsigned char *user, *packed;
  char* out;
  CK(cudaMalloc(&user, 1 << 16));
  CK(cudaMalloc(&packed, 1 << 16));
  CK(cudaMalloc(&out, 64));
  CK(cudaMemset(user, 1, 1 << 16));
  CK(cudaDeviceSynchronize());

  // CUDA primitives gpuPack calls per cache hit.
  using PtrAttrsFn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
  void* fp = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &fp, 12000, cudaEnableDefault, &q));
  auto attrs = reinterpret_cast<PtrAttrsFn>(fp);
  unsigned type = 0;
  auto ptrattr = [&] {
    CUpointer_attribute what = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void* o = &type;
    attrs(1, &what, &o, reinterpret_cast<CUdeviceptr>(user));
  };
  int dev = 0;
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**);
  CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fp, 12000, cudaEnableDefault, &q));
  auto launch = reinterpret_cast<LaunchFn>(fp);
  cudaFunction_t fEmpty, f296;
  CK(cudaGetFuncBySymbol(&fEmpty, reinterpret_cast<const void*>(emptyKernel)));
  CK(cudaGetFuncBySymbol(&f296, reinterpret_cast<const void*>(paramKernel<296>)));
  Params<296> p296{};
  using Copy2DFn = CUresult (*)(const CUDA_MEMCPY2D*, CUstream);
  CK(cudaGetDriverEntryPointByVersion("cuMemcpy2DAsync", &fp, 12000, cudaEnableDefault, &q));
  auto copy2d = reinterpret_cast<Copy2DFn>(fp);
  CUDA_MEMCPY2D m2 = {};
  m2.srcMemoryType = m2.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  m2.srcDevice = reinterpret_cast<CUdeviceptr>(user);
  m2.srcPitch = 256;
  m2.dstDevice = reinterpret_cast<CUdeviceptr>(packed);
  m2.dstPitch = 40;
  m2.WidthInBytes = 40;
  m2.Height = 64;
  void* args296[] = {&p296, &out};
  const std::vector<double> t = hostRounds(
      ptrattr, [&] { cudaGetDevice(&dev); }, [] { (void)cudaGetLastError(); },
      [] { emptyKernel<<<1, 256, 0, gStream>>>(); },
      [&] { paramKernel<32><<<1, 256, 0, gStream>>>(Params<32>{}, out); },
      [&] { paramKernel<296><<<1, 256, 0, gStream>>>(p296, out); },
      [&] { paramKernel<1024><<<1, 256, 0, gStream>>>(Params<1024>{}, out); },
      [&] { launch(reinterpret_cast<CUfunction>(fEmpty), 1, 1, 1, 256, 1, 1, 0, gStream, nullptr, nullptr); },
      [&] { launch(reinterpret_cast<CUfunction>(f296), 1, 1, 1, 256, 1, 1, 0, gStream, args296, nullptr); },
      [&] { elemLike<<<1, 256, 0, gStream>>>(out, out, 0, 1, p296); },
      [&] { cudaMemcpy2DAsync(packed, 40, user, 256, 40, 64, cudaMemcpyDefault, gStream); },
      [&] { copy2d(&m2, gStream); });
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# tether_probe_dt_host on %s; host us per call (mean of 1000 back to back, best of 9 rounds)\n", prop.name);
  std::printf("primitives: ptrattr %.3f, getdevice %.3f, lasterror %.3f, launch empty %.3f, launch32 %.3f, "
              "launch296 %.3f, launch1024 %.3f, drv empty %.3f, drv296 %.3f, elem-like (5 params) %.3f, "
              "cudaMemcpy2DAsync 64 x 40 B %.3f, cuMemcpy2DAsync %.3f\n",
              t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11]);

  tether_type_t d, f, st, v, b;
  DTK(tether_type_basic(TETHER_BASIC_DOUBLE, &d));
  DTK(tether_type_basic(TETHER_BASIC_FLOAT, &f));
  const int64_t bl[2] = {96, 64}, disp[2] = {0, 1024};
  const tether_type_t ts[2] = {d, f};
  DTK(tether_type_struct(2, bl, disp, ts, &st));
  DTK(tether_type_commit(st));
  DTK(tether_type_basic(TETHER_BASIC_BYTE, &b));
  DTK(tether_type_vector(64, 40, 256, b, &v));
  DTK(tether_type_commit(v));
  for (int rep = 0; rep < 2; ++rep) {
    probeType("struct", st, user, packed);
    probeType("vector", v, user, packed);
  }
  return 0;
}
