// mp_coll_by_host: collectives by host (core/collectives.h "By host": where a team's PEs span hosts with 2+ on some
// host, allreduce: each host's members reduce into its first member, those allreduce among themselves, each
// broadcasts on its host; allgather alike; broadcast: the root to the other hosts' first members, each on its
// host). Run across the netns hosts (tests/netns), where it takes that path; on one host the same checks run
// through the flat path. Every PE checks:
//  1. results: the world, the world reversed and the even PEs; allreduce of double (integral values: exact in any
//     association) with sum and max, and of long with sum, min and xor; 1 to 40000 elements (one-shot, pulled and
//     two-shot sizes of the flat path), in place and not; allgather of 1 to 3000 longs per member, in place and not
//     (by host where each host's members are consecutive and as many: in the netns jobs of 4 and 8 PEs the world
//     and the split team, at 8 the even PEs too; 3 PEs (1 + 2) pull); each PE's result against a reference.
//     Broadcasts of 1 to 30000 longs from every root, agreed and eager, each member's dest at its own offset, the
//     root in place or not (by host, over 2 KiB where the root is its host's first member), checked with the longs
//     around dest.
//  2. team indices (MP_BY_HOST_SPANS=1: the job spans hosts so): a team used by host holds more team indices (its
//     subteams, made by its first broadcast) than before, and destroying it gives all of them back.
//     Rooted reduces from every root (fewer for the large sizes): double sum, long min and xor, 1 to 39990 elements
//     (by host over 2 KiB up to 32 KiB), in place and not; the root's result, and every dest and src left as it was
//     where the call must not write (all of a non-root's dest).
//     Reduce_scatters: double sum, long min and xor, 1 to 4100 elements per member (by host where the whole src is
//     up to 32 KiB and the hosts' members are consecutive and as many: each host's members into its first
//     member's scratch, those reduce_scatter, each broadcasts its host's blocks), in place and not; each member's
//     block, and the rest of dest and src left as it was.
//     Alltoalls: 1 to 1000 longs per block (by host where twice a host's whole srcs fit 32 KiB and the hosts' members
//     are consecutive and as many: each host's members allgather their srcs, the first members alltoall the blocks
//     between hosts, each broadcasts what it got on its host); each member's dest against the senders' blocks, the
//     longs after dest and all of src untouched.
//  3. no free index: with every index but the team's own in use, the team's first allreduce cannot make its
//     subteams; every member goes on without them (the flat path) with the right results (broadcasts too), then
//     and later.
//  4. MP_BY_HOST_PE0=1: PE 0's TETHER_COLL_BY_HOST differs from the others': every member fails with
//     TETHER_ERR_MISMATCH at once (the setting is in the record; the message names it), broadcasts too, and the
//     team stays usable.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <vector>

#include "mp_util.h"

namespace {

tether_t w;
int me = 0, npes = 0;
uint64_t seed = 0;
constexpr size_t kMaxCount = 40000;
double* dsrc;
double* ddst;
long* lsrc;
long* ldst;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}
// Element i of world PE pe's contribution in round r.
long value(int pe, size_t i, int r) {
  return static_cast<long>(mix(seed ^ mix(static_cast<uint64_t>(pe) << 40 ^ i << 8 ^ static_cast<uint64_t>(r))) %
                           2001) - 1000;
}

