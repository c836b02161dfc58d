// GpuStages: staging buffers for GPU work that must not wait for an allocation or a free: GPU memory for
// stream-ordered work (typed RMA's staged route on a stream, core/rma_typed.cpp; typed messages,
// core/msg_typed.cpp), or pinned host memory that a copy engine fills at full speed (a GPU send buffer staged for a
// network transport, core/messaging.cpp: a fresh pageable buffer per message cost page faults and the driver's own
// staging on every copy).
//
// A GPU stage is plain cudaMalloc memory (GpuContext::allocDevice), not stream-ordered pool memory, which the
// transports may not handle (UCX 1.22 with CUDA 13 crashed probing pool allocations, gpu_netns_rma_typed 2026-11-26;
// rapidsai/ucxx#749), and it keeps its address, so a peer's CUDA IPC mapping of it stays cached across uses. A host
// stage is portable pinned memory (GpuContext::allocPinned).
// Contract: acquire hands out a stage no one else holds (busy) of at least the bytes asked (the smallest idle one);
// the holder releases it once nothing will touch it any more -- a stream host call enqueued after the stream's last
// use (release is one atomic store, allowed there), or the host once the work that reads it is complete. A stage whose
// release never comes (an enqueue that failed half-way: the stream may still use it) stays busy: memory kept, never
// reused early.
// Lifetime of the memory: stages are freed with the GPU context, not before -- no cudaFree / cudaFreeHost on the way:
// a peer may hold an IPC mapping of a GPU stage, and freeing memory may wait for the whole GPU, where a kernel can
// be waiting for this PE's next message (a pinned pool that freed idle stages to make room ran gpu_msg's netns test,
// 5 s otherwise, past 65 s without finishing, 2026-12-04; likely that). So the memory is the peak of what was held
// at once, for the context's life (also past this object's, which a later owner does not reuse). A pool may have a
// budget (maxBytes): a new stage that would bring its bytes over it is refused (TETHER_ERR_NO_MEMORY); idle stages
// that fit are still reused.
// Thread-safety: acquire from any thread (one mutex); release from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace tether {

class GpuContext;

class GpuStages {
 public:
  struct Stage {
    void* p = nullptr;
    size_t bytes = 0;
    std::atomic<bool> busy{false};
    void release() { busy.store(false, std::memory_order_release); }
  };
  enum class Memory { Device, PinnedHost };
  // minBytes: the smallest stage made (fewer, reusable stages for small requests). maxBytes: the most bytes of
  // stages made (0: no limit).
  explicit GpuStages(size_t minBytes, Memory memory = Memory::Device, size_t maxBytes = 0);
  // *out: a free stage of at least bytes (busy now), else a new one of max(bytes, minBytes) from gpu. what names the
  // user in an allocation failure or a refusal by the budget.
  Status acquire(GpuContext& gpu, size_t bytes, const char* what, Stage** out);
  size_t heldBytes() const;  // the bytes of every stage made and not freed (busy or idle)

 private:
  const size_t minBytes_;
  const Memory memory_;
  const size_t maxBytes_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Stage>> stages_;  // (mu_)
  size_t held_ = 0;                              // (mu_) the stages' bytes
};

}  // namespace tether
