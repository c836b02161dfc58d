// CollTokens (core/coll_tokens.h): the token rings of the team collectives, two members in one process, each with a
// fake HOST segment (memory of this process) that the other "maps". What a token carries (flags, hash, record,
// inline data) as the other member reads it; a slot reused only once every member's done word passed the call that
// used it last; the staging ring's rooms (64-byte aligned, restarting at the ring's start, waiting for the calls they
// overwrite); the close words (a member's phase of a call, failures carried); token numbers across team lifetimes;
// the waits bounded by the timeout, the team lost on an await's expiry. Waits that must expire use a 0.2 s timeout
// (no time is asserted).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/coll_tokens.h"

namespace tether {
namespace {

constexpr size_t kSegBytes = kEagerStageOffset + kTeamSlots * kEagerStageTeamBytes;
constexpr int kSlot = 3;

struct Member {
  std::unique_ptr<char, decltype(&std::free)> seg{static_cast<char*>(std::aligned_alloc(4096, kSegBytes)), &std::free};
  CollTokens tokens;
  Team team;
  int lost = 0;  // Links::lose calls
};

class CollTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int pe = 0; pe < 2; ++pe) {
      m_[pe].reset(new Member());
      std::memset(m_[pe]->seg.get(), 0, kSegBytes);
    }
    for (int pe = 0; pe < 2; ++pe) {
      Member& me = *m_[pe];
      CollTokens::Links l;
      l.me = pe;
      l.host = [this](int p, uint64_t off) -> char* {
        return p >= 0 && p < 2 && mapped_[p] ? m_[p]->seg.get() + off : nullptr;
      };
      l.lose = [&me](Team&, Status s) {
        ++me.lost;
        return s;
      };
      l.timeout = 0.2;
      me.tokens.attach(std::move(l));
      me.team.pes = {0, 1};
      me.team.me = pe;
      me.team.slot = kSlot;
    }
  }
  Member& pe(int p) { return *m_[p]; }
  uint64_t* doneOf(int p) {  // member p's done word of kSlot, in its own segment
    return reinterpret_cast<uint64_t*>(pe(p).seg.get() + kEagerOffset + kSlot * kEagerTeamBytes);
  }
  static CollRecord record(uint64_t count) {
    CollRecord r;
    r.w[CollRecord::kHead] = 2 | CollRecord::kValid;
    r.w[CollRecord::kCount] = count;
    r.w[CollRecord::kDest] = 4096 << 2;
    return r;
  }

  std::unique_ptr<Member> m_[2];
  bool mapped_[2] = {true, true};
};

TEST_F(CollTokensTest, TokenTeamNeedsEveryMemberMapped) {
  ASSERT_TRUE(pe(0).tokens.team(pe(0).team));
  EXPECT_EQ(pe(0).team.tokens, 1);
  ASSERT_EQ(pe(0).team.rings.size(), 2u);
  for (int p = 0; p < 2; ++p)
    EXPECT_EQ(reinterpret_cast<char*>(pe(0).team.rings[p]), pe(p).seg.get() + kEagerOffset + kSlot * kEagerTeamBytes);
  EXPECT_EQ(pe(0).tokens.stage(pe(0).team, 1, 192),
            pe(1).seg.get() + kEagerStageOffset + kSlot * kEagerStageTeamBytes + 192);
  Team alone;  // one member: no tokens
  alone.pes = {0};
  alone.me = 0;
  alone.slot = kSlot;
  EXPECT_FALSE(pe(0).tokens.team(alone));
  mapped_[1] = false;  // PE 1 not mapped here: not a token team (a fresh Team asks again)
  Team t;
  t.pes = {0, 1};
  t.me = 0;
  t.slot = kSlot;
  EXPECT_FALSE(pe(0).tokens.team(t));
  EXPECT_FALSE(pe(0).tokens.peer(1));
  EXPECT_TRUE(pe(0).tokens.peer(0));
}

