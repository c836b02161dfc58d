/* Built with the oshcc wrapper (tests/shmem/CMakeLists.txt): a plain OpenSHMEM program, no tether names. */
#include <stdio.h>
#include <shmem.h>

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  int* box = shmem_malloc(sizeof(int));
  *box = -1;
  shmem_barrier_all();
  shmem_int_p(box, me, (me + 1) % n);
  shmem_barrier_all();
  int ok = *box == (me + n - 1) % n;
  if (!ok) fprintf(stderr, "PE %d: got %d\n", me, *box);
  shmem_free(box);
  if (me == 0 && ok) printf("hello from oshcc: %d PEs\n", n);
  shmem_finalize();
  return ok ? 0 : 1;
}
