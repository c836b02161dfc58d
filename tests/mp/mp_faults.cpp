// Bad input and faults across PEs: each gives a clear error on the PEs concerned, nothing hangs.
// Run with TETHER_TIMEOUT small (the ctest entry sets 2 s) and TETHER_HEAP_MAX small.
#include <cstdint>
#include <cstring>

#include "mp_util.h"

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  void* p = nullptr;
  MP_OK(tether_calloc(w, 64, sizeof(int64_t), &p));
  auto* buf = static_cast<int64_t*>(p);
  int64_t v = 1;

  // Invalid PE.
  MP_EXPECT_STATUS(tether_put(w, buf, &v, sizeof v, n), TETHER_ERR_INVALID_PE);
  MP_MSG_HAS("tether_put");
  MP_EXPECT_STATUS(tether_int64_atomic_add(w, buf, 1, -3), TETHER_ERR_INVALID_PE);
  MP_MSG_HAS("PE -3");

  // Address outside the symmetric heap, and a range running off its end.
  int64_t stackVar = 0;
  MP_EXPECT_STATUS(tether_put(w, &stackVar, &v, sizeof v, (me + 1) % n), TETHER_ERR_NOT_SYMMETRIC);
  MP_MSG_HAS("not inside the symmetric heap");
  MP_EXPECT_STATUS(tether_get(w, &stackVar, buf, 1ull << 40, (me + 1) % n), TETHER_ERR_NOT_SYMMETRIC);

  // Size overflow.
  MP_EXPECT_STATUS(tether_put_elems(w, buf, &v, SIZE_MAX / 4, 8, 0), TETHER_ERR_OVERFLOW);
  MP_MSG_HAS("overflow");

  // Collective allocation with different sizes on different PEs: every PE fails, naming both sizes.
  MP_EXPECT_STATUS(tether_malloc(w, me == 1 ? 2048 : 1024, &p), TETHER_ERR_MISMATCH);
  MP_MSG_HAS("different arguments");
  MP_MSG_HAS(me == 1 ? "size=1024" : "size=2048");
  MP_CHECK(p == nullptr);
  // Allocation after a detected mismatch still works (the state stayed consistent).
  MP_OK(tether_malloc(w, 512, &p));
  MP_OK(tether_free(w, p));

  // One PE frees a bogus pointer while the others free a live block: every PE fails (the others naming PE 0),
  // nobody hangs, and the live block stays allocated on every PE.
  void* live = nullptr;
  MP_OK(tether_malloc(w, 256, &live));
  MP_EXPECT_STATUS(tether_free(w, me == 0 ? static_cast<void*>(&stackVar) : live), TETHER_ERR_NOT_SYMMETRIC);
  if (me != 0) MP_MSG_HAS("PE 0 passed invalid arguments");
  MP_OK(tether_free(w, live));
  // A pointer inside the heap that is not the start of an allocation is refused too.
  MP_EXPECT_STATUS(tether_free(w, buf + 8), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("not the start of a live symmetric allocation");

  // Heap exhaustion (TETHER_HEAP_MAX is 32M in the test): the same clear error on every PE.
  MP_EXPECT_STATUS(tether_malloc(w, 64ull << 20, &p), TETHER_ERR_NO_MEMORY);
  MP_MSG_HAS("TETHER_HEAP_MAX");
  MP_OK(tether_malloc(w, 16ull << 20, &p));  // growth within the limit still works
  std::memset(p, 1, 16ull << 20);
  MP_OK(tether_free(w, p));

  // wait_until that a peer never satisfies: bounded by TETHER_TIMEOUT, message names address, expected and seen.
  MP_OK(tether_barrier_all(w));
  buf[10] = 41;
  MP_EXPECT_STATUS(tether_int64_wait_until(w, &buf[10], TETHER_CMP_EQ, 42), TETHER_ERR_TIMEOUT);
  MP_MSG_HAS("EQ 42");
  MP_MSG_HAS("last seen 41");
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", static_cast<void*>(&buf[10]));
  MP_MSG_HAS(addr);

  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_faults: %d PEs OK\n", n);
  return mp::finish();
}
