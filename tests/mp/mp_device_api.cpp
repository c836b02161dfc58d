// The device API (include/tether/device.cuh) compiled for the host: CPU threads over HOST segments run the same
// protocol code kernels run. Each PE runs kThreads CPU threads: one "block" of kThreads threads made of "warps" of
// kWarp threads (HostScope), so Thread, Warp and Block scopes are all exercised, including the cooperative split of
// bulk copies. Covers every operation, put_signal visibility (data seen when the signal is seen), waits, atomics
// under contention, and the device barrier. Seed: MP_SEED (default 1), printed.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mp_util.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using dev::Cmp;
using dev::Scope;
using dev::SignalOp;

namespace {

constexpr int kThreads = 4;  // one "block"
constexpr int kWarp = 2;     // "warps" of 2 threads
constexpr size_t kBuf = 256 * 1024;

struct Shared {  // symmetric objects (HOST heap)
  unsigned char* data;      // kBuf: put/get target
  unsigned char* data2;     // kBuf: put_signal target
  uint64_t* sig;            // [2]: data signal, ack signal
  int64_t* slots;           // n_pes: barrier check / waits
  uint32_t* c32;            // counters on PE 0
  uint64_t* c64;
  uint64_t* bits;           // fetch_or/and/xor target
  int64_t* lock;            // compare_swap spin-lock + protected counter [2]
};

unsigned char pattern(uint64_t seed, size_t i) { return static_cast<unsigned char>((seed * 131 + i * 7 + (i >> 8)) & 0xff); }

uint64_t seedBase() {
  const char* s = std::getenv("MP_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 1;
}

// Bulk put/get at every scope, several sizes and misalignments, to the next PE / from the previous one.
template <Scope S>
void rmaRound(const dev::Handle& h, const Shared& sh, int tid, dev::HostBarrier& block, unsigned char* local,
              unsigned char* back, uint64_t tag) {
  const int me = h.my_pe, n = h.n_pes, next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t sizes[] = {1, 7, 16, 63, 1000, 4096, 65537, kBuf - 64};
  const size_t offs[] = {0, 3, 8, 16, 1, 5, 24, 0};
  for (int c = 0; c < 8; ++c) {
    const size_t nb = sizes[c], off = offs[c], soff = (c % 3);
    const uint64_t seed = tag * 1000 + static_cast<uint64_t>(c) * 10 + static_cast<uint64_t>(me);
    if (tid == 0)
      for (size_t i = 0; i < nb; ++i) local[soff + i] = pattern(seed, i);
    block.arrive();
    const int gsize = S == Scope::Thread ? 1 : (S == Scope::Warp ? kWarp : kThreads);
    // Thread scope: thread 0 alone; Warp: each warp puts half (its own range); Block: all together.
    if (S == Scope::Thread) {
      if (tid == 0) dev::putmem<S>(h, sh.data + off, local + soff, nb, next);
    } else if (S == Scope::Warp) {
      const int w = tid / kWarp;
      const size_t half = nb / 2, lo = w == 0 ? 0 : half, len = w == 0 ? half : nb - half;
      dev::putmem<S>(h, sh.data + off + lo, local + soff + lo, len, next);
    } else {
      dev::put<S>(h, sh.data + off, local + soff, nb, next);
    }
    (void)gsize;
    dev::quiet<S>(h);
    block.arrive();
    if (tid == 0) dev::sync_all<Scope::Thread>(h);  // the block's leader runs the device barrier
    block.arrive();
    // The previous PE's pattern is here; read it back from there too (get) and compare.
    const uint64_t pseed = tag * 1000 + static_cast<uint64_t>(c) * 10 + static_cast<uint64_t>(prev);
    if (tid == 0)
      for (size_t i = 0; i < nb; ++i)
        if (sh.data[off + i] != pattern(pseed, i)) {
          std::fprintf(stderr, "FAIL PE %d: put scope %d size %zu off %zu byte %zu: %u != %u\n", me,
                       static_cast<int>(S), nb, off, i, sh.data[off + i], pattern(pseed, i));
          std::exit(1);
        }
    if (S == Scope::Block)
      dev::getmem<S>(h, back, sh.data + off, nb, next);  // next holds my pattern
    else if (tid == 0)
      dev::get<Scope::Thread>(h, back, sh.data + off, nb, next);
    block.arrive();
    if (tid == 0) {
      for (size_t i = 0; i < nb; ++i)
        if (back[i] != pattern(seed, i)) {
          std::fprintf(stderr, "FAIL PE %d: get scope %d size %zu byte %zu\n", me, static_cast<int>(S), nb, i);
          std::exit(1);
        }
      dev::sync_all<Scope::Thread>(h);  // nobody overwrites before everyone checked
    }
    block.arrive();
  }
}

void worker(const dev::Handle& h, const Shared& sh, int tid, dev::HostBarrier& block, dev::HostBarrier* warps,
            unsigned char* local, unsigned char* back, uint64_t seed) {
  dev::HostScope<Scope::Block> bs(tid, kThreads, &block);
  dev::HostScope<Scope::Warp> ws(tid % kWarp, kWarp, &warps[tid / kWarp]);
  const int me = h.my_pe, n = h.n_pes, next = (me + 1) % n, prev = (me + n - 1) % n;

  // ---- ptr and basic translation (null for PEs served by the proxy ring)
  const bool proxied = h.flags & TETHER_DEVICE_PROXY;
  MP_CHECK(dev::ptr(h, sh.data, me) != nullptr);
  for (int pe = 0; pe < n; ++pe)
    MP_CHECK(dev::ptr(h, sh.data, pe) == (proxied && pe != me ? nullptr : tether_ptr(mp::world(), sh.data, pe)));
  MP_CHECK(dev::ptr(h, local, me) == nullptr);  // not symmetric
  MP_CHECK(dev::ptr(h, sh.data, n) == nullptr);

  // ---- bulk RMA at every scope
  rmaRound<Scope::Thread>(h, sh, tid, block, local, back, 1);
  rmaRound<Scope::Warp>(h, sh, tid, block, local, back, 2);
  rmaRound<Scope::Block>(h, sh, tid, block, local, back, 3);

  // ---- p / g and typed put/get_nbi
  if (tid == 0) {
    dev::p(h, &sh.slots[me], static_cast<int64_t>(1000 + me), next);
    dev::quiet(h);
    dev::sync_all(h);
    MP_CHECK(sh.slots[prev] == 1000 + prev);
    MP_CHECK(dev::g(h, &sh.slots[me], next) == 1000 + me);
    int64_t tmp[4] = {};
    dev::get_nbi(h, tmp, &sh.slots[me], 1, next);
    dev::quiet(h);
    MP_CHECK(tmp[0] == 1000 + me);
    dev::sync_all(h);
  }
  block.arrive();

  // ---- put_signal pipeline (visibility): block-scope put with a SET signal, single buffer, ack back by ADD
  {
    std::mt19937_64 rng(seed * 7919);  // same sequence on every PE: the receiver knows the sender's sizes
    const int iters = n <= 2 ? 600 : (n <= 4 ? 200 : 80);
    for (int it = 1; it <= iters; ++it) {
      size_t nb = 1 + rng() % (n <= 2 ? 20000 : 4096);
      if (it % 7 == 0) nb = kBuf - 64;
      if (tid == 0) {
        for (size_t i = 0; i < nb; ++i) local[i] = pattern(static_cast<uint64_t>(it) * 31 + static_cast<uint64_t>(me), i);
        // wait for the receiver's ack of the previous iteration before overwriting its buffer
        dev::signal_wait_until(h, &sh.sig[1], Cmp::GE, static_cast<uint64_t>(it - 1));
      }
      block.arrive();
      const SignalOp op = it % 2 ? SignalOp::Set : SignalOp::Add;
      if (op == SignalOp::Set)
        dev::putmem_signal<Scope::Block>(h, sh.data2, local, nb, &sh.sig[0], static_cast<uint64_t>(it), op, next);
      else
        dev::put_signal_nbi<Scope::Block>(h, sh.data2, local, nb, &sh.sig[0], 1, op, next);
      // receive from prev: every thread waits (acquire), then checks its quarter of the bytes
      const uint64_t got = dev::signal_wait_until<Scope::Block>(h, &sh.sig[0], Cmp::GE, static_cast<uint64_t>(it));
      MP_CHECK(got == static_cast<uint64_t>(it));
      const uint64_t pseed = static_cast<uint64_t>(it) * 31 + static_cast<uint64_t>(prev);
      for (size_t i = static_cast<size_t>(tid); i < nb; i += kThreads)
        if (sh.data2[i] != pattern(pseed, i)) {
          std::fprintf(stderr, "FAIL PE %d: put_signal iteration %d (%zu bytes, seed %" PRIu64 "): byte %zu is %u, "
                       "expected %u: data not visible when the signal was\n", me, it, nb, seed, i, sh.data2[i],
                       pattern(pseed, i));
          std::exit(1);
        }
      dev::quiet<Scope::Block>(h);  // also completes the _nbi put of the even iterations before local is refilled
      if (tid == 0) dev::signal_op(h, &sh.sig[1], 1, SignalOp::Add, prev);
    }
    if (tid == 0) dev::signal_wait_until(h, &sh.sig[1], Cmp::GE, static_cast<uint64_t>(iters));
    block.arrive();
  }

  // ---- atomics under contention: every thread of every PE
  {
    const int rounds = n <= 2 ? 2000 : 400;
    for (int i = 0; i < rounds; ++i) {
      dev::atomic_fetch_add(h, sh.c32, 1u, 0);
      dev::atomic_inc(h, sh.c64, 0);
      if (i % 2) dev::atomic_add(h, sh.c64, uint64_t{2}, 0); else (void)dev::atomic_fetch_inc(h, sh.c32, 0);
    }
    const uint64_t bit = uint64_t{1} << ((me * kThreads + tid) % 64);
    for (int i = 0; i < 50; ++i) {
      dev::atomic_fetch_or(h, sh.bits, bit, 0);
      dev::atomic_fetch_xor(h, sh.bits, bit, 0);  // clears it
      dev::atomic_or(h, sh.bits, bit, 0);
      dev::atomic_and(h, sh.bits, ~bit, 0);
      dev::atomic_xor(h, sh.bits, bit, 0);  // sets it
      dev::atomic_fetch_and(h, sh.bits, ~bit, 0);
    }
    // compare_swap lock protecting a plain counter on PE 0
    for (int i = 0; i < 30; ++i) {
      dev::detail::Spin spin(h.timeout_ns);
      while (dev::atomic_compare_swap(h, &sh.lock[0], int64_t{0}, int64_t{1 + me * kThreads + tid}, 0) != 0)
        MP_CHECK(spin.next());
      dev::fence(h);
      const int64_t v = dev::atomic_fetch(h, &sh.lock[1], 0);
      dev::atomic_set(h, &sh.lock[1], v + 1, 0);
      dev::quiet(h);
      MP_CHECK(dev::atomic_swap(h, &sh.lock[0], int64_t{0}, 0) == 1 + me * kThreads + tid);
    }
    dev::quiet<Scope::Block>(h);
    if (tid == 0) dev::sync_all(h);
    block.arrive();
    if (me == 0 && tid == 0) {
      const uint64_t threads = static_cast<uint64_t>(n) * kThreads;
      MP_CHECK(*sh.c32 == threads * static_cast<uint64_t>(rounds + rounds / 2));
      MP_CHECK(*sh.c64 == threads * static_cast<uint64_t>(rounds + rounds));
      MP_CHECK(*sh.bits == 0);
      MP_CHECK(sh.lock[0] == 0 && sh.lock[1] == static_cast<int64_t>(threads) * 30);
      MP_CHECK(dev::atomic_fetch(h, sh.c32, 0) == *sh.c32);
    }
    block.arrive();
  }

  // ---- waits: every PE sets slot[me] on every other PE (relaxed atomic set), then waits all/any/some
  {
    if (tid == 0) {
      for (int i = 0; i < n; ++i) sh.slots[i] = 0;
      dev::sync_all(h);
      std::vector<int> status(static_cast<size_t>(n), 0);
      status[static_cast<size_t>(me)] = 1;
      MP_CHECK(!dev::test_all(h, sh.slots, static_cast<size_t>(n), status.data(), Cmp::GT, int64_t{0}) || n == 1);
      MP_CHECK(dev::test_any(h, sh.slots, static_cast<size_t>(n), status.data(), Cmp::GT, int64_t{0}) == SIZE_MAX);
      dev::sync_all(h);
      dev::atomic_set(h, &sh.slots[me], int64_t{me + 1}, next);
      const size_t idx = dev::wait_until_any(h, sh.slots, static_cast<size_t>(n), status.data(), Cmp::GT, int64_t{0});
      MP_CHECK(idx == static_cast<size_t>(prev));
      std::vector<size_t> idxs(static_cast<size_t>(n));
      MP_CHECK(dev::wait_until_some(h, sh.slots, static_cast<size_t>(n), status.data(), Cmp::EQ, int64_t{prev + 1},
                                    idxs.data()) == 1 && idxs[0] == static_cast<size_t>(prev));
      MP_CHECK(dev::test(h, &sh.slots[prev], Cmp::EQ, int64_t{prev + 1}));
      dev::sync_all(h);
      for (int pe = 0; pe < n; ++pe)
        if (pe != me && pe != next) dev::atomic_set(h, &sh.slots[me], int64_t{me + 1}, pe);
      dev::wait_until_all(h, sh.slots, static_cast<size_t>(n), status.data(), Cmp::GT, int64_t{0});
      for (int pe = 0; pe < n; ++pe)
        if (pe != me) MP_CHECK(sh.slots[pe] == pe + 1);
      MP_CHECK(dev::wait_until(h, &sh.slots[prev], Cmp::NE, int64_t{0}) == prev + 1);
      std::vector<int> none(static_cast<size_t>(n), 1);
      MP_CHECK(dev::wait_until_any(h, sh.slots, static_cast<size_t>(n), none.data(), Cmp::EQ, int64_t{0}) == SIZE_MAX);
      dev::sync_all(h);
    }
    block.arrive();
  }

  // ---- device barrier at block scope: each iteration everybody writes it into every PE, barrier, check
  {
    const int iters = n <= 2 ? 300 : 60;
    for (int it = 1; it <= iters; ++it) {
      for (int pe = tid; pe < n; pe += kThreads) dev::p(h, &sh.slots[me], int64_t{it}, pe);
      dev::barrier_all<Scope::Block>(h);
      if (tid == 0)
        for (int pe = 0; pe < n; ++pe)
          if (sh.slots[pe] != it) {
            std::fprintf(stderr, "FAIL PE %d: barrier iteration %d: slot %d holds %" PRId64 "\n", me, it, pe,
                         sh.slots[pe]);
            std::exit(1);
          }
      dev::sync_all<Scope::Block>(h);  // nobody writes iteration it+1 before everyone checked it
    }
  }
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const uint64_t seed = seedBase();
  const int me = tether_my_pe(w);
  if (me == 0) std::printf("mp_device_api: seed %" PRIu64 " (MP_SEED), %d PEs x %d threads\n", seed, tether_n_pes(w), kThreads);
  Shared sh{};
  void* p = nullptr;
  MP_OK(tether_malloc_kind(w, TETHER_SEG_HOST, 64, kBuf, &p)); sh.data = static_cast<unsigned char*>(p);
  MP_OK(tether_malloc_kind(w, TETHER_SEG_HOST, 64, kBuf, &p)); sh.data2 = static_cast<unsigned char*>(p);
  const size_t words = 64 + static_cast<size_t>(tether_n_pes(w));
  MP_OK(tether_malloc_kind(w, TETHER_SEG_HOST, 64, words * 8, &p));
  std::memset(p, 0, words * 8);
  auto* wds = static_cast<uint64_t*>(p);
  sh.sig = wds;
  sh.c32 = reinterpret_cast<uint32_t*>(wds + 8);
  sh.c64 = wds + 16;
  sh.bits = wds + 24;
  sh.lock = reinterpret_cast<int64_t*>(wds + 32);
  sh.slots = reinterpret_cast<int64_t*>(wds + 64);
  MP_OK(tether_barrier_all(w));

  tether_device_handle_t h;
  MP_EXPECT_STATUS(tether_device_handle_cpu(w, nullptr), TETHER_ERR_INVALID_ARG);
  MP_OK(tether_device_handle_cpu(w, &h));
  MP_CHECK(h.my_pe == me && h.n_pes == tether_n_pes(w));
  MP_CHECK(!(h.flags & TETHER_DEVICE_GPU));
  // One host: arithmetic translation, unless TETHER_FORCE_PROXY=1 sends every other PE through the proxy ring.
  const char* forced = std::getenv("TETHER_FORCE_PROXY");
  if (forced && std::string(forced) == "1") {
    MP_CHECK(!(h.flags & TETHER_DEVICE_DIRECT) && (h.flags & TETHER_DEVICE_PROXY) && h.proxy_ring && h.proxy_slots);
    MP_CHECK(!(h.flags & TETHER_DEVICE_PROXY_MIXED));
    if (me == 0) std::printf("mp_device_api: TETHER_FORCE_PROXY=1, ring of %llu descriptors\n",
                             static_cast<unsigned long long>(h.proxy_slots));
  } else {
    MP_CHECK(h.flags & TETHER_DEVICE_DIRECT);
    MP_CHECK(!(h.flags & TETHER_DEVICE_PROXY) && !h.proxy_ring);
  }
  MP_CHECK(h.seg[TETHER_DEVICE_SEG_HOST].present && !h.seg[TETHER_DEVICE_SEG_DEVICE].present);
  tether_device_handle_t h2;
  MP_OK(tether_device_handle_cpu(w, &h2));
  MP_CHECK(h2.peers == h.peers);  // unchanged table is reused

  std::vector<unsigned char> local(kBuf + 64), back(kBuf + 64);
  dev::HostBarrier block(kThreads);
  dev::HostBarrier warps[kThreads / kWarp] = {dev::HostBarrier(kWarp), dev::HostBarrier(kWarp)};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, std::cref(h), std::cref(sh), t, std::ref(block), warps, local.data(), back.data(),
                         seed);
  for (auto& t : threads) t.join();
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_device_api: all checks passed\n");
  return mp::finish();
}
