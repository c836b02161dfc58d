// Stream-ordered operations (#6) on HOST segments with the CPU emulation of the stream-op layer (one worker thread per
// emulated stream, core/stream_ops.h), installed through the internal test hook -- so the ordering logic of the
// *_on_stream calls and of prepared sets runs in CI without a GPU. Run at 2/4 PEs, directly and with
// TETHER_FORCE_PROXY=1 (every other PE through the device API's proxy ring, posted from the stream), and with
// MP_NO_HOST_ATOMICS=1 (AMOs and ADD signals on HOST words through the ring, as without host-native atomics).
//  1. put_signal ping-ring: each PE streams `kIters` put_signal(SET i+1) to the next PE, waits on its own signal,
//     snapshots the data and acks; the data a PE snapshots after seeing signal i+1 must be message i (data visible
//     when the signal is).
//  2. prepared set posted kIters times, patching offset and signal: wait for the ack (cyclic GE on a patched value
//     that starts "negative"), put_signal, wait, get the data and the signal word, ack; checks payloads and that the
//     observed signal values are in order and within the flow-control window.
//  3. barrier rounds: p_on_stream of the round number into every PE, barrier_all_on_stream, snapshot, sync_all; the
//     same as a prepared set posted kIters times (each post its own slots). With TETHER_STREAM_BARRIER=kernel
//     (mp_stream_sync_barrier) the barriers are the world team's sync (what a CUDA graph capture takes where no GPU
//     is shared), with TETHER_STREAM_BARRIER=reset (mp_stream_reset*) memops with resets (what it takes where PEs
//     share a GPU).
//  4. waits with each comparison (unsigned and signed): the stream must not pass before the host makes it true.
//  5. atomics on stream (add, fetch_add into a local array, set) and argument errors.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "mp_cpu_stream.h"

