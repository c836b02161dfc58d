// Device API benchmark (kernel-initiated communication), 2 PEs under tetherrun, one GPU each, DEVICE segments (p2p).
// Rows (see bench/README.md "device"): p ping-pong, put_signal ping-pong, put+quiet latency, put/get bandwidth
// (uni, bidir), atomic ping-pong. Every row is timed with CUDA events around ONE kernel that runs all iterations
// (launch cost amortised over them), after a warm-up kernel; ping-pong rows report one-way = time / (2 * iters).
// Prints a table (stdout, PE 0) and JSON lines (--json FILE). Exits non-zero only if a call fails or data is wrong.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "tether/device.cuh"

namespace dev = tether::device;
using dev::Cmp;
using dev::Scope;
using dev::SignalOp;

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)
#define TK(x)                                                                                 \
  do {                                                                                        \
    if ((x) != TETHER_SUCCESS) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, tether_last_error());  \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

// ---- kernels ------------------------------------------------------------------------------------------------------

// p + wait ping-pong: PE 0 starts; flag values grow by one per iteration.
__global__ void pPingPong(dev::Handle h, uint64_t* flag, int iters) {
  const int me = h.my_pe, peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    if (me == 0) {
      dev::p(h, flag, static_cast<uint64_t>(i), peer);
      dev::wait_until(h, flag, Cmp::GE, static_cast<uint64_t>(i));
    } else {
      dev::wait_until(h, flag, Cmp::GE, static_cast<uint64_t>(i));
      dev::p(h, flag, static_cast<uint64_t>(i), peer);
    }
  }
}

// __launch_bounds__(1024): block rows run 1024 threads (without it the copy loop's registers exceed the launch limit).
template <Scope S>
__global__ void __launch_bounds__(1024) putSignalPingPong(dev::Handle h, char* buf, const char* local, size_t nb, uint64_t* sig, int iters) {
  const int me = h.my_pe, peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    if (me == 0) {
      dev::putmem_signal_nbi<S>(h, buf, local, nb, sig, static_cast<uint64_t>(i), SignalOp::Set, peer);
      dev::signal_wait_until<S>(h, sig, Cmp::GE, static_cast<uint64_t>(i));
    } else {
      dev::signal_wait_until<S>(h, sig, Cmp::GE, static_cast<uint64_t>(i));
      dev::putmem_signal_nbi<S>(h, buf, local, nb, sig, static_cast<uint64_t>(i), SignalOp::Set, peer);
    }
  }
}

template <Scope S>
__global__ void __launch_bounds__(1024) putQuietLatency(dev::Handle h, char* buf, const char* local, size_t nb, int iters) {
  for (int i = 0; i < iters; ++i) {
    dev::putmem_nbi<S>(h, buf, local, nb, 1);
    dev::quiet<S>(h);
  }
}

// Bandwidth: block b moves its share of nb bytes, `reps` times; then one quiet.
template <bool Get>
__global__ void __launch_bounds__(1024) putBw(dev::Handle h, char* buf, const char* local, size_t nb, int peer, int reps) {
  const size_t share = (nb / gridDim.x + 15) & ~size_t{15};
  const size_t lo = share * blockIdx.x;
  if (lo >= nb) return;
  const size_t len = share < nb - lo ? share : nb - lo;
  for (int r = 0; r < reps; ++r) {
    if (Get)
      dev::getmem_nbi<Scope::Block>(h, const_cast<char*>(local) + lo, buf + lo, len, peer);
    else
      dev::putmem_nbi<Scope::Block>(h, buf + lo, local + lo, len, peer);
  }
  dev::quiet<Scope::Block>(h);
}

__global__ void atomicPingPong(dev::Handle h, uint64_t* flag, int iters) {
  const int me = h.my_pe, peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    if (me == 0) {
      dev::atomic_inc(h, flag, peer);
      dev::wait_until(h, flag, Cmp::GE, static_cast<uint64_t>(i));
    } else {
      dev::wait_until(h, flag, Cmp::GE, static_cast<uint64_t>(i));
      dev::atomic_inc(h, flag, peer);
    }
  }
}

