// tether device API: kernel-initiated communication, header-only (namespace tether::device).
//
// Include this header from CUDA code (.cu, nvcc) for kernels, or from plain C++ for CPU threads: every function is
// __host__ __device__ inline (TETHER_HD) and the host compilation runs the same protocol code with __atomic builtins,
// so signals, rings and the device barrier are tested on CPUs over HOST segments. No -rdc, no __device__ globals: all
// state is in the handle (tether_device_handle_t, tether.h) that the kernel takes BY VALUE, and in symmetric memory.
//
//   tether_device_handle_t h;  tether_device_handle(world, &h);   // GPU handle (tether_device_handle_cpu: CPU one)
//   kernel<<<g, b>>>(h, ...);  →  tether::device::put<Scope::Block>(h, dest, src, nelems, pe);
//
// Addresses. `dest`/`src`/`sig`/`ivar` arguments that name symmetric objects take the address tether_malloc* (or the
// STATIC segment) gave THIS PE — the same number on the CPU and in kernels, also for HOST objects; the API translates
// it to the GPU alias of the target PE's copy (`ptr` gives that raw pointer). Local buffers (`src` of put, `dest` of
// get) are plain addresses the caller can access. Translation: `addr - seg.sym_base + window + pe * stride` when the
// handle is DIRECT (all PEs on this host, uniform views), else one read of the GPU-resident peer table.
//
// Scopes. Functions templated on Scope are collective over the calling group: Scope::Thread (the thread alone),
// Scope::Warp (all 32 lanes of a warp call with the same arguments), Scope::Block (every thread of the block),
// Scope::Grid (every thread of the kernel: started with launch_cooperative when it has more than one block, since its
// group barrier is then a grid barrier). Bulk
// copies are spread over the group in 16-byte vectors (8/4/1-byte when the relative alignment of source and target
// forbids), 8 vectors per thread in flight. On the CPU, a group is the set of threads registered with HostScope
// (default: the calling thread alone); its members split the bytes the same way.
//
// Memory model (system scope everywhere, since peers are other GPUs and CPUs):
//  - put/get/p/g and the copy part of put_signal are weak stores/loads. Blocking forms return when the local buffer
//    may be reused (for get: when it is filled, for the whole group); remote visibility of puts is guaranteed only by
//    quiet, fence, a signal, or a barrier. _nbi forms skip the group synchronisation at the end; quiet completes them.
//  - Signals (put_signal, signal_op) are RELEASE at system scope (st.release.sys / red.release.sys.add; on the CPU
//    __atomic store/add RELEASE) issued by the group's leader after a group barrier, so whoever observes the signal
//    with an ACQUIRE (signal_wait_until, wait_until, test, signal_fetch) also sees every byte the group put before it.
//  - Waits and tests are ACQUIRE loads at system scope (ld.acquire.sys; __ATOMIC_ACQUIRE). Each thread of the group
//    polls itself, so each thread has its own acquire. Bounded by TETHER_TIMEOUT (handle.timeout_ns): on expiry the
//    wait prints what it waited for and traps (GPU) / aborts (CPU).
//  - quiet: every thread fence.sc.sys (__threadfence_system; CPU: seq_cst fence) after its own stores, then the group
//    synchronises: every earlier put/AMO/signal of the group is complete and visible to every PE and the host.
//  - fence: fence.acq_rel.sys per thread: earlier puts are ordered before later puts/signals to each PE (cumulative).
//  - Atomics (atomic_*) are relaxed system-scope RMW operations, atomic against every other tether atomic on the word
//    (GPU and host API AMOs on DEVICE words; on HOST words from a GPU only where the platform has native host
//    atomics). Order them with fence/quiet. They are single-thread operations (call from one thread).
//  - sync_all<S> (and team_sync): the group synchronises, the leader fences (fence.sc.sys: cumulative, so it covers
//    every store the group made before the group barrier) and runs a barrier over all PEs -- one round up to
//    h.barrier_flat_max PEs (TETHER_BARRIER_FLAT_MAX: a release store into a word of every other PE, then
//    acquire-waits on its own n - 1 words), dissemination above (one release store per round into the peer's round
//    word, acquire-wait on its own) --, then the group synchronises:
//    stores before it by any thread of the group on any PE are visible after it. barrier_all = quiet + sync_all (the
//    same thing on load/store paths). One group per PE may be in a device barrier at a time (a whole grid: use
//    barrier_all_grid from a kernel started with launch_cooperative).
//
// Proxy path. A (PE, segment) that the handle cannot reach by loads/stores (peers[pe].base[k] == 0; every PE but this
// one under TETHER_FORCE_PROXY=1) is served through the handle's descriptor ring by the World's proxy thread, which
// executes each descriptor with the host path (tether_put/get/atomic/signal_op's transports) in ticket order: runs of
// puts on one transport context are issued non-blocking, fenced per target and completed before the ticket counter
// `done` moves past them; every other descriptor runs blocking after the run before it completed (slot protocol:
// tether.h; host side: src/core/proxy.h). ptr() is null for such a PE. Per function:
//  - putmem/getmem (+typed, _nbi), putmem_signal/put_signal (+_nbi): every thread of the group fences (fence.sc.sys),
//    the group synchronises, the leader posts ONE descriptor for the whole range with a release store of its seq, so
//    the group's stores to the source are visible to the proxy's copy. Blocking forms return when the proxy has
//    completed it (put: source reusable and data delivered; get: dest filled, for the whole group). _nbi forms return
//    at once: as for NVSHMEM nbi, the source must stay unchanged (and a get's dest unread) until quiet. put_signal is
//    one descriptor: the proxy puts, then applies the signal (release), so whoever sees the signal sees the data.
//  - p posts the value inline (8-byte pieces), complete at quiet; g waits for the value.
//  - signal_op and the device barrier's per-round stores to a proxied PE are SET/ADD signal descriptors, executed after
//    every descriptor the PE posted before them.
//  - Atomics: fetching forms (fetch, swap, compare_swap, fetch_*) post and wait for the old value; the others post and
//    complete at quiet. The proxy's AMO is atomic with respect to the World's other AMOs on that word (DEVICE words:
//    system-scope GPU atomics; HOST words: CPU atomics).
//  - quiet: the leader waits until every ticket taken so far on this GPU (CPU handle: this process) is complete.
//    fence: ring descriptors take effect in ticket order per target (fenced runs, see above), so ring operations are
//    already ordered; only
//    a handle with TETHER_DEVICE_PROXY_MIXED (a PE with both kinds of segments) makes fence wait for the ring.
//    barrier_all = quiet + sync_all when the handle has a ring.
//  - Waits are bounded by TETHER_TIMEOUT: a full ring (flow control), a descriptor never completed, or a descriptor
//    the proxy could not execute (its error word; the PE's log has the reason) fail like every other wait.
//  - Cost: each descriptor is a few PCIe/NVLink-C2C writes plus the proxy's poll latency (up to ~50 us when its ring
//    was idle for a while); the load/store path is unchanged (a null test where the view is read).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>

#include "tether/tether.h"

#if defined(__CUDACC__)
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#define TETHER_HD __host__ __device__ __forceinline__
// Large bodies with several call sites per kernel (the team reductions' loop): one copy per instantiation.
#define TETHER_HD_OUTLINE __host__ __device__ __noinline__
#define TETHER_UNROLL _Pragma("unroll")  // loops of HD functions with constant trip counts (host compilers: nothing)
#else
#define TETHER_HD inline
#define TETHER_HD_OUTLINE inline
#define TETHER_UNROLL
#endif

namespace tether {
namespace device {

using Handle = tether_device_handle_t;

enum class Scope { Thread, Warp, Block, Grid };
enum class SignalOp : int { Set = TETHER_SIGNAL_SET, Add = TETHER_SIGNAL_ADD };
enum class Cmp : int { EQ = TETHER_CMP_EQ, NE = TETHER_CMP_NE, GT = TETHER_CMP_GT, GE = TETHER_CMP_GE,
                       LT = TETHER_CMP_LT, LE = TETHER_CMP_LE };

// ---- CPU groups (host compilation only) ------------------------------------------------------------------------
// A CPU thread acting as member `rank` of a group of `size` threads for Scope S: set it with HostScope, give the
// group a barrier (sync(arg) must be a full barrier with acquire/release semantics, e.g. HostBarrier::arrive).
struct HostGroup {
  int rank = 0, size = 1;
  void (*sync)(void*) = nullptr;
  void* arg = nullptr;
};
namespace detail {
inline HostGroup& hostGroup(Scope s) {
  static thread_local HostGroup groups[4];  // per CPU thread: the host stand-in for threadIdx/blockDim
  return groups[static_cast<int>(s)];
}
}  // namespace detail

// Sense-reversing barrier for a fixed number of CPU threads (acquire/release: what a thread wrote before arrive() is
// visible to every thread after it).
class HostBarrier {
 public:
  explicit HostBarrier(int n) : n_(n) {}
  void arrive() {
    const unsigned gen = __atomic_load_n(&gen_, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&count_, 1, __ATOMIC_ACQ_REL) == n_) {
      __atomic_store_n(&count_, 0, __ATOMIC_RELAXED);
      __atomic_store_n(&gen_, gen + 1, __ATOMIC_RELEASE);
      return;
    }
    for (int i = 0; __atomic_load_n(&gen_, __ATOMIC_ACQUIRE) == gen; ++i)
      if (i > 64) std::this_thread::yield();
  }
  static void syncFn(void* self) { static_cast<HostBarrier*>(self)->arrive(); }

 private:
  int n_;
  int count_ = 0;
  unsigned gen_ = 0;
};

template <Scope S>
class HostScope {  // RAII: this CPU thread is member `rank` of a `size`-thread group for Scope S
 public:
  HostScope(int rank, int size, HostBarrier* barrier) : saved_(detail::hostGroup(S)) {
    detail::hostGroup(S) = HostGroup{rank, size, &HostBarrier::syncFn, barrier};
  }
  ~HostScope() { detail::hostGroup(S) = saved_; }
  HostScope(const HostScope&) = delete;
  HostScope& operator=(const HostScope&) = delete;

