// The operation record's validator and conversions (contracts in core/op.h).
#include "core/op.h"

#include "base/enum_arg.h"
#include "base/log.h"
#include "core/world.h"

namespace tether {

bool amoFetches(tether_amo_t op) {
  switch (op) {
    case TETHER_AMO_SET: case TETHER_AMO_INC: case TETHER_AMO_ADD: case TETHER_AMO_AND: case TETHER_AMO_OR:
    case TETHER_AMO_XOR: return false;
    default: return true;
  }
}

const char* amoName(tether_amo_t op) {
  static const char* const names[] = {"fetch", "set",     "swap",      "compare_swap", "inc",       "fetch_inc", "add",
                                      "fetch_add", "and", "fetch_and", "or",           "fetch_or", "xor",       "fetch_xor"};
  return static_cast<unsigned>(op) < TETHER_AMO_COUNT ? names[op] : "?";
}

namespace {

Status checkSigOp(const char* call, tether_signal_op_t op) {
  if (op != TETHER_SIGNAL_SET && op != TETHER_SIGNAL_ADD)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown signal operation %d", call, static_cast<int>(op));
  return Status::ok();
}

// A 64-bit signal word: symmetric and 8-byte aligned.
Status checkSig(const World& w, const char* call, uint64_t* sig, SymRef* ref) {
  TETHER_TRY(w.checkSymmetric(call, "sig_addr", sig, sizeof *sig, ref));
  if (ref->offset % sizeof(uint64_t))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: sig_addr %p is not 8-byte aligned", call, static_cast<void*>(sig));
  return Status::ok();
}

// Put's data part (PutSignal too): nothing for 0 bytes, else a local source and a symmetric destination.
Status checkPutData(const World& w, const char* call, const Op& op, SymRef* ref) {
  if (op.nbytes == 0) return Status::ok();
  if (!op.src)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: src is NULL (%llu bytes to PE %d)", call,
                static_cast<unsigned long long>(op.nbytes), op.pe);
  return w.checkSymmetric(call, "dest", op.dest, op.nbytes, ref);
}

Status checkAmo(const World& w, const char* call, const Op& op, SymRef* ref) {
  const tether_amo_t a = op.amo;
  if (static_cast<unsigned>(a) >= TETHER_AMO_COUNT)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown operation %d", call, static_cast<int>(a));
  TETHER_TRY(w.checkPe(call, op.pe));
  if (op.nbytes != 4 && op.nbytes != 8)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): %llu-byte word (4 or 8 bytes)", call, amoName(a),
                static_cast<unsigned long long>(op.nbytes));
  if (amoFetches(a) && !op.fetched) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): fetched is NULL", call, amoName(a));
  TETHER_TRY(w.checkSymmetric(call, "dest", op.dest, op.nbytes, ref));
  if (reinterpret_cast<uintptr_t>(op.dest) % op.nbytes)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s(%s): dest %p is not aligned to %llu bytes", call, amoName(a), op.dest,
                static_cast<unsigned long long>(op.nbytes));
  return Status::ok();
}

Status checkWait(const World& w, const char* call, const Op& op, SymRef* ref) {
  if (static_cast<unsigned>(op.cmp) > TETHER_CMP_LE)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown comparison %d", call, static_cast<int>(op.cmp));
  TETHER_TRY(w.checkSymmetric(call, "ivar", op.sig, sizeof(uint64_t), ref));
  if (ref->offset % sizeof(uint64_t))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %p is not 8-byte aligned", call, static_cast<void*>(op.sig));
  return Status::ok();
}

}  // namespace

Status checkOp(const World& w, const char* call, const Op& op, SymRef* target, SymRef* sig) {
  SymRef t{SegKind::Host, 0}, s{SegKind::Host, 0};
  if (!target) target = &t;
  if (!sig) sig = &s;
  switch (op.kind) {
    case Op::Put: TETHER_TRY(w.checkPe(call, op.pe)); return checkPutData(w, call, op, target);
    case Op::PutSignal:
      TETHER_TRY(w.checkPe(call, op.pe));
      TETHER_TRY(checkSig(w, call, op.sig, sig));
      TETHER_TRY(checkSigOp(call, op.sigOp));
      return checkPutData(w, call, op, target);
    case Op::Get:
      TETHER_TRY(w.checkPe(call, op.pe));
      if (op.nbytes == 0) return Status::ok();
      if (!op.dest)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: dest is NULL (%llu bytes from PE %d)", call,
                    static_cast<unsigned long long>(op.nbytes), op.pe);
      return w.checkSymmetric(call, "src", op.src, op.nbytes, target);
    case Op::P: {
      TETHER_TRY(w.checkPe(call, op.pe));
      const uint64_t n = op.nbytes;
      if (n != 1 && n != 2 && n != 4 && n != 8)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %llu bytes (1, 2, 4 or 8)", call, static_cast<unsigned long long>(n));
      TETHER_TRY(w.checkSymmetric(call, "dest", op.dest, n, target));
      if (reinterpret_cast<uintptr_t>(op.dest) % n)
        TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: dest %p is not aligned to %llu bytes", call, op.dest,
                    static_cast<unsigned long long>(n));
      return Status::ok();
    }
    case Op::Signal:
      TETHER_TRY(w.checkPe(call, op.pe));
      TETHER_TRY(checkSigOp(call, op.sigOp));
      return checkSig(w, call, op.sig, sig);
    case Op::Wait: return checkWait(w, call, op, target);
    case Op::Amo: return checkAmo(w, call, op, target);
    case Op::Quiet:
    case Op::Barrier: return Status::ok();
    case Op::PutRuns:
    case Op::GetRuns: break;  // internal stream proxy calls, not user operations
  }
  TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown operation kind %d", call, static_cast<int>(op.kind));
}