// Every allreduce case on team t (members[k]: world PE of team PE k), round numbers from r0.
void results(tether_team_t t, const std::vector<int>& members, const char* name, int r0) {
  const int myIndex = tether_team_my_pe(t);
  if (myIndex < 0) return;
  static const size_t counts[] = {1, 5, 256, 300, 2100, 9000, 40000};
  int r = r0;
  for (size_t count : counts) {
    for (int inPlace = 0; inPlace < 2; ++inPlace, ++r) {
      const int me2 = members[static_cast<size_t>(myIndex)];
      for (size_t i = 0; i < count; ++i) {
        dsrc[i] = static_cast<double>(value(me2, i, r));
        lsrc[i] = value(me2, i, r) * 1000003L;
      }
      // double sum, then max
      for (int op = 0; op < 2; ++op) {
        const tether_red_op_t o = op == 0 ? TETHER_RED_SUM : TETHER_RED_MAX;
        double* d = inPlace ? dsrc : ddst;
        if (inPlace && op == 1)  // the sum overwrote src: make it again
          for (size_t i = 0; i < count; ++i) dsrc[i] = static_cast<double>(value(me2, i, r));
        MP_OK(tether_team_allreduce(t, d, dsrc, count, TETHER_DOUBLE, o));
        for (size_t i = 0; i < count; ++i) {
          double want = op == 0 ? 0.0 : -1e300;
          for (int m : members) {
            const double v = static_cast<double>(value(m, i, r));
            want = op == 0 ? want + v : (v > want ? v : want);
          }
          if (d[i] != want) {
            std::fprintf(stderr, "PE %d: %s double %s count %zu%s: element %zu is %.1f, want %.1f\n", me, name,
                         op == 0 ? "sum" : "max", count, inPlace ? " in place" : "", i, d[i], want);
            MP_CHECK(false);
          }
        }
        MP_OK(tether_team_sync(t));  // the next case rewrites src
      }
      static const tether_red_op_t lops[] = {TETHER_RED_SUM, TETHER_RED_MIN, TETHER_RED_XOR};
      for (tether_red_op_t o : lops) {
        for (size_t i = 0; i < count; ++i) lsrc[i] = value(me2, i, r) * 1000003L;
        long* d = inPlace ? lsrc : ldst;
        MP_OK(tether_team_allreduce(t, d, lsrc, count, TETHER_LONG, o));
        for (size_t i = 0; i < count; ++i) {
          long want = o == TETHER_RED_MIN ? value(members[0], i, r) * 1000003L : 0;
          for (int m : members) {
            const long v = value(m, i, r) * 1000003L;
            want = o == TETHER_RED_SUM ? want + v : o == TETHER_RED_MIN ? (v < want ? v : want) : want ^ v;
          }
          if (d[i] != want) {
            std::fprintf(stderr, "PE %d: %s long op %d count %zu%s: element %zu is %ld, want %ld\n", me, name,
                         static_cast<int>(o), count, inPlace ? " in place" : "", i, d[i], want);
            MP_CHECK(false);
          }
        }
        MP_OK(tether_team_sync(t));
      }
    }
  }
  if (myIndex == 0) std::printf("mp_coll_by_host: %s (%zu PEs): allreduce results OK\n", name, members.size());
}

// Allgather on team t (by host where each host's members are consecutive in t and every host holds as many; the
// other teams check the flat path beside it): blocks of 1 to 3000 longs, in place and not.
void gathered(tether_team_t t, const std::vector<int>& members, const char* name, int r0) {
  const int myIndex = tether_team_my_pe(t);
  if (myIndex < 0) return;
  const size_t n = members.size();
  static const size_t counts[] = {1, 3, 100, 257, 3000};
  int r = r0;
  for (size_t count : counts) {
    if (count * n > kMaxCount) continue;
    for (int inPlace = 0; inPlace < 2; ++inPlace, ++r) {
      const int mine = members[static_cast<size_t>(myIndex)];
      long* src = inPlace ? ldst + static_cast<size_t>(myIndex) * count : lsrc;
      for (size_t i = 0; i < count; ++i) src[i] = value(mine, i, r);
      MP_OK(tether_team_allgather(t, ldst, src, count, TETHER_LONG));
      for (size_t m = 0; m < n; ++m)
        for (size_t i = 0; i < count; ++i)
          if (ldst[m * count + i] != value(members[m], i, r)) {
            std::fprintf(stderr, "PE %d: %s allgather count %zu%s: block %zu element %zu is %ld, want %ld\n", me, name,
                         count, inPlace ? " in place" : "", m, i, ldst[m * count + i], value(members[m], i, r));
            MP_CHECK(false);
          }
      MP_OK(tether_team_sync(t));  // the next case rewrites dest
    }
  }
  if (myIndex == 0) std::printf("mp_coll_by_host: %s (%zu PEs): allgather results OK\n", name, n);
}

