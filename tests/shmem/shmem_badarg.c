/* Bad arguments end the job with a message naming the routine (run through tests/mp/expect_fail.sh).
 *   nonsym: shmem_int_put to a stack address      -> "shmem_int_put failed"
 *   badpe:  shmem_long_g from PE n_pes            -> "shmem_long_g failed"
 *   noinit: shmem_my_pe before shmem_init         -> "shmem_my_pe failed: OpenSHMEM is not initialised"
 *   sigop:  shmem_putmem_signal with sig_op -1    -> "shmem_putmem_signal failed: sig_op -1 is neither ..."
 *   cmp:    shmem_signal_wait_until with cmp 1000 -> "shmem_signal_wait_until failed: cmp 1000 is not ..."
 *   (the last two: checked as ints before they become C++ enums; the asan build halted on them before) */
#include <stdio.h>
#include <string.h>

#include <shmem.h>

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "nonsym";
  if (strcmp(mode, "noinit") == 0) return shmem_my_pe() == 0 ? 0 : 0;
  shmem_init();
  long* sym = shmem_malloc(sizeof(long));
  shmem_barrier_all();
  if (strcmp(mode, "nonsym") == 0) {
    int not_symmetric[4] = {1, 2, 3, 4};
    int src[4] = {0, 0, 0, 0};
    if (shmem_my_pe() == shmem_n_pes() - 1) shmem_int_put(not_symmetric, src, 4, 0);
  } else if (strcmp(mode, "badpe") == 0) {
    if (shmem_my_pe() == 0) printf("%ld\n", shmem_long_g(sym, shmem_n_pes()));
  } else if (strcmp(mode, "sigop") == 0) {
    static uint64_t sig; /* symmetric (global) */
    if (shmem_my_pe() == 0) shmem_putmem_signal(sym, sym, sizeof(long), &sig, 1, -1, 1);
  } else if (strcmp(mode, "cmp") == 0) {
    static uint64_t sig2;
    if (shmem_my_pe() == 0) (void)shmem_signal_wait_until(&sig2, 1000, 0);
  }
  shmem_barrier_all(); /* the others wait here until the launcher stops them */
  shmem_finalize();
  return 0;
}
