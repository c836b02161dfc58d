// What this build of libtether has and what this process sees (behind tether_version and tether_get_build_info).
// Pure queries: no instance, no GPU context, no global state; callable before tether_init from any thread.
#pragma once

#include <string>

#include "tether/tether.h"

namespace tether {

// Fills every field of *out (out != nullptr): version from tether/version.h, features compiled in, the UCX version
// loaded at run time, the CUDA devices visible (0 without CUDA parts, a GPU or a driver).
void buildInfo(tether_build_info_t* out);

// "MAJOR.MINOR.RELEASE" of the UCX library loaded at run time; "" in builds without the UCX provider.
// (core/info/ucx_version_ucp.cpp or ucx_version_none.cpp, chosen by src/CMakeLists.txt.)
std::string ucxRuntimeVersion();

}  // namespace tether
