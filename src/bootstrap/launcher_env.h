// Internal seam of detectJob (bootstrap.h): the same detection with the foreign launchers' variables read through a
// lookup function instead of getenv, so tests can feed any launcher's environment without mutating the process's.
// TETHER_* variables always come from the Config.
#pragma once

#include <functional>

#include "bootstrap/bootstrap.h"

namespace tether {

// Returns the value of a (non-TETHER_*) environment variable, or nullptr when it is unset.
using EnvLookup = std::function<const char*(const char* name)>;

Status detectJobWith(const Config& config, const EnvLookup& env, JobInfo* out);

// Splits "host:port" ("[v6]:port" also accepted syntactically). Returns false when the form or the port (0-65535)
// is bad.
bool splitHostPort(const std::string& addr, std::string* host, int* port);

}  // namespace tether
