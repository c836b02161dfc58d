// What the multi-process fuzzers (stream_fuzz.h, device_fuzz.h, mp_coll_fuzz.cpp) share: draws every PE makes alike
// from a key, the model of a 64-bit atomic, PE 0's seed agreed by every PE, the writers' objects, the teams the
// data collectives run on and those collectives' objects with their reference.
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

// The team data collectives a fuzzer runs (int64 elements, sum), in the order of their names.
enum class CollKind { Allreduce, Broadcast, Reduce, Allgather, ReduceScatter, Alltoall, Count };
inline const char* collKindName(CollKind k) {
  static const char* const names[] = {"team_allreduce", "team_broadcast", "team_reduce", "team_allgather",
                                      "team_reduce_scatter", "team_alltoall"};
  return names[static_cast<int>(k)];
}

// The teams a fuzzer's data collectives run on: the world, the world reversed (stride -1), every other PE from 0, and
// every PE but 0; made at construction (collective over the world), destroyed with it.
class FuzzTeams {
 public:
  static constexpr int kCount = 4;
  explicit FuzzTeams(tether_t w) : teams_{tether_team_world(w)} {
    const int n = tether_n_pes(w);
    MP_OK(tether_team_split_strided(teams_[0], n - 1, -1, n, nullptr, &teams_[1]));
    MP_OK(tether_team_split_strided(teams_[0], 0, 2, (n + 1) / 2, nullptr, &teams_[2]));
    MP_OK(tether_team_split_strided(teams_[0], 1, 1, n - 1, nullptr, &teams_[3]));
  }
  ~FuzzTeams() {
    for (int i = 1; i < kCount; ++i) MP_OK(tether_team_destroy(teams_[i]));
  }
  FuzzTeams(const FuzzTeams&) = delete;
  FuzzTeams& operator=(const FuzzTeams&) = delete;
  // Team i on this PE; TETHER_TEAM_INVALID where it is not a member.
  tether_team_t get(int i) const { return teams_[i]; }
  static const char* name(int i) {
    static const char* const names[kCount] = {"world", "world reversed", "even PEs", "PEs 1.."};
    return names[i];
  }

 private:
  tether_team_t teams_[kCount] = {};
};

