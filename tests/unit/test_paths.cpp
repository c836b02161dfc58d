#include <gtest/gtest.h>

#include "transport/transport.h"

using namespace tether;

// Path choice itself is tested on recorded topologies in test_topology.cpp; here: the ops tables are complete.
TEST(Transports, OpsTablesHaveEveryEntry) {
  for (const TransportOps* o : {&shmTransportOps(), &p2pTransportOps()}) {
    SCOPED_TRACE(o->name);
    EXPECT_TRUE(o->caps & kCapLoadStore);
    EXPECT_TRUE(o->caps & kCapAtomics);
    EXPECT_TRUE(o->caps & kCapHostSegment);
    EXPECT_TRUE(o->put && o->get && o->amo && o->signal && o->quiet && o->fence);
  }
  EXPECT_STREQ(shmTransportOps().name, "shm");
  EXPECT_STREQ(p2pTransportOps().name, "p2p");
  EXPECT_TRUE(p2pTransportOps().caps & kCapDeviceSegment);
}
