// CollRecord and recordMismatch (core/coll_record.h): the hash members compare and the error each member returns
// when two records differ -- an invalid member, only the engine, only the by-host choice, or a field (named with both
// members' values); equal records are an internal error. No World: records built by hand.
#include <gtest/gtest.h>

#include <string>

#include "core/coll_record.h"
#include "core/stream_ops.h"
#include "topology/topology.h"

namespace tether {
namespace {

CollRecord allreduce(uint64_t count) {
  CollRecord r;
  r.w[CollRecord::kHead] = static_cast<uint64_t>(CollKind::Allreduce) | uint64_t{TETHER_FLOAT} << 8 |
                           uint64_t{TETHER_RED_SUM} << 16 | CollRecord::kValid;
  r.w[CollRecord::kCount] = count;
  r.w[CollRecord::kDest] = uint64_t{4096} << 2 | static_cast<uint64_t>(SegKind::Host);
  r.w[CollRecord::kSrc] = uint64_t{8192} << 2 | static_cast<uint64_t>(SegKind::Device);
  return r;
}

// The message of recordMismatch as team PE 0 (world PE 10) holding mine, team PE 1 (world PE 11) holding theirs.
Status differ(const CollRecord& mine, const CollRecord& theirs) {
  return recordMismatch("tether_team_allreduce", 0, 10, mine, 1, 11, theirs);
}

bool has(const Status& s, const std::string& what) { return s.message().find(what) != std::string::npos; }

TEST(CollRecord, HashFollowsEveryWordAndFitsSixtyTwoBits) {
  const CollRecord a = allreduce(5);
  EXPECT_EQ(a.hash(), allreduce(5).hash());
  EXPECT_LT(a.hash(), uint64_t{1} << 62);
  for (size_t f = 0; f < CollRecord::kWords; ++f) {
    CollRecord b = a;
    b.w[f] ^= 4;
    EXPECT_NE(b.hash(), a.hash()) << "word " << f;
  }
  EXPECT_TRUE(a.valid());
  EXPECT_FALSE(CollRecord{}.valid());
}

TEST(CollRecord, InvalidMemberIsAnArgumentError) {
  const Status s = differ(allreduce(5), CollRecord{});
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_TRUE(has(s, "team PE 1 (world PE 11) passed invalid arguments")) << s.message();
}

TEST(CollRecord, FieldDifferenceNamesTheFieldAndBothValues) {
  Status s = differ(allreduce(5), allreduce(6));
  EXPECT_EQ(s.code(), TETHER_ERR_MISMATCH);
  EXPECT_TRUE(has(s, "team PE 0 (world PE 10) passed count 5")) << s.message();
  EXPECT_TRUE(has(s, "team PE 1 (world PE 11) passed count 6")) << s.message();
  CollRecord other = allreduce(5);
  other.w[CollRecord::kDest] = uint64_t{128} << 2 | static_cast<uint64_t>(SegKind::Device);
  s = differ(allreduce(5), other);
  EXPECT_TRUE(has(s, "passed dest an object at offset 4096 of the HOST segment")) << s.message();
  EXPECT_TRUE(has(s, "passed dest an object at offset 128 of the DEVICE segment")) << s.message();
  CollRecord bcast = allreduce(5);
  bcast.w[CollRecord::kHead] = static_cast<uint64_t>(CollKind::Broadcast) | uint64_t{TETHER_FLOAT} << 8 |
                               CollRecord::kEager | CollRecord::kValid;
  s = differ(allreduce(5), bcast);
  EXPECT_TRUE(has(s, "allreduce of float op sum")) << s.message();
  EXPECT_TRUE(has(s, "eager broadcast of float")) << s.message();
}

TEST(CollRecord, EngineOrByHostAloneNameTheSettings) {
  CollRecord gpu = allreduce(5);
  gpu.w[CollRecord::kHead] |= CollRecord::kGpu | uint64_t{StreamCollCall::TwoShot} << CollRecord::kAlgoShift;
  Status s = differ(allreduce(5), gpu);
  EXPECT_EQ(s.code(), TETHER_ERR_MISMATCH);
  EXPECT_TRUE(has(s, "on the CPU and team PE 1 (world PE 11) on its GPU, two-shot")) << s.message();
  EXPECT_TRUE(has(s, "TETHER_COLL_GPU")) << s.message();
  CollRecord byHost = allreduce(5);
  byHost.w[CollRecord::kHead] |= CollRecord::kByHost;
  s = differ(allreduce(5), byHost);
  EXPECT_EQ(s.code(), TETHER_ERR_MISMATCH);
  EXPECT_TRUE(has(s, "runs this call by host and team PE 1 (world PE 11) does:")) << s.message();
  EXPECT_TRUE(has(s, "TETHER_COLL_BY_HOST")) << s.message();
  // Next to another difference the by-host bit is left out: the field is named.
  byHost.w[CollRecord::kCount] = 6;
  s = differ(allreduce(5), byHost);
  EXPECT_TRUE(has(s, "passed count 5")) << s.message();
}

TEST(CollRecord, EqualRecordsAreAnInternalError) {
  EXPECT_EQ(differ(allreduce(5), allreduce(5)).code(), TETHER_ERR_INTERNAL);
  EXPECT_STREQ(collKindName(CollKind::ReduceScatter), "reduce_scatter");
}

}  // namespace
}  // namespace tether
