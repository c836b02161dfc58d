// OpenSHMEM 1.5 on tether: setup/query, symmetric heap, RMA, put-with-signal, ordering and barriers.
// Every routine maps onto the tether C API of the one default instance; a failing tether call ends the program
// (shmemAbort), as OpenSHMEM has no error returns.
#include <shmem.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <mutex>

#include <unistd.h>

#include "shmem_internal.h"

namespace tether_shmem {
namespace {

std::atomic<tether_t> g_world{nullptr};
std::atomic<int> g_my_pe{-1};
std::atomic<int> g_thread_level{SHMEM_THREAD_SINGLE};
std::mutex g_init_mutex;  // shmem_init / shmem_finalize racing from several threads

}  // namespace

[[noreturn]] void shmemAbortMsg(const char* call, const char* message) {
  std::fflush(stdout);
  std::fprintf(stderr, "shmem: PE %d: %s failed: %s\n", g_my_pe.load(std::memory_order_relaxed), call,
               (message && *message) ? message : "(no message)");
  std::fflush(stderr);
  std::abort();
}

[[noreturn]] void shmemAbort(const char* call) { shmemAbortMsg(call, tether_last_error()); }

size_t shmemMulChecked(size_t a, size_t b, const char* call) {
  size_t n = 0;
  if (__builtin_mul_overflow(a, b, &n)) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%zu x %zu (elements x element size) overflows size_t", a, b);
    shmemAbortMsg(call, msg);
  }
  return n;
}

tether_t shmemWorld(const char* call) {
  tether_t w = g_world.load(std::memory_order_acquire);
  if (w == nullptr) shmemAbortMsg(call, "OpenSHMEM is not initialised (call shmem_init first)");
  return w;
}

namespace {

void initOnce(const char* call) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (g_world.load(std::memory_order_acquire) != nullptr) return;
  tether_t w = nullptr;
  if (tether_init(&w) != TETHER_SUCCESS) shmemAbort(call);
  g_my_pe.store(tether_my_pe(w), std::memory_order_relaxed);
  // Global and static variables of the program are symmetric (OpenSHMEM's "symmetric data objects").
  if (tether_register_program_data(w) != TETHER_SUCCESS) shmemAbort(call);
  shmemExitInit(w);  // before the teams: their closing sync also orders every PE's zeroed exit word
  shmemTeamsInit(w);
  g_world.store(w, std::memory_order_release);
}

// nelems * elem_size, aborting on overflow.
size_t bytesOf(size_t nelems, size_t elem_size, const char* call) { return shmemMulChecked(nelems, elem_size, call); }

// RMA: one implementation per operation, shared by the routine and its context form (SHMEM_DEFINE_CTX_PAIR_). `pe` is
// numbered in the context's team; `call` names the routine in error messages. Puts (and p, iput) return at local
// completion, as OpenSHMEM specifies (tether_put_local): delivery at the next quiet, fence-ordered, barrier.
void put(shmem_ctx_t ctx, void* dest, const void* src, size_t nelems, size_t es, int pe, const char* call) {
  const ShmemTarget t = shmemCtxTarget(ctx, pe, call);
  shmemCheck(tether_put_local(t.world, dest, src, bytesOf(nelems, es, call), t.pe), call);
}
void get(shmem_ctx_t ctx, void* dest, const void* src, size_t nelems, size_t es, int pe, const char* call) {
  const ShmemTarget t = shmemCtxTarget(ctx, pe, call);
  shmemCheck(tether_get_elems(t.world, dest, src, nelems, es, t.pe), call);
}
void putNbi(shmem_ctx_t ctx, void* dest, const void* src, size_t nelems, size_t es, int pe, const char* call) {
  const ShmemTarget t = shmemCtxTarget(ctx, pe, call);
  shmemCheck(tether_put_nbi(t.world, dest, src, bytesOf(nelems, es, call), t.pe), call);
}
void getNbi(shmem_ctx_t ctx, void* dest, const void* src, size_t nelems, size_t es, int pe, const char* call) {
  const ShmemTarget t = shmemCtxTarget(ctx, pe, call);
  shmemCheck(tether_get_nbi(t.world, dest, src, bytesOf(nelems, es, call), t.pe), call);
}
// shmem_<T>_p / _g: one element.
template <class T>
void putValue(shmem_ctx_t ctx, T* dest, T value, int pe, const char* call) {
  put(ctx, dest, &value, 1, sizeof(T), pe, call);
}
template <class T>
T getValue(shmem_ctx_t ctx, const T* source, int pe, const char* call) {
  T value;
  get(ctx, &value, source, 1, sizeof(T), pe, call);
  return value;
}

