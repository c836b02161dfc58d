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

__device__ inline uint64_t loadAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ inline void storeReleaseSys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// One thread (kernels.h, launchService). The fields of a slot are read with volatile loads after the acquire of its
// seq, so nothing stale comes from a cache; done is stored with release after the operation and its result.
__global__ void serviceKernel(const ServiceSlot* slots, ServiceState* state, uint64_t next, uint64_t idleNs,
                              uint64_t epoch) {
  uint64_t idleSince = globalNs();
  for (;;) {
    const ServiceSlot* s = &slots[next % kServiceSlots];
    if (loadAcquireSys(&s->seq) != next) {
      if (globalNs() - idleSince > idleNs) break;
      continue;
    }
    const volatile ServiceSlot* v = s;
    const uint32_t kind = v->kind;
    void* target = reinterpret_cast<void*>(v->target);
    const uint64_t value = v->value;
    if (kind == kServiceAmo) {
      const tether_amo_t op = static_cast<tether_amo_t>(v->op);
      uint64_t old;
      if (v->width == 4)
        old = amoOnWord(static_cast<unsigned int*>(target), op, static_cast<unsigned int>(value),
                        static_cast<unsigned int>(v->cond));
      else
        old = amoOnWord(static_cast<unsigned long long*>(target), op, static_cast<unsigned long long>(value),
                        static_cast<unsigned long long>(v->cond));
      state->result[next % kServiceSlots] = old;
    } else if (kind == kServiceSignalSet) {
      storeReleaseSys(static_cast<uint64_t*>(target), value);
    } else if (kind == kServiceSignalAdd) {
      __threadfence_system();
      atomicAdd_system(static_cast<unsigned long long*>(target), static_cast<unsigned long long>(value));
    }
    storeReleaseSys(&state->done, next);
    ++next;
    if (kind == kServiceStop) break;
    idleSince = globalNs();
  }
  storeReleaseSys(&state->exited, epoch);
}

}  // namespace

cudaError_t launchService(cudaStream_t stream, const ServiceSlot* slots, ServiceState* state, uint64_t next,
                          uint64_t idleNs, uint64_t epoch) {
  serviceKernel<<<1, 1, 0, stream>>>(slots, state, next, idleNs, epoch);
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
