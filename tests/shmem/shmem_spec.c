/* OpenSHMEM 1.5 behaviour the specification requires beyond the basic routines (issue 24 §4). One program, one mode
 * per run (argv[1]):
 *   align        shmem_align honours large power-of-two alignments (4 MiB .. 64 MiB) at the same offset on every PE
 *   ctx_invalid  the context routines the specification defines on SHMEM_CTX_INVALID do not abort
 *   test_any     shmem_test_any / test_some (and _vector) let a caller that consumes each index once make progress
 *   global_exit  PE 1 calls shmem_global_exit(7) while the others wait in shmem_barrier_all: the job ends with 7 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmem_check.h"

/* Every PE gets the same offset for p from the first allocation `base`: PE 0 collects and compares. */
static void checkSameOffset(const void* base, const void* p, size_t align) {
  static long offsets[1024]; /* global: symmetric */
  int me = shmem_my_pe(), n = shmem_n_pes();
  long off = (long)((const char*)p - (const char*)base);
  shmem_long_p(&offsets[me], off, 0);
  shmem_barrier_all();
  if (me == 0)
    for (int pe = 1; pe < n; ++pe)
      SCHECK(offsets[pe] == offsets[0], "align %zu: PE %d got offset %ld, PE 0 %ld", align, pe, offsets[pe],
             offsets[0]);
  shmem_barrier_all();
}

static void testAlign(void) {
  char* base = shmem_malloc(64);
  SCHECK(base != NULL, "malloc");
  for (size_t al = (size_t)1 << 20; al <= ((size_t)64 << 20); al *= 2) {
    char* p = shmem_align(al, 1000);
    SCHECK(p != NULL, "shmem_align(%zu) returned NULL", al);
    SCHECK(((uintptr_t)p % al) == 0, "shmem_align(%zu) gave %p (only %zu-aligned)", al, (void*)p,
           (size_t)((uintptr_t)p & (~(uintptr_t)p + 1)));
    checkSameOffset(base, p, al);
    /* the memory is usable and symmetric: write into the next PE's block */
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_int_p((int*)p + 10, me, (me + 1) % n);
    shmem_barrier_all();
    SCHECK(((int*)p)[10] == (me + n - 1) % n, "align %zu: got %d", al, ((int*)p)[10]);
    shmem_free(p);
  }
  shmem_free(base);
  if (shmem_my_pe() == 0) printf("align: ok\n");
}

/* SHMEM_CTX_INVALID: quiet, fence and destroy are no-ops, get_team reports SHMEM_TEAM_INVALID; a valid context still
 * works afterwards. */
static void testCtxInvalid(void) {
  int me = shmem_my_pe(), n = shmem_n_pes();
  int* x = shmem_calloc(1, sizeof(int));
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  shmem_ctx_quiet(ctx);
  shmem_ctx_fence(ctx);
  shmem_ctx_destroy(ctx);
  shmem_team_t team = SHMEM_TEAM_WORLD;
  SCHECK(shmem_ctx_get_team(ctx, &team) != 0 && team == SHMEM_TEAM_INVALID, "get_team on SHMEM_CTX_INVALID");
  /* a creation that fails leaves SHMEM_CTX_INVALID, which the program may then quiet and destroy */
  SCHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx) != 0 && ctx == SHMEM_CTX_INVALID, "failed create");
  shmem_ctx_quiet(ctx);
  shmem_ctx_fence(ctx);
  shmem_ctx_destroy(ctx);
  SCHECK(shmem_ctx_create(0, &ctx) == 0 && ctx != SHMEM_CTX_INVALID, "create");
  shmem_ctx_int_p(ctx, x, me + 1, (me + 1) % n);
  shmem_ctx_quiet(ctx);
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  SCHECK(*x == (me + n - 1) % n + 1, "put on a created context: %d", *x);
  shmem_free(x);
  if (me == 0) printf("ctx_invalid: ok\n");
}

int main(int argc, char** argv) {
  shmem_init();
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "align") == 0) testAlign();
  else if (strcmp(mode, "ctx_invalid") == 0) testCtxInvalid();
  else SCHECK(0, "unknown mode '%s'", mode);
  shmem_finalize();
  return 0;
}
