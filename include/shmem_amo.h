/* OpenSHMEM 1.5 atomic memory operations (AMOs) on tether. Included by shmem.h; usable on its own after
 * <stddef.h> and <stdint.h>, from C and C++.
 *
 * Every routine takes a symmetric `dest`/`source` and a target PE and is atomic with respect to every other AMO on
 * the same object from any PE (tether_atomic). Invalid arguments (non-symmetric address, bad PE, misalignment) end
 * the program with a message naming the routine and the offending value (OpenSHMEM leaves them undefined).
 *
 * Types (OpenSHMEM 1.5, tables "Standard AMO Types", "Extended AMO Types", "Bitwise AMO Types"):
 *  - standard (fetch_inc, inc, fetch_add, add, compare_swap): int, long, longlong, uint, ulong, ulonglong, int32,
 *    int64, uint32, uint64, size, ptrdiff;
 *  - extended (fetch, set, swap): the standard types plus float and double;
 *  - bitwise (and, or, xor and their fetch_ forms): uint, ulong, ulonglong, int32, int64, uint32, uint64.
 *
 * Non-blocking fetching forms (shmem_<T>_atomic_<op>_nbi, 1.5): the fetched value is written to the local address
 * `fetch`. The specification only promises it after the next shmem_quiet (or a routine that implies one); this
 * implementation performs the operation before returning, which satisfies that rule — do not rely on it.
 *
 * Deprecated names still accepted (OpenSHMEM 1.3/1.4): shmem_<T>_fadd, _finc, _add, _inc, _cswap for int, long,
 * longlong; shmem_<T>_swap, _fetch, _set for int, long, longlong, float, double; the untyped
 * `long shmem_swap(long*, long, int)`.
 *
 * Generic names (shmem_atomic_fetch_add(dest, value, pe) etc., and the 1.4 deprecated generic names shmem_fadd,
 * shmem_finc, shmem_add, shmem_inc, shmem_swap, shmem_cswap, shmem_fetch, shmem_set): C11 _Generic selection in C,
 * overloads in C++. They dispatch on the pointed-to type, so only the distinct C types appear (int32_t, uint64_t,
 * size_t... are typedefs of them and select the same routine, which has the same representation).
 *
 * Contexts (shmem_ctx.h): every routine but the deprecated ones has a context form shmem_ctx_<T>_atomic_<op>(ctx,
 * <same arguments>), `pe` then being a PE number in the context's team; the forms without a context run on
 * SHMEM_CTX_DEFAULT. The generic names take an optional leading context: shmem_atomic_add(ctx, dest, value, pe).
 */
#ifndef SHMEM_AMO_H
#define SHMEM_AMO_H

#include <stddef.h>
#include <stdint.h>

#include "shmem_ctx.h"

/* Type lists: X(NAME, C type). Reserved for the implementation (the SHMEM_ prefix). */
#define SHMEM_AMO_STANDARD_TYPES_(X)                                                                               \
  X(int, int) X(long, long) X(longlong, long long) X(uint, unsigned int) X(ulong, unsigned long)                   \
  X(ulonglong, unsigned long long) X(int32, int32_t) X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t)     \
  X(size, size_t) X(ptrdiff, ptrdiff_t)
#define SHMEM_AMO_EXTENDED_TYPES_(X) SHMEM_AMO_STANDARD_TYPES_(X) X(float, float) X(double, double)
#define SHMEM_AMO_BITWISE_TYPES_(X)                                                                                \
  X(uint, unsigned int) X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int32, int32_t)                 \
  X(int64, int64_t) X(uint32, uint32_t) X(uint64, uint64_t)