__global__ void fetchAddLatency(dev::Handle h, uint64_t* word, int iters, uint64_t* out) {
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) acc += dev::atomic_fetch_add(h, word, uint64_t{1}, 1);
  *out = acc;
}

// ---- driver ---------------------------------------------------------------------------------------------------------

struct Ctx {
  tether_t w;
  int me;
  dev::Handle h;
  FILE* json = nullptr;
  double* xchg;  // HOST symmetric double[2]: PE 1's time goes to PE 0
};

double timeKernel(const std::function<void()>& launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a));
  launch();
  CK(cudaGetLastError());
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return ms * 1e-3;
}

const char* scopeName(Scope s) { return s == Scope::Thread ? "thread" : (s == Scope::Warp ? "warp" : "block"); }

void report(Ctx& c, const char* row, const char* scope, size_t bytes, int blocks, double us, double gbps, long iters,
            const char* note = "") {
  if (c.me != 0) return;
  std::printf("%-22s %-6s %12zu %6d %12.3f %10.2f %9ld %s\n", row, scope, bytes, blocks, us, gbps, iters, note);
  std::fflush(stdout);
  if (c.json)
    std::fprintf(c.json,
                 "{\"bench\":\"device\",\"row\":\"%s\",\"scope\":\"%s\",\"bytes\":%zu,\"blocks\":%d,\"us\":%.4f,"
                 "\"gbps\":%.3f,\"iters\":%ld,\"segment\":\"DEVICE\",\"path\":\"p2p\"%s%s%s}\n",
                 row, scope, bytes, blocks, us, gbps, iters, *note ? ",\"note\":\"" : "", note, *note ? "\"" : "");
}

// Runs a two-sided kernel on both PEs (after a host barrier) with a warm-up; returns PE 0's time.
double both(Ctx& c, const std::function<void()>& launch, const std::function<void()>& reset) {
  reset();
  TK(tether_barrier_all(c.w));
  timeKernel(launch);  // warm-up
  CK(cudaDeviceSynchronize());
  TK(tether_barrier_all(c.w));
  reset();
  TK(tether_barrier_all(c.w));
  const double t = timeKernel(launch);
  TK(tether_barrier_all(c.w));
  return t;
}

