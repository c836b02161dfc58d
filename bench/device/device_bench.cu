// Device API benchmark (kernel-initiated communication), 2 PEs under tetherrun, one GPU each, DEVICE segments (p2p).
// Rows (see bench/README.md "device"): p ping-pong, put_signal ping-pong, put+quiet latency, put/get bandwidth
// (uni, bidir), atomic ping-pong. Every row is timed with CUDA events around ONE kernel that runs all iterations
// (launch cost amortised over them), after a warm-up kernel; ping-pong rows report one-way = time / (2 * iters).
// Prints a table (stdout, PE 0) and JSON lines (--json FILE). Exits non-zero only if a call fails or data is wrong.
// The rows, sizes, timing, validation and output are device_rows.h's, shared with the NVSHMEM twin
// (bench/nvshmem/nvshmem_device_bench.cu); this file holds tether's kernels and start-up only, and the ring and
// all-pairs rows (--pattern ring | all-pairs, 2 or more PEs: every PE at once, to next = (me + 1) % n or to all n - 1
// others; p_pingpong and put_signal_pingpong as a ring pass / exchange, put_quiet_latency, put_bw with the aggregate;
// each PE validates what each source sent it), which have no NVSHMEM twin (bench/README.md "Patterns").
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../harness.h"  // the Traffic helpers (header-only)
#include "device_rows.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using dev::Cmp;
using dev::Scope;
using dev::SignalOp;

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
  size_t lo, len;
  if (!devbench::blockShare(nb, &lo, &len)) return;
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

using devbench::RowScope;

struct TetherKernels final : devbench::Kernels {
  dev::Handle h;
  void pPingPong(uint64_t* flag, int iters) override { ::pPingPong<<<1, 1>>>(h, flag, iters); }
  void atomicPingPong(uint64_t* flag, int iters) override { ::atomicPingPong<<<1, 1>>>(h, flag, iters); }
  void fetchAdd(uint64_t* word, int iters, uint64_t* out) override { fetchAddLatency<<<1, 1>>>(h, word, iters, out); }
  void putSignalPingPong(RowScope s, char* buf, const char* local, size_t nb, uint64_t* sig, int iters) override {
    const int n = devbench::threadsOf(s);
    if (s == RowScope::Thread) ::putSignalPingPong<Scope::Thread><<<1, n>>>(h, buf, local, nb, sig, iters);
    if (s == RowScope::Warp) ::putSignalPingPong<Scope::Warp><<<1, n>>>(h, buf, local, nb, sig, iters);
    if (s == RowScope::Block) ::putSignalPingPong<Scope::Block><<<1, n>>>(h, buf, local, nb, sig, iters);
  }
  void putQuiet(RowScope s, char* buf, const char* local, size_t nb, int iters) override {
    const int n = devbench::threadsOf(s);
    if (s == RowScope::Thread) putQuietLatency<Scope::Thread><<<1, n>>>(h, buf, local, nb, iters);
    if (s == RowScope::Warp) putQuietLatency<Scope::Warp><<<1, n>>>(h, buf, local, nb, iters);
    if (s == RowScope::Block) putQuietLatency<Scope::Block><<<1, n>>>(h, buf, local, nb, iters);
  }
  void bw(bool get, int blocks, char* buf, const char* local, size_t nb, int peer, int reps) override {
    if (get)
      putBw<true><<<blocks, devbench::kBwThreads>>>(h, buf, local, nb, peer, reps);
    else
      putBw<false><<<blocks, devbench::kBwThreads>>>(h, buf, local, nb, peer, reps);
  }
};

// ---- ring and all-pairs (--pattern; bench/README.md "Patterns") ---------------------------------------------------
// Every PE runs the row at once: ring to next = (me + 1) % n, all-pairs to all n - 1 others in each iteration (one
// message to each, in the order (me + 1 + j) % n). A sender writes into its own slot of buf (all-pairs: offset
// sender x slot; ring: slot 0 = offset 0, one source) and signals its own word (all-pairs: words[256 + sender]; ring:
// words[256]), so every PE checks what each source sent it (patterns salted with the sender, device_rows.h).

__device__ __forceinline__ int patternTarget(int me, int n, bool all, int j) {
  return all ? (me + 1 + j) % n : (me + 1) % n;
}

