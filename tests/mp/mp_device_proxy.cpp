// The device API's proxy path (descriptor ring + proxy thread, src/core/proxy.h) from CPU threads, run with
// TETHER_FORCE_PROXY=1 so every other PE goes through the ring. mp_device_api covers every operation through the ring
// too (same test, forced); this one stresses what is specific to the ring:
//  - wrap-around and flow control: each thread posts many times more descriptors than the ring has slots (nbi puts,
//    p, non-fetching atomics), then quiet; the ticket counter must have wrapped the ring many times;
//  - in-order execution: put_nbi then get of the same bytes by the same thread sees the new bytes;
//  - fetching atomics under contention from all threads of all PEs: every fetch_inc on PE 0's counter returns a
//    distinct value (checked with a fetch_add on a per-value flag, also through the ring), plus compare_swap;
//  - block-scope nbi puts of random sizes into per-thread ranges, quiet, barrier, check (seed printed).
// Failure modes (argv[1], run under expect_fail.sh): "bad" posts a descriptor with an unknown op and must fail at
// quiet with the proxy's error; "stuck" keeps a fetching slot and must fail on a full ring (bounded by
// TETHER_TIMEOUT), not hang.
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mp_util.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using dev::Scope;

namespace {

constexpr int kThreads = 4;
constexpr int kPerThread = 1024;  // descriptors of each kind per thread (ring: TETHER_PROXY_SLOTS, small in the tests)
constexpr size_t kRange = 8192;   // bytes per thread for the random nbi puts

struct Shared {
  uint64_t* words;      // [kThreads * kPerThread]: p targets, written by the previous PE
  uint64_t* counter;    // [8]: fetch_inc counter on PE 0, [1] add target, [2] compare_swap lock word
  uint32_t* flags;      // [n * kThreads * kPerThread]: one flag per counter value, on PE 0
  unsigned char* bulk;  // [kThreads * kRange]
};

uint64_t seedBase() {
  const char* s = std::getenv("MP_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 1;
}

void worker(const dev::Handle& h, const Shared& sh, int tid, dev::HostBarrier& block, uint64_t seed,
            unsigned char* local) {
  dev::HostScope<Scope::Block> bs(tid, kThreads, &block);
  const int me = h.my_pe, n = h.n_pes, next = (me + 1) % n, prev = (me + n - 1) % n;

  // ---- wrap-around: p of distinct values into next PE, non-fetching adds on PE 0, quiet, barrier, check
  for (int i = 0; i < kPerThread; ++i) {
    const uint64_t v = (static_cast<uint64_t>(me) << 40) | (static_cast<uint64_t>(tid) << 20) | static_cast<uint64_t>(i);
    dev::p(h, &sh.words[tid * kPerThread + i], v, next);
    dev::atomic_add(h, &sh.counter[1], uint64_t{1}, 0);
  }
  dev::quiet(h);
  block.arrive();
  if (tid == 0) dev::sync_all(h);
  block.arrive();
  for (int i = 0; i < kPerThread; ++i) {
    const uint64_t want = (static_cast<uint64_t>(prev) << 40) | (static_cast<uint64_t>(tid) << 20) |
                          static_cast<uint64_t>(i);
    if (sh.words[tid * kPerThread + i] != want) {
      std::fprintf(stderr, "FAIL PE %d thread %d: p #%d holds %" PRIx64 ", expected %" PRIx64 "\n", me, tid, i,
                   sh.words[tid * kPerThread + i], want);
      std::exit(1);
    }
  }
  block.arrive();
  if (tid == 0) dev::sync_all(h);  // checked everywhere before the next phase writes these words again
  block.arrive();
  const uint64_t tickets = __atomic_load_n(h.proxy_ticket, __ATOMIC_RELAXED);
  MP_CHECK(tickets >= 1ull * kThreads * kPerThread);  // the p descriptors alone (PE 0's adds are local)
  if (me == 0 && tid == 0)
    std::printf("mp_device_proxy: %" PRIu64 " descriptors through a ring of %" PRIu64 " slots (wrapped %" PRIu64
                " times)\n", tickets, h.proxy_slots, tickets / h.proxy_slots);

  // ---- in-order execution: put_nbi then g of the same word (same thread) sees the put
  for (int i = 0; i < 64; ++i) {
    uint64_t v = 0xabc000 + static_cast<uint64_t>(i) + (static_cast<uint64_t>(me) << 32);
    uint64_t* w = &sh.words[tid * kPerThread + i];
    dev::put_nbi(h, w, &v, 1, next);
    dev::quiet(h);  // the source is a stack variable: complete before it changes
    MP_CHECK(dev::g(h, w, next) == v);
    uint64_t back = 0;
    dev::get_nbi(h, &back, w, 1, next);
    dev::quiet(h);
    MP_CHECK(back == v);
  }
  block.arrive();
  if (tid == 0) dev::sync_all(h);
  block.arrive();

  // ---- fetching atomics under contention: unique fetch_inc values, each flagged once on PE 0
  for (int i = 0; i < kPerThread / 4; ++i) {
    const uint64_t old = dev::atomic_fetch_inc(h, &sh.counter[0], 0);
    const uint32_t seen = dev::atomic_fetch_add(h, &sh.flags[old], 1u, 0);
    if (seen != 0) {
      std::fprintf(stderr, "FAIL PE %d thread %d: fetch_inc returned %" PRIu64 " twice\n", me, tid, old);
      std::exit(1);
    }
  }
  for (int i = 0; i < 16; ++i) {  // compare_swap lock around a fetch/set pair on PE 0
    dev::detail::Spin spin(h.timeout_ns);
    const uint64_t id = 1 + static_cast<uint64_t>(me * kThreads + tid);
    while (dev::atomic_compare_swap(h, &sh.counter[2], uint64_t{0}, id, 0) != 0) MP_CHECK(spin.next());
    const uint64_t v = dev::atomic_fetch(h, &sh.counter[3], 0);
    dev::atomic_set(h, &sh.counter[3], v + 1, 0);
    MP_CHECK(dev::atomic_swap(h, &sh.counter[2], uint64_t{0}, 0) == id);
  }

  // ---- block-scope nbi puts of random sizes into per-thread ranges of the next PE
  std::mt19937_64 rng(seed * 977 + static_cast<uint64_t>(me));  // same sequence for every thread of one PE
  for (int round = 0; round < 20; ++round) {
    for (int t = 0; t < kThreads; ++t) {
      const size_t nb = 1 + rng() % kRange;
      const size_t off = static_cast<size_t>(t) * kRange;
      if (tid == 0)
        for (size_t i = 0; i < nb; ++i) local[off + i] = static_cast<unsigned char>(round * 31 + t * 7 + i);
      dev::putmem_nbi<Scope::Block>(h, sh.bulk + off, local + off, nb, next);
    }
    dev::quiet<Scope::Block>(h);  // the sources may change now
  }
  dev::barrier_all<Scope::Block>(h);
}

// Failure modes: a bad descriptor, a stuck ring. Each must end the PE with a clear message, not hang.
int failMode(const dev::Handle& h, const std::string& mode) {
  if (h.my_pe != 0) {  // the other PEs wait (no tether wait: its own timeout would race PE 0's); tetherrun stops them
    std::this_thread::sleep_for(std::chrono::seconds(50));
    return 1;
  }
  if (mode == "bad") {
    (void)dev::detail::proxyPost(h, 0x7f, 1, 0, 8, nullptr, 0, 0);
    dev::quiet(h);
  } else {
    // A fetching descriptor whose result is never collected keeps its slot: a full ring later waits for it.
    (void)dev::detail::proxyPost(h, TETHER_PROXY_OP_GET_INLINE | TETHER_PROXY_FETCH, 1, 0, 8, nullptr, 0, 0);
    for (uint64_t i = 0; i < h.proxy_slots; ++i) dev::signal_op(h, reinterpret_cast<uint64_t*>(h.barrier), 0,
                                                                dev::SignalOp::Add, 1);
  }
  std::fprintf(stderr, "FAIL: failure mode '%s' did not fail\n", mode.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  mp::init();
  tether_t w = mp::world();
  const uint64_t seed = seedBase();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  tether_device_handle_t h;
  MP_OK(tether_device_handle_cpu(w, &h));
  if (n > 1) MP_CHECK((h.flags & TETHER_DEVICE_PROXY) && h.proxy_ring && !(h.flags & TETHER_DEVICE_DIRECT));
  if (argc > 1) return failMode(h, argv[1]);
  if (me == 0) std::printf("mp_device_proxy: seed %" PRIu64 " (MP_SEED), %d PEs x %d threads\n", seed, n, kThreads);

  Shared sh{};
  void* p = nullptr;
  MP_OK(tether_calloc(w, kThreads * kPerThread, 8, &p));
  sh.words = static_cast<uint64_t*>(p);
  MP_OK(tether_calloc(w, 8, 8, &p));
  sh.counter = static_cast<uint64_t*>(p);
  MP_OK(tether_calloc(w, static_cast<size_t>(n) * kThreads * kPerThread, 4, &p));
  sh.flags = static_cast<uint32_t*>(p);
  MP_OK(tether_calloc(w, kThreads, kRange, &p));
  sh.bulk = static_cast<unsigned char*>(p);
  MP_OK(tether_device_handle_cpu(w, &h));  // after the allocations
  MP_OK(tether_barrier_all(w));

  std::vector<unsigned char> local(kThreads * kRange);
  dev::HostBarrier block(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, std::cref(h), std::cref(sh), t, std::ref(block), seed, local.data());
  for (auto& t : threads) t.join();

  MP_OK(tether_barrier_all(w));
  if (me == 0) {
    const uint64_t all = static_cast<uint64_t>(n) * kThreads;
    MP_CHECK(sh.counter[0] == all * (kPerThread / 4));
    MP_CHECK(sh.counter[1] == all * kPerThread);
    MP_CHECK(sh.counter[2] == 0 && sh.counter[3] == all * 16);
    for (uint64_t v = 0; v < sh.counter[0]; ++v) MP_CHECK(sh.flags[v] == 1);
  }
  // The last round of random puts from the previous PE (same generator sequence as its threads used).
  const int prev = (me + n - 1) % n;
  std::mt19937_64 rng(seed * 977 + static_cast<uint64_t>(prev));
  std::vector<size_t> last(kThreads);
  for (int round = 0; round < 20; ++round)
    for (int t = 0; t < kThreads; ++t) {
      const size_t nb = 1 + rng() % kRange;
      if (round == 19) last[static_cast<size_t>(t)] = nb;
    }
  for (int t = 0; t < kThreads; ++t)
    for (size_t i = 0; i < last[static_cast<size_t>(t)]; ++i)
      if (sh.bulk[static_cast<size_t>(t) * kRange + i] != static_cast<unsigned char>(19 * 31 + t * 7 + i)) {
        std::fprintf(stderr, "FAIL PE %d: nbi put range %d byte %zu (seed %" PRIu64 ")\n", me, t, i, seed);
        return 1;
      }
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_device_proxy: all checks passed\n");
  return mp::finish();
}
