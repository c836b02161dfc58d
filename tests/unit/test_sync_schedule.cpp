// The barrier schedule (core/sync_schedule.h) against its contract, for random host maps: every word signalled once
// and awaited once per barrier by the member the step names; runs of several barriers back to back under random
// interleavings complete, every member ends each barrier knowing every member started it (so a flag raised anywhere
// reaches all), and no value is written over an unconsumed one (the Collectives' discipline: values consumed by
// zeroing, two word sets used alternately); flat where it must be; only leaders' phase-2 steps cross hosts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/sync_schedule.h"
#include "test_seed.h"

namespace tether {
namespace {

constexpr int kMaxWords = 16;

std::vector<SyncSchedule> all(const std::vector<int>& host, bool byHost) {
  std::vector<SyncSchedule> s;
  for (size_t m = 0; m < host.size(); ++m)
    s.push_back(SyncSchedule::make(host, static_cast<int>(m), kMaxWords, byHost));
  return s;
}

// Static part of the contract: who signals which word, who awaits it, same shape everywhere, words in range.
void checkPairing(const std::vector<int>& host, const std::vector<SyncSchedule>& s) {
  const int n = static_cast<int>(host.size());
  std::map<std::pair<int, int>, int> signalledBy, awaitedFrom;  // (member, word) -> member
  for (int m = 0; m < n; ++m) {
    EXPECT_EQ(s[m].byHost, s[0].byHost) << "member " << m;
    EXPECT_EQ(s[m].wordsUsed, s[0].wordsUsed) << "member " << m;
    EXPECT_LE(s[m].wordsUsed, kMaxWords);
    for (const SyncStep& st : s[m].steps) {
      EXPECT_GE(st.word, 0);
      EXPECT_LT(st.word, s[m].wordsUsed);
      if (st.to >= 0) {
        EXPECT_NE(st.to, m);
        EXPECT_TRUE(signalledBy.emplace(std::make_pair(st.to, st.word), m).second)
            << "word " << st.word << " of member " << st.to << " signalled twice";
      }
      if (st.from >= 0) {
        EXPECT_TRUE(awaitedFrom.emplace(std::make_pair(m, st.word), st.from).second)
            << "member " << m << " awaits word " << st.word << " twice";
      }
    }
  }
  EXPECT_EQ(signalledBy, awaitedFrom) << "every signalled word is awaited by its owner, from its signaller";
}

// Dynamic part: `barriers` barriers back to back, members stepping in random order; values are (barrier, knowledge).
void simulate(const std::vector<SyncSchedule>& s, int barriers, std::mt19937_64& rng) {
  const size_t n = s.size();
  struct Value {
    int barrier = -1;
    std::vector<bool> knows;
  };
  // words[member][parity][word]; barrier -1 = empty
  std::vector<std::vector<std::vector<Value>>> words(
      n, std::vector<std::vector<Value>>(2, std::vector<Value>(kMaxWords)));
  struct State {
    int barrier = 0;
    size_t step = 0;
    bool signalled = false;  // this step's signal is out (its wait remains)
    std::vector<bool> knows;
  };
  std::vector<State> st(n);
  for (size_t m = 0; m < n; ++m) {
    st[m].knows.assign(n, false);
    st[m].knows[m] = true;
  }
  size_t done = 0, idle = 0;
  while (done < n) {
    ASSERT_LT(idle, 100000u) << "no member can move: deadlock";
    const size_t m = rng() % n;
    State& me = st[m];
    if (me.barrier == barriers) {
      ++idle;
      continue;
    }
    const int parity = me.barrier & 1;
    if (me.step == s[m].steps.size()) {  // barrier complete
      for (size_t k = 0; k < n; ++k) ASSERT_TRUE(me.knows[k]) << "member " << m << " left barrier " << me.barrier
                                                              << " without hearing of member " << k;
      me.knows.assign(n, false);
      me.knows[m] = true;
      me.step = 0;
      if (++me.barrier == barriers) ++done;
      idle = 0;
      continue;
    }
    const SyncStep& step = s[m].steps[me.step];
    if (step.to >= 0 && !me.signalled) {
      Value& w = words[static_cast<size_t>(step.to)][parity][static_cast<size_t>(step.word)];
      ASSERT_EQ(w.barrier, -1) << "member " << m << " overwrote word " << step.word << " of member " << step.to
                               << " (barrier " << w.barrier << ", unconsumed) in barrier " << me.barrier;
      w.barrier = me.barrier;
      w.knows = me.knows;
      me.signalled = true;
      idle = 0;
      if (step.from < 0) {
        me.signalled = false;
        ++me.step;
      }
      continue;
    }
    Value& own = words[m][parity][static_cast<size_t>(step.word)];
    if (own.barrier < 0) {
      ++idle;
      continue;
    }
    ASSERT_EQ(own.barrier, me.barrier) << "member " << m << " word " << step.word;
    for (size_t k = 0; k < n; ++k) me.knows[k] = me.knows[k] || own.knows[k];
    own.barrier = -1;
    me.signalled = false;
    ++me.step;
    idle = 0;
  }
  for (size_t m = 0; m < n; ++m)
    for (int p = 0; p < 2; ++p)
      for (int w = 0; w < kMaxWords; ++w) EXPECT_EQ(words[m][p][w].barrier, -1) << "value left in member " << m;
}

TEST(SyncSchedule, RandomHostMaps) {
  const uint64_t seed = testSeed("test_sync_schedule");
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 300; ++iter) {
    const int n = 1 + static_cast<int>(rng() % 40);
    const int hosts = 1 + static_cast<int>(rng() % std::min(n, 9));
    std::vector<int> host(static_cast<size_t>(n));
    for (int& h : host) h = 100 + static_cast<int>(rng() % static_cast<uint64_t>(hosts)) * 7;  // any keys
    SCOPED_TRACE("n " + std::to_string(n) + " iteration " + std::to_string(iter));
    for (bool byHost : {true, false}) {
      const auto s = all(host, byHost);
      checkPairing(host, s);
      simulate(s, 4, rng);
      if (::testing::Test::HasFatalFailure()) return;
      std::set<int> distinct(host.begin(), host.end());
      std::map<int, int> count;
      for (int h : host) ++count[h];
      int largest = 0;
      for (auto& kv : count) largest = std::max(largest, kv.second);
      const bool expectByHost = byHost && distinct.size() > 1 && largest > 1;
      EXPECT_EQ(s[0].byHost, expectByHost);
      // Cross-host signals: by host, only leaders send them, and at most ceil(log2 hosts) each.
      int b = 0;
      while ((size_t{1} << b) < distinct.size()) ++b;
      for (int m = 0; m < n; ++m) {
        int cross = 0;
        for (const SyncStep& x : s[static_cast<size_t>(m)].steps)
          if (x.to >= 0 && host[static_cast<size_t>(x.to)] != host[static_cast<size_t>(m)]) ++cross;
        if (s[0].byHost) {
          EXPECT_LE(cross, b) << "member " << m;
        }
      }
    }
  }
}

TEST(SyncSchedule, FlatIsTheDissemination) {
  // One host, or one member per host: exactly the rounds of the flat barrier (round r: me + 2^r, from me - 2^r).
  for (const std::vector<int>& host : {std::vector<int>(6, 3), std::vector<int>{1, 2, 3, 4, 5}}) {
    const int n = static_cast<int>(host.size());
    for (int me = 0; me < n; ++me) {
      const SyncSchedule s = SyncSchedule::make(host, me, kMaxWords, true);
      EXPECT_FALSE(s.byHost);
      ASSERT_EQ(s.steps.size(), 3u);
      for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(s.steps[r].word, r);
        EXPECT_EQ(s.steps[r].to, (me + (1 << r)) % n);
        EXPECT_EQ(s.steps[r].from, (me + n - (1 << r)) % n);
      }
    }
  }
}

