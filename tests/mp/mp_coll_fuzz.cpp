// The host collectives fuzz (issue #21): random sequences of the team collectives of the C API (tether.h) called
// from the host on HOST memory (or GPU memory: COLL_FUZZ_SEG below), against a reference each PE computes
// (coll_types.h). Every round, every PE draws from PE 0's seed the same list of 1-6 calls. A call: a team of seven
// (the world, the world reversed, every other PE, PEs 1.., this PE's row and its column of a 2-wide grid, and a team
// destroyed and split anew with a random start, stride and size at the start of about a third of the rounds, its index
// free for reuse), a kind (team_sync, broadcast, broadcast_eager, reduce, allreduce, allgather, reduce_scatter,
// alltoall, alltoall_eager after a team sync, alltoallv), an element type, a reduction op the type allows, a count (0
// up to 128 KiB, log-uniform), in place where the kind has a form, a root. The members of its team run the calls in
// order with no barrier between them, and the same two symmetric objects serve every call: a member rewrites its src
// and poisons its dest while others may still be in an earlier call on another team (the contract: a collective reads
// a member's src and writes its dest only once that member has entered it, and src may be reused at return). Each
// member checks its result at return: dest (and src in place) element by element, and the elements after the result
// untouched. About 4 % of the agreed calls are mismatched (team PE 0 passes count + 1): every member must fail with
// TETHER_ERR_MISMATCH, and the team stays usable. Prints its seed (TETHER_TEST_SEED repeats a run);
// COLL_FUZZ_ROUNDS sets the rounds (default 500). COLL_FUZZ_SEG=device: the objects in GPU memory (gpu_coll_fuzz_*,
// label gpu; exits 77 where the DEVICE segment cannot be had); they are written and read by puts and gets to this PE,
// so the same code serves both.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll_types.h"
#include "fuzz_common.h"
#include "mp_util.h"

namespace {

using coll_types::TypeInfo;
using fuzz::Draw;

constexpr size_t kMaxBytes = 128 * 1024;  // of each object's bytes a call uses (the rest: guard)
constexpr size_t kGuard = 64;             // bytes after a result that must stay as they were

enum Kind { kSync, kBroadcast, kBroadcastEager, kReduce, kAllreduce, kAllgather, kReduceScatter, kAlltoall,
            kAlltoallEager, kAlltoallv, kKinds };
const char* const kKindNames[kKinds] = {"team_sync", "broadcast", "broadcast_eager", "reduce", "allreduce",
                                        "allgather", "reduce_scatter", "alltoall", "alltoall_eager", "alltoallv"};
constexpr int kTeams = 7;
const char* const kTeamNames[kTeams] = {"world", "world reversed", "even PEs", "PEs 1..", "grid row", "grid column",
                                        "churned team"};

struct Call {
  int kind = kSync, team = 0;
  const TypeInfo* ti = nullptr;
  tether_red_op_t op = TETHER_RED_SUM;
  size_t count = 0;
  bool inPlace = false, mismatch = false;
  int root = 0;  // a team PE number (modulo the team's size)
  uint64_t id = 0;
};

class CollFuzz {
 public:
  CollFuzz(tether_t w, tether_seg_kind_t seg, uint64_t seed)
      : w_(w), seed_(seed), me_(tether_my_pe(w)), n_(tether_n_pes(w)), teams_(w) {
    a_ = static_cast<char*>(fuzz::symZeroed(w, seg, kMaxBytes + kGuard));
    b_ = static_cast<char*>(fuzz::symZeroed(w, seg, kMaxBytes + kGuard));
    scounts_ = static_cast<size_t*>(mp::hostZeroed(w, static_cast<size_t>(n_) * sizeof(size_t)));
    sdispls_ = static_cast<size_t*>(mp::hostZeroed(w, static_cast<size_t>(n_) * sizeof(size_t)));
    MP_OK(tether_team_split_2d(tether_team_world(w), 2, nullptr, &row_, nullptr, &col_));
    MP_OK(tether_barrier_all(w));
  }
  ~CollFuzz() {
    MP_OK(tether_barrier_all(w_));
    MP_OK(tether_team_destroy(row_));
    MP_OK(tether_team_destroy(col_));
    MP_OK(tether_team_destroy(churn_));
    for (void* p : {static_cast<void*>(a_), static_cast<void*>(b_), static_cast<void*>(scounts_),
                    static_cast<void*>(sdispls_)})
      MP_OK(tether_free(w_, p));
  }