// The team collectives' objects of a fuzzer: kMax blocks of n_pes int64 elements each, source and destination, in a
// segment, zeroed on every PE (collective, as its destructor); round r's inputs drawn from the seed. One call: kind,
// team (this PE's handle: TETHER_TEAM_INVALID where it is not a member, whose objects must stay untouched), count
// (elements per block, 1..kMax), in place or not (docs/collectives.md: dest == src for allreduce, reduce and
// broadcast; src == dest + my_pe * count for allgather; dest == src + my_pe * count for reduce_scatter; alltoall
// never), root (a team PE number).
class CollObjects {
 public:
  static constexpr size_t kMax = 16;
  struct Call {
    CollKind kind = CollKind::Allreduce;
    tether_team_t team = TETHER_TEAM_INVALID;
    int teamIndex = 0;  // in FuzzTeams
    const char* teamName = "";
    size_t count = 1;
    bool inPlace = false;
    int root = 0;  // taken modulo the team's size (teamRoot)
    bool member() const { return team != TETHER_TEAM_INVALID; }
    int teamRoot() const { return root % tether_team_n_pes(team); }
  };
  CollObjects(tether_t w, tether_seg_kind_t seg, uint64_t seed)
      : w_(w), seed_(seed), me_(tether_my_pe(w)), elems_(kMax * static_cast<size_t>(tether_n_pes(w))),
        src(static_cast<int64_t*>(symZeroed(w, seg, elems_ * 8))),
        dst(static_cast<int64_t*>(symZeroed(w, seg, elems_ * 8))) {
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
  // The call's in-place flag as the kind allows it.
  static bool inPlace(const Call& c) { return c.inPlace && c.kind != CollKind::Alltoall; }
  // The call's dest and src (symmetric addresses) on a member.
  void args(const Call& c, int64_t** d, int64_t** s) const {
    const size_t mine = static_cast<size_t>(tether_team_my_pe(c.team)) * c.count;
    *d = dst;
    *s = src;
    if (!inPlace(c)) return;
    if (c.kind == CollKind::Allgather) *s = dst + mine;
    else if (c.kind == CollKind::ReduceScatter) *d = src + mine;
    else *d = src;
  }
  // This PE's inputs of round r into src (every element), dst poisoned (-1) but for an in-place allgather's own
  // block (its input); by puts to this PE (any segment).
  void fill(int r, const Call& c) {
    std::vector<int64_t> in, out;
    expectedInputs(r, c, &in, &out);
    MP_OK(tether_put(w_, src, in.data(), elems_ * 8, me_));
    MP_OK(tether_put(w_, dst, out.data(), elems_ * 8, me_));
  }
  // "" or the first element of src or dst that differs from what round r's call leaves there (a non-member's: its
  // inputs).
  std::string check(int r, const Call& c) const {
    std::vector<int64_t> ws, wd;
    expectedInputs(r, c, &ws, &wd);
    const bool ip = inPlace(c);
    const int n = c.member() ? tether_team_n_pes(c.team) : 0, me = c.member() ? tether_team_my_pe(c.team) : -1;
    const size_t mine = static_cast<size_t>(me) * c.count;
    auto pe = [&](int m) { return tether_team_world_pe(c.team, m); };
    auto sum = [&](size_t i) {
      int64_t v = 0;
      for (int m = 0; m < n; ++m) v += value(r, pe(m), i);
      return v;
    };
    for (size_t i = 0; i < c.count && c.member(); ++i) switch (c.kind) {
        case CollKind::Allreduce: (ip ? ws : wd)[i] = sum(i); break;
        case CollKind::Reduce: if (me == c.teamRoot()) (ip ? ws : wd)[i] = sum(i); break;
        case CollKind::Broadcast: (ip ? ws : wd)[i] = value(r, pe(c.teamRoot()), i); break;
        case CollKind::ReduceScatter: (ip ? ws : wd)[(ip ? mine : 0) + i] = sum(mine + i); break;
        case CollKind::Allgather:
          for (int m = 0; m < n; ++m) wd[static_cast<size_t>(m) * c.count + i] = value(r, pe(m), i);
          break;
        default:
          for (int m = 0; m < n; ++m) wd[static_cast<size_t>(m) * c.count + i] = value(r, pe(m), mine + i);
      }
    std::vector<int64_t> gs(elems_), gd(elems_);
    MP_OK(tether_get(w_, gs.data(), src, elems_ * 8, me_));
    MP_OK(tether_get(w_, gd.data(), dst, elems_ * 8, me_));
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < elems_; ++i) {
        const int64_t got = (k ? gd : gs)[i], want = (k ? wd : ws)[i];
        if (got != want)
          return std::string(collKindName(c.kind)) + " on " + c.teamName + (c.member() ? "" : " (not a member)") +
                 " (count " + std::to_string(c.count) + (ip ? ", in place" : "") + ", root " +
                 std::to_string(c.member() ? c.teamRoot() : -1) + "): " + (k ? "dest" : "src") + " element " +
                 std::to_string(i) + " is " + std::to_string(got) + ", expected " + std::to_string(want);
      }
    return "";
  }

 private:
  void expectedInputs(int r, const Call& c, std::vector<int64_t>* in, std::vector<int64_t>* out) const {
    in->resize(elems_);
    out->assign(elems_, -1);
    for (size_t i = 0; i < elems_; ++i) (*in)[i] = value(r, me_, i);
    if (c.kind == CollKind::Allgather && inPlace(c) && c.member())
      for (size_t i = 0; i < c.count; ++i)
        (*out)[static_cast<size_t>(tether_team_my_pe(c.team)) * c.count + i] = value(r, me_, i);
  }

  tether_t w_;
  uint64_t seed_;
  int me_;
  size_t elems_;

 public:
  int64_t* const src;
  int64_t* const dst;
};

// Round r's data collective call of kind `kind` (a fuzzer's draw dc, the same on every PE): its team among teams
// (this PE's handle), count, in-place flag and root.
inline CollObjects::Call drawCollCall(Draw& dc, CollKind kind, const FuzzTeams& teams, int npes) {
  CollObjects::Call call;
  call.kind = kind;
  const int ti = static_cast<int>(dc.below(FuzzTeams::kCount));
  call.team = teams.get(ti);
  call.teamIndex = ti;
  call.teamName = FuzzTeams::name(ti);
  call.count = 1 + dc.below(CollObjects::kMax);
  call.inPlace = dc.chance(30);
  call.root = static_cast<int>(dc.below(static_cast<size_t>(npes)));
  return call;
}

}  // namespace fuzz