 private:
  HostGroup saved_;
};

namespace detail {

// ---- groups ------------------------------------------------------------------------------------------------------
template <Scope S>
TETHER_HD int groupRank() {
#if defined(__CUDA_ARCH__)
  if (S == Scope::Thread) return 0;
  if (S == Scope::Warp) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return static_cast<int>(lane);
  }
  const int inBlock = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  if (S == Scope::Block) return inBlock;
  const int block = static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  return block * static_cast<int>(blockDim.x * blockDim.y * blockDim.z) + inBlock;
#else
  return S == Scope::Thread ? 0 : hostGroup(S).rank;
#endif
}
template <Scope S>
TETHER_HD int groupSize() {
#if defined(__CUDA_ARCH__)
  if (S == Scope::Thread) return 1;
  if (S == Scope::Warp) return 32;
  const int block = static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
  return S == Scope::Block ? block : block * static_cast<int>(gridDim.x * gridDim.y * gridDim.z);
#else
  return S == Scope::Thread ? 1 : hostGroup(S).size;
#endif
}
template <Scope S>
TETHER_HD void groupSync() {
#if defined(__CUDA_ARCH__)
  if (S == Scope::Warp) __syncwarp();
  if (S == Scope::Block) __syncthreads();
  if (S == Scope::Grid) {  // a grid of one block is a block (no cooperative launch needed); else it needs one
    if (gridDim.x * gridDim.y * gridDim.z == 1)
      __syncthreads();
    else
      cooperative_groups::this_grid().sync();
  }
#else
  if (S != Scope::Thread) {
    HostGroup& g = hostGroup(S);
    if (g.size > 1 && g.sync) g.sync(g.arg);
  }
#endif
}

// ---- failure and bounded spinning ------------------------------------------------------------------------------
TETHER_HD void fail(const char* what, const void* addr, int pe) {
#if defined(__CUDA_ARCH__)
  printf("tether device API: %s (address %p, PE %d) in block (%d,%d,%d) thread (%d,%d,%d)\n", what, addr, pe,
         blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  __trap();
#else
  std::fprintf(stderr, "tether device API (CPU): %s (address %p, PE %d)\n", what, addr, pe);
  std::abort();
#endif
}

struct Spin {
  uint64_t start = 0, limit = 0;
  unsigned n = 0;
  TETHER_HD explicit Spin(uint64_t timeoutNs) : limit(timeoutNs) { start = now(); }
  TETHER_HD static uint64_t now() {
#if defined(__CUDA_ARCH__)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
#endif
  }
  // false once the time limit passed (checked every 256 polls).
  TETHER_HD bool next() {
    ++n;
#if !defined(__CUDA_ARCH__)
    if (n > 10000)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    else if (n > 64)
      std::this_thread::yield();
#endif
    if (limit && (n & 255) == 0 && now() - start > limit) return false;
    return true;
  }
};

// ---- translation -------------------------------------------------------------------------------------------------
// Segment of symmetric address a (DEVICE first: the hot case in kernels), -1 if none; *off = offset in it.
TETHER_HD int segOf(const Handle& h, const void* a, uint64_t* off) {
  const uint64_t x = reinterpret_cast<uint64_t>(a);
  // Unrolled by hand: a run-time indexed array of segment numbers would live in local memory.
  uint64_t o = x - h.seg[TETHER_DEVICE_SEG_DEVICE].sym_base;
  if (o < h.seg[TETHER_DEVICE_SEG_DEVICE].size) {
    *off = o;
    return TETHER_DEVICE_SEG_DEVICE;
  }
  o = x - h.seg[TETHER_DEVICE_SEG_HOST].sym_base;
  if (o < h.seg[TETHER_DEVICE_SEG_HOST].size) {
    *off = o;
    return TETHER_DEVICE_SEG_HOST;
  }
  o = x - h.seg[TETHER_DEVICE_SEG_STATIC].sym_base;
  if (o < h.seg[TETHER_DEVICE_SEG_STATIC].size) {
    *off = o;
    return TETHER_DEVICE_SEG_STATIC;
  }
  return -1;
}
TETHER_HD char* view(const Handle& h, int k, int pe) {
  if (h.flags & TETHER_DEVICE_DIRECT)
    return reinterpret_cast<char*>(h.seg[k].window + static_cast<uint64_t>(pe) * h.seg[k].stride);
  return reinterpret_cast<char*>(h.peers[pe].base[k]);
}
// pe's copy of symmetric address a: `ptr` where loads/stores reach it, else null and (kind, off) for the proxy ring.
// Fails on a non-symmetric address, a PE out of range, or an unreachable PE when the handle has no ring.
struct Target {
  char* ptr;
  int kind;
  uint64_t off;
};
TETHER_HD Target target(const Handle& h, const void* a, int pe) {
  uint64_t off;
  const int k = segOf(h, a, &off);
  if (k < 0) fail("address is not in a symmetric segment of this handle", a, pe);
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(h.n_pes)) fail("PE out of range", a, pe);
  char* b = view(h, k, pe);
  if (!b && !h.proxy_ring) fail("PE not reachable by loads/stores and the handle has no proxy ring", a, pe);
  return Target{b ? b + off : nullptr, k, off};
}
template <typename T>
TETHER_HD T* local(const Handle& h, const T* a) {  // this PE's own copy, in the handle's address space
  uint64_t off;
  const int k = segOf(h, a, &off);
  if (k < 0) fail("address is not in a symmetric segment of this handle", a, h.my_pe);
  return reinterpret_cast<T*>(h.seg[k].my_view + off);
}

// ---- scalar memory operations (system scope) -------------------------------------------------------------------
template <int N> struct BitsOf;
template <> struct BitsOf<2> { using type = uint16_t; };
template <> struct BitsOf<4> { using type = uint32_t; };
template <> struct BitsOf<8> { using type = uint64_t; };

// loadAcquire / loadRelaxed: 2/4/8-byte loads at system scope (ld.<sem>.sys; on the CPU __atomic_load_n).
#if defined(__CUDA_ARCH__)
#define TETHER_LOAD_BITS_(sem)                                                                  \
  if (sizeof(T) == 8) {                                                                         \
    unsigned long long v;                                                                       \
    asm volatile("ld." sem ".sys.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");                 \
    u = static_cast<U>(v);                                                                      \
  } else if (sizeof(T) == 4) {                                                                  \
    unsigned v;                                                                                 \
    asm volatile("ld." sem ".sys.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");                 \
    u = static_cast<U>(v);                                                                      \
  } else {                                                                                      \
    unsigned short v;                                                                           \
    asm volatile("ld." sem ".sys.b16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");                 \
    u = static_cast<U>(v);                                                                      \
  }
#else
#define TETHER_LOAD_BITS_(sem) \
  u = __atomic_load_n(reinterpret_cast<const U*>(p), sem[0] == 'a' ? __ATOMIC_ACQUIRE : __ATOMIC_RELAXED);
#endif
#define TETHER_DEFINE_LOAD_(name, sem)         \
  template <typename T>                        \
  TETHER_HD T name(const T* p) {               \
    using U = typename BitsOf<sizeof(T)>::type; \
    U u;                                       \
    TETHER_LOAD_BITS_(sem)                     \
    T t;                                       \
    memcpy(&t, &u, sizeof t);                  \
    return t;                                  \
  }
TETHER_DEFINE_LOAD_(loadAcquire, "acquire")
TETHER_DEFINE_LOAD_(loadRelaxed, "relaxed")
#undef TETHER_DEFINE_LOAD_
#undef TETHER_LOAD_BITS_
template <typename T>
TETHER_HD void storeRelaxed(T* p, T v) {
  using U = typename BitsOf<sizeof(T)>::type;
  U u;
  memcpy(&u, &v, sizeof u);
#if defined(__CUDA_ARCH__)
  if (sizeof(T) == 8)
    asm volatile("st.relaxed.sys.b64 [%0], %1;" ::"l"(p), "l"(static_cast<unsigned long long>(u)) : "memory");
  else if (sizeof(T) == 4)
    asm volatile("st.relaxed.sys.b32 [%0], %1;" ::"l"(p), "r"(static_cast<unsigned>(u)) : "memory");
  else
    asm volatile("st.relaxed.sys.b16 [%0], %1;" ::"l"(p), "h"(static_cast<unsigned short>(u)) : "memory");
#else
  __atomic_store_n(reinterpret_cast<U*>(p), u, __ATOMIC_RELAXED);
#endif
}
TETHER_HD void storeRelease(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.sys.b64 [%0], %1;" ::"l"(p), "l"(static_cast<unsigned long long>(v)) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}
TETHER_HD void addRelease(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(p), "l"(static_cast<unsigned long long>(v)) : "memory");
#else
  __atomic_fetch_add(p, v, __ATOMIC_RELEASE);
#endif
}
TETHER_HD void fenceSc() {
#if defined(__CUDA_ARCH__)
  asm volatile("fence.sc.sys;" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
TETHER_HD void fenceAcqRel() {
#if defined(__CUDA_ARCH__)
  asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
  __atomic_thread_fence(__ATOMIC_ACQ_REL);
#endif
}

template <typename T>
TETHER_HD bool compare(T a, Cmp c, T b) {
  switch (c) {
    case Cmp::EQ: return a == b;
    case Cmp::NE: return a != b;
    case Cmp::GT: return a > b;
    case Cmp::GE: return a >= b;
    case Cmp::LT: return a < b;
    case Cmp::LE: return a <= b;
  }
  return false;
}

// ---- bulk copies -------------------------------------------------------------------------------------------------
#if defined(__CUDA_ARCH__)
// Words of type W, group member r of sz, U words per thread in flight (all loads, then all stores).
template <typename W, int U>
__device__ __forceinline__ void copyWords(W* d, const W* s, size_t n, int r, int sz) {
  size_t i = static_cast<size_t>(r);
  const size_t step = static_cast<size_t>(sz);
  for (; i + (U - 1) * step < n; i += U * step) {
    W v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = s[i + u * step];
#pragma unroll
    for (int u = 0; u < U; ++u) d[i + u * step] = v[u];
  }
  for (; i < n; i += step) d[i] = s[i];
}
template <typename W, int U>
__device__ __forceinline__ void copyAligned(char* d, const char* s, size_t n, int r, int sz) {
  const size_t head = (sizeof(W) - (reinterpret_cast<uintptr_t>(d) & (sizeof(W) - 1))) & (sizeof(W) - 1);
  const size_t h = head < n ? head : n;
  for (size_t i = static_cast<size_t>(r); i < h; i += static_cast<size_t>(sz)) d[i] = s[i];
  const size_t nw = (n - h) / sizeof(W);
  copyWords<W, U>(reinterpret_cast<W*>(d + h), reinterpret_cast<const W*>(s + h), nw, r, sz);
  const size_t done = h + nw * sizeof(W);
  for (size_t i = done + static_cast<size_t>(r); i < n; i += static_cast<size_t>(sz)) d[i] = s[i];
}
#endif

// The group's members together copy n bytes (each its share); no synchronisation.
template <Scope S>
TETHER_HD void copyBytes(void* dst, const void* src, size_t n) {
  const int r = groupRank<S>(), sz = groupSize<S>();
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__CUDA_ARCH__)
  const uintptr_t rel = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
  if ((rel & 15) == 0)
    copyAligned<int4, 8>(d, s, n, r, sz);
  else if ((rel & 7) == 0)
    copyAligned<unsigned long long, 4>(d, s, n, r, sz);
  else if ((rel & 3) == 0)
    copyAligned<unsigned, 4>(d, s, n, r, sz);
  else
    copyAligned<unsigned char, 4>(d, s, n, r, sz);
#else
  // Contiguous shares (one memcpy each), 64-byte aligned boundaries.
  size_t share = (n + static_cast<size_t>(sz) - 1) / static_cast<size_t>(sz);
  share = (share + 63) & ~static_cast<size_t>(63);
  const size_t lo = share * static_cast<size_t>(r);
  if (lo < n) memcpy(d + lo, s + lo, n - lo < share ? n - lo : share);
#endif
}

TETHER_HD void signalRelease(uint64_t* sig, uint64_t value, SignalOp op) {
  if (op == SignalOp::Add)
    addRelease(sig, value);
  else
    storeRelease(sig, value);
}

template <typename T>
TETHER_HD T waitValue(const Handle& h, const T* ivar, Cmp c, T value, const char* what) {
  const T* p = local(h, ivar);
  Spin spin(h.timeout_ns);
  for (;;) {
    const T v = loadAcquire(p);
    if (compare(v, c, value)) return v;
    if (!spin.next()) {
#if defined(__CUDA_ARCH__)
      printf("tether device API: %s timed out on PE %d: word %p (cmp %d, expected %llu, seen %llu)\n", what, h.my_pe,
             static_cast<const void*>(ivar), static_cast<int>(c), static_cast<unsigned long long>(value),
             static_cast<unsigned long long>(v));
#else
      std::fprintf(stderr, "tether device API (CPU): %s timed out on PE %d: word %p (cmp %d, expected %llu, seen %llu)\n",
                   what, h.my_pe, static_cast<const void*>(ivar), static_cast<int>(c),
                   static_cast<unsigned long long>(value), static_cast<unsigned long long>(v));
#endif
      fail("wait timed out (TETHER_TIMEOUT)", ivar, h.my_pe);
    }
  }
}

// ---- proxy ring (slot protocol: tether.h; host side: src/core/proxy.h) --------------------------------------------
constexpr uint64_t kSlotPosted = 1, kSlotDone = 2;
TETHER_HD uint32_t proxyOp(uint32_t op, int kind) { return op | static_cast<uint32_t>(kind) << 8; }
// One poll of a ring word: on the GPU each poll is a read across PCIe/C2C, so waiting threads back off a little to
// leave the link to the proxy (CPU: Spin::next already yields, then sleeps).
TETHER_HD bool proxyNext(Spin& spin) {
#if defined(__CUDA_ARCH__)
  __nanosleep(spin.n < 64 ? 32u : 256u);
#endif
  return spin.next();
}
TETHER_HD void proxyFail(const Handle& h, const char* what, uint64_t ticket, uint64_t seen) {
#if defined(__CUDA_ARCH__)
  printf("tether device API: proxy ring, PE %d: %s (ticket %llu, seen %llu, proxy error word %llu)\n", h.my_pe, what,
         static_cast<unsigned long long>(ticket), static_cast<unsigned long long>(seen),
         static_cast<unsigned long long>(loadRelaxed(&h.proxy_state->error)));
#else
  std::fprintf(stderr, "tether device API (CPU): proxy ring, PE %d: %s (ticket %llu, seen %llu, proxy error word "
               "%llu)\n", h.my_pe, what, static_cast<unsigned long long>(ticket), static_cast<unsigned long long>(seen),
               static_cast<unsigned long long>(loadRelaxed(&h.proxy_state->error)));
#endif
  fail("proxy ring failure", h.proxy_ring, h.my_pe);
}
// After a completed wait: a descriptor the proxy could not execute (error word set) is fatal for every waiter.
TETHER_HD void proxyCheck(const Handle& h, uint64_t ticket) {
  const uint64_t e = loadRelaxed(&h.proxy_state->error);
  if (e) proxyFail(h, "the proxy could not execute a descriptor (ticket = error word - 1; this PE's log says why)",
                   ticket, e);
}
// Takes a ticket, waits (bounded) until its slot is free, fills it and publishes it (release, system scope): the
// calling thread's earlier stores are visible to the proxy before the descriptor is. Returns the ticket.
TETHER_HD uint64_t proxyPost(const Handle& h, uint32_t op, int pe, uint64_t offset, uint64_t size, const void* local,
                             uint64_t value, uint64_t aux) {
#if defined(__CUDA_ARCH__)
  const uint64_t t = atomicAdd(reinterpret_cast<unsigned long long*>(h.proxy_ticket), 1ull);  // GPU memory
#else
  const uint64_t t = __atomic_fetch_add(h.proxy_ticket, uint64_t{1}, __ATOMIC_RELAXED);
#endif
  tether_proxy_desc_t* d = h.proxy_ring + (t & (h.proxy_slots - 1));
  Spin spin(h.timeout_ns);
  for (uint64_t s; (s = loadAcquire(&d->seq)) != t << 2;)  // flow control: ticket t - slots still owns the slot
    if (!proxyNext(spin)) proxyFail(h, "ring slot did not become free (TETHER_TIMEOUT): is the proxy thread running?", t, s);
  d->op = op;
  d->pe = pe;
  d->offset = offset;
  d->size = size;
  d->local = reinterpret_cast<uint64_t>(local);
  d->value = value;
  d->aux = aux;
  storeRelease(&d->seq, t << 2 | kSlotPosted);
  return t;
}
// Waits (bounded) until ticket t is complete.
TETHER_HD void proxyWaitDone(const Handle& h, uint64_t t) {
  Spin spin(h.timeout_ns);
  for (uint64_t s; (s = loadAcquire(&h.proxy_state->done)) <= t;)
    if (!proxyNext(spin)) proxyFail(h, "descriptor not completed (TETHER_TIMEOUT)", t, s);
  proxyCheck(h, t);
}
// Fetching descriptor t (posted with TETHER_PROXY_FETCH): waits for its result, then frees the slot.
TETHER_HD uint64_t proxyResult(const Handle& h, uint64_t t) {
  tether_proxy_desc_t* d = h.proxy_ring + (t & (h.proxy_slots - 1));
  Spin spin(h.timeout_ns);
  for (uint64_t s; (s = loadAcquire(&d->seq)) != (t << 2 | kSlotDone);)
    if (!proxyNext(spin)) proxyFail(h, "fetching descriptor not completed (TETHER_TIMEOUT)", t, s);
  const uint64_t r = loadRelaxed(&d->result);
  storeRelease(&d->seq, (t + h.proxy_slots) << 2);
  proxyCheck(h, t);
  return r;
}
// Every ticket taken so far on this GPU (CPU handle: in this process) is complete.
TETHER_HD void proxyQuiet(const Handle& h) {
  const uint64_t n = loadRelaxed(h.proxy_ticket);
  if (n) proxyWaitDone(h, n - 1);
}
// Group form: every thread fences (its stores to the local buffer are visible system-wide), the group synchronises,
// the leader posts one descriptor for the whole range; with complete, the group returns once it is complete.
template <Scope S>
TETHER_HD void proxyGroupPost(const Handle& h, uint32_t op, int pe, uint64_t offset, uint64_t size, const void* local,
                              uint64_t value, uint64_t aux, bool complete) {
  fenceSc();
  groupSync<S>();
  if (groupRank<S>() == 0) {
    const uint64_t t = proxyPost(h, op, pe, offset, size, local, value, aux);
    if (complete) proxyWaitDone(h, t);
  }
  if (complete) groupSync<S>();
}
// p/g of any size through the ring: 8-byte inline pieces.
TETHER_HD void proxyPutInline(const Handle& h, int pe, const Target& t, const void* bytes, size_t n) {
  for (size_t o = 0; o < n; o += 8) {
    const size_t len = n - o < 8 ? n - o : 8;
    uint64_t v = 0;
    memcpy(&v, static_cast<const char*>(bytes) + o, len);
    (void)proxyPost(h, proxyOp(TETHER_PROXY_OP_PUT_INLINE, t.kind), pe, t.off + o, len, nullptr, v, 0);
  }
}
TETHER_HD void proxyGetInline(const Handle& h, int pe, const Target& t, void* out, size_t n) {
  for (size_t o = 0; o < n; o += 8) {
    const size_t len = n - o < 8 ? n - o : 8;
    const uint64_t v = proxyResult(
        h, proxyPost(h, proxyOp(TETHER_PROXY_OP_GET_INLINE, t.kind) | TETHER_PROXY_FETCH, pe, t.off + o, len,
                     nullptr, 0, 0));
    memcpy(static_cast<char*>(out) + o, &v, len);
  }
}
TETHER_HD uint64_t proxyAmo(const Handle& h, int pe, const Target& t, tether_amo_t op, unsigned width, uint64_t value,
                            uint64_t cond, bool fetch) {
  const uint32_t w = proxyOp(TETHER_PROXY_OP_AMO, t.kind) | static_cast<uint32_t>(op) << 20 |
                     (fetch ? TETHER_PROXY_FETCH : 0u);
  const uint64_t tk = proxyPost(h, w, pe, t.off, width, nullptr, value, cond);
  return fetch ? proxyResult(h, tk) : 0;
}
TETHER_HD void proxySignal(const Handle& h, int pe, const Target& t, uint64_t value, SignalOp op) {
  const uint32_t w = proxyOp(TETHER_PROXY_OP_SIGNAL, t.kind) | (op == SignalOp::Add ? 1u << 16 : 0u);
  (void)proxyPost(h, w, pe, t.off, 8, nullptr, value, 0);
}

}  // namespace detail

// ================================================================================================================
// Addresses

// pe's copy of the symmetric object at addr, as a pointer usable here (kernel: GPU address; CPU handle: CPU
// address), or nullptr when addr is not symmetric, pe is out of range, or pe is not reachable by loads/stores.
template <typename T>
TETHER_HD T* ptr(const Handle& h, T* addr, int pe) {
  uint64_t off;
  const int k = detail::segOf(h, addr, &off);
  if (k < 0 || static_cast<unsigned>(pe) >= static_cast<unsigned>(h.n_pes)) return nullptr;
  char* b = detail::view(h, k, pe);
  return b ? reinterpret_cast<T*>(b + off) : nullptr;
}
TETHER_HD int my_pe(const Handle& h) { return h.my_pe; }
TETHER_HD int n_pes(const Handle& h) { return h.n_pes; }

// ================================================================================================================
// RMA. putmem/getmem: bytes; put/get: nelems elements of T. Collective over the scope (same arguments).

namespace detail {
// complete: a proxied transfer has finished when the group returns (blocking forms); else it finishes by quiet.
template <Scope S>
TETHER_HD void putBytes(const Handle& h, void* dest, const void* src, size_t nbytes, int pe, bool complete) {
  if (!nbytes) return;
  const Target t = target(h, dest, pe);
  if (t.ptr)
    copyBytes<S>(t.ptr, src, nbytes);
  else
    proxyGroupPost<S>(h, proxyOp(TETHER_PROXY_OP_PUT, t.kind), pe, t.off, nbytes, src, 0, 0, complete);
}
template <Scope S>
TETHER_HD void getBytes(const Handle& h, void* dest, const void* src, size_t nbytes, int pe, bool complete) {
  if (!nbytes) return;
  const Target t = target(h, src, pe);
  if (t.ptr)
    copyBytes<S>(dest, t.ptr, nbytes);
  else
    proxyGroupPost<S>(h, proxyOp(TETHER_PROXY_OP_GET, t.kind), pe, t.off, nbytes, dest, 0, 0, complete);
}
}  // namespace detail

// Through the proxy ring the group posts one descriptor for the whole range (see the memory model above): the _nbi
// forms return at once, and the source (put) must stay unchanged and the destination (get) unread until quiet.
template <Scope S = Scope::Thread>
TETHER_HD void putmem_nbi(const Handle& h, void* dest, const void* src, size_t nbytes, int pe) {
  detail::putBytes<S>(h, dest, src, nbytes, pe, false);
}
template <Scope S = Scope::Thread>
TETHER_HD void putmem(const Handle& h, void* dest, const void* src, size_t nbytes, int pe) {
  detail::putBytes<S>(h, dest, src, nbytes, pe, true);
  detail::groupSync<S>();  // the whole source has been read: the group may reuse it
}
template <Scope S = Scope::Thread>
TETHER_HD void getmem_nbi(const Handle& h, void* dest, const void* src, size_t nbytes, int pe) {
  detail::getBytes<S>(h, dest, src, nbytes, pe, false);
}
template <Scope S = Scope::Thread>
TETHER_HD void getmem(const Handle& h, void* dest, const void* src, size_t nbytes, int pe) {
  detail::getBytes<S>(h, dest, src, nbytes, pe, true);
  detail::groupSync<S>();  // dest is complete for every member
}
template <Scope S = Scope::Thread, typename T>
TETHER_HD void put(const Handle& h, T* dest, const T* src, size_t nelems, int pe) {
  putmem<S>(h, dest, src, nelems * sizeof(T), pe);
}
template <Scope S = Scope::Thread, typename T>
TETHER_HD void put_nbi(const Handle& h, T* dest, const T* src, size_t nelems, int pe) {
  putmem_nbi<S>(h, dest, src, nelems * sizeof(T), pe);
}
template <Scope S = Scope::Thread, typename T>
TETHER_HD void get(const Handle& h, T* dest, const T* src, size_t nelems, int pe) {
  getmem<S>(h, dest, src, nelems * sizeof(T), pe);
}
template <Scope S = Scope::Thread, typename T>
TETHER_HD void get_nbi(const Handle& h, T* dest, const T* src, size_t nelems, int pe) {
  getmem_nbi<S>(h, dest, src, nelems * sizeof(T), pe);
}

// Single element, one thread. p: weak store (visible at quiet/fence/signal), relaxed at system scope for 2/4/8-byte T,
// plain otherwise (1 byte, 16-byte types); g: relaxed system-scope load for 2/4/8-byte T (sees the latest value
// reaching this GPU), plain load otherwise.
// Through the proxy ring: p posts the value inline (8-byte pieces; complete at quiet), g waits for it.
template <typename T>
TETHER_HD void p(const Handle& h, T* dest, T value, int pe) {
  const detail::Target t = detail::target(h, dest, pe);
  if (!t.ptr) return detail::proxyPutInline(h, pe, t, &value, sizeof(T));
  T* d = reinterpret_cast<T*>(t.ptr);
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)
    detail::storeRelaxed(d, value);
  else
    *d = value;
}
template <typename T>
TETHER_HD T g(const Handle& h, const T* src, int pe) {
  const detail::Target t = detail::target(h, src, pe);
  if (!t.ptr) {
    T v;
    detail::proxyGetInline(h, pe, t, &v, sizeof(T));
    return v;
  }
  const T* s = reinterpret_cast<const T*>(t.ptr);
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) return detail::loadRelaxed(s);
  else return *s;
}

