// UCX builds: the version of the libucp loaded at run time (it may differ from the one tether was compiled with).
#include <ucp/api/ucp.h>

#include <string>

#include "core/info/build_info.h"

namespace tether {

std::string ucxRuntimeVersion() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace tether
