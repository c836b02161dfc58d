/* OpenSHMEM 1.5 collectives on teams, and the OpenSHMEM 1.4 active-set collectives. Included by shmem_team.h (so by
 * shmem.h); not meant to be included on its own. Reference: docs/shmem/teams-collectives.md.
 *
 * Team collectives (1.5) return 0, or non-zero without communicating when the team is SHMEM_TEAM_INVALID, destroyed,
 * or one this PE is not a member of. Every member of the team must call them, in the same order, with the same
 * symmetric dest/source objects and the same arguments (collect: nelems may differ). On return dest holds the result
 * and source may be reused; no other synchronisation is needed before or after a call (back-to-back collectives on
 * one team are safe). source and dest must not overlap, except that a reduction may use dest == source (in place).
 *  - shmem_<T>_broadcast(team, dest, source, nelems, PE_root): source of team PE PE_root to dest on every member,
 *    the root included (1.5).
 *  - shmem_<T>_collect(team, dest, source, nelems): every member's nelems elements (nelems may differ per PE) end to
 *    end in dest, in team PE order. _fcollect: the same with one nelems for all.
 *  - shmem_<T>_alltoall(team, dest, source, nelems): block j (nelems elements) of source on team PE i lands in block
 *    i of dest on team PE j. _alltoalls adds element strides dst, sst >= 1: element k of the block for team PE j is
 *    source[sst*(j*nelems + k)], written to dest[dst*(i*nelems + k)].
 *  - shmem_<T>_<op>_reduce(team, dest, source, nreduce): dest[k] = source[k] of member 0 op ... op member n-1, the
 *    same bits on every member (members are combined in team order everywhere). Integer sum/prod wrap around.
 *  - the *mem forms take bytes; T is every standard RMA type (shmem.h) for the data movers, and the reduction types
 *    of OpenSHMEM 1.5 (SHMEM_REDUCE_*_TYPES_ below) for the reductions.
 * Generic names: shmem_broadcast, shmem_collect, shmem_fcollect, shmem_alltoall, shmem_alltoalls and
 * shmem_and/or/xor/max/min/sum/prod_reduce select the typed routine from the type dest points to (C11 _Generic in C,
 * overloads in C++; C++ uses std::complex<float>/<double> for complexf/complexd). shmem_sync(team) is
 * shmem_team_sync (C11: a macro choosing by argument count; C++: an overload).
 *
 * Active-set collectives (OpenSHMEM 1.4, deprecated in 1.5): the set is the world PEs PE_start + i*2^logPE_stride,
 * i < PE_size; PE_root is an index into the set. pSync is a symmetric long array of at least SHMEM_*_SYNC_SIZE
 * elements, all SHMEM_SYNC_VALUE before its first use (then left at SHMEM_SYNC_VALUE once every member has returned;
 * it may be reused by the next collective of the same set without re-initialising or synchronising; before it is
 * used by a different active set, the PEs of both sets must have left the previous call, as OpenSHMEM 1.4 requires:
 * barrier arrivals are counted per round, not per sender). pWrk is not used. A caller
 * outside the set, a set outside the job, PE_root outside the set, strides < 1 or a NULL pSync end the program with
 * a message naming the routine. shmem_broadcast32/64 leave dest on the root unchanged (1.4). shmem_barrier completes
 * the caller's outstanding puts first (shmem_quiet); shmem_sync does not.
 *
 * Team broadcast/fcollect/alltoall and the reductions of every type but long double and complex run on tether's core
 * team collectives (tether_team_*), so their objects may be in any memory kind, GPU memory included.
 * Cost (every member is reached directly: one host): a collective is two barriers of the team with, between them,
 * one tether_get per member that this PE pulls its data from (it never writes another PE's memory). Reductions of
 * at least 64 KiB over 3 or more members are a reduce-scatter and an allgather (three barriers, each member moves
 * about twice the array); smaller ones pull the whole array from every member.
 */
#ifndef SHMEM_COLL_H
#define SHMEM_COLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#include <complex>
#define SHMEM_COMPLEXF_T_ std::complex<float>
#define SHMEM_COMPLEXD_T_ std::complex<double>
#else
#define SHMEM_COMPLEXF_T_ float _Complex
#define SHMEM_COMPLEXD_T_ double _Complex
#endif

