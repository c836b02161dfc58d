// OpenSHMEM 1.5 point-to-point synchronisation, distributed locks and shmem_pcontrol over the tether C API
// (see include/shmem_sync.h for the documented behaviour and the lock encoding).
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "shmem_internal.h"
#include "shmem_sync.h"
#include "tether/tether.h"

using tether_shmem::shmemAbort;
using tether_shmem::shmemAbortMsg;
using tether_shmem::shmemWorld;

namespace {

template <class T> struct Dtype;
template <> struct Dtype<short> { static constexpr tether_dtype_t value = TETHER_SHORT; };
template <> struct Dtype<int> { static constexpr tether_dtype_t value = TETHER_INT; };
template <> struct Dtype<long> { static constexpr tether_dtype_t value = TETHER_LONG; };
template <> struct Dtype<long long> { static constexpr tether_dtype_t value = TETHER_LONGLONG; };
template <> struct Dtype<unsigned short> { static constexpr tether_dtype_t value = TETHER_USHORT; };
template <> struct Dtype<unsigned int> { static constexpr tether_dtype_t value = TETHER_UINT; };
template <> struct Dtype<unsigned long> { static constexpr tether_dtype_t value = TETHER_ULONG; };
template <> struct Dtype<unsigned long long> { static constexpr tether_dtype_t value = TETHER_ULONGLONG; };

inline void check(const char* call, tether_status_t st) {
  if (st != TETHER_SUCCESS) shmemAbort(call);
}

tether_cmp_t toCmp(const char* call, int cmp) {
  switch (cmp) {
    case SHMEM_CMP_EQ: return TETHER_CMP_EQ;
    case SHMEM_CMP_NE: return TETHER_CMP_NE;
    case SHMEM_CMP_GT: return TETHER_CMP_GT;
    case SHMEM_CMP_GE: return TETHER_CMP_GE;
    case SHMEM_CMP_LT: return TETHER_CMP_LT;
    case SHMEM_CMP_LE: return TETHER_CMP_LE;
    default: break;
  }
  char msg[128];
  snprintf(msg, sizeof msg, "unknown comparison %d (expected SHMEM_CMP_EQ, _NE, _GT, _GE, _LT or _LE)", cmp);
  shmemAbortMsg(call, msg);
}

template <class T>
void waitUntil(const char* call, T* ivar, int cmp, T value) {
  check(call, tether_wait_until(shmemWorld(call), ivar, Dtype<T>::value, toCmp(call, cmp), &value));
}

template <class T>
int test(const char* call, T* ivar, int cmp, T value) {
  int result = 0;
  check(call, tether_test(shmemWorld(call), ivar, Dtype<T>::value, toCmp(call, cmp), &value, &result));
  return result;
}

// Array forms. `values` points to one value or to nelems values (vector). nelems == 0 is answered here (the spec
// allows NULL indices/values then): all -> satisfied, any -> SIZE_MAX, some -> 0.
template <class T>
int all(const char* call, bool block, bool vector, T* ivars, size_t n, const int* status, int cmp, const T* values) {
  const tether_cmp_t c = toCmp(call, cmp);
  if (n == 0) return 1;
  tether_t w = shmemWorld(call);
  const tether_dtype_t dt = Dtype<T>::value;
  int result = 1;
  if (block)
    check(call, vector ? tether_wait_until_all_vector(w, ivars, n, status, dt, c, values)
                       : tether_wait_until_all(w, ivars, n, status, dt, c, values));
  else
    check(call, vector ? tether_test_all_vector(w, ivars, n, status, dt, c, values, &result)
                       : tether_test_all(w, ivars, n, status, dt, c, values, &result));
  return result;
}

template <class T>
size_t any(const char* call, bool block, bool vector, T* ivars, size_t n, const int* status, int cmp,
           const T* values) {
  const tether_cmp_t c = toCmp(call, cmp);
  if (n == 0) return SIZE_MAX;
  tether_t w = shmemWorld(call);
  const tether_dtype_t dt = Dtype<T>::value;
  size_t index = SIZE_MAX;
  if (block)
    check(call, vector ? tether_wait_until_any_vector(w, ivars, n, status, dt, c, values, &index)
                       : tether_wait_until_any(w, ivars, n, status, dt, c, values, &index));
  else
    check(call, vector ? tether_test_any_vector(w, ivars, n, status, dt, c, values, &index)
                       : tether_test_any(w, ivars, n, status, dt, c, values, &index));
  return index;
}

template <class T>
size_t some(const char* call, bool block, bool vector, T* ivars, size_t n, size_t* indices, const int* status,
            int cmp, const T* values) {
  const tether_cmp_t c = toCmp(call, cmp);
  if (n == 0) return 0;
  tether_t w = shmemWorld(call);
  const tether_dtype_t dt = Dtype<T>::value;
  size_t count = 0;
  if (block)
    check(call, vector ? tether_wait_until_some_vector(w, ivars, n, status, dt, c, values, indices, &count)
                       : tether_wait_until_some(w, ivars, n, status, dt, c, values, indices, &count));
  else
    check(call, vector ? tether_test_some_vector(w, ivars, n, status, dt, c, values, indices, &count)
                       : tether_test_some(w, ivars, n, status, dt, c, values, indices, &count));
  return count;
}

}  // namespace