// Broadcasts on team t from every root (by host: up to 2 KiB from any root, the root's staged copy to its host and
// the other hosts' first members; over 2 KiB where the root is its host's first member, the leaders' broadcast;
// otherwise every member pulls), then each host's first member to its host (eager): 1 to 30000 longs (the inline,
// staged and pulled sizes of the eager form on a host), the agreed and the eager form in turn. Each member's dest
// lies at its own offset (a broadcast's dests need not be one object), the root in place or not (in place: its
// dest, which is its src, untouched); the longs around each dest stay as they were, and the root's src too.
void broadcasts(tether_team_t t, const std::vector<int>& members, const char* name, int r0) {
  const int myIndex = tether_team_my_pe(t);
  if (myIndex < 0) return;
  const int n = static_cast<int>(members.size());
  static const size_t counts[] = {1, 100, 300, 1000, 30000};
  constexpr size_t kAround = 8;
  const size_t shift = static_cast<size_t>(myIndex) * 3 % 7;
  auto untouched = [](size_t i) { return -7 - static_cast<long>(i); };
  int r = r0;
  // First one call from root 0: then each host's roots make an odd number of calls before the next host's (the
  // members' staging buffers of small broadcasts must alternate alike on every member, whoever is root).
  for (size_t i = 0; i < 3; ++i) lsrc[i] = myIndex == 0 ? value(members[0], i, r) : -1;
  MP_OK(tether_team_broadcast(t, ldst, lsrc, 3, TETHER_LONG, 0));
  for (size_t i = 0; i < 3; ++i) MP_CHECK(ldst[i] == value(members[0], i, r));
  MP_OK(tether_team_sync(t));
  ++r;
  for (size_t count : counts) {
    for (int root = 0; root < n; ++root) {
      for (int inPlace = 0; inPlace < 2; ++inPlace, ++r) {
        const bool isRoot = myIndex == root, rootInPlace = inPlace && isRoot;
        const bool eager = r % 2 != 0;
        for (size_t i = 0; i < count + 2 * kAround; ++i) ldst[i] = untouched(i);
        for (size_t i = 0; i < count; ++i) lsrc[i] = isRoot ? value(members[static_cast<size_t>(root)], i, r) : -1;
        long* dest = rootInPlace ? lsrc : ldst + kAround + shift;
        MP_OK(eager ? tether_team_broadcast_eager(t, dest, lsrc, count, TETHER_LONG, root)
                    : tether_team_broadcast(t, dest, lsrc, count, TETHER_LONG, root));
        for (size_t i = 0; i < count + 2 * kAround; ++i) {
          const bool inDest = !rootInPlace && i >= kAround + shift && i < kAround + shift + count;
          const long want = inDest ? value(members[static_cast<size_t>(root)], i - kAround - shift, r) : untouched(i);
          if (ldst[i] != want) {
            std::fprintf(stderr, "PE %d: %s %s broadcast from root %d, count %zu%s: dest long %ld is %ld, want %ld\n",
                         me, name, eager ? "eager" : "agreed", root, count, rootInPlace ? " (root in place)" : "",
                         static_cast<long>(i) - static_cast<long>(kAround + shift), ldst[i], want);
            MP_CHECK(false);
          }
        }
        if (isRoot)
          for (size_t i = 0; i < count; ++i) MP_CHECK(lsrc[i] == value(members[static_cast<size_t>(root)], i, r));
        MP_OK(tether_team_sync(t));  // the next case rewrites src and dest
      }
    }
  }
  if (myIndex == 0) std::printf("mp_coll_by_host: %s (%d PEs): broadcast results OK\n", name, n);
}

