// Host-only build: there is never a GPU context (TETHER_GPU=<ordinal> is refused: no GPU can serve it).
#include "base/log.h"
#include "gpu/gpu.h"

namespace tether {

Status GpuContext::create(const Config& config, int, std::unique_ptr<GpuContext>* out) {
  out->reset();
  const std::string sel = config.str("TETHER_GPU");
  if (sel != "auto" && sel != "none")  // an ordinal (its form is checked by tether_init)
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "TETHER_GPU=%s but this is a host-only build (configure with CUDA)",
                sel.c_str());
  TETHER_LOG_INFO(LogSys::Core, "no GPU context: this is a host-only build (configure with CUDA for GPU segments)");
  return Status::ok();
}

}  // namespace tether