TEST(SyncSchedule, TwoHostsOfTwo) {
  // Members 0, 1 on host A, 2, 3 on host B: one local round, one round between the leaders 0 and 2, one release.
  const std::vector<int> host{7, 7, 9, 9};
  const SyncSchedule s0 = SyncSchedule::make(host, 0, kMaxWords, true);
  ASSERT_TRUE(s0.byHost);
  EXPECT_EQ(s0.wordsUsed, 3);
  ASSERT_EQ(s0.steps.size(), 3u);
  EXPECT_EQ(s0.steps[0].to, 1);  // local round
  EXPECT_EQ(s0.steps[0].from, 1);
  EXPECT_EQ(s0.steps[1].word, 1);  // leaders' round
  EXPECT_EQ(s0.steps[1].to, 2);
  EXPECT_EQ(s0.steps[1].from, 2);
  EXPECT_EQ(s0.steps[2].word, 2);  // release of member 1
  EXPECT_EQ(s0.steps[2].to, 1);
  EXPECT_EQ(s0.steps[2].from, -1);
  const SyncSchedule s3 = SyncSchedule::make(host, 3, kMaxWords, true);
  ASSERT_EQ(s3.steps.size(), 2u);
  EXPECT_EQ(s3.steps[1].word, 2);
  EXPECT_EQ(s3.steps[1].to, -1);
  EXPECT_EQ(s3.steps[1].from, 2);
  // Words too few for the three phases: flat.
  EXPECT_FALSE(SyncSchedule::make(host, 0, 2, true).byHost);
}

}  // namespace
}  // namespace tether
