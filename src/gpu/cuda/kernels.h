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
// The host service (host_service.h): a block of GPU warps that stays resident and executes the atomics, signals and
// small puts/gets the host posts into a ring of slots in host-mapped pinned memory, so that a host atomic on a GPU
// word costs a PCIe round trip instead of a kernel launch and a stream synchronisation.
constexpr uint32_t kServiceSlots = 64;
enum ServiceKind : uint32_t {
  kServiceAmo = 1, kServiceSignalSet = 2, kServiceSignalAdd = 3, kServiceStop = 4,
  kServicePut = 5,  // bytes (head bits 24-31, <= kServiceBytes) from the value and cond words to the target
  kServiceGet = 6,  // bytes from the target to result[slot][0..1]
};
constexpr uint32_t kServiceBytes = 16;
// A slot is 8 words, each (ticket's low 32 bits) << 32 | 32 bits of the request, so that the warp reads a whole
// request with one 64-byte load (8 lanes, one word each) and knows it complete when every word carries the ticket:
// no word can be older than the others, whatever order the host's stores reach it in (each 8-byte store and load is
// single-copy atomic). Words: 0 kind | op << 8 | width << 16 | bytes << 24; 1-2 the target's GPU address; 3-4 value;
// 5-6 cond (low half first; a put's bytes are value then cond, little-endian); 7 none.
struct alignas(64) ServiceSlot {
  uint64_t word[8];
};
enum : unsigned { kSlotHead, kSlotTarget, kSlotValue = 3, kSlotCond = 5, kSlotWords = 8 };
inline uint32_t serviceHead(uint32_t kind, uint32_t op = 0, uint32_t width = 0, uint32_t bytes = 0) {
  return kind | op << 8 | width << 16 | bytes << 24;
}
// Written by the warp: done = the last ticket executed (release, after its result and those before it), exited =
// the launch epoch of a kernel that returned (after its last done).
struct ServiceState {
  alignas(64) uint64_t done;
  alignas(64) uint64_t exited;
  alignas(64) uint64_t result[kServiceSlots][2];  // [ticket % kServiceSlots]: an AMO's old value, a get's bytes
};
// Serves tickets next, next + 1, ... in order from slots (a device alias of the ring; up to 4 per poll) until it has
// had no request for idleNs nanoseconds (%globaltimer) or serves a kServiceStop; then stores epoch to state->exited
// and returns. One block of `pollers` warps (1-32) polling in turn, one executing at a time (kernels.cu).
cudaError_t launchService(cudaStream_t stream, const ServiceSlot* slots, ServiceState* state, uint64_t next,
                          uint64_t idleNs, uint64_t epoch, unsigned pollers, uint64_t staggerNs);

// Loads the kernels above into the current device's context now (cudaFuncGetAttributes forces the load). Needed
// because of lazy loading (CUDA_MODULE_LOADING=LAZY, the default on Linux since CUDA 12.2): a kernel's first launch
// loads it, and loading may synchronise the whole context. So a first launch would wait for every stream of the
// context: forever when one of them holds the wait it is meant to satisfy (the device API's proxy thread serving a
// spinning kernel; a host tether_signal_op ringing an armed doorbell). Call once per (context, device) before any such
// launch; returns the first load error (a launch would fail the same way later).
cudaError_t preload();

}  // namespace gpukernels
}  // namespace tether
