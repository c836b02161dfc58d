// Team data collectives of the core C API (tether_team_broadcast/reduce/allreduce/allgather/reduce_scatter/alltoall,
// and tether_team_alltoall_eager after a team sync; issue #21) on HOST memory at 2/3/4/8 PEs (ucx_mp_coll_team:
// every peer over UCX, so the engine reads through the
// transport instead of loads): every operation x element type x allowed op x team shape (world, even PEs, the world
// reversed, the rows of a 2-wide grid) x in place or not, counts from 0 to two-shot sizes, against a straightforward
// reference each PE computes from the inputs every member generates from the seed (MP_SEED, printed).
// Then the agreement: different count/type/root/objects on one member -> TETHER_ERR_MISMATCH on every member naming
// both; one member's invalid root, non-symmetric dest, bad enum -> its own error there, TETHER_ERR_INVALID_ARG on the
// others; overlapping alltoall buffers and xor on floats everywhere; a non-member's handle; the team stays usable.
// `mp_coll_team timeout` (TETHER_TIMEOUT=3): PE 0 skips an allreduce on the world team: the others time out, the next
// collective on that team fails at once (state lost) while a split team still works.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coll_types.h"
#include "mp_util.h"

namespace {

tether_t w;
int me, npes;
uint64_t seed;
long checks = 0;

// ---- element types: coll_types.h ------------------------------------------------------------------------------

using coll_types::combine;
using coll_types::decodeFloat;
using coll_types::encodeFloat;
using coll_types::kTypes;
using coll_types::load;
using coll_types::sameValue;
using coll_types::store;
using coll_types::TypeInfo;
using fuzz::mix;

uint64_t input(const TypeInfo& ti, uint64_t c, int m, size_t i) { return coll_types::input(seed, ti, c, m, i); }

struct Fail {
  const char* what;
  const TypeInfo* ti;
  uint64_t c;
  size_t count;
  bool inPlace;
};
[[noreturn]] void mismatch(const Fail& f, size_t i, uint64_t got, uint64_t want) {
  char msg[300];
  std::snprintf(msg, sizeof msg, "%s type %s case %" PRIu64 " count %zu%s: element %zu is 0x%" PRIx64
                ", expected 0x%" PRIx64 " (MP_SEED=%" PRIu64 ")", f.what, f.ti->name, f.c, f.count,
                f.inPlace ? " in place" : "", i, got, want, seed);
  mp::fail(__FILE__, __LINE__, "result", msg);
}

// ---- the operations against the reference ----------------------------------------------------------------------

// Symmetric HOST scratch: two buffers of kMaxBytes each (src and dest; in-place forms use one).
constexpr size_t kMaxBytes = 8 * 50000;
char* bufA;
char* bufB;
uint64_t caseNo = 0;  // the same sequence on every PE: every member generates the same inputs

void allreduceCase(tether_team_t team, const TypeInfo& ti, tether_red_op_t op, size_t count, bool inPlace) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  char* src = bufA;
  char* dest = inPlace ? bufA : bufB;
  for (size_t i = 0; i < count; ++i) store(src, i, ti.size, input(ti, c, my, i));
  MP_OK(tether_team_allreduce(team, dest, src, count, ti.t, op));
  for (size_t i = 0; i < count; ++i) {
    uint64_t want = input(ti, c, 0, i);
    for (int m = 1; m < n; ++m) want = combine(ti, op, want, input(ti, c, m, i));
    const uint64_t got = load(dest, i, ti.size);
    if (!sameValue(ti, got, want)) mismatch({"allreduce", &ti, c, count, inPlace}, i, got, want);
  }
  ++checks;
}

