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

}  // namespace gpukernels
}  // namespace tether
