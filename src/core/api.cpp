// The C API: argument plumbing from tether.h to World, Status -> tether_status_t + thread-local message.
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "base/enum_arg.h"
#include "base/log.h"
#include "core/dtype.h"
#include "core/info/build_info.h"
#include "core/stream.h"
#include "core/world.h"
#include "heap/program_data.h"
#include "tether/datatype.h"
#include "tether/msg.h"

// A tether_t is an id, not an address (struct tether_world is never defined): see LiveWorlds below.

struct tether_op_set {
  tether_t world;
  std::unique_ptr<tether::OpSet, void (*)(tether::OpSet*)> impl{nullptr, tether::destroyOpSet};
};

// A prepared set armed behind a doorbell word on an internal stream (tether_doorbell_*).
struct tether_doorbell {
  tether_op_set_t set;
  uint64_t* word;
  void* stream;  // from the world's stream-op layer
  std::mutex mu;
  bool armed = false;
  uint64_t last = 0;  // the latest armed value
};

namespace {

using tether::World;

thread_local std::string tlsLastError;

tether_status_t report(const tether::Status& s) {
  if (s.isOk()) return TETHER_SUCCESS;
  tlsLastError = s.message();
  TETHER_LOG_INFO(tether::LogSys::Core, "%s", s.message().c_str());
  return s.code();
}

// The live instances of this process, by id. A tether_t is the id (slot index, generation) of a slot here, never the
// address of the World: tether_finalize cannot clear the caller's copies of the handle, so the handle must stay
// checkable after the World is gone. finalize bumps the slot's generation, so a finalized handle, a never-initialised
// one and garbage are all refused with TETHER_ERR_INVALID_ARG instead of dereferenced, and a slot reused by a later
// tether_init gives a new id. This table is the one process-wide object of the core (docs/architecture.md): it owns
// no runtime state (every World still owns all of its own), it only says which ids are live.
// Thread-safety: reserve/unreserve/publish/remove under mu_; find is lock-free (a slot's World is stored before the
// generation that makes its id valid). Using a handle while another thread finalizes it stays the caller's race.
class LiveWorlds {
 public:
  static constexpr unsigned kSlotBits = 10;  // at most 1024 instances live at once in one process
  static constexpr size_t kSlots = size_t{1} << kSlotBits;

  // A free slot for an instance being created, or kSlots when all are taken.
  size_t reserve() {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < kSlots; ++i)
      if (!slots_[i].taken) {
        slots_[i].taken = true;
        return i;
      }
    return kSlots;
  }
  void unreserve(size_t slot) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[slot].taken = false;
  }
  // Makes w live in a reserved slot; returns its id.
  tether_t publish(size_t slot, std::unique_ptr<World> w) {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[slot];
    s.world.store(w.release(), std::memory_order_release);
    const uint64_t gen = s.gen.load(std::memory_order_relaxed) + 1;
    s.gen.store(gen, std::memory_order_release);
    return reinterpret_cast<tether_t>(static_cast<uintptr_t>(encode(slot, gen)));
  }
  // The World behind id, or nullptr with *finalized telling a handle that was live once from one that never was.
  World* find(tether_t id, bool* finalized) const {
    size_t slot = 0;
    uint64_t gen = 0;
    *finalized = false;
    if (!decode(id, &slot, &gen)) return nullptr;
    const Slot& s = slots_[slot];
    const uint64_t now = s.gen.load(std::memory_order_acquire);
    World* w = now == gen ? s.world.load(std::memory_order_acquire) : nullptr;
    *finalized = !w && gen <= now;
    return w;
  }
  // The World live in slot whose generation's low genBits bits are genLow, or nullptr (team handles: see TeamId).
  World* findLow(size_t slot, uint64_t genLow, unsigned genBits) const {
    if (slot >= kSlots) return nullptr;
    const Slot& s = slots_[slot];
    const uint64_t now = s.gen.load(std::memory_order_acquire);
    World* w = s.world.load(std::memory_order_acquire);
    return w && (now & ((uint64_t{1} << genBits) - 1)) == genLow ? w : nullptr;
  }
  // Retires id (its later uses fail as finalized) and hands back its World; nullptr when id is not live.
  std::unique_ptr<World> remove(tether_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t slot = 0;
    uint64_t gen = 0;
    if (!decode(id, &slot, &gen) || slots_[slot].gen.load(std::memory_order_relaxed) != gen) return nullptr;
    Slot& s = slots_[slot];
    std::unique_ptr<World> w(s.world.exchange(nullptr, std::memory_order_acq_rel));
    if (!w) return nullptr;
    s.gen.fetch_add(1, std::memory_order_release);
    s.taken = false;
    return w;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> gen{0};  // generation of the id last handed out for this slot
    std::atomic<World*> world{nullptr};
    bool taken = false;  // reserved or live (under mu_)
  };
  // Odd values only, so no aligned pointer is an id; generation 0 is never handed out.
  static uint64_t encode(size_t slot, uint64_t gen) { return gen << (kSlotBits + 1) | uint64_t{slot} << 1 | 1u; }

 public:
  static bool decode(tether_t id, size_t* slot, uint64_t* gen) {
    const uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(id));
    *slot = static_cast<size_t>(v >> 1) & (kSlots - 1);
    *gen = v >> (kSlotBits + 1);
    return (v & 1u) && *gen != 0;
  }

 private:
  std::mutex mu_;
  Slot slots_[kSlots];
};

// Never destroyed: calls made while the process exits (atexit handlers, static destructors) still find it.
LiveWorlds& liveWorlds() {
  static LiveWorlds* table = new LiveWorlds();
  return *table;
}