TEST_F(CollTokensTest, PostedTokenReadsBackOnTheOtherMember) {
  ASSERT_TRUE(pe(0).tokens.team(pe(0).team));
  ASSERT_TRUE(pe(1).tokens.team(pe(1).team));
  const CollRecord r = record(5);
  const char data[] = "twelve bytes";
  ASSERT_TRUE(pe(0).tokens.post("t", pe(0).team, 0, r, CollTokens::kEager | CollTokens::kInline, data,
                                 sizeof data).isOk());
  ASSERT_TRUE(pe(1).tokens.await("t", pe(1).team, 0, 0, "test").isOk());
  const CollTokens::Token tok = pe(1).tokens.token(pe(1).team, 0, 0);
  EXPECT_TRUE(tok.valid());
  EXPECT_TRUE(tok.inlined());
  EXPECT_FALSE(tok.staged());
  EXPECT_EQ(tok.hash(), r.hash());
  EXPECT_EQ(std::memcmp(tok.data(), data, sizeof data), 0);
  const CollRecord back = tok.record();
  EXPECT_EQ(std::memcmp(back.w, r.w, sizeof r.w), 0);
  // A different record hashes differently (the agreement's test), a staged token says so and carries its word.
  const CollRecord r2 = record(6);
  EXPECT_NE(r2.hash(), r.hash());
  const uint64_t off = 320;
  ASSERT_TRUE(pe(0).tokens.post("t", pe(0).team, 1, r2, CollTokens::kStaged, &off, sizeof off).isOk());
  ASSERT_TRUE(pe(1).tokens.await("t", pe(1).team, 0, 1, "test").isOk());
  const CollTokens::Token tok2 = pe(1).tokens.token(pe(1).team, 0, 1);
  EXPECT_TRUE(tok2.staged());
  EXPECT_FALSE(tok2.inlined());
  EXPECT_EQ(tok2.dataWord(), off);
  EXPECT_EQ(tok2.hash(), r2.hash());
  EXPECT_EQ(pe(1).lost, 0);
}

TEST_F(CollTokensTest, InvalidRecordPostsAnInvalidToken) {
  ASSERT_TRUE(pe(0).tokens.team(pe(0).team));
  ASSERT_TRUE(pe(1).tokens.team(pe(1).team));
  ASSERT_TRUE(pe(0).tokens.post("t", pe(0).team, 0, CollRecord{}, 0, nullptr, 0).isOk());
  ASSERT_TRUE(pe(1).tokens.await("t", pe(1).team, 0, 0, "test").isOk());
  EXPECT_FALSE(pe(1).tokens.token(pe(1).team, 0, 0).valid());
}

TEST_F(CollTokensTest, AwaitOfAMissingTokenTimesOutAndLosesTheTeam) {
  ASSERT_TRUE(pe(1).tokens.team(pe(1).team));
  // PE 0 posted nothing; a token of an earlier lap of the ring (call c - kEagerDepth) does not count either.
  const Status s = pe(1).tokens.await("t", pe(1).team, 0, 0, "the test's wait");
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT);
  EXPECT_NE(s.message().find("the test's wait"), std::string::npos) << s.message();
  EXPECT_EQ(pe(1).lost, 1);
  ASSERT_TRUE(pe(0).tokens.team(pe(0).team));
  ASSERT_TRUE(pe(0).tokens.post("t", pe(0).team, 0, record(1), 0, nullptr, 0).isOk());
  EXPECT_EQ(pe(1).tokens.await("t", pe(1).team, 0, kEagerDepth, "test").code(), TETHER_ERR_TIMEOUT);
  EXPECT_TRUE(pe(1).tokens.await("t", pe(1).team, 0, 0, "test").isOk());
}

