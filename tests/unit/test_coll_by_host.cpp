// CollByHost (core/coll_by_host.h) alone, with a fake owner that records the steps' calls on the subteams instead of
// running them: the team's shape from its members' hosts, which calls go by host (kinds, sizes, roots, the setting),
// the steps of an allreduce on a host's first member and on another member, a failed step passed into the later ones
// (the first failure returned, the team lost), no free team index (every member pulls), the stream forms (only where
// every subteam is strided), and the block arithmetic of reduce_scatter's and alltoall's scratch (the data the fake
// steps leave is checked at the places the room reads it).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/coll_by_host.h"

namespace tether {
namespace {

constexpr int kHostSlot = 10, kLeaderSlot = 11;

struct Step {
  int slot;  // the subteam's (kHostSlot, kLeaderSlot)
  CollArgs r;
  bool stream;
};

class FakeOwner : public CollByHost::Owner {
 public:
  Status runOn(const char*, TeamRef sub, const CollArgs& r) override {
    steps.push_back({sub.slot, r, false});
    if (onStep) onStep(steps.back());
    const Status s = failAt == steps.size() ? Status(TETHER_ERR_TIMEOUT, "step failed") : Status::ok();
    return s.isOk() ? r.invalid : s;  // a step whose members were told of a failure fails with it
  }
  Status enqueueOn(const char*, TeamRef sub, const CollArgs& r, void*) override {
    steps.push_back({sub.slot, r, true});
    return Status::ok();
  }
  Status oneShot(const char*, Team&, const CollPlan&) override {
    ++oneShots;
    return Status::ok();
  }
  Status pull(const char*, Team&, const CollPlan&) override {
    ++pulls;
    return Status::ok();
  }
  std::vector<Step> steps;
  size_t failAt = 0;  // the step (1-based) that fails; 0: none
  std::function<void(const Step&)> onStep;
  int oneShots = 0, pulls = 0;
};

class CollByHostTest : public ::testing::Test {
 protected:
  // A team of world PEs 0 .. hosts.size() - 1 on those hosts, this PE its member me; subteams made by the split.
  void setUp(std::vector<int> hosts, int me, bool enabled = true) {
    hosts_ = std::move(hosts);
    owner_.steps.clear();
    splits_ = 0;
    t_ = Team();
    t_.slot = 2;
    t_.me = me;
    for (size_t k = 0; k < hosts_.size(); ++k) t_.pes.push_back(static_cast<int>(k));
    CollByHost::Links l;
    l.hostsOf = [this](const std::vector<int>& pes) {
      std::vector<int> h;
      for (int pe : pes) h.push_back(hosts_[static_cast<size_t>(pe)]);
      return h;
    };
    l.mapped = [this](int pe) { return unmapped_ != pe; };
    l.split = [this](const char*, TeamRef) {
      ++splits_;
      if (!splitResult_.isOk()) return splitResult_;
      int onMine = 0;  // members on this PE's host
      for (int h : hosts_) onMine += h == hosts_[static_cast<size_t>(t_.me)];
      if (onMine > 1) t_.hostTeam = TeamRef{kHostSlot, 1};
      if (t_.hostLeader.size() > 1 && t_.hostLeader[static_cast<size_t>(t_.hostOf[static_cast<size_t>(t_.me)])] == t_.me)
        t_.leaderTeam = TeamRef{kLeaderSlot, 1};
      return Status::ok();
    };
    l.lose = [this](Team& t, Status s) {
      if (!s.isOk() && t.lost.isOk()) t.lost = s;
      return s;
    };
    l.scratch = scratch_.data();
    room_.attach(enabled, std::move(l));
  }
  CollPlan plan(CollKind kind, size_t count, int root = 0, size_t es = 8) {
    CollPlan p;
    p.a.kind = kind;
    p.a.type = TETHER_UINT64;
    p.a.count = count;
    p.a.root = root;
    p.a.dest = dest_.data();
    p.a.src = src_.data();
    p.n = t_.pes.size();
    p.me = static_cast<size_t>(t_.me);
    p.es = es;
    p.block = count * es;
    return p;
  }
  // The data phase as run() reaches it: the record (recorded(), which reads the team's shape) first.
  Status data(const CollPlan& p) {
    room_.recorded(t_, p.a, p.block);
    return room_.data("t", t_, TeamRef{2, 1}, p);
  }
  char* scratchOfTeam() { return scratch_.data() + static_cast<size_t>(t_.slot) * kByHostScratchBytes; }

