// tether_bench_nvshmem_device: the NVSHMEM twin of tether_bench_device (issue #5) — the same rows, sizes, iteration
// counts, warm-up, timing, launch configurations, validation, table and JSON lines (all of them in
// bench/device/device_rows.h, shared), with NVSHMEM's device API in the kernels instead of tether's.
//
//   tetherrun -n 2 tether_bench_nvshmem_device [--max-size MiB] [--json FILE] [--quick]
//
// Start-up: nvshmem_boot.h (tether hands out NVSHMEM's unique id; nvshmemx_init_attr with UID bootstrap). Symmetric
// buffers (buf, words) come from nvshmem_malloc; the local buffer is cudaMalloc'd like tether's and registered with
// nvshmemx_buffer_register (P2P does not need it; other transports would). Host coordination between rows goes
// through tether's host API, as in tether_bench_device, never inside a timed region.
//
// Call mapping (tether device API -> NVSHMEM device API). Exact counterparts unless the row's note says otherwise:
//   p / wait_until(GE)                    nvshmem_uint64_p / nvshmem_uint64_wait_until(NVSHMEM_CMP_GE)
//   atomic_inc / atomic_fetch_add         nvshmem_uint64_atomic_inc / nvshmem_uint64_atomic_fetch_add
//   putmem_signal_nbi<Thread|Warp|Block>  nvshmem_putmem_signal_nbi / nvshmemx_putmem_signal_nbi_warp / _block
//   signal_wait_until<S>                  nvshmem_signal_wait_until in every thread of the group (tether's scoped
//                                         wait is defined as every thread polling; NVSHMEM has no scoped form)
//   putmem_nbi<S>, getmem_nbi<Block>      nvshmem_putmem_nbi / nvshmemx_putmem_nbi_warp / _block, nvshmemx_getmem_nbi_block
//   quiet<S>                              nvshmem_quiet in every thread, then __syncwarp / __syncthreads (tether's
//                                         quiet<S> definition; NVSHMEM's public API has no warp/block quiet)
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "device_rows.h"
#include "nvshmem_boot.h"

// ---- kernels ------------------------------------------------------------------------------------------------------

using devbench::RowScope;

// Group synchronisation after a quiet, as tether's quiet<S>.
template <RowScope S>
__device__ __forceinline__ void groupSync() {
  if (S == RowScope::Warp) __syncwarp();
  if (S == RowScope::Block) __syncthreads();
}

// p + wait ping-pong: PE 0 starts; flag values grow by one per iteration.
__global__ void pPingPong(uint64_t* flag, int iters) {
  const int me = nvshmem_my_pe(), peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    if (me == 0) {
      nvshmem_uint64_p(flag, static_cast<uint64_t>(i), peer);
      nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, static_cast<uint64_t>(i));
    } else {
      nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, static_cast<uint64_t>(i));
      nvshmem_uint64_p(flag, static_cast<uint64_t>(i), peer);
    }
  }
}

template <RowScope S>
__device__ __forceinline__ void putSignal(char* buf, const char* local, size_t nb, uint64_t* sig, uint64_t v, int pe) {
  if (S == RowScope::Thread) nvshmem_putmem_signal_nbi(buf, local, nb, sig, v, NVSHMEM_SIGNAL_SET, pe);
  if (S == RowScope::Warp) nvshmemx_putmem_signal_nbi_warp(buf, local, nb, sig, v, NVSHMEM_SIGNAL_SET, pe);
  if (S == RowScope::Block) nvshmemx_putmem_signal_nbi_block(buf, local, nb, sig, v, NVSHMEM_SIGNAL_SET, pe);
}

// __launch_bounds__(1024): block rows run 1024 threads (as tether_bench_device's kernels).
template <RowScope S>
__global__ void __launch_bounds__(1024) putSignalPingPong(char* buf, const char* local, size_t nb, uint64_t* sig, int iters) {
  const int me = nvshmem_my_pe(), peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    if (me == 0) {
      putSignal<S>(buf, local, nb, sig, static_cast<uint64_t>(i), peer);
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, static_cast<uint64_t>(i));
    } else {
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, static_cast<uint64_t>(i));
      putSignal<S>(buf, local, nb, sig, static_cast<uint64_t>(i), peer);
    }
  }
}

