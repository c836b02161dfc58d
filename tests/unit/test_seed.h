// The seed of a randomized unit test: TETHER_TEST_SEED if set (to repeat a run), else a fresh one; printed as
// "<name> seed N" either way, so a failure in CI can be replayed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace tether {

inline uint64_t testSeed(const char* name) {
  uint64_t seed = std::random_device{}();
  if (const char* e = std::getenv("TETHER_TEST_SEED")) seed = std::strtoull(e, nullptr, 10);
  std::printf("%s seed %llu\n", name, static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace tether
