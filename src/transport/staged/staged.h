// The staged path's policy: DEVICE segments of a same-host PE whose GPU this PE's GPU cannot address (no peer
// access, or TETHER_PATHS device=staged), reached over the primitives of gpu/ (GpuContext, GpuStream).
//
// Policy (one StagedGpu per target GPU and GpuContext: the World's, or the device API proxy's sibling)
//  - Copy engine: the target PE's GPU (`device`), on a stream of its own made in this process on first use (logged
//    at TETHER_LOG=info:transport "staged path: using GPU N's copy engine from this process"); the target's DEVICE
//    segment is mapped here with access for that GPU (DeviceHeapParams::accessDevice). When the target GPU is this
//    PE's own GPU (device=staged between PEs sharing a GPU), the context's pool does everything
//    (GpuContext::copy/atomic/signal).
//  - A local buffer on this PE's GPU: neither GPU reaches both sides, so the bytes hop through a pinned host buffer
//    of kStageBytes, chunk by chunk (this PE's GPU's copy engine on one side, the target GPU's on the other); such a
//    copy is complete on return, nbi or not. Any other buffer: one copy on the target GPU's stream; nbi copies
//    complete at quiet.
//  - quiet (and fence): GpuContext::quiet, which waits for the pool and every stream the context made (these too).
//  - atomics: the system-scope AMO kernel on the target GPU. Signals: quiet first (a signal follows every earlier
//    copy), then the signal kernel on the target GPU.
// Thread safety: any thread; the streams and staging buffer are made once (under a lock), a bounce holds the
// target's bounce lock (one staging buffer per target GPU).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "base/amo.h"
#include "base/status.h"
#include "gpu/gpu.h"
#include "tether/tether.h"

namespace tether {

class StagedGpu {
 public:
  static constexpr size_t kStageBytes = 8u << 20;  // pinned staging per target GPU

  // gpu: the context whose streams do the work (outlives this); device: the target GPU, an ordinal of this process.
  StagedGpu(GpuContext* gpu, int device) : gpu_(gpu), device_(device) {}
  StagedGpu(const StagedGpu&) = delete;
  StagedGpu& operator=(const StagedGpu&) = delete;

  GpuContext* gpu() const { return gpu_; }
  int device() const { return device_; }

  // One side is memory the target GPU can address (its DEVICE segment as mapped here), the other any memory.
  Status copy(void* dst, const void* src, size_t n, bool nbi);
  Status atomic(void* target, const AmoArgs& a, uint64_t* fetched);
  Status signal(void* target, uint64_t value, tether_signal_op_t op);
  Status quiet();

 private:
  Status ready();  // the streams and staging buffer, made on first use
  Status bounce(void* dst, const void* src, size_t n, bool srcMine);

  GpuContext* gpu_;
  int device_;
  std::mutex makeMu_;
  std::atomic<bool> ready_{false};
  GpuStream* far_ = nullptr;   // on the target GPU
  GpuStream* near_ = nullptr;  // on this PE's GPU (the bounce's other side)
  char* staging_ = nullptr;
  std::mutex bounceMu_;
};

}  // namespace tether