// The rooted reduce and reduce_scatter cases' ops (r % 3): 0 double sum (integral values), 1 long min, 2 long xor.
tether_red_op_t caseOp(int kind) { return kind == 0 ? TETHER_RED_SUM : kind == 1 ? TETHER_RED_MIN : TETHER_RED_XOR; }
const char* caseName(int kind) { return kind == 0 ? "double sum" : kind == 1 ? "long min" : "long xor"; }
// A case of round r on world PE pe: kind r % 3, its element size, src (srcCount + kAround elements of pe's values)
// and dest (destCount + kAround sentinels) in the case's type.
struct Case {
  int kind;
  size_t es;
  char* src;
  char* dst;
};
constexpr size_t kAround = 8;
Case prepare(int r, int pe, size_t destCount, size_t srcCount) {
  const int kind = r % 3;
  Case c{kind, kind == 0 ? sizeof(double) : sizeof(long),
         kind == 0 ? reinterpret_cast<char*>(dsrc) : reinterpret_cast<char*>(lsrc),
         kind == 0 ? reinterpret_cast<char*>(ddst) : reinterpret_cast<char*>(ldst)};
  for (size_t i = 0; i < destCount + kAround; ++i) ldst[i] = -7 - static_cast<long>(i);
  if (kind == 0) std::memcpy(ddst, ldst, (destCount + kAround) * sizeof(long));
  for (size_t i = 0; i < srcCount + kAround; ++i) {
    if (kind == 0) dsrc[i] = static_cast<double>(value(pe, i, r));
    else lsrc[i] = value(pe, i, r) * 1000003L;
  }
  return c;
}
// Whether element i of d is that op over the members' element `at` of round r.
bool combined(int kind, const char* d, size_t i, const std::vector<int>& members, size_t at, int r) {
  double dw = 0;
  long lw = kind == 1 ? value(members[0], at, r) * 1000003L : 0;
  for (int m : members) {
    const long v = value(m, at, r);
    dw += static_cast<double>(v);
    lw = kind == 1 ? std::min(lw, v * 1000003L) : lw ^ v * 1000003L;
  }
  return kind == 0 ? reinterpret_cast<const double*>(d)[i] == dw : reinterpret_cast<const long*>(d)[i] == lw;
}

