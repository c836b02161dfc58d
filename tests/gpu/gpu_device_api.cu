// GPU conformance of the device API (include/tether/device.cuh), 2 PEs on 2 GPUs under tetherrun:
//  - bulk RMA (putmem, putmem_nbi, getmem, getmem_nbi, putmem_signal SET, put_signal_nbi ADD; SET on HOST words where
//    the platform has no native host atomics) x scope (thread, warp, block) x target segment (DEVICE: p2p; HOST:
//    through the GPU alias) x sizes/misalignments;
//  - p/g, atomics under contention from many blocks on both PEs (32/64-bit), waits (test/_all/_any/_some);
//  - the device barrier (block scope, and grid scope through launch_cooperative);
//  - visibility stress: producer/consumer with putmem_signal<Block>, random sizes, GPU_STRESS_ITERS iterations
//    (default 1e6 on DEVICE, 1e5 on HOST), seed printed (GPU_STRESS_SEED).
// With TETHER_FORCE_PROXY=1 every operation on the other PE goes through the proxy ring (ptr() is null for it; the
// checks here read this PE's own copy through ptr(my_pe), which stays load/store); the atomics run fewer iterations
// there (each is a proxied GPU atomic), and the ctest entry shortens the stress with GPU_STRESS_ITERS.
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_util.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using dev::Cmp;
using dev::Scope;
using dev::SignalOp;

using gpu_test::symAlloc;

__host__ __device__ inline unsigned char pattern(uint64_t salt, size_t i) {
  return static_cast<unsigned char>((salt * 131 + i * 7 + (i >> 8)) & 0xff);
}

enum Op { kPut, kPutNbi, kGet, kGetNbi, kPutSignal, kPutSignalNbi, kOps };
const char* const kOpNames[kOps] = {"putmem", "putmem_nbi", "getmem", "getmem_nbi", "putmem_signal", "put_signal_nbi"};

// One operation by one group (grid = 1 block). Signal ops then wait for the peer's signal and check the bytes here.
// add: put_signal_nbi adds 1 to the signal (false: sets it to expect; see main).
template <Scope S>
__global__ void conf(dev::Handle h, int op, unsigned char* sym, unsigned char* local, size_t nb, uint64_t* sig,
                     uint64_t expect, uint64_t salt, int peer, unsigned* errs, bool add) {
  switch (op) {
    case kPut: dev::putmem<S>(h, sym, local, nb, peer); dev::quiet<S>(h); break;
    case kPutNbi: dev::putmem_nbi<S>(h, sym, local, nb, peer); dev::quiet<S>(h); break;
    case kGet: dev::getmem<S>(h, local, sym, nb, peer); break;
    case kGetNbi: dev::get_nbi<S>(h, local, sym, nb, peer); dev::quiet<S>(h); break;
    case kPutSignal:
    case kPutSignalNbi: {
      if (op == kPutSignal)
        dev::putmem_signal<S>(h, sym, local, nb, sig, expect, SignalOp::Set, peer);
      else
        dev::put_signal_nbi<S>(h, sym, local, nb, sig, add ? 1 : expect, add ? SignalOp::Add : SignalOp::Set, peer);
      dev::quiet<S>(h);
      dev::signal_wait_until<S>(h, sig, Cmp::GE, expect);
      const unsigned char* mine = dev::ptr(h, sym, h.my_pe);
      const int r = dev::detail::groupRank<S>(), sz = dev::detail::groupSize<S>();
      for (size_t i = static_cast<size_t>(r); i < nb; i += static_cast<size_t>(sz))
        if (mine[i] != pattern(salt, i)) atomicAdd(errs, 1u);
      break;
    }
  }
}

template <Scope S>
void launchConf(dim3 block, const dev::Handle& h, int op, unsigned char* sym, unsigned char* local, size_t nb,
                uint64_t* sig, uint64_t expect, uint64_t salt, int peer, unsigned* errs, bool add) {
  conf<S><<<1, block>>>(h, op, sym, local, nb, sig, expect, salt, peer, errs, add);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
}