// p_pingpong. Ring pass: PE 0 p(flag, i) to next then waits for i from prev; every other PE waits then passes it on.
// All-pairs exchange: p(flags[me], i) to every other PE, then wait for flags[src] >= i from each. <<<1, 1>>>.
__global__ void pPattern(dev::Handle h, uint64_t* flags, int iters, bool all) {
  const int me = h.my_pe, n = h.n_pes;
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = static_cast<uint64_t>(i);
    if (all) {
      for (int j = 0; j < n - 1; ++j) dev::p(h, flags + me, v, patternTarget(me, n, true, j));
      for (int src = 0; src < n; ++src)
        if (src != me) dev::wait_until(h, flags + src, Cmp::GE, v);
    } else if (me == 0) {
      dev::p(h, flags, v, patternTarget(me, n, false, 0));
      dev::wait_until(h, flags, Cmp::GE, v);
    } else {
      dev::wait_until(h, flags, Cmp::GE, v);
      dev::p(h, flags, v, patternTarget(me, n, false, 0));
    }
  }
}

// put_signal_pingpong as a ring pass or an all-pairs exchange (as pPattern, with nb bytes into the sender's slot).
template <Scope S>
__global__ void __launch_bounds__(1024) putSignalPattern(dev::Handle h, char* buf, const char* local, size_t nb,
                                                           size_t slot, uint64_t* sigs, int iters, bool all) {
  const int me = h.my_pe, n = h.n_pes;
  char* dest = buf + static_cast<size_t>(me) * slot;
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = static_cast<uint64_t>(i);
    if (all) {
      for (int j = 0; j < n - 1; ++j)
        dev::putmem_signal_nbi<S>(h, dest, local, nb, sigs + me, v, SignalOp::Set, patternTarget(me, n, true, j));
      for (int src = 0; src < n; ++src)
        if (src != me) dev::signal_wait_until<S>(h, sigs + src, Cmp::GE, v);
    } else if (me == 0) {
      dev::putmem_signal_nbi<S>(h, dest, local, nb, sigs, v, SignalOp::Set, patternTarget(me, n, false, 0));
      dev::signal_wait_until<S>(h, sigs, Cmp::GE, v);
    } else {
      dev::signal_wait_until<S>(h, sigs, Cmp::GE, v);
      dev::putmem_signal_nbi<S>(h, dest, local, nb, sigs, v, SignalOp::Set, patternTarget(me, n, false, 0));
    }
  }
}

// put_quiet_latency, every PE at once: each iteration one putmem_nbi to each target (into this PE's slot), then quiet.
template <Scope S>
__global__ void __launch_bounds__(1024) putQuietPattern(dev::Handle h, char* buf, const char* local, size_t nb,
                                                          size_t slot, int iters, bool all) {
  const int me = h.my_pe, n = h.n_pes, fan = all ? n - 1 : 1;
  char* dest = buf + static_cast<size_t>(me) * slot;
  for (int i = 0; i < iters; ++i) {
    for (int j = 0; j < fan; ++j) dev::putmem_nbi<S>(h, dest, local, nb, patternTarget(me, n, all, j));
    dev::quiet<S>(h);
  }
}

// put_bw, every PE at once: blockIdx.y picks the target (gridDim.y = targets), block x moves its share of nb bytes
// `reps` times into this PE's slot there, then one quiet.
__global__ void __launch_bounds__(1024) putBwPattern(dev::Handle h, char* buf, const char* local, size_t nb,
                                                       size_t slot, int reps, bool all) {
  size_t lo, len;
  if (!devbench::blockShare(nb, &lo, &len)) return;
  const int me = h.my_pe, peer = patternTarget(me, h.n_pes, all, static_cast<int>(blockIdx.y));
  char* dest = buf + static_cast<size_t>(me) * slot + lo;
  for (int r = 0; r < reps; ++r) dev::putmem_nbi<Scope::Block>(h, dest, local + lo, len, peer);
  dev::quiet<Scope::Block>(h);
}

// The pattern rows' driver (tether only: the NVSHMEM twin has no pattern rows).
struct PatternRun {
  devbench::Ctx& c;
  TetherKernels& k;
  tether_bench::Traffic pattern;
  bool all = false;
  size_t slot = 0;                  // all-pairs: maxSize; ring: 0
  double* gather = nullptr;         // tether HOST symmetric, 2 npes doubles: per-PE times, then failure counts, on PE 0
  std::vector<int> sources;         // the PEs this PE receives from

