// OpenSHMEM reductions: every shmem_<T>_<op>_reduce of the OpenSHMEM 1.5 reduction table (by its typed name) over
// SHMEM_TEAM_WORLD, the even/odd strided teams (at the same time) and a reversed team, and every 1.4
// shmem_<T>_<op>_to_all over the world and the logPE_stride = 1 active sets; each in place (dest == source) and
// disjoint, with nreduce 0, small, and larger than the engine's 64 KiB chunk; calls follow each other with no barrier
// between them. pSync is back at SHMEM_SYNC_VALUE at the end. A few C++ overloads (shmem_sum_reduce...) too.
#include <complex>
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "../shmem/shmem_check.h"

namespace {

enum class Op { And, Or, Xor, Max, Min, Sum, Prod };

template <class T> struct IsComplex : std::false_type {};
template <class T> struct IsComplex<std::complex<T>> : std::true_type {};

int me, npes;
constexpr size_t kPoolBytes = 2 * 1024 * 1024;
void* g_src;
void* g_dst;

// Source element i of world PE pe, chosen so that every result is exact and in range for every type.
template <class T>
T gen(Op op, int pe, size_t i) {
  const int k = static_cast<int>(i % 1024);
  if constexpr (IsComplex<T>::value) {
    using R = typename T::value_type;
    if (op == Op::Prod) return (pe + k) % 2 ? T(R(1), R(1)) : T(R(1), R(0));
    return T(R(pe + k % 5), R(pe - k % 3));
  } else {
    const bool sign = std::is_signed_v<T>;
    switch (op) {
      case Op::And: case Op::Or: case Op::Xor: return static_cast<T>(((pe + 1) * 0x35 + k * 3) & 0x7f);
      case Op::Max: case Op::Min: return static_cast<T>((pe * 5 + k * 3) % 11 - (sign ? 5 : 0));
      case Op::Sum: return static_cast<T>((pe * 3 + k) % 7 - (sign ? 3 : 0));
      case Op::Prod: return static_cast<T>((pe + k) % 3 == 0 ? (sign && pe % 2 ? -2 : 2) : 1);
    }
    return T();
  }
}

template <class T>
T combine(Op op, T a, T b) {
  if constexpr (IsComplex<T>::value) {
    return op == Op::Prod ? a * b : a + b;
  } else {
    switch (op) {
      case Op::Max: return b > a ? b : a;
      case Op::Min: return b < a ? b : a;
      case Op::Sum: return static_cast<T>(a + b);
      case Op::Prod: return static_cast<T>(a * b);
      default: break;
    }
    if constexpr (std::is_integral_v<T>) {
      if (op == Op::And) return static_cast<T>(a & b);
      if (op == Op::Or) return static_cast<T>(a | b);
      return static_cast<T>(a ^ b);
    }
    return T();
  }
}

// Runs call(dest, source, n) for the member list `members` (world PEs in order) and checks dest.
// big: also nreduce 0 and (sum only) a size past the engine's 64 KiB chunk and scatter threshold; kept to one group
// per type so that the test stays short.
template <class T, class Call>
void check(const char* name, Op op, const std::vector<int>& members, bool big, Call call) {
  T* src = static_cast<T*>(g_src);
  T* dst = static_cast<T*>(g_dst);
  const size_t chunkCrossing = 64 * 1024 / sizeof(T) + 5;
  std::vector<size_t> sizes = {1, 19};
  if (big) sizes.push_back(0);
  if (big && op == Op::Sum) sizes.push_back(chunkCrossing);
  for (size_t n : sizes) {
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      T* d = inPlace ? src : dst;
      for (size_t i = 0; i < n; ++i) src[i] = gen<T>(op, me, i);
      if (!inPlace) dst[n] = gen<T>(op, me, 4242);  // guard
      call(d, src, n);
      for (size_t i = 0; i < n; ++i) {
        T want = gen<T>(op, members[0], i);
        for (size_t m = 1; m < members.size(); ++m) want = combine(op, want, gen<T>(op, members[m], i));
        SCHECK(d[i] == want, "%s n=%zu%s [%zu] wrong", name, n, inPlace ? " in place" : "", i);
      }
      if (!inPlace) SCHECK(dst[n] == gen<T>(op, me, 4242), "%s wrote past nreduce", name);
    }
  }
}

