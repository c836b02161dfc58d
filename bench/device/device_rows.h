// Shared driver of the device-API benchmarks: tether_bench_device (device_bench.cu, tether's device API) and
// tether_bench_nvshmem_device (bench/nvshmem/nvshmem_device_bench.cu, NVSHMEM's device API). Both programs include
// this header from ONE .cu file each, so rows, sizes, iteration counts, warm-up, timing, launch configurations,
// validation, the table and the JSON lines are the same code; each program only supplies its kernels (Kernels below,
// one kernel launch per call) and its own start-up. Nothing here names tether's device API or NVSHMEM.
//
// Method (see bench/README.md "device"): every row is ONE kernel running all its iterations, timed with CUDA events
// on the default stream after a warm-up kernel of the same shape; ping-pong rows report one-way = time / (2 * iters).
// Host coordination between rows (barriers, the bidir time exchange, the validation vote) goes through tether's host
// API in both programs, never inside a timed region. Data is checked after each row, outside the timed region.
#pragma once

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>

#include "../cuda_check.h"
#include "tether/tether.h"

namespace devbench {
namespace {

enum class RowScope { Thread, Warp, Block };

// Launch configurations, the same for both implementations.
constexpr int kBwThreads = 1024;  // threads per block of the bandwidth rows
int threadsOf(RowScope s) { return s == RowScope::Thread ? 1 : (s == RowScope::Warp ? 32 : 1024); }  // <<<1, n>>>
const char* scopeName(RowScope s) {
  return s == RowScope::Thread ? "thread" : (s == RowScope::Warp ? "warp" : "block");
}

// Bandwidth kernels: this block's share [*lo, *lo + *len) of nb bytes (16-byte multiples; the last block takes the
// rest); false when the block has nothing to move.
__device__ __forceinline__ bool blockShare(size_t nb, size_t* lo, size_t* len) {
  const size_t share = (nb / gridDim.x + 15) & ~size_t{15};
  *lo = share * blockIdx.x;
  if (*lo >= nb) return false;
  *len = share < nb - *lo ? share : nb - *lo;
  return true;
}

// One kernel launch per call on the default stream, no synchronisation. Two-sided rows run on both PEs.
struct Kernels {
  virtual ~Kernels() = default;
  // 8 B p + wait_until(GE i) ping-pong on `flag`, iterations 1..iters; PE 0 starts. <<<1, 1>>>.
  virtual void pPingPong(uint64_t* flag, int iters) = 0;
  // atomic_inc on the peer's `flag` + wait_until(GE i) ping-pong. <<<1, 1>>>.
  virtual void atomicPingPong(uint64_t* flag, int iters) = 0;
  // PE 0 only: iters x atomic_fetch_add(word, 1) on PE 1, the sum of the fetched values into *out. <<<1, 1>>>.
  virtual void fetchAdd(uint64_t* word, int iters, uint64_t* out) = 0;
  // putmem_signal_nbi(buf, local, nb, sig, i, SET) + signal_wait_until(sig, GE, i) ping-pong. <<<1, threadsOf(s)>>>.
  virtual void putSignalPingPong(RowScope s, char* buf, const char* local, size_t nb, uint64_t* sig, int iters) = 0;
  // PE 0 only: iters x (putmem_nbi(buf, local, nb, PE 1) + quiet). <<<1, threadsOf(s)>>>.
  virtual void putQuiet(RowScope s, char* buf, const char* local, size_t nb, int iters) = 0;
  // Block b moves its share of nb bytes `reps` times (put: local -> peer's buf; get: peer's buf -> local), then one
  // quiet. <<<blocks, kBwThreads>>>.
  virtual void bw(bool get, int blocks, char* buf, const char* local, size_t nb, int peer, int reps) = 0;
  // Text appended to a row's note where this implementation's calls are not an exact counterpart of tether's.
  virtual const char* note(const char* /*row*/, RowScope /*s*/) { return ""; }
};

struct Options {
  size_t maxSize = size_t{1} << 30;
  std::string jsonPath;
  bool quick = false;
  // --latency: the latency rows at 8 B only (p_pingpong, atomic rows, put_signal_pingpong, put_quiet_latency), no
  // bandwidth rows: for a peer on another host, reached through the proxy ring (tens of us per operation).
  bool latencyOnly = false;
  int iters = 0;  // --iters N: ping-pong round trips per row (0: 20000, 200 with --quick); other rows scale from it
};

// false: exit with *rc (usage printed).
bool parseArgs(int argc, char** argv, Options* o, int* rc) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-size" && i + 1 < argc) o->maxSize = std::strtoull(argv[++i], nullptr, 10) << 20;  // MiB
    else if (a == "--json" && i + 1 < argc) o->jsonPath = argv[++i];
    else if (a == "--quick") o->quick = true;
    else if (a == "--latency") o->latencyOnly = true;
    else if (a == "--iters" && i + 1 < argc && std::atoi(argv[i + 1]) >= 20) o->iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: tetherrun -n 2 %s [--max-size MiB] [--json FILE] [--quick] [--latency] "
                   "[--iters N (>= 20)]\n", argv[0]);
      *rc = a == "--help" ? 0 : 2;
      return false;
    }
  }
  return true;
}

