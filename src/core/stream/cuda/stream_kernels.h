// One-thread kernels of the stream path (#6), for what stream memory operations cannot do: narrow stores, AMOs,
// comparisons memops lack, memops on GPUs without them, and proxy calls. Launched on the user's stream (so ordered
// with its other work and capturable in graphs); parameters are captured at launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/stream_ops.h"

namespace tether {
namespace streamdetail {
enum class CollGroup : int;  // core/stream/stream_coll_call.h
}  // namespace streamdetail
namespace gpukernels {

// Wait modes of launchWait: a tether_cmp_t (0..5, unsigned or signed) or a memop condition.
enum WaitMode : int { kWaitCmpBase = 0, kWaitCondBase = 16 };

// Store of width 1, 2, 4 or 8 bytes; release (system fence first) when release != 0.
cudaError_t launchStore(cudaStream_t stream, void* addr, uint64_t value, unsigned width, int release);
// AMO of width 4/8 with system-scope atomics; the old value (width bytes) to fetched when not null.
cudaError_t launchStreamAmo(cudaStream_t stream, void* target, const AmoArgs& a, void* fetched);
// Spins (acquire loads at system scope) until the condition holds; mode = kWaitCmpBase + tether_cmp_t or
// kWaitCondBase + StreamCond. Bounded by timeoutNs (0: unbounded): on expiry prints the word and traps.
cudaError_t launchWait(cudaStream_t stream, const uint64_t* addr, int mode, uint64_t value, int isSigned,
                       uint64_t timeoutNs);
// Adds 1 to each of words[0..n) (n <= kWordsPerCall, core/stream_ops.h: StreamOps::increment), a system fence
// before (release) and after; the addresses travel in the kernel's parameters.
cudaError_t launchIncrement(cudaStream_t stream, uint64_t* const* words, size_t n);
// Spins until *reach[i] >= *target[i] (cyclic) for each i < n (<= kWordsPerCall), every target read first
// (StreamOps::waitReach). Bounded by timeoutNs (0: unbounded): on expiry prints the words and traps.
cudaError_t launchWaitReach(cudaStream_t stream, const uint64_t* const* reach, const uint64_t* const* target, size_t n,
                            uint64_t timeoutNs);
// System-scope memory barrier (__threadfence_system) in stream order.
cudaError_t launchFence(cudaStream_t stream);
// Runs one proxy call (an Op, core/op.h) through the device API's proxy ring (core/stream/stream_proxy_call.h).
cudaError_t launchProxyCall(cudaStream_t stream, const tether_device_handle_t& handle, const Op& call);
// Runs one team collective (core/stream/stream_coll_call.h), the device form at Scope::Grid: one block of
// call.threads threads (at most kCollBlockThreads) when call.blocks <= 1, else a cooperative grid of min(call.blocks,
// what the device holds resident at once) blocks of kCollBlockThreads. The kernel of the call's group
// (launchCollGroup).
cudaError_t launchCollCall(cudaStream_t stream, const tether_device_handle_t& handle, const tether_device_team_t& team,
                           const StreamCollCall& call);
// launchCollCall for the calls of group G, and G's kernel; instantiated one group per translation unit
// (core/stream/cuda/coll_group_*.cu).
template <streamdetail::CollGroup G>
cudaError_t launchCollGroup(cudaStream_t stream, const tether_device_handle_t& handle, const tether_device_team_t& team,
                            const StreamCollCall& call);
template <streamdetail::CollGroup G>
const void* collGroupKernelAddress();
// Loads the kernels above into the current device's context now, as kernels.h's preload: none of them may be loaded
// lazily at a launch while a stream memop wait of this context (an armed doorbell) is pending. First load error.
cudaError_t preloadStreamKernels();

}  // namespace gpukernels
}  // namespace tether