// ================================================================================================================
// Signals (64-bit words in symmetric memory)

namespace detail {
template <Scope S>
TETHER_HD void putSignal(const Handle& h, void* dest, const void* src, size_t nbytes, uint64_t* sig, uint64_t value,
                         SignalOp op, int pe, bool complete) {
  const Target s = target(h, sig, pe);
  const Target d = nbytes ? target(h, dest, pe) : s;
  if (s.ptr && d.ptr) {
    if (nbytes) copyBytes<S>(d.ptr, src, nbytes);
    groupSync<S>();
    if (groupRank<S>() == 0) signalRelease(reinterpret_cast<uint64_t*>(s.ptr), value, op);
    return;
  }
  // Either side proxied: one descriptor, the proxy puts then signals.
  const uint32_t w = proxyOp(TETHER_PROXY_OP_PUT_SIGNAL, d.kind) | static_cast<uint32_t>(s.kind) << 12 |
                     (op == SignalOp::Add ? 1u << 16 : 0u);
  proxyGroupPost<S>(h, w, pe, d.off, nbytes, src, value, s.off, complete);
}
}  // namespace detail

// Put then signal: the group copies, synchronises, and its leader updates pe's *sig with a system-scope release, so
// a PE that observes the new signal value (acquire) sees all nbytes. The _nbi form returns without a final group
// synchronisation (the source may be reused after quiet). Through the proxy ring: one descriptor (the proxy puts,
// then signals); the blocking form returns once it is complete.
template <Scope S = Scope::Thread>
TETHER_HD void putmem_signal_nbi(const Handle& h, void* dest, const void* src, size_t nbytes, uint64_t* sig,
                                 uint64_t value, SignalOp op, int pe) {
  detail::putSignal<S>(h, dest, src, nbytes, sig, value, op, pe, false);
}
template <Scope S = Scope::Thread>
TETHER_HD void putmem_signal(const Handle& h, void* dest, const void* src, size_t nbytes, uint64_t* sig,
                             uint64_t value, SignalOp op, int pe) {
  detail::putSignal<S>(h, dest, src, nbytes, sig, value, op, pe, true);
}
template <Scope S = Scope::Thread, typename T>
TETHER_HD void put_signal(const Handle& h, T* dest, const T* src, size_t nelems, uint64_t* sig, uint64_t value,
                          SignalOp op, int pe) {
  putmem_signal<S>(h, dest, src, nelems * sizeof(T), sig, value, op, pe);
}
template <Scope S = Scope::Thread, typename T>
TETHER_HD void put_signal_nbi(const Handle& h, T* dest, const T* src, size_t nelems, uint64_t* sig, uint64_t value,
                              SignalOp op, int pe) {
  putmem_signal_nbi<S>(h, dest, src, nelems * sizeof(T), sig, value, op, pe);
}
// One thread: release update of pe's *sig (ordered after this thread's earlier stores). Through the proxy ring: a
// descriptor, applied in ring order (complete at quiet).
TETHER_HD void signal_op(const Handle& h, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  const detail::Target t = detail::target(h, sig, pe);
  if (t.ptr)
    detail::signalRelease(reinterpret_cast<uint64_t*>(t.ptr), value, op);
  else
    detail::proxySignal(h, pe, t, value, op);
}
// One thread: rings a doorbell (tether_doorbell_*, armed by the host on this PE): release store of value into this
// PE's doorbell word. The transfers armed behind it then run on copy engines (GPU-triggered, no SMs moving data).
TETHER_HD void ring_doorbell(const Handle& h, uint64_t* word, uint64_t value) {
  signal_op(h, word, value, SignalOp::Set, h.my_pe);
}
// Acquire load of this PE's own signal word.
TETHER_HD uint64_t signal_fetch(const Handle& h, const uint64_t* sig) {
  return detail::loadAcquire(detail::local(h, sig));
}
// Every thread of the scope waits until (*sig cmp value) on this PE (acquire) and gets the value it saw.
template <Scope S = Scope::Thread>
TETHER_HD uint64_t signal_wait_until(const Handle& h, const uint64_t* sig, Cmp c, uint64_t value) {
  return detail::waitValue(h, sig, c, value, "signal_wait_until");
}