// p/g and waits, one thread per PE.
__global__ void scalarOps(dev::Handle h, int64_t* w, unsigned* errs) {
  const int me = h.my_pe, n = h.n_pes, next = (me + 1) % n, prev = (me + n - 1) % n;
  int64_t* mine = dev::ptr(h, w, me);
  dev::p(h, &w[0], int64_t{100 + me}, next);
  dev::quiet(h);
  dev::sync_all(h);
  if (mine[0] != 100 + prev) atomicAdd(errs, 1u);
  if (dev::g(h, &w[0], next) != 100 + me) atomicAdd(errs, 1u);
  // waits over w[8..8+n)
  int status[8] = {};
  status[me] = 1;
  if (dev::test_any(h, w + 8, static_cast<size_t>(n), status, Cmp::GT, int64_t{0}) != SIZE_MAX) atomicAdd(errs, 1u);
  dev::sync_all(h);
  // Phase 1: only prev writes my array (w[8 + prev] on me), so _any and _some must name prev.
  dev::atomic_set(h, &w[8 + me], int64_t{me + 1}, next);
  if (dev::wait_until_any(h, w + 8, static_cast<size_t>(n), status, Cmp::GT, int64_t{0}) != static_cast<size_t>(prev))
    atomicAdd(errs, 1u);
  size_t idx[8];
  if (dev::wait_until_some(h, w + 8, static_cast<size_t>(n), status, Cmp::EQ, int64_t{prev + 1}, idx) != 1 ||
      idx[0] != static_cast<size_t>(prev))
    atomicAdd(errs, 1u);
  // Phase 2: every PE writes its word on every other PE, so _all over the array (all but my own index) completes at
  // any PE count. (Until 2026-11-26 only next was written: with more than 2 PEs the words of PEs other than prev
  // stayed 0 and this wait timed out — a test bug, not a library one.)
  dev::sync_all(h);
  for (int pe = 0; pe < n; ++pe)
    if (pe != me && pe != next) dev::atomic_set(h, &w[8 + me], int64_t{me + 1}, pe);
  dev::wait_until_all(h, w + 8, static_cast<size_t>(n), status, Cmp::GT, int64_t{0});
  if (!dev::test_all(h, w + 8, static_cast<size_t>(n), status, Cmp::GT, int64_t{0})) atomicAdd(errs, 1u);
  if (dev::wait_until(h, &w[8 + prev], Cmp::EQ, int64_t{prev + 1}) != prev + 1) atomicAdd(errs, 1u);
  if (!dev::test(h, &w[8 + prev], Cmp::NE, int64_t{0})) atomicAdd(errs, 1u);
  dev::sync_all(h);
}

// Atomics under contention: every thread of every block of every PE on PE 0's words.
__global__ void amoContend(dev::Handle h, uint32_t* c32, uint64_t* c64, uint64_t* bits, int64_t* lock, int iters,
                           int lockIters) {
  const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < iters; ++i) {
    dev::atomic_fetch_add(h, c32, 1u, 0);
    dev::atomic_inc(h, c64, 0);
    if (i & 1) dev::atomic_add(h, c64, uint64_t{2}, 0); else (void)dev::atomic_fetch_inc(h, c32, 0);
  }
  const unsigned per = 64u / static_cast<unsigned>(h.n_pes);  // one owner thread per bit over all PEs
  const uint64_t bit = uint64_t{1} << (static_cast<unsigned>(h.my_pe) * per + gtid % per);
  if (gtid < per) {
    for (int i = 0; i < 20; ++i) {
      dev::atomic_fetch_or(h, bits, bit, 0);
      dev::atomic_fetch_xor(h, bits, bit, 0);
      dev::atomic_or(h, bits, bit, 0);
      dev::atomic_and(h, bits, ~bit, 0);
      dev::atomic_xor(h, bits, bit, 0);
      dev::atomic_fetch_and(h, bits, ~bit, 0);
    }
  }
  if (threadIdx.x == 0) {  // compare_swap lock around a relaxed read-modify-write of lock[1]
    const int64_t id = 1 + static_cast<int64_t>(h.my_pe) * 1000 + blockIdx.x;
    for (int i = 0; i < lockIters; ++i) {
      while (dev::atomic_compare_swap(h, &lock[0], int64_t{0}, id, 0) != 0) {
      }
      dev::fence(h);
      const int64_t v = dev::atomic_fetch(h, &lock[1], 0);
      dev::atomic_set(h, &lock[1], v + 1, 0);
      dev::quiet(h);
      (void)dev::atomic_swap(h, &lock[0], int64_t{0}, 0);
    }
  }
}

