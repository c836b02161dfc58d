// Small kernels of the host path (compiled by nvcc in kernels.cu): atomics and signals on GPU-addressable words,
// executed by one thread with system-scope atomics. Launch on `stream`; the caller synchronises.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "transport/transport.h"

namespace tether {
namespace gpukernels {

// *result (host-mapped or device memory) receives the old value of fetching operations.
cudaError_t launchAmo(cudaStream_t stream, void* target, const AmoArgs& args, uint64_t* result);
// SET: release store at system scope; ADD: system-scope atomic add after a system fence.
cudaError_t launchSignal(cudaStream_t stream, uint64_t* target, uint64_t value, int isAdd);
// Loads the kernels above into the current device's context now (cudaFuncGetAttributes). Under CUDA's lazy loading
// (the default since 12.2) a kernel is otherwise loaded at its first launch, and loading may synchronise the whole
// context: that first launch would then wait for every stream of the context -- forever if one of them holds a stream
// memop wait that this very launch is meant to satisfy (an armed doorbell rung by tether_signal_op from the host).
// Returns the first load error (a launch would fail the same way later).
cudaError_t preload();

}  // namespace gpukernels
}  // namespace tether
