/* OpenSHMEM 1.4 active-set collectives (C): shmem_barrier / shmem_sync, shmem_broadcast32/64 (dest on the root left
 * alone), collect32/64 (per-PE counts), fcollect32/64, alltoall32/64, alltoalls32/64 over the world set and the
 * logPE_stride = 1 sets (PE_start 0 and 1, run at the same time), PE_start > 0 with logPE_stride 0, back-to-back
 * calls on one pSync, and pSync back at SHMEM_SYNC_VALUE at the end. Also the deprecated _SHMEM_* constants. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../shmem/shmem_check.h"

static int me, npes;
static long* psync;    /* one per active set shape (a pSync is reused at once only by the same set) */
static long* psync2;
static long* psync3;
static uint64_t* src;
static uint64_t* dst;
#define POOL 4096

static uint64_t v64(int pe, int i, int tag) { return (uint64_t)pe * 1000003u + (uint64_t)i * 7919u + (uint64_t)tag; }
static uint32_t v32(int pe, int i, int tag) { return (uint32_t)v64(pe, i, tag); }

/* The set (start, logStride, size): world PE of index k. */
static int setPe(int start, int logStride, int k) { return start + (k << logStride); }

static void runSet(int start, int logStride, int size, long* ps, int tag) {
  const int idx = (me - start) >> logStride;
  uint32_t* s32 = (uint32_t*)src;
  uint32_t* d32 = (uint32_t*)dst;
  int root, m, i;

  shmem_barrier(start, logStride, size, ps);
  shmem_sync(start, logStride, size, ps);

  for (root = 0; root < size; ++root) {
    for (i = 0; i < 5; ++i) src[i] = v64(me, i, tag + root);
    for (i = 0; i < 5; ++i) dst[i] = 7;
    shmem_broadcast64(dst, src, 5, root, start, logStride, size, ps);
    for (i = 0; i < 5; ++i) {
      if (idx == root)
        SCHECK(dst[i] == 7, "broadcast64 updated the root's dest");
      else
        SCHECK(dst[i] == v64(setPe(start, logStride, root), i, tag + root), "broadcast64 root %d [%d]", root, i);
    }
    for (i = 0; i < 3; ++i) s32[i] = v32(me, i, tag);
    shmem_broadcast32(d32, s32, 3, root, start, logStride, size, ps);
    if (idx != root)
      for (i = 0; i < 3; ++i) SCHECK(d32[i] == v32(setPe(start, logStride, root), i, tag), "broadcast32 [%d]", i);
  }

  /* collect: set index k contributes k % 3 elements. */
  for (i = 0; i < idx % 3; ++i) src[i] = v64(me, i, tag);
  shmem_collect64(dst, src, (size_t)(idx % 3), start, logStride, size, ps);
  {
    int off = 0;
    for (m = 0; m < size; ++m)
      for (i = 0; i < m % 3; ++i, ++off)
        SCHECK(dst[off] == v64(setPe(start, logStride, m), i, tag), "collect64 [%d][%d]", m, i);
  }
  for (i = 0; i < (idx + 1) % 2 + 1; ++i) s32[i] = v32(me, i, tag);
  shmem_collect32(d32, s32, (size_t)((idx + 1) % 2 + 1), start, logStride, size, ps);
  {
    int off = 0;
    for (m = 0; m < size; ++m)
      for (i = 0; i < (m + 1) % 2 + 1; ++i, ++off)
        SCHECK(d32[off] == v32(setPe(start, logStride, m), i, tag), "collect32 [%d][%d]", m, i);
  }

  for (i = 0; i < 4; ++i) src[i] = v64(me, i, tag + 1);
  shmem_fcollect64(dst, src, 4, start, logStride, size, ps);
  for (m = 0; m < size; ++m)
    for (i = 0; i < 4; ++i)
      SCHECK(dst[m * 4 + i] == v64(setPe(start, logStride, m), i, tag + 1), "fcollect64 [%d][%d]", m, i);
  for (i = 0; i < 2; ++i) s32[i] = v32(me, i, tag + 2);
  shmem_fcollect32(d32, s32, 2, start, logStride, size, ps);
  for (m = 0; m < size; ++m)
    for (i = 0; i < 2; ++i)
      SCHECK(d32[m * 2 + i] == v32(setPe(start, logStride, m), i, tag + 2), "fcollect32 [%d][%d]", m, i);

  /* alltoall: block j of PE p holds v(p, j*10 + i). */
  for (m = 0; m < size; ++m)
    for (i = 0; i < 2; ++i) src[m * 2 + i] = v64(me, m * 10 + i, tag);
  /* Every dest ready before any PE calls an alltoall (OpenSHMEM's precondition, which tether's relies on: members
   * store into each other's dest). */
  shmem_sync(start, logStride, size, ps);
  shmem_alltoall64(dst, src, 2, start, logStride, size, ps);
  for (m = 0; m < size; ++m)
    for (i = 0; i < 2; ++i)
      SCHECK(dst[m * 2 + i] == v64(setPe(start, logStride, m), idx * 10 + i, tag), "alltoall64 [%d][%d]", m, i);
  for (m = 0; m < size; ++m) s32[m] = v32(me, m * 10, tag);
  shmem_sync(start, logStride, size, ps);
  shmem_alltoall32(d32, s32, 1, start, logStride, size, ps);
  for (m = 0; m < size; ++m) SCHECK(d32[m] == v32(setPe(start, logStride, m), idx * 10, tag), "alltoall32 [%d]", m);

  /* alltoalls: source stride 3, dest stride 2. */
  for (m = 0; m < size; ++m)
    for (i = 0; i < 2; ++i) src[3 * (m * 2 + i)] = v64(me, m * 10 + i, tag + 3);
  shmem_alltoalls64(dst, src, 2, 3, 2, start, logStride, size, ps);
  for (m = 0; m < size; ++m)
    for (i = 0; i < 2; ++i)
      SCHECK(dst[2 * (m * 2 + i)] == v64(setPe(start, logStride, m), idx * 10 + i, tag + 3), "alltoalls64 [%d][%d]",
             m, i);
  for (m = 0; m < size; ++m) s32[2 * m] = v32(me, m * 10, tag + 4);
  shmem_alltoalls32(d32, s32, 1, 2, 1, start, logStride, size, ps);
  for (m = 0; m < size; ++m)
    SCHECK(d32[m] == v32(setPe(start, logStride, m), idx * 10, tag + 4), "alltoalls32 [%d]", m);

  /* nelems 0 */
  shmem_fcollect64(dst, src, 0, start, logStride, size, ps);
  shmem_collect32(dst, src, 0, start, logStride, size, ps);
  shmem_alltoall64(dst, src, 0, start, logStride, size, ps);
  shmem_broadcast32(dst, src, 0, 0, start, logStride, size, ps);
}

