// The cost model that chooses the route of a typed-to-typed transfer between GPUs (core/rma_typed.cpp,
// docs/datatype.md "Routes"): its link terms, measured per PE, and the two estimates it compares. Header-only, no
// dependencies, so the arithmetic is unit-tested on its own (tests/unit/test_typed_route.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tether {

// Link terms to one PE over a GPU-addressable path (measured once per PE by reads of a call's remote span;
// World::typedLink): one contiguous copy-engine transfer costs runUs + bytes / ceGbs; an engine kernel reaching the
// peer's memory moves kernelGbs.
struct TypedLink {
  double runUs = 0, ceGbs = 0, kernelGbs = 0;
  int64_t bytes = 0;  // the size of the measured transfer (re-measured when a later span is 8x larger, up to 8 MiB)
};

struct RouteCosts {
  double directUs, stagedUs;
};

// A typed-to-typed transfer of n packed bytes, in microseconds. localUs / remoteUs: the engine's estimates for the
// local and remote types as if in local memory; remoteBlocks: the remote type's contiguous blocks. The local side is
// packed (put) or unpacked (get) in local memory on both routes. Direct moves the remote blocks with an engine kernel
// across the link: at least its local-memory time, and the link carries whole 32-byte sectors at kernelGbs. Staged
// makes one contiguous copy per remote block (runUs each) and moves n bytes at ceGbs.
inline RouteCosts typedRouteCosts(double localUs, double remoteUs, int64_t remoteBlocks, int64_t n,
                                  const TypedLink& l) {
  const double blocks = static_cast<double>(std::max<int64_t>(1, remoteBlocks));
  const double sectors = std::ceil(static_cast<double>(n) / blocks / 32.0) * 32.0 * blocks;
  const double direct = localUs + std::max(remoteUs, sectors / (l.kernelGbs * 1e3));
  const double staged = localUs + blocks * l.runUs + static_cast<double>(n) / (l.ceGbs * 1e3);
  return RouteCosts{direct, staged};
}

}  // namespace tether
