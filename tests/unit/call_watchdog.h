// A watchdog for randomized tests that make many calls in a row (test_api_fuzz, test_msg_fuzz): the test names each
// call before making it (enter) and says when it returned (left); when no call returns for `seconds`, the watchdog
// prints the call in flight and aborts, so a hang is a failure naming the call, not a stuck CI job.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

class CallWatchdog {
 public:
  CallWatchdog(const char* test, int seconds) : test_(test), seconds_(seconds), thread_([this] { watch(); }) {}
  ~CallWatchdog() {
    done_.store(true);
    thread_.join();
  }
  CallWatchdog(const CallWatchdog&) = delete;
  CallWatchdog& operator=(const CallWatchdog&) = delete;

  // index: the test's call number; verb: a string that outlives the call (a literal).
  void enter(int index, const char* verb) {
    index_.store(index, std::memory_order_relaxed);
    verb_.store(verb, std::memory_order_relaxed);
  }
  void name(const char* verb) { verb_.store(verb, std::memory_order_relaxed); }
  void left() { beats_.fetch_add(1, std::memory_order_relaxed); }
  int index() const { return index_.load(std::memory_order_relaxed); }
  const char* verb() const { return verb_.load(std::memory_order_relaxed); }

 private:
  void watch() {
    uint64_t last = beats_.load();
    auto since = std::chrono::steady_clock::now();
    while (!done_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const uint64_t b = beats_.load();
      if (b != last) {
        last = b;
        since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - since > std::chrono::seconds(seconds_)) {
        std::fprintf(stderr, "FAIL %s: call %d (%s) did not return in %d s\n", test_, index(), verb(), seconds_);
        std::abort();
      }
    }
  }

  const char* test_;
  int seconds_;
  std::atomic<uint64_t> beats_{0};
  std::atomic<int> index_{0};
  std::atomic<const char*> verb_{""};
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: starts once the members above exist
};
