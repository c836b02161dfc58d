// A PE killed mid-run. argv[1] = "kill": PE 1 SIGKILLs itself while the others are in a barrier loop; "exit": PE 1
// exits with status 3 there -- tetherrun must stop the others and exit non-zero naming PE 1. "coll": the last PE
// SIGKILLs itself from a second thread 300-700 ms in (from the run's seed: the death lands anywhere in a call) while
// every PE loops the data collectives that go by host across the netns hosts (allreduce, rooted reduce to the first
// and to the last PE, broadcast, allgather; core/collectives.h "By host") -- a PE whose call fails prints
// "PE <me>: collective failed: <message>" and stays alive TETHER_TIMEOUT + 3 s before exiting 2, so that each PE a
// launcher does not stop can say how it failed: it must fail (never hang, never pass) within TETHER_TIMEOUT.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "mp_util.h"

namespace {

int collLoop(tether_t w, int me, int npes) {
  const uint64_t seed = mp::agreeSeed(w, "mp_die coll");
  constexpr size_t kCount = 1000;  // 8000 bytes of long: over the one-shot sizes, under the by-host scratch
  auto* src = static_cast<long*>(mp::hostZeroed(w, kCount * sizeof(long) * static_cast<size_t>(npes)));
  auto* dst = static_cast<long*>(mp::hostZeroed(w, kCount * sizeof(long) * static_cast<size_t>(npes)));
  if (me == npes - 1)
    std::thread([seed] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300 + static_cast<int>(seed % 400)));
      raise(SIGKILL);
    }).detach();
  const tether_team_t world = tether_team_world(w);
  for (int i = 0; i < 1000000; ++i) {
    tether_status_t s = TETHER_SUCCESS;
    switch (i % 5) {
      case 0: s = tether_team_allreduce(world, dst, src, kCount, TETHER_LONG, TETHER_RED_SUM); break;
      case 1: s = tether_team_reduce(world, dst, src, kCount, TETHER_LONG, TETHER_RED_SUM, 0); break;
      case 2: s = tether_team_reduce(world, dst, src, kCount, TETHER_LONG, TETHER_RED_MAX, npes - 1); break;
      case 3: s = tether_team_broadcast(world, dst, src, kCount, TETHER_LONG, 0); break;
      default: s = tether_team_allgather(world, dst, src, kCount / static_cast<size_t>(npes), TETHER_LONG); break;
    }
    if (s != TETHER_SUCCESS) {
      std::printf("PE %d: collective failed: %s\n", me, tether_last_error());
      std::fflush(stdout);
      const char* t = std::getenv("TETHER_TIMEOUT");
      std::this_thread::sleep_for(std::chrono::seconds((t ? std::atoi(t) : 30) + 3));
      return 2;
    }
  }
  return mp::finish();
}

}  // namespace

int main(int argc, char** argv) {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w);
  if (argc > 1 && std::strcmp(argv[1], "coll") == 0) return collLoop(w, me, tether_n_pes(w));
  const bool kill = argc > 1 && std::strcmp(argv[1], "kill") == 0;
  for (int i = 0; i < 1000000; ++i) {
    if (me == 1 && i == 50) {
      if (kill) raise(SIGKILL);
      std::_Exit(3);
    }
    if (tether_barrier_all(w) != TETHER_SUCCESS) {
      std::fprintf(stderr, "PE %d: barrier failed: %s\n", me, tether_last_error());
      return 2;
    }
  }
  return mp::finish();
}