/* pSync / pWrk sizes (in elements) and the pSync initial value. Every active-set collective uses the same layout, so
 * all sync sizes are equal. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 40
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16
/* deprecated spellings (OpenSHMEM 1.2) */
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* Reduction types (OpenSHMEM 1.5 table "Reduction Types, Names and Supporting Operations"): X(NAME, C type).
 * BITWISE: and, or, xor (and everything else); MINMAX: max, min (and sum, prod); ARITH: sum, prod. */
#define SHMEM_REDUCE_BITWISE_TYPES_(X)                                                                             \
  X(uchar, unsigned char) X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)                  \
  X(ulonglong, unsigned long long) X(int8, int8_t) X(int16, int16_t) X(int32, int32_t) X(int64, int64_t)           \
  X(uint8, uint8_t) X(uint16, uint16_t) X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t)
#define SHMEM_REDUCE_MINMAX_TYPES_(X)                                                                              \
  X(char, char) X(schar, signed char) X(short, short) X(int, int) X(long, long) X(longlong, long long)             \
  X(ptrdiff, ptrdiff_t) SHMEM_REDUCE_BITWISE_TYPES_(X) X(float, float) X(double, double) X(longdouble, long double)
#define SHMEM_REDUCE_ARITH_TYPES_(X)                                                                               \
  SHMEM_REDUCE_MINMAX_TYPES_(X) X(complexd, SHMEM_COMPLEXD_T_) X(complexf, SHMEM_COMPLEXF_T_)
/* Active-set reduction types (OpenSHMEM 1.4 <T>_<op>_to_all). */
#define SHMEM_TO_ALL_BITWISE_TYPES_(X) X(short, short) X(int, int) X(long, long) X(longlong, long long)
#define SHMEM_TO_ALL_MINMAX_TYPES_(X)                                                                              \
  SHMEM_TO_ALL_BITWISE_TYPES_(X) X(float, float) X(double, double) X(longdouble, long double)
#define SHMEM_TO_ALL_ARITH_TYPES_(X)                                                                               \
  SHMEM_TO_ALL_MINMAX_TYPES_(X) X(complexd, SHMEM_COMPLEXD_T_) X(complexf, SHMEM_COMPLEXF_T_)

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---- team collectives (OpenSHMEM 1.5) -------------------------------------------------------------------------- */

#define SHMEM_DECLARE_COLL_(NAME, T)                                                                               \
  int shmem_##NAME##_broadcast(shmem_team_t team, T* dest, const T* source, size_t nelems, int PE_root);          \
  int shmem_##NAME##_collect(shmem_team_t team, T* dest, const T* source, size_t nelems);                          \
  int shmem_##NAME##_fcollect(shmem_team_t team, T* dest, const T* source, size_t nelems);                         \
  int shmem_##NAME##_alltoall(shmem_team_t team, T* dest, const T* source, size_t nelems);                         \
  int shmem_##NAME##_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,          \
                               size_t nelems);
SHMEM_RMA_TYPES_(SHMEM_DECLARE_COLL_)
#undef SHMEM_DECLARE_COLL_

int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void* dest, const void* source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems);

#define SHMEM_DECLARE_REDUCE_(NAME, T, OP)                                                                         \
  int shmem_##NAME##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, size_t nreduce);
#define SHMEM_DECLARE_BITWISE_REDUCE_(NAME, T)                                                                     \
  SHMEM_DECLARE_REDUCE_(NAME, T, and) SHMEM_DECLARE_REDUCE_(NAME, T, or) SHMEM_DECLARE_REDUCE_(NAME, T, xor)
#define SHMEM_DECLARE_MINMAX_REDUCE_(NAME, T) SHMEM_DECLARE_REDUCE_(NAME, T, max) SHMEM_DECLARE_REDUCE_(NAME, T, min)
#define SHMEM_DECLARE_ARITH_REDUCE_(NAME, T) SHMEM_DECLARE_REDUCE_(NAME, T, sum) SHMEM_DECLARE_REDUCE_(NAME, T, prod)
SHMEM_REDUCE_BITWISE_TYPES_(SHMEM_DECLARE_BITWISE_REDUCE_)
SHMEM_REDUCE_MINMAX_TYPES_(SHMEM_DECLARE_MINMAX_REDUCE_)
SHMEM_REDUCE_ARITH_TYPES_(SHMEM_DECLARE_ARITH_REDUCE_)
#undef SHMEM_DECLARE_REDUCE_
#undef SHMEM_DECLARE_BITWISE_REDUCE_
#undef SHMEM_DECLARE_MINMAX_REDUCE_
#undef SHMEM_DECLARE_ARITH_REDUCE_

