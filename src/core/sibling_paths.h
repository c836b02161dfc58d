// SiblingPaths: the World's paths with its GPU work moved to a sibling GpuContext, whose internal streams do not
// synchronise with the legacy default stream. For a thread whose copies must progress while GPU work waits for them
// (a kernel spinning on a word, a stream-ordered wait): the device API's proxy (core/proxy.h) and two-sided
// messaging (core/messaging.h). Passed to runOp (core/op.h) as its PathCtx.
//
// Contracts: ctx(path) is the path's own context except where that is the World's GPU context (then the sibling) or a
// staged GPU path (then a StagedGpu over the sibling, one per target GPU, made on first use). Without a GPU every
// path keeps its own context. Because the sibling's copies do not wait for the legacy default stream, a caller that
// must honour "work queued there before the call is complete" settles it itself (GpuContext::settleDefaultStream).
// Thread-safety: ctx() may be called from several threads.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "core/op.h"
#include "gpu/gpu.h"
#include "transport/staged/staged.h"

namespace tether {

class World;

class SiblingPaths final : public PathCtx {
 public:
  // who: names the user in errors. *out is always set; its gpu() is null when the World has no GPU.
  static Status create(World& world, const char* who, std::unique_ptr<SiblingPaths>* out);
  ~SiblingPaths() = default;
  GpuContext* gpu() const { return gpu_.get(); }
  void* ctx(const SegPath& path) override;

 private:
  explicit SiblingPaths(World& world) : world_(world) {}
  World& world_;
  std::unique_ptr<GpuContext> gpu_;                 // sibling of the World's context, when there is a GPU
  std::mutex mu_;                                   // staged_
  std::vector<std::unique_ptr<StagedGpu>> staged_;  // staged paths over gpu_, by target GPU
};

}  // namespace tether
