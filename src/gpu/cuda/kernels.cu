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

// A small put (d -> t) or get (t -> d) of n bytes in the widest units t's alignment allows: an aligned 8-byte put is
// one store and an aligned 8-byte get one load, not eight (a get's volatile byte loads ran one after the other: 8 B
// took 5.3 us against 4.0 for an atomic on one H100, bench/results/h100/service_poll_ab_2026-12-06.txt).
__device__ void moveSmall(unsigned char* t, unsigned char* d, unsigned n, bool put) {
  for (unsigned i = 0; i < n;) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(t + i);
    const unsigned left = n - i;
    const unsigned w = at % 8 == 0 && left >= 8 ? 8 : at % 4 == 0 && left >= 4 ? 4 : at % 2 == 0 && left >= 2 ? 2 : 1;
    if (put) {
      uint64_t v = 0;
      for (unsigned k = 0; k < w; ++k) v |= static_cast<uint64_t>(d[i + k]) << (8 * k);
      if (w == 8) *reinterpret_cast<uint64_t*>(t + i) = v;
      else if (w == 4) *reinterpret_cast<uint32_t*>(t + i) = static_cast<uint32_t>(v);
      else if (w == 2) *reinterpret_cast<uint16_t*>(t + i) = static_cast<uint16_t>(v);
      else t[i] = static_cast<unsigned char>(v);
    } else {
      uint64_t v;
      if (w == 8) v = *reinterpret_cast<volatile uint64_t*>(t + i);
      else if (w == 4) v = *reinterpret_cast<volatile uint32_t*>(t + i);
      else if (w == 2) v = *reinterpret_cast<volatile uint16_t*>(t + i);
      else v = *reinterpret_cast<volatile unsigned char*>(t + i);
      for (unsigned k = 0; k < w; ++k) d[i + k] = static_cast<unsigned char>(v >> (8 * k));
    }
    i += w;
  }
}

// Executes one request (its words without their tags) by the calling thread; done is stored by the caller.
__device__ void executeRequest(const uint64_t* w, uint64_t ticket, ServiceState* state) {
  const uint32_t kind = static_cast<uint32_t>(w[kSlotHead] & 0xff);
  void* target = reinterpret_cast<void*>(w[kSlotTarget] | w[kSlotTarget + 1] << 32);
  const uint64_t value = w[kSlotValue] | w[kSlotValue + 1] << 32;
  const uint64_t cond = w[kSlotCond] | w[kSlotCond + 1] << 32;
  uint64_t* result = state->result[ticket % kServiceSlots];
  if (kind == kServiceAmo) {
    const tether_amo_t op = static_cast<tether_amo_t>((w[kSlotHead] >> 8) & 0xff);
    if (((w[kSlotHead] >> 16) & 0xff) == 4)
      result[0] = amoOnWord(static_cast<unsigned int*>(target), op, static_cast<unsigned int>(value),
                            static_cast<unsigned int>(cond));
    else
      result[0] = amoOnWord(static_cast<unsigned long long*>(target), op, static_cast<unsigned long long>(value),
                            static_cast<unsigned long long>(cond));
  } else if (kind == kServicePut || kind == kServiceGet) {
    const unsigned bytes = static_cast<unsigned>(w[kSlotHead] >> 24) & 0xff;
    uint64_t data[2] = {value, cond};
    moveSmall(static_cast<unsigned char*>(target), reinterpret_cast<unsigned char*>(data),
              bytes < kServiceBytes ? bytes : kServiceBytes, kind == kServicePut);
    if (kind == kServiceGet) {
      result[0] = data[0];
      result[1] = data[1];
    }
  } else if (kind == kServiceSignalSet) {
    storeReleaseSys(static_cast<uint64_t*>(target), value);
  } else if (kind == kServiceSignalAdd) {
    __threadfence_system();
    atomicAdd_system(static_cast<unsigned long long*>(target), static_cast<unsigned long long>(value));
  }
}

// One warp (kernels.h, launchService): each poll is one load by all 32 lanes of the next 4 slots (8 lanes per slot,
// one word each); the slots that carry their tickets in every word, in order from the first, are executed by lane 0
// one after the other, then done is stored once (release) for the last of them.
__global__ void serviceKernel(const ServiceSlot* slots, ServiceState* state, uint64_t next, uint64_t idleNs,
                              uint64_t epoch) {
  constexpr unsigned kPerPoll = 32 / kSlotWords;
  const unsigned lane = threadIdx.x, sub = lane / kSlotWords;
  uint64_t idleSince = globalNs();
  bool stop = false;
  while (!stop) {
    const uint64_t ticket = next + sub;
    const uint64_t* word = &slots[ticket % kServiceSlots].word[lane % kSlotWords];
    const uint64_t mine = *reinterpret_cast<const volatile uint64_t*>(word);
    const unsigned ready = __ballot_sync(0xffffffffu, (mine >> 32) == (ticket & 0xffffffffu));
    unsigned k = 0;
    while (k < kPerPoll && ((ready >> (k * kSlotWords)) & 0xffu) == 0xffu) ++k;
    if (k == 0) {
      int leave = 0;
      if (lane == 0) leave = globalNs() - idleSince > idleNs;
      if (__shfl_sync(0xffffffffu, leave, 0)) break;
      continue;
    }
    for (unsigned j = 0; j < k && !stop; ++j) {
      uint64_t w[kSlotWords];
#pragma unroll
      for (unsigned i = 0; i < kSlotWords; ++i)
        w[i] = __shfl_sync(0xffffffffu, mine, static_cast<int>(j * kSlotWords + i)) & 0xffffffffu;
      if (lane == 0) executeRequest(w, next, state);
      stop = (w[kSlotHead] & 0xff) == kServiceStop;
      ++next;
    }
    if (lane == 0) storeReleaseSys(&state->done, next - 1);
    __syncwarp();
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