// ================================================================================================================
// Point-to-point synchronisation on this PE's own symmetric variables (2/4/8-byte T). Acquire at system scope.

template <Scope S = Scope::Thread, typename T>
TETHER_HD T wait_until(const Handle& h, const T* ivar, Cmp c, T value) {
  return detail::waitValue(h, ivar, c, value, "wait_until");
}
template <typename T>
TETHER_HD bool test(const Handle& h, const T* ivar, Cmp c, T value) {
  return detail::compare(detail::loadAcquire(detail::local(h, ivar)), c, value);
}
// Array forms over ivars[0..n); status (may be null) excludes entries whose status is non-zero.
// test_all: every included entry satisfies. test_any: index of one satisfying entry, or SIZE_MAX.
// test_some: writes the indices of all satisfying entries, returns their count.
template <typename T>
TETHER_HD bool test_all(const Handle& h, const T* ivars, size_t n, const int* status, Cmp c, T value) {
  const T* p = detail::local(h, ivars);
  for (size_t i = 0; i < n; ++i)
    if (!(status && status[i]) && !detail::compare(detail::loadAcquire(p + i), c, value)) return false;
  return true;
}
template <typename T>
TETHER_HD size_t test_any(const Handle& h, const T* ivars, size_t n, const int* status, Cmp c, T value) {
  const T* p = detail::local(h, ivars);
  for (size_t i = 0; i < n; ++i)
    if (!(status && status[i]) && detail::compare(detail::loadAcquire(p + i), c, value)) return i;
  return SIZE_MAX;
}
template <typename T>
TETHER_HD size_t test_some(const Handle& h, const T* ivars, size_t n, const int* status, Cmp c, T value,
                           size_t* indices) {
  const T* p = detail::local(h, ivars);
  size_t count = 0;
  for (size_t i = 0; i < n; ++i)
    if (!(status && status[i]) && detail::compare(detail::loadAcquire(p + i), c, value)) indices[count++] = i;
  return count;
}
namespace detail {
TETHER_HD bool anyIncluded(size_t n, const int* status) {
  for (size_t i = 0; i < n; ++i)
    if (!(status && status[i])) return true;
  return false;
}
TETHER_HD void waitFailed(const Handle& h, const void* ivars, const char* what) {
#if defined(__CUDA_ARCH__)
  printf("tether device API: %s timed out on PE %d over the array at %p\n", what, h.my_pe, ivars);
#else
  std::fprintf(stderr, "tether device API (CPU): %s timed out on PE %d over the array at %p\n", what, h.my_pe,
               ivars);
#endif
  fail("wait timed out (TETHER_TIMEOUT)", ivars, h.my_pe);
}
}  // namespace detail
template <Scope S = Scope::Thread, typename T>
TETHER_HD void wait_until_all(const Handle& h, const T* ivars, size_t n, const int* status, Cmp c, T value) {
  detail::Spin spin(h.timeout_ns);
  while (!test_all(h, ivars, n, status, c, value))
    if (!spin.next()) detail::waitFailed(h, ivars, "wait_until_all");
}
// Returns SIZE_MAX at once when no entry is included.
template <Scope S = Scope::Thread, typename T>
TETHER_HD size_t wait_until_any(const Handle& h, const T* ivars, size_t n, const int* status, Cmp c, T value) {
  if (!detail::anyIncluded(n, status)) return SIZE_MAX;
  detail::Spin spin(h.timeout_ns);
  for (;;) {
    const size_t i = test_any(h, ivars, n, status, c, value);
    if (i != SIZE_MAX) return i;
    if (!spin.next()) detail::waitFailed(h, ivars, "wait_until_any");
  }
}
template <Scope S = Scope::Thread, typename T>
TETHER_HD size_t wait_until_some(const Handle& h, const T* ivars, size_t n, const int* status, Cmp c, T value,
                                 size_t* indices) {
  if (!detail::anyIncluded(n, status)) return 0;
  detail::Spin spin(h.timeout_ns);
  for (;;) {
    const size_t k = test_some(h, ivars, n, status, c, value, indices);
    if (k) return k;
    if (!spin.next()) detail::waitFailed(h, ivars, "wait_until_some");
  }
}