// The one check behind every call on a tether_t: *out = the live World behind w, or a reported
// TETHER_ERR_INVALID_ARG naming the call (NULL, finalized, or not a handle from tether_init).
tether_status_t liveWorld(tether_t w, const char* call, World** out) {
  *out = nullptr;
  if (!w) return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": world is NULL"));
  bool finalized = false;
  *out = liveWorlds().find(w, &finalized);
  if (*out) return TETHER_SUCCESS;
  return report(tether::Status(
      TETHER_ERR_INVALID_ARG,
      finalized ? tether::strprintf("%s: world %p was finalized (tether_finalize); the handle may not be used again",
                                    call, static_cast<void*>(w))
                : tether::strprintf("%s: world %p is not a live instance (never initialised, or not a value "
                                    "tether_init returned)", call, static_cast<void*>(w))));
}

// Runs f() -> Status with exceptions contained.
template <typename F>
tether_status_t contained(const char* call, F&& f) {
  try {
    return report(f());
  } catch (const std::bad_alloc&) {
    return report(tether::Status(TETHER_ERR_NO_MEMORY, std::string(call) + ": out of host memory"));
  } catch (const std::exception& e) {
    return report(tether::Status(TETHER_ERR_INTERNAL, std::string(call) + ": " + e.what()));
  }
}

// Runs f(World&) -> Status with world checked and exceptions contained.
template <typename F>
tether_status_t guarded(tether_t w, const char* call, F&& f) {
  World* x = nullptr;
  const tether_status_t live = liveWorld(w, call, &x);
  if (live != TETHER_SUCCESS) return live;
  return contained(call, [&] { return f(*x); });
}

// Queries of a handle that is not live return -1; tether_last_error() says why, except for NULL (-1 silently, as
// always: a failure report may call tether_my_pe on a NULL world without losing the message it is about to print).
template <typename Q>
int query(tether_t w, const char* call, Q q) {
  World* x = nullptr;
  return w && liveWorld(w, call, &x) == TETHER_SUCCESS ? q(*x) : -1;
}

using Mode = tether::World::WaitMode;

// Enum arguments (base/enum_arg.h): each entry checks them before using them as the enum. Helpers take them BY
// REFERENCE: passing an out-of-range one by value would load it.
using tether::enumArg;

// The type and cmp arguments of every wait and test form.
tether::Status waitArgs(const char* call, const tether_dtype_t& type, const tether_cmp_t& cmp) {
  TETHER_TRY(enumArg(call, "type", type));
  return enumArg(call, "cmp", cmp);
}

}  // namespace

// Two-sided messaging (tether/msg.h):
namespace {

// Runs f(Messaging&) on w's messaging room (TETHER_ERR_INVALID_ARG before tether_msg_init).
template <typename F>
tether_status_t withMsg(tether_t w, const char* call, F&& f) {
  return guarded(w, call, [&](World& x) -> tether::Status {
    if (!x.messaging())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: messaging is not initialised on PE %d (call tether_msg_init first)",
                  call, x.myPe());
    return f(*x.messaging());
  });
}

}  // namespace

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

const char* tether_last_error(void) { return tlsLastError.c_str(); }

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

// ---- teams (#21): core/teams.h

}  // extern "C"

namespace {

using tether::TeamRef;

// A tether_team_t is an id like a tether_t, never an address: bit 0 set, then the World's slot in LiveWorlds, the
// team's slot in that World, the low kGenBits bits of the World's generation and the team's serial (core/teams.h).
// So a handle of a finalized World or of a destroyed team, and garbage, are refused, never dereferenced -- except
// for an alias no program meets in practice: a handle kept across 2^20 re-initialisations of the same instance slot,
// or across 2^27 later teams of its World.
struct TeamId {
  static constexpr unsigned kWorldBits = LiveWorlds::kSlotBits, kSlotBits = 6, kGenBits = 20;
  static_assert(1 + kWorldBits + kSlotBits + kGenBits + tether::kTeamSerialBits == 64, "a team id fills 64 bits");
  static_assert(sizeof(void*) == sizeof(uint64_t), "team ids need 64-bit handles");
  static_assert(tether::kTeamSlots == 1 << kSlotBits, "team slots fill their bits");
  size_t world = 0;  // LiveWorlds slot
  uint64_t gen = 0;  // its generation's low kGenBits bits
  TeamRef ref;

  tether_team_t encode() const {
    const uint64_t v = 1u | uint64_t{world} << 1 | uint64_t(ref.slot) << (1 + kWorldBits) |
                       (gen & ((uint64_t{1} << kGenBits) - 1)) << (1 + kWorldBits + kSlotBits) |
                       ref.serial << (1 + kWorldBits + kSlotBits + kGenBits);
    return reinterpret_cast<tether_team_t>(static_cast<uintptr_t>(v));
  }
  static bool decode(tether_team_t t, TeamId* id) {
    const uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t));
    id->world = static_cast<size_t>(v >> 1) & (LiveWorlds::kSlots - 1);
    id->ref.slot = static_cast<int>(v >> (1 + kWorldBits)) & (tether::kTeamSlots - 1);
    id->gen = (v >> (1 + kWorldBits + kSlotBits)) & ((uint64_t{1} << kGenBits) - 1);
    id->ref.serial = v >> (1 + kWorldBits + kSlotBits + kGenBits);
    return (v & 1u) && id->ref.serial != 0;
  }
};

// The World behind a team handle (*id decoded), or a reported TETHER_ERR_INVALID_ARG naming call and what. Whether
// the team itself is live is the Teams room's check.
tether_status_t teamWorld(tether_team_t t, const char* call, const char* what, World** out, TeamId* id) {
  *out = nullptr;
  if (!t) return report(tether::Status(TETHER_ERR_INVALID_ARG, tether::strprintf("%s: %s is TETHER_TEAM_INVALID",
                                                                                  call, what)));
  if (!TeamId::decode(t, id))
    return report(tether::Status(TETHER_ERR_INVALID_ARG, tether::strprintf(
        "%s: %s %p is not a team handle (not a value a tether_team_* call returned)", call, what,
        static_cast<void*>(t))));
  *out = liveWorlds().findLow(id->world, id->gen, TeamId::kGenBits);
  if (*out) return TETHER_SUCCESS;
  return report(tether::Status(TETHER_ERR_INVALID_ARG, tether::strprintf(
      "%s: %s %p belongs to an instance that was finalized (or is not a team handle)", call, what,
      static_cast<void*>(t))));
}

