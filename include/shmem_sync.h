/* OpenSHMEM 1.5 point-to-point synchronisation and distributed locks on tether. Included by shmem.h; usable on its
 * own after <stddef.h> and <stdint.h>, from C and C++.
 *
 * Point-to-point routines wait on (or test) this PE's own symmetric variables `ivars`, which other PEs update with
 * RMA or AMO routines. Types (OpenSHMEM 1.5 "point-to-point synchronization types"): int, long, longlong, uint, ulong,
 * ulonglong, int32, int64, uint32, uint64, size, ptrdiff; short and ushort are accepted too (OpenSHMEM 1.4 types).
 *  - shmem_<T>_wait_until(ivar, cmp, value), shmem_<T>_test(ivar, cmp, value) -> 1/0
 *  - _wait_until_all/_any/_some and _test_all/_any/_some over ivars[0..nelems) with an optional status mask (entries
 *    with a non-zero status are ignored), and their _vector forms (one comparison value per entry).
 *    _any returns the index of a satisfying entry (SIZE_MAX when every entry is masked out, or for test_any when none
 *    holds now); _some writes the satisfying indices to `indices` and returns their count (0 when all are masked).
 *  - deprecated: shmem_<T>_wait(ivar, value) = wait until *ivar != value; untyped shmem_wait(long*, long) and
 *    shmem_wait_until(long*, int, long).
 * Waits are bounded by TETHER_TIMEOUT (default 300 s): a wait that exceeds it ends the program with a message naming
 * the variable, the comparison and the last value seen (OpenSHMEM itself would wait forever).
 *
 * Comparison constants SHMEM_CMP_EQ, _NE, _GT, _GE, _LT, _LE (and the 1.3 spellings SHMEM_CMP_* / _SHMEM_CMP_*).
 *
 * Distributed locks: shmem_set_lock / shmem_test_lock / shmem_clear_lock on a symmetric `long`, zero-initialised
 * before first use (by every PE, before a barrier). The lock lives in PE 0's copy of that word as a FIFO ticket
 * lock: the high 32 bits count tickets handed out, the low 32 bits the ticket now served (both modulo 2^32; zero =
 * free, no waiter). set_lock takes a ticket (one atomic add on the high half) and waits for its turn; test_lock takes
 * the lock only when it is free (compare-and-swap) and returns 0 when it did, 1 otherwise; clear_lock completes the
 * caller's outstanding puts (shmem_quiet) and then advances the served count. Locks are granted in request order. A
 * PE must not request a lock it holds (deadlock), and only the holder may clear it.
 *
 * shmem_pcontrol(level, ...) is accepted and ignored (no profiling interface).
 */
#ifndef SHMEM_SYNC_H
#define SHMEM_SYNC_H

#include <stddef.h>
#include <stdint.h>

/* Comparison operators (values match tether_cmp_t). */
#ifndef SHMEM_CMP_EQ
#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#endif
#ifndef _SHMEM_CMP_EQ
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE
#endif

/* Type lists: X(NAME, C type). */
#define SHMEM_P2P_TYPES_(X)                                                                                        \
  X(int, int) X(long, long) X(longlong, long long) X(uint, unsigned int) X(ulong, unsigned long)                   \
  X(ulonglong, unsigned long long) X(int32, int32_t) X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t)     \
  X(size, size_t) X(ptrdiff, ptrdiff_t)
#define SHMEM_P2P_ALL_TYPES_(X) SHMEM_P2P_TYPES_(X) X(short, short) X(ushort, unsigned short)

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define SHMEM_DECLARE_P2P_(NAME, T)                                                                                \
  void shmem_##NAME##_wait_until(T* ivar, int cmp, T cmp_value);                                                   \
  int shmem_##NAME##_test(T* ivar, int cmp, T cmp_value);                                                          \
  void shmem_##NAME##_wait(T* ivar, T cmp_value);                                                                  \
  void shmem_##NAME##_wait_until_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);            \
  size_t shmem_##NAME##_wait_until_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);          \
  size_t shmem_##NAME##_wait_until_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,      \
                                        T cmp_value);                                                              \
  void shmem_##NAME##_wait_until_all_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values);   \
  size_t shmem_##NAME##_wait_until_any_vector(T* ivars, size_t nelems, const int* status, int cmp,                 \
                                              T* cmp_values);                                                      \
  size_t shmem_##NAME##_wait_until_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status,        \
                                               int cmp, T* cmp_values);                                            \
  int shmem_##NAME##_test_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);                   \
  size_t shmem_##NAME##_test_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value);                \
  size_t shmem_##NAME##_test_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,            \
                                  T cmp_value);                                                                    \
  int shmem_##NAME##_test_all_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values);          \
  size_t shmem_##NAME##_test_any_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values);       \
  size_t shmem_##NAME##_test_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,     \
                                         T* cmp_values);

