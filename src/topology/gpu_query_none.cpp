// GpuQuery of a host-only build: no devices, so every PE records gpu.present == false and DEVICE paths are None.
#include "topology/topology.h"

namespace tether {

namespace {

class NoGpuQuery final : public GpuQuery {
 public:
  int deviceCount() override { return 0; }
  std::string busId(int) override { return ""; }
  std::string name(int) override { return ""; }
  bool vmmSupported(int) override { return false; }
  bool canAccessPeer(int, int) override { return false; }
  bool nativeAtomics(int, int) override { return false; }
  int nvlinkCount(int, int) override { return 0; }
  int deviceByBusId(const std::string&) override { return -1; }
};

}  // namespace

std::unique_ptr<GpuQuery> createSystemGpuQuery() { return std::make_unique<NoGpuQuery>(); }

}  // namespace tether