#define SHMEM_AMO_DEPRECATED_TYPES_(X) X(int, int) X(long, long) X(longlong, long long)
#define SHMEM_AMO_DEPRECATED_EXT_TYPES_(X) SHMEM_AMO_DEPRECATED_TYPES_(X) X(float, float) X(double, double)

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Each with its context form (SHMEM_DECLARE_CTX_PAIR_, shmem_ctx.h). */
#define SHMEM_DECLARE_EXTENDED_AMO_(NAME, T)                                                                       \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_fetch, const T* source, int pe)                                         \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_set, T* dest, T value, int pe)                                       \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_swap, T* dest, T value, int pe)                                         \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_fetch_nbi, T* fetch, const T* source, int pe)                        \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_swap_nbi, T* fetch, T* dest, T value, int pe)
#define SHMEM_DECLARE_STANDARD_AMO_(NAME, T)                                                                       \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_compare_swap, T* dest, T cond, T value, int pe)                         \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_fetch_inc, T* dest, int pe)                                             \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_inc, T* dest, int pe)                                                \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_fetch_add, T* dest, T value, int pe)                                    \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_add, T* dest, T value, int pe)                                       \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_compare_swap_nbi, T* fetch, T* dest, T cond, T value, int pe)        \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_fetch_inc_nbi, T* fetch, T* dest, int pe)                            \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_fetch_add_nbi, T* fetch, T* dest, T value, int pe)
#define SHMEM_DECLARE_BITWISE_AMO_(NAME, T)                                                                        \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_fetch_and, T* dest, T value, int pe)                                    \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_and, T* dest, T value, int pe)                                       \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_fetch_and_nbi, T* fetch, T* dest, T value, int pe)                   \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_fetch_or, T* dest, T value, int pe)                                     \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_or, T* dest, T value, int pe)                                        \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_fetch_or_nbi, T* fetch, T* dest, T value, int pe)                    \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_atomic_fetch_xor, T* dest, T value, int pe)                                    \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_xor, T* dest, T value, int pe)                                       \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_atomic_fetch_xor_nbi, T* fetch, T* dest, T value, int pe)
/* Deprecated (1.3/1.4) names. */
#define SHMEM_DECLARE_DEPRECATED_AMO_(NAME, T)                                                                     \
  T shmem_##NAME##_fadd(T* dest, T value, int pe);                                                                 \
  T shmem_##NAME##_finc(T* dest, int pe);                                                                          \
  void shmem_##NAME##_add(T* dest, T value, int pe);                                                               \
  void shmem_##NAME##_inc(T* dest, int pe);                                                                        \
  T shmem_##NAME##_cswap(T* dest, T cond, T value, int pe);
#define SHMEM_DECLARE_DEPRECATED_EXT_AMO_(NAME, T)                                                                 \
  T shmem_##NAME##_swap(T* dest, T value, int pe);                                                                 \
  T shmem_##NAME##_fetch(const T* source, int pe);                                                                 \
  void shmem_##NAME##_set(T* dest, T value, int pe);

SHMEM_AMO_EXTENDED_TYPES_(SHMEM_DECLARE_EXTENDED_AMO_)
SHMEM_AMO_STANDARD_TYPES_(SHMEM_DECLARE_STANDARD_AMO_)
SHMEM_AMO_BITWISE_TYPES_(SHMEM_DECLARE_BITWISE_AMO_)
SHMEM_AMO_DEPRECATED_TYPES_(SHMEM_DECLARE_DEPRECATED_AMO_)
SHMEM_AMO_DEPRECATED_EXT_TYPES_(SHMEM_DECLARE_DEPRECATED_EXT_AMO_)

#undef SHMEM_DECLARE_EXTENDED_AMO_
#undef SHMEM_DECLARE_STANDARD_AMO_
#undef SHMEM_DECLARE_BITWISE_AMO_
#undef SHMEM_DECLARE_DEPRECATED_AMO_
#undef SHMEM_DECLARE_DEPRECATED_EXT_AMO_

/* OpenSHMEM 1.3 untyped swap on a long (deprecated). */
long shmem_swap(long* dest, long value, int pe);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---------------------------------------------------------------------------------------------------------------- */
/* Generic names                                                                                                    */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* _Generic association lists over the distinct C types, giving PREFIX##<type>_##OP (PREFIX: shmem_ or shmem_ctx_;
 * the controlling expression *dest is lvalue-converted, so const objects select the same entry). */
