// Scheme names of the GPU datatype engine (gpu_pack.h), shared by the CUDA and host-only builds.
#include <cstring>

#include "datatype/gpu_pack.h"

namespace tether::dt {

namespace {
constexpr const char* kNames[] = {"auto", "host", "thread", "warp", "copy2d", "copy3d", "elem", "batch"};
constexpr int kCount = static_cast<int>(sizeof kNames / sizeof kNames[0]);
}

const char* schemeName(Scheme s) {
  const int i = static_cast<int>(s);
  return i >= 0 && i < kCount ? kNames[i] : "?";
}

bool parseScheme(const char* name, Scheme* out) {
  for (int i = 0; i < kCount; ++i)
    if (name && std::strcmp(name, kNames[i]) == 0) {
      *out = static_cast<Scheme>(i);
      return true;
    }
  return false;
}

}  // namespace tether::dt
