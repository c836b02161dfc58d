// Executes one team collective enqueued on a stream (tether_team_*_on_stream, issue #21) with the device API's team
// collectives (include/tether/device.cuh), so the stream forms are the device forms: compiled for the GPU (one block
// of up to kCollBlockThreads threads or a cooperative grid, core/stream/cuda/stream_kernels.cu) and for the CPU (the
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

template <device::Scope S>
TETHER_HD void runCollCall(const tether_device_handle_t& h, const tether_device_team_t& t, const StreamCollCall& c) {
  namespace dv = tether::device;
  const size_t bytes = c.count * c.elemBytes;
  switch (c.kind) {
    case StreamCollCall::Sync: return dv::team_sync<S>(h, t);
    case StreamCollCall::Broadcast: return dv::team_broadcast<S>(h, t, c.dest, c.src, bytes, c.root);
    case StreamCollCall::Allgather: return dv::team_allgather<S>(h, t, c.dest, c.src, bytes);
    case StreamCollCall::Alltoall: return dv::team_alltoall<S>(h, t, c.dest, c.src, bytes);
    default: break;
  }
  switch (c.elem) {
    case StreamCollCall::I8: return runReduction<S, int8_t>(h, t, c);
    case StreamCollCall::I16: return runReduction<S, int16_t>(h, t, c);
    case StreamCollCall::I32: return runReduction<S, int32_t>(h, t, c);
    case StreamCollCall::I64: return runReduction<S, int64_t>(h, t, c);
    case StreamCollCall::U8: return runReduction<S, uint8_t>(h, t, c);
    case StreamCollCall::U16: return runReduction<S, uint16_t>(h, t, c);
    case StreamCollCall::U32: return runReduction<S, uint32_t>(h, t, c);
    case StreamCollCall::U64: return runReduction<S, uint64_t>(h, t, c);
    case StreamCollCall::F32: return runReduction<S, float>(h, t, c);
    case StreamCollCall::F64: return runReduction<S, double>(h, t, c);
    case StreamCollCall::F16: return runReduction<S, device::Half>(h, t, c);
    case StreamCollCall::BF16: return runReduction<S, device::BFloat16>(h, t, c);
  }
}

}  // namespace streamdetail
}  // namespace tether
