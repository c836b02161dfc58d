// The C API's core entry points: status strings, version and build info, init/finalize and the PE queries, the
// symmetric heap, RMA, atomics, waits, signals and the world barrier: argument plumbing from tether.h to World.
// Teams and team collectives: api_teams.cpp; stream-ordered operations: api_stream.cpp; two-sided messaging:
// api_msg.cpp; what they share (live handles, Status -> tether_status_t): api_support.h.
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "base/enum_arg.h"
#include "base/log.h"
#include "core/api_support.h"
#include "core/dtype.h"
#include "core/info/build_info.h"
#include "core/world.h"
#include "heap/program_data.h"
#include "tether/datatype.h"

// A tether_t is an id, not an address (struct tether_world is never defined): see LiveWorlds in api_support.h.

using tether::World;
using namespace tether::capi;  // report, guarded, contained, liveWorld, ... (api_support.h)
using Mode = tether::World::WaitMode;

// Enum arguments (base/enum_arg.h): each entry checks them before using them as the enum. Helpers take them BY
// REFERENCE: passing an out-of-range one by value would load it.
using tether::enumArg;

extern "C" {

const char* tether_status_string(tether_status_t status) {
  const int s = tether::enumValue(status);  // a C caller may pass any int
  if (!tether::enumValid<tether_status_t>(s)) return "TETHER_ERR_(unknown)";
  switch (static_cast<tether_status_t>(s)) {
    case TETHER_SUCCESS: return "TETHER_SUCCESS";
    case TETHER_ERR_INVALID_ARG: return "TETHER_ERR_INVALID_ARG";
    case TETHER_ERR_INVALID_PE: return "TETHER_ERR_INVALID_PE";
    case TETHER_ERR_NOT_SYMMETRIC: return "TETHER_ERR_NOT_SYMMETRIC";
    case TETHER_ERR_OVERFLOW: return "TETHER_ERR_OVERFLOW";
    case TETHER_ERR_NO_MEMORY: return "TETHER_ERR_NO_MEMORY";
    case TETHER_ERR_MISMATCH: return "TETHER_ERR_MISMATCH";
    case TETHER_ERR_TIMEOUT: return "TETHER_ERR_TIMEOUT";
    case TETHER_ERR_PEER_LOST: return "TETHER_ERR_PEER_LOST";
    case TETHER_ERR_BOOTSTRAP: return "TETHER_ERR_BOOTSTRAP";
    case TETHER_ERR_SYSTEM: return "TETHER_ERR_SYSTEM";
    case TETHER_ERR_CUDA: return "TETHER_ERR_CUDA";
    case TETHER_ERR_UNSUPPORTED: return "TETHER_ERR_UNSUPPORTED";
    case TETHER_ERR_UNREACHABLE: return "TETHER_ERR_UNREACHABLE";
    case TETHER_ERR_INTERNAL: return "TETHER_ERR_INTERNAL";
    case TETHER_ERR_TRUNCATED: return "TETHER_ERR_TRUNCATED";
  }
  return "TETHER_ERR_(unknown)";
}

const char* tether_version(int* major, int* minor, int* patch) {
  if (major) *major = TETHER_VERSION_MAJOR;
  if (minor) *minor = TETHER_VERSION_MINOR;
  if (patch) *patch = TETHER_VERSION_PATCH;
  return TETHER_VERSION_STRING;
}

tether_status_t tether_get_build_info(tether_build_info_t* info) {
  if (!info) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_get_build_info: info is NULL"));
  tether::buildInfo(info);
  return TETHER_SUCCESS;
}

const char* tether_last_error(void) { return lastError(); }

size_t tether_dtype_size(tether_dtype_t type) { return tether::enumValid(type) ? tether::dtypeInfo(type).size : 0; }

void tether_init_attr_default(tether_init_attr_t* attr) {
  if (!attr) return;
  *attr = tether_init_attr_t{};
  attr->rank = -1;
  attr->size = -1;
  attr->bootstrap_listen_fd = -1;
}

tether_status_t tether_init(tether_t* world) {
  tether_init_attr_t attr;
  tether_init_attr_default(&attr);
  return tether_init_attr(&attr, world);
}

namespace {

// tether_init_attr and tether_init_mpi (mpiComm non-null).
tether_status_t initWorld(const tether_init_attr_t* attr, tether_t* world, const void* mpiComm) {
  if (!world) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_init: world is NULL"));
  *world = nullptr;
  tether_init_attr_t a;
  tether_init_attr_default(&a);
  if (attr) a = *attr;
  const size_t slot = liveWorlds().reserve();
  if (slot == LiveWorlds::kSlots)
    return report(tether::Status(TETHER_ERR_NO_MEMORY,
                                 tether::strprintf("tether_init: %zu instances are live in this process, the most "
                                                   "tether supports; finalize one first", LiveWorlds::kSlots)));
  try {
    std::unique_ptr<World> impl;
    tether_status_t s = report(World::create(a, &impl, mpiComm));
    if (s != TETHER_SUCCESS) {
      liveWorlds().unreserve(slot);
      return s;
    }
    *world = liveWorlds().publish(slot, std::move(impl));
    return TETHER_SUCCESS;
  } catch (const std::bad_alloc&) {
    liveWorlds().unreserve(slot);
    return report(tether::Status(TETHER_ERR_NO_MEMORY, "tether_init: out of host memory"));
  }
}

}  // namespace

tether_status_t tether_init_attr(const tether_init_attr_t* attr, tether_t* world) {
  return initWorld(attr, world, nullptr);
}

tether_status_t tether_init_mpi(const void* mpi_comm, const tether_init_attr_t* attr, tether_t* world) {
  if (!mpi_comm)
    return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_init_mpi: mpi_comm is NULL (pass &comm)"));
  return initWorld(attr, world, mpi_comm);
}

// A second finalize of the same handle fails like any other use of a finalized handle.
tether_status_t tether_finalize(tether_t world) {
  if (!world) return TETHER_SUCCESS;
  tether_status_t s = guarded(world, "tether_finalize", [](World& w) { return w.finalize(); });
  liveWorlds().remove(world);  // retires the handle and destroys the World (nothing when it was not live)
  return s;
}

int tether_my_pe(tether_t w) { return query(w, "tether_my_pe", [](World& x) { return x.myPe(); }); }
int tether_n_pes(tether_t w) { return query(w, "tether_n_pes", [](World& x) { return x.nPes(); }); }
int tether_local_pe(tether_t w) { return query(w, "tether_local_pe", [](World& x) { return x.localPe(); }); }
int tether_local_size(tether_t w) { return query(w, "tether_local_size", [](World& x) { return x.localSize(); }); }

// ---- heap

namespace {
// tether_malloc, tether_align and tether_malloc_kind: one allocation, errors named after the call made.
tether_status_t allocate(const char* call, tether_t w, int kindValue, size_t alignment, size_t size, void** ptr) {
  if (!ptr) return report(tether::Status(TETHER_ERR_INVALID_ARG, tether::strprintf("%s: ptr is NULL", call)));
  *ptr = nullptr;
  return guarded(w, call, [&](World& x) { return x.allocate(call, kindValue, alignment, size, false, ptr); });
}
}  // namespace

tether_status_t tether_malloc(tether_t w, size_t size, void** ptr) {
  return allocate("tether_malloc", w, TETHER_SEG_DEFAULT, 0, size, ptr);
}

tether_status_t tether_align(tether_t w, size_t alignment, size_t size, void** ptr) {
  if (alignment == 0)
    return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_align: alignment 0 is not a power of two"));
  return allocate("tether_align", w, TETHER_SEG_DEFAULT, alignment, size, ptr);
}

tether_status_t tether_malloc_kind(tether_t w, tether_seg_kind_t kind, size_t alignment, size_t size, void** ptr) {
  // The kind is checked by allocate, on every PE (a collective failure).
  return allocate("tether_malloc_kind", w, tether::enumValue(kind), alignment, size, ptr);
}

tether_status_t tether_calloc(tether_t w, size_t count, size_t size, void** ptr) {
  if (!ptr) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_calloc: ptr is NULL"));
  *ptr = nullptr;
  return guarded(w, "tether_calloc", [&](World& x) {
    if (size != 0 && count > SIZE_MAX / size)
      // Still collective: every PE gets here with the same arguments (or the mismatch check would differ anyway).
      return tether::Status(TETHER_ERR_OVERFLOW, tether::strprintf("tether_calloc: %zu x %zu bytes overflows",
                                                                   count, size));
    return x.allocate("tether_calloc", TETHER_SEG_DEFAULT, 0, count * size, true, ptr);
  });
}

tether_status_t tether_realloc(tether_t w, void* p, size_t size, void** out) {
  if (!out) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_realloc: new_ptr is NULL"));
  *out = nullptr;
  return guarded(w, "tether_realloc", [&](World& x) { return x.reallocate("tether_realloc", p, size, out); });
}

tether_status_t tether_free(tether_t w, void* p) {
  return guarded(w, "tether_free", [&](World& x) { return x.release("tether_free", p); });
}

tether_seg_kind_t tether_segment_kind(tether_t w, const void* addr) {
  tether::SymRef ref;
  World* x = nullptr;
  if (liveWorld(w, "tether_segment_kind", &x) != TETHER_SUCCESS ||
      !x->checkSymmetric("tether_segment_kind", "addr", addr, 0, &ref).isOk())
    return TETHER_SEG_DEFAULT;
  return tether::isHostMemory(ref.kind) ? TETHER_SEG_HOST : TETHER_SEG_DEVICE;
}

tether_status_t tether_register_static(tether_t w, void* addr, size_t size) {
  return guarded(w, "tether_register_static",
                 [&](World& x) { return x.registerStatic("tether_register_static", addr, size); });
}

tether_status_t tether_register_program_data(tether_t w) {
  return guarded(w, "tether_register_program_data", [&](World& x) -> tether::Status {
    void* addr = nullptr;
    uint64_t bytes = 0;
    const tether::Status found = tether::programDataRange(&addr, &bytes);
    // Every PE takes part in the collective step, also one whose lookup failed (registerStatic reports it to all).
    return x.registerStatic("tether_register_program_data", addr, bytes, found);
  });
}

tether_status_t tether_device_handle(tether_t w, tether_device_handle_t* h) {
  return guarded(w, "tether_device_handle", [&](World& x) { return x.deviceHandle(true, h); });
}
tether_status_t tether_device_handle_cpu(tether_t w, tether_device_handle_t* h) {
  return guarded(w, "tether_device_handle_cpu", [&](World& x) { return x.deviceHandle(false, h); });
}

void* tether_ptr(tether_t w, const void* addr, int pe) {
  World* x = nullptr;
  return liveWorld(w, "tether_ptr", &x) == TETHER_SUCCESS ? x->ptr(addr, pe) : nullptr;
}

// ---- RMA

tether_status_t tether_put(tether_t w, void* d, const void* s, size_t n, int pe) {
  return guarded(w, "tether_put", [&](World& x) { return x.put("tether_put", d, s, n, pe, false); });
}
tether_status_t tether_get(tether_t w, void* d, const void* s, size_t n, int pe) {
  return guarded(w, "tether_get", [&](World& x) { return x.get("tether_get", d, s, n, pe, false); });
}
tether_status_t tether_put_nbi(tether_t w, void* d, const void* s, size_t n, int pe) {
  return guarded(w, "tether_put_nbi", [&](World& x) { return x.put("tether_put_nbi", d, s, n, pe, true); });
}
tether_status_t tether_put_local(tether_t w, void* d, const void* s, size_t n, int pe) {
  return guarded(w, "tether_put_local", [&](World& x) { return x.put("tether_put_local", d, s, n, pe, false, true); });
}
tether_status_t tether_get_nbi(tether_t w, void* d, const void* s, size_t n, int pe) {
  return guarded(w, "tether_get_nbi", [&](World& x) { return x.get("tether_get_nbi", d, s, n, pe, true); });
}

static tether::Status elemBytes(const char* call, size_t nelems, size_t elemSize, size_t* bytes) {
  if (elemSize != 0 && nelems > SIZE_MAX / elemSize)
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %zu elements of %zu bytes overflow size_t", call, nelems, elemSize);
  *bytes = nelems * elemSize;
  return tether::Status::ok();
}

tether_status_t tether_put_elems(tether_t w, void* d, const void* s, size_t nelems, size_t elemSize, int pe) {
  return guarded(w, "tether_put_elems", [&](World& x) {
    size_t n;
    TETHER_TRY(elemBytes("tether_put_elems", nelems, elemSize, &n));
    return x.put("tether_put_elems", d, s, n, pe, false);
  });
}
tether_status_t tether_get_elems(tether_t w, void* d, const void* s, size_t nelems, size_t elemSize, int pe) {
  return guarded(w, "tether_get_elems", [&](World& x) {
    size_t n;
    TETHER_TRY(elemBytes("tether_get_elems", nelems, elemSize, &n));
    return x.get("tether_get_elems", d, s, n, pe, false);
  });
}

// Non-contiguous put/get (tether/datatype.h; core/rma_typed.cpp).
#define TETHER_TYPED_CALL(name, verb, mode, stream)                                                                \
  return guarded(w, #name, [&](World& x) {                                                                        \
    return x.typed().verb(#name, d, dt, dc, s, st, sc, pe, tether::TypedRma::Mode::mode, stream);                  \
  })
tether_status_t tether_put_typed(tether_t w, void* d, tether_type_t dt, int64_t dc, const void* s, tether_type_t st,
                                 int64_t sc, int pe) {
  TETHER_TYPED_CALL(tether_put_typed, put, Blocking, nullptr);
}
tether_status_t tether_get_typed(tether_t w, void* d, tether_type_t dt, int64_t dc, const void* s, tether_type_t st,
                                 int64_t sc, int pe) {
  TETHER_TYPED_CALL(tether_get_typed, get, Blocking, nullptr);
}
tether_status_t tether_put_typed_nbi(tether_t w, void* d, tether_type_t dt, int64_t dc, const void* s,
                                     tether_type_t st, int64_t sc, int pe) {
  TETHER_TYPED_CALL(tether_put_typed_nbi, put, Nbi, nullptr);
}
tether_status_t tether_get_typed_nbi(tether_t w, void* d, tether_type_t dt, int64_t dc, const void* s,
                                     tether_type_t st, int64_t sc, int pe) {
  TETHER_TYPED_CALL(tether_get_typed_nbi, get, Nbi, nullptr);
}
tether_status_t tether_put_typed_on_stream(tether_t w, void* d, tether_type_t dt, int64_t dc, const void* s,
                                           tether_type_t st, int64_t sc, int pe, void* stream) {
  TETHER_TYPED_CALL(tether_put_typed_on_stream, put, OnStream, stream);
}
tether_status_t tether_get_typed_on_stream(tether_t w, void* d, tether_type_t dt, int64_t dc, const void* s,
                                           tether_type_t st, int64_t sc, int pe, void* stream) {
  TETHER_TYPED_CALL(tether_get_typed_on_stream, get, OnStream, stream);
}
#undef TETHER_TYPED_CALL
tether_status_t tether_typed_route(tether_t w, int is_put, void* d, tether_type_t dt, int64_t dc, const void* s,
                                   tether_type_t st, int64_t sc, int pe, const char** route) {
  return guarded(w, "tether_typed_route", [&](World& x) {
    return x.typed().route("tether_typed_route", is_put != 0, d, dt, dc, s, st, sc, pe, route);
  });
}

tether_status_t tether_quiet(tether_t w) { return guarded(w, "tether_quiet", [](World& x) { return x.quiet(); }); }
tether_status_t tether_fence(tether_t w) { return guarded(w, "tether_fence", [](World& x) { return x.fence(); }); }

// ---- atomics

tether_status_t tether_atomic(tether_t w, tether_amo_t op, tether_dtype_t type, void* dest, const void* value,
                              const void* cond, void* fetched, int pe) {
  return guarded(w, "tether_atomic", [&](World& x) -> tether::Status {
    TETHER_TRY(enumArg("tether_atomic", "op", op));
    TETHER_TRY(enumArg("tether_atomic", "type", type));
    return x.atomic(op, type, dest, value, cond, fetched, pe);
  });
}

// ---- waits

tether_status_t tether_wait_until(tether_t w, void* ivar, tether_dtype_t t, tether_cmp_t c, const void* v) {
  return guarded(w, "tether_wait_until", [&](World& x) -> tether::Status {
    TETHER_TRY(waitArgs("tether_wait_until", t, c));
    return x.waitOrTest("tether_wait_until", Mode::All, true, ivar, 1, nullptr, t, c, v, false, nullptr, nullptr,
                        nullptr);
  });
}
tether_status_t tether_test(tether_t w, void* ivar, tether_dtype_t t, tether_cmp_t c, const void* v, int* result) {
  return guarded(w, "tether_test", [&](World& x) -> tether::Status {
    TETHER_TRY(waitArgs("tether_test", t, c));
    return x.waitOrTest("tether_test", Mode::All, false, ivar, 1, nullptr, t, c, v, false, result, nullptr, nullptr);
  });
}

#define TETHER_WAIT_FORMS(SUFFIX, VEC)                                                                               \
  tether_status_t tether_wait_until_all##SUFFIX(tether_t w, void* iv, size_t n, const int* st, tether_dtype_t t,     \
                                                tether_cmp_t c, const void* v) {                                     \
    return guarded(w, "tether_wait_until_all" #SUFFIX, [&](World& x) -> tether::Status {                             \
      TETHER_TRY(waitArgs("tether_wait_until_all" #SUFFIX, t, c));                                                   \
      return x.waitOrTest("tether_wait_until_all" #SUFFIX, Mode::All, true, iv, n, st, t, c, v, VEC, nullptr,       \
                          nullptr, nullptr);                                                                         \
    });                                                                                                              \
  }                                                                                                                  \
  tether_status_t tether_wait_until_any##SUFFIX(tether_t w, void* iv, size_t n, const int* st, tether_dtype_t t,     \
                                                tether_cmp_t c, const void* v, size_t* index) {                      \
    return guarded(w, "tether_wait_until_any" #SUFFIX, [&](World& x) -> tether::Status {                             \
      TETHER_TRY(waitArgs("tether_wait_until_any" #SUFFIX, t, c));                                                   \
      return x.waitOrTest("tether_wait_until_any" #SUFFIX, Mode::Any, true, iv, n, st, t, c, v, VEC, nullptr,       \
                          index, nullptr);                                                                           \
    });                                                                                                              \
  }                                                                                                                  \
  tether_status_t tether_wait_until_some##SUFFIX(tether_t w, void* iv, size_t n, const int* st, tether_dtype_t t,    \
                                                 tether_cmp_t c, const void* v, size_t* idx, size_t* count) {        \
    return guarded(w, "tether_wait_until_some" #SUFFIX, [&](World& x) -> tether::Status {                            \
      TETHER_TRY(waitArgs("tether_wait_until_some" #SUFFIX, t, c));                                                  \
      return x.waitOrTest("tether_wait_until_some" #SUFFIX, Mode::Some, true, iv, n, st, t, c, v, VEC, nullptr,     \
                          idx, count);                                                                               \
    });                                                                                                              \
  }                                                                                                                  \
  tether_status_t tether_test_all##SUFFIX(tether_t w, void* iv, size_t n, const int* st, tether_dtype_t t,           \
                                          tether_cmp_t c, const void* v, int* result) {                              \
    return guarded(w, "tether_test_all" #SUFFIX, [&](World& x) -> tether::Status {                                   \
      TETHER_TRY(waitArgs("tether_test_all" #SUFFIX, t, c));                                                         \
      return x.waitOrTest("tether_test_all" #SUFFIX, Mode::All, false, iv, n, st, t, c, v, VEC, result, nullptr,    \
                          nullptr);                                                                                  \
    });                                                                                                              \
  }                                                                                                                  \
  tether_status_t tether_test_any##SUFFIX(tether_t w, void* iv, size_t n, const int* st, tether_dtype_t t,           \
                                          tether_cmp_t c, const void* v, size_t* index) {                            \
    return guarded(w, "tether_test_any" #SUFFIX, [&](World& x) -> tether::Status {                                   \
      TETHER_TRY(waitArgs("tether_test_any" #SUFFIX, t, c));                                                         \
      return x.waitOrTest("tether_test_any" #SUFFIX, Mode::Any, false, iv, n, st, t, c, v, VEC, nullptr, index,     \
                          nullptr);                                                                                  \
    });                                                                                                              \
  }                                                                                                                  \
  tether_status_t tether_test_some##SUFFIX(tether_t w, void* iv, size_t n, const int* st, tether_dtype_t t,          \
                                           tether_cmp_t c, const void* v, size_t* idx, size_t* count) {              \
    return guarded(w, "tether_test_some" #SUFFIX, [&](World& x) -> tether::Status {                                  \
      TETHER_TRY(waitArgs("tether_test_some" #SUFFIX, t, c));                                                        \
      return x.waitOrTest("tether_test_some" #SUFFIX, Mode::Some, false, iv, n, st, t, c, v, VEC, nullptr, idx,     \
                          count);                                                                                    \
    });                                                                                                              \
  }
TETHER_WAIT_FORMS(, false)
TETHER_WAIT_FORMS(_vector, true)
#undef TETHER_WAIT_FORMS

// ---- signals

tether_status_t tether_put_signal(tether_t w, void* d, const void* s, size_t n, uint64_t* sig, uint64_t v,
                                  tether_signal_op_t op, int pe) {
  return guarded(w, "tether_put_signal", [&](World& x) -> tether::Status {
    TETHER_TRY(enumArg("tether_put_signal", "sig_op", op));
    return x.putSignal("tether_put_signal", d, s, n, sig, v, op, pe, false);
  });
}
tether_status_t tether_put_signal_nbi(tether_t w, void* d, const void* s, size_t n, uint64_t* sig, uint64_t v,
                                      tether_signal_op_t op, int pe) {
  return guarded(w, "tether_put_signal_nbi", [&](World& x) -> tether::Status {
    TETHER_TRY(enumArg("tether_put_signal_nbi", "sig_op", op));
    return x.putSignal("tether_put_signal_nbi", d, s, n, sig, v, op, pe, true);
  });
}
tether_status_t tether_signal_op(tether_t w, uint64_t* sig, uint64_t v, tether_signal_op_t op, int pe) {
  return guarded(w, "tether_signal_op", [&](World& x) -> tether::Status {
    TETHER_TRY(enumArg("tether_signal_op", "sig_op", op));
    return x.signalOp(sig, v, op, pe);
  });
}
tether_status_t tether_signal_fetch(tether_t w, const uint64_t* sig, uint64_t* value) {
  return guarded(w, "tether_signal_fetch", [&](World& x) -> tether::Status {
    tether::SymRef ref;
    TETHER_TRY(x.checkSymmetric("tether_signal_fetch", "sig_addr", sig, sizeof *sig, &ref));
    if (ref.offset % sizeof *sig)  // (as every signal call: a 64-bit word, read atomically)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_signal_fetch: sig_addr %p is not 8-byte aligned",
                  static_cast<const void*>(sig));
    if (!value) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_signal_fetch: value is NULL");
    if (ref.kind == tether::SegKind::Device) return x.heap().readLocal(ref, value, sizeof *value);
    *value = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    return tether::Status::ok();
  });
}
tether_status_t tether_signal_wait_until(tether_t w, uint64_t* sig, tether_cmp_t c, uint64_t v, uint64_t* seen) {
  return guarded(w, "tether_signal_wait_until", [&](World& x) -> tether::Status {
    TETHER_TRY(enumArg("tether_signal_wait_until", "cmp", c));
    return x.signalWaitUntil(sig, c, v, seen);
  });
}

// ---- collectives

tether_status_t tether_barrier_all(tether_t w) {
  return guarded(w, "tether_barrier_all", [](World& x) { return x.barrier("tether_barrier_all", true); });
}
tether_status_t tether_sync_all(tether_t w) {
  return guarded(w, "tether_sync_all", [](World& x) { return x.barrier("tether_sync_all", false); });
}

}  // extern "C"
