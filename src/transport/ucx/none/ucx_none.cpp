// The ucx provider of a build without UCX (CMake chose this file: TETHER_UCX=OFF, or AUTO without libucx): every
// network path is unavailable and a PE on another host fails tether_init naming what is missing.
#include "transport/ucx/ucx.h"

namespace tether {
namespace {

class UcxUnbuilt final : public Provider {
 public:
  const char* name() const override { return "ucx"; }
  Status probe(const Topology& topo, int me, int peer, SegKind kind, const PathOverrides& ov,
               ProbeResult* out) const override {
    return ucxProbe(topo, me, peer, kind, ov, "tether was built without UCX (install libucx-dev and rebuild)", {},
                    out);
  }
  Status connect(const Topology&, int me, int peer, SegKind kind, Connection*) override {
    TETHER_FAIL(TETHER_ERR_INTERNAL, "ucx provider: connect(%d -> %d, %s) in a build without UCX", me, peer,
                segKindName(kind));
  }
};

}  // namespace

std::unique_ptr<Provider> makeUcxProvider(const UcxOptions&) { return std::unique_ptr<Provider>(new UcxUnbuilt); }

}  // namespace tether
