// OpenSHMEM 1.5 atomic memory operations over tether_atomic (see include/shmem_amo.h).
//
// Every routine is one tether_atomic call on the default instance; a failing call ends the program through
// shmemAbort naming the OpenSHMEM routine (tether_last_error() has the offending values). The non-blocking fetching
// forms are performed before they return (allowed: their result is only promised after shmem_quiet).
#include <stddef.h>
#include <stdint.h>

#include "shmem_amo.h"
#include "shmem_internal.h"
#include "tether/tether.h"

using tether_shmem::shmemAbort;
using tether_shmem::shmemWorld;

namespace {

// tether element type of each OpenSHMEM type name (by name: int32 is TETHER_INT32, which allows bitwise
// operations, although int32_t is int).
constexpr tether_dtype_t kDt_int = TETHER_INT, kDt_long = TETHER_LONG, kDt_longlong = TETHER_LONGLONG,
                         kDt_uint = TETHER_UINT, kDt_ulong = TETHER_ULONG, kDt_ulonglong = TETHER_ULONGLONG,
                         kDt_int32 = TETHER_INT32, kDt_int64 = TETHER_INT64, kDt_uint32 = TETHER_UINT32,
                         kDt_uint64 = TETHER_UINT64, kDt_size = TETHER_SIZE, kDt_ptrdiff = TETHER_PTRDIFF,
                         kDt_float = TETHER_FLOAT, kDt_double = TETHER_DOUBLE;

template <class T>
inline void amo(const char* call, tether_dtype_t dt, tether_amo_t op, const T* dest, const T* value, const T* cond,
                T* fetched, int pe) {
  if (tether_atomic(shmemWorld(call), op, dt, const_cast<T*>(dest), value, cond, fetched, pe) !=
      TETHER_SUCCESS)
    shmemAbort(call);
}

template <class T>
inline T amoFetch(const char* call, tether_dtype_t dt, tether_amo_t op, const T* dest, const T* value, const T* cond,
                  int pe) {
  T out{};
  amo<T>(call, dt, op, dest, value, cond, &out, pe);
  return out;
}

}  // namespace

#define SHMEM_NAME_(NAME, OP) "shmem_" #NAME "_" #OP

#define DEFINE_EXTENDED_AMO(NAME, T)                                                                               \
  T shmem_##NAME##_atomic_fetch(const T* source, int pe) {                                                         \
    return amoFetch<T>(SHMEM_NAME_(NAME, atomic_fetch), kDt_##NAME, TETHER_AMO_FETCH, source, nullptr, nullptr, pe);           \
  }                                                                                                                \
  void shmem_##NAME##_atomic_set(T* dest, T value, int pe) {                                                       \
    amo<T>(SHMEM_NAME_(NAME, atomic_set), kDt_##NAME, TETHER_AMO_SET, dest, &value, nullptr, nullptr, pe);                     \
  }                                                                                                                \
  T shmem_##NAME##_atomic_swap(T* dest, T value, int pe) {                                                         \
    return amoFetch<T>(SHMEM_NAME_(NAME, atomic_swap), kDt_##NAME, TETHER_AMO_SWAP, dest, &value, nullptr, pe);                \
  }                                                                                                                \
  void shmem_##NAME##_atomic_fetch_nbi(T* fetch, const T* source, int pe) {                                        \
    amo<T>(SHMEM_NAME_(NAME, atomic_fetch_nbi), kDt_##NAME, TETHER_AMO_FETCH, source, nullptr, nullptr, fetch, pe);            \
  }                                                                                                                \
  void shmem_##NAME##_atomic_swap_nbi(T* fetch, T* dest, T value, int pe) {                                        \
    amo<T>(SHMEM_NAME_(NAME, atomic_swap_nbi), kDt_##NAME, TETHER_AMO_SWAP, dest, &value, nullptr, fetch, pe);                 \
  }

#define DEFINE_STANDARD_AMO(NAME, T)                                                                               \
  T shmem_##NAME##_atomic_compare_swap(T* dest, T cond, T value, int pe) {                                         \
    return amoFetch<T>(SHMEM_NAME_(NAME, atomic_compare_swap), kDt_##NAME, TETHER_AMO_COMPARE_SWAP, dest, &value, &cond, pe);  \
  }                                                                                                                \
  T shmem_##NAME##_atomic_fetch_inc(T* dest, int pe) {                                                             \
    return amoFetch<T>(SHMEM_NAME_(NAME, atomic_fetch_inc), kDt_##NAME, TETHER_AMO_FETCH_INC, dest, nullptr, nullptr, pe);     \
  }                                                                                                                \
  void shmem_##NAME##_atomic_inc(T* dest, int pe) {                                                                \
    amo<T>(SHMEM_NAME_(NAME, atomic_inc), kDt_##NAME, TETHER_AMO_INC, dest, nullptr, nullptr, nullptr, pe);                    \
  }                                                                                                                \
  T shmem_##NAME##_atomic_fetch_add(T* dest, T value, int pe) {                                                    \
    return amoFetch<T>(SHMEM_NAME_(NAME, atomic_fetch_add), kDt_##NAME, TETHER_AMO_FETCH_ADD, dest, &value, nullptr, pe);      \
  }                                                                                                                \
  void shmem_##NAME##_atomic_add(T* dest, T value, int pe) {                                                       \
    amo<T>(SHMEM_NAME_(NAME, atomic_add), kDt_##NAME, TETHER_AMO_ADD, dest, &value, nullptr, nullptr, pe);                     \
  }                                                                                                                \
  void shmem_##NAME##_atomic_compare_swap_nbi(T* fetch, T* dest, T cond, T value, int pe) {                        \
    amo<T>(SHMEM_NAME_(NAME, atomic_compare_swap_nbi), kDt_##NAME, TETHER_AMO_COMPARE_SWAP, dest, &value, &cond, fetch, pe);   \
  }                                                                                                                \
  void shmem_##NAME##_atomic_fetch_inc_nbi(T* fetch, T* dest, int pe) {                                            \
    amo<T>(SHMEM_NAME_(NAME, atomic_fetch_inc_nbi), kDt_##NAME, TETHER_AMO_FETCH_INC, dest, nullptr, nullptr, fetch, pe);      \
  }                                                                                                                \
  void shmem_##NAME##_atomic_fetch_add_nbi(T* fetch, T* dest, T value, int pe) {                                   \
    amo<T>(SHMEM_NAME_(NAME, atomic_fetch_add_nbi), kDt_##NAME, TETHER_AMO_FETCH_ADD, dest, &value, nullptr, fetch, pe);       \
  }

