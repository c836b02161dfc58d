// Context forms of the AMOs (C++): every shmem_ctx_<T>_atomic_* routine (standard, extended, bitwise, and the
// non-blocking fetching forms) for every type of its table, on every test context (default, created, team). The
// target team PE is random (seed printed; CTX_SEED reruns one), the same on every PE; contention comes from all PEs
// working on the target's words at once.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "ctx_test.h"

namespace {

constexpr int kIters = 16;

template <class T>
struct StandardOps {
  T (*compare_swap)(shmem_ctx_t, T*, T, T, int);
  T (*fetch_inc)(shmem_ctx_t, T*, int);
  void (*inc)(shmem_ctx_t, T*, int);
  T (*fetch_add)(shmem_ctx_t, T*, T, int);
  void (*add)(shmem_ctx_t, T*, T, int);
  void (*compare_swap_nbi)(shmem_ctx_t, T*, T*, T, T, int);
  void (*fetch_inc_nbi)(shmem_ctx_t, T*, T*, int);
  void (*fetch_add_nbi)(shmem_ctx_t, T*, T*, T, int);
};
template <class T>
struct ExtendedOps {
  T (*fetch)(shmem_ctx_t, const T*, int);
  void (*set)(shmem_ctx_t, T*, T, int);
  T (*swap)(shmem_ctx_t, T*, T, int);
  void (*fetch_nbi)(shmem_ctx_t, T*, const T*, int);
  void (*swap_nbi)(shmem_ctx_t, T*, T*, T, int);
};
template <class T>
struct BitwiseOps {
  T (*fetch_and)(shmem_ctx_t, T*, T, int);
  void (*and_)(shmem_ctx_t, T*, T, int);
  void (*fetch_and_nbi)(shmem_ctx_t, T*, T*, T, int);
  T (*fetch_or)(shmem_ctx_t, T*, T, int);
  void (*or_)(shmem_ctx_t, T*, T, int);
  void (*fetch_or_nbi)(shmem_ctx_t, T*, T*, T, int);
  T (*fetch_xor)(shmem_ctx_t, T*, T, int);
  void (*xor_)(shmem_ctx_t, T*, T, int);
  void (*fetch_xor_nbi)(shmem_ctx_t, T*, T*, T, int);
};

// Per-type symmetric words, zeroed (collective).
template <class T>
struct Words {
  T* w;
  long long* total;
  Words() : w(static_cast<T*>(shmem_calloc(8, sizeof(T)))), total(static_cast<long long*>(shmem_calloc(1, 8))) {
    SCHECK(w && total, "calloc");
  }
  ~Words() {
    shmem_free(total);
    shmem_free(w);
  }
  void reset() {
    shmem_barrier_all();
    std::memset(static_cast<void*>(w), 0, 8 * sizeof(T));
    *total = 0;
    shmem_barrier_all();
  }
};

int randomPe(std::mt19937& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

template <class T>
void testStandard(const char* type, const StandardOps<T>& o, const CtxTestCase& c, std::mt19937& rng) {
  Words<T> s;
  const int n = shmem_team_n_pes(c.team), me = shmem_team_my_pe(c.team), t = randomPe(rng, n);
  T* w = s.w;
  s.reset();
  // w[0]: every PE adds 7 per iteration with the four updating routines
  for (int i = 0; i < kIters; ++i) {
    o.inc(c.ctx, &w[0], t);
    o.add(c.ctx, &w[0], T(2), t);
    const T before = o.fetch_inc(c.ctx, &w[0], t);
    const T after = o.fetch_add(c.ctx, &w[0], T(3), t);
    SCHECK(after != before, "%s %s: fetch_add saw the value before our fetch_inc", c.name, type);
  }
  // w[1]: exactly one PE wins 0 -> me+1 (counted in w[2]); w[3] the same with the nbi form (counted in w[4])
  if (o.compare_swap(c.ctx, &w[1], T(0), T(me + 1), t) == T(0)) o.inc(c.ctx, &w[2], t);
  T won = T(1);
  o.compare_swap_nbi(c.ctx, &won, &w[3], T(0), T(me + 1), t);
  // w[5]: fetched values of the nbi fetch_inc / fetch_add are exactly 0 .. 2*kIters*n - 1 over all PEs
  T fetched[2 * kIters];
  for (int i = 0; i < kIters; ++i) {
    o.fetch_inc_nbi(c.ctx, &fetched[2 * i], &w[5], t);
    o.fetch_add_nbi(c.ctx, &fetched[2 * i + 1], &w[5], T(1), t);
  }
  shmem_ctx_quiet(c.ctx);
  if (won == T(0)) o.inc(c.ctx, &w[4], t);
  long long sum = 0;
  for (T f : fetched) sum += static_cast<long long>(f);
  shmem_longlong_atomic_add(s.total, sum, shmem_team_translate_pe(c.team, t, SHMEM_TEAM_WORLD));
  shmem_barrier_all();
  if (me == t) {
    const long long m = 2LL * kIters * n;
    SCHECK(w[0] == T(7 * kIters * n), "%s %s: counter", c.name, type);
    SCHECK(w[2] == T(1) && w[1] >= T(1) && w[1] <= T(n), "%s %s: compare_swap winner", c.name, type);
    SCHECK(w[4] == T(1) && w[3] >= T(1) && w[3] <= T(n), "%s %s: compare_swap_nbi winner", c.name, type);
    SCHECK(w[5] == T(m) && *s.total == m * (m - 1) / 2, "%s %s: nbi fetches", c.name, type);
  }
  // a failing compare_swap returns the word and leaves it alone
  const T cur = o.compare_swap(c.ctx, &w[1], T(n + 5), T(99), t);
  SCHECK(cur >= T(1) && cur <= T(n), "%s %s: failing compare_swap", c.name, type);
  shmem_barrier_all();
}

template <class T>
void testExtended(const char* type, const ExtendedOps<T>& o, const CtxTestCase& c, std::mt19937& rng) {
  Words<T> s;
  const int n = shmem_team_n_pes(c.team), me = shmem_team_my_pe(c.team);
  const int shift = n > 1 ? 1 + randomPe(rng, n - 1) : 0;
  const int right = ctxTestRight(&c, shift), left = ctxTestLeft(&c, shift);
  T* w = s.w;
  s.reset();
  o.set(c.ctx, &w[0], T(me + 10), right);
  shmem_barrier_all();
  SCHECK(w[0] == T(left + 10), "%s %s: set", c.name, type);
  SCHECK(o.fetch(c.ctx, &w[0], right) == T(me + 10), "%s %s: fetch", c.name, type);
  shmem_barrier_all();
  SCHECK(o.swap(c.ctx, &w[0], T(me + 20), right) == T(me + 10), "%s %s: swap", c.name, type);
  shmem_barrier_all();
  SCHECK(w[0] == T(left + 20), "%s %s: swapped in", c.name, type);
  T got[2] = {T(0), T(0)};
  o.fetch_nbi(c.ctx, &got[0], &w[0], right);
  shmem_ctx_quiet(c.ctx);
  SCHECK(got[0] == T(me + 20), "%s %s: fetch_nbi", c.name, type);
  shmem_barrier_all();
  o.swap_nbi(c.ctx, &got[1], &w[0], T(me + 30), right);
  shmem_ctx_quiet(c.ctx);
  SCHECK(got[1] == T(me + 20), "%s %s: swap_nbi", c.name, type);
  shmem_barrier_all();
  SCHECK(w[0] == T(left + 30), "%s %s: swap_nbi swapped in", c.name, type);
  shmem_barrier_all();
}

template <class T>
void testBitwise(const char* type, const BitwiseOps<T>& o, const CtxTestCase& c, std::mt19937& rng) {
  Words<T> s;
  const int n = shmem_team_n_pes(c.team), me = shmem_team_my_pe(c.team), t = randomPe(rng, n);
  const T bit = T(T(1) << me);
  T mask = T(0);
  for (int pe = 0; pe < n; ++pe) mask = T(mask | T(T(1) << pe));
  T* w = s.w;
  s.reset();
  T f = T(0);
  o.or_(c.ctx, &w[0], bit, t);
  SCHECK((o.fetch_or(c.ctx, &w[1], bit, t) & bit) == T(0), "%s %s: fetch_or", c.name, type);
  o.fetch_or_nbi(c.ctx, &f, &w[2], bit, t);
  shmem_ctx_quiet(c.ctx);
  SCHECK((f & bit) == T(0), "%s %s: fetch_or_nbi", c.name, type);
  shmem_barrier_all();
  if (me == t) SCHECK(w[0] == mask && w[1] == mask && w[2] == mask, "%s %s: or", c.name, type);
  shmem_barrier_all();
  o.and_(c.ctx, &w[0], T(~bit), t);
  SCHECK((o.fetch_and(c.ctx, &w[1], T(~bit), t) & bit) == bit, "%s %s: fetch_and", c.name, type);
  o.fetch_and_nbi(c.ctx, &f, &w[2], T(~bit), t);
  shmem_ctx_quiet(c.ctx);
  SCHECK((f & bit) == bit, "%s %s: fetch_and_nbi", c.name, type);
  o.xor_(c.ctx, &w[3], bit, t);
  SCHECK((o.fetch_xor(c.ctx, &w[3], bit, t) & bit) == bit, "%s %s: fetch_xor", c.name, type);
  o.fetch_xor_nbi(c.ctx, &f, &w[4], bit, t);
  shmem_ctx_quiet(c.ctx);
  SCHECK((f & bit) == T(0), "%s %s: fetch_xor_nbi", c.name, type);
  shmem_barrier_all();
  if (me == t)
    SCHECK(w[0] == T(0) && w[1] == T(0) && w[2] == T(0) && w[3] == T(0) && w[4] == mask, "%s %s: and/xor", c.name,
           type);
  shmem_barrier_all();
}

}  // namespace

int main() {
  shmem_init();
  SCHECK(shmem_n_pes() <= 16, "bitwise masks need at most 16 PEs");
  std::mt19937 rng(ctxTestSeed("shmem_ctx_amo"));
  CtxTestCase cases[CTX_TEST_N];
  ctxTestOpen(cases);

#define STANDARD(NAME, T)                                                                                          \
  for (const CtxTestCase& c : cases)                                                                               \
    testStandard<T>(#NAME,                                                                                         \
                    StandardOps<T>{shmem_ctx_##NAME##_atomic_compare_swap, shmem_ctx_##NAME##_atomic_fetch_inc,    \
                                   shmem_ctx_##NAME##_atomic_inc, shmem_ctx_##NAME##_atomic_fetch_add,             \
                                   shmem_ctx_##NAME##_atomic_add, shmem_ctx_##NAME##_atomic_compare_swap_nbi,      \
                                   shmem_ctx_##NAME##_atomic_fetch_inc_nbi,                                        \
                                   shmem_ctx_##NAME##_atomic_fetch_add_nbi},                                       \
                    c, rng);
#define EXTENDED(NAME, T)                                                                                          \
  for (const CtxTestCase& c : cases)                                                                               \
    testExtended<T>(#NAME,                                                                                         \
                    ExtendedOps<T>{shmem_ctx_##NAME##_atomic_fetch, shmem_ctx_##NAME##_atomic_set,                 \
                                   shmem_ctx_##NAME##_atomic_swap, shmem_ctx_##NAME##_atomic_fetch_nbi,            \
                                   shmem_ctx_##NAME##_atomic_swap_nbi},                                            \
                    c, rng);
#define BITWISE(NAME, T)                                                                                           \
  for (const CtxTestCase& c : cases)                                                                               \
    testBitwise<T>(#NAME,                                                                                          \
                   BitwiseOps<T>{shmem_ctx_##NAME##_atomic_fetch_and, shmem_ctx_##NAME##_atomic_and,               \
                                 shmem_ctx_##NAME##_atomic_fetch_and_nbi, shmem_ctx_##NAME##_atomic_fetch_or,      \
                                 shmem_ctx_##NAME##_atomic_or, shmem_ctx_##NAME##_atomic_fetch_or_nbi,             \
                                 shmem_ctx_##NAME##_atomic_fetch_xor, shmem_ctx_##NAME##_atomic_xor,               \
                                 shmem_ctx_##NAME##_atomic_fetch_xor_nbi},                                         \
                   c, rng);
  SHMEM_AMO_STANDARD_TYPES_(STANDARD)
  SHMEM_AMO_EXTENDED_TYPES_(EXTENDED)
  SHMEM_AMO_BITWISE_TYPES_(BITWISE)
#undef STANDARD
#undef EXTENDED
#undef BITWISE

  ctxTestClose(cases);
  if (shmem_my_pe() == 0) std::printf("shmem_ctx_amo: OK on %d PEs\n", shmem_n_pes());
  shmem_finalize();
  return 0;
}
