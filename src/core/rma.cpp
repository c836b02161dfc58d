// Host-initiated RMA, atomics and signals: argument checks, address translation, then the target's transport.
#include <cstring>

#include "base/log.h"
#include "core/dtype.h"
#include "core/world.h"

namespace tether {

Status World::put(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi) {
  TETHER_TRY(checkPe(call, pe));
  if (n == 0) return Status::ok();
  if (!src) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: src is NULL (%zu bytes to PE %d)", call, n, pe);
  SymRef ref;
  TETHER_TRY(checkSymmetric(call, "dest", dest, n, &ref));
  const SegPath& p = path(pe, ref.kind);
  return p.ops->put(p.ctx, pe, remote(pe, ref), src, n, nbi);
}

Status World::get(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi) {
  TETHER_TRY(checkPe(call, pe));
  if (n == 0) return Status::ok();
  if (!dest) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: dest is NULL (%zu bytes from PE %d)", call, n, pe);
  SymRef ref;
  TETHER_TRY(checkSymmetric(call, "src", src, n, &ref));
  const SegPath& p = path(pe, ref.kind);
  return p.ops->get(p.ctx, pe, dest, remote(pe, ref), n, nbi);
}

namespace {

const char* amoName(tether_amo_t op) {
  static const char* const names[] = {"fetch", "set",     "swap",      "compare_swap", "inc",       "fetch_inc", "add",
                                      "fetch_add", "and", "fetch_and", "or",           "fetch_or", "xor",       "fetch_xor"};
  return static_cast<unsigned>(op) < TETHER_AMO_COUNT ? names[op] : "?";
}

bool amoFetches(tether_amo_t op) {
  switch (op) {
    case TETHER_AMO_SET: case TETHER_AMO_INC: case TETHER_AMO_ADD: case TETHER_AMO_AND: case TETHER_AMO_OR:
    case TETHER_AMO_XOR: return false;
    default: return true;
  }
}

bool amoNeedsValue(tether_amo_t op) {
  return op != TETHER_AMO_FETCH && op != TETHER_AMO_INC && op != TETHER_AMO_FETCH_INC;
}

}  // namespace

Status World::atomic(tether_amo_t op, tether_dtype_t type, void* dest, const void* value, const void* cond,
                     void* fetched, int pe) {
  const char* call = "tether_atomic";
  if (static_cast<unsigned>(op) >= TETHER_AMO_COUNT)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown operation %d", call, static_cast<int>(op));
  const DtypeInfo& d = dtypeInfo(type);
  if (d.cls == DtypeClass::Invalid)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): unknown type %d", call, amoName(op), static_cast<int>(type));
  const bool extended = op == TETHER_AMO_FETCH || op == TETHER_AMO_SET || op == TETHER_AMO_SWAP;
  const bool bitwise = op >= TETHER_AMO_AND;
  if (d.size == 2 || (d.cls == DtypeClass::Float && !extended) || (bitwise && !d.bitwise))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): type %s is not allowed for this operation", call, amoName(op),
                d.name);
  TETHER_TRY(checkPe(call, pe));
  if (amoNeedsValue(op) && !value)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): value is NULL", call, amoName(op));
  if (op == TETHER_AMO_COMPARE_SWAP && !cond)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(compare_swap): cond is NULL", call);
  if (amoFetches(op) && !fetched)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): fetched is NULL", call, amoName(op));
  SymRef ref;
  TETHER_TRY(checkSymmetric(call, "dest", dest, d.size, &ref));
  if (reinterpret_cast<uintptr_t>(dest) % d.size != 0)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): dest %p is not aligned to %zu bytes", call, amoName(op), dest,
                d.size);
  AmoArgs a{op, static_cast<unsigned>(d.size), 0, 0};
  if (value) std::memcpy(&a.value, value, d.size);
  if (cond) std::memcpy(&a.cond, cond, d.size);
  uint64_t old = 0;
  const SegPath& p = path(pe, ref.kind);
  TETHER_TRY(p.ops->amo(p.ctx, pe, remote(pe, ref), a, &old));
  if (fetched && amoFetches(op)) std::memcpy(fetched, &old, d.size);
  return Status::ok();
}

Status World::signalOp(uint64_t* sig, uint64_t value, tether_signal_op_t op, int pe) {
  const char* call = "tether_signal_op";
  TETHER_TRY(checkPe(call, pe));
  if (op != TETHER_SIGNAL_SET && op != TETHER_SIGNAL_ADD)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown signal operation %d", call, static_cast<int>(op));
  SymRef ref;
  TETHER_TRY(checkSymmetric(call, "sig_addr", sig, sizeof *sig, &ref));
  if (ref.offset % sizeof(uint64_t))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: sig_addr %p is not 8-byte aligned", call, static_cast<void*>(sig));
  const SegPath& p = path(pe, ref.kind);
  return p.ops->signal(p.ctx, pe, remote(pe, ref), value, op);
}

Status World::putSignal(const char* call, void* dest, const void* src, size_t n, uint64_t* sig, uint64_t value,
                        tether_signal_op_t op, int pe, bool nbi) {
  TETHER_TRY(checkPe(call, pe));
  SymRef sigRef;
  TETHER_TRY(checkSymmetric(call, "sig_addr", sig, sizeof *sig, &sigRef));
  if (sigRef.offset % sizeof(uint64_t))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: sig_addr %p is not 8-byte aligned", call, static_cast<void*>(sig));
  if (op != TETHER_SIGNAL_SET && op != TETHER_SIGNAL_ADD)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown signal operation %d", call, static_cast<int>(op));
  TETHER_TRY(put(call, dest, src, n, pe, nbi));
  const SegPath& p = path(pe, sigRef.kind);
  return p.ops->signal(p.ctx, pe, remote(pe, sigRef), value, op);
}

Status World::quiet() {
  TETHER_TRY(paths_.quiet());
  // Device API operations posted to the proxy ring (by finished kernels or CPU threads) are this PE's too.
  if (Proxy* p = liveProxy_.load(std::memory_order_acquire)) TETHER_TRY(p->drain(timeout_));
  return Status::ok();
}

Status World::fence() { return paths_.fence(); }

}  // namespace tether
