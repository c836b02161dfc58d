// CollRounds (core/coll_rounds.h): the collectives' barriers over their words, members on threads of one process, each
// with a fake HOST segment that the others signal and read through Links. A barrier's flag (a member's raise or a
// different tag) reaches every member, flat and by host; sets alternate over many barriers; gatherWords gives every
// member every member's words; explain and failedTogether return the same kind of error on every member; a member
// left alone times out, passes the failure on and loses the team.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/coll_rounds.h"
#include "core/sync_schedule.h"

namespace tether {
namespace {

constexpr uint64_t kBase = 4096;
constexpr int kSlot = 2;
constexpr size_t kSegBytes = kBase + kTeamSlots * kCollWords * 8;

struct Member {
  std::vector<char> seg = std::vector<char>(kSegBytes, 0);
  CollRounds rounds;
  Team team;
  int lost = 0, passed = 0;
};

class Group {
 public:
  // hosts[m]: member m's host key; timeout for every wait.
  Group(std::vector<int> hosts, double timeout) : m_(hosts.size()) {
    const int n = static_cast<int>(hosts.size());
    for (int i = 0; i < n; ++i) m_[i].reset(new Member());
    for (int i = 0; i < n; ++i) {
      Member& me = *m_[i];
      CollRounds::Links l;
      l.me = i;
      l.timeout = timeout;
      l.base = kBase;
      l.mine = me.seg.data();
      l.signal = [this](int pe, uint64_t off, uint64_t value) {
        __atomic_store_n(reinterpret_cast<uint64_t*>(m_[pe]->seg.data() + off), value, __ATOMIC_RELEASE);
        return Status::ok();
      };
      l.get = [this](int pe, uint64_t off, void* dst, size_t bytes) {
        std::memcpy(dst, m_[pe]->seg.data() + off, bytes);
        return Status::ok();
      };
      l.progress = [] { return false; };
      l.passFailure = [&me](const Team&, size_t, uint64_t, uint64_t) { ++me.passed; };
      l.lose = [&me](Team&, Status s) {
        ++me.lost;
        return s;
      };
      me.rounds.attach(std::move(l));
      for (int k = 0; k < n; ++k) me.team.pes.push_back(k);
      me.team.me = i;
      me.team.slot = kSlot;
      me.team.sync = SyncSchedule::make(hosts, i, static_cast<int>(kCollRounds), true);
    }
  }
  size_t size() const { return m_.size(); }
  Member& at(size_t i) { return *m_[i]; }
  // Runs body(member index) on one thread per member; returns when all are done.
  void run(const std::function<void(size_t)>& body) {
    std::vector<std::thread> th;
    for (size_t i = 0; i < m_.size(); ++i) th.emplace_back(body, i);
    for (auto& t : th) t.join();
  }

