// Logging with a subsystem mask (TETHER_LOG).
//
// TETHER_LOG=<level>[:<subsys>[,<subsys>...]]   level: error|warn|info|debug|trace (default warn)
// e.g. TETHER_LOG=info, TETHER_LOG=debug:bootstrap,heap. Messages at warn and error are always shown for every
// subsystem; the mask narrows info and below.
//
// The log sink is process-wide (like UCX's global options): it holds no runtime state, only the filter parsed once
// from the environment, so it does not make the core a singleton. Lines go to stderr as
// "tether[<label>] LEVEL subsys: message", where label is the PE rank when known (TETHER_RANK) or the pid.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace tether {

enum class LogLevel : int { Error = 0, Warn = 1, Info = 2, Debug = 3, Trace = 4 };

enum class LogSys : uint32_t {
  Base = 1u << 0,
  Config = 1u << 1,
  Bootstrap = 1u << 2,
  Launcher = 1u << 3,
  Heap = 1u << 4,
  Transport = 1u << 5,
  Rma = 1u << 6,
  Sync = 1u << 7,
  Core = 1u << 8,
  Topology = 1u << 9,
};

struct LogFilter {
  LogLevel level = LogLevel::Warn;
  uint32_t mask = ~0u;
};

// Parses a TETHER_LOG value; returns false (and leaves *out at defaults) on a malformed value.
bool parseLogSpec(const std::string& spec, LogFilter* out, std::string* error);

bool logEnabled(LogLevel level, LogSys sys);
void logWrite(LogLevel level, LogSys sys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
const char* logSysName(LogSys sys);

// Rate limit for one kind of repeated warning (a connection flood once printed 40,647 lines). Owned by the object
// that warns (one per call site or message kind, e.g. a member of the listener), thread-safe. In every window of
// `intervalSeconds` the first `burst` messages are printed; later ones in the window are counted, and the next
// printed message says how many were suppressed; a count still pending when the limiter is destroyed is printed
// then ("N more <what> suppressed"). So a flood prints at most burst + 1 lines per interval.
//
//   LogLimiter refused_{"refused connections"};
//   refused_.warn(LogSys::Bootstrap, "refused connection from %s: %s", peer, why);
class LogLimiter {
 public:
  explicit LogLimiter(const char* what, unsigned burst = 5, double intervalSeconds = 10);
  ~LogLimiter();
  LogLimiter(const LogLimiter&) = delete;
  LogLimiter& operator=(const LogLimiter&) = delete;

  // Logs at warn level unless the limit suppresses it (then only counts it).
  void warn(LogSys sys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  // The decision alone, at time nowNs: true = print; *suppressedBefore = messages suppressed since the last printed
  // one (to be mentioned with this one).
  bool admit(uint64_t nowNs, uint64_t* suppressedBefore);
  uint64_t suppressedTotal() const;

 private:
  const char* what_;
  const unsigned burst_;
  const uint64_t intervalNs_;
  mutable std::mutex mu_;
  uint64_t windowStart_ = 0;
  unsigned inWindow_ = 0;
  uint64_t pending_ = 0;  // suppressed since the last printed message
  uint64_t total_ = 0;
  std::atomic<LogSys> lastSys_{LogSys::Base};  // for the destructor's summary
  bool started_ = false;
};

}  // namespace tether

#define TETHER_LOG_AT(lvl, sys, ...)                                  \
  do {                                                                \
    if (::tether::logEnabled((lvl), (sys))) ::tether::logWrite((lvl), (sys), __VA_ARGS__); \
  } while (0)
#define TETHER_LOG_ERROR(sys, ...) TETHER_LOG_AT(::tether::LogLevel::Error, sys, __VA_ARGS__)
#define TETHER_LOG_WARN(sys, ...) TETHER_LOG_AT(::tether::LogLevel::Warn, sys, __VA_ARGS__)
#define TETHER_LOG_INFO(sys, ...) TETHER_LOG_AT(::tether::LogLevel::Info, sys, __VA_ARGS__)
#define TETHER_LOG_DEBUG(sys, ...) TETHER_LOG_AT(::tether::LogLevel::Debug, sys, __VA_ARGS__)
#define TETHER_LOG_TRACE(sys, ...) TETHER_LOG_AT(::tether::LogLevel::Trace, sys, __VA_ARGS__)
