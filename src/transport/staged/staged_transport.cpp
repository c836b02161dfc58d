// staged transport: DEVICE segments of a same-host PE whose GPU this PE's GPU cannot address (no peer access, or
// TETHER_PATHS device=staged). ctx = StagedGpu*: the policy of staged.h (which copy engine, the pinned-memory hop,
// completion, atomics and signals) over the primitives of the GpuContext. The staged provider owns one StagedGpu per
// target GPU.
#include "transport/staged/staged.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "base/log.h"
#include "transport/provider.h"
#include "transport/transport.h"

namespace tether {

Status StagedGpu::ready() {
  if (ready_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> lock(makeMu_);
  if (ready_.load(std::memory_order_relaxed)) return Status::ok();
  if (!far_) TETHER_TRY(gpu_->createStream(device_, &far_));
  if (!near_) TETHER_TRY(gpu_->createStream(gpu_->device(), &near_));
  if (!staging_) {
    void* p = nullptr;
    TETHER_TRY(gpu_->allocPinned(kStageBytes, &p));
    staging_ = static_cast<char*>(p);
  }
  TETHER_LOG_INFO(LogSys::Transport, "staged path: using GPU %d's copy engine from this process", device_);
  ready_.store(true, std::memory_order_release);
  return Status::ok();
}

Status StagedGpu::bounce(void* dst, const void* src, size_t n, bool srcMine) {
  std::lock_guard<std::mutex> lock(bounceMu_);
  GpuStream* first = srcMine ? near_ : far_;
  GpuStream* second = srcMine ? far_ : near_;
  for (size_t off = 0; off < n; off += kStageBytes) {
    const size_t len = std::min(kStageBytes, n - off);
    TETHER_TRY(first->copyAsync(staging_, static_cast<const char*>(src) + off, len));
    TETHER_TRY(first->sync());
    TETHER_TRY(second->copyAsync(static_cast<char*>(dst) + off, staging_, len));
    TETHER_TRY(second->sync());
  }
  return Status::ok();
}

Status StagedGpu::copy(void* dst, const void* src, size_t n, bool nbi) {
  const int mine = gpu_->device();
  if (device_ == mine) return gpu_->copy(dst, src, n, nbi);
  TETHER_TRY(ready());
  const bool dstMine = gpu_->deviceOf(dst) == mine, srcMine = gpu_->deviceOf(src) == mine;
  if (dstMine || srcMine) return bounce(dst, src, n, srcMine);
  TETHER_TRY(far_->copyAsync(dst, src, n));
  return nbi ? Status::ok() : far_->sync();
}

Status StagedGpu::atomic(void* target, const AmoArgs& a, uint64_t* fetched) {
  if (device_ == gpu_->device()) return gpu_->atomic(target, a, fetched);
  TETHER_TRY(ready());
  return far_->atomic(target, a, fetched);
}

Status StagedGpu::signal(void* target, uint64_t value, tether_signal_op_t op) {
  if (device_ == gpu_->device()) return gpu_->signal(target, value, op);
  TETHER_TRY(ready());
  TETHER_TRY(quiet());  // the signal follows every earlier copy
  return far_->signal(target, value, op);
}

Status StagedGpu::quiet() { return gpu_->quiet(); }

namespace {

StagedGpu& staged(void* ctx) { return *static_cast<StagedGpu*>(ctx); }

Status stagedPut(void* ctx, int, const RemoteAddr& dst, const void* src, size_t n, bool nbi) {
  return staged(ctx).copy(dst.ptr, src, n, nbi);
}

Status stagedGet(void* ctx, int, void* dst, const RemoteAddr& src, size_t n, bool nbi) {
  return staged(ctx).copy(dst, src.ptr, n, nbi);
}

Status stagedAmo(void* ctx, int, const RemoteAddr& dst, const AmoArgs& a, uint64_t* fetched) {
  return staged(ctx).atomic(dst.ptr, a, fetched);
}

Status stagedSignal(void* ctx, int, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  return staged(ctx).signal(sig.ptr, value, op);
}

Status stagedQuiet(void* ctx) { return staged(ctx).quiet(); }

const TransportOps kStagedOps = {
    "staged", kCapAtomics | kCapDeviceSegment, stagedPut, stagedGet, stagedAmo, stagedSignal, stagedQuiet, stagedQuiet,
};

}  // namespace

const TransportOps& stagedTransportOps() { return kStagedOps; }

namespace {

constexpr int kStagedCost = 30;

class StagedProvider final : public Provider {
 public:
  explicit StagedProvider(GpuContext* gpu) : gpu_(gpu) {}
  const char* name() const override { return "staged"; }
  Status probe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
               ProbeResult* out) const override {
    PathChoice c;
    TETHER_TRY(choosePath(topo, me, peer, kind, ov, &c));
    *out = ProbeResult{c.kind == PathKind::Staged, kStagedCost, c.kind, c.reason};
    return Status::ok();
  }
  Status connect(const Topology& topo, int, int peer, SegKind, Connection* out) override {
    int dev = -1;
    TETHER_TRY(gpu_->deviceByBusId(topo.pes[static_cast<size_t>(peer)].gpu.busId, &dev));
    *out = Connection{&stagedTransportOps(), target(dev)};
    return Status::ok();
  }

 private:
  // Peers on the same GPU share its StagedGpu (one stream and staging buffer per target GPU).
  StagedGpu* target(int dev) {
    for (auto& t : targets_)
      if (t->device() == dev) return t.get();
    targets_.emplace_back(new StagedGpu(gpu_, dev));
    return targets_.back().get();
  }

  GpuContext* gpu_;
  std::vector<std::unique_ptr<StagedGpu>> targets_;
};

}  // namespace

std::unique_ptr<Provider> makeStagedProvider(GpuContext* gpu) {
  return std::unique_ptr<Provider>(new StagedProvider(gpu));
}

}  // namespace tether