/* ---- active-set collectives (OpenSHMEM 1.4; deprecated) -------------------------------------------------------- */

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long* pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long* pSync);
void shmem_broadcast32(void* dest, const void* source, size_t nelems, int PE_root, int PE_start, int logPE_stride,
                       int PE_size, long* pSync);
void shmem_broadcast64(void* dest, const void* source, size_t nelems, int PE_root, int PE_start, int logPE_stride,
                       int PE_size, long* pSync);
void shmem_collect32(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,
                     long* pSync);
void shmem_collect64(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,
                     long* pSync);
void shmem_fcollect32(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,
                      long* pSync);
void shmem_fcollect64(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,
                      long* pSync);
void shmem_alltoall32(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,
                      long* pSync);
void shmem_alltoall64(void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,
                      long* pSync);
void shmem_alltoalls32(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start,
                       int logPE_stride, int PE_size, long* pSync);
void shmem_alltoalls64(void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start,
                       int logPE_stride, int PE_size, long* pSync);

#define SHMEM_DECLARE_TO_ALL_(NAME, T, OP)                                                                         \
  void shmem_##NAME##_##OP##_to_all(T* dest, const T* source, int nreduce, int PE_start, int logPE_stride,         \
                                    int PE_size, T* pWrk, long* pSync);
#define SHMEM_DECLARE_BITWISE_TO_ALL_(NAME, T)                                                                     \
  SHMEM_DECLARE_TO_ALL_(NAME, T, and) SHMEM_DECLARE_TO_ALL_(NAME, T, or) SHMEM_DECLARE_TO_ALL_(NAME, T, xor)
#define SHMEM_DECLARE_MINMAX_TO_ALL_(NAME, T) SHMEM_DECLARE_TO_ALL_(NAME, T, max) SHMEM_DECLARE_TO_ALL_(NAME, T, min)
#define SHMEM_DECLARE_ARITH_TO_ALL_(NAME, T) SHMEM_DECLARE_TO_ALL_(NAME, T, sum) SHMEM_DECLARE_TO_ALL_(NAME, T, prod)
SHMEM_TO_ALL_BITWISE_TYPES_(SHMEM_DECLARE_BITWISE_TO_ALL_)
SHMEM_TO_ALL_MINMAX_TYPES_(SHMEM_DECLARE_MINMAX_TO_ALL_)
SHMEM_TO_ALL_ARITH_TYPES_(SHMEM_DECLARE_ARITH_TO_ALL_)
#undef SHMEM_DECLARE_TO_ALL_
#undef SHMEM_DECLARE_BITWISE_TO_ALL_
#undef SHMEM_DECLARE_MINMAX_TO_ALL_
#undef SHMEM_DECLARE_ARITH_TO_ALL_

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- generic names --------------------------------------------------------------------------------------------- */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* Data movers: the distinct standard RMA types (SHMEM_RMA_G_ of shmem.h). */
#define shmem_broadcast(team, dest, source, nelems, PE_root)                                                       \
  SHMEM_RMA_G_(dest, shmem_, broadcast)(team, dest, source, nelems, PE_root)
#define shmem_collect(team, dest, source, nelems) SHMEM_RMA_G_(dest, shmem_, collect)(team, dest, source, nelems)
#define shmem_fcollect(team, dest, source, nelems) SHMEM_RMA_G_(dest, shmem_, fcollect)(team, dest, source, nelems)
#define shmem_alltoall(team, dest, source, nelems) SHMEM_RMA_G_(dest, shmem_, alltoall)(team, dest, source, nelems)
#define shmem_alltoalls(team, dest, source, dst, sst, nelems)                                                      \
  SHMEM_RMA_G_(dest, shmem_, alltoalls)(team, dest, source, dst, sst, nelems)

/* Reductions: the distinct C types of each operation's type list (int8_t..int64_t name the signed types that only
 * the bitwise operations list under their fixed-width names). */
