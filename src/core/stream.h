// Stream-ordered operations (#6): the operation descriptors the C API's *_on_stream calls and prepared sets are made
// of, and the entry points api.cpp calls. core/stream.cpp compiles descriptors into a plan of stream-op layer calls
// (core/stream_ops.h) once -- checks, address translation, path choice (direct or proxy), memop arrays -- and runs a
// plan on a stream any number of times, patching per-post values. A single *_on_stream call is a one-op plan run once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "tether/tether.h"
#include "transport/transport.h"

namespace tether {

class World;

struct StreamOpDesc {
  enum Kind { Put, Get, P, PutSignal, Signal, Wait, Quiet, Barrier, Amo } kind = Quiet;
  int pe = 0;
  void* dest = nullptr;         // Put/PutSignal/P/Amo: symmetric target; Get: local buffer
  const void* src = nullptr;    // Put/PutSignal: local buffer; Get: symmetric source
  size_t nbytes = 0;            // bytes (P: 1/2/4/8)
  uint64_t* sig = nullptr;      // PutSignal/Signal: symmetric signal word; Wait: this PE's 64-bit word
  uint64_t value = 0;           // signal value, value waited for, P's bytes
  tether_signal_op_t sigOp = TETHER_SIGNAL_SET;
  tether_cmp_t cmp = TETHER_CMP_EQ;
  bool isSigned = false;        // Wait: compare as int64
  bool spinWait = false;        // Wait: a one-thread kernel polls the word, with no time limit, instead of a stream
                                //   memop wait (tether_doorbell_arm: a memop wait pending ahead of the ringing kernel
                                //   stalled the whole device on 2xH200, bench/results/h200x2/README.md)
  bool quietFirst = false;      // Barrier: barrier_all (true) or sync_all
  AmoArgs amo{TETHER_AMO_ADD, 8, 0, 0};
  void* fetched = nullptr;      // Amo: old value (GPU or pinned memory), or null
  unsigned flags = 0;           // TETHER_OP_PATCH_* (prepared sets)
};

class OpSet;

// Checks, compiles and enqueues ops[0..n) on stream, in order.
Status enqueueOnStream(World& w, const char* call, const StreamOpDesc* ops, size_t n, void* stream);
// Prepared sets: tether_prepare / tether_post_on_stream / tether_op_set_free.
// *out: a new set, owned by the caller (destroyOpSet).
Status prepareOpSet(World& w, const tether_op_desc_t* ops, size_t n, OpSet** out);
Status postOpSet(OpSet& set, void* stream, const tether_post_patch_t* patch);
void destroyOpSet(OpSet* set);

}  // namespace tether
