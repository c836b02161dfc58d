// Wakeups: this PE's view of the sleep words (base/sleep_word.h) of the PEs on its host, one in each PE's control
// block (ControlBlock::wake, at the start of its HOST heap). A writer whose store a PE of this host may be waiting
// for wakes that PE after the store (wake); this PE's host waits sleep on mine() (SpinWait's sleep word). PEs on
// other hosts have none: wake is a no-op for them (their stores arrive through the network, which the waiter
// progresses itself, between sleeps of at most 20 us). Only with TETHER_WAIT_FUTEX=1 (default 0: with more PEs than
// cores the wakes' system calls cost more than they saved, bench/results/cpu-2core-vm/wait_slow_yield_2026-12-07.txt)
// do PEs have one; otherwise every wake is a no-op and waits sleep plainly.
// Thread-safety: set up once in tether_init before any operation; read-only afterwards.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "base/sleep_word.h"

namespace tether {

class Wakeups {
 public:
  // words[pe]: PE pe's sleep word as mapped here, or nullptr; me: this PE. No word at all (TETHER_WAIT_FUTEX=0):
  // kept empty, so that wake() is one compare and any() lets callers skip their loops over PEs.
  void setUp(std::vector<SleepWord*> words, int me) {
    const size_t i = static_cast<size_t>(me);
    mine_ = i < words.size() ? words[i] : nullptr;
    const bool some = std::any_of(words.begin(), words.end(), [](const SleepWord* w) { return w != nullptr; });
    words_ = some ? std::move(words) : std::vector<SleepWord*>{};
  }
  // After a store that PE pe may wait for (any PE number; before setUp and for other hosts' PEs: nothing).
  void wake(int pe) const {
    if (static_cast<size_t>(pe) < words_.size()) wakeSleepers(words_[static_cast<size_t>(pe)]);
  }
  bool any() const { return !words_.empty(); }  // some PE has a sleep word: wakes can do something
  SleepWord* mine() const { return mine_; }

 private:
  std::vector<SleepWord*> words_;
  SleepWord* mine_ = nullptr;
};

}  // namespace tether