// Everything the driver needs; the program fills it after its own start-up.
struct Ctx {
  tether_t w = nullptr;  // host coordination only (barriers, exchange)
  int me = 0;
  int npes = 2;
  // Ring and all-pairs runs (tether_bench_device --pattern; bench/README.md "Patterns"): their JSON lines get
  // "pattern" and "npes"; nullptr for pair runs (their lines are as before).
  const char* pattern = nullptr;
  const char* impl = "";     // "tether" | "nvshmem": JSON "impl"
  const char* segment = "";  // JSON "segment": where buf and words live
  const char* path = "p2p";  // JSON "path": how PE 0 reaches PE 1 ("p2p", or "proxy" for a peer on another host)
  Options opts;
  char* buf = nullptr;         // symmetric, GPU memory, opts.maxSize: the remote side of every RMA row
  uint64_t* words = nullptr;   // symmetric, GPU memory, 4096 B: flags, counter, signal
  char* local = nullptr;       // this PE's GPU memory (not symmetric), opts.maxSize: put source, get destination
  uint64_t* out = nullptr;     // this PE's GPU memory, 64 B: fetch_add result
  double* xchg = nullptr;      // tether HOST symmetric, 64 B: [0] PE 1's bidir time, [1] PE 1's failure count
  FILE* json = nullptr;
  unsigned long long* bad = nullptr;  // GPU counter of wrong bytes (validation)
  long failures = 0;                  // validation failures seen on this PE
};

// Start-up both programs share: tether_init (host coordination), exactly 2 PEs (anyPes: 2 to 256), this PE's GPU =
// tether_local_pe % device count (tether's default), then allocLocal after the program's own symmetric buffers.
// false: exit with 2.
bool start(Ctx& c, const char* program, bool anyPes = false) {
  TK(tether_init(&c.w));
  c.me = tether_my_pe(c.w);
  c.npes = tether_n_pes(c.w);
  if (anyPes ? (c.npes < 2 || c.npes > 256) : c.npes != 2) {
    std::fprintf(stderr, anyPes ? "%s needs 2 to 256 PEs\n" : "%s needs exactly 2 PEs\n", program);
    return false;
  }
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  CK(cudaSetDevice(tether_local_pe(c.w) % ndev));
  return true;
}
// The tether HOST exchange words and this PE's local (cudaMalloc) buffers.
void allocLocal(Ctx& c) {
  void* p = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, 64, &p));
  c.xchg = static_cast<double*>(p);
  CK(cudaMalloc(&c.local, c.opts.maxSize));
  CK(cudaMalloc(&c.out, 64));
}
void freeLocal(Ctx& c) {
  CK(cudaFree(c.local));
  CK(cudaFree(c.out));
}

// ---- validation -----------------------------------------------------------------------------------------------------

// Position-dependent byte pattern of the put sources (so a misplaced chunk shows, not only a missing one); salt 0 for
// the pair rows, 1 + the sender's PE in ring and all-pairs runs (so a chunk from the wrong source shows too).
__host__ __device__ __forceinline__ unsigned char patternByte(size_t i, unsigned salt = 0) {
  return static_cast<unsigned char>(((static_cast<uint32_t>(i) * 2654435761u) >> 24) + 17u * salt);
}
__global__ void fillPattern(char* p, size_t n, unsigned salt) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<char>(patternByte(i, salt));
}
__global__ void countWrong(const char* p, size_t n, unsigned salt, unsigned long long* bad) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (static_cast<unsigned char>(p[i]) != patternByte(i, salt)) atomicAdd(bad, 1ull);
}

void fill(char* p, size_t n, unsigned salt = 0) {
  fillPattern<<<264, 1024>>>(p, n, salt);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}