// Strided forms: element i goes from source + i*sst to dest + i*dst (strides in elements). Contiguous on both sides
// is one transfer; otherwise one transfer per element (tether validates every element's address).
void strided(bool isPut, shmem_ctx_t ctx, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
             size_t es, int pe, const char* call) {
  const ShmemTarget t = shmemCtxTarget(ctx, pe, call);
  if (dst == 1 && sst == 1)
    return shmemCheck(isPut ? tether_put_local(t.world, dest, src, bytesOf(nelems, es, call), t.pe)
                            : tether_get_elems(t.world, dest, src, nelems, es, t.pe),
                      call);
  char* d = static_cast<char*>(dest);
  const char* s = static_cast<const char*>(src);
  for (size_t i = 0; i < nelems; ++i) {
    const ptrdiff_t ii = static_cast<ptrdiff_t>(i);
    char* de = d + ii * dst * static_cast<ptrdiff_t>(es);
    const char* se = s + ii * sst * static_cast<ptrdiff_t>(es);
    shmemCheck(isPut ? tether_put_local(t.world, de, se, es, t.pe) : tether_get(t.world, de, se, es, t.pe), call);
  }
}
void iput(shmem_ctx_t ctx, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es,
          int pe, const char* call) {
  strided(true, ctx, dest, src, dst, sst, nelems, es, pe, call);
}
void iget(shmem_ctx_t ctx, void* dest, const void* src, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t es,
          int pe, const char* call) {
  strided(false, ctx, dest, src, dst, sst, nelems, es, pe, call);
}

void putSignal(shmem_ctx_t ctx, void* dest, const void* src, size_t nelems, size_t es, uint64_t* sig_addr,
               uint64_t signal, int sig_op, int pe, bool nbi, const char* call) {
  const ShmemTarget t = shmemCtxTarget(ctx, pe, call);
  const size_t n = bytesOf(nelems, es, call);
  // The int is checked before it becomes the enum (an out-of-range enum value is undefined behaviour in C++).
  if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
    shmemAbortMsg(call, ("sig_op " + std::to_string(sig_op) + " is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD").c_str());
  const auto op = static_cast<tether_signal_op_t>(sig_op);
  shmemCheck(nbi ? tether_put_signal_nbi(t.world, dest, src, n, sig_addr, signal, op, t.pe)
                 : tether_put_signal(t.world, dest, src, n, sig_addr, signal, op, t.pe),
             call);
}

// SHMEM_CTX_INVALID, as we read OpenSHMEM 1.5: SHMEM_FENCE and SHMEM_QUIET (§9.11, Memory Ordering Routines) and
// SHMEM_CTX_DESTROY (§9.5.3) perform no operation on it; SHMEM_CTX_GET_TEAM (§9.5.4) returns non-zero with
// SHMEM_TEAM_INVALID; RMA and AMO routines on an invalid handle are undefined (§9.5, Communication Management
// Routines, introduction) and abort here naming the routine (shmemCtxTarget), as does any use of a destroyed context.
void quiet(shmem_ctx_t ctx, const char* call) {
  if (ctx == SHMEM_CTX_INVALID) return (void)shmemWorld(call);
  shmemCheck(tether_quiet(shmemCtxWorld(ctx, call)), call);
}
void fence(shmem_ctx_t ctx, const char* call) {
  if (ctx == SHMEM_CTX_INVALID) return (void)shmemWorld(call);
  shmemCheck(tether_fence(shmemCtxWorld(ctx, call)), call);
}

