/* OpenSHMEM 1.5 C API on tether (host path). Usable from C (C99; C11 for the generic names) and C++.
 *
 * One default tether instance backs the whole API (created by shmem_init / shmem_init_thread, released by
 * shmem_finalize). Errors follow the OpenSHMEM model: a routine that cannot do what it was asked (bad PE, address
 * outside the symmetric heap, call before shmem_init, ...) prints "shmem: PE <n>: <routine> failed: <reason>" and
 * aborts the program; the launcher (tetherrun / oshrun) then stops the other PEs. Exceptions, as the specification
 * says: the allocation routines return NULL when the heap is exhausted.
 *
 * What this header covers so far (see src/shmem/README.md for what is missing):
 *  - setup and query, symmetric heap allocation (always the HOST segment),
 *  - RMA for every standard RMA type (shmem_<T>_put/get/p/g/iput/iget/put_nbi/get_nbi), the sized forms
 *    (shmem_put<N>, N = 8, 16, 32, 64, 128 bits, and get/iput/iget/_nbi), shmem_putmem/getmem(_nbi),
 *  - put-with-signal (typed, sized, mem; blocking and _nbi), shmem_signal_fetch, shmem_signal_wait_until,
 *  - shmem_quiet, shmem_fence, shmem_barrier_all, shmem_sync_all,
 *  - atomics (shmem_amo.h) and point-to-point synchronisation and locks (shmem_sync.h),
 *  - teams (shmem_team.h) and collectives, with the OpenSHMEM 1.4 active-set forms (shmem_coll.h),
 *  - communication contexts (shmem_ctx.h): the shmem_ctx_* form of every RMA, signal and AMO routine,
 *    shmem_ctx_quiet / shmem_ctx_fence, and the generic names with an optional leading context,
 *  - the deprecated cache management routines (no-ops).
 * Symmetric objects: the symmetric heap and the program's global and static variables (made symmetric by shmem_init;
 * variables of shared libraries are not).
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------------------------------------------- */
/* Version and library constants                                                                                    */

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "tether OpenSHMEM 1.5"
/* deprecated spellings (OpenSHMEM 1.2) */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Thread levels: every level is supported (tether calls are thread-safe). */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Comparison operators (values match tether_cmp_t; shmem_sync.h defines the same). */
#ifndef SHMEM_CMP_EQ
#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#endif

/* Signal operators (values match tether_signal_op_t). */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* shmem_malloc_with_hints hints: accepted and ignored (every allocation already serves atomics and signals). */
#define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#define SHMEM_MALLOC_SIGNAL_REMOTE 2L

/* Standard RMA types: X(NAME, C type). Reserved for the implementation (SHMEM_ prefix, trailing underscore). */
#define SHMEM_RMA_TYPES_(X)                                                                                        \
  X(float, float) X(double, double) X(longdouble, long double) X(char, char) X(schar, signed char)               \
  X(short, short) X(int, int) X(long, long) X(longlong, long long) X(uchar, unsigned char)                        \
  X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long) X(ulonglong, unsigned long long)        \
  X(int8, int8_t) X(int16, int16_t) X(int32, int32_t) X(int64, int64_t) X(uint8, uint8_t) X(uint16, uint16_t)    \
  X(uint32, uint32_t) X(uint64, uint64_t) X(size, size_t) X(ptrdiff, ptrdiff_t)
/* Sized RMA forms: X(bits) */
#define SHMEM_RMA_SIZES_(X) X(8) X(16) X(32) X(64) X(128)

/* Teams and communication contexts: opaque handles. SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and SHMEM_CTX_DEFAULT name
 * objects of the library (valid between shmem_init and shmem_finalize); the _INVALID handles are null. The context
 * handle, its constants and the context management routines are in shmem_ctx.h. */
typedef struct tether_shmem_team_s* shmem_team_t;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_TEAM_WORLD (&tether_shmem_team_world_)
#define SHMEM_TEAM_SHARED (&tether_shmem_team_shared_)
#include "shmem_ctx.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The objects behind SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED (use the macros). */
extern struct tether_shmem_team_s tether_shmem_team_world_;
extern struct tether_shmem_team_s tether_shmem_team_shared_;

/* ---------------------------------------------------------------------------------------------------------------- */
/* Library setup and query                                                                                          */

