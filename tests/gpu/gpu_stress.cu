// Randomized multi-PE stress of host, stream and device operations, every round verified (issue #24).
//
// Every PE derives every PE's plan for round r from (seed, r, pe), so each PE knows what it must receive without any
// extra messages. In a round every PE issues one operation to a random other PE:
//   model: host (tether_put/put_signal/get/atomic), stream (the _on_stream forms on the PE's own stream) or device
//          (a kernel of thread, warp or block scope calling tether::device);
//   op:    put, put_signal (signal SET to the running count of that source's signals: single writer per word),
//          get, atomic add on the target's counter;
//   into the round's segment kind (DEVICE or HOST), 1 B .. 64 KiB at a random misaligned offset, with the local
//   buffer in GPU or pageable host memory (host model) or GPU memory (stream, device).
// Then every target waits for the signals due to it and checks those bytes at once (data before signal), the round
// ends with a barrier chosen at random (host barrier_all, the stream barrier, or the device API's barrier in a
// kernel) after the issuers completed their operations, and every PE checks every byte put into its inbox and every
// byte it got. Counters are checked every 16 rounds against the sums every PE computes from the plans.
// Runs for GPU_STRESS_SECONDS (default 20) with seed GPU_STRESS_SEED (default: time-based, always printed). On a
// mismatch it prints the seed, round, source, operation, the first bad byte, and exits 1.
#include <cuda_runtime.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_util.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using dev::Scope;

