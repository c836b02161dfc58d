// Host-only build: there is never a GPU context.
#include "base/log.h"
#include "gpu/gpu.h"

namespace tether {

Status GpuContext::create(const Config&, int, std::unique_ptr<GpuContext>* out) {
  out->reset();
  TETHER_LOG_INFO(LogSys::Core, "no GPU context: this is a host-only build (configure with CUDA for GPU segments)");
  return Status::ok();
}

}  // namespace tether
