// OpenSHMEM collectives: one engine over CollGroup (shmem_coll_impl.h) serves the 1.5 team forms and the 1.4
// active-set forms (include/shmem_coll.h documents the behaviour).
//
// Algorithm (every member is directly reachable through tether): barrier; each member pulls with tether_get what it
// needs into its own dest, so nobody writes memory of another PE; barrier, after which every source may be reused.
// The first barrier makes every source ready (a member's stores before the call are visible after it); the second
// keeps a source alive until every member has read it. collect publishes each member's byte count in a value word of
// the group before the first barrier. Reductions pull every member's source chunk by chunk and combine in member
// order (the same result bits on every member); an in-place reduction (dest == source) combines into a temporary and
// writes dest after the second barrier, when nobody reads that source any more.
#include <shmem.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "shmem_coll_impl.h"
#include "shmem_internal.h"

namespace tether_shmem {

void collBarrier(const CollGroup& g, const char* call) {
  const size_t n = static_cast<size_t>(g.size);
  const int myWorldPe = g.pes[g.me];
  const uint64_t minusOne = ~uint64_t{0};
  for (size_t r = 0, d = 1; d < n; ++r, d <<= 1) {
    uint64_t* word = g.sync + r;
    const int to = g.pes[(static_cast<size_t>(g.me) + d) % n];
    shmemCheck(tether_signal_op(g.world, word, 1, TETHER_SIGNAL_ADD, to), call);
    shmemCheck(tether_signal_wait_until(g.world, word, TETHER_CMP_GE, 1, nullptr), call);
    shmemCheck(tether_atomic(g.world, TETHER_AMO_ADD, TETHER_UINT64, word, &minusOne, nullptr, nullptr, myWorldPe),
               call);
  }
}

namespace {

uint64_t* valueWords(const CollGroup& g) { return g.sync + kRoundWords; }

// This PE's own copy of the value words (symmetric host memory): written before the first barrier of a collective,
// read by the others between its barriers, cleared after the second.
void publish(const CollGroup& g, const uint64_t* mine, size_t n) { std::memcpy(valueWords(g), mine, n * 8); }
void unpublish(const CollGroup& g, size_t n) { std::memset(valueWords(g), 0, n * 8); }
void readPublished(const CollGroup& g, size_t n, uint64_t* out, const char* call) {
  for (int m = 0; m < g.size; ++m)
    shmemCheck(tether_get(g.world, out + static_cast<size_t>(m) * n, valueWords(g), n * 8, g.pes[m]), call);
}

}  // namespace

namespace {

// Copies `bytes` bytes at the symmetric address src of member m into the local buffer dst.
void pull(const CollGroup& g, void* dst, const void* src, size_t bytes, int m, const char* call) {
  if (bytes != 0) shmemCheck(tether_get(g.world, dst, src, bytes, g.pes[m]), call);
}

char* at(void* p, size_t off) { return static_cast<char*>(p) + off; }
const char* at(const void* p, size_t off) { return static_cast<const char*>(p) + off; }

// ---- data movers (element size es, counts in elements) ----------------------------------------------------------

void broadcast(const CollGroup& g, void* dest, const void* src, size_t nelems, size_t es, int root, bool rootToo,
               const char* call) {
  if (root < 0 || root >= g.size) {
    char msg[128];
    std::snprintf(msg, sizeof msg, "PE_root %d is outside the %d PEs of the team or active set", root, g.size);
    shmemAbortMsg(call, msg);
  }
  const size_t bytes = shmemMulChecked(nelems, es, call);
  collBarrier(g, call);
  if (g.me != root)
    pull(g, dest, src, bytes, root, call);
  else if (rootToo && dest != src)
    std::memmove(dest, src, bytes);
  collBarrier(g, call);
}

// Calls f(m) for every member m, starting after this PE so that the members do not all read member 0 first.
template <class F>
void forEachMember(const CollGroup& g, F&& f) {
  for (int k = 0; k < g.size; ++k) f((g.me + 1 + k) % g.size);
}

void fcollect(const CollGroup& g, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  const size_t bytes = shmemMulChecked(nelems, es, call);
  shmemMulChecked(bytes, static_cast<size_t>(g.size), call);
  collBarrier(g, call);
  forEachMember(g, [&](int m) { pull(g, at(dest, static_cast<size_t>(m) * bytes), src, bytes, m, call); });
  collBarrier(g, call);
}

void collect(const CollGroup& g, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  const uint64_t myBytes = shmemMulChecked(nelems, es, call);
  std::vector<uint64_t> bytes(static_cast<size_t>(g.size));
  publish(g, &myBytes, 1);
  collBarrier(g, call);
  readPublished(g, 1, bytes.data(), call);
  std::vector<size_t> offset(bytes.size() + 1, 0);
  for (size_t m = 0; m < bytes.size(); ++m)
    if (__builtin_add_overflow(offset[m], bytes[m], &offset[m + 1])) shmemAbortMsg(call, "total size overflows");
  forEachMember(g, [&](int m) {
    const size_t i = static_cast<size_t>(m);
    pull(g, at(dest, offset[i]), src, bytes[i], m, call);
  });
  collBarrier(g, call);
  unpublish(g, 1);
}

void alltoall(const CollGroup& g, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  const size_t bytes = shmemMulChecked(nelems, es, call);
  shmemMulChecked(bytes, static_cast<size_t>(g.size), call);
  collBarrier(g, call);
  const void* mine = at(src, static_cast<size_t>(g.me) * bytes);  // this PE's block of every member's source
  forEachMember(g, [&](int m) { pull(g, at(dest, static_cast<size_t>(m) * bytes), mine, bytes, m, call); });
  collBarrier(g, call);
}

// Strided source elements are fetched in one get covering their span when the span is at most kSpanFactor times the
// data (or small), else element by element; they are then placed with the dest stride locally.
constexpr size_t kSpanFactor = 8;
constexpr size_t kSmallSpanBytes = 64 * 1024;

void alltoalls(const CollGroup& g, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
               size_t es, const char* call) {
  if (dst < 1 || sst < 1) {
    char msg[128];
    std::snprintf(msg, sizeof msg, "strides must be >= 1 (dst %td, sst %td)", dst, sst);
    shmemAbortMsg(call, msg);
  }
  if (dst == 1 && sst == 1) return alltoall(g, dest, src, nelems, es, call);
  const size_t ud = static_cast<size_t>(dst), us = static_cast<size_t>(sst), n = static_cast<size_t>(g.size);
  // Both objects span (stride * n * nelems) elements; check that in bytes once, so the offsets below cannot overflow.
  shmemMulChecked(shmemMulChecked(shmemMulChecked(ud, n, call), nelems, call), es, call);
  shmemMulChecked(shmemMulChecked(shmemMulChecked(us, n, call), nelems, call), es, call);
  collBarrier(g, call);
  if (nelems != 0) {
    const size_t spanBytes = ((nelems - 1) * us + 1) * es;
    const bool bySpan = us <= kSpanFactor || spanBytes <= kSmallSpanBytes;
    std::unique_ptr<char[]> span(bySpan ? new char[spanBytes] : nullptr);
    const size_t srcOff = static_cast<size_t>(g.me) * nelems * us * es;
    forEachMember(g, [&](int m) {
      char* d = at(dest, static_cast<size_t>(m) * nelems * ud * es);
      if (bySpan) {
        pull(g, span.get(), at(src, srcOff), spanBytes, m, call);
        for (size_t i = 0; i < nelems; ++i) std::memcpy(d + i * ud * es, span.get() + i * us * es, es);
      } else {
        for (size_t i = 0; i < nelems; ++i) pull(g, d + i * ud * es, at(src, srcOff + i * us * es), es, m, call);
      }
    });
  }
  collBarrier(g, call);
}

// ---- reductions -------------------------------------------------------------------------------------------------

// Integer sum and product wrap around (computed in an unsigned type at least as wide as unsigned int, so that the
// promotion of short operands cannot overflow a signed int).
template <class T>
using Unsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct OpAnd {
  template <class T> static T apply(T a, T b) { return static_cast<T>(a & b); }
};
struct OpOr {
  template <class T> static T apply(T a, T b) { return static_cast<T>(a | b); }
};
struct OpXor {
  template <class T> static T apply(T a, T b) { return static_cast<T>(a ^ b); }
};
struct OpMax {
  template <class T> static T apply(T a, T b) { return b > a ? b : a; }
};
struct OpMin {
  template <class T> static T apply(T a, T b) { return b < a ? b : a; }
};
struct OpSum {
  template <class T> static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
    else
      return a + b;
  }
};
struct OpProd {
  template <class T> static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
    else
      return a * b;
  }
};

