// C++ generic overloads with a leading context: shmem_put/get/p/g/put_nbi/get_nbi/iput/iget/put_signal(_nbi) and
// the shmem_atomic_* names, for a few types, through a created context and a SHMEM_TEAM_SHARED context; the forms
// without a context keep working beside them.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "ctx_test.h"

namespace {

constexpr size_t kN = 10;

// The overloads are resolved at compile time: the context ones return what the typed context routines return.
static_assert(std::is_same<decltype(shmem_g(SHMEM_CTX_DEFAULT, static_cast<const short*>(nullptr), 0)), short>::value,
              "shmem_g(ctx, const short*) returns short");
static_assert(std::is_same<decltype(shmem_atomic_fetch(SHMEM_CTX_DEFAULT, static_cast<const double*>(nullptr), 0)),
                           double>::value,
              "shmem_atomic_fetch(ctx, const double*) returns double");

// Team PE of world PE `pe` in the context's team.
int teamPe(shmem_ctx_t ctx, int pe) {
  shmem_team_t team = SHMEM_TEAM_INVALID;
  SCHECK(shmem_ctx_get_team(ctx, &team) == 0, "get_team");
  return shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, team);
}

template <class T>
void rma(shmem_ctx_t ctx, const char* type) {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  const int pe = teamPe(ctx, right);
  T* sym = static_cast<T*>(shmem_calloc(4 * kN, sizeof(T)));
  uint64_t* sig = static_cast<uint64_t*>(shmem_calloc(1, sizeof(uint64_t)));
  SCHECK(sym && sig, "calloc");
  T src[kN], dst[kN];
  for (size_t i = 0; i < kN; ++i) src[i] = static_cast<T>(me * 10 + static_cast<int>(i));
  shmem_put(ctx, sym, src, kN, pe);                                     // [0, kN)
  shmem_put_nbi(ctx, sym + kN, src, kN, pe);                            // [kN, 2kN)
  shmem_iput(ctx, sym + 2 * kN, src, 1, 1, kN, pe);                     // [2kN, 3kN)
  shmem_p(ctx, sym + 3 * kN, static_cast<T>(me + 1), pe);               // [3kN]
  shmem_put_signal(ctx, sym + 3 * kN + 1, src, 2, sig, 1, SHMEM_SIGNAL_ADD, pe);
  shmem_put_signal_nbi(ctx, sym + 3 * kN + 3, src, 2, sig, 1, SHMEM_SIGNAL_ADD, pe);
  shmem_put(sym + 3 * kN + 5, src, 2, right);                           // no context, world PE
  shmem_ctx_quiet(ctx);
  shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 2);
  shmem_barrier_all();
  for (size_t i = 0; i < kN; ++i) {
    const T want = static_cast<T>(left * 10 + static_cast<int>(i));
    SCHECK(sym[i] == want && sym[kN + i] == want && sym[2 * kN + i] == want, "%s put [%zu]", type, i);
  }
  SCHECK(sym[3 * kN] == static_cast<T>(left + 1), "%s p", type);
  SCHECK(sym[3 * kN + 1] == static_cast<T>(left * 10) && sym[3 * kN + 4] == static_cast<T>(left * 10 + 1) &&
             sym[3 * kN + 6] == static_cast<T>(left * 10 + 1),
         "%s put_signal / no-context put", type);
  const T* csym = sym;
  std::memset(static_cast<void*>(dst), 0, sizeof dst);
  shmem_get(ctx, dst, csym, kN, pe);
  for (size_t i = 0; i < kN; ++i) SCHECK(dst[i] == src[i], "%s get [%zu]", type, i);
  std::memset(static_cast<void*>(dst), 0, sizeof dst);
  shmem_get_nbi(ctx, dst, csym + kN, kN, pe);
  shmem_ctx_quiet(ctx);
  for (size_t i = 0; i < kN; ++i) SCHECK(dst[i] == src[i], "%s get_nbi [%zu]", type, i);
  std::memset(static_cast<void*>(dst), 0, sizeof dst);
  shmem_iget(ctx, dst, csym + 2 * kN, 2, 2, kN / 2, pe);
  for (size_t i = 0; i < kN; i += 2) SCHECK(dst[i] == src[i], "%s iget [%zu]", type, i);
  SCHECK(shmem_g(ctx, csym + 3 * kN, pe) == static_cast<T>(me + 1), "%s g", type);
  SCHECK(shmem_g(csym + 3 * kN, right) == static_cast<T>(me + 1), "%s g without context", type);
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(sym);
}

