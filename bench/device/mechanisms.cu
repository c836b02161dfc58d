// What each GPU-initiated mechanism costs between two GPUs of this machine — the design data behind the device API
// (issue #5), not a benchmark of tether's API. One process, two GPUs with peer access (cudaDeviceEnablePeerAccess),
// so every row is the bare mechanism: no translation, no handle.
//
// Rows:
//  pingpong/*  one-way latency of an 8-byte message + flag, GPU0 <-> GPU1, one thread each side, 20000 round trips:
//              the writer's data store / ordering / flag store and the reader's polling load vary by row.
//  quiet/*     8-byte store to the peer followed by a completion fence, per op, one warp (lane 0 stores).
//  put_bw/*    1 GiB GPU0 -> GPU1 by SM stores (16-byte vectors, U in flight per thread) or by TMA bulk copies
//              (cp.async.bulk global -> shared -> peer global, a ring of shared-memory stages per block).
//  get_bw/*    1 GiB GPU0 <- GPU1 by SM loads.
//  bidir/*     both GPUs put 1 GiB to each other at once; total GB/s.
//  ce/*        copy engine (cudaMemcpyPeerAsync), the reference ceiling.
// Timing: CUDA events on GPU0 around one kernel that runs every iteration (both GPUs' kernels are launched before
// waiting); bandwidth rows best of 5. Prints a table and, with --json FILE, JSON lines (first line: run record).
// Exits non-zero if a CUDA call fails or moved data is wrong.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "../cuda_check.h"


// ---- flag and data primitives ---------------------------------------------------------------------------------------
enum class Wr { RelaxedFlag, VolatileFlag, DataRelease, DataFenceAcqRel, DataFenceSc, DataRedRelease, Fused16 };
enum class Rd { Acquire, Relaxed, Volatile, RelaxedThenFence };