TEST_F(CollTokensTest, SlotIsReusedOnlyOnceEveryMemberIsDoneWithIt) {
  Team& t = pe(0).team;
  ASSERT_TRUE(pe(0).tokens.team(t));
  for (uint64_t c = 0; c < kEagerDepth; ++c)  // a whole lap: no slot reused yet, no wait
    ASSERT_TRUE(pe(0).tokens.post("t", t, c, record(c), 0, nullptr, 0).isOk()) << c;
  // Call kEagerDepth reuses call 0's slot: PE 1 has not finished call 0 (its done word is 0).
  EXPECT_EQ(pe(0).tokens.post("t", t, kEagerDepth, record(0), 0, nullptr, 0).code(), TETHER_ERR_TIMEOUT);
  // Once done, the poster waits for half the ring to be free (so it polls once per kEagerDepth / 2 calls).
  __atomic_store_n(doneOf(1), uint64_t{1}, __ATOMIC_RELEASE);
  EXPECT_EQ(pe(0).tokens.post("t", t, kEagerDepth, record(0), 0, nullptr, 0).code(), TETHER_ERR_TIMEOUT);
  __atomic_store_n(doneOf(1), uint64_t{kEagerDepth / 2 + 1}, __ATOMIC_RELEASE);
  ASSERT_TRUE(pe(0).tokens.post("t", t, kEagerDepth, record(0), 0, nullptr, 0).isOk());
  EXPECT_EQ(t.minDone, kEagerDepth / 2 + 1);
  // The next calls up to that point need no wait (and read no done word: minDone covers them).
  __atomic_store_n(doneOf(1), uint64_t{0}, __ATOMIC_RELEASE);
  for (uint64_t c = kEagerDepth + 1; c <= kEagerDepth + kEagerDepth / 2; ++c)
    ASSERT_TRUE(pe(0).tokens.post("t", t, c, record(c), 0, nullptr, 0).isOk()) << c;
}

TEST_F(CollTokensTest, StagingRoomsAreAlignedWrapAndWaitForTheCallsTheyOverwrite) {
  Team& t = pe(0).team;
  ASSERT_TRUE(pe(0).tokens.team(t));
  uint64_t off = 1;
  ASSERT_TRUE(pe(0).tokens.stageRoom("t", t, 100, 0, &off).isOk());
  EXPECT_EQ(off, 0u);
  ASSERT_TRUE(pe(0).tokens.stageRoom("t", t, 1, 1, &off).isOk());
  EXPECT_EQ(off, 128u);  // 100 bytes take two lines
  ASSERT_TRUE(pe(0).tokens.stageRoom("t", t, 64, 2, &off).isOk());
  EXPECT_EQ(off, 192u);
  // Fill the ring to 64 bytes short of its end; a room of 128 bytes does not fit there: it starts at the ring's
  // start, over calls 0 and 1, which PE 1 has not finished.
  const size_t rest = kEagerStageTeamBytes - 256 - 64;
  ASSERT_TRUE(pe(0).tokens.stageRoom("t", t, rest, 3, &off).isOk());
  EXPECT_EQ(off, 256u);
  EXPECT_EQ(pe(0).tokens.stageRoom("t", t, 128, 4, &off).code(), TETHER_ERR_TIMEOUT);
  Team fresh;  // (the failed call changed the team's ring state: start again on a fresh team of the slot)
  fresh.pes = {0, 1};
  fresh.me = 0;
  fresh.slot = kSlot;
  ASSERT_TRUE(pe(0).tokens.team(fresh));
  for (uint64_t c = 0; c < 4; ++c)
    ASSERT_TRUE(pe(0).tokens.stageRoom("t", fresh, c == 0 ? 100 : c == 1 ? 1 : c == 2 ? 64 : rest, c, &off).isOk());
  __atomic_store_n(doneOf(1), uint64_t{2}, __ATOMIC_RELEASE);  // calls 0 and 1 done everywhere
  ASSERT_TRUE(pe(0).tokens.stageRoom("t", fresh, 128, 4, &off).isOk());
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(fresh.minDone, 2u);
}

