// ProgressThread: a thread that runs its owner's progress passes while the owner has work that must move without a
// host call -- two-sided messaging's stream-ordered, prepared and persistent requests (core/messaging.h), which a
// stream or a kernel starts or waits for while the host thread may be anywhere.
//
// Contracts
//  - The owner's mutex guards the owner's state: the thread holds it while it asks the hooks and runs a pass, and
//    releases it while it backs off or sleeps. Hooks: pending() -- work that needs passes; mayIdle() -- the pending
//    work may wait a little (the owner's persistent requests, watched between rounds, with no start waiting); pass()
//    -- one progress pass, *did when it moved anything.
//  - Idle policy: nothing pending: it sleeps until wake() (at most 100 ms, then it looks again). Pending: a pass, then
//    SpinWait's back-off (spin, then yield, then short sleeps) with the mutex released -- except when mayIdle() and
//    nothing moved for kIdleNs: then one pass per kIdleSleep (wake() ends the sleep early), instead of yielding for
//    milliseconds between the rounds of a persistent request.
//  - A failed pass is kept (error(), the first one, logged once) and no pass runs after it: the owner's calls return
//    it from then on.
//  - start() from any thread, the owner's mutex held or not (the thread blocks on it until it is free); wake() after
//    the owner queued work; stop() without the owner's mutex held (it joins the thread), once the owner wants no more
//    passes (destroy; also done by the destructor).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"

namespace tether {

class ProgressThread {
 public:
  struct Hooks {
    std::function<bool()> pending;
    std::function<bool()> mayIdle;
    std::function<Status(bool* did)> pass;
  };
  // The idle policy's constants (above): yielding ends this long after the last pass that moved anything...
  static constexpr uint64_t kIdleNs = 200000;
  // ... and then one pass per kIdleSleep.
  static constexpr std::chrono::microseconds kIdleSleep{20};

  // mu: the owner's mutex; who: names the owner in the log ("PE 3").
  ProgressThread(std::mutex& mu, Hooks hooks, std::string who);
  ~ProgressThread() { stop(); }
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  Status start();
  void wake() { wake_.notify_all(); }
  void stop();
  const Status& error() const { return error_; }  // (the owner's mutex held)

 private:
  void main();

  std::mutex& mu_;
  const Hooks hooks_;
  const std::string who_;
  std::thread thread_;
  std::condition_variable wake_;
  bool stop_ = false;  // (mu_)
  Status error_;       // (mu_)
};

}  // namespace tether