template <class T>
void amo(shmem_ctx_t ctx, const char* type) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int pe0 = teamPe(ctx, 0);
  T* w = static_cast<T*>(shmem_calloc(4, sizeof(T)));
  SCHECK(w, "calloc");
  shmem_atomic_inc(ctx, &w[0], pe0);
  shmem_atomic_add(ctx, &w[0], T(2), pe0);
  (void)shmem_atomic_fetch_inc(ctx, &w[0], pe0);
  (void)shmem_atomic_fetch_add(ctx, &w[0], T(3), pe0);
  T f1 = T(0), f2 = T(0), f3 = T(1);
  shmem_atomic_fetch_inc_nbi(ctx, &f1, &w[0], pe0);
  shmem_atomic_fetch_add_nbi(ctx, &f2, &w[0], T(1), pe0);
  shmem_atomic_compare_swap_nbi(ctx, &f3, &w[1], T(0), T(me + 1), pe0);
  (void)shmem_atomic_compare_swap(ctx, &w[2], T(0), T(me + 1), pe0);
  shmem_atomic_add(&w[3], T(1), 0);  // no context
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  // w[3] is n now; every PE writes n back in four ways
  SCHECK(shmem_atomic_fetch(ctx, &w[3], pe0) == T(n), "%s fetch", type);
  shmem_atomic_set(ctx, &w[3], T(n), pe0);
  SCHECK(shmem_atomic_swap(ctx, &w[3], T(n), pe0) == T(n), "%s swap", type);
  T sf = T(0), ff = T(0);
  shmem_atomic_swap_nbi(ctx, &sf, &w[3], T(n), pe0);
  shmem_ctx_fence(ctx);
  shmem_atomic_fetch_nbi(ctx, &ff, &w[3], pe0);
  shmem_ctx_quiet(ctx);
  SCHECK(sf == T(n) && ff == T(n), "%s swap_nbi / fetch_nbi", type);
  shmem_barrier_all();
  if (me == 0) {
    SCHECK(w[0] == T(9 * n), "%s counter", type);
    SCHECK(w[1] >= T(1) && w[1] <= T(n) && w[2] >= T(1) && w[2] <= T(n), "%s compare_swap", type);
    SCHECK(w[3] == T(n), "%s add without context", type);
  }
  shmem_barrier_all();
  shmem_free(w);
}

template <class T>
void bitwise(shmem_ctx_t ctx, const char* type) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int pe0 = teamPe(ctx, 0);
  T* w = static_cast<T*>(shmem_calloc(3, sizeof(T)));
  SCHECK(w, "calloc");
  const T bit = T(T(1) << me), mask = T((T(1) << n) - 1);
  T f = T(0);
  shmem_atomic_or(ctx, &w[0], bit, pe0);
  (void)shmem_atomic_fetch_or(ctx, &w[0], bit, pe0);
  shmem_atomic_fetch_or_nbi(ctx, &f, &w[0], bit, pe0);
  shmem_atomic_xor(ctx, &w[1], bit, pe0);
  (void)shmem_atomic_fetch_xor(ctx, &w[1], bit, pe0);
  shmem_atomic_fetch_xor_nbi(ctx, &f, &w[1], bit, pe0);
  shmem_atomic_and(ctx, &w[2], T(0), pe0);
  (void)shmem_atomic_fetch_and(ctx, &w[2], T(0), pe0);
  shmem_atomic_fetch_and_nbi(ctx, &f, &w[2], T(0), pe0);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  if (me == 0) SCHECK(w[0] == mask && w[1] == mask && w[2] == T(0), "%s bitwise", type);
  shmem_barrier_all();
  shmem_free(w);
}

void all(shmem_ctx_t ctx) {
  rma<int>(ctx, "int");
  rma<double>(ctx, "double");
  rma<long double>(ctx, "long double");
  rma<unsigned char>(ctx, "unsigned char");
  rma<short>(ctx, "short");
  amo<long>(ctx, "long");
  amo<unsigned long long>(ctx, "unsigned long long");
  amo<int>(ctx, "int");
  bitwise<unsigned int>(ctx, "unsigned int");
  bitwise<int64_t>(ctx, "int64_t");
}

}  // namespace

int main() {
  shmem_init();
  shmem_ctx_t created = SHMEM_CTX_INVALID, shared = SHMEM_CTX_INVALID;
  SCHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &created) == 0, "ctx_create");
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &shared) == 0, "team_create_ctx");
  all(SHMEM_CTX_DEFAULT);
  all(created);
  all(shared);
  shmem_ctx_destroy(shared);
  shmem_ctx_destroy(created);
  if (shmem_my_pe() == 0) std::printf("shmem_ctx_cxx: OK on %d PEs\n", shmem_n_pes());
  shmem_finalize();
  return 0;
}
