#include "gpu/cuda/amo.cuh"
#include "gpu/cuda/kernels.h"

namespace tether {
namespace gpukernels {
namespace {

__global__ void amoKernel(void* target, AmoArgs a, uint64_t* result) {
  __threadfence_system();
  uint64_t old;
  if (a.width == 4)
    old = amoOnWord(static_cast<unsigned int*>(target), a.op, static_cast<unsigned int>(a.value),
                static_cast<unsigned int>(a.cond));
  else
    old = amoOnWord(static_cast<unsigned long long*>(target), a.op, static_cast<unsigned long long>(a.value),
                static_cast<unsigned long long>(a.cond));
  *result = old;
  __threadfence_system();
}

__global__ void signalKernel(uint64_t* target, uint64_t value, int isAdd) {
  __threadfence_system();
  if (isAdd) {
    atomicAdd_system(reinterpret_cast<unsigned long long*>(target), static_cast<unsigned long long>(value));
  } else {
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(target), "l"(value) : "memory");
  }
}

__device__ inline uint64_t globalNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ inline void storeReleaseSys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// One warp (kernels.h, launchService): lanes 0-7 poll the next slot with one 64-byte load; once every word carries
// the ticket, lane 0 executes the request and stores its result, then done with release.
__global__ void serviceKernel(const ServiceSlot* slots, ServiceState* state, uint64_t next, uint64_t idleNs,
                              uint64_t epoch) {
  const unsigned lane = threadIdx.x;
  uint64_t idleSince = globalNs();
  for (;;) {
    const uint64_t* words = slots[next % kServiceSlots].word;
    uint64_t mine = 0;
    if (lane < kSlotWords) mine = *reinterpret_cast<const volatile uint64_t*>(&words[lane]);
    const bool ok = lane >= kSlotWords || (mine >> 32) == (next & 0xffffffffu);
    if (!__all_sync(0xffffffffu, ok)) {
      int leave = 0;
      if (lane == 0) leave = globalNs() - idleSince > idleNs;
      if (__shfl_sync(0xffffffffu, leave, 0)) break;
      continue;
    }
    uint64_t w[kSlotWords];
#pragma unroll
    for (unsigned i = 0; i < kSlotWords; ++i) w[i] = __shfl_sync(0xffffffffu, mine, static_cast<int>(i)) & 0xffffffffu;
    const uint32_t kind = static_cast<uint32_t>(w[kSlotHead] & 0xff);
    if (lane == 0) {
      void* target = reinterpret_cast<void*>(w[kSlotTarget] | w[kSlotTarget + 1] << 32);
      const uint64_t value = w[kSlotValue] | w[kSlotValue + 1] << 32;
      if (kind == kServiceAmo) {
        const tether_amo_t op = static_cast<tether_amo_t>((w[kSlotHead] >> 8) & 0xff);
        const uint64_t cond = w[kSlotCond] | w[kSlotCond + 1] << 32;
        uint64_t old;
        if (((w[kSlotHead] >> 16) & 0xff) == 4)
          old = amoOnWord(static_cast<unsigned int*>(target), op, static_cast<unsigned int>(value),
                          static_cast<unsigned int>(cond));
        else
          old = amoOnWord(static_cast<unsigned long long*>(target), op, static_cast<unsigned long long>(value),
                          static_cast<unsigned long long>(cond));
        state->result[next % kServiceSlots][0] = old;
      } else if (kind == kServicePut || kind == kServiceGet) {
        const unsigned bytes = static_cast<unsigned>(w[kSlotHead] >> 24) & 0xff;
        unsigned char* t = static_cast<unsigned char*>(target);
        uint64_t data[2] = {value, w[kSlotCond] | w[kSlotCond + 1] << 32};
        unsigned char* d = reinterpret_cast<unsigned char*>(data);
        for (unsigned i = 0; i < bytes && i < kServiceBytes; ++i) {
          if (kind == kServicePut) t[i] = d[i];
          else d[i] = *reinterpret_cast<volatile unsigned char*>(t + i);
        }
        if (kind == kServiceGet) {
          state->result[next % kServiceSlots][0] = data[0];
          state->result[next % kServiceSlots][1] = data[1];
        }
      } else if (kind == kServiceSignalSet) {
        storeReleaseSys(static_cast<uint64_t*>(target), value);
      } else if (kind == kServiceSignalAdd) {
        __threadfence_system();
        atomicAdd_system(static_cast<unsigned long long*>(target), static_cast<unsigned long long>(value));
      }
      storeReleaseSys(&state->done, next);
    }
    __syncwarp();
    ++next;
    if (kind == kServiceStop) break;
    idleSince = globalNs();
  }
  if (lane == 0) storeReleaseSys(&state->exited, epoch);
}

}  // namespace

cudaError_t launchService(cudaStream_t stream, const ServiceSlot* slots, ServiceState* state, uint64_t next,
                          uint64_t idleNs, uint64_t epoch) {
  serviceKernel<<<1, 32, 0, stream>>>(slots, state, next, idleNs, epoch);
  return cudaGetLastError();
}

cudaError_t launchAmo(cudaStream_t stream, void* target, const AmoArgs& args, uint64_t* result) {
  amoKernel<<<1, 1, 0, stream>>>(target, args, result);
  return cudaGetLastError();
}

cudaError_t launchSignal(cudaStream_t stream, uint64_t* target, uint64_t value, int isAdd) {
  signalKernel<<<1, 1, 0, stream>>>(target, value, isAdd);
  return cudaGetLastError();
}

cudaError_t preload() {
  cudaFuncAttributes attr;
  cudaError_t e = cudaFuncGetAttributes(&attr, amoKernel);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, signalKernel);
  return e != cudaSuccess ? e : cudaFuncGetAttributes(&attr, serviceKernel);
}

}  // namespace gpukernels
}  // namespace tether