void clear(char* p, size_t n) {
  CK(cudaMemset(p, 0, n));
  CK(cudaDeviceSynchronize());
}
// This PE's p[0..n) must hold the pattern (of `salt`).
void checkBytes(Ctx& c, const char* p, size_t n, const char* row, const char* scope, int blocks, unsigned salt = 0) {
  unsigned long long wrong = 0;
  CK(cudaMemset(c.bad, 0, sizeof wrong));
  countWrong<<<264, 1024>>>(p, n, salt, c.bad);
  CK(cudaGetLastError());
  CK(cudaMemcpy(&wrong, c.bad, sizeof wrong, cudaMemcpyDeviceToHost));
  if (wrong == 0) return;
  ++c.failures;
  std::fprintf(stderr, "%s_bench_device[PE %d]: data validation FAILED: %s %s %zu B (%d blocks%s%s): %llu of %zu "
               "bytes wrong\n", c.impl, c.me, row, scope, n, blocks, salt ? ", from PE " : "",
               salt ? std::to_string(salt - 1).c_str() : "", wrong, n);
}
// This PE's *w must equal `expect`.
void checkWord(Ctx& c, const uint64_t* w, uint64_t expect, const char* row, const char* what) {
  uint64_t v = 0;
  CK(cudaMemcpy(&v, w, sizeof v, cudaMemcpyDeviceToHost));
  if (v == expect) return;
  ++c.failures;
  std::fprintf(stderr, "%s_bench_device[PE %d]: data validation FAILED: %s: %s is %llu, expected %llu\n", c.impl,
               c.me, row, what, static_cast<unsigned long long>(v), static_cast<unsigned long long>(expect));
}

// ---- timing and reporting -------------------------------------------------------------------------------------------

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

