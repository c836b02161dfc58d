// staged transport: DEVICE segments of a same-host PE whose GPU this PE's GPU cannot address (no peer access, or
// TETHER_PATHS device=staged). ctx = StagedCtx*: the target PE's GPU, driven from this process through the World's
// GpuContext (copyVia / atomicVia / signalVia: the target GPU's copy engine and kernels, a buffer on this PE's GPU
// hopping through pinned host memory). The staged provider owns one StagedCtx per staged peer.
#include "gpu/gpu.h"
#include "transport/provider.h"
#include "transport/transport.h"

namespace tether {
namespace {

StagedCtx& staged(void* ctx) { return *static_cast<StagedCtx*>(ctx); }

Status stagedPut(void* ctx, int, const RemoteAddr& dst, const void* src, size_t n, bool nbi) {
  return staged(ctx).gpu->copyVia(staged(ctx).device, dst.ptr, src, n, nbi);
}

Status stagedGet(void* ctx, int, void* dst, const RemoteAddr& src, size_t n, bool nbi) {
  return staged(ctx).gpu->copyVia(staged(ctx).device, dst, src.ptr, n, nbi);
}

Status stagedAmo(void* ctx, int, const RemoteAddr& dst, const AmoArgs& a, uint64_t* fetched) {
  return staged(ctx).gpu->atomicVia(staged(ctx).device, dst.ptr, a, fetched);
}

Status stagedSignal(void* ctx, int, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  return staged(ctx).gpu->signalVia(staged(ctx).device, sig.ptr, value, op);
}

Status stagedQuiet(void* ctx) { return staged(ctx).gpu->quiet(); }

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
    ctxs_.emplace_back(new StagedCtx{gpu_, dev});
    *out = Connection{&stagedTransportOps(), ctxs_.back().get()};
    return Status::ok();
  }

 private:
  GpuContext* gpu_;
  std::vector<std::unique_ptr<StagedCtx>> ctxs_;  // one per connected staged path
};

}  // namespace

std::unique_ptr<Provider> makeStagedProvider(GpuContext* gpu) {
  return std::unique_ptr<Provider>(new StagedProvider(gpu));
}

}  // namespace tether