// Runs f(World&, TeamId) -> Status on a team handle, exceptions contained.
template <typename F>
tether_status_t guardedTeam(tether_team_t t, const char* call, F&& f) {
  World* x = nullptr;
  TeamId id;
  const tether_status_t live = teamWorld(t, call, "team", &x, &id);
  if (live != TETHER_SUCCESS) return live;
  return contained(call, [&] { return f(*x, id); });
}

// Queries: q(const Team&) on a live team; -1 otherwise (TETHER_TEAM_INVALID silently, like a NULL world).
template <typename Q>
int teamQuery(tether_team_t t, const char* call, Q q) {
  World* x = nullptr;
  TeamId id;
  std::shared_ptr<tether::Team> team;
  if (!t || teamWorld(t, call, "team", &x, &id) != TETHER_SUCCESS) return -1;
  const tether::Status s = x->teams().find(call, "team", id.ref, &team);
  return s.isOk() ? q(*team) : (report(s), -1);
}

// The predefined team of w at ref (world or shared).
template <typename R>
tether_team_t predefinedTeam(tether_t w, const char* call, R ref) {
  World* x = nullptr;
  if (liveWorld(w, call, &x) != TETHER_SUCCESS) return TETHER_TEAM_INVALID;
  TeamId id;
  LiveWorlds::decode(w, &id.world, &id.gen);
  id.ref = ref(x->teams());
  return id.encode();
}

// config's flags, and whether it is valid (NULL: all zero).
bool teamConfig(const tether_team_config_t* config, uint32_t* flags) {
  *flags = config ? config->flags : 0;
  return *flags == 0;
}

}  // namespace

extern "C" {

tether_team_t tether_team_world(tether_t w) {
  return predefinedTeam(w, "tether_team_world", [](tether::Teams& t) { return t.world(); });
}
tether_team_t tether_team_shared(tether_t w) {
  return predefinedTeam(w, "tether_team_shared", [](tether::Teams& t) { return t.shared(); });
}

tether_status_t tether_team_split_strided(tether_team_t parent, int start, int stride, int size,
                                          const tether_team_config_t* config, tether_team_t* new_team) {
  const char* call = "tether_team_split_strided";
  if (!new_team) return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": new_team is NULL"));
  *new_team = TETHER_TEAM_INVALID;
  return guardedTeam(parent, call, [&](World& x, TeamId id) {
    uint32_t flags = 0;
    const bool ok = teamConfig(config, &flags);
    TETHER_TRY(x.teams().splitStrided(call, id.ref, start, stride, size, flags, ok, &id.ref));
    if (id.ref.slot >= 0) *new_team = id.encode();
    return tether::Status::ok();
  });
}

tether_status_t tether_team_split_2d(tether_team_t parent, int xrange, const tether_team_config_t* xaxis_config,
                                     tether_team_t* xaxis_team, const tether_team_config_t* yaxis_config,
                                     tether_team_t* yaxis_team) {
  const char* call = "tether_team_split_2d";
  if (!xaxis_team || !yaxis_team)
    return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": xaxis_team or yaxis_team is NULL"));
  *xaxis_team = *yaxis_team = TETHER_TEAM_INVALID;
  return guardedTeam(parent, call, [&](World& x, TeamId id) {
    uint32_t xflags = 0, yflags = 0;
    const bool ok = teamConfig(xaxis_config, &xflags) & teamConfig(yaxis_config, &yflags);
    TeamId xid = id, yid = id;
    TETHER_TRY(x.teams().split2d(call, id.ref, xrange, xflags, yflags, ok, &xid.ref, &yid.ref));
    *xaxis_team = xid.encode();
    *yaxis_team = yid.encode();
    return tether::Status::ok();
  });
}

tether_status_t tether_team_destroy(tether_team_t team) {
  if (!team) return TETHER_SUCCESS;
  return guardedTeam(team, "tether_team_destroy", [](World& x, TeamId id) {
    return x.teams().destroy(
        "tether_team_destroy", id.ref, [&x](tether::Team& t) { return x.colls().settle("tether_team_destroy", t); },
        [&x](int slot) { return x.colls().resetDeviceWords(slot); });
  });
}

int tether_team_my_pe(tether_team_t t) {
  return teamQuery(t, "tether_team_my_pe", [](const tether::Team& x) { return x.me; });
}
int tether_team_n_pes(tether_team_t t) {
  return teamQuery(t, "tether_team_n_pes", [](const tether::Team& x) { return static_cast<int>(x.pes.size()); });
}
int tether_team_index(tether_team_t t) {
  return teamQuery(t, "tether_team_index", [](const tether::Team& x) { return x.slot; });
}
int tether_team_world_pe(tether_team_t t, int pe) {
  return teamQuery(t, "tether_team_world_pe", [pe](const tether::Team& x) {
    return pe >= 0 && static_cast<size_t>(pe) < x.pes.size() ? x.pes[static_cast<size_t>(pe)] : -1;
  });
}
int tether_team_translate_pe(tether_team_t src_team, int src_pe, tether_team_t dest_team) {
  const char* call = "tether_team_translate_pe";
  const int world = tether_team_world_pe(src_team, src_pe);
  if (world < 0) return -1;
  TeamId a, b;
  TeamId::decode(src_team, &a);
  if (dest_team && TeamId::decode(dest_team, &b) && (a.world != b.world || a.gen != b.gen)) {
    report(tether::Status(TETHER_ERR_INVALID_ARG,
                          std::string(call) + ": src_team and dest_team belong to different instances"));
    return -1;
  }
  return teamQuery(dest_team, call, [world](const tether::Team& x) {
    for (size_t i = 0; i < x.pes.size(); ++i)
      if (x.pes[i] == world) return static_cast<int>(i);
    return -1;
  });
}

