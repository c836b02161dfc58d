// The provider registry: pure choice of the cheapest available provider per (peer, segment kind).
#include "transport/provider.h"

namespace tether {

Status ProviderRegistry::choose(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
                                size_t* chosen, ProbeResult* result) const {
  if (providers_.empty())
    TETHER_FAIL(TETHER_ERR_INTERNAL, "no usable path from PE %d to the %s segment of PE %d: no transport providers",
                me, segKindName(kind), peer);
  ProbeResult first, serving;
  bool found = false, served = false;
  for (size_t i = 0; i < providers_.size(); ++i) {
    ProbeResult r;
    TETHER_TRY(providers_[i]->probe(topo, me, peer, kind, ov, &r));
    if (i == 0) first = r;
    if (!served && !r.available && r.serves) {
      served = true;
      serving = r;
    }
    if (r.available && (!found || r.cost < result->cost)) {
      found = true;
      *chosen = i;
      *result = std::move(r);
    }
  }
  if (!found)
    TETHER_FAIL(TETHER_ERR_UNREACHABLE, "no usable path from PE %d to the %s segment of PE %d: %s", me,
                segKindName(kind), peer, (served ? serving : first).reason.c_str());
  return Status::ok();
}

ProviderRegistry makeLocalRegistry(GpuContext* gpu) {
  ProviderRegistry r;
  if (gpu) {
    r.add(makeP2pProvider(gpu));
    r.add(makeStagedProvider(gpu));
  }
  r.add(makeShmProvider());
  return r;
}

}  // namespace tether
