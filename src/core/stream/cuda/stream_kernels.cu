#include "core/stream/cuda/stream_kernels.h"

#include "core/stream/stream_coll_call.h"
#include "core/stream/stream_proxy_call.h"
#include "gpu/cuda/amo.cuh"

namespace tether {
namespace gpukernels {
namespace {

__device__ uint64_t globalNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ uint64_t loadAcquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ bool waitHolds(uint64_t x, int mode, uint64_t v, int isSigned) {
  if (mode >= kWaitCondBase) {
    switch (static_cast<StreamCond>(mode - kWaitCondBase)) {
      case StreamCond::Geq: return static_cast<int64_t>(x - v) >= 0;
      case StreamCond::Eq: return x == v;
      case StreamCond::And: return (x & v) != 0;
      case StreamCond::Nor: return ~(x | v) != 0;
    }
    return false;
  }
  // The device API's comparison (one definition for kernels, the CPU emulation and device.cuh).
  using device::Cmp;
  return isSigned ? device::detail::compare(static_cast<int64_t>(x), static_cast<Cmp>(mode), static_cast<int64_t>(v))
                  : device::detail::compare(x, static_cast<Cmp>(mode), v);
}

__global__ void storeKernel(void* addr, uint64_t value, unsigned width, int release) {
  if (release) __threadfence_system();
  switch (width) {
    case 1: *static_cast<volatile uint8_t*>(addr) = static_cast<uint8_t>(value); break;
    case 2: *static_cast<volatile uint16_t*>(addr) = static_cast<uint16_t>(value); break;
    case 4: *static_cast<volatile uint32_t*>(addr) = static_cast<uint32_t>(value); break;
    default: *static_cast<volatile uint64_t*>(addr) = value; break;
  }
  __threadfence_system();
}

__global__ void streamAmoKernel(void* target, AmoArgs a, void* fetched) {
  __threadfence_system();
  if (a.width == 4) {
    const unsigned int old = amoOnWord(static_cast<unsigned int*>(target), a.op, static_cast<unsigned int>(a.value),
                                       static_cast<unsigned int>(a.cond));
    if (fetched) *static_cast<unsigned int*>(fetched) = old;
  } else {
    const unsigned long long old = amoOnWord(static_cast<unsigned long long*>(target), a.op,
                                             static_cast<unsigned long long>(a.value),
                                             static_cast<unsigned long long>(a.cond));
    if (fetched) *static_cast<unsigned long long*>(fetched) = old;
  }
  __threadfence_system();
}

__global__ void waitKernel(const uint64_t* addr, int mode, uint64_t value, int isSigned, uint64_t timeoutNs) {
  const uint64_t start = globalNs();
  uint64_t seen;
  while (!waitHolds(seen = loadAcquire(addr), mode, value, isSigned)) {
    if (timeoutNs && globalNs() - start > timeoutNs) {
      printf("tether stream wait: timed out (TETHER_TIMEOUT) waiting for the word at %p, mode %d, value 0x%llx; "
             "last seen 0x%llx\n", addr, mode, static_cast<unsigned long long>(value),
             static_cast<unsigned long long>(seen));
      __trap();
    }
    __nanosleep(64);
  }
  __threadfence_system();
}

__global__ void fenceKernel() { __threadfence_system(); }

struct WordList {
  uint64_t* word[kWordsPerCall];
  unsigned n;
};
struct WordPairs {
  const uint64_t* reach[kWordsPerCall];
  const uint64_t* target[kWordsPerCall];
  unsigned n;
};

__global__ void incrementKernel(WordList l) {
  __threadfence_system();
  for (unsigned i = 0; i < l.n; ++i) {
    volatile uint64_t* w = l.word[i];
    *w = *w + 1;
  }
  __threadfence_system();
}

__global__ void waitReachKernel(WordPairs p, uint64_t timeoutNs) {
  uint64_t want[kWordsPerCall];
  for (unsigned i = 0; i < p.n; ++i) want[i] = loadAcquire(p.target[i]);
  const uint64_t start = globalNs();
  for (unsigned i = 0; i < p.n; ++i) {
    uint64_t seen;
    while (static_cast<int64_t>((seen = loadAcquire(p.reach[i])) - want[i]) < 0) {
      if (timeoutNs && globalNs() - start > timeoutNs) {
        printf("tether stream wait: timed out (TETHER_TIMEOUT) waiting for the word at %p to reach 0x%llx (the word "
               "at %p); last seen 0x%llx\n", p.reach[i], static_cast<unsigned long long>(want[i]), p.target[i],
               static_cast<unsigned long long>(seen));
        __trap();
      }
      __nanosleep(64);
    }
  }
  __threadfence_system();
}

__global__ void proxyCallKernel(tether_device_handle_t h, Op c) { streamdetail::runProxyCall(h, c); }

}  // namespace

cudaError_t launchStore(cudaStream_t stream, void* addr, uint64_t value, unsigned width, int release) {
  storeKernel<<<1, 1, 0, stream>>>(addr, value, width, release);
  return cudaGetLastError();
}

cudaError_t launchStreamAmo(cudaStream_t stream, void* target, const AmoArgs& a, void* fetched) {
  streamAmoKernel<<<1, 1, 0, stream>>>(target, a, fetched);
  return cudaGetLastError();
}

cudaError_t launchWait(cudaStream_t stream, const uint64_t* addr, int mode, uint64_t value, int isSigned,
                       uint64_t timeoutNs) {
  waitKernel<<<1, 1, 0, stream>>>(addr, mode, value, isSigned, timeoutNs);
  return cudaGetLastError();
}

cudaError_t launchIncrement(cudaStream_t stream, uint64_t* const* words, size_t n) {
  WordList l{};
  l.n = static_cast<unsigned>(n < kWordsPerCall ? n : kWordsPerCall);
  for (unsigned i = 0; i < l.n; ++i) l.word[i] = words[i];
  incrementKernel<<<1, 1, 0, stream>>>(l);
  return cudaGetLastError();
}

cudaError_t launchWaitReach(cudaStream_t stream, const uint64_t* const* reach, const uint64_t* const* target, size_t n,
                            uint64_t timeoutNs) {
  WordPairs p{};
  p.n = static_cast<unsigned>(n < kWordsPerCall ? n : kWordsPerCall);
  for (unsigned i = 0; i < p.n; ++i) {
    p.reach[i] = reach[i];
    p.target[i] = target[i];
  }
  waitReachKernel<<<1, 1, 0, stream>>>(p, timeoutNs);
  return cudaGetLastError();
}

cudaError_t launchFence(cudaStream_t stream) {
  fenceKernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launchProxyCall(cudaStream_t stream, const tether_device_handle_t& handle, const Op& call) {
  proxyCallKernel<<<1, 1, 0, stream>>>(handle, call);
  return cudaGetLastError();
}

cudaError_t launchCollCall(cudaStream_t stream, const tether_device_handle_t& handle, const tether_device_team_t& team,
                           const StreamCollCall& call) {
  using streamdetail::CollGroup;
  switch (streamdetail::collGroupOf(call)) {
    case CollGroup::Move: return launchCollGroup<CollGroup::Move>(stream, handle, team, call);
    case CollGroup::Signed: return launchCollGroup<CollGroup::Signed>(stream, handle, team, call);
    case CollGroup::Unsigned: return launchCollGroup<CollGroup::Unsigned>(stream, handle, team, call);
    case CollGroup::Float: return launchCollGroup<CollGroup::Float>(stream, handle, team, call);
    case CollGroup::Half: break;
  }
  return launchCollGroup<CollGroup::Half>(stream, handle, team, call);
}

cudaError_t preloadStreamKernels() {
  using streamdetail::CollGroup;
  const void* const kernels[] = {collGroupKernelAddress<CollGroup::Move>(),
                                 collGroupKernelAddress<CollGroup::Signed>(),
                                 collGroupKernelAddress<CollGroup::Unsigned>(),
                                 collGroupKernelAddress<CollGroup::Float>(),
                                 collGroupKernelAddress<CollGroup::Half>(),
                                 reinterpret_cast<const void*>(storeKernel),
                                 reinterpret_cast<const void*>(streamAmoKernel),
                                 reinterpret_cast<const void*>(waitKernel), reinterpret_cast<const void*>(fenceKernel),
                                 reinterpret_cast<const void*>(incrementKernel),
                                 reinterpret_cast<const void*>(waitReachKernel),
                                 reinterpret_cast<const void*>(proxyCallKernel)};
  cudaFuncAttributes a;
  for (const void* k : kernels) {
    const cudaError_t e = cudaFuncGetAttributes(&a, k);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace gpukernels
}  // namespace tether