struct Team {
  shmem_team_t team;
  std::vector<int> members;
};
std::vector<Team> g_teams;

template <class T>
using ReduceFn = int (*)(shmem_team_t, T*, const T*, size_t);
template <class T>
using ToAllFn = void (*)(T*, const T*, int, int, int, int, T*, long*);

template <class T>
void teamReduce(const char* name, Op op, ReduceFn<T> fn) {
  for (const Team& t : g_teams)
    check<T>(name, op, t.members, &t == &g_teams.back(), [&](T* d, const T* s, size_t n) {
      SCHECK(fn(t.team, d, s, n) == 0, "%s returned non-zero", name);
    });
}

// Active sets of the 1.4 forms: the world, then this PE's half of logPE_stride = 1 (both halves at once). A pSync
// may be reused at once by the same active set only (OpenSHMEM 1.4), so each set has its own.
long* g_psync;      // the world set's
long* g_psyncHalf;  // the halves'

template <class T>
void activeReduce(const char* name, Op op, ToAllFn<T> fn) {
  std::vector<int> world, half;
  for (int pe = 0; pe < npes; ++pe) world.push_back(pe);
  for (int pe = me % 2; pe < npes; pe += 2) half.push_back(pe);
  T work[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
  check<T>(name, op, world, true, [&](T* d, const T* s, size_t n) {
    fn(d, s, static_cast<int>(n), 0, 0, npes, work, g_psync);
  });
  check<T>(name, op, half, false, [&](T* d, const T* s, size_t n) {
    fn(d, s, static_cast<int>(n), me % 2, 1, static_cast<int>(half.size()), work, g_psyncHalf);
  });
}

// Every (type, op) of a type list, calling RUNNER_<T>(name, op, shmem_<type>_<op><SUFFIX_>) (both defined where
// the lists are expanded).
#define CAT_(a, b) a##b
#define XCAT_(a, b) CAT_(a, b)
#define ONE_(NAME, T, OP, OPE) RUNNER_<T>(#NAME "_" #OP, Op::OPE, XCAT_(shmem_##NAME##_##OP, SUFFIX_));
#define BITWISE_(NAME, T) ONE_(NAME, T, and, And) ONE_(NAME, T, or, Or) ONE_(NAME, T, xor, Xor)
#define MINMAX_(NAME, T) ONE_(NAME, T, max, Max) ONE_(NAME, T, min, Min)
#define ARITH_(NAME, T) ONE_(NAME, T, sum, Sum) ONE_(NAME, T, prod, Prod)

void allTeamReductions() {
#define RUNNER_ teamReduce
#define SUFFIX_ _reduce
  SHMEM_REDUCE_BITWISE_TYPES_(BITWISE_)
  SHMEM_REDUCE_MINMAX_TYPES_(MINMAX_)
  SHMEM_REDUCE_ARITH_TYPES_(ARITH_)
#undef RUNNER_
#undef SUFFIX_
}

void allToAllReductions() {
#define RUNNER_ activeReduce
#define SUFFIX_ _to_all
  SHMEM_TO_ALL_BITWISE_TYPES_(BITWISE_)
  SHMEM_TO_ALL_MINMAX_TYPES_(MINMAX_)
  SHMEM_TO_ALL_ARITH_TYPES_(ARITH_)
#undef RUNNER_
#undef SUFFIX_
}

// The C++ overloads select the typed routine from the pointer type.
void overloads() {
  const Team& w = g_teams[0];
  int* is = static_cast<int*>(g_src);
  int* id = static_cast<int*>(g_dst);
  is[0] = me + 1;
  SCHECK(shmem_sum_reduce(w.team, id, is, 1) == 0 && id[0] == npes * (npes + 1) / 2, "sum overload");
  SCHECK(shmem_max_reduce(w.team, id, is, 1) == 0 && id[0] == npes, "max overload");
  SCHECK(shmem_min_reduce(w.team, id, is, 1) == 0 && id[0] == 1, "min overload");
  uint32_t* us = static_cast<uint32_t*>(g_src);
  uint32_t* ud = static_cast<uint32_t*>(g_dst);
  us[0] = 1u << me;
  SCHECK(shmem_or_reduce(w.team, ud, us, 1) == 0 && ud[0] == (1u << npes) - 1, "or overload");
  SCHECK(shmem_xor_reduce(w.team, ud, us, 1) == 0 && ud[0] == (1u << npes) - 1, "xor overload");
  SCHECK(shmem_and_reduce(w.team, ud, us, 1) == 0 && ud[0] == 0, "and overload");
  int8_t* bs = static_cast<int8_t*>(g_src);
  int8_t* bd = static_cast<int8_t*>(g_dst);
  bs[0] = static_cast<int8_t>(0x70 | me);
  SCHECK(shmem_and_reduce(w.team, bd, bs, 1) == 0 && bd[0] == 0x70, "int8 and overload");
  std::complex<double>* cs = static_cast<std::complex<double>*>(g_src);
  std::complex<double>* cd = static_cast<std::complex<double>*>(g_dst);
  cs[0] = std::complex<double>(0, 1);
  SCHECK(shmem_prod_reduce(w.team, cd, cs, 1) == 0, "complex prod overload");
  std::complex<double> want(1, 0);
  for (int i = 0; i < npes; ++i) want *= std::complex<double>(0, 1);
  SCHECK(cd[0] == want, "complex prod value");
  long double* ls = static_cast<long double*>(g_src);
  long double* ld = static_cast<long double*>(g_dst);
  ls[0] = 0.5L;
  SCHECK(shmem_prod_reduce(w.team, ld, ls, 1) == 0 && ld[0] == 1.0L / static_cast<long double>(1 << npes),
         "longdouble prod overload");
  SCHECK(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, id, is, 1) != 0, "reduce on INVALID");
}