constexpr size_t kReduceChunkBytes = 64 * 1024;  // elements combined per round of gets
constexpr size_t kScatterMinBytes = 64 * 1024;   // from this size (and 3 members) on: reduce-scatter + allgather

// out[0, len) = element-wise combination, in member order, of elements [0, len) at the symmetric address src of every
// member; chunk by chunk. viaTemp: each chunk is combined in a temporary and then copied to out, for an out that is
// this PE's own copy of src (in place: this PE reads its chunk before it overwrites it).
template <class T, class Op>
void combineMembers(const CollGroup& g, const T* src, size_t len, T* out, bool viaTemp, const char* call) {
  const size_t chunk = std::max<size_t>(1, kReduceChunkBytes / sizeof(T));
  const size_t bufLen = std::min(chunk, std::max<size_t>(len, 1));
  std::unique_ptr<T[]> in(new T[bufLen]);
  std::unique_ptr<T[]> acc(viaTemp ? new T[bufLen] : nullptr);
  for (size_t off = 0; off < len; off += chunk) {
    const size_t c = std::min(chunk, len - off);
    T* a = viaTemp ? acc.get() : out + off;
    pull(g, a, src + off, c * sizeof(T), 0, call);
    for (int m = 1; m < g.size; ++m) {
      pull(g, in.get(), src + off, c * sizeof(T), m, call);
      for (size_t i = 0; i < c; ++i) a[i] = Op::apply(a[i], in[i]);
    }
    if (viaTemp) std::memcpy(static_cast<void*>(out + off), a, c * sizeof(T));
  }
}

