// STATIC segment through the C API: the program's own globals made symmetric (tether_register_program_data), RMA,
// atomics, signals and waits on them, tether_ptr, contents kept across registration, and the argument errors of
// tether_register_static (unaligned, empty, second registration).
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "mp_util.h"

namespace {
int64_t g_initialised[64] = {11, 22, 33};  // .data: the values must survive registration
uint64_t g_zero[1 << 18];                   // .bss, 2 MiB
uint64_t g_signal;
alignas(4096) char g_page[2 * 4096];        // for the argument checks
}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int right = (me + 1) % n, left = (me - 1 + n) % n;
  const std::vector<bool> sameHost = mp::sameHost(w);
  g_initialised[3] = 1000 + me;  // written before registration: kept

  // Not symmetric yet.
  MP_EXPECT_STATUS(tether_put(w, &g_zero[0], &g_initialised[0], 8, right), TETHER_ERR_NOT_SYMMETRIC);
  MP_CHECK(tether_ptr(w, &g_zero[0], right) == nullptr);

  MP_OK(tether_register_program_data(w));
  MP_CHECK(g_initialised[0] == 11 && g_initialised[2] == 33 && g_initialised[3] == 1000 + me);
  MP_CHECK(tether_segment_kind(w, &g_zero[5]) == TETHER_SEG_HOST);
  MP_CHECK(tether_ptr(w, &g_zero[0], me) != nullptr);
  // NULL to a PE reached over the network.
  MP_CHECK((tether_ptr(w, &g_zero[0], right) != nullptr) == mp::expectMapped(sameHost, right));

  // A second range, or a bad one, is refused on every PE with a clear message.
  MP_EXPECT_STATUS(tether_register_static(w, g_page, sizeof g_page), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("already has a STATIC segment");

  // RMA: bulk put into the right neighbour's .bss, read back with get; the neighbour checks its own copy.
  std::vector<uint64_t> src(1 << 18);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (static_cast<uint64_t>(me) << 32) | i;
  MP_OK(tether_put(w, g_zero, src.data(), sizeof g_zero, right));
  MP_OK(tether_barrier_all(w));
  for (size_t i = 0; i < src.size(); i += 997) MP_CHECK(g_zero[i] == ((static_cast<uint64_t>(left) << 32) | i));
  int64_t theirs = 0;
  MP_OK(tether_get(w, &theirs, &g_initialised[3], sizeof theirs, left));
  MP_CHECK(theirs == 1000 + left);

  // Direct stores through tether_ptr.
  auto* peer = static_cast<int64_t*>(tether_ptr(w, &g_initialised[10], right));
  MP_CHECK((peer != nullptr) == mp::expectMapped(sameHost, right));
  const int64_t mark = 5000 + me;
  if (peer)
    *peer = mark;
  else
    MP_OK(tether_put(w, &g_initialised[10], &mark, sizeof mark, right));
  MP_OK(tether_barrier_all(w));
  MP_CHECK(g_initialised[10] == 5000 + left);

  // Atomics from every PE on PE 0's global; signal + wait on a global.
  int64_t one = 1;
  MP_OK(tether_atomic(w, TETHER_AMO_ADD, TETHER_INT64, &g_initialised[20], &one, nullptr, nullptr, 0));
  MP_OK(tether_barrier_all(w));
  if (me == 0) MP_CHECK(g_initialised[20] == n);
  MP_OK(tether_put_signal(w, &g_initialised[30], &one, sizeof one, &g_signal, 1, TETHER_SIGNAL_ADD, right));
  uint64_t seen = 0;
  MP_OK(tether_signal_wait_until(w, &g_signal, TETHER_CMP_GE, 1, &seen));
  MP_CHECK(g_initialised[30] == 1);

  // Static variables are not heap allocations.
  MP_EXPECT_STATUS(tether_free(w, &g_initialised[0]), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("static or global variable");
  return mp::finish();
}
