// Small helpers shared by the CUDA benchmark programs: CK (a failed CUDA call prints the call and CUDA's message and
// exits 2), TK and DTK (the same for a tether call, with tether_last_error() / tether_type_last_error()) and utcDate()
// (ISO 8601 UTC now, for run records).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "tether/datatype.h"
#include "tether/tether.h"

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

#define DTK(x)                                                                                       \
  do {                                                                                              \
    if ((x) != TETHER_SUCCESS) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, tether_type_last_error());   \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)

#define TK(x)                                                                                \
  do {                                                                                       \
    if ((x) != TETHER_SUCCESS) {                                                             \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, tether_last_error()); \
      std::exit(2);                                                                          \
    }                                                                                        \
  } while (0)

namespace tether_bench {
inline std::string utcDate() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}
}  // namespace tether_bench
