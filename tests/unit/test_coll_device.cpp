// The device forms' decisions (core/coll_device.h) alone: the stream record of a call (element and kind, the
// allreduce algorithm by size and members, the grid by TETHER_COLL_BLOCK_BYTES / _BLOCKS, a block's threads by dest
// bytes) and a team's device view (members at a fixed stride, the sync words and scratch of the team index in the
// handle's segment, host_run), with the errors for a foreign handle, too many members, no fixed stride, an unknown
// segment.
#include <gtest/gtest.h>

#include <vector>

#include "core/coll_device.h"

namespace tether {
namespace {

CollShape shape(size_t n, size_t count, size_t elemBytes, size_t destBlocks = 1) {
  CollShape s;
  s.n = n;
  s.elemBytes = elemBytes;
  s.block = count * elemBytes;
  s.destBytes = s.block * destBlocks;
  return s;
}

TEST(CollDevice, StreamRecordCarriesTheCall) {
  CollGpuSettings s;
  int dest = 0, src = 0;
  const StreamCollCall c = streamCollCall(CollKind::Reduce, TETHER_SHORT, &dest, &src, 3, TETHER_RED_MAX, 1,
                                          shape(4, 3, 2), s);
  EXPECT_EQ(c.kind, StreamCollCall::Reduce);
  EXPECT_EQ(c.elem, StreamCollCall::I16);
  EXPECT_EQ(c.op, TETHER_RED_MAX);
  EXPECT_EQ(c.root, 1);
  EXPECT_EQ(c.dest, &dest);
  EXPECT_EQ(c.src, &src);
  EXPECT_EQ(c.count, 3u);
  EXPECT_EQ(c.elemBytes, 2u);
  EXPECT_EQ(c.algo, StreamCollCall::Auto);  // not an allreduce
  const struct {
    tether_dtype_t t;
    StreamCollCall::Elem e;
  } elems[] = {{TETHER_INT8, StreamCollCall::I8},     {TETHER_UINT8, StreamCollCall::U8},
               {TETHER_INT32, StreamCollCall::I32},   {TETHER_UINT64, StreamCollCall::U64},
               {TETHER_FLOAT, StreamCollCall::F32},   {TETHER_DOUBLE, StreamCollCall::F64},
               {TETHER_HALF, StreamCollCall::F16},    {TETHER_BFLOAT16, StreamCollCall::BF16}};
  for (const auto& x : elems)
    EXPECT_EQ(streamCollCall(CollKind::Broadcast, x.t, &dest, &src, 1, 0, 0, shape(2, 1, 1), s).elem, x.e) << x.t;
  EXPECT_EQ(streamCollCall(CollKind::ReduceScatter, TETHER_INT32, &dest, &src, 1, 0, 0, shape(2, 1, 4), s).kind,
            StreamCollCall::ReduceScatter);
  EXPECT_EQ(streamCollCall(CollKind::Alltoall, TETHER_INT32, &dest, &src, 1, 0, 0, shape(2, 1, 4), s).kind,
            StreamCollCall::Alltoall);
}

TEST(CollDevice, AllreduceIsTwoShotFromTheLimitOnThreeOrMoreMembers) {
  CollGpuSettings s;
  s.twoShot = 1024;
  int d = 0;
  auto algo = [&](size_t n, size_t bytes) {
    return streamCollCall(CollKind::Allreduce, TETHER_UINT8, &d, &d, bytes, 0, 0, shape(n, bytes, 1), s).algo;
  };
  EXPECT_EQ(algo(3, 1023), StreamCollCall::OneShot);
  EXPECT_EQ(algo(3, 1024), StreamCollCall::TwoShot);
  EXPECT_EQ(algo(2, 1 << 20), StreamCollCall::OneShot);  // two members: one-shot at any size
  EXPECT_EQ(algo(8, 1 << 20), StreamCollCall::TwoShot);
}

TEST(CollDevice, GridAndBlockFollowTheDestBytes) {
  CollGpuSettings s;
  s.blockBytes = 64 * 1024;
  int d = 0;
  auto call = [&](size_t destBytes, unsigned maxBlocks) {
    s.maxBlocks = maxBlocks;
    return streamCollCall(CollKind::Allgather, TETHER_UINT8, &d, &d, destBytes / 4, 0, 0,
                          shape(4, destBytes / 4, 1, 4), s);
  };
  StreamCollCall c = call(8, 0);
  EXPECT_EQ(c.blocks, 1u);
  EXPECT_EQ(c.threads, 32u);  // one warp for a small dest
  c = call(32 * 64 + 4, 0);
  EXPECT_EQ(c.threads, 64u);  // a thread per 64 bytes, whole warps
  c = call(64 * 1024, 0);
  EXPECT_EQ(c.blocks, 1u);
  EXPECT_EQ(c.threads, kCollBlockThreads);  // at most kCollBlockThreads
  c = call(64 * 1024 + 4, 0);
  EXPECT_EQ(c.blocks, 2u);  // a block per TETHER_COLL_BLOCK_BYTES, rounded up
  c = call(1 << 24, 0);
  EXPECT_EQ(c.blocks, 256u);
  c = call(1 << 24, 16);
  EXPECT_EQ(c.blocks, 16u);  // TETHER_COLL_BLOCKS caps it
}

class CollDeviceView : public ::testing::Test {
 protected:
  void SetUp() override {
    host_.assign(kCollScratchOffset + kTeamSlots * kCollScratchBytes, 0);
    device_.assign(kDeviceCollScratchOffset + kTeamSlots * kCollScratchBytes, 0);
    b_.me = 5;
    b_.nPes = 8;
    b_.host = host_.data();
    b_.device = device_.data();
    b_.hostSyncOffset = 4096;
    h_.my_pe = 5;
    h_.n_pes = 8;
    h_.barrier_seg = TETHER_DEVICE_SEG_DEVICE;
    t_.pes = {1, 3, 5, 7};
    t_.me = 2;
    t_.slot = 6;
  }
  std::vector<char> host_, device_;
  CollViewBases b_;
  tether_device_handle_t h_{};
  Team t_;
  CollGpuSettings s_;
};

TEST_F(CollDeviceView, StridedTeamInTheHandlesSegment) {
  tether_device_team_t v{};
  ASSERT_TRUE(deviceTeamView("t", t_, h_, 2, s_, b_, &v).isOk());
  EXPECT_EQ(v.my_pe, 2);
  EXPECT_EQ(v.n_pes, 4);
  EXPECT_EQ(v.start, 1);
  EXPECT_EQ(v.stride, 2);
  EXPECT_EQ(v.index, 6);
  EXPECT_EQ(v.host_run, 2);
  EXPECT_EQ(v.seg, static_cast<uint32_t>(TETHER_DEVICE_SEG_DEVICE));
  EXPECT_EQ(v.scratch_bytes, s_.scratch);
  const size_t words = 6 * kDeviceTeamWords * sizeof(uint64_t);
  EXPECT_EQ(reinterpret_cast<char*>(v.sync), device_.data() + kDeviceTeamSyncOffset + words);
  EXPECT_EQ(static_cast<char*>(v.scratch), device_.data() + kDeviceCollScratchOffset + 6 * kCollScratchBytes);
  h_.barrier_seg = TETHER_DEVICE_SEG_HOST;
  ASSERT_TRUE(deviceTeamView("t", t_, h_, 0, s_, b_, &v).isOk());
  EXPECT_EQ(reinterpret_cast<char*>(v.sync), host_.data() + 4096 + words);
  EXPECT_EQ(static_cast<char*>(v.scratch), host_.data() + kCollScratchOffset + 6 * kCollScratchBytes);
  EXPECT_EQ(v.host_run, 0);
}

TEST_F(CollDeviceView, RefusesWhatItCannotDescribe) {
  tether_device_team_t v{};
  tether_device_handle_t other = h_;
  other.my_pe = 4;  // another PE's handle
  EXPECT_EQ(deviceTeamView("t", t_, other, 0, s_, b_, &v).code(), TETHER_ERR_INVALID_ARG);
  other = h_;
  other.barrier_seg = 7;
  EXPECT_EQ(deviceTeamView("t", t_, other, 0, s_, b_, &v).code(), TETHER_ERR_INVALID_ARG);
  CollViewBases noDevice = b_;
  noDevice.device = nullptr;  // a DEVICE handle where this PE has no DEVICE segment
  EXPECT_EQ(deviceTeamView("t", t_, h_, 0, s_, noDevice, &v).code(), TETHER_ERR_INVALID_ARG);
  Team uneven = t_;
  uneven.pes = {1, 3, 6, 7};
  const Status s = deviceTeamView("t", uneven, h_, 0, s_, b_, &v);
  EXPECT_EQ(s.code(), TETHER_ERR_UNSUPPORTED);
  EXPECT_NE(s.message().find("team PE 2 is world PE 6, not 5"), std::string::npos) << s.message();
  Team big = t_;
  big.pes.resize((size_t{1} << TETHER_DEVICE_TEAM_ROUNDS) + 1);
  for (size_t i = 0; i < big.pes.size(); ++i) big.pes[i] = static_cast<int>(i);
  EXPECT_EQ(deviceTeamView("t", big, h_, 0, s_, b_, &v).code(), TETHER_ERR_UNSUPPORTED);
  Team one = t_;  // one member: stride 1
  one.pes = {5};
  one.me = 0;
  ASSERT_TRUE(deviceTeamView("t", one, h_, 0, s_, b_, &v).isOk());
  EXPECT_EQ(v.stride, 1);
  EXPECT_EQ(v.start, 5);
}

}  // namespace
}  // namespace tether