// aggGbps >= 0 (ring, all-pairs bandwidth rows): the aggregate over all PEs, in the note and the JSON.
void report(Ctx& c, Kernels& k, const char* row, RowScope s, size_t bytes, int blocks, double us, double gbps,
            long iters, const char* base = "", double aggGbps = -1) {
  if (c.me != 0) return;
  std::string note = base;
  const char* extra = k.note(row, s);
  if (*extra) note += std::string(note.empty() ? "" : "; ") + extra;
  std::string fields;  // pattern runs only
  if (c.pattern) {
    char b[128];
    std::snprintf(b, sizeof b, ",\"pattern\":\"%s\",\"npes\":%d", c.pattern, c.npes);
    fields = b;
    if (aggGbps >= 0) {
      std::snprintf(b, sizeof b, ",\"gbps_aggregate\":%.3f", aggGbps);
      fields += b;
      std::snprintf(b, sizeof b, "aggregate %.2f GB/s", aggGbps);
      note = b + std::string(note.empty() ? "" : "; ") + note;
    }
  }
  const char* scope = scopeName(s);
  std::printf("%-22s %-6s %12zu %6d %12.3f %10.2f %9ld %s\n", row, scope, bytes, blocks, us, gbps, iters,
              note.c_str());
  std::fflush(stdout);
  if (c.json)
    std::fprintf(c.json,
                 "{\"bench\":\"device\",\"impl\":\"%s\",\"row\":\"%s\",\"scope\":\"%s\",\"bytes\":%zu,\"blocks\":%d,"
                 "\"us\":%.4f,\"gbps\":%.3f,\"iters\":%ld,\"segment\":\"%s\",\"path\":\"%s\"%s%s%s%s}\n",
                 c.impl, row, scope, bytes, blocks, us, gbps, iters, c.segment, c.path, fields.c_str(),
                 note.empty() ? "" : ",\"note\":\"", note.c_str(), note.empty() ? "" : "\"");
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

// ---- the rows -------------------------------------------------------------------------------------------------------

// Runs every row; PE 0 prints the header line "# <program>: <GPU> x2, <detail>; ..." and the table (and JSON lines).
// Returns the exit status: 0, or 1 when any PE saw wrong data.
// The end of a run (pair rows here, the pattern rows in device_bench.cu): PE 0 prints the validation verdict, the
// JSON file and the failure counter are released; returns the exit status.
int finish(Ctx& c, bool ok) {
  if (c.me == 0) {
    std::printf(ok ? "# all data validated\n" : "# data validation FAILED (see stderr)\n");
    std::fflush(stdout);
  }
  if (c.json) std::fclose(c.json);
  c.json = nullptr;
  CK(cudaFree(c.bad));
  c.bad = nullptr;
  return ok ? 0 : 1;
}

int run(Ctx& c, Kernels& k, int argc, char** argv, const char* program, const std::string& detail) {
  const size_t maxSize = c.opts.maxSize;
  CK(cudaMalloc(&c.bad, sizeof(unsigned long long)));
  fill(c.local, maxSize);
  if (!c.opts.jsonPath.empty() && c.me == 0) c.json = std::fopen(c.opts.jsonPath.c_str(), "w");
  auto resetWords = [&]() { CK(cudaMemset(c.words, 0, 4096)); CK(cudaDeviceSynchronize()); };
  const int pp = c.opts.iters ? c.opts.iters : (c.opts.quick ? 200 : 20000);
  const bool lat = c.opts.latencyOnly;
  if (c.me == 0) {
    int d;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&d));
    CK(cudaGetDeviceProperties(&prop, d));
    std::printf("# %s: %s x2, %s; one kernel per row, CUDA events, warm-up 1\n", program, prop.name, detail.c_str());
    if (c.json) {  // first JSON line: where, when and how (the rows follow)
      char host[256] = "?";
      gethostname(host, sizeof host - 1);
      const std::string date = tether_bench::utcDate();
      std::string cmd;
      for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
      std::fprintf(c.json, "{\"record\":\"run\",\"bench\":\"device\",\"impl\":\"%s\",\"impl_detail\":\"%s\","
                   "\"host\":\"%s\",\"gpu\":\"%s x2\",\"date\":\"%s\",\"command\":\"%s\"}\n", c.impl, detail.c_str(),
                   host, prop.name, date.c_str(), cmd.c_str());
    }
    std::printf("%-22s %-6s %12s %6s %12s %10s %9s\n", "row", "scope", "bytes", "blocks", "us", "GB/s", "iters");
  }
  const RowScope T = RowScope::Thread;

  // p ping-pong (8 B, thread)
  {
    const double t = both(c, [&] { k.pPingPong(c.words, pp); }, resetWords);
    checkWord(c, c.words, static_cast<uint64_t>(pp), "p_pingpong", "final flag");
    report(c, k, "p_pingpong", T, 8, 1, t * 1e6 / (2.0 * pp), 0, pp, "one-way");
  }
  // atomic ping-pong (inc, thread) and fetch_add round trip
  {
    const double t = both(c, [&] { k.atomicPingPong(c.words + 64, pp); }, resetWords);
    checkWord(c, c.words + 64, static_cast<uint64_t>(pp), "atomic_pingpong", "final flag");
    report(c, k, "atomic_pingpong", T, 8, 1, t * 1e6 / (2.0 * pp), 0, pp, "one-way, atomic_inc + wait");
    double t2 = 0;
    TK(tether_barrier_all(c.w));
    if (c.me == 0) {
      timeKernel([&] { k.fetchAdd(c.words + 128, pp / 4, c.out); });
      t2 = timeKernel([&] { k.fetchAdd(c.words + 128, pp, c.out); });
      // the timed kernel fetched pp/4, pp/4 + 1, ..., pp/4 + pp - 1
      const uint64_t n = static_cast<uint64_t>(pp), first = static_cast<uint64_t>(pp / 4);
      checkWord(c, c.out, n * first + n * (n - 1) / 2, "atomic_fetch_add_lat", "sum of the fetched values");
    }
    TK(tether_barrier_all(c.w));
    if (c.me == 1)
      checkWord(c, c.words + 128, static_cast<uint64_t>(pp / 4 + pp), "atomic_fetch_add_lat", "final counter");
    report(c, k, "atomic_fetch_add_lat", T, 8, 1, t2 * 1e6 / pp, 0, pp, "round trip per op");
  }
  // put_signal ping-pong by scope and size
  const size_t latSizes[] = {8, 64, 512, 4 << 10, 64 << 10, 1 << 20};
  {
    for (RowScope s : {RowScope::Thread, RowScope::Warp, RowScope::Block})
      for (size_t nb : latSizes) {
        if (nb > maxSize || (s == RowScope::Thread && nb > (64 << 10)) || (lat && nb > 8)) continue;
        const int it = nb >= (256 << 10) ? pp / 20 : (nb >= (8 << 10) ? pp / 4 : pp);
        const double t = both(c, [&] { k.putSignalPingPong(s, c.buf, c.local, nb, c.words + 192, it); },
                              [&] { clear(c.buf, nb); resetWords(); });
        checkBytes(c, c.buf, nb, "put_signal_pingpong", scopeName(s), 1);
        checkWord(c, c.words + 192, static_cast<uint64_t>(it), "put_signal_pingpong", "final signal");
        const double us = t * 1e6 / (2.0 * it);
        report(c, k, "put_signal_pingpong", s, nb, 1, us, static_cast<double>(nb) / us * 1e-3, it, "one-way");
      }
  }
  // put + quiet latency per op (PE 0 issues, PE 1 idle)
  {
    for (RowScope s : {RowScope::Thread, RowScope::Warp, RowScope::Block}) {
      for (size_t nb : latSizes) {
        if (nb > maxSize || (s == RowScope::Thread && nb > (64 << 10)) || (lat && nb > 8)) continue;
        const int it = nb >= (256 << 10) ? pp / 20 : pp / 2;
        double t = 0;
        if (c.me == 1) clear(c.buf, nb);
        TK(tether_barrier_all(c.w));
        if (c.me == 0) {
          timeKernel([&] { k.putQuiet(s, c.buf, c.local, nb, it / 10 + 1); });
          t = timeKernel([&] { k.putQuiet(s, c.buf, c.local, nb, it); });
        }
        TK(tether_barrier_all(c.w));
        if (c.me == 1) checkBytes(c, c.buf, nb, "put_quiet_latency", scopeName(s), 1);
        report(c, k, "put_quiet_latency", s, nb, 1, t * 1e6 / it, 0, it, "per op");
      }
    }
  }
  // bandwidth: put uni, get uni, put bidir; sizes 8 B .. max; blocks by size, and a block sweep at the largest size
  if (!lat) {
    const char* names[3] = {"put_bw", "get_bw", "put_bw_bidir"};
    auto bw = [&](size_t nb, int blocks, int mode /*0 put, 1 get, 2 bidir*/) -> double {
      const int reps = nb <= (1 << 20) ? 20 : 1;
      auto launch = [&] { k.bw(mode == 1, blocks, c.buf, c.local, nb, 1 - c.me, reps); };
      // the destination this PE checks afterwards: put: its buf (PE 1; both PEs in bidir); get: PE 0's local
      char* dest = mode == 1 ? (c.me == 0 ? c.local : nullptr) : (mode == 2 || c.me == 1 ? c.buf : nullptr);
      if (dest) clear(dest, nb);
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
      if (dest) checkBytes(c, dest, nb, names[mode], "block", blocks);
      const double tt = mode == 2 ? std::max(t, c.xchg[0]) : t;
      return static_cast<double>(nb) * reps * (mode == 2 ? 2 : 1) / tt * 1e-9;  // GB/s
    };
    for (int mode = 0; mode < 3; ++mode) {
      if (mode == 1) {  // get reads PE 1's buf: give it the pattern (PE 0's buf too: symmetric, harmless)
        fill(c.buf, maxSize);
        TK(tether_barrier_all(c.w));
      }
      for (size_t nb : {size_t{8}, size_t{512}, size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{16} << 20,
                        size_t{256} << 20, size_t{1} << 30}) {
        if (nb > maxSize) continue;
        const int blocks = static_cast<int>(std::min<size_t>(32, std::max<size_t>(1, nb / (256 << 10))));
        const double g = bw(nb, blocks, mode);
        const int reps = nb <= (1 << 20) ? 20 : 1;
        report(c, k, names[mode], RowScope::Block, nb, blocks,
               static_cast<double>(nb) * reps / (g * 1e3) * (mode == 2 ? 2 : 1), g, reps,
               mode == 2 ? "total of both directions" : "");
      }
      if (maxSize >= (size_t{256} << 20)) {
        double best = 0;
        int bestBlocks = 0;
        for (int blocks : {16, 32, 64, 132, 264}) {
          const double g = bw(maxSize, blocks, mode);
          report(c, k, names[mode], RowScope::Block, maxSize, blocks,
                 static_cast<double>(maxSize) / (g * 1e3) * (mode == 2 ? 2 : 1), g, 1, "block sweep");
          if (g > best) best = g, bestBlocks = blocks;
        }
        char note[64];
        std::snprintf(note, sizeof note, "best of the sweep (%d blocks)", bestBlocks);
        report(c, k, names[mode], RowScope::Block, maxSize, bestBlocks,
               static_cast<double>(maxSize) / (best * 1e3) * (mode == 2 ? 2 : 1), best, 1, note);
      }
    }
  }
  // validation vote: PE 1's failure count to PE 0
  double mine = static_cast<double>(c.failures);
  if (c.me == 1) TK(tether_put(c.w, c.xchg + 1, &mine, sizeof mine, 0));
  TK(tether_barrier_all(c.w));
  return finish(c, c.failures == 0 && (c.me != 0 || c.xchg[1] == 0));
}

}  // namespace
}  // namespace devbench
