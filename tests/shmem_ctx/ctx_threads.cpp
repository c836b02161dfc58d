// Threads with private contexts (SHMEM_THREAD_MULTIPLE): every thread creates its own SHMEM_CTX_PRIVATE context
// (the last one on SHMEM_TEAM_SHARED), issues atomics and non-blocking puts to every PE through it, completes them
// with shmem_ctx_quiet and destroys it; the threads run at the same time. Afterwards every PE checks every thread's
// counter and slots.
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "ctx_test.h"

namespace {

constexpr int kThreads = 4;
constexpr int kIters = 40;
constexpr size_t kSlot = 16;  // ints per (source PE, thread)

int value(int pe, int thread, int iter, size_t i) {
  return pe * 100000 + thread * 10000 + iter * 100 + static_cast<int>(i);
}

void worker(int thread, long* counts, int* slots) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  const int rc = thread == kThreads - 1 ? shmem_team_create_ctx(SHMEM_TEAM_SHARED, SHMEM_CTX_PRIVATE, &ctx)
                                        : shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx);
  SCHECK(rc == 0 && ctx != SHMEM_CTX_INVALID, "thread %d: context", thread);
  shmem_team_t team = SHMEM_TEAM_INVALID;
  SCHECK(shmem_ctx_get_team(ctx, &team) == 0, "thread %d: get_team", thread);
  std::vector<int> local(kSlot);
  int* mySlot = slots + (static_cast<size_t>(me) * kThreads + static_cast<size_t>(thread)) * kSlot;
  for (int iter = 0; iter < kIters; ++iter) {
    for (size_t i = 0; i < kSlot; ++i) local[i] = value(me, thread, iter, i);
    for (int pe = 0; pe < n; ++pe) {
      const int teamPe = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, team);
      shmem_ctx_long_atomic_add(ctx, &counts[thread], 1, teamPe);
      shmem_ctx_int_put_nbi(ctx, mySlot, local.data(), kSlot, teamPe);
    }
    shmem_ctx_quiet(ctx);  // local is rewritten next iteration
  }
  shmem_ctx_destroy(ctx);
}

}  // namespace

int main() {
  int provided = -1;
  SCHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0 && provided == SHMEM_THREAD_MULTIPLE,
         "init_thread");
  const int n = shmem_n_pes();
  long* counts = static_cast<long*>(shmem_calloc(kThreads, sizeof(long)));
  int* slots = static_cast<int*>(shmem_calloc(static_cast<size_t>(n) * kThreads * kSlot, sizeof(int)));
  SCHECK(counts && slots, "calloc");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t, counts, slots);
  for (std::thread& t : threads) t.join();
  shmem_barrier_all();
  for (int t = 0; t < kThreads; ++t)
    SCHECK(counts[t] == static_cast<long>(n) * kIters, "thread %d count %ld", t, counts[t]);
  for (int pe = 0; pe < n; ++pe)
    for (int t = 0; t < kThreads; ++t)
      for (size_t i = 0; i < kSlot; ++i) {
        const int got = slots[(static_cast<size_t>(pe) * kThreads + static_cast<size_t>(t)) * kSlot + i];
        SCHECK(got == value(pe, t, kIters - 1, i), "slot of PE %d thread %d [%zu]: %d", pe, t, i, got);
      }
  shmem_barrier_all();
  shmem_free(slots);
  shmem_free(counts);
  if (shmem_my_pe() == 0) std::printf("shmem_ctx_threads: OK on %d PEs x %d threads\n", n, kThreads);
  shmem_finalize();
  return 0;
}
