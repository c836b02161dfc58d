// Builds without the UCX provider: no UCX is loaded.
#include <string>

#include "core/info/build_info.h"

namespace tether {

std::string ucxRuntimeVersion() { return std::string(); }

}  // namespace tether