namespace {

constexpr int kIters = 64;
constexpr size_t kBytes = 1024;
constexpr uint64_t kWindow = 4;  // prepared-set flow control: the sender runs at most this far ahead

unsigned char pattern(int pe, int i, size_t k) { return static_cast<unsigned char>(pe * 31 + i * 7 + k * 13 + 1); }

void syncStream(tether::StreamOps* so, void* s) {
  tether::Status st = so->synchronize(s);
  if (!st.isOk()) {
    std::fprintf(stderr, "FAIL: stream error: %s\n", st.message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w), next = (me + 1) % n, prev = (me + n - 1) % n;
  // MP_NO_HOST_ATOMICS=1 (mp_stream_rmw_proxy): the emulation reports no host-native atomics, as a GPU behind PCIe
  // without AtomicOps, so every AMO and ADD signal on these HOST words goes through the proxy (CPU atomics).
  const char* nha = std::getenv("MP_NO_HOST_ATOMICS");
  const bool noHostAtomics = nha && nha[0] == '1';
  // MP_CAPTURING=1 (mp_stream_captured): every stream reports a CUDA graph capture, so barriers take their captured
  // form with TETHER_STREAM_BARRIER=auto (the world team's sync: no GPU is shared here), prepared sets build it at
  // their first post.
  const char* cap = std::getenv("MP_CAPTURING");
  tether::StreamOps* so = mp::useCpuStreams(w, !noHostAtomics, cap && cap[0] == '1');
  void* s = nullptr;
  MP_CHECK(so->createStream(&s).isOk());

  auto* ring = static_cast<unsigned char*>(mp::hostZeroed(w, kIters * kBytes));
  auto* sig = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  auto* ack = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  auto* slots = static_cast<uint64_t*>(mp::hostZeroed(w, 8 * static_cast<size_t>(n)));
  auto* counter = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  auto* word = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  MP_OK(tether_barrier_all(w));
  std::vector<unsigned char> srcs(kIters * kBytes), snaps(kIters * kBytes);
  for (int i = 0; i < kIters; ++i)
    for (size_t k = 0; k < kBytes; ++k) srcs[i * kBytes + k] = pattern(me, i, k);
  auto checkSnaps = [&](const char* what) {
    for (int i = 0; i < kIters; ++i)
      for (size_t k = 0; k < kBytes; ++k)
        if (snaps[i * kBytes + k] != pattern(prev, i, k)) {
          std::fprintf(stderr, "FAIL PE %d %s: message %d byte %zu is %d, expected %d\n", me, what, i, k,
                       snaps[i * kBytes + k], pattern(prev, i, k));
          std::exit(1);
        }
  };

  // ---- 1. put_signal ring with acks, all single calls on one stream
  for (int i = 0; i < kIters; ++i) {
    const uint64_t u = static_cast<uint64_t>(i);
    MP_OK(tether_signal_wait_until_on_stream(w, ack, TETHER_CMP_GE, u, s));  // next consumed message i-1
    MP_OK(tether_putmem_signal_on_stream(w, ring, &srcs[i * kBytes], kBytes, sig, u + 1, TETHER_SIGNAL_SET, next, s));
    MP_OK(tether_signal_wait_until_on_stream(w, sig, TETHER_CMP_GE, u + 1, s));
    MP_OK(tether_getmem_on_stream(w, &snaps[i * kBytes], ring, kBytes, me, s));
    MP_OK(tether_signal_op_on_stream(w, ack, u + 1, TETHER_SIGNAL_SET, prev, s));
  }
  syncStream(so, s);
  checkSnaps("put_signal ring");
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("put_signal ring on stream: ok (%d messages)\n", kIters);

  // ---- 2. the same exchange as one prepared set, posted kIters times with patched offset and signal values
  std::memset(snaps.data(), 0, snaps.size());
  std::vector<uint64_t> seen(kIters, 0);
  *sig = 0;
  *ack = 0;
  MP_OK(tether_barrier_all(w));
  tether_op_desc_t ops[5];
  std::memset(ops, 0, sizeof ops);
  ops[0].kind = TETHER_OP_SIGNAL_WAIT;  // ack >= i + 1 - kWindow (cyclic: "negative" for the first posts)
  ops[0].sig_addr = ack;
  ops[0].cmp = TETHER_CMP_GE;
  ops[0].signal = static_cast<uint64_t>(0) - kWindow;
  ops[0].flags = TETHER_OP_PATCH_SIGNAL;
  ops[1].kind = TETHER_OP_PUT_SIGNAL;
  ops[1].pe = next;
  ops[1].dest = ring;
  ops[1].src = srcs.data();
  ops[1].nbytes = kBytes;
  ops[1].sig_addr = sig;
  ops[1].sig_op = TETHER_SIGNAL_SET;
  ops[1].flags = TETHER_OP_PATCH_OFFSET | TETHER_OP_PATCH_SIGNAL;
  ops[2].kind = TETHER_OP_SIGNAL_WAIT;
  ops[2].sig_addr = sig;
  ops[2].cmp = TETHER_CMP_GE;
  ops[2].flags = TETHER_OP_PATCH_SIGNAL;
  ops[3].kind = TETHER_OP_GET;
  ops[3].pe = me;
  ops[3].dest = snaps.data();
  ops[3].src = ring;
  ops[3].nbytes = kBytes;
  ops[3].flags = TETHER_OP_PATCH_OFFSET;
  ops[4].kind = TETHER_OP_SIGNAL;
  ops[4].pe = prev;
  ops[4].sig_addr = ack;
  ops[4].sig_op = TETHER_SIGNAL_SET;
  ops[4].flags = TETHER_OP_PATCH_SIGNAL;
  tether_op_set_t set = nullptr;
  MP_OK(tether_prepare(w, ops, 5, &set));
  for (int i = 0; i < kIters; ++i) {
    const tether_post_patch_t patch{static_cast<size_t>(i) * kBytes, static_cast<uint64_t>(i) + 1};
    MP_OK(tether_post_on_stream(set, s, &patch));
    // the signal word as this PE's stream saw it after the set's wait
    MP_OK(tether_getmem_on_stream(w, &seen[static_cast<size_t>(i)], sig, 8, me, s));
  }
  syncStream(so, s);
  checkSnaps("prepared set");
  for (int i = 0; i < kIters; ++i) {
    const uint64_t v = seen[static_cast<size_t>(i)], lo = static_cast<uint64_t>(i) + 1;
    if (v < lo || v > lo + kWindow || (i && v < seen[static_cast<size_t>(i) - 1])) {
      std::fprintf(stderr, "FAIL PE %d: post %d observed signal %" PRIu64 " (expected in [%" PRIu64 ", %" PRIu64
                   "], not below the previous one)\n", me, i, v, lo, lo + kWindow);
      std::exit(1);
    }
  }
  // A patch that moves a range out of the symmetric heap is refused before anything is enqueued.
  const tether_post_patch_t bad{size_t{1} << 44, 0};
  MP_EXPECT_STATUS(tether_post_on_stream(set, s, &bad), TETHER_ERR_NOT_SYMMETRIC);
  MP_OK(tether_op_set_free(set));
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("prepared set: ok (%d posts, signals observed in order)\n", kIters);

  // ---- 3. barrier rounds on the stream
  std::vector<uint64_t> barrierLog(static_cast<size_t>(kIters) * n);
  for (int k = 0; k < kIters; ++k) {
    const uint64_t v = static_cast<uint64_t>(k) + 1;
    for (int pe = 0; pe < n; ++pe) MP_OK(tether_p_on_stream(w, &slots[me], &v, 8, pe, s));
    MP_OK(tether_barrier_all_on_stream(w, s));
    MP_OK(tether_getmem_on_stream(w, &barrierLog[static_cast<size_t>(k) * n], slots, 8 * static_cast<size_t>(n), me,
                                  s));
    MP_OK(tether_sync_all_on_stream(w, s));  // nobody writes round k+1 before everyone snapshotted round k
  }
  syncStream(so, s);
  for (int k = 0; k < kIters; ++k)
    for (int pe = 0; pe < n; ++pe)
      if (barrierLog[static_cast<size_t>(k) * n + pe] != static_cast<uint64_t>(k) + 1) {
        std::fprintf(stderr, "FAIL PE %d: after stream barrier %d slot of PE %d holds %" PRIu64 "\n", me, k, pe,
                     barrierLog[static_cast<size_t>(k) * n + pe]);
        std::exit(1);
      }
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("barrier_all_on_stream: ok (%d barriers)\n", kIters);
  {  // the same rounds as a prepared set (puts into every PE, BARRIER_ALL, a get of this PE's slots, SYNC_ALL), each
     // post with its own slots (patched offset: round k's at k * n words)
    auto* rounds = static_cast<uint64_t*>(mp::hostZeroed(w, sizeof(uint64_t) * kIters * n));
    std::vector<uint64_t> vals(static_cast<size_t>(kIters) * n), log(static_cast<size_t>(kIters) * n);
    for (int k = 0; k < kIters; ++k) vals[static_cast<size_t>(k) * n] = static_cast<uint64_t>(k) + 1;
    std::vector<tether_op_desc_t> bops;
    for (int pe = 0; pe < n; ++pe)
      bops.push_back({TETHER_OP_PUT, pe, &rounds[me], vals.data(), 8, nullptr, 0, TETHER_SIGNAL_SET, TETHER_CMP_EQ,
                     TETHER_OP_PATCH_OFFSET});
    bops.push_back({TETHER_OP_BARRIER_ALL, 0, nullptr, nullptr, 0, nullptr, 0, TETHER_SIGNAL_SET, TETHER_CMP_EQ, 0});
    bops.push_back({TETHER_OP_GET, me, log.data(), rounds, 8 * static_cast<size_t>(n), nullptr, 0, TETHER_SIGNAL_SET,
                   TETHER_CMP_EQ, TETHER_OP_PATCH_OFFSET});
    bops.push_back({TETHER_OP_SYNC_ALL, 0, nullptr, nullptr, 0, nullptr, 0, TETHER_SIGNAL_SET, TETHER_CMP_EQ, 0});
    tether_op_set_t bset = nullptr;
    MP_OK(tether_prepare(w, bops.data(), bops.size(), &bset));
    for (int k = 0; k < kIters; ++k) {
      const tether_post_patch_t at{8 * static_cast<size_t>(k) * n, 0};
      MP_OK(tether_post_on_stream(bset, s, &at));
    }
    syncStream(so, s);
    for (int k = 0; k < kIters; ++k)
      for (int pe = 0; pe < n; ++pe)
        if (log[static_cast<size_t>(k) * n + pe] != static_cast<uint64_t>(k) + 1) {
          std::fprintf(stderr, "FAIL PE %d: after the set's barrier %d slot of PE %d holds %" PRIu64 "\n", me, k,
                       pe, log[static_cast<size_t>(k) * n + pe]);
          std::exit(1);
        }
    MP_OK(tether_op_set_free(bset));
    MP_OK(tether_barrier_all(w));
    if (me == 0) std::printf("barriers in a prepared set: ok (%d posts)\n", kIters);
  }

  // ---- 4. waits with each comparison: the stream must not pass before the host makes the condition true
  struct Case {
    tether_dtype_t type;
    tether_cmp_t cmp;
    int64_t init, value, set;
  } cases[] = {
      {TETHER_UINT64, TETHER_CMP_EQ, 0, 7, 7}, {TETHER_UINT64, TETHER_CMP_NE, 7, 7, 8},
      {TETHER_UINT64, TETHER_CMP_GT, 5, 5, 6}, {TETHER_UINT64, TETHER_CMP_GE, 5, 9, 9},
      {TETHER_UINT64, TETHER_CMP_LT, 9, 3, 2}, {TETHER_UINT64, TETHER_CMP_LE, 9, 3, 3},
      {TETHER_INT64, TETHER_CMP_LT, 1, -1, -2}, {TETHER_INT64, TETHER_CMP_LE, 1, -1, -1},
      {TETHER_INT64, TETHER_CMP_GT, -5, -3, -2},
  };
  for (const Case& c : cases) {
    __atomic_store_n(&word[0], static_cast<uint64_t>(c.init), __ATOMIC_RELEASE);
    __atomic_store_n(&word[1], 0, __ATOMIC_RELEASE);
    MP_OK(tether_wait_until_on_stream(w, &word[0], c.type, c.cmp, &c.value, s));
    const uint64_t mark = 1 + static_cast<uint64_t>(c.cmp);
    MP_OK(tether_p_on_stream(w, &word[1], &mark, 8, me, s));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (__atomic_load_n(&word[1], __ATOMIC_ACQUIRE) != 0) {
      std::fprintf(stderr, "FAIL PE %d: wait with comparison %d on %" PRId64 " passed before the word was %" PRId64
                   "\n", me, static_cast<int>(c.cmp), c.value, c.set);
      std::exit(1);
    }
    __atomic_store_n(&word[0], static_cast<uint64_t>(c.set), __ATOMIC_RELEASE);
    syncStream(so, s);
    MP_CHECK(__atomic_load_n(&word[1], __ATOMIC_ACQUIRE) == mark);
  }
  if (me == 0) std::printf("waits with each comparison: ok\n");

  // ---- 5. atomics on the stream, quiet/fence, the null stream, argument errors
  std::vector<uint64_t> fetched(kIters, ~uint64_t{0});
  for (int i = 0; i < kIters; ++i) {
    MP_OK(tether_atomic_add_on_stream(w, &counter[0], 1, 0, s));
    MP_OK(tether_atomic_fetch_add_on_stream(w, &counter[1], 2, &fetched[static_cast<size_t>(i)], 0, s));
  }
  uint32_t old32 = 0, v32 = 5;
  MP_OK(tether_atomic_on_stream(w, TETHER_AMO_FETCH_OR, TETHER_UINT32, &counter[2], &v32, nullptr, &old32, next, s));
  MP_OK(tether_quiet_on_stream(w, s));
  MP_OK(tether_fence_on_stream(w, s));
  MP_OK(tether_barrier_all_on_stream(w, s));
  syncStream(so, s);
  for (int i = 1; i < kIters; ++i) MP_CHECK(fetched[static_cast<size_t>(i)] > fetched[static_cast<size_t>(i) - 1]);
  MP_CHECK(fetched.back() < 2ull * kIters * n);
  MP_CHECK((old32 & ~5u) == 0);
  if (me == 0) {
    MP_CHECK(__atomic_load_n(&counter[0], __ATOMIC_ACQUIRE) == static_cast<uint64_t>(kIters) * n);
    MP_CHECK(__atomic_load_n(&counter[1], __ATOMIC_ACQUIRE) == 2ull * kIters * n);
  }
  MP_OK(tether_atomic_set_on_stream(w, &counter[3], 42, next, nullptr));
  MP_OK(tether_sync_all_on_stream(w, nullptr));
  syncStream(so, nullptr);
  MP_CHECK(__atomic_load_n(&counter[3], __ATOMIC_ACQUIRE) == 42);
  const uint64_t big = UINT64_MAX;
  MP_EXPECT_STATUS(tether_p_on_stream(w, word, &big, 3, next, s), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_putmem_on_stream(w, ring, srcs.data(), 8, n, s), TETHER_ERR_INVALID_PE);
  MP_EXPECT_STATUS(tether_putmem_on_stream(w, srcs.data(), srcs.data(), 8, next, s), TETHER_ERR_NOT_SYMMETRIC);
  MP_EXPECT_STATUS(tether_signal_wait_until_on_stream(w, sig, TETHER_CMP_GT, big, s), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_wait_until_on_stream(w, word, TETHER_DOUBLE, TETHER_CMP_EQ, &big, s), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_atomic_fetch_add_on_stream(w, counter, 1, nullptr, next, s), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_signal_op_on_stream(w, sig + 0, 1, static_cast<tether_signal_op_t>(9), next, s),
                   TETHER_ERR_INVALID_ARG);
  syncStream(so, s);
  MP_CHECK(so->destroyStream(s).isOk());
  const char* forced = std::getenv("TETHER_FORCE_PROXY");
  if (forced && forced[0] == '1') {  // the other PEs were reached through the ring, posted from the stream
    tether_device_handle_t h;
    MP_OK(tether_device_handle_cpu(w, &h));
    MP_CHECK(h.proxy_ticket && __atomic_load_n(h.proxy_ticket, __ATOMIC_ACQUIRE) >= static_cast<uint64_t>(kIters));
  }
  if (noHostAtomics) {  // section 5's 2 * kIters AMOs on PE 0's words (this PE's own too) went through the ring
    tether_device_handle_t h;
    MP_OK(tether_device_handle_cpu(w, &h));
    MP_CHECK(h.proxy_ticket &&
             __atomic_load_n(h.proxy_ticket, __ATOMIC_ACQUIRE) >= 2 * static_cast<uint64_t>(kIters));
  }
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("atomics on stream and argument checks: ok\n");
  return mp::finish();
}
