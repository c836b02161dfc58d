#include "gpu/cuda/kernels.h"

namespace tether {
namespace gpukernels {
namespace {

template <typename U>
__device__ U amoOn(U* p, tether_amo_t op, U v, U c) {
  switch (op) {
    case TETHER_AMO_FETCH: return atomicAdd_system(p, U(0));
    case TETHER_AMO_SET: atomicExch_system(p, v); return 0;
    case TETHER_AMO_SWAP: return atomicExch_system(p, v);
    case TETHER_AMO_COMPARE_SWAP: return atomicCAS_system(p, c, v);
    case TETHER_AMO_INC:
    case TETHER_AMO_FETCH_INC: return atomicAdd_system(p, U(1));
    case TETHER_AMO_ADD:
    case TETHER_AMO_FETCH_ADD: return atomicAdd_system(p, v);
    case TETHER_AMO_AND:
    case TETHER_AMO_FETCH_AND: return atomicAnd_system(p, v);
    case TETHER_AMO_OR:
    case TETHER_AMO_FETCH_OR: return atomicOr_system(p, v);
    case TETHER_AMO_XOR:
    case TETHER_AMO_FETCH_XOR: return atomicXor_system(p, v);
    default: return 0;
  }
}

__global__ void amoKernel(void* target, AmoArgs a, uint64_t* result) {
  __threadfence_system();
  uint64_t old;
  if (a.width == 4)
    old = amoOn(static_cast<unsigned int*>(target), a.op, static_cast<unsigned int>(a.value),
                static_cast<unsigned int>(a.cond));
  else
    old = amoOn(static_cast<unsigned long long*>(target), a.op, static_cast<unsigned long long>(a.value),
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

}  // namespace

cudaError_t launchAmo(cudaStream_t stream, void* target, const AmoArgs& args, uint64_t* result) {
  amoKernel<<<1, 1, 0, stream>>>(target, args, result);
  return cudaGetLastError();
}

cudaError_t launchSignal(cudaStream_t stream, uint64_t* target, uint64_t value, int isAdd) {
  signalKernel<<<1, 1, 0, stream>>>(target, value, isAdd);
  return cudaGetLastError();
}

}  // namespace gpukernels
}  // namespace tether