void reduceCase(tether_team_t team, const TypeInfo& ti, tether_red_op_t op, size_t count, bool inPlace, int root) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  char* src = bufA;
  char* dest = inPlace ? bufA : bufB;
  for (size_t i = 0; i < count; ++i) store(src, i, ti.size, input(ti, c, my, i));
  const uint64_t fill = 0x5a5a5a5a5a5a5a5aull >> (64 - 8 * ti.size);  // what a non-root's dest keeps
  if (!inPlace) std::memset(dest, 0x5a, count * ti.size);
  MP_OK(tether_team_reduce(team, dest, src, count, ti.t, op, root));
  for (size_t i = 0; i < count; ++i) {
    uint64_t want = input(ti, c, 0, i);
    for (int m = 1; m < n; ++m) want = combine(ti, op, want, input(ti, c, m, i));
    const uint64_t got = load(dest, i, ti.size);
    if (my != root) {  // untouched: the bits stay
      want = inPlace ? input(ti, c, my, i) : fill;
      if (got != want) mismatch({"reduce (non-root)", &ti, c, count, inPlace}, i, got, want);
    } else if (!sameValue(ti, got, want)) {
      mismatch({"reduce", &ti, c, count, inPlace}, i, got, want);
    }
  }
  ++checks;
}

void reduceScatterCase(tether_team_t team, const TypeInfo& ti, tether_red_op_t op, size_t count, bool inPlace) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  const size_t total = count * static_cast<size_t>(n);
  char* src = bufA;
  char* dest = inPlace ? bufA + static_cast<size_t>(my) * count * ti.size : bufB;
  for (size_t i = 0; i < total; ++i) store(src, i, ti.size, input(ti, c, my, i));
  MP_OK(tether_team_reduce_scatter(team, dest, src, count, ti.t, op));
  for (size_t i = 0; i < count; ++i) {
    const size_t e = static_cast<size_t>(my) * count + i;
    uint64_t want = input(ti, c, 0, e);
    for (int m = 1; m < n; ++m) want = combine(ti, op, want, input(ti, c, m, e));
    const uint64_t got = load(dest, i, ti.size);
    if (!sameValue(ti, got, want)) mismatch({"reduce_scatter", &ti, c, count, inPlace}, i, got, want);
  }
  ++checks;
}

// eager: tether_team_broadcast_eager (what the OpenSHMEM layer calls: the root returns without waiting for readers).
void broadcastCase(tether_team_t team, const TypeInfo& ti, size_t count, bool inPlace, int root, bool eager = false) {
  const uint64_t c = ++caseNo;
  const int my = tether_team_my_pe(team);
  char* src = bufA;
  char* dest = inPlace ? bufA : bufB;
  for (size_t i = 0; i < count; ++i) store(src, i, ti.size, input(ti, c, my, i));
  MP_OK((eager ? tether_team_broadcast_eager : tether_team_broadcast)(team, dest, src, count, ti.t, root));
  for (size_t i = 0; i < count; ++i) {
    const uint64_t want = input(ti, c, root, i), got = load(dest, i, ti.size);
    if (got != want) mismatch({eager ? "eager broadcast" : "broadcast", &ti, c, count, inPlace}, i, got, want);
  }
  ++checks;
}

void allgatherCase(tether_team_t team, const TypeInfo& ti, size_t count, bool inPlace) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  char* dest = bufB;
  char* src = inPlace ? bufB + static_cast<size_t>(my) * count * ti.size : bufA;
  for (size_t i = 0; i < count; ++i) store(src, i, ti.size, input(ti, c, my, i));
  MP_OK(tether_team_allgather(team, dest, src, count, ti.t));
  for (int m = 0; m < n; ++m)
    for (size_t i = 0; i < count; ++i) {
      const uint64_t want = input(ti, c, m, i), got = load(dest, static_cast<size_t>(m) * count + i, ti.size);
      if (got != want) mismatch({"allgather", &ti, c, count, inPlace}, static_cast<size_t>(m) * count + i, got, want);
    }
  ++checks;
}

// eager: tether_team_alltoall_eager, whose members may store into each other's dest as soon as any enters: a team
// sync first keeps them out of dest while a member still checks the previous case there (OpenSHMEM's precondition).
void alltoallCase(tether_team_t team, const TypeInfo& ti, size_t count, bool eager = false) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  for (size_t i = 0; i < count * static_cast<size_t>(n); ++i) store(bufA, i, ti.size, input(ti, c, my, i));
  if (eager) {
    MP_OK(tether_team_sync(team));
    MP_OK(tether_team_alltoall_eager(team, bufB, bufA, count, ti.t));
  } else {
    MP_OK(tether_team_alltoall(team, bufB, bufA, count, ti.t));
  }
  for (int m = 0; m < n; ++m)
    for (size_t i = 0; i < count; ++i) {
      // block m of dest = block my of member m's src
      const uint64_t want = input(ti, c, m, static_cast<size_t>(my) * count + i);
      const uint64_t got = load(bufB, static_cast<size_t>(m) * count + i, ti.size);
      if (got != want)
        mismatch({eager ? "alltoall_eager" : "alltoall", &ti, c, count, false}, static_cast<size_t>(m) * count + i, got,
                 want);
    }
  ++checks;
}

