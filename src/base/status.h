// Status: the one error type of tether's internals (DESIGN §5).
//
// Contract: every fallible internal function returns Status ([[nodiscard]]). The function that first detects an
// error builds the Status with the full cause (call, PE, address, size, errno or CUDA error); callers propagate it
// unchanged with TETHER_TRY. The C API turns a Status into a tether_status_t plus a thread-local message.
// Cost: a success is a code and a null pointer, so copying, assigning and returning one (hot paths do so per message
// and per operation) touches no string; a message lives in one shared immutable string, built only on failure.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "tether/tether.h"

namespace tether {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(tether_status_t code, std::string message)
      : code_(code), message_(message.empty() ? nullptr : std::make_shared<const std::string>(std::move(message))) {}

  static Status ok() { return Status(); }
  bool isOk() const { return code_ == TETHER_SUCCESS; }
  explicit operator bool() const { return isOk(); }
  tether_status_t code() const { return code_; }
  const std::string& message() const { return message_ ? *message_ : empty(); }

  // Prefixes the message with "<context>: " (used where a lower layer lacks the caller's name). A success is returned
  // as it is, without building a string from context.
  Status withContext(const char* context) const {
    if (isOk()) return *this;
    return Status(code_, std::string(context) + ": " + message());
  }
  Status withContext(const std::string& context) const { return withContext(context.c_str()); }

 private:
  static const std::string& empty() {
    static const std::string e;
    return e;
  }
  tether_status_t code_ = TETHER_SUCCESS;
  std::shared_ptr<const std::string> message_;  // null: no message
};

// printf-style string building for error messages.
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Builds a Status from errno: "<what>: <strerror(errno)> (errno N)".
Status errnoStatus(const std::string& what, int err);

}  // namespace tether

// Propagate a failed Status to the caller.
#define TETHER_TRY(expr)                         \
  do {                                           \
    ::tether::Status tether_try_s_ = (expr);     \
    if (!tether_try_s_.isOk()) return tether_try_s_; \
  } while (0)

// Return an error Status built from a code and a printf-style message.
#define TETHER_FAIL(code, ...) return ::tether::Status((code), ::tether::strprintf(__VA_ARGS__))

// Cleanup paths: log a failed Status as a warning and carry on (destructors, finalize).
#define TETHER_WARN_ON_FAIL(expr)                                                   \
  do {                                                                              \
    ::tether::Status tether_warn_s_ = (expr);                                       \
    if (!tether_warn_s_.isOk())                                                     \
      TETHER_LOG_WARN(::tether::LogSys::Base, "%s", tether_warn_s_.message().c_str()); \
  } while (0)
