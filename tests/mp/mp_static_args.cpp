// tether_register_static argument errors, reported on every PE (the call is collective): an unaligned range, and
// different sizes on different PEs.
#include <unistd.h>

#include "mp_util.h"

namespace {
alignas(4096) char g_pages[4 * 4096];
}

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w);
  MP_EXPECT_STATUS(tether_register_static(w, g_pages + (me == 0 ? 1 : 0), 4096), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_register_static(w, nullptr, 0), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_register_static(w, g_pages, me == 0 ? 8192 : 4096), TETHER_ERR_MISMATCH);
  MP_MSG_HAS("size=");
  // After the refused attempts a good one still works.
  g_pages[5] = 7;
  MP_OK(tether_register_static(w, g_pages, sizeof g_pages));
  MP_CHECK(g_pages[5] == 7);
  char v = static_cast<char>(40 + me);
  MP_OK(tether_put(w, &g_pages[100], &v, 1, (me + 1) % tether_n_pes(w)));
  MP_OK(tether_barrier_all(w));
  MP_CHECK(g_pages[100] == static_cast<char>(40 + (me - 1 + tether_n_pes(w)) % tether_n_pes(w)));
  return mp::finish();
}
