// Every TETHER_* variable (base/config.cpp's table, less those the launcher owns) set to random and malformed values
// -- empty, signs, exponents, huge numbers, unit suffixes good and bad, words, whitespace, NaN/inf -- in a 1-PE
// tether_init_attr: init either succeeds (and finalizes) or fails with TETHER_ERR_INVALID_ARG (UNSUPPORTED: a valid
// value this machine cannot serve) naming the variable, or, for a size the machine cannot reserve, NO_MEMORY / SYSTEM;
// nothing crashes (the asan preset's UBSan included).
// Prints its seed (TETHER_TEST_SEED repeats a run).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/config.h"
#include "test_seed.h"
#include "tether/tether.h"

namespace {

// Set by tetherrun or another launcher, or naming file descriptors this process does not own: not fuzzed.
bool launcherOwned(const std::string& name) {
  for (const char* v : {"TETHER_RANK", "TETHER_SIZE", "TETHER_LOCAL_RANK", "TETHER_LOCAL_SIZE", "TETHER_BOOTSTRAP_ADDR",
                        "TETHER_BOOTSTRAP_FD", "TETHER_JOB_SECRET", "TETHER_CONTROL_FD", "TETHER_LAUNCHER"})
    if (name == v) return true;
  return false;
}

std::string value(std::mt19937_64& rng) {
  static const char* const fixed[] = {
      "", "0", "1", "-1", "2", "64", "64K", "64M", "1G", "8g", "3T", "64T", "65T", "1P", "1.5M", "0.5", "1e3", "1e400",
      "-1e400", "nan", "inf", "-inf", "0x10", "010", " 5", "5 ", "5x", "K", "M12", "99999999999999999999",
      "-9223372036854775808", "9223372036854775807", "18446744073709551615G", "2147483648", "-2147483649", "yes", "no",
      "on", "off", "true", "false", "auto", "kernel", "reset", "host", "device", "none", "shm", "p2p", "staged",
      "host=shm", "device=p2p,host=auto", "host=", "=", ",", "debug", "trace:core,heap", "warn:nothing", "\t",
      "\xff\xfe", "%s%s%n"};
  const size_t n = sizeof fixed / sizeof *fixed;
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::string v = fixed[pick(rng)];
  if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) v += fixed[pick(rng)];  // sometimes two glued together
  return v;
}

TEST(ConfigFuzz, EveryVariableTakesGarbageWithoutHarm) {
  std::mt19937_64 rng(tether::testSeed("test_config_fuzz"));
  int inits = 0, refused = 0, other = 0;
  for (const tether::ConfigVar& var : tether::configVars()) {
    const std::string name = var.name;
    if (launcherOwned(name)) continue;
    for (int k = 0; k < 12 && !::testing::Test::HasFailure(); ++k) {
      const std::string set = name + "=" + value(rng);
      std::vector<std::string> entries = {set};
      for (const char* base : {"TETHER_GPU=none", "TETHER_DEFAULT_SEGMENT=host", "TETHER_HEAP_SIZE=1M",
                               "TETHER_HEAP_MAX=16M", "TETHER_TIMEOUT=5"}) {
        if (std::string(base).rfind(name + "=", 0) != 0) entries.push_back(base);
      }
      std::vector<const char*> config;
      for (const std::string& e : entries) config.push_back(e.c_str());
      config.push_back(nullptr);
      tether_init_attr_t a;
      tether_init_attr_default(&a);
      a.rank = 0;
      a.size = 1;
      a.config = config.data();
      tether_t w = nullptr;
      const tether_status_t st = tether_init_attr(&a, &w);
      ++inits;
      if (st == TETHER_SUCCESS) {
        ASSERT_NE(w, nullptr);
        ASSERT_EQ(tether_finalize(w), TETHER_SUCCESS) << set << ": " << tether_last_error();
        continue;
      }
      ASSERT_EQ(w, nullptr) << set;
      const std::string msg = tether_last_error();
      if (st == TETHER_ERR_INVALID_ARG || st == TETHER_ERR_UNSUPPORTED) {  // (UNSUPPORTED: e.g. device memory, no GPU)
        ++refused;
        ASSERT_NE(msg.find(name), std::string::npos) << set << ": the message does not name the variable: " << msg;
      } else {
        if (++other <= 3) std::printf("config fuzz: %s: %s\n", set.c_str(), msg.c_str());
        ASSERT_TRUE(st == TETHER_ERR_NO_MEMORY || st == TETHER_ERR_SYSTEM)
            << set << ": " << tether_status_string(st) << ": " << msg;
      }
    }
  }
  std::printf("config fuzz: %d inits, %d refused naming the variable, %d out of memory or system\n", inits, refused,
              other);
}

}  // namespace
