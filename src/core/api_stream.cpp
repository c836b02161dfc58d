// The C API of stream-ordered operations (#6; core/stream.h): puts, gets, signals, waits, quiet and barriers
// enqueued on a CUDA stream, prepared operation sets and doorbells, and the test hook that installs the CPU
// emulation of the stream-op layer.
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "base/enum_arg.h"
#include "core/api_support.h"
#include "core/dtype.h"
#include "core/stream.h"
#include "core/world.h"

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

using tether::World;
using namespace tether::capi;  // report, guarded, contained, liveWorld, ... (api_support.h)
using tether::enumArg;  // enum arguments are checked before use, and passed by reference (base/enum_arg.h)

extern "C" {

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
