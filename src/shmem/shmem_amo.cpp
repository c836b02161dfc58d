// OpenSHMEM 1.5 atomic memory operations over tether_atomic (see include/shmem_amo.h).
//
// Every routine is one tether_atomic call on the default instance, to the world PE of its context's team PE
// (shmemCtxTarget); each routine and its context form share one definition (SHMEM_DEFINE_CTX_PAIR_). A failing call
// ends the program through shmemAbort naming the OpenSHMEM routine (tether_last_error() has the offending values).
// The non-blocking fetching forms are performed before they return (allowed: their result is only promised after
// shmem_quiet).
#include <stddef.h>
#include <stdint.h>

#include "shmem_amo.h"
#include "shmem_internal.h"
#include "tether/tether.h"

using tether_shmem::shmemAbort;
using tether_shmem::shmemCtxTarget;
using tether_shmem::ShmemTarget;

namespace {

// tether element type of each OpenSHMEM type name (by name: int32 is TETHER_INT32, which allows bitwise
// operations, although int32_t is int).
constexpr tether_dtype_t kDt_int = TETHER_INT, kDt_long = TETHER_LONG, kDt_longlong = TETHER_LONGLONG,
                         kDt_uint = TETHER_UINT, kDt_ulong = TETHER_ULONG, kDt_ulonglong = TETHER_ULONGLONG,
                         kDt_int32 = TETHER_INT32, kDt_int64 = TETHER_INT64, kDt_uint32 = TETHER_UINT32,
                         kDt_uint64 = TETHER_UINT64, kDt_size = TETHER_SIZE, kDt_ptrdiff = TETHER_PTRDIFF,
                         kDt_float = TETHER_FLOAT, kDt_double = TETHER_DOUBLE;

// One AMO of `call` on context ctx (pe numbered in its team); fetched (may be null) receives the old value.
template <class T>
inline void amo(shmem_ctx_t ctx, tether_dtype_t dt, tether_amo_t op, const T* dest, const T* value, const T* cond,
                T* fetched, int pe, const char* call) {
  const ShmemTarget t = shmemCtxTarget(ctx, pe, call);
  if (tether_atomic(t.world, op, dt, const_cast<T*>(dest), value, cond, fetched, t.pe) != TETHER_SUCCESS)
    shmemAbort(call);
}

// The same, returning the old value.
template <class T>
inline T amoFetch(shmem_ctx_t ctx, tether_dtype_t dt, tether_amo_t op, const T* dest, const T* value, const T* cond,
                  int pe, const char* call) {
  T out{};
  amo<T>(ctx, dt, op, dest, value, cond, &out, pe, call);
  return out;
}

}  // namespace

