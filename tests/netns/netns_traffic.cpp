// Traffic between the two "hosts" for the fault tests (tests/netns): every PE puts 64 KiB to its partner on the
// other host (PE (me + n/2) mod n), quiets, gets it back and checks it, then joins a barrier; round after round for
// MP_SECONDS (default 60). A fault injected meanwhile (the veth link set down, a PE killed) must end every PE with a
// clear error within TETHER_TIMEOUT: any failed call prints "PE <me>: <call> failed in round <i>: <error>" and
// exits 2. Prints "traffic running" once the first round completed.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "../mp/mp_util.h"

namespace {

void check(tether_status_t s, int me, const char* call, long round) {
  if (s == TETHER_SUCCESS) return;
  std::fprintf(stderr, "PE %d: %s failed in round %ld: %s\n", me, call, round, tether_last_error());
  std::exit(2);
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  MP_CHECK(n >= 2 && n % 2 == 0);
  const int partner = (me + n / 2) % n;
  const char* secs = std::getenv("MP_SECONDS");
  const double seconds = secs ? std::atof(secs) : 60.0;
  constexpr size_t kBytes = 64 * 1024;
  void* p = nullptr;
  MP_OK(tether_calloc(w, 1, kBytes, &p));
  auto* inbox = static_cast<unsigned char*>(p);
  std::vector<unsigned char> out(kBytes), back(kBytes);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long round = 0;
  for (; std::chrono::steady_clock::now() < end; ++round) {
    for (size_t i = 0; i < kBytes; ++i) out[i] = static_cast<unsigned char>(round * 31 + me * 7 + i);
    check(tether_put(w, inbox, out.data(), kBytes, partner), me, "tether_put", round);
    check(tether_quiet(w), me, "tether_quiet", round);
    check(tether_get(w, back.data(), inbox, kBytes, partner), me, "tether_get", round);
    for (size_t i = 0; i < kBytes; ++i) MP_CHECK(back[i] == out[i]);
    check(tether_barrier_all(w), me, "tether_barrier_all", round);
    if (round == 0 && me == 0) std::printf("traffic running\n");
  }
  std::printf("PE %d: %ld rounds\n", me, round);
  return mp::finish();
}
