// p2p transport: the host path when this PE has a GPU. ctx is the World's GpuContext.
//
// Data: a put/get touching device memory on either side (the target DEVICE segment, or a user buffer in GPU memory)
// is a copy-engine copy, except small ones between host memory and a DEVICE segment (puts, and blocking gets), which
// the GPU's host service executes when it is on (GpuContext::putSmall/getSmall); HOST segment <-> host buffer stays a
// memcpy. Atomics and signals: DEVICE words through a system-scope GPU atomic (the host service, or a kernel each),
// HOST words through the shm transport's CPU atomics, after completing earlier copies so a signal never overtakes
// the data it announces.
// The p2p provider (this PE has a GPU context) serves the self, shm and p2p paths choosePath picks.
#include <cstring>

#include "gpu/gpu.h"
#include "transport/provider.h"
#include "transport/transport.h"

namespace tether {
namespace {

GpuContext& gpu(void* ctx) { return *static_cast<GpuContext*>(ctx); }

// A small copy between host memory and a DEVICE segment goes through the host service when it is on (puts also
// nbi: posted, completed at quiet; gets blocking only). The service is asked first: with it off, no pointer query.
bool small(GpuContext& g, size_t n) { return n <= GpuContext::kSmallCopyBytes && g.hostService(); }

// A put the host service takes: small, from host memory, into a DEVICE segment.
bool servicePut(GpuContext& g, const RemoteAddr& dst, const void* src, size_t n) {
  return !isHostMemory(dst.kind) && small(g, n) && !g.isDeviceMemory(src);
}

Status p2pPut(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n, bool nbi) {
  GpuContext& g = gpu(ctx);
  if (isHostMemory(dst.kind) && !g.isDeviceMemory(src)) return shmTransportOps().put(nullptr, pe, dst, src, n, nbi);
  if (servicePut(g, dst, src, n)) return g.putSmall(dst.gpuPtr, src, n, nbi);
  return g.copy(dst.gpuPtr, src, n, nbi);
}

// tether_put_local (OpenSHMEM's put): a put the service takes is posted to it (src is copied into its slot, so it is
// reusable at once; quiet drains the service, a later signal or put through it executes after it, and fence is quiet
// on this path); anything else is p2pPut (complete on return).
Status p2pPutLocal(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n) {
  GpuContext& g = gpu(ctx);
  if (servicePut(g, dst, src, n)) return g.putSmall(dst.gpuPtr, src, n, true);
  return p2pPut(ctx, pe, dst, src, n, false);
}

Status p2pGet(void* ctx, int pe, void* dst, const RemoteAddr& src, size_t n, bool nbi) {
  GpuContext& g = gpu(ctx);
  if (isHostMemory(src.kind)) {
    if (!g.isDeviceMemory(dst)) return shmTransportOps().get(nullptr, pe, dst, src, n, nbi);
  } else if (!nbi && small(g, n) && !g.isDeviceMemory(dst)) {
    return g.getSmall(dst, src.gpuPtr, n);
  }
  return g.copy(dst, src.gpuPtr, n, nbi);
}

Status p2pAmo(void* ctx, int pe, const RemoteAddr& dst, const AmoArgs& a, uint64_t* fetched) {
  if (isHostMemory(dst.kind)) return shmTransportOps().amo(nullptr, pe, dst, a, fetched);
  return gpu(ctx).atomic(dst.gpuPtr, a, fetched);
}

Status p2pSignal(void* ctx, int pe, const RemoteAddr& sig, uint64_t value, tether_signal_op_t op) {
  if (isHostMemory(sig.kind)) {
    TETHER_TRY(gpu(ctx).quiet());  // earlier copy-engine puts land before the signal
    return shmTransportOps().signal(nullptr, pe, sig, value, op);
  }
  return gpu(ctx).signal(sig.gpuPtr, value, op);
}

Status p2pQuiet(void* ctx) {
  TETHER_TRY(gpu(ctx).quiet());
  return shmTransportOps().quiet(nullptr);
}

const TransportOps kP2pOps = {
    "p2p", kCapLoadStore | kCapAtomics | kCapHostSegment | kCapDeviceSegment | kCapSignalCompletesPuts,
    p2pPut, p2pGet, p2pAmo, p2pSignal, p2pQuiet, p2pQuiet, p2pPutLocal,
};

}  // namespace

const TransportOps& p2pTransportOps() { return kP2pOps; }

namespace {

constexpr int kP2pCost = 10;

// Serves every path of a PE with a GPU context that choosePath makes self, shm or p2p: HOST/STATIC segments of
// same-host PEs (a user buffer may be GPU memory) and DEVICE segments its GPU can address.
class P2pProvider final : public Provider {
 public:
  explicit P2pProvider(GpuContext* gpu) : gpu_(gpu) {}
  const char* name() const override { return "p2p"; }
  Status probe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
               ProbeResult* out) const override {
    PathChoice c;
    TETHER_TRY(choosePath(topo, me, peer, kind, ov, &c));
    *out = ProbeResult{false, kP2pCost, c.kind, c.reason};
    if (c.kind != PathKind::Self && c.kind != PathKind::Shm && c.kind != PathKind::P2p) return Status::ok();
    if (!topo.pes[static_cast<size_t>(me)].gpu.present) {
      out->reason = strprintf("PE %d has no GPU (the shm provider serves this path)", me);
      return Status::ok();
    }
    out->available = true;
    return Status::ok();
  }
  Status connect(const Topology&, int, int, SegKind, Connection* out) override {
    *out = Connection{&p2pTransportOps(), gpu_};
    return Status::ok();
  }

 private:
  GpuContext* gpu_;
};

}  // namespace

std::unique_ptr<Provider> makeP2pProvider(GpuContext* gpu) { return std::unique_ptr<Provider>(new P2pProvider(gpu)); }

}  // namespace tether