#define SHMEM_REDUCE_G_BITWISE_(dest, OP)                                                                          \
  _Generic(*(dest), unsigned char: shmem_uchar_##OP##_reduce, unsigned short: shmem_ushort_##OP##_reduce,          \
           unsigned int: shmem_uint_##OP##_reduce, unsigned long: shmem_ulong_##OP##_reduce,                       \
           unsigned long long: shmem_ulonglong_##OP##_reduce, int8_t: shmem_int8_##OP##_reduce,                    \
           int16_t: shmem_int16_##OP##_reduce, int32_t: shmem_int32_##OP##_reduce,                                 \
           int64_t: shmem_int64_##OP##_reduce)
#define SHMEM_REDUCE_G_REAL_ASSOC_(OP)                                                                             \
  char: shmem_char_##OP##_reduce, signed char: shmem_schar_##OP##_reduce, short: shmem_short_##OP##_reduce,        \
  int: shmem_int_##OP##_reduce, long: shmem_long_##OP##_reduce, long long: shmem_longlong_##OP##_reduce,           \
  unsigned char: shmem_uchar_##OP##_reduce, unsigned short: shmem_ushort_##OP##_reduce,                            \
  unsigned int: shmem_uint_##OP##_reduce, unsigned long: shmem_ulong_##OP##_reduce,                                \
  unsigned long long: shmem_ulonglong_##OP##_reduce, float: shmem_float_##OP##_reduce,                             \
  double: shmem_double_##OP##_reduce, long double: shmem_longdouble_##OP##_reduce
#define SHMEM_REDUCE_G_MINMAX_(dest, OP) _Generic(*(dest), SHMEM_REDUCE_G_REAL_ASSOC_(OP))
#define SHMEM_REDUCE_G_ARITH_(dest, OP)                                                                            \
  _Generic(*(dest), SHMEM_REDUCE_G_REAL_ASSOC_(OP), float _Complex: shmem_complexf_##OP##_reduce,                  \
           double _Complex: shmem_complexd_##OP##_reduce)

#define shmem_and_reduce(team, dest, source, nreduce) SHMEM_REDUCE_G_BITWISE_(dest, and)(team, dest, source, nreduce)
#define shmem_or_reduce(team, dest, source, nreduce) SHMEM_REDUCE_G_BITWISE_(dest, or)(team, dest, source, nreduce)
#define shmem_xor_reduce(team, dest, source, nreduce) SHMEM_REDUCE_G_BITWISE_(dest, xor)(team, dest, source, nreduce)
#define shmem_max_reduce(team, dest, source, nreduce) SHMEM_REDUCE_G_MINMAX_(dest, max)(team, dest, source, nreduce)
#define shmem_min_reduce(team, dest, source, nreduce) SHMEM_REDUCE_G_MINMAX_(dest, min)(team, dest, source, nreduce)
#define shmem_sum_reduce(team, dest, source, nreduce) SHMEM_REDUCE_G_ARITH_(dest, sum)(team, dest, source, nreduce)
#define shmem_prod_reduce(team, dest, source, nreduce) SHMEM_REDUCE_G_ARITH_(dest, prod)(team, dest, source, nreduce)

/* shmem_sync: shmem_team_sync(team) with one argument (1.5), the active-set routine with four (1.4). */
#define SHMEM_SYNC_PICK_(_1, _2, _3, _4, NAME, ...) NAME
#define shmem_sync(...) SHMEM_SYNC_PICK_(__VA_ARGS__, shmem_sync, _, _, shmem_team_sync, _)(__VA_ARGS__)

#elif defined(__cplusplus)

#define SHMEM_COLL_CXX_(NAME, T)                                                                                   \
  inline int shmem_broadcast(shmem_team_t team, T* dest, const T* source, size_t nelems, int PE_root) {            \
    return shmem_##NAME##_broadcast(team, dest, source, nelems, PE_root);                                          \
  }                                                                                                                \
  inline int shmem_collect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                           \
    return shmem_##NAME##_collect(team, dest, source, nelems);                                                     \
  }                                                                                                                \
  inline int shmem_fcollect(shmem_team_t team, T* dest, const T* source, size_t nelems) {                          \
    return shmem_##NAME##_fcollect(team, dest, source, nelems);                                                    \
  }                                                                                                                \
  inline int shmem_alltoall(shmem_team_t team, T* dest, const T* source, size_t nelems) {                          \
    return shmem_##NAME##_alltoall(team, dest, source, nelems);                                                    \
  }                                                                                                                \
  inline int shmem_alltoalls(shmem_team_t team, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst,            \
                             size_t nelems) {                                                                      \
    return shmem_##NAME##_alltoalls(team, dest, source, dst, sst, nelems);                                         \
  }
/* The distinct C types of the standard RMA types. */
SHMEM_COLL_CXX_(float, float)
SHMEM_COLL_CXX_(double, double)
SHMEM_COLL_CXX_(longdouble, long double)
SHMEM_COLL_CXX_(char, char)
SHMEM_COLL_CXX_(schar, signed char)
SHMEM_COLL_CXX_(short, short)
SHMEM_COLL_CXX_(int, int)
SHMEM_COLL_CXX_(long, long)
SHMEM_COLL_CXX_(longlong, long long)
SHMEM_COLL_CXX_(uchar, unsigned char)
SHMEM_COLL_CXX_(ushort, unsigned short)
SHMEM_COLL_CXX_(uint, unsigned int)
SHMEM_COLL_CXX_(ulong, unsigned long)
SHMEM_COLL_CXX_(ulonglong, unsigned long long)
#undef SHMEM_COLL_CXX_

#define SHMEM_REDUCE_CXX_(NAME, T, OP)                                                                             \
  inline int shmem_##OP##_reduce(shmem_team_t team, T* dest, const T* source, size_t nreduce) {                    \
    return shmem_##NAME##_##OP##_reduce(team, dest, source, nreduce);                                              \
  }