/* Collective. Calling it again while initialised does nothing. */
void shmem_init(void);
/* Collective. Every level is provided as requested (a value outside SINGLE..MULTIPLE gives MULTIPLE). Returns 0. */
int shmem_init_thread(int requested, int* provided);
void shmem_query_thread(int* provided);
/* Collective: completes outstanding operations, synchronises, releases the heap. Further calls do nothing. */
void shmem_finalize(void);
int shmem_my_pe(void);
int shmem_n_pes(void);
/* Flushes stdio and exits this process with `status`. The launcher stops the other PEs when status is non-zero; with
 * status 0 the others run on (they end when they finish, or when a wait on this PE times out). */
void shmem_global_exit(int status);
/* 1 when pe is a PE of the job (every PE is reachable: all PEs of a job share one host today), else 0. */
int shmem_pe_accessible(int pe);
/* 1 when addr is a symmetric-heap address and pe is accessible. Static and global data: 0 (not symmetric yet). */
int shmem_addr_accessible(const void* addr, int pe);
/* Load/store address of pe's copy of the symmetric object at dest, or NULL when not directly addressable. */
void* shmem_ptr(const void* dest, int pe);
void shmem_info_get_version(int* major, int* minor);
/* Copies SHMEM_VENDOR_STRING (NUL-terminated, at most SHMEM_MAX_NAME_LEN bytes) to name. */
void shmem_info_get_name(char* name);

/* deprecated (OpenSHMEM 1.2) */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Symmetric heap (collective; every PE calls with the same arguments, in the same order). NULL when the heap is
 * exhausted; size 0 gives NULL. */

void* shmem_malloc(size_t size);
void* shmem_malloc_with_hints(size_t size, long hints);
void* shmem_calloc(size_t count, size_t size);
void* shmem_align(size_t alignment, size_t size);
void* shmem_realloc(void* ptr, size_t size);
void shmem_free(void* ptr);

/* deprecated (OpenSHMEM 1.2) */
void* shmalloc(size_t size);
void* shmemalign(size_t alignment, size_t size);
void* shrealloc(void* ptr, size_t size);
void shfree(void* ptr);

/* ---------------------------------------------------------------------------------------------------------------- */
/* RMA. Blocking put/p/iput return with the transfer complete at the target; get/g/iget with the data in dest.
 * _nbi forms may return before completion: shmem_quiet (or barrier_all) completes them. Strides of iput/iget are in
 * elements and may be any value (0 and negative included).
 * Every routine also has its context form shmem_ctx_<name>(shmem_ctx_t ctx, <same arguments>) (shmem_ctx.h): `pe`
 * is then a PE number in the context's team; the forms without a context run on SHMEM_CTX_DEFAULT. */

#define SHMEM_DECLARE_RMA_(NAME, T)                                                                                \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_put, T* dest, const T* source, size_t nelems, int pe)                       \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_get, T* dest, const T* source, size_t nelems, int pe)                       \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_put_nbi, T* dest, const T* source, size_t nelems, int pe)                   \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_get_nbi, T* dest, const T* source, size_t nelems, int pe)                   \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_p, T* dest, T value, int pe)                                                \
  SHMEM_DECLARE_CTX_PAIR_(T, NAME##_g, const T* source, int pe)                                                    \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_iput, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                          int pe)                                                                                  \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_iget, T* dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                          int pe)                                                                                  \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_put_signal, T* dest, const T* source, size_t nelems, uint64_t* sig_addr,    \
                          uint64_t signal, int sig_op, int pe)                                                     \
  SHMEM_DECLARE_CTX_PAIR_(void, NAME##_put_signal_nbi, T* dest, const T* source, size_t nelems,                    \
                          uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)
SHMEM_RMA_TYPES_(SHMEM_DECLARE_RMA_)
#undef SHMEM_DECLARE_RMA_

