// SiblingPaths: contracts in core/sibling_paths.h.
#include "core/sibling_paths.h"

#include "core/world.h"

namespace tether {

Status SiblingPaths::create(World& world, const char* who, std::unique_ptr<SiblingPaths>* out) {
  std::unique_ptr<SiblingPaths> p(new SiblingPaths(world));
  if (world.gpu()) TETHER_TRY(world.gpu()->createSibling(&p->gpu_).withContext(who));
  *out = std::move(p);
  return Status::ok();
}

void* SiblingPaths::ctx(const SegPath& p) {
  if (!gpu_) return p.ctx;
  if (p.ctx == world_.gpu()) return gpu_.get();
  if (p.ops != &stagedTransportOps()) return p.ctx;
  const int dev = static_cast<StagedGpu*>(p.ctx)->device();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : staged_)
    if (s->device() == dev) return s.get();
  staged_.emplace_back(new StagedGpu(gpu_.get(), dev));
  return staged_.back().get();
}

}  // namespace tether