// ================================================================================================================
// Atomics on 32/64-bit words (one thread; relaxed, system scope; see the memory model above). Integer T for all;
// fetch/set/swap also take float and double.

namespace detail {
template <typename T>
TETHER_HD typename BitsOf<sizeof(T)>::type toBits(T v) {
  typename BitsOf<sizeof(T)>::type u;
  memcpy(&u, &v, sizeof u);
  return u;
}
template <typename T, typename U>
TETHER_HD T fromBits(U u) {
  static_assert(sizeof(T) == sizeof(U), "size");
  T v;
  memcpy(&v, &u, sizeof v);
  return v;
}
enum class Rmw { Add, And, Or, Xor, Swap };
template <typename U>
TETHER_HD U rmw(U* p, Rmw op, U v) {
  static_assert(sizeof(U) == 4 || sizeof(U) == 8, "tether device atomics take 32- or 64-bit words");
#if defined(__CUDA_ARCH__)
  using A = typename std::conditional<sizeof(U) == 8, unsigned long long, unsigned int>::type;
  A* a = reinterpret_cast<A*>(p);
  const A x = static_cast<A>(v);
  switch (op) {
    case Rmw::Add: return static_cast<U>(atomicAdd_system(a, x));
    case Rmw::And: return static_cast<U>(atomicAnd_system(a, x));
    case Rmw::Or: return static_cast<U>(atomicOr_system(a, x));
    case Rmw::Xor: return static_cast<U>(atomicXor_system(a, x));
    case Rmw::Swap: return static_cast<U>(atomicExch_system(a, x));
  }
  return 0;
#else
  switch (op) {
    case Rmw::Add: return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    case Rmw::And: return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
    case Rmw::Or: return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
    case Rmw::Xor: return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);
    case Rmw::Swap: return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);
  }
  return 0;
#endif
}
template <typename U>
TETHER_HD U cas(U* p, U cond, U v) {
#if defined(__CUDA_ARCH__)
  using A = typename std::conditional<sizeof(U) == 8, unsigned long long, unsigned int>::type;
  return static_cast<U>(atomicCAS_system(reinterpret_cast<A*>(p), static_cast<A>(cond), static_cast<A>(v)));
#else
  __atomic_compare_exchange_n(p, &cond, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cond;  // the old value either way
#endif
}
TETHER_HD tether_amo_t amoCode(Rmw op, bool fetch) {
  switch (op) {
    case Rmw::Add: return fetch ? TETHER_AMO_FETCH_ADD : TETHER_AMO_ADD;
    case Rmw::And: return fetch ? TETHER_AMO_FETCH_AND : TETHER_AMO_AND;
    case Rmw::Or: return fetch ? TETHER_AMO_FETCH_OR : TETHER_AMO_OR;
    case Rmw::Xor: return fetch ? TETHER_AMO_FETCH_XOR : TETHER_AMO_XOR;
    case Rmw::Swap: return TETHER_AMO_SWAP;
  }
  return TETHER_AMO_COUNT;
}
// fetch: the caller wants the old value (through the proxy ring: wait for it; else post, complete at quiet).
template <typename T>
TETHER_HD T amo(const Handle& h, T* dest, Rmw op, T value, int pe, bool fetch) {
  using U = typename BitsOf<sizeof(T)>::type;
  const Target t = target(h, dest, pe);
  if (!t.ptr)
    return fromBits<T>(static_cast<U>(proxyAmo(h, pe, t, amoCode(op, fetch), sizeof(T), toBits(value), 0, fetch)));
  return fromBits<T>(rmw<U>(reinterpret_cast<U*>(t.ptr), op, toBits(value)));
}
}  // namespace detail

// Through the proxy ring, the fetching forms (fetch, swap, compare_swap, fetch_*) wait for the old value; the others
// (set, add, inc, and, or, xor) are posted and complete at quiet. Ring order keeps them ordered per thread.
template <typename T>
TETHER_HD T atomic_fetch(const Handle& h, const T* dest, int pe) {
  const detail::Target t = detail::target(h, dest, pe);
  if (!t.ptr) {
    using U = typename detail::BitsOf<sizeof(T)>::type;
    return detail::fromBits<T>(static_cast<U>(detail::proxyAmo(h, pe, t, TETHER_AMO_FETCH, sizeof(T), 0, 0, true)));
  }
  return detail::loadRelaxed(reinterpret_cast<const T*>(t.ptr));
}
template <typename T>
TETHER_HD void atomic_set(const Handle& h, T* dest, T value, int pe) {
  const detail::Target t = detail::target(h, dest, pe);
  if (!t.ptr)
    (void)detail::proxyAmo(h, pe, t, TETHER_AMO_SET, sizeof(T), detail::toBits(value), 0, false);
  else
    detail::storeRelaxed(reinterpret_cast<T*>(t.ptr), value);
}
template <typename T>
TETHER_HD T atomic_swap(const Handle& h, T* dest, T value, int pe) {
  return detail::amo(h, dest, detail::Rmw::Swap, value, pe, true);
}
template <typename T>
TETHER_HD T atomic_compare_swap(const Handle& h, T* dest, T cond, T value, int pe) {
  using U = typename detail::BitsOf<sizeof(T)>::type;
  const detail::Target t = detail::target(h, dest, pe);
  if (!t.ptr)
    return detail::fromBits<T>(static_cast<U>(detail::proxyAmo(h, pe, t, TETHER_AMO_COMPARE_SWAP, sizeof(T),
                                                               detail::toBits(value), detail::toBits(cond), true)));
  return detail::fromBits<T>(detail::cas<U>(reinterpret_cast<U*>(t.ptr), detail::toBits(cond), detail::toBits(value)));
}
// fetch_add/add, fetch_inc/inc, fetch_and/and, fetch_or/or, fetch_xor/xor: the fetching form returns the old value.
#define TETHER_DEFINE_AMO_(name, op)                                                 \
  template <typename T>                                                              \
  TETHER_HD T atomic_fetch_##name(const Handle& h, T* dest, T value, int pe) {       \
    return detail::amo(h, dest, detail::Rmw::op, value, pe, true);                   \
  }                                                                                  \
  template <typename T>                                                              \
  TETHER_HD void atomic_##name(const Handle& h, T* dest, T value, int pe) {          \
    (void)detail::amo(h, dest, detail::Rmw::op, value, pe, false);                   \
  }
TETHER_DEFINE_AMO_(add, Add)
TETHER_DEFINE_AMO_(and, And)
TETHER_DEFINE_AMO_(or, Or)
TETHER_DEFINE_AMO_(xor, Xor)
#undef TETHER_DEFINE_AMO_
template <typename T>
TETHER_HD T atomic_fetch_inc(const Handle& h, T* dest, int pe) {
  return detail::amo(h, dest, detail::Rmw::Add, T(1), pe, true);
}
template <typename T>
TETHER_HD void atomic_inc(const Handle& h, T* dest, int pe) {
  (void)detail::amo(h, dest, detail::Rmw::Add, T(1), pe, false);
}

// ================================================================================================================
// Ordering and completion