  int fan() const { return tether_bench::patternFanout(pattern, c.npes); }
  uint64_t* sigs() const { return c.words + 256; }
  uint64_t* sigOf(int src) const { return sigs() + (all ? src : 0); }
  char* slotOf(int src) const { return c.buf + static_cast<size_t>(src) * slot; }
  void clearSources(size_t nb) {
    for (int src : sources) devbench::clear(slotOf(src), nb);
  }
  void checkSources(size_t nb, const char* row, RowScope s, int blocks) {
    for (int src : sources)
      devbench::checkBytes(c, slotOf(src), nb, row, devbench::scopeName(s), blocks, static_cast<unsigned>(src) + 1);
  }
  void checkSignals(uint64_t expect, const char* row) {
    for (int src : sources) devbench::checkWord(c, sigOf(src), expect, row, all ? "a source's signal" : "signal");
  }
  // Collective: the largest of every PE's t, on PE 0 (the others get their own).
  double maxOverPes(double t) {
    TK(tether_put(c.w, gather + c.me, &t, sizeof t, 0));
    TK(tether_barrier_all(c.w));
    if (c.me == 0)
      for (int pe = 0; pe < c.npes; ++pe) t = std::max(t, gather[pe]);
    TK(tether_barrier_all(c.w));
    return t;
  }
  // Collective: the sum of every PE's failure count, on PE 0.
  double failuresOnPe0() {
    const double mine = static_cast<double>(c.failures);
    TK(tether_put(c.w, gather + c.npes + c.me, &mine, sizeof mine, 0));
    TK(tether_barrier_all(c.w));
    double sum = 0;
    if (c.me == 0)
      for (int pe = 0; pe < c.npes; ++pe) sum += gather[c.npes + pe];
    TK(tether_barrier_all(c.w));
    return sum;
  }
  void resetWords() {
    CK(cudaMemset(c.words, 0, 4096));
    CK(cudaDeviceSynchronize());
  }

  int run(int argc, char** argv, const std::string& detail);
};