  std::vector<int> hosts_;
  Team t_;
  FakeOwner owner_;
  CollByHost room_{owner_};
  Status splitResult_;
  int splits_ = 0, unmapped_ = -1;
  std::vector<char> scratch_ = std::vector<char>(kTeamSlots * kByHostScratchBytes);
  std::vector<char> dest_ = std::vector<char>(64 * 1024), src_ = std::vector<char>(64 * 1024);
};

TEST_F(CollByHostTest, ShapeFromHosts) {
  setUp({0, 0, 1, 1}, 1);
  EXPECT_TRUE(room_.shaped(t_));
  EXPECT_EQ(t_.byHost, 1);
  EXPECT_EQ(t_.hostRun, 2);  // consecutive, as many on every host
  EXPECT_EQ(t_.hostMost, 2);
  EXPECT_EQ(t_.hostOf, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(t_.hostLeader, (std::vector<int>{0, 2}));
  EXPECT_TRUE(t_.hostStrided);
  EXPECT_TRUE(t_.hostMapped);
  EXPECT_EQ(room_.hostRun(t_), 2);

  setUp({0, 1, 0, 1, 0}, 4);  // interleaved, unequal: by host, but no run
  EXPECT_TRUE(room_.shaped(t_));
  EXPECT_EQ(t_.hostRun, 0);
  EXPECT_EQ(t_.hostMost, 3);
  EXPECT_EQ(t_.hostOf, (std::vector<int>{0, 1, 0, 1, 0}));
  EXPECT_EQ(t_.hostLeader, (std::vector<int>{0, 1}));
  EXPECT_TRUE(t_.hostStrided);  // host 0's members 0, 2, 4; host 1's 1, 3; leaders 0, 1

  setUp({0, 0, 1, 0}, 0);  // host 0's members 0, 1, 3: not at one stride
  EXPECT_TRUE(room_.shaped(t_));
  EXPECT_FALSE(t_.hostStrided);

  setUp({0, 0, 1, 1}, 0);
  unmapped_ = 1;  // a member on this PE's host not mapped here
  EXPECT_TRUE(room_.shaped(t_));
  EXPECT_FALSE(t_.hostMapped);

  setUp({0, 0, 0}, 0);  // one host
  EXPECT_FALSE(room_.shaped(t_));
  setUp({0, 1, 2}, 0);  // one member per host
  EXPECT_FALSE(room_.shaped(t_));
  EXPECT_EQ(room_.hostRun(t_), 0);

  setUp({0, 0, 1, 1}, 0, false);  // TETHER_COLL_BY_HOST=0
  EXPECT_EQ(room_.hostRun(t_), 0);
  EXPECT_FALSE(room_.recorded(t_, plan(CollKind::Allreduce, 1).a, 8));
}

TEST_F(CollByHostTest, WhichCallsGoByHost) {
  setUp({0, 0, 1, 1}, 1);
  auto recorded = [&](CollKind k, size_t bytes, int root = 0) {
    const CollPlan p = plan(k, bytes / 8, root);
    return room_.recorded(t_, p.a, p.block);
  };
  EXPECT_TRUE(recorded(CollKind::Allreduce, 8));
  EXPECT_TRUE(recorded(CollKind::Allgather, 8));  // hostRun 2
  EXPECT_TRUE(recorded(CollKind::Broadcast, 8, 1));  // staged sizes: any root
  EXPECT_FALSE(recorded(CollKind::Broadcast, 2 * kCollStageBytes, 1));  // over them: the root must lead its host
  EXPECT_TRUE(recorded(CollKind::Broadcast, 2 * kCollStageBytes, 2));
  EXPECT_FALSE(recorded(CollKind::Reduce, kCollStageBytes));  // one-shot sizes: not by host
  EXPECT_TRUE(recorded(CollKind::Reduce, 2 * kCollStageBytes, 0));
  EXPECT_FALSE(recorded(CollKind::Reduce, 2 * kCollStageBytes, 1));  // root not first, no host holds 3+
  EXPECT_FALSE(recorded(CollKind::Reduce, 2 * kByHostScratchBytes, 0));  // over the scratch
  EXPECT_TRUE(recorded(CollKind::ReduceScatter, kByHostScratchBytes / 4));  // the whole src (4 blocks) fits
  EXPECT_FALSE(recorded(CollKind::ReduceScatter, kByHostScratchBytes / 2));
  EXPECT_TRUE(recorded(CollKind::Alltoall, kByHostScratchBytes / 16));  // 2 regions of 2 x 4 blocks
  EXPECT_FALSE(recorded(CollKind::Alltoall, kByHostScratchBytes / 8));
  EXPECT_FALSE(recorded(CollKind::Alltoallv, 8));

  setUp({0, 0, 0, 1}, 1);  // a host holds 3: a reduce's root need not lead; no run: no allgather, alltoall
  EXPECT_TRUE(recorded(CollKind::Reduce, 2 * kCollStageBytes, 1));
  EXPECT_FALSE(recorded(CollKind::Allgather, 8));
  EXPECT_FALSE(recorded(CollKind::Alltoall, 8));
  EXPECT_TRUE(recorded(CollKind::Allreduce, 8));

  setUp({0, 0, 1, 1}, 0);
  unmapped_ = 1;  // a broadcast needs this host's members mapped
  EXPECT_FALSE(recorded(CollKind::Broadcast, 8));

  // call(): HOST objects only, not on the GPU engine, not after a failed split; broadcasts ask src only.
  setUp({0, 0, 1, 1}, 1);
  CollPlan p = plan(CollKind::Allreduce, 1);
  EXPECT_TRUE(room_.call(t_, p));
  p.dref.kind = SegKind::Device;
  EXPECT_FALSE(room_.call(t_, p));
  p = plan(CollKind::Broadcast, 1);
  p.dref.kind = SegKind::Device;
  EXPECT_TRUE(room_.call(t_, p));
  p = plan(CollKind::Allreduce, 1);
  p.gpu = true;
  EXPECT_FALSE(room_.call(t_, p));
  p = plan(CollKind::Allreduce, 0);
  EXPECT_FALSE(room_.call(t_, p));  // nothing to move
  t_.byHost = 3;
  EXPECT_FALSE(room_.call(t_, plan(CollKind::Allreduce, 1)));
}

TEST_F(CollByHostTest, AllreduceStepsOnALeaderAndAnotherMember) {
  setUp({0, 0, 1, 1}, 2);  // host 1's first member
  const CollPlan p = plan(CollKind::Allreduce, 4);
  ASSERT_TRUE(room_.call(t_, p));
  ASSERT_TRUE(data(p).isOk());
  EXPECT_EQ(splits_, 1);
  EXPECT_EQ(t_.byHost, 2);
  ASSERT_EQ(owner_.steps.size(), 3u);
  EXPECT_EQ(owner_.steps[0].slot, kHostSlot);  // reduce into this host's first member
  EXPECT_EQ(owner_.steps[0].r.kind, CollKind::Reduce);
  EXPECT_EQ(owner_.steps[0].r.root, 0);
  EXPECT_EQ(owner_.steps[0].r.src, p.a.src);
  EXPECT_EQ(owner_.steps[0].r.dest, p.a.dest);
  EXPECT_EQ(owner_.steps[1].slot, kLeaderSlot);  // allreduce in place among the first members
  EXPECT_EQ(owner_.steps[1].r.kind, CollKind::Allreduce);
  EXPECT_EQ(owner_.steps[1].r.src, p.a.dest);
  EXPECT_EQ(owner_.steps[2].slot, kHostSlot);  // broadcast on this host from its first member
  EXPECT_EQ(owner_.steps[2].r.kind, CollKind::Broadcast);
  EXPECT_TRUE(owner_.steps[2].r.eager);
  EXPECT_EQ(owner_.steps[2].r.count, 4u);
  for (const Step& s : owner_.steps) EXPECT_FALSE(s.stream);

  owner_.steps.clear();
  setUp({0, 0, 1, 1}, 3);  // not first on its host: no step among the first members
  ASSERT_TRUE(data(plan(CollKind::Allreduce, 4)).isOk());
  ASSERT_EQ(owner_.steps.size(), 2u);
  EXPECT_EQ(owner_.steps[0].r.kind, CollKind::Reduce);
  EXPECT_EQ(owner_.steps[1].r.kind, CollKind::Broadcast);
  ASSERT_TRUE(data(plan(CollKind::Allreduce, 4)).isOk());
  EXPECT_EQ(splits_, 1);  // the subteams are made once
}

TEST_F(CollByHostTest, AFailedStepIsPassedOnAndReturned) {
  setUp({0, 0, 1, 1}, 2);
  owner_.failAt = 1;  // the reduce on this host
  const Status s = data(plan(CollKind::Allreduce, 4));
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT);
  EXPECT_NE(s.message().find("on this host"), std::string::npos) << s.message();
  EXPECT_EQ(t_.lost.code(), TETHER_ERR_TIMEOUT);
  // Host forms: the later steps still run, told of the failure, so their members fail at once naming it.
  ASSERT_EQ(owner_.steps.size(), 3u);
  EXPECT_TRUE(owner_.steps[0].r.invalid.isOk());
  EXPECT_EQ(owner_.steps[1].r.invalid.code(), TETHER_ERR_TIMEOUT);
  EXPECT_EQ(owner_.steps[2].r.invalid.code(), TETHER_ERR_TIMEOUT);
}

TEST_F(CollByHostTest, NoFreeTeamIndexPulls) {
  setUp({0, 0, 1, 1}, 1);
  splitResult_ = Status(TETHER_ERR_NO_MEMORY, "no team index");
  ASSERT_TRUE(data(plan(CollKind::Allreduce, 4)).isOk());
  EXPECT_EQ(t_.byHost, 3);
  EXPECT_EQ(owner_.pulls, 1);
  EXPECT_TRUE(owner_.steps.empty());
  EXPECT_FALSE(room_.call(t_, plan(CollKind::Allreduce, 4)));  // later calls: not by host
  ASSERT_TRUE(data(plan(CollKind::Broadcast, 1)).isOk());
  EXPECT_EQ(owner_.oneShots, 1);  // a staged broadcast reads the root's staged copy
  EXPECT_EQ(splits_, 1);

  setUp({0, 0, 1, 1}, 1);  // another failure of the split loses the team
  splitResult_ = Status(TETHER_ERR_TIMEOUT, "split timed out");
  EXPECT_EQ(data(plan(CollKind::Allreduce, 4)).code(), TETHER_ERR_TIMEOUT);
  EXPECT_EQ(t_.lost.code(), TETHER_ERR_TIMEOUT);
}

TEST_F(CollByHostTest, StreamFormsOnlyWhereStrided) {
  bool done = true;
  const std::unique_ptr<StreamOps> so = createCpuStreamOps(5.0);  // (no step here copies on it)
  setUp({0, 0, 1, 0}, 0);  // host 0's members not at one stride
  ASSERT_TRUE(room_.enqueue("t", t_, TeamRef{2, 1}, plan(CollKind::Allreduce, 4), so.get(), nullptr, &done).isOk());
  EXPECT_FALSE(done);
  EXPECT_EQ(splits_, 0);

  setUp({0, 0, 1, 1}, 2);
  ASSERT_TRUE(room_.enqueue("t", t_, TeamRef{2, 1}, plan(CollKind::Allreduce, 4), so.get(), nullptr, &done).isOk());
  EXPECT_TRUE(done);
  ASSERT_EQ(owner_.steps.size(), 3u);
  for (const Step& s : owner_.steps) EXPECT_TRUE(s.stream);
  EXPECT_EQ(owner_.steps[1].slot, kLeaderSlot);

  owner_.steps.clear();
  setUp({0, 0, 1, 1}, 3);  // a stream broadcast from root 1 (host 0): this host's first member broadcasts here
  ASSERT_TRUE(room_.enqueue("t", t_, TeamRef{2, 1}, plan(CollKind::Broadcast, 4, 1), so.get(), nullptr, &done).isOk());
  EXPECT_TRUE(done);
  ASSERT_EQ(owner_.steps.size(), 1u);
  EXPECT_EQ(owner_.steps[0].slot, kHostSlot);
  EXPECT_EQ(owner_.steps[0].r.root, 0);

  owner_.steps.clear();
  setUp({0, 0, 1, 1}, 1);  // nothing to move: the device form
  ASSERT_TRUE(room_.enqueue("t", t_, TeamRef{2, 1}, plan(CollKind::Allreduce, 0), so.get(), nullptr, &done).isOk());
  EXPECT_FALSE(done);
  EXPECT_TRUE(owner_.steps.empty());
}

TEST_F(CollByHostTest, ReduceScatterTakesThisMembersBlockOfItsHostsRun) {
  setUp({0, 0, 1, 1}, 3);  // host 1's second member: its block is the second of host 1's run
  const CollPlan p = plan(CollKind::ReduceScatter, 2);  // 16-byte blocks
  ASSERT_TRUE(room_.call(t_, p));
  owner_.onStep = [&](const Step& s) {
    if (s.r.kind != CollKind::Broadcast) return;
    char* run = static_cast<char*>(s.r.dest);  // host 1's run: blocks 2 and 3 of the team
    EXPECT_EQ(run, scratchOfTeam() + 1 * 2 * p.block);
    for (size_t k = 0; k < 2 * p.block; ++k) run[k] = static_cast<char>(k / p.block + 2);
  };
  ASSERT_TRUE(data(p).isOk());
  ASSERT_EQ(owner_.steps.size(), 2u);  // reduce on this host, broadcast on it (not a first member)
  EXPECT_EQ(owner_.steps[0].r.count, 4 * p.a.count);  // the whole src
  for (size_t k = 0; k < p.block; ++k) ASSERT_EQ(dest_[k], 3) << k;
}

TEST_F(CollByHostTest, AlltoallReordersByDestinationHost) {
  // 2 hosts of m = 2 members (team 0 1 | 2 3), this PE member 0 (host 0's first), 8-byte blocks. Block codes: host h,
  // member j, for member i of the team or of a host.
  setUp({0, 0, 1, 1}, 0);
  const size_t m = 2, n = 4, B = 8;
  const CollPlan p = plan(CollKind::Alltoall, 1);
  ASSERT_TRUE(room_.call(t_, p));
  auto code = [](size_t h, size_t j, size_t i) { return static_cast<char>(100 * h + 10 * j + i); };
  owner_.onStep = [&](const Step& s) {
    char* dst = static_cast<char*>(s.r.dest);
    const char* src = static_cast<const char*>(s.r.src);
    if (s.r.kind == CollKind::Allgather) {  // a[j][k]: this host's member j's block for team member k
      for (size_t j = 0; j < m; ++j)
        for (size_t k = 0; k < n; ++k) std::memset(dst + (j * n + k) * B, code(0, j, k), B);
    } else if (s.r.kind == CollKind::Alltoall) {  // b[h][j][i] = a[j][h * m + i]; a then holds a[h][j][i] from host h
      for (size_t h = 0; h < 2; ++h)
        for (size_t j = 0; j < m; ++j)
          for (size_t i = 0; i < m; ++i) EXPECT_EQ(src[((h * m + j) * m + i) * B], code(0, j, h * m + i));
      for (size_t h = 0; h < 2; ++h)
        for (size_t j = 0; j < m; ++j)
          for (size_t i = 0; i < m; ++i) std::memset(dst + ((h * m + j) * m + i) * B, code(h, j, i), B);
    }
  };
  ASSERT_TRUE(data(p).isOk());
  ASSERT_EQ(owner_.steps.size(), 3u);
  EXPECT_EQ(owner_.steps[1].r.kind, CollKind::Alltoall);
  EXPECT_EQ(owner_.steps[1].r.count, m * m);
  for (size_t k = 0; k < n; ++k)  // dest block k = from team member k = host k / m's member k % m, to this member (0)
    EXPECT_EQ(dest_[k * B], code(k / m, k % m, 0)) << k;
}

}  // namespace
}  // namespace tether