tether_status_t tether_team_sync(tether_team_t team) {
  return guardedTeam(team, "tether_team_sync",
                     [](World& x, TeamId id) { return x.teams().sync("tether_team_sync", id.ref, false); });
}
tether_status_t tether_team_barrier(tether_team_t team) {
  return guardedTeam(team, "tether_team_barrier",
                     [](World& x, TeamId id) { return x.teams().sync("tether_team_barrier", id.ref, true); });
}

}  // extern "C"

namespace {

// The data collectives (core/collectives.h): the enum arguments are checked here, before they are used as enums.
// stream: the _on_stream forms (onStream true), which check on this PE only.
tether_status_t teamColl(tether_team_t team, const char* call, tether::CollKind kind, void* dest, const void* src,
                         size_t count, const tether_dtype_t& type, const tether_red_op_t* op, int root,
                         bool onStream = false, void* stream = nullptr, bool eager = false) {
  // A bad enum fails on every member (agreed like any bad argument), not only here: the others would wait.
  tether::CollArgs a;
  a.invalid = tether::enumArg(call, "type", type);
  if (a.invalid.isOk() && op) a.invalid = tether::enumArg(call, "op", *op);
  if (a.invalid.isOk()) {
    a.type = type;
    if (op) a.op = *op;
  }
  a.kind = kind;
  a.dest = dest;
  a.src = src;
  a.count = count;
  a.root = root;
  a.eager = eager;
  if (onStream) {
    if (!a.invalid.isOk()) return report(a.invalid);
    return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().enqueue(call, id.ref, a, false, stream); });
  }
  return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().run(call, id.ref, a); });
}

}  // namespace

extern "C" {

tether_status_t tether_team_device_view(tether_team_t team, const tether_device_handle_t* handle,
                                        tether_device_team_t* view) {
  const char* call = "tether_team_device_view";
  if (!handle || !view)
    return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": handle or view is NULL"));
  return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().deviceView(call, id.ref, *handle, view); });
}

tether_status_t tether_team_broadcast(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type, int root) {
  return teamColl(team, "tether_team_broadcast", tether::CollKind::Broadcast, dest, src, count, type, nullptr, root);
}
tether_status_t tether_team_broadcast_eager(tether_team_t team, void* dest, const void* src, size_t count,
                                            tether_dtype_t type, int root) {
  return teamColl(team, "tether_team_broadcast_eager", tether::CollKind::Broadcast, dest, src, count, type, nullptr,
                  root, false, nullptr, true);
}
tether_status_t tether_team_alltoall_eager(tether_team_t team, void* dest, const void* src, size_t count,
                                           tether_dtype_t type) {
  return teamColl(team, "tether_team_alltoall_eager", tether::CollKind::Alltoall, dest, src, count, type, nullptr, 0,
                  false, nullptr, true);
}
tether_status_t tether_team_reduce(tether_team_t team, void* dest, const void* src, size_t count, tether_dtype_t type,
                                   tether_red_op_t op, int root) {
  return teamColl(team, "tether_team_reduce", tether::CollKind::Reduce, dest, src, count, type, &op, root);
}
tether_status_t tether_team_allreduce(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type, tether_red_op_t op) {
  return teamColl(team, "tether_team_allreduce", tether::CollKind::Allreduce, dest, src, count, type, &op, 0);
}
tether_status_t tether_team_allgather(tether_team_t team, void* dest, const void* src, size_t count,
                                      tether_dtype_t type) {
  return teamColl(team, "tether_team_allgather", tether::CollKind::Allgather, dest, src, count, type, nullptr, 0);
}
tether_status_t tether_team_reduce_scatter(tether_team_t team, void* dest, const void* src, size_t count,
                                           tether_dtype_t type, tether_red_op_t op) {
  return teamColl(team, "tether_team_reduce_scatter", tether::CollKind::ReduceScatter, dest, src, count, type, &op,
                  0);
}
tether_status_t tether_team_alltoall(tether_team_t team, void* dest, const void* src, size_t count,
                                     tether_dtype_t type) {
  return teamColl(team, "tether_team_alltoall", tether::CollKind::Alltoall, dest, src, count, type, nullptr, 0);
}
tether_status_t tether_team_alltoallv(tether_team_t team, void* dest, const size_t* rcounts, const size_t* rdispls,
                                      const void* src, const size_t* scounts, const size_t* sdispls,
                                      tether_dtype_t type) {
  const char* call = "tether_team_alltoallv";
  tether::CollArgs a;
  a.invalid = tether::enumArg(call, "type", type);
  if (a.invalid.isOk()) a.type = type;
  a.kind = tether::CollKind::Alltoallv;
  a.dest = dest;
  a.src = src;
  a.rcounts = rcounts;
  a.rdispls = rdispls;
  a.scounts = scounts;
  a.sdispls = sdispls;
  return guardedTeam(team, call, [&](World& x, TeamId id) { return x.colls().run(call, id.ref, a); });
}

tether_status_t tether_team_sync_on_stream(tether_team_t team, void* stream) {
  const char* call = "tether_team_sync_on_stream";
  return guardedTeam(team, call, [&](World& x, TeamId id) {
    return x.colls().enqueue(call, id.ref, tether::CollArgs(), true, stream);
  });
}
tether_status_t tether_team_broadcast_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, int root, void* stream) {
  return teamColl(team, "tether_team_broadcast_on_stream", tether::CollKind::Broadcast, dest, src, count, type, nullptr,
                  root, true, stream);
}
tether_status_t tether_team_reduce_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                             tether_dtype_t type, tether_red_op_t op, int root, void* stream) {
  return teamColl(team, "tether_team_reduce_on_stream", tether::CollKind::Reduce, dest, src, count, type, &op, root,
                  true, stream);
}
tether_status_t tether_team_allreduce_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, tether_red_op_t op, void* stream) {
  return teamColl(team, "tether_team_allreduce_on_stream", tether::CollKind::Allreduce, dest, src, count, type, &op, 0,
                  true, stream);
}
tether_status_t tether_team_allgather_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                tether_dtype_t type, void* stream) {
  return teamColl(team, "tether_team_allgather_on_stream", tether::CollKind::Allgather, dest, src, count, type, nullptr,
                  0, true, stream);
}
tether_status_t tether_team_reduce_scatter_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                                     tether_dtype_t type, tether_red_op_t op, void* stream) {
  return teamColl(team, "tether_team_reduce_scatter_on_stream", tether::CollKind::ReduceScatter, dest, src, count, type,
                  &op, 0, true, stream);
}
tether_status_t tether_team_alltoall_on_stream(tether_team_t team, void* dest, const void* src, size_t count,
                                               tether_dtype_t type, void* stream) {
  return teamColl(team, "tether_team_alltoall_on_stream", tether::CollKind::Alltoall, dest, src, count, type, nullptr,
                  0, true, stream);
}

