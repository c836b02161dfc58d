#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "heap/allocator.h"
#include "test_seed.h"

using tether::Allocator;

TEST(Allocator, AlignsAndCoalesces) {
  Allocator a(4096, 1 << 20);
  uint64_t x, y, z;
  ASSERT_TRUE(a.allocate(100, 64, &x).isOk());
  EXPECT_EQ(x % 64, 0u);
  EXPECT_GE(x, 4096u);
  ASSERT_TRUE(a.allocate(100, 4096, &y).isOk());
  EXPECT_EQ(y % 4096, 0u);
  ASSERT_TRUE(a.allocate(0, 8, &z).isOk());  // size 0 still gets a distinct offset
  EXPECT_NE(z, x);
  EXPECT_NE(z, y);
  ASSERT_TRUE(a.release(x).isOk());
  ASSERT_TRUE(a.release(y).isOk());
  ASSERT_TRUE(a.release(z).isOk());
  EXPECT_EQ(a.bytesInUse(), 0u);
  uint64_t big;
  ASSERT_TRUE(a.allocate((1 << 20) - 4096, 1, &big).isOk()) << "free ranges must coalesce back into one";
  EXPECT_EQ(big, 4096u);
}

TEST(Allocator, ErrorsNameTheRequest) {
  Allocator a(0, 1024);
  uint64_t x;
  auto s = a.allocate(2048, 8, &x);
  EXPECT_EQ(s.code(), TETHER_ERR_NO_MEMORY);
  EXPECT_NE(s.message().find("2048"), std::string::npos) << s.message();
  EXPECT_EQ(a.allocate(8, 3, &x).code(), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(a.release(12).code(), TETHER_ERR_INVALID_ARG);
  ASSERT_TRUE(a.allocate(8, 8, &x).isOk());
  ASSERT_TRUE(a.release(x).isOk());
  EXPECT_EQ(a.release(x).code(), TETHER_ERR_INVALID_ARG) << "double free must be caught";
}

TEST(Allocator, ResizeInPlaceWhenTheNextRangeIsFree) {
  Allocator a(0, 1 << 16);
  uint64_t x, y;
  ASSERT_TRUE(a.allocate(128, 64, &x).isOk());
  bool inPlace = false;
  ASSERT_TRUE(a.resizeInPlace(x, 1024, &inPlace).isOk());
  EXPECT_TRUE(inPlace);
  EXPECT_EQ(a.blockSize(x), 1024u);
  ASSERT_TRUE(a.allocate(64, 64, &y).isOk());
  EXPECT_GE(y, x + 1024);
  ASSERT_TRUE(a.resizeInPlace(x, 1 << 15, &inPlace).isOk());
  EXPECT_FALSE(inPlace) << "y sits right after x";
  ASSERT_TRUE(a.resizeInPlace(x, 16, &inPlace).isOk());
  EXPECT_TRUE(inPlace);
  EXPECT_EQ(a.blockSize(x), 16u);
}

// Determinism is what makes the heap symmetric: two allocators fed one random call sequence agree on every offset.
TEST(Allocator, SameSequenceSameOffsets) {
  const uint64_t seed = tether::testSeed("Allocator.SameSequenceSameOffsets");
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<unsigned>(seed));
  Allocator a(65536, 64 << 20), b(65536, 64 << 20);
  std::vector<uint64_t> live;
  for (int i = 0; i < 2000; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      size_t k = rng() % live.size();
      ASSERT_TRUE(a.release(live[k]).isOk());
      ASSERT_TRUE(b.release(live[k]).isOk());
      live.erase(live.begin() + static_cast<long>(k));
    } else {
      uint64_t size = 1 + rng() % 100000, align = 1ull << (rng() % 13), x, y;
      auto sa = a.allocate(size, align, &x), sb = b.allocate(size, align, &y);
      ASSERT_EQ(sa.code(), sb.code());
      if (!sa.isOk()) continue;
      ASSERT_EQ(x, y);
      ASSERT_EQ(x % align, 0u);
      for (uint64_t o : live) ASSERT_TRUE(x + size <= o || o + a.blockSize(o) <= x) << "overlap";
      live.push_back(x);
    }
  }
  EXPECT_EQ(a.highWater(), b.highWater());
  EXPECT_EQ(a.bytesInUse(), b.bytesInUse());
}
