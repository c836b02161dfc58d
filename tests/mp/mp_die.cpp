// A PE killed mid-run (argv[1] = "kill": PE 1 SIGKILLs itself while the others are in a barrier loop;
// "exit": PE 1 exits with status 3). tetherrun must stop the others and exit non-zero naming PE 1.
#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "mp_util.h"

int main(int argc, char** argv) {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w);
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