#define SHMEM_NAME_(NAME, OP) "shmem_" #NAME "_" #OP

#define DEFINE_P2P(NAME, T)                                                                                        \
  void shmem_##NAME##_wait_until(T* ivar, int cmp, T cmp_value) {                                                  \
    waitUntil<T>(SHMEM_NAME_(NAME, wait_until), ivar, cmp, cmp_value);                                             \
  }                                                                                                                \
  int shmem_##NAME##_test(T* ivar, int cmp, T cmp_value) {                                                         \
    return test<T>(SHMEM_NAME_(NAME, test), ivar, cmp, cmp_value);                                                 \
  }                                                                                                                \
  void shmem_##NAME##_wait(T* ivar, T cmp_value) {                                                                 \
    waitUntil<T>(SHMEM_NAME_(NAME, wait), ivar, SHMEM_CMP_NE, cmp_value);                                          \
  }                                                                                                                \
  void shmem_##NAME##_wait_until_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {           \
    all<T>(SHMEM_NAME_(NAME, wait_until_all), true, false, ivars, nelems, status, cmp, &cmp_value);                \
  }                                                                                                                \
  size_t shmem_##NAME##_wait_until_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {         \
    return any<T>(SHMEM_NAME_(NAME, wait_until_any), true, false, ivars, nelems, status, cmp, &cmp_value);         \
  }                                                                                                                \
  size_t shmem_##NAME##_wait_until_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,      \
                                        T cmp_value) {                                                             \
    return some<T>(SHMEM_NAME_(NAME, wait_until_some), true, false, ivars, nelems, indices, status, cmp,           \
                   &cmp_value);                                                                                    \
  }                                                                                                                \
  void shmem_##NAME##_wait_until_all_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {  \
    all<T>(SHMEM_NAME_(NAME, wait_until_all_vector), true, true, ivars, nelems, status, cmp, cmp_values);          \
  }                                                                                                                \
  size_t shmem_##NAME##_wait_until_any_vector(T* ivars, size_t nelems, const int* status, int cmp,                 \
                                              T* cmp_values) {                                                     \
    return any<T>(SHMEM_NAME_(NAME, wait_until_any_vector), true, true, ivars, nelems, status, cmp, cmp_values);   \
  }                                                                                                                \
  size_t shmem_##NAME##_wait_until_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status,        \
                                               int cmp, T* cmp_values) {                                           \
    return some<T>(SHMEM_NAME_(NAME, wait_until_some_vector), true, true, ivars, nelems, indices, status, cmp,     \
                   cmp_values);                                                                                    \
  }                                                                                                                \
  int shmem_##NAME##_test_all(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {                  \
    return all<T>(SHMEM_NAME_(NAME, test_all), false, false, ivars, nelems, status, cmp, &cmp_value);              \
  }                                                                                                                \
  size_t shmem_##NAME##_test_any(T* ivars, size_t nelems, const int* status, int cmp, T cmp_value) {               \
    return any<T>(SHMEM_NAME_(NAME, test_any), false, false, ivars, nelems, status, cmp, &cmp_value);              \
  }                                                                                                                \
  size_t shmem_##NAME##_test_some(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,            \
                                  T cmp_value) {                                                                   \
    return some<T>(SHMEM_NAME_(NAME, test_some), false, false, ivars, nelems, indices, status, cmp, &cmp_value);   \
  }                                                                                                                \
  int shmem_##NAME##_test_all_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {         \
    return all<T>(SHMEM_NAME_(NAME, test_all_vector), false, true, ivars, nelems, status, cmp, cmp_values);        \
  }                                                                                                                \
  size_t shmem_##NAME##_test_any_vector(T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {      \
    return any<T>(SHMEM_NAME_(NAME, test_any_vector), false, true, ivars, nelems, status, cmp, cmp_values);        \
  }                                                                                                                \
  size_t shmem_##NAME##_test_some_vector(T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,     \
                                         T* cmp_values) {                                                          \
    return some<T>(SHMEM_NAME_(NAME, test_some_vector), false, true, ivars, nelems, indices, status, cmp,          \
                   cmp_values);                                                                                    \
  }