SHMEM_P2P_ALL_TYPES_(SHMEM_DECLARE_P2P_)
#undef SHMEM_DECLARE_P2P_

/* Deprecated untyped (long) forms of OpenSHMEM 1.3. */
void shmem_wait(long* ivar, long cmp_value);
void shmem_wait_until(long* ivar, int cmp, long cmp_value);

/* Distributed locks (see the top of this file). */
void shmem_set_lock(long* lock);
int shmem_test_lock(long* lock);
void shmem_clear_lock(long* lock);

/* Profiling control: accepted, no effect. */
void shmem_pcontrol(const int level, ...);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---------------------------------------------------------------------------------------------------------------- */
/* Generic names: dispatch on the pointed-to type of ivar(s) (distinct C types only; fixed-width typedefs select the
 * routine of their underlying type). */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

#define SHMEM_P2P_G_(ivars, OP)                                                                                    \
  _Generic(*(ivars), short: shmem_short_##OP, int: shmem_int_##OP, long: shmem_long_##OP,                          \
           long long: shmem_longlong_##OP, unsigned short: shmem_ushort_##OP, unsigned int: shmem_uint_##OP,       \
           unsigned long: shmem_ulong_##OP, unsigned long long: shmem_ulonglong_##OP)

/* shmem_wait_until / shmem_wait also exist as untyped long functions; (shmem_wait_until)(...) calls those. */
#define shmem_wait_until(ivar, cmp, cmp_value) SHMEM_P2P_G_(ivar, wait_until)(ivar, cmp, cmp_value)
#define shmem_wait(ivar, cmp_value) SHMEM_P2P_G_(ivar, wait)(ivar, cmp_value)
#define shmem_test(ivar, cmp, cmp_value) SHMEM_P2P_G_(ivar, test)(ivar, cmp, cmp_value)
#define shmem_wait_until_all(ivars, nelems, status, cmp, cmp_value)                                                \
  SHMEM_P2P_G_(ivars, wait_until_all)(ivars, nelems, status, cmp, cmp_value)
#define shmem_wait_until_any(ivars, nelems, status, cmp, cmp_value)                                                \
  SHMEM_P2P_G_(ivars, wait_until_any)(ivars, nelems, status, cmp, cmp_value)
#define shmem_wait_until_some(ivars, nelems, indices, status, cmp, cmp_value)                                      \
  SHMEM_P2P_G_(ivars, wait_until_some)(ivars, nelems, indices, status, cmp, cmp_value)
#define shmem_wait_until_all_vector(ivars, nelems, status, cmp, cmp_values)                                        \
  SHMEM_P2P_G_(ivars, wait_until_all_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_wait_until_any_vector(ivars, nelems, status, cmp, cmp_values)                                        \
  SHMEM_P2P_G_(ivars, wait_until_any_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_wait_until_some_vector(ivars, nelems, indices, status, cmp, cmp_values)                              \
  SHMEM_P2P_G_(ivars, wait_until_some_vector)(ivars, nelems, indices, status, cmp, cmp_values)
#define shmem_test_all(ivars, nelems, status, cmp, cmp_value)                                                      \
  SHMEM_P2P_G_(ivars, test_all)(ivars, nelems, status, cmp, cmp_value)
#define shmem_test_any(ivars, nelems, status, cmp, cmp_value)                                                      \
  SHMEM_P2P_G_(ivars, test_any)(ivars, nelems, status, cmp, cmp_value)
#define shmem_test_some(ivars, nelems, indices, status, cmp, cmp_value)                                            \
  SHMEM_P2P_G_(ivars, test_some)(ivars, nelems, indices, status, cmp, cmp_value)
#define shmem_test_all_vector(ivars, nelems, status, cmp, cmp_values)                                              \
  SHMEM_P2P_G_(ivars, test_all_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_test_any_vector(ivars, nelems, status, cmp, cmp_values)                                              \
  SHMEM_P2P_G_(ivars, test_any_vector)(ivars, nelems, status, cmp, cmp_values)
#define shmem_test_some_vector(ivars, nelems, indices, status, cmp, cmp_values)                                    \
  SHMEM_P2P_G_(ivars, test_some_vector)(ivars, nelems, indices, status, cmp, cmp_values)

#elif defined(__cplusplus)

extern "C++" {
#define SHMEM_P2P_CXX_(NAME, T)                                                                                    \
  inline void shmem_wait_until(T* ivar, int cmp, T cmp_value) { shmem_##NAME##_wait_until(ivar, cmp, cmp_value); } \
  inline void shmem_wait(T* ivar, T cmp_value) { shmem_##NAME##_wait(ivar, cmp_value); }                           \
  SHMEM_P2P_CXX_COMMON_(NAME, T)
#define SHMEM_P2P_CXX_COMMON_(NAME, T)                                                                             \
  inline int shmem_test(T* ivar, int cmp, T cmp_value) { return shmem_##NAME##_test(ivar, cmp, cmp_value); }       \
  inline void shmem_wait_until_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {             \
    shmem_##NAME##_wait_until_all(ivars, nelems, status, cmp, cmp_value);                                          \
  }                                                                                                                \
  inline size_t shmem_wait_until_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {           \
    return shmem_##NAME##_wait_until_any(ivars, nelems, status, cmp, cmp_value);                                   \
  }                                                                                                                \
  inline size_t shmem_wait_until_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,        \
                                      T cmp_value) {                                                               \
    return shmem_##NAME##_wait_until_some(ivars, nelems, indices, status, cmp, cmp_value);                         \
  }                                                                                                                \
  inline void shmem_wait_until_all_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {    \
    shmem_##NAME##_wait_until_all_vector(ivars, nelems, status, cmp, cmp_values);                                  \
  }                                                                                                                \
  inline size_t shmem_wait_until_any_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {  \
    return shmem_##NAME##_wait_until_any_vector(ivars, nelems, status, cmp, cmp_values);                           \
  }                                                                                                                \
  inline size_t shmem_wait_until_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp, \
                                             T* cmp_values) {                                                      \
    return shmem_##NAME##_wait_until_some_vector(ivars, nelems, indices, status, cmp, cmp_values);                 \
  }                                                                                                                \
  inline int shmem_test_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {                    \
    return shmem_##NAME##_test_all(ivars, nelems, status, cmp, cmp_value);                                         \
  }                                                                                                                \
  inline size_t shmem_test_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {                 \
    return shmem_##NAME##_test_any(ivars, nelems, status, cmp, cmp_value);                                         \
  }                                                                                                                \
  inline size_t shmem_test_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,              \
                                T cmp_value) {                                                                     \
    return shmem_##NAME##_test_some(ivars, nelems, indices, status, cmp, cmp_value);                               \
  }                                                                                                                \
  inline int shmem_test_all_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {           \
    return shmem_##NAME##_test_all_vector(ivars, nelems, status, cmp, cmp_values);                                 \
  }                                                                                                                \
  inline size_t shmem_test_any_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {        \
    return shmem_##NAME##_test_any_vector(ivars, nelems, status, cmp, cmp_values);                                 \
  }                                                                                                                \
  inline size_t shmem_test_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,       \
                                       T* cmp_values) {                                                            \
    return shmem_##NAME##_test_some_vector(ivars, nelems, indices, status, cmp, cmp_values);                       \
  }

SHMEM_P2P_CXX_(short, short)
SHMEM_P2P_CXX_(int, int)
SHMEM_P2P_CXX_COMMON_(long, long) /* shmem_wait_until / shmem_wait on long are the extern "C" routines above */
SHMEM_P2P_CXX_(longlong, long long)
SHMEM_P2P_CXX_(ushort, unsigned short)
SHMEM_P2P_CXX_(uint, unsigned int)
SHMEM_P2P_CXX_(ulong, unsigned long)
SHMEM_P2P_CXX_(ulonglong, unsigned long long)
#undef SHMEM_P2P_CXX_
#undef SHMEM_P2P_CXX_COMMON_
} /* extern "C++" */

#endif /* generic names */

#endif /* SHMEM_SYNC_H */