// Collective allocation: NULL when the heap is exhausted (OpenSHMEM), abort on anything else (mismatched arguments
// across PEs, bad alignment).
void* allocated(tether_status_t st, void* p, const char* call) {
  if (st == TETHER_SUCCESS) return p;
  if (st == TETHER_ERR_NO_MEMORY || st == TETHER_ERR_OVERFLOW) return nullptr;
  shmemAbort(call);
}

// Size 0: NULL and no action (OpenSHMEM 1.5), so no collective call is made on any PE.
void* hostAlloc(size_t alignment, size_t size, const char* call) {
  void* p = nullptr;
  if (size == 0) {
    shmemWorld(call);
    return nullptr;
  }
  const tether_status_t st = tether_malloc_kind(shmemWorld(call), TETHER_SEG_HOST, alignment, size, &p);
  return allocated(st, p, call);
}

}  // namespace
}  // namespace tether_shmem

using namespace tether_shmem;

extern "C" {

// ---- setup and query -------------------------------------------------------------------------------------------

void shmem_init(void) { initOnce("shmem_init"); }

int shmem_init_thread(int requested, int* provided) {
  initOnce("shmem_init_thread");
  int level = requested;
  if (level < SHMEM_THREAD_SINGLE || level > SHMEM_THREAD_MULTIPLE) level = SHMEM_THREAD_MULTIPLE;
  g_thread_level.store(level, std::memory_order_relaxed);
  if (provided) *provided = level;
  return 0;
}

void shmem_query_thread(int* provided) {
  shmemWorld("shmem_query_thread");
  if (provided == nullptr) shmemAbortMsg("shmem_query_thread", "provided is NULL");
  *provided = g_thread_level.load(std::memory_order_relaxed);
}

void shmem_finalize(void) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  tether_t w = g_world.exchange(nullptr, std::memory_order_acq_rel);
  if (w == nullptr) return;
  shmemExitFinalize();
  shmemCtxFinalize();
  shmemTeamsFinalize();
  if (tether_finalize(w) != TETHER_SUCCESS) shmemAbort("shmem_finalize");
}

int shmem_my_pe(void) { return tether_my_pe(shmemWorld("shmem_my_pe")); }
int shmem_n_pes(void) { return tether_n_pes(shmemWorld("shmem_n_pes")); }

void shmem_global_exit(int status) { shmemGlobalExit(status); }

int shmem_pe_accessible(int pe) {
  tether_t w = shmemWorld("shmem_pe_accessible");
  return pe >= 0 && pe < tether_n_pes(w) ? 1 : 0;
}

int shmem_addr_accessible(const void* addr, int pe) {
  tether_t w = shmemWorld("shmem_addr_accessible");
  if (pe < 0 || pe >= tether_n_pes(w)) return 0;
  return tether_segment_kind(w, addr) != TETHER_SEG_DEFAULT ? 1 : 0;
}

void* shmem_ptr(const void* dest, int pe) { return tether_ptr(shmemWorld("shmem_ptr"), dest, pe); }

void shmem_info_get_version(int* major, int* minor) {
  if (major) *major = SHMEM_MAJOR_VERSION;
  if (minor) *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char* name) {
  if (name == nullptr) return;
  static_assert(sizeof(SHMEM_VENDOR_STRING) <= SHMEM_MAX_NAME_LEN, "vendor string too long");
  std::memcpy(name, SHMEM_VENDOR_STRING, sizeof(SHMEM_VENDOR_STRING));
}

void start_pes(int) { initOnce("start_pes"); }
int _my_pe(void) { return tether_my_pe(shmemWorld("_my_pe")); }
int _num_pes(void) { return tether_n_pes(shmemWorld("_num_pes")); }

// ---- symmetric heap --------------------------------------------------------------------------------------------

void* shmem_malloc(size_t size) { return hostAlloc(0, size, "shmem_malloc"); }
void* shmem_malloc_with_hints(size_t size, long) { return hostAlloc(0, size, "shmem_malloc_with_hints"); }

