// SHMEM_THREAD_MULTIPLE: several threads of every PE issue AMOs (and nbi fetches completed by their own quiet) at
// once; totals must be exact.
#include <shmem.h>

#include <thread>
#include <vector>

#include "ab_check.h"

int main() {
  int provided = -1;
  AB_CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0);
  AB_CHECK(provided == SHMEM_THREAD_MULTIPLE);
  int q = -1;
  shmem_query_thread(&q);
  AB_CHECK(q == SHMEM_THREAD_MULTIPLE);
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  const int nthreads = 4, iters = 200;
  uint64_t* c = static_cast<uint64_t*>(shmem_calloc(4, sizeof(uint64_t)));
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([=] {
      uint64_t sum = 0;
      for (int i = 0; i < iters; ++i) {
        const int pe = (me + t + i) % npes;
        shmem_uint64_atomic_add(&c[0], 2, pe);
        sum += shmem_uint64_atomic_fetch_inc(&c[1], 0);
        uint64_t f = 0;
        shmem_uint64_atomic_fetch_or_nbi(&f, &c[2], 1ull << t, pe);
        shmem_quiet();
      }
      shmem_uint64_atomic_add(&c[3], sum, 0);
    });
  }
  for (auto& th : threads) th.join();
  shmem_barrier_all();
  const uint64_t total = static_cast<uint64_t>(nthreads) * iters * npes;
  uint64_t all0 = 0;
  for (int pe = 0; pe < npes; ++pe) all0 += shmem_uint64_atomic_fetch(&c[0], pe);
  AB_CHECK(all0 == 2 * total);
  AB_CHECK(c[2] == (1ull << nthreads) - 1);
  if (me == 0) {
    AB_CHECK(c[1] == total);
    AB_CHECK(c[3] == total * (total - 1) / 2);  // fetch_inc handed out 0 .. total-1 exactly once
  }
  shmem_barrier_all();
  if (me == 0) printf("shmem_ab_threads: OK on %d PEs\n", npes);
  shmem_free(c);
  shmem_finalize();
  return 0;
}
