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

// The service warps' shared words are read and written only by atomics after the start (an atomic read is an OR of
// 0), with block fences for acquire and release: no plain access of one warp races another's (racecheck).
__device__ inline unsigned long long sharedAcquire(unsigned long long* p) {
  const unsigned long long v = atomicOr(p, 0ull);
  __threadfence_block();
  return v;
}

__device__ inline void sharedRelease(unsigned long long* p, unsigned long long v) {
  __threadfence_block();
  atomicExch(p, v);
}

// Pollers (kernels.h, launchService): each warp polls the next 4 slots with one load by its 32 lanes (8 lanes per
// slot, one word each); warp w starts w * staggerNs later than warp 0, so that the warps' reads of host memory are
// spread over a poll instead of one warp's read, then its loop, then the next read. On one H100, a blocking 8 B put
// took 3.8-4.3 us with one warp, 3.5-3.8 with two, but 4.3-4.4 with three, 5.2 with four and 9.6 with eight
// (bench/results/h100/service_pollers_2026-12-06.txt): more reads in flight slow each answer down. A warp
// whose load shows the slots from the shared next ticket carrying their tickets in every word, in order, claims
// them (a CAS of next to next | kBusy, so no other warp executes until it is done), lane 0 executes them one after
// the other, stores done once (release, system scope) for the last of them, then releases next past them (release,
// block scope: the next executor's requests follow these). Every warp leaves after idleNs without an execution by
// any warp, or once a warp served kServiceStop; the last one out stores exited.
__global__ void serviceKernel(const ServiceSlot* slots, ServiceState* state, uint64_t first, uint64_t idleNs,
                              uint64_t epoch, uint64_t staggerNs) {
  constexpr unsigned kPerPoll = 32 / kSlotWords;
  constexpr unsigned long long kBusy = 1ull << 63;
  __shared__ unsigned long long next;     // the next ticket to execute, | kBusy while a warp executes
  __shared__ unsigned long long active;   // %globaltimer of the last execution (or of the start)
  __shared__ unsigned long long stopped;  // a warp served kServiceStop
  const unsigned lane = threadIdx.x % 32, sub = lane / kSlotWords, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) {
    next = first;
    active = globalNs();
    stopped = 0;
  }
  __syncthreads();
  if (warp > 0) {
    const uint64_t until = globalNs() + warp * staggerNs;
    while (globalNs() < until) {
    }
  }
  while (true) {
    // Lane 0 reads the shared words for the warp (the other lanes touch no shared memory).
    unsigned long long n = 0, halt = 0;
    if (lane == 0) {
      halt = atomicOr(&stopped, 0ull);
      n = sharedAcquire(&next);
    }
    n = __shfl_sync(0xffffffffu, n, 0);
    if (__shfl_sync(0xffffffffu, halt, 0)) break;
    if (n & kBusy) continue;
    const uint64_t ticket = n + sub;
    const uint64_t* word = &slots[ticket % kServiceSlots].word[lane % kSlotWords];
    const uint64_t mine = *reinterpret_cast<const volatile uint64_t*>(word);
    const unsigned ready = __ballot_sync(0xffffffffu, (mine >> 32) == (ticket & 0xffffffffu));
    unsigned k = 0;
    while (k < kPerPoll && ((ready >> (k * kSlotWords)) & 0xffu) == 0xffu) ++k;
    if (k == 0) {
      int leave = 0;
      if (lane == 0) leave = globalNs() - atomicOr(&active, 0ull) > idleNs;
      if (__shfl_sync(0xffffffffu, leave, 0)) break;
      continue;
    }
    int won = 0;
    if (lane == 0) won = atomicCAS(&next, n, n | kBusy) == n;
    if (!__shfl_sync(0xffffffffu, won, 0)) continue;
    bool stop = false;
    uint64_t t = n;
    for (unsigned j = 0; j < k && !stop; ++j) {
      uint64_t w[kSlotWords];
#pragma unroll
      for (unsigned i = 0; i < kSlotWords; ++i)
        w[i] = __shfl_sync(0xffffffffu, mine, static_cast<int>(j * kSlotWords + i)) & 0xffffffffu;
      if (lane == 0) executeRequest(w, t, state);
      stop = (w[kSlotHead] & 0xff) == kServiceStop;
      ++t;
    }
    if (lane == 0) {
      storeReleaseSys(&state->done, t - 1);
      atomicExch(&active, globalNs());
      if (stop) atomicExch(&stopped, 1ull);
      sharedRelease(&next, t);
    }
    __syncwarp();
    if (stop) break;
  }
  __syncthreads();
  if (threadIdx.x == 0) storeReleaseSys(&state->exited, epoch);
}

}  // namespace

cudaError_t launchService(cudaStream_t stream, const ServiceSlot* slots, ServiceState* state, uint64_t next,
                          uint64_t idleNs, uint64_t epoch, unsigned pollers, uint64_t staggerNs) {
  serviceKernel<<<1, 32 * pollers, 0, stream>>>(slots, state, next, idleNs, epoch, staggerNs);
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
