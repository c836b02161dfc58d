// ProgressThread (core/progress_thread.h) with a fake owner (a mutex, counters and flags): no passes while nothing is
// pending, passes once work is pending and none after it is gone, the first failure kept and no pass after it, start
// idempotent, stop joins (and a second stop is harmless). Waits are bounded (10 s). The idle policy's timing is not
// asserted here (tests assert no timings); the stream and persistent models' tests run it.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "core/progress_thread.h"

namespace tether {
namespace {

using Clock = std::chrono::steady_clock;

struct Owner {
  std::mutex mu;
  bool pending = false;  // (mu)
  bool mayIdle = false;  // (mu)
  bool moveSome = false;  // (mu) each pass reports it moved something
  int failAt = 0;        // (mu) the pass that fails (0: none)
  int passes = 0;        // (mu)
  ProgressThread::Hooks hooks() {
    ProgressThread::Hooks h;
    h.pending = [this] { return pending; };
    h.mayIdle = [this] { return mayIdle; };
    h.pass = [this](bool* did) {
      *did = moveSome;
      ++passes;
      if (failAt && passes == failAt) return Status(TETHER_ERR_PEER_LOST, "the pass failed");
      return Status::ok();
    };
    return h;
  }
  int passesNow() {
    std::lock_guard<std::mutex> lock(mu);
    return passes;
  }
  // Waits (10 s at most) until pred() holds under the mutex.
  template <class F>
  bool await(F pred) {
    const auto end = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < end) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (pred()) return true;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return false;
  }
};

TEST(ProgressThread, PassesOnlyWhileWorkIsPending) {
  Owner o;
  ProgressThread t(o.mu, o.hooks(), "test");
  ASSERT_TRUE(t.start().isOk());
  ASSERT_TRUE(t.start().isOk());  // idempotent
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(o.passesNow(), 0);
  {
    std::lock_guard<std::mutex> lock(o.mu);
    o.pending = true;
  }
  t.wake();
  EXPECT_TRUE(o.await([&] { return o.passes >= 100; }));
  int settled = 0;
  {
    std::lock_guard<std::mutex> lock(o.mu);
    o.pending = false;
  }
  EXPECT_TRUE(o.await([&] {  // the pass under way ends; none after it
    settled = o.passes;
    return true;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(o.passesNow(), settled);
  t.stop();
  t.stop();
  EXPECT_TRUE(t.error().isOk());
}

TEST(ProgressThread, TheFirstFailureIsKeptAndEndsThePasses) {
  Owner o;
  o.pending = true;
  o.failAt = 3;
  ProgressThread t(o.mu, o.hooks(), "test");
  ASSERT_TRUE(t.start().isOk());
  EXPECT_TRUE(o.await([&] { return o.passes >= 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> lock(o.mu);
    EXPECT_EQ(o.passes, 3);
    EXPECT_EQ(t.error().code(), TETHER_ERR_PEER_LOST);
  }
  t.stop();
}

}  // namespace
}  // namespace tether