// A large reduction: each member's slice of the reduce-scatter spans several 64 KiB chunks.
void large() {
  const size_t n = 160 * 1024;
  double* s = static_cast<double*>(g_src);
  double* d = static_cast<double*>(g_dst);
  for (int inPlace = 0; inPlace < 2; ++inPlace) {
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<double>((i % 1000) * static_cast<size_t>(me + 1));
    double* out = inPlace ? s : d;
    SCHECK(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, out, s, n) == 0, "large sum");
    const double f = npes * (npes + 1) / 2.0;
    for (size_t i = 0; i < n; ++i) SCHECK(out[i] == static_cast<double>(i % 1000) * f, "large sum [%zu]", i);
  }
}

}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  g_src = shmem_malloc(kPoolBytes);
  g_dst = shmem_malloc(kPoolBytes);
  g_psync = static_cast<long*>(shmem_malloc(SHMEM_REDUCE_SYNC_SIZE * sizeof(long)));
  g_psyncHalf = static_cast<long*>(shmem_malloc(SHMEM_REDUCE_SYNC_SIZE * sizeof(long)));
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) g_psync[i] = g_psyncHalf[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();

  std::vector<int> world, parity, reversed;
  for (int pe = 0; pe < npes; ++pe) world.push_back(pe);
  for (int pe = me % 2; pe < npes; pe += 2) parity.push_back(pe);
  for (int pe = npes - 1; pe >= 0; --pe) reversed.push_back(pe);
  shmem_team_t even, odd, rev;
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, nullptr, 0, &even) == 0, "even");
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, nullptr, 0, &odd) == 0, "odd");
  SCHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, nullptr, 0, &rev) == 0, "reversed");
  g_teams = {{SHMEM_TEAM_WORLD, world}, {me % 2 == 0 ? even : odd, parity}, {rev, reversed}};

  overloads();
  large();
  allTeamReductions();
  allToAllReductions();

  shmem_barrier_all();
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i)
    SCHECK(g_psync[i] == SHMEM_SYNC_VALUE && g_psyncHalf[i] == SHMEM_SYNC_VALUE,
           "pSync[%d] = %ld / %ld after the active-set reductions", i, g_psync[i], g_psyncHalf[i]);
  shmem_team_destroy(even);
  shmem_team_destroy(odd);
  shmem_team_destroy(rev);
  if (me == 0) std::printf("coll_reduce: OK (%d PEs)\n", npes);
  shmem_finalize();
  return 0;
}
