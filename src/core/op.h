// One operation: the internal record that host calls, the stream compiler (core/stream.cpp) and the stream's proxy
// calls (core/stream/stream_proxy_call.h, host and GPU) share, and its one validator, checkOp.
//
// Encodings (each in one place):
//  - public tether_op_desc_t (prepared sets) -> Op: opFromDesc, called by tether_prepare (core/stream.cpp);
//  - the *_on_stream calls build an Op directly (core/api.cpp), host RMA calls build one to check it (core/rma.cpp);
//  - Op -> tether_proxy_desc_t (the device ABI, 64-byte ring slot): the device API of include/tether/device.cuh
//    writes it (GPU kernels and the host-compiled API); the stream runs an Op there through runProxyCall;
//  - tether_proxy_desc_t -> ProxyTarget: decodeProxyDesc (core/op.cpp), the proxy thread's one decoder
//    (core/proxy.cpp), followed by checkProxyDesc.
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

struct Op {
  enum Kind : uint32_t { Put, Get, P, PutSignal, Signal, Wait, Quiet, Barrier, Amo } kind = Quiet;
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
  uint32_t flags = 0;           // TETHER_OP_PATCH_* (prepared sets)
  bool isSigned = false;        // Wait: compare as int64
  bool spinWait = false;        // Wait: a one-thread kernel polls the word, with no time limit, instead of a stream
                                //   memop wait (tether_doorbell_arm: a memop wait pending ahead of the ringing kernel
                                //   stalled the whole device on 2xH200, bench/results/h200x2/README.md)
  bool quietFirst = false;      // Barrier: barrier_all (true) or sync_all
  // Stream proxy calls: Amo, Signal, PutSignal's signal go through the ring even where the PE is load/store
  // reachable (a host-memory RMW on a GPU without host-native atomics: the proxy's host path uses CPU atomics).
  bool viaRing = false;
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

// Prepared sets: ops[i] of tether_prepare -> Op (flags, kind and the enum fields its kind reads checked first:
// any int may come from C). The only conversion of tether_op_desc_t.
Status opFromDesc(const char* call, size_t i, const tether_op_desc_t& d, Op* out);

// A ring descriptor (tether_proxy_desc_t, written by include/tether/device.cuh) decoded: the only reader of its
// op word's fields on the host.
struct ProxyTarget {
  unsigned op = 0;        // TETHER_PROXY_OP_*
  unsigned segKind = 0;   // target segment kind
  unsigned sigKind = 0;   // PUT_SIGNAL: segment kind of the signal word
  tether_amo_t amo = TETHER_AMO_ADD;
  unsigned amoCode = 0;   // the AMO field as written (checked against TETHER_AMO_COUNT)
  tether_signal_op_t sigOp = TETHER_SIGNAL_SET;
  bool fetch = false;     // TETHER_PROXY_FETCH: the producer waits for result
  int pe = 0;
  uint64_t offset = 0;    // target offset in its segment
  uint64_t n = 0;         // bytes the target range covers (words: 4/8; signals: 8)
  uint64_t size = 0;      // the descriptor's size field
  uint64_t local = 0;     // local buffer address (the ring's address space)
  uint64_t value = 0, aux = 0;
};
ProxyTarget decodeProxyDesc(const tether_proxy_desc_t& d);
// Checks a decoded descriptor's fields that need no World (inline size, word width and alignment, AMO code, NULL
// local buffer, signal alignment); `what` names the caller in errors. The (PE, segment, offset) ranges are checked
// against the World by Proxy::target (core/proxy.cpp).
Status checkProxyDesc(const char* what, const ProxyTarget& t);

}  // namespace tether