namespace {

// ok when the enum field `field` of the caller's ops[i] holds an enumerator; else INVALID_ARG naming ops[i].field.
template <typename E>
Status opField(const char* call, size_t i, const char* field, const E& value) {
  if (enumValid(value)) return Status::ok();
  return enumArg(call, strprintf("ops[%zu].%s", i, field).c_str(), value);
}

}  // namespace

Status opFromDesc(const char* call, size_t i, const tether_op_desc_t& o, Op* out) {
  Op d;
  if (o.flags & ~unsigned{TETHER_OP_PATCH_OFFSET | TETHER_OP_PATCH_SIGNAL})
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: op %zu: unknown flags 0x%x", call, i, o.flags);
  d.flags = o.flags;
  d.pe = o.pe;
  d.dest = o.dest;
  d.src = o.src;
  d.nbytes = o.nbytes;
  d.sig = o.sig_addr;
  d.value = o.signal;
  // The enum fields are the caller's (any int from C): each is checked before it is read as the enum, and only the
  // fields its kind uses are read (base/enum_arg.h).
  TETHER_TRY(opField(call, i, "kind", o.kind));
  const tether_op_kind_t kind = o.kind;
  if (kind == TETHER_OP_PUT_SIGNAL || kind == TETHER_OP_SIGNAL) {
    TETHER_TRY(opField(call, i, "sig_op", o.sig_op));
    d.sigOp = o.sig_op;
  }
  if (kind == TETHER_OP_SIGNAL_WAIT) {
    TETHER_TRY(opField(call, i, "cmp", o.cmp));
    d.cmp = o.cmp;
  }
  switch (kind) {
    case TETHER_OP_PUT: d.kind = Op::Put; break;
    case TETHER_OP_GET: d.kind = Op::Get; break;
    case TETHER_OP_PUT_SIGNAL: d.kind = Op::PutSignal; break;
    case TETHER_OP_SIGNAL: d.kind = Op::Signal; break;
    case TETHER_OP_SIGNAL_WAIT: d.kind = Op::Wait; break;
    case TETHER_OP_QUIET: d.kind = Op::Quiet; break;
    case TETHER_OP_BARRIER_ALL: d.kind = Op::Barrier; d.quietFirst = true; break;
    case TETHER_OP_SYNC_ALL: d.kind = Op::Barrier; break;
    default: TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: op %zu: unknown kind %d", call, i, static_cast<int>(kind));
  }
  *out = d;
  return Status::ok();
}

namespace {
unsigned field(uint32_t op, int shift, uint32_t mask) { return (op >> shift) & mask; }
}  // namespace

void decodeProxyDesc(const tether_proxy_desc_t& d, uint64_t* result, ProxyOp* out) {
  ProxyOp& t = *out;
  Op& o = t.op;
  o = Op();
  t.code = field(d.op, 0, 0xff);
  t.segKind = field(d.op, 8, 0xf);
  t.sigKind = field(d.op, 12, 0xf);
  o.sigOp = field(d.op, 16, 1) ? TETHER_SIGNAL_ADD : TETHER_SIGNAL_SET;
  t.amoCode = field(d.op, 20, 0xff);
  if (t.amoCode < TETHER_AMO_COUNT) o.amo = static_cast<tether_amo_t>(t.amoCode);
  t.fetch = (d.op & TETHER_PROXY_FETCH) != 0;
  o.pe = d.pe;
  o.nbytes = d.size;
  o.value = d.value;
  t.offset = d.offset;
  t.sigOffset = 0;
  void* local = reinterpret_cast<void*>(static_cast<uintptr_t>(d.local));
  switch (t.code) {
    case TETHER_PROXY_OP_PUT: o.kind = Op::Put; o.src = local; break;
    case TETHER_PROXY_OP_PUT_INLINE: o.kind = Op::P; break;
    case TETHER_PROXY_OP_GET: o.kind = Op::Get; o.dest = local; break;
    case TETHER_PROXY_OP_GET_INLINE: o.kind = Op::Get; o.dest = result; break;
    case TETHER_PROXY_OP_AMO:
      o.kind = Op::Amo;
      o.cond = d.aux;
      if (t.fetch) o.fetched = result;
      break;
    case TETHER_PROXY_OP_SIGNAL: o.kind = Op::Signal; break;
    case TETHER_PROXY_OP_PUT_SIGNAL: o.kind = Op::PutSignal; o.src = local; t.sigOffset = d.aux; break;
    default: o.kind = Op::Quiet; break;  // unknown: checkProxyDesc names it
  }
  t.n = t.code == TETHER_PROXY_OP_SIGNAL ? 8 : d.size;
}

