// Context forms of the RMA routines (C++): shmem_ctx_<T>_put/get/p/g/put_nbi/get_nbi/iput/iget/put_signal(_nbi) for
// every standard RMA type, the sized forms shmem_ctx_put<N>... and the mem forms, each on the default context,
// created contexts (no options, every option) and team contexts (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED). Targets,
// counts and offsets are random (seed printed; CTX_SEED reruns one), the same on every PE; PE arguments are team PE
// numbers of the context's team.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "ctx_test.h"

namespace {

constexpr size_t kN = 60;  // elements per symmetric array; divisible by 2 and 3 (strided cases)

// An element of `Bytes` bytes (sized and mem forms).
template <size_t Bytes>
struct Elem {
  unsigned char b[Bytes];
};

// Value of element i written by team PE `id` in step `salt`.
template <typename T>
T val(int id, size_t i, int salt) {
  return static_cast<T>((id * 31 + static_cast<int>(i) * 7 + salt * 5) % 100 + 1);
}
// Arithmetic types by value (long double has padding bytes), elements by bytes.
template <typename T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_arithmetic<T>::value) return a == b;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}
#define ELEM_VAL_(B)                                                                                               \
  template <>                                                                                                      \
  Elem<B> val<Elem<B>>(int id, size_t i, int salt) {                                                               \
    Elem<B> e;                                                                                                     \
    for (size_t k = 0; k < (B); ++k) e.b[k] = static_cast<unsigned char>(id * 13 + i * 5 + k * 3 + salt);          \
    return e;                                                                                                      \
  }
ELEM_VAL_(1)
ELEM_VAL_(2)
ELEM_VAL_(4)
ELEM_VAL_(8)
ELEM_VAL_(16)
#undef ELEM_VAL_

// The context routines for elements of type T (p and g are null for the sized and mem forms).
template <typename T>
struct Ops {
  void (*put)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*get)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*put_nbi)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*get_nbi)(shmem_ctx_t, T*, const T*, size_t, int);
  void (*iput)(shmem_ctx_t, T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*iget)(shmem_ctx_t, T*, const T*, ptrdiff_t, ptrdiff_t, size_t, int);
  void (*put_signal)(shmem_ctx_t, T*, const T*, size_t, uint64_t*, uint64_t, int, int);
  void (*put_signal_nbi)(shmem_ctx_t, T*, const T*, size_t, uint64_t*, uint64_t, int, int);
  void (*p)(shmem_ctx_t, T*, T, int);
  T (*g)(shmem_ctx_t, const T*, int);
};

struct Rng {
  std::mt19937 gen;
  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(gen); }
};

