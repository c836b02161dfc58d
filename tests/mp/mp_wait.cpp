// Point-to-point synchronisation driven by peers: wait_until(_all/_any/_some)(_vector) and test forms.
#include <cstdint>
#include <vector>

#include "mp_util.h"

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  void* p = nullptr;
  MP_OK(tether_calloc(w, static_cast<size_t>(n), sizeof(int64_t), &p));
  auto* flags = static_cast<int64_t*>(p);

  // Round 1: every PE sets its slot on every other PE; wait_until_all over the peers' slots.
  std::vector<int> status(static_cast<size_t>(n), 0);
  status[static_cast<size_t>(me)] = 1;  // my own slot is never written
  int r = -1;
  int64_t zero = 0;
  MP_OK(tether_test_all(w, flags, static_cast<size_t>(n), status.data(), TETHER_INT64, TETHER_CMP_GT, &zero, &r));
  MP_OK(tether_barrier_all(w));  // nobody writes before everyone tested
  for (int pe = 0; pe < n; ++pe)
    if (pe != me) MP_OK(tether_int64_atomic_set(w, &flags[me], me + 1, pe));
  MP_OK(tether_wait_until_all(w, flags, static_cast<size_t>(n), status.data(), TETHER_INT64, TETHER_CMP_GT, &zero));
  for (int pe = 0; pe < n; ++pe)
    if (pe != me) MP_CHECK(flags[pe] == pe + 1);

  // Round 2: vector form, expected value per slot.
  std::vector<int64_t> expect(static_cast<size_t>(n));
  for (int pe = 0; pe < n; ++pe) expect[static_cast<size_t>(pe)] = 10 * (pe + 1);
  MP_OK(tether_barrier_all(w));
  for (int pe = 0; pe < n; ++pe)
    if (pe != me) MP_OK(tether_int64_p(w, &flags[me], 10 * (me + 1), pe));
  MP_OK(tether_wait_until_all_vector(w, flags, static_cast<size_t>(n), status.data(), TETHER_INT64, TETHER_CMP_EQ,
                                     expect.data()));

  // Round 3: only PE (me+1)%n signals me; wait_until_any must return its index, _some must list exactly it.
  MP_OK(tether_barrier_all(w));
  for (int i = 0; i < n; ++i) flags[i] = 0;
  MP_OK(tether_barrier_all(w));
  const int prev = (me + n - 1) % n, next = (me + 1) % n;
  MP_OK(tether_int64_atomic_set(w, &flags[me], 7, next));
  size_t idx = 99;
  int64_t seven = 7;
  MP_OK(tether_wait_until_any(w, flags, static_cast<size_t>(n), nullptr, TETHER_INT64, TETHER_CMP_EQ, &seven, &idx));
  MP_CHECK(idx == static_cast<size_t>(prev));
  std::vector<size_t> idxs(static_cast<size_t>(n));
  size_t count = 0;
  MP_OK(tether_wait_until_some(w, flags, static_cast<size_t>(n), nullptr, TETHER_INT64, TETHER_CMP_EQ, &seven,
                               idxs.data(), &count));
  MP_CHECK(count == 1 && idxs[0] == static_cast<size_t>(prev));

  // Round 4: uint32 words, LT comparisons, test_any polling until a peer's decrement lands.
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_calloc(w, 1, sizeof(uint32_t), &p));
  auto* u = static_cast<uint32_t*>(p);
  *u = 100;
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_uint32_atomic_fetch_add(w, u, static_cast<uint32_t>(-1), next, reinterpret_cast<uint32_t*>(&r)));
  MP_OK(tether_uint32_wait_until(w, u, TETHER_CMP_LT, 100));
  MP_CHECK(*u == 99);

  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_wait: %d PEs OK\n", n);
  return mp::finish();
}