template <Scope S>
__global__ void barrierLoop(dev::Handle h, int64_t* slots, int iters, unsigned* errs) {
  const int me = h.my_pe, n = h.n_pes;
  const int64_t* mine = dev::ptr(h, slots, me);
  for (int it = 1; it <= iters; ++it) {
    for (int pe = dev::detail::groupRank<S>(); pe < n; pe += dev::detail::groupSize<S>())
      dev::p(h, &slots[me], int64_t{it}, pe);
    dev::barrier_all<S>(h);
    if (dev::detail::groupRank<S>() == 0)
      for (int pe = 0; pe < n; ++pe)
        if (dev::detail::loadRelaxed(&mine[pe]) != it) atomicAdd(errs, 1u);
    dev::sync_all<S>(h);
  }
}

__global__ void gridBarrierLoop(dev::Handle h, int64_t* slots, int iters, unsigned* errs) {
  const int me = h.my_pe, n = h.n_pes;
  const int64_t* mine = dev::ptr(h, slots, me);
  for (int it = 1; it <= iters; ++it) {
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x < n) dev::p(h, &slots[me], int64_t{it}, static_cast<int>(threadIdx.x));
    dev::barrier_all_grid(h);
    if (threadIdx.x == 0)
      for (int pe = 0; pe < n; ++pe)
        if (dev::detail::loadRelaxed(&mine[pe]) != it) atomicAdd(errs, 1u);
    dev::sync_all_grid(h);
  }
}

__device__ inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// Visibility stress between pairs of PEs: even PE 2k produces, PE 2k+1 consumes (with an odd PE count the last PE
// sits out); one block each. Data depends on the iteration, so a stale byte (cached or not yet arrived) is detected.
// errs[1] = first failing iteration.
__global__ void stress(dev::Handle h, unsigned char* buf, unsigned char* local, uint64_t* sig, uint64_t* ack,
                       long iters, uint64_t seed, size_t maxBytes, unsigned* errs) {
  const bool producer = h.my_pe % 2 == 0;
  const int partner = h.my_pe ^ 1;
  const unsigned char* mine = dev::ptr(h, buf, h.my_pe);
  for (long it = 1; it <= iters; ++it) {
    const size_t nb = 1 + mix(seed ^ static_cast<uint64_t>(it)) % maxBytes;
    const uint64_t salt = mix(static_cast<uint64_t>(it) * 0x9e3779b97f4a7c15ull + seed);
    if (producer) {
      for (size_t i = threadIdx.x; i < nb; i += blockDim.x) local[i] = pattern(salt, i);
      dev::signal_wait_until<Scope::Block>(h, ack, Cmp::GE, static_cast<uint64_t>(it - 1));
      __syncthreads();
      dev::putmem_signal<Scope::Block>(h, buf, local, nb, sig, static_cast<uint64_t>(it), SignalOp::Set, partner);
    } else {
      dev::signal_wait_until<Scope::Block>(h, sig, Cmp::GE, static_cast<uint64_t>(it));
      for (size_t i = threadIdx.x; i < nb; i += blockDim.x)
        if (mine[i] != pattern(salt, i)) {
          if (atomicAdd(&errs[0], 1u) == 0) errs[1] = static_cast<unsigned>(it);
        }
      __syncthreads();
      if (threadIdx.x == 0) dev::signal_op(h, ack, static_cast<uint64_t>(it), SignalOp::Set, partner);
    }
  }
}