int PatternRun::run(int argc, char** argv, const std::string& detail) {
  const size_t maxSize = c.opts.maxSize;
  const int n = c.npes;
  for (int pe = 0; pe < n; ++pe)
    for (int j = 0; pe != c.me && j < fan(); ++j)
      if (tether_bench::patternTarget(pattern, pe, j, n) == c.me) sources.push_back(pe);
  CK(cudaMalloc(&c.bad, sizeof(unsigned long long)));
  devbench::fill(c.local, maxSize, static_cast<unsigned>(c.me) + 1);
  if (!c.opts.jsonPath.empty() && c.me == 0) c.json = std::fopen(c.opts.jsonPath.c_str(), "w");
  const int pp = c.opts.quick ? 200 : 20000;
  const char* name = tether_bench::patternName(pattern);
  const std::string title = tether_bench::patternTitle(pattern, n);
  if (c.me == 0) {
    int d;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&d));
    CK(cudaGetDeviceProperties(&prop, d));
    std::printf("# tether_bench_device%s: %s x%d, %s; one kernel per row on every PE at once, CUDA events, warm-up 1\n",
                title.c_str(), prop.name, n, detail.c_str());
    std::printf("# pattern %s: every PE %s; p_pingpong and put_signal_pingpong: %s; put_quiet_latency per op = %s + "
                "quiet; us: PE 0's kernel, put_bw: the slowest PE's (GB/s per PE; aggregate = %d x per PE)\n",
                name, all ? "to all n - 1 others per iteration (order (me + 1 + j) % n)" : "to next = (me + 1) % n",
                all ? "an exchange (every PE signals every other, then waits for all), us per round"
                    : "a ring pass (PE 0 starts, each PE waits for prev then signals next), us = round time / n",
                all ? "n - 1 puts" : "one put", n);
    if (c.json) {
      char host[256] = "?";
      gethostname(host, sizeof host - 1);
      const std::string date = tether_bench::utcDate();
      std::string cmd;
      for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
      std::fprintf(c.json, "{\"record\":\"run\",\"bench\":\"device\",\"impl\":\"%s\",\"impl_detail\":\"%s\","
                   "\"host\":\"%s\",\"gpu\":\"%s x%d\",\"date\":\"%s\",\"command\":\"%s\",\"pattern\":\"%s\","
                   "\"npes\":%d}\n", c.impl, detail.c_str(), host, prop.name, n, date.c_str(), cmd.c_str(), name, n);
    }
    std::printf("%-22s %-6s %12s %6s %12s %10s %9s\n", "row", "scope", "bytes", "blocks", "us", "GB/s", "iters");
  }
  const RowScope T = RowScope::Thread;
  const double hops = all ? 1.0 : static_cast<double>(n);  // ring: one hop = round / n

  // p_pingpong (8 B, thread)
  {
    const double t = devbench::both(c, [&] { pPattern<<<1, 1>>>(k.h, c.words, pp, all); }, [&] { resetWords(); });
    for (int src : sources)
      devbench::checkWord(c, c.words + (all ? src : 0), static_cast<uint64_t>(pp), "p_pingpong", "final flag");
    devbench::report(c, k, "p_pingpong", T, 8, 1, t * 1e6 / (hops * pp), 0, pp, all ? "per exchange round" : "one hop");
  }
  const size_t latSizes[] = {8, 64, 512, 4 << 10, 64 << 10, 1 << 20};
  // put_signal ring pass / exchange by scope and size
  for (RowScope s : {RowScope::Thread, RowScope::Warp, RowScope::Block})
    for (size_t nb : latSizes) {
      if (nb > maxSize || (s == RowScope::Thread && nb > (64 << 10))) continue;
      const int it = nb >= (256 << 10) ? pp / 20 : (nb >= (8 << 10) ? pp / 4 : pp);
      const int threads = devbench::threadsOf(s);
      auto launch = [&] {
        if (s == RowScope::Thread)
          putSignalPattern<Scope::Thread><<<1, threads>>>(k.h, c.buf, c.local, nb, slot, sigs(), it, all);
        if (s == RowScope::Warp)
          putSignalPattern<Scope::Warp><<<1, threads>>>(k.h, c.buf, c.local, nb, slot, sigs(), it, all);
        if (s == RowScope::Block)
          putSignalPattern<Scope::Block><<<1, threads>>>(k.h, c.buf, c.local, nb, slot, sigs(), it, all);
      };
      const double t = devbench::both(c, launch, [&] { clearSources(nb); resetWords(); });
      checkSources(nb, "put_signal_pingpong", s, 1);
      checkSignals(static_cast<uint64_t>(it), "put_signal_pingpong");
      const double us = t * 1e6 / (hops * it);
      devbench::report(c, k, "put_signal_pingpong", s, nb, 1, us, static_cast<double>(nb) * (all ? n - 1 : 1) / us * 1e-3, it,
             all ? "per exchange round; GB/s = (n - 1) bytes per PE / us" : "one hop");
    }
  // put + quiet latency, every PE at once
  for (RowScope s : {RowScope::Thread, RowScope::Warp, RowScope::Block})
    for (size_t nb : latSizes) {
      if (nb > maxSize || (s == RowScope::Thread && nb > (64 << 10))) continue;
      const int it = nb >= (256 << 10) ? pp / 20 : pp / 2;
      const int threads = devbench::threadsOf(s);
      auto launch = [&](int iters) {
        if (s == RowScope::Thread)
          putQuietPattern<Scope::Thread><<<1, threads>>>(k.h, c.buf, c.local, nb, slot, iters, all);
        if (s == RowScope::Warp)
          putQuietPattern<Scope::Warp><<<1, threads>>>(k.h, c.buf, c.local, nb, slot, iters, all);
        if (s == RowScope::Block)
          putQuietPattern<Scope::Block><<<1, threads>>>(k.h, c.buf, c.local, nb, slot, iters, all);
      };
      clearSources(nb);
      TK(tether_barrier_all(c.w));
      devbench::timeKernel([&] { launch(it / 10 + 1); });
      CK(cudaDeviceSynchronize());
      TK(tether_barrier_all(c.w));
      const double t = devbench::timeKernel([&] { launch(it); });
      TK(tether_barrier_all(c.w));
      checkSources(nb, "put_quiet_latency", s, 1);
      devbench::report(c, k, "put_quiet_latency", s, nb, 1, t * 1e6 / it, 0, it, all ? "per op (n - 1 puts + quiet)" : "per op");
    }
  // put bandwidth, every PE at once; sizes 8 B .. max
  for (size_t nb : {size_t{8}, size_t{512}, size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{16} << 20,
                    size_t{256} << 20, size_t{1} << 30}) {
    if (nb > maxSize) continue;
    const int blocks = static_cast<int>(std::min<size_t>(32, std::max<size_t>(1, nb / (256 << 10))));
    const int reps = nb <= (1 << 20) ? 20 : 1;
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(fan()));
    auto launch = [&] { putBwPattern<<<grid, devbench::kBwThreads>>>(k.h, c.buf, c.local, nb, slot, reps, all); };
    clearSources(nb);
    TK(tether_barrier_all(c.w));
    devbench::timeKernel(launch);
    CK(cudaDeviceSynchronize());
    TK(tether_barrier_all(c.w));
    const double t = maxOverPes(devbench::timeKernel(launch));
    TK(tether_barrier_all(c.w));
    checkSources(nb, "put_bw", RowScope::Block, blocks);
    const double perPe = static_cast<double>(nb) * reps * fan() / t * 1e-9;  // GB/s
    devbench::report(c, k, "put_bw", RowScope::Block, nb, blocks, t * 1e6 / reps, perPe, reps,
           all ? "per PE: (n - 1) x bytes per rep; blocks per target" : "per PE", perPe * n);
  }
  return devbench::finish(c, failuresOnPe0() == 0 && c.failures == 0);
}

