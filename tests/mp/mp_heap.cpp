// Collective allocation across PEs: symmetric offsets, growth beyond the initial heap (run with a small
// TETHER_HEAP_SIZE), calloc zeroing, realloc contents, free/reuse — with a seeded random call sequence.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "mp_util.h"

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  unsigned seed = 0;
  if (const char* s = std::getenv("MP_SEED")) seed = static_cast<unsigned>(std::strtoul(s, nullptr, 10));
  if (me == 0) std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);  // same seed on every PE: same call sequence, as the API requires

  void* p = nullptr;
  MP_OK(tether_calloc(w, 1, sizeof(uint64_t) * 4, &p));
  auto* base = static_cast<char*>(p);  // offsets are compared relative to this first block
  auto* box = static_cast<uint64_t*>(p);

  std::vector<std::pair<char*, size_t>> live;
  for (int step = 0; step < 60; ++step) {
    unsigned action = rng() % 4;
    if (action == 0 && !live.empty()) {
      size_t k = rng() % live.size();
      MP_OK(tether_free(w, live[k].first));
      live.erase(live.begin() + static_cast<long>(k));
      continue;
    }
    if (action == 1 && !live.empty()) {
      size_t k = rng() % live.size();
      size_t newSize = 1 + rng() % (3 << 20);
      char* old = live[k].first;
      size_t keep = std::min(newSize, live[k].second);
      for (size_t i = 0; i < keep; i += 4093) old[i] = static_cast<char>(i ^ me);
      void* q = nullptr;
      MP_OK(tether_realloc(w, old, newSize, &q));
      char* nq = static_cast<char*>(q);
      for (size_t i = 0; i < keep; i += 4093) MP_CHECK(nq[i] == static_cast<char>(i ^ me));
      live[k] = {nq, newSize};
    } else {
      size_t size = 1 + rng() % (2 << 20);
      MP_OK(tether_calloc(w, 1, size, &p));
      char* c = static_cast<char*>(p);
      for (size_t i = 0; i < size; i += 511) MP_CHECK(c[i] == 0);
      live.push_back({c, size});
    }
    // Symmetry: PE (me+1) tells me its offset of the newest block; it must equal mine.
    char* newest = live.back().first;
    uint64_t myOff = static_cast<uint64_t>(newest - base);
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    MP_OK(tether_uint64_p(w, &box[0], myOff, next));
    MP_OK(tether_barrier_all(w));
    MP_CHECK(box[0] == myOff);
    // Remote write into the newest block's last byte from prev (checks the peer's mapping covers grown memory).
    MP_OK(tether_barrier_all(w));
    char tag = static_cast<char>(me + 1);
    MP_OK(tether_put(w, newest + live.back().second - 1, &tag, 1, next));
    MP_OK(tether_barrier_all(w));
    MP_CHECK(newest[live.back().second - 1] == static_cast<char>(prev + 1));
    MP_OK(tether_barrier_all(w));
  }
  for (auto& b : live) MP_OK(tether_free(w, b.first));
  MP_OK(tether_free(w, base));
  if (me == 0) std::printf("mp_heap: %d PEs OK\n", n);
  return mp::finish();
}