size_t* symCounts;  // npes entries each (symmetric HOST): alltoallv's scounts and sdispls
size_t* symDispls;

// Member m sends vcount(c, m, j) elements to member j (0 included); blocks lie with one-element gaps.
size_t vcount(uint64_t c, int m, int j) { return static_cast<size_t>((mix(c * 31 + static_cast<uint64_t>(m * 7 + j)) % 9)); }

void alltoallvCase(tether_team_t team, const TypeInfo& ti, bool wrongCount) {
  const uint64_t c = ++caseNo;
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  std::vector<size_t> rcounts(static_cast<size_t>(n)), rdispls(static_cast<size_t>(n));
  size_t s = 1, r = 2;
  for (int j = 0; j < n; ++j) {
    symCounts[j] = vcount(c, my, j);
    symDispls[j] = s;
    s += symCounts[j] + 1;
    rcounts[static_cast<size_t>(j)] = vcount(c, j, my);
    rdispls[static_cast<size_t>(j)] = r;
    r += rcounts[static_cast<size_t>(j)] + 1;
  }
  for (size_t i = 0; i < s; ++i) store(bufA, i, ti.size, input(ti, c, my, i));
  std::memset(bufB, 0, r * ti.size);
  if (wrongCount && my == n - 1) rcounts[0] += 1;  // the last member expects one element more from member 0
  const tether_status_t st = tether_team_alltoallv(team, bufB, rcounts.data(), rdispls.data(), bufA, symCounts,
                                                   symDispls, ti.t);
  if (wrongCount) {
    if (st != TETHER_ERR_MISMATCH) mp::fail(__FILE__, __LINE__, "alltoallv wrong count", tether_status_string(st));
    if (my == n - 1) MP_MSG_HAS("rcounts[0]");
    else MP_MSG_HAS("failed while moving data");  // the others learn it from the close, naming the member
    return;
  }
  MP_OK(st);
  for (int m = 0; m < n; ++m) {
    // member m's displacement for me: recompute its layout
    size_t ms = 1;
    for (int j = 0; j < my; ++j) ms += vcount(c, m, j) + 1;
    for (size_t i = 0; i < rcounts[static_cast<size_t>(m)]; ++i) {
      const uint64_t want = input(ti, c, m, ms + i), got = load(bufB, rdispls[static_cast<size_t>(m)] + i, ti.size);
      if (got != want) mismatch({"alltoallv", &ti, c, rcounts[static_cast<size_t>(m)], false}, i, got, want);
    }
  }
  ++checks;
}

bool allowed(const TypeInfo& ti, tether_red_op_t op) { return op < TETHER_RED_AND || ti.cls != TypeInfo::F; }

