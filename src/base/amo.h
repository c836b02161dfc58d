// One atomic operation on a word, as every layer that runs one sees it: the transports' amo(), the GPU service's
// atomic kernels and the stream-op layer's AMOs. Lives in base so that gpu/ needs no transport/ header.
#pragma once

#include <cstdint>

#include "tether/tether.h"

namespace tether {

// One atomic operation on a word of `width` bytes (4 or 8); operands are bit patterns in the low bytes.
struct AmoArgs {
  tether_amo_t op;
  unsigned width;
  uint64_t value;
  uint64_t cond;
};

}  // namespace tether
