// Host-initiated RMA, atomics and signals: argument checks (checkOp, core/op.h), then runOp (core/op.h: address
// translation and the target's transport, the same execution as the device API's proxy).
#include <cstring>

#include "base/log.h"
#include "core/dtype.h"
#include "core/op.h"
#include "core/world.h"

namespace tether {

Op rmaOp(Op::Kind kind, void* dest, const void* src, size_t n, int pe) {
  Op op;
  op.kind = kind;
  op.pe = pe;
  op.dest = dest;
  op.src = src;
  op.nbytes = n;
  return op;
}

Status World::put(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi, bool local) {
  SymRef ref;
  Op op = rmaOp(Op::Put, dest, src, n, pe);
  op.localCompletion = local;
  TETHER_TRY(checkOp(*this, call, op, &ref));
  return runOp(*this, op, ref, ref, nbi, nullptr);
}

Status World::get(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi) {
  SymRef ref;
  const Op op = rmaOp(Op::Get, dest, src, n, pe);
  TETHER_TRY(checkOp(*this, call, op, &ref));
  return runOp(*this, op, ref, ref, nbi, nullptr);
}

namespace {

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
  if (d.size <= 2 || d.collOnly || (d.cls == DtypeClass::Float && !extended) || (bitwise && !d.bitwise))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): type %s is not allowed for this operation", call, amoName(op),
                d.name);
  if (amoNeedsValue(op) && !value)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): value is NULL", call, amoName(op));
  if (op == TETHER_AMO_COMPARE_SWAP && !cond)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(compare_swap): cond is NULL", call);
  Op o = rmaOp(Op::Amo, dest, nullptr, d.size, pe);
  o.amo = op;
  o.fetched = fetched;
  SymRef ref;
  TETHER_TRY(checkOp(*this, call, o, &ref));
  if (value) std::memcpy(&o.value, value, d.size);
  if (cond) std::memcpy(&o.cond, cond, d.size);
  uint64_t old = 0;
  TETHER_TRY(runOp(*this, o, ref, ref, false, &old));
  if (fetched && amoFetches(op)) std::memcpy(fetched, &old, d.size);
  return Status::ok();
}

Status World::signalOp(uint64_t* sig, uint64_t value, tether_signal_op_t op, int pe) {
  const char* call = "tether_signal_op";
  Op o = rmaOp(Op::Signal, nullptr, nullptr, 0, pe);
  o.sig = sig;
  o.sigOp = op;
  o.value = value;
  SymRef ref;
  TETHER_TRY(checkOp(*this, call, o, nullptr, &ref));
  return runOp(*this, o, ref, ref, false, nullptr);
}

Status World::putSignal(const char* call, void* dest, const void* src, size_t n, uint64_t* sig, uint64_t value,
                        tether_signal_op_t op, int pe, bool nbi) {
  Op o = rmaOp(Op::PutSignal, dest, src, n, pe);
  o.sig = sig;
  o.sigOp = op;
  o.value = value;
  SymRef ref{SegKind::Host, 0}, sigRef;
  TETHER_TRY(checkOp(*this, call, o, &ref, &sigRef));
  return runOp(*this, o, ref, sigRef, nbi, nullptr);
}

Status World::quiet() {
  TETHER_TRY(paths_.quiet());
  // Device API operations posted to the proxy ring (by finished kernels or CPU threads) are this PE's too.
  if (Proxy* p = liveProxy_.load(std::memory_order_acquire)) TETHER_TRY(p->drain(timeout_));
  return Status::ok();
}

Status World::fence() { return paths_.fence(); }

}  // namespace tether