namespace {

// Writes/reads this PE's copy of a symmetric buffer (DEVICE: through cudaMemcpy, HOST: CPU).
void symWrite(tether_seg_kind_t kind, void* sym, const void* src, size_t n) {
  if (kind == TETHER_SEG_DEVICE) {
    // A pageable-to-device cudaMemcpy may return before its DMA lands; peers read right after the next barrier.
    gpu_test::copyLanded(sym, src, n);
  } else {
    std::memcpy(sym, src, n);
  }
}
// Zeroes this PE's copy of DEVICE symmetric memory and waits for it: cudaMemset may return before it lands, and
// peers write into these words right after the next barrier.
void zeroDevice(void* sym, size_t n) {
  CK(cudaMemset(sym, 0, n));
  CK(cudaDeviceSynchronize());
}
void symRead(tether_seg_kind_t kind, void* dst, const void* sym, size_t n) {
  if (kind == TETHER_SEG_DEVICE)
    CK(cudaMemcpy(dst, sym, n, cudaMemcpyDeviceToHost));
  else
    std::memcpy(dst, sym, n);
}

unsigned readErrs(unsigned* errs) {
  unsigned e = 0;
  CK(cudaMemcpy(&e, errs, sizeof e, cudaMemcpyDeviceToHost));
  CK(cudaMemset(errs, 0, sizeof e));
  return e;
}

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  MP_CHECK(n <= 8);
  CK(cudaSetDevice(tether_local_pe(w) % ndev));
  int dev = 0, hostAtomics = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&hostAtomics, cudaDevAttrHostNativeAtomicSupported, dev));

  const size_t kMax = (size_t{1} << 20) + 64;
  unsigned char* symD = static_cast<unsigned char*>(symAlloc(w, TETHER_SEG_DEVICE, kMax));
  unsigned char* symH = static_cast<unsigned char*>(symAlloc(w, TETHER_SEG_HOST, kMax));
  uint64_t* sigD = static_cast<uint64_t*>(symAlloc(w, TETHER_SEG_DEVICE, 4096));
  uint64_t* sigH = static_cast<uint64_t*>(symAlloc(w, TETHER_SEG_HOST, 4096));
  zeroDevice(sigD, 4096);
  std::memset(sigH, 0, 4096);
  MP_OK(tether_barrier_all(w));

  tether_device_handle_t h;
  MP_OK(tether_device_handle(w, &h));  // after the last allocation: HOST views may be re-registered by growth
  MP_CHECK(h.flags & TETHER_DEVICE_GPU);
  // (dev::ptr on the CPU with a GPU handle is only valid for DIRECT handles: otherwise the peer table is GPU memory.)
  const bool p2p = tether_ptr(w, symD, next) != nullptr;
  if (me == 0)
    std::printf("device handle: flags 0x%x (direct %d), DEVICE p2p %d, HOST alias window %s uniform, host native "
                "atomics %d\n", h.flags, !!(h.flags & TETHER_DEVICE_DIRECT), p2p,
                h.seg[TETHER_DEVICE_SEG_HOST].uniform ? "is" : "is not", hostAtomics);
  const bool proxied = h.flags & TETHER_DEVICE_PROXY;
  int gpus = 0;
  CK(cudaGetDeviceCount(&gpus));
  // Proxied PEs that share a GPU (see the atomics section): smaller loads for the contended atomics and barriers.
  const bool sharedProxy = proxied && gpus < n;
  if (me == 0 && proxied)
    std::printf("proxy ring: %llu descriptors%s\n", static_cast<unsigned long long>(h.proxy_slots),
                h.flags & TETHER_DEVICE_PROXY_MIXED ? " (mixed: some PE has load/store and proxied segments)" : "");
  const char* forced = std::getenv("TETHER_FORCE_PROXY");
  if (forced && std::strcmp(forced, "1") == 0) MP_CHECK(proxied && h.proxy_ring && !(h.flags & TETHER_DEVICE_DIRECT));
  if (h.flags & TETHER_DEVICE_DIRECT) {
    MP_CHECK(dev::ptr(h, symD, me) == tether_ptr(w, symD, me));
    MP_CHECK(dev::ptr(h, symD, next) == tether_ptr(w, symD, next));
  }
  if (!p2p && !proxied) {
    if (me == 0) std::printf("SKIP: no p2p path between the GPUs and no proxy ring\n");
    mp::finish();
    return 77;
  }

  unsigned char* local = nullptr;
  unsigned* errs = nullptr;
  CK(cudaMalloc(&local, kMax + 64));
  CK(cudaMalloc(&errs, 2 * sizeof(unsigned)));
  CK(cudaMemset(errs, 0, 2 * sizeof(unsigned)));
  std::vector<unsigned char> hostBuf(kMax + 64), check(kMax + 64);

  // ---- bulk RMA: op x scope x kind x size
  const size_t sizes[] = {1, 7, 16, 100, 4096, 65537, (size_t{1} << 20) + 3};
  const size_t offs[] = {0, 3, 8, 1, 16, 5, 0};
  const size_t loffs[] = {0, 5, 8, 2, 0, 5, 16};
  int cases = 0;
  uint64_t sigCount[2] = {0, 0};
  for (int kindIdx = 0; kindIdx < 2; ++kindIdx) {
    const tether_seg_kind_t kind = kindIdx == 0 ? TETHER_SEG_DEVICE : TETHER_SEG_HOST;
    unsigned char* sym = kindIdx == 0 ? symD : symH;
    uint64_t* sig = kindIdx == 0 ? sigD : sigH;
    for (int op = 0; op < kOps; ++op)
      for (int sc = 0; sc < 3; ++sc)
        for (int c = 0; c < 7; ++c) {
          const size_t nb = sizes[c], off = offs[c], loff = loffs[c];
          const uint64_t salt = static_cast<uint64_t>(((op * 3 + sc) * 7 + c) * 2 + kindIdx) * 16;
          const bool isGet = op == kGet || op == kGetNbi, isSig = op == kPutSignal || op == kPutSignalNbi;
          // Source bytes: my pattern (salt + me) in the local buffer (puts) or in my symmetric copy (gets).
          for (size_t i = 0; i < nb; ++i) hostBuf[i] = pattern(salt + static_cast<uint64_t>(me), i);
          if (isGet)
            symWrite(kind, sym + off, hostBuf.data(), nb);
          else
            gpu_test::copyLanded(local + loff, hostBuf.data(), nb);
          MP_OK(tether_barrier_all(w));
          uint64_t expect = 0;
          if (isSig) expect = ++sigCount[kindIdx];
          const uint64_t checkSalt = salt + static_cast<uint64_t>(prev);
          const int peer = isGet ? next : next;
          // A GPU signal ADD is an AMO: on HOST words only where the platform has native host atomics (device.cuh;
          // the atomics section below skips HOST words likewise, and compute-sanitizer rejects them elsewhere).
          const bool add = kindIdx == 0 || hostAtomics;
          if (sc == 0)
            launchConf<Scope::Thread>(dim3(1), h, op, sym + off, local + loff, nb, sig, expect, checkSalt, peer, errs,
                                      add);
          else if (sc == 1)
            launchConf<Scope::Warp>(dim3(32), h, op, sym + off, local + loff, nb, sig, expect, checkSalt, peer, errs,
                                    add);
          else
            launchConf<Scope::Block>(dim3(256), h, op, sym + off, local + loff, nb, sig, expect, checkSalt, peer, errs,
                                     add);
          MP_OK(tether_barrier_all(w));
          unsigned bad = readErrs(errs);
          if (isGet) {
            CK(cudaMemcpy(check.data(), local + loff, nb, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < nb; ++i) bad += check[i] != pattern(salt + static_cast<uint64_t>(next), i);
          } else {
            symRead(kind, check.data(), sym + off, nb);
            for (size_t i = 0; i < nb; ++i) bad += check[i] != pattern(checkSalt, i);
          }
          if (bad) {
            std::fprintf(stderr, "FAIL PE %d: %s scope %d %s size %zu off %zu/%zu: %u bad bytes\n", me,
                         kOpNames[op], sc, kind == TETHER_SEG_DEVICE ? "DEVICE" : "HOST", nb, off, loff, bad);
            std::exit(1);
          }
          ++cases;
          MP_OK(tether_barrier_all(w));
        }
  }
  if (me == 0) std::printf("bulk RMA: %d cases (6 ops x 3 scopes x 2 kinds x 7 sizes): ok\n", cases);

  // ---- p/g, waits, atomics, barrier per kind
  for (int kindIdx = 0; kindIdx < 2; ++kindIdx) {
    const tether_seg_kind_t kind = kindIdx == 0 ? TETHER_SEG_DEVICE : TETHER_SEG_HOST;
    const char* kn = kindIdx == 0 ? "DEVICE" : "HOST";
    unsigned char* base = kindIdx == 0 ? symD : symH;
    std::vector<unsigned char> zeros(8192, 0);
    symWrite(kind, base, zeros.data(), zeros.size());
    MP_OK(tether_barrier_all(w));
    auto* words = reinterpret_cast<int64_t*>(base);
    scalarOps<<<1, 1>>>(h, words, errs);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    MP_CHECK(readErrs(errs) == 0);
    MP_OK(tether_barrier_all(w));
    if (me == 0) std::printf("%s: p/g and waits: ok\n", kn);

    if (kindIdx == 0 || hostAtomics) {
      auto* c32 = reinterpret_cast<uint32_t*>(base + 1024);
      auto* c64 = reinterpret_cast<uint64_t*>(base + 1088);
      auto* bits = reinterpret_cast<uint64_t*>(base + 1152);
      auto* lock = reinterpret_cast<int64_t*>(base + 1216);
      // Proxied PEs that share a GPU: the proxy thread carries out each atomic on a DEVICE word as a one-thread
      // kernel in its process's context, and the GPU time-slices between the processes' contexts (no MPS), so every
      // proxied atomic may wait for a slice while the other process's contending kernel spins. At 8 PEs on 4 H100s
      // the full load (8 x 256 threads x 12 atomics per PE, 20 lock hand-overs per block) was still running after
      // TETHER_TIMEOUT (60 s), twice (2026-11-26; also with 4 hand-overs). Such runs use a smaller load: 2 x 64
      // threads and 4 hand-overs per block. (We read it as a throughput limit of proxied atomics on shared GPUs, not
      // measured further: the same kernel passes at 2 and 4 PEs through the proxy and at 8 PEs direct.)
      const int blocks = sharedProxy ? 2 : 8, threads = sharedProxy ? 64 : 256, iters = proxied ? 4 : 100;
      const int lockIters = sharedProxy ? 4 : 20;
      amoContend<<<blocks, threads>>>(h, c32, c64, bits, lock, iters, lockIters);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      MP_OK(tether_barrier_all(w));
      if (me == 0) {
        uint32_t v32;
        uint64_t v64, vb;
        int64_t lk[2];
        symRead(kind, &v32, c32, 4);
        symRead(kind, &v64, c64, 8);
        symRead(kind, &vb, bits, 8);
        symRead(kind, lk, lock, 16);
        const uint64_t all = static_cast<uint64_t>(n) * blocks * threads;
        if (v32 != all * (iters + iters / 2) || v64 != all * (2 * iters) || vb != 0 || lk[0] != 0 ||
            lk[1] != static_cast<int64_t>(n) * blocks * lockIters) {
          std::fprintf(stderr, "FAIL %s atomics: c32 %u (want %llu) c64 %llu (want %llu) bits %llx lock %lld/%lld\n", kn,
                       v32, static_cast<unsigned long long>(all * (iters + iters / 2)),
                       static_cast<unsigned long long>(v64), static_cast<unsigned long long>(all * 2 * iters),
                       static_cast<unsigned long long>(vb), static_cast<long long>(lk[0]), static_cast<long long>(lk[1]));
          std::exit(1);
        }
        std::printf("%s: atomics under contention (%d PEs x %d threads): ok\n", kn, n, blocks * threads);
      }
    } else if (me == 0) {
      std::printf("%s: atomics skipped: no native host atomics (GPU atomics on host memory are not atomic here)\n", kn);
    }
    MP_OK(tether_barrier_all(w));
  }

  // ---- device barrier: block scope and grid scope (cooperative launch), slots in DEVICE memory
  {
    auto* slots = reinterpret_cast<int64_t*>(symD + 4096);
    zeroDevice(slots, 64 * 8);
    MP_OK(tether_barrier_all(w));
    // Through the proxy with shared GPUs every barrier round waits for time slices: 8 PEs on 4 H100s ran past the
    // test's 120 s in these loops at full count (2026-11-26, after the atomics section passed). So did 8 PEs on ONE
    // H100 without the proxy (2026-12-07, -j1; 4 PEs there took 74 s for the whole test): more than 4 kernels taking
    // turns on a GPU. Such runs take 200/50.
    const bool sliced = sharedProxy || n > 4 * gpus;
    const int iters = sliced ? 200 : 2000, gridIters = sliced ? 50 : 500;
    barrierLoop<Scope::Block><<<1, 256>>>(h, slots, iters, errs);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    MP_CHECK(readErrs(errs) == 0);
    barrierLoop<Scope::Warp><<<1, 32>>>(h, slots, iters, errs);  // iteration numbers restart: slots go 1..iters again
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    MP_CHECK(readErrs(errs) == 0);
    MP_OK(tether_barrier_all(w));
    zeroDevice(slots, 64 * 8);
    MP_OK(tether_barrier_all(w));
    CK(dev::launch_cooperative(gridBarrierLoop, dim3(16), dim3(128), 0, nullptr, h, slots, gridIters, errs));
    CK(cudaDeviceSynchronize());
    MP_CHECK(readErrs(errs) == 0);
    MP_OK(tether_barrier_all(w));
    if (me == 0)
      std::printf("device barrier: block %dx, warp %dx, grid (16 blocks, cooperative) %dx: ok\n", iters, iters, gridIters);
  }

  // ---- visibility stress: producer PE 2k -> consumer PE 2k+1, all pairs at once
  {
    const bool inPair = (me ^ 1) < n;
    const char* s = std::getenv("GPU_STRESS_SEED");
    const uint64_t seed = s ? std::strtoull(s, nullptr, 10) : 20261122;
    const char* it = std::getenv("GPU_STRESS_ITERS");
    // Two PEs on one GPU (one visible device): the two processes' kernels time-slice, so every hand-over waits for a
    // slice, and a million of them (or the proxy variant's 20000) ran past ctest's timeout on one H200 (2026-11-24).
    // Such runs take at most 1000 iterations.
    int devices = 0;
    CK(cudaGetDeviceCount(&devices));
    const bool shared = devices < n;
    long base = it ? std::atol(it) : 1000000;
    if (shared && base > 1000) {
      base = 1000;
      if (me == 1) std::printf("visibility stress: the PEs share a GPU: %ld iterations\n", base);
    }
    for (int kindIdx = 0; kindIdx < 2; ++kindIdx) {
      const long iters = kindIdx ? base / 10 : base;
      unsigned char* buf = kindIdx == 0 ? symD : symH;
      uint64_t* sig = (kindIdx == 0 ? sigD : sigH) + 64;
      uint64_t* ack = sig + 8;
      uint64_t z[16] = {};
      symWrite(kindIdx == 0 ? TETHER_SEG_DEVICE : TETHER_SEG_HOST, sig, z, sizeof z);
      MP_OK(tether_barrier_all(w));
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      CK(cudaEventRecord(e0));
      if (inPair) stress<<<1, 256>>>(h, buf, local, sig, ack, iters, seed, 8192, errs);
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1));
      CK(cudaDeviceSynchronize());
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      unsigned e[2];
      CK(cudaMemcpy(e, errs, sizeof e, cudaMemcpyDeviceToHost));
      CK(cudaMemset(errs, 0, sizeof e));
      if (e[0]) {
        std::fprintf(stderr, "FAIL PE %d: visibility stress on %s: %u stale bytes, first at iteration %u (seed %" PRIu64
                     ")\n", me, kindIdx ? "HOST" : "DEVICE", e[0], e[1], seed);
        std::exit(1);
      }
      if (me == 1)
        std::printf("visibility stress %s (%d pairs): %ld iterations, sizes 1..8192 B, seed %" PRIu64 ": ok (%.2f us/iteration)\n",
                    kindIdx ? "HOST" : "DEVICE", n / 2, iters, seed, 1000.0 * ms / static_cast<double>(iters));
      MP_OK(tether_barrier_all(w));
    }
  }
  CK(cudaFree(local));
  CK(cudaFree(errs));
  if (me == 0) std::printf("gpu_device_api: all checks passed\n");
  return mp::finish();
}
