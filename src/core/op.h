// One operation: the internal record that host calls, the stream compiler (core/stream.cpp) and the stream's proxy
// calls (core/stream/stream_proxy_call.h, host and GPU) share, and its one validator, checkOp.
//
// Encodings (each in one place):
//  - public tether_op_desc_t (prepared sets) -> Op: opFromDesc, called by tether_prepare (core/stream.cpp);
//  - the *_on_stream calls build an Op directly (core/api.cpp), host RMA calls build one to check it (core/rma.cpp);
//  - Op -> tether_proxy_desc_t (the device ABI, 64-byte ring slot): the device API of include/tether/device.cuh
//    writes it (GPU kernels and the host-compiled API); the stream runs an Op there through runProxyCall;
//  - tether_proxy_desc_t -> Op (ProxyOp: the Op plus the ring's segment/offset addressing): decodeProxyDesc
//    (core/op.cpp), the proxy thread's one decoder (core/proxy.cpp), followed by checkProxyDesc.
// Execution (each in one place): runOp issues a checked operation through the target's paths, for host calls and
// the proxy alike.
// Op is trivially copyable and holds no C++-only types: the stream's proxy kernel takes it by value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/status.h"
#include "tether/tether.h"

namespace tether {

class World;
struct SymRef;
struct SegPath;

struct Op {
  // PutRuns/GetRuns: stream proxy calls only (core/rma_typed.cpp, a staged typed transfer on a stream): nbytes runs
  // of the table `runs`, each as an nbi put (get), then one quiet; never a user operation (checkOp refuses them).
  enum Kind : uint32_t { Put, Get, P, PutSignal, Signal, Wait, Quiet, Barrier, Amo, PutRuns, GetRuns } kind = Quiet;
  int32_t pe = 0;
  void* dest = nullptr;         // Put/PutSignal/P/Amo: symmetric target; Get: local buffer
  const void* src = nullptr;    // Put/PutSignal: local buffer; Get: symmetric source
  uint64_t nbytes = 0;          // Put/Get/PutSignal: bytes; P: width 1/2/4/8; Amo: width 4/8
  uint64_t* sig = nullptr;      // PutSignal/Signal: symmetric signal word; Wait: this PE's 64-bit word
  uint64_t value = 0;           // signal value, value waited for, P's bytes, AMO operand
  uint64_t cond = 0;            // Amo: compare value
  tether_signal_op_t sigOp = TETHER_SIGNAL_SET;
  tether_cmp_t cmp = TETHER_CMP_EQ;
  tether_amo_t amo = TETHER_AMO_ADD;
  void* fetched = nullptr;      // Amo: old value (GPU or pinned memory for the stream), or null
  // PutRuns/GetRuns: nbytes pairs {displacement, bytes}: run i moves `bytes` between the stage (src of a put, dest of
  // a get; runs packed back to back from it) and the symmetric dest (put) / src (get) + displacement. Readable where
  // the call runs (GPU memory for a GPU stream) until it has run.
  const int64_t* runs = nullptr;
  uint32_t flags = 0;           // TETHER_OP_PATCH_* (prepared sets)
  bool isSigned = false;        // Wait: compare as int64
  bool spinWait = false;        // Wait: a one-thread kernel polls the word instead of a stream memop wait
                                //   (tether_doorbell_arm: a memop wait pending ahead of the ringing kernel stalled
                                //   the whole device on 2xH200, bench/results/h200x2/README.md; messaging's stream
                                //   waits: a pending memop wait held back the copies the word waits for). Bounded by
                                //   TETHER_TIMEOUT like every kernel wait (StreamOps::waitCmp), unless untimed.
  bool untimed = false;         // Wait with spinWait: no time limit (tether_doorbell_arm: an armed doorbell waits for
                                //   its ring as long as the program takes, as the memop wait it replaced did)
  bool quietFirst = false;      // Barrier: barrier_all (true) or sync_all
  // Stream proxy calls: Amo, Signal, PutSignal's signal go through the ring even where the PE is load/store
  // reachable (a host-memory RMW on a GPU without host-native atomics: the proxy's host path uses CPU atomics).
  bool viaRing = false;
  // Put (host calls): return at local completion, src reusable (tether_put_local; transports without putLocal
  // complete it remotely).
  bool localCompletion = false;
};

static_assert(std::is_trivially_copyable<Op>::value, "Op is a CUDA kernel parameter (core/stream/cuda)");

// true when the AMO returns the old value (fetched must then not be NULL).
bool amoFetches(tether_amo_t op);
// "add", "fetch_add", ...; "?" out of range.
const char* amoName(tether_amo_t op);

// The one validator of an operation's arguments, before anything touches memory: PE range, symmetric ranges
// (World::checkSymmetric: inside the heap, no overflow), sizes, alignment, enum ranges, NULL buffers. Errors name
// `call` and the values (TETHER_ERR_INVALID_ARG / TETHER_ERR_NOT_SYMMETRIC). On success *target (Put/PutSignal/P/Amo:
// dest; Get: src; Wait: sig) and *sig (PutSignal/Signal) hold the symmetric words found, where not null. Put/Get of
// 0 bytes check the PE (and PutSignal's signal) only; Quiet/Barrier have no arguments.
Status checkOp(const World& w, const char* call, const Op& op, SymRef* target, SymRef* sig = nullptr);
// An Op of kind Put/Get/PutSignal moving n bytes between dest and src on pe (the rest default); core/rma.cpp.
Op rmaOp(Op::Kind kind, void* dest, const void* src, size_t n, int pe);

// Prepared sets: ops[i] of tether_prepare -> Op (flags, kind and the enum fields its kind reads checked first:
// any int may come from C). The only conversion of tether_op_desc_t.
Status opFromDesc(const char* call, size_t i, const tether_op_desc_t& d, Op* out);

// A ring descriptor (tether_proxy_desc_t, written by include/tether/device.cuh) decoded into the operation record
// (decodeProxyDesc, the only reader of its op word's fields on the host), plus what Op has no field for: the ring
// addresses the target by (segment kind, offset), not by this PE's address, and names the ring's own op code.
//   PUT -> Put (src: the local buffer, in the ring's address space), PUT_INLINE -> P (value, nbytes = size),
//   GET -> Get (dest: the local buffer), GET_INLINE -> Get (dest: result), AMO -> Amo (nbytes = size, value, cond =
//   aux, fetched = result when TETHER_PROXY_FETCH), SIGNAL -> Signal (value, sigOp), PUT_SIGNAL -> PutSignal.
struct ProxyOp {
  Op op;
  unsigned code = 0;      // TETHER_PROXY_OP_* as written (unknown codes fail in checkProxyDesc)
  unsigned segKind = 0;   // target segment kind as written (checked against the World by the proxy)
  unsigned sigKind = 0;   // PUT_SIGNAL: segment kind of the signal word
  unsigned amoCode = 0;   // the AMO field as written (checked against TETHER_AMO_COUNT)
  bool fetch = false;     // TETHER_PROXY_FETCH: the producer waits for result
  uint64_t offset = 0;    // target offset in its segment
  uint64_t sigOffset = 0; // PUT_SIGNAL: the signal word's offset (the descriptor's aux)
  uint64_t n = 0;         // bytes the target range covers (AMO: its width; SIGNAL: 8)
};
// result: where GET_INLINE lands and a fetching AMO's old value goes (the proxy's per-descriptor word).
void decodeProxyDesc(const tether_proxy_desc_t& d, uint64_t* result, ProxyOp* out);
// Checks a decoded descriptor's fields that need no World (op code, inline size, word width and alignment, AMO code,
// NULL local buffer, signal alignment); `what` names the caller in errors. The (PE, segment, offset) ranges are
// checked against the World by Proxy::target (core/proxy.cpp).
Status checkProxyDesc(const char* what, const ProxyOp& t);

// Stands in another transport context for a path's own (the device API's proxy runs GPU work on its sibling
// GPU context, core/proxy.h).
class PathCtx {
 public:
  virtual void* ctx(const SegPath& path) = 0;