template <RowScope S>
__device__ __forceinline__ void putNbi(char* buf, const char* local, size_t nb, int pe) {
  if (S == RowScope::Thread) nvshmem_putmem_nbi(buf, local, nb, pe);
  if (S == RowScope::Warp) nvshmemx_putmem_nbi_warp(buf, local, nb, pe);
  if (S == RowScope::Block) nvshmemx_putmem_nbi_block(buf, local, nb, pe);
}

template <RowScope S>
__global__ void __launch_bounds__(1024) putQuietLatency(char* buf, const char* local, size_t nb, int iters) {
  for (int i = 0; i < iters; ++i) {
    putNbi<S>(buf, local, nb, 1);
    nvshmem_quiet();
    groupSync<S>();
  }
}

// Bandwidth: block b moves its share of nb bytes, `reps` times; then one quiet.
template <bool Get>
__global__ void __launch_bounds__(1024) putBw(char* buf, const char* local, size_t nb, int peer, int reps) {
  size_t lo, len;
  if (!devbench::blockShare(nb, &lo, &len)) return;
  for (int r = 0; r < reps; ++r) {
    if (Get)
      nvshmemx_getmem_nbi_block(const_cast<char*>(local) + lo, buf + lo, len, peer);
    else
      nvshmemx_putmem_nbi_block(buf + lo, local + lo, len, peer);
  }
  nvshmem_quiet();
  __syncthreads();
}

__global__ void atomicPingPong(uint64_t* flag, int iters) {
  const int me = nvshmem_my_pe(), peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    if (me == 0) {
      nvshmem_uint64_atomic_inc(flag, peer);
      nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, static_cast<uint64_t>(i));
    } else {
      nvshmem_uint64_wait_until(flag, NVSHMEM_CMP_GE, static_cast<uint64_t>(i));
      nvshmem_uint64_atomic_inc(flag, peer);
    }
  }
}

__global__ void fetchAddLatency(uint64_t* word, int iters, uint64_t* out) {
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) acc += nvshmem_uint64_atomic_fetch_add(word, uint64_t{1}, 1);
  *out = acc;
}

// ---- driver ---------------------------------------------------------------------------------------------------------

struct NvshmemKernels final : devbench::Kernels {
  void pPingPong(uint64_t* flag, int iters) override { ::pPingPong<<<1, 1>>>(flag, iters); }
  void atomicPingPong(uint64_t* flag, int iters) override { ::atomicPingPong<<<1, 1>>>(flag, iters); }
  void fetchAdd(uint64_t* word, int iters, uint64_t* out) override { fetchAddLatency<<<1, 1>>>(word, iters, out); }
  void putSignalPingPong(RowScope s, char* buf, const char* local, size_t nb, uint64_t* sig, int iters) override {
    const int n = devbench::threadsOf(s);
    if (s == RowScope::Thread) ::putSignalPingPong<RowScope::Thread><<<1, n>>>(buf, local, nb, sig, iters);
    if (s == RowScope::Warp) ::putSignalPingPong<RowScope::Warp><<<1, n>>>(buf, local, nb, sig, iters);
    if (s == RowScope::Block) ::putSignalPingPong<RowScope::Block><<<1, n>>>(buf, local, nb, sig, iters);
  }
  void putQuiet(RowScope s, char* buf, const char* local, size_t nb, int iters) override {
    const int n = devbench::threadsOf(s);
    if (s == RowScope::Thread) putQuietLatency<RowScope::Thread><<<1, n>>>(buf, local, nb, iters);
    if (s == RowScope::Warp) putQuietLatency<RowScope::Warp><<<1, n>>>(buf, local, nb, iters);
    if (s == RowScope::Block) putQuietLatency<RowScope::Block><<<1, n>>>(buf, local, nb, iters);
  }
  void bw(bool get, int blocks, char* buf, const char* local, size_t nb, int peer, int reps) override {
    if (get)
      putBw<true><<<blocks, devbench::kBwThreads>>>(buf, local, nb, peer, reps);
    else
      putBw<false><<<blocks, devbench::kBwThreads>>>(buf, local, nb, peer, reps);
  }
  // Where the NVSHMEM calls are not one-for-one with tether's (see the mapping above).
  const char* note(const char* row, RowScope s) override {
    const bool group = s != RowScope::Thread;
    if (!std::strcmp(row, "put_signal_pingpong") && group)
      return "wait: nvshmem_signal_wait_until in every thread (no scoped NVSHMEM wait)";
    if (!std::strcmp(row, "put_quiet_latency") && group)
      return "quiet: nvshmem_quiet in every thread + group sync (no scoped NVSHMEM quiet)";
    if (!std::strcmp(row, "put_bw") || !std::strcmp(row, "get_bw") || !std::strcmp(row, "put_bw_bidir"))
      return "quiet: nvshmem_quiet in every thread + __syncthreads (no scoped NVSHMEM quiet)";
    return "";
  }
};

