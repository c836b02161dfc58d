// GpuStages (core/gpu_stages.h): the smallest idle stage that fits, else a new one (within the budget, if any;
// nothing is freed).
#include "core/gpu_stages.h"

#include <algorithm>

#include "gpu/gpu.h"

namespace tether {

GpuStages::GpuStages(size_t minBytes, Memory memory, size_t maxBytes)
    : minBytes_(minBytes), memory_(memory), maxBytes_(maxBytes) {}

size_t GpuStages::heldBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

Status GpuStages::acquire(GpuContext& gpu, size_t bytes, const char* what, Stage** out) {
  std::lock_guard<std::mutex> lock(mu_);
  // Best fit, so a small request does not hold a large stage that the next large one would then allocate again.
  // Only acquire (under mu_) marks a stage busy, so one seen idle here stays idle until taken.
  Stage* best = nullptr;
  for (auto& s : stages_)
    if (s->bytes >= bytes && (!best || s->bytes < best->bytes) && !s->busy.load(std::memory_order_acquire))
      best = s.get();
  if (best) {
    best->busy.store(true, std::memory_order_relaxed);
    *out = best;
    return Status::ok();
  }
  std::unique_ptr<Stage> s(new Stage());
  s->bytes = std::max(bytes, minBytes_);
  if (maxBytes_ && (s->bytes > maxBytes_ || held_ > maxBytes_ - s->bytes))
    return Status(TETHER_ERR_NO_MEMORY, strprintf("%s: %zu more bytes would exceed the budget of %zu (%zu held)", what,
                                                  s->bytes, maxBytes_, held_));
  TETHER_TRY((memory_ == Memory::Device ? gpu.allocDevice(s->bytes, &s->p) : gpu.allocPinned(s->bytes, &s->p))
                 .withContext(what));
  s->busy.store(true);
  held_ += s->bytes;
  *out = s.get();
  stages_.push_back(std::move(s));
  return Status::ok();
}

}  // namespace tether
