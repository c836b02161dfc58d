// Local (non-symmetric) buffers of the benchmarks: host memory or GPU memory, and the few copies that fill and check
// them. Two implementations, chosen by CMake: local_mem.cpp (CUDA builds: the shared CUDA runtime, CUDA::cudart) and
// local_mem_none.cpp (CPU builds: malloc/memcpy, no GPU). Benchmark code stays free of CUDA headers and #ifdefs.
//
// Every call here is synchronous: when it returns, the memory operation is complete (GPU work is followed by
// cudaDeviceSynchronize). None of it is ever inside a timed region.
#pragma once

#include <cstddef>
#include <string>

namespace tether_bench {

// GPUs this process can use through the CUDA runtime: 0 in a CPU build, without a driver or without a GPU (then
// *why, when not null, says which).
int localGpuCount(std::string* why);

// Makes `ordinal` the current GPU of the calling thread (cudaSetDevice of the shared runtime). CPU build: fails.
bool localSelectGpu(int ordinal, std::string* error);

// "name, PCI bus id" of a GPU, for headers ("" when unknown).
std::string localGpuName(int ordinal);

// Host memory of at least `bytes`, page aligned: pinned (cudaHostAlloc) when this is a CUDA build and a GPU is
// present, else malloc'ed. *pinned tells which (pass it back to localFreeHost). nullptr with *error on failure.
void* localAllocHost(size_t bytes, bool* pinned, std::string* error);
void localFreeHost(void* p, bool pinned);

// GPU memory (cudaMalloc on the current GPU). CPU build: nullptr with *error.
void* localAllocDevice(size_t bytes, std::string* error);
void localFreeDevice(void* p);

// Copies n bytes between any two of host and GPU memory (cudaMemcpy, cudaMemcpyDefault; CPU build: memcpy).
bool localCopy(void* dst, const void* src, size_t n, std::string* error);

// Sets n bytes of GPU memory to zero (cudaMemset). CPU build: fails.
bool localZeroDevice(void* p, size_t n, std::string* error);

}  // namespace tether_bench
