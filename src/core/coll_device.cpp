// The device forms' side of the team collectives (core/coll_device.h has the contracts).
#include "core/coll_device.h"

#include <algorithm>
#include <cstdint>

#include "core/dtype.h"

namespace tether {

namespace {

// The device API's element type of a tether element type.
StreamCollCall::Elem streamElem(tether_dtype_t t) {
  const DtypeInfo& d = dtypeInfo(t);
  if (t == TETHER_HALF) return StreamCollCall::F16;
  if (t == TETHER_BFLOAT16) return StreamCollCall::BF16;
  static const StreamCollCall::Elem sgn[] = {StreamCollCall::I8, StreamCollCall::I16, StreamCollCall::I32,
                                             StreamCollCall::I64};
  static const StreamCollCall::Elem uns[] = {StreamCollCall::U8, StreamCollCall::U16, StreamCollCall::U32,
                                             StreamCollCall::U64};
  const int k = d.size == 1 ? 0 : d.size == 2 ? 1 : d.size == 4 ? 2 : 3;
  if (d.cls == DtypeClass::Float) return d.size == 4 ? StreamCollCall::F32 : StreamCollCall::F64;
  return d.cls == DtypeClass::Signed ? sgn[k] : uns[k];
}

StreamCollCall::Kind streamKind(CollKind k) {
  switch (k) {
    case CollKind::Broadcast: return StreamCollCall::Broadcast;
    case CollKind::Reduce: return StreamCollCall::Reduce;
    case CollKind::Allreduce: return StreamCollCall::Allreduce;
    case CollKind::Allgather: return StreamCollCall::Allgather;
    case CollKind::ReduceScatter: return StreamCollCall::ReduceScatter;
    default: return StreamCollCall::Alltoall;
  }
}

}  // namespace

StreamCollCall streamCollCall(CollKind kind, tether_dtype_t type, const void* dest, const void* src, size_t count,
                              int op, int root, const CollShape& shape, const CollGpuSettings& s) {
  StreamCollCall c;
  c.kind = streamKind(kind);
  c.elem = streamElem(type);
  c.op = op;
  c.root = root;
  c.dest = const_cast<void*>(dest);
  c.src = src;
  c.count = count;
  c.elemBytes = shape.elemBytes;
  if (kind == CollKind::Allreduce)
    c.algo = shape.n >= 3 && shape.block >= s.twoShot ? StreamCollCall::TwoShot : StreamCollCall::OneShot;
  const size_t want = std::max<size_t>(1, shape.destBytes / s.blockBytes + (shape.destBytes % s.blockBytes != 0));
  // 0: no limit of ours (the launch clamps to the resident blocks); the limit keeps the count an unsigned.
  c.blocks = static_cast<unsigned>(std::min<size_t>(want, s.maxBlocks ? s.maxBlocks : UINT32_MAX));
  // One block: a thread per 64 bytes of dest (a chunk of the reductions' vector loop; four 16-byte copies of the
  // movers), in whole warps, 32 .. kCollBlockThreads. Every thread pays the kernel's per-thread costs (its share of
  // the parameters in local memory, the fences of the team syncs): on one H200 an 8 B allreduce kernel took ~2.5 us
  // more GPU time with 512 threads than with 32 (bench/results/h200/coll_threads_2026-12-04.txt). From agreed values
  // only (destBytes), as in-place reductions need.
  const size_t warps = (shape.destBytes + 32 * 64 - 1) / (32 * 64);
  c.threads = static_cast<unsigned>(std::min<size_t>(kCollBlockThreads, 32 * std::max<size_t>(1, warps)));
  return c;
}

Status deviceTeamView(const char* call, const Team& t, const tether_device_handle_t& h, int hostRun,
                      const CollGpuSettings& s, const CollViewBases& b, tether_device_team_t* out) {
  if (h.my_pe != b.me || h.n_pes != b.nPes)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: the handle is not one of this instance on this PE", call);
  const int n = static_cast<int>(t.pes.size());
  if (n > (1 << TETHER_DEVICE_TEAM_ROUNDS))
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: device team views take up to %d members; the team has %d", call,
                1 << TETHER_DEVICE_TEAM_ROUNDS, n);
  const int stride = n > 1 ? t.pes[1] - t.pes[0] : 1;
  for (int m = 0; m < n; ++m)
    if (t.pes[static_cast<size_t>(m)] != t.pes[0] + m * stride)
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: device team views need members at a fixed world-PE stride; team PE %d "
                  "is world PE %d, not %d", call, m, t.pes[static_cast<size_t>(m)], t.pes[0] + m * stride);
  tether_device_team_t v{};
  v.my_pe = t.me;
  v.n_pes = n;
  v.start = t.pes[0];
  v.stride = stride;
  v.index = t.slot;
  v.seg = h.barrier_seg;
  v.host_run = hostRun;  // the device broadcast by host (device.cuh) where each host's members form a run
  const uint64_t words = static_cast<uint64_t>(t.slot) * kDeviceTeamWords * sizeof(uint64_t);
  const uint64_t scratch = static_cast<uint64_t>(t.slot) * kCollScratchBytes;
  v.scratch_bytes = s.scratch;
  if (h.barrier_seg == TETHER_DEVICE_SEG_DEVICE && b.device) {
    v.sync = reinterpret_cast<uint64_t*>(b.device + kDeviceTeamSyncOffset + words);
    v.scratch = b.device + kDeviceCollScratchOffset + scratch;
  } else if (h.barrier_seg == TETHER_DEVICE_SEG_HOST) {
    v.sync = reinterpret_cast<uint64_t*>(b.host + b.hostSyncOffset + words);
    v.scratch = b.host + kCollScratchOffset + scratch;
  } else {
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: the handle's barrier segment %u is not a tether handle's", call,
                h.barrier_seg);
  }
  *out = v;
  return Status::ok();
}

}  // namespace tether