__device__ __forceinline__ uint64_t ldAcquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ldRelaxed(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ldVolatile(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.volatile.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Message layout in each GPU's buffer: [0] data word, [1] flag word (16-byte aligned pair for the fused row).
template <Wr W>
__device__ __forceinline__ void send(uint64_t* peerMsg, uint64_t i) {
  uint64_t* data = peerMsg;
  uint64_t* flag = peerMsg + 1;
  switch (W) {
    case Wr::RelaxedFlag:
      asm volatile("st.relaxed.sys.b64 [%0], %1;" ::"l"(flag), "l"(i) : "memory");
      break;
    case Wr::VolatileFlag:
      asm volatile("st.volatile.b64 [%0], %1;" ::"l"(flag), "l"(i) : "memory");
      break;
    case Wr::DataRelease:
      *data = i;
      asm volatile("st.release.sys.b64 [%0], %1;" ::"l"(flag), "l"(i) : "memory");
      break;
    case Wr::DataFenceAcqRel:
      *data = i;
      asm volatile("fence.acq_rel.sys;" ::: "memory");
      asm volatile("st.relaxed.sys.b64 [%0], %1;" ::"l"(flag), "l"(i) : "memory");
      break;
    case Wr::DataFenceSc:
      *data = i;
      asm volatile("fence.sc.sys;" ::: "memory");
      asm volatile("st.relaxed.sys.b64 [%0], %1;" ::"l"(flag), "l"(i) : "memory");
      break;
    case Wr::DataRedRelease:
      *data = i;
      asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(flag), "l"(uint64_t{1}) : "memory");
      break;
    case Wr::Fused16:  // data and flag in one 16-byte store (only possible when they are adjacent)
      asm volatile("st.relaxed.sys.v2.b64 [%0], {%1, %2};" ::"l"(data), "l"(i), "l"(i) : "memory");
      break;
  }
}
template <Rd R>
__device__ __forceinline__ void waitFor(const uint64_t* myMsg, uint64_t i) {
  const uint64_t* flag = myMsg + 1;
  switch (R) {
    case Rd::Acquire:
      while (ldAcquire(flag) < i) {
      }
      break;
    case Rd::Relaxed:
      while (ldRelaxed(flag) < i) {
      }
      break;
    case Rd::Volatile:
      while (ldVolatile(flag) < i) {
      }
      break;
    case Rd::RelaxedThenFence:
      while (ldRelaxed(flag) < i) {
      }
      asm volatile("fence.acq_rel.sys;" ::: "memory");
      break;
  }
}

template <Wr W, Rd R>
__global__ void pingpong(uint64_t* myMsg, uint64_t* peerMsg, int me, int iters, uint64_t* bad) {
  uint64_t errors = 0;
  for (int n = 1; n <= iters; ++n) {
    const uint64_t i = static_cast<uint64_t>(n);
    if (me == 0) {
      send<W>(peerMsg, i);
      waitFor<R>(myMsg, i);
    } else {
      waitFor<R>(myMsg, i);
      send<W>(peerMsg, i);
    }
    if (W != Wr::RelaxedFlag && W != Wr::VolatileFlag && W != Wr::DataRedRelease && myMsg[0] < i) ++errors;
  }
  *bad = errors;
}

// ---- put + completion, per op ----------------------------------------------------------------------------------------
enum class Q { FenceSc, FenceAcqRel, Lane0Sc };
template <Q K>
__global__ void putQuiet(uint64_t* peer, int iters) {
  const int lane = threadIdx.x & 31;
  for (int n = 0; n < iters; ++n) {
    if (lane == 0) peer[0] = static_cast<uint64_t>(n);
    if (K == Q::FenceSc) asm volatile("fence.sc.sys;" ::: "memory");
    if (K == Q::FenceAcqRel) asm volatile("fence.acq_rel.sys;" ::: "memory");
    if (K == Q::Lane0Sc) {
      __syncwarp();
      if (lane == 0) asm volatile("fence.sc.sys;" ::: "memory");
    }
    __syncwarp();
  }
}

// ---- bulk copies -----------------------------------------------------------------------------------------------------
__device__ __forceinline__ size_t dmin(size_t x, size_t y) { return x < y ? x : y; }
template <int U>
__global__ void __launch_bounds__(1024) smCopy(int4* dst, const int4* src, size_t n16) {
  const size_t share = (n16 + gridDim.x - 1) / gridDim.x;
  const size_t lo = share * blockIdx.x, hi = dmin(n16, lo + share);
  size_t i = lo + threadIdx.x;
  const size_t step = blockDim.x;
  for (; i + (U - 1) * step < hi; i += U * step) {
    int4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[i + u * step];
#pragma unroll
    for (int u = 0; u < U; ++u) dst[i + u * step] = v[u];
  }
  for (; i < hi; i += step) dst[i] = src[i];
}

// TMA: one thread per block streams its share through `stages` shared-memory buffers of `chunk` bytes:
// bulk load (global -> shared, completion on an mbarrier), then bulk store (shared -> destination global).
__device__ __forceinline__ uint32_t smemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__global__ void tmaCopy(char* dst, const char* src, size_t bytes, int stages, uint32_t chunk) {
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem);  // stages mbarriers, then the buffers (128-byte aligned)
  unsigned char* buf = smem + 128 * ((stages * 8 + 127) / 128);
  if (threadIdx.x != 0) return;
  const size_t share = ((bytes / gridDim.x) + 15) & ~size_t{15};
  const size_t lo = share * blockIdx.x;
  if (lo >= bytes) return;
  const size_t len = dmin(share, bytes - lo);
  const size_t nChunks = (len + chunk - 1) / chunk;
  for (int s = 0; s < stages; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smemAddr(&bars[s])) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  auto issueLoad = [&](size_t c) {
    const int s = static_cast<int>(c % stages);
    const uint32_t n = static_cast<uint32_t>(dmin(chunk, len - c * chunk));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(&bars[s])), "r"(n)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smemAddr(buf + static_cast<size_t>(s) * chunk)),
        "l"(src + lo + c * chunk), "r"(n), "r"(smemAddr(&bars[s]))
        : "memory");
  };
  for (size_t c = 0; c < nChunks && c < static_cast<size_t>(stages); ++c) issueLoad(c);
  for (size_t c = 0; c < nChunks; ++c) {
    const int s = static_cast<int>(c % stages);
    const uint32_t phase = static_cast<uint32_t>((c / stages) & 1);
    uint32_t done = 0;
    while (!done)
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(smemAddr(&bars[s])), "r"(phase)
          : "memory");
    const uint32_t n = static_cast<uint32_t>(dmin(chunk, len - c * chunk));
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + lo + c * chunk),
                 "r"(smemAddr(buf + static_cast<size_t>(s) * chunk)), "r"(n)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // Refill the previous chunk's stage once its store has read it (wait_group.read 1: only the store just issued
    // may still be reading), so one store and stages-1 loads stay in flight.
    if (c >= 1 && c - 1 + stages < nChunks) {
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      issueLoad(c - 1 + stages);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  asm volatile("fence.sc.sys;" ::: "memory");
}

// ---- driver ----------------------------------------------------------------------------------------------------------
struct Row {
  std::string name, note;
  double us = 0, gbs = 0;
  size_t bytes = 0;
  int blocks = 0, iters = 0;
};
static std::vector<Row> rows;
static int failures = 0;

