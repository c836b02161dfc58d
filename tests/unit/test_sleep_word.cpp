// Sleep words (base/sleep_word.h) and the waits that sleep on them (SpinWait, base/clock.h): a wake ends a sleep
// long before its bound, across processes too (a shared futex on MAP_SHARED memory); an unarmed word costs a wake
// nothing; SpinWait arms only when it sleeps and disarms when done; a yield that loses the core to a CPU-bound
// thread for a time slice ends the yielding stage; Wakeups hands wakes to the words it has.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <thread>

#include "base/clock.h"
#include "base/sleep_word.h"
#include "core/wakeups.h"

namespace tether {
namespace {

constexpr uint64_t kLongNs = 30ull * 1000000000ull;  // a sleep bound no test waits out: only a wake ends it early

// Waits until `word` has an armed waiter, then a little longer so that it is (very likely) asleep in the kernel.
void untilArmed(const SleepWord* word) {
  while (__atomic_load_n(&word->sleepers, __ATOMIC_SEQ_CST) == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// True once `done` holds, false when 10 s passed first: a woken sleeper returns in microseconds, one that was not
// woken sleeps its 30 s bound.
bool within10s(const std::function<bool()>& done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(SleepWord, WakeEndsASleep) {
  SleepWord word{};
  std::atomic<bool> returned{false}, moved{false};
  std::thread waiter([&] {
    const uint32_t seen = armSleepWord(&word);
    sleepOnWord(&word, seen, kLongNs);
    moved = sleepWordSeq(&word) != seen;
    returned = true;
    disarmSleepWord(&word);
  });
  untilArmed(&word);
  wakeSleepers(&word);
  EXPECT_TRUE(within10s([&] { return returned.load(); })) << "the wake did not end the sleep of the sleeping thread";
  waiter.join();
  EXPECT_TRUE(moved.load());
  EXPECT_EQ(word.sleepers, 0u);
}

TEST(SleepWord, WakeEndsASleepInAnotherProcess) {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* word = new (mem) SleepWord{};
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const uint32_t seen = armSleepWord(word);
    sleepOnWord(word, seen, kLongNs);
    _exit(sleepWordSeq(word) != seen ? 0 : 1);
  }
  untilArmed(word);
  wakeSleepers(word);
  int status = 0;
  const bool exited = within10s([&] { return waitpid(child, &status, WNOHANG) == child; });
  if (!exited) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  EXPECT_TRUE(exited) << "the wake did not end the sleep in the other process";
  EXPECT_TRUE(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  munmap(mem, 4096);
}

TEST(SleepWord, WakeWithoutSleepersChangesNothing) {
  SleepWord word{};
  wakeSleepers(&word);
  wakeSleepers(nullptr);
  EXPECT_EQ(word.seq, 0u);  // no armed waiter: no seq bump (and no system call)
  const uint32_t seen = armSleepWord(&word);
  wakeSleepers(&word);
  EXPECT_NE(sleepWordSeq(&word), seen);
  disarmSleepWord(&word);
}

// Wakeups (core/wakeups.h): with no word at all (TETHER_WAIT_FUTEX=0) it keeps none, so any() lets loops over PEs be
// skipped and wake() of any PE number does nothing; with some, wake(pe) reaches PE pe's word and mine() is this PE's.
TEST(SleepWord, WakeupsReachTheWordsTheyHave) {
  Wakeups none;
  none.setUp({nullptr, nullptr, nullptr}, 1);
  EXPECT_FALSE(none.any());
  EXPECT_EQ(none.mine(), nullptr);
  none.wake(-1);
  none.wake(0);
  none.wake(7);
  SleepWord a{}, c{};
  Wakeups some;
  some.setUp({&a, nullptr, &c}, 2);
  EXPECT_TRUE(some.any());
  EXPECT_EQ(some.mine(), &c);
  const uint32_t seenA = armSleepWord(&a), seenC = armSleepWord(&c);
  some.wake(1);  // no word: nothing
  some.wake(3);  // out of range: nothing
  EXPECT_EQ(sleepWordSeq(&a), seenA);
  EXPECT_EQ(sleepWordSeq(&c), seenC);
  some.wake(0);
  EXPECT_NE(sleepWordSeq(&a), seenA);
  EXPECT_EQ(sleepWordSeq(&c), seenC);
  disarmSleepWord(&a);
  disarmSleepWord(&c);
}

// A sleep that finds seq already moved on returns at once (the wake came between arm and sleep).
TEST(SleepWord, SleepReturnsAtOnceWhenSeqMovedOn) {
  SleepWord word{};
  const uint32_t seen = armSleepWord(&word);
  wakeSleepers(&word);
  sleepOnWord(&word, seen, kLongNs);  // would take 30 s if it slept
  disarmSleepWord(&word);
  SUCCEED();
}

TEST(SleepWord, SpinWaitArmsWhenSleepingAndDisarmsWhenDone) {
  SleepWord word{};
  {
    SpinWait w(60, &word);
    int calls = 0;
    while (!w.sleeping() && calls < 10000) {
      ASSERT_TRUE(w.next());
      ++calls;
    }
    EXPECT_TRUE(w.sleeping());
    // The first call of the sleeping stage arms (and returns for one more check); a slow yield enters the stage
    // without arming, the next call arms.
    if (!w.armed()) {
      ASSERT_TRUE(w.next());
    }
    EXPECT_TRUE(w.armed());
    EXPECT_EQ(word.sleepers, 1u);
    w.busy();
    EXPECT_FALSE(w.armed());
    EXPECT_EQ(word.sleepers, 0u);
    while (!w.armed() && calls < 20000) {
      ASSERT_TRUE(w.next());
      ++calls;
    }
    EXPECT_EQ(word.sleepers, 1u);
  }
  EXPECT_EQ(word.sleepers, 0u) << "the destructor disarms";
}

// A waiter whose SpinWait armed the sleep word (the writer stores only then) ends its wait on the store. (Whether the
// wake or the 20 us bound ended its sleep is not observable here; WakeEndsASleep tests the wake itself.)
TEST(SleepWord, SpinWaitArmedSeesTheStore) {
  SleepWord word{};
  std::atomic<uint64_t> value{0};
  std::thread writer([&] {
    untilArmed(&word);
    value.store(1, std::memory_order_release);
    wakeSleepers(&word);
  });
  SpinWait w(60, &word);
  while (value.load(std::memory_order_acquire) == 0) ASSERT_TRUE(w.next());
  writer.join();
  EXPECT_TRUE(w.armed());
}

// Pins the calling thread to one CPU; false when the machine will not (then the test is skipped).
bool pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// A CPU-bound thread on the waiter's CPU: a sched_yield hands it the core for a time slice (> 500 us), which
// SpinWait takes as an outside process and stops yielding -- well before the 4096 calls of its yield stage -- and
// once 4 of the thread's last 16 yields were slow its next waits (within 50 ms) do not yield at all.
TEST(Clock, SpinWaitStopsYieldingToACpuHog) {
  cpu_set_t was;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof was, &was), 0);
  int cpu = -1;
  for (int c = 0; c < CPU_SETSIZE && cpu < 0; ++c)
    if (CPU_ISSET(c, &was)) cpu = c;
  ASSERT_GE(cpu, 0);
  if (!pinTo(cpu)) GTEST_SKIP() << "cannot pin threads to one CPU here";
  std::atomic<bool> stop{false}, running{false};
  std::thread hog([&] {
    pinTo(cpu);
    running = true;
    while (!stop.load(std::memory_order_relaxed)) cpuRelax();
  });
  while (!running) std::this_thread::yield();
  auto callsToSleep = [] {
    SpinWait w(60);
    int calls = 0;
    while (!w.sleeping() && calls < 200) {  // (the hog's slices make each yield ~1.5 ms: a broken rule ends here)
      EXPECT_TRUE(w.next());
      ++calls;
    }
    return calls;
  };
  const int first = callsToSleep();  // one slow yield: this wait sleeps
  // 24 more waits beside the hog: each ends its yielding at a slow yield, so 4 of the thread's last 16 yields are
  // slow well before the last, and from then on its waits skip yielding.
  int last = first;
  for (int i = 0; i < 24; ++i) last = callsToSleep();
  const uint64_t windowFrom = nowNs();
  stop = true;
  hog.join();
  pthread_setaffinity_np(pthread_self(), sizeof was, &was);
  const int after = callsToSleep();  // the hog is gone, but the window is on: no yield at all
  const double gapMs = static_cast<double>(nowNs() - windowFrom) / 1e6;
  std::printf("beside a CPU hog SpinWait reached its sleeping stage after %d calls, the 25th wait after %d; after the "
              "hog, %d calls (%.1f ms later)\n", first, last, after, gapMs);
  EXPECT_LT(first, 200) << "still yielding after 200 calls: every yield gave the hog a slice";
  EXPECT_LT(last, 200);
  if (gapMs < 40) {  // (a machine this busy may have kept the test away from its CPU past the 50 ms window)
    EXPECT_EQ(after, static_cast<int>(SpinWait::kSpinCalls)) << "the wait inside the window yielded (with a CPU to "
                                                               "itself a yield is fast: it yields until call 4096)";
  }
}

}  // namespace
}  // namespace tether
