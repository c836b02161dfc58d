// tether::buildInfo: the facts of this build. TETHER_BUILT_{CUDA,UCX,SANITIZE} are 0/1 values set on this file by
// src/CMakeLists.txt from the configuration the library was compiled with.
#include "core/info/build_info.h"

#include <cstdio>
#include <cstring>

#include "topology/topology.h"

namespace tether {

void buildInfo(tether_build_info_t* out) {
  std::memset(out, 0, sizeof *out);
  out->version_major = TETHER_VERSION_MAJOR;
  out->version_minor = TETHER_VERSION_MINOR;
  out->version_patch = TETHER_VERSION_PATCH;
  out->cuda = TETHER_BUILT_CUDA;
  out->ucx = TETHER_BUILT_UCX;
  out->sanitizers = TETHER_BUILT_SANITIZE;
  std::snprintf(out->ucx_version, sizeof out->ucx_version, "%s", ucxRuntimeVersion().c_str());
  out->gpus_visible = createSystemGpuQuery()->deviceCount();  // a query that reports none without CUDA parts
}

}  // namespace tether
