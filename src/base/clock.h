// Time and bounded waiting.
//
// Every spin-wait in tether goes through SpinWait: it spins briefly, then yields, then sleeps, so that many PEs
// sharing few cores (8 PEs on a 2-core CI machine) still make progress, and it reports expiry of its Deadline so the
// caller can fail with what it waited for instead of hanging. A wait that lasts longer than TETHER_WAIT_REPORT
// (default 10 s) tells its caller when to log a progress note (what it waits for, time left): SpinWait::noteDue(),
// NoteTimer for poll() loops.
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
  explicit Deadline(double seconds) : Deadline(seconds, nowNs()) {}
  Deadline(double seconds, uint64_t now) : start_(now), end_(endAfter(now, seconds)) {}
  bool expired() const { return nowNs() >= end_; }
  bool expiredAt(uint64_t now) const { return now >= end_; }
  // Milliseconds left, clamped to [0, INT32_MAX] (for poll()).
  int msLeft() const {
    uint64_t n = nowNs();
    if (n >= end_) return 0;
    uint64_t ms = (end_ - n + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }
  double secondsLeft() const {
    uint64_t n = nowNs();
    return n >= end_ ? 0 : static_cast<double>(end_ - n) / 1e9;
  }
  double elapsedSeconds() const { return static_cast<double>(nowNs() - start_) / 1e9; }
  uint64_t startNs() const { return start_; }

 private:
  static uint64_t endAfter(uint64_t now, double seconds) {
    if (!(seconds > 0)) return now;
    const double ns = seconds * 1e9;
    if (ns >= static_cast<double>(UINT64_MAX - now)) return UINT64_MAX;
    return now + static_cast<uint64_t>(ns);
  }
  uint64_t start_;
  uint64_t end_;
};

// Seconds between progress notes of a long wait: TETHER_WAIT_REPORT (default 10; 0 = never), read from the
// environment at each call (config.cpp), so call it when a wait has already lasted, not on a fast path.
double waitReportSeconds();

// Paces the progress notes of a long wait (bootstrap loops): due() is true once every `intervalSeconds`, the first
// time one interval after construction; never when intervalSeconds <= 0.
class NoteTimer {
 public:
  explicit NoteTimer(double intervalSeconds)
      : intervalNs_(intervalSeconds > 0 ? static_cast<uint64_t>(intervalSeconds * 1e9) : 0),
        next_(intervalNs_ ? nowNs() + intervalNs_ : UINT64_MAX) {}
  bool due() {
    const uint64_t n = nowNs();
    if (n < next_) return false;
    next_ = n + intervalNs_;
    return true;
  }
  // Milliseconds until the next note (INT32_MAX when never), to bound a poll() that should wake up for it.
  int msToNext() const {
    const uint64_t n = nowNs();
    if (n >= next_) return 0;
    const uint64_t ms = (next_ - n + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }

 private:
  uint64_t intervalNs_;
  uint64_t next_;
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Usage: SpinWait w(timeoutSeconds); while (!cond()) { if (!w.next()) return timeoutError(...); }
// Backoff: cpu pause for kSpinCalls calls, then sched_yield up to 4096, then 20 us sleeps. The spin is short because
// PEs may outnumber cores: a waiter that keeps its core spinning holds back the PE it waits for (OpenSHMEM barrier,
// 4 PEs on 2 cores, 2026-11-27: 8.5 us with 256 pause calls, 2.0-2.4 us with 16; 2 PEs: ping-pong and barrier the
// same, 0.17 and 0.26-0.32 us). A waiter that serves peers while
// it waits (network progress) calls `busy()` when that did work, which drops it back to spinning: a peer still
// talking to it is answered within a spin, not a sleep (timer slack makes a 20 us sleep ~70 us). The deadline is
// checked every 64 calls whatever the backoff, so busy() never makes a wait unbounded. The deadline starts at the
// first of those checks, not at construction: a wait that ends within 63 calls (a message or token that is already
// there or arrives during the spin) never reads the clock -- clock_gettime was 9-12 % of an 8 B message ping-pong on
// the CI VM. A wait thus lasts its timeout plus its first 63 calls.
// A wait that lasts: `if (w.noteDue()) log(what is waited for, w.elapsedSeconds(), w.secondsLeft())` in the loop
// says so every TETHER_WAIT_REPORT seconds (the interval is read once the waiter has started sleeping).
class SpinWait {
 public:
  static constexpr uint64_t kSpinCalls = 16;
  explicit SpinWait(double timeoutSeconds) : seconds_(timeoutSeconds) {}
  // Backs off once; returns false when the deadline has passed.
  bool next() {
    ++iter_;
    ++backoff_;
    if ((iter_ & 63) == 0) {
      const uint64_t now = nowNs();
      if (!started_) {
        deadline_ = Deadline(seconds_, now);
        started_ = true;
      } else if (deadline_.expiredAt(now)) {
        return false;
      }
      if (iter_ >= 4096) checkNote(now);
    }
    if (backoff_ < kSpinCalls) {
      cpuRelax();
      return true;
    }
    if (backoff_ < 4096) {
      sched_yield();
    } else {
      timespec ts{0, 20000};  // 20 us: an oversubscribed waiter must give its core away
      nanosleep(&ts, nullptr);
    }
    return true;
  }
  // True once per TETHER_WAIT_REPORT interval of waiting (then false until the next one).
  bool noteDue() {
    const bool due = noteDue_;
    noteDue_ = false;
    return due;
  }
  // The wait did useful work (progressed a transport): back to spinning. The deadline is unaffected.
  void busy() { backoff_ = 0; }
  // True once next() has backed off to sleeping (for tests).
  bool sleeping() const { return backoff_ >= 4096; }
  double elapsedSeconds() const { return started_ ? deadline_.elapsedSeconds() : 0; }
  double secondsLeft() const { return started_ ? deadline_.secondsLeft() : (seconds_ > 0 ? seconds_ : 0); }

 private:
  void checkNote(uint64_t now) {
    if (nextNote_ == 0) {
      const double every = waitReportSeconds();
      noteNs_ = every > 0 ? static_cast<uint64_t>(every * 1e9) : 0;
      nextNote_ = noteNs_ ? deadline_.startNs() + noteNs_ : UINT64_MAX;
    }
    if (now >= nextNote_) {
      noteDue_ = true;
      nextNote_ = now + noteNs_;
    }
  }
  double seconds_;
  bool started_ = false;
  Deadline deadline_{0, 0};  // set at the first check (started_)
  uint64_t iter_ = 0;     // calls to next(): deadline and note cadence
  uint64_t backoff_ = 0;  // calls since the start or the last busy(): the backoff stage
  uint64_t nextNote_ = 0;  // 0: interval not read yet
  uint64_t noteNs_ = 0;
  bool noteDue_ = false;
};

}  // namespace tether