// Rooted reduces on team t from every root (by host over 2 KiB up to 32 KiB, where the root is its host's first member
// or a host holds 3+: each host's members into its first member's scratch, those into the root, or into the root's
// host's first member, which broadcasts to the root; else pulled): double sum (integral values) and long min and
// xor, 1 to 39990 elements (8 B, 2 KiB and 72-320 KiB pulled; 2400 B and 32 KiB by host), in place and not. The
// root's dest holds the result and the longs after it are untouched; every other member's dest is untouched (the
// by-host partials go elsewhere), and a root's src too when not in place.
void reduces(tether_team_t t, const std::vector<int>& members, const char* name, int r0) {
  const int myIndex = tether_team_my_pe(t);
  if (myIndex < 0) return;
  const int n = static_cast<int>(members.size());
  static const size_t counts[] = {1, 256, 300, 4096, 9000, 39990};
  const int me2 = members[static_cast<size_t>(myIndex)];
  int r = r0;
  for (size_t count : counts) {
    for (int root = 0; root < n; ++root) {
      if (count > 300 && root % 2 != (n - 1) % 2 && root != 0) continue;  // (the large sizes from fewer roots)
      for (int inPlace = 0; inPlace < 2; ++inPlace, ++r) {
        const bool isRoot = myIndex == root;
        const Case c = prepare(r, me2, count, count);
        const int kind = c.kind;
        const size_t es = c.es;
        char* src = c.src;
        char* dst = c.dst;
        const std::vector<char> srcBefore(src, src + (count + kAround) * es);
        const std::vector<char> dstBefore(dst, dst + (count + kAround) * es);
        char* d = inPlace ? src : dst;
        MP_OK(tether_team_reduce(t, d, src, count, kind == 0 ? TETHER_DOUBLE : TETHER_LONG, caseOp(kind), root));
        const char* what = caseName(kind);
        for (size_t i = 0; i < count; ++i) {
          if (!isRoot) break;
          if (!combined(kind, d, i, members, i, r)) {
            std::fprintf(stderr, "PE %d: %s reduce (%s) to root %d, count %zu%s: element %zu is wrong\n", me, name,
                         what, root, count, inPlace ? " in place" : "", i);
            MP_CHECK(false);
          }
        }
        // Untouched: all of dest but the root's result (the root's in-place dest is its src), the root's src when
        // not in place, the elements after the result.
        const bool destSame = std::memcmp(dst + (isRoot && !inPlace ? count * es : 0),
                                          dstBefore.data() + (isRoot && !inPlace ? count * es : 0),
                                          (isRoot && !inPlace ? kAround : count + kAround) * es) == 0;
        const bool srcSame = std::memcmp(src + (isRoot && inPlace ? count * es : 0),
                                         srcBefore.data() + (isRoot && inPlace ? count * es : 0),
                                         (isRoot && inPlace ? kAround : count + kAround) * es) == 0;
        if (!destSame || !srcSame) {
          std::fprintf(stderr, "PE %d: %s reduce (%s) to root %d, count %zu%s: this PE's %s changed where it must "
                       "not\n", me, name, what, root, count, inPlace ? " in place" : "", !destSame ? "dest" : "src");
          MP_CHECK(false);
        }
        MP_OK(tether_team_sync(t));  // the next case rewrites src and dest
      }
    }
  }
  if (myIndex == 0) std::printf("mp_coll_by_host: %s (%d PEs): reduce results OK\n", name, n);
}

// Reduce_scatters on team t (by host where the whole src -- count * members elements -- is up to 32 KiB and t's hosts
// hold consecutive runs of as many members; else pulled): double sum (integral values), long min and xor, count 1 to
// 4100 per member (by host up to 1000 at 4 PEs, up to 512 at 8), in place (dest = src + my block) and not. Each
// member's block is the op over the members' blocks in team order; the longs after dest, and all of src but an
// in-place member's block, are untouched.
void scattered(tether_team_t t, const std::vector<int>& members, const char* name, int r0) {
  const int myIndex = tether_team_my_pe(t);
  if (myIndex < 0) return;
  const size_t n = members.size(), mine = static_cast<size_t>(myIndex);
  static const size_t counts[] = {1, 40, 300, 512, 1000, 4100};
  const int me2 = members[mine];
  int r = r0;
  for (size_t count : counts) {
    if ((count * n + kAround) > kMaxCount) continue;
    for (int inPlace = 0; inPlace < 2; ++inPlace, ++r) {
      const Case c = prepare(r, me2, count, count * n);
      const int kind = c.kind;
      const size_t es = c.es;
      char* src = c.src;
      char* dst = c.dst;
      const std::vector<char> srcBefore(src, src + (count * n + kAround) * es);
      const std::vector<char> dstBefore(dst, dst + (count + kAround) * es);
      char* d = inPlace ? src + mine * count * es : dst;
      MP_OK(tether_team_reduce_scatter(t, d, src, count, kind == 0 ? TETHER_DOUBLE : TETHER_LONG, caseOp(kind)));
      const char* what = caseName(kind);
      for (size_t i = 0; i < count; ++i) {
        if (!combined(kind, d, i, members, mine * count + i, r)) {
          std::fprintf(stderr, "PE %d: %s reduce_scatter (%s), count %zu%s: element %zu of its block is wrong\n", me,
                       name, what, count, inPlace ? " in place" : "", i);
          MP_CHECK(false);
        }
      }
      // Untouched: src but an in-place block (its bytes before and after it), dest's longs after the block (all of
      // dest in place).
      const size_t lo = inPlace ? mine * count * es : 0, hi = inPlace ? lo + count * es : 0;
      const bool srcSame = std::memcmp(src, srcBefore.data(), inPlace ? lo : srcBefore.size()) == 0 &&
                           std::memcmp(src + hi, srcBefore.data() + hi, inPlace ? srcBefore.size() - hi : 0) == 0;
      const size_t d0 = inPlace ? 0 : count * es;
      const bool destSame = std::memcmp(dst + d0, dstBefore.data() + d0, dstBefore.size() - d0) == 0;
      if (!srcSame || !destSame) {
        std::fprintf(stderr, "PE %d: %s reduce_scatter (%s), count %zu%s: this PE's %s changed where it must not\n",
                     me, name, what, count, inPlace ? " in place" : "", !srcSame ? "src" : "dest");
        MP_CHECK(false);
      }
      MP_OK(tether_team_sync(t));  // the next case rewrites src and dest
    }
  }
  if (myIndex == 0) std::printf("mp_coll_by_host: %s (%zu PEs): reduce_scatter results OK\n", name, n);
}

