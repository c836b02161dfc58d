// Re-initialisation in one process: tether_init -> work -> tether_finalize, several rounds (issue 24 §3). Under
// tetherrun, PE 0 serves every round's rendezvous on the socket tetherrun passed it (TETHER_BOOTSTRAP_FD); under a
// fixed TETHER_BOOTSTRAP_ADDR it listens on that address again. Each round allocates, puts around the ring and checks
// what arrived; one round has PE 0 arrive late at its init, the next has the other PEs arrive late.
#include <unistd.h>

#include <cstdio>

#include "mp_util.h"

int main() {
  mp::lineBufferedOutput();
  constexpr int kRounds = 3;
  int n = 0, me = -1;  // from the previous round
  for (int round = 0; round < kRounds; ++round) {
    tether_t w = nullptr;
    if ((round == 1 && me == 0) || (round == 2 && me > 0)) usleep(300 * 1000);  // the others wait in the rendezvous
    if (tether_init(&w) != TETHER_SUCCESS) {
      std::fprintf(stderr, "FAIL: round %d: tether_init: %s\n", round, tether_last_error());
      return 1;
    }
    mp::world() = w;
    me = tether_my_pe(w);
    n = tether_n_pes(w);
    auto* x = static_cast<long*>(mp::hostZeroed(w, 2 * sizeof(long)));
    MP_OK(tether_barrier_all(w));  // every PE zeroed its copy before anyone puts
    MP_OK(tether_long_p(w, &x[1], 1000L * round + me, (me + 1) % n));
    MP_OK(tether_barrier_all(w));
    const long want = 1000L * round + (me + n - 1) % n;
    if (x[1] != want) {
      std::fprintf(stderr, "FAIL: PE %d round %d: got %ld from PE %d, expected %ld\n", me, round, x[1],
                   (me + n - 1) % n, want);
      return 1;
    }
    MP_OK(tether_free(w, x));
    if (tether_finalize(w) != TETHER_SUCCESS) {
      std::fprintf(stderr, "FAIL: PE %d round %d: tether_finalize: %s\n", me, round, tether_last_error());
      return 1;
    }
    mp::world() = nullptr;
    if (me == 0) std::printf("round %d of %d: %d PEs re-initialised, ring exchange checked\n", round + 1, kRounds, n);
  }
  return 0;
}