  void run(int rounds) {
    for (int r = 0; r < rounds; ++r) {
      Draw d(seed_ ^ (static_cast<uint64_t>(r) << 32) ^ 0xc0);
      if (r == 0 || d.chance(30)) churn(d);
      const size_t calls = 1 + d.below(6);
      for (size_t k = 0; k < calls; ++k) {
        Call c = draw(d);
        c.id = static_cast<uint64_t>(r) * 8 + k + 1;
        const tether_team_t t = team(c.team);
        if (t != TETHER_TEAM_INVALID) runCall(r, t, c);
      }
      if (d.chance(20)) MP_OK(tether_barrier_all(w_));
    }
    if (me_ == 0) {
      std::printf("coll fuzz: %d PEs, %d rounds: ok;", n_, rounds);
      for (int k = 0; k < kKinds; ++k) std::printf(" %s %d,", kKindNames[k], counts_[k]);
      std::printf(" in place %d, mismatched %d, teams churned %d\n", inPlace_, mismatched_, churns_);
    }
  }

 private:
  tether_team_t team(int i) const { return i == 4 ? row_ : i == 5 ? col_ : i == 6 ? churn_ : teams_.get(i); }

  // The churned team: destroyed (its index free again; a member's destroy waits for the others to finish its data
  // collectives on it) and split anew from the world with a random start, stride (-3..3) and size: the new team
  // may take the old one's index, whose words must then be fresh for it.
  void churn(Draw& d) {
    MP_OK(tether_team_destroy(churn_));
    churn_ = TETHER_TEAM_INVALID;
    const int start = static_cast<int>(d.below(static_cast<size_t>(n_)));
    int stride = static_cast<int>(d.below(7)) - 3;
    if (stride == 0) stride = 1;
    const int most = stride > 0 ? (n_ - 1 - start) / stride + 1 : start / -stride + 1;
    const int size = 1 + static_cast<int>(d.below(static_cast<size_t>(most)));
    MP_OK(tether_team_split_strided(tether_team_world(w_), start, size == 1 ? 0 : stride, size, nullptr, &churn_));
    churns_++;
  }
  static bool blocks(int k) { return k >= kAllgather; }  // the objects hold n_pes blocks

  Call draw(Draw& d) const {
    Call c;
    c.kind = static_cast<int>(d.below(kKinds));
    c.team = static_cast<int>(d.below(kTeams));
    const size_t nt = sizeof coll_types::kTypes / sizeof coll_types::kTypes[0];
    c.ti = &coll_types::kTypes[d.below(nt)];
    const bool fl = c.ti->cls == TypeInfo::F;
    c.op = static_cast<tether_red_op_t>(d.below(fl ? 4 : TETHER_RED_COUNT));
    // Elements per block (a team has at most n_ members): log-uniform, some 0.
    const size_t max = (kMaxBytes / c.ti->size) / (blocks(c.kind) ? static_cast<size_t>(n_) : 1);
    size_t bits = 0;
    while ((size_t{2} << bits) <= max) ++bits;
    c.count = d.chance(3) ? 0 : 1 + d.below(std::min(max, size_t{1} << d.below(bits + 1)));
    c.inPlace = c.kind != kSync && c.kind != kAlltoall && c.kind != kAlltoallEager && c.kind != kAlltoallv &&
                c.kind != kBroadcastEager && d.chance(30);
    c.root = static_cast<int>(d.below(64));
    c.mismatch = c.kind != kSync && c.kind != kBroadcastEager && c.kind != kAlltoallEager && c.kind != kAlltoallv &&
                 c.count < max && d.chance(4);
    return c;
  }

  uint64_t in(const Call& c, int m, size_t i) const { return coll_types::input(seed_, *c.ti, c.id, m, i); }
  // Elements sender j sends receiver m in an alltoallv (0..count).
  size_t vcount(const Call& c, int j, int m) const {
    return static_cast<size_t>(fuzz::mix(c.id * 131 + static_cast<uint64_t>(j) * 17 + static_cast<uint64_t>(m)) %
                               (c.count + 1));
  }

