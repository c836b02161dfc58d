// GpuStages (core/gpu_stages.h): the smallest idle stage that fits, else a new one (within the budget, if any).
#include "core/gpu_stages.h"

#include <algorithm>
#include <cassert>

#include "gpu/gpu.h"

namespace tether {

GpuStages::GpuStages(size_t minBytes, Memory memory, size_t maxBytes)
    : minBytes_(minBytes), memory_(memory), maxBytes_(maxBytes) {
  assert((memory == Memory::PinnedHost || maxBytes == 0) && "GPU stages are never freed early: no budget");
}

size_t GpuStages::heldBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

Status GpuStages::acquire(GpuContext& gpu, size_t bytes, const char* what, Stage** out) {
  std::lock_guard<std::mutex> lock(mu_);
  // Best fit, so a small request does not hold a large stage that the next large one would then allocate again.
  // Only acquire (under mu_) marks a stage busy, so one seen idle here stays idle until taken (or freed here).
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
  Status err;
  if (maxBytes_ && !makeRoom(gpu, s->bytes, what, &err)) return err;
  TETHER_TRY((memory_ == Memory::Device ? gpu.allocDevice(s->bytes, &s->p) : gpu.allocPinned(s->bytes, &s->p))
                 .withContext(what));
  s->busy.store(true);
  held_ += s->bytes;
  *out = s.get();
  stages_.push_back(std::move(s));
  return Status::ok();
}

bool GpuStages::makeRoom(GpuContext& gpu, size_t bytes, const char* what, Status* err) {
  size_t idle = 0;
  for (auto& s : stages_)
    if (!s->busy.load(std::memory_order_acquire)) idle += s->bytes;
  if (held_ - idle + bytes > maxBytes_) {
    *err = Status(TETHER_ERR_NO_MEMORY, strprintf("%s: %zu bytes would exceed the budget of %zu pinned bytes (%zu "
                                                  "held by stages in use)", what, bytes, maxBytes_, held_ - idle));
    return false;
  }
  // Largest idle first: the fewest frees, and the small stages that most requests reuse stay.
  std::sort(stages_.begin(), stages_.end(), [](const std::unique_ptr<Stage>& a, const std::unique_ptr<Stage>& b) {
    return a->bytes > b->bytes;
  });
  for (auto it = stages_.begin(); it != stages_.end() && held_ + bytes > maxBytes_;) {
    if ((*it)->busy.load(std::memory_order_acquire)) {
      ++it;
      continue;
    }
    const Status f = gpu.freePinned((*it)->p);
    if (!f.isOk()) {  // kept (and counted): the memory may still be in use as far as this pool can tell
      *err = f.withContext(what);
      return false;
    }
    held_ -= (*it)->bytes;
    it = stages_.erase(it);
  }
  return true;
}

}  // namespace tether