// Small arrays (or 2 members): every member combines the whole array (two barriers, n gets per chunk). Large arrays:
// member k combines slice k of the array into its own dest (reduce-scatter: only k reads slice k of any source, so
// in place is safe), then every member pulls slice j from member j's dest (allgather); three barriers, and each
// member moves 2x the array instead of n x. Either way every element is combined in member order by one routine,
// so all members get the same bits.
template <class T, class Op>
void reduce(const CollGroup& g, T* dest, const T* src, size_t nreduce, const char* call) {
  shmemMulChecked(nreduce, sizeof(T), call);
  // OpenSHMEM allows dest == source (in place) or disjoint objects; any overlap is treated as in place.
  const uintptr_t d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(src);
  const bool inPlace = nreduce != 0 && d < s + nreduce * sizeof(T) && s < d + nreduce * sizeof(T);
  collBarrier(g, call);
  if (g.size < 3 || nreduce * sizeof(T) < kScatterMinBytes) {
    // In place, the result waits in a temporary until the second barrier: the others read this PE's source until then.
    std::unique_ptr<T[]> temp(inPlace ? new T[nreduce] : nullptr);
    combineMembers<T, Op>(g, src, nreduce, inPlace ? temp.get() : dest, false, call);
    collBarrier(g, call);
    if (inPlace) std::memcpy(static_cast<void*>(dest), temp.get(), nreduce * sizeof(T));
    return;
  }
  const size_t n = static_cast<size_t>(g.size), q = nreduce / n, r = nreduce % n;
  auto lo = [&](size_t k) { return k * q + std::min(k, r); };  // slice k is [lo(k), lo(k + 1))
  const size_t me = static_cast<size_t>(g.me);
  combineMembers<T, Op>(g, src + lo(me), lo(me + 1) - lo(me), dest + lo(me), inPlace, call);
  collBarrier(g, call);
  forEachMember(g, [&](int m) {
    const size_t k = static_cast<size_t>(m);
    if (m != g.me) pull(g, dest + lo(k), dest + lo(k), (lo(k + 1) - lo(k)) * sizeof(T), m, call);
  });
  collBarrier(g, call);  // the others have read this PE's slice: dest is the caller's again
}

