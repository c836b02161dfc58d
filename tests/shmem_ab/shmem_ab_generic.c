/* C11 _Generic names of the AMO and point-to-point routines, compiled as C. */
#include <shmem.h>
#include <stdint.h>

#include "ab_check.h"

#if !(defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
#error "this test must be compiled as C11"
#endif

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  long* l = (long*)shmem_calloc(4, sizeof(long));
  unsigned int* u = (unsigned int*)shmem_calloc(2, sizeof(unsigned int));
  int32_t* i32 = (int32_t*)shmem_calloc(2, sizeof(int32_t));
  double* d = (double*)shmem_calloc(2, sizeof(double));
  int* flags = (int*)shmem_calloc((size_t)npes, sizeof(int));
  long long* ll = (long long*)shmem_calloc(2, sizeof(long long));

  shmem_atomic_inc(&l[0], 0);
  shmem_atomic_add(&l[0], 2L, 0);
  (void)shmem_atomic_fetch_inc(&l[0], 0);
  (void)shmem_atomic_fetch_add(&l[0], 3L, 0);
  shmem_atomic_or(&u[0], 1u << me, 0);
  (void)shmem_atomic_fetch_xor(&u[1], 1u << me, 0);
  shmem_atomic_and(&i32[0], (int32_t)0, 0);
  int32_t f32 = -1;
  shmem_atomic_fetch_or_nbi(&f32, &i32[1], (int32_t)0, 0);
  long fl = -1;
  shmem_atomic_fetch_add_nbi(&fl, &l[1], 1L, 0);
  shmem_quiet();
  AB_CHECK(f32 == 0 && fl >= 0 && fl < npes);
  shmem_atomic_set(&d[0], 1.5, me);
  AB_CHECK(shmem_atomic_fetch(&d[0], me) == 1.5);
  AB_CHECK(shmem_atomic_swap(&d[0], 2.5, me) == 1.5);
  AB_CHECK(shmem_atomic_compare_swap(&ll[0], 0LL, 5LL, me) == 0LL);
  /* deprecated generic names */
  shmem_inc(&ll[1], 0);
  shmem_add(&ll[1], 2LL, 0);
  (void)shmem_fadd(&ll[1], 3LL, 0);
  (void)shmem_finc(&ll[1], 0);
  shmem_set(&l[2], 4L, me);
  AB_CHECK(shmem_fetch(&l[2], me) == 4L);
  AB_CHECK(shmem_swap(&l[2], 6L, me) == 4L);
  AB_CHECK((shmem_swap)(&l[2], 7L, me) == 6L); /* the untyped 1.3 function */
  AB_CHECK(shmem_cswap(&l[2], 7L, 8L, me) == 7L);

  /* point-to-point: everybody flags itself on every PE, then waits for all flags */
  for (int pe = 0; pe < npes; ++pe) shmem_atomic_set(&flags[me], me + 1, pe);
  shmem_wait_until(&flags[(me + 1) % npes], SHMEM_CMP_EQ, (me + 1) % npes + 1);
  shmem_wait_until_all(flags, (size_t)npes, NULL, SHMEM_CMP_GT, 0);
  AB_CHECK(shmem_test(&flags[0], SHMEM_CMP_EQ, 1) == 1);
  AB_CHECK(shmem_test_all(flags, (size_t)npes, NULL, SHMEM_CMP_NE, 0) == 1);
  AB_CHECK(shmem_wait_until_any(flags, (size_t)npes, NULL, SHMEM_CMP_EQ, npes) == (size_t)npes - 1);
  AB_CHECK(shmem_test_any(flags, (size_t)npes, NULL, SHMEM_CMP_EQ, 1) == 0);
  size_t idx[64];
  AB_CHECK(shmem_wait_until_some(flags, (size_t)npes, idx, NULL, SHMEM_CMP_GE, 1) == (size_t)npes);
  AB_CHECK(shmem_test_some(flags, (size_t)npes, idx, NULL, SHMEM_CMP_LE, 1) == 1 && idx[0] == 0);
  int want[64];
  for (int k = 0; k < npes; ++k) want[k] = k + 1;
  shmem_wait_until_all_vector(flags, (size_t)npes, NULL, SHMEM_CMP_EQ, want);
  AB_CHECK(shmem_test_all_vector(flags, (size_t)npes, NULL, SHMEM_CMP_EQ, want) == 1);
  AB_CHECK(shmem_wait_until_any_vector(flags, (size_t)npes, NULL, SHMEM_CMP_EQ, want) < (size_t)npes);
  AB_CHECK(shmem_test_any_vector(flags, (size_t)npes, NULL, SHMEM_CMP_NE, want) == SIZE_MAX);
  AB_CHECK(shmem_wait_until_some_vector(flags, (size_t)npes, idx, NULL, SHMEM_CMP_EQ, want) == (size_t)npes);
  AB_CHECK(shmem_test_some_vector(flags, (size_t)npes, idx, NULL, SHMEM_CMP_NE, want) == 0);
  shmem_wait(&flags[0], 0);
  (shmem_wait_until)(&l[2], SHMEM_CMP_EQ, 8L); /* untyped long form */

  shmem_barrier_all();
  if (me == 0) {
    AB_CHECK(l[0] == 7L * npes && l[1] == (long)npes && ll[1] == 7LL * npes);
    AB_CHECK(u[0] == (1u << npes) - 1 && u[1] == (1u << npes) - 1);
  }
  AB_CHECK(d[0] == 2.5 && ll[0] == 5LL);
  shmem_barrier_all();
  if (me == 0) printf("shmem_ab_generic: OK on %d PEs\n", npes);
  shmem_free(ll);
  shmem_free(flags);
  shmem_free(d);
  shmem_free(i32);
  shmem_free(u);
  shmem_free(l);
  shmem_finalize();
  return 0;
}