SHMEM_P2P_ALL_TYPES_(DEFINE_P2P)

void shmem_wait(long* ivar, long cmp_value) { waitUntil<long>("shmem_wait", ivar, SHMEM_CMP_NE, cmp_value); }
void shmem_wait_until(long* ivar, int cmp, long cmp_value) {
  waitUntil<long>("shmem_wait_until", ivar, cmp, cmp_value);
}

// ---------------------------------------------------------------------------------------------------------------
// Distributed locks: a FIFO ticket lock in PE 0's copy of the lock word (read as unsigned long, 64 bits).
// High 32 bits: next ticket to hand out; low 32 bits: ticket now served. Both wrap modulo 2^32 independently:
// taking a ticket adds 2^32 (a carry out of bit 63 is dropped), serving the next one rewrites only the low half with
// a compare-and-swap (a plain add would carry into the ticket half at the wrap).

namespace {

static_assert(sizeof(unsigned long) == 8, "the lock encoding needs a 64-bit long");
constexpr unsigned long kTicketOne = 1ul << 32;
constexpr int kLockPe = 0;

inline uint32_t ticketOf(unsigned long v) { return static_cast<uint32_t>(v >> 32); }
inline uint32_t servingOf(unsigned long v) { return static_cast<uint32_t>(v); }

unsigned long* lockWord(const char* call, long* lock) {
  if (!lock) {
    shmemAbortMsg(call, "lock is NULL");
  }
  return reinterpret_cast<unsigned long*>(lock);
}

unsigned long lockFetch(const char* call, unsigned long* word) {
  unsigned long v = 0;
  check(call, tether_atomic(shmemWorld(call), TETHER_AMO_FETCH, TETHER_ULONG, word, nullptr, nullptr, &v, kLockPe));
  return v;
}

unsigned long lockCas(const char* call, unsigned long* word, unsigned long expect, unsigned long desired) {
  unsigned long old = 0;
  check(call, tether_atomic(shmemWorld(call), TETHER_AMO_COMPARE_SWAP, TETHER_ULONG, word, &desired, &expect, &old,
                            kLockPe));
  return old;
}

// Waiting for one's turn: yield while next in line, sleep a little longer the further back in the queue (PEs may
// outnumber cores; the holder and the next in line must get to run).
void lockBackoff(uint32_t distance) {
  if (distance <= 1) {
    sched_yield();
    return;
  }
  const long ns = 1000L * (distance < 50 ? static_cast<long>(distance) : 50L);
  struct timespec ts = {0, ns};
  nanosleep(&ts, nullptr);
}

}  // namespace

void shmem_set_lock(long* lock) {
  const char* call = "shmem_set_lock";
  unsigned long* word = lockWord(call, lock);
  unsigned long one = kTicketOne, v = 0;
  check(call, tether_atomic(shmemWorld(call), TETHER_AMO_FETCH_ADD, TETHER_ULONG, word, &one, nullptr, &v, kLockPe));
  const uint32_t mine = ticketOf(v);
  while (servingOf(v) != mine) {
    lockBackoff(mine - servingOf(v));
    v = lockFetch(call, word);
  }
}

int shmem_test_lock(long* lock) {
  const char* call = "shmem_test_lock";
  unsigned long* word = lockWord(call, lock);
  const unsigned long v = lockFetch(call, word);
  if (ticketOf(v) != servingOf(v)) return 1;  // held (or waited for)
  return lockCas(call, word, v, v + kTicketOne) == v ? 0 : 1;
}

void shmem_clear_lock(long* lock) {
  const char* call = "shmem_clear_lock";
  unsigned long* word = lockWord(call, lock);
  check(call, tether_quiet(shmemWorld(call)));  // the critical section's stores are complete before the next holder
  unsigned long v = lockFetch(call, word);
  for (;;) {
    if (ticketOf(v) == servingOf(v)) {
      char msg[160];
      snprintf(msg, sizeof msg, "lock %p is not held (lock word on PE %d is 0x%lx)", static_cast<void*>(lock), kLockPe,
               v);
      shmemAbortMsg(call, msg);
    }
    const unsigned long next = (v & ~0xfffffffful) | static_cast<uint32_t>(servingOf(v) + 1u);
    const unsigned long old = lockCas(call, word, v, next);
    if (old == v) return;
    v = old;  // a ticket was taken meanwhile: retry with the new word
  }
}

void shmem_pcontrol(const int level, ...) { (void)level; }