// ---- groups -----------------------------------------------------------------------------------------------------

// Runs f(group) over a team; -1 (no communication) when the team is not valid on this PE.
template <class F>
int onTeam(shmem_team_t team, const char* call, F&& f) {
  tether_t w = shmemWorld(call);
  CollGroup g;
  if (!shmemTeamGroup(team, w, &g)) return -1;
  f(g);
  return 0;
}

// Runs f(group) over the active set (PE_start, 2^logPE_stride, PE_size) with pSync as its synchronisation words.
template <class F>
void onActiveSet(int start, int logStride, int size, long* pSync, const char* call, F&& f) {
  static_assert(sizeof(long) == sizeof(uint64_t), "pSync words are 64-bit");
  tether_t w = shmemWorld(call);
  int me = 0, npes = 0;
  shmemWorldShape(&me, &npes);
  char msg[200];
  if (pSync == nullptr) shmemAbortMsg(call, "pSync is NULL");
  if (start < 0 || logStride < 0 || logStride > 30 || size < 1) {
    std::snprintf(msg, sizeof msg, "invalid active set (PE_start %d, logPE_stride %d, PE_size %d)", start, logStride,
                  size);
    shmemAbortMsg(call, msg);
  }
  const long long stride = 1LL << logStride;
  const long long last = start + stride * (size - 1LL);
  if (last >= npes) {
    std::snprintf(msg, sizeof msg, "active set (PE_start %d, logPE_stride %d, PE_size %d) ends at PE %lld, beyond the "
                  "%d PEs of the job", start, logStride, size, last, npes);
    shmemAbortMsg(call, msg);
  }
  // The stride is a power of two: masks and shifts, no division on every call.
  if (me < start || me > last || ((me - start) & (stride - 1)) != 0) {
    std::snprintf(msg, sizeof msg, "this PE is not in the active set (PE_start %d, logPE_stride %d, PE_size %d)",
                  start, logStride, size);
    shmemAbortMsg(call, msg);
  }
  // The members' world PEs: on the stack for the usual small sets (no allocation per call), else on the heap.
  constexpr int kStackPes = 64;
  int few[kStackPes];
  std::vector<int> many(size > kStackPes ? static_cast<size_t>(size) : 0);
  int* pes = size > kStackPes ? many.data() : few;
  for (int i = 0; i < size; ++i) pes[i] = static_cast<int>(start + stride * static_cast<long long>(i));
  CollGroup g;
  g.world = w;
  g.pes = pes;
  g.size = size;
  g.me = (me - start) >> logStride;
  g.sync = reinterpret_cast<uint64_t*>(pSync);
  g.jobSize = npes;
  f(g);
}

size_t nreduceOf(int nreduce, const char* call) {
  if (nreduce < 0) {
    char msg[64];
    std::snprintf(msg, sizeof msg, "nreduce %d is negative", nreduce);
    shmemAbortMsg(call, msg);
  }
  return static_cast<size_t>(nreduce);
}