  void runCall(int r, tether_team_t t, const Call& c) {
    const int n = tether_team_n_pes(t), my = tether_team_my_pe(t), root = c.root % n;
    const size_t sz = c.ti->size, cnt = c.count, mine = static_cast<size_t>(my) * cnt;
    const tether_dtype_t ty = c.ti->t;
    counts_[c.kind]++;
    inPlace_ += c.inPlace;
    // Where src and dest lie (object A or B, element offset), how many elements src holds and the result has.
    bool srcInA = true, dstInA = false;
    size_t srcAt = 0, dstAt = 0;
    if (c.inPlace) {
      if (c.kind == kAllgather) srcInA = false, srcAt = mine;
      else if (c.kind == kReduceScatter) dstInA = true, dstAt = mine;
      else dstInA = true;
    }
    const bool blockKind = c.kind == kAllgather || c.kind == kAlltoall || c.kind == kAlltoallEager;
    size_t srcElems = blocks(c.kind) && c.kind != kAllgather ? static_cast<size_t>(n) * cnt : cnt;
    size_t resultElems = blockKind ? static_cast<size_t>(n) * cnt : cnt;
    std::vector<size_t> rcounts(static_cast<size_t>(n)), rdispls(static_cast<size_t>(n));
    if (c.kind == kAlltoallv) {
      size_t at = 0;
      for (int m = 0; m < n; ++m) {
        scounts_[m] = vcount(c, my, m);
        sdispls_[m] = at;
        at += scounts_[m];
      }
      srcElems = at;
      at = 0;
      for (int j = 0; j < n; ++j) {
        rcounts[static_cast<size_t>(j)] = vcount(c, j, my);
        rdispls[static_cast<size_t>(j)] = at;
        at += rcounts[static_cast<size_t>(j)];
      }
      resultElems = at;
    }
    // The objects' images up to a guard past the last element stored or written: poison, then this member's inputs
    // (an in-place allgather's own block in dest); stored by puts to this PE (any segment).
    const size_t elems = kMaxBytes / sz;
    size_t endA = srcInA ? srcAt + srcElems : 0, endB = srcInA ? 0 : srcAt + srcElems;
    size_t& endD = dstInA ? endA : endB;
    endD = std::max(endD, dstAt + resultElems);
    endA = std::min(elems, endA + kGuard / sz);
    endB = std::min(elems, endB + kGuard / sz);
    std::vector<uint64_t> wantA(endA, 0x5a5a5a5a5a5a5a5aull >> (64 - 8 * sz));
    std::vector<uint64_t> wantB(endB, 0xa5a5a5a5a5a5a5a5ull >> (64 - 8 * sz));
    std::vector<uint64_t>& S = srcInA ? wantA : wantB;
    for (size_t i = 0; i < srcElems; ++i) S[srcAt + i] = in(c, my, i);
    putImage(a_, wantA, sz);
    putImage(b_, wantB, sz);
    char* src = (srcInA ? a_ : b_) + srcAt * sz;
    char* dst = (dstInA ? a_ : b_) + dstAt * sz;
    const bool mismatch = c.mismatch && n > 1;  // (a team of one agrees with itself)
    const size_t passed = mismatch && my == 0 ? cnt + 1 : cnt;
    tether_status_t st = TETHER_SUCCESS;
    switch (c.kind) {
      case kSync: st = tether_team_sync(t); break;
      case kBroadcast: st = tether_team_broadcast(t, dst, src, passed, ty, root); break;
      case kBroadcastEager: st = tether_team_broadcast_eager(t, dst, src, passed, ty, root); break;
      case kReduce: st = tether_team_reduce(t, dst, src, passed, ty, c.op, root); break;
      case kAllreduce: st = tether_team_allreduce(t, dst, src, passed, ty, c.op); break;
      case kAllgather: st = tether_team_allgather(t, dst, src, passed, ty); break;
      case kReduceScatter: st = tether_team_reduce_scatter(t, dst, src, passed, ty, c.op); break;
      case kAlltoall: st = tether_team_alltoall(t, dst, src, passed, ty); break;
      case kAlltoallEager:  // its precondition: every member's dest free once any member enters (a sync after the
        MP_OK(tether_team_sync(t));  // images were stored)
        st = tether_team_alltoall_eager(t, dst, src, passed, ty);
        break;
      default:
        st = tether_team_alltoallv(t, dst, rcounts.data(), rdispls.data(), src, scounts_, sdispls_, ty);
        break;
    }
    const std::string where = std::string(kKindNames[c.kind]) + " on " + kTeamNames[c.team] + " (type " +
                              c.ti->name + ", op " + std::to_string(c.op) + ", count " + std::to_string(cnt) +
                              (c.inPlace ? ", in place" : "") + ", root " + std::to_string(root) + ", round " +
                              std::to_string(r) + ")";
    if (mismatch) {
      mismatched_ += my == 0;
      if (st != TETHER_ERR_MISMATCH)
        fail(where, "team PE 0 passed count " + std::to_string(cnt + 1) + ": status " + std::to_string(st) +
                        ", expected TETHER_ERR_MISMATCH (" + tether_last_error() + ")");
      return;
    }
    if (st != TETHER_SUCCESS) fail(where, std::string("failed: ") + tether_last_error());
    if (c.kind == kSync) return;
    // The result on top of the images.
    std::vector<uint64_t>& want = dstInA ? wantA : wantB;
    auto D = [&](size_t i) -> uint64_t& { return want.at(dstAt + i); };
    auto reduce = [&](size_t i) {
      uint64_t v = in(c, 0, i);
      for (int m = 1; m < n; ++m) v = coll_types::combine(*c.ti, c.op, v, in(c, m, i));
      return v;
    };
    switch (c.kind) {
      case kBroadcast: case kBroadcastEager:
        for (size_t i = 0; i < cnt; ++i) D(i) = in(c, root, i);
        break;
      case kReduce:
        for (size_t i = 0; i < cnt && my == root; ++i) D(i) = reduce(i);
        break;
      case kAllreduce:
        for (size_t i = 0; i < cnt; ++i) D(i) = reduce(i);
        break;
      case kReduceScatter:
        for (size_t i = 0; i < cnt; ++i) D(i) = reduce(mine + i);
        break;
      case kAllgather:
        for (int m = 0; m < n; ++m)
          for (size_t i = 0; i < cnt; ++i) D(static_cast<size_t>(m) * cnt + i) = in(c, m, i);
        break;
      case kAlltoall: case kAlltoallEager:
        for (int m = 0; m < n; ++m)
          for (size_t i = 0; i < cnt; ++i) D(static_cast<size_t>(m) * cnt + i) = in(c, m, mine + i);
        break;
      default:
        for (int j = 0; j < n; ++j) {
          size_t sd = 0;  // sender j's displacement of its block for this member
          for (int m = 0; m < my; ++m) sd += vcount(c, j, m);
          for (size_t i = 0; i < rcounts[static_cast<size_t>(j)]; ++i)
            D(rdispls[static_cast<size_t>(j)] + i) = in(c, j, sd + i);
        }
    }
    compare(where, "object A (src)", a_, wantA, *c.ti);
    compare(where, "object B (dest)", b_, wantB, *c.ti);
  }

