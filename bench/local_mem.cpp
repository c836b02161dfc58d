// local_mem.h for CUDA builds: the shared CUDA runtime (libcudart.so). libtether links its own static copy of the
// runtime; both use the device's primary context, so pointers from either are valid in the other, but each runtime
// keeps its own current device per thread (the benchmark selects the PE's GPU here itself).
#include "local_mem.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace tether_bench {
namespace {

bool ok(cudaError_t e, const char* what, std::string* error) {
  if (e == cudaSuccess) return true;
  if (error) *error = std::string(what) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  cudaGetLastError();  // reset the runtime's last-error state so later calls do not report this one again
  return false;
}

bool syncAll(std::string* error) { return ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize", error); }

}  // namespace

int localGpuCount(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
    cudaGetLastError();
    return 0;
  }
  if (n == 0 && why) *why = "no GPU visible (cudaGetDeviceCount = 0)";
  return n;
}

bool localSelectGpu(int ordinal, std::string* error) {
  return ok(cudaSetDevice(ordinal), ("cudaSetDevice(" + std::to_string(ordinal) + ")").c_str(), error);
}

std::string localGpuName(int ordinal) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  char bus[32];
  std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  return std::string(prop.name) + ", PCI " + bus;
}

void* localAllocHost(size_t bytes, bool* pinned, std::string* error) {
  *pinned = false;
  if (localGpuCount(nullptr) > 0) {
    void* p = nullptr;
    if (!ok(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc", error)) return nullptr;
    *pinned = true;
    return p;
  }
  const size_t page = 4096;
  void* p = std::aligned_alloc(page, (bytes + page - 1) / page * page);
  if (!p && error) *error = "aligned_alloc of " + std::to_string(bytes) + " bytes failed";
  return p;
}

void localFreeHost(void* p, bool pinned) {
  if (!p) return;
  if (pinned)
    cudaFreeHost(p);
  else
    std::free(p);
}

void* localAllocDevice(size_t bytes, std::string* error) {
  void* p = nullptr;
  if (!ok(cudaMalloc(&p, bytes), ("cudaMalloc(" + std::to_string(bytes) + ")").c_str(), error)) return nullptr;
  return p;
}

void localFreeDevice(void* p) {
  if (p) cudaFree(p);
}

bool localCopy(void* dst, const void* src, size_t n, std::string* error) {
  return ok(cudaMemcpy(dst, src, n, cudaMemcpyDefault), "cudaMemcpy", error) && syncAll(error);
}

bool localZeroDevice(void* p, size_t n, std::string* error) {
  return ok(cudaMemset(p, 0, n), "cudaMemset", error) && syncAll(error);
}

}  // namespace tether_bench
