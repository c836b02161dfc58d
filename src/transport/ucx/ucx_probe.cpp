// The ucx provider's path choice, common to the UCX and the no-UCX builds.
#include "transport/ucx/ucx.h"

namespace tether {

bool ucxJobUsesNetwork(const Topology& topo, const PathOverrides& ov) {
  if (topo.size() < 2) return false;
  if (ov.host == "ucx") return true;
  for (int pe = 1; pe < topo.size(); ++pe)
    if (!topo.sameHost(0, pe)) return true;
  return false;
}

Status ucxProbe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
                const std::string& unusable, ProbeResult* out) {
  PathChoice c;
  TETHER_TRY(choosePath(topo, me, peer, kind, ov, &c));
  *out = ProbeResult{false, kUcxCost, c.kind, c.reason};
  const bool remoteDevice = kind == SegKind::Device && c.kind == PathKind::None && !topo.sameHost(me, peer);
  if (c.kind != PathKind::Net && !remoteDevice) return Status::ok();
  if (!unusable.empty()) {
    out->serves = true;
    out->reason = c.reason + "; " + unusable;
    return Status::ok();
  }
  out->available = true;
  if (remoteDevice) out->reason += ": operations on it fail with TETHER_ERR_UNSUPPORTED";
  return Status::ok();
}

}  // namespace tether