// Team forms shared by the typed and the mem routines (es = element size). broadcast, fcollect, alltoall and the
// reductions on the types the core has run on the core team collectives (tether_team_*: any memory kind, GPU
// included; arguments agreed across members; broadcast in the eager form, OpenSHMEM's contract: the root returns
// once its data is staged, docs/collectives.md); collect, alltoalls and the long double / complex reductions on this
// engine (HOST memory).
tether_team_t coreTeam(shmem_team_t team, const char* call) {
  shmemWorld(call);
  return shmemTeamValid(team) ? shmemCoreTeam(team) : TETHER_TEAM_INVALID;
}
// The data movers pass bytes as TETHER_UINT8 elements (shmemMulChecked aborts naming call on overflow).
int teamBroadcast(shmem_team_t team, void* dest, const void* src, size_t nelems, size_t es, int root,
                  const char* call) {
  tether_team_t t = coreTeam(team, call);
  if (!t) return -1;
  shmemCheck(tether_team_broadcast_eager(t, dest, src, shmemMulChecked(nelems, es, call), TETHER_UINT8, root), call);
  return 0;
}
int teamCollect(shmem_team_t team, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  return onTeam(team, call, [&](const CollGroup& g) { collect(g, dest, src, nelems, es, call); });
}
int teamFcollect(shmem_team_t team, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  tether_team_t t = coreTeam(team, call);
  if (!t) return -1;
  shmemCheck(tether_team_allgather(t, dest, src, shmemMulChecked(nelems, es, call), TETHER_UINT8), call);
  return 0;
}
int teamAlltoall(shmem_team_t team, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  tether_team_t t = coreTeam(team, call);
  if (!t) return -1;
  // OpenSHMEM: "the dest data object on all PEs in the team is ready to accept the shmem_alltoall data" before any
  // PE calls it -- the eager form's contract (with TETHER_COLL_EAGER_ALLTOALL=1, the default, members store into each
  // other's dest and wait once; with 0 the agreed alltoall, which also keeps calls back to back on one dest safe).
  shmemCheck(tether_team_alltoall_eager(t, dest, src, shmemMulChecked(nelems, es, call), TETHER_UINT8), call);
  return 0;
}

// The core element type of T, or TETHER_DTYPE_COUNT when the core has none (long double, complex).
template <class T>
constexpr tether_dtype_t coreDtype() {
  if constexpr (std::is_same_v<T, float>) return TETHER_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return TETHER_DOUBLE;
  else if constexpr (!std::is_integral_v<T>) return TETHER_DTYPE_COUNT;
  else if constexpr (sizeof(T) == 1) return std::is_signed_v<T> ? TETHER_INT8 : TETHER_UINT8;
  else if constexpr (sizeof(T) == 2) return std::is_signed_v<T> ? TETHER_SHORT : TETHER_USHORT;
  else if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? TETHER_INT32 : TETHER_UINT32;
  else return std::is_signed_v<T> ? TETHER_INT64 : TETHER_UINT64;
}
template <class Op> constexpr tether_red_op_t coreOp();
template <> constexpr tether_red_op_t coreOp<OpSum>() { return TETHER_RED_SUM; }
template <> constexpr tether_red_op_t coreOp<OpProd>() { return TETHER_RED_PROD; }
template <> constexpr tether_red_op_t coreOp<OpMin>() { return TETHER_RED_MIN; }
template <> constexpr tether_red_op_t coreOp<OpMax>() { return TETHER_RED_MAX; }
template <> constexpr tether_red_op_t coreOp<OpAnd>() { return TETHER_RED_AND; }
template <> constexpr tether_red_op_t coreOp<OpOr>() { return TETHER_RED_OR; }
template <> constexpr tether_red_op_t coreOp<OpXor>() { return TETHER_RED_XOR; }

// The core world team when the active set is every PE in order (start 0, stride 1, all PEs): 1.4 active-set calls
// over the whole job then run on the core team collectives like the team forms (pSync is left alone); otherwise
// TETHER_TEAM_INVALID and this engine serves them. The handle is SHMEM_TEAM_WORLD's, kept since shmem_init (no lookup
// per call).
tether_team_t wholeWorld(const CollGroup& g) {
  const bool all = g.size == g.jobSize && g.pes[0] == 0 && g.pes[g.size - 1] == g.size - 1;
  return all ? shmemCoreTeam(SHMEM_TEAM_WORLD) : TETHER_TEAM_INVALID;
}

