/* OpenSHMEM setup/query, symmetric memory and barriers, compiled as C11: also exercises the _Generic names. */
#include <stdint.h>
#include <string.h>

#include "shmem_check.h"

#if !(defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
#error "this test must be compiled as C11"
#endif

static void testQuery(void) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  SCHECK(n >= 1 && me >= 0 && me < n, "me %d n %d", me, n);
  SCHECK(_my_pe() == me && _num_pes() == n, "deprecated query names");
  int major = -1, minor = -1;
  shmem_info_get_version(&major, &minor);
  SCHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION && major == 1 && minor == 5, "%d.%d", major,
         minor);
  char name[SHMEM_MAX_NAME_LEN];
  memset(name, 'x', sizeof name);
  shmem_info_get_name(name);
  SCHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "name '%s'", name);
  int provided = -1;
  shmem_query_thread(&provided);
  SCHECK(provided == SHMEM_THREAD_SINGLE, "plain shmem_init provides SINGLE, got %d", provided);
  for (int pe = 0; pe < n; ++pe) SCHECK(shmem_pe_accessible(pe) == 1, "pe %d", pe);
  SCHECK(shmem_pe_accessible(-1) == 0 && shmem_pe_accessible(n) == 0, "out of range PEs");
}

static void testMemory(void) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  /* calloc zeroes, even memory that was used and freed before */
  long* a = shmem_malloc(1000 * sizeof(long));
  SCHECK(a != NULL, "malloc");
  for (int i = 0; i < 1000; ++i) a[i] = -1;
  shmem_free(a);
  long* z = shmem_calloc(1000, sizeof(long));
  SCHECK(z != NULL, "calloc");
  for (int i = 0; i < 1000; ++i) SCHECK(z[i] == 0, "calloc[%d] = %ld", i, z[i]);
  SCHECK(shmem_addr_accessible(z, (me + 1) % n) == 1, "heap address accessible");
  int local = 0;
  SCHECK(shmem_addr_accessible(&local, me) == 0, "stack address not accessible");
  SCHECK(shmem_ptr(z, me) == z, "shmem_ptr to self");
  long* peer = shmem_ptr(z, (me + 1) % n);
  SCHECK(peer != NULL, "same-host peer is load/store addressable");

  /* realloc keeps the contents */
  int* r = shmem_malloc(16 * sizeof(int));
  for (int i = 0; i < 16; ++i) r[i] = me * 100 + i;
  int* big = shmem_realloc(r, 4096 * sizeof(int));
  SCHECK(big != NULL, "realloc grow");
  for (int i = 0; i < 16; ++i) SCHECK(big[i] == me * 100 + i, "realloc kept [%d] = %d", i, big[i]);
  int* small = shmem_realloc(big, 8 * sizeof(int));
  for (int i = 0; i < 8; ++i) SCHECK(small[i] == me * 100 + i, "realloc shrink kept [%d] = %d", i, small[i]);

  /* align */
  for (size_t al = 8; al <= 65536; al *= 8) {
    void* p = shmem_align(al, 100);
    SCHECK(p != NULL && ((uintptr_t)p % al) == 0, "align %zu gave %p", al, p);
    shmem_free(p);
  }
  void* h = shmem_malloc_with_hints(256, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
  SCHECK(h != NULL, "malloc_with_hints");
  SCHECK(shmem_malloc(0) == NULL, "malloc(0)");
  SCHECK(shmem_realloc(NULL, 0) == NULL, "realloc(NULL, 0)");
  shmem_free(h);
  shmem_free(small);
  shmem_free(z);
  shmem_free(NULL);

  /* deprecated allocation names */
  double* d = shmalloc(10 * sizeof(double));
  d = shrealloc(d, 20 * sizeof(double));
  void* al = shmemalign(256, 10);
  SCHECK(d != NULL && al != NULL && ((uintptr_t)al % 256) == 0, "deprecated allocators");
  shfree(al);
  shfree(d);
}

static void testGenericAndBarriers(void) {
  int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  int* ints = shmem_calloc(8, sizeof(int));
  double* dbl = shmem_calloc(8, sizeof(double));
  unsigned char* uc = shmem_calloc(8, 1);
  long long* ll = shmem_calloc(8, sizeof(long long));
  int src[8];
  double dsrc[8];
  for (int i = 0; i < 8; ++i) {
    src[i] = me * 10 + i;
    dsrc[i] = me + i / 4.0;
  }
  shmem_put(ints, src, 8, right);
  shmem_put_nbi(dbl, dsrc, 8, right);
  shmem_p(&uc[3], (unsigned char)(me + 1), right);
  long long v = 1000 + me;
  shmem_iput(ll, &v, 2, 1, 1, right);
  shmem_barrier_all();
  for (int i = 0; i < 8; ++i) {
    SCHECK(ints[i] == left * 10 + i, "ints[%d] = %d", i, ints[i]);
    SCHECK(dbl[i] == left + i / 4.0, "dbl[%d] = %g", i, dbl[i]);
  }
  SCHECK(uc[3] == (unsigned char)(left + 1), "uc %u", uc[3]);
  SCHECK(ll[0] == 1000 + left, "ll %lld", ll[0]);
  int back[8];
  shmem_get(back, ints, 8, right);
  for (int i = 0; i < 8; ++i) SCHECK(back[i] == src[i], "get back[%d] = %d", i, back[i]);
  double g = shmem_g(&dbl[1], right);
  SCHECK(g == me + 0.25, "g %g", g);
  double dback[8];
  shmem_get_nbi(dback, dbl, 8, right);
  shmem_quiet();
  SCHECK(dback[7] == me + 7 / 4.0, "get_nbi %g", dback[7]);
  long long lb[2] = {0, 0};
  shmem_iget(lb, ll, 1, 2, 1, right);
  SCHECK(lb[0] == 1000 + me, "iget %lld", lb[0]);

  /* sync_all: stores made before it are visible after it */
  int* via = shmem_ptr(ints, right);
  shmem_sync_all();
  via[0] = -me;
  shmem_sync_all();
  SCHECK(ints[0] == -left, "store through shmem_ptr then sync_all: %d", ints[0]);
  shmem_barrier_all();
  shmem_free(ll);
  shmem_free(uc);
  shmem_free(dbl);
  shmem_free(ints);
}

int main(void) {
  shmem_init();
  shmem_init(); /* again: no-op */
  testQuery();
  testMemory();
  testGenericAndBarriers();
  shmem_barrier_all();
  if (shmem_my_pe() == 0) printf("shmem_setup: %d PEs OK\n", shmem_n_pes());
  shmem_finalize();
  shmem_finalize(); /* idempotent */
  return 0;
}
