// A collective that fails part-way loses collective state on every PE, and every PE then reports the same failure
// (issue 24 §3). PE 0 calls tether_free (a collective exchange) while the other PEs sit in tether_barrier_all: each
// side times out (TETHER_TIMEOUT=5 in the ctest entry). Then, on every PE: a later barrier and a later allocation fail
// at once with the first error's code and "collective state lost"; one-sided calls still work; tether_finalize
// returns the same code with "collective state lost" at once, and releases everything (no hang, no leak).
// Before, PE 0's later barrier paired with the others' failed one and succeeded, and finalize succeeded on one PE
// while it timed out on the other.
#include <chrono>
#include <cstdio>

#include "mp_util.h"

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The call failed at once (well within TETHER_TIMEOUT) with code and a message naming call and the loss.
void expectLost(tether_status_t s, double seconds, const char* call) {
  if (s != TETHER_ERR_TIMEOUT) mp::fail(__FILE__, __LINE__, call, tether_status_string(s));
  if (seconds > 1.0) mp::fail(__FILE__, __LINE__, call, "did not fail at once");
  MP_MSG_HAS(call);
  MP_MSG_HAS("collective state lost");
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w);
  const int n = tether_n_pes(w);
  auto* buf = static_cast<long*>(mp::hostZeroed(w, 64));
  auto* failed = static_cast<long*>(mp::hostZeroed(w, sizeof(long)));  // set by PE 0 once its call has failed
  MP_OK(tether_barrier_all(w));

  // The failing collective: PE 0 and the others in different collective calls.
  auto t0 = std::chrono::steady_clock::now();
  tether_status_t s = me == 0 ? tether_free(w, buf) : tether_barrier_all(w);
  if (s != TETHER_ERR_TIMEOUT) mp::fail(__FILE__, __LINE__, "first collective", tether_status_string(s));
  MP_MSG_HAS(me == 0 ? "tether_free" : "tether_barrier_all");
  std::printf("PE %d: first collective failed after %.1f s: %s\n", me, secondsSince(t0), tether_last_error());
  // No PE may exit before PE 0's exchange has timed out too: its peers' closed connections would end it early with
  // TETHER_ERR_PEER_LOST. One-sided calls still work after the loss: PE 0 tells everyone it is through.
  if (me == 0)
    for (int pe = 0; pe < n; ++pe) MP_OK(tether_long_p(w, failed, 1, pe));
  else
    MP_OK(tether_long_wait_until(w, failed, TETHER_CMP_EQ, 1));

  t0 = std::chrono::steady_clock::now();
  s = tether_barrier_all(w);
  expectLost(s, secondsSince(t0), "tether_barrier_all");
  void* p = nullptr;
  t0 = std::chrono::steady_clock::now();
  s = tether_malloc(w, 128, &p);
  expectLost(s, secondsSince(t0), "tether_malloc");
  MP_CHECK(p == nullptr);

  // One-sided operations are not collective: they still work.
  long v = 42, got = 0;
  MP_OK(tether_put(w, &buf[1], &v, sizeof v, me));
  MP_OK(tether_get(w, &got, &buf[1], sizeof got, me));
  MP_CHECK(got == 42);

  t0 = std::chrono::steady_clock::now();
  s = tether_finalize(w);
  expectLost(s, secondsSince(t0), "tether_finalize");
  std::printf("PE %d: tether_finalize: %s: %s\n", me, tether_status_string(s), tether_last_error());
  mp::world() = nullptr;
  MP_CHECK(tether_finalize(w) == TETHER_ERR_INVALID_ARG);  // the handle is gone, whatever finalize returned
  return 0;
}