void* shmem_calloc(size_t count, size_t size) {
  size_t n = 0;
  if (__builtin_mul_overflow(count, size, &n)) {
    shmemWorld("shmem_calloc");
    return nullptr;  // every PE sees the same overflow: no collective call is made anywhere
  }
  void* p = hostAlloc(0, n, "shmem_calloc");
  if (p != nullptr) std::memset(p, 0, n);
  // The memset is local; make sure no PE writes into another's fresh object before that PE zeroed it.
  if (p != nullptr) shmemCheck(tether_sync_all(shmemWorld("shmem_calloc")), "shmem_calloc");
  return p;
}

void* shmem_align(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "alignment %zu is not a power of two", alignment);
    shmemAbortMsg("shmem_align", msg);
  }
  return hostAlloc(alignment, size, "shmem_align");
}

void* shmem_realloc(void* ptr, size_t size) {
  if (ptr == nullptr) return hostAlloc(0, size, "shmem_realloc");
  void* p = nullptr;
  const tether_status_t st = tether_realloc(shmemWorld("shmem_realloc"), ptr, size, &p);
  return allocated(st, p, "shmem_realloc");
}

void shmem_free(void* ptr) { shmemCheck(tether_free(shmemWorld("shmem_free"), ptr), "shmem_free"); }

void* shmalloc(size_t size) { return hostAlloc(0, size, "shmalloc"); }
void* shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
void* shrealloc(void* ptr, size_t size) { return shmem_realloc(ptr, size); }
void shfree(void* ptr) { shmem_free(ptr); }

// ---- RMA -------------------------------------------------------------------------------------------------------

// Every routine below and its context form (SHMEM_DEFINE_CTX_PAIR_, shmem_internal.h).
#define SHMEM_RMA_PARAMS_(T) (T * dest, const T* source, size_t nelems, int pe)
#define SHMEM_STRIDED_PARAMS_(T) (T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)
#define SHMEM_SIGNAL_PARAMS_(T)                                                                                    \
  (T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)
// The RMA routines on elements of ES bytes: OP_<name> with dest/source of type T.
#define SHMEM_DEFINE_RMA_OPS_(T, ES, PUT, GET, PUT_NBI, GET_NBI, IPUT, IGET, PUT_SIGNAL, PUT_SIGNAL_NBI)           \
  SHMEM_DEFINE_CTX_PAIR_(void, PUT, SHMEM_RMA_PARAMS_(T), put, (dest, source, nelems, ES, pe))                     \
  SHMEM_DEFINE_CTX_PAIR_(void, GET, SHMEM_RMA_PARAMS_(T), get, (dest, source, nelems, ES, pe))                     \
  SHMEM_DEFINE_CTX_PAIR_(void, PUT_NBI, SHMEM_RMA_PARAMS_(T), putNbi, (dest, source, nelems, ES, pe))              \
  SHMEM_DEFINE_CTX_PAIR_(void, GET_NBI, SHMEM_RMA_PARAMS_(T), getNbi, (dest, source, nelems, ES, pe))              \
  SHMEM_DEFINE_CTX_PAIR_(void, IPUT, SHMEM_STRIDED_PARAMS_(T), iput, (dest, source, dst, sst, nelems, ES, pe))     \
  SHMEM_DEFINE_CTX_PAIR_(void, IGET, SHMEM_STRIDED_PARAMS_(T), iget, (dest, source, dst, sst, nelems, ES, pe))     \
  SHMEM_DEFINE_CTX_PAIR_(void, PUT_SIGNAL, SHMEM_SIGNAL_PARAMS_(T), putSignal,                                     \
                         (dest, source, nelems, ES, sig_addr, signal, sig_op, pe, false))                          \
  SHMEM_DEFINE_CTX_PAIR_(void, PUT_SIGNAL_NBI, SHMEM_SIGNAL_PARAMS_(T), putSignal,                                 \
                         (dest, source, nelems, ES, sig_addr, signal, sig_op, pe, true))

