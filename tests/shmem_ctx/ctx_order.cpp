// Ordering with contexts (C++): shmem_ctx_fence orders a context's put before its flag update; shmem_ctx_quiet
// completes a context's non-blocking puts and gets (so a flag sent afterwards on another context finds the data);
// shmem_ctx_destroy completes the context's operations; put_signal_nbi on a team context. Random sizes and targets
// per round (seed printed; CTX_SEED reruns one). The receiver checks the data as soon as it sees the flag.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ctx_test.h"

namespace {

constexpr size_t kMaxBytes = 256 * 1024;
constexpr int kRounds = 12;

unsigned char pattern(int id, int round, int step, size_t i) {
  return static_cast<unsigned char>(id * 37 + round * 11 + step * 101 + i * 7 + (i >> 9));
}

void checkData(const unsigned char* data, size_t nbytes, int from, int round, int step, const char* what) {
  for (size_t i = 0; i < nbytes; ++i)
    if (data[i] != pattern(from, round, step, i))
      SCHECK(false, "%s: round %d byte %zu of %zu is %u, expected %u", what, round, i, nbytes, data[i],
             pattern(from, round, step, i));
}

// One delivery: this PE puts nbytes of its pattern for (round, step) to world PE `right` with putmem_nbi on
// dataCtx, runs `order` (the fence / quiet / destroy under test), then sets flags[step] = round + 1 on `right`
// through flagCtx; it waits for its own flag and checks the data from `left` at once.
template <class Order>
void deliver(const char* what, int round, int step, shmem_ctx_t dataCtx, Order order, shmem_ctx_t flagCtx,
             unsigned char* data, uint64_t* flags, std::vector<unsigned char>& src, size_t nbytes, int right,
             int left) {
  const uint64_t tag = static_cast<uint64_t>(round) + 1;
  for (size_t i = 0; i < nbytes; ++i) src[i] = pattern(shmem_my_pe(), round, step, i);
  shmem_ctx_putmem_nbi(dataCtx, data, src.data(), nbytes, right);
  order();
  shmem_ctx_uint64_atomic_set(flagCtx, &flags[step], tag, right);
  shmem_uint64_wait_until(&flags[step], SHMEM_CMP_EQ, tag);
  checkData(data, nbytes, left, round, step, what);
}

}  // namespace

int main() {
  shmem_init();
  std::mt19937 rng(ctxTestSeed("shmem_ctx_order"));
  const int n = shmem_n_pes(), me = shmem_my_pe();
  auto* data = static_cast<unsigned char*>(shmem_malloc(kMaxBytes));
  auto* flags = static_cast<uint64_t*>(shmem_calloc(8, sizeof(uint64_t)));  // one per step
  SCHECK(data && flags, "alloc");
  std::vector<unsigned char> src(kMaxBytes), back(kMaxBytes);
  shmem_ctx_t a = SHMEM_CTX_INVALID, b = SHMEM_CTX_INVALID, shared = SHMEM_CTX_INVALID;
  SCHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &a) == 0 && shmem_ctx_create(0, &b) == 0, "ctx_create");
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &shared) == 0, "team_create_ctx");
  // Team PE numbers in the shared context (all PEs share this host, but translate as a program must).
  const int nShared = shmem_team_n_pes(SHMEM_TEAM_SHARED), meShared = shmem_team_my_pe(SHMEM_TEAM_SHARED);

  for (int r = 0; r < kRounds; ++r) {
    const int shift = n > 1 ? 1 + std::uniform_int_distribution<int>(0, n - 2)(rng) : 0;
    const int right = (me + shift) % n, left = (me + n - shift) % n;
    const size_t nbytes = 1 + std::uniform_int_distribution<size_t>(0, kMaxBytes - 1)(rng);
    const uint64_t tag = static_cast<uint64_t>(r) + 1;

    // 1. ctx_fence orders the put before the flag on the same context
    deliver("fence", r, 1, a, [&] { shmem_ctx_fence(a); }, a, data, flags, src, nbytes, right, left);
    shmem_barrier_all();

    // 2. ctx_quiet(a) completes the put before a flag on another context
    deliver("quiet", r, 2, a, [&] { shmem_ctx_quiet(a); }, b, data, flags, src, nbytes, right, left);
    // get_nbi on b; ctx_quiet(b): the data is here
    std::memset(back.data(), 0, nbytes);
    shmem_ctx_getmem_nbi(b, back.data(), data, nbytes, right);
    shmem_ctx_quiet(b);
    checkData(back.data(), nbytes, me, r, 2, "get_nbi + quiet");
    shmem_barrier_all();

    // 3. destroying a fresh context completes its put (implicit quiet); flag on the default context
    shmem_ctx_t c = SHMEM_CTX_INVALID;
    SCHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &c) == 0, "ctx_create round %d", r);
    deliver("destroy", r, 3, c, [&] { shmem_ctx_destroy(c); }, SHMEM_CTX_DEFAULT, data, flags, src, nbytes, right,
            left);
    shmem_barrier_all();

    // 4. put_signal_nbi on the shared-team context, team PE numbers; completed by ctx_quiet
    const int rightShared = (meShared + shift) % nShared;
    const int leftShared = (meShared + nShared - shift % nShared) % nShared;
    for (size_t i = 0; i < nbytes; ++i) src[i] = pattern(meShared, r, 4, i);
    shmem_ctx_putmem_signal_nbi(shared, data, src.data(), nbytes, &flags[4], tag, SHMEM_SIGNAL_SET, rightShared);
    shmem_ctx_quiet(shared);
    shmem_signal_wait_until(&flags[4], SHMEM_CMP_EQ, tag);
    checkData(data, nbytes, leftShared, r, 4, "team put_signal_nbi");
    shmem_barrier_all();

    // 5. documented behaviour: quiet on one context completes the PE's operations on every context (tether's
    // quiet is per instance)
    deliver("quiet on another context", r, 5, a, [&] { shmem_ctx_quiet(b); }, b, data, flags, src, nbytes, right,
            left);
    shmem_barrier_all();
  }

  shmem_ctx_destroy(shared);
  shmem_ctx_destroy(b);
  shmem_ctx_destroy(a);
  shmem_free(flags);
  shmem_free(data);
  if (me == 0) std::printf("shmem_ctx_order: OK on %d PEs\n", n);
  shmem_finalize();
  return 0;
}
