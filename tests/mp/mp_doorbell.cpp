// Doorbell transfers (#6, tether_doorbell_*) on HOST segments with the CPU emulation of the stream-op layer, so the
// ordering logic runs in CI without a GPU (the GPU version differs only in the stream-op layer: memop waits and
// copy-engine copies). At 2/4 PEs, directly and through the proxy path:
//  1. each PE arms kIters releases of a put_signal to the next PE (patched offset and signal) before ringing any;
//     a separate "ringer" thread (standing in for a kernel) rings them one by one, alternating the device API's
//     ring_doorbell (host-compiled, CPU handle) and tether_signal_op on its own PE; the next PE must see message i
//     exactly when signal i + 1 arrives, and nothing before its ring;
//  2. a ring that comes before its arm releases the set at once;
//  3. sync with an armed value not rung yet fails at once (no hang), naming both values; free then keeps the
//     doorbell, and succeeds once rung;
//  4. argument errors: NULL set/word/db, a word outside the symmetric heap, a misaligned word.
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/stream_ops.h"
#include "mp_util.h"
#include "tether/device.cuh"

namespace {

constexpr int kIters = 32;
constexpr size_t kBytes = 512;

unsigned char pattern(int pe, int i, size_t k) { return static_cast<unsigned char>(pe * 29 + i * 11 + k * 5 + 3); }

uint64_t load(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w), next = (me + 1) % n, prev = (me + n - 1) % n;
  MP_CHECK(tether::useStreamOpsForTesting(w, tether::createCpuStreamOps(60)).isOk());

  auto* inbox = static_cast<unsigned char*>(mp::hostZeroed(w, kIters * kBytes));
  auto* sig = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  auto* bell = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  auto* bell2 = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  std::vector<unsigned char> src(kIters * kBytes);
  for (int i = 0; i < kIters; ++i)
    for (size_t k = 0; k < kBytes; ++k) src[i * kBytes + k] = pattern(me, i, k);
  MP_OK(tether_barrier_all(w));

  // 1. Arm everything first, then ring one by one from another thread.
  tether_op_desc_t op{};
  op.kind = TETHER_OP_PUT_SIGNAL;
  op.pe = next;
  op.dest = inbox;
  op.src = src.data();
  op.nbytes = kBytes;
  op.sig_addr = sig;
  op.signal = 1;
  op.sig_op = TETHER_SIGNAL_SET;
  op.flags = TETHER_OP_PATCH_OFFSET | TETHER_OP_PATCH_SIGNAL;
  tether_op_set_t set = nullptr;
  MP_OK(tether_prepare(w, &op, 1, &set));
  tether_doorbell_t db = nullptr;
  MP_OK(tether_doorbell_create(set, bell, &db));
  for (int i = 0; i < kIters; ++i) {
    const tether_post_patch_t patch{static_cast<size_t>(i) * kBytes, static_cast<uint64_t>(i)};
    MP_OK(tether_doorbell_arm(db, static_cast<uint64_t>(i + 1), &patch));
  }
  MP_OK(tether_barrier_all(w));
  // Nothing may have moved: no ring yet (time for a wrong release to show).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  MP_CHECK(load(sig) == 0);
  MP_OK(tether_barrier_all(w));  // every PE looked before any rings
  tether_device_handle_t h;
  MP_OK(tether_device_handle_cpu(w, &h));
  std::thread ringer([&] {  // even rings as a kernel would (the device API, host-compiled), odd ones by the host call
    for (int i = 0; i < kIters; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (i % 2 == 0) tether::device::ring_doorbell(h, bell, static_cast<uint64_t>(i + 1));
      else MP_OK(tether_signal_op(w, bell, static_cast<uint64_t>(i + 1), TETHER_SIGNAL_SET, me));
    }
  });
  // Receive from prev: when signal i + 1 is seen, message i is complete; the signal never runs ahead of the data.
  uint64_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen < static_cast<uint64_t>(kIters)) {
    const uint64_t s = load(sig);
    if (s != seen) {
      MP_CHECK(s > seen && s <= static_cast<uint64_t>(kIters));
      for (uint64_t i = seen; i < s; ++i)
        for (size_t k = 0; k < kBytes; ++k)
          if (inbox[i * kBytes + k] != pattern(prev, static_cast<int>(i), k)) {
            std::fprintf(stderr, "FAIL PE %d: message %" PRIu64 " byte %zu wrong when signal %" PRIu64 " arrived\n",
                         me, i, k, s);
            return 1;
          }
      seen = s;
    }
    MP_CHECK(std::chrono::steady_clock::now() < deadline);
  }
  ringer.join();
  MP_OK(tether_doorbell_sync(db));
  MP_OK(tether_barrier_all(w));

  // 2. Ring before arm: released at once (bell already holds kIters; arm at kIters again for a fresh message).
  __atomic_store_n(sig, 0, __ATOMIC_RELEASE);
  MP_OK(tether_barrier_all(w));
  const tether_post_patch_t first{0, 99};
  MP_OK(tether_doorbell_arm(db, static_cast<uint64_t>(kIters), &first));
  while (load(sig) != 100) MP_CHECK(std::chrono::steady_clock::now() < deadline);
  MP_OK(tether_doorbell_sync(db));
  MP_OK(tether_barrier_all(w));

  // 3. An armed value not rung yet: sync and free fail at once, naming both values; ringing then lets free succeed.
  tether_doorbell_t db2 = nullptr;
  MP_OK(tether_doorbell_create(set, bell2, &db2));
  MP_OK(tether_doorbell_arm(db2, 5, nullptr));
  MP_CHECK(tether_doorbell_sync(db2) == TETHER_ERR_INVALID_ARG);
  MP_CHECK(std::strstr(tether_last_error(), "armed value 5 not rung yet") != nullptr);
  MP_CHECK(std::strstr(tether_last_error(), "holds 0") != nullptr);
  MP_CHECK(tether_doorbell_free(db2) == TETHER_ERR_INVALID_ARG);
  MP_OK(tether_signal_op(w, bell2, 5, TETHER_SIGNAL_SET, me));
  MP_OK(tether_doorbell_free(db2));
  MP_OK(tether_barrier_all(w));

  // 4. Argument errors.
  tether_doorbell_t bad = reinterpret_cast<tether_doorbell_t>(0x1);
  MP_CHECK(tether_doorbell_create(nullptr, bell, &bad) == TETHER_ERR_INVALID_ARG && bad == nullptr);
  MP_CHECK(tether_doorbell_create(set, nullptr, &bad) == TETHER_ERR_INVALID_ARG);
  MP_CHECK(tether_doorbell_create(set, bell, nullptr) == TETHER_ERR_INVALID_ARG);
  uint64_t notSym = 0;
  MP_CHECK(tether_doorbell_create(set, &notSym, &bad) == TETHER_ERR_NOT_SYMMETRIC);
  MP_CHECK(tether_doorbell_create(set, reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(bell) + 4), &bad) ==
           TETHER_ERR_INVALID_ARG);
  MP_CHECK(tether_doorbell_arm(nullptr, 1, nullptr) == TETHER_ERR_INVALID_ARG);
  MP_CHECK(tether_doorbell_sync(nullptr) == TETHER_ERR_INVALID_ARG);
  MP_OK(tether_doorbell_free(nullptr));

  MP_OK(tether_doorbell_free(db));
  MP_OK(tether_op_set_free(set));
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_doorbell: %d PEs, %d rung releases each: ok\n", n, kIters);
  return mp::finish();
}