namespace {

constexpr size_t kSlot = 64 * 1024;  // bytes per inbox slot (one per source PE) and per get source
enum Model { kHost = 0, kStream, kDevice, kModels };
enum Op { kPut = 0, kPutSignal, kGet, kAmo, kOps };
const char* kModelName[] = {"host", "stream", "device"};
const char* kOpName[] = {"put", "put_signal", "get", "atomic_add"};
const char* kScopeName[] = {"thread", "warp", "block"};

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
unsigned char pattern(uint64_t salt, size_t i) { return static_cast<unsigned char>(mix(salt ^ (i * 0x2545f4914f6cdd1dull)) >> 17); }

struct Plan {
  int target, model, op, scope, hostLocalOnGpu;
  size_t off, bytes;
  uint64_t add;
};

// Round r's segment kind (0 DEVICE, 1 HOST) and barrier flavour (0 host, 1 stream, 2 device), same on every PE.
int roundKind(uint64_t seed, long r) { return static_cast<int>(mix(seed ^ (static_cast<uint64_t>(r) << 20)) % 2); }
int roundBarrier(uint64_t seed, long r) { return static_cast<int>(mix(seed + 77 + static_cast<uint64_t>(r)) % 3); }

Plan planFor(uint64_t seed, long r, int pe, int n, bool deviceHostAtomics, int kind) {
  uint64_t x = mix(seed * 31 + static_cast<uint64_t>(r) * 0x100000001b3ull + static_cast<uint64_t>(pe) * 7919);
  auto take = [&x](uint64_t m) {
    x = mix(x);
    return x % m;
  };
  Plan p{};
  p.target = static_cast<int>((static_cast<uint64_t>(pe) + 1 + take(static_cast<uint64_t>(n - 1))) % static_cast<uint64_t>(n));
  p.model = static_cast<int>(take(kModels));
  p.op = static_cast<int>(take(kOps));
  p.scope = static_cast<int>(take(3));
  p.hostLocalOnGpu = static_cast<int>(take(2));
  p.off = take(64);
  const size_t cap = size_t{1} << take(17);  // log-uniform sizes 1 B .. 64 KiB
  p.bytes = 1 + take(cap);
  if (p.off + p.bytes > kSlot) p.bytes = kSlot - p.off;
  p.add = 1 + take(1000);
  // GPU atomics on HOST words are atomic only with host-native atomics (device.cuh): take the host model there.
  if (p.op == kAmo && p.model == kDevice && kind == 1 && !deviceHostAtomics) p.model = kHost;
  return p;
}

uint64_t saltFor(uint64_t seed, long r, int pe) { return mix(seed ^ mix(static_cast<uint64_t>(r) * 1000003u + static_cast<uint64_t>(pe))); }
uint64_t srcSalt(uint64_t seed, int pe) { return mix(seed * 17 + static_cast<uint64_t>(pe) + 12345); }

template <Scope S>
__global__ void devOp(dev::Handle h, int op, void* dst, const void* src, size_t bytes, uint64_t* sig, uint64_t sigVal,
                      uint64_t* ctr, uint64_t add, int pe) {
  switch (op) {
    case kPut: dev::putmem<S>(h, dst, src, bytes, pe); break;
    case kPutSignal: dev::putmem_signal<S>(h, dst, src, bytes, sig, sigVal, dev::SignalOp::Set, pe); break;
    case kGet: dev::getmem<S>(h, dst, src, bytes, pe); break;
    default:
      if (dev::detail::groupRank<S>() == 0) dev::atomic_add(h, ctr, add, pe);
      break;
  }
  dev::quiet(h);
}

__global__ void devBarrier(dev::Handle h) { dev::barrier_all<Scope::Block>(h); }

struct Seg {  // one segment kind's symmetric buffers
  tether_seg_kind_t kind;
  unsigned char* inbox;  // 2n slots of kSlot: in round r, slot (r % 2) * n + q is written by source q
  unsigned char* src;    // kSlot bytes, pattern(srcSalt(me)): what gets read
  uint64_t* sig;         // n words, word q = count of q's put_signals so far
  uint64_t* ctr;         // the atomic counter
};

void readSym(const Seg& s, void* dst, const void* sym, size_t n) {
  if (s.kind == TETHER_SEG_DEVICE) CK(cudaMemcpy(dst, sym, n, cudaMemcpyDeviceToHost));
  else std::memcpy(dst, sym, n);
}

[[noreturn]] void mismatch(int me, uint64_t seed, long r, int src, const Plan& p, const char* what, size_t at,
                           unsigned got, unsigned want) {
  std::fprintf(stderr,
               "FAIL PE %d: seed %" PRIu64 " round %ld: %s from PE %d (%s %s, %s scope, %s, %zu B at offset %zu): "
               "byte %zu is 0x%02x, expected 0x%02x\n",
               me, seed, r, what, src, kModelName[p.model], kOpName[p.op], kScopeName[p.scope],
               roundKind(seed, r) ? "HOST" : "DEVICE", p.bytes, p.off, at, got, want);
  std::exit(1);
}

}  // namespace