#define SHMEM_DEFINE_RMA_(NAME, T)                                                                                 \
  SHMEM_DEFINE_RMA_OPS_(T, sizeof(T), NAME##_put, NAME##_get, NAME##_put_nbi, NAME##_get_nbi, NAME##_iput,         \
                        NAME##_iget, NAME##_put_signal, NAME##_put_signal_nbi)                                     \
  SHMEM_DEFINE_CTX_PAIR_(void, NAME##_p, (T * dest, T value, int pe), putValue<T>, (dest, value, pe))              \
  SHMEM_DEFINE_CTX_PAIR_(T, NAME##_g, (const T* source, int pe), getValue<T>, (source, pe))
SHMEM_RMA_TYPES_(SHMEM_DEFINE_RMA_)
#undef SHMEM_DEFINE_RMA_

#define SHMEM_DEFINE_SIZED_RMA_(BITS)                                                                              \
  SHMEM_DEFINE_RMA_OPS_(void, (BITS) / 8, put##BITS, get##BITS, put##BITS##_nbi, get##BITS##_nbi, iput##BITS,      \
                        iget##BITS, put##BITS##_signal, put##BITS##_signal_nbi)
SHMEM_RMA_SIZES_(SHMEM_DEFINE_SIZED_RMA_)
#undef SHMEM_DEFINE_SIZED_RMA_

// The mem forms: elements of one byte.
SHMEM_DEFINE_CTX_PAIR_(void, putmem, SHMEM_RMA_PARAMS_(void), put, (dest, source, nelems, 1, pe))
SHMEM_DEFINE_CTX_PAIR_(void, getmem, SHMEM_RMA_PARAMS_(void), get, (dest, source, nelems, 1, pe))
SHMEM_DEFINE_CTX_PAIR_(void, putmem_nbi, SHMEM_RMA_PARAMS_(void), putNbi, (dest, source, nelems, 1, pe))
SHMEM_DEFINE_CTX_PAIR_(void, getmem_nbi, SHMEM_RMA_PARAMS_(void), getNbi, (dest, source, nelems, 1, pe))
SHMEM_DEFINE_CTX_PAIR_(void, putmem_signal, SHMEM_SIGNAL_PARAMS_(void), putSignal,
                       (dest, source, nelems, 1, sig_addr, signal, sig_op, pe, false))
SHMEM_DEFINE_CTX_PAIR_(void, putmem_signal_nbi, SHMEM_SIGNAL_PARAMS_(void), putSignal,
                       (dest, source, nelems, 1, sig_addr, signal, sig_op, pe, true))

uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  uint64_t v = 0;
  shmemCheck(tether_signal_fetch(shmemWorld("shmem_signal_fetch"), sig_addr, &v), "shmem_signal_fetch");
  return v;
}

uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp, uint64_t cmp_value) {
  if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE)  // checked before it becomes the enum (see putSignal)
    shmemAbortMsg("shmem_signal_wait_until",
                  ("cmp " + std::to_string(cmp) + " is not a SHMEM_CMP_ constant").c_str());
  uint64_t seen = 0;
  shmemCheck(tether_signal_wait_until(shmemWorld("shmem_signal_wait_until"), sig_addr,
                                      static_cast<tether_cmp_t>(cmp), cmp_value, &seen),
             "shmem_signal_wait_until");
  return seen;
}

// ---- ordering and barriers -------------------------------------------------------------------------------------

void shmem_quiet(void) { quiet(SHMEM_CTX_DEFAULT, "shmem_quiet"); }
void shmem_fence(void) { fence(SHMEM_CTX_DEFAULT, "shmem_fence"); }
void shmem_ctx_quiet(shmem_ctx_t ctx) { quiet(ctx, "shmem_ctx_quiet"); }
void shmem_ctx_fence(shmem_ctx_t ctx) { fence(ctx, "shmem_ctx_fence"); }
void shmem_barrier_all(void) {
  shmemCheck(tether_barrier_all(shmemWorld("shmem_barrier_all")), "shmem_barrier_all");
}
void shmem_sync_all(void) { shmemCheck(tether_sync_all(shmemWorld("shmem_sync_all")), "shmem_sync_all"); }

// ---- deprecated cache management: no-ops (tether keeps no cache of remote data) --------------------------------

void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void*) {}
void shmem_set_cache_line_inv(void*) {}
void shmem_udcflush(void) {}
void shmem_udcflush_line(void*) {}

}  // extern "C"
