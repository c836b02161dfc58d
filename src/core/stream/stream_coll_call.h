// Executes one team collective enqueued on a stream (tether_team_*_on_stream, issue #21) with the device API's team
// collectives (include/tether/device.cuh), so the stream forms are the device forms: compiled for the GPU (one block
// of up to kCollBlockThreads threads or a cooperative grid, core/stream/cuda/coll_group.cuh) and for the CPU (the
// emulated stream's worker thread, core/stream/stream_ops_cpu.cpp, Scope::Thread). Contract of the record: core/stream_ops.h (StreamOps::coll).
#pragma once

#include "core/stream_ops.h"
#include "tether/device.cuh"

namespace tether {
namespace streamdetail {

static_assert(static_cast<int>(StreamCollCall::OneShot) == static_cast<int>(device::ReduceAlgo::OneShot) &&
                  static_cast<int>(StreamCollCall::TwoShot) == static_cast<int>(device::ReduceAlgo::TwoShot) &&
                  static_cast<int>(StreamCollCall::Auto) == static_cast<int>(device::ReduceAlgo::Auto),
              "the record's algorithms are the device API's");

template <device::Scope S, typename T>
TETHER_HD void runReduction(const tether_device_handle_t& h, const tether_device_team_t& t, const StreamCollCall& c) {
  namespace dv = tether::device;
  T* d = static_cast<T*>(c.dest);
  const T* s = static_cast<const T*>(c.src);
  const auto op = static_cast<dv::RedOp>(c.op);
  switch (c.kind) {
    case StreamCollCall::Reduce: dv::team_reduce<S>(h, t, d, s, c.count, op, c.root); break;
    case StreamCollCall::ReduceScatter: dv::team_reduce_scatter<S>(h, t, d, s, c.count, op); break;
    default: dv::team_allreduce<S>(h, t, d, s, c.count, op, static_cast<dv::ReduceAlgo>(c.algo)); break;
  }
}

// The collectives in groups of one GPU kernel each (core/stream/cuda/coll_group_*.cu, one translation unit per
// group, so a build compiles them side by side: the single kernel with every type took 129 s of one core of the CI
// VM and was the longest step of every GPU build). The CPU path runs every group (runCollCall).
enum class CollGroup : int { Move, Signed, Unsigned, Float, Half };

TETHER_HD CollGroup collGroupOf(const StreamCollCall& c) {
  switch (c.kind) {
    case StreamCollCall::Sync:
    case StreamCollCall::Broadcast:
    case StreamCollCall::Allgather:
    case StreamCollCall::Alltoall: return CollGroup::Move;
    default: break;
  }
  switch (c.elem) {
    case StreamCollCall::I8:
    case StreamCollCall::I16:
    case StreamCollCall::I32:
    case StreamCollCall::I64: return CollGroup::Signed;
    case StreamCollCall::U8:
    case StreamCollCall::U16:
    case StreamCollCall::U32:
    case StreamCollCall::U64: return CollGroup::Unsigned;
    case StreamCollCall::F32:
    case StreamCollCall::F64: return CollGroup::Float;
    default: return CollGroup::Half;
  }
}

// Runs c, whose group is G (collGroupOf); anything else of c's is not compiled into this instantiation.
template <device::Scope S, CollGroup G>
TETHER_HD void runCollGroup(const tether_device_handle_t& h, const tether_device_team_t& t, const StreamCollCall& c) {
  namespace dv = tether::device;
  if constexpr (G == CollGroup::Move) {
    const size_t bytes = c.count * c.elemBytes;
    switch (c.kind) {
      case StreamCollCall::Sync: return dv::team_sync<S>(h, t);
      case StreamCollCall::Broadcast: return dv::team_broadcast<S>(h, t, c.dest, c.src, bytes, c.root);
      case StreamCollCall::Allgather: return dv::team_allgather<S>(h, t, c.dest, c.src, bytes);
      default: return dv::team_alltoall<S>(h, t, c.dest, c.src, bytes);
    }
  } else if constexpr (G == CollGroup::Signed) {
    switch (c.elem) {
      case StreamCollCall::I8: return runReduction<S, int8_t>(h, t, c);
      case StreamCollCall::I16: return runReduction<S, int16_t>(h, t, c);
      case StreamCollCall::I32: return runReduction<S, int32_t>(h, t, c);
      default: return runReduction<S, int64_t>(h, t, c);
    }
  } else if constexpr (G == CollGroup::Unsigned) {
    switch (c.elem) {
      case StreamCollCall::U8: return runReduction<S, uint8_t>(h, t, c);
      case StreamCollCall::U16: return runReduction<S, uint16_t>(h, t, c);
      case StreamCollCall::U32: return runReduction<S, uint32_t>(h, t, c);
      default: return runReduction<S, uint64_t>(h, t, c);
    }
  } else if constexpr (G == CollGroup::Float) {
    if (c.elem == StreamCollCall::F32) return runReduction<S, float>(h, t, c);
    return runReduction<S, double>(h, t, c);
  } else {
    if (c.elem == StreamCollCall::F16) return runReduction<S, device::Half>(h, t, c);
    return runReduction<S, device::BFloat16>(h, t, c);
  }
}

template <device::Scope S>
TETHER_HD void runCollCall(const tether_device_handle_t& h, const tether_device_team_t& t, const StreamCollCall& c) {
  switch (collGroupOf(c)) {
    case CollGroup::Move: return runCollGroup<S, CollGroup::Move>(h, t, c);
    case CollGroup::Signed: return runCollGroup<S, CollGroup::Signed>(h, t, c);
    case CollGroup::Unsigned: return runCollGroup<S, CollGroup::Unsigned>(h, t, c);
    case CollGroup::Float: return runCollGroup<S, CollGroup::Float>(h, t, c);
    case CollGroup::Half: return runCollGroup<S, CollGroup::Half>(h, t, c);
  }
}

}  // namespace streamdetail
}  // namespace tether
