// Time and bounded waiting.
//
// Every spin-wait in tether goes through SpinWait: it spins briefly, then yields, then sleeps, so that many PEs
// sharing few cores (8 PEs on a 2-core CI machine) still make progress, and it reports expiry of its Deadline so the
// caller can fail with what it waited for instead of hanging.
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>

namespace tether {

inline uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class Deadline {
 public:
  // seconds <= 0: already expired; a deadline past the clock's range (e.g. 1e12 s for "no limit") never expires.
  explicit Deadline(double seconds) : end_(endAfter(seconds)) {}
  bool expired() const { return nowNs() >= end_; }
  // Milliseconds left, clamped to [0, INT32_MAX] (for poll()).
  int msLeft() const {
    uint64_t n = nowNs();
    if (n >= end_) return 0;
    uint64_t ms = (end_ - n + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }

 private:
  static uint64_t endAfter(double seconds) {
    const uint64_t now = nowNs();
    if (!(seconds > 0)) return now;
    const double ns = seconds * 1e9;
    if (ns >= static_cast<double>(UINT64_MAX - now)) return UINT64_MAX;
    return now + static_cast<uint64_t>(ns);
  }
  uint64_t end_;
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Usage: SpinWait w(timeoutSeconds); while (!cond()) { if (!w.next()) return timeoutError(...); }
class SpinWait {
 public:
  explicit SpinWait(double timeoutSeconds) : deadline_(timeoutSeconds) {}
  // Backs off once; returns false when the deadline has passed.
  bool next() {
    ++iter_;
    if (iter_ < 256) {
      cpuRelax();
      return true;
    }
    if ((iter_ & 63) == 0 && deadline_.expired()) return false;
    if (iter_ < 4096) {
      sched_yield();
    } else {
      timespec ts{0, 20000};  // 20 us: an oversubscribed waiter must give its core away
      nanosleep(&ts, nullptr);
    }
    return true;
  }

 private:
  Deadline deadline_;
  uint64_t iter_ = 0;
};

}  // namespace tether