static void report(const Row& r) {
  rows.push_back(r);
  std::printf("%-34s %12zu %6d %10.3f %9.2f %7d  %s\n", r.name.c_str(), r.bytes, r.blocks, r.us, r.gbs, r.iters,
              r.note.c_str());
  std::fflush(stdout);
}

struct Two {
  uint64_t* msg[2];  // 4 words per GPU, on that GPU
  uint64_t* bad[2];
  cudaStream_t st[2];
  cudaEvent_t e0, e1;
};

template <Wr W, Rd R>
static void pingRow(Two& t, const char* name, const char* note) {
  const int iters = 20000;
  for (int rep = 0; rep < 2; ++rep) {  // rep 0: warm-up
    for (int g = 0; g < 2; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaMemsetAsync(t.msg[g], 0, 32, t.st[g]));
      CK(cudaStreamSynchronize(t.st[g]));
    }
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(t.e0, t.st[0]));
    for (int g = 0; g < 2; ++g) {
      CK(cudaSetDevice(g));
      pingpong<W, R><<<1, 1, 0, t.st[g]>>>(t.msg[g], t.msg[1 - g], g, iters, t.bad[g]);
      CK(cudaGetLastError());
    }
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(t.e1, t.st[0]));
    for (int g = 0; g < 2; ++g) CK(cudaStreamSynchronize(t.st[g]));
    if (rep == 1) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, t.e0, t.e1));
      uint64_t bad[2] = {0, 0};
      for (int g = 0; g < 2; ++g) CK(cudaMemcpy(&bad[g], t.bad[g], 8, cudaMemcpyDeviceToHost));
      std::string n = note;
      if (bad[0] || bad[1]) n += " (data seen stale " + std::to_string(bad[0] + bad[1]) + " times)";
      report({name, n, ms * 1e3 / (2.0 * iters), 0, 8, 1, iters});
    }
  }
}

template <Q K>
static void quietRow(Two& t, const char* name, const char* note) {
  const int iters = 10000;
  CK(cudaSetDevice(0));
  float ms = 0;
  for (int rep = 0; rep < 2; ++rep) {
    CK(cudaEventRecord(t.e0, t.st[0]));
    putQuiet<K><<<1, 32, 0, t.st[0]>>>(t.msg[1], iters);
    CK(cudaGetLastError());
    CK(cudaEventRecord(t.e1, t.st[0]));
    CK(cudaEventSynchronize(t.e1));
    CK(cudaEventElapsedTime(&ms, t.e0, t.e1));
  }
  report({name, note, ms * 1e3 / iters, 0, 8, 1, iters});
}