// Alltoalls on team t (by host where 2 * run * members blocks fit 32 KiB, run = the members per host, consecutive and
// as many on every host: at 4 PEs blocks up to 256 longs, at 8 up to 64; else pulled): 1 to 1000 longs per block.
// dest block k is member k's block for this member; the longs after dest, and all of src, are untouched.
void exchanged(tether_team_t t, const std::vector<int>& members, const char* name, int r0) {
  const int myIndex = tether_team_my_pe(t);
  if (myIndex < 0) return;
  const size_t n = members.size(), mine = static_cast<size_t>(myIndex);
  static const size_t counts[] = {1, 40, 64, 256, 300, 1000};
  const int me2 = members[mine];
  int r = r0;
  for (size_t count : counts) {
    if (count * n + kAround > kMaxCount) continue;
    ++r;
    const Case c = prepare(3 * r + 1, me2, count * n, count * n);  // (kind 1: longs)
    const std::vector<char> srcBefore(c.src, c.src + (count * n + kAround) * sizeof(long));
    const std::vector<char> dstAfter(c.dst + count * n * sizeof(long), c.dst + (count * n + kAround) * sizeof(long));
    MP_OK(tether_team_alltoall(t, ldst, lsrc, count, TETHER_LONG));
    for (size_t k = 0; k < n; ++k)
      for (size_t i = 0; i < count; ++i)
        if (ldst[k * count + i] != value(members[k], mine * count + i, 3 * r + 1) * 1000003L) {
          std::fprintf(stderr, "PE %d: %s alltoall, count %zu: element %zu of block %zu is wrong\n", me, name, count,
                       i, k);
          MP_CHECK(false);
        }
    if (std::memcmp(c.src, srcBefore.data(), srcBefore.size()) != 0 ||
        std::memcmp(c.dst + count * n * sizeof(long), dstAfter.data(), dstAfter.size()) != 0) {
      std::fprintf(stderr, "PE %d: %s alltoall, count %zu: src or the longs after dest changed\n", me, name, count);
      MP_CHECK(false);
    }
    MP_OK(tether_team_sync(t));  // the next case rewrites src and dest
  }
  if (myIndex == 0) std::printf("mp_coll_by_host: %s (%zu PEs): alltoall results OK\n", name, n);
}

// Teams split off the world until no index is free on every PE (TETHER_ERR_NO_MEMORY).
std::vector<tether_team_t> fillIndices() {
  std::vector<tether_team_t> made;
  for (;;) {
    tether_team_t t = TETHER_TEAM_INVALID;
    const tether_status_t st = tether_team_split_strided(tether_team_world(w), 0, 1, npes, nullptr, &t);
    if (st == TETHER_ERR_NO_MEMORY) return made;
    MP_OK(st);
    made.push_back(t);
  }
}