// Every earlier put/AMO/signal by the scope's threads is complete and visible to all PEs and the host on return.
// With a proxy ring the leader also waits until every ticket taken so far on this GPU (CPU handle: process) is
// complete -- a superset of the group's own descriptors.
template <Scope S = Scope::Thread>
TETHER_HD void quiet(const Handle& h) {
  detail::fenceSc();
  detail::groupSync<S>();
  if (h.proxy_ring) {
    if (detail::groupRank<S>() == 0) detail::proxyQuiet(h);
    detail::groupSync<S>();
  }
}
// Earlier puts/AMOs/signals of this thread are ordered before its later ones, per target PE (and globally here).
// Ring operations need nothing more: the proxy executes descriptors one at a time in ticket order, and a thread's
// later descriptor has a later ticket. Only where one PE has both load/store and proxied segments
// (TETHER_DEVICE_PROXY_MIXED) does fence wait for the ring, so stores after it cannot overtake ring operations.
template <Scope S = Scope::Thread>
TETHER_HD void fence(const Handle& h) {
  detail::fenceAcqRel();
  if (h.flags & TETHER_DEVICE_PROXY_MIXED) detail::proxyQuiet(h);
}

// ================================================================================================================
// Device barrier over all PEs, run by one group per PE (see the memory model above).

namespace detail {

// The leader's part of a barrier of n members (member m = world PE start + m * pstride; this PE is member me), over
// symmetric round words words[i * wstride] that only this barrier uses: up to h.barrier_flat_max members ONE round --
// member me stores epoch into word d - 1 of member me + d for every d in 1 .. n-1, then waits for its own n - 1 words
// (word d - 1 is written only by member me - d) -- above it dissemination, log2(n) rounds of one store and one wait
// (word r only by member me - 2^r). Epochs only grow and each word has one writer, so a stale word never satisfies a
// wait. Each store is signal_op's (a release store, or for a peer that is not load/store reachable a SET signal
// through the ring, after every descriptor this PE posted before).
TETHER_HD void barrierRounds(const Handle& h, int n, int me, int start, int pstride, uint64_t* words, int wstride,
                             uint64_t epoch, const char* what) {
  const bool flat = n <= h.barrier_flat_max;
  for (int d = 1, r = 0; d < n; d = flat ? d + 1 : d << 1, ++r) {
    signal_op(h, words + r * wstride, epoch, SignalOp::Set, start + ((me + d) % n) * pstride);
    if (!flat) (void)waitValue(h, words + r * wstride, Cmp::GE, epoch, what);
  }
  if (flat)
    for (int r = 0; r + 1 < n; ++r) (void)waitValue(h, words + r * wstride, Cmp::GE, epoch, what);
}

}  // namespace detail

// The group's stores reach the leader's fence through the group barrier before it (the fence is cumulative), so one
// fence by the leader publishes them all: on one H200, with 512 threads, a fence by every thread cost ~0.45 us more
// per barrier than the leader's (bench/results/h200/coll_threads_2026-12-04.txt). team_sync does the same.
template <Scope S = Scope::Thread>
TETHER_HD void sync_all(const Handle& h) {
  detail::groupSync<S>();
  if (detail::groupRank<S>() == 0) detail::fenceSc();
  if (detail::groupRank<S>() == 0 && h.n_pes > 1) {
    tether_device_barrier_t* mine = detail::local(h, h.barrier);
    const uint64_t epoch = mine->epoch + 1;  // written by this PE's leader only; ordered by the group barriers
    mine->epoch = epoch;
    detail::barrierRounds(h, h.n_pes, h.my_pe, 0, 1, &h.barrier->round[0].value,
                          static_cast<int>(sizeof(h.barrier->round[0]) / sizeof(uint64_t)), epoch, "device barrier");
  }
  detail::groupSync<S>();
}
template <Scope S = Scope::Thread>
TETHER_HD void barrier_all(const Handle& h) {
  if (h.proxy_ring) quiet<S>(h);  // on load/store paths sync_all's leading fence is the quiet
  sync_all<S>(h);
}

// ================================================================================================================
// Team collectives (issue #21; docs/collectives.md). A team view (tether_team_device_view, by value) names the
// members -- world PE start + m*stride -- and the team's sync words. Every member's group calls the same collective
// in the same order with the same arguments: nothing is checked across members here (the host forms check). Each
// function is collective over the scope like the RMA functions, and blocking: on return dest holds the result for the
// whole group and src may be reused. dest and src are symmetric addresses (as tether_malloc* gave this PE); counts
// are bytes for the data movers, elements for reductions. In-place forms as in tether.h.
// Data movers work on every path the handle reaches (load/store or the proxy ring); reductions read members' src
// with loads, and a member they cannot load (another host, TETHER_FORCE_PROXY) chunk by chunk through the proxy ring
// into this PE's scratch of the team (t.scratch: one get per t.scratch_bytes, so latency-bound). Reductions combine
// in team order (the same bits on every member); integer sum/prod wrap; for floats min/max keep the earlier member's
// value when the comparison is false. Cost: a team sync before (sources ready) and after (sources free again); one-shot
// in-place reductions also sync once per chunk of 8 elements per thread of the group, between reading and writing
// it, so in place every member's group must have the same size (same scope and block/grid size); the two-shot
// allreduce syncs once more, between its halves. At Scope::Grid a group is the whole kernel (cooperative launch).

// 16-bit floating-point elements of the team reductions (TETHER_HALF, TETHER_BFLOAT16): the bits, with conversions
// to and from float (round to nearest even, overflow to infinity, NaN stays NaN), host and device alike. Reductions
// widen to float, combine, and narrow after every step.
TETHER_HD float bitsToFloat(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
TETHER_HD uint32_t floatToBits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}
struct Half {
  uint16_t bits;
  TETHER_HD static float widen(Half h) {
    const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
    const uint32_t e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
    if (e == 31) return bitsToFloat(sign | 0x7f800000u | (m << 13));  // inf, NaN (payload kept)
    if (e != 0) return bitsToFloat(sign | ((e + 112) << 23) | (m << 13));
    if (m == 0) return bitsToFloat(sign);
    // subnormal: m * 2^-24, normalised into a float
    int shift = 0;
    uint32_t mm = m;
    while (!(mm & 0x400u)) mm <<= 1, ++shift;
    return bitsToFloat(sign | ((113 - shift) << 23) | ((mm & 0x3ffu) << 13));
  }
  TETHER_HD static Half narrow(float x) {
    const uint32_t f = floatToBits(x);
    const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
    const uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) return Half{static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x1ffu))};  // NaN
    if (a >= 0x477ff000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};  // >= 65520: infinity
    if (a < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), units of 2^-24, rounded to nearest even
      const uint32_t e = a >> 23;
      if (e < 102) return Half{sign};  // below 2^-25: rounds to zero
      const uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e;  // value * 2^24 = m >> shift
      const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
      return Half{static_cast<uint16_t>(sign | (q + (rem > halfway || (rem == halfway && (q & 1u)))))};
    }
    const uint32_t r = a - 0x38000000u;  // exponent rebiased from 127 to 15
    return Half{static_cast<uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13))};
  }
};
struct BFloat16 {
  uint16_t bits;
  TETHER_HD static float widen(BFloat16 h) { return bitsToFloat(static_cast<uint32_t>(h.bits) << 16); }
  TETHER_HD static BFloat16 narrow(float x) {
    const uint32_t f = floatToBits(x);
    if ((f & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((f >> 16) | 0x40u)};  // quiet NaN
    return BFloat16{static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16)};
  }
};

using Team = tether_device_team_t;
enum class RedOp : int { Sum = TETHER_RED_SUM, Prod = TETHER_RED_PROD, Min = TETHER_RED_MIN, Max = TETHER_RED_MAX,
                         And = TETHER_RED_AND, Or = TETHER_RED_OR, Xor = TETHER_RED_XOR };

TETHER_HD int team_my_pe(const Team& t) { return t.my_pe; }
TETHER_HD int team_n_pes(const Team& t) { return t.n_pes; }
TETHER_HD int team_world_pe(const Team& t, int m) { return t.start + m * t.stride; }

// Barrier over the members (one group per PE; one round up to h.barrier_flat_max members, else dissemination: see
// detail::barrierRounds), like sync_all: stores before it by any thread of the group on any member are visible to
// every member's group after it.
template <Scope S = Scope::Thread>
TETHER_HD void team_sync(const Handle& h, const Team& t) {
  detail::groupSync<S>();
  if (detail::groupRank<S>() == 0) detail::fenceSc();  // the group's stores, through the barrier (see sync_all)
  if (detail::groupRank<S>() == 0 && t.n_pes > 1) {
    uint64_t* mine = detail::local(h, t.sync);
    const uint64_t epoch = mine[0] + 1;  // this PE's leader only; ordered by the group barriers
    mine[0] = epoch;
    detail::barrierRounds(h, t.n_pes, t.my_pe, t.start, t.stride, t.sync + 1, 1, epoch, "device team sync");
  }
  detail::groupSync<S>();
}

// dest = src of team PE root, on every member (root too; dest == src: in place).
// By host (t.host_run > 0: the team spans hosts in runs of host_run consecutive members, tether.h; from
// kBroadcastByHostMin bytes): the members of the root's host and the first member of every other host read the
// root's src; each of those first members then signals the others of its host (the word after the sync rounds,
// t.sync[1 + TETHER_DEVICE_TEAM_ROUNDS], set to this call's epoch), which read its dest instead: one crossing per
// other host instead of one per member there.
// Below kBroadcastByHostMin the hop on the receiving host costs more than the crossings it saves: on the 2-core VM
// across two netns hosts (CPU handles, bench/results/cpu-2core-vm/coll_device_by_host_ab.txt) by host took 0.83-1.36x
// the time at 4 PEs up to 2 KiB, 0.75-0.94x from 16 KiB (8 PEs 0.80-1.01x: the team syncs dominate there). Not
// calibrated on GPUs across hosts (none lent).
constexpr size_t kBroadcastByHostMin = 16384;
template <Scope S = Scope::Thread>
TETHER_HD void team_broadcast(const Handle& h, const Team& t, void* dest, const void* src, size_t nbytes, int root) {
  team_sync<S>(h, t);
  char* mine = detail::local(h, static_cast<char*>(dest));
  const int run = t.host_run;
  if (run > 0 && nbytes >= kBroadcastByHostMin && t.my_pe / run != root / run) {  // a host other than the root's
    const int first = t.my_pe - t.my_pe % run;
    uint64_t* flag = t.sync + 1 + TETHER_DEVICE_TEAM_ROUNDS;
    if (t.my_pe == first) {
      detail::getBytes<S>(h, mine, src, nbytes, team_world_pe(t, root), true);
      detail::groupSync<S>();  // the whole group's part of dest is in place
      if (detail::groupRank<S>() == 0) {
        detail::fenceSc();
        const uint64_t epoch = detail::local(h, t.sync)[0];  // this call's (the team_sync above)
        for (int m = first + 1; m < first + run; ++m) signal_op(h, flag, epoch, SignalOp::Set, team_world_pe(t, m));
      }
    } else {
      if (detail::groupRank<S>() == 0)
        (void)detail::waitValue(h, flag, Cmp::GE, detail::local(h, t.sync)[0], "device team broadcast");
      detail::groupSync<S>();
      detail::getBytes<S>(h, mine, dest, nbytes, team_world_pe(t, first), true);
    }
  } else if (t.my_pe != root || dest != src) {
    detail::getBytes<S>(h, mine, src, nbytes, team_world_pe(t, root), true);
  }
  team_sync<S>(h, t);
}