#define SHMEM_AMO_GSTD_(dest, PREFIX, OP)                                                                          \
  _Generic(*(dest), int: PREFIX##int_##OP, long: PREFIX##long_##OP, long long: PREFIX##longlong_##OP,              \
           unsigned int: PREFIX##uint_##OP, unsigned long: PREFIX##ulong_##OP,                                     \
           unsigned long long: PREFIX##ulonglong_##OP)
#define SHMEM_AMO_GEXT_(dest, PREFIX, OP)                                                                          \
  _Generic(*(dest), int: PREFIX##int_##OP, long: PREFIX##long_##OP, long long: PREFIX##longlong_##OP,              \
           unsigned int: PREFIX##uint_##OP, unsigned long: PREFIX##ulong_##OP,                                     \
           unsigned long long: PREFIX##ulonglong_##OP, float: PREFIX##float_##OP, double: PREFIX##double_##OP)
#define SHMEM_AMO_GBIT_(dest, PREFIX, OP)                                                                          \
  _Generic(*(dest), unsigned int: PREFIX##uint_##OP, unsigned long: PREFIX##ulong_##OP,                            \
           unsigned long long: PREFIX##ulonglong_##OP, int32_t: PREFIX##int32_##OP, int64_t: PREFIX##int64_##OP)
#define SHMEM_AMO_GDEP_(dest, PREFIX, OP)                                                                          \
  _Generic(*(dest), int: PREFIX##int_##OP, long: PREFIX##long_##OP, long long: PREFIX##longlong_##OP)
#define SHMEM_AMO_GDEPX_(dest, PREFIX, OP)                                                                         \
  _Generic(*(dest), int: PREFIX##int_##OP, long: PREFIX##long_##OP, long long: PREFIX##longlong_##OP,              \
           float: PREFIX##float_##OP, double: PREFIX##double_##OP)

/* With an optional leading context (SHMEM_CTX_G_, shmem_ctx.h). The type comes from the first argument after the
 * context (dest / source), or for the _nbi forms from the second (dest / source after fetch). */
#define SHMEM_AMO_CTX_G_(SEL, OP, ...) SHMEM_CTX_G_(SHMEM_GPICK1_, SEL, OP, __VA_ARGS__)(__VA_ARGS__)
#define SHMEM_AMO_CTX_G2_(SEL, OP, ...) SHMEM_CTX_G_(SHMEM_GPICK2_, SEL, OP, __VA_ARGS__)(__VA_ARGS__)

/* [ctx,] source, pe */
#define shmem_atomic_fetch(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GEXT_, atomic_fetch, __VA_ARGS__)
/* [ctx,] dest, value, pe */
#define shmem_atomic_set(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GEXT_, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GEXT_, atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GSTD_, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GSTD_, atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GBIT_, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GBIT_, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GBIT_, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GBIT_, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GBIT_, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GBIT_, atomic_xor, __VA_ARGS__)
/* [ctx,] dest, cond, value, pe */
#define shmem_atomic_compare_swap(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GSTD_, atomic_compare_swap, __VA_ARGS__)
/* [ctx,] dest, pe */
#define shmem_atomic_fetch_inc(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GSTD_, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEM_AMO_CTX_G_(SHMEM_AMO_GSTD_, atomic_inc, __VA_ARGS__)

/* [ctx,] fetch, source, pe */
#define shmem_atomic_fetch_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GEXT_, atomic_fetch_nbi, __VA_ARGS__)
/* [ctx,] fetch, dest, value, pe */
#define shmem_atomic_swap_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GEXT_, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GSTD_, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GBIT_, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GBIT_, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GBIT_, atomic_fetch_xor_nbi, __VA_ARGS__)
/* [ctx,] fetch, dest, cond, value, pe */
#define shmem_atomic_compare_swap_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GSTD_, atomic_compare_swap_nbi, __VA_ARGS__)
/* [ctx,] fetch, dest, pe */
#define shmem_atomic_fetch_inc_nbi(...) SHMEM_AMO_CTX_G2_(SHMEM_AMO_GSTD_, atomic_fetch_inc_nbi, __VA_ARGS__)

/* Deprecated 1.4 generic names (the untyped shmem_swap function stays callable as (shmem_swap)(...)). */
#define shmem_fadd(dest, value, pe) SHMEM_AMO_GDEP_(dest, shmem_, fadd)(dest, value, pe)
#define shmem_finc(dest, pe) SHMEM_AMO_GDEP_(dest, shmem_, finc)(dest, pe)
#define shmem_add(dest, value, pe) SHMEM_AMO_GDEP_(dest, shmem_, add)(dest, value, pe)
#define shmem_inc(dest, pe) SHMEM_AMO_GDEP_(dest, shmem_, inc)(dest, pe)
#define shmem_cswap(dest, cond, value, pe) SHMEM_AMO_GDEP_(dest, shmem_, cswap)(dest, cond, value, pe)
#define shmem_swap(dest, value, pe) SHMEM_AMO_GDEPX_(dest, shmem_, swap)(dest, value, pe)
#define shmem_fetch(source, pe) SHMEM_AMO_GDEPX_(source, shmem_, fetch)(source, pe)
#define shmem_set(dest, value, pe) SHMEM_AMO_GDEPX_(dest, shmem_, set)(dest, value, pe)

#elif defined(__cplusplus)

extern "C++" {
/* One overload per distinct C type and its context form (leading shmem_ctx_t), forwarding to the typed routine
 * (SHMEM_CXX_CTX_PAIR_, shmem_ctx.h). The deprecated names have no context form. */
#define SHMEM_AMO_CXX_EXTENDED_(NAME, T)                                                                           \
  SHMEM_CXX_CTX_PAIR_(T, atomic_fetch, NAME##_atomic_fetch, (const T* source, int pe), (source, pe))               \
  SHMEM_CXX_CTX_PAIR_(void, atomic_set, NAME##_atomic_set, (T* dest, T value, int pe), (dest, value, pe))          \
  SHMEM_CXX_CTX_PAIR_(T, atomic_swap, NAME##_atomic_swap, (T* dest, T value, int pe), (dest, value, pe))           \
  SHMEM_CXX_CTX_PAIR_(void, atomic_fetch_nbi, NAME##_atomic_fetch_nbi,                                             \
                      (T* fetch, const T* source, int pe), (fetch, source, pe))                                    \
  SHMEM_CXX_CTX_PAIR_(void, atomic_swap_nbi, NAME##_atomic_swap_nbi,                                               \
                      (T* fetch, T* dest, T value, int pe), (fetch, dest, value, pe))
#define SHMEM_AMO_CXX_STANDARD_(NAME, T)                                                                           \
  SHMEM_CXX_CTX_PAIR_(T, atomic_compare_swap, NAME##_atomic_compare_swap,                                          \
                      (T* dest, T cond, T value, int pe), (dest, cond, value, pe))                                 \
  SHMEM_CXX_CTX_PAIR_(T, atomic_fetch_inc, NAME##_atomic_fetch_inc, (T* dest, int pe), (dest, pe))                 \
  SHMEM_CXX_CTX_PAIR_(void, atomic_inc, NAME##_atomic_inc, (T* dest, int pe), (dest, pe))                          \
  SHMEM_CXX_CTX_PAIR_(T, atomic_fetch_add, NAME##_atomic_fetch_add, (T* dest, T value, int pe), (dest, value, pe)) \
  SHMEM_CXX_CTX_PAIR_(void, atomic_add, NAME##_atomic_add, (T* dest, T value, int pe), (dest, value, pe))          \
  SHMEM_CXX_CTX_PAIR_(void, atomic_compare_swap_nbi, NAME##_atomic_compare_swap_nbi,                               \
                      (T* fetch, T* dest, T cond, T value, int pe), (fetch, dest, cond, value, pe))                \
  SHMEM_CXX_CTX_PAIR_(void, atomic_fetch_inc_nbi, NAME##_atomic_fetch_inc_nbi,                                     \
                      (T* fetch, T* dest, int pe), (fetch, dest, pe))                                              \
  SHMEM_CXX_CTX_PAIR_(void, atomic_fetch_add_nbi, NAME##_atomic_fetch_add_nbi,                                     \
                      (T* fetch, T* dest, T value, int pe), (fetch, dest, value, pe))
#define SHMEM_AMO_CXX_BITWISE_(NAME, T)                                                                            \
  SHMEM_CXX_CTX_PAIR_(T, atomic_fetch_and, NAME##_atomic_fetch_and, (T* dest, T value, int pe), (dest, value, pe)) \
  SHMEM_CXX_CTX_PAIR_(void, atomic_and, NAME##_atomic_and, (T* dest, T value, int pe), (dest, value, pe))          \
  SHMEM_CXX_CTX_PAIR_(void, atomic_fetch_and_nbi, NAME##_atomic_fetch_and_nbi,                                     \
                      (T* fetch, T* dest, T value, int pe), (fetch, dest, value, pe))                              \
  SHMEM_CXX_CTX_PAIR_(T, atomic_fetch_or, NAME##_atomic_fetch_or, (T* dest, T value, int pe), (dest, value, pe))   \
  SHMEM_CXX_CTX_PAIR_(void, atomic_or, NAME##_atomic_or, (T* dest, T value, int pe), (dest, value, pe))            \
  SHMEM_CXX_CTX_PAIR_(void, atomic_fetch_or_nbi, NAME##_atomic_fetch_or_nbi,                                       \
                      (T* fetch, T* dest, T value, int pe), (fetch, dest, value, pe))                              \
  SHMEM_CXX_CTX_PAIR_(T, atomic_fetch_xor, NAME##_atomic_fetch_xor, (T* dest, T value, int pe), (dest, value, pe)) \
  SHMEM_CXX_CTX_PAIR_(void, atomic_xor, NAME##_atomic_xor, (T* dest, T value, int pe), (dest, value, pe))          \
  SHMEM_CXX_CTX_PAIR_(void, atomic_fetch_xor_nbi, NAME##_atomic_fetch_xor_nbi,                                     \
                      (T* fetch, T* dest, T value, int pe), (fetch, dest, value, pe))
#define SHMEM_AMO_CXX_DEPRECATED_(NAME, T)                                                                         \
  inline T shmem_fadd(T* dest, T value, int pe) { return shmem_##NAME##_fadd(dest, value, pe); }                   \
  inline T shmem_finc(T* dest, int pe) { return shmem_##NAME##_finc(dest, pe); }                                   \
  inline void shmem_add(T* dest, T value, int pe) { shmem_##NAME##_add(dest, value, pe); }                         \
  inline void shmem_inc(T* dest, int pe) { shmem_##NAME##_inc(dest, pe); }                                         \
  inline T shmem_cswap(T* dest, T cond, T value, int pe) { return shmem_##NAME##_cswap(dest, cond, value, pe); }   \
  inline T shmem_fetch(const T* source, int pe) { return shmem_##NAME##_fetch(source, pe); }                       \
  inline void shmem_set(T* dest, T value, int pe) { shmem_##NAME##_set(dest, value, pe); }
#define SHMEM_AMO_CXX_DEPRECATED_FP_(NAME, T)                                                                      \
  inline T shmem_swap(T* dest, T value, int pe) { return shmem_##NAME##_swap(dest, value, pe); }                   \
  inline T shmem_fetch(const T* source, int pe) { return shmem_##NAME##_fetch(source, pe); }                       \
  inline void shmem_set(T* dest, T value, int pe) { shmem_##NAME##_set(dest, value, pe); }
#define SHMEM_AMO_CXX_DISTINCT_STD_(X)                                                                             \
  X(int, int) X(long, long) X(longlong, long long) X(uint, unsigned int) X(ulong, unsigned long)                   \
  X(ulonglong, unsigned long long)

SHMEM_AMO_CXX_DISTINCT_STD_(SHMEM_AMO_CXX_EXTENDED_)
SHMEM_AMO_CXX_EXTENDED_(float, float)
SHMEM_AMO_CXX_EXTENDED_(double, double)
SHMEM_AMO_CXX_DISTINCT_STD_(SHMEM_AMO_CXX_STANDARD_)
SHMEM_AMO_CXX_BITWISE_(uint, unsigned int)
SHMEM_AMO_CXX_BITWISE_(ulong, unsigned long)
SHMEM_AMO_CXX_BITWISE_(ulonglong, unsigned long long)
SHMEM_AMO_CXX_BITWISE_(int32, int32_t)
SHMEM_AMO_CXX_BITWISE_(int64, int64_t)
SHMEM_AMO_DEPRECATED_TYPES_(SHMEM_AMO_CXX_DEPRECATED_)
SHMEM_AMO_CXX_DEPRECATED_FP_(float, float)
SHMEM_AMO_CXX_DEPRECATED_FP_(double, double)
/* shmem_swap on long is the extern "C" routine above; int and long long: */
inline int shmem_swap(int* dest, int value, int pe) { return shmem_int_swap(dest, value, pe); }
inline long long shmem_swap(long long* dest, long long value, int pe) { return shmem_longlong_swap(dest, value, pe); }

#undef SHMEM_AMO_CXX_EXTENDED_
#undef SHMEM_AMO_CXX_STANDARD_
#undef SHMEM_AMO_CXX_BITWISE_
#undef SHMEM_AMO_CXX_DEPRECATED_
#undef SHMEM_AMO_CXX_DEPRECATED_FP_
#undef SHMEM_AMO_CXX_DISTINCT_STD_
} /* extern "C++" */

#endif /* generic names */

#endif /* SHMEM_AMO_H */
