// A PE that computes outside tether is still reachable over the network: PEs 1.. spin for COMPUTE_S seconds without a
// tether call while PE 0 does a blocking put and a get to each of them. Over UCX/TCP those complete only when the
// target's worker progresses, which only the provider's progress thread (TETHER_UCX_PROGRESS_US) does while the target
// computes; so PE 0 must be done well before the targets return to tether. With TETHER_UCX_PROGRESS_US=0 this fails
// (PE 0 finishes only after COMPUTE_S). Registered for the ucx path only (the shm path needs no progress).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mp_util.h"

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  constexpr double kComputeS = 3.0, kMustFinishS = 1.5;
  void* p = nullptr;
  MP_OK(tether_calloc(w, 64, sizeof(uint64_t), &p));
  auto* buf = static_cast<uint64_t*>(p);
  std::vector<uint64_t> out(64), in(64);
  for (size_t i = 0; i < out.size(); ++i) out[i] = 0xab00 + i;
  // One warm round so endpoints and keys exist before the timed part.
  for (int pe = 0; pe < n; ++pe)
    if (pe != me) MP_OK(tether_get(w, in.data(), buf, sizeof(uint64_t), pe));
  MP_OK(tether_barrier_all(w));
  using clk = std::chrono::steady_clock;
  const auto start = clk::now();
  auto seconds = [&] { return std::chrono::duration<double>(clk::now() - start).count(); };
  if (me == 0) {
    for (int pe = 1; pe < n; ++pe) {
      MP_OK(tether_put(w, buf, out.data(), out.size() * sizeof(uint64_t), pe));
      MP_OK(tether_get(w, in.data(), buf, in.size() * sizeof(uint64_t), pe));
      MP_CHECK(in == out);
    }
    const double took = seconds();
    std::printf("PE 0: put + get to %d computing PE(s) done after %.3f s (they compute for %.1f s)\n", n - 1, took,
                kComputeS);
    MP_CHECK(took < kMustFinishS);
  } else {
    volatile uint64_t sink = 0;
    while (seconds() < kComputeS) sink = sink + 1;  // no tether call
  }
  MP_OK(tether_barrier_all(w));
  return mp::finish();
}
