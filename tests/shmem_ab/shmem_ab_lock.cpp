// OpenSHMEM distributed locks: mutual exclusion of a non-atomic read-modify-write under shmem_set_lock and under
// shmem_test_lock, test_lock's result while another PE holds the lock, two independent locks.
#include <shmem.h>

#include "ab_check.h"

int main() {
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  long* locks = static_cast<long*>(shmem_calloc(2, sizeof(long)));  // zero = unlocked
  long* data = static_cast<long*>(shmem_calloc(4, sizeof(long)));   // [0],[1] counters on PE 0, [2] occupancy
  const int iters = 100;

  // set_lock: fetch then set (two separate atomics) is a lost-update race without the lock.
  for (int i = 0; i < iters; ++i) {
    long* lk = &locks[i & 1];
    long* counter = &data[i & 1];
    shmem_set_lock(lk);
    if ((i & 1) == 0) AB_CHECK(shmem_long_atomic_fetch_inc(&data[2], 0) == 0);  // alone inside lock 0
    const long v = shmem_long_atomic_fetch(counter, 0);
    shmem_long_atomic_set(counter, v + 1, 0);
    if ((i & 1) == 0) shmem_long_atomic_add(&data[2], -1, 0);
    shmem_clear_lock(lk);
  }
  shmem_barrier_all();
  if (me == 0) AB_CHECK(data[0] == (long)(iters / 2) * npes && data[1] == (long)(iters / 2) * npes);
  shmem_barrier_all();

  // test_lock: 0 when acquired; retry until then.
  for (int i = 0; i < iters / 2; ++i) {
    while (shmem_test_lock(&locks[0]) != 0) {
    }
    AB_CHECK(shmem_long_atomic_fetch_inc(&data[2], 0) == 0);
    const long v = shmem_long_atomic_fetch(&data[3], 0);
    shmem_long_atomic_set(&data[3], v + 1, 0);
    shmem_long_atomic_add(&data[2], -1, 0);
    shmem_clear_lock(&locks[0]);
  }
  shmem_barrier_all();
  if (me == 0) AB_CHECK(data[3] == (long)(iters / 2) * npes);
  shmem_barrier_all();

  // While the last PE holds the lock, test_lock fails everywhere else; afterwards it succeeds.
  const int last = npes - 1;
  if (me == last) shmem_set_lock(&locks[1]);
  shmem_barrier_all();
  if (me != last) AB_CHECK(shmem_test_lock(&locks[1]) == 1);
  shmem_barrier_all();
  if (me == last) shmem_clear_lock(&locks[1]);
  shmem_barrier_all();
  if (me == 0) {
    AB_CHECK(shmem_test_lock(&locks[1]) == 0);
    shmem_clear_lock(&locks[1]);
  }
  shmem_barrier_all();
  if (me == 0) printf("shmem_ab_lock: OK on %d PEs\n", npes);
  shmem_free(data);
  shmem_free(locks);
  shmem_finalize();
  return 0;
}