  // The elements of image into object obj's start (a put to this PE: any segment).
  void putImage(char* obj, const std::vector<uint64_t>& image, size_t sz) const {
    std::vector<char> bytes(image.size() * sz);
    for (size_t i = 0; i < image.size(); ++i) coll_types::store(bytes.data(), i, sz, image[i]);
    MP_OK(tether_put(w_, obj, bytes.data(), bytes.size(), me_));
  }

  // Object obj's first want.size() elements (read by a get from this PE: any segment) against want.
  void compare(const std::string& where, const char* what, const char* obj, const std::vector<uint64_t>& want,
               const TypeInfo& ti) const {
    std::vector<char> got(want.size() * ti.size);
    MP_OK(tether_get(w_, got.data(), obj, got.size(), me_));
    for (size_t i = 0; i < want.size(); ++i) {
      const uint64_t g = coll_types::load(got.data(), i, ti.size);
      if (!coll_types::sameValue(ti, g, want[i]))
        fail(where, std::string(what) + " element " + std::to_string(i) + " is 0x" + hex(g) + ", expected 0x" +
                        hex(want[i]));
    }
  }
  static std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%" PRIx64, v);
    return b;
  }
  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    std::fprintf(stderr, "FAIL PE %d (seed %" PRIu64 "): %s: %s\n", me_, seed_, where.c_str(), why.c_str());
    std::exit(1);
  }

  tether_t w_;
  const uint64_t seed_;
  const int me_, n_;
  fuzz::FuzzTeams teams_;
  tether_team_t row_ = TETHER_TEAM_INVALID, col_ = TETHER_TEAM_INVALID, churn_ = TETHER_TEAM_INVALID;
  char* a_ = nullptr;
  char* b_ = nullptr;
  size_t* scounts_ = nullptr;
  size_t* sdispls_ = nullptr;
  int counts_[kKinds] = {};
  int inPlace_ = 0, mismatched_ = 0, churns_ = 0;
};

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const char* segName = std::getenv("COLL_FUZZ_SEG");
  const bool device = segName && std::strcmp(segName, "device") == 0;
  if (device) {  // (collective: every PE learns the same)
    void* probe = nullptr;
    if (tether_malloc_kind(w, TETHER_SEG_DEVICE, 64, 64, &probe) != TETHER_SUCCESS) {
      if (tether_my_pe(w) == 0) std::printf("SKIP: no DEVICE segment (%s)\n", tether_last_error());
      mp::finish();
      return 77;
    }
    MP_OK(tether_free(w, probe));
  }
  {
    CollFuzz f(w, device ? TETHER_SEG_DEVICE : TETHER_SEG_HOST, fuzz::agreedSeed(w, "mp_coll_fuzz"));
    f.run(fuzz::rounds("COLL_FUZZ_ROUNDS", 500));
  }
  return mp::finish();
}