// Every operation on one team (collective over its members).
void runAll(tether_team_t team, const char* label) {
  const int n = tether_team_n_pes(team);
  const long before = checks;
  caseNo = 0;  // members of different teams ran different numbers of cases before
  // Reductions: every type x allowed op, small counts (700: two-shot on one host from 4 KiB, slices of unequal
  // length where n does not divide it), in place and not.
  for (const TypeInfo& ti : kTypes)
    for (int op = 0; op < TETHER_RED_COUNT; ++op) {
      const auto o = static_cast<tether_red_op_t>(op);
      if (!allowed(ti, o)) continue;
      for (size_t count : {size_t{1}, size_t{7}, size_t{300}, size_t{700}})
        for (bool inPlace : {false, true}) allreduceCase(team, ti, o, count, inPlace);
      reduceCase(team, ti, o, 33, op % 2 == 0, (op * 5) % n);
      reduceScatterCase(team, ti, o, 5, op % 2 == 1);
    }
  // Two-shot sizes (>= 64 KiB) and chunking (> 64 KiB per member read), a few types.
  const size_t big = kMaxBytes / 8 / static_cast<size_t>(n);  // fits n * big 8-byte elements
  for (tether_dtype_t t : {TETHER_INT64, TETHER_DOUBLE, TETHER_HALF, TETHER_UINT8})
    for (const TypeInfo& ti : kTypes)
      if (ti.t == t)
        for (bool inPlace : {false, true}) {
          const tether_red_op_t op = ti.cls == TypeInfo::F ? TETHER_RED_SUM : TETHER_RED_XOR;
          allreduceCase(team, ti, op, kMaxBytes / ti.size, inPlace);
          reduceScatterCase(team, ti, op, big, inPlace);
          reduceCase(team, ti, TETHER_RED_MAX, kMaxBytes / ti.size, inPlace, n - 1);
        }
  // Data movers: element sizes 1, 2, 4, 8; counts 0 to large; every root.
  for (tether_dtype_t t : {TETHER_UINT8, TETHER_SHORT, TETHER_FLOAT, TETHER_UINT64})
    for (const TypeInfo& ti : kTypes)
      if (ti.t == t)
        for (size_t count : {size_t{0}, size_t{1}, size_t{13}, big}) {
          for (int root = 0; root < n; ++root) broadcastCase(team, ti, count, root % 2 == 1, root);
          for (bool inPlace : {false, true}) allgatherCase(team, ti, count, inPlace);
          alltoallCase(team, ti, count);
          alltoallCase(team, ti, count, true);
        }
  // One-shot through the staging rings (token teams on a crowded host, core/collectives.cpp ringBlockMax: alltoall
  // blocks up to 2 KiB, allgather 4 KiB, broadcasts 8 KiB on up to 4 members and 32 KiB on more; elsewhere the staging
  // buffers and pulls):
  // enough calls in a row that every member's 64 KiB ring wraps several times, sizes varying so that copies straddle
  // the ring's end, interleaved with eager broadcasts staged in the same rings and reductions that pull.
  const size_t nTypes = sizeof kTypes / sizeof kTypes[0];
  const size_t bcastMax = n <= 4 ? 8192 : 32768;  // ringBlockMax's broadcast limit (exclusive here)
  for (size_t k = 0; k < 80; ++k) {
    const TypeInfo& ti = kTypes[k % nTypes];
    const size_t block = 1100 + (37 * k) % 948;    // alltoall: 1100 .. 2047 bytes per block (over 2 KiB staged)
    const size_t gather = 2100 + (97 * k) % 1996;  // allgather: 2100 .. 4095
    const size_t bcast = 2100 + (331 * k) % (bcastMax - 2100);  // broadcasts: 2100 .. up to the ring's limit
    alltoallCase(team, ti, std::max<size_t>(1, block / ti.size), k % 4 == 3);
    allgatherCase(team, ti, gather / ti.size, k % 2 == 1);
    if (k % 3 == 0) broadcastCase(team, ti, bcast / ti.size, false, static_cast<int>(k) % n, true);
    if (k % 4 == 1) allreduceCase(team, ti, TETHER_RED_MIN, gather / ti.size, k % 8 == 1);
    if (k % 5 == 2) broadcastCase(team, ti, bcast / ti.size, false, static_cast<int>(k / 5) % n);
  }
  for (const TypeInfo& ti : kTypes)
    if (ti.t == TETHER_UINT8 || ti.t == TETHER_INT32 || ti.t == TETHER_DOUBLE)
      for (int k = 0; k < 3; ++k) alltoallvCase(team, ti, false);
  if (n > 1) alltoallvCase(team, kTypes[0], true);  // a receiver expecting another count: MISMATCH on every member
  alltoallvCase(team, kTypes[0], false);            // and the team goes on
  if (me == 0 || tether_team_my_pe(team) == 0)
    std::printf("PE %d: %s (%d PEs): %ld collectives checked\n", me, label, n, checks - before);
}

// ---- agreement ---------------------------------------------------------------------------------------------------

