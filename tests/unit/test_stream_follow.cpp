// StreamOps::follow on the CPU emulation (core/stream_ops.h): a stream's later work waits on the host-free ordering
// point for everything enqueued on another stream (the legacy default stream: nullptr) before the call; a failure of
// the followed stream fails the follower; a followed stream that never gets there times out (bounded).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "core/stream_ops.h"

namespace {

using tether::Status;
using tether::StreamOps;

// Blocks `stream` until *word >= 1 (bounded by the ops' timeout).
void gate(StreamOps& so, void* stream, const uint64_t* word) {
  ASSERT_TRUE(so.waitCmp(stream, word, TETHER_CMP_GE, 1, false, 0).isOk());
}

class StreamFollow : public ::testing::TestWithParam<bool> {};  // the followed stream: a made one, or the null stream

TEST_P(StreamFollow, LaterWorkWaitsForTheOtherStreamsEarlierWork) {
  std::unique_ptr<StreamOps> so = tether::createCpuStreamOps(30);
  void *a = nullptr, *b = nullptr;
  if (!GetParam()) {
    ASSERT_TRUE(so->createStream(&a).isOk());
  }
  ASSERT_TRUE(so->createStream(&b).isOk());
  uint64_t open = 0;
  std::atomic<int> firstDone{0}, followerRan{0}, laterOnA{0};
  gate(*so, a, &open);
  ASSERT_TRUE(so->hostCall(a, [&] { firstDone = 1; }).isOk());
  ASSERT_TRUE(so->follow(b, a).isOk());
  ASSERT_TRUE(so->hostCall(b, [&] { followerRan = firstDone.load() ? 1 : -1; }).isOk());
  // Work enqueued on a after the call is not waited for: it waits for b's follower here, which must still run.
  ASSERT_TRUE(so->hostCall(a, [&] { laterOnA = 1; }).isOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(followerRan.load(), 0) << "b ran past follow() while a's earlier work was still blocked";
  __atomic_store_n(&open, 1, __ATOMIC_RELEASE);
  ASSERT_TRUE(so->synchronize(b).isOk());
  EXPECT_EQ(followerRan.load(), 1);
  ASSERT_TRUE(so->synchronize(a).isOk());
  EXPECT_EQ(laterOnA.load(), 1);
  ASSERT_TRUE(so->follow(b, b).isOk());  // itself: nothing to wait for
  ASSERT_TRUE(so->synchronize(b).isOk());
  if (a) {
    EXPECT_TRUE(so->destroyStream(a).isOk());
  }
  EXPECT_TRUE(so->destroyStream(b).isOk());
}

TEST_P(StreamFollow, AFailureOfTheFollowedStreamFailsTheFollower) {
  std::unique_ptr<StreamOps> so = tether::createCpuStreamOps(30);
  void *a = nullptr, *b = nullptr;
  if (!GetParam()) {
    ASSERT_TRUE(so->createStream(&a).isOk());
  }
  ASSERT_TRUE(so->createStream(&b).isOk());
  uint64_t never = 0;
  ASSERT_TRUE(so->waitCmp(a, &never, TETHER_CMP_GE, 1, false, 20'000'000).isOk());  // fails after 20 ms
  ASSERT_TRUE(so->follow(b, a).isOk());
  std::atomic<int> ran{0};
  ASSERT_TRUE(so->hostCall(b, [&] { ran = 1; }).isOk());
  const Status s = so->synchronize(b);
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT) << s.message();
  EXPECT_NE(s.message().find("the stream it follows failed"), std::string::npos) << s.message();
  EXPECT_EQ(ran.load(), 0) << "work after a failed follow ran";
  EXPECT_EQ(so->synchronize(a).code(), TETHER_ERR_TIMEOUT);
  if (a) (void)so->destroyStream(a);  // failed streams report it again
  (void)so->destroyStream(b);
}

TEST(StreamFollowBound, AFollowedStreamThatNeverGetsThereTimesOut) {
  std::unique_ptr<StreamOps> so = tether::createCpuStreamOps(0.2);  // the follower's bound
  void *a = nullptr, *b = nullptr;
  ASSERT_TRUE(so->createStream(&a).isOk());
  ASSERT_TRUE(so->createStream(&b).isOk());
  uint64_t open = 0;
  gate(*so, a, &open);  // holds a (unbounded) until opened below
  ASSERT_TRUE(so->follow(b, a).isOk());
  const Status s = so->synchronize(b);
  EXPECT_EQ(s.code(), TETHER_ERR_TIMEOUT) << s.message();
  EXPECT_NE(s.message().find("waiting for the stream it follows"), std::string::npos) << s.message();
  __atomic_store_n(&open, 1, __ATOMIC_RELEASE);
  EXPECT_TRUE(so->synchronize(a).isOk());
  EXPECT_TRUE(so->destroyStream(a).isOk());
  (void)so->destroyStream(b);  // failed: reports it again
}

INSTANTIATE_TEST_SUITE_P(Other, StreamFollow, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "NullStream" : "MadeStream"; });

}  // namespace
