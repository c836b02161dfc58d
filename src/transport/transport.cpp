#include "transport/transport.h"

namespace tether {

const char* pathKindName(PathKind k) {
  switch (k) {
    case PathKind::Self: return "self";
    case PathKind::Shm: return "shm";
    case PathKind::P2p: return "p2p";
    case PathKind::Proxy: return "proxy";
    case PathKind::None: return "none";
  }
  return "?";
}

Status choosePath(const std::vector<PeInfo>& pes, int me, int pe, const std::string& override, PathChoice* out) {
  if (override != "auto" && override != "shm")
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_PATHS='%s': expected auto or shm (p2p and proxy are not built yet)",
                override.c_str());
  const PeInfo& a = pes[static_cast<size_t>(me)];
  const PeInfo& b = pes[static_cast<size_t>(pe)];
  if (pe == me) {
    *out = {PathKind::Self, "same PE"};
  } else if (a.host == b.host) {
    *out = {PathKind::Shm, override == "shm" ? "same host, forced by TETHER_PATHS=shm"
                                             : "same host: host segments are mapped by both PEs"};
  } else {
    *out = {PathKind::None, "PE " + std::to_string(pe) + " runs on another host (" + b.host +
                                ") and no network transport (UCX proxy) is built yet"};
  }
  return Status::ok();
}

}  // namespace tether