// ---- stream-ordered operations (#6): core/stream.cpp

namespace {

using tether::Op;

tether_status_t onStream(tether_t w, const char* call, const Op& op, void* stream) {
  return guarded(w, call, [&](World& x) { return tether::enqueueOnStream(x, call, &op, 1, stream); });
}

Op streamDesc(Op::Kind kind, int pe) {
  Op d;
  d.kind = kind;
  d.pe = pe;
  return d;
}

}  // namespace

tether_status_t tether_putmem_on_stream(tether_t w, void* dest, const void* src, size_t n, int pe, void* stream) {
  Op d = streamDesc(Op::Put, pe);
  d.dest = dest;
  d.src = src;
  d.nbytes = n;
  return onStream(w, "tether_putmem_on_stream", d, stream);
}
tether_status_t tether_getmem_on_stream(tether_t w, void* dest, const void* src, size_t n, int pe, void* stream) {
  Op d = streamDesc(Op::Get, pe);
  d.dest = dest;
  d.src = src;
  d.nbytes = n;
  return onStream(w, "tether_getmem_on_stream", d, stream);
}
tether_status_t tether_p_on_stream(tether_t w, void* dest, const void* value, size_t n, int pe, void* stream) {
  const char* call = "tether_p_on_stream";
  Op d = streamDesc(Op::P, pe);
  d.dest = dest;
  d.nbytes = n;
  if (!value) return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": value is NULL"));
  if (n <= sizeof d.value) std::memcpy(&d.value, value, n);  // captured now; other sizes fail in the checks
  return onStream(w, call, d, stream);
}
tether_status_t tether_putmem_signal_on_stream(tether_t w, void* dest, const void* src, size_t n, uint64_t* sig,
                                               uint64_t signal, tether_signal_op_t op, int pe, void* stream) {
  const tether_status_t bad = report(enumArg("tether_putmem_signal_on_stream", "sig_op", op));
  if (bad != TETHER_SUCCESS) return bad;
  Op d = streamDesc(Op::PutSignal, pe);
  d.dest = dest;
  d.src = src;
  d.nbytes = n;
  d.sig = sig;
  d.value = signal;
  d.sigOp = op;
  return onStream(w, "tether_putmem_signal_on_stream", d, stream);
}
tether_status_t tether_signal_op_on_stream(tether_t w, uint64_t* sig, uint64_t signal, tether_signal_op_t op, int pe,
                                           void* stream) {
  const tether_status_t bad = report(enumArg("tether_signal_op_on_stream", "sig_op", op));
  if (bad != TETHER_SUCCESS) return bad;
  Op d = streamDesc(Op::Signal, pe);
  d.sig = sig;
  d.value = signal;
  d.sigOp = op;
  return onStream(w, "tether_signal_op_on_stream", d, stream);
}
tether_status_t tether_signal_wait_until_on_stream(tether_t w, uint64_t* sig, tether_cmp_t cmp, uint64_t value,
                                                   void* stream) {
  const tether_status_t bad = report(enumArg("tether_signal_wait_until_on_stream", "cmp", cmp));
  if (bad != TETHER_SUCCESS) return bad;
  Op d = streamDesc(Op::Wait, 0);
  d.sig = sig;
  d.cmp = cmp;
  d.value = value;
  return onStream(w, "tether_signal_wait_until_on_stream", d, stream);
}
tether_status_t tether_wait_until_on_stream(tether_t w, void* ivar, tether_dtype_t type, tether_cmp_t cmp,
                                            const void* value, void* stream) {
  const char* call = "tether_wait_until_on_stream";
  const tether_status_t bad = report(waitArgs(call, type, cmp));
  if (bad != TETHER_SUCCESS) return bad;
  const tether::DtypeInfo& t = tether::dtypeInfo(type);
  if (t.cls == tether::DtypeClass::Invalid || t.cls == tether::DtypeClass::Float || t.size != 8)
    return report(tether::Status(TETHER_ERR_INVALID_ARG,
                                 tether::strprintf("%s: type %s: 64-bit integer types only", call, t.name)));
  if (!value) return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": value is NULL"));
  Op d = streamDesc(Op::Wait, 0);
  d.sig = static_cast<uint64_t*>(ivar);
  d.cmp = cmp;
  std::memcpy(&d.value, value, sizeof d.value);
  d.isSigned = t.cls == tether::DtypeClass::Signed;
  return onStream(w, call, d, stream);
}
tether_status_t tether_quiet_on_stream(tether_t w, void* stream) {
  return onStream(w, "tether_quiet_on_stream", streamDesc(Op::Quiet, 0), stream);
}
tether_status_t tether_fence_on_stream(tether_t w, void* stream) {
  return onStream(w, "tether_fence_on_stream", streamDesc(Op::Quiet, 0), stream);
}
tether_status_t tether_barrier_all_on_stream(tether_t w, void* stream) {
  Op d = streamDesc(Op::Barrier, 0);
  d.quietFirst = true;
  return onStream(w, "tether_barrier_all_on_stream", d, stream);
}
tether_status_t tether_sync_all_on_stream(tether_t w, void* stream) {
  return onStream(w, "tether_sync_all_on_stream", streamDesc(Op::Barrier, 0), stream);
}
tether_status_t tether_atomic_on_stream(tether_t w, tether_amo_t op, tether_dtype_t type, void* dest,
                                        const void* value, const void* cond, void* fetched, int pe, void* stream) {
  const char* call = "tether_atomic_on_stream";
  tether::Status args = enumArg(call, "op", op);
  if (args.isOk()) args = enumArg(call, "type", type);
  if (!args.isOk()) return report(args);
  const tether::DtypeInfo& t = tether::dtypeInfo(type);
  auto bad = [&](const std::string& why) {
    return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": " + why));
  };
  if (t.cls == tether::DtypeClass::Invalid || (t.size != 4 && t.size != 8))
    return bad(std::string("type ") + t.name + ": 4- and 8-byte types only");
  const bool extended = op == TETHER_AMO_FETCH || op == TETHER_AMO_SET || op == TETHER_AMO_SWAP;
  const bool bitwise = op >= TETHER_AMO_AND;
  if ((t.cls == tether::DtypeClass::Float && !extended) || (bitwise && !t.bitwise))
    return bad(std::string("type ") + t.name + " is not allowed for this operation");
  const bool needsValue = op != TETHER_AMO_FETCH && op != TETHER_AMO_INC && op != TETHER_AMO_FETCH_INC;
  if (needsValue && !value) return bad("value is NULL");
  if (op == TETHER_AMO_COMPARE_SWAP && !cond) return bad("cond is NULL");
  Op d = streamDesc(Op::Amo, pe);
  d.dest = dest;
  d.fetched = fetched;
  d.amo = op;
  d.nbytes = t.size;
  if (op == TETHER_AMO_INC || op == TETHER_AMO_FETCH_INC) {
    d.amo = op == TETHER_AMO_INC ? TETHER_AMO_ADD : TETHER_AMO_FETCH_ADD;
    d.value = 1;
  }
  if (needsValue) std::memcpy(&d.value, value, t.size);
  if (cond) std::memcpy(&d.cond, cond, t.size);
  return onStream(w, call, d, stream);
}
tether_status_t tether_atomic_add_on_stream(tether_t w, uint64_t* dest, uint64_t value, int pe, void* stream) {
  return tether_atomic_on_stream(w, TETHER_AMO_ADD, TETHER_UINT64, dest, &value, nullptr, nullptr, pe, stream);
}
tether_status_t tether_atomic_set_on_stream(tether_t w, uint64_t* dest, uint64_t value, int pe, void* stream) {
  return tether_atomic_on_stream(w, TETHER_AMO_SET, TETHER_UINT64, dest, &value, nullptr, nullptr, pe, stream);
}
tether_status_t tether_atomic_fetch_add_on_stream(tether_t w, uint64_t* dest, uint64_t value, uint64_t* fetched,
                                                  int pe, void* stream) {
  return tether_atomic_on_stream(w, TETHER_AMO_FETCH_ADD, TETHER_UINT64, dest, &value, nullptr, fetched, pe, stream);
}