int main() {
  int ndev = 0;
  if (!gpu_test::initWithGpu(&ndev)) return 77;
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  MP_CHECK(n >= 2);
  CK(cudaSetDevice(tether_local_pe(w) % ndev));
  int devId = 0, hostAtomics = 0;
  CK(cudaGetDevice(&devId));
  CK(cudaDeviceGetAttribute(&hostAtomics, cudaDevAttrHostNativeAtomicSupported, devId));
  // Symmetric buffers: one set per segment kind, plus a HOST control word area (seed, stop flag).
  Seg seg[2];
  for (int k = 0; k < 2; ++k) {
    Seg& g = seg[k];
    g.kind = k == 0 ? TETHER_SEG_DEVICE : TETHER_SEG_HOST;
    g.inbox = static_cast<unsigned char*>(gpu_test::symAlloc(w, g.kind, 2 * kSlot * static_cast<size_t>(n)));
    g.src = static_cast<unsigned char*>(gpu_test::symAlloc(w, g.kind, kSlot));
    g.sig = static_cast<uint64_t*>(gpu_test::symAlloc(w, g.kind, sizeof(uint64_t) * static_cast<size_t>(n)));
    g.ctr = static_cast<uint64_t*>(gpu_test::symAlloc(w, g.kind, sizeof(uint64_t)));
  }
  auto* ctl = static_cast<uint64_t*>(gpu_test::symAlloc(w, TETHER_SEG_HOST, 2 * sizeof(uint64_t)));
  ctl[0] = ctl[1] = 0;

  // The seed: GPU_STRESS_SEED, else PE 0's clock, sent to every PE (printed by PE 0).
  const char* es = std::getenv("GPU_STRESS_SEED");
  uint64_t seed = es ? std::strtoull(es, nullptr, 10)
                     : static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  MP_OK(tether_barrier_all(w));
  if (me == 0)
    for (int pe = 0; pe < n; ++pe) MP_OK(tether_put(w, &ctl[0], &seed, sizeof seed, pe));
  MP_OK(tether_barrier_all(w));
  seed = ctl[0];
  const char* ed = std::getenv("GPU_STRESS_SECONDS");
  const double seconds = ed ? std::atof(ed) : 20.0;
  if (me == 0)
    std::printf("gpu_stress: %d PEs, seed %" PRIu64 " (set GPU_STRESS_SEED to repeat), %.0f s, host-native atomics "
                "%d\n", n, seed, seconds, hostAtomics);

  std::vector<unsigned char> srcBytes(kSlot), buf(kSlot), hostLocal(kSlot);
  for (size_t i = 0; i < kSlot; ++i) srcBytes[i] = pattern(srcSalt(seed, me), i);
  for (int k = 0; k < 2; ++k) {
    Seg& g = seg[k];
    std::vector<uint64_t> zeros(static_cast<size_t>(n) + 1, 0);
    if (g.kind == TETHER_SEG_DEVICE) {
      gpu_test::copyLanded(g.src, srcBytes.data(), kSlot);
      gpu_test::copyLanded(g.sig, zeros.data(), sizeof(uint64_t) * static_cast<size_t>(n));
      gpu_test::copyLanded(g.ctr, zeros.data(), sizeof(uint64_t));
    } else {
      std::memcpy(g.src, srcBytes.data(), kSlot);
      std::memset(g.sig, 0, sizeof(uint64_t) * static_cast<size_t>(n));
      *g.ctr = 0;
    }
  }
  unsigned char* devLocal = nullptr;
  CK(cudaMalloc(&devLocal, kSlot));
  cudaStream_t st = nullptr;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  tether_device_handle_t h;
  MP_OK(tether_device_handle(w, &h));  // after the last allocation
  MP_OK(tether_barrier_all(w));

  // What every PE expects: signal counts per (kind, source) on me, counter sums per kind on every PE.
  std::vector<uint64_t> sigCount(2 * static_cast<size_t>(n), 0), ctrSum(2 * static_cast<size_t>(n), 0);
  long counts[kModels][kOps] = {};
  double bytesMoved = 0;
  std::vector<Plan> plans(static_cast<size_t>(n));
  const auto t0 = std::chrono::steady_clock::now();
  long r = 0;
  for (;; ++r) {
    const int k = roundKind(seed, r);
    Seg& g = seg[k];
    for (int pe = 0; pe < n; ++pe) plans[static_cast<size_t>(pe)] = planFor(seed, r, pe, n, hostAtomics != 0, k);
    const Plan& mine = plans[static_cast<size_t>(me)];
    const int t = mine.target;
    // This PE's operation.
    for (size_t i = 0; i < mine.bytes; ++i) buf[i] = pattern(saltFor(seed, r, me), i);
    const bool localOnGpu = mine.model != kHost || mine.hostLocalOnGpu;
    unsigned char* local = localOnGpu ? devLocal : hostLocal.data();
    if (mine.op != kGet) {
      if (localOnGpu) gpu_test::copyLanded(devLocal, buf.data(), mine.bytes);
      else std::memcpy(hostLocal.data(), buf.data(), mine.bytes);
    } else if (localOnGpu) {
      CK(cudaMemset(devLocal, 0xEE, mine.bytes));
    } else {
      std::memset(hostLocal.data(), 0xEE, mine.bytes);
    }
    CK(cudaDeviceSynchronize());
    // Round parity picks the inbox half: a PE that leaves round r's barrier early may already put its round r+1
    // data while the target still checks round r's; round r+2 starts only after everyone's round r+1 barrier.
    unsigned char* const half = g.inbox + static_cast<size_t>(r % 2) * static_cast<size_t>(n) * kSlot;
    unsigned char* dst = half + static_cast<size_t>(me) * kSlot + mine.off;
    uint64_t* sigWord = g.sig + me;
    const uint64_t sigVal = mine.op == kPutSignal ? ++sigCount[static_cast<size_t>(k * n + me)] : 0;
    for (int pe = 0; pe < n; ++pe) {  // everybody's counters and signal counts (the targets' view)
      const Plan& p = plans[static_cast<size_t>(pe)];
      if (p.op == kAmo) ctrSum[static_cast<size_t>(k * n + p.target)] += p.add;
      if (pe != me && p.op == kPutSignal) ++sigCount[static_cast<size_t>(k * n + pe)];
    }
    switch (mine.model) {
      case kHost:
        switch (mine.op) {
          case kPut: MP_OK(tether_put(w, dst, local, mine.bytes, t)); break;
          case kPutSignal:
            MP_OK(tether_put_signal(w, dst, local, mine.bytes, sigWord, sigVal, TETHER_SIGNAL_SET, t));
            break;
          case kGet: MP_OK(tether_get(w, local, g.src + mine.off, mine.bytes, t)); break;
          default: MP_OK(tether_atomic(w, TETHER_AMO_ADD, TETHER_UINT64, g.ctr, &mine.add, nullptr, nullptr, t));
        }
        MP_OK(tether_quiet(w));
        break;
      case kStream:
        switch (mine.op) {
          case kPut: MP_OK(tether_putmem_on_stream(w, dst, local, mine.bytes, t, st)); break;
          case kPutSignal:
            MP_OK(tether_putmem_signal_on_stream(w, dst, local, mine.bytes, sigWord, sigVal, TETHER_SIGNAL_SET, t, st));
            break;
          case kGet: MP_OK(tether_getmem_on_stream(w, local, g.src + mine.off, mine.bytes, t, st)); break;
          default: MP_OK(tether_atomic_add_on_stream(w, g.ctr, mine.add, t, st));
        }
        MP_OK(tether_quiet_on_stream(w, st));
        CK(cudaStreamSynchronize(st));
        break;
      default: {
        const dim3 threads(mine.scope == 0 ? 1 : mine.scope == 1 ? 32 : 256);
        void* d = mine.op == kGet ? static_cast<void*>(local) : static_cast<void*>(dst);
        const void* s = mine.op == kGet ? static_cast<const void*>(g.src + mine.off) : static_cast<const void*>(local);
        if (mine.scope == 0)
          devOp<Scope::Thread><<<1, threads, 0, st>>>(h, mine.op, d, s, mine.bytes, sigWord, sigVal, g.ctr, mine.add, t);
        else if (mine.scope == 1)
          devOp<Scope::Warp><<<1, threads, 0, st>>>(h, mine.op, d, s, mine.bytes, sigWord, sigVal, g.ctr, mine.add, t);
        else
          devOp<Scope::Block><<<1, threads, 0, st>>>(h, mine.op, d, s, mine.bytes, sigWord, sigVal, g.ctr, mine.add, t);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
      }
    }
    ++counts[mine.model][mine.op];
    bytesMoved += mine.op == kAmo ? 8.0 : static_cast<double>(mine.bytes);
    // Signals due to me: wait for each, then its data must already be there.
    for (int q = 0; q < n; ++q) {
      const Plan& p = plans[static_cast<size_t>(q)];
      if (q == me || p.target != me || p.op != kPutSignal) continue;
      const uint64_t want = sigCount[static_cast<size_t>(k * n + q)];
      MP_OK(tether_signal_wait_until(w, g.sig + q, TETHER_CMP_GE, want, nullptr));
      readSym(g, buf.data(), half + static_cast<size_t>(q) * kSlot + p.off, p.bytes);
      for (size_t i = 0; i < p.bytes; ++i)
        if (buf[i] != pattern(saltFor(seed, r, q), i))
          mismatch(me, seed, r, q, p, "data seen with its signal", i, buf[i], pattern(saltFor(seed, r, q), i));
    }
    // The round's barrier (each issuer completed its operation above).
    switch (roundBarrier(seed, r)) {
      case 0: MP_OK(tether_barrier_all(w)); break;
      case 1:
        MP_OK(tether_barrier_all_on_stream(w, st));
        CK(cudaStreamSynchronize(st));
        break;
      default:
        devBarrier<<<1, 256, 0, st>>>(h);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
    }
    // Everything put into my inbox this round, and what I got.
    for (int q = 0; q < n; ++q) {
      const Plan& p = plans[static_cast<size_t>(q)];
      if (q == me || p.target != me || (p.op != kPut && p.op != kPutSignal)) continue;
      readSym(g, buf.data(), half + static_cast<size_t>(q) * kSlot + p.off, p.bytes);
      for (size_t i = 0; i < p.bytes; ++i)
        if (buf[i] != pattern(saltFor(seed, r, q), i))
          mismatch(me, seed, r, q, p, "data put", i, buf[i], pattern(saltFor(seed, r, q), i));
    }
    if (mine.op == kGet) {
      if (localOnGpu) CK(cudaMemcpy(buf.data(), devLocal, mine.bytes, cudaMemcpyDeviceToHost));
      else std::memcpy(buf.data(), hostLocal.data(), mine.bytes);
      for (size_t i = 0; i < mine.bytes; ++i)
        if (buf[i] != pattern(srcSalt(seed, t), mine.off + i))
          mismatch(me, seed, r, t, mine, "data got", i, buf[i], pattern(srcSalt(seed, t), mine.off + i));
    }
    if (r % 16 == 15) {  // counters, then decide together whether to go on (PE 0's clock)
      for (int kk = 0; kk < 2; ++kk) {
        uint64_t v = 0;
        readSym(seg[kk], &v, seg[kk].ctr, sizeof v);
        const uint64_t want = ctrSum[static_cast<size_t>(kk * n + me)];
        if (v != want) {
          std::fprintf(stderr, "FAIL PE %d: seed %" PRIu64 " after round %ld: %s counter %" PRIu64 ", expected %" PRIu64
                       "\n", me, seed, r, kk ? "HOST" : "DEVICE", v, want);
          std::exit(1);
        }
      }
      MP_OK(tether_barrier_all(w));
      if (me == 0) {
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const uint64_t stop = el >= seconds ? 1 : 0;
        for (int pe = 0; pe < n; ++pe) MP_OK(tether_put(w, &ctl[1], &stop, sizeof stop, pe));
      }
      MP_OK(tether_barrier_all(w));
      if (ctl[1]) break;
    }
  }
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int pe = 0; pe < n; ++pe) {
    MP_OK(tether_barrier_all(w));
    if (pe != me) continue;
    std::printf("PE %d: %ld rounds in %.1f s, %.1f MB issued; ops (host/stream/device):", me, r + 1, el,
                bytesMoved / 1e6);
    for (int o = 0; o < kOps; ++o)
      std::printf(" %s %ld/%ld/%ld;", kOpName[o], counts[kHost][o], counts[kStream][o], counts[kDevice][o]);
    std::printf(" all verified\n");
    std::fflush(stdout);
  }
  MP_OK(tether_barrier_all(w));
  CK(cudaStreamDestroy(st));
  CK(cudaFree(devLocal));
  if (me == 0) std::printf("gpu_stress: seed %" PRIu64 ", %ld rounds, %d PEs: ok\n", seed, r + 1, n);
  return mp::finish();
}
