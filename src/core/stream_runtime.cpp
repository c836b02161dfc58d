#include "core/stream_runtime.h"

#include "base/config.h"
#include "base/log.h"

namespace tether {

const char* barrierFormName(BarrierForm f) {
  switch (f) {
    case BarrierForm::Epochs: return "memory operations with epochs";
    case BarrierForm::Resets: return "memory operations with resets";
    case BarrierForm::Sync: return "the world team's sync kernel";
  }
  return "?";
}

Status StreamRuntime::configure(const Config& config, bool sharedGpu) {
  const std::string mode = config.str("TETHER_STREAM_BARRIER");
  if (mode != "auto" && mode != "kernel" && mode != "reset")
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_STREAM_BARRIER=%s: expected auto, kernel or reset", mode.c_str());
  forced_ = mode != "auto";
  forcedForm_ = mode == "kernel" ? BarrierForm::Sync : BarrierForm::Resets;
  sharedGpu_ = sharedGpu;
  if (mode == "auto")
    TETHER_LOG_INFO(LogSys::Core, "stream barriers: memory operations with epochs; captured into a CUDA graph: %s",
                    barrierFormName(sharedGpu ? BarrierForm::Resets : BarrierForm::Sync));
  return Status::ok();
}

Status StreamRuntime::barrierForm(StreamOps& so, void* stream, BarrierForm* out) const {
  if (forced_) {
    *out = forcedForm_;
    return Status::ok();
  }
  bool capturing = false;
  TETHER_TRY(so.capturing(stream, &capturing));
  *out = !capturing ? BarrierForm::Epochs : sharedGpu_ ? BarrierForm::Resets : BarrierForm::Sync;
  return Status::ok();
}

Status StreamRuntime::ops(StreamOps** out) {
  std::lock_guard<std::mutex> lock(mu_);
  return opsLocked(out);
}

Status StreamRuntime::opsLocked(StreamOps** out) {
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

Status StreamRuntime::engineStream(int lane, StreamOps** ops, void** stream) {
  std::lock_guard<std::mutex> lock(mu_);
  TETHER_TRY(opsLocked(ops));
  if (lane < 0) TETHER_FAIL(TETHER_ERR_INTERNAL, "engineStream: lane %d", lane);
  const size_t k = static_cast<size_t>(lane);
  if (engines_.size() <= k) engines_.resize(k + 1, nullptr);
  if (!engines_[k]) TETHER_TRY((*ops)->createStream(&engines_[k]));
  *stream = engines_[k];
  return Status::ok();
}

void StreamRuntime::install(std::unique_ptr<StreamOps> ops) {
  std::lock_guard<std::mutex> lock(mu_);
  dropEngineLocked();
  ops_ = std::move(ops);
}

void StreamRuntime::close() {
  std::lock_guard<std::mutex> lock(mu_);
  dropEngineLocked();
  ops_.reset();
}

void StreamRuntime::dropEngineLocked() {
  for (void* s : engines_)
    if (s && ops_) TETHER_WARN_ON_FAIL(ops_->destroyStream(s));
  engines_.clear();
}

}  // namespace tether