// How many more teams the world can split off now; they are destroyed again.
int freeTeams() {
  const std::vector<tether_team_t> made = fillIndices();
  for (tether_team_t t : made) MP_OK(tether_team_destroy(t));
  return static_cast<int>(made.size());
}

std::vector<int> worldMembers(bool reversed) {
  std::vector<int> m(static_cast<size_t>(npes));
  for (int k = 0; k < npes; ++k) m[static_cast<size_t>(k)] = reversed ? npes - 1 - k : k;
  return m;
}

void indices(bool spans) {
  const int before = freeTeams();
  tether_team_t t = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(tether_team_world(w), npes - 1, -1, npes, nullptr, &t));
  const int made = freeTeams();
  MP_CHECK(made == before - 1);
  broadcasts(t, worldMembers(true), "a split team", 700);
  // Its subteams, made by its first broadcast by host, took indices: a host team holds one on each PE of its host
  // (the leaders' team may take one that was not free on every PE anyway), so at least one fewer is free on all.
  const int used = freeTeams();
  if (spans) MP_CHECK(used < made);
  results(t, worldMembers(true), "a split team", 100);
  gathered(t, worldMembers(true), "a split team", 150);
  reduces(t, worldMembers(true), "a split team", 1500);
  scattered(t, worldMembers(true), "a split team", 1600);
  exchanged(t, worldMembers(true), "a split team", 1700);
  MP_CHECK(freeTeams() == used);  // the allreduces, allgathers, reduces and reduce_scatters took the same subteams
  MP_OK(tether_team_destroy(t));
  const int after = freeTeams();
  if (after != before) {
    std::fprintf(stderr, "PE %d: %d teams could be split off before, %d after a team used by host was destroyed\n",
                 me, before, after);
    MP_CHECK(false);
  }
  if (me == 0)
    std::printf("mp_coll_by_host: team indices: %d free, %d with the team, %d once used, %d after destroy: OK\n",
                before, made, used, after);
}

void noFreeIndex() {
  tether_team_t t = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(tether_team_world(w), 0, 1, npes, nullptr, &t));
  const std::vector<tether_team_t> fill = fillIndices();
  results(t, worldMembers(false), "a team with no index left", 200);
  broadcasts(t, worldMembers(false), "a team with no index left", 1100);
  reduces(t, worldMembers(false), "a team with no index left", 1800);
  scattered(t, worldMembers(false), "a team with no index left", 1900);
  exchanged(t, worldMembers(false), "a team with no index left", 1950);
  for (tether_team_t f : fill) MP_OK(tether_team_destroy(f));
  results(t, worldMembers(false), "the same team once indices are free", 300);
  MP_OK(tether_team_destroy(t));
  if (me == 0) std::printf("mp_coll_by_host: no free index: OK\n");
}