// Block m (nbytes) of dest = src of team PE m. In place: src == dest + my_pe * nbytes.
template <Scope S = Scope::Thread>
TETHER_HD void team_allgather(const Handle& h, const Team& t, void* dest, const void* src, size_t nbytes) {
  char* d = detail::local(h, static_cast<char*>(dest));
  const bool inPlace = static_cast<const char*>(src) == static_cast<char*>(dest) + t.my_pe * nbytes;
  team_sync<S>(h, t);
  for (int k = 1; k <= t.n_pes; ++k) {  // starting after this PE: not everyone reads member 0 first
    const int m = (t.my_pe + k) % t.n_pes;
    if (m == t.my_pe && inPlace) continue;
    const void* from = inPlace ? static_cast<const void*>(static_cast<char*>(dest) + m * nbytes) : src;
    detail::getBytes<S>(h, d + m * nbytes, from, nbytes, team_world_pe(t, m), true);
  }
  team_sync<S>(h, t);
}

// Block m (nbytes) of dest = block my_pe of team PE m's src. dest and src must not overlap.
template <Scope S = Scope::Thread>
TETHER_HD void team_alltoall(const Handle& h, const Team& t, void* dest, const void* src, size_t nbytes) {
  char* d = detail::local(h, static_cast<char*>(dest));
  team_sync<S>(h, t);
  for (int k = 1; k <= t.n_pes; ++k) {
    const int m = (t.my_pe + k) % t.n_pes;
    detail::getBytes<S>(h, d + m * nbytes, static_cast<const char*>(src) + t.my_pe * nbytes, nbytes,
                        team_world_pe(t, m), true);
  }
  team_sync<S>(h, t);
}

namespace detail {
template <typename T>
constexpr bool kNarrowFloat = std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value;

template <typename T>
TETHER_HD T redApply(RedOp op, T a, T b) {
  if constexpr (kNarrowFloat<T>) {
    const float x = T::widen(a), y = T::widen(b);
    switch (op) {
      case RedOp::Sum: return T::narrow(x + y);
      case RedOp::Prod: return T::narrow(x * y);
      case RedOp::Min: return y < x ? b : a;
      default: return y > x ? b : a;  // Max (bitwise ops take integer types)
    }
  } else if constexpr (std::is_integral<T>::value) {
    using U = typename std::conditional<(sizeof(T) < sizeof(unsigned)), unsigned, typename std::make_unsigned<T>::type>::type;
    switch (op) {
      case RedOp::Sum: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case RedOp::Prod: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case RedOp::Min: return b < a ? b : a;
      case RedOp::Max: return b > a ? b : a;
      case RedOp::And: return static_cast<T>(a & b);
      case RedOp::Or: return static_cast<T>(a | b);
      default: return static_cast<T>(a ^ b);
    }
  } else {
    switch (op) {
      case RedOp::Sum: return a + b;
      case RedOp::Prod: return a * b;
      case RedOp::Min: return b < a ? b : a;
      default: return b > a ? b : a;  // Max (bitwise ops take integer types)
    }
  }
}

// 16-byte vectors per thread and chunk of detail::teamReduce: 4, but at most 32 elements (each element of the chunk
// is a register: 4 vectors of 1- and 2-byte types spilled, ptxas --resource-usage, CUDA 13, 2026-12-03).
template <typename T>
constexpr size_t kReduceVecs = 4 * (16 / sizeof(T)) <= 32 ? 4 : 32 / (16 / sizeof(T));
// Elements per thread and chunk of detail::teamReduceShort.
constexpr size_t kReduceShortElems = 8;

// 16 bytes of T between p (16-byte aligned) and e[0 .. 16 / sizeof(T)): one vector load or store on the GPU.
#if defined(__CUDA_ARCH__)
template <typename T>
union Lanes16 {
  int4 q;
  T e[16 / sizeof(T)];
};
#endif
template <typename T>
TETHER_HD void load16(T* e, const T* p) {
#if defined(__CUDA_ARCH__)
  Lanes16<T> x;
  x.q = *reinterpret_cast<const int4*>(p);
  TETHER_UNROLL
  for (size_t k = 0; k < 16 / sizeof(T); ++k) e[k] = x.e[k];
#else
  memcpy(e, p, 16);
#endif
}
template <typename T>
TETHER_HD void store16(T* p, const T* e) {
#if defined(__CUDA_ARCH__)
  Lanes16<T> x;
  TETHER_UNROLL
  for (size_t k = 0; k < 16 / sizeof(T); ++k) x.e[k] = e[k];
  *reinterpret_cast<int4*>(p) = x.q;
#else
  memcpy(p, e, 16);
#endif
}

// teamReduce where a member cannot be loaded (ptr() is null: another host, TETHER_FORCE_PROXY). The same chunks as the
// loop the loaded path takes (Chunk elements per thread: in place, the per-chunk team syncs match whichever path
// each member takes), elements at the group's stride. Each chunk of a member it cannot load is pulled through the
// proxy ring into this PE's scratch (t.scratch, t.scratch_bytes per pull: the group posts one get and waits for
// it, every thread reads its elements of it, a group sync before the next pull rewrites it), then combined in team
// order like the loaded members' elements. One get per scratch's worth of each such member and chunk.
template <size_t Chunk, Scope S, typename T>
TETHER_HD_OUTLINE void teamReduceStaged(const Handle& h, const Team& t, T* d, const T* src, size_t count, RedOp op,
                                        bool syncChunks) {
  const size_t rank = static_cast<size_t>(groupRank<S>()), size = static_cast<size_t>(groupSize<S>());
  const size_t per = t.scratch ? static_cast<size_t>(t.scratch_bytes) / sizeof(T) : 0;  // elements per pull
  if (per == 0) fail("team reduction with a proxied member: the team view has no scratch", src, h.my_pe);
  T* scratch = local(h, static_cast<T*>(t.scratch));
  for (size_t base = 0; base < count; base += size * Chunk) {
    const size_t end = base + size * Chunk < count ? base + size * Chunk : count;
    T r[Chunk] = {};
    for (int m = 0; m < t.n_pes; ++m) {
      const int pe = team_world_pe(t, m);
      if (const T* p = ptr(h, src, pe)) {
        for (size_t j = 0; j < Chunk; ++j) {
          const size_t i = base + j * size + rank;
          if (i >= count) break;
          r[j] = m == 0 ? p[i] : redApply(op, r[j], p[i]);
        }
        continue;
      }
      for (size_t lo = base; lo < end; lo += per) {
        const size_t hi = lo + per < end ? lo + per : end;
        getBytes<S>(h, scratch, src + lo, (hi - lo) * sizeof(T), pe, true);
        groupSync<S>();  // the whole pull is there for every thread (getBytes' load/store path does not sync)
        for (size_t j = 0; j < Chunk; ++j) {
          const size_t i = base + j * size + rank;
          if (i >= hi) break;
          if (i >= lo) r[j] = m == 0 ? scratch[i - lo] : redApply(op, r[j], scratch[i - lo]);
        }
        groupSync<S>();  // every thread has read the scratch before the next pull rewrites it
      }
    }
    if (syncChunks) team_sync<S>(h, t);  // every member has read this chunk before anyone overwrites it
    for (size_t j = 0; j < Chunk; ++j) {
      const size_t i = base + j * size + rank;
      if (i >= count) break;
      d[i] = r[j];
    }
  }
}

// teamReduce's chunks, Vec: by 16-byte vectors (every address 16-byte aligned), else by elements. src: the members'
// first element.
template <bool Vec, Scope S, typename T>
TETHER_HD void teamReduceChunks(const Handle& h, const Team& t, T* d, const T* src, size_t count, RedOp op,
                                bool syncChunks) {
  constexpr size_t V = 16 / sizeof(T), E = kReduceVecs<T> * V, step = Vec ? V : 1;  // E: per thread and chunk
  const size_t rank = static_cast<size_t>(groupRank<S>()), size = static_cast<size_t>(groupSize<S>());
  for (size_t base = 0; base < count; base += size * E) {
    T r[E] = {};
    // Member by member (team order), each member's address translated once per chunk and its loads independent (in
    // flight together), not one translation and one dependent load per element and member.
    for (int m = 0; m < t.n_pes; ++m) {
      const T* p = ptr(h, src, team_world_pe(t, m));
      TETHER_UNROLL
      for (size_t j = 0; j < E; j += step) {
        const size_t i = Vec ? base + ((j / V) * size + rank) * V : base + j * size + rank;
        if (i >= count) break;
        if constexpr (Vec) {
          // Loops of constant trip count with the end as a condition: a run-time bound would index x and r at run
          // time and put them in local memory (measured on one H200: +1.6 us per call at 8 B, 2026-12-03).
          T x[V] = {};
          const size_t nx = i + V <= count ? V : count - i;  // a vector cut by the end: element by element
          if (nx == V) {
            load16(x, p + i);
          } else {
            TETHER_UNROLL
            for (size_t k = 0; k < V; ++k)
              if (k < nx) x[k] = p[i + k];
          }
          TETHER_UNROLL
          for (size_t k = 0; k < V; ++k)
            if (k < nx) r[j + k] = m == 0 ? x[k] : redApply(op, r[j + k], x[k]);
        } else {
          r[j] = m == 0 ? p[i] : redApply(op, r[j], p[i]);
        }
      }
    }
    // Every member has read this chunk before anyone overwrites it (within the group, each thread reads and writes
    // only its own elements).
    if (syncChunks) team_sync<S>(h, t);
    TETHER_UNROLL
    for (size_t j = 0; j < E; j += step) {
      const size_t i = Vec ? base + ((j / V) * size + rank) * V : base + j * size + rank;
      if (i >= count) break;
      if constexpr (Vec) {
        const size_t nx = i + V <= count ? V : count - i;
        if (nx == V) {
          store16(d + i, r + j);
        } else {
          TETHER_UNROLL
          for (size_t k = 0; k < V; ++k)
            if (k < nx) d[i + k] = r[j + k];
        }
      } else {
        d[i] = r[j];
      }
    }
  }
}

// teamReduce below one chunk of the vector loop: 8 elements per thread at the group's stride, loops not unrolled (a
// short path of code: at 8 B .. 8 KiB on one H200 the unrolled loops took ~1 us more per call, 2026-12-03).
template <Scope S, typename T>
TETHER_HD void teamReduceShort(const Handle& h, const Team& t, T* d, const T* src, size_t count, RedOp op,
                               bool syncChunks) {
  constexpr int K = static_cast<int>(kReduceShortElems);
  const size_t rank = static_cast<size_t>(groupRank<S>()), size = static_cast<size_t>(groupSize<S>());
  for (size_t base = 0; base < count; base += size * K) {
    T r[K] = {};
    for (int m = 0; m < t.n_pes; ++m) {
      const T* p = ptr(h, src, team_world_pe(t, m));
      if (!p) fail("team reduction: a member is not reachable by loads", src, h.my_pe);  // teamReduce checked
      for (int j = 0; j < K; ++j) {
        const size_t i = base + static_cast<size_t>(j) * size + rank;
        if (i >= count) break;
        r[j] = m == 0 ? p[i] : redApply(op, r[j], p[i]);
      }
    }
    if (syncChunks) team_sync<S>(h, t);
    for (int j = 0; j < K; ++j) {
      const size_t i = base + static_cast<size_t>(j) * size + rank;
      if (i >= count) break;
      d[i] = r[j];
    }
  }
}

// dest[i] = op over the members' src[first + i], i < count, in team order; the group splits the elements. Callers
// synchronise the team before (sources ready) and after (sources free).
// chunkSync: in place, synchronise the team between reading and writing each chunk (all members call with the same
// count and group size); false when no other member reads dest's elements (the rooted reduce).
// Work in chunks of group size x kReduceVecs x V elements (V: 16 bytes of T). Where dest and every member's source
// start on a 16-byte boundary, each thread takes kReduceVecs 16-byte vectors of the chunk (on the GPU one load each,
// all in flight together, as the movers' copies); otherwise kReduceVecs x V elements at the group's stride. Both walk
// the same chunks: the per-chunk team syncs of the in-place form must match across members, whose alignment can
// differ (reduce_scatter's first). Below one chunk per thread: teamReduceShort. A member that cannot be loaded:
// teamReduceStaged, on the chunks of the loop it replaces.
template <Scope S, typename T>
TETHER_HD_OUTLINE void teamReduce(const Handle& h, const Team& t, T* dest, const T* src, size_t first, size_t count,
                                  RedOp op, bool chunkSync = true) {
  static_assert(std::is_arithmetic<T>::value || kNarrowFloat<T>,
                "team reductions take integer, floating-point, Half and BFloat16 element types");
  static_assert(16 % sizeof(T) == 0, "element sizes divide 16 bytes");
  if (!std::is_integral<T>::value && (op == RedOp::And || op == RedOp::Or || op == RedOp::Xor))
    fail("bitwise team reduction on a floating-point type", src, h.my_pe);
  T* d = local(h, dest);
  const uintptr_t db = reinterpret_cast<uintptr_t>(dest), sb = reinterpret_cast<uintptr_t>(src + first);
  const bool syncChunks = chunkSync && db < sb + count * sizeof(T) && sb < db + count * sizeof(T);
  // The choice of loop depends on count and the group's size (the same on every member), then on this member's
  // alignment (both loops of teamReduceChunks walk the same chunks).
  const bool shortLoop = count < static_cast<size_t>(groupSize<S>()) * kReduceVecs<T> * (16 / sizeof(T));
  // Members it cannot load (only where the handle has a proxy ring): the staged loop, on the same chunks. Decided
  // here, before the loops, so that they hold no call (a call inside them made ptxas spill around it: the float
  // reductions' kernel 576 -> 896 bytes of stack, CUDA 13, sm_90, 2026-12-05).
  if (h.proxy_ring)
    for (int m = 0; m < t.n_pes; ++m)
      if (!ptr(h, src + first, team_world_pe(t, m)))
        return shortLoop ? teamReduceStaged<kReduceShortElems, S>(h, t, d, src + first, count, op, syncChunks)
                         : teamReduceStaged<kReduceVecs<T> * (16 / sizeof(T)), S>(h, t, d, src + first, count, op,
                                                                                   syncChunks);
  if (shortLoop) return teamReduceShort<S>(h, t, d, src + first, count, op, syncChunks);
  uintptr_t phase = reinterpret_cast<uintptr_t>(d);
  for (int m = 0; m < t.n_pes; ++m) {
    const T* p = ptr(h, src + first, team_world_pe(t, m));
    if (!p) fail("team reduction: a member is not reachable by loads", src, h.my_pe);  // checked above
    phase |= reinterpret_cast<uintptr_t>(p);
  }
  if ((phase & 15) == 0)
    teamReduceChunks<true, S>(h, t, d, src + first, count, op, syncChunks);
  else
    teamReduceChunks<false, S>(h, t, d, src + first, count, op, syncChunks);
}
}  // namespace detail

