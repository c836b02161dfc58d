/* shmem_finalize(); shmem_init(); in one process, three rounds (issue 24 §3: under oshrun with 2+ PEs the second
 * shmem_init aborted, "inherited fd ... is not a listening socket"). Each round checks a heap object and a global
 * variable (symmetric again in every round) around the ring. */
#include <shmem.h>
#include <stdio.h>

static long global_box = -1;

int main(void) {
  const int rounds = 3;
  for (int round = 0; round < rounds; ++round) {
    shmem_init();
    const int me = shmem_my_pe(), n = shmem_n_pes();
    long* box = shmem_malloc(sizeof *box);
    *box = -1;
    global_box = -1;
    shmem_barrier_all();
    shmem_long_p(box, 100L * round + me, (me + 1) % n);
    shmem_long_p(&global_box, 100L * round + me + 50, (me + 1) % n);
    shmem_barrier_all();
    const long from = (me + n - 1) % n;
    if (*box != 100L * round + from || global_box != 100L * round + from + 50) {
      fprintf(stderr, "FAIL: PE %d round %d: heap %ld, global %ld; expected %ld and %ld from PE %ld\n", me, round,
              *box, global_box, 100L * round + from, 100L * round + from + 50, from);
      return 1;
    }
    shmem_free(box);
    shmem_finalize();
    if (me == 0) printf("round %d of %d: %d PEs, shmem_init after shmem_finalize works\n", round + 1, rounds, n);
  }
  return 0;
}