template <class T, class Op>
void activeReduce(const CollGroup& g, T* dest, const T* src, size_t nreduce, const char* call) {
  tether_team_t world = coreDtype<T>() != TETHER_DTYPE_COUNT ? wholeWorld(g) : TETHER_TEAM_INVALID;
  if (!world) return reduce<T, Op>(g, dest, src, nreduce, call);
  shmemMulChecked(nreduce, sizeof(T), call);
  shmemCheck(tether_team_allreduce(world, dest, src, nreduce, coreDtype<T>(), coreOp<Op>()), call);
}
// 1.4 broadcast leaves the root's dest unchanged: the root passes its source as dest (in place: nothing copied).
void activeBroadcast(const CollGroup& g, void* dest, const void* src, size_t nelems, size_t es, int root,
                     const char* call) {
  tether_team_t world = wholeWorld(g);
  if (!world) return broadcast(g, dest, src, nelems, es, root, false, call);
  void* d = g.me == root ? const_cast<void*>(src) : dest;
  shmemCheck(tether_team_broadcast_eager(world, d, src, shmemMulChecked(nelems, es, call), TETHER_UINT8, root), call);
}
void activeFcollect(const CollGroup& g, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  tether_team_t world = wholeWorld(g);
  if (!world) return fcollect(g, dest, src, nelems, es, call);
  shmemCheck(tether_team_allgather(world, dest, src, shmemMulChecked(nelems, es, call), TETHER_UINT8), call);
}
void activeAlltoall(const CollGroup& g, void* dest, const void* src, size_t nelems, size_t es, const char* call) {
  tether_team_t world = wholeWorld(g);
  if (!world) return alltoall(g, dest, src, nelems, es, call);
  shmemCheck(tether_team_alltoall_eager(world, dest, src, shmemMulChecked(nelems, es, call), TETHER_UINT8), call);
}

template <class T, class Op>
int teamReduce(shmem_team_t team, T* dest, const T* src, size_t nreduce, const char* call) {
  if constexpr (coreDtype<T>() != TETHER_DTYPE_COUNT) {
    tether_team_t t = coreTeam(team, call);
    if (!t) return -1;
    shmemMulChecked(nreduce, sizeof(T), call);
    shmemCheck(tether_team_allreduce(t, dest, src, nreduce, coreDtype<T>(), coreOp<Op>()), call);
    return 0;
  } else {
    return onTeam(team, call, [&](const CollGroup& g) { reduce<T, Op>(g, dest, src, nreduce, call); });
  }
}
int teamAlltoalls(shmem_team_t team, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                        size_t es, const char* call) {
  return onTeam(team, call, [&](const CollGroup& g) { alltoalls(g, dest, src, dst, sst, nelems, es, call); });
}

}  // namespace
}  // namespace tether_shmem

using namespace tether_shmem;