#define DEFINE_BITWISE_OP(NAME, T, OP, AMO)                                                                        \
  T shmem_##NAME##_atomic_fetch_##OP(T* dest, T value, int pe) {                                                   \
    return amoFetch<T>(SHMEM_NAME_(NAME, atomic_fetch_##OP), kDt_##NAME, TETHER_AMO_FETCH_##AMO, dest, &value, nullptr, pe);   \
  }                                                                                                                \
  void shmem_##NAME##_atomic_##OP(T* dest, T value, int pe) {                                                      \
    amo<T>(SHMEM_NAME_(NAME, atomic_##OP), kDt_##NAME, TETHER_AMO_##AMO, dest, &value, nullptr, nullptr, pe);                  \
  }                                                                                                                \
  void shmem_##NAME##_atomic_fetch_##OP##_nbi(T* fetch, T* dest, T value, int pe) {                                \
    amo<T>(SHMEM_NAME_(NAME, atomic_fetch_##OP##_nbi), kDt_##NAME, TETHER_AMO_FETCH_##AMO, dest, &value, nullptr, fetch, pe);  \
  }
#define DEFINE_BITWISE_AMO(NAME, T)                                                                                \
  DEFINE_BITWISE_OP(NAME, T, and, AND) DEFINE_BITWISE_OP(NAME, T, or, OR) DEFINE_BITWISE_OP(NAME, T, xor, XOR)

#define DEFINE_DEPRECATED_AMO(NAME, T)                                                                             \
  T shmem_##NAME##_fadd(T* dest, T value, int pe) {                                                                \
    return amoFetch<T>(SHMEM_NAME_(NAME, fadd), kDt_##NAME, TETHER_AMO_FETCH_ADD, dest, &value, nullptr, pe);                  \
  }                                                                                                                \
  T shmem_##NAME##_finc(T* dest, int pe) {                                                                         \
    return amoFetch<T>(SHMEM_NAME_(NAME, finc), kDt_##NAME, TETHER_AMO_FETCH_INC, dest, nullptr, nullptr, pe);                 \
  }                                                                                                                \
  void shmem_##NAME##_add(T* dest, T value, int pe) {                                                              \
    amo<T>(SHMEM_NAME_(NAME, add), kDt_##NAME, TETHER_AMO_ADD, dest, &value, nullptr, nullptr, pe);                            \
  }                                                                                                                \
  void shmem_##NAME##_inc(T* dest, int pe) {                                                                       \
    amo<T>(SHMEM_NAME_(NAME, inc), kDt_##NAME, TETHER_AMO_INC, dest, nullptr, nullptr, nullptr, pe);                           \
  }                                                                                                                \
  T shmem_##NAME##_cswap(T* dest, T cond, T value, int pe) {                                                       \
    return amoFetch<T>(SHMEM_NAME_(NAME, cswap), kDt_##NAME, TETHER_AMO_COMPARE_SWAP, dest, &value, &cond, pe);                \
  }

#define DEFINE_DEPRECATED_EXT_AMO(NAME, T)                                                                         \
  T shmem_##NAME##_swap(T* dest, T value, int pe) {                                                                \
    return amoFetch<T>(SHMEM_NAME_(NAME, swap), kDt_##NAME, TETHER_AMO_SWAP, dest, &value, nullptr, pe);                       \
  }                                                                                                                \
  T shmem_##NAME##_fetch(const T* source, int pe) {                                                                \
    return amoFetch<T>(SHMEM_NAME_(NAME, fetch), kDt_##NAME, TETHER_AMO_FETCH, source, nullptr, nullptr, pe);                  \
  }                                                                                                                \
  void shmem_##NAME##_set(T* dest, T value, int pe) {                                                              \
    amo<T>(SHMEM_NAME_(NAME, set), kDt_##NAME, TETHER_AMO_SET, dest, &value, nullptr, nullptr, pe);                            \
  }

SHMEM_AMO_EXTENDED_TYPES_(DEFINE_EXTENDED_AMO)
SHMEM_AMO_STANDARD_TYPES_(DEFINE_STANDARD_AMO)
SHMEM_AMO_BITWISE_TYPES_(DEFINE_BITWISE_AMO)
SHMEM_AMO_DEPRECATED_TYPES_(DEFINE_DEPRECATED_AMO)
SHMEM_AMO_DEPRECATED_EXT_TYPES_(DEFINE_DEPRECATED_EXT_AMO)

long shmem_swap(long* dest, long value, int pe) {
  return amoFetch<long>("shmem_swap", kDt_long, TETHER_AMO_SWAP, dest, &value, nullptr, pe);
}