tether_status_t tether_prepare(tether_t w, const tether_op_desc_t* ops, size_t n, tether_op_set_t* set) {
  if (set) *set = nullptr;
  return guarded(w, "tether_prepare", [&](World& x) -> tether::Status {
    if (!set) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_prepare: set is NULL");
    tether::OpSet* impl = nullptr;
    TETHER_TRY(tether::prepareOpSet(x, ops, n, &impl));
    std::unique_ptr<tether_op_set> s(new tether_op_set{w});
    s->impl.reset(impl);
    *set = s.release();
    return tether::Status::ok();
  });
}
tether_status_t tether_post_on_stream(tether_op_set_t set, void* stream, const tether_post_patch_t* patch) {
  if (!set) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_post_on_stream: set is NULL"));
  return guarded(set->world, "tether_post_on_stream",
                 [&](World&) { return tether::postOpSet(*set->impl, stream, patch); });
}
tether_status_t tether_op_set_free(tether_op_set_t set) {
  delete set;
  return TETHER_SUCCESS;
}

tether_status_t tether_doorbell_create(tether_op_set_t set, uint64_t* word, tether_doorbell_t* db) {
  if (db) *db = nullptr;
  if (!set) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_doorbell_create: set is NULL"));
  return guarded(set->world, "tether_doorbell_create", [&](World& x) -> tether::Status {
    const char* call = "tether_doorbell_create";
    if (!db) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: db is NULL", call);
    if (!word) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: word is NULL", call);
    if (reinterpret_cast<uintptr_t>(word) % 8)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: word %p is not 8-byte aligned", call, static_cast<void*>(word));
    tether::SymRef ref;
    TETHER_TRY(x.checkSymmetric(call, "word", word, sizeof *word, &ref));
    tether::StreamOps* so = nullptr;
    TETHER_TRY(x.streams().ops(&so).withContext(call));
    void* stream = nullptr;
    TETHER_TRY(so->createStream(&stream).withContext(call));
    *db = new tether_doorbell{set, word, stream};
    return tether::Status::ok();
  });
}

tether_status_t tether_doorbell_arm(tether_doorbell_t db, uint64_t value, const tether_post_patch_t* patch) {
  if (!db) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_doorbell_arm: db is NULL"));
  std::lock_guard<std::mutex> lock(db->mu);  // the wait and its set stay adjacent on the stream
  // The wait is a one-thread polling kernel, not a stream memop wait: on 2xH200 (CUDA 13 driver) a memop wait
  // pending on this stream, with the set's copy behind it, stalled the device's other work -- copies of other streams
  // and the very kernel meant to ring it -- whenever the ring was enqueued after the arm (tether_bench_stream's
  // doorbell rows; bench/results/h200x2/README.md). The kernel waits without TETHER_TIMEOUT, as the memop did.
  Op wait = streamDesc(Op::Wait, 0);
  wait.sig = db->word;
  wait.cmp = TETHER_CMP_GE;
  wait.value = value;
  wait.spinWait = true;
  wait.untimed = true;
  const tether_status_t st = onStream(db->set->world, "tether_doorbell_arm", wait, db->stream);
  if (st != TETHER_SUCCESS) return st;
  db->armed = true;  // from here sync must see this value rung, even if the post below fails
  db->last = value;
  return tether_post_on_stream(db->set, db->stream, patch);  // a failed post leaves a wait only: later sets wait on it
}

