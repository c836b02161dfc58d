// A PE killed mid-run. argv[1] = "kill": PE 1 SIGKILLs itself while the others are in a barrier loop; "exit": PE 1
// exits with status 3 there -- tetherrun must stop the others and exit non-zero naming PE 1. "coll": the last PE
// SIGKILLs itself from a second thread 300-700 ms in (from the run's seed: the death lands anywhere in a call) while
// every PE loops the data collectives that go by host across the netns hosts (allreduce, rooted reduce to the first
// and to the last PE, broadcast, allgather; core/collectives.h "By host") -- a PE whose call fails prints
// "PE <me>: collective failed: <message>" and stays alive TETHER_TIMEOUT + 3 s before exiting 2, so that each PE a
// launcher does not stop can say how it failed: it must fail (never hang, never pass) within TETHER_TIMEOUT.
// "stall <barrier|sync|coll>": a barrier's failure passed on (core/sync_failure.h). The PE in the middle (npes / 2:
// the second netns host's first member) stops calling after 20 rounds of tether_barrier_all, tether_team_sync or a
// small allreduce (each with a barrier by host) and exits 4 after 8 s; PE 0 runs with TETHER_TIMEOUT=5 (set before
// init), the others with the test's longer one. PE 0's wait between hosts times out first; PE 0 then prints its error
// and exits 2 after 3 s, which makes its launcher stop its host's other PEs -- so they print "PE <me>: <call> failed:"
// with the failure PE 0 passed on, or nothing (waiting out their own timeout when it is not passed on).
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

int stallLoop(tether_t w, int me, int npes, const char* what) {
  const tether_team_t world = tether_team_world(w);
  auto* src = static_cast<long*>(mp::hostZeroed(w, 64 * sizeof(long)));
  auto* dst = static_cast<long*>(mp::hostZeroed(w, 64 * sizeof(long)));
  const bool barrier = std::strcmp(what, "barrier") == 0, sync = std::strcmp(what, "sync") == 0;
  for (int i = 0; i < 1000000; ++i) {
    if (me == npes / 2 && i == 20) {
      std::printf("PE %d: stops calling %s\n", me, what);
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::seconds(8));
      return 4;
    }
    const tether_status_t s = barrier ? tether_barrier_all(w)
                              : sync  ? tether_team_sync(world)
                                      : tether_team_allreduce(world, dst, src, 64, TETHER_LONG, TETHER_RED_SUM);
    if (s != TETHER_SUCCESS) {
      std::printf("PE %d: %s failed: %s\n", me, what, tether_last_error());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::seconds(me == 0 ? 3 : 60));
      return 2;
    }
  }
  return mp::finish();
}

}  // namespace

int main(int argc, char** argv) {
  const bool stall = argc > 2 && std::strcmp(argv[1], "stall") == 0;
  const char* rank = std::getenv("TETHER_RANK");
  if (stall && rank && std::strcmp(rank, "0") == 0) setenv("TETHER_TIMEOUT", "5", 1);
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w);
  if (argc > 1 && std::strcmp(argv[1], "coll") == 0) return collLoop(w, me, tether_n_pes(w));
  if (stall) return stallLoop(w, me, tether_n_pes(w), argv[2]);
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