 private:
  std::vector<std::unique_ptr<Member>> m_;
};

// One barrier on every member: raise[i] its raise, tag[i] its tag; flagged[i] what it reports.
std::vector<int> barrier(Group& g, const std::vector<bool>& raise, const std::vector<uint64_t>& tag) {
  std::vector<int> flagged(g.size(), -1);
  g.run([&](size_t i) {
    bool f = false;
    Status s = g.at(i).rounds.rounds("t", g.at(i).team, tag[i], raise[i], &f);
    flagged[i] = s.isOk() ? f : 2;
  });
  return flagged;
}

TEST(CollRounds, FlagReachesEveryMemberFlatAndByHost) {
  for (const std::vector<int>& hosts : {std::vector<int>{0, 0, 0}, std::vector<int>{0, 0, 1, 1, 1},
                                        std::vector<int>{0, 1, 0, 1, 2}}) {
    Group g(hosts, 5.0);
    const size_t n = g.size();
    EXPECT_EQ(barrier(g, std::vector<bool>(n, false), std::vector<uint64_t>(n, 7)), std::vector<int>(n, 0));
    for (size_t r = 0; r < n; ++r) {  // each member raising alone, then each sending another tag alone
      std::vector<bool> raise(n, false);
      raise[r] = true;
      EXPECT_EQ(barrier(g, raise, std::vector<uint64_t>(n, 7)), std::vector<int>(n, 1)) << "raised by " << r;
      std::vector<uint64_t> tag(n, 7);
      tag[r] = 8;
      EXPECT_EQ(barrier(g, std::vector<bool>(n, false), tag), std::vector<int>(n, 1)) << "tag of " << r;
    }
    // Every word consumed: the sets are clean for the next call.
    for (size_t i = 0; i < n; ++i) {
      const uint64_t* w = reinterpret_cast<const uint64_t*>(g.at(i).seg.data() + kBase + kSlot * kCollWords * 8);
      for (size_t k = 0; k < 2 * kCollRounds; ++k) EXPECT_EQ(w[k], 0u) << "member " << i << " word " << k;
    }
  }
}

TEST(CollRounds, ManyBarriersInARowKeepTheirSetsApart) {
  Group g({0, 0, 0, 0}, 5.0);
  std::atomic<int> flagged{0};
  g.run([&](size_t i) {
    for (int k = 0; k < 500; ++k) {
      bool f = false;
      if (!g.at(i).rounds.rounds("t", g.at(i).team, 100 + k, false, &f).isOk() || f) ++flagged;
    }
  });
  EXPECT_EQ(flagged.load(), 0);
}

TEST(CollRounds, GatherWordsGivesEveryMemberEveryMembersWords) {
  Group g({0, 0, 1}, 5.0);
  std::vector<std::vector<uint64_t>> all(g.size());
  g.run([&](size_t i) {
    const uint64_t mine[2] = {10 * i + 1, 10 * i + 2};
    ASSERT_TRUE(g.at(i).rounds.gatherWords("t", g.at(i).team, mine, 2, &all[i]).isOk());
  });
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_EQ(all[i], (std::vector<uint64_t>{1, 2, 11, 12, 21, 22})) << "member " << i;
}

TEST(CollRounds, ExplainAndFailedTogetherGiveEveryMemberAnError) {
  Group g({0, 0, 0}, 5.0);
  std::vector<Status> got(g.size());
  g.run([&](size_t i) {
    CollRecord r;
    r.w[CollRecord::kHead] = static_cast<uint64_t>(CollKind::Allgather) | CollRecord::kValid;
    r.w[CollRecord::kCount] = i == 2 ? 9 : 8;
    got[i] = g.at(i).rounds.explain("t", g.at(i).team, r, Status::ok());
  });
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(got[i].code(), TETHER_ERR_MISMATCH) << got[i].message();
    EXPECT_NE(got[i].message().find("count"), std::string::npos) << got[i].message();
  }
  g.run([&](size_t i) {
    const Status mine = i == 1 ? Status(TETHER_ERR_PEER_LOST, "member 1 lost its peer") : Status::ok();
    got[i] = g.at(i).rounds.failedTogether("t", g.at(i).team, mine);
  });
  EXPECT_EQ(got[1].message(), "member 1 lost its peer");
  for (size_t i : {0u, 2u}) {
    EXPECT_EQ(got[i].code(), TETHER_ERR_PEER_LOST);
    EXPECT_NE(got[i].message().find("team PE 1 (world PE 1) failed while moving data"), std::string::npos)
        << got[i].message();
  }
}

TEST(CollRounds, MemberLeftAloneTimesOutPassesItOnAndLosesTheTeam) {
  Group g({0, 0, 0}, 0.2);
  bool f = false;
  const Status s = g.at(0).rounds.rounds("t", g.at(0).team, 7, false, &f);
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT);
  EXPECT_EQ(g.at(0).lost, 1);
  EXPECT_EQ(g.at(0).passed, 1);
  Team alone = g.at(0).team;  // a team of one needs no barrier
  alone.pes = {0};
  alone.me = 0;
  EXPECT_TRUE(g.at(0).rounds.rounds("t", alone, 7, true, &f).isOk());
  EXPECT_TRUE(f);
}

}  // namespace
}  // namespace tether
