// OpenSHMEM AMOs: every routine for every type, across PEs; non-blocking fetching forms completed by shmem_quiet;
// deprecated names; the C++ generic overloads.
#include <shmem.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ab_check.h"

namespace {

int me, npes;

// Words used by each per-type test: [0] counter hammered by everyone on PE 0, [1] compare_swap target,
// [2] cswap winners, [3] per-PE set/fetch/swap slot, [4] nbi counter, [5] bitwise word.
template <class T>
T* words() {
  return static_cast<T*>(shmem_calloc(8, sizeof(T)));
}

constexpr int kIters = 64;

#define TEST_STANDARD(NAME, T)                                                                                     \
  void standard_##NAME() {                                                                                         \
    T* w = words<T>();                                                                                             \
    for (int i = 0; i < kIters; ++i) {                                                                             \
      const int pe = (me + i) % npes;                                                                              \
      shmem_##NAME##_atomic_inc(&w[0], pe);                                                                        \
      shmem_##NAME##_atomic_add(&w[0], (T)2, pe);                                                                  \
      T before = shmem_##NAME##_atomic_fetch_inc(&w[0], pe);                                                       \
      T again = shmem_##NAME##_atomic_fetch_add(&w[0], (T)3, pe);                                                  \
      AB_CHECK(again != before); /* our own inc happened in between */                                             \
    }                                                                                                              \
    /* compare_swap: exactly one PE wins the 0 -> me+1 swap on PE 0's word */                                      \
    T old = shmem_##NAME##_atomic_compare_swap(&w[1], (T)0, (T)(me + 1), 0);                                       \
    if (old == (T)0) shmem_##NAME##_atomic_inc(&w[2], 0);                                                          \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(w[0] == (T)(kIters * 7));                                                                             \
    if (me == 0) {                                                                                                 \
      AB_CHECK(w[2] == (T)1);                                                                                      \
      AB_CHECK(w[1] >= (T)1 && w[1] <= (T)npes);                                                                   \
    }                                                                                                              \
    /* a failing compare_swap leaves the word alone and returns it */                                              \
    T cur = shmem_##NAME##_atomic_compare_swap(&w[1], (T)(npes + 5), (T)99, 0);                                    \
    AB_CHECK(cur >= (T)1 && cur <= (T)npes);                                                                       \
    shmem_barrier_all();                                                                                           \
    if (me == 0) AB_CHECK(w[1] == cur);                                                                            \
    /* non-blocking fetching forms: values land at the latest at shmem_quiet */                                    \
    T fetched[3 * kIters];                                                                                         \
    for (int i = 0; i < kIters; ++i) {                                                                             \
      shmem_##NAME##_atomic_fetch_inc_nbi(&fetched[3 * i], &w[4], 0);                                              \
      shmem_##NAME##_atomic_fetch_add_nbi(&fetched[3 * i + 1], &w[4], (T)1, 0);                                    \
      shmem_##NAME##_atomic_compare_swap_nbi(&fetched[3 * i + 2], &w[5], (T)0, (T)0, 0);                           \
    }                                                                                                              \
    shmem_quiet();                                                                                                 \
    long long sum = 0;                                                                                             \
    for (int i = 0; i < kIters; ++i) {                                                                             \
      sum += (long long)fetched[3 * i] + (long long)fetched[3 * i + 1];                                            \
      AB_CHECK(fetched[3 * i + 2] == (T)0);                                                                        \
    }                                                                                                              \
    long long* total = static_cast<long long*>(shmem_calloc(1, sizeof(long long)));                                \
    shmem_longlong_atomic_add(total, sum, 0);                                                                      \
    shmem_barrier_all();                                                                                           \
    if (me == 0) {                                                                                                 \
      const long long m = 2LL * kIters * npes; /* the fetched values are exactly 0 .. m-1 */                       \
      AB_CHECK(w[4] == (T)m);                                                                                      \
      AB_CHECK(*total == m * (m - 1) / 2);                                                                         \
    }                                                                                                              \
    shmem_barrier_all();                                                                                           \
    shmem_free(total);                                                                                             \
    shmem_free(w);                                                                                                 \
  }