Status checkProxyDesc(const char* what, const ProxyOp& t) {
  const bool inlineOp = t.code == TETHER_PROXY_OP_PUT_INLINE || t.code == TETHER_PROXY_OP_GET_INLINE;
  if (inlineOp && t.op.nbytes > sizeof t.op.value)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: inline operation of %llu bytes (at most 8)", what,
                static_cast<unsigned long long>(t.op.nbytes));
  const bool word = t.code == TETHER_PROXY_OP_AMO || t.code == TETHER_PROXY_OP_SIGNAL;
  if (word && ((t.n != 4 && t.n != 8) || t.offset % t.n))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %llu-byte word at offset 0x%llx (4- or 8-byte aligned words only)",
                what, static_cast<unsigned long long>(t.n), static_cast<unsigned long long>(t.offset));
  return Status::ok();
}

namespace {

Status transportOp(World& w, const Op& op, const SymRef& target, const SymRef& sig, bool nbi, uint64_t* old,
                   PathCtx* paths) {
  const int pe = op.pe;
  switch (op.kind) {
    case Op::Put:
    case Op::Get:
    case Op::P: {
      if (op.nbytes == 0 && op.kind != Op::P) return Status::ok();
      const SegPath& p = w.path(pe, target.kind);
      void* ctx = paths ? paths->ctx(p) : p.ctx;
      if (op.kind == Op::Get) return p.ops->get(ctx, pe, op.dest, w.remote(pe, target), op.nbytes, nbi);
      if (op.kind == Op::Put && op.localCompletion && !nbi && p.ops->putLocal)
        return p.ops->putLocal(ctx, pe, w.remote(pe, target), op.src, op.nbytes);
      return p.ops->put(ctx, pe, w.remote(pe, target), op.kind == Op::P ? &op.value : op.src, op.nbytes, nbi);
    }
    case Op::Amo: {
      const SegPath& p = w.path(pe, target.kind);
      const AmoArgs a{op.amo, static_cast<unsigned>(op.nbytes), op.value, op.cond};
      return p.ops->amo(paths ? paths->ctx(p) : p.ctx, pe, w.remote(pe, target), a, old);
    }
    case Op::Signal:
    case Op::PutSignal: {
      const SegPath& sp = w.path(pe, sig.kind);
      void* sctx = paths ? paths->ctx(sp) : sp.ctx;
      if (op.kind == Op::PutSignal && op.nbytes) {
        const SegPath& p = w.path(pe, target.kind);
        void* ctx = paths ? paths->ctx(p) : p.ctx;
        // Blocking, one context whose signal completes its puts: the put is posted and the signal's wait covers
        // both (a small put into GPU memory through the host service: one round trip instead of two).
        const bool post = !nbi && ctx == sctx && p.ops == sp.ops && (p.ops->caps & kCapSignalCompletesPuts);
        TETHER_TRY(p.ops->put(ctx, pe, w.remote(pe, target), op.src, op.nbytes, nbi || post));
        if (ctx != sctx) TETHER_TRY(p.ops->quiet(ctx));
      }
      return sp.ops->signal(sctx, pe, w.remote(pe, sig), op.value, op.sigOp);
    }
    default: break;
  }
  TETHER_FAIL(TETHER_ERR_INTERNAL, "runOp: operation kind %d is not a transport operation", static_cast<int>(op.kind));
}

}  // namespace

Status runOp(World& w, const Op& op, const SymRef& target, const SymRef& sig, bool nbi, uint64_t* old,
             PathCtx* paths) {
  const Status s = transportOp(w, op, target, sig, nbi, old, paths);
  if (op.kind != Op::Get) w.wakeups().wake(op.pe);
  return s;
}

Status signalWord(const World& w, int pe, const SymRef& word, uint64_t value, tether_signal_op_t op, bool post,
                  PathCtx* paths) {
  const SegPath& p = w.path(pe, word.kind);
  void* ctx = paths ? paths->ctx(p) : p.ctx;
  const Status s = (post && p.ops->signalPost ? p.ops->signalPost : p.ops->signal)(ctx, pe, w.remote(pe, word), value,
                                                                                  op);
  w.wakeups().wake(pe);
  return s;
}

}  // namespace tether