extern "C" {

// ---- team collectives (1.5) -------------------------------------------------------------------------------------

#define SHMEM_DEFINE_COLL_(NAME, T)                                                                                \
  int shmem_##NAME##_broadcast(shmem_team_t team, T* dest, const T* source, size_t nelems, int PE_root) {          \
    return teamBroadcast(team, dest, source, nelems, sizeof(T), PE_root, "shmem_" #NAME "_broadcast");       \
  }                                                                                                                \
  int shmem_##NAME##_collect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                         \
    return teamCollect(team, dest, source, nelems, sizeof(T), "shmem_" #NAME "_collect");                    \
  }                                                                                                                \
  int shmem_##NAME##_fcollect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                        \
    return teamFcollect(team, dest, source, nelems, sizeof(T), "shmem_" #NAME "_fcollect");                  \
  }                                                                                                                \
  int shmem_##NAME##_alltoall(shmem_team_t team, T* dest, const T* source, size_t nelems) {                        \
    return teamAlltoall(team, dest, source, nelems, sizeof(T), "shmem_" #NAME "_alltoall");                  \
  }                                                                                                                \
  int shmem_##NAME##_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,          \
                               size_t nelems) {                                                                    \
    return teamAlltoalls(team, dest, source, dst, sst, nelems, sizeof(T), "shmem_" #NAME "_alltoalls");      \
  }
SHMEM_RMA_TYPES_(SHMEM_DEFINE_COLL_)
#undef SHMEM_DEFINE_COLL_

int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root) {
  return teamBroadcast(team, dest, source, nelems, 1, PE_root, "shmem_broadcastmem");
}
int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return teamCollect(team, dest, source, nelems, 1, "shmem_collectmem");
}
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return teamFcollect(team, dest, source, nelems, 1, "shmem_fcollectmem");
}
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems) {
  return teamAlltoall(team, dest, source, nelems, 1, "shmem_alltoallmem");
}
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems) {
  return teamAlltoalls(team, dest, source, dst, sst, nelems, 1, "shmem_alltoallsmem");
}

#define SHMEM_DEFINE_REDUCE_(NAME, T, OP, OPTYPE)                                                                  \
  int shmem_##NAME##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, size_t nreduce) {                  \
    const char* call = "shmem_" #NAME "_" #OP "_reduce";                                                           \
    return teamReduce<T, OPTYPE>(team, dest, source, nreduce, call);                                                \
  }
#define SHMEM_DEFINE_BITWISE_REDUCE_(NAME, T)                                                                      \
  SHMEM_DEFINE_REDUCE_(NAME, T, and, OpAnd) SHMEM_DEFINE_REDUCE_(NAME, T, or, OpOr)                                \
  SHMEM_DEFINE_REDUCE_(NAME, T, xor, OpXor)
#define SHMEM_DEFINE_MINMAX_REDUCE_(NAME, T)                                                                       \
  SHMEM_DEFINE_REDUCE_(NAME, T, max, OpMax) SHMEM_DEFINE_REDUCE_(NAME, T, min, OpMin)
#define SHMEM_DEFINE_ARITH_REDUCE_(NAME, T)                                                                        \
  SHMEM_DEFINE_REDUCE_(NAME, T, sum, OpSum) SHMEM_DEFINE_REDUCE_(NAME, T, prod, OpProd)
SHMEM_REDUCE_BITWISE_TYPES_(SHMEM_DEFINE_BITWISE_REDUCE_)
SHMEM_REDUCE_MINMAX_TYPES_(SHMEM_DEFINE_MINMAX_REDUCE_)
SHMEM_REDUCE_ARITH_TYPES_(SHMEM_DEFINE_ARITH_REDUCE_)
#undef SHMEM_DEFINE_REDUCE_

// ---- active-set collectives (1.4) -------------------------------------------------------------------------------

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  const char* call = "shmem_barrier";
  onActiveSet(PE_start, logPE_stride, PE_size, pSync, call, [&](const CollGroup& g) {
    shmemCheck(tether_quiet(g.world), call);
    collBarrier(g, call);
  });
}
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync) {
  const char* call = "shmem_sync";
  onActiveSet(PE_start, logPE_stride, PE_size, pSync, call, [&](const CollGroup& g) { collBarrier(g, call); });
}

