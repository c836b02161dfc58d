// GpuStages (core/gpu_stages.h): first fit over the stages kept, else a new one.
#include "core/gpu_stages.h"

#include <algorithm>

#include "gpu/gpu.h"

namespace tether {

Status GpuStages::acquire(GpuContext& gpu, size_t bytes, const char* what, Stage** out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : stages_) {
    bool idle = false;
    if (s->bytes >= bytes && s->busy.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
      *out = s.get();
      return Status::ok();
    }
  }
  std::unique_ptr<Stage> s(new Stage());
  s->bytes = std::max(bytes, minBytes_);
  TETHER_TRY(gpu.allocDevice(s->bytes, &s->p).withContext(what));
  s->busy.store(true);
  *out = s.get();
  stages_.push_back(std::move(s));
  return Status::ok();
}

}  // namespace tether