int main(int argc, char** argv) {
  devbench::Ctx c;
  int rc = 0;
  std::vector<char*> args(argv, argv + argc);
  tether_bench::Traffic pattern = tether_bench::Traffic::Pair;
  std::string perr;
  if (!tether_bench::takePatternOption(&args, &pattern, &perr)) {
    std::fprintf(stderr, "tether_bench_device: %s\n", perr.c_str());
    return 2;
  }
  if (!devbench::parseArgs(static_cast<int>(args.size()), args.data(), &c.opts, &rc)) {
    std::fprintf(stderr, "  --pattern P: pair (default; exactly 2 PEs), ring (every PE at once to next = (me + 1) %% n) "
                 "or all-pairs (every PE at once to all n - 1 others); ring and all-pairs run p_pingpong, "
                 "put_signal_pingpong (ring pass / exchange), put_quiet_latency and put_bw only\n");
    return rc;
  }
  const bool pat = pattern != tether_bench::Traffic::Pair;
  const bool all = pattern == tether_bench::Traffic::AllPairs;
  const size_t maxSize = c.opts.maxSize;
  c.impl = "tether";
  c.segment = "DEVICE";
  if (!devbench::start(c, "tether_bench_device", pat)) return 2;
  if (pat) c.pattern = tether_bench::patternName(pattern);
  void* p = nullptr;
  // all-pairs: one slot of maxSize per source PE
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, maxSize * (all ? static_cast<size_t>(c.npes) : 1), &p));
  c.buf = static_cast<char*>(p);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, 4096, &p));
  c.words = static_cast<uint64_t*>(p);
  devbench::allocLocal(c);
  double* gather = nullptr;
  if (pat) {
    TK(tether_malloc_kind(c.w, TETHER_SEG_HOST, 64, 16 * static_cast<size_t>(c.npes), &p));
    gather = static_cast<double*>(p);
  }
  TetherKernels k;
  TK(tether_device_handle(c.w, &k.h));
  for (int j = 0; j < tether_bench::patternFanout(pattern, c.npes); ++j) {
    const int target = tether_bench::patternTarget(pattern, c.me, j, c.npes);
    if (tether_ptr(c.w, c.buf, target)) continue;
    // A peer on another host: its rows go through the proxy ring (device.cuh), tens of us per operation.
    if (pat || !c.opts.latencyOnly) {
      std::fprintf(stderr, "PE %d: PE %d's GPU is reached through the proxy ring (another host): run the pair pattern "
                   "with --latency [--iters N] (latency rows at 8 B)\n", c.me, target);
      return 2;
    }
    c.path = "proxy";
  }
  char detail[96];
  std::snprintf(detail, sizeof detail, "handle flags 0x%x, path %s", k.h.flags, c.path);
  if (pat) {
    PatternRun run{c, k, pattern};
    run.all = all;
    run.slot = all ? maxSize : 0;
    run.gather = gather;
    rc = run.run(argc, argv, detail);
  } else {
    rc = devbench::run(c, k, argc, argv, "tether_bench_device", detail);
  }
  devbench::freeLocal(c);
  TK(tether_finalize(c.w));
  return rc;
}