#define EXPECT_ON_ALL(call, code_here, code_others, first_pe)                                                 \
  do {                                                                                                         \
    const tether_status_t st_ = (call);                                                                        \
    const tether_status_t want_ = (me == (first_pe)) ? (code_here) : (code_others);                           \
    if (st_ != want_) {                                                                                        \
      char m_[200];                                                                                            \
      std::snprintf(m_, sizeof m_, "got %s, expected %s", tether_status_string(st_), tether_status_string(want_)); \
      mp::fail(__FILE__, __LINE__, #call, m_);                                                                 \
    }                                                                                                          \
  } while (0)

void agreement() {
  tether_team_t world = tether_team_world(w);
  long* a = reinterpret_cast<long*>(bufA);
  long* b = reinterpret_cast<long*>(bufB);
  const int last = npes - 1;
  // Different counts: MISMATCH on every member, the message names the field and both values.
  EXPECT_ON_ALL(tether_team_allreduce(world, b, a, me == last ? 9 : 8, TETHER_LONG, TETHER_RED_SUM),
                TETHER_ERR_MISMATCH, TETHER_ERR_MISMATCH, -1);
  MP_MSG_HAS("count");
  // Different type, root, op.
  EXPECT_ON_ALL(tether_team_broadcast(world, b, a, 4, me == 0 ? TETHER_INT32 : TETHER_UINT32, 0),
                TETHER_ERR_MISMATCH, TETHER_ERR_MISMATCH, -1);
  EXPECT_ON_ALL(tether_team_broadcast(world, b, a, 4, TETHER_INT32, me == last ? 0 : last), TETHER_ERR_MISMATCH,
                TETHER_ERR_MISMATCH, -1);
  MP_MSG_HAS("root");
  EXPECT_ON_ALL(tether_team_reduce_scatter(world, b, a, 2, TETHER_INT32, me == 0 ? TETHER_RED_MAX : TETHER_RED_MIN),
                TETHER_ERR_MISMATCH, TETHER_ERR_MISMATCH, -1);
  // Different objects (dest at another offset on one member).
  EXPECT_ON_ALL(tether_team_allgather(world, me == last ? b + 1 : b, a, 1, TETHER_LONG), TETHER_ERR_MISMATCH,
                TETHER_ERR_MISMATCH, -1);
  MP_MSG_HAS("dest");
  // In place on one member only.
  EXPECT_ON_ALL(tether_team_allreduce(world, me == 0 ? a : b, a, 3, TETHER_LONG, TETHER_RED_SUM),
                TETHER_ERR_MISMATCH, TETHER_ERR_MISMATCH, -1);
  // One member's invalid root: INVALID_ARG there (naming root), on the others naming that member.
  EXPECT_ON_ALL(tether_team_broadcast(world, b, a, 4, TETHER_LONG, me == last ? npes : 0), TETHER_ERR_INVALID_ARG,
                TETHER_ERR_INVALID_ARG, last);
  if (me == last) MP_MSG_HAS("root");
  else MP_MSG_HAS("passed invalid arguments");
  // One member's dest not symmetric (a stack buffer).
  long local[4];
  EXPECT_ON_ALL(tether_team_allreduce(world, me == 0 ? local : b, a, 4, TETHER_LONG, TETHER_RED_SUM),
                TETHER_ERR_NOT_SYMMETRIC, TETHER_ERR_INVALID_ARG, 0);
  // One member's bad enum value (a C caller can pass any int).
  int badType = 999;
  tether_dtype_t bt;
  std::memcpy(&bt, &badType, sizeof bt);
  EXPECT_ON_ALL(tether_team_allgather(world, b, a, 1, me == last ? bt : TETHER_LONG), TETHER_ERR_INVALID_ARG,
                TETHER_ERR_INVALID_ARG, last);
  // Everywhere: xor on floats, overlapping alltoall, misaligned objects.
  MP_EXPECT_STATUS(tether_team_allreduce(world, b, a, 4, TETHER_FLOAT, TETHER_RED_XOR), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("xor");
  MP_EXPECT_STATUS(tether_team_alltoall(world, a, a, 1, TETHER_LONG), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("overlap");
  MP_EXPECT_STATUS(tether_team_allreduce(world, bufB + 1, bufA + 1, 2, TETHER_INT32, TETHER_RED_SUM),
                   TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("aligned");
  MP_EXPECT_STATUS(tether_team_allreduce(world, b, a, SIZE_MAX / 2, TETHER_LONG, TETHER_RED_SUM), TETHER_ERR_OVERFLOW);
  // Handles: invalid, and a team this PE is not in (a non-member holds TETHER_TEAM_INVALID).
  MP_EXPECT_STATUS(tether_team_allreduce(TETHER_TEAM_INVALID, b, a, 1, TETHER_LONG, TETHER_RED_SUM),
                   TETHER_ERR_INVALID_ARG);
  tether_team_t first = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 1, 1, nullptr, &first));
  if (me != 0) MP_EXPECT_STATUS(tether_team_broadcast(first, b, a, 1, TETHER_LONG, 0), TETHER_ERR_INVALID_ARG);
  else MP_OK(tether_team_broadcast(first, b, a, 1, TETHER_LONG, 0));
  MP_OK(tether_team_destroy(first));
  // The team is still usable after all of that.
  caseNo = 1u << 20;
  allreduceCase(world, kTypes[1], TETHER_RED_SUM, 5, false);
  std::printf("PE %d: agreement OK\n", me);
}

void timeoutMode() {
  tether_team_t world = tether_team_world(w), all = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 1, npes, nullptr, &all));
  auto* through = static_cast<uint64_t*>(mp::hostZeroed(w, sizeof(uint64_t)));
  MP_OK(tether_barrier_all(w));
  long* a = reinterpret_cast<long*>(bufA);
  if (me != 0) {  // PE 0 skips an allreduce on `all`
    const auto t0 = std::chrono::steady_clock::now();
    MP_EXPECT_STATUS(tether_team_allreduce(all, a, a, 1, TETHER_LONG, TETHER_RED_SUM), TETHER_ERR_TIMEOUT);
    MP_CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 30);
    MP_MSG_HAS("round");
    const auto t1 = std::chrono::steady_clock::now();
    MP_EXPECT_STATUS(tether_team_broadcast(all, a, a, 1, TETHER_LONG, 0), TETHER_ERR_TIMEOUT);
    MP_MSG_HAS("collective state is lost");
    MP_CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() < 1.0);
    mp::passedTimeout(through, 0);
  } else {
    mp::awaitTimeouts(through, npes - 1);
  }
  // The world team and the instance are unaffected.
  MP_OK(tether_barrier_all(w));
  caseNo = 1u << 21;
  allreduceCase(world, kTypes[1], TETHER_RED_SUM, 3, false);
  std::printf("PE %d: collective timeout OK\n", me);
}

}  // namespace

