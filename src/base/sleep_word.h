// SleepWord: lets a waiting thread sleep in the kernel until a thread of any process that stored what it waits for
// wakes it (a Linux futex on a word in memory the processes share). It only shortens sleeps: a waiter never sleeps
// longer than the bound it passes (SpinWait: 20 us), so a store whose writer does not wake it (a GPU, a network
// transport, a path that was not taught to) is still seen within that bound, as it was before sleep words.
//
// Protocol (both words zero at start; a SleepWord lives in shared memory, one per PE: ControlBlock::wake):
//   waiter: armSleepWord (sleepers++, then read seq), check the condition, sleepOnWord(seen) while seq == seen, read
//           seq again (sleepWordSeq), check, ... disarmSleepWord (sleepers--) when done.
//   writer: store what the waiter waits for, then wakeSleepers: when a waiter is armed, seq++ and wake them all.
// A wake is never lost when the writer's store is a locked read-modify-write (the signals and atomics) or is followed
// by a full fence: either the writer sees the waiter armed, or the waiter's check after arming sees the store. After
// a plain release store the writer's load of `sleepers` may pass the store (store buffer): the waiter then sleeps
// its bound once. A wake costs one load of a line the waiter writes only when it arms or disarms.
#pragma once

#include <cstdint>

namespace tether {

struct alignas(64) SleepWord {
  uint32_t seq;       // bumped by each wake that found an armed waiter; a sleeper sleeps while it is unchanged
  uint32_t sleepers;  // waiters between armSleepWord and disarmSleepWord
};

// The futex wake of wakeSleepers: seq++, then wake every sleeper.
void wakeAllSleepers(SleepWord* word);

// Wakes the waiters armed on word (nullptr: nobody to wake), after the store they wait for.
inline void wakeSleepers(SleepWord* word) {
  if (word && __atomic_load_n(&word->sleepers, __ATOMIC_SEQ_CST) != 0) wakeAllSleepers(word);
}

// Waiter side. armSleepWord returns the seq to pass to sleepOnWord, which returns when seq differs from seen, a wake
// came, maxNs passed, or a signal interrupted it (all the same to the caller, who checks its condition again).
inline uint32_t armSleepWord(SleepWord* word) {
  __atomic_fetch_add(&word->sleepers, 1u, __ATOMIC_SEQ_CST);
  return __atomic_load_n(&word->seq, __ATOMIC_SEQ_CST);
}
inline uint32_t sleepWordSeq(const SleepWord* word) { return __atomic_load_n(&word->seq, __ATOMIC_SEQ_CST); }
void sleepOnWord(SleepWord* word, uint32_t seen, uint64_t maxNs);
inline void disarmSleepWord(SleepWord* word) { __atomic_fetch_sub(&word->sleepers, 1u, __ATOMIC_SEQ_CST); }

}  // namespace tether
