// Atomicity across processes: every PE hammers the same words on every other PE.
#include <cstdint>

#include "mp_util.h"

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int iters = 2000;
  void* p = nullptr;
  MP_OK(tether_calloc(w, 16, sizeof(uint64_t), &p));
  auto* c = static_cast<uint64_t*>(p);
  MP_OK(tether_calloc(w, 4, sizeof(int32_t), &p));
  auto* c32 = static_cast<int32_t*>(p);

  // fetch_add / inc / add on every PE's counters: totals must be exact.
  for (int i = 0; i < iters; ++i) {
    const int pe = (me + i) % n;
    uint64_t old;
    MP_OK(tether_uint64_atomic_fetch_add(w, &c[0], 2, pe, &old));
    MP_OK(tether_uint64_atomic_inc(w, &c[1], pe));
    MP_OK(tether_int32_atomic_add(w, &c32[0], -1, pe));
    MP_OK(tether_uint64_atomic_fetch_inc(w, &c[2], pe, &old));
  }
  MP_OK(tether_barrier_all(w));
  MP_CHECK(c[0] == static_cast<uint64_t>(2 * iters));
  MP_CHECK(c[1] == static_cast<uint64_t>(iters));
  MP_CHECK(c32[0] == -iters);
  MP_CHECK(c[2] == static_cast<uint64_t>(iters));
  MP_OK(tether_barrier_all(w));

  // compare_swap as a lock on PE 0 protecting a non-atomic read-modify-write of a counter on PE 0.
  for (int i = 0; i < 300; ++i) {
    int64_t old = 1;
    while (true) {
      MP_OK(tether_int64_atomic_compare_swap(w, reinterpret_cast<int64_t*>(&c[3]), 0, me + 1, 0, &old));
      if (old == 0) break;
    }
    uint64_t v = 0;
    MP_OK(tether_uint64_g(w, &v, &c[4], 0));
    MP_OK(tether_uint64_p(w, &c[4], v + 1, 0));
    MP_OK(tether_quiet(w));
    int64_t mine = me + 1, prev = 0;
    MP_OK(tether_int64_atomic_swap(w, reinterpret_cast<int64_t*>(&c[3]), 0, 0, &prev));
    MP_CHECK(prev == mine);
  }
  MP_OK(tether_barrier_all(w));
  if (me == 0) MP_CHECK(c[4] == static_cast<uint64_t>(300 * n));

  // Bitwise: each PE sets, toggles and clears its own bits of one word on PE 0.
  const uint64_t bit = 1ull << (me % 64);
  MP_OK(tether_uint64_atomic_or(w, &c[5], bit, 0));
  MP_OK(tether_barrier_all(w));
  uint64_t all = 0;
  MP_OK(tether_uint64_atomic_fetch(w, &c[5], 0, &all));
  for (int pe = 0; pe < n && pe < 64; ++pe) MP_CHECK(all & (1ull << pe));
  MP_OK(tether_barrier_all(w));
  uint64_t old;
  MP_OK(tether_uint64_atomic_fetch_xor(w, &c[6], bit, 0, &old));
  MP_OK(tether_uint64_atomic_fetch_and(w, &c[5], ~bit, 0, &old));
  MP_OK(tether_barrier_all(w));
  if (me == 0 && n <= 64) {
    MP_CHECK(c[5] == 0);
    MP_CHECK(c[6] == (n == 64 ? ~0ull : (1ull << n) - 1));
  }

  // swap chain: every PE swaps its id in; the set of returned values plus the final value is a permutation.
  MP_OK(tether_barrier_all(w));
  if (me == 0) c[7] = 1000;
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_uint64_atomic_swap(w, &c[7], static_cast<uint64_t>(me), 0, &old));
  void* q = nullptr;
  MP_OK(tether_calloc(w, static_cast<size_t>(n) + 1, sizeof(uint64_t), &q));
  auto* seenVals = static_cast<uint64_t*>(q);
  MP_OK(tether_uint64_atomic_fetch_inc(w, &seenVals[static_cast<size_t>(old == 1000 ? n : static_cast<int>(old))], 0,
                                       &old));
  MP_OK(tether_barrier_all(w));
  if (me == 0) {
    seenVals[c[7]] += 1;  // the last value swapped in was returned to nobody
    for (int i = 0; i <= n; ++i) MP_CHECK(seenVals[i] == 1);
  }
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_atomics: %d PEs OK\n", n);
  return mp::finish();
}
