// Owner-executed atomics and signals over the UCX provider (TETHER_UCX_AMO=owner: the owning PE applies every atomic
// and signal on its HOST words through its own CPU atomics, answering an active message). ucx_owner.sh runs it and
// also checks, from the provider's closing log line, that the owners really served them.
//   (no argument): contended atomics from every PE on one word of PE 0 (exact final count, fetch_inc values a
//   permutation), one word per PE hit by all (64- and 32-bit, fetch_add/cswap/swap/and/or/xor), and signal ordering
//   (data put before a signal is visible once the signal is seen, for SET and ADD, put_signal and signal_op; and
//   for a put_nbi issued after a quiet, or after a signal to another PE flushed its own endpoint: the provider skips
//   the flush before a signal when no unflushed put to that PE exists), and a signal followed by a quiet is applied
//   at the target: checked through a shared-memory mailbox outside UCX while the target makes no tether call (it
//   fails against a signal sent one-way whose ack quiet does not await).
//   "lost": PE 1 SIGKILLs itself while the others run fetch_adds on its words; every other PE must fail with
//   TETHER_ERR_PEER_LOST naming PE 1 (ucx_peer_lost.sh checks the message and the time, TETHER_TIMEOUT + 15 s).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mp_util.h"

namespace {

constexpr int kRounds = 200;

void contended(tether_t w, int me, int n) {
  auto* words = static_cast<uint64_t*>(mp::hostZeroed(w, 64 * sizeof(uint64_t)));
  auto* w32 = static_cast<uint32_t*>(mp::hostZeroed(w, 64 * sizeof(uint32_t)));
  auto* seen = static_cast<uint64_t*>(mp::hostZeroed(w, static_cast<size_t>(kRounds) * 8 * sizeof(uint64_t)));
  MP_OK(tether_barrier_all(w));
  // Every PE increments PE 0's word 0 kRounds times; the fetched values are recorded on PE 0 (as a count per value).
  for (int i = 0; i < kRounds; ++i) {
    uint64_t old = ~0ull;
    MP_OK(tether_uint64_atomic_fetch_inc(w, &words[0], 0, &old));
    MP_CHECK(old < static_cast<uint64_t>(kRounds) * static_cast<uint64_t>(n));
    MP_OK(tether_uint64_atomic_add(w, &seen[old], 1, 0));
    // Every PE's word 1 gets 3 from everyone; word 2 (32-bit) gets -1 + 2.
    const int pe = (me + i) % n;
    MP_OK(tether_uint64_atomic_fetch_add(w, &words[1], 3, pe, &old));
    MP_OK(tether_uint32_atomic_add(w, &w32[2], 0xffffffffu, pe));
    MP_OK(tether_uint32_atomic_add(w, &w32[2], 2, pe));
  }
  MP_OK(tether_barrier_all(w));
  if (me == 0) {
    MP_CHECK(words[0] == static_cast<uint64_t>(kRounds) * static_cast<uint64_t>(n));
    for (int v = 0; v < kRounds * n; ++v) MP_CHECK(seen[v] == 1);  // each value fetched exactly once
  }
  // Word 1 of each PE: sum over PEs of the rounds that hit it.
  MP_CHECK(words[1] == 3ull * kRounds);
  MP_CHECK(w32[2] == static_cast<uint32_t>(kRounds));
  MP_OK(tether_barrier_all(w));
  // Compare-and-swap race: each PE tries to claim PE 0's word 3 from 0; exactly one wins, the rest fetch its id.
  uint64_t prev = 0;
  MP_OK(tether_uint64_atomic_compare_swap(w, &words[3], 0, static_cast<uint64_t>(me) + 1, 0, &prev));
  MP_OK(tether_uint64_atomic_add(w, &words[4], prev == 0 ? 1 : 0, 0));
  MP_OK(tether_barrier_all(w));
  uint64_t winner = 0, winners = 0;
  MP_OK(tether_uint64_atomic_fetch(w, &words[3], 0, &winner));
  MP_OK(tether_uint64_atomic_fetch(w, &words[4], 0, &winners));
  MP_CHECK(winners == 1 && winner >= 1 && winner <= static_cast<uint64_t>(n));
  // Bitwise on the next PE's word 5: each PE sets its own bit with or, flips bit 40 + me twice with xor, then and
  // keeps everything (fetched values checked for the bits this PE owns).
  const int next = (me + 1) % n;
  const uint64_t bit = 1ull << me;
  MP_OK(tether_uint64_atomic_fetch_or(w, &words[5], bit, next, &prev));
  MP_CHECK((prev & bit) == 0);
  MP_OK(tether_uint64_atomic_xor(w, &words[5], 1ull << (40 + me), next));
  MP_OK(tether_uint64_atomic_fetch_xor(w, &words[5], 1ull << (40 + me), next, &prev));
  MP_CHECK((prev & (1ull << (40 + me))) != 0 && (prev & bit) != 0);
  MP_OK(tether_uint64_atomic_fetch_and(w, &words[5], ~0ull, next, &prev));
  MP_CHECK((prev & bit) != 0);
  uint64_t swapped = 0;
  MP_OK(tether_uint64_atomic_swap(w, &words[6], 0xabcd0000ull + static_cast<uint64_t>(me), next, &swapped));
  MP_OK(tether_barrier_all(w));
  const int prevPe = (me + n - 1) % n;
  MP_CHECK(words[5] == 1ull << prevPe);
  MP_CHECK(words[6] == 0xabcd0000ull + static_cast<uint64_t>(prevPe));
  MP_OK(tether_barrier_all(w));
}

uint64_t pattern(int pe, int round, size_t i) {
  return (static_cast<uint64_t>(pe) << 48) ^ (static_cast<uint64_t>(round) << 24) ^ i;
}

// Each PE sends rounds of data + signal to the next PE and checks what the previous PE sent: the data must be in
// place once the signal is seen. Round r: put_signal SET (r % 3 == 0), put_nbi then signal_op SET (1), put, an
// empty put_signal ADD on a round counter, then signal_op SET (2). The receiver acks each round so the sender never
// overwrites unread data.
void signalOrdering(tether_t w, int me, int n) {
  constexpr size_t kWords = 131072;  // 1 MiB: the data takes a while over TCP, the signal does not
  constexpr int kSignalRounds = 30;
  auto* data = static_cast<uint64_t*>(mp::hostZeroed(w, kWords * sizeof(uint64_t)));
  auto* sig = static_cast<uint64_t*>(mp::hostZeroed(w, 8 * sizeof(uint64_t)));
  std::vector<uint64_t> buf(kWords);
  const int next = (me + 1) % n, prevPe = (me + n - 1) % n;
  MP_OK(tether_barrier_all(w));
  for (int r = 1; r <= kSignalRounds; ++r) {
    for (size_t i = 0; i < kWords; ++i) buf[i] = pattern(me, r, i);
    const size_t bytes = kWords * sizeof(uint64_t);
    switch (r % 3) {
      case 0:
        MP_OK(tether_put_signal(w, data, buf.data(), bytes, &sig[0], static_cast<uint64_t>(r), TETHER_SIGNAL_SET,
                                next));
        break;
      case 1:
        MP_OK(tether_put_nbi(w, data, buf.data(), bytes, next));
        MP_OK(tether_signal_op(w, &sig[0], static_cast<uint64_t>(r), TETHER_SIGNAL_SET, next));
        break;
      default:  // the counter sig[2] counts rounds; sig[0] is set from it
        MP_OK(tether_put(w, data, buf.data(), bytes, next));
        MP_OK(tether_put_signal(w, data, buf.data(), 0, &sig[2], 1, TETHER_SIGNAL_ADD, next));
        MP_OK(tether_signal_op(w, &sig[0], static_cast<uint64_t>(r), TETHER_SIGNAL_SET, next));
        break;
    }
    uint64_t got = 0;
    MP_OK(tether_signal_wait_until(w, &sig[0], TETHER_CMP_GE, static_cast<uint64_t>(r), &got));
    MP_CHECK(got == static_cast<uint64_t>(r));
    for (size_t i = 0; i < kWords; ++i)
      if (data[i] != pattern(prevPe, r, i)) {
        std::fprintf(stderr, "PE %d round %d: word %zu is 0x%llx, expected 0x%llx (signal seen before the data)\n",
                     me, r, i, static_cast<unsigned long long>(data[i]),
                     static_cast<unsigned long long>(pattern(prevPe, r, i)));
        MP_CHECK(false);
      }
    MP_OK(tether_signal_op(w, &sig[1], 1, TETHER_SIGNAL_ADD, prevPe));  // ack: the sender may overwrite
    MP_OK(tether_signal_wait_until(w, &sig[1], TETHER_CMP_GE, static_cast<uint64_t>(r), nullptr));
  }
  uint64_t counted = 0;
  MP_OK(tether_signal_fetch(w, &sig[2], &counted));
  MP_CHECK(counted == static_cast<uint64_t>(kSignalRounds / 3));
  MP_OK(tether_barrier_all(w));
}

// The flush a one-way signal may skip: round r puts pattern r with put_nbi after a quiet (r even) or after a signal
// to another PE (r odd; n > 2: that signal's flush, if any, is of that PE's endpoint only), then
// signals the next PE without a quiet: the next PE must see all of pattern r once it sees r.
void signalAfterSkippedFlush(tether_t w, int me, int n) {
  constexpr size_t kWords = 131072;  // 1 MiB
  constexpr int kSignalRounds = 20;
  auto* data = static_cast<uint64_t*>(mp::hostZeroed(w, kWords * sizeof(uint64_t)));
  auto* sig = static_cast<uint64_t*>(mp::hostZeroed(w, 4 * sizeof(uint64_t)));
  std::vector<uint64_t> buf(kWords);
  const int next = (me + 1) % n, prevPe = (me + n - 1) % n, other = (me + 2) % n;
  MP_OK(tether_barrier_all(w));
  for (int r = 1; r <= kSignalRounds; ++r) {
    for (size_t i = 0; i < kWords; ++i) buf[i] = pattern(me, r + 1000, i);
    const size_t bytes = kWords * sizeof(uint64_t);
    if (r % 2 == 0) {
      MP_OK(tether_put_nbi(w, data, buf.data(), 64, next));  // flushed by the quiet; the big put below is not
      MP_OK(tether_quiet(w));
      MP_OK(tether_put_nbi(w, data, buf.data(), bytes, next));
    } else {
      MP_OK(tether_put_nbi(w, data, buf.data(), bytes, next));
      MP_OK(tether_signal_op(w, &sig[2], 1, TETHER_SIGNAL_ADD, other));
    }
    MP_OK(tether_signal_op(w, &sig[0], static_cast<uint64_t>(r), TETHER_SIGNAL_SET, next));
    MP_OK(tether_signal_wait_until(w, &sig[0], TETHER_CMP_GE, static_cast<uint64_t>(r), nullptr));
    for (size_t i = 0; i < kWords; ++i)
      if (data[i] != pattern(prevPe, r + 1000, i)) {
        std::fprintf(stderr, "PE %d round %d (skipped flush): word %zu is 0x%llx, expected 0x%llx (the signal "
                     "overtook the put)\n", me, r, i, static_cast<unsigned long long>(data[i]),
                     static_cast<unsigned long long>(pattern(prevPe, r + 1000, i)));
        MP_CHECK(false);
      }
    MP_OK(tether_signal_op(w, &sig[1], 1, TETHER_SIGNAL_ADD, prevPe));  // ack: the sender may overwrite
    MP_OK(tether_signal_wait_until(w, &sig[1], TETHER_CMP_GE, static_cast<uint64_t>(r), nullptr));
  }
  MP_OK(tether_barrier_all(w));
  MP_CHECK(sig[2] == static_cast<uint64_t>((kSignalRounds + 1) / 2));  // every PE's odd rounds hit this one once
  MP_OK(tether_barrier_all(w));
}

// A signal is complete after quiet (transport.h): round r, each PE signals SET r to the next PE, quiets, then writes r into the
// next PE's slot of a shared-memory mailbox (a file under /dev/shm, outside UCX and tether). Each PE polls its slot
// making no tether call (only its progress thread runs the worker) and, once it reads r, its signal word must hold r
// already: the sender's signal + quiet returned only after the owner had applied it. Over TCP UCX orders the
// signal's message after earlier traffic anyway, so only the mailbox can tell a signal still queued at the target.
void quietCompletesSignal(tether_t w, int me, int n) {
  constexpr int kQuietRounds = 100;
  auto* sig = static_cast<uint64_t*>(mp::hostZeroed(w, 2 * sizeof(uint64_t)));
  sig[1] = static_cast<uint64_t>(getpid());
  MP_OK(tether_barrier_all(w));
  uint64_t pid0 = 0;
  MP_OK(tether_get(w, &pid0, &sig[1], sizeof pid0, 0));
  char path[96];
  std::snprintf(path, sizeof path, "/dev/shm/tether_mp_ucx_owner_%llu", static_cast<unsigned long long>(pid0));
  const size_t bytes = static_cast<size_t>(n) * sizeof(uint64_t);
  if (me == 0) {
    const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    MP_CHECK(fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0);
    close(fd);
  }
  MP_OK(tether_barrier_all(w));
  const int fd = open(path, O_RDWR);
  MP_CHECK(fd >= 0);
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  MP_CHECK(map != MAP_FAILED);
  auto* box = static_cast<uint64_t*>(map);
  MP_OK(tether_barrier_all(w));
  if (me == 0) unlink(path);
  const int next = (me + 1) % n;
  for (int r = 1; r <= kQuietRounds; ++r) {
    MP_OK(tether_signal_op(w, &sig[0], static_cast<uint64_t>(r), TETHER_SIGNAL_SET, next));
    MP_OK(tether_quiet(w));
    __atomic_store_n(&box[next], static_cast<uint64_t>(r), __ATOMIC_RELEASE);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (__atomic_load_n(&box[me], __ATOMIC_ACQUIRE) < static_cast<uint64_t>(r))
      MP_CHECK(std::chrono::steady_clock::now() < deadline);
    const uint64_t seen = __atomic_load_n(&sig[0], __ATOMIC_ACQUIRE);
    if (seen < static_cast<uint64_t>(r)) {
      std::fprintf(stderr, "PE %d round %d: the sender's quiet returned but the signal word holds %llu (not applied "
                   "yet)\n", me, r, static_cast<unsigned long long>(seen));
      MP_CHECK(false);
    }
  }
  munmap(map, bytes);
  MP_OK(tether_barrier_all(w));
}

// PE 1 dies while the others hammer its word with fetch_adds (it serves them from its progress thread, then
// SIGKILLs itself once it has served 50 per peer): each survivor must fail with TETHER_ERR_PEER_LOST.
int peerLost(tether_t w, int me, int n) {
  auto* word = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  MP_OK(tether_barrier_all(w));
  if (me == 1) {
    for (;;) {
      uint64_t v = 0;
      MP_OK(tether_uint64_atomic_fetch(w, word, 1, &v));
      if (v >= 50ull * static_cast<uint64_t>(n - 1)) raise(SIGKILL);
    }
  }
  for (int i = 0; i < 1000000; ++i) {
    uint64_t old = 0;
    const tether_status_t s = tether_uint64_atomic_fetch_add(w, word, 1, 1, &old);
    if (s == TETHER_ERR_PEER_LOST) {
      std::printf("PE %d: failed: %s\n", me, tether_last_error());
      return 2;
    }
    if (s != TETHER_SUCCESS) {
      std::printf("PE %d: wrong status %s (expected TETHER_ERR_PEER_LOST): %s\n", me, tether_status_string(s),
                  tether_last_error());
      return 3;
    }
  }
  std::printf("PE %d: no failure seen\n", me);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  if (argc > 1 && std::strcmp(argv[1], "lost") == 0) return peerLost(w, me, n);
  contended(w, me, n);
  signalOrdering(w, me, n);
  signalAfterSkippedFlush(w, me, n);
  quietCompletesSignal(w, me, n);
  if (me == 0) std::printf("mp_ucx_owner: %d PEs ok\n", n);
  return mp::finish();
}

