#include "base/status.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace tether {

std::string strprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<size_t>(n));
    std::vsnprintf(&out[0], static_cast<size_t>(n) + 1, fmt, ap2);
  }
  va_end(ap2);
  return out;
}

Status errnoStatus(const std::string& what, int err) {
  char buf[256];
  // GNU strerror_r returns a char* that may or may not point into buf.
  const char* msg = strerror_r(err, buf, sizeof buf);
  return Status(TETHER_ERR_SYSTEM, strprintf("%s: %s (errno %d)", what.c_str(), msg, err));
}

}  // namespace tether
