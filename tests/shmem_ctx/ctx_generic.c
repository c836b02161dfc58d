/* C11 generic names with and without a leading context: every RMA, signal and AMO generic name, on several types,
 * through SHMEM_CTX_DEFAULT, a created context and a SHMEM_TEAM_SHARED context (handles held in const objects, so the
 * selection sees a qualified lvalue). Also checks
 * that the selection picks the shmem_ctx_ routine exactly when the first argument is a context. */
#include <stdint.h>
#include <string.h>

#include "ctx_test.h"

#if !(defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
#error "this test must be compiled as C11"
#endif

enum { kN = 8 };

/* The routine a generic RMA call selects (the SHMEM_CTX_G_ dispatch of shmem.h), as a function pointer. */
#define SELECTED_RMA(OP, ...) ((void (*)(void))SHMEM_CTX_G_(SHMEM_GPICK1_, SHMEM_RMA_G_, OP, __VA_ARGS__))
#define SELECTED_AMO2(SEL, OP, ...) ((void (*)(void))SHMEM_CTX_G_(SHMEM_GPICK2_, SEL, OP, __VA_ARGS__))

static void checkSelection(const shmem_ctx_t ctx, int* ip, long double* ldp, const short* csp, long* lp, unsigned* up) {
  SCHECK(SELECTED_RMA(put, ip, ip, 1, 0) == (void (*)(void))shmem_int_put, "put(int*)");
  SCHECK(SELECTED_RMA(put, ctx, ip, ip, 1, 0) == (void (*)(void))shmem_ctx_int_put, "put(ctx, int*)");
  SCHECK(SELECTED_RMA(g, ldp, 0) == (void (*)(void))shmem_longdouble_g, "g(long double*)");
  SCHECK(SELECTED_RMA(g, ctx, ldp, 0) == (void (*)(void))shmem_ctx_longdouble_g, "g(ctx, long double*)");
  SCHECK(SELECTED_RMA(g, csp, 0) == (void (*)(void))shmem_short_g, "g(const short*)");
  SCHECK(SELECTED_RMA(g, ctx, csp, 0) == (void (*)(void))shmem_ctx_short_g, "g(ctx, const short*)");
  SCHECK(SELECTED_RMA(p, SHMEM_CTX_DEFAULT, ip, 1, 0) == (void (*)(void))shmem_ctx_int_p, "p(DEFAULT, int*)");
  SCHECK(SELECTED_AMO2(SHMEM_AMO_GSTD_, atomic_fetch_add_nbi, lp, lp, 1L, 0) ==
             (void (*)(void))shmem_long_atomic_fetch_add_nbi,
         "fetch_add_nbi(long*)");
  SCHECK(SELECTED_AMO2(SHMEM_AMO_GSTD_, atomic_fetch_add_nbi, ctx, lp, lp, 1L, 0) ==
             (void (*)(void))shmem_ctx_long_atomic_fetch_add_nbi,
         "fetch_add_nbi(ctx, long*)");
  SCHECK(SELECTED_AMO2(SHMEM_AMO_GBIT_, atomic_fetch_xor_nbi, ctx, up, up, 1u, 0) ==
             (void (*)(void))shmem_ctx_uint_atomic_fetch_xor_nbi,
         "fetch_xor_nbi(ctx, unsigned*)");
}

