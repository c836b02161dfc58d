// Small kernels of the host path (compiled by nvcc in kernels.cu): atomics and signals on GPU-addressable words,
// executed by one thread with system-scope atomics. Launch on `stream`; the caller synchronises.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "base/amo.h"

namespace tether {
namespace gpukernels {

// *result (host-mapped or device memory) receives the old value of fetching operations.
cudaError_t launchAmo(cudaStream_t stream, void* target, const AmoArgs& args, uint64_t* result);
// SET: release store at system scope; ADD: system-scope atomic add after a system fence.
cudaError_t launchSignal(cudaStream_t stream, uint64_t* target, uint64_t value, int isAdd);
// Loads the kernels above into the current device's context now (cudaFuncGetAttributes forces the load). Needed
// because of lazy loading (CUDA_MODULE_LOADING=LAZY, the default on Linux since CUDA 12.2): a kernel's first launch
// loads it, and loading may synchronise the whole context. So a first launch would wait for every stream of the
// context: forever when one of them holds the wait it is meant to satisfy (the device API's proxy thread serving a
// spinning kernel; a host tether_signal_op ringing an armed doorbell). Call once per (context, device) before any such
// launch; returns the first load error (a launch would fail the same way later).
cudaError_t preload();

}  // namespace gpukernels
}  // namespace tether
