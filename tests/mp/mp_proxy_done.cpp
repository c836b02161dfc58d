// What the proxy ring's `done` promises (tether.h: every ticket below done is complete, its effects visible to every
// PE), checked where it can be observed: by a THIRD PE that learns of the completion through another path. PE 0 (a CPU
// handle; PE 1 reached through the ring: TETHER_FORCE_PROXY=1, or the UCX provider) writes a round's pattern into PE
// 1's buffer, then tells PE 2 -- with a host signal (tether_signal_op, not the ring) after
//   blocking: dev::putmem (returns when done covers it), or
//   nbi:      kWords dev::p of 8-byte words plus one dev::putmem_nbi, then dev::quiet (waits for done);
// or through the ring itself with
//   ordered:  dev::putmem_nbi to PE 1, then dev::signal_op to PE 2 with no quiet (a signal takes effect after every
//             descriptor posted before it, device.cuh).
// PE 2 waits for the signal and reads PE 1's buffer with tether_get: every byte must be the round's. Over UCX (TCP) a
// proxy that published done before the writes were remotely complete (an nbi put still in PE 0's send queue) fails
// here: PE 2's get reaches PE 1 first. Needs 3 PEs or more; PEs above 2 take part in the barriers only.
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "mp_util.h"
#include "tether/device.cuh"

namespace dev = tether::device;

namespace {

constexpr size_t kBytes = 8 << 20;  // PE 1's buffer (large: it is still in flight when a proxy publishes too early)
constexpr size_t kWords = 256;      // dev::p words at the start of the buffer (nbi mode)
constexpr int kRounds = 12;

unsigned char pattern(int round, size_t i) { return static_cast<unsigned char>(round * 37 + i * 13 + (i >> 12)); }

enum Mode { kBlocking, kNbi, kOrdered, kModes };
const char* const kModeNames[] = {"blocking", "nbi", "ordered"};

void produce(tether_t w, const dev::Handle& h, Mode mode, int round, unsigned char* data, uint64_t* sig,
             std::vector<unsigned char>& src) {
  for (size_t i = 0; i < kBytes; ++i) src[i] = pattern(round, i);
  const uint64_t value = static_cast<uint64_t>(round) + 1;
  switch (mode) {
    case kBlocking:
      dev::putmem(h, data, src.data(), kBytes, 1);
      break;
    case kNbi:
      for (size_t i = 0; i < kWords; ++i) {
        uint64_t v;
        std::memcpy(&v, &src[i * 8], 8);
        dev::p(h, reinterpret_cast<uint64_t*>(data) + i, v, 1);
      }
      dev::putmem_nbi(h, data + kWords * 8, src.data() + kWords * 8, kBytes - kWords * 8, 1);
      dev::quiet(h);
      break;
    case kOrdered:
      dev::putmem_nbi(h, data, src.data(), kBytes, 1);
      dev::signal_op(h, sig, value, dev::SignalOp::Set, 2);
      dev::quiet(h);  // the source may change in the next round
      return;
    case kModes: break;
  }
  MP_OK(tether_signal_op(w, sig, value, TETHER_SIGNAL_SET, 2));  // not through the ring
}

void check(tether_t w, Mode mode, int round, unsigned char* data, uint64_t* sig, std::vector<unsigned char>& got) {
  MP_OK(tether_signal_wait_until(w, sig, TETHER_CMP_EQ, static_cast<uint64_t>(round) + 1, nullptr));
  MP_OK(tether_get(w, got.data(), data, kBytes, 1));
  for (size_t i = 0; i < kBytes; ++i)
    if (got[i] != pattern(round, i)) {
      std::fprintf(stderr, "FAIL PE 2: %s round %d: PE 1's byte %zu is 0x%02x, expected 0x%02x: PE 0's writes "
                   "were not complete at PE 1 when the signal came\n", kModeNames[mode], round, i, got[i],
                   pattern(round, i));
      std::exit(1);
    }
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  if (n < 3) {
    std::fprintf(stderr, "FAIL: mp_proxy_done needs 3 PEs or more (a producer, a target, an observer)\n");
    return 1;
  }
  unsigned char* data = static_cast<unsigned char*>(mp::hostZeroed(w, kBytes));
  uint64_t* sig = static_cast<uint64_t*>(mp::hostZeroed(w, 64));
  tether_device_handle_t h;
  MP_OK(tether_device_handle_cpu(w, &h));  // after the allocations
  if (me == 0) MP_CHECK((h.flags & TETHER_DEVICE_PROXY) && h.proxy_ring && !dev::ptr(h, data, 1));
  MP_OK(tether_barrier_all(w));
  std::vector<unsigned char> buf(kBytes);
  for (int m = 0; m < kModes; ++m) {
    for (int round = 0; round < kRounds; ++round) {
      if (me == 0) produce(w, h, static_cast<Mode>(m), round, data, sig, buf);
      if (me == 2) check(w, static_cast<Mode>(m), round, data, sig, buf);
      // PE 1 stays out of tether for a while (its progress thread serves it): over TCP, writes PE 0's proxy did not
      // complete are then still queued at PE 0 when PE 2's get arrives.
      if (me == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      MP_OK(tether_barrier_all(w));
      if (me == 2) *sig = 0;  // the next round's value differs anyway; reset for the next mode
      MP_OK(tether_barrier_all(w));
    }
    if (me == 0) std::printf("mp_proxy_done: %s: %d rounds of %zu bytes observed complete by PE 2\n", kModeNames[m],
                             kRounds, kBytes);
  }
  MP_OK(tether_barrier_all(w));
  return mp::finish();
}