 protected:
  ~PathCtx() = default;
};

// The one execution of a checked Put/Get/P/PutSignal/Signal/Amo through the target PE's paths, behind host RMA
// (core/rma.cpp, after checkOp) and the device API's proxy (core/proxy.cpp, after its descriptor checks).
// target/sig: the symmetric words (checkOp's *target / *sig, or the descriptor's segment and offset). Put/Get/
// PutSignal of 0 bytes move nothing. P puts op.value's first nbytes. Amo: AmoArgs{amo, nbytes, value, cond}; *old
// gets the old value as the transport returns it (op.fetched is the caller's business). PutSignal: the data, then,
// when the signal word's path has another transport context, a quiet of the data's context (a transport orders a
// signal only after its own puts), then the signal. paths: null = each path's own context. Every operation but Get
// then wakes the target (core/wakeups.h: a thread of it may sleep waiting for the word).
Status runOp(World& w, const Op& op, const SymRef& target, const SymRef& sig, bool nbi, uint64_t* old,
             PathCtx* paths = nullptr);

// The one signal of a word that a PE waits on from the host -- the barrier's and team syncs' rounds, the collective
// rounds, a failure passed on (core/sync_failure.h), messaging's acks and slot words to other hosts: the signal
// through the path to pe's segment of `word` (posted where post is set and the transport can: signalPost, no reply to
// wait for; the waiter waits for the word, not this call), then the wake of pe (core/wakeups.h), whatever the
// signal's status, since a failed signal may have half-applied. paths: as for runOp. Callers add their own context
// to the status.
Status signalWord(const World& w, int pe, const SymRef& word, uint64_t value, tether_signal_op_t op, bool post,
                  PathCtx* paths = nullptr);

}  // namespace tether
