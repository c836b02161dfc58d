// SHMEM_THREAD_MULTIPLE: several threads of every PE put (blocking, p, nbi + quiet) to the right neighbour at once.
#include <cstdio>
#include <thread>
#include <vector>

#include "shmem_check.h"

int main() {
  int provided = -1;
  SCHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
  SCHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
  int q = -1;
  shmem_query_thread(&q);
  SCHECK(q == SHMEM_THREAD_MULTIPLE, "query_thread %d", q);

  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  constexpr int kThreads = 4, kPer = 512, kIters = 20;
  int* sym = static_cast<int*>(shmem_calloc(kThreads * kPer, sizeof(int)));
  long* tags = static_cast<long*>(shmem_calloc(kThreads, sizeof(long)));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([=] {
      std::vector<int> buf(kPer);
      for (int it = 0; it < kIters; ++it) {
        for (int i = 0; i < kPer; ++i) buf[i] = me * 1000000 + t * 10000 + it * 100 + i % 100;
        if (it % 2)
          shmem_int_put(sym + t * kPer, buf.data(), kPer, right);
        else
          shmem_int_put_nbi(sym + t * kPer, buf.data(), kPer, right);
        shmem_quiet();
        shmem_long_p(&tags[t], it, right);
      }
    });
  }
  for (auto& th : threads) th.join();
  shmem_barrier_all();
  for (int t = 0; t < kThreads; ++t) {
    SCHECK(tags[t] == kIters - 1, "tag[%d] = %ld", t, tags[t]);
    for (int i = 0; i < kPer; ++i) {
      const int want = left * 1000000 + t * 10000 + (kIters - 1) * 100 + i % 100;
      SCHECK(sym[t * kPer + i] == want, "thread %d [%d] = %d want %d", t, i, sym[t * kPer + i], want);
    }
  }
  shmem_barrier_all();
  shmem_free(tags);
  shmem_free(sym);
  if (me == 0) std::printf("shmem_threads: %d PEs x %d threads OK\n", n, kThreads);
  shmem_finalize();
  return 0;
}