int main(int argc, char** argv) {
  mp::init();
  w = mp::world();
  std::tie(me, npes) = std::make_pair(tether_my_pe(w), tether_n_pes(w));
  seed = mp::agreeSeed(w, "mp_coll_team");
  bufA = static_cast<char*>(mp::hostZeroed(w, kMaxBytes));
  bufB = static_cast<char*>(mp::hostZeroed(w, kMaxBytes));
  symCounts = static_cast<size_t*>(mp::hostZeroed(w, static_cast<size_t>(npes) * sizeof(size_t)));
  symDispls = static_cast<size_t*>(mp::hostZeroed(w, static_cast<size_t>(npes) * sizeof(size_t)));
  MP_OK(tether_barrier_all(w));
  if (argc > 1 && std::strcmp(argv[1], "timeout") == 0) {
    timeoutMode();
    return mp::finish();
  }
  tether_team_t world = tether_team_world(w);
  runAll(world, "world");
  tether_team_t even = TETHER_TEAM_INVALID, reversed = TETHER_TEAM_INVALID, row = TETHER_TEAM_INVALID,
                col = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 2, (npes + 1) / 2, nullptr, &even));
  MP_OK(tether_team_split_strided(world, npes - 1, -1, npes, nullptr, &reversed));
  MP_OK(tether_team_split_2d(world, 2, nullptr, &row, nullptr, &col));
  if (even) runAll(even, "even PEs");
  runAll(reversed, "reversed world");
  runAll(row, "grid row");
  MP_OK(tether_barrier_all(w));
  agreement();
  for (tether_team_t t : {even, reversed, row, col}) MP_OK(tether_team_destroy(t));
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_coll_team: OK (MP_SEED=%" PRIu64 ")\n", seed);
  return mp::finish();
}
