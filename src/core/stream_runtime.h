// StreamRuntime: the stream-ordered side of one World (#6) -- its stream-op layer and the epochs of stream barriers.
//
// Owns: the stream-op layer (core/stream_ops.h): the CUDA one, made on first use when this PE has a GPU, or one a
// test installed (install(), before the first stream operation); the counter of barrier_all_on_stream epochs; and
// which form stream barriers take (TETHER_STREAM_BARRIER, a stream being captured, a GPU shared by PEs: barrierForm).
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

// The forms a stream barrier compiles to (core/stream.cpp; chosen per call by StreamRuntime::barrierForm). Every PE
// must choose alike for the same barrier (its choice depends only on job-wide facts and on which barriers it
// captures, which tether.h asks to be alike).
enum class BarrierForm {
  Epochs,  // memory operations whose values are epochs chosen at the call (nextBarrierEpochs): not replayable
  Resets,  // memory operations with fixed values on two word sets taken in turn, each word zeroed once its wait
           // passed: replayable (a replay finds every word zero again), twice the rounds of Epochs
  Sync,    // the world team's sync kernel (its epoch lives in GPU memory): replayable, a kernel launch
};
const char* barrierFormName(BarrierForm f);

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
  // TETHER_STREAM_BARRIER (auto, kernel or reset; anything else is TETHER_ERR_INVALID_ARG) and whether some GPU of
  // the job is used by two or more PEs (Topology::someGpuShared: the same answer on every PE). At init.
  Status configure(const Config& config, bool sharedGpu);
  // *out: the form of the stream barriers enqueued now on stream (of so). TETHER_STREAM_BARRIER=kernel: Sync;
  // reset: Resets; auto: Epochs, except on a stream being captured into a CUDA graph (where the epochs would repeat
  // on every replay): Resets where PEs share a GPU (a spinning kernel there waits for the GPU's time slices, ~2.25 ms
  // a barrier on one H100), else Sync.
  Status barrierForm(StreamOps& so, void* stream, BarrierForm* out) const;
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
  bool forced_ = false;  // TETHER_STREAM_BARRIER=kernel or reset: forcedForm_ always
  BarrierForm forcedForm_ = BarrierForm::Epochs;
  bool sharedGpu_ = false;  // some GPU of the job is used by two or more PEs
};

}  // namespace tether
