/* OpenSHMEM 1.5 collectives through the C11 generic names (shmem_broadcast, shmem_collect, shmem_fcollect,
 * shmem_alltoall, shmem_alltoalls, shmem_and/or/xor/max/min/sum/prod_reduce), compiled as C11: each selects the
 * typed routine from the type dest points to (complex types included). */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>

#include "../shmem/shmem_check.h"

int main(void) {
  int i, m;
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  shmem_team_t t = SHMEM_TEAM_WORLD;
  long* ls = shmem_malloc(64 * sizeof(long));
  long* ld = shmem_malloc(64 * sizeof(long));
  double* ds = shmem_malloc(64 * sizeof(double));
  double* dd = shmem_malloc(64 * sizeof(double));
  shmem_barrier_all();

  ds[0] = me + 0.25;
  SCHECK(shmem_broadcast(t, dd, ds, 1, npes - 1) == 0 && dd[0] == npes - 1 + 0.25, "broadcast double");
  ls[0] = me;
  ls[1] = -me;
  SCHECK(shmem_fcollect(t, ld, ls, 2) == 0, "fcollect long");
  for (m = 0; m < npes; ++m) SCHECK(ld[2 * m] == m && ld[2 * m + 1] == -m, "fcollect long [%d]", m);
  SCHECK(shmem_collect(t, ld, ls, me == 0 ? 2 : 1) == 0, "collect long");
  SCHECK(ld[0] == 0 && ld[1] == 0, "collect [0]");
  for (m = 1; m < npes; ++m) SCHECK(ld[m + 1] == m, "collect [%d]", m);
  for (m = 0; m < npes; ++m) ds[m] = me * 100.0 + m;
  SCHECK(shmem_alltoall(t, dd, ds, 1) == 0, "alltoall double");
  for (m = 0; m < npes; ++m) SCHECK(dd[m] == m * 100.0 + me, "alltoall [%d]", m);
  for (m = 0; m < npes; ++m) ls[2 * m] = me * 100 + m;
  SCHECK(shmem_alltoalls(t, ld, ls, 1, 2, 1) == 0, "alltoalls long");
  for (m = 0; m < npes; ++m) SCHECK(ld[m] == m * 100 + me, "alltoalls [%d]", m);

  {
    unsigned int* us = (unsigned int*)ls;
    unsigned int* ud = (unsigned int*)ld;
    int32_t* is = (int32_t*)ds;
    int32_t* id = (int32_t*)dd;
    us[0] = 1u << me;
    SCHECK(shmem_or_reduce(t, ud, us, 1) == 0 && ud[0] == (1u << npes) - 1, "or_reduce uint");
    SCHECK(shmem_and_reduce(t, ud, us, 1) == 0 && ud[0] == 0, "and_reduce uint");
    is[0] = 0x10 | me;
    SCHECK(shmem_xor_reduce(t, id, is, 1) == 0, "xor_reduce int32");
    {
      int32_t want = 0;
      for (m = 0; m < npes; ++m) want ^= 0x10 | m;
      SCHECK(id[0] == want, "xor_reduce int32 value");
    }
  }
  ds[0] = me * 1.5;
  SCHECK(shmem_max_reduce(t, dd, ds, 1) == 0 && dd[0] == (npes - 1) * 1.5, "max_reduce double");
  ls[0] = 10 - me;
  SCHECK(shmem_min_reduce(t, ld, ls, 1) == 0 && ld[0] == 10 - (npes - 1), "min_reduce long");
  SCHECK(shmem_sum_reduce(t, ls, ls, 1) == 0, "sum_reduce long in place");
  SCHECK(ls[0] == 10L * npes - (long)npes * (npes - 1) / 2, "sum_reduce long value %ld", ls[0]);
  {
    long long* qs = (long long*)ds;
    long long* qd = (long long*)dd;
    qs[0] = 2;
    SCHECK(shmem_prod_reduce(t, qd, qs, 1) == 0 && qd[0] == (1LL << npes), "prod_reduce longlong");
  }
  {
    double _Complex* cs = (double _Complex*)ls;
    double _Complex* cd = (double _Complex*)ld;
    float _Complex* fs = (float _Complex*)ds;
    float _Complex* fd = (float _Complex*)dd;
    cs[0] = me + 1.0 * I;
    SCHECK(shmem_sum_reduce(t, cd, cs, 1) == 0, "sum_reduce complexd");
    SCHECK(creal(cd[0]) == npes * (npes - 1) / 2.0 && cimag(cd[0]) == npes, "sum_reduce complexd value");
    fs[0] = 1.0f * I;
    SCHECK(shmem_prod_reduce(t, fd, fs, 1) == 0, "prod_reduce complexf");
    {
      float _Complex want = 1.0f;
      for (i = 0; i < npes; ++i) want *= 1.0f * I;
      SCHECK(crealf(fd[0]) == crealf(want) && cimagf(fd[0]) == cimagf(want), "prod_reduce complexf value");
    }
  }
  {
    long* ps = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
    for (i = 0; i < SHMEM_SYNC_SIZE; ++i) ps[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    SCHECK(shmem_sync(t) == 0, "shmem_sync(team)");   /* 1.5: one argument */
    shmem_sync(0, 0, npes, ps);                          /* 1.4: active set */
    SCHECK(shmem_sync(SHMEM_TEAM_INVALID) != 0, "shmem_sync(INVALID)");
    shmem_barrier_all();
    shmem_free(ps);
  }
  shmem_barrier_all();
  if (me == 0) printf("coll_generic: OK (%d PEs)\n", npes);
  shmem_finalize();
  return 0;
}
