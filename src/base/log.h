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

#include <cstdint>
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