/* shmem_barrier completes puts: each PE puts into its right neighbour in the set, then barrier, then reads. */
static void barrierCompletes(int start, int logStride, int size, long* ps) {
  const int idx = (me - start) >> logStride;
  const int right = setPe(start, logStride, (idx + 1) % size);
  const int left = setPe(start, logStride, (idx + size - 1) % size);
  int round;
  for (round = 1; round <= 10; ++round) {
    const uint64_t v = v64(me, round, 99);
    shmem_uint64_put_nbi(&dst[0], &v, 1, right);
    shmem_barrier(start, logStride, size, ps);
    SCHECK(dst[0] == v64(left, round, 99), "barrier round %d: put not complete", round);
    shmem_barrier(start, logStride, size, ps);
  }
}

int main(void) {
  int i;
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  SCHECK(SHMEM_BARRIER_SYNC_SIZE <= SHMEM_SYNC_SIZE && _SHMEM_BCAST_SYNC_SIZE == SHMEM_BCAST_SYNC_SIZE &&
             _SHMEM_SYNC_VALUE == SHMEM_SYNC_VALUE && _SHMEM_REDUCE_MIN_WRKDATA_SIZE >= 1 &&
             SHMEM_ALLTOALLS_SYNC_SIZE >= 1 && _SHMEM_COLLECT_SYNC_SIZE >= 1,
         "constants");
  psync = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
  psync2 = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
  psync3 = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
  src = shmem_malloc(POOL * sizeof(uint64_t));
  dst = shmem_malloc(POOL * sizeof(uint64_t));
  for (i = 0; i < SHMEM_SYNC_SIZE; ++i) psync[i] = psync2[i] = psync3[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();

  runSet(0, 0, npes, psync, 10);
  barrierCompletes(0, 0, npes, psync);
  /* Halves: PE_start 0 and 1 with logPE_stride 1, at the same time on disjoint PEs. */
  runSet(me % 2, 1, (npes - me % 2 + 1) / 2, psync2, 20);
  barrierCompletes(me % 2, 1, (npes - me % 2 + 1) / 2, psync2);
  /* PE_start > 0: PEs 1 .. npes-1 (PE 0 takes no part). */
  if (me >= 1) runSet(1, 0, npes - 1, psync3, 30);
  /* Same pSync, different set, after everyone has left the previous one. */
  shmem_barrier_all();
  runSet(0, 0, npes, psync3, 40);

  shmem_barrier_all();
  for (i = 0; i < SHMEM_SYNC_SIZE; ++i)
    SCHECK(psync[i] == SHMEM_SYNC_VALUE && psync2[i] == SHMEM_SYNC_VALUE && psync3[i] == SHMEM_SYNC_VALUE,
           "pSync[%d] not restored (%ld %ld %ld)", i, psync[i], psync2[i], psync3[i]);
  if (me == 0) printf("coll_active: OK (%d PEs)\n", npes);
  shmem_finalize();
  return 0;
}
