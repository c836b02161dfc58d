// Host-only build: no CUDA stream-op layer (stream operations then fail with TETHER_ERR_UNSUPPORTED).
#include "core/stream_ops.h"

namespace tether {

Status createGpuStreamOps(GpuContext&, const GpuStreamOpsOptions&, std::unique_ptr<StreamOps>* out) {
  out->reset();
  TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "stream operations: this is a host-only build (configure with CUDA)");
}

}  // namespace tether
