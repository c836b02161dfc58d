#include <gtest/gtest.h>

#include "transport/transport.h"

using namespace tether;

// Path choice is a pure function of the recorded topology: test it on recorded ones, no processes needed.
TEST(Paths, SelfShmAndUnreachable) {
  std::vector<PeInfo> pes = {{"hostA/boot1", 0}, {"hostA/boot1", 1}, {"hostB/boot2", 0}};
  PathChoice c;
  ASSERT_TRUE(choosePath(pes, 0, 0, "auto", &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Self);
  ASSERT_TRUE(choosePath(pes, 0, 1, "auto", &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Shm);
  ASSERT_TRUE(choosePath(pes, 0, 2, "auto", &c).isOk());
  EXPECT_EQ(c.kind, PathKind::None);
  EXPECT_NE(c.reason.find("another host"), std::string::npos) << c.reason;
  ASSERT_TRUE(choosePath(pes, 1, 0, "shm", &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Shm);
  EXPECT_NE(c.reason.find("TETHER_PATHS"), std::string::npos);
  Status s = choosePath(pes, 0, 1, "warp", &c);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("warp"), std::string::npos);
}

TEST(Paths, ShmOpsTableHasEveryEntry) {
  const TransportOps& o = shmTransportOps();
  EXPECT_STREQ(o.name, "shm");
  EXPECT_TRUE(o.caps & kCapLoadStore);
  EXPECT_TRUE(o.caps & kCapAtomics);
  EXPECT_TRUE(o.put && o.get && o.amo && o.signal && o.quiet && o.fence);
}
