// p2p transport: the host path when this PE has a GPU. ctx is the World's GpuContext.
//
// Data: a put/get touching device memory on either side (the target DEVICE segment, or a user buffer in GPU memory)
// is a copy-engine copy; HOST segment <-> host buffer stays a memcpy. Atomics and signals: DEVICE words through a
// system-scope GPU atomic (kernel), HOST words through the shm transport's CPU atomics, after completing earlier
// copies so a signal never overtakes the data it announces.
#include <cstring>

#include "gpu/gpu.h"
#include "transport/transport.h"

namespace tether {
namespace {

GpuContext& gpu(void* ctx) { return *static_cast<GpuContext*>(ctx); }

Status p2pPut(void* ctx, int pe, const RemoteAddr& dst, const void* src, size_t n, bool nbi) {
  if (isHostMemory(dst.kind) && !gpu(ctx).isDeviceMemory(src)) return shmTransportOps().put(nullptr, pe, dst, src, n, nbi);
  return gpu(ctx).copy(dst.gpuPtr, src, n, nbi);
}

Status p2pGet(void* ctx, int pe, void* dst, const RemoteAddr& src, size_t n, bool nbi) {
  if (isHostMemory(src.kind) && !gpu(ctx).isDeviceMemory(dst)) return shmTransportOps().get(nullptr, pe, dst, src, n, nbi);
  return gpu(ctx).copy(dst, src.gpuPtr, n, nbi);
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
    "p2p", kCapLoadStore | kCapAtomics | kCapHostSegment | kCapDeviceSegment,
    p2pPut, p2pGet, p2pAmo, p2pSignal, p2pQuiet, p2pQuiet,
};

}  // namespace

const TransportOps& p2pTransportOps() { return kP2pOps; }

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

}  // namespace tether
