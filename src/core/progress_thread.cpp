// ProgressThread (core/progress_thread.h): the owner's progress passes on a thread of their own, with the idle policy.
#include "core/progress_thread.h"

#include <utility>

#include "base/clock.h"
#include "base/log.h"

namespace tether {

ProgressThread::ProgressThread(std::mutex& mu, Hooks hooks, std::string who)
    : mu_(mu), hooks_(std::move(hooks)), who_(std::move(who)) {}

Status ProgressThread::start() {
  if (thread_.joinable()) return Status::ok();
  thread_ = std::thread([this] { main(); });
  return Status::ok();
}

void ProgressThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressThread::main() {
  SpinWait spin(1e12);
  uint64_t lastBusy = nowNs();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!hooks_.pending()) {
      wake_.wait_for(lock, std::chrono::milliseconds(100));
      spin.busy();
      lastBusy = nowNs();
      continue;
    }
    bool did = false;
    Status s = error_.isOk() ? hooks_.pass(&did) : Status::ok();
    if (!s.isOk()) {
      error_ = s;
      TETHER_LOG_WARN(LogSys::Core, "%s: %s", who_.c_str(), s.message().c_str());
    }
    const uint64_t now = nowNs();
    if (did) {
      spin.busy();
      lastBusy = now;
    }
    if (!hooks_.mayIdle() || now - lastBusy < kIdleNs) {
      lock.unlock();
      spin.next();
      lock.lock();
    } else {
      wake_.wait_for(lock, kIdleSleep);
    }
  }
}

}  // namespace tether
