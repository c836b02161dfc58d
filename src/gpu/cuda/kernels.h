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
// The host service (host_service.h): one GPU thread that stays resident and executes the atomics and signals the
// host posts into a ring of slots in host-mapped pinned memory, so that a host atomic on a GPU word costs a PCIe
// round trip instead of a kernel launch and a stream synchronisation.
constexpr uint32_t kServiceSlots = 64;
enum ServiceKind : uint32_t { kServiceAmo = 1, kServiceSignalSet = 2, kServiceSignalAdd = 3, kServiceStop = 4 };
// Written by the host; seq (the ticket, from 1) is stored last with release, the fields before it.
struct alignas(64) ServiceSlot {
  uint64_t seq;
  uint32_t kind;   // ServiceKind
  uint32_t op;     // tether_amo_t (kServiceAmo)
  uint32_t width;  // 4 or 8 (kServiceAmo)
  uint32_t pad;
  uint64_t target;  // GPU address of the word
  uint64_t value;
  uint64_t cond;
};
// Written by the GPU thread: done = the last ticket executed (release, after its result), exited = the launch epoch
// of a kernel that returned (after its last done).
struct ServiceState {
  alignas(64) uint64_t done;
  alignas(64) uint64_t exited;
  alignas(64) uint64_t result[kServiceSlots];  // result[ticket % kServiceSlots]: the old value of an AMO
};
// Serves tickets next, next + 1, ... in order from slots (a device alias of the ring) until it has had no request
// for idleNs nanoseconds (%globaltimer) or serves a kServiceStop; then stores epoch to state->exited and returns.
cudaError_t launchService(cudaStream_t stream, const ServiceSlot* slots, ServiceState* state, uint64_t next,
                          uint64_t idleNs, uint64_t epoch);

// Loads the kernels above into the current device's context now (cudaFuncGetAttributes forces the load). Needed
// because of lazy loading (CUDA_MODULE_LOADING=LAZY, the default on Linux since CUDA 12.2): a kernel's first launch
// loads it, and loading may synchronise the whole context. So a first launch would wait for every stream of the
// context: forever when one of them holds the wait it is meant to satisfy (the device API's proxy thread serving a
// spinning kernel; a host tether_signal_op ringing an armed doorbell). Call once per (context, device) before any such
// launch; returns the first load error (a launch would fail the same way later).
cudaError_t preload();

}  // namespace gpukernels
}  // namespace tether