/* RMA generic names on one context (or none: ctx == NULL) for int, double, long double, short, char. */
static void testRma(const shmem_ctx_t ctx, const char* name) {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  int* si = (int*)shmem_calloc(kN, sizeof(int));
  double* sd = (double*)shmem_calloc(kN, sizeof(double));
  long double* sld = (long double*)shmem_calloc(kN, sizeof(long double));
  short* ss = (short*)shmem_calloc(kN, sizeof(short));
  char* sc = (char*)shmem_calloc(kN, sizeof(char));
  uint64_t* sig = (uint64_t*)shmem_calloc(1, sizeof(uint64_t));
  SCHECK(si && sd && sld && ss && sc && sig, "%s: calloc", name);
  int li[kN];
  double ld[kN];
  long double lld[kN];
  short ls[kN];
  char lc[kN];
  for (int i = 0; i < kN; ++i) {
    li[i] = me * 100 + i;
    ld[i] = me + i * 0.5;
    lld[i] = me + i * 0.25L;
    ls[i] = (short)(me * 10 + i);
    lc[i] = (char)('a' + me + i);
  }
  /* the team PE of `right` in the context's team (no context: world) */
  shmem_team_t team = SHMEM_TEAM_WORLD;
  if (ctx) SCHECK(shmem_ctx_get_team(ctx, &team) == 0, "%s: get_team", name);
  const int pe = shmem_team_translate_pe(SHMEM_TEAM_WORLD, right, team);

  if (ctx) {
    shmem_put(ctx, si, li, kN, pe);
    shmem_put_nbi(ctx, sd, ld, kN, pe);
    shmem_iput(ctx, sld, lld, 1, 1, kN, pe);
    shmem_p(ctx, &ss[3], ls[3], pe);
    shmem_put_signal(ctx, sc, lc, kN, sig, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_put_signal_nbi(ctx, sc, lc, kN, sig, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_ctx_quiet(ctx);
  } else {
    shmem_put(si, li, kN, pe);
    shmem_put_nbi(sd, ld, kN, pe);
    shmem_iput(sld, lld, 1, 1, kN, pe);
    shmem_p(&ss[3], ls[3], pe);
    shmem_put_signal(sc, lc, kN, sig, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_put_signal_nbi(sc, lc, kN, sig, 1, SHMEM_SIGNAL_ADD, pe);
    shmem_quiet();
  }
  shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 2);
  shmem_barrier_all();
  for (int i = 0; i < kN; ++i) {
    SCHECK(si[i] == left * 100 + i, "%s: put int [%d]", name, i);
    SCHECK(sd[i] == left + i * 0.5, "%s: put_nbi double [%d]", name, i);
    SCHECK(sld[i] == left + i * 0.25L, "%s: iput long double [%d]", name, i);
    SCHECK(sc[i] == (char)('a' + left + i), "%s: put_signal char [%d]", name, i);
  }
  SCHECK(ss[3] == (short)(left * 10 + 3) && ss[2] == 0, "%s: p short", name);

  /* gets, into arrays (the controlling expression decays) and through const source pointers */
  int gi[kN];
  double gd[kN];
  long double gld[kN];
  char gc[kN];
  const short* css = ss;
  memset(gi, 0, sizeof gi);
  memset(gd, 0, sizeof gd);
  memset(gld, 0, sizeof gld);
  memset(gc, 0, sizeof gc);
  short gs;
  if (ctx) {
    shmem_get(ctx, gi, si, kN, pe);
    shmem_get_nbi(ctx, gd, sd, kN, pe);
    shmem_iget(ctx, gld, sld, 2, 2, kN / 2, pe);
    shmem_get(ctx, gc, sc, kN, pe);
    gs = shmem_g(ctx, css + 3, pe);
    shmem_ctx_quiet(ctx);
  } else {
    shmem_get(gi, si, kN, pe);
    shmem_get_nbi(gd, sd, kN, pe);
    shmem_iget(gld, sld, 2, 2, kN / 2, pe);
    shmem_get(gc, sc, kN, pe);
    gs = shmem_g(css + 3, pe);
    shmem_quiet();
  }
  for (int i = 0; i < kN; ++i) {
    SCHECK(gi[i] == li[i] && gd[i] == ld[i] && gc[i] == lc[i], "%s: get [%d]", name, i);
    SCHECK(gld[i] == (i % 2 == 0 ? lld[i] : 0.0L), "%s: iget [%d]", name, i);
  }
  SCHECK(gs == ls[3], "%s: g short", name);
  shmem_barrier_all();
  shmem_free(sig);
  shmem_free(sc);
  shmem_free(ss);
  shmem_free(sld);
  shmem_free(sd);
  shmem_free(si);
}

/* AMO generic names with a context; the same without one when ctx is NULL. */
static void testAmo(const shmem_ctx_t ctx, const char* name) {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
  long* l = (long*)shmem_calloc(4, sizeof(long));
  unsigned long long* u = (unsigned long long*)shmem_calloc(4, sizeof(unsigned long long));
  double* d = (double*)shmem_calloc(2, sizeof(double));
  int32_t* i32 = (int32_t*)shmem_calloc(2, sizeof(int32_t));
  SCHECK(l && u && d && i32, "%s: calloc", name);
  shmem_team_t team = SHMEM_TEAM_WORLD;
  if (ctx) SCHECK(shmem_ctx_get_team(ctx, &team) == 0, "%s: get_team", name);
  const int t0 = shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, team);
  const int tr = shmem_team_translate_pe(SHMEM_TEAM_WORLD, right, team);
  long fl = -1, fl2 = -1, fl3 = -1;
  unsigned long long fu = 0, fu2 = 0, fu3 = 0;
  int32_t f32 = -1;
  double fd = -1, fd2 = -1;
  const long bit = 1L << me;

  if (ctx) {
    /* counters on PE 0: l[0] += 1 + 2 + 1 + 3 + 1 + 1 per PE */
    shmem_atomic_inc(ctx, &l[0], t0);
    shmem_atomic_add(ctx, &l[0], 2L, t0);
    (void)shmem_atomic_fetch_inc(ctx, &l[0], t0);
    (void)shmem_atomic_fetch_add(ctx, &l[0], 3L, t0);
    shmem_atomic_fetch_inc_nbi(ctx, &fl, &l[0], t0);
    shmem_atomic_fetch_add_nbi(ctx, &fl2, &l[0], 1L, t0);
    /* l[1]: one compare_swap winner; l[2]: one compare_swap_nbi winner */
    if (shmem_atomic_compare_swap(ctx, &l[1], 0L, (long)me + 1, t0) == 0) shmem_atomic_inc(ctx, &l[3], t0);
    shmem_atomic_compare_swap_nbi(ctx, &fl3, &l[2], 0L, (long)me + 1, t0);
    /* bitwise on PE 0 */
    shmem_atomic_or(ctx, &u[0], (unsigned long long)bit, t0);
    fu = shmem_atomic_fetch_or(ctx, &u[1], (unsigned long long)bit, t0);
    shmem_atomic_fetch_or_nbi(ctx, &fu2, &u[2], (unsigned long long)bit, t0);
    shmem_atomic_xor(ctx, &u[3], (unsigned long long)bit, t0);
    (void)shmem_atomic_fetch_xor(ctx, &u[3], (unsigned long long)bit, t0);
    shmem_atomic_fetch_xor_nbi(ctx, &fu3, &u[3], (unsigned long long)bit, t0);
    shmem_atomic_and(ctx, &i32[0], (int32_t)0, t0);
    (void)shmem_atomic_fetch_and(ctx, &i32[0], (int32_t)-1, t0);
    shmem_atomic_fetch_and_nbi(ctx, &f32, &i32[1], (int32_t)-1, t0);
    /* extended on the right neighbour's d[0] (one writer each) */
    shmem_atomic_set(ctx, &d[0], 1.5 + me, tr);
    fd = shmem_atomic_fetch(ctx, &d[0], tr);
    (void)fd;
    shmem_ctx_quiet(ctx);
    SCHECK(shmem_atomic_swap(ctx, &d[0], 2.5 + me, tr) == 1.5 + me, "%s: swap", name);
    shmem_atomic_swap_nbi(ctx, &fd2, &d[0], 3.5 + me, tr);
    shmem_ctx_fence(ctx);
    shmem_atomic_fetch_nbi(ctx, &fd, &d[0], tr);
    shmem_ctx_quiet(ctx);
  } else {
    shmem_atomic_inc(&l[0], t0);
    shmem_atomic_add(&l[0], 2L, t0);
    (void)shmem_atomic_fetch_inc(&l[0], t0);
    (void)shmem_atomic_fetch_add(&l[0], 3L, t0);
    shmem_atomic_fetch_inc_nbi(&fl, &l[0], t0);
    shmem_atomic_fetch_add_nbi(&fl2, &l[0], 1L, t0);
    if (shmem_atomic_compare_swap(&l[1], 0L, (long)me + 1, t0) == 0) shmem_atomic_inc(&l[3], t0);
    shmem_atomic_compare_swap_nbi(&fl3, &l[2], 0L, (long)me + 1, t0);
    shmem_atomic_or(&u[0], (unsigned long long)bit, t0);
    fu = shmem_atomic_fetch_or(&u[1], (unsigned long long)bit, t0);
    shmem_atomic_fetch_or_nbi(&fu2, &u[2], (unsigned long long)bit, t0);
    shmem_atomic_xor(&u[3], (unsigned long long)bit, t0);
    (void)shmem_atomic_fetch_xor(&u[3], (unsigned long long)bit, t0);
    shmem_atomic_fetch_xor_nbi(&fu3, &u[3], (unsigned long long)bit, t0);
    shmem_atomic_and(&i32[0], (int32_t)0, t0);
    (void)shmem_atomic_fetch_and(&i32[0], (int32_t)-1, t0);
    shmem_atomic_fetch_and_nbi(&f32, &i32[1], (int32_t)-1, t0);
    shmem_atomic_set(&d[0], 1.5 + me, tr);
    fd = shmem_atomic_fetch(&d[0], tr);
    (void)fd;
    shmem_quiet();
    SCHECK(shmem_atomic_swap(&d[0], 2.5 + me, tr) == 1.5 + me, "%s: swap", name);
    shmem_atomic_swap_nbi(&fd2, &d[0], 3.5 + me, tr);
    shmem_fence();
    shmem_atomic_fetch_nbi(&fd, &d[0], tr);
    shmem_quiet();
  }
  const unsigned long long ubit = (unsigned long long)bit;
  SCHECK(fl >= 0 && fl2 >= 0 && fl != fl2 && (fu & ubit) == 0 && (fu2 & ubit) == 0, "%s: fetched values", name);
  SCHECK((fu3 & ubit) == 0 && f32 == 0, "%s: fetched bitwise values", name);
  SCHECK(fd2 == 2.5 + me && fd == 3.5 + me, "%s: swap_nbi / fetch_nbi", name);
  shmem_barrier_all();
  if (me == 0) {
    const unsigned long long mask = (1ULL << n) - 1;
    SCHECK(l[0] == 9L * n, "%s: counter %ld", name, l[0]);
    SCHECK(l[3] == 1 && l[1] >= 1 && l[1] <= n && l[2] >= 1 && l[2] <= n, "%s: compare_swap", name);
    SCHECK(u[0] == mask && u[1] == mask && u[2] == mask && u[3] == mask, "%s: or / xor", name);
    SCHECK(i32[0] == 0 && i32[1] == 0, "%s: and", name);
  }
  shmem_barrier_all();
  shmem_free(i32);
  shmem_free(d);
  shmem_free(u);
  shmem_free(l);
}

int main(void) {
  shmem_init();
  shmem_ctx_t created = SHMEM_CTX_INVALID, shared = SHMEM_CTX_INVALID;
  SCHECK(shmem_ctx_create(SHMEM_CTX_NOSTORE, &created) == 0, "ctx_create");
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &shared) == 0, "team_create_ctx");

  int i = 0;
  long double ld = 0;
  short s = 0;
  long l = 0;
  unsigned u = 0;
  checkSelection(created, &i, &ld, &s, &l, &u);
  
  testRma(NULL, "no context");
  testRma(SHMEM_CTX_DEFAULT, "SHMEM_CTX_DEFAULT");
  testRma(created, "created");
  testRma(shared, "SHMEM_TEAM_SHARED context");
  testAmo(NULL, "no context");
  testAmo(SHMEM_CTX_DEFAULT, "SHMEM_CTX_DEFAULT");
  testAmo(created, "created");
  testAmo(shared, "SHMEM_TEAM_SHARED context");

  shmem_ctx_destroy(shared);
  shmem_ctx_destroy(created);
  if (shmem_my_pe() == 0) printf("shmem_ctx_generic: OK on %d PEs\n", shmem_n_pes());
  shmem_finalize();
  return 0;
}