int main(int argc, char** argv) {
  size_t maxSize = size_t{1} << 30;
  std::string jsonPath;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-size" && i + 1 < argc) maxSize = std::strtoull(argv[++i], nullptr, 10) << 20;  // MiB
    else if (a == "--json" && i + 1 < argc) jsonPath = argv[++i];
    else if (a == "--quick") quick = true;
    else {
      std::fprintf(stderr, "usage: tetherrun -n 2 %s [--max-size MiB] [--json FILE] [--quick]\n", argv[0]);
      return a == "--help" ? 0 : 2;
    }
  }
  Ctx c;
  TK(tether_init(&c.w));
  c.me = tether_my_pe(c.w);
  if (tether_n_pes(c.w) != 2) {
    std::fprintf(stderr, "tether_bench_device needs exactly 2 PEs\n");
    return 2;
  }
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  CK(cudaSetDevice(tether_local_pe(c.w) % ndev));
  void* p = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, maxSize, &p));
  char* buf = static_cast<char*>(p);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, 4096, &p));
  auto* words = static_cast<uint64_t*>(p);
  TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, 64, &p));
  c.xchg = static_cast<double*>(p);
  char* local = nullptr;
  CK(cudaMalloc(&local, maxSize));
  CK(cudaMemset(local, 0x5a, maxSize));
  uint64_t* out = nullptr;
  CK(cudaMalloc(&out, 64));
  TK(tether_device_handle(c.w, &c.h));
  if (!tether_ptr(c.w, buf, 1 - c.me)) {
    std::fprintf(stderr, "no p2p path between the two GPUs: nothing to measure (proxy path not implemented yet)\n");
    return 2;
  }
  if (!jsonPath.empty() && c.me == 0) c.json = std::fopen(jsonPath.c_str(), "w");
  auto resetWords = [&]() { CK(cudaMemset(words, 0, 4096)); CK(cudaDeviceSynchronize()); };
  const int pp = quick ? 200 : 20000;
  if (c.me == 0) {
    int d;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&d));
    CK(cudaGetDeviceProperties(&prop, d));
    std::printf("# tether_bench_device: %s x2, handle flags 0x%x; one kernel per row, CUDA events, warm-up 1\n",
                prop.name, c.h.flags);
    if (c.json) {  // first JSON line: where, when and how (the rows follow)
      char host[256] = "?", date[32] = "?";
      gethostname(host, sizeof host - 1);
      const std::time_t now = std::time(nullptr);
      std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
      std::string cmd;
      for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
      std::fprintf(c.json, "{\"record\":\"run\",\"bench\":\"device\",\"host\":\"%s\",\"gpu\":\"%s x2\",\"date\":\"%s\","
                   "\"command\":\"%s\"}\n", host, prop.name, date, cmd.c_str());
    }
    std::printf("%-22s %-6s %12s %6s %12s %10s %9s\n", "row", "scope", "bytes", "blocks", "us", "GB/s", "iters");
  }

  // p ping-pong (8 B, thread)
  {
    const double t = both(c, [&] { pPingPong<<<1, 1>>>(c.h, words, pp); }, resetWords);
    report(c, "p_pingpong", "thread", 8, 1, t * 1e6 / (2.0 * pp), 0, pp, "one-way");
  }
  // atomic ping-pong (inc, thread) and fetch_add round trip
  {
    const double t = both(c, [&] { atomicPingPong<<<1, 1>>>(c.h, words + 64, pp); }, resetWords);
    report(c, "atomic_pingpong", "thread", 8, 1, t * 1e6 / (2.0 * pp), 0, pp, "one-way, atomic_inc + wait");
    double t2 = 0;
    TK(tether_barrier_all(c.w));
    if (c.me == 0) {
      timeKernel([&] { fetchAddLatency<<<1, 1>>>(c.h, words + 128, pp / 4, out); });
      t2 = timeKernel([&] { fetchAddLatency<<<1, 1>>>(c.h, words + 128, pp, out); });
    }
    TK(tether_barrier_all(c.w));
    report(c, "atomic_fetch_add_lat", "thread", 8, 1, t2 * 1e6 / pp, 0, pp, "round trip per op");
  }
  // put_signal ping-pong by scope and size
  const size_t latSizes[] = {8, 64, 512, 4 << 10, 64 << 10, 1 << 20};
  {
    for (Scope s : {Scope::Thread, Scope::Warp, Scope::Block})
      for (size_t nb : latSizes) {
        if (nb > maxSize || (s == Scope::Thread && nb > (64 << 10))) continue;
        const int it = nb >= (256 << 10) ? pp / 20 : (nb >= (8 << 10) ? pp / 4 : pp);
        auto run = [&] {
          if (s == Scope::Thread) putSignalPingPong<Scope::Thread><<<1, 1>>>(c.h, buf, local, nb, words + 192, it);
          if (s == Scope::Warp) putSignalPingPong<Scope::Warp><<<1, 32>>>(c.h, buf, local, nb, words + 192, it);
          if (s == Scope::Block) putSignalPingPong<Scope::Block><<<1, 1024>>>(c.h, buf, local, nb, words + 192, it);
        };
        const double t = both(c, run, resetWords);
        const double us = t * 1e6 / (2.0 * it);
        report(c, "put_signal_pingpong", scopeName(s), nb, 1, us, static_cast<double>(nb) / us * 1e-3, it, "one-way");
      }
  }
  // put + quiet latency per op (PE 0 issues, PE 1 idle)
  {
    for (Scope s : {Scope::Thread, Scope::Warp, Scope::Block}) {
      for (size_t nb : latSizes) {
        if (nb > maxSize || (s == Scope::Thread && nb > (64 << 10))) continue;
        const int it = nb >= (256 << 10) ? pp / 20 : pp / 2;
        double t = 0;
        TK(tether_barrier_all(c.w));
        if (c.me == 0) {
          auto run = [&](int k) {
            if (s == Scope::Thread) putQuietLatency<Scope::Thread><<<1, 1>>>(c.h, buf, local, nb, k);
            if (s == Scope::Warp) putQuietLatency<Scope::Warp><<<1, 32>>>(c.h, buf, local, nb, k);
            if (s == Scope::Block) putQuietLatency<Scope::Block><<<1, 1024>>>(c.h, buf, local, nb, k);
          };
          timeKernel([&] { run(it / 10 + 1); });
          t = timeKernel([&] { run(it); });
        }
        TK(tether_barrier_all(c.w));
        report(c, "put_quiet_latency", scopeName(s), nb, 1, t * 1e6 / it, 0, it, "per op");
      }
    }
  }
  // bandwidth: put uni, get uni, put bidir; sizes 8 B .. max; blocks by size, and a block sweep at the largest size
  {
    auto bw = [&](size_t nb, int blocks, int mode /*0 put, 1 get, 2 bidir*/) -> double {
      const int reps = nb <= (1 << 20) ? 20 : 1;
      auto launch = [&] {
        if (mode == 1)
          putBw<true><<<blocks, 1024>>>(c.h, buf, local, nb, 1 - c.me, reps);
        else
          putBw<false><<<blocks, 1024>>>(c.h, buf, local, nb, 1 - c.me, reps);
      };
      double t = 0;
      TK(tether_barrier_all(c.w));
      if (mode == 2 || c.me == 0) {
        timeKernel(launch);
        CK(cudaDeviceSynchronize());
      }
      TK(tether_barrier_all(c.w));
      if (mode == 2 || c.me == 0) t = timeKernel(launch);
      if (mode == 2 && c.me == 1) TK(tether_put(c.w, c.xchg, &t, sizeof t, 0));
      TK(tether_barrier_all(c.w));
      const double tt = mode == 2 ? std::max(t, c.xchg[0]) : t;
      return static_cast<double>(nb) * reps * (mode == 2 ? 2 : 1) / tt * 1e-9;  // GB/s
    };
    const char* names[3] = {"put_bw", "get_bw", "put_bw_bidir"};
    for (int mode = 0; mode < 3; ++mode) {
      for (size_t nb : {size_t{8}, size_t{512}, size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{16} << 20,
                        size_t{256} << 20, size_t{1} << 30}) {
        if (nb > maxSize) continue;
        const int blocks = static_cast<int>(std::min<size_t>(32, std::max<size_t>(1, nb / (256 << 10))));
        const double g = bw(nb, blocks, mode);
        const int reps = nb <= (1 << 20) ? 20 : 1;
        report(c, names[mode], "block", nb, blocks, static_cast<double>(nb) * reps / (g * 1e3) * (mode == 2 ? 2 : 1),
               g, reps, mode == 2 ? "total of both directions" : "");
      }
      if (maxSize >= (size_t{256} << 20)) {
        double best = 0;
        int bestBlocks = 0;
        for (int blocks : {16, 32, 64, 132, 264}) {
          const double g = bw(maxSize, blocks, mode);
          report(c, names[mode], "block", maxSize, blocks, static_cast<double>(maxSize) / (g * 1e3) * (mode == 2 ? 2 : 1),
                 g, 1, "block sweep");
          if (g > best) best = g, bestBlocks = blocks;
        }
        char note[64];
        std::snprintf(note, sizeof note, "best of the sweep (%d blocks)", bestBlocks);
        report(c, names[mode], "block", maxSize, bestBlocks, static_cast<double>(maxSize) / (best * 1e3) * (mode == 2 ? 2 : 1),
               best, 1, note);
      }
    }
  }
  if (c.json) std::fclose(c.json);
  CK(cudaFree(local));
  CK(cudaFree(out));
  TK(tether_finalize(c.w));
  return 0;
}
