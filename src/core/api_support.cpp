// What the core's C entry points share (api_support.h).
#include "core/api_support.h"

#include "base/log.h"

namespace tether::capi {
namespace {

thread_local std::string tlsLastError;

}  // namespace

tether_status_t report(const Status& s) {
  if (s.isOk()) return TETHER_SUCCESS;
  tlsLastError = s.message();
  TETHER_LOG_INFO(LogSys::Core, "%s", s.message().c_str());
  return s.code();
}

const char* lastError() { return tlsLastError.c_str(); }

// Never destroyed: calls made while the process exits (atexit handlers, static destructors) still find it.
LiveWorlds& liveWorlds() {
  static LiveWorlds* table = new LiveWorlds();
  return *table;
}

tether_status_t liveWorld(tether_t w, const char* call, World** out) {
  *out = nullptr;
  if (!w) return report(tether::Status(TETHER_ERR_INVALID_ARG, std::string(call) + ": world is NULL"));
  bool finalized = false;
  *out = liveWorlds().find(w, &finalized);
  if (*out) return TETHER_SUCCESS;
  return report(tether::Status(
      TETHER_ERR_INVALID_ARG,
      finalized ? tether::strprintf("%s: world %p was finalized (tether_finalize); the handle may not be used again",
                                    call, static_cast<void*>(w))
                : tether::strprintf("%s: world %p is not a live instance (never initialised, or not a value "
                                    "tether_init returned)", call, static_cast<void*>(w))));
}

Status waitArgs(const char* call, const tether_dtype_t& type, const tether_cmp_t& cmp) {
  TETHER_TRY(enumArg(call, "type", type));
  return enumArg(call, "cmp", cmp);
}

}  // namespace tether::capi