int main(int argc, char** argv) {
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    std::fprintf(stderr, "tether_bench_mechanisms: needs 2 GPUs, found %d\n", n);
    return 2;
  }
  int can = 0;
  CK(cudaDeviceCanAccessPeer(&can, 0, 1));
  if (!can) {
    std::fprintf(stderr, "tether_bench_mechanisms: GPU 0 cannot access GPU 1\n");
    return 2;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  Two t;
  for (int g = 0; g < 2; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaMalloc(&t.msg[g], 32));
    CK(cudaMalloc(&t.bad[g], 8));
    CK(cudaStreamCreateWithFlags(&t.st[g], cudaStreamNonBlocking));
  }
  CK(cudaSetDevice(0));
  CK(cudaEventCreate(&t.e0));
  CK(cudaEventCreate(&t.e1));
  std::printf("# tether_bench_mechanisms: %s x2, one process, peer access; CUDA events, best of 5 for bandwidth\n",
              prop.name);
  std::printf("%-34s %12s %6s %10s %9s %7s  %s\n", "row", "bytes", "blocks", "us", "GB/s", "iters", "note");

  pingRow<Wr::RelaxedFlag, Rd::Relaxed>(t, "pingpong/flag_relaxed", "st.relaxed.sys / ld.relaxed.sys poll (tether p)");
  pingRow<Wr::VolatileFlag, Rd::Volatile>(t, "pingpong/flag_volatile", "st.volatile / ld.volatile poll");
  pingRow<Wr::RelaxedFlag, Rd::Acquire>(t, "pingpong/flag_relaxed_acq", "st.relaxed.sys / ld.acquire.sys poll");
  pingRow<Wr::DataRelease, Rd::Acquire>(t, "pingpong/data+st.release", "data st; st.release.sys flag (tether put_signal)");
  pingRow<Wr::DataFenceAcqRel, Rd::Acquire>(t, "pingpong/data+fence.acq_rel", "data st; fence.acq_rel.sys; st.relaxed.sys");
  pingRow<Wr::DataFenceSc, Rd::Acquire>(t, "pingpong/data+fence.sc", "data st; fence.sc.sys; st.relaxed.sys");
  pingRow<Wr::DataRedRelease, Rd::Acquire>(t, "pingpong/data+red.release", "data st; red.release.sys.add flag");
  pingRow<Wr::DataRelease, Rd::RelaxedThenFence>(t, "pingpong/data+st.release,rlxpoll", "reader: relaxed poll then fence.acq_rel");
  pingRow<Wr::Fused16, Rd::Acquire>(t, "pingpong/fused16", "data+flag in one 16-byte st.relaxed.sys (adjacent only)");

  quietRow<Q::FenceSc>(t, "quiet/fence.sc.sys", "warp; lane 0 stores 8 B; every lane fence.sc.sys (tether quiet)");
  quietRow<Q::FenceAcqRel>(t, "quiet/fence.acq_rel.sys", "warp; every lane fence.acq_rel.sys");
  quietRow<Q::Lane0Sc>(t, "quiet/lane0.fence.sc.sys", "warp; syncwarp, lane 0 fence.sc.sys");

  // ---- bandwidth ----
  const size_t bytes = size_t{1} << 30;
  char *a[2], *b[2];
  for (int g = 0; g < 2; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaMalloc(&a[g], bytes));  // source on each GPU
    CK(cudaMalloc(&b[g], bytes));  // destination on each GPU
    CK(cudaMemset(a[g], 0x11 * (g + 1), bytes));
    CK(cudaMemset(b[g], 0, bytes));
    CK(cudaDeviceSynchronize());
  }
  auto check = [&](const char* dstBuf, int dstGpu, unsigned char want, const char* what) {
    std::vector<unsigned char> h(4096);
    for (size_t off : {size_t{0}, bytes / 2 + 4096, bytes - 4096}) {
      CK(cudaSetDevice(dstGpu));
      CK(cudaMemcpy(h.data(), dstBuf + off, h.size(), cudaMemcpyDeviceToHost));
      for (unsigned char c : h)
        if (c != want) {
          std::printf("  DATA WRONG after %s at offset %zu: 0x%02x, expected 0x%02x\n", what, off, c, want);
          ++failures;
          return;
        }
    }
  };
  auto timeBest = [&](auto&& launch) {
    float best = 1e30f;
    for (int rep = 0; rep < 6; ++rep) {  // rep 0: warm-up
      CK(cudaSetDevice(0));
      CK(cudaEventRecord(t.e0, t.st[0]));
      launch();
      CK(cudaSetDevice(0));
      CK(cudaEventRecord(t.e1, t.st[0]));
      for (int g = 0; g < 2; ++g) CK(cudaStreamSynchronize(t.st[g]));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, t.e0, t.e1));
      if (rep) best = std::min(best, ms);
    }
    return best;
  };
  auto bwRow = [&](const std::string& name, int blocks, const std::string& note, double moved, auto&& launch) {
    const float ms = timeBest(launch);
    report({name, note, ms * 1e3, moved / (ms * 1e-3) / 1e9, bytes, blocks, 1});
  };
  const size_t n16 = bytes / 16;
  for (int blocks : {32, 64, 132, 264}) {
    bwRow("put_bw/sm_v16_u8", blocks, "1024 thr, int4 x8 in flight", double(bytes), [&] {
      smCopy<8><<<blocks, 1024, 0, t.st[0]>>>(reinterpret_cast<int4*>(b[1]), reinterpret_cast<const int4*>(a[0]), n16);
    });
    bwRow("put_bw/sm_v16_u16", blocks, "1024 thr, int4 x16 in flight", double(bytes), [&] {
      smCopy<16><<<blocks, 1024, 0, t.st[0]>>>(reinterpret_cast<int4*>(b[1]), reinterpret_cast<const int4*>(a[0]), n16);
    });
    bwRow("put_bw/sm_v16_u4_512", blocks, "512 thr, int4 x4 in flight", double(bytes), [&] {
      smCopy<4><<<blocks, 512, 0, t.st[0]>>>(reinterpret_cast<int4*>(b[1]), reinterpret_cast<const int4*>(a[0]), n16);
    });
  }
  check(b[1], 1, 0x11, "put_bw/sm");
  CK(cudaSetDevice(1));
  CK(cudaMemset(b[1], 0, bytes));
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(0));
  struct TmaCfg { int stages; uint32_t chunk; };
  for (TmaCfg c : {TmaCfg{4, 32768}, TmaCfg{6, 32768}, TmaCfg{3, 65536}, TmaCfg{8, 16384}}) {
    const size_t smem = 128 * ((c.stages * 8 + 127) / 128) + static_cast<size_t>(c.stages) * c.chunk;
    CK(cudaFuncSetAttribute(tmaCopy, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    for (int blocks : {16, 32, 66, 132}) {
      char note[96];
      std::snprintf(note, sizeof note, "cp.async.bulk, %d stages x %u B, 1 thread/block", c.stages, c.chunk);
      bwRow("put_bw/tma", blocks, note, double(bytes),
            [&] { tmaCopy<<<blocks, 32, smem, t.st[0]>>>(b[1], a[0], bytes, c.stages, c.chunk); });
    }
  }
  check(b[1], 1, 0x11, "put_bw/tma");
  for (int blocks : {32, 64, 132, 264}) {
    bwRow("get_bw/sm_v16_u8", blocks, "1024 thr, loads from peer", double(bytes), [&] {
      smCopy<8><<<blocks, 1024, 0, t.st[0]>>>(reinterpret_cast<int4*>(b[0]), reinterpret_cast<const int4*>(a[1]), n16);
    });
    bwRow("get_bw/sm_v16_u16", blocks, "1024 thr, loads from peer", double(bytes), [&] {
      smCopy<16><<<blocks, 1024, 0, t.st[0]>>>(reinterpret_cast<int4*>(b[0]), reinterpret_cast<const int4*>(a[1]), n16);
    });
  }
  check(b[0], 0, 0x22, "get_bw/sm");
  {
    const TmaCfg c{4, 32768};
    const size_t smem = 128 + static_cast<size_t>(c.stages) * c.chunk;
    for (int g = 0; g < 2; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaFuncSetAttribute(tmaCopy, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    }
    for (int blocks : {32, 64, 132}) {
      bwRow("get_bw/tma", blocks, "cp.async.bulk from peer, 4 x 32 KiB", double(bytes), [&] {
        tmaCopy<<<blocks, 32, smem, t.st[0]>>>(b[0], a[1], bytes, c.stages, c.chunk);
      });
      bwRow("bidir/sm_v16_u8", blocks, "both GPUs put 1 GiB, total", 2.0 * bytes, [&] {
        for (int g = 0; g < 2; ++g) {
          CK(cudaSetDevice(g));
          smCopy<8><<<blocks, 1024, 0, t.st[g]>>>(reinterpret_cast<int4*>(b[1 - g]),
                                                  reinterpret_cast<const int4*>(a[g]), n16);
        }
      });
      bwRow("bidir/tma", blocks, "both GPUs put 1 GiB by cp.async.bulk, total", 2.0 * bytes, [&] {
        for (int g = 0; g < 2; ++g) {
          CK(cudaSetDevice(g));
          tmaCopy<<<blocks, 32, smem, t.st[g]>>>(b[1 - g], a[g], bytes, c.stages, c.chunk);
        }
      });
    }
  }
  bwRow("ce/memcpy_peer", 0, "cudaMemcpyPeerAsync GPU0 -> GPU1", double(bytes),
        [&] { CK(cudaMemcpyPeerAsync(b[1], 1, a[0], 0, bytes, t.st[0])); });
  bwRow("ce/memcpy_peer_bidir", 0, "both directions at once, total", 2.0 * bytes, [&] {
    CK(cudaMemcpyPeerAsync(b[1], 1, a[0], 0, bytes, t.st[0]));
    CK(cudaMemcpyPeerAsync(b[0], 0, a[1], 1, bytes, t.st[1]));
  });
  check(b[1], 1, 0x11, "ce");
  check(b[0], 0, 0x22, "bidir");

  if (json) {
    FILE* f = std::fopen(json, "w");
    if (!f) {
      std::perror(json);
      return 2;
    }
    const std::string date = tether_bench::utcDate();
    std::fprintf(f, "{\"run\":\"tether_bench_mechanisms\",\"device\":\"%s x2\",\"date\":\"%s\"}\n", prop.name, date.c_str());
    for (const Row& r : rows)
      std::fprintf(f,
                   "{\"row\":\"%s\",\"bytes\":%zu,\"blocks\":%d,\"us\":%.4f,\"gbs\":%.3f,\"iters\":%d,\"note\":\"%s\"}\n",
                   r.name.c_str(), r.bytes, r.blocks, r.us, r.gbs, r.iters, r.note.c_str());
    std::fclose(f);
  }
  if (failures) std::printf("FAIL: %d data checks failed\n", failures);
  return failures ? 1 : 0;
}