// One round of every routine of `ops` on context c. All PEs draw the same random numbers, so they agree on the
// shift (target = team PE + shift), counts and offsets.
template <typename T>
void testOps(const char* type, const Ops<T>& ops, const CtxTestCase& c, Rng& rng, T* sym, uint64_t* sig) {
  const int n = shmem_team_n_pes(c.team), me = shmem_team_my_pe(c.team);
  const int shift = n > 1 ? 1 + static_cast<int>(rng.below(static_cast<size_t>(n - 1))) : 0;
  const int right = ctxTestRight(&c, shift), left = ctxTestLeft(&c, shift);
  const size_t off = rng.below(kN / 2), cnt = 1 + rng.below(kN - off);
  std::vector<T> src(kN), dst(kN);
  const char* cn = c.name;

  // put / get
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i, 1);
  ops.put(c.ctx, sym + off, src.data(), cnt, right);
  shmem_barrier_all();
  for (size_t i = 0; i < cnt; ++i) SCHECK(same(sym[off + i], val<T>(left, i, 1)), "%s %s put [%zu]", cn, type, i);
  ops.get(c.ctx, dst.data(), sym + off, cnt, right);
  for (size_t i = 0; i < cnt; ++i) SCHECK(same(dst[i], src[i]), "%s %s get [%zu]", cn, type, i);
  shmem_barrier_all();

  // p / g
  if (ops.p) {
    const size_t k = rng.below(kN);
    ops.p(c.ctx, &sym[k], val<T>(me, k, 2), right);
    shmem_barrier_all();
    SCHECK(same(sym[k], val<T>(left, k, 2)), "%s %s p", cn, type);
    SCHECK(same(ops.g(c.ctx, &sym[k], right), val<T>(me, k, 2)), "%s %s g", cn, type);
    shmem_barrier_all();
  }

  // put_nbi / get_nbi, completed by shmem_ctx_quiet on the same context
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i, 3);
  ops.put_nbi(c.ctx, sym + off, src.data(), cnt, right);
  shmem_ctx_quiet(c.ctx);
  shmem_barrier_all();
  for (size_t i = 0; i < cnt; ++i)
    SCHECK(same(sym[off + i], val<T>(left, i, 3)), "%s %s put_nbi [%zu]", cn, type, i);
  std::memset(static_cast<void*>(dst.data()), 0, kN * sizeof(T));
  ops.get_nbi(c.ctx, dst.data(), sym + off, cnt, right);
  shmem_ctx_quiet(c.ctx);
  for (size_t i = 0; i < cnt; ++i) SCHECK(same(dst[i], src[i]), "%s %s get_nbi [%zu]", cn, type, i);
  shmem_barrier_all();

  // iput: dest stride 2, source stride 3; iget back with dest stride 3, source stride 2
  std::memset(static_cast<void*>(sym), 0, kN * sizeof(T));
  shmem_barrier_all();
  const size_t ni = 1 + rng.below(kN / 3);
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i, 4);
  ops.iput(c.ctx, sym, src.data(), 2, 3, ni, right);
  shmem_barrier_all();
  const T zero{};
  for (size_t i = 0; i < kN; ++i) {
    const T want = (i % 2 == 0 && i / 2 < ni) ? val<T>(left, (i / 2) * 3, 4) : zero;
    SCHECK(same(sym[i], want), "%s %s iput [%zu]", cn, type, i);
  }
  std::memset(static_cast<void*>(dst.data()), 0, kN * sizeof(T));
  ops.iget(c.ctx, dst.data(), sym, 3, 2, ni, right);
  for (size_t i = 0; i < ni; ++i) SCHECK(same(dst[3 * i], val<T>(me, 3 * i, 4)), "%s %s iget [%zu]", cn, type, i);
  shmem_barrier_all();

  // put_signal (SET) then put_signal_nbi (ADD): the target sees the data once it sees the signal
  *sig = 0;
  shmem_barrier_all();
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i, 5);
  ops.put_signal(c.ctx, sym + off, src.data(), cnt, sig, 7, SHMEM_SIGNAL_SET, right);
  shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 7);
  for (size_t i = 0; i < cnt; ++i)
    SCHECK(same(sym[off + i], val<T>(left, i, 5)), "%s %s put_signal [%zu]", cn, type, i);
  shmem_barrier_all();
  for (size_t i = 0; i < kN; ++i) src[i] = val<T>(me, i, 6);
  ops.put_signal_nbi(c.ctx, sym, src.data(), kN, sig, 3, SHMEM_SIGNAL_ADD, right);
  shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 10);
  for (size_t i = 0; i < kN; ++i) SCHECK(same(sym[i], val<T>(left, i, 6)), "%s %s put_signal_nbi [%zu]", cn, type, i);
  shmem_ctx_quiet(c.ctx);
  shmem_barrier_all();
}

