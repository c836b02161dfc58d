// put/get/p/g/nbi/quiet/fence/ptr/put_signal/barrier/sync between all PEs, every size from 1 B to 1 MiB. On one host
// or several (tests/netns: half of the PEs on each of two hosts, shm to the PEs of this host, UCX to the others).
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "mp_util.h"

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  MP_CHECK(n >= 2);
  // The library's count of the PEs on this host agrees with their host names.
  const std::vector<bool> sameHost = mp::sameHost(w);
  MP_CHECK(tether_local_size(w) == std::count(sameHost.begin(), sameHost.end(), true));
  unsigned seed = 12345u;
  if (me == 0) std::printf("seed %u\n", seed);
  const size_t maxBytes = 1 << 20;
  void* p = nullptr;
  MP_OK(tether_calloc(w, 1, maxBytes, &p));
  auto* buf = static_cast<unsigned char*>(p);
  MP_OK(tether_calloc(w, 1, maxBytes, &p));
  auto* inbox = static_cast<unsigned char*>(p);
  MP_OK(tether_calloc(w, static_cast<size_t>(n), sizeof(uint64_t), &p));
  auto* sigs = static_cast<uint64_t*>(p);

  // Every PE's buf holds a pattern derived from (seed, owner).
  auto pattern = [&](int owner, size_t i) { return static_cast<unsigned char>((seed + 131u * owner + i * 7u) & 0xff); };
  for (size_t i = 0; i < maxBytes; ++i) buf[i] = pattern(me, i);
  MP_OK(tether_barrier_all(w));

  // get: read every peer's pattern, every size.
  std::vector<unsigned char> local(maxBytes);
  for (int pe = 0; pe < n; ++pe)
    for (size_t sz = 1; sz <= maxBytes; sz *= 4) {
      size_t off = sz % 61;
      if (off + sz > maxBytes) off = 0;
      MP_OK(tether_get(w, local.data(), buf + off, sz, pe));
      for (size_t i = 0; i < sz; ++i) MP_CHECK(local[i] == pattern(pe, off + i));
    }
  MP_OK(tether_barrier_all(w));

  // put: ring, each size, then barrier and check.
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  for (size_t sz = 1; sz <= maxBytes; sz *= 2) {
    for (size_t i = 0; i < sz; ++i) local[i] = static_cast<unsigned char>(pattern(me, i) ^ sz);
    MP_OK(sz & 1 ? tether_put(w, inbox, local.data(), sz, next) : tether_put_nbi(w, inbox, local.data(), sz, next));
    MP_OK(tether_barrier_all(w));
    for (size_t i = 0; i < sz; ++i) MP_CHECK(inbox[i] == static_cast<unsigned char>(pattern(prev, i) ^ sz));
    MP_OK(tether_barrier_all(w));
  }

  // p/g typed and ptr.
  MP_OK(tether_calloc(w, static_cast<size_t>(n), sizeof(int32_t), &p));
  auto* slots = static_cast<int32_t*>(p);
  for (int pe = 0; pe < n; ++pe) MP_OK(tether_int32_p(w, &slots[me], 100 * me + pe, pe));
  MP_OK(tether_barrier_all(w));
  for (int pe = 0; pe < n; ++pe) MP_CHECK(slots[pe] == 100 * pe + me);
  for (int pe = 0; pe < n; ++pe) {
    int32_t v = -1;
    MP_OK(tether_int32_g(w, &v, &slots[pe], pe));
    MP_CHECK(v == 100 * pe + pe);
    auto* direct = static_cast<int32_t*>(tether_ptr(w, &slots[pe], pe));
    MP_CHECK((direct != nullptr) == mp::expectMapped(sameHost, pe));  // NULL to a PE reached over the network
    // A load through the mapping: only for a mapped peer (a PE on another host has none; g above read its value).
    if (direct) MP_CHECK(*direct == 100 * pe + pe);
  }
  MP_OK(tether_barrier_all(w));

  // put_signal: the data must be complete when the signal is seen (no barrier in between). Many rounds.
  for (uint64_t round = 1; round <= 200; ++round) {
    const size_t sz = 1 + (round * 977) % 65536;
    for (size_t i = 0; i < sz; ++i) local[i] = static_cast<unsigned char>(round + i + me);
    MP_OK(tether_put_signal(w, inbox, local.data(), sz, &sigs[me], round, TETHER_SIGNAL_SET, next));
    uint64_t seen = 0;
    MP_OK(tether_signal_wait_until(w, &sigs[prev], TETHER_CMP_EQ, round, &seen));
    for (size_t i = 0; i < sz; ++i) MP_CHECK(inbox[i] == static_cast<unsigned char>(round + i + prev));
    MP_OK(tether_sync_all(w));  // prev may not overwrite inbox before everyone checked
  }

  // fence: ordered puts to one PE; the second put (flag) must not overtake the first (data).
  MP_OK(tether_calloc(w, 2, sizeof(int64_t), &p));
  auto* fl = static_cast<int64_t*>(p);
  for (int64_t round = 1; round <= 100; ++round) {
    MP_OK(tether_int64_p(w, &fl[0], round * 3, next));
    MP_OK(tether_fence(w));
    MP_OK(tether_int64_p(w, &fl[1], round, next));
    MP_OK(tether_int64_wait_until(w, &fl[1], TETHER_CMP_EQ, round));
    MP_CHECK(fl[0] == round * 3);
    MP_OK(tether_sync_all(w));
  }

  // put_local (local completion): src reusable on return (overwritten at once here), delivered by the barrier; before
  // a put_signal's signal; ordered by fence before a flag put.
  for (size_t sz = 1; sz <= maxBytes; sz *= 8) {
    for (size_t i = 0; i < sz; ++i) local[i] = static_cast<unsigned char>(pattern(me, i) ^ (sz + 1));
    MP_OK(tether_put_local(w, inbox, local.data(), sz, next));
    std::fill(local.begin(), local.begin() + static_cast<std::ptrdiff_t>(sz), 0xEE);  // the put must not see this
    MP_OK(tether_barrier_all(w));
    for (size_t i = 0; i < sz; ++i) MP_CHECK(inbox[i] == static_cast<unsigned char>(pattern(prev, i) ^ (sz + 1)));
    MP_OK(tether_barrier_all(w));
  }
  for (uint64_t round = 201; round <= 300; ++round) {
    const size_t sz = 1 + (round * 613) % 65536;
    for (size_t i = 0; i < sz; ++i) local[i] = static_cast<unsigned char>(round + i + me);
    MP_OK(tether_put_local(w, inbox, local.data(), sz, next));
    MP_OK(tether_put_signal(w, inbox + sz, local.data(), 0, &sigs[me], round, TETHER_SIGNAL_SET, next));
    MP_OK(tether_signal_wait_until(w, &sigs[prev], TETHER_CMP_EQ, round, nullptr));
    for (size_t i = 0; i < sz; ++i) MP_CHECK(inbox[i] == static_cast<unsigned char>(round + i + prev));
    MP_OK(tether_sync_all(w));
  }
  for (int64_t round = 101; round <= 200; ++round) {
    const int64_t v = round * 3;
    MP_OK(tether_put_local(w, &fl[0], &v, sizeof v, next));
    MP_OK(tether_fence(w));
    MP_OK(tether_int64_p(w, &fl[1], round, next));
    MP_OK(tether_int64_wait_until(w, &fl[1], TETHER_CMP_EQ, round));
    MP_CHECK(fl[0] == round * 3);
    MP_OK(tether_sync_all(w));
  }

  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_rma: %d PEs OK\n", n);
  return mp::finish();
}
