// The ucx provider's path choice, common to the UCX and the no-UCX builds.
#include "transport/ucx/ucx.h"

namespace tether {

const char* const kUcxNoCudaFix =
    "this UCX has no CUDA memory support: build tether against a CUDA-aware UCX, e.g. the libucx-cu13 wheel";

bool ucxJobUsesNetwork(const Topology& topo, const PathOverrides& ov) {
  if (topo.size() < 2) return false;
  if (ov.host == "ucx") return true;
  for (int pe = 1; pe < topo.size(); ++pe)
    if (!topo.sameHost(0, pe)) return true;
  return false;
}

namespace {

bool cudaAware(const std::vector<uint8_t>& cudaPes, int pe) {
  return static_cast<size_t>(pe) < cudaPes.size() && cudaPes[static_cast<size_t>(pe)] != 0;
}

// The DEVICE segment of PE `peer` on another host: available when both PEs' UCX moves CUDA memory.
void remoteDevice(const Topology& topo, int me, int peer, const std::vector<uint8_t>& cudaPes, ProbeResult* out) {
  const std::string where = strprintf("PE %d runs on another host (%s)", peer,
                                      topo.pes[static_cast<size_t>(peer)].host.c_str());
  out->path = PathKind::Net;
  if (!topo.pes[static_cast<size_t>(peer)].gpu.present) {
    out->path = PathKind::None;
    out->reason = strprintf("%s: no DEVICE segment: PE %d has no GPU", where.c_str(), peer);
    return;
  }
  out->serves = true;
  if (!cudaAware(cudaPes, me)) {
    out->reason = strprintf("%s: DEVICE segments across hosts need UCX with CUDA memory support on both PEs; on PE "
                            "%d %s", where.c_str(), me, kUcxNoCudaFix);
    return;
  }
  if (!cudaAware(cudaPes, peer)) {
    out->reason = strprintf("%s: DEVICE segments across hosts need UCX with CUDA memory support on both PEs; on PE "
                            "%d %s", where.c_str(), peer, kUcxNoCudaFix);
    return;
  }
  out->serves = false;
  out->available = true;
  out->reason = where + ": network, CUDA memory (UCX with CUDA support on both PEs)";
}

}  // namespace

Status ucxProbe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
                const std::string& unusable, const std::vector<uint8_t>& cudaPes, ProbeResult* out) {
  PathChoice c;
  TETHER_TRY(choosePath(topo, me, peer, kind, ov, &c));
  *out = ProbeResult{false, kUcxCost, c.kind, c.reason};
  const bool device = kind == SegKind::Device && c.kind == PathKind::None && !topo.sameHost(me, peer);
  if (c.kind != PathKind::Net && !device) return Status::ok();
  if (!unusable.empty()) {
    out->serves = true;
    out->reason = c.reason + "; " + unusable;
    return Status::ok();
  }
  if (device) {
    remoteDevice(topo, me, peer, cudaPes, out);
    return Status::ok();
  }
  out->available = true;
  return Status::ok();
}

}  // namespace tether
