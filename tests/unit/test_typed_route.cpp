// The typed route's cost model (core/typed_route.h): the two estimates and the choice they make, with link terms
// like those probed between two H200s over NVLink (bench/results/h200x2/gpu_tests_2026-11-26.log: about 3 us per
// copy, copies at ~370 GB/s, kernel stores across the link at ~200 GB/s).
#include <gtest/gtest.h>

#include "core/typed_route.h"

namespace {

using tether::RouteCosts;
using tether::TypedLink;
using tether::typedRouteCosts;

TypedLink nvlink() {
  TypedLink l;
  l.runUs = 3.0;
  l.ceGbs = 370;
  l.kernelGbs = 200;
  return l;
}

TEST(TypedRoute, ManySmallRemoteBlocksGoDirect) {
  // 1 MiB in 8-byte blocks: staged pays one copy per block.
  const int64_t n = 1 << 20, blocks = n / 8;
  const RouteCosts c = typedRouteCosts(5, 6, blocks, n, nvlink());
  EXPECT_LT(c.directUs, c.stagedUs);
  EXPECT_NEAR(c.stagedUs, 5 + blocks * 3.0 + n / 370e3, 1e-6);
  // Direct: 8-byte blocks occupy whole 32-byte sectors on the link.
  EXPECT_NEAR(c.directUs, 5 + 32.0 * blocks / 200e3, 1e-6);
}

TEST(TypedRoute, FewLongRemoteRunsGoStagedWhenCopiesOutrunKernels) {
  // 64 MiB in 4 runs: 4 copies cost 12 us, the copy engines save ~140 us over the kernel's stores.
  const int64_t n = int64_t{64} << 20;
  const RouteCosts c = typedRouteCosts(40, 50, 4, n, nvlink());
  EXPECT_LT(c.stagedUs, c.directUs);
  // With kernels as fast as the copy engines, the per-copy cost decides for direct.
  TypedLink even = nvlink();
  even.kernelGbs = even.ceGbs;
  const RouteCosts e = typedRouteCosts(40, 50, 4, n, even);
  EXPECT_LT(e.directUs, e.stagedUs);
}

TEST(TypedRoute, DirectIsAtLeastTheEngineTime) {
  // A remote type whose engine time exceeds its link time: direct pays the engine time.
  const RouteCosts c = typedRouteCosts(1, 1000, 10, 1 << 20, nvlink());
  EXPECT_NEAR(c.directUs, 1001, 1e-6);
  // Zero blocks (an empty type is never asked, but the arithmetic stays finite).
  const RouteCosts z = typedRouteCosts(0, 0, 0, 0, nvlink());
  EXPECT_TRUE(z.directUs >= 0 && z.stagedUs >= 0);
}

}  // namespace