// Routine pairs (shmem_<NAME>_atomic_<op> and shmem_ctx_<NAME>_atomic_<op>). AMO_ / AMO_FETCH_ take the tether op,
// the (params) and the value / cond pointers (nullptr when the op has none); AMO_NBI_ stores the old value to fetch.
#define AMO_(NAME, T, OP, TOP, PARAMS, VALUE, COND)                                                                \
  SHMEM_DEFINE_CTX_PAIR_(void, NAME##_##OP, PARAMS, amo<T>, (kDt_##NAME, TOP, dest, VALUE, COND, nullptr, pe))
#define AMO_FETCH_(NAME, T, OP, TOP, PARAMS, SOURCE, VALUE, COND)                                                  \
  SHMEM_DEFINE_CTX_PAIR_(T, NAME##_##OP, PARAMS, amoFetch<T>, (kDt_##NAME, TOP, SOURCE, VALUE, COND, pe))
#define AMO_NBI_(NAME, T, OP, TOP, PARAMS, SOURCE, VALUE, COND)                                                    \
  SHMEM_DEFINE_CTX_PAIR_(void, NAME##_##OP, PARAMS, amo<T>, (kDt_##NAME, TOP, SOURCE, VALUE, COND, fetch, pe))

#define DEFINE_EXTENDED_AMO(NAME, T)                                                                               \
  AMO_FETCH_(NAME, T, atomic_fetch, TETHER_AMO_FETCH, (const T* source, int pe), source, nullptr, nullptr)         \
  AMO_(NAME, T, atomic_set, TETHER_AMO_SET, (T * dest, T value, int pe), &value, nullptr)                          \
  AMO_FETCH_(NAME, T, atomic_swap, TETHER_AMO_SWAP, (T * dest, T value, int pe), dest, &value, nullptr)            \
  AMO_NBI_(NAME, T, atomic_fetch_nbi, TETHER_AMO_FETCH, (T * fetch, const T* source, int pe), source, nullptr,     \
           nullptr)                                                                                                \
  AMO_NBI_(NAME, T, atomic_swap_nbi, TETHER_AMO_SWAP, (T * fetch, T* dest, T value, int pe), dest, &value, nullptr)

#define DEFINE_STANDARD_AMO(NAME, T)                                                                               \
  AMO_FETCH_(NAME, T, atomic_compare_swap, TETHER_AMO_COMPARE_SWAP, (T * dest, T cond, T value, int pe), dest,     \
             &value, &cond)                                                                                        \
  AMO_FETCH_(NAME, T, atomic_fetch_inc, TETHER_AMO_FETCH_INC, (T * dest, int pe), dest, nullptr, nullptr)          \
  AMO_(NAME, T, atomic_inc, TETHER_AMO_INC, (T * dest, int pe), nullptr, nullptr)                                  \
  AMO_FETCH_(NAME, T, atomic_fetch_add, TETHER_AMO_FETCH_ADD, (T * dest, T value, int pe), dest, &value, nullptr)  \
  AMO_(NAME, T, atomic_add, TETHER_AMO_ADD, (T * dest, T value, int pe), &value, nullptr)                          \
  AMO_NBI_(NAME, T, atomic_compare_swap_nbi, TETHER_AMO_COMPARE_SWAP,                                              \
           (T * fetch, T* dest, T cond, T value, int pe), dest, &value, &cond)                                     \
  AMO_NBI_(NAME, T, atomic_fetch_inc_nbi, TETHER_AMO_FETCH_INC, (T * fetch, T* dest, int pe), dest, nullptr,       \
           nullptr)                                                                                                \
  AMO_NBI_(NAME, T, atomic_fetch_add_nbi, TETHER_AMO_FETCH_ADD, (T * fetch, T* dest, T value, int pe), dest,       \
           &value, nullptr)

#define DEFINE_BITWISE_OP(NAME, T, OP, TOP)                                                                        \
  AMO_FETCH_(NAME, T, atomic_fetch_##OP, TETHER_AMO_FETCH_##TOP, (T * dest, T value, int pe), dest, &value,        \
             nullptr)                                                                                              \
  AMO_(NAME, T, atomic_##OP, TETHER_AMO_##TOP, (T * dest, T value, int pe), &value, nullptr)                       \
  AMO_NBI_(NAME, T, atomic_fetch_##OP##_nbi, TETHER_AMO_FETCH_##TOP, (T * fetch, T* dest, T value, int pe), dest,  \
           &value, nullptr)
#define DEFINE_BITWISE_AMO(NAME, T)                                                                                \
  DEFINE_BITWISE_OP(NAME, T, and, AND) DEFINE_BITWISE_OP(NAME, T, or, OR) DEFINE_BITWISE_OP(NAME, T, xor, XOR)

// Deprecated names: no context form, so they call the shared implementation on SHMEM_CTX_DEFAULT directly.
#define SHMEM_NAME_(NAME, OP) "shmem_" #NAME "_" #OP
#define DEFINE_DEPRECATED_AMO(NAME, T)                                                                             \
  T shmem_##NAME##_fadd(T* dest, T value, int pe) {                                                                \
    return amoFetch<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_FETCH_ADD, dest, &value, nullptr, pe,             \
                       SHMEM_NAME_(NAME, fadd));                                                                   \
  }                                                                                                                \
  T shmem_##NAME##_finc(T* dest, int pe) {                                                                         \
    return amoFetch<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_FETCH_INC, dest, nullptr, nullptr, pe,            \
                       SHMEM_NAME_(NAME, finc));                                                                   \
  }                                                                                                                \
  void shmem_##NAME##_add(T* dest, T value, int pe) {                                                              \
    amo<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_ADD, dest, &value, nullptr, nullptr, pe,                      \
           SHMEM_NAME_(NAME, add));                                                                                \
  }                                                                                                                \
  void shmem_##NAME##_inc(T* dest, int pe) {                                                                       \
    amo<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_INC, dest, nullptr, nullptr, nullptr, pe,                     \
           SHMEM_NAME_(NAME, inc));                                                                                \
  }                                                                                                                \
  T shmem_##NAME##_cswap(T* dest, T cond, T value, int pe) {                                                       \
    return amoFetch<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_COMPARE_SWAP, dest, &value, &cond, pe,            \
                       SHMEM_NAME_(NAME, cswap));                                                                  \
  }

#define DEFINE_DEPRECATED_EXT_AMO(NAME, T)                                                                         \
  T shmem_##NAME##_swap(T* dest, T value, int pe) {                                                                \
    return amoFetch<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_SWAP, dest, &value, nullptr, pe,                  \
                       SHMEM_NAME_(NAME, swap));                                                                   \
  }                                                                                                                \
  T shmem_##NAME##_fetch(const T* source, int pe) {                                                                \
    return amoFetch<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_FETCH, source, nullptr, nullptr, pe,              \
                       SHMEM_NAME_(NAME, fetch));                                                                  \
  }                                                                                                                \
  void shmem_##NAME##_set(T* dest, T value, int pe) {                                                              \
    amo<T>(SHMEM_CTX_DEFAULT, kDt_##NAME, TETHER_AMO_SET, dest, &value, nullptr, nullptr, pe,                      \
           SHMEM_NAME_(NAME, set));                                                                                \
  }

SHMEM_AMO_EXTENDED_TYPES_(DEFINE_EXTENDED_AMO)
SHMEM_AMO_STANDARD_TYPES_(DEFINE_STANDARD_AMO)
SHMEM_AMO_BITWISE_TYPES_(DEFINE_BITWISE_AMO)
SHMEM_AMO_DEPRECATED_TYPES_(DEFINE_DEPRECATED_AMO)
SHMEM_AMO_DEPRECATED_EXT_TYPES_(DEFINE_DEPRECATED_EXT_AMO)

long shmem_swap(long* dest, long value, int pe) {
  return amoFetch<long>(SHMEM_CTX_DEFAULT, kDt_long, TETHER_AMO_SWAP, dest, &value, nullptr, pe, "shmem_swap");
}
