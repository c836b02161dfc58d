// One system-scope atomic on a GPU-addressable word, shared by the host path's AMO kernel (kernels.cu) and the stream
// path's (stream_kernels.cu). Device code only; include from .cu files.
#pragma once

#include <cuda_runtime.h>

#include "tether/tether.h"

namespace tether {
namespace gpukernels {

template <typename U>
__device__ inline U amoOnWord(U* p, tether_amo_t op, U v, U c) {
  switch (op) {
    case TETHER_AMO_FETCH: return atomicAdd_system(p, U(0));
    case TETHER_AMO_SET: atomicExch_system(p, v); return 0;
    case TETHER_AMO_SWAP: return atomicExch_system(p, v);
    case TETHER_AMO_COMPARE_SWAP: return atomicCAS_system(p, c, v);
    case TETHER_AMO_INC:
    case TETHER_AMO_FETCH_INC: return atomicAdd_system(p, U(1));
    case TETHER_AMO_ADD:
    case TETHER_AMO_FETCH_ADD: return atomicAdd_system(p, v);
    case TETHER_AMO_AND:
    case TETHER_AMO_FETCH_AND: return atomicAnd_system(p, v);
    case TETHER_AMO_OR:
    case TETHER_AMO_FETCH_OR: return atomicOr_system(p, v);
    case TETHER_AMO_XOR:
    case TETHER_AMO_FETCH_XOR: return atomicXor_system(p, v);
    default: return 0;
  }
}

}  // namespace gpukernels
}  // namespace tether
