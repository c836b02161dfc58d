// Messaging's stream area (core/msg_words.h) against its contract: every index handed out once until released, none
// past the area; generations strictly grow and stay above any value passed(); a group word reaches its target after
// exactly m counts, not before, and frees its index then; and a random mix of takes, releases and groups keeps every
// index either held or free, never both (prints its seed; TETHER_TEST_SEED repeats one).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/msg_words.h"
#include "test_seed.h"

namespace tether {
namespace {

TEST(MsgWords, TakeUntilFullThenRelease) {
  std::vector<uint64_t> area(2 * 8, 0);
  StreamWords w;
  w.attach(area.data(), area.data() + 8, 8);
  std::set<uint32_t> held;
  uint32_t i = 0;
  for (int k = 0; k < 8; ++k) {
    ASSERT_TRUE(w.take(&i));
    EXPECT_LT(i, 8u);
    EXPECT_TRUE(held.insert(i).second) << "index " << i << " handed out twice";
  }
  EXPECT_EQ(*held.begin(), 0u);
  EXPECT_FALSE(w.any());
  EXPECT_FALSE(w.take(&i));
  w.release(5);
  ASSERT_TRUE(w.take(&i));
  EXPECT_EQ(i, 5u);
  EXPECT_EQ(w.trigger(3), area.data() + 3);
  EXPECT_EQ(w.done(3), area.data() + 8 + 3);
}

TEST(MsgWords, GenerationsGrow) {
  StreamWords w;
  const uint64_t a = w.next(), b = w.next();
  EXPECT_GT(b, a);
  const uint64_t s = w.nextRange(5);
  EXPECT_GT(s, b);
  EXPECT_GT(w.next(), s + 5);
  w.passed(1000);
  EXPECT_GT(w.next(), 1000u);
  w.passed(3);  // never back
  EXPECT_GT(w.next(), 1001u);
}

TEST(MsgWords, GroupReachesTargetAfterM) {
  std::vector<uint64_t> area(2 * 4, 0);
  StreamWords w;
  w.attach(area.data(), area.data() + 4, 4);
  w.next();
  uint32_t g = 0;
  uint64_t target = 0;
  ASSERT_TRUE(w.openGroup(3, &g, &target));
  EXPECT_EQ(w.openGroups(), 1u);
  const uint64_t before = *w.done(g);
  EXPECT_EQ(before + 3, target);
  EXPECT_GT(w.next(), target);  // later generations exceed what the group reaches
  for (int k = 0; k < 3; ++k) {
    EXPECT_LT(*w.done(g), target) << "reached after " << k << " counts";
    w.count(g);
  }
  EXPECT_EQ(*w.done(g), target);
  EXPECT_EQ(w.openGroups(), 0u);
  // Freed: four takes get every index, g among them.
  std::set<uint32_t> all;
  uint32_t i = 0;
  for (int k = 0; k < 8 && w.take(&i); ++k) all.insert(i);  // (bounded: a take that never runs out fails, not hangs)
  EXPECT_EQ(all.size(), 4u);
  EXPECT_TRUE(all.count(g));
  EXPECT_FALSE(w.openGroup(1, &g, &target));  // none free
}

TEST(MsgWords, RandomHoldersNeverShare) {
  const uint64_t seed = testSeed("test_msg_words");
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  constexpr uint32_t kCount = 32;
  std::vector<uint64_t> area(2 * kCount, 0);
  StreamWords w;
  w.attach(area.data(), area.data() + kCount, kCount);
  std::vector<uint32_t> held;                              // plain holders
  std::vector<std::pair<uint32_t, uint64_t>> groups;       // (index, counts left)
  std::vector<uint64_t> targets(kCount, 0);
  uint64_t lastGen = 0;
  for (int op = 0; op < 20000 && !HasFailure(); ++op) {
    const int kind = static_cast<int>(rng() % 4);
    uint32_t i = 0;
    if (kind == 0) {
      if (w.take(&i)) held.push_back(i);
      else EXPECT_EQ(held.size() + groups.size(), kCount) << "op " << op;
    } else if (kind == 1 && !held.empty()) {
      const size_t k = rng() % held.size();
      w.release(held[k]);
      held.erase(held.begin() + static_cast<long>(k));
    } else if (kind == 2) {
      uint64_t target = 0;
      const uint64_t m = 1 + rng() % 4;
      if (w.openGroup(m, &i, &target)) {
        EXPECT_GT(*w.done(i), lastGen) << "op " << op;
        groups.push_back({i, m});
        targets[i] = target;
      }
    } else if (!groups.empty()) {
      const size_t k = rng() % groups.size();
      w.count(groups[k].first);
      if (--groups[k].second == 0) {
        EXPECT_EQ(*w.done(groups[k].first), targets[groups[k].first]) << "op " << op;
        groups.erase(groups.begin() + static_cast<long>(k));
      }
    }
    const uint64_t g = w.next();
    EXPECT_GT(g, lastGen);
    lastGen = g;
    std::set<uint32_t> seen(held.begin(), held.end());
    for (const auto& x : groups) EXPECT_TRUE(seen.insert(x.first).second) << "index shared, op " << op;
    EXPECT_EQ(seen.size(), held.size() + groups.size()) << "index shared, op " << op;
    EXPECT_EQ(w.openGroups(), groups.size());
  }
}

}  // namespace
}  // namespace tether