#define TEST_EXTENDED(NAME, T)                                                                                     \
  void extended_##NAME() {                                                                                         \
    T* w = words<T>();                                                                                             \
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;                                              \
    shmem_##NAME##_atomic_set(&w[3], (T)(me + 10), right);                                                         \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(w[3] == (T)(left + 10));                                                                              \
    AB_CHECK(shmem_##NAME##_atomic_fetch(&w[3], right) == (T)(me + 10));                                           \
    const T* cw = w;                                                                                               \
    AB_CHECK(shmem_##NAME##_atomic_fetch(&cw[3], me) == (T)(left + 10));                                           \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(shmem_##NAME##_atomic_swap(&w[3], (T)(me + 20), right) == (T)(me + 10));                              \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(w[3] == (T)(left + 20));                                                                              \
    T got[2] = {(T)0, (T)0};                                                                                       \
    shmem_##NAME##_atomic_fetch_nbi(&got[0], &w[3], right);                                                        \
    shmem_quiet();                                                                                                 \
    AB_CHECK(got[0] == (T)(me + 20));                                                                              \
    shmem_barrier_all();                                                                                           \
    shmem_##NAME##_atomic_swap_nbi(&got[1], &w[3], (T)(me + 30), right);                                           \
    shmem_quiet();                                                                                                 \
    AB_CHECK(got[1] == (T)(me + 20));                                                                              \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(w[3] == (T)(left + 30));                                                                              \
    /* swap chain on PE 0: the returned values plus the final one are the initial value and every PE's id */       \
    if (me == 0) w[6] = (T)100;                                                                                    \
    shmem_barrier_all();                                                                                           \
    T prev = shmem_##NAME##_atomic_swap(&w[6], (T)me, 0);                                                          \
    int* seen = static_cast<int*>(shmem_calloc((size_t)npes + 1, sizeof(int)));                                    \
    shmem_int_atomic_inc(&seen[prev == (T)100 ? npes : (int)prev], 0);                                             \
    shmem_barrier_all();                                                                                           \
    if (me == 0) {                                                                                                 \
      seen[(int)w[6]] += 1;                                                                                        \
      for (int i = 0; i <= npes; ++i) AB_CHECK(seen[i] == 1);                                                      \
    }                                                                                                              \
    shmem_barrier_all();                                                                                           \
    shmem_free(seen);                                                                                              \
    shmem_free(w);                                                                                                 \
  }

#define TEST_BITWISE(NAME, T)                                                                                      \
  void bitwise_##NAME() {                                                                                          \
    T* w = words<T>();                                                                                             \
    const T bit = (T)((T)1 << (me % 16));                                                                          \
    T mask = 0;                                                                                                    \
    for (int pe = 0; pe < npes; ++pe) mask = (T)(mask | (T)((T)1 << (pe % 16)));                                   \
    shmem_##NAME##_atomic_or(&w[0], bit, 0);                                                                       \
    shmem_##NAME##_atomic_fetch_or(&w[1], bit, 0);                                                                 \
    T f = 0;                                                                                                       \
    shmem_##NAME##_atomic_fetch_or_nbi(&f, &w[2], bit, 0);                                                         \
    shmem_quiet();                                                                                                 \
    shmem_barrier_all();                                                                                           \
    if (me == 0) AB_CHECK(w[0] == mask && w[1] == mask && w[2] == mask);                                           \
    shmem_barrier_all();                                                                                           \
    /* clear own bit: and with ~bit (three forms) */                                                               \
    shmem_##NAME##_atomic_and(&w[0], (T)~bit, 0);                                                                  \
    T o = shmem_##NAME##_atomic_fetch_and(&w[1], (T)~bit, 0);                                                      \
    AB_CHECK((o & bit) == bit);                                                                                    \
    shmem_##NAME##_atomic_fetch_and_nbi(&f, &w[2], (T)~bit, 0);                                                    \
    shmem_quiet();                                                                                                 \
    AB_CHECK((f & bit) == bit);                                                                                    \
    /* toggle own bit twice in w[3], once in w[4] */                                                               \
    shmem_##NAME##_atomic_xor(&w[3], bit, 0);                                                                      \
    shmem_##NAME##_atomic_fetch_xor(&w[3], bit, 0);                                                                \
    shmem_##NAME##_atomic_fetch_xor_nbi(&f, &w[4], bit, 0);                                                        \
    shmem_quiet();                                                                                                 \
    shmem_barrier_all();                                                                                           \
    if (me == 0) {                                                                                                 \
      AB_CHECK(w[0] == (T)0 && w[1] == (T)0 && w[2] == (T)0);                                                      \
      AB_CHECK(w[3] == (T)0);                                                                                      \
      if (npes <= 16) AB_CHECK(w[4] == mask);                                                                      \
    }                                                                                                              \
    shmem_barrier_all();                                                                                           \
    shmem_free(w);                                                                                                 \
  }

SHMEM_AMO_STANDARD_TYPES_(TEST_STANDARD)
SHMEM_AMO_EXTENDED_TYPES_(TEST_EXTENDED)
SHMEM_AMO_BITWISE_TYPES_(TEST_BITWISE)

#define TEST_DEPRECATED(NAME, T)                                                                                   \
  void deprecated_##NAME() {                                                                                       \
    T* w = words<T>();                                                                                             \
    for (int i = 0; i < 8; ++i) {                                                                                  \
      const int pe = (me + i) % npes;                                                                              \
      shmem_##NAME##_add(&w[0], (T)2, pe);                                                                         \
      shmem_##NAME##_inc(&w[0], pe);                                                                               \
      (void)shmem_##NAME##_fadd(&w[0], (T)3, pe);                                                                  \
      (void)shmem_##NAME##_finc(&w[0], pe);                                                                        \
    }                                                                                                              \
    T old = shmem_##NAME##_cswap(&w[1], (T)0, (T)(me + 1), 0);                                                     \
    if (old == (T)0) shmem_##NAME##_inc(&w[2], 0);                                                                 \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(w[0] == (T)(8 * 7));                                                                                  \
    if (me == 0) AB_CHECK(w[2] == (T)1);                                                                           \
    shmem_barrier_all();                                                                                           \
    shmem_free(w);                                                                                                 \
  }