TEST_F(CollTokensTest, CloseWaitsForEveryMembersPhaseAndCarriesFailures) {
  Team& t = pe(0).team;
  ASSERT_TRUE(pe(0).tokens.team(t));
  t.callSeq = 3;
  uint64_t* close1 = doneOf(1) + 1;  // PE 1's close word, after its done word
  bool flagged = true;
  __atomic_store_n(close1, uint64_t{3} << 2, __ATOMIC_RELEASE);  // PE 1 past the middle of call 3 only
  ASSERT_TRUE(pe(0).tokens.closeCall("t", t, true, false, &flagged).isOk());
  EXPECT_FALSE(flagged);
  EXPECT_EQ(__atomic_load_n(doneOf(0) + 1, __ATOMIC_ACQUIRE), uint64_t{3} << 2);  // this member's middle
  EXPECT_EQ(pe(0).tokens.closeCall("t", t, false, false, &flagged).code(), TETHER_ERR_TIMEOUT);
  EXPECT_EQ(__atomic_load_n(doneOf(0) + 1, __ATOMIC_ACQUIRE), (uint64_t{3} << 2) | 2);  // its close, posted first
  __atomic_store_n(close1, (uint64_t{3} << 2) | 2, __ATOMIC_RELEASE);  // PE 1 closed call 3
  ASSERT_TRUE(pe(0).tokens.closeCall("t", t, false, false, &flagged).isOk());
  EXPECT_FALSE(flagged);
  __atomic_store_n(close1, (uint64_t{3} << 2) | 2 | 1, __ATOMIC_RELEASE);  // ... and failed in it
  ASSERT_TRUE(pe(0).tokens.closeCall("t", t, false, false, &flagged).isOk());
  EXPECT_TRUE(flagged);
  __atomic_store_n(close1, (uint64_t{3} << 2) | 2, __ATOMIC_RELEASE);
  ASSERT_TRUE(pe(0).tokens.closeCall("t", t, false, true, &flagged).isOk());  // this member's own failure
  EXPECT_TRUE(flagged);
  EXPECT_EQ(__atomic_load_n(doneOf(0) + 1, __ATOMIC_ACQUIRE), (uint64_t{3} << 2) | 2 | 1);
}

TEST_F(CollTokensTest, TokenNumbersCarryAcrossTeamLifetimes) {
  EXPECT_EQ(pe(0).tokens.tokenBase(), 0u);
  Team& t = pe(0).team;
  pe(0).tokens.start(t, 77);
  EXPECT_EQ(t.callSeq, 77u);
  EXPECT_EQ(__atomic_load_n(doneOf(0), __ATOMIC_ACQUIRE), 77u);
  EXPECT_EQ(pe(0).tokens.tokenBase(), 77u);  // the most of this PE's done words over every slot
  EXPECT_EQ(pe(1).tokens.tokenBase(), 0u);
}

TEST_F(CollTokensTest, SettleWaitsForEveryMembersDoneWord) {
  Team& t = pe(0).team;
  ASSERT_TRUE(pe(0).tokens.team(t));
  t.callSeq = 5;
  __atomic_store_n(doneOf(1), uint64_t{4}, __ATOMIC_RELEASE);
  EXPECT_EQ(pe(0).tokens.settle("t", t).code(), TETHER_ERR_TIMEOUT);
  __atomic_store_n(doneOf(1), uint64_t{5}, __ATOMIC_RELEASE);
  EXPECT_TRUE(pe(0).tokens.settle("t", t).isOk());
  EXPECT_EQ(t.minDone, 5u);
  Team plain;  // not a token team: nothing to wait for
  plain.pes = {0, 1};
  plain.me = 0;
  plain.slot = kSlot;
  plain.tokens = 0;
  plain.callSeq = 9;
  EXPECT_TRUE(pe(0).tokens.settle("t", plain).isOk());
}

}  // namespace
}  // namespace tether