#define SHMEM_REDUCE_CXX_BITWISE_(NAME, T)                                                                         \
  SHMEM_REDUCE_CXX_(NAME, T, and) SHMEM_REDUCE_CXX_(NAME, T, or) SHMEM_REDUCE_CXX_(NAME, T, xor)
#define SHMEM_REDUCE_CXX_REAL_(NAME, T)                                                                            \
  SHMEM_REDUCE_CXX_(NAME, T, max) SHMEM_REDUCE_CXX_(NAME, T, min) SHMEM_REDUCE_CXX_(NAME, T, sum)                  \
  SHMEM_REDUCE_CXX_(NAME, T, prod)
#define SHMEM_REDUCE_CXX_COMPLEX_(NAME, T) SHMEM_REDUCE_CXX_(NAME, T, sum) SHMEM_REDUCE_CXX_(NAME, T, prod)
/* The distinct C types of each operation's list (as for the C11 names). */
SHMEM_REDUCE_CXX_BITWISE_(uchar, unsigned char)
SHMEM_REDUCE_CXX_BITWISE_(ushort, unsigned short)
SHMEM_REDUCE_CXX_BITWISE_(uint, unsigned int)
SHMEM_REDUCE_CXX_BITWISE_(ulong, unsigned long)
SHMEM_REDUCE_CXX_BITWISE_(ulonglong, unsigned long long)
SHMEM_REDUCE_CXX_BITWISE_(int8, int8_t)
SHMEM_REDUCE_CXX_BITWISE_(int16, int16_t)
SHMEM_REDUCE_CXX_BITWISE_(int32, int32_t)
SHMEM_REDUCE_CXX_BITWISE_(int64, int64_t)
SHMEM_REDUCE_CXX_REAL_(char, char)
SHMEM_REDUCE_CXX_REAL_(schar, signed char)
SHMEM_REDUCE_CXX_REAL_(short, short)
SHMEM_REDUCE_CXX_REAL_(int, int)
SHMEM_REDUCE_CXX_REAL_(long, long)
SHMEM_REDUCE_CXX_REAL_(longlong, long long)
SHMEM_REDUCE_CXX_REAL_(uchar, unsigned char)
SHMEM_REDUCE_CXX_REAL_(ushort, unsigned short)
SHMEM_REDUCE_CXX_REAL_(uint, unsigned int)
SHMEM_REDUCE_CXX_REAL_(ulong, unsigned long)
SHMEM_REDUCE_CXX_REAL_(ulonglong, unsigned long long)
SHMEM_REDUCE_CXX_REAL_(float, float)
SHMEM_REDUCE_CXX_REAL_(double, double)
SHMEM_REDUCE_CXX_REAL_(longdouble, long double)
SHMEM_REDUCE_CXX_COMPLEX_(complexf, std::complex<float>)
SHMEM_REDUCE_CXX_COMPLEX_(complexd, std::complex<double>)
inline int shmem_sync(shmem_team_t team) { return shmem_team_sync(team); }

#undef SHMEM_REDUCE_CXX_
#undef SHMEM_REDUCE_CXX_BITWISE_
#undef SHMEM_REDUCE_CXX_REAL_
#undef SHMEM_REDUCE_CXX_COMPLEX_

#endif

#endif /* SHMEM_COLL_H */