#define SHMEM_DEFINE_ACTIVE_COLL_(BITS)                                                                            \
  void shmem_broadcast##BITS(void* dest, const void* source, size_t nelems, int PE_root, int PE_start,             \
                             int logPE_stride, int PE_size, long* pSync) {                                         \
    const char* call = "shmem_broadcast" #BITS;                                                                    \
    onActiveSet(PE_start, logPE_stride, PE_size, pSync, call, [&](const CollGroup& g) {                            \
      activeBroadcast(g, dest, source, nelems, (BITS) / 8, PE_root, call);                                         \
    });                                                                                                            \
  }                                                                                                                \
  void shmem_collect##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,           \
                           int PE_size, long* pSync) {                                                             \
    const char* call = "shmem_collect" #BITS;                                                                      \
    onActiveSet(PE_start, logPE_stride, PE_size, pSync, call,                                                      \
                [&](const CollGroup& g) { collect(g, dest, source, nelems, (BITS) / 8, call); });                  \
  }                                                                                                                \
  void shmem_fcollect##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,          \
                            int PE_size, long* pSync) {                                                            \
    const char* call = "shmem_fcollect" #BITS;                                                                     \
    onActiveSet(PE_start, logPE_stride, PE_size, pSync, call,                                                      \
                [&](const CollGroup& g) { activeFcollect(g, dest, source, nelems, (BITS) / 8, call); });           \
  }                                                                                                                \
  void shmem_alltoall##BITS(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride,          \
                            int PE_size, long* pSync) {                                                            \
    const char* call = "shmem_alltoall" #BITS;                                                                     \
    onActiveSet(PE_start, logPE_stride, PE_size, pSync, call,                                                      \
                [&](const CollGroup& g) { activeAlltoall(g, dest, source, nelems, (BITS) / 8, call); });           \
  }                                                                                                                \
  void shmem_alltoalls##BITS(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,          \
                             int PE_start, int logPE_stride, int PE_size, long* pSync) {                           \
    const char* call = "shmem_alltoalls" #BITS;                                                                    \
    onActiveSet(PE_start, logPE_stride, PE_size, pSync, call,                                                      \
                [&](const CollGroup& g) { alltoalls(g, dest, source, dst, sst, nelems, (BITS) / 8, call); });      \
  }
SHMEM_DEFINE_ACTIVE_COLL_(32)
SHMEM_DEFINE_ACTIVE_COLL_(64)
#undef SHMEM_DEFINE_ACTIVE_COLL_

#define SHMEM_DEFINE_TO_ALL_(NAME, T, OP, OPTYPE)                                                                  \
  void shmem_##NAME##_##OP##_to_all(T* dest, const T* source, int nreduce, int PE_start, int logPE_stride,         \
                                    int PE_size, T*, long* pSync) {                                                \
    const char* call = "shmem_" #NAME "_" #OP "_to_all";                                                           \
    const size_t n = nreduceOf(nreduce, call);                                                                     \
    onActiveSet(PE_start, logPE_stride, PE_size, pSync, call,                                                      \
                [&](const CollGroup& g) { activeReduce<T, OPTYPE>(g, dest, source, n, call); });                   \
  }
#define SHMEM_DEFINE_BITWISE_TO_ALL_(NAME, T)                                                                      \
  SHMEM_DEFINE_TO_ALL_(NAME, T, and, OpAnd) SHMEM_DEFINE_TO_ALL_(NAME, T, or, OpOr)                                \
  SHMEM_DEFINE_TO_ALL_(NAME, T, xor, OpXor)
#define SHMEM_DEFINE_MINMAX_TO_ALL_(NAME, T)                                                                       \
  SHMEM_DEFINE_TO_ALL_(NAME, T, max, OpMax) SHMEM_DEFINE_TO_ALL_(NAME, T, min, OpMin)
#define SHMEM_DEFINE_ARITH_TO_ALL_(NAME, T)                                                                        \
  SHMEM_DEFINE_TO_ALL_(NAME, T, sum, OpSum) SHMEM_DEFINE_TO_ALL_(NAME, T, prod, OpProd)
SHMEM_TO_ALL_BITWISE_TYPES_(SHMEM_DEFINE_BITWISE_TO_ALL_)
SHMEM_TO_ALL_MINMAX_TYPES_(SHMEM_DEFINE_MINMAX_TO_ALL_)
SHMEM_TO_ALL_ARITH_TYPES_(SHMEM_DEFINE_ARITH_TO_ALL_)
#undef SHMEM_DEFINE_TO_ALL_

}  // extern "C"