#define SHMEM_DECLARE_SIZED_RMA_(BITS)                                                                             \
  SHMEM_DECLARE_CTX_PAIR_(void, put##BITS, void* dest, const void* source, size_t nelems, int pe)                  \
  SHMEM_DECLARE_CTX_PAIR_(void, get##BITS, void* dest, const void* source, size_t nelems, int pe)                  \
  SHMEM_DECLARE_CTX_PAIR_(void, put##BITS##_nbi, void* dest, const void* source, size_t nelems, int pe)            \
  SHMEM_DECLARE_CTX_PAIR_(void, get##BITS##_nbi, void* dest, const void* source, size_t nelems, int pe)            \
  SHMEM_DECLARE_CTX_PAIR_(void, iput##BITS, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,          \
                          size_t nelems, int pe)                                                                   \
  SHMEM_DECLARE_CTX_PAIR_(void, iget##BITS, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst,          \
                          size_t nelems, int pe)                                                                   \
  SHMEM_DECLARE_CTX_PAIR_(void, put##BITS##_signal, void* dest, const void* source, size_t nelems,                 \
                          uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)                                 \
  SHMEM_DECLARE_CTX_PAIR_(void, put##BITS##_signal_nbi, void* dest, const void* source, size_t nelems,             \
                          uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)
SHMEM_RMA_SIZES_(SHMEM_DECLARE_SIZED_RMA_)
#undef SHMEM_DECLARE_SIZED_RMA_

SHMEM_DECLARE_CTX_PAIR_(void, putmem, void* dest, const void* source, size_t nelems, int pe)
SHMEM_DECLARE_CTX_PAIR_(void, getmem, void* dest, const void* source, size_t nelems, int pe)
SHMEM_DECLARE_CTX_PAIR_(void, putmem_nbi, void* dest, const void* source, size_t nelems, int pe)
SHMEM_DECLARE_CTX_PAIR_(void, getmem_nbi, void* dest, const void* source, size_t nelems, int pe)
SHMEM_DECLARE_CTX_PAIR_(void, putmem_signal, void* dest, const void* source, size_t nelems, uint64_t* sig_addr,
                        uint64_t signal, int sig_op, int pe)
SHMEM_DECLARE_CTX_PAIR_(void, putmem_signal_nbi, void* dest, const void* source, size_t nelems, uint64_t* sig_addr,
                        uint64_t signal, int sig_op, int pe)

/* Signals: sig_addr is a symmetric uint64_t of this PE. */
uint64_t shmem_signal_fetch(const uint64_t* sig_addr);
/* Waits until (*sig_addr cmp cmp_value) holds (bounded by TETHER_TIMEOUT) and returns the satisfying value. */
uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Ordering and collective synchronisation over all PEs                                                             */

/* shmem_quiet / shmem_ctx_quiet complete, shmem_fence / shmem_ctx_fence order, every outstanding operation of this
 * PE: tether's quiet and fence act on the whole instance, which all contexts share (so the context's own operations
 * are covered, and those of other contexts and threads too). */
void shmem_quiet(void);
void shmem_fence(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_barrier_all(void);
void shmem_sync_all(void);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Cache management (deprecated in OpenSHMEM 1.3): no-ops, tether keeps no cache that would need them.              */

void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void* dest);
void shmem_set_cache_line_inv(void* dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void* dest);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---------------------------------------------------------------------------------------------------------------- */
/* Generic names: dispatch on the pointed-to type of dest (source for shmem_g). Only the distinct C types appear; the
 * fixed-width and size typedefs select the routine of their underlying type, which has the same representation.
 * Every generic name takes an optional leading context: shmem_put(dest, source, nelems, pe) calls
 * shmem_<T>_put, shmem_put(ctx, dest, source, nelems, pe) calls shmem_ctx_<T>_put (C: the first argument's type is
 * tested against shmem_ctx_t, see SHMEM_CTX_G_ in shmem_ctx.h; C++: overloads). */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* PREFIX##<type>_##OP for the pointed-to type of ptr (PREFIX: shmem_ or shmem_ctx_). */
#define SHMEM_RMA_G_(ptr, PREFIX, OP)                                                                              \
  _Generic(*(ptr), float: PREFIX##float_##OP, double: PREFIX##double_##OP, long double: PREFIX##longdouble_##OP,   \
           char: PREFIX##char_##OP, signed char: PREFIX##schar_##OP, short: PREFIX##short_##OP,                    \
           int: PREFIX##int_##OP, long: PREFIX##long_##OP, long long: PREFIX##longlong_##OP,                       \
           unsigned char: PREFIX##uchar_##OP, unsigned short: PREFIX##ushort_##OP,                                 \
           unsigned int: PREFIX##uint_##OP, unsigned long: PREFIX##ulong_##OP,                                     \
           unsigned long long: PREFIX##ulonglong_##OP)
#define SHMEM_RMA_CTX_G_(OP, ...) SHMEM_CTX_G_(SHMEM_GPICK1_, SHMEM_RMA_G_, OP, __VA_ARGS__)(__VA_ARGS__)

/* [ctx,] dest, source, nelems, pe */
#define shmem_put(...) SHMEM_RMA_CTX_G_(put, __VA_ARGS__)
#define shmem_get(...) SHMEM_RMA_CTX_G_(get, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEM_RMA_CTX_G_(put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEM_RMA_CTX_G_(get_nbi, __VA_ARGS__)
/* [ctx,] dest, value, pe */
#define shmem_p(...) SHMEM_RMA_CTX_G_(p, __VA_ARGS__)
/* [ctx,] source, pe */
#define shmem_g(...) SHMEM_RMA_CTX_G_(g, __VA_ARGS__)
/* [ctx,] dest, source, dst, sst, nelems, pe */
#define shmem_iput(...) SHMEM_RMA_CTX_G_(iput, __VA_ARGS__)
#define shmem_iget(...) SHMEM_RMA_CTX_G_(iget, __VA_ARGS__)
/* [ctx,] dest, source, nelems, sig_addr, signal, sig_op, pe */
#define shmem_put_signal(...) SHMEM_RMA_CTX_G_(put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) SHMEM_RMA_CTX_G_(put_signal_nbi, __VA_ARGS__)

#elif defined(__cplusplus)

/* One overload per distinct C type and its context form (leading shmem_ctx_t), forwarding to the typed routine. */
#define SHMEM_RMA_CXX_(NAME, T)                                                                                    \
  SHMEM_CXX_CTX_PAIR_(void, put, NAME##_put, (T * dest, const T* source, size_t nelems, int pe),                   \
                    (dest, source, nelems, pe))                                                                    \
  SHMEM_CXX_CTX_PAIR_(void, get, NAME##_get, (T * dest, const T* source, size_t nelems, int pe),                   \
                    (dest, source, nelems, pe))                                                                    \
  SHMEM_CXX_CTX_PAIR_(void, put_nbi, NAME##_put_nbi, (T * dest, const T* source, size_t nelems, int pe),           \
                    (dest, source, nelems, pe))                                                                    \
  SHMEM_CXX_CTX_PAIR_(void, get_nbi, NAME##_get_nbi, (T * dest, const T* source, size_t nelems, int pe),           \
                    (dest, source, nelems, pe))                                                                    \
  SHMEM_CXX_CTX_PAIR_(void, p, NAME##_p, (T * dest, T value, int pe), (dest, value, pe))                           \
  SHMEM_CXX_CTX_PAIR_(T, g, NAME##_g, (const T* source, int pe), (source, pe))                                     \
  SHMEM_CXX_CTX_PAIR_(void, iput, NAME##_iput,                                                                     \
                    (T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe),              \
                    (dest, source, dst, sst, nelems, pe))                                                          \
  SHMEM_CXX_CTX_PAIR_(void, iget, NAME##_iget,                                                                     \
                    (T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe),              \
                    (dest, source, dst, sst, nelems, pe))                                                          \
  SHMEM_CXX_CTX_PAIR_(void, put_signal, NAME##_put_signal,                                                         \
                    (T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op,    \
                     int pe),                                                                                      \
                    (dest, source, nelems, sig_addr, signal, sig_op, pe))                                          \
  SHMEM_CXX_CTX_PAIR_(void, put_signal_nbi, NAME##_put_signal_nbi,                                                 \
                    (T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op,    \
                     int pe),                                                                                      \
                    (dest, source, nelems, sig_addr, signal, sig_op, pe))
SHMEM_RMA_CXX_(float, float)
SHMEM_RMA_CXX_(double, double)
SHMEM_RMA_CXX_(longdouble, long double)
SHMEM_RMA_CXX_(char, char)
SHMEM_RMA_CXX_(schar, signed char)
SHMEM_RMA_CXX_(short, short)
SHMEM_RMA_CXX_(int, int)
SHMEM_RMA_CXX_(long, long)
SHMEM_RMA_CXX_(longlong, long long)
SHMEM_RMA_CXX_(uchar, unsigned char)
SHMEM_RMA_CXX_(ushort, unsigned short)
SHMEM_RMA_CXX_(uint, unsigned int)
SHMEM_RMA_CXX_(ulong, unsigned long)
SHMEM_RMA_CXX_(ulonglong, unsigned long long)
#undef SHMEM_RMA_CXX_
#undef SHMEM_RMA_CXX_OP_

#endif

/* Atomics, point-to-point synchronisation, locks; teams and collectives. */
#include "shmem_amo.h"
#include "shmem_sync.h"
#include "shmem_team.h"

#endif /* SHMEM_H */
