/* Typed convenience forms of the tether C API (included by tether.h).
 *
 * tether_<T>_put/get/put_nbi/get_nbi(world, dest, src, nelems, pe), tether_<T>_p(world, dest, value, pe),
 * tether_<T>_g(world, &out, src, pe) for every standard RMA type; tether_<T>_atomic_<op> for the AMO types;
 * tether_<T>_wait_until / tether_<T>_test for the point-to-point types. All are thin inline wrappers over the
 * untyped calls, with the same status and error rules. */
#ifndef TETHER_TETHER_TYPED_H
#define TETHER_TETHER_TYPED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_RMA_TYPES(X)                                                                                       \
  X(float, float) X(double, double) X(char, char) X(schar, signed char) X(short, short) X(int, int)              \
  X(long, long) X(longlong, long long) X(uchar, unsigned char) X(ushort, unsigned short) X(uint, unsigned int)   \
  X(ulong, unsigned long) X(ulonglong, unsigned long long) X(int8, int8_t) X(int16, int16_t) X(int32, int32_t)   \
  X(int64, int64_t) X(uint8, uint8_t) X(uint16, uint16_t) X(uint32, uint32_t) X(uint64, uint64_t)               \
  X(size, size_t) X(ptrdiff, ptrdiff_t)

#define TETHER_DEFINE_RMA(NAME, T)                                                                                \
  static inline tether_status_t tether_##NAME##_put(tether_t w, T* dest, const T* src, size_t n, int pe) {       \
    return tether_put_elems(w, dest, src, n, sizeof(T), pe);                                                     \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_get(tether_t w, T* dest, const T* src, size_t n, int pe) {       \
    return tether_get_elems(w, dest, src, n, sizeof(T), pe);                                                     \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_put_nbi(tether_t w, T* dest, const T* src, size_t n, int pe) {   \
    if (n > SIZE_MAX / sizeof(T)) return tether_put_elems(w, dest, src, n, sizeof(T), pe);                       \
    return tether_put_nbi(w, dest, src, n * sizeof(T), pe);                                                      \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_get_nbi(tether_t w, T* dest, const T* src, size_t n, int pe) {   \
    if (n > SIZE_MAX / sizeof(T)) return tether_get_elems(w, dest, src, n, sizeof(T), pe);                       \
    return tether_get_nbi(w, dest, src, n * sizeof(T), pe);                                                      \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_p(tether_t w, T* dest, T value, int pe) {                        \
    return tether_put(w, dest, &value, sizeof(T), pe);                                                           \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_g(tether_t w, T* out, const T* src, int pe) {                    \
    return tether_get(w, out, src, sizeof(T), pe);                                                               \
  }
TETHER_RMA_TYPES(TETHER_DEFINE_RMA)
#undef TETHER_DEFINE_RMA

/* AMO types: NAME, C type, tether_dtype_t, bitwise allowed (1/0) */
#define TETHER_AMO_TYPES(X)                                                                                       \
  X(int, int, TETHER_INT) X(long, long, TETHER_LONG) X(longlong, long long, TETHER_LONGLONG)                     \
  X(uint, unsigned int, TETHER_UINT) X(ulong, unsigned long, TETHER_ULONG)                                       \
  X(ulonglong, unsigned long long, TETHER_ULONGLONG) X(int32, int32_t, TETHER_INT32)                              \
  X(int64, int64_t, TETHER_INT64) X(uint32, uint32_t, TETHER_UINT32) X(uint64, uint64_t, TETHER_UINT64)           \
  X(size, size_t, TETHER_SIZE) X(ptrdiff, ptrdiff_t, TETHER_PTRDIFF)

#define TETHER_DEFINE_AMO(NAME, T, DT)                                                                            \
  static inline tether_status_t tether_##NAME##_atomic_fetch(tether_t w, const T* src, int pe, T* out) {         \
    return tether_atomic(w, TETHER_AMO_FETCH, DT, (void*)src, NULL, NULL, out, pe);                               \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_set(tether_t w, T* dest, T v, int pe) {                   \
    return tether_atomic(w, TETHER_AMO_SET, DT, dest, &v, NULL, NULL, pe);                                       \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_swap(tether_t w, T* dest, T v, int pe, T* out) {          \
    return tether_atomic(w, TETHER_AMO_SWAP, DT, dest, &v, NULL, out, pe);                                       \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_compare_swap(tether_t w, T* dest, T cond, T v, int pe,    \
                                                                    T* out) {                                    \
    return tether_atomic(w, TETHER_AMO_COMPARE_SWAP, DT, dest, &v, &cond, out, pe);                              \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_inc(tether_t w, T* dest, int pe) {                        \
    return tether_atomic(w, TETHER_AMO_INC, DT, dest, NULL, NULL, NULL, pe);                                     \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_fetch_inc(tether_t w, T* dest, int pe, T* out) {          \
    return tether_atomic(w, TETHER_AMO_FETCH_INC, DT, dest, NULL, NULL, out, pe);                                \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_add(tether_t w, T* dest, T v, int pe) {                   \
    return tether_atomic(w, TETHER_AMO_ADD, DT, dest, &v, NULL, NULL, pe);                                       \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_fetch_add(tether_t w, T* dest, T v, int pe, T* out) {     \
    return tether_atomic(w, TETHER_AMO_FETCH_ADD, DT, dest, &v, NULL, out, pe);                                  \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_wait_until(tether_t w, T* ivar, tether_cmp_t cmp, T v) {         \
    return tether_wait_until(w, ivar, DT, cmp, &v);                                                              \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_test(tether_t w, T* ivar, tether_cmp_t cmp, T v, int* result) {  \
    return tether_test(w, ivar, DT, cmp, &v, result);                                                            \
  }
TETHER_AMO_TYPES(TETHER_DEFINE_AMO)
#undef TETHER_DEFINE_AMO

/* Bitwise AMO types */
#define TETHER_BITWISE_AMO_TYPES(X)                                                                               \
  X(uint, unsigned int, TETHER_UINT) X(ulong, unsigned long, TETHER_ULONG)                                       \
  X(ulonglong, unsigned long long, TETHER_ULONGLONG) X(int32, int32_t, TETHER_INT32)                              \
  X(int64, int64_t, TETHER_INT64) X(uint32, uint32_t, TETHER_UINT32) X(uint64, uint64_t, TETHER_UINT64)

#define TETHER_DEFINE_BITWISE(NAME, T, DT)                                                                        \
  static inline tether_status_t tether_##NAME##_atomic_and(tether_t w, T* d, T v, int pe) {                      \
    return tether_atomic(w, TETHER_AMO_AND, DT, d, &v, NULL, NULL, pe);                                          \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_fetch_and(tether_t w, T* d, T v, int pe, T* out) {        \
    return tether_atomic(w, TETHER_AMO_FETCH_AND, DT, d, &v, NULL, out, pe);                                     \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_or(tether_t w, T* d, T v, int pe) {                       \
    return tether_atomic(w, TETHER_AMO_OR, DT, d, &v, NULL, NULL, pe);                                           \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_fetch_or(tether_t w, T* d, T v, int pe, T* out) {         \
    return tether_atomic(w, TETHER_AMO_FETCH_OR, DT, d, &v, NULL, out, pe);                                      \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_xor(tether_t w, T* d, T v, int pe) {                      \
    return tether_atomic(w, TETHER_AMO_XOR, DT, d, &v, NULL, NULL, pe);                                          \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_fetch_xor(tether_t w, T* d, T v, int pe, T* out) {        \
    return tether_atomic(w, TETHER_AMO_FETCH_XOR, DT, d, &v, NULL, out, pe);                                     \
  }
TETHER_BITWISE_AMO_TYPES(TETHER_DEFINE_BITWISE)
#undef TETHER_DEFINE_BITWISE

/* Extended AMO types (fetch/set/swap only) */
#define TETHER_DEFINE_EXT(NAME, T, DT)                                                                            \
  static inline tether_status_t tether_##NAME##_atomic_fetch(tether_t w, const T* src, int pe, T* out) {         \
    return tether_atomic(w, TETHER_AMO_FETCH, DT, (void*)src, NULL, NULL, out, pe);                               \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_set(tether_t w, T* dest, T v, int pe) {                   \
    return tether_atomic(w, TETHER_AMO_SET, DT, dest, &v, NULL, NULL, pe);                                       \
  }                                                                                                              \
  static inline tether_status_t tether_##NAME##_atomic_swap(tether_t w, T* dest, T v, int pe, T* out) {          \
    return tether_atomic(w, TETHER_AMO_SWAP, DT, dest, &v, NULL, out, pe);                                       \
  }
TETHER_DEFINE_EXT(float, float, TETHER_FLOAT)
TETHER_DEFINE_EXT(double, double, TETHER_DOUBLE)
#undef TETHER_DEFINE_EXT

static inline tether_status_t tether_short_wait_until(tether_t w, short* ivar, tether_cmp_t cmp, short v) {
  return tether_wait_until(w, ivar, TETHER_SHORT, cmp, &v);
}
static inline tether_status_t tether_ushort_wait_until(tether_t w, unsigned short* ivar, tether_cmp_t cmp,
                                                       unsigned short v) {
  return tether_wait_until(w, ivar, TETHER_USHORT, cmp, &v);
}

#ifdef __cplusplus
}
#endif

#endif /* TETHER_TETHER_TYPED_H */
