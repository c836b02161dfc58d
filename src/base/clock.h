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

#include "base/sleep_word.h"

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
// TETHER_WAIT_SLOW_YIELD in ns (default 500 us; 0 in the variable = never: UINT64_MAX), read from the environment once
// per process (config.cpp).
uint64_t slowYieldNs();

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
// Slow yields: four yields in a row (timed together: one clock read per 4 yields) that kept the core away longer
// than TETHER_WAIT_SLOW_YIELD (default 500 us) end the yielding of this wait: the core went to a process that kept it
// for a time slice -- most likely a CPU-bound process outside the job (a peer PE gives the core back as soon as it
// waits itself) -- and every further yield would hand it another slice (two outside CPU hogs made host tests 6-100x
// slower: bench/results/cpu-2core-vm/cpu_hogs_2026-12-07.txt). When kSlowOf16 (4) of the thread's last 16 timed
// groups were slow, its next waits also skip yielding for kNoYieldNs (50 ms): a few slices lost per window instead
// of one per wait (a host collective waits thousands of times a second). Beside two hogs about half the single
// yields were slow (they alternate with fast ones); on the quiet 2-core VM, 4 PEs, about 2 of 30000-130000 yields per
// PE and osh_bench run (a peer kept the core; EEVDF deprioritises a task that yields often) -- but some tests' peers
// keep it often (mp_coll_fuzz): two slow yields within 20 ms as the trigger made it 60 % slower there, and a clock
// read per yield made 8 PEs' small broadcasts ~15 % slower (bench/results/cpu-2core-vm/wait_slow_yield_2026-12-07.txt).
// With a sleep word (base/sleep_word.h: this PE's, whose writers wake it after their stores), the sleeps are futex
// waits on it of at most the same 20 us: a wake ends one at once. The first sleeping call arms the word and returns
// without sleeping (the caller checks once more after arming); the destructor and busy() disarm it.
class SpinWait {
 public:
  static constexpr uint64_t kSpinCalls = 16;
  static constexpr uint64_t kSleepNs = 20000;  // 20 us: an oversubscribed waiter must give its core away
  static constexpr uint64_t kYieldCalls = 4096;  // calls before sleeping (unless a yield was slow)
  static constexpr int kSlowOf16 = 4;  // slow groups among the thread's last 16 that make its waits skip yielding
  static constexpr uint64_t kNoYieldNs = 50000000;  // ... for this long (50 ms)
  explicit SpinWait(double timeoutSeconds, SleepWord* word = nullptr) : seconds_(timeoutSeconds), word_(word) {}
  ~SpinWait() { disarm(); }
  SpinWait(const SpinWait&) = delete;
  SpinWait& operator=(const SpinWait&) = delete;
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
      if (iter_ >= kYieldCalls) checkNote(now);
    }
    if (backoff_ < kSpinCalls) {
      cpuRelax();
      return true;
    }
    if (backoff_ == kSpinCalls) {  // the yielding stage starts (or skips, within a no-yield window)
      yieldEnd_ = nowNs();
      if (yieldEnd_ < noYieldUntil()) backoff_ = kYieldCalls;
    }
    if (backoff_ < kYieldCalls) {
      // Every 4th yield: slow = those 4 yields (with the caller's short checks between them) took over the threshold.
      sched_yield();
      if ((backoff_ - kSpinCalls + 1) % 4 != 0) return true;
      const uint64_t after = nowNs();
      const bool slow = after - yieldEnd_ > slowYieldNs();
      yieldEnd_ = after;
      yieldHistory() = yieldHistory() << 1 | (slow ? 1u : 0u);
      if (slow) {  // the core went away for a slice: sleep now (and skip yields a while when it keeps happening)
        backoff_ = kYieldCalls;
        if (__builtin_popcount(yieldHistory() & 0xffffu) >= kSlowOf16) noYieldUntil() = after + kNoYieldNs;
      }
    } else if (!word_) {
      timespec ts{0, static_cast<long>(kSleepNs)};
      nanosleep(&ts, nullptr);
    } else if (!armed_) {
      seen_ = armSleepWord(word_);
      armed_ = true;
    } else {
      sleepOnWord(word_, seen_, kSleepNs);
      seen_ = sleepWordSeq(word_);
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
  void busy() {
    backoff_ = 0;
    disarm();
  }
  // True once next() has backed off to sleeping (for tests).
  bool sleeping() const { return backoff_ >= kYieldCalls; }
  bool armed() const { return armed_; }  // (for tests)
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
  // Until when (nowNs) this thread's waits skip yielding (0: they yield): what the scheduler showed this thread.
  static uint64_t& noYieldUntil() {
    static thread_local uint64_t until = 0;
    return until;
  }
  static uint32_t& yieldHistory() {  // this thread's last 32 timed groups of 4 yields, the latest in bit 0: 1 = slow
    static thread_local uint32_t bits = 0;
    return bits;
  }
  void disarm() {
    if (armed_) disarmSleepWord(word_);
    armed_ = false;
  }
  double seconds_;
  SleepWord* word_;
  bool armed_ = false;
  uint32_t seen_ = 0;  // the sleep word's seq, read before the caller's latest check
  bool started_ = false;
  Deadline deadline_{0, 0};  // set at the first check (started_)
  uint64_t iter_ = 0;     // calls to next(): deadline and note cadence
  uint64_t backoff_ = 0;  // calls since the start or the last busy(): the backoff stage
  uint64_t yieldEnd_ = 0;  // the clock at the start of the yielding stage, then at each 4th yield
  uint64_t nextNote_ = 0;  // 0: interval not read yet
  uint64_t noteNs_ = 0;
  bool noteDue_ = false;
};

}  // namespace tether
