/* OpenSHMEM hello of tests/install/install_check.sh, compiled by the installed oshcc and run by the installed oshrun:
 * each PE puts its number into the next PE's symmetric (global) variable; after the barrier each checks it got its
 * predecessor's. PE 0 prints "shmem hello ok" when every PE agreed. */
#include <shmem.h>
#include <stdio.h>

static int received = -1;  /* global: symmetric */
static int bad = 0;

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_int_p(&received, me, (me + 1) % n);
  shmem_barrier_all();
  if (received != (me + n - 1) % n) {
    fprintf(stderr, "shmem_hello: PE %d received %d, want %d\n", me, received, (me + n - 1) % n);
    shmem_int_atomic_inc(&bad, 0);
  }
  shmem_barrier_all();
  const int ok = shmem_int_g(&bad, 0) == 0;
  if (me == 0 && ok) printf("shmem hello ok: %d PEs\n", n);
  shmem_finalize();
  return ok ? 0 : 1;
}
