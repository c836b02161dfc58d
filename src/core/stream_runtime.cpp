#include "core/stream_runtime.h"

#include "base/log.h"

namespace tether {

Status StreamRuntime::ops(StreamOps** out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ops_) {
    if (!gpu_)
      TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "stream operations need a GPU on PE %d (host-only build, no visible GPU, "
                  "or TETHER_GPU=none)", myPe_);
    TETHER_TRY(createGpuStreamOps(*gpu_, gpuOpts_, &ops_));
    TETHER_LOG_INFO(LogSys::Core, "stream operations: %s", ops_->name());
  }
  *out = ops_.get();
  return Status::ok();
}

void StreamRuntime::install(std::unique_ptr<StreamOps> ops) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_ = std::move(ops);
}

void StreamRuntime::close() {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.reset();
}

}  // namespace tether
