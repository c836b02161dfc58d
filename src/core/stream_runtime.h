// StreamRuntime: the stream-ordered side of one World (#6) -- its stream-op layer and the epochs of stream barriers.
//
// Owns: the stream-op layer (core/stream_ops.h): the CUDA one, made on first use when this PE has a GPU, or one a
// test installed (install(), before the first stream operation); the counter of barrier_all_on_stream epochs; and
// which form stream barriers take (TETHER_STREAM_BARRIER, a stream being captured: barriersBySync).
// Who calls it: the stream compiler (core/stream.cpp: *_on_stream calls and prepared sets), typed RMA's stream forms
// (core/typed_rma.h) and the test hook tether_test_set_stream_ops (core/api.cpp), all through World::streams().
// Thread-safety: ops() and install() may race (one mutex guards the creation); nextBarrierEpochs is atomic.
// Lifetime: a member of World, attached to the World's GPU context at init. close() (World::finalize, ~World)
// destroys the stream-op layer -- its streams drain (CPU emulation) -- before the proxy, heaps and GPU context it
// uses go away: the World declares this room after its proxy, and finalize closes it first.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "core/stream_ops.h"
#include "gpu/gpu.h"

namespace tether {

class Config;

class StreamRuntime {
 public:
  // The GPU context stream-op layers are made on (nullptr: none) and this PE's number (messages).
  void attach(GpuContext* gpu, int myPe) {
    gpu_ = gpu;
    myPe_ = myPe;
  }
  // Options of the CUDA layer made on first use (the World sets kernelWaits once its paths are known, before any
  // stream operation).
  void setGpuOptions(const GpuStreamOpsOptions& opts) {
    std::lock_guard<std::mutex> lock(mu_);
    gpuOpts_ = opts;
  }
  // *out: the stream-op layer, made on first use; TETHER_ERR_UNSUPPORTED when there is no GPU and none installed.
  Status ops(StreamOps** out);
  // The library's own streams on that layer, one per lane (>= 0), made on first use: host calls that run GPU work
  // and wait for it enqueue there (the host collectives' GPU engine: lane = team index), one caller per lane at a
  // time (the caller serialises). Separate lanes keep one lane's waiting kernel (a team sync for members that are
  // still in another team's call, on other threads) from holding another lane's work back. Destroyed by close().
  Status engineStream(int lane, StreamOps** ops, void** stream);
  // Installs a stream-op layer (owned here; tests: the CPU emulation on a GPU-less PE).
  void install(std::unique_ptr<StreamOps> ops);
  // TETHER_STREAM_BARRIER (auto or kernel; anything else is TETHER_ERR_INVALID_ARG). At init.
  Status configure(const Config& config);
  // *out: the stream barriers enqueued now on stream (of so) take the world team's sync kernel instead of memory
  // operations -- TETHER_STREAM_BARRIER=kernel, or the stream is being captured into a CUDA graph (auto), where the
  // memory operations' epochs would repeat on every replay.
  Status barriersBySync(StreamOps& so, void* stream, bool* out) const {
    *out = barrierKernel_;
    return barrierKernel_ ? Status::ok() : so.capturing(stream, out);
  }
  // Epochs of stream barriers, one per barrier in enqueue order (collective: every PE enqueues the same sequence).
  uint64_t nextBarrierEpochs(uint64_t count) { return barrierEpoch_.fetch_add(count) + 1; }
  // Destroys the stream-op layer (its streams drain first); later ops() calls make a new one.
  void close();

 private:
  Status opsLocked(StreamOps** out);
  void dropEngineLocked();

  GpuContext* gpu_ = nullptr;
  int myPe_ = 0;
  std::mutex mu_;  // creation of ops_
  std::unique_ptr<StreamOps> ops_;
  std::vector<void*> engines_;  // engineStream's, by lane, on ops_ (nullptr: not made yet)
  GpuStreamOpsOptions gpuOpts_;
  std::atomic<uint64_t> barrierEpoch_{0};
  bool barrierKernel_ = false;  // TETHER_STREAM_BARRIER=kernel
};

}  // namespace tether