tether_status_t tether_doorbell_sync(tether_doorbell_t db) {
  if (!db) return report(tether::Status(TETHER_ERR_INVALID_ARG, "tether_doorbell_sync: db is NULL"));
  return guarded(db->set->world, "tether_doorbell_sync", [&](World& x) -> tether::Status {
    const char* call = "tether_doorbell_sync";
    std::lock_guard<std::mutex> lock(db->mu);
    if (db->armed) {  // arms are rung in order of value (cyclic GE): the last one decides
      uint64_t v = 0;
      if (tether_get(db->set->world, &v, db->word, sizeof v, x.myPe()) != TETHER_SUCCESS)
        TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: reading the doorbell word: %s", call, tether_last_error());
      if (static_cast<int64_t>(v - db->last) < 0)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG,
                    "%s: armed value %" PRIu64 " not rung yet (the word holds %" PRIu64 "): ring it first", call,
                    db->last, v);
    }
    tether::StreamOps* so = nullptr;
    TETHER_TRY(x.streams().ops(&so).withContext(call));
    return so->synchronize(db->stream).withContext(call);
  });
}

tether_status_t tether_doorbell_free(tether_doorbell_t db) {
  if (!db) return TETHER_SUCCESS;
  World* x = nullptr;
  const tether_status_t live = liveWorld(db->set->world, "tether_doorbell_free", &x);
  if (live != TETHER_SUCCESS) {  // its stream went with the instance
    delete db;
    return live;
  }
  const tether_status_t st = tether_doorbell_sync(db);
  if (st != TETHER_SUCCESS) return st;
  tether_status_t out = TETHER_SUCCESS;
  {
    tether::StreamOps* so = nullptr;
    tether::Status s = x->streams().ops(&so);
    if (s.isOk()) s = so->destroyStream(db->stream);
    out = report(s.withContext("tether_doorbell_free"));
  }
  delete db;
  return out;
}

// ---- two-sided messaging (tether/msg.h, core/messaging.h): withMsg above extern "C" ---------------------------

tether_status_t tether_msg_init(tether_t w, const tether_msg_attr_t* attr) {
  const char* call = "tether_msg_init";
  return guarded(w, call, [&](World& x) -> tether::Status {
    if (x.messaging())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: messaging is initialised already on PE %d", call, x.myPe());
    return tether::Messaging::create(x, call, attr, &x.messaging());
  });
}

tether_status_t tether_msg_finalize(tether_t w) {
  const char* call = "tether_msg_finalize";
  return guarded(w, call, [&](World& x) -> tether::Status {
    if (!x.messaging())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: messaging is not initialised on PE %d", call, x.myPe());
    tether::Status s = x.messaging()->destroy(call);
    x.messaging().reset();
    return s;
  });
}

tether_status_t tether_isend(tether_t w, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  return withMsg(w, "tether_isend", [&](tether::Messaging& m) { return m.isend("tether_isend", buf, bytes, pe, tag, req); });
}

tether_status_t tether_irecv(tether_t w, void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  return withMsg(w, "tether_irecv", [&](tether::Messaging& m) { return m.irecv("tether_irecv", buf, bytes, pe, tag, req); });
}

tether_status_t tether_send(tether_t w, const void* buf, size_t bytes, int pe, int tag) {
  return withMsg(w, "tether_send", [&](tether::Messaging& m) { return m.sendBlocking("tether_send", buf, bytes, pe, tag); });
}

tether_status_t tether_recv(tether_t w, void* buf, size_t bytes, int pe, int tag, tether_msg_status_t* status) {
  return withMsg(w, "tether_recv",
                 [&](tether::Messaging& m) { return m.recvBlocking("tether_recv", buf, bytes, pe, tag, status); });
}

tether_status_t tether_msg_wait(tether_t w, tether_request_t* req, tether_msg_status_t* status) {
  return withMsg(w, "tether_msg_wait", [&](tether::Messaging& m) { return m.wait("tether_msg_wait", req, status); });
}

tether_status_t tether_msg_test(tether_t w, tether_request_t* req, int* done, tether_msg_status_t* status) {
  return withMsg(w, "tether_msg_test", [&](tether::Messaging& m) -> tether::Status {
    if (!done) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_msg_test: done is NULL");
    bool d = false;
    tether::Status s = m.test("tether_msg_test", req, &d, status);
    *done = d ? 1 : 0;
    return s;
  });
}

tether_status_t tether_msg_waitall(tether_t w, size_t n, tether_request_t* reqs, tether_msg_status_t* statuses) {
  return withMsg(w, "tether_msg_waitall", [&](tether::Messaging& m) { return m.waitall("tether_msg_waitall", n, reqs, statuses); });
}

tether_status_t tether_msg_waitany(tether_t w, size_t n, tether_request_t* reqs, size_t* index,
                               tether_msg_status_t* status) {
  return withMsg(w, "tether_msg_waitany",
                 [&](tether::Messaging& m) { return m.waitany("tether_msg_waitany", n, reqs, index, status); });
}

tether_status_t tether_isend_on_stream(tether_t w, const void* buf, size_t bytes, int pe, int tag, void* stream,
                                       tether_request_t* req) {
  return withMsg(w, "tether_isend_on_stream", [&](tether::Messaging& m) {
    return m.isendOnStream("tether_isend_on_stream", buf, bytes, pe, tag, stream, req);
  });
}

tether_status_t tether_send_prepare_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe,
                                          int tag, tether_request_t* req) {
  return withMsg(w, "tether_send_prepare_typed", [&](tether::Messaging& m) {
    return m.prepareTyped("tether_send_prepare_typed", buf, count, type, pe, tag, req);
  });
}

