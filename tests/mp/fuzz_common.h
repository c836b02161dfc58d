// What the multi-process fuzzers (stream_fuzz.h, device_fuzz.h) share: draws every PE makes alike from a key, the
// model of a 64-bit atomic, and PE 0's seed agreed by every PE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../unit/test_seed.h"
#include "mp_util.h"

namespace fuzz {

inline uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The same draws on every PE for the same key (no standard distribution: those may differ between libraries).
class Draw {
 public:
  explicit Draw(uint64_t key) : s_(mix(key)) {}
  uint64_t next() { return s_ = mix(s_); }
  size_t below(size_t k) { return static_cast<size_t>(next() % k); }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }

 private:
  uint64_t s_;
};

// The word after atomic op with operand v (cond: compare_swap's) on old.
inline uint64_t amoApply(tether_amo_t op, uint64_t old, uint64_t v, uint64_t cond) {
  switch (op) {
    case TETHER_AMO_FETCH: return old;
    case TETHER_AMO_SET: case TETHER_AMO_SWAP: return v;
    case TETHER_AMO_COMPARE_SWAP: return old == cond ? v : old;
    case TETHER_AMO_INC: case TETHER_AMO_FETCH_INC: return old + 1;
    case TETHER_AMO_ADD: case TETHER_AMO_FETCH_ADD: return old + v;
    case TETHER_AMO_AND: case TETHER_AMO_FETCH_AND: return old & v;
    case TETHER_AMO_OR: case TETHER_AMO_FETCH_OR: return old | v;
    case TETHER_AMO_XOR: case TETHER_AMO_FETCH_XOR: return old ^ v;
    default: return old;
  }
}
inline bool amoFetches(tether_amo_t op) {
  return op == TETHER_AMO_FETCH || op == TETHER_AMO_SWAP || op == TETHER_AMO_COMPARE_SWAP ||
         op == TETHER_AMO_FETCH_INC || op == TETHER_AMO_FETCH_ADD || op == TETHER_AMO_FETCH_AND ||
         op == TETHER_AMO_FETCH_OR || op == TETHER_AMO_FETCH_XOR;
}

// PE 0's seed on every PE (collective; PE 0 prints "name seed N": TETHER_TEST_SEED repeats a run).
inline uint64_t agreedSeed(tether_t w, const char* name) {
  auto* words = static_cast<uint64_t*>(mp::hostZeroed(w, 16));
  if (tether_my_pe(w) == 0) words[1] = tether::testSeed(name);
  MP_OK(tether_team_broadcast(tether_team_world(w), &words[0], &words[1], 1, TETHER_UINT64, 0));
  const uint64_t seed = words[0];
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_free(w, words));
  return seed;
}

// The rounds a fuzzer runs: the environment variable `var` if set, else `rounds`.
inline int rounds(const char* var, int rounds) {
  const char* e = std::getenv(var);
  return e ? std::atoi(e) : rounds;
}

// A zeroed symmetric object of `bytes` in segment seg (zeroed by a put to this PE: any segment; barrier before use).
inline void* symZeroed(tether_t w, tether_seg_kind_t seg, size_t bytes) {
  void* p = nullptr;
  MP_OK(tether_malloc_kind(w, seg, 64, bytes, &p));
  const std::vector<unsigned char> zero(bytes, 0);
  MP_OK(tether_put(w, p, zero.data(), bytes, tether_my_pe(w)));
  return p;
}