template <typename T>
void testAllContexts(const char* type, const Ops<T>& ops, CtxTestCase* cases, Rng& rng) {
  T* sym = static_cast<T*>(shmem_calloc(kN, sizeof(T)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  SCHECK(sym && sig, "%s: calloc", type);
  for (int i = 0; i < CTX_TEST_N; ++i) testOps<T>(type, ops, cases[i], rng, sym, sig);
  shmem_free(sig);
  shmem_free(sym);
}

}  // namespace

int main() {
  shmem_init();
  const unsigned seed = ctxTestSeed("shmem_ctx_rma");
  Rng rng{std::mt19937(seed)};
  CtxTestCase cases[CTX_TEST_N];
  ctxTestOpen(cases);

#define TYPED(NAME, T)                                                                                             \
  testAllContexts<T>(#NAME,                                                                                        \
                     Ops<T>{shmem_ctx_##NAME##_put, shmem_ctx_##NAME##_get, shmem_ctx_##NAME##_put_nbi,            \
                            shmem_ctx_##NAME##_get_nbi, shmem_ctx_##NAME##_iput, shmem_ctx_##NAME##_iget,          \
                            shmem_ctx_##NAME##_put_signal, shmem_ctx_##NAME##_put_signal_nbi, shmem_ctx_##NAME##_p, \
                            shmem_ctx_##NAME##_g},                                                                 \
                     cases, rng);
  SHMEM_RMA_TYPES_(TYPED)
#undef TYPED

  // Sized forms: the void* routines behind typed pointers to elements of their size.
#define SIZED(BITS)                                                                                                \
  {                                                                                                                \
    using E = Elem<(BITS) / 8>;                                                                                    \
    Ops<E> ops{};                                                                                                  \
    ops.put = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) { shmem_ctx_put##BITS(c, d, s, n, pe); };      \
    ops.get = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) { shmem_ctx_get##BITS(c, d, s, n, pe); };      \
    ops.put_nbi = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) {                                          \
      shmem_ctx_put##BITS##_nbi(c, d, s, n, pe);                                                                   \
    };                                                                                                             \
    ops.get_nbi = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) {                                          \
      shmem_ctx_get##BITS##_nbi(c, d, s, n, pe);                                                                   \
    };                                                                                                             \
    ops.iput = [](shmem_ctx_t c, E* d, const E* s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) {                 \
      shmem_ctx_iput##BITS(c, d, s, ds, ss, n, pe);                                                                \
    };                                                                                                             \
    ops.iget = [](shmem_ctx_t c, E* d, const E* s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) {                 \
      shmem_ctx_iget##BITS(c, d, s, ds, ss, n, pe);                                                                \
    };                                                                                                             \
    ops.put_signal = [](shmem_ctx_t c, E* d, const E* s, size_t n, uint64_t* sa, uint64_t sv, int so, int pe) {    \
      shmem_ctx_put##BITS##_signal(c, d, s, n, sa, sv, so, pe);                                                    \
    };                                                                                                             \
    ops.put_signal_nbi = [](shmem_ctx_t c, E* d, const E* s, size_t n, uint64_t* sa, uint64_t sv, int so,          \
                            int pe) { shmem_ctx_put##BITS##_signal_nbi(c, d, s, n, sa, sv, so, pe); };             \
    testAllContexts<E>("put" #BITS, ops, cases, rng);                                                              \
  }
  SIZED(8)
  SIZED(16)
  SIZED(32)
  SIZED(64)
  SIZED(128)
#undef SIZED

  // Mem forms: bytes; there are no strided mem routines, so iput/iget use the 8-bit ones.
  {
    using E = Elem<1>;
    Ops<E> ops{};
    ops.put = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) { shmem_ctx_putmem(c, d, s, n, pe); };
    ops.get = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) { shmem_ctx_getmem(c, d, s, n, pe); };
    ops.put_nbi = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) { shmem_ctx_putmem_nbi(c, d, s, n, pe); };
    ops.get_nbi = [](shmem_ctx_t c, E* d, const E* s, size_t n, int pe) { shmem_ctx_getmem_nbi(c, d, s, n, pe); };
    ops.iput = [](shmem_ctx_t c, E* d, const E* s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) {
      shmem_ctx_iput8(c, d, s, ds, ss, n, pe);
    };
    ops.iget = [](shmem_ctx_t c, E* d, const E* s, ptrdiff_t ds, ptrdiff_t ss, size_t n, int pe) {
      shmem_ctx_iget8(c, d, s, ds, ss, n, pe);
    };
    ops.put_signal = [](shmem_ctx_t c, E* d, const E* s, size_t n, uint64_t* sa, uint64_t sv, int so, int pe) {
      shmem_ctx_putmem_signal(c, d, s, n, sa, sv, so, pe);
    };
    ops.put_signal_nbi = [](shmem_ctx_t c, E* d, const E* s, size_t n, uint64_t* sa, uint64_t sv, int so, int pe) {
      shmem_ctx_putmem_signal_nbi(c, d, s, n, sa, sv, so, pe);
    };
    testAllContexts<E>("mem", ops, cases, rng);
  }

  ctxTestClose(cases);
  if (shmem_my_pe() == 0) std::printf("shmem_ctx_rma: OK on %d PEs\n", shmem_n_pes());
  shmem_finalize();
  return 0;
}