tether_status_t tether_isend_typed_on_stream(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe,
                                             int tag, void* stream, tether_request_t* req) {
  return withMsg(w, "tether_isend_typed_on_stream", [&](tether::Messaging& m) {
    return m.isendTypedOnStream("tether_isend_typed_on_stream", buf, count, type, pe, tag, stream, req);
  });
}

tether_status_t tether_send_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe, int tag) {
  return withMsg(w, "tether_send_typed", [&](tether::Messaging& m) {
    return m.sendTypedBlocking("tether_send_typed", buf, count, type, pe, tag);
  });
}

tether_status_t tether_recv_typed(tether_t w, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                  tether_msg_status_t* status) {
  return withMsg(w, "tether_recv_typed", [&](tether::Messaging& m) {
    return m.recvTypedBlocking("tether_recv_typed", buf, count, type, pe, tag, status);
  });
}

tether_status_t tether_isend_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                   tether_request_t* req) {
  return withMsg(w, "tether_isend_typed", [&](tether::Messaging& m) {
    return m.isendTyped("tether_isend_typed", buf, count, type, pe, tag, req);
  });
}

tether_status_t tether_irecv_typed(tether_t w, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                   tether_request_t* req) {
  return withMsg(w, "tether_irecv_typed", [&](tether::Messaging& m) {
    return m.irecvTyped("tether_irecv_typed", buf, count, type, pe, tag, req);
  });
}

tether_status_t tether_send_prepare(tether_t w, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  return withMsg(w, "tether_send_prepare",
                 [&](tether::Messaging& m) { return m.prepare("tether_send_prepare", buf, bytes, pe, tag, req); });
}

tether_status_t tether_msg_post(tether_t w, tether_request_t req) {
  return withMsg(w, "tether_msg_post", [&](tether::Messaging& m) { return m.post("tether_msg_post", req); });
}

tether_status_t tether_msg_post_on_stream(tether_t w, tether_request_t req, void* stream) {
  return withMsg(w, "tether_msg_post_on_stream", [&](tether::Messaging& m) {
    return m.postOnStream("tether_msg_post_on_stream", 1, &req, stream);
  });
}

tether_status_t tether_msg_post_all_on_stream(tether_t w, size_t n, const tether_request_t* reqs, void* stream) {
  return withMsg(w, "tether_msg_post_all_on_stream", [&](tether::Messaging& m) {
    return m.postOnStream("tether_msg_post_all_on_stream", n, reqs, stream);
  });
}

tether_status_t tether_msg_send_desc(tether_t w, tether_request_t req, tether_msg_send_desc_t* desc) {
  return withMsg(w, "tether_msg_send_desc",
                 [&](tether::Messaging& m) { return m.sendDesc("tether_msg_send_desc", req, desc); });
}

tether_status_t tether_msg_wait_desc(tether_t w, tether_request_t req, tether_msg_wait_desc_t* desc) {
  return withMsg(w, "tether_msg_wait_desc",
                 [&](tether::Messaging& m) { return m.waitDesc("tether_msg_wait_desc", req, desc); });
}

tether_status_t tether_msg_wait_on_stream(tether_t w, tether_request_t req, void* stream) {
  return withMsg(w, "tether_msg_wait_on_stream",
                 [&](tether::Messaging& m) { return m.waitOnStream("tether_msg_wait_on_stream", req, stream); });
}

tether_status_t tether_msg_waitall_on_stream(tether_t w, size_t n, const tether_request_t* reqs, void* stream) {
  const char* call = "tether_msg_waitall_on_stream";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.waitallOnStream(call, n, reqs, stream); });
}

tether_status_t tether_send_init(tether_t w, const void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  const char* call = "tether_send_init";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.sendInit(call, buf, bytes, pe, tag, req); });
}

tether_status_t tether_recv_init(tether_t w, void* buf, size_t bytes, int pe, int tag, tether_request_t* req) {
  const char* call = "tether_recv_init";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.recvInit(call, buf, bytes, pe, tag, req); });
}

tether_status_t tether_send_init_typed(tether_t w, const void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                       tether_request_t* req) {
  const char* call = "tether_send_init_typed";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.sendInitTyped(call, buf, count, type, pe, tag, req); });
}

tether_status_t tether_recv_init_typed(tether_t w, void* buf, int64_t count, tether_type_t type, int pe, int tag,
                                       tether_request_t* req) {
  const char* call = "tether_recv_init_typed";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.recvInitTyped(call, buf, count, type, pe, tag, req); });
}

tether_status_t tether_msg_start(tether_t w, tether_request_t req) {
  const char* call = "tether_msg_start";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.start(call, 1, &req); });
}

tether_status_t tether_msg_startall(tether_t w, size_t n, const tether_request_t* reqs) {
  const char* call = "tether_msg_startall";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.start(call, n, reqs); });
}

tether_status_t tether_msg_startall_on_stream(tether_t w, size_t n, const tether_request_t* reqs, void* stream) {
  const char* call = "tether_msg_startall_on_stream";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.startOnStream(call, n, reqs, stream); });
}

tether_status_t tether_msg_request_free(tether_t w, tether_request_t* req) {
  const char* call = "tether_msg_request_free";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.requestFree(call, req); });
}

tether_status_t tether_msg_persist_desc(tether_t w, tether_request_t req, tether_msg_persist_desc_t* desc) {
  const char* call = "tether_msg_persist_desc";
  return withMsg(w, call, [&](tether::Messaging& m) { return m.persistDesc(call, req, desc); });
}

}  // extern "C"

namespace tether {

// Test hook (not exported from libtether.so: hidden visibility; tests link tether_static): installs another stream-op
// layer -- the CPU emulation -- on a World before its first stream operation.
Status useStreamOpsForTesting(tether_t w, std::unique_ptr<StreamOps> ops) {
  World* x = nullptr;
  if (liveWorld(w, "useStreamOpsForTesting", &x) != TETHER_SUCCESS)
    return Status(TETHER_ERR_INVALID_ARG, tether_last_error());
  x->streams().install(std::move(ops));
  return Status::ok();
}

}  // namespace tether
