// Config registry: every TETHER_* environment variable is declared exactly once, in config.cpp's table, with its
// type, default and help text. `tether-info --config` prints the table.
//
// A Config is a snapshot (environment + explicit overrides) owned by whoever needs it (a World, the launcher); there is
// no global config object. validate() parses every value once and names the first bad one; after a successful
// validate() the typed getters cannot fail and every numeric value lies in its variable's range [min, max]
// (NaN, infinities, negative and absurd values are refused with the variable, the value and the range).
// Asking for an undeclared name is a programming error (aborts).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace tether {

enum class ConfigType { String, Int, Size, Seconds, Bool };

struct ConfigVar {
  const char* name;
  ConfigType type;
  const char* defaultValue;
  const char* help;
  double min = 0;  // Int, Size, Seconds: the allowed range, inclusive (Size in bytes, Seconds in seconds)
  double max = 0;
};

constexpr double kMaxHeapBytes = 70368744177664.0;  // 64T: more than any machine's address space for one heap
constexpr double kMaxWaitSeconds = 2592000;          // 30 days
constexpr double kMaxInt32 = 2147483647;

// The declared variables, in table order.
const std::vector<ConfigVar>& configVars();

class Config {
 public:
  // Snapshot of the declared variables present in the process environment.
  static Config fromEnvironment();

  // Override one declared variable (takes precedence over the environment).
  void set(const std::string& name, const std::string& value);

  // Parses every value; returns the first error ("TETHER_HEAP_SIZE='12Q': not a size (use e.g. 64M, 2G)", or
  // "TETHER_COPY_STREAMS=-1 is out of range: allowed 1 to 64"). Also checks that an explicitly set
  // TETHER_HEAP_SIZE / TETHER_DEVICE_HEAP_SIZE is not larger than its *_MAX (a defaulted one is lowered to it).
  // Unknown TETHER_* variables found in the environment are returned in *unknown (typo detection).
  Status validate(std::vector<std::string>* unknown = nullptr) const;

  bool isSet(const std::string& name) const;  // set explicitly (environment or override), not defaulted
  std::string str(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  uint64_t size(const std::string& name) const;   // bytes; accepts K/M/G/T suffixes (powers of 2)
  double seconds(const std::string& name) const;  // accepts plain seconds or a suffix: ms, s, m
  bool flag(const std::string& name) const;       // 1/0, true/false, yes/no, on/off

 private:
  const ConfigVar& var(const std::string& name) const;
  std::string raw(const std::string& name) const;
  std::map<std::string, std::string> values_;
  std::vector<std::string> unknownInEnv_;
};

// Parsers shared with command-line tools. Return false on malformed input.
bool parseSize(const std::string& s, uint64_t* out);
bool parseSeconds(const std::string& s, double* out);
bool parseBool(const std::string& s, bool* out);
bool parseInt(const std::string& s, int64_t* out);

}  // namespace tether
