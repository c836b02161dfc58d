#include "base/log.h"

#include "base/clock.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tether {
namespace {

struct SysName {
  LogSys sys;
  const char* name;
};
constexpr SysName kSysNames[] = {
    {LogSys::Base, "base"},         {LogSys::Config, "config"}, {LogSys::Bootstrap, "bootstrap"},
    {LogSys::Launcher, "launcher"}, {LogSys::Heap, "heap"},     {LogSys::Transport, "transport"},
    {LogSys::Rma, "rma"},           {LogSys::Sync, "sync"},     {LogSys::Core, "core"},
    {LogSys::Topology, "topology"},
};
constexpr const char* kLevelNames[] = {"error", "warn", "info", "debug", "trace"};

struct Sink {
  LogFilter filter;
  char label[32];
  std::mutex mu;
  Sink() {
    const char* spec = std::getenv("TETHER_LOG");
    std::string err;
    if (spec && *spec && !parseLogSpec(spec, &filter, &err))
      std::fprintf(stderr, "tether: ignoring TETHER_LOG=%s: %s\n", spec, err.c_str());
    const char* rank = std::getenv("TETHER_RANK");
    if (rank && *rank)
      std::snprintf(label, sizeof label, "pe %s", rank);
    else
      std::snprintf(label, sizeof label, "pid %d", static_cast<int>(getpid()));
  }
};

Sink& sink() {
  static Sink s;  // filter parsed once; no runtime state lives here
  return s;
}

}  // namespace

const char* logSysName(LogSys sys) {
  for (const auto& s : kSysNames)
    if (s.sys == sys) return s.name;
  return "?";
}

bool parseLogSpec(const std::string& spec, LogFilter* out, std::string* error) {
  LogFilter f;
  std::string level = spec, systems;
  size_t colon = spec.find(':');
  if (colon != std::string::npos) {
    level = spec.substr(0, colon);
    systems = spec.substr(colon + 1);
  }
  bool found = false;
  for (int i = 0; i < 5; ++i)
    if (level == kLevelNames[i]) {
      f.level = static_cast<LogLevel>(i);
      found = true;
    }
  if (!found) {
    *error = "unknown level '" + level + "' (expected error|warn|info|debug|trace)";
    return false;
  }
  if (!systems.empty()) {
    f.mask = 0;
    size_t pos = 0;
    while (pos <= systems.size()) {
      size_t comma = systems.find(',', pos);
      std::string name = systems.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      bool known = false;
      for (const auto& s : kSysNames)
        if (name == s.name || name == "all") {
          f.mask |= name == "all" ? ~0u : static_cast<uint32_t>(s.sys);
          known = true;
        }
      if (!known) {
        *error = "unknown subsystem '" + name + "'";
        return false;
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  *out = f;
  return true;
}

bool logEnabled(LogLevel level, LogSys sys) {
  const LogFilter& f = sink().filter;
  if (static_cast<int>(level) > static_cast<int>(f.level)) return false;
  if (level <= LogLevel::Warn) return true;
  return (f.mask & static_cast<uint32_t>(sys)) != 0;
}

void logWrite(LogLevel level, LogSys sys, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  std::fprintf(stderr, "tether[%s] %s %s: %s\n", s.label, kLevelNames[static_cast<int>(level)], logSysName(sys), msg);
}

LogLimiter::LogLimiter(const char* what, unsigned burst, double intervalSeconds)
    : what_(what), burst_(burst), intervalNs_(static_cast<uint64_t>(intervalSeconds * 1e9)) {}

LogLimiter::~LogLimiter() {
  const LogSys sys = lastSys_.load();
  if (pending_ && logEnabled(LogLevel::Warn, sys))
    logWrite(LogLevel::Warn, sys, "%llu more %s suppressed", static_cast<unsigned long long>(pending_), what_);
}

bool LogLimiter::admit(uint64_t now, uint64_t* suppressedBefore) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || now - windowStart_ >= intervalNs_) {
    started_ = true;
    windowStart_ = now;
    inWindow_ = 0;
  }
  if (inWindow_ < burst_) {
    ++inWindow_;
    *suppressedBefore = pending_;
    pending_ = 0;
    return true;
  }
  ++pending_;
  ++total_;
  return false;
}

uint64_t LogLimiter::suppressedTotal() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

void LogLimiter::warn(LogSys sys, const char* fmt, ...) {
  lastSys_ = sys;
  uint64_t suppressed = 0;
  if (!logEnabled(LogLevel::Warn, sys) || !admit(nowNs(), &suppressed)) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (suppressed)
    logWrite(LogLevel::Warn, sys, "%s (%llu more %s suppressed before this one)", msg,
             static_cast<unsigned long long>(suppressed), what_);
  else
    logWrite(LogLevel::Warn, sys, "%s", msg);
}

}  // namespace tether
