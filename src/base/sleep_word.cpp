// SleepWord's futex calls (base/sleep_word.h has the protocol). Shared futexes (no FUTEX_PRIVATE_FLAG): the word is
// in memory that several processes map.
#include "base/sleep_word.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace tether {

void wakeAllSleepers(SleepWord* word) {
  __atomic_fetch_add(&word->seq, 1u, __ATOMIC_SEQ_CST);
  syscall(SYS_futex, &word->seq, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void sleepOnWord(SleepWord* word, uint32_t seen, uint64_t maxNs) {
  timespec ts{static_cast<time_t>(maxNs / 1000000000u), static_cast<long>(maxNs % 1000000000u)};
  // EAGAIN (seq moved on), EINTR, ETIMEDOUT and a wake all return to the caller's check.
  syscall(SYS_futex, &word->seq, FUTEX_WAIT, seen, &ts, nullptr, 0);
}

}  // namespace tether
