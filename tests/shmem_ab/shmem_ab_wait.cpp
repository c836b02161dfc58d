// OpenSHMEM point-to-point synchronisation: wait_until / test and the _all/_any/_some (+ _vector) forms for every
// point-to-point type, driven by peers; deprecated shmem_<T>_wait and the untyped long forms; C++ overloads.
#include <shmem.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ab_check.h"

namespace {

int me, npes;

// Each PE owns a symmetric array a[npes]; in the "deliver" step every PE p writes p+1 into a[p] on every PE (with a
// put, so short/ushort work too). Before that step (between barriers) every entry is 0.
template <class T>
void deliver(T* a) {
  const T v = (T)(me + 1);
  for (int pe = 0; pe < npes; ++pe) shmem_putmem(&a[me], &v, sizeof v, pe);
  shmem_quiet();
}

#define TEST_P2P(NAME, T)                                                                                          \
  void p2p_##NAME() {                                                                                              \
    const size_t n = (size_t)npes;                                                                                 \
    T* a = static_cast<T*>(shmem_calloc(n, sizeof(T)));                                                            \
    std::vector<size_t> idx(n, 12345);                                                                             \
    std::vector<int> status(n, 0);                                                                                 \
    std::vector<T> want(n), zero(n, (T)0);                                                                         \
    for (size_t i = 0; i < n; ++i) want[i] = (T)(i + 1);                                                           \
    /* nothing delivered yet */                                                                                    \
    AB_CHECK(shmem_##NAME##_test(&a[(me + 1) % npes], SHMEM_CMP_NE, (T)0) == 0);                                   \
    AB_CHECK(shmem_##NAME##_test(&a[0], SHMEM_CMP_EQ, (T)0) == 1);                                                 \
    AB_CHECK(shmem_##NAME##_test_all(a, n, nullptr, SHMEM_CMP_GT, (T)0) == 0);                                     \
    AB_CHECK(shmem_##NAME##_test_all(a, n, nullptr, SHMEM_CMP_LE, (T)0) == 1);                                     \
    AB_CHECK(shmem_##NAME##_test_any(a, n, nullptr, SHMEM_CMP_NE, (T)0) == SIZE_MAX);                              \
    AB_CHECK(shmem_##NAME##_test_some(a, n, idx.data(), nullptr, SHMEM_CMP_NE, (T)0) == 0);                        \
    AB_CHECK(shmem_##NAME##_test_all_vector(a, n, nullptr, SHMEM_CMP_EQ, want.data()) == 0);                       \
    AB_CHECK(shmem_##NAME##_test_any_vector(a, n, nullptr, SHMEM_CMP_EQ, want.data()) == SIZE_MAX);                \
    AB_CHECK(shmem_##NAME##_test_some_vector(a, n, idx.data(), nullptr, SHMEM_CMP_EQ, want.data()) == 0);          \
    AB_CHECK(shmem_##NAME##_test_all_vector(a, n, nullptr, SHMEM_CMP_EQ, zero.data()) == 1);                       \
    /* nelems 0 */                                                                                                 \
    AB_CHECK(shmem_##NAME##_test_all(a, 0, nullptr, SHMEM_CMP_NE, (T)0) == 1);                                     \
    AB_CHECK(shmem_##NAME##_test_any(a, 0, nullptr, SHMEM_CMP_EQ, (T)0) == SIZE_MAX);                              \
    AB_CHECK(shmem_##NAME##_wait_until_any(a, 0, nullptr, SHMEM_CMP_EQ, (T)0) == SIZE_MAX);                        \
    AB_CHECK(shmem_##NAME##_wait_until_some(a, 0, nullptr, nullptr, SHMEM_CMP_EQ, (T)0) == 0);                     \
    shmem_##NAME##_wait_until_all(a, 0, nullptr, SHMEM_CMP_NE, (T)0);                                              \
    shmem_barrier_all();                                                                                           \
    /* the left neighbour's value: single-variable waits (it may not have arrived yet) */                          \
    deliver(a);                                                                                                    \
    const int left = (me + npes - 1) % npes;                                                                       \
    shmem_##NAME##_wait_until(&a[left], SHMEM_CMP_EQ, (T)(left + 1));                                              \
    shmem_##NAME##_wait(&a[left], (T)0);                                                                           \
    AB_CHECK(shmem_##NAME##_test(&a[left], SHMEM_CMP_GE, (T)(left + 1)) == 1);                                     \
    AB_CHECK(shmem_##NAME##_test(&a[left], SHMEM_CMP_LT, (T)(left + 1)) == 0);                                     \
    /* all entries */                                                                                              \
    shmem_##NAME##_wait_until_all(a, n, nullptr, SHMEM_CMP_GT, (T)0);                                              \
    shmem_##NAME##_wait_until_all_vector(a, n, nullptr, SHMEM_CMP_EQ, want.data());                                \
    AB_CHECK(shmem_##NAME##_test_all(a, n, nullptr, SHMEM_CMP_NE, (T)0) == 1);                                     \
    AB_CHECK(shmem_##NAME##_test_all_vector(a, n, nullptr, SHMEM_CMP_EQ, want.data()) == 1);                       \
    /* any: with everything but the last entry masked out, the last is the one */                                  \
    for (size_t i = 0; i + 1 < n; ++i) status[i] = 1;                                                              \
    AB_CHECK(shmem_##NAME##_wait_until_any(a, n, status.data(), SHMEM_CMP_NE, (T)0) == n - 1);                     \
    AB_CHECK(shmem_##NAME##_wait_until_any_vector(a, n, status.data(), SHMEM_CMP_EQ, want.data()) == n - 1);       \
    AB_CHECK(shmem_##NAME##_test_any(a, n, status.data(), SHMEM_CMP_EQ, (T)n) == n - 1);                           \
    AB_CHECK(shmem_##NAME##_test_any_vector(a, n, status.data(), SHMEM_CMP_EQ, want.data()) == n - 1);             \
    /* everything masked: any -> SIZE_MAX, some -> 0 */                                                            \
    status[n - 1] = 1;                                                                                             \
    AB_CHECK(shmem_##NAME##_wait_until_any(a, n, status.data(), SHMEM_CMP_NE, (T)0) == SIZE_MAX);                  \
    AB_CHECK(shmem_##NAME##_wait_until_some(a, n, idx.data(), status.data(), SHMEM_CMP_NE, (T)0) == 0);            \
    shmem_##NAME##_wait_until_all(a, n, status.data(), SHMEM_CMP_EQ, (T)77); /* nothing to wait for */             \
    /* some: every entry satisfies GE 1; entries >= 2 satisfy the vector form with want shifted by one */           \
    std::fill(status.begin(), status.end(), 0);                                                                    \
    size_t c = shmem_##NAME##_wait_until_some(a, n, idx.data(), status.data(), SHMEM_CMP_GE, (T)1);                \
    AB_CHECK(c == n);                                                                                              \
    for (size_t i = 0; i < c; ++i) AB_CHECK(idx[i] == i);                                                          \
    std::vector<T> shifted(n);                                                                                     \
    for (size_t i = 0; i < n; ++i) shifted[i] = (T)(i == 0 ? 5 : i); /* a[i] = i+1 > i except at 0 */              \
    c = shmem_##NAME##_wait_until_some_vector(a, n, idx.data(), nullptr, SHMEM_CMP_GT, shifted.data());            \
    AB_CHECK(c == n - 1 && idx[0] == 1);                                                                           \
    c = shmem_##NAME##_test_some(a, n, idx.data(), nullptr, SHMEM_CMP_EQ, (T)1);                                   \
    AB_CHECK(c == 1 && idx[0] == 0);                                                                               \
    c = shmem_##NAME##_test_some_vector(a, n, idx.data(), nullptr, SHMEM_CMP_LE, shifted.data());                  \
    AB_CHECK(c == 1 && idx[0] == 0);                                                                               \
    shmem_barrier_all();                                                                                           \
    shmem_free(a);                                                                                                 \
  }

SHMEM_P2P_ALL_TYPES_(TEST_P2P)

// A waiter blocked before the update arrives: PE 0 waits on a flag that the last PE sets after its own wait on a
// value from PE 0 (ping-pong a few rounds); untyped long forms and the C++ generic overloads.
void pingpong() {
  long* flag = static_cast<long*>(shmem_calloc(2, sizeof(long)));
  int* iflag = static_cast<int*>(shmem_calloc(1, sizeof(int)));
  const int last = npes - 1;
  for (long round = 1; round <= 20; ++round) {
    if (me == 0) {
      shmem_long_atomic_set(&flag[0], round, last);
      shmem_wait_until(&flag[1], SHMEM_CMP_EQ, round);  // untyped long form (C++: the extern "C" one)
    } else if (me == last) {
      shmem_wait(&flag[0], round - 1);  // untyped: until != previous round
      AB_CHECK(flag[0] == round);
      shmem_long_atomic_set(&flag[1], round, 0);
    }
  }
  shmem_barrier_all();
  // generic overloads (int)
  if (me == 0) shmem_int_atomic_set(iflag, 3, last);
  if (me == last) {
    shmem_wait_until(iflag, SHMEM_CMP_GE, 3);
    AB_CHECK(shmem_test(iflag, SHMEM_CMP_EQ, 3) == 1);
    AB_CHECK(shmem_test_any(iflag, 1, nullptr, SHMEM_CMP_EQ, 3) == 0);
    size_t one = 9;
    AB_CHECK(shmem_wait_until_some(iflag, 1, &one, nullptr, SHMEM_CMP_EQ, 3) == 1 && one == 0);
    shmem_wait_until_all(iflag, 1, nullptr, SHMEM_CMP_EQ, 3);
    shmem_wait(iflag, 0);
  }
  shmem_barrier_all();
  shmem_free(iflag);
  shmem_free(flag);
}

}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
#define RUN(NAME, T) p2p_##NAME();
  SHMEM_P2P_ALL_TYPES_(RUN)
#undef RUN
  pingpong();
  shmem_pcontrol(1);
  shmem_pcontrol(0, "ignored");
  if (me == 0) printf("shmem_ab_wait: OK on %d PEs\n", npes);
  shmem_finalize();
  return 0;
}
