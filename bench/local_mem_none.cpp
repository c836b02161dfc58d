// local_mem.h for CPU builds (no CUDA): host buffers are malloc'ed, there is no GPU.
#include "local_mem.h"

#include <cstdlib>
#include <cstring>

namespace tether_bench {
namespace {
const char* const kNoCuda = "this is a CPU-only build of tether (TETHER_CUDA=OFF or no CUDA compiler found)";
}

int localGpuCount(std::string* why) {
  if (why) *why = kNoCuda;
  return 0;
}

bool localSelectGpu(int, std::string* error) {
  if (error) *error = kNoCuda;
  return false;
}

std::string localGpuName(int) { return ""; }

void* localAllocHost(size_t bytes, bool* pinned, std::string* error) {
  *pinned = false;
  const size_t page = 4096;
  void* p = std::aligned_alloc(page, (bytes + page - 1) / page * page);
  if (!p && error) *error = "aligned_alloc of " + std::to_string(bytes) + " bytes failed";
  return p;
}

void localFreeHost(void* p, bool) { std::free(p); }

void* localAllocDevice(size_t, std::string* error) {
  if (error) *error = kNoCuda;
  return nullptr;
}

void localFreeDevice(void*) {}

bool localCopy(void* dst, const void* src, size_t n, std::string*) {
  std::memcpy(dst, src, n);
  return true;
}

bool localZeroDevice(void*, size_t, std::string* error) {
  if (error) *error = kNoCuda;
  return false;
}

}  // namespace tether_bench
