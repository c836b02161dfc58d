/* Bad arguments to the team and collective routines end the job with a message naming the routine (run through
 * tests/mp/expect_fail.sh; the mode is argv[1]):
 *   destroy_world   shmem_team_destroy(SHMEM_TEAM_WORLD)
 *   split_mismatch  shmem_team_split_strided with a different size on the last PE
 *   not_in_set      shmem_barrier over an active set the last PE is not in
 *   set_beyond      shmem_broadcast64 over an active set that ends past the last PE
 *   bad_root        shmem_int_broadcast with PE_root = team size
 *   bad_stride      shmem_alltoalls32 with sst 0
 *   null_psync      shmem_sync with pSync NULL
 *   neg_nreduce     shmem_int_sum_to_all with nreduce -1
 *   nonsym_source   shmem_long_fcollect from a stack buffer */
#include <stdio.h>
#include <string.h>

#include <shmem.h>

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  long* psync = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
  int* buf = shmem_malloc(64 * sizeof(int));
  for (int i = 0; i < SHMEM_SYNC_SIZE; ++i) psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  if (strcmp(mode, "destroy_world") == 0) {
    if (me == 0) shmem_team_destroy(SHMEM_TEAM_WORLD);
  } else if (strcmp(mode, "split_mismatch") == 0) {
    shmem_team_t t;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, me == npes - 1 ? 1 : npes, NULL, 0, &t);
  } else if (strcmp(mode, "not_in_set") == 0) {
    if (me == npes - 1) shmem_barrier(0, 0, npes - 1, psync);
  } else if (strcmp(mode, "set_beyond") == 0) {
    shmem_broadcast64(buf, buf + 8, 1, 0, 0, 1, npes, psync);
  } else if (strcmp(mode, "bad_root") == 0) {
    shmem_int_broadcast(SHMEM_TEAM_WORLD, buf, buf + 8, 1, npes);
  } else if (strcmp(mode, "bad_stride") == 0) {
    shmem_alltoalls32(buf, buf + 8, 1, 0, 1, 0, 0, npes, psync);
  } else if (strcmp(mode, "null_psync") == 0) {
    shmem_sync(0, 0, npes, NULL);
  } else if (strcmp(mode, "neg_nreduce") == 0) {
    shmem_int_sum_to_all(buf, buf + 8, -1, 0, 0, npes, buf + 16, psync);
  } else if (strcmp(mode, "nonsym_source") == 0) {
    long local[4] = {1, 2, 3, 4};
    shmem_long_fcollect(SHMEM_TEAM_WORLD, (long*)buf, local, 1);
  } else {
    fprintf(stderr, "unknown mode '%s'\n", mode);
    return 2;
  }
  shmem_barrier_all(); /* the others wait here until the launcher stops them */
  shmem_finalize();
  return 0;
}