int main(int argc, char** argv) {
  devbench::Ctx c;
  int rc = 0;
  if (!devbench::parseArgs(argc, argv, &c.opts, &rc)) return rc;
  const size_t maxSize = c.opts.maxSize;
  c.impl = "nvshmem";
  c.segment = "NVSHMEM_HEAP";  // nvshmem_malloc (GPU memory)

  // NVSHMEM's environment, before any NVSHMEM call; every PE computes the same values.
  const size_t heapNeed = maxSize + (size_t{64} << 20);  // buf + words (+ NVSHMEM's own)
  std::string envNvls, envTransport, envHeap;
  if (!tether_nvshmem::envDefault("NVSHMEM_DISABLE_NVLS", "1", &envNvls) ||
      !tether_nvshmem::envDefault("NVSHMEM_REMOTE_TRANSPORT", "none", &envTransport) ||
      !tether_nvshmem::envDefault("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heapNeed), &envHeap)) {
    std::fprintf(stderr, "tether_bench_nvshmem_device: setenv failed\n");
    return 2;
  }

  if (!devbench::start(c, "tether_bench_nvshmem_device")) return 2;
  std::string error;
  if (!tether_nvshmem::bootNvshmem(c.w, &error)) {
    std::fprintf(stderr, "tether_bench_nvshmem_device[PE %d]: %s\n", c.me, error.c_str());
    std::fflush(nullptr);
    std::_Exit(2);  // not exit(): teardown could wait on the peer
  }
  c.buf = static_cast<char*>(nvshmem_malloc(maxSize));
  c.words = static_cast<uint64_t*>(nvshmem_malloc(4096));
  if (c.buf == nullptr || c.words == nullptr) {
    std::fprintf(stderr, "tether_bench_nvshmem_device[PE %d]: nvshmem_malloc of %zu bytes (+ 4096) failed: "
                 "NVSHMEM_SYMMETRIC_SIZE=%s; set it to at least %zu or lower --max-size\n", c.me, maxSize,
                 envHeap.c_str(), heapNeed);
    std::fflush(nullptr);
    std::_Exit(2);
  }
  devbench::allocLocal(c);
  const bool registered = nvshmemx_buffer_register(c.local, maxSize) == 0;
  if (!registered)
    std::fprintf(stderr, "tether_bench_nvshmem_device[PE %d]: warning: nvshmemx_buffer_register(local, %zu) failed; "
                 "going on (P2P reads and writes the local buffer directly)\n", c.me, maxSize);
  if (!nvshmem_ptr(c.buf, 1 - c.me)) {
    std::fprintf(stderr, "no p2p path between the two GPUs (nvshmem_ptr == NULL): not the path tether_bench_device "
                 "measures\n");
    std::fflush(nullptr);
    std::_Exit(2);
  }
  NvshmemKernels k;
  const std::string detail = "NVSHMEM " + tether_nvshmem::nvshmemVersion() + " device API, NVSHMEM_SYMMETRIC_SIZE=" +
                             envHeap + " NVSHMEM_REMOTE_TRANSPORT=" + envTransport + " NVSHMEM_DISABLE_NVLS=" +
                             envNvls + ", local buffer " + (registered ? "registered" : "NOT registered");
  rc = devbench::run(c, k, argc, argv, "tether_bench_nvshmem_device", detail);
  nvshmem_barrier_all();
  if (registered && nvshmemx_buffer_unregister(c.local) != 0)
    std::fprintf(stderr, "tether_bench_nvshmem_device[PE %d]: nvshmemx_buffer_unregister failed\n", c.me);
  nvshmem_free(c.words);
  nvshmem_free(c.buf);
  devbench::freeLocal(c);
  nvshmem_finalize();
  TK(tether_finalize(c.w));
  return rc;
}
