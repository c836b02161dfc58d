// A PE killed mid-run while its peers keep using it, each group of PEs under its own tetherrun (so no launcher stops
// the survivors: tether itself must notice). PE 1 SIGKILLs itself at round 50 of a put + barrier loop; every other
// PE must get a failed call (not hang) and prints "PE <me>: failed: <message>" and exits 2. ucx_peer_lost.sh checks
// the messages name PE 1 and the time stays within TETHER_TIMEOUT.
#include <signal.h>

#include <cstdint>
#include <cstdio>

#include "mp_util.h"

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  auto* box = static_cast<int64_t*>(mp::hostZeroed(w, 64));
  for (int64_t i = 0; i < 1000000; ++i) {
    if (me == 1 && i == 50) raise(SIGKILL);
    tether_status_t s = tether_put(w, box, &i, sizeof i, (me + 1) % n);
    if (s == TETHER_SUCCESS) s = tether_barrier_all(w);
    if (s != TETHER_SUCCESS) {
      std::printf("PE %d: failed: %s\n", me, tether_last_error());
      return 2;
    }
  }
  std::printf("PE %d: no failure seen\n", me);
  return 1;
}
