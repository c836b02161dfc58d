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

}  // namespace

cudaError_t launchAmo(cudaStream_t stream, void* target, const AmoArgs& args, uint64_t* result) {
  amoKernel<<<1, 1, 0, stream>>>(target, args, result);
  return cudaGetLastError();
}

cudaError_t launchSignal(cudaStream_t stream, uint64_t* target, uint64_t value, int isAdd) {
  signalKernel<<<1, 1, 0, stream>>>(target, value, isAdd);
  return cudaGetLastError();
}

cudaError_t preload() {
  cudaFuncAttributes a;
  cudaError_t e = cudaFuncGetAttributes(&a, amoKernel);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, signalKernel);
  return e;
}

}  // namespace gpukernels
}  // namespace tether
