// Stream-ordered operations (#6): the entry points api.cpp calls for the *_on_stream calls and prepared sets, made of
// operation records (core/op.h). core/stream.cpp compiles operations into a plan of stream-op layer calls
// (core/stream_ops.h) once -- checks, address translation, path choice (direct or proxy), memop arrays -- and runs a
// plan on a stream any number of times, patching per-post values. A single *_on_stream call is a one-op plan run once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "core/op.h"
#include "tether/tether.h"

namespace tether {

class World;

class OpSet;

// Checks, compiles and enqueues ops[0..n) on stream, in order.
Status enqueueOnStream(World& w, const char* call, const Op* ops, size_t n, void* stream);
// Persistent messaging's stream steps (core/messaging.cpp) on words of this PE's own HOST segment (symmetric
// addresses, translated here for the stream-op layer): incrementOnStream adds 1 to each of words[0..n) in stream order
// (StreamOps::increment); waitReachOnStream makes the stream's later work wait until reach[i] >= target[i] for every
// i (StreamOps::waitReach), bounded by TETHER_TIMEOUT like the stream's kernel waits (a timed-out wait fails the
// stream: the CPU emulation's sticky TETHER_ERR_TIMEOUT, a trap on the GPU). Neither captures a value: replayable in
// a CUDA graph.
Status incrementOnStream(World& w, const char* call, uint64_t* const* words, size_t n, void* stream);
Status waitReachOnStream(World& w, const char* call, const uint64_t* const* reach, const uint64_t* const* target,
                         size_t n, void* stream);
// Prepared sets: tether_prepare / tether_post_on_stream / tether_op_set_free.
// *out: a new set, owned by the caller (destroyOpSet).
Status prepareOpSet(World& w, const tether_op_desc_t* ops, size_t n, OpSet** out);
Status postOpSet(OpSet& set, void* stream, const tether_post_patch_t* patch);
void destroyOpSet(OpSet* set);

}  // namespace tether