// The symmetric objects of a fuzzer's writers: for each of `writers` writers a region of `region` bytes, a signal word
// and a counter word, on every PE; zeroed everywhere when the constructor returns (collective), freed by the
// destructor (collective).
class WriterObjects {
 public:
  WriterObjects(tether_t w, tether_seg_kind_t seg, size_t writers, size_t region)
      : w_(w), writers_(writers), region_(region),
        data(static_cast<unsigned char*>(symZeroed(w, seg, writers * region))),
        sig(static_cast<uint64_t*>(symZeroed(w, seg, writers * 8))),
        cnt(static_cast<uint64_t*>(symZeroed(w, seg, writers * 8))) {
    MP_OK(tether_barrier_all(w));
  }
  ~WriterObjects() {
    for (void* p : {static_cast<void*>(data), static_cast<void*>(sig), static_cast<void*>(cnt)})
      MP_OK(tether_free(w_, p));
  }
  WriterObjects(const WriterObjects&) = delete;
  WriterObjects& operator=(const WriterObjects&) = delete;
  // This PE's copies, read by gets from itself (any segment).
  void read(std::vector<unsigned char>* d, std::vector<uint64_t>* s, std::vector<uint64_t>* c) const {
    const int me = tether_my_pe(w_);
    d->resize(writers_ * region_);
    s->resize(writers_);
    c->resize(writers_);
    MP_OK(tether_get(w_, d->data(), data, d->size(), me));
    MP_OK(tether_get(w_, s->data(), sig, writers_ * 8, me));
    MP_OK(tether_get(w_, c->data(), cnt, writers_ * 8, me));
  }

 private:
  tether_t w_;
  size_t writers_, region_;

 public:
  unsigned char* const data;
  uint64_t* const sig;
  uint64_t* const cnt;
};

// The team collectives' objects of a fuzzer: kMax int64 source and destination elements in a segment, zeroed on every
// PE (collective, as its destructor); round r's inputs drawn from the seed.
class CollObjects {
 public:
  static constexpr size_t kMax = 16;
  CollObjects(tether_t w, tether_seg_kind_t seg, uint64_t seed)
      : w_(w), seed_(seed), src(static_cast<int64_t*>(symZeroed(w, seg, kMax * 8))),
        dst(static_cast<int64_t*>(symZeroed(w, seg, kMax * 8))) {
    MP_OK(tether_barrier_all(w));
  }
  ~CollObjects() {
    MP_OK(tether_free(w_, src));
    MP_OK(tether_free(w_, dst));
  }
  CollObjects(const CollObjects&) = delete;
  CollObjects& operator=(const CollObjects&) = delete;
  int64_t value(int r, int pe, size_t i) const {
    return static_cast<int64_t>(mix(seed_ ^ (static_cast<uint64_t>(r) << 24) ^ (static_cast<uint64_t>(pe) << 8) ^ i) &
                                0xffff);
  }
  // This PE's inputs of round r into src, dst poisoned (-1); by puts to this PE (any segment).
  void fill(int r) {
    const int me = tether_my_pe(w_);
    int64_t in[kMax], out[kMax];
    for (size_t i = 0; i < kMax; ++i) {
      in[i] = value(r, me, i);
      out[i] = -1;
    }
    MP_OK(tether_put(w_, src, in, sizeof in, me));
    MP_OK(tether_put(w_, dst, out, sizeof out, me));
  }
  // "" or the first element that differs from round r's allreduce (sum; into src when inPlace) or broadcast from
  // root, of count elements (the others untouched).
  std::string check(int r, bool allreduce, size_t count, bool inPlace, int root) const {
    const int me = tether_my_pe(w_), n = tether_n_pes(w_);
    const bool inSrc = allreduce && inPlace;
    int64_t out[kMax];
    MP_OK(tether_get(w_, out, inSrc ? src : dst, sizeof out, me));
    for (size_t i = 0; i < kMax; ++i) {
      int64_t want = inSrc ? value(r, me, i) : -1;
      if (i < count && allreduce) {
        want = 0;
        for (int p = 0; p < n; ++p) want += value(r, p, i);
      } else if (i < count) {
        want = value(r, root, i);
      }
      if (out[i] != want)
        return "element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", expected " + std::to_string(want);
    }
    return "";
  }

 private:
  tether_t w_;
  uint64_t seed_;

 public:
  int64_t* const src;
  int64_t* const dst;
};

}  // namespace fuzz
