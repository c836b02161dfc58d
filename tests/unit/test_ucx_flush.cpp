// FlushTracker (transport/ucx/flush_tracker.h): when the ucx provider may skip a worker flush (quiet) or the endpoint
// flush before a one-way signal. Skipping one that is needed would let quiet return before an nbi put is complete, or
// a signal overtake an earlier put (over TCP loopback UCX keeps them in order anyway, so the mp tests cannot see it).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "transport/ucx/flush_tracker.h"

namespace tether {
namespace {

// A quiet as the provider does it: mark, flush when needed, report.
bool quiet(FlushTracker& f) {
  const uint64_t mark = f.mark();
  if (!f.workerFlushNeeded(mark)) return false;
  f.workerFlushed(mark);
  return true;
}

TEST(UcxFlush, NothingIssuedNoFlush) {
  FlushTracker f;
  f.reset(4);
  EXPECT_FALSE(quiet(f));
  for (int pe = 0; pe < 4; ++pe) EXPECT_FALSE(f.peerFlushNeeded(pe));
}

TEST(UcxFlush, NbiPutNeedsBothFlushesUntilCovered) {
  FlushTracker f;
  f.reset(4);
  f.issued(2);
  EXPECT_TRUE(f.peerFlushNeeded(2));
  EXPECT_FALSE(f.peerFlushNeeded(1));  // nothing went to PE 1
  EXPECT_TRUE(quiet(f));
  EXPECT_FALSE(f.peerFlushNeeded(2));  // the worker flush covered it
  EXPECT_FALSE(quiet(f));              // and a second quiet has nothing to do
}

TEST(UcxFlush, GetNeedsQuietNotSignalFlush) {
  FlushTracker f;
  f.reset(2);
  f.issued(-1);  // an nbi get
  for (int pe = 0; pe < 2; ++pe) EXPECT_FALSE(f.peerFlushNeeded(pe));
  EXPECT_TRUE(quiet(f));
}

TEST(UcxFlush, PutAfterQuietStillNeedsFlush) {
  FlushTracker f;
  f.reset(2);
  f.issued(1);
  EXPECT_TRUE(quiet(f));
  f.issued(1);
  EXPECT_TRUE(f.peerFlushNeeded(1));
  EXPECT_TRUE(quiet(f));
}

TEST(UcxFlush, EndpointFlushCoversOnlyItsPe) {
  FlushTracker f;
  f.reset(3);
  f.issued(1);
  f.issued(2);
  const uint64_t mark = f.mark();
  f.peerFlushed(2, mark);
  EXPECT_FALSE(f.peerFlushNeeded(2));
  EXPECT_TRUE(f.peerFlushNeeded(1));  // PE 2's endpoint flush says nothing about PE 1
  EXPECT_TRUE(quiet(f));              // nor about the worker as a whole
}

TEST(UcxFlush, OperationPostedDuringAFlushStaysUncovered) {
  FlushTracker f;
  f.reset(2);
  f.issued(0);
  const uint64_t mark = f.mark();  // a quiet begins its flush here ...
  f.issued(0);                     // ... another thread posts a put meanwhile ...
  f.workerFlushed(mark);           // ... the flush completes: the second put may not be covered
  EXPECT_TRUE(f.peerFlushNeeded(0));
  EXPECT_TRUE(quiet(f));
  EXPECT_FALSE(f.peerFlushNeeded(0));
}

TEST(UcxFlush, LateReportDoesNotGoBackwards) {
  FlushTracker f;
  f.reset(2);
  f.issued(1);
  const uint64_t early = f.mark();
  f.issued(1);
  const uint64_t late = f.mark();
  f.workerFlushed(late);
  f.workerFlushed(early);  // a slower thread's older flush reports last
  EXPECT_FALSE(f.peerFlushNeeded(1));
  EXPECT_FALSE(quiet(f));
}

TEST(UcxFlush, OutOfRangePeIgnored) {
  FlushTracker f;
  f.reset(2);
  f.issued(7);  // counted (a quiet flushes) but no per-PE record
  EXPECT_FALSE(f.peerFlushNeeded(7));
  EXPECT_FALSE(f.peerFlushNeeded(-1));
  EXPECT_TRUE(quiet(f));
}

// Threads issuing puts while others quiet: after every thread has stopped and one last quiet ran, nothing is pending.
TEST(UcxFlush, ConcurrentIssueAndQuiet) {
  FlushTracker f;
  f.reset(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&f, t] {
      for (int i = 0; i < 20000; ++i) {
        f.issued((t + i) % 4);
        if (i % 7 == 0) quiet(f);
        if (i % 5 == 0 && f.peerFlushNeeded(t)) f.peerFlushed(t, f.mark());
      }
    });
  for (auto& t : ts) t.join();
  quiet(f);
  for (int pe = 0; pe < 4; ++pe) EXPECT_FALSE(f.peerFlushNeeded(pe));
  EXPECT_FALSE(quiet(f));
}

}  // namespace
}  // namespace tether