// How team_allreduce combines. OneShot: every member reads every member's whole src (n - 1 remote reads of the
// vector per member, no sync between reading and writing out of place). TwoShot: member m combines slice m of the
// elements into its own dest (reduce-scatter), a team sync, then every member reads the other slices from their
// owners' dest (allgather): 2 (n - 1) / n remote reads of the vector per member and one more team sync; in place it
// needs no per-chunk syncs (each slice of src is written only by its owner, after every member has read it).
// Auto: TwoShot from kTwoShotMinBytes with 3 or more members (2 members read the same amount either way).
enum class ReduceAlgo : int { Auto = 0, OneShot = 1, TwoShot = 2 };
constexpr size_t kTwoShotMinBytes = 256 * 1024;

// dest[i] = op over every member's src[i], i < count, on every member. In place: dest == src.
template <Scope S = Scope::Thread, typename T>
TETHER_HD void team_allreduce(const Handle& h, const Team& t, T* dest, const T* src, size_t count, RedOp op,
                              ReduceAlgo algo = ReduceAlgo::Auto) {
  if (algo == ReduceAlgo::Auto)
    algo = t.n_pes >= 3 && count * sizeof(T) >= kTwoShotMinBytes ? ReduceAlgo::TwoShot : ReduceAlgo::OneShot;
  team_sync<S>(h, t);
  if (algo == ReduceAlgo::OneShot || t.n_pes == 1) {
    detail::teamReduce<S>(h, t, dest, src, 0, count, op);
  } else {
    // Member m owns elements [lo(m), lo(m + 1)): count / n each, the first count % n members one more.
    const size_t n = static_cast<size_t>(t.n_pes), q = count / n, r = count % n;
    auto lo = [&](size_t m) { return m * q + (m < r ? m : r); };
    const size_t me = static_cast<size_t>(t.my_pe);
    detail::teamReduce<S>(h, t, dest + lo(me), src, lo(me), lo(me + 1) - lo(me), op, false);
    team_sync<S>(h, t);  // every slice is combined in its owner's dest
    T* d = detail::local(h, dest);
    for (size_t k = 1; k < n; ++k) {  // starting after this member: not everyone reads member 0 first
      const size_t m = (me + k) % n;
      const int pe = team_world_pe(t, static_cast<int>(m));
      detail::getBytes<S>(h, d + lo(m), dest + lo(m), (lo(m + 1) - lo(m)) * sizeof(T), pe, true);
    }
  }
  team_sync<S>(h, t);
}

// dest[i] of team PE root = op over every member's src[i], i < count; other members' dest untouched. In place:
// dest == src.
template <Scope S = Scope::Thread, typename T>
TETHER_HD void team_reduce(const Handle& h, const Team& t, T* dest, const T* src, size_t count, RedOp op, int root) {
  team_sync<S>(h, t);
  if (t.my_pe == root) detail::teamReduce<S>(h, t, dest, src, 0, count, op, false);
  team_sync<S>(h, t);
}

// dest[i] = op over every member's src[my_pe * count + i], i < count (src holds n_pes * count elements). In place:
// dest == src + my_pe * count.
template <Scope S = Scope::Thread, typename T>
TETHER_HD void team_reduce_scatter(const Handle& h, const Team& t, T* dest, const T* src, size_t count, RedOp op) {
  team_sync<S>(h, t);
  detail::teamReduce<S>(h, t, dest, src, static_cast<size_t>(t.my_pe) * count, count, op);
  team_sync<S>(h, t);
}

#if defined(__CUDACC__)
// Whole-grid barrier over all PEs: every thread of a kernel started with launch_cooperative calls it.
__device__ __forceinline__ void sync_all_grid(const Handle& h) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  detail::fenceSc();
  grid.sync();
  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) sync_all<Scope::Block>(h);
  grid.sync();
}
__device__ __forceinline__ void barrier_all_grid(const Handle& h) {
  if (h.proxy_ring) {  // every block posted its descriptors before the grid barrier: one quiet covers them all
    cooperative_groups::this_grid().sync();
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) quiet<Scope::Block>(h);
  }
  sync_all_grid(h);
}

// Launches kernel with every block co-resident (cooperative launch), as sync_all_grid needs. Fails with
// cudaErrorCooperativeLaunchTooLarge when the grid cannot be resident at once.
template <typename... Params, typename... Args>
cudaError_t launch_cooperative(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                               Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<Args&&>(args)...);
}
#endif

}  // namespace device
}  // namespace tether
