// Device API benchmark (kernel-initiated communication), 2 PEs under tetherrun, one GPU each, DEVICE segments (p2p).
// Rows (see bench/README.md "device"): p ping-pong, put_signal ping-pong, put+quiet latency, put/get bandwidth
// (uni, bidir), atomic ping-pong. Every row is timed with CUDA events around ONE kernel that runs all iterations
// (launch cost amortised over them), after a warm-up kernel; ping-pong rows report one-way = time / (2 * iters).
// Prints a table (stdout, PE 0) and JSON lines (--json FILE). Exits non-zero only if a call fails or data is wrong.
// The rows, sizes, timing, validation and output are device_rows.h's, shared with the NVSHMEM twin
// (bench/nvshmem/nvshmem_device_bench.cu); this file holds tether's kernels and start-up only.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>

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

int main(int argc, char** argv) {
  devbench::Ctx c;
  int rc = 0;
  if (!devbench::parseArgs(argc, argv, &c.opts, &rc)) return rc;
  const size_t maxSize = c.opts.maxSize;
  c.impl = "tether";
  c.segment = "DEVICE";
  if (!devbench::start(c, "tether_bench_device")) return 2;
  void* p = nullptr;
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, maxSize, &p));
  c.buf = static_cast<char*>(p);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, 4096, &p));
  c.words = static_cast<uint64_t*>(p);
  devbench::allocLocal(c);
  TetherKernels k;
  TK(tether_device_handle(c.w, &k.h));
  if (!tether_ptr(c.w, c.buf, 1 - c.me)) {
    std::fprintf(stderr, "no p2p path between the two GPUs: nothing to measure (proxy path not implemented yet)\n");
    return 2;
  }
  char detail[64];
  std::snprintf(detail, sizeof detail, "handle flags 0x%x", k.h.flags);
  rc = devbench::run(c, k, argc, argv, "tether_bench_device", detail);
  devbench::freeLocal(c);
  TK(tether_finalize(c.w));
  return rc;
}