#define TEST_DEPRECATED_EXT(NAME, T)                                                                               \
  void deprecated_ext_##NAME() {                                                                                   \
    T* w = words<T>();                                                                                             \
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;                                              \
    shmem_##NAME##_set(&w[3], (T)(me + 1), right);                                                                 \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(shmem_##NAME##_fetch(&w[3], me) == (T)(left + 1));                                                    \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(shmem_##NAME##_swap(&w[3], (T)(me + 2), right) == (T)(me + 1));                                       \
    shmem_barrier_all();                                                                                           \
    AB_CHECK(w[3] == (T)(left + 2));                                                                               \
    shmem_barrier_all();                                                                                           \
    shmem_free(w);                                                                                                 \
  }
SHMEM_AMO_DEPRECATED_TYPES_(TEST_DEPRECATED)
SHMEM_AMO_DEPRECATED_EXT_TYPES_(TEST_DEPRECATED_EXT)

// C++ overloads of the generic names and the untyped 1.3 shmem_swap.
void generic_overloads() {
  long* l = words<long>();
  unsigned long long* u = words<unsigned long long>();
  double* d = words<double>();
  int* i = words<int>();
  shmem_atomic_add(&l[0], 5L, 0);
  shmem_atomic_inc(&l[0], 0);
  (void)shmem_atomic_fetch_add(&l[0], 1L, 0);
  (void)shmem_atomic_fetch_inc(&l[0], 0);
  shmem_atomic_or(&u[0], 1ull << me, 0);
  (void)shmem_atomic_fetch_xor(&u[1], 1ull << me, 0);
  unsigned long long fx = 0;
  shmem_atomic_fetch_and_nbi(&fx, &u[2], 0ull, 0);
  shmem_atomic_set(&d[0], 2.5, me);
  AB_CHECK(shmem_atomic_fetch(&d[0], me) == 2.5);
  AB_CHECK(shmem_atomic_swap(&d[0], 3.5, me) == 2.5);
  AB_CHECK(shmem_atomic_compare_swap(&i[0], 0, 7, me) == 0);
  AB_CHECK(shmem_atomic_compare_swap(&i[0], 0, 9, me) == 7);
  long fetched = -1;
  shmem_atomic_fetch_nbi(&fetched, &l[1], me);
  shmem_quiet();
  AB_CHECK(fetched == 0);
  // deprecated generic names and the untyped long swap
  shmem_inc(&i[1], 0);
  shmem_add(&i[1], 2, 0);
  (void)shmem_fadd(&i[1], 3, 0);
  (void)shmem_finc(&i[1], 0);
  shmem_set(&l[2], 11L, me);
  AB_CHECK(shmem_fetch(&l[2], me) == 11L);
  AB_CHECK(shmem_swap(&l[2], 12L, me) == 11L);
  AB_CHECK(shmem_swap(&d[1], 1.0, me) == 0.0);
  AB_CHECK(shmem_cswap(&l[2], 12L, 13L, me) == 12L);
  shmem_quiet();
  shmem_barrier_all();
  if (me == 0) {
    AB_CHECK(l[0] == 8L * npes);
    AB_CHECK(i[1] == 7 * npes);
    if (npes < 64) {
      AB_CHECK(u[0] == (1ull << npes) - 1);
      AB_CHECK(u[1] == (1ull << npes) - 1);
    }
  }
  AB_CHECK(d[0] == 3.5 && i[0] == 7 && l[2] == 13L && fx == 0);
  shmem_barrier_all();
  shmem_free(i);
  shmem_free(d);
  shmem_free(u);
  shmem_free(l);
}

}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
#define RUN(NAME, T) standard_##NAME();
  SHMEM_AMO_STANDARD_TYPES_(RUN)
#undef RUN
#define RUN(NAME, T) extended_##NAME();
  SHMEM_AMO_EXTENDED_TYPES_(RUN)
#undef RUN
#define RUN(NAME, T) bitwise_##NAME();
  SHMEM_AMO_BITWISE_TYPES_(RUN)
#undef RUN
#define RUN(NAME, T) deprecated_##NAME();
  SHMEM_AMO_DEPRECATED_TYPES_(RUN)
#undef RUN
#define RUN(NAME, T) deprecated_ext_##NAME();
  SHMEM_AMO_DEPRECATED_EXT_TYPES_(RUN)
#undef RUN
  generic_overloads();
  if (me == 0) printf("shmem_ab_amo: OK on %d PEs\n", npes);
  shmem_finalize();
  return 0;
}
