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
// Loads the kernels above into the current device's context now (cudaFuncGetAttributes forces the load). Needed
// because of lazy loading (CUDA_MODULE_LOADING=LAZY, the default on Linux since CUDA 12.2): a kernel's first launch
// loads it, and loading may synchronise the whole context. The device API's proxy thread launches these kernels while
// the kernel it serves spins in the same context waiting for them; a first launch then waits for that kernel, which
// waits for the proxy, until TETHER_TIMEOUT traps it. Call once per (context, device) before any such launch.
cudaError_t preload();

}  // namespace gpukernels
}  // namespace tether