void settingDiffers() {
  tether_team_t t = tether_team_world(w);
  for (int i = 0; i < 4; ++i) lsrc[i] = me;
  const auto start = std::chrono::steady_clock::now();
  const tether_status_t st = tether_team_allreduce(t, ldst, lsrc, 4, TETHER_LONG, TETHER_RED_SUM);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
  MP_CHECK(secs < 5.0);  // TETHER_TIMEOUT is 30 s: detected, not timed out
  MP_CHECK(std::strstr(tether_last_error(), "TETHER_COLL_BY_HOST") != nullptr);  // the message names the setting
  // Broadcasts are by host too, small (from any root) and large (root 0 is its host's first member): the same.
  MP_EXPECT_STATUS(tether_team_broadcast(t, ldst, lsrc, 4, TETHER_LONG, 1), TETHER_ERR_MISMATCH);
  MP_EXPECT_STATUS(tether_team_broadcast(t, ldst, lsrc, 1000, TETHER_LONG, 0), TETHER_ERR_MISMATCH);
  // Rooted reduces over 2 KiB are by host too (root 0: its host's first member).
  MP_EXPECT_STATUS(tether_team_reduce(t, ldst, lsrc, 1000, TETHER_LONG, TETHER_RED_MAX, 0), TETHER_ERR_MISMATCH);
  // Reduce_scatters whose whole src is up to 32 KiB (4 PEs, 2 per host: 300 longs each) too.
  MP_EXPECT_STATUS(tether_team_reduce_scatter(t, ldst, lsrc, 300, TETHER_LONG, TETHER_RED_SUM), TETHER_ERR_MISMATCH);
  // Small alltoalls (here up to 256 longs a block) too.
  MP_EXPECT_STATUS(tether_team_alltoall(t, ldst, lsrc, 1, TETHER_LONG), TETHER_ERR_MISMATCH);
  // Still usable: an alltoall of 300 longs a block (not by host either way) goes through.
  for (int i = 0; i < npes; ++i) lsrc[i * 300] = 7 + i;
  MP_OK(tether_team_alltoall(t, ldst, lsrc, 300, TETHER_LONG));
  for (int i = 0; i < npes; ++i) MP_CHECK(ldst[i * 300] == 7 + me);
  if (me == 0) std::printf("mp_coll_by_host: TETHER_COLL_BY_HOST different on PE 0: mismatch on all (%.3f s), OK\n",
                           secs);
}

}  // namespace

int main() {
  const bool pe0Differs = std::getenv("MP_BY_HOST_PE0") != nullptr;
  if (pe0Differs && std::getenv("TETHER_RANK") && std::strcmp(std::getenv("TETHER_RANK"), "0") == 0) {
    const char* others = std::getenv("TETHER_COLL_BY_HOST");  // (unset: 1)
    setenv("TETHER_COLL_BY_HOST", others && std::strcmp(others, "0") == 0 ? "1" : "0", 1);
  }
  mp::init();
  w = mp::world();
  me = tether_my_pe(w);
  npes = tether_n_pes(w);
  seed = mp::agreeSeed(w, "mp_coll_by_host");
  dsrc = static_cast<double*>(mp::hostZeroed(w, kMaxCount * sizeof(double)));
  ddst = static_cast<double*>(mp::hostZeroed(w, kMaxCount * sizeof(double)));
  lsrc = static_cast<long*>(mp::hostZeroed(w, kMaxCount * sizeof(long)));
  ldst = static_cast<long*>(mp::hostZeroed(w, kMaxCount * sizeof(long)));
  MP_OK(tether_barrier_all(w));
  if (pe0Differs) {
    settingDiffers();
    return mp::finish();
  }
  results(tether_team_world(w), worldMembers(false), "the world", 0);
  gathered(tether_team_world(w), worldMembers(false), "the world", 400);
  broadcasts(tether_team_world(w), worldMembers(false), "the world", 500);
  reduces(tether_team_world(w), worldMembers(false), "the world", 1200);
  scattered(tether_team_world(w), worldMembers(false), "the world", 2000);
  exchanged(tether_team_world(w), worldMembers(false), "the world", 2050);
  tether_team_t even = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(tether_team_world(w), 0, 2, (npes + 1) / 2, nullptr, &even));
  std::vector<int> evens;
  for (int k = 0; k < npes; k += 2) evens.push_back(k);
  results(even, evens, "the even PEs", 50);
  gathered(even, evens, "the even PEs", 450);
  broadcasts(even, evens, "the even PEs", 900);
  reduces(even, evens, "the even PEs", 1300);
  scattered(even, evens, "the even PEs", 2100);
  exchanged(even, evens, "the even PEs", 2150);
  if (even != TETHER_TEAM_INVALID) MP_OK(tether_team_destroy(even));
  const char* spans = std::getenv("MP_BY_HOST_SPANS");
  indices(spans && std::strcmp(spans, "1") == 0);
  noFreeIndex();
  MP_OK(tether_barrier_all(w));
  return mp::finish();
}
